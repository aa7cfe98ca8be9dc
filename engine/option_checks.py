"""Checking the option map a user gives a table (CREATE, ALTER, dynamic options).

One job: decide, for every key and value, whether it is a known option whose value parses
(``engine.options`` declares them), a Paimon option dyntable refuses with the reason, another
key stored as a plain property, a near miss of a known key refused with the key it likely
means, or an option that cannot change once the table has data. The rule is documented once,
in docs/options.md (written by ``engine.options_doc``).
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping

from engine.errors import InvalidArgumentError
from engine.options import _BY_KEY, _FIELD_SUFFIXES, find_option

# Paimon's option keys (CoreOptions, and the Flink and Spark connector options a table may carry)
# that dyntable does not declare: stored as given and never interpreted, as Paimon stores them;
# also what a near miss may mean. Listed from Paimon's sources, so that a real Paimon key is never
# taken for a misspelling of one of dyntable's.
PAIMON_STORED_KEYS = frozenset({
    "add-column-before-partition", "alter-column-null-to-not-null.disabled", "async-file-write",
    "auto-create", "batch-scan-mode", "blob-as-descriptor", "blob-compaction.enabled",
    "blob-descriptor-field", "blob-field", "blob-view-field", "blob-view.resolve.enabled",
    "blob-write-null-on-fetch-failure", "blob-write-null-on-missing-file", "blob.copy-buffer-size",
    "blob.split-by-file-size", "blob.target-file-size", "bucket-append-ordered", "cache-page-size",
    "chain-table.chain-partition-keys", "chain-table.split.key-range-enabled",
    "chain-table.streaming.merge-snapshot", "changelog-file.compression", "changelog-file.format",
    "changelog-file.stats-mode", "changelog-producer.compaction-interval",
    "changelog-producer.row-deduplicate", "changelog-producer.row-deduplicate-ignore-fields",
    "changelog.precommit-compact.buffer-size", "changelog.precommit-compact.thread-num",
    "clustering.history-partition.idle-to-full-sort",
    "clustering.history-partition.limit", "clustering.incremental.mode",
    "clustering.incremental.optimize-write", "commit.callback.#.param",
    "commit.callbacks", "commit.custom-listeners", "commit.discard-duplicate-files", "commit.force-compact",
    "commit.force-create-snapshot", "commit.strict-mode.last-safe-snapshot", "commit.user-prefix",
    "compaction.bucket-distribution-strategy", "compaction.file-num-limit",
    "compaction.force-rewrite-all-files", "compaction.force-up-level-0",
    "compaction.incremental-size-threshold", "compaction.offpeak-ratio", "compaction.offpeak.end.hour",
    "compaction.offpeak.start.hour", "compaction.optimization-interval",
    "compaction.skip-expired-partitions", "compaction.small-file-ratio", "compaction.total-size-threshold",
    "consumer.changelog-only", "consumer.mode", "continuous.discovery-interval",
    "data-evolution.compaction.rewrite-row-ids", "data-evolution.merge-into.file-pruning",
    "data-evolution.merge-into.source-persist", "data-evolution.reassign.skip-contiguous-row-count",
    "data-evolution.row-id-conflict-rewrite.max-size", "data-evolution.row-sidecar.enabled",
    "data-evolution.row-sidecar.max-selected-rows", "data-evolution.row-sidecar.max-selection-ratio",
    "delete.force-produce-changelog",
    "disable-explicit-type-casting", "dynamic-partition-overwrite", "end-input.watermark",
    "file-operation.thread-num", "file-reader-async-threshold", "file.block-size",
    "file.compression.per.level", "file.format.per.level", "file.suffix.include.compression",
    "filesystem.job-level-settings.enabled", "force-lookup", "format-table.commit-hive-sync-url",
    "format-table.file.compression", "format-table.implementation",
    "format-table.partition-path-only-value", "format-table.repair.collect-statistics",
    "format-table.scan.list-parallelism", "format-table.statistics.parallelism",
    "full-text-index.search-mode", "global-index.build.max-parallelism", "global-index.build.max-shard",
    "global-index.column-update-action", "global-index.enabled", "global-index.external-path",
    "global-index.row-count-per-shard", "global-index.search-mode", "global-index.thread-num",
    "index-file-in-data-file-dir", "key-value.sequence_number.enabled", "legacy-timestamp-mapping.enabled",
    "local-kv-db.block-size", "local-merge-buffer-size", "local-sort.max-num-file-handles",
    "lookup-compact", "lookup-compact.max-interval", "lookup-wait", "lookup.async",
    "lookup.async-thread-number", "lookup.blob-as-descriptor", "lookup.bootstrap-parallelism",
    "lookup.cache", "lookup.cache-file-retention", "lookup.cache-max-disk-size",
    "lookup.cache-max-memory-size", "lookup.cache-rows", "lookup.cache-spill-compression",
    "lookup.cache.bloom.filter.enabled", "lookup.cache.bloom.filter.fpp",
    "lookup.cache.high-priority-pool-ratio", "lookup.continuous.discovery-interval",
    "lookup.dynamic-partition.refresh-interval", "lookup.dynamic-partition.refresh.async",
    "lookup.hash-load-factor", "lookup.merge-buffer-size", "lookup.merge-records-threshold",
    "lookup.refresh.async", "lookup.refresh.async.pending-snapshot-count",
    "lookup.refresh.full-load-threshold", "lookup.refresh.time-periods-blacklist",
    "lookup.remote-file.enabled", "lookup.remote-file.level-threshold", "manifest-sort.enabled",
    "manifest-sort.max-rewrite-size", "manifest-sort.partition-field", "manifest.delete-file-drop-stats",
    "manifest.full-compaction-threshold-size", "manifest.merge-optimize.enabled",
    "materialized-table.definition-query", "materialized-table.interval-freshness",
    "materialized-table.interval-freshness.time-unit", "materialized-table.logical-refresh-mode",
    "materialized-table.refresh-handler-bytes", "materialized-table.refresh-handler-description",
    "materialized-table.refresh-mode", "materialized-table.refresh-status",
    "metadata.stats-keep-first-n-columns", "metadata.stats-mode.per.level", "metastore.partitioned-table",
    "metastore.tag-to-partition", "metastore.tag-to-partition.preview", "overwrite-upgrade", "page-size",
    "parquet.enable.dictionary", "partition.end-input-to-done", "partition.idle-time-to-done",
    "partition.idle-time-to-report-statistic", "partition.mark-done-action.custom.class",
    "partition.mark-done-action.http.params", "partition.mark-done-action.http.url",
    "partition.mark-done-action.mode", "partition.mark-done.recover-from-state", "partition.sink-strategy",
    "partition.time-interval", "partition.timestamp-format.strict", "pk-bitmap.index.columns",
    "pk-btree.index.columns", "pk-clustering-override", "pk-full-text.index.columns",
    "pk-multivalue.index.columns", "pk-vector.index.columns", "postpone.batch-write-fixed-bucket",
    "postpone.batch-write-fixed-bucket.max-parallelism",
    "postpone.batch-write-fixed-bucket.rescale-load-factor",
    "postpone.merge-on-read", "postpone.target-row-num-per-bucket", "postpone.target-size-per-bucket",
    "precommit-compact", "query-auth.enabled", "read.allow.fullScan", "read.batch-size", "read.changelog",
    "read.shuffle-bucket-with-partition", "read.stream.maxBytesPerTrigger",
    "read.stream.maxFilesPerTrigger", "read.stream.maxRowsPerTrigger", "read.stream.maxTriggerDelayMs",
    "read.stream.minRowsPerTrigger", "requiredSparkConfsCheck.enabled",
    "row-tracking.partition-group-on-commit", "rowkind.field", "scalar-index.search-mode", "scan.bounded",
    "scan.bounded.watermark", "scan.bucket", "scan.creation-time-millis", "scan.dedicated-split-generation",
    "scan.fallback-branch.read-fail-fast", "scan.fallback-delta-branch", "scan.fallback-snapshot-branch",
    "scan.file-creation-time-millis", "scan.ignore-corrupt-files", "scan.ignore-lost-files",
    "scan.infer-parallelism", "scan.infer-parallelism.max", "scan.manifest.parallelism",
    "scan.max-snapshot.count", "scan.max-splits-per-task", "scan.parallelism", "scan.partitions",
    "scan.plan-auto-tag-for-read.time-retained", "scan.plan-sort-partition", "scan.primary-branch",
    "scan.remove-normalize", "scan.split-enumerator.batch-size", "scan.split-enumerator.mode",
    "scan.watermark", "scan.watermark.alignment.group", "scan.watermark.alignment.max-drift",
    "scan.watermark.alignment.update-interval", "scan.watermark.emit.strategy",
    "scan.watermark.idle-timeout", "sequence.snapshot-ordering", "sink.clustering.sample-factor",
    "sink.clustering.sort-in-cluster", "sink.committer-cpu", "sink.committer-memory",
    "sink.committer-operator-chaining", "sink.coordinator-commit.enabled",
    "sink.cross-partition.managed-memory", "sink.key-only-deletes.enabled",
    "sink.managed.writer-buffer-memory", "sink.operator-uid.suffix", "sink.parallelism",
    "sink.process-time-zone", "sink.savepoint.auto-tag", "sink.use-managed-memory-allocator",
    "sink.watermark-time-zone", "sink.writer-coordinator.cache-expire-after-access",
    "sink.writer-coordinator.cache-memory", "sink.writer-coordinator.cache-soft-values",
    "sink.writer-coordinator.enabled", "sink.writer-coordinator.page-size",
    "sink.writer-coordinator.prefetch-manifests", "sink.writer-cpu", "sink.writer-memory",
    "sink.writer-refresh-detectors", "snapshot.ignore-empty-commit", "snapshot.watermark-idle-timeout",
    "sort-compaction.local-sample.magnification", "sort-compaction.range-strategy", "sort-engine",
    "sort-spill-buffer-size", "sort-spill-threshold", "source.checkpoint-align.enabled",
    "source.checkpoint-align.timeout", "source.operator-uid.suffix", "source.split.open-file-cost",
    "source.split.target-size", "source.split.target-size-with-column-pruning", "spill-compression",
    "spill-compression.zstd-level", "stream-scan-mode", "streaming-read-append-overwrite",
    "streaming-read-overwrite", "streaming.read.snapshot.delay", "table-read.sequence-number.enabled",
    "tag.callback.#.param", "tag.callbacks", "tag.create-success-file", "tag.creation-period-duration",
    "tag.time-expire-enabled", "target-file-row-num", "unaware-bucket.compaction.parallelism",
    "unaware-bucket.no-shuffle", "variant.inferShreddingSchema",
    "variant.shredding.adaptive.maxInferBufferRow", "variant.shredding.adaptive.retentionRatio",
    "variant.shredding.inferenceMode", "variant.shredding.maxInferBufferRow",
    "variant.shredding.maxSchemaDepth", "variant.shredding.maxSchemaWidth",
    "variant.shredding.minFieldCardinalityRatio", "variant.shreddingSchema",
    "parquet.variant.shreddingSchema", "vector-field",
    "vector-index.search-mode", "vector-search.distribute.enabled", "vector-search.lateral-join.batch-size",
    "vector-search.lateral-join.parallelism", "vector.file.format", "vector.target-file-size",
    "visibility-callback.check-interval", "visibility-callback.enabled", "visibility-callback.timeout",
    "write-buffer-for-append", "write-buffer-spill.max-disk-size", "write-buffer-spillable",
    "write-max-writers-to-spill", "write.batch-memory", "write.batch-size",
    "write.data-evolution.update-conflict-retry.max-attempts",
    "write.data-evolution.update-conflict-retry.wait-ms", "write.hive-style-dynamic-partition.enabled",
    "write.sequence-number-init-mode", "write.use-v2-write", "zorder.var-length-contribution",
})  # fmt: skip
# Paimon options dyntable does not implement whose effect a reader or writer would miss: refused
# (a value set by another engine on a shared table is kept and never re-validated on read).
UNSUPPORTED_PAIMON_OPTIONS: dict[str, str] = {
    "record-level.expire-time": "dyntable does not expire single records",
    "record-level.time-field": "dyntable does not expire single records",
    "ignore-update-before": "dyntable does not drop UPDATE_BEFORE rows on write (use ignore-delete)",
    "chain-table.enabled": "chain tables are not supported",
}


def _known_keys() -> list[str]:
    return [*_BY_KEY, *PAIMON_STORED_KEYS, *UNSUPPORTED_PAIMON_OPTIONS]


def near_miss(key: str) -> str | None:
    """The known option key ``key`` most likely misspells (difflib ratio >= 0.8), else None."""
    if key.startswith("fields.") and key.count(".") >= 2:
        head, _, suffix = key.rpartition(".")
        if suffix in _FIELD_SUFFIXES:
            return None
        close = difflib.get_close_matches(suffix, _FIELD_SUFFIXES, n=1, cutoff=0.8)
        return f"{head}.{close[0]}" if close else None
    close = difflib.get_close_matches(key, _known_keys(), n=1, cutoff=0.8)
    return close[0] if close else None


def validate_options(options: Mapping[str, str]) -> None:
    """Check keys and values of table options as a user sets them (CREATE / ALTER / dynamic).

    The rule (docs/options.md, "Which keys a table accepts"): known keys (and pattern keys such
    as ``fields.price.aggregate-function``) must parse and pass their checks; the Paimon options
    dyntable cannot honour are refused with the reason; Paimon's other keys, and any key that is
    not a near miss of a known one, are stored as given, as Paimon stores them; a near miss
    (``'bukcet'``) is refused with the key it most likely means. A refusal is the one answer every
    client sees (a HiveServer2 client has no channel for warnings that dbt or a BI tool reads),
    and ``bucket`` cannot be corrected once the table has data.

    Raises:
        InvalidArgumentError: a value does not parse or is out of range, an option is not
            supported by dyntable, a key is a near miss of a known option, or a key/value is not
            a string.
    """
    for key, value in options.items():
        if not isinstance(key, str) or not isinstance(value, str):
            raise InvalidArgumentError(f"option {key!r} = {value!r}: keys and values must be strings")
        option = find_option(key)
        if option is not None:
            option.parse(value, key)
            continue
        reason = UNSUPPORTED_PAIMON_OPTIONS.get(key)
        if reason is not None:
            raise InvalidArgumentError(
                f"option '{key}' is not supported by dyntable: {reason}; remove it from the table options"
            )
        if key in PAIMON_STORED_KEYS:
            continue
        guess = near_miss(key)
        if guess is not None:
            raise InvalidArgumentError(
                f"option '{key}' is not a table option dyntable or Paimon knows. Did you mean '{guess}'? "
                "(A property of your own needs a name apart from the options' names, e.g. under a "
                "prefix of your own such as 'myteam.'.)"
            )


def check_alterable(key: str) -> None:
    """Refuse a change of an option that cannot change once the table has data.

    Raises:
        InvalidArgumentError: ``key`` is immutable.
    """
    option = find_option(key)
    if option is None or not option.immutable:
        return
    hint = {
        "bucket": " Use ALTER TABLE ... CLUSTERED INTO n BUCKETS, which rewrites the data.",
        "primary-key": " Use ALTER TABLE ... ADD PRIMARY KEY, which rewrites the data.",
    }.get(key, " Create a new table with the new value and copy the data.")
    raise InvalidArgumentError(f"option '{key}' cannot be changed on a table that has data.{hint}")


__all__ = [
    "PAIMON_STORED_KEYS", "UNSUPPORTED_PAIMON_OPTIONS", "check_alterable", "near_miss", "validate_options",
]
