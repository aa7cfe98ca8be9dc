"""One data file at a time: reading a Parquet/ORC data file as the table's Arrow schema, where a
data file lives, and the names of the key-value system columns every reader and writer share."""
