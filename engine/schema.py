"""A table schema (Paimon's ``schema/schema-N`` file) and its evolution rules.

Invariants of a :class:`TableSchema`:

* it is immutable, hashable and picklable; ``options`` is a read-only mapping of strings;
* field ids are unique across the whole schema, nested ROW fields included, and never reused:
  ``highest_field_id`` only grows (dropping a column does not lower it);
* ``to_json`` writes exactly Paimon's file (key order and layout of Java's Jackson printer) and
  ``from_json`` reads any version Java writes, applying Paimon's compatibility rules;
* :meth:`TableSchema.create` and :meth:`TableSchema.apply_changes` only return schemas that pass
  the same validation (keys exist and are atomic, a partitioned table's primary key contains
  the partition keys, option values parse, ...); ``from_json`` trusts what is on disk.

Decisions (Paimon's ``SchemaManager`` rules): dropping or retyping a primary-key or partition
column is refused, and so is renaming a partition column (partition paths hold its name); a
primary-key column may be renamed (files address columns by field id; the key list, bucket key
and per-field options follow the new name); a type may change where Paimon casts implicitly
(:func:`engine.type_widening.castable`); options that cannot change (``bucket``,
``merge-engine``, ...) are refused only once the table has data (``has_snapshots``), as in
Paimon; a schema read from a file without a ``bucket`` option gets Java's meaning of a missing
key (``-1``; ``1`` for version-1 files) written explicitly, because dyntable's own default is 1.
Changes may name nested ROW fields by path (:mod:`engine.schema_nested` applies those); a
column's default value lives in its field (``defaultValue``, :mod:`engine.default_values`).
"""

from __future__ import annotations

import itertools
import json
import time
from collections.abc import Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import pyarrow as pa

from engine.arrow_types import from_arrow_field, to_arrow_field
from engine.default_values import check_default_value
from engine.errors import CorruptMetadataError, InvalidArgumentError, NoSuchColumnError, UnsupportedTableError
from engine.field_paths import find_field
from engine.fileindex.options import check_file_index_options, drop_index_column, rename_index_column
from engine.format_rules import check_deletion_vectors, check_deletion_vectors_change, check_file_format
from engine.frozen import FrozenMap
from engine.jackson import jackson_json
from engine.option_checks import check_alterable, validate_options
from engine.options import (
    BUCKET,
    CHANGELOG_PRODUCER,
    DELETION_VECTORS_ENABLED,
    FULL_COMPACTION_DELTA_COMMITS,
    MERGE_ENGINE,
    PARTITION,
    PRIMARY_KEY,
    PRIMARY_KEY_NULLABLE,
    CoreOptions,
    iter_field_option_columns,
)
from engine.schema_changes import (
    AddColumn,
    ColumnName,
    DropColumn,
    MoveColumn,
    RemoveOption,
    RenameColumn,
    SchemaChange,
    SetOption,
    UpdateColumnComment,
    UpdateColumnDefault,
    UpdateColumnType,
    UpdateComment,
)
from engine.schema_nested import (
    add_field,
    check_free,
    comment_field,
    drop_field,
    insert_at,
    move_field,
    move_in,
    reassign_ids,
    rename_field,
    retype_field,
    retyped,
)
from engine.types import (
    DataField,
    DataType,
    TypeRoot,
    field_from_json,
    field_to_json,
    max_field_id,
    parse_sql_type,
    type_to_sql,
)

CURRENT_VERSION = 3


FrozenOptions = FrozenMap  # table options: the shared frozen mapping


# ---- the schema ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class TableSchema:
    """One version of a table's schema; see the module docstring for the invariants."""

    id: int
    fields: tuple[DataField, ...]
    highest_field_id: int
    partition_keys: tuple[str, ...]
    primary_keys: tuple[str, ...]
    options: Mapping[str, str]
    comment: str | None = None
    time_millis: int = 0
    version: int = CURRENT_VERSION

    def __post_init__(self) -> None:
        object.__setattr__(self, "fields", tuple(self.fields))
        object.__setattr__(self, "partition_keys", tuple(self.partition_keys))
        object.__setattr__(self, "primary_keys", tuple(self.primary_keys))
        if not isinstance(self.options, FrozenOptions):
            object.__setattr__(self, "options", FrozenOptions(self.options))

    # -- lookups --------------------------------------------------------------------------------
    @property
    def field_names(self) -> tuple[str, ...]:
        return tuple(f.name for f in self.fields)

    def field_index(self, name: str) -> int:
        """Position of a top-level column: exact name, else the one case-insensitive match.

        Raises:
            NoSuchColumnError: no (unique) column has that name.
        """
        return _index_of(self.fields, name)

    def field(self, name: str) -> DataField:
        """The top-level column ``name`` (see :meth:`field_index`)."""
        return self.fields[_index_of(self.fields, name)]

    def field_by_id(self, field_id: int) -> DataField:
        """The field (top-level or nested) with this id; NoSuchColumnError if none."""
        stack = list(self.fields)
        while stack:
            f = stack.pop(0)
            if f.id == field_id:
                return f
            stack.extend(_nested_fields(f.type))
        raise NoSuchColumnError(f"schema {self.id} has no field with id {field_id}")

    @property
    def core_options(self) -> CoreOptions:
        return CoreOptions(self.options)

    @property
    def trimmed_primary_keys(self) -> tuple[str, ...]:
        """The primary key minus the partition keys, in key order (the ``_KEY_`` columns)."""
        return tuple(k for k in self.primary_keys if k not in self.partition_keys)

    @property
    def logical_bucket_keys(self) -> tuple[str, ...]:
        """Option ``bucket-key``, else the trimmed primary key, else every column."""
        return CoreOptions(self.options).bucket_keys or self.trimmed_primary_keys or self.field_names

    def arrow_schema(self) -> pa.Schema:
        """The Arrow schema of the table's rows (field ids and exact types in field metadata)."""
        return pa.schema([to_arrow_field(f) for f in self.fields])

    def describe(self) -> list[tuple[str, str, str | None]]:
        """(name, Spark-style type text, comment) per column, for DESCRIBE."""
        return [(f.name, type_to_sql(f.type), f.description) for f in self.fields]

    # -- serde ----------------------------------------------------------------------------------
    def to_json(self) -> str:
        """The schema file text, as Java Paimon writes it."""
        obj: dict[str, Any] = {
            "version": self.version,
            "id": self.id,
            "fields": [field_to_json(f) for f in self.fields],
            "highestFieldId": self.highest_field_id,
            "partitionKeys": list(self.partition_keys),
            "primaryKeys": list(self.primary_keys),
            "options": dict(self.options),
        }
        if self.comment is not None:
            obj["comment"] = self.comment
        obj["timeMillis"] = self.time_millis
        return jackson_json(obj)

    @staticmethod
    def from_json(text: str | bytes) -> TableSchema:
        """Parse a schema file written by dyntable, Java Paimon or pypaimon.

        Compatibility (as Java): a missing ``version`` is 1; version ≤ 1 without ``bucket`` means
        ``bucket=1``, a later version without it means Paimon's default ``-1`` (stored explicitly);
        version ≤ 2 without ``file.format`` means ``orc``;
        a missing ``timeMillis`` is 0; unknown keys are ignored; a field's ``defaultValue`` is kept.
        Nested fields without ids are numbered after the largest id.

        Raises:
            CorruptMetadataError: the text is not a schema file (bad JSON, missing or mistyped keys,
                a type dyntable cannot represent).
        """
        try:
            obj = json.loads(text)
        except (ValueError, TypeError) as e:
            raise CorruptMetadataError(f"schema file is not valid JSON: {e}") from None
        if not isinstance(obj, dict):
            raise CorruptMetadataError("schema file must hold a JSON object")
        try:
            version = _int(obj.get("version", 1), "version")
            counter = itertools.count(
                max(_int(obj["highestFieldId"], "highestFieldId"), _json_max_id(obj)) + 1
            )
            raw_fields = obj["fields"]
            if not isinstance(raw_fields, list):
                raise TypeError("'fields' must be a list")
            fields = tuple(field_from_json(f, counter.__next__) for f in raw_fields)
            options = obj["options"]
            if not isinstance(options, dict) or not all(isinstance(v, str) for v in options.values()):
                raise TypeError("'options' must map strings to strings")
            options = dict(options)
            if "bucket" not in options:
                options["bucket"] = "1" if version <= 1 else "-1"  # Java's meaning of a missing key
            if version <= 2:
                options.setdefault("file.format", "orc")
            comment = obj.get("comment")
            if comment is not None and not isinstance(comment, str):
                raise TypeError("'comment' must be a string")
            highest = max(_int(obj["highestFieldId"], "highestFieldId"), *(_max_id(f) for f in fields), -1)
            return TableSchema(
                id=_int(obj["id"], "id"),
                fields=fields,
                highest_field_id=highest,
                partition_keys=_names(obj["partitionKeys"], "partitionKeys"),
                primary_keys=_names(obj["primaryKeys"], "primaryKeys"),
                options=options,
                comment=comment,
                time_millis=_int(obj.get("timeMillis", 0), "timeMillis"),
                version=version,
            )
        except KeyError as e:
            raise CorruptMetadataError(f"schema file lacks the key {e}") from None
        except UnsupportedTableError:
            raise  # a newer Paimon type (engine.types.NEWER_TYPES): a feature, not damage
        except InvalidArgumentError as e:
            raise CorruptMetadataError(
                f"schema file holds a type or field dyntable cannot read: {e}"
            ) from None
        except (TypeError, ValueError) as e:
            raise CorruptMetadataError(f"schema file is malformed: {e}") from None

    # -- creation ---------------------------------------------------------------------------------
    @staticmethod
    def create(
        arrow_or_fields: pa.Schema | Sequence[DataField | tuple[Any, ...]],
        partition_keys: Sequence[str] = (),
        primary_keys: Sequence[str] = (),
        options: Mapping[str, str] | None = None,
        comment: str | None = None,
        *,
        time_millis: int | None = None,
    ) -> TableSchema:
        """Schema 0 of a new table.

        Args:
            arrow_or_fields: a ``pa.Schema`` or a list of ``(name, type[, comment])`` tuples (type
                as DataType or SQL text) or DataFields (their ids are ignored; a default value is
                kept, checked by :func:`engine.default_values.check_default_value`).
            partition_keys: partition columns (or option ``partition``, not both).
            primary_keys: primary-key columns (or option ``primary-key``, not both); they become
                NOT NULL unless ``primary-key.nullable`` is true.
            options: table options (validated; ``bucket`` is stored explicitly, default -1, as Paimon).
            comment: table comment.
            time_millis: creation time; now by default.

        Field ids are assigned depth-first from 0 (``a, b ROW<x, y>, c`` → 0, 1, 2, 3, 4).

        Raises:
            InvalidArgumentError: any rule of the module docstring is broken.
        """
        opts = {str(k): v for k, v in (options or {}).items()}
        validate_options(opts)
        partition_keys = _keys_from_option(opts, PARTITION.key, partition_keys, "PARTITIONED BY")
        primary_keys = _keys_from_option(opts, PRIMARY_KEY.key, primary_keys, "PRIMARY KEY")
        opts.setdefault(BUCKET.key, str(BUCKET.default))
        pk_nullable = CoreOptions(opts).get(PRIMARY_KEY_NULLABLE)
        columns = _columns(arrow_or_fields)
        pk_set = set(primary_keys)
        ids = itertools.count()
        fields = []
        for name, t, desc, default in columns:
            fid = next(ids)
            if name in pk_set and not pk_nullable:
                t = t.copy(False)
            if default is not None:
                check_default_value(t, default)
            fields.append(DataField(fid, name, reassign_ids(t, ids.__next__), desc, default))
        schema = TableSchema(
            id=0,
            fields=tuple(fields),
            highest_field_id=max((_max_id(f) for f in fields), default=-1),
            partition_keys=tuple(partition_keys),
            primary_keys=tuple(primary_keys),
            options=opts,
            comment=comment,
            time_millis=_now() if time_millis is None else time_millis,
        )
        _validate(schema)
        return schema

    # -- evolution --------------------------------------------------------------------------------
    def apply_changes(
        self,
        changes: Sequence[SchemaChange],
        *,
        has_snapshots: bool = True,
        allow_immutable: Collection[str] = (),
        time_millis: int | None = None,
    ) -> TableSchema:
        """The next schema version (id + 1, new time) with ``changes`` applied in order.

        Args:
            changes: the schema changes.
            has_snapshots: whether the table has data; immutable options may change only while
                it has none (as in Paimon). Callers must pass False explicitly to relax it.
            allow_immutable: option keys the caller changes on purpose despite their
                immutability (e.g. ``bucket`` for a rescale that rewrites every file).
            time_millis: the new version's time; now by default.

        Raises:
            InvalidArgumentError: a change breaks a rule (see the change classes and module
                docstring); nothing is applied.
            NoSuchColumnError: a change names a column that does not exist.
        """
        st = _Evolution(self, has_snapshots, frozenset(allow_immutable))
        for change in changes:
            st.apply(change)
        check_deletion_vectors_change(self.options, st.options)
        schema = TableSchema(
            id=self.id + 1,
            fields=tuple(st.fields),
            highest_field_id=st.highest,
            partition_keys=self.partition_keys,
            primary_keys=st.primary_keys,
            options=st.options,
            comment=st.comment,
            time_millis=_now() if time_millis is None else time_millis,
            version=CURRENT_VERSION,
        )
        _validate(schema)
        return schema


class _Evolution:
    """The mutable working state of :meth:`TableSchema.apply_changes`."""

    def __init__(self, base: TableSchema, has_snapshots: bool, allow: frozenset[str]) -> None:
        self.base = base
        self.fields = list(base.fields)
        self.highest = base.highest_field_id
        self.options = dict(base.options)
        self.comment = base.comment
        self.primary_keys = base.primary_keys
        self.has_snapshots = has_snapshots
        self.allow = allow

    def _key_column(self, name: str, action: str) -> None:
        if name in self.base.partition_keys:
            raise InvalidArgumentError(
                f"cannot {action} partition column '{name}': partition paths depend on it"
            )
        if name in self.base.primary_keys:
            raise InvalidArgumentError(
                f"cannot {action} primary-key column '{name}': data files are keyed on it"
            )

    def _check_option_change(self, key: str, new_value: str | None) -> None:
        if key in (PRIMARY_KEY.key, PARTITION.key):
            raise InvalidArgumentError(
                f"option '{key}' cannot be set or removed with ALTER TABLE SET/RESET; primary and "
                "partition keys are part of the schema (use ALTER TABLE ADD PRIMARY KEY, which rewrites)"
            )
        if self.options.get(key) == new_value:
            return  # setting the current value again is a no-op, even for immutable options
        if self.has_snapshots and key not in self.allow:
            check_alterable(key)

    def apply(self, change: SchemaChange) -> None:  # noqa: C901 - one branch per change kind
        if isinstance(change, SetOption):
            validate_options({change.key: change.value})
            self._check_option_change(change.key, change.value)
            self.options[change.key] = change.value
        elif isinstance(change, RemoveOption):
            if change.key in self.options:
                self._check_option_change(change.key, None)
                del self.options[change.key]
        elif isinstance(change, UpdateComment):
            self.comment = change.comment
        elif isinstance(change, AddColumn):
            self._add(change)
        elif isinstance(change, DropColumn):
            if len(path := _path(change.name)) > 1:
                self.fields = list(drop_field(self.fields, path))
                return
            i = _index_of(self.fields, path[0])
            name = self.fields[i].name
            self._key_column(name, "drop")
            if len(self.fields) == 1:
                raise InvalidArgumentError(f"cannot drop '{name}': a table needs at least one column")
            opts = CoreOptions(self.options)
            for what, cols in (("bucket-key", opts.bucket_keys), ("sequence.field", opts.sequence_fields)):
                if name in cols:
                    raise InvalidArgumentError(f"cannot drop '{name}': option '{what}' uses it")
            del self.fields[i]
            for key, cols in list(iter_field_option_columns(self.options)):
                if cols == (name,):
                    del self.options[key]  # its per-column options die with it
            self.options = drop_index_column(self.options, name)
        elif isinstance(change, RenameColumn):
            if len(path := _path(change.old)) > 1:
                self.fields = list(rename_field(self.fields, path, change.new))
                return
            i = _index_of(self.fields, path[0])
            old = self.fields[i].name
            if old in self.base.partition_keys:
                raise InvalidArgumentError(
                    f"cannot rename partition column '{old}': partition paths depend on it"
                )
            check_free(self.fields, change.new, ignore=i)
            self.fields[i] = replace(self.fields[i], name=change.new)
            renamed = _rename_in_options(self.options, old, change.new)
            self.options = rename_index_column(renamed, old, change.new)
            self.primary_keys = tuple(change.new if k == old else k for k in self.primary_keys)
        elif isinstance(change, MoveColumn):
            if len(path := _path(change.name)) > 1:
                self.fields = list(move_field(self.fields, path, change.position))
                return
            move_in(self.fields, _index_of(self.fields, path[0]), change.position)
        elif isinstance(change, UpdateColumnType):
            new = parse_sql_type(change.type) if isinstance(change.type, str) else change.type
            if len(path := _path(change.name)) > 1:
                self.fields = list(retype_field(self.fields, path, new, change.keep_nullability))
                return
            i = _index_of(self.fields, path[0])
            f = self.fields[i]
            self._key_column(f.name, "change the type of")
            self.fields[i] = replace(f, type=retyped(f.name, f.type, new, change.keep_nullability))
        elif isinstance(change, UpdateColumnComment):
            if len(path := _path(change.name)) > 1:
                self.fields = list(comment_field(self.fields, path, change.comment))
                return
            i = _index_of(self.fields, path[0])
            self.fields[i] = replace(self.fields[i], description=change.comment)
        elif isinstance(change, UpdateColumnDefault):
            path = _path(change.name)
            if len(path) > 1:
                raise InvalidArgumentError(
                    f"cannot set a default value on the nested field '{'.'.join(path)}': defaults apply to "
                    "top-level columns (Paimon's writers fill only those)"
                )
            i = _index_of(self.fields, path[0])
            if change.default is not None:
                check_default_value(self.fields[i].type, change.default)
            self.fields[i] = replace(self.fields[i], default_value=change.default)
            # the option older dyntable versions stored the default in: the field is the one place now
            self.options.pop(f"fields.{self.fields[i].name}.default-value", None)
        else:
            raise InvalidArgumentError(f"unsupported schema change {change!r}")

    def _add(self, change: AddColumn) -> None:
        t = parse_sql_type(change.type) if isinstance(change.type, str) else change.type
        path = _path(change.name)
        if not t.nullable:
            raise InvalidArgumentError(
                f"cannot add column '{'.'.join(path)}' as NOT NULL: existing rows have no value for it"
            )
        if len(path) > 1:
            fields, self.highest = add_field(
                self.fields, path, t, change.comment, change.position, self.highest
            )
            self.fields = list(fields)
            return
        check_free(self.fields, path[0])
        ids = itertools.count(self.highest + 1)
        fid = next(ids)
        field = DataField(fid, path[0], reassign_ids(t, ids.__next__), change.comment)
        self.highest = max(fid, _max_id(field))
        insert_at(self.fields, field, change.position)


def _path(name: ColumnName) -> tuple[str, ...]:
    """A change's column as a path (a plain name is a one-step path)."""
    if isinstance(name, str):
        return (name,)
    if not name or not all(isinstance(n, str) and n for n in name):
        raise InvalidArgumentError(f"a column path must be non-empty names, got {name!r}")
    return tuple(name)


# ---- type changes ---------------------------------------------------------------------------------

# ---- validation -------------------------------------------------------------------------------


def validate_schema(s: TableSchema) -> None:
    """Raise InvalidArgumentError unless ``s`` is a schema dyntable may write (schemas made
    outside :meth:`TableSchema.apply_changes`, e.g. by ``engine.schema_merge``)."""
    _validate(s)


def _validate(s: TableSchema) -> None:  # noqa: C901 - a list of rules
    """Raise InvalidArgumentError unless ``s`` is a schema dyntable may write."""
    if not s.fields:
        raise InvalidArgumentError("a table needs at least one column")
    seen: dict[str, str] = {}
    for f in s.fields:
        if not isinstance(f.name, str) or not f.name:
            raise InvalidArgumentError(f"column names must be non-empty strings, got {f.name!r}")
        if f.name.lower() in seen:
            raise InvalidArgumentError(
                f"duplicate column name '{f.name}' (clashes with '{seen[f.name.lower()]}'; "
                "names are case-insensitive)"
            )
        seen[f.name.lower()] = f.name
    names = set(s.field_names)

    def check_columns(cols: Sequence[str], what: str, atomic: bool = True) -> None:
        if len(set(cols)) != len(cols):
            raise InvalidArgumentError(f"{what} {list(cols)} names a column twice")
        for c in cols:
            if c not in names:
                raise InvalidArgumentError(
                    f"{what} column '{c}' is not a column of the table ({', '.join(s.field_names)})"
                )
            if s.field(c).type.root is TypeRoot.VARIANT:  # Paimon's documented limitation
                raise InvalidArgumentError(
                    f"{what} column '{c}' is a VARIANT, which cannot be a {what} column (no order or hash)")
            if atomic and s.field(c).type.is_nested:
                raise InvalidArgumentError(
                    f"{what} column '{c}' has nested type {type_to_sql(s.field(c).type)}; use an atomic type"
                )

    check_columns(s.partition_keys, "partition")
    check_columns(s.primary_keys, "primary key")
    if len(s.partition_keys) == len(s.fields):
        raise InvalidArgumentError(
            "every column is a partition key; a table needs at least one non-partition column"
        )
    opts = CoreOptions(s.options)
    check_file_format(s.fields, opts.file_format)
    if str(s.options.get("row-tracking.enabled", "false")).strip().lower() == "true" and (
            s.primary_keys or opts.bucket != -1):
        raise InvalidArgumentError(  # Paimon's rule (SchemaValidation.validateRowTracking)
            "'row-tracking.enabled' = 'true' needs an append table with 'bucket' = '-1' (no primary key)")
    if str(s.options.get("data-evolution.enabled", "false")).strip().lower() == "true" and (
            str(s.options.get("row-tracking.enabled", "false")).strip().lower() != "true"):
        raise InvalidArgumentError(  # Paimon's rule (SchemaValidation)
            "'data-evolution.enabled' = 'true' needs 'row-tracking.enabled' = 'true'")
    if s.primary_keys:
        missing = [k for k in s.partition_keys if k not in s.primary_keys]
        # A key that does not cover the partition: with dynamic buckets ('bucket' = '-1') a key has
        # one partition (cross-partition upsert, a global index); with fixed buckets each partition
        # keeps its own keys, as Paimon (1.3+) allows: only a complete changelog from the input
        # (a delete in the old partition) moves a key.
        if missing and opts.sequence_fields:
            # As Paimon: a key moving between partitions is routed by the global index in input
            # order, which a sequence field could contradict.
            raise InvalidArgumentError(
                f"'sequence.field' cannot be used with cross-partition upsert (primary key "
                f"{list(s.primary_keys)} lacks the partition columns {missing}); add them to the primary "
                "key or drop 'sequence.field'"
            )
        if s.partition_keys and set(s.primary_keys) == set(s.partition_keys):
            raise InvalidArgumentError(
                f"primary key {list(s.primary_keys)} equals the partition keys, so each partition would hold "
                "one row; add a column to the primary key"
            )
        if not opts.get(PRIMARY_KEY_NULLABLE):
            nullable = [k for k in s.primary_keys if s.field(k).type.nullable]
            if nullable:
                raise InvalidArgumentError(f"primary-key columns {nullable} must be NOT NULL")
    else:
        for option, default in ((MERGE_ENGINE, "deduplicate"), (CHANGELOG_PRODUCER, "none")):
            if opts.get(option) != default:
                raise InvalidArgumentError(
                    f"option '{option.key}' = '{opts.get(option)}' needs a primary key; "
                    "define one or drop the option"
                )
        if opts.sequence_fields:
            raise InvalidArgumentError(
                "option 'sequence.field' needs a primary key; define one or drop the option"
            )
        if s.options.get(FULL_COMPACTION_DELTA_COMMITS.key) is not None:
            raise InvalidArgumentError(
                f"option '{FULL_COMPACTION_DELTA_COMMITS.key}' needs a primary key (Paimon refuses it "
                "on append tables); define one or drop the option"
            )
    bucket_keys = opts.bucket_keys
    check_columns(bucket_keys, "bucket-key")
    in_partition = [k for k in bucket_keys if k in s.partition_keys]
    if in_partition:
        raise InvalidArgumentError(
            f"bucket-key columns {in_partition} are partition keys; pick other columns"
        )
    if s.primary_keys and not set(bucket_keys) <= set(s.primary_keys):
        raise InvalidArgumentError(
            f"bucket-key {list(bucket_keys)} must be a subset of the primary key {list(s.primary_keys)}"
        )
    check_columns(opts.sequence_fields, "sequence.field")
    check_file_index_options(s.fields, s.options)
    for key, cols in iter_field_option_columns(s.options):
        for c in cols:
            if c not in names:
                raise InvalidArgumentError(f"option '{key}' names '{c}', which is not a column of the table")
    for seq, guarded in opts.sequence_groups().items():
        for c in guarded:
            if c not in names:
                raise InvalidArgumentError(
                    f"sequence group of {list(seq)} names '{c}', which is not a column"
                )
    if s.options.get(FULL_COMPACTION_DELTA_COMMITS.key) is not None and opts.changelog_producer == "lookup":
        raise InvalidArgumentError(
            f"'{FULL_COMPACTION_DELTA_COMMITS.key}' is incompatible with changelog-producer 'lookup' (as in "
            "Paimon); use changelog-producer 'full-compaction' for periodic full compactions with a "
            "changelog, or drop the option"
        )
    if opts.get(DELETION_VECTORS_ENABLED):
        check_deletion_vectors(s.primary_keys, s.options)
    if s.primary_keys:
        # The merge options fail at CREATE/ALTER, not at the first write into the table.
        from engine.merge.config import MergeConfig

        MergeConfig.from_options(s.options, s.primary_keys)
    ids = [f.id for f in _all_fields(s.fields)]
    if len(set(ids)) != len(ids) or max(ids) > s.highest_field_id:
        raise InvalidArgumentError(
            "field ids must be unique and at most highest_field_id"
        )  # internal invariant


# ---- helpers ------------------------------------------------------------------------------------


def _now() -> int:
    return int(time.time() * 1000)


def _index_of(fields: Sequence[DataField], name: str) -> int:
    return find_field(fields, name)


def _nested_fields(t: DataType) -> list[DataField]:
    out = list(t.fields)
    for member in (t.element, t.key, t.value):
        if member is not None:
            out.extend(_nested_fields(member))
    return out


def _all_fields(fields: Sequence[DataField]) -> Iterator[DataField]:
    for f in fields:
        yield f
        yield from _all_fields(_nested_fields(f.type))


def _max_id(f: DataField) -> int:
    return max(f.id, max_field_id(f.type))


def _columns(
    spec: pa.Schema | Sequence[DataField | tuple[Any, ...]],
) -> list[tuple[str, DataType, str | None, str | None]]:
    """(name, type, comment, default value) of each column a caller of ``create`` gives."""
    if isinstance(spec, pa.Schema):
        out: list[tuple[str, DataType, str | None, str | None]] = []
        for af in spec:
            f = from_arrow_field(af)
            out.append((f.name, f.type, f.description, None))
        return out
    cols: list[tuple[str, DataType, str | None, str | None]] = []
    for item in spec:
        if isinstance(item, DataField):
            cols.append((item.name, item.type, item.description, item.default_value))
            continue
        if not isinstance(item, tuple) or len(item) not in (2, 3):
            raise InvalidArgumentError(
                f"a column must be (name, type[, comment]) or a DataField, got {item!r}"
            )
        name, t = item[0], item[1]
        if isinstance(t, str):
            t = parse_sql_type(t)
        if not isinstance(t, DataType):
            raise InvalidArgumentError(f"column {name!r}: type must be a DataType or SQL text, got {t!r}")
        cols.append((name, t, item[2] if len(item) == 3 else None, None))
    return cols


def _keys_from_option(opts: dict[str, str], key: str, given: Sequence[str], ddl: str) -> tuple[str, ...]:
    """Move ``primary-key`` / ``partition`` from the options into the schema, as Paimon does."""
    if key not in opts:
        return tuple(given)
    if given:
        raise InvalidArgumentError(f"define the {ddl} either in the DDL or as option '{key}', not both")
    return tuple(c.strip() for c in opts.pop(key).split(",") if c.strip())


def _rename_in_options(options: dict[str, str], old: str, new: str) -> dict[str, str]:
    """Options after renaming column ``old``: bucket-key, sequence.field and fields.* follow it."""

    def swap(csv: str) -> str:
        return ",".join(new if c.strip() == old else c.strip() for c in csv.split(","))

    out: dict[str, str] = {}
    field_keys = dict(iter_field_option_columns(options))
    for key, value in options.items():
        if key in ("bucket-key", "sequence.field"):
            value = swap(value)
        if key in field_keys:
            suffix = key.rsplit(".", 1)[1]  # known per-field suffixes contain no dot
            cols = ",".join(new if c == old else c for c in field_keys[key])
            if key.endswith(".sequence-group"):
                value = swap(value)
            key = f"fields.{cols}.{suffix}"
        out[key] = value
    return out


def _int(v: Any, what: str) -> int:
    if not isinstance(v, int) or isinstance(v, bool):
        raise TypeError(f"'{what}' must be an integer, got {v!r}")
    return v


def _names(v: Any, what: str) -> tuple[str, ...]:
    if not isinstance(v, list) or not all(isinstance(x, str) for x in v):
        raise TypeError(f"'{what}' must be a list of strings, got {v!r}")
    return tuple(v)


def _json_max_id(obj: Any) -> int:
    if isinstance(obj, dict):
        own = obj["id"] if isinstance(obj.get("id"), int) and "name" in obj else -1
        return max([own, *(_json_max_id(x) for x in obj.values())])
    if isinstance(obj, list):
        return max((_json_max_id(x) for x in obj), default=-1)
    return -1
