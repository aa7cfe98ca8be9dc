"""Paimon's rules that tie a table's options to its columns: what a data-file format can hold,
and when deletion vectors may be on or switched.

* ``file.format``: VARIANT lives only in Parquet (Paimon's ORC and Avro writers have no variant
  encoding); an Avro table's columns must be types Paimon's Avro schema holds.
* ``deletion-vectors.enabled``: Paimon's ``SchemaValidation`` rules, plus dyntable's count layout;
  it changes only together with ``deletion-vectors.modifiable``.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence

from engine.errors import InvalidArgumentError, UnsupportedTableError
from engine.options import DELETION_VECTORS_ENABLED, DELETION_VECTORS_MODIFIABLE, CoreOptions
from engine.types import DataField, DataType, TypeRoot


def _avro_refusal(t: DataType) -> str | None:
    """Why a new Avro data file cannot hold ``t`` (None: it can): as Paimon's
    ``AvroSchemaConverter`` decides (timestamps up to precision 6, TIME up to 3), and no MAP or
    MULTISET, which dyntable's Avro writer cannot encode as Paimon's readers read them."""
    r = t.root
    if r in (TypeRoot.TIMESTAMP, TypeRoot.TIMESTAMP_LTZ) and (6 if t.precision is None else t.precision) > 6:
        return f"{t.root.value} of precision {t.precision} (Avro holds timestamps of precision up to 6)"
    if r is TypeRoot.TIME and (t.precision or 0) > 3:
        return f"TIME of precision {t.precision} (Avro holds TIME of precision up to 3)"
    if r in (TypeRoot.MAP, TypeRoot.MULTISET):  # engine.meta.avro_data: reads them, cannot write them
        return f"{r.value} (dyntable's Avro writer cannot write maps Paimon's readers read)"
    nested = [f.type for f in t.fields] if r is TypeRoot.ROW else []
    for member in (*nested, t.element, t.key, t.value):
        why = None if member is None else _avro_refusal(member)
        if why:
            return why
    return None


def check_file_format(fields: Sequence[DataField], file_format: str) -> None:
    """VARIANT data lives only in Parquet: Paimon's ORC and Avro writers have no variant encoding.
    An Avro table's columns must be types Paimon's Avro schema holds."""
    if file_format.lower() == "parquet":
        return
    if file_format.lower() == "avro":
        for f in fields:
            why = _avro_refusal(f.type)
            if why:
                raise UnsupportedTableError(
                    f"column '{f.name}' is a {why}; 'file.format' = 'avro' cannot hold it (use 'parquet')")
    for f in _all_fields(fields):
        if f.type.root is TypeRoot.VARIANT or _holds_variant(f.type):
            raise UnsupportedTableError(
                f"column '{f.name}' holds a VARIANT, which Paimon stores only in Parquet; "
                f"'file.format' = '{file_format}' cannot hold it (use 'parquet')")


def _holds_variant(t: DataType) -> bool:
    return any(m is not None and (m.root is TypeRoot.VARIANT or _holds_variant(m))
               for m in (t.element, t.key, t.value))


def check_deletion_vectors(primary_keys: Sequence[str], options: Mapping[str, str]) -> None:
    """Paimon's rules for ``deletion-vectors.enabled`` (``SchemaValidation``), plus dyntable's count
    layout, whose rows are counts that no deletion vector can express."""
    opts = CoreOptions(options)
    why = None
    if opts.changelog_producer not in ("none", "input", "lookup"):
        why = f"changelog-producer '{opts.changelog_producer}' (Paimon allows none, input or lookup)"
    elif primary_keys and opts.merge_engine == "first-row":
        why = "merge-engine 'first-row' (as in Paimon: it never deletes an older row, so no DV has work)"
    elif options.get("retractions.enabled", "false").strip().lower() == "true":
        why = "'retractions.enabled' (a count-layout table: its rows are counts)"
    if why is not None:
        raise InvalidArgumentError(f"'{DELETION_VECTORS_ENABLED.key}' = 'true' is refused with {why}")


def check_deletion_vectors_change(before: Mapping[str, str], after: Mapping[str, str]) -> None:
    """Paimon's rule: ``deletion-vectors.enabled`` changes only with ``deletion-vectors.modifiable``
    (readers of a DV table skip level 0 and do not merge: until a full compaction, duplicates or
    deleted rows may show)."""
    old, new = (CoreOptions(o).get(DELETION_VECTORS_ENABLED) for o in (before, after))
    if old != new and not any(CoreOptions(o).get(DELETION_VECTORS_MODIFIABLE) for o in (before, after)):
        raise InvalidArgumentError(
            f"cannot change '{DELETION_VECTORS_ENABLED.key}' from {str(old).lower()} to {str(new).lower()}: "
            "without a full compaction right after, reads may return duplicate or deleted rows. If you "
            f"will run one (CALL sys.compact), set '{DELETION_VECTORS_MODIFIABLE.key}' = 'true' too"
        )


def _all_fields(fields: Sequence[DataField]) -> Iterator[DataField]:
    """Every field, nested ROW fields (inside arrays and maps too) included."""
    for f in fields:
        yield f
        yield from _all_fields(_nested(f.type))


def _nested(t: DataType) -> list[DataField]:
    return [*t.fields, *(f for m in (t.element, t.key, t.value) if m is not None for f in _nested(m))]
