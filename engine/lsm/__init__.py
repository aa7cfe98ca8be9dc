"""The log-structured merge tree of primary-key buckets as a model: sorted runs and levels, the
compaction strategy that picks them, key order and intervals, and changelog production. The merge
functions live in :mod:`engine.merge`; the writer that rewrites files in :mod:`engine.write.compactor`.
Every data path here is vectorised (no per-row Python)."""
