"""Marking partitions done (Paimon's ``mark_partition_done`` and ``partition.mark-done-action``).

One job: tell downstream jobs that a partition is complete. The ``success-file`` action writes
``<table>/<partition path>/_SUCCESS`` holding Paimon's JSON ``{"creationTime": ms,
"modificationTime": ms}``; marking again keeps the creation time and moves the modification time,
as Paimon's ``SuccessFileMarkDoneAction`` does. The ``done-partition`` action adds the partition
whose last value carries the suffix ``.done`` (``dt=20240713/hr=02`` → ``dt=20240713/hr=02.done``),
as Paimon's ``AddDonePartitionAction`` does. Paimon adds it to a metastore, which creates its
directory under the table; dyntable's catalog is the file system, so the done partition is that
directory, created empty (a zero-byte directory marker on object stores) and listed by
:func:`done_partitions`. Both actions may be combined (``success-file,done-partition``). Other
actions are refused when the option is set (``engine.options``). Orphan cleanup never deletes
``_SUCCESS`` files (they are not data files) nor empty ``.done`` partition directories.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence

from engine.errors import InvalidArgumentError
from engine.meta.paths import join
from engine.ops.maintenance_log import recorded_run
from engine.options import PARTITION_MARK_DONE_ACTION
from engine.store import FileStore

SUCCESS_FILE_NAME = "_SUCCESS"
DONE_SUFFIX = ".done"


def done_partition_dir(store: FileStore, partition: Mapping[str, object]) -> str:
    """The done partition's directory (relative to the table): the last value gets ``.done``."""
    return store.partition_dir([partition[k] for k in store.partition_keys]) + DONE_SUFFIX


def done_partitions(store: FileStore) -> list[str]:
    """The done partitions of the table (``dt=20240713.done``, ``dt=20240713/hr=02.done``), sorted."""
    found: list[str] = []
    level = [""]
    for depth, _key in enumerate(store.partition_keys):
        last = depth == len(store.partition_keys) - 1
        below: list[str] = []
        for rel in level:
            for status in store.io.list_dir(join(store.paths.root, rel) if rel else store.paths.root):
                name = status.path.rstrip("/").rsplit("/", 1)[-1]
                if not status.is_dir or "=" not in name:
                    continue
                path = f"{rel}/{name}" if rel else name
                if last and name.endswith(DONE_SUFFIX):
                    found.append(path)
                elif not last:
                    below.append(path)
        level = below
    return sorted(found)


def success_file_path(store: FileStore, partition: Mapping[str, object]) -> str:
    values = [partition[k] for k in store.partition_keys]
    return join(store.paths.root, store.partition_dir(values), SUCCESS_FILE_NAME)


def read_success_file(store: FileStore, partition: Mapping[str, object]) -> dict[str, int] | None:
    """The ``_SUCCESS`` file of a partition as ``{"creationTime", "modificationTime"}``, or None."""
    try:
        return json.loads(store.io.read_bytes(success_file_path(store, partition)))
    except FileNotFoundError:
        return None


def mark_partitions_done(store: FileStore, partitions: Sequence[Mapping[str, object]]) -> list[str]:
    """Run the table's mark-done actions on each partition; returns the partition directories.

    Raises:
        InvalidArgumentError: the table is not partitioned or a spec does not name every
            partition column.
    """
    keys = store.partition_keys
    if not keys:
        raise InvalidArgumentError("mark_partition_done needs a partitioned table")
    for spec in partitions:
        missing = [k for k in keys if k not in spec]
        if missing:
            raise InvalidArgumentError(
                f"partition {dict(spec)} does not name the partition column(s) {missing}"
            )
    actions = store.options.get(PARTITION_MARK_DONE_ACTION)
    done: list[str] = []
    with recorded_run(store.io, store.paths.root, "mark_partition_done", branch=store.branch) as rec:
        for spec in partitions:
            now = int(time.time() * 1000)
            if "success-file" in actions:
                path = success_file_path(store, spec)
                previous = read_success_file(store, spec)
                created = int(previous["creationTime"]) if previous and "creationTime" in previous else now
                body = json.dumps({"creationTime": created, "modificationTime": now})
                store.io.write_bytes(path, body.encode())
            if "done-partition" in actions:
                store.io.mark_directory(join(store.paths.root, done_partition_dir(store, spec)))
            done.append(store.partition_dir([spec[k] for k in keys]))
        rec.details = {"partitions": done[:100], "actions": list(actions)}
    return done
