"""The session's front end on garbage: split, classify and parse only ever fail with a typed SqlError.

``SqlSession.run_statement`` sends every statement through ``split_statements`` ->
``classify`` -> ``parse_statement`` (for dyntable's statements) before anything touches Spark or
storage. Whatever text a user types, that pipeline must end in AST nodes or a :class:`SqlError`
with a five-character SQLSTATE and a script-relative position inside the script — never a lark,
regex or Python error. No JVM here: Spark-bound statements stop at ``classify``.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sqlext.errors import SqlError
from sqlext.parse.parser import keywords, parse_statement
from sqlext.parse.splitter import classify, split_statements

# A script in the shape of the session tests: every statement kind of the issue, some with
# comments, hints, quotes and several lines, so truncations cut through each construct.
SCRIPT = """
CREATE DATABASE IF NOT EXISTS sales;
USE sales;
CREATE TABLE orders (
  id BIGINT NOT NULL COMMENT 'the ''id''',
  amount DECIMAL(10, 2),
  ts TIMESTAMP(3),
  dt STRING,
  amount2 AS amount * 2,
  WATERMARK FOR ts AS ts - INTERVAL '5' SECOND,
  PRIMARY KEY (id, dt) NOT ENFORCED
) PARTITIONED BY (dt) WITH ('bucket' = '2', 'merge-engine' = 'deduplicate');
CREATE TABLE sp (id INT, v STRING) USING dyntable TBLPROPERTIES ('primary-key' = 'id');
CREATE TABLE o2 LIKE orders;
CREATE TABLE o3 WITH ('bucket' = '1') AS SELECT id, amount FROM orders WHERE dt = 'd1';
INSERT INTO orders /*+ OPTIONS('change-tracking' = 'false') */ PARTITION (dt = 'd1') (id, amount)
  SELECT id, amount FROM sp$ro WHERE id > 0;
INSERT OVERWRITE orders PARTITION (dt) VALUES (1, 1.5, NULL, 'd2');
DELETE FROM orders WHERE id = 1;  -- trailing comment
UPDATE orders SET amount = amount + 1 WHERE dt = 'd1';
MERGE INTO orders t USING sp s ON t.id = s.id WHEN MATCHED THEN DELETE WHEN NOT MATCHED THEN INSERT *;
TRUNCATE TABLE sp;
ALTER TABLE orders PARTITION (dt = 'd1') COMPACT;
ALTER TABLE orders SET ('snapshot.num-retained.max' = '5');
ALTER TABLE orders RESET ('snapshot.num-retained.max');
ALTER TABLE sp ADD COLUMN n INT AFTER id;
ALTER TABLE sp RENAME COLUMN v TO w;
ALTER TABLE sp ALTER COLUMN n TYPE BIGINT;
ALTER TABLE sp DROP COLUMN n;
ALTER TABLE sp RENAME TO sp2;
ALTER TABLE o2 ADD PRIMARY KEY (id, dt) NOT ENFORCED;
ALTER TABLE o2 CLUSTERED INTO 4 BUCKETS;
ALTER TABLE orders DROP PARTITION (dt = 'd9');
SELECT * FROM orders VERSION AS OF 3;
SELECT * FROM orders FOR SYSTEM_TIME AS OF '2024-01-01 00:00:00' /*+ OPTIONS('scan.snapshot-id' = '1') */;
DESCRIBE TABLE EXTENDED orders PARTITION (dt = 'd1');
SHOW CREATE TABLE orders; SHOW PARTITIONS orders; SHOW TABLES IN sales; SHOW DATABASES;
SET 'table-storage.bucket' = '4'; SET; RESET 'table-storage.bucket';
SET 'execution.runtime-mode' = 'streaming';
SHOW JOBS; STOP JOB 'abc123';
CALL sys.compact(`table` => 'sales.orders', partitions => 'dt=d1');
SELECT a.*, b.* FROM orders$audit_log a JOIN orders$snapshots b ON 1 = 1;
DROP TABLE IF EXISTS sp2; DROP DATABASE sales CASCADE
"""

_STATEMENTS = [s.text for s in split_statements(SCRIPT)]


def run_front_end(script: str) -> None:
    """What the session does before executing: split, classify, parse; asserts the error contract."""
    try:
        for stmt in split_statements(script):
            kind = classify(stmt.text)
            assert kind in ("dyntable", "spark")
            if kind == "dyntable":
                parse_statement(stmt.text, stmt.line, stmt.column, offset=stmt.offset)
    except SqlError as e:
        assert isinstance(e.sqlstate, str) and len(e.sqlstate) == 5 and e.sqlstate.isalnum(), e.sqlstate
        assert e.line is not None and e.column is not None, str(e)
        lines = script.split("\n")
        assert 1 <= e.line <= len(lines), (e.line, len(lines))
        assert 1 <= e.column <= len(lines[e.line - 1]) + 1, (e.column, lines[e.line - 1])
        text = str(e)
        assert "Traceback" not in text and "lark" not in text.lower()
        if e.snippet is not None:
            assert text.rstrip().endswith("^")  # the caret line points into the snippet


def test_the_script_itself_parses() -> None:
    assert len(_STATEMENTS) == 40
    run_front_end(SCRIPT)  # no error at all
    kinds = {classify(s) for s in _STATEMENTS}
    assert kinds == {"dyntable", "spark"}


def test_every_statement_truncated_everywhere() -> None:
    for text in _STATEMENTS:
        for end in range(1, len(text)):
            run_front_end(text[:end])


def test_the_script_truncated_at_every_line() -> None:
    lines = SCRIPT.split("\n")
    for n in range(len(lines)):
        run_front_end("\n".join(lines[:n]) + "\n" + lines[n][: len(lines[n]) // 2])


@pytest.mark.parametrize(
    "script",
    [
        "SELECT 'unterminated",
        "CREATE TABLE t (a INT) /* never closed",
        "INSERT INTO t VALUES ('a'",
        "ALTER TABLE",
        "STOP JOB",
        "USE `",
        "CREATE TABLE t (a INT, PRIMARY KEY (a) NOT ENFORCED",
        "DROP DATABASE IF",
        "SHOW CREATE TABLE",
        "MERGE INTO t USING s ON",
        "ALTER TABLE t SET ('a' = 'b', 'a' = 'c')",
        "INSERT INTO t /*+ OPTIONS('k') */ SELECT 1",
    ],
)
def test_known_bad_statements(script: str) -> None:
    with pytest.raises(SqlError) as info:
        run_front_end_raw(script)
    assert info.value.sqlstate in ("42601", "22023"), str(info.value)
    run_front_end(script)  # and the error honours the contract


_WORDS = sorted(keywords())
_TOKEN = st.one_of(
    st.sampled_from(_WORDS),
    st.sampled_from(["(", ")", ",", ".", "=", ";", "*", "/*+", "*/", "--", "\n", "$", "'", "`", '"', "=>"]),
    st.sampled_from(["t", "sales.t", "t$snapshots", "t$branch_b", "'v'", "'a''b'", "42", "-1", "x AS y"]),
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_TOKEN, max_size=16))
def test_keyword_soup_scripts(tokens: list[str]) -> None:
    run_front_end(" ".join(tokens))


@settings(max_examples=100, deadline=None)
@given(st.text(max_size=80))
def test_random_text(text: str) -> None:
    run_front_end(text)


@settings(max_examples=150, deadline=None)
@given(
    st.sampled_from(_STATEMENTS),
    st.lists(
        st.tuples(
            st.integers(0, 10_000),
            st.integers(0, 4),
            st.sampled_from(["", ";", "'", "`", "(", ")", "/*", "*/", "--", "\n", ",", "=", "AS", "SELECT"]),
        ),
        max_size=3,
    ),
)
def test_mutated_statements(text: str, edits: list[tuple[int, int, str]]) -> None:
    for where, length, insert in edits:
        at = where % (len(text) + 1)
        text = text[:at] + insert + text[at + length :]
    run_front_end("SELECT 1;\n  " + text + ";\nSHOW JOBS")


def test_error_positions_are_script_relative() -> None:
    script = "SELECT 1;\nUSE db;\nCREATE TABLE t (\n  a INT,\n  b\n)"
    with pytest.raises(SqlError) as info:
        run_front_end_raw(script)
    e = info.value
    assert e.sqlstate == "42601"
    assert (e.line, e.column) == (6, 1), str(e)


def run_front_end_raw(script: str) -> None:
    for stmt in split_statements(script):
        if classify(stmt.text) == "dyntable":
            parse_statement(stmt.text, stmt.line, stmt.column, offset=stmt.offset)


def test_trailing_hint_stays_in_the_query_fragment() -> None:
    node = parse_statement("INSERT INTO t SELECT * FROM s /*+ OPTIONS('consumer-id' = 'c1') */")
    assert node.query.text.endswith("*/")  # type: ignore[attr-defined]
