"""The log-structured merge tree of primary-key buckets: vectorised merge functions, sorted runs,
compaction and changelog production. Every data path here is vectorised (no per-row Python)."""
