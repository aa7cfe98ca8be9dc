"""Merge functions of primary-key tables: how the rows of one key combine (deduplicate,
partial-update, aggregation, first-row, count layout), vectorised over Arrow. Pure functions of
rows and table options; they know nothing of files, levels or snapshots."""
