"""Paimon's logical data types.

One flat, frozen :class:`DataType` record covers every type: the ``root`` says which type it
is and only the attributes that root uses are set (``length`` for CHAR/VARCHAR/BINARY/VARBINARY,
``precision``/``scale`` for DECIMAL, ``precision`` for TIME/TIMESTAMP/TIMESTAMP_LTZ, ``element``
for ARRAY/MULTISET, ``key``/``value`` for MAP, ``fields`` for ROW).

Conventions shared by the whole engine for Python values of each type (they are what
``pyarrow``'s ``as_py()`` returns): BOOLEAN → bool, integer types → int, FLOAT/DOUBLE → float,
DECIMAL → decimal.Decimal, CHAR/VARCHAR → str, BINARY/VARBINARY → bytes, DATE → datetime.date,
TIME → datetime.time, TIMESTAMP → naive datetime.datetime, TIMESTAMP_LTZ → UTC-aware datetime.

Below the records, pure functions over them: Paimon's exact schema-file encoding
(:func:`type_to_json` / :func:`type_from_json`), SQL type text (:func:`parse_sql_type` /
:func:`type_to_sql`). The Arrow mapping lives in :mod:`engine.arrow_types`, the ALTER COLUMN
TYPE rules in :mod:`engine.type_widening`. Invariants (property-tested):
``type_from_json(type_to_json(t)) == t``; ``parse_sql_type(type_to_sql(t)) == t`` when ROW ids
are numbered 0.. depth-first (SQL text has no ids).
"""

from __future__ import annotations

import enum
import re
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from engine.errors import InvalidArgumentError, UnsupportedTableError

MAX_LENGTH = 2147483647  # VARCHAR/VARBINARY of this length are STRING/BYTES


class TypeRoot(str, enum.Enum):
    """The kind of a data type."""

    BOOLEAN = "BOOLEAN"
    TINYINT = "TINYINT"
    SMALLINT = "SMALLINT"
    INT = "INT"
    BIGINT = "BIGINT"
    FLOAT = "FLOAT"
    DOUBLE = "DOUBLE"
    DECIMAL = "DECIMAL"
    CHAR = "CHAR"
    VARCHAR = "VARCHAR"
    BINARY = "BINARY"
    VARBINARY = "VARBINARY"
    DATE = "DATE"
    TIME = "TIME"
    TIMESTAMP = "TIMESTAMP"
    TIMESTAMP_LTZ = "TIMESTAMP_LTZ"
    ARRAY = "ARRAY"
    MULTISET = "MULTISET"
    MAP = "MAP"
    ROW = "ROW"
    #: Semi-structured value in the Parquet Variant binary encoding (Paimon 1.1); atomic in the
    #: schema, stored as a group of ``value`` and ``metadata`` binaries (see :func:`to_arrow_type`).
    VARIANT = "VARIANT"


_NESTED = frozenset({TypeRoot.ARRAY, TypeRoot.MULTISET, TypeRoot.MAP, TypeRoot.ROW})
_STRINGS = frozenset({TypeRoot.CHAR, TypeRoot.VARCHAR})
_BINARIES = frozenset({TypeRoot.BINARY, TypeRoot.VARBINARY})
_INTEGERS = frozenset({TypeRoot.TINYINT, TypeRoot.SMALLINT, TypeRoot.INT, TypeRoot.BIGINT})


@dataclass(frozen=True, slots=True)
class DataField:
    """A named column (or nested ROW field) with its permanent field id."""

    id: int
    name: str
    type: DataType
    description: str | None = None
    #: Java Paimon's ``defaultValue`` (newer writers): kept verbatim so rewriting a schema never drops it.
    default_value: str | None = None


@dataclass(frozen=True, slots=True)
class DataType:
    """A Paimon logical type; see the module docstring for which attributes each root uses."""

    root: TypeRoot
    nullable: bool = True
    length: int | None = None
    precision: int | None = None
    scale: int | None = None
    element: DataType | None = None
    key: DataType | None = None
    value: DataType | None = None
    fields: tuple[DataField, ...] = ()

    def copy(self, nullable: bool) -> DataType:
        """The same type with another nullability."""
        return replace(self, nullable=nullable)

    @property
    def is_nested(self) -> bool:
        return self.root in _NESTED

    @property
    def is_unordered(self) -> bool:
        """Nested or VARIANT: values with no order, so no min/max statistics and no key."""
        return self.root in _NESTED or self.root is TypeRoot.VARIANT

    @property
    def is_string(self) -> bool:
        return self.root in _STRINGS

    @property
    def is_binary(self) -> bool:
        return self.root in _BINARIES

    @property
    def is_integer(self) -> bool:
        return self.root in _INTEGERS


# Constructors, so that callers read like the SQL they mirror.
def BOOLEAN(nullable: bool = True) -> DataType:  # noqa: N802
    return DataType(TypeRoot.BOOLEAN, nullable)


def TINYINT(nullable: bool = True) -> DataType:  # noqa: N802
    return DataType(TypeRoot.TINYINT, nullable)


def SMALLINT(nullable: bool = True) -> DataType:  # noqa: N802
    return DataType(TypeRoot.SMALLINT, nullable)


def INT(nullable: bool = True) -> DataType:  # noqa: N802
    return DataType(TypeRoot.INT, nullable)


def BIGINT(nullable: bool = True) -> DataType:  # noqa: N802
    return DataType(TypeRoot.BIGINT, nullable)


def FLOAT(nullable: bool = True) -> DataType:  # noqa: N802
    return DataType(TypeRoot.FLOAT, nullable)


def DOUBLE(nullable: bool = True) -> DataType:  # noqa: N802
    return DataType(TypeRoot.DOUBLE, nullable)


def DECIMAL(precision: int = 10, scale: int = 0, nullable: bool = True) -> DataType:  # noqa: N802
    return DataType(TypeRoot.DECIMAL, nullable, precision=precision, scale=scale)


def CHAR(length: int = 1, nullable: bool = True) -> DataType:  # noqa: N802
    return DataType(TypeRoot.CHAR, nullable, length=length)


def VARCHAR(length: int = MAX_LENGTH, nullable: bool = True) -> DataType:  # noqa: N802
    return DataType(TypeRoot.VARCHAR, nullable, length=length)


def STRING(nullable: bool = True) -> DataType:  # noqa: N802
    return VARCHAR(MAX_LENGTH, nullable)


def BINARY(length: int = 1, nullable: bool = True) -> DataType:  # noqa: N802
    return DataType(TypeRoot.BINARY, nullable, length=length)


def VARBINARY(length: int = MAX_LENGTH, nullable: bool = True) -> DataType:  # noqa: N802
    return DataType(TypeRoot.VARBINARY, nullable, length=length)


def BYTES(nullable: bool = True) -> DataType:  # noqa: N802
    return VARBINARY(MAX_LENGTH, nullable)


def DATE(nullable: bool = True) -> DataType:  # noqa: N802
    return DataType(TypeRoot.DATE, nullable)


def TIME(precision: int = 0, nullable: bool = True) -> DataType:  # noqa: N802
    return DataType(TypeRoot.TIME, nullable, precision=precision)


def TIMESTAMP(precision: int = 6, nullable: bool = True) -> DataType:  # noqa: N802
    return DataType(TypeRoot.TIMESTAMP, nullable, precision=precision)


def TIMESTAMP_LTZ(precision: int = 6, nullable: bool = True) -> DataType:  # noqa: N802
    return DataType(TypeRoot.TIMESTAMP_LTZ, nullable, precision=precision)


def VARIANT(nullable: bool = True) -> DataType:  # noqa: N802
    return DataType(TypeRoot.VARIANT, nullable)


def ARRAY(element: DataType, nullable: bool = True) -> DataType:  # noqa: N802
    return DataType(TypeRoot.ARRAY, nullable, element=element)


def MULTISET(element: DataType, nullable: bool = True) -> DataType:  # noqa: N802
    return DataType(TypeRoot.MULTISET, nullable, element=element)


def MAP(key: DataType, value: DataType, nullable: bool = True) -> DataType:  # noqa: N802
    return DataType(TypeRoot.MAP, nullable, key=key, value=value)


def ROW(fields: tuple[DataField, ...] | list[DataField], nullable: bool = True) -> DataType:  # noqa: N802
    return DataType(TypeRoot.ROW, nullable, fields=tuple(fields))


# ---------------------------------------------------------------------------------------------
# Serde, SQL text and Arrow mapping. Everything below is a pure function of the records above.
# ---------------------------------------------------------------------------------------------

_SIMPLE_ROOTS = frozenset(
    {
        TypeRoot.BOOLEAN, TypeRoot.TINYINT, TypeRoot.SMALLINT, TypeRoot.INT, TypeRoot.BIGINT,
        TypeRoot.FLOAT, TypeRoot.DOUBLE, TypeRoot.DATE, TypeRoot.VARIANT,
    }
)  # fmt: skip
_NOT_NULL = " NOT NULL"


def _atomic_json(t: DataType) -> str:
    """The Paimon SQL string of an atomic type, without the nullability suffix."""
    r = t.root
    if r in _SIMPLE_ROOTS:
        return r.value
    if r is TypeRoot.VARCHAR:
        return "STRING" if t.length == MAX_LENGTH else f"VARCHAR({t.length})"
    if r is TypeRoot.VARBINARY:
        return "BYTES" if t.length == MAX_LENGTH else f"VARBINARY({t.length})"
    if r in (TypeRoot.CHAR, TypeRoot.BINARY):
        return f"{r.value}({t.length})"
    if r is TypeRoot.DECIMAL:
        return f"DECIMAL({t.precision}, {t.scale})"  # Java writes the space after the comma
    if r in (TypeRoot.TIME, TypeRoot.TIMESTAMP):
        return f"{r.value}({t.precision})"
    if r is TypeRoot.TIMESTAMP_LTZ:
        return f"TIMESTAMP({t.precision}) WITH LOCAL TIME ZONE"
    raise InvalidArgumentError(f"{r.value} is not an atomic type")


def type_to_json(t: DataType) -> str | dict[str, Any]:
    """Encode a type exactly as Paimon's schema files do (format doc §2.2).

    Atomic types become their SQL string (``"INT NOT NULL"``, ``"DECIMAL(10, 2)"``); nested
    types become objects (``{"type": "ARRAY", "element": ...}``) whose ROW fields carry ids.
    """
    suffix = "" if t.nullable else _NOT_NULL
    r = t.root
    if r in (TypeRoot.ARRAY, TypeRoot.MULTISET):
        assert t.element is not None
        return {"type": r.value + suffix, "element": type_to_json(t.element)}
    if r is TypeRoot.MAP:
        assert t.key is not None and t.value is not None
        return {"type": "MAP" + suffix, "key": type_to_json(t.key), "value": type_to_json(t.value)}
    if r is TypeRoot.ROW:
        return {"type": "ROW" + suffix, "fields": [field_to_json(f) for f in t.fields]}
    return _atomic_json(t) + suffix


def field_to_json(f: DataField) -> dict[str, Any]:
    """Encode a DataField as Paimon does: ``id, name, type``, ``description`` and ``defaultValue`` when
    set."""
    out: dict[str, Any] = {"id": f.id, "name": f.name, "type": type_to_json(f.type)}
    if f.description is not None:
        out["description"] = f.description
    if f.default_value is not None:
        out["defaultValue"] = f.default_value
    return out


def type_from_json(v: str | dict[str, Any]) -> DataType:
    """Decode a type written by :func:`type_to_json` (or by Java / pypaimon).

    Strings are parsed leniently (``TIMESTAMP_LTZ(3)``, bare ``TIMESTAMP``/``TIME``/
    ``DECIMAL``/``CHAR``/``BINARY`` with Paimon's default sizes). A nested ROW field that lacks
    an ``id`` gets one from a counter starting after the largest id present.

    Raises:
        InvalidArgumentError: the value is not a type dyntable understands.
    """
    ids = _IdCounter(_max_json_id(v) + 1)
    return _type_from_json(v, ids)


def field_from_json(obj: dict[str, Any], next_id: Callable[[], int] | None = None) -> DataField:
    """Decode one DataField object of a schema file (see :func:`type_from_json`).

    ``next_id`` supplies ids for nested ROW fields that lack one (a schema passes one counter
    for all its columns so such ids stay unique); by default ids continue after the largest
    id inside ``obj``.
    """
    return _field_from_json(obj, next_id or _IdCounter(_max_json_id(obj) + 1))


def max_field_id(t: DataType) -> int:
    """The largest id of a ROW field nested anywhere in ``t`` (-1 if there is none)."""
    found = -1
    for f in t.fields:
        found = max(found, f.id, max_field_id(f.type))
    for member in (t.element, t.key, t.value):
        if member is not None:
            found = max(found, max_field_id(member))
    return found


class _IdCounter:
    """Hands out increasing field ids (nested ROW fields without an id, parsed SQL types)."""

    def __init__(self, start: int = 0) -> None:
        self.next_id = start

    def __call__(self) -> int:
        self.next_id += 1
        return self.next_id - 1


def _max_json_id(v: Any) -> int:
    if isinstance(v, dict):
        own: int = v["id"] if isinstance(v.get("id"), int) else -1
        return max([own, *(_max_json_id(x) for x in v.values())])
    if isinstance(v, list):
        return max((_max_json_id(x) for x in v), default=-1)
    return -1


#: Paimon types newer than dyntable's type system, with the Paimon version that introduced each:
#: a schema holding one is refused as an unsupported feature (0A000), not as a corrupt schema.
NEWER_TYPES: dict[str, str] = {"BLOB": "1.4", "VECTOR": "1.4"}


def _newer_type(word: str) -> UnsupportedTableError:
    return UnsupportedTableError(
        f"the {word} type (Paimon {NEWER_TYPES[word]}) is not supported by dyntable: a table with a "
        f"{word} column cannot be read or written here. Use Paimon {NEWER_TYPES[word]} or later for it."
    )


def _type_from_json(v: Any, ids: Callable[[], int]) -> DataType:
    if isinstance(v, str):
        return _TypeParser(v, spark=False, ids=ids).parse()
    if not isinstance(v, dict) or not isinstance(v.get("type"), str):
        raise InvalidArgumentError(f"not a Paimon type encoding: {v!r}")
    head = v["type"].strip().upper()
    nullable = not head.endswith(_NOT_NULL)
    word = head[: -len(_NOT_NULL)].strip() if not nullable else head
    try:
        if word in ("ARRAY", "MULTISET"):
            return DataType(TypeRoot(word), nullable, element=_type_from_json(v["element"], ids))
        if word == "MAP":
            return MAP(_type_from_json(v["key"], ids), _type_from_json(v["value"], ids), nullable)
        if word == "ROW":
            return ROW([_field_from_json(f, ids) for f in v["fields"]], nullable)
    except (KeyError, TypeError) as e:
        raise InvalidArgumentError(f"nested type {v!r} lacks a member: {e}") from None
    if word in NEWER_TYPES:
        raise _newer_type(word)
    raise InvalidArgumentError(f"unsupported nested type {v['type']!r} (known: ARRAY, MULTISET, MAP, ROW)")


def _field_from_json(obj: Any, ids: Callable[[], int]) -> DataField:
    if not isinstance(obj, dict) or not isinstance(obj.get("name"), str) or "type" not in obj:
        raise InvalidArgumentError(f"not a Paimon field: {obj!r}")
    fid = obj.get("id")
    if fid is None:
        fid = ids()
    elif not isinstance(fid, int) or isinstance(fid, bool):
        raise InvalidArgumentError(f"field id must be an integer, got {fid!r}")
    desc = obj.get("description")
    default = obj.get("defaultValue")
    t = _type_from_json(obj["type"], ids)
    return DataField(fid, obj["name"], t, desc if isinstance(desc, str) else None,
                     default if isinstance(default, str) else None)


# ---- SQL type text (CREATE TABLE / ALTER COLUMN, Flink or Spark style) -----------------------

_TOKEN = re.compile(
    r"\s*(?:(?P<q>`(?:[^`]|``)*`)|(?P<s>'(?:[^'\\]|''|\\.)*')|(?P<n>\d+)"
    r"|(?P<w>[A-Za-z_][A-Za-z0-9_$]*)|(?P<p>\S))"
)
_PLAIN: dict[str, TypeRoot] = {
    "BOOLEAN": TypeRoot.BOOLEAN, "BOOL": TypeRoot.BOOLEAN,
    "TINYINT": TypeRoot.TINYINT, "BYTE": TypeRoot.TINYINT,
    "SMALLINT": TypeRoot.SMALLINT, "SHORT": TypeRoot.SMALLINT,
    "INT": TypeRoot.INT, "INTEGER": TypeRoot.INT,
    "BIGINT": TypeRoot.BIGINT, "LONG": TypeRoot.BIGINT,
    "FLOAT": TypeRoot.FLOAT, "REAL": TypeRoot.FLOAT,
    "DOUBLE": TypeRoot.DOUBLE, "DATE": TypeRoot.DATE,
}  # fmt: skip
_CLOSE = {"<": ">", "(": ")"}


class _TypeParser:
    """Recursive-descent parser over the union of Paimon's, Flink's and Spark's type syntax.

    ``spark`` only changes one meaning: a bare ``BINARY`` is Spark's variable-length BYTES,
    while Paimon/Flink read it as ``BINARY(1)`` (Java never writes a bare ``BINARY``).
    ``timestamp_ltz`` is what the word ``TIMESTAMP`` means without a zone clause: Paimon's
    wall-clock TIMESTAMP (False, as in Paimon and Flink) or TIMESTAMP_LTZ.
    """

    def __init__(
        self, text: str, *, spark: bool, ids: Callable[[], int], timestamp_ltz: bool = False
    ) -> None:
        self.text, self.spark, self.ids, self.timestamp_ltz = text, spark, ids, timestamp_ltz
        self.toks: list[tuple[str, str, int]] = []
        pos = 0
        while (m := _TOKEN.match(text, pos)) is not None:
            kind = m.lastgroup or "p"
            self.toks.append((kind, m.group(kind), m.start(kind)))
            pos = m.end()
        self.i = 0

    def fail(self, why: str) -> InvalidArgumentError:
        at = self.toks[self.i][2] if self.i < len(self.toks) else len(self.text)
        return InvalidArgumentError(f"cannot parse data type {self.text!r}: {why} (at position {at})")

    def peek(self, kind: str, *values: str) -> bool:
        if self.i >= len(self.toks):
            return False
        k, v, _ = self.toks[self.i]
        return k == kind and (not values or v.upper() in values)

    def take(self, kind: str, *values: str, what: str = "") -> str:
        if not self.peek(kind, *values):
            found = repr(self.toks[self.i][1]) if self.i < len(self.toks) else "end of text"
            raise self.fail(f"expected {what or ' or '.join(values) or kind}, found {found}")
        self.i += 1
        return self.toks[self.i - 1][1]

    def parse(self) -> DataType:
        t = self.type_()
        if self.i < len(self.toks):
            raise self.fail(f"unexpected {self.toks[self.i][1]!r}")
        return t

    def type_(self) -> DataType:
        t = self.base(self.take("w", what="a type name").upper())
        if self.peek("w", "NOT"):
            self.i += 1
            self.take("w", "NULL")
            return t.copy(False)
        if self.peek("w", "NULL"):
            self.i += 1
        return t

    def args(self, most: int) -> list[int]:
        if not self.peek("p", "("):
            return []
        self.i += 1
        out = [int(self.take("n", what="a number"))]
        while len(out) < most and self.peek("p", ","):
            self.i += 1
            out.append(int(self.take("n", what="a number")))
        self.take("p", ")")
        return out

    def one(self, default: int, lo: int, hi: int, what: str) -> int:
        args = self.args(1)
        v = args[0] if args else default
        if not lo <= v <= hi:
            raise self.fail(f"{what} must be between {lo} and {hi}, got {v}")
        return v

    def zone(self, allow_local: bool) -> bool | None:
        """Consume ``WITHOUT TIME ZONE`` / ``WITH LOCAL TIME ZONE``: True for the local one, False
        for the other, None when there is no zone clause."""
        if self.peek("w", "WITHOUT"):
            self.i += 1
            self.take("w", "TIME"), self.take("w", "ZONE")
            return False
        if self.peek("w", "WITH"):
            self.i += 1
            if not (allow_local and self.peek("w", "LOCAL")):
                raise self.fail("only TIMESTAMP WITH LOCAL TIME ZONE is supported (use TIMESTAMP_LTZ)")
            self.i += 1
            self.take("w", "TIME"), self.take("w", "ZONE")
            return True
        return None

    def base(self, w: str) -> DataType:  # noqa: C901 - one branch per type keyword
        if w in _PLAIN:
            if w == "DOUBLE" and self.peek("w", "PRECISION"):
                self.i += 1
            return DataType(_PLAIN[w])
        if w in ("DECIMAL", "DEC", "NUMERIC"):
            args = self.args(2)
            p, s = (args + [10, 0][len(args) :])[:2] if args else (10, 0)
            if not 1 <= p <= 38 or not 0 <= s <= p:
                raise self.fail(f"DECIMAL needs 1 <= precision <= 38 and 0 <= scale <= precision: ({p}, {s})")
            return DECIMAL(p, s)
        if w in ("CHAR", "CHARACTER"):
            return CHAR(self.one(1, 1, MAX_LENGTH, "CHAR length"))
        if w == "VARCHAR":
            return VARCHAR(self.one(1, 1, MAX_LENGTH, "VARCHAR length"))
        if w == "STRING":
            return STRING()
        if w == "BINARY":
            if self.spark and not self.peek("p", "("):
                return BYTES()
            return BINARY(self.one(1, 1, MAX_LENGTH, "BINARY length"))
        if w == "VARBINARY":
            return VARBINARY(self.one(1, 1, MAX_LENGTH, "VARBINARY length"))
        if w == "BYTES":
            return BYTES()
        if w == "TIME":
            p = self.one(0, 0, 9, "TIME precision")
            self.zone(allow_local=False)
            return TIME(p)
        if w in ("TIMESTAMP", "TIMESTAMP_NTZ", "TIMESTAMP_LTZ"):
            p = self.one(6, 0, 9, "TIMESTAMP precision")
            if w == "TIMESTAMP":
                zone = self.zone(allow_local=True)
                local = self.timestamp_ltz if zone is None else zone
            else:
                local = w == "TIMESTAMP_LTZ"
            return TIMESTAMP_LTZ(p) if local else TIMESTAMP(p)
        if w in ("ARRAY", "MULTISET", "MAP", "ROW", "STRUCT"):
            return self.nested(w)
        if w == "VARIANT":
            return VARIANT()
        if w in NEWER_TYPES:
            raise _newer_type(w)
        self.i -= 1
        raise self.fail(f"unknown type {w!r}")

    def nested(self, w: str) -> DataType:
        if not (self.peek("p", "<") or self.peek("p", "(")):
            raise self.fail(f"{w} needs its member types in <...>")
        close = _CLOSE[self.take("p")]
        if w in ("ARRAY", "MULTISET"):
            t = DataType(TypeRoot(w), element=self.type_())
        elif w == "MAP":
            key = self.type_()
            self.take("p", ",")
            t = MAP(key, self.type_())
        else:
            fields = [self.field()]
            while self.peek("p", ","):
                self.i += 1
                fields.append(self.field())
            t = ROW(fields)
        self.take("p", close)
        return t

    def field(self) -> DataField:
        if self.peek("q"):
            name = self.take("q")[1:-1].replace("``", "`")
        else:
            name = self.take("w", what="a field name")
        fid = self.ids()  # before the type: the field is numbered before its nested fields
        if self.peek("p", ":"):
            self.i += 1
        t = self.type_()
        desc = None
        if self.peek("w", "COMMENT"):
            self.i += 1
            desc = _unquote(self.take("s", what="a quoted comment"))
        elif self.peek("s"):
            desc = _unquote(self.take("s"))
        return DataField(fid, name, t, desc)


def _unquote(lit: str) -> str:
    return re.sub(r"''|\\(.)", lambda m: m.group(1) or "'", lit[1:-1])


def parse_sql_type(text: str, *, timestamp_ltz: bool = False) -> DataType:
    """Parse a column type as users write it in CREATE TABLE (Flink or Spark style).

    Case-insensitive. Aliases: INTEGER, LONG, SHORT, BYTE, BOOL, REAL, DEC/NUMERIC,
    DOUBLE PRECISION; ``STRUCT<a: T>`` and ``ROW<a T>`` (with ``COMMENT '...'``), ``ARRAY<T>``,
    ``MAP<K, V>``, ``MULTISET<T>``, a trailing ``NOT NULL``. ``TIMESTAMP_NTZ[(p)]`` and
    ``TIMESTAMP[(p)] WITHOUT TIME ZONE`` are Paimon's wall-clock ``TIMESTAMP(p)``;
    ``TIMESTAMP_LTZ[(p)]`` and ``TIMESTAMP[(p)] WITH LOCAL TIME ZONE`` are ``TIMESTAMP_LTZ(p)``;
    the word ``TIMESTAMP[(p)]`` alone is the wall-clock kind, as in Paimon and Flink, unless
    ``timestamp_ltz`` (what a Spark session with ``spark.sql.timestampType=TIMESTAMP_LTZ``, its
    default, means by it). A bare ``BINARY`` is Spark's BYTES; a bare ``VARCHAR``/``CHAR`` is
    length 1 as in Flink. Nested ROW field ids are numbered 0.. depth-first; TableSchema
    re-assigns them.

    Raises:
        InvalidArgumentError: the text is not a type; the message names the text and position.
    """
    if not isinstance(text, str) or not text.strip():
        raise InvalidArgumentError(f"empty or non-text data type: {text!r}")
    return _TypeParser(text, spark=True, ids=_IdCounter(), timestamp_ltz=timestamp_ltz).parse()


_SQL_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _sql_name(name: str) -> str:
    return name if _SQL_NAME.fullmatch(name) else "`" + name.replace("`", "``") + "`"


def type_to_sql(t: DataType) -> str:
    """Spark-SQL style DDL text for display and SHOW CREATE TABLE.

    :func:`parse_sql_type` reads it back to the same type whatever a bare ``TIMESTAMP`` means
    (BYTES prints as ``BINARY``, ``TIMESTAMP(p)`` as ``TIMESTAMP_NTZ`` / ``TIMESTAMP_NTZ(p)``,
    ``TIMESTAMP_LTZ(p)`` as ``TIMESTAMP_LTZ`` / ``TIMESTAMP_LTZ(p)``: the kind is always named).
    """
    r = t.root
    if r is TypeRoot.DECIMAL:
        s = f"DECIMAL({t.precision},{t.scale})"
    elif r is TypeRoot.VARBINARY and t.length == MAX_LENGTH:
        s = "BINARY"
    elif r is TypeRoot.TIMESTAMP:
        s = "TIMESTAMP_NTZ" if t.precision == 6 else f"TIMESTAMP_NTZ({t.precision})"
    elif r is TypeRoot.TIMESTAMP_LTZ:
        s = "TIMESTAMP_LTZ" if t.precision == 6 else f"TIMESTAMP_LTZ({t.precision})"
    elif r in (TypeRoot.ARRAY, TypeRoot.MULTISET):
        assert t.element is not None
        s = f"{r.value}<{type_to_sql(t.element)}>"
    elif r is TypeRoot.MAP:
        assert t.key is not None and t.value is not None
        s = f"MAP<{type_to_sql(t.key)},{type_to_sql(t.value)}>"
    elif r is TypeRoot.ROW:
        parts = []
        for f in t.fields:
            p = f"{_sql_name(f.name)}: {type_to_sql(f.type)}"
            if f.description is not None:
                p += " COMMENT '" + f.description.replace("\\", "\\\\").replace("'", "\\'") + "'"
            parts.append(p)
        s = "STRUCT<" + ", ".join(parts) + ">"
    else:
        s = _atomic_json(t)
    return s if t.nullable else s + _NOT_NULL
