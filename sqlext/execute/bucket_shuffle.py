"""Bucket-shuffled writes: rows reach the Python writer already grouped by Paimon bucket.

Without it every Spark task writes a level-0 sorted run into every bucket its rows hash to, so a
write of ``k`` input partitions adds ``k`` runs per bucket, and the compaction after the commit
(triggered at 5 runs) rewrites the bucket's base. With it, Spark's JVM shuffles the rows by
``(partition, bucket)`` before they cross into Python, so each bucket is written by exactly one
task: one run per bucket and commit, and no base rewrite.

The bucket is computed inside the JVM, exactly as Paimon computes it, with no Python crossing
(:func:`with_bucket`). Java hashes a key row's ``BinaryRow`` bytes (null bits, 8-byte
little-endian slots, strings inline up to 7 bytes or in an 8-byte-aligned variable part) with
Murmur3-x86-32 over 4-byte little-endian words, seed 42 (``MurmurHashUtils.hashBytesByWords``),
and takes ``Math.abs(hash % bucket)``. A row of up to 7 fixed-width fields (integers, BOOLEAN, DATE,
DECIMAL up to precision 18, TIMESTAMP_LTZ up to precision 3) is hashed word by word on BIGINT
arithmetic, one projected column per word. Any other row's bytes are built as BINARY and hashed
with Spark's ``hash``, which for a binary value is the same Murmur3 (its length is always a
multiple of 8). Key types whose bytes Spark cannot build exactly (FLOAT, DOUBLE, TIME,
wall-clock TIMESTAMP, DECIMAL with precision above 18) get no bucket: such tables are written
unshuffled, as before. ``tests/sqlext/execute/test_bucket_shuffle.py`` checks both routes
against ``engine.bucket_ids`` for every covered type.

When (:func:`for_write`): fixed-bucket primary-key tables (``bucket`` > 0; dynamic-bucket
tables are already clustered by ``sqlext.source.datasource.cluster_for_writers``) whose input
Spark estimates at :data:`MIN_ESTIMATED_BYTES` or more (files, Spark tables, cached DataFrames;
a read through the ``dyntable`` source has no estimate and is not shuffled), unless
``write.bucket-shuffle`` says otherwise. Measured (``docs/benchmarks.md``, W2s/W2i/W2m): on a
1M-row upsert the shuffled SQL INSERT is 1.06-2.45x faster (medians) than the unshuffled one,
whose runs trigger the base rewrite; on a 2,000-row INSERT it is 2x slower (the extra exchange
stage dominates), hence the size threshold. Below it (``auto``, a size Spark knows) the input is
coalesced into one task instead: no exchange, and still one level-0 file per bucket and write,
as Paimon's Spark write leaves it (its deletion vectors then fall where Paimon's do); measured on
a 2,000-row upsert into a 4-bucket table (medians of 6, a loaded 2-core machine), coalesced 0.17 s
against 0.37 s unshuffled from 2 input partitions and 0.17 s against 1.13 s from 8 (whose 8 runs
per bucket trigger the compaction), shuffled 0.70 s. The rows
are not sorted in the JVM: the writer sorts its buffer anyway, and ``sortWithinPartitions``
measured slower (W2ss).

Unpartitioned tables are hash-partitioned by a stand-in integer per bucket, chosen so that
Spark's partitioner (``pmod(murmur3(value, 42), n)``) sends bucket ``b`` to Spark partition
``b % n`` exactly: ``n = min(bucket, spark.sql.shuffle.partitions)`` tasks, each holding whole
buckets, none left idle. Partitioned tables are hash-partitioned by (partition columns, bucket).

``sqlext.execute.native_write.write_table`` is the DataFrame counterpart of an INSERT: the
shuffle (when it pays) and ``df.write.format("dyntable")``, or Spark's own Parquet writer where
the table allows it. The plain ``df.write.format("dyntable")`` is unchanged: it writes rows as
they come.
"""

from __future__ import annotations

from collections.abc import Sequence
from decimal import Decimal
from typing import TYPE_CHECKING

import numpy as np
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from engine import Table
from engine.types import DataType, TypeRoot
from sqlext.parse.names import quoted

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = [
    "BUCKET_COLUMN", "binary_row", "shuffle_by_bucket", "shuffle_partitions", "should_shuffle",
    "wants_shuffle", "with_bucket",
]

BUCKET_COLUMN = "__dyntable_bucket"
HASH_SEED = 42  # Spark's ``hash`` and Paimon's ``MurmurHashUtils`` share it
_MAX_INLINE = 7  # BinaryRow keeps strings of up to 7 bytes inside the 8-byte slot
_MAX_COMPACT_DECIMAL = 18
_MAX_COMPACT_TIMESTAMP = 3
_FIXED_WIDTH_MASK = {
    TypeRoot.BOOLEAN: 0xFF,
    TypeRoot.TINYINT: 0xFF,
    TypeRoot.SMALLINT: 0xFFFF,
    TypeRoot.INT: 0xFFFFFFFF,
    TypeRoot.DATE: 0xFFFFFFFF,
    TypeRoot.BIGINT: None,
}


# ------------------------------------------------------------------------------------------------
# BinaryRow bytes as Spark expressions
# ------------------------------------------------------------------------------------------------
def _le8(value: Column) -> Column:
    """The 8 little-endian bytes of a BIGINT expression, as BINARY (a BinaryRow slot)."""
    swapped = _long(0)
    for k in range(8):
        byte = F.shiftright(value, 8 * k).bitwiseAND(_long(0xFF))
        swapped = swapped.bitwiseOR(F.shiftleft(byte, 8 * (7 - k)))
    return F.unhex(F.lpad(F.hex(swapped), 16, "0"))


def _long(value: int) -> Column:
    return F.lit(value).cast("long")


def _wide_timestamp(t: DataType) -> bool:
    """TIMESTAMP_LTZ with precision > 3: millis in the variable part, nanos of the milli in the slot."""
    precision = t.precision if t.precision is not None else 6
    return t.root is TypeRoot.TIMESTAMP_LTZ and precision > _MAX_COMPACT_TIMESTAMP


def _zeros(n: int) -> Column:
    return F.lit(bytes(n))


def _pad8(data: Column, length: Column) -> Column:
    """``data`` zero-padded to the next multiple of 8 bytes (a variable-part region)."""
    return F.concat(data, _zeros(8).substr(F.lit(1), ((F.lit(8) - length % 8) % 8).cast("int")))


def _fixed_slot(col: Column, t: DataType) -> Column | None:
    """The slot of a non-null fixed-width value as a BIGINT (written little-endian), or None."""
    root = t.root
    if root in _FIXED_WIDTH_MASK:
        value = F.unix_date(col) if root is TypeRoot.DATE else col
        value = value.cast("long")
        mask = _FIXED_WIDTH_MASK[root]
        return value if mask is None else value.bitwiseAND(_long(mask))
    if root is TypeRoot.DECIMAL and (t.precision or 10) <= _MAX_COMPACT_DECIMAL:
        scale = t.scale or 0
        return (col * F.lit(Decimal(10) ** scale)).cast("long")  # the unscaled value (exact)
    if root is TypeRoot.TIMESTAMP_LTZ and not _wide_timestamp(t):
        return F.unix_millis(col)
    return None


def _field(col: Column, t: DataType, cursor: Column) -> tuple[Column, Column, Column] | None:
    """(slot bytes, variable-part bytes, variable-part length) of one non-null field, or None
    when the type's bytes cannot be built in Spark. ``cursor``: the field's variable part offset
    from the row start (fixed part + the earlier fields' variable parts)."""
    if t.is_string or t.is_binary:
        data = col.cast("binary")
        length = F.octet_length(data).cast("long")
        inline = F.concat(F.substring(F.concat(data, _zeros(_MAX_INLINE)), 1, _MAX_INLINE),
                          F.unhex(F.hex(F.lit(0x80) + length)))
        out_of_line = _le8(F.shiftleft(cursor, 32).bitwiseOR(length))
        short = length <= _MAX_INLINE
        slot = F.when(short, inline).otherwise(out_of_line)
        var = F.when(short, _zeros(0)).otherwise(_pad8(data, length))
        var_len = F.when(short, _long(0)).otherwise((length + 7).bitwiseAND(_long(~7)))
        return slot, var, var_len
    if _wide_timestamp(t):
        micros = F.unix_micros(col)
        millis = F.floor(micros / 1000).cast("long")
        nano_of_milli = F.pmod(micros, _long(1000)) * 1000
        return _le8(F.shiftleft(cursor, 32).bitwiseOR(nano_of_milli)), _le8(millis), _long(8)
    fixed = _fixed_slot(col, t)
    if fixed is None:
        return None
    return _le8(fixed), _zeros(0), _long(0)


def _null_bits_size(arity: int) -> int:
    return ((arity + 63 + 8) // 64) * 8


def _null_field(t: DataType, cursor: Column) -> tuple[Column, Column, Column]:
    """What a NULL leaves in the row: a zero slot, except that Java reserves (and points to) the
    variable region of a wide timestamp even for NULL."""
    if _wide_timestamp(t):
        return _le8(F.shiftleft(cursor, 32)), _zeros(8), _long(8)
    return _zeros(8), _zeros(0), _long(0)


def _header_longs(columns: Sequence[Column]) -> list[Column]:
    """The null-bit words of a row of ``columns`` as BIGINTs (written little-endian): bit ``i + 8``
    is set when field ``i`` is NULL (the first byte holds the row kind, 0 in a bucket key)."""
    header = [_long(0) for _ in range(_null_bits_size(len(columns)) // 8)]
    for i, col in enumerate(columns):
        bit = i + 8
        mask = np.int64(np.uint64(1) << np.uint64(bit % 64))  # bit 63 is the sign bit
        null_bit = F.when(col.isNull(), _long(int(mask))).otherwise(_long(0))
        header[bit // 64] = header[bit // 64].bitwiseOR(null_bit)
    return header


def _bytes_bucket(columns: Sequence[Column], types: Sequence[DataType], num_buckets: int) -> Column | None:
    """The bucket from the row's ``BinaryRow`` bytes built as BINARY and hashed by Spark's ``hash``;
    None when a key type is not covered."""
    row = binary_row(columns, types)
    return None if row is None else F.abs(F.hash(row) % F.lit(num_buckets))


def binary_row(columns: Sequence[Column], types: Sequence[DataType]) -> Column | None:
    """The ``BinaryRow`` bytes of the row formed by ``columns`` (of Paimon ``types``) as a BINARY
    expression, as the engine's ``serialize_row`` writes them (a partition's bytes in manifests);
    None when a type is not covered."""
    cursor = _long(_null_bits_size(len(types)) + 8 * len(types))
    slots: list[Column] = []
    vars_: list[Column] = []
    for col, t in zip(columns, types, strict=True):
        present = _field(col, t, cursor)
        if present is None:
            return None
        absent = _null_field(t, cursor)
        is_null = col.isNull()
        slot, var, var_len = (F.when(is_null, a).otherwise(p) for p, a in zip(present, absent, strict=True))
        slots.append(slot)
        vars_.append(var)
        cursor = cursor + var_len
    return F.concat(*[_le8(h) for h in _header_longs(columns)], *slots, *vars_)


# ------------------------------------------------------------------------------------------------
# Murmur3 on BIGINT arithmetic, for rows of fixed-width fields
# ------------------------------------------------------------------------------------------------
_M32 = 0xFFFFFFFF
_K1, _K2, _H_ADD = 0xCC9E2D51, 0x1B873593, 0xE6546B64  # Murmur3-x86-32 body constants
_F1, _F2 = 0x85EBCA6B, 0xC2B2AE35  # its final mix
_HASH = "__dyntable_bucket_hash"  # the running hash, one projected column per word
_SLOT = "__dyntable_bucket_slot"
#: Keys of up to this many fixed-width fields are hashed on word arithmetic: 2 + 2 per field
#: projections. A wider key (rare) would make the plan long enough for Spark's analysis to cost
#: more than the hashing saves (60 fields: ~90 s of planning), so it takes the BINARY route.
MAX_WORD_FIELDS = 7


# The steps are SQL text, parsed by Spark once per projection (``F.expr``): built as Column
# objects, every operator and literal was a py4j round trip, about 1,700 of them for a BIGINT key
# (0.2-0.4 s of the driver's time per INSERT on a loaded 2-core machine); the expressions Spark
# evaluates are the same. Every operand is parenthesised: no reliance on SQL operator precedence.
def _mul32(x: str, factor: int) -> str:
    """``x * factor mod 2**32`` for ``0 <= x < 2**32``, as one BIGINT product that cannot overflow
    (ANSI mode raises on overflow): a factor of 2**31 or more is replaced by its negative twin
    ``factor - 2**32``, equal modulo 2**32, so ``|product| < 2**63``."""
    twin = factor if factor < 2**31 else factor - 2**32
    return f"((({x}) * ({twin}L)) & {_M32}L)"


def _rotl32(x: str, r: int) -> str:
    return f"((shiftleft(({x}), {r}) & {_M32}L) | shiftrightunsigned(({x}), {32 - r}))"


def _shift_xor(h: str, r: int) -> str:
    return f"(({h}) ^ shiftrightunsigned(({h}), {r}))"


def _mix_word(h: str, word: str) -> str:
    k = _mul32(_rotl32(_mul32(word, _K1), 15), _K2)
    return f"(({_rotl32(f'({h}) ^ {k}', 13)} * 5L + {_H_ADD}L) & {_M32}L)"


def _words_bucket(frame: DataFrame, longs: Sequence[Column], num_buckets: int, name: str) -> DataFrame:
    """``frame`` plus column ``name``: the bucket of the row whose 8-byte little-endian words are
    ``longs``, hashed as ``hashBytesByWords`` does, on 32-bit values held in BIGINTs.

    Every step uses its input twice (a rotation), so each step is its own projected column: one
    nested expression would double at every word. Spark keeps such projections apart (merging
    them would repeat work) and whole-stage code generation fuses them into one loop."""
    slots = [f"{_SLOT}{i}" for i in range(len(longs))]
    frame = frame.withColumns({**dict(zip(slots, longs, strict=True)), _HASH: _long(HASH_SEED)})
    h = f"`{_HASH}`"
    for slot in slots:
        for word in (f"(`{slot}` & {_M32}L)", f"shiftrightunsigned(`{slot}`, 32)"):
            frame = frame.withColumn(_HASH, F.expr(_mix_word(h, word)))
    frame = frame.withColumn(_HASH, F.expr(_mul32(_shift_xor(f"{h} ^ {8 * len(longs)}L", 16), _F1)))
    frame = frame.withColumn(_HASH, F.expr(_mul32(_shift_xor(h, 13), _F2)))
    unsigned = _shift_xor(h, 16)
    signed = f"((({unsigned}) ^ {2**31}L) - {2**31}L)"  # Java's int of the 32 bits
    bucket = F.expr(f"CAST(abs(({signed}) % {num_buckets}) AS INT)")
    return frame.withColumn(name, bucket).drop(_HASH, *slots)


def with_bucket(
    frame: DataFrame,
    columns: Sequence[Column],
    types: Sequence[DataType],
    num_buckets: int,
    name: str = BUCKET_COLUMN,
) -> DataFrame | None:
    """``frame`` plus the INT column ``name``: Paimon's fixed bucket of the row formed by
    ``columns`` (of Paimon ``types``); None when a key type is not covered (see the module
    docstring).

    The columns must already hold the Spark type of their Paimon type (as the write path casts
    them): STRING/BINARY, the integer types, BOOLEAN, DATE, DECIMAL(p <= 18, s), TIMESTAMP_LTZ.
    A row of up to :data:`MAX_WORD_FIELDS` fixed-width fields is hashed word by word on BIGINT
    arithmetic; any other row's bytes are built as BINARY and hashed by Spark's ``hash``. Measured
    on 10M BIGINT keys with Spark's ``noop`` sink: the column costs 1.3 s instead of 3.6 s, and
    the whole exchange by bucket takes 16.4 s instead of 20.0 s.
    """
    fixed = [_fixed_slot(col, t) for col, t in zip(columns, types, strict=True)]
    if len(columns) <= MAX_WORD_FIELDS and all(f is not None for f in fixed):
        slots = [F.when(col.isNull(), _long(0)).otherwise(f) for col, f in zip(columns, fixed, strict=True)]
        return _words_bucket(frame, [*_header_longs(columns), *slots], num_buckets, name)
    bucket = _bytes_bucket(columns, types, num_buckets)
    return None if bucket is None else frame.withColumn(name, bucket)


# ------------------------------------------------------------------------------------------------
# The shuffle
# ------------------------------------------------------------------------------------------------
def _spark_hash_ints(values: np.ndarray) -> np.ndarray:
    """Spark's ``hash(int)`` (Murmur3-x86-32 of one word, seed 42) of every value: what its hash
    partitioner computes for an INT partitioning column."""
    with np.errstate(over="ignore"):
        k = values.astype(np.uint32) * np.uint32(0xCC9E2D51)
        k = (k << np.uint32(15)) | (k >> np.uint32(17))
        k *= np.uint32(0x1B873593)
        h = np.full(len(values), HASH_SEED, dtype=np.uint32) ^ k
        h = (h << np.uint32(13)) | (h >> np.uint32(19))
        h = h * np.uint32(5) + np.uint32(0xE6546B64)
        h ^= np.uint32(4)
        h ^= h >> np.uint32(16)
        h *= np.uint32(0x85EBCA6B)
        h ^= h >> np.uint32(13)
        h *= np.uint32(0xC2B2AE35)
        h ^= h >> np.uint32(16)
    return h.view(np.int32)


def stand_ins(partitions: int) -> list[int]:
    """For every Spark partition ``p`` of ``partitions``, the smallest non-negative INT that Spark's
    hash partitioner (``pmod(hash(v), partitions)``) sends to ``p``."""
    found: dict[int, int] = {}
    start = 0
    while len(found) < partitions:
        candidates = np.arange(start, start + 64 * partitions + 1024, dtype=np.int64)
        targets = np.mod(_spark_hash_ints(candidates).astype(np.int64), partitions)
        for p in range(partitions):
            if p not in found:
                hits = np.flatnonzero(targets == p)
                if len(hits):
                    found[p] = int(candidates[hits[0]])
        start += len(candidates)
    return [found[p] for p in range(partitions)]


def shuffle_partitions(spark: SparkSession) -> int:
    """``spark.sql.shuffle.partitions`` (200 when unreadable)."""
    return _shuffle_partitions(spark)


def _shuffle_partitions(spark: SparkSession) -> int:
    try:
        return max(1, int(spark.conf.get("spark.sql.shuffle.partitions") or "200"))
    except (TypeError, ValueError):
        return 200


def shuffle_by_bucket(bucketed: DataFrame, table: Table, *, sort: bool = False) -> DataFrame:
    """``bucketed`` (rows of ``table`` plus :data:`BUCKET_COLUMN`, from :func:`table_bucket`)
    hash-partitioned so that every (partition, bucket) of ``table`` is in one Spark partition
    (optionally sorted by the primary key within it), without the bucket column."""
    num_buckets = table.core_options.bucket
    parts = list(table.partition_keys)
    if parts:
        out = bucketed.repartition(*[F.col(quoted(p)) for p in parts], F.col(BUCKET_COLUMN))
    else:
        n = min(num_buckets, _shuffle_partitions(bucketed.sparkSession))
        spark_partition = (F.col(BUCKET_COLUMN) % n + 1).cast("int")
        target = F.element_at(F.array(*[F.lit(v) for v in stand_ins(n)]), spark_partition)
        out = bucketed.repartition(n, target)
    if sort:
        order = [*parts, BUCKET_COLUMN, *table.primary_keys]
        out = out.sortWithinPartitions(*[F.col(quoted(k)) for k in order])
    return out.drop(BUCKET_COLUMN)


# ------------------------------------------------------------------------------------------------
# When, and the entry points
# ------------------------------------------------------------------------------------------------
#: Session setting / Spark setting (``spark.dyntable.`` + it): ``auto`` (default), ``true``, ``false``.
SETTING = "write.bucket-shuffle"
SPARK_CONF = "spark.dyntable." + SETTING
#: ``auto`` shuffles inputs Spark estimates above this size: below it the extra stage costs more
#: than the few extra level-0 runs of a small write (see docs/benchmarks.md, W2s).
MIN_ESTIMATED_BYTES = 8 << 20


def table_bucket(frame: DataFrame, table: Table) -> DataFrame | None:
    """``frame`` plus :data:`BUCKET_COLUMN`, the bucket of each row in ``table``; None when
    ``table`` is not a fixed-bucket primary-key table or a bucket-key type is not covered."""
    buckets = table.core_options.bucket
    if not table.has_primary_key or buckets < 1:
        return None
    schema = table.schema
    keys = list(schema.logical_bucket_keys)
    if any(k not in frame.columns for k in keys):
        return None
    types = [schema.field(k).type for k in keys]
    return with_bucket(frame, [F.col(quoted(k)) for k in keys], types, buckets)


def _estimated_bytes(frame: DataFrame) -> int | None:
    """Spark's size estimate of ``frame``'s optimized plan (no job runs); None when Spark cannot
    size it: a relation without statistics (a read through a Python data source such as
    ``dyntable``) is estimated at ``spark.sql.defaultSizeInBytes``, which is no size at all."""
    try:
        size = int(str(frame._jdf.queryExecution().optimizedPlan().stats().sizeInBytes()))  # a BigInt
        unknown = int(frame.sparkSession._jsparkSession.sessionState().conf().defaultSizeInBytes())
    except Exception:  # noqa: BLE001 - Spark Connect or an unexpected plan: the size is unknown
        return None
    return None if size >= unknown else size


def _mode(spark: SparkSession, session_options: dict[str, str] | None) -> str:
    value = (session_options or {}).get(SETTING)
    if value is None:
        try:
            value = spark.conf.get(SPARK_CONF, None)
        except Exception:  # noqa: BLE001 - an unreadable setting counts as unset
            value = None
    mode = (value or "auto").strip().lower()
    if mode not in ("auto", "true", "false"):
        from engine.errors import InvalidArgumentError

        raise InvalidArgumentError(f"'{SETTING}' must be 'auto', 'true' or 'false', not '{value}'")
    return mode


def should_shuffle(frame: DataFrame, mode: str = "auto") -> bool:
    """Whether a write of ``frame`` (into a table with a bucket expression) is shuffled: always
    for ``true``, never for ``false``; for ``auto`` when Spark estimates it at
    :data:`MIN_ESTIMATED_BYTES` or more. An input Spark cannot size is not shuffled: the writes
    that read a table through the ``dyntable`` source (UPDATE, DELETE and MERGE rewrites, INSERT
    … SELECT from a primary-key table) keep the unshuffled write they had."""
    if mode != "auto":
        return mode == "true"
    size = _estimated_bytes(frame)
    return size is not None and size >= MIN_ESTIMATED_BYTES


def wants_shuffle(frame: DataFrame, session_options: dict[str, str] | None = None) -> bool:
    """Whether a write of ``frame`` is grouped by bucket (:func:`for_write`) when the table has a
    bucket expression (the session's setting, else its size)."""
    return should_shuffle(frame, _mode(frame.sparkSession, session_options))


def for_write(frame: DataFrame, table: Table, session_options: dict[str, str] | None = None) -> DataFrame:
    """``frame`` as the ``dyntable`` writer should receive it for ``table``: grouped by bucket when
    that pays (see the module docstring); below the size where it pays, in one task (``auto``
    only, :func:`is_small`); else unchanged. ``session_options``: the SQL session's settings
    (``SET write.bucket-shuffle = …``)."""
    if not table.has_primary_key or table.core_options.bucket < 1:
        return frame
    mode = _mode(frame.sparkSession, session_options)
    if mode == "auto" and is_small(frame):
        # One writer sees every row, so each bucket gets one level-0 file per write, as Paimon's
        # Spark write (always bucket-shuffled) leaves it, without the exchange stage a small
        # input does not pay for: coalesce merges the input's tasks, it does not shuffle.
        return frame.coalesce(1)
    bucketed = table_bucket(frame, table)
    if bucketed is None or not should_shuffle(frame, mode):
        return frame
    return shuffle_by_bucket(bucketed, table)


def is_small(frame: DataFrame) -> bool:
    """Whether Spark estimates ``frame`` below :data:`MIN_ESTIMATED_BYTES` (an input it cannot
    size is not small: it may be a whole table)."""
    size = _estimated_bytes(frame)
    return size is not None and size < MIN_ESTIMATED_BYTES

