"""Iceberg-compatible metadata (``metadata.iceberg.storage``): Iceberg readers read dyntable tables.

One job: keep a table's Iceberg metadata — ``v<N>.metadata.json``, manifest lists, manifests,
``version-hint.text`` — in step with its Paimon snapshots, in Paimon's layout and by Paimon's
rules, from pure storage code (no Iceberg or Spark library). ``layout`` says where and with which
options, ``schema`` converts types, partition values and bounds, ``avro`` writes the Iceberg spec's
Avro files, ``commit`` publishes a version ([docs/iceberg.md](../../docs/iceberg.md)).

:func:`run_after_commit` runs where snapshots are published (``engine.commit``,
``engine.ops.republish``) and inside expiration (``engine.ops.expire_snapshots``, before files are
deleted): like Paimon's commit callback it never fails the commit that ran it; a failed step is
logged and the next one catches up. :func:`rebuild` publishes the metadata of an existing table afresh.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from engine.iceberg.commit import sync
from engine.iceberg.layout import IcebergLayout
from engine.iceberg.versions import live_metadata_files
from engine.meta.manifest import ManifestEntry
from engine.store import FileStore

__all__ = ["IcebergLayout", "live_metadata_files", "rebuild", "run_after_commit", "sync"]

log = logging.getLogger(__name__)


def run_after_commit(
    store: FileStore, delta: tuple[int, Sequence[ManifestEntry]] | None = None
) -> int | None:
    """:func:`sync`, guarded: the Paimon commit is done, so a failure here is only logged.
    ``delta``: the snapshot just published and its delta entries (saves reading them back)."""
    try:
        return sync(store, delta)
    except Exception as e:  # noqa: BLE001 - the commit is published; the next commit catches up
        log.warning(
            "Iceberg metadata of %s was not updated (the next commit retries): %s", store.paths.root, e
        )
        return None


def rebuild(store: FileStore) -> int | None:
    """Publish the Iceberg metadata of ``store``'s table afresh from its latest snapshot (for a
    table that just set ``metadata.iceberg.storage``, or metadata lost or damaged). Raises what
    :func:`sync` raises."""
    layout = IcebergLayout.of(store)
    if layout is None:
        return None
    store.io.delete(layout.version_hint)  # no base version: sync builds from the live files
    latest = store.snapshots.latest_id()
    if latest is not None:
        store.io.delete(layout.metadata_file(latest))
    return sync(store)
