"""Paimon's logical data types.

One flat, frozen :class:`DataType` record covers every type: the ``root`` says which type it
is and only the attributes that root uses are set (``length`` for CHAR/VARCHAR/BINARY/VARBINARY,
``precision``/``scale`` for DECIMAL, ``precision`` for TIME/TIMESTAMP/TIMESTAMP_LTZ, ``element``
for ARRAY/MULTISET, ``key``/``value`` for MAP, ``fields`` for ROW).

Conventions shared by the whole engine for Python values of each type (they are what
``pyarrow``'s ``as_py()`` returns): BOOLEAN → bool, integer types → int, FLOAT/DOUBLE → float,
DECIMAL → decimal.Decimal, CHAR/VARCHAR → str, BINARY/VARBINARY → bytes, DATE → datetime.date,
TIME → datetime.time, TIMESTAMP → naive datetime.datetime, TIMESTAMP_LTZ → UTC-aware datetime.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, replace

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


def ARRAY(element: DataType, nullable: bool = True) -> DataType:  # noqa: N802
    return DataType(TypeRoot.ARRAY, nullable, element=element)


def MULTISET(element: DataType, nullable: bool = True) -> DataType:  # noqa: N802
    return DataType(TypeRoot.MULTISET, nullable, element=element)


def MAP(key: DataType, value: DataType, nullable: bool = True) -> DataType:  # noqa: N802
    return DataType(TypeRoot.MAP, nullable, key=key, value=value)


def ROW(fields: tuple[DataField, ...] | list[DataField], nullable: bool = True) -> DataType:  # noqa: N802
    return DataType(TypeRoot.ROW, nullable, fields=tuple(fields))
