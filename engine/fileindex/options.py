"""Which columns get which data-file indexes: the ``file-index.*`` table options, parsed and checked.

Paimon's keys: ``file-index.<type>.columns`` (a comma list) names the columns of an index type;
``file-index.<type>.<column>.<option>`` tunes one (``bloom-filter``: ``items``, ``fpp``);
``file-index.in-manifest-threshold`` decides where an index blob lives (at most that many bytes:
embedded in the manifest; more: a ``.index`` file next to the data file); and
``file-index.read.enabled`` lets scans use them. dyntable builds ``bloom-filter`` and ``bitmap``
(format version 1, what Paimon 0.9 writes and reads). The syntax of each key is checked by the
options registry (:mod:`engine.options`); :func:`check_file_index_options` adds what needs the
schema: every named column exists, is top-level and has a type the index supports.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from engine.errors import InvalidArgumentError
from engine.fileindex import bitmap, bloom
from engine.options import (
    FILE_INDEX_BLOOM_FILTER_FPP,
    FILE_INDEX_BLOOM_FILTER_ITEMS,
    FILE_INDEX_IN_MANIFEST_THRESHOLD,
    FILE_INDEX_READ_ENABLED,
    CoreOptions,
)
from engine.types import DataField, DataType, TypeRoot

INDEX_TYPES = (bloom.TYPE_NAME, bitmap.TYPE_NAME)

_BLOOM_TYPES = frozenset({
    TypeRoot.CHAR, TypeRoot.VARCHAR, TypeRoot.BINARY, TypeRoot.VARBINARY, TypeRoot.TINYINT,
    TypeRoot.SMALLINT, TypeRoot.INT, TypeRoot.BIGINT, TypeRoot.FLOAT, TypeRoot.DOUBLE, TypeRoot.DATE,
    TypeRoot.TIME, TypeRoot.TIMESTAMP, TypeRoot.TIMESTAMP_LTZ,
})  # fmt: skip


def supports(index_type: str, dtype: DataType) -> bool:
    """Whether an index of ``index_type`` can be built on a column of ``dtype``."""
    if index_type == bloom.TYPE_NAME:
        return dtype.root in _BLOOM_TYPES
    return bitmap.supports(dtype)


@dataclass(frozen=True, slots=True)
class IndexSpec:
    """One index of one column, with its options (``items``/``fpp`` for bloom filters)."""

    index_type: str
    items: int = bloom.DEFAULT_ITEMS
    fpp: float = bloom.DEFAULT_FPP


@dataclass(frozen=True, slots=True)
class FileIndexConfig:
    """The indexes a table's data files carry, where they go and whether scans use them."""

    columns: dict[str, tuple[IndexSpec, ...]] = field(default_factory=dict)
    in_manifest_threshold: int = 500
    read_enabled: bool = True

    @property
    def empty(self) -> bool:
        return not self.columns


def _columns_option(key: str, value: str) -> list[str]:
    names = [c.strip() for c in value.split(",")]
    if any(not c for c in names):
        raise InvalidArgumentError(f"option '{key}' = '{value}' names an empty column; list columns as 'a,b'")
    return names


def file_index_config(options: Mapping[str, str]) -> FileIndexConfig:
    """The file-index configuration of a table's options (no schema checks; see below)."""
    opts = CoreOptions(options)
    columns: dict[str, list[IndexSpec]] = {}
    for index_type in INDEX_TYPES:
        key = f"file-index.{index_type}.columns"
        raw = options.get(key)
        if raw is None or not raw.strip():
            continue
        for column in _columns_option(key, raw):
            spec = IndexSpec(index_type)
            if index_type == bloom.TYPE_NAME:
                items = opts.get(FILE_INDEX_BLOOM_FILTER_ITEMS, f"file-index.bloom-filter.{column}.items")
                fpp = opts.get(FILE_INDEX_BLOOM_FILTER_FPP, f"file-index.bloom-filter.{column}.fpp")
                spec = IndexSpec(index_type, int(items), float(fpp))
            specs = columns.setdefault(column, [])
            if all(s.index_type != index_type for s in specs):
                specs.append(spec)
    return FileIndexConfig(
        {c: tuple(s) for c, s in columns.items()},
        int(opts.get(FILE_INDEX_IN_MANIFEST_THRESHOLD)),
        bool(opts.get(FILE_INDEX_READ_ENABLED)),
    )


def check_file_index_options(fields: Sequence[DataField], options: Mapping[str, str]) -> None:
    """Refuse file-index options a table's columns cannot honour (at CREATE / ALTER, not at the
    first write).

    Raises:
        InvalidArgumentError: a named column does not exist, is nested (``map[key]``), has a type
            the index cannot hold, or a per-column option names a column without that index.
    """
    config = file_index_config(options)
    by_name = {f.name: f for f in fields}
    for column, specs in config.columns.items():
        for spec in specs:
            key = f"file-index.{spec.index_type}.columns"
            if "[" in column:
                raise InvalidArgumentError(
                    f"option '{key}' names '{column}': indexes on map entries are not supported by "
                    "dyntable; index top-level columns")
            f = by_name.get(column)
            if f is None:
                raise InvalidArgumentError(
                    f"option '{key}' names '{column}', which is not a column of the table")
            if not supports(spec.index_type, f.type):
                boolean = f.type.root is TypeRoot.BOOLEAN
                extra = " (Paimon 0.9 cannot write a BOOLEAN bitmap)" if boolean else ""
                raise InvalidArgumentError(
                    f"option '{key}': a {spec.index_type} index cannot hold column '{column}' of type "
                    f"{f.type.root.value}{extra}; remove the column from the option")
    for key in options:
        parts = key.split(".")
        if key.startswith("file-index.") and len(parts) == 4 and parts[1] in INDEX_TYPES:
            column = parts[2]
            if all(s.index_type != parts[1] for s in config.columns.get(column, ())):
                raise InvalidArgumentError(
                    f"option '{key}' tunes column '{column}', which 'file-index.{parts[1]}.columns' does "
                    "not list; add the column there or remove the option")


def _is_index_key(key: str) -> bool:
    parts = key.split(".")
    return key.startswith("file-index.") and len(parts) >= 3 and parts[1] in INDEX_TYPES


def rename_index_column(options: Mapping[str, str], old: str, new: str) -> dict[str, str]:
    """Options after renaming column ``old`` to ``new``: index column lists and per-column keys follow."""
    out: dict[str, str] = {}
    for key, value in options.items():
        if _is_index_key(key):
            parts = key.split(".")
            if len(parts) == 3 and parts[2] == "columns":
                value = ",".join(new if c.strip() == old else c.strip() for c in value.split(","))
            elif len(parts) == 4 and parts[2] == old:
                key = ".".join((parts[0], parts[1], new, parts[3]))
        out[key] = value
    return out


def drop_index_column(options: Mapping[str, str], column: str) -> dict[str, str]:
    """Options after dropping ``column``: it leaves the index column lists (an emptied list goes)
    and its per-column keys go."""
    out: dict[str, str] = {}
    for key, value in options.items():
        if _is_index_key(key):
            parts = key.split(".")
            if len(parts) == 3 and parts[2] == "columns":
                kept = [c.strip() for c in value.split(",") if c.strip() and c.strip() != column]
                if not kept:
                    continue
                value = ",".join(kept)
            elif len(parts) == 4 and parts[2] == column:
                continue
        out[key] = value
    return out
