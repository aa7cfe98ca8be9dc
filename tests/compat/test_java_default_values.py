"""Java Paimon (the 0.9 oracle) reads a table whose schema holds a column default (the field's
``defaultValue``, which Paimon 1.2 introduced): the older reader ignores the key, and the rows
dyntable wrote with the default filled in read back the same."""

from __future__ import annotations

import pyarrow as pa
import pytest

from engine.schema_changes import UpdateColumnDefault
from tests.compat.java_oracle import JavaPaimon

pytestmark = pytest.mark.java


def test_java_reads_a_table_with_a_default_value(java: JavaPaimon, catalog):
    catalog.create_table("db.d", [("a", "INT"), ("b", "INT"), ("c", "STRING")])
    t = catalog.alter_table("db.d", [UpdateColumnDefault("b", "3"), UpdateColumnDefault("c", "'x'")])
    t.write_arrow(pa.table({"a": pa.array([1, 2], pa.int32()), "c": ["given", None]}))
    assert sorted(java.read("db.d")) == [(1, 3, "given"), (2, 3, "x")]
