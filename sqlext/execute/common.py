"""Type bridging between Spark and Paimon for the runner's side of statements (and the context's)."""

from __future__ import annotations

from pyspark.sql.pandas.types import to_arrow_type
from pyspark.sql.types import ArrayType, MapType, StructType, TimestampType
from pyspark.sql.types import DataType as SparkType

from engine.arrow_types import from_arrow_type
from engine.arrow_types import to_arrow_type as paimon_to_arrow
from engine.types import DataType
from sqlext.parse.names import quoted
from sqlext.source.spark_types import spark_arrow_type

# Spark's TIMESTAMP (local time zone) becomes an Arrow timestamp with a zone, which the engine
# reads as TIMESTAMP_LTZ whatever the zone: any zone names the kind, and values are UTC instants.
KIND_OF_ZONE = "UTC"


def spark_to_paimon(t: SparkType, nullable: bool = True) -> DataType:
    """A Spark SQL type as a Paimon type (through Arrow): TIMESTAMP → TIMESTAMP_LTZ(6),
    TIMESTAMP_NTZ → TIMESTAMP(6), nested types alike."""
    return from_arrow_type(to_arrow_type(t, timezone=KIND_OF_ZONE), nullable)


def paimon_to_spark(t: DataType) -> SparkType:
    """The Spark type a Paimon type reads as (TIMESTAMP_LTZ → TIMESTAMP, TIMESTAMP → TIMESTAMP_NTZ)."""
    from pyspark.sql.pandas.types import from_arrow_type as arrow_to_spark

    return arrow_to_spark(spark_arrow_type(paimon_to_arrow(t)))


def paimon_to_spark_ddl(t: DataType) -> str:
    """The Spark SQL type text of a Paimon type, for the SQL dyntable writes (CASTs): the same type
    whatever the session's ``spark.sql.timestampType`` (Spark's TIMESTAMP is ``timestamp_ltz``)."""
    return spark_ddl(paimon_to_spark(t))


def spark_type_name(t: DataType) -> str:
    """How Spark names a Paimon type in DESCRIBE and a result's column types (``simpleString``:
    ``timestamp`` for TIMESTAMP_LTZ, ``timestamp_ntz`` for TIMESTAMP)."""
    return paimon_to_spark(t).simpleString()


def spark_ddl(t: SparkType) -> str:
    """Spark SQL type text that names ``t`` under any session setting: ``simpleString`` except
    that the session-dependent word ``timestamp`` becomes ``timestamp_ltz`` (nested types alike)
    and struct field names are back-quoted (any name, keywords too)."""
    if isinstance(t, TimestampType):
        return "timestamp_ltz"
    if isinstance(t, ArrayType):
        return f"array<{spark_ddl(t.elementType)}>"
    if isinstance(t, MapType):
        return f"map<{spark_ddl(t.keyType)},{spark_ddl(t.valueType)}>"
    if isinstance(t, StructType):
        return "struct<" + ",".join(f"{quoted(f.name)}:{spark_ddl(f.dataType)}" for f in t.fields) + ">"
    return t.simpleString()
