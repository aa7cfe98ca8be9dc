"""What part of a table's history a reader may still see: the retention mark, and telling a file
expired while being read from a damaged table. Scans, reads and maintenance all ask here."""
