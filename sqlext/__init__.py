"""dyntable's SQL front end: splitting, parsing and running SQL on Spark over managed tables."""
