"""The front door to aggregates answered from metadata: a read builder's plan, aggregated by
:mod:`engine.scan.metadata_aggregate` without opening a data file."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from engine.builders.read import ReadBuilder
from engine.scan.metadata_aggregate import MetadataAggregate, aggregate_splits
from engine.scan.predicate import Predicate, split_by_columns


def aggregate_from_metadata(
    builder: ReadBuilder,
    aggregates: Sequence[MetadataAggregate],
    partition_filter: Predicate | None = None,
) -> tuple[Any, ...] | None:
    """``aggregates`` over what ``builder`` reads (its snapshot, or the latest), restricted to the
    partitions ``partition_filter`` keeps; None when Paimon's rule needs the data read.

    Refuses (None) a builder that reads something other than the table's rows as they are: a
    projection is harmless, but a data filter, ``$ro``, row kinds or merge-only plans are not
    what ``count(*)`` counts, and a filter on other than partition columns is not exact. A table
    whose own ``scan.*`` options shape an unpinned read is refused too (conservative: the read
    they describe is the data source's to resolve).
    """
    b = builder
    if b.filter is not None or b.read_optimized or b.row_kind or b.merge_only is not None:
        return None
    store = builder.store
    if b.snapshot is None and any(k.startswith("scan.") for k in store.schema.options):
        return None  # scan.snapshot-id, scan.tag-name, scan.mode, fallback branches...: not decided here
    if partition_filter is not None:
        _, rest = split_by_columns(partition_filter, store.partition_keys)
        if rest is not None:
            return None
    plan = builder.with_filter(partition_filter).new_scan().plan()
    return aggregate_splits(store, plan.splits, aggregates, partition_filter)
