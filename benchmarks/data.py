"""Synthetic, seeded benchmark data as Arrow tables: the T8, S20 and CDC shapes of docs/benchmarks.md.

Invariants:
* Deterministic: the same arguments always give the same table (numpy ``default_rng(seed)``).
* Vectorised: every column is built with numpy / pyarrow kernels, never a per-row Python loop,
  so generating 2M rows costs well under a second and never dominates a benchmark's setup.
* Keys are unique within one generated table (a CDC batch touches each key at most once), so a
  merged result is unambiguous and checksums can be compared across engines.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

CATEGORY_COUNT = 1_000
TS_BASE_MICROS = 1_704_067_200_000_000  # 2024-01-01T00:00:00 UTC
TS_SPAN_MICROS = 365 * 24 * 3600 * 1_000_000

T8_SCHEMA = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        ("qty", pa.int32()),
        ("price", pa.float64()),
        ("score", pa.float64()),
        ("category", pa.string()),
        ("token", pa.string()),
        ("ts", pa.timestamp("us")),
        ("flag", pa.bool_()),
    ]
)
S20_STRING_COLUMNS = [f"s{i:02d}" for i in range(1, 21)]
S20_SCHEMA = pa.schema(
    [pa.field("k", pa.int32(), nullable=False)] + [(c, pa.string()) for c in S20_STRING_COLUMNS]
)

_HEX = np.frombuffer(b"0123456789abcdef", dtype=np.uint8)
_CATEGORIES = pa.array([f"cat-{i:04d}" for i in range(CATEGORY_COUNT)], pa.string())


def hex_strings(rng: np.random.Generator, n: int, chars: int) -> pa.StringArray:
    """``n`` random lowercase hex strings of exactly ``chars`` characters, built from raw buffers.

    Args:
        rng: the seeded generator to draw from.
        n: number of strings.
        chars: characters per string (even or odd).
    """
    nibbles = rng.integers(0, 16, size=(n, chars), dtype=np.uint8)
    data = _HEX[nibbles].reshape(-1)
    offsets = np.arange(0, n * chars + 1, chars, dtype=np.int32)
    return pa.StringArray.from_buffers(n, pa.py_buffer(offsets.tobytes()), pa.py_buffer(data.tobytes()))


def _t8_values(rng: np.random.Generator, ids: np.ndarray) -> pa.Table:
    n = len(ids)
    ts = TS_BASE_MICROS + rng.integers(0, TS_SPAN_MICROS, n, dtype=np.int64)
    return pa.Table.from_arrays(
        [
            pa.array(ids.astype(np.int64, copy=False), pa.int64()),
            pa.array(rng.integers(0, 10_000, n, dtype=np.int32), pa.int32()),
            pa.array(np.round(rng.random(n) * 1000.0, 2)),
            pa.array(rng.standard_normal(n)),
            _CATEGORIES.take(pa.array(rng.integers(0, CATEGORY_COUNT, n, dtype=np.int32))),
            hex_strings(rng, n, 16),
            pa.array(ts, pa.int64()).view(pa.timestamp("us")),
            pa.array(rng.random(n) < 0.5),
        ],
        schema=T8_SCHEMA,
    )


def t8(n: int, seed: int = 8, first_id: int = 0, shuffle: bool = True) -> pa.Table:
    """The T8 shape: ``n`` rows with unique ids ``first_id .. first_id + n - 1``.

    Args:
        n: number of rows.
        seed: random seed.
        first_id: the smallest id.
        shuffle: emit ids in random order (as real ingest would) instead of ascending.
    """
    rng = np.random.default_rng(seed)
    ids = np.arange(first_id, first_id + n, dtype=np.int64)
    if shuffle:
        rng.shuffle(ids)
    return _t8_values(rng, ids)


def s20(n: int, seed: int = 20) -> pa.Table:
    """The S20 shape: an int key ``k`` (0..n-1, shuffled) and 20 strings of 10 hex characters."""
    rng = np.random.default_rng(seed)
    keys = np.arange(n, dtype=np.int32)
    rng.shuffle(keys)
    return pa.Table.from_arrays(
        [pa.array(keys, pa.int32())] + [hex_strings(rng, n, 10) for _ in S20_STRING_COLUMNS],
        schema=S20_SCHEMA,
    )


def cdc(existing_keys: int, n: int, seed: int, next_key: int | None = None) -> pa.Table:
    """One CDC batch over a T8 table whose ids are ``0 .. existing_keys - 1``.

    80% updates (``+U``) and 5% deletes (``-D``) of distinct existing keys, 15% inserts (``+I``)
    of new keys from ``next_key`` (default ``existing_keys``) upwards; rows in random order. The
    result has the T8 columns plus ``rowkind``.

    Args:
        existing_keys: size of the key space already in the table.
        n: rows in the batch; the updates and deletes must fit in the key space.
        seed: random seed.
        next_key: first id used for inserts.

    Raises:
        ValueError: more updates + deletes than existing keys.
    """
    rng = np.random.default_rng(seed)
    inserts = int(round(n * 0.15))
    deletes = int(round(n * 0.05))
    updates = n - inserts - deletes
    if updates + deletes > existing_keys:
        raise ValueError(
            f"a CDC batch of {n} rows needs {updates + deletes} existing keys, the table has {existing_keys}"
        )
    touched = rng.choice(existing_keys, size=updates + deletes, replace=False).astype(np.int64)
    start = existing_keys if next_key is None else next_key
    ids = np.concatenate([touched, np.arange(start, start + inserts, dtype=np.int64)])
    kinds = np.concatenate(
        [np.full(updates, 0, np.int8), np.full(deletes, 1, np.int8), np.full(inserts, 2, np.int8)]
    )
    order = rng.permutation(n)
    ids, kinds = ids[order], kinds[order]
    table = _t8_values(rng, ids)
    rowkind = pa.array(["+U", "-D", "+I"], pa.string()).take(pa.array(kinds))
    return table.append_column(pa.field("rowkind", pa.string(), nullable=False), rowkind)


def apply_cdc(base: pa.Table, batch: pa.Table, key: str = "id") -> pa.Table:
    """The table content after upserting ``batch`` into ``base`` (the expected merged state).

    Rows of ``base`` whose key the batch touches are replaced by the batch's after-image, or
    removed for ``-D``. Column order is ``base``'s; the order of rows is unspecified.
    """
    import pyarrow.compute as pc

    keep = pc.invert(pc.is_in(base.column(key), value_set=batch.column(key)))
    survivors = base.filter(keep)
    after = batch.filter(pc.not_equal(batch.column("rowkind"), "-D")).select(base.column_names)
    return pa.concat_tables([survivors, after.cast(base.schema)])
