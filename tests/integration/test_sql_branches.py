"""Tags and branches through SQL: ALTER TABLE … TAG/BRANCH, SHOW TAGS/BRANCHES, branch procedures,
and a branch read and written like a table (``t$branch_<name>``)."""

from __future__ import annotations

import pytest

from sqlext.errors import SqlError


def run(session, sql):
    df = session.sql(sql)
    return [tuple(r) for r in df.collect()] if df is not None else None


def test_tag_statements(session):
    run(session, "CREATE TABLE t (id INT, v STRING, PRIMARY KEY (id) NOT ENFORCED)")
    run(session, "INSERT INTO t VALUES (1, 'a')")
    run(session, "ALTER TABLE t CREATE TAG v1")
    run(session, "INSERT INTO t VALUES (2, 'b')")
    run(session, "ALTER TABLE t CREATE TAG IF NOT EXISTS v1")  # no error, unchanged
    run(session, "ALTER TABLE t CREATE TAG first AS OF VERSION 1 RETAIN 2 DAYS")
    assert run(session, "SHOW TAGS t") == [("first",), ("v1",)]
    assert sorted(run(session, "SELECT id FROM t VERSION AS OF 'v1'")) == [(1,)]
    run(session, "ALTER TABLE t RENAME TAG v1 TO release")
    run(session, "ALTER TABLE t CREATE OR REPLACE TAG release")
    assert sorted(run(session, "SELECT id FROM t VERSION AS OF 'release'")) == [(1,), (2,)]
    run(session, "ALTER TABLE t DROP TAG release")
    run(session, "ALTER TABLE t DROP TAG IF EXISTS nope")
    assert run(session, "SHOW TAGS t") == [("first",)]
    with pytest.raises(SqlError) as info:
        run(session, "ALTER TABLE t CREATE TAG first")
    assert info.value.sqlstate == "42710"
    with pytest.raises(SqlError) as info:
        run(session, "ALTER TABLE t DROP TAG nope")
    assert info.value.sqlstate == "42P01"


def test_branch_statements_and_a_branch_used_like_a_table(session):
    run(session, "CREATE TABLE b (id INT, v STRING, PRIMARY KEY (id) NOT ENFORCED)")
    run(session, "INSERT INTO b VALUES (1, 'a')")
    run(session, "ALTER TABLE b CREATE TAG t1")
    run(session, "ALTER TABLE b CREATE BRANCH dev FROM TAG t1")
    run(session, "CALL sys.create_branch(`table` => 'b', branch => 'empty')")
    assert run(session, "SHOW BRANCHES b") == [("dev",), ("empty",)]
    run(session, "INSERT INTO `b$branch_dev` VALUES (2, 'dev')")
    run(session, "UPDATE `b$branch_dev` SET v = 'A' WHERE id = 1")
    assert sorted(run(session, "SELECT id, v FROM `b$branch_dev`")) == [(1, "A"), (2, "dev")]
    assert sorted(run(session, "SELECT id, v FROM b")) == [(1, "a")]  # main untouched
    run(session, "CALL sys.fast_forward(`table` => 'b', branch => 'dev')")
    assert sorted(run(session, "SELECT id, v FROM b")) == [(1, "A"), (2, "dev")]
    run(session, "CALL sys.rename_branch(`table` => 'b', from_branch => 'empty', to_branch => 'scratch')")
    run(session, "ALTER TABLE b DROP BRANCH scratch")
    run(session, "ALTER TABLE b DROP BRANCH IF EXISTS scratch")
    run(session, "CALL sys.delete_branch(`table` => 'b', branch => 'dev')")
    assert run(session, "SHOW BRANCHES b") == []
    with pytest.raises(SqlError) as info:
        run(session, "ALTER TABLE b CREATE BRANCH main")
    assert info.value.sqlstate == "22023"
    with pytest.raises(SqlError) as info:
        run(session, "ALTER TABLE b DROP BRANCH nope")
    assert info.value.sqlstate == "42P01"


def test_replace_main_procedure(session):
    run(session, "CREATE TABLE r (id INT, v STRING)")
    run(session, "INSERT INTO r VALUES (1, 'a')")
    run(session, "ALTER TABLE r CREATE TAG t1")
    run(session, "ALTER TABLE r CREATE BRANCH dev FROM TAG t1")
    run(session, "ALTER TABLE `r$branch_dev` ADD COLUMN n INT")
    run(session, "INSERT INTO `r$branch_dev` VALUES (2, 'dev', 20)")
    run(session, "ALTER TABLE r ADD COLUMN m INT")  # main's schema diverges: fast_forward would refuse
    run(session, "INSERT INTO r VALUES (3, 'main', 30)")
    [(previous, current, backup)] = run(session, "CALL sys.replace_main(`table` => 'r', branch => 'dev')")
    assert current == previous + 1 and backup == f"replace-main-backup-{previous}"
    assert sorted(run(session, "SELECT * FROM r")) == [(1, "a", None), (2, "dev", 20)]
    assert sorted(run(session, f"SELECT * FROM r VERSION AS OF '{backup}'")) == [
        (1, "a", None),
        (3, "main", 30),
    ]
    run(session, "INSERT INTO `r$branch_dev` VALUES (4, 'dev', 40)")
    [(_, current2, none)] = run(
        session, "CALL sys.replace_main(`table` => 'r', branch => 'dev', keep_backup => false)"
    )
    assert none is None and current2 == current + 1 and run(session, "SELECT count(*) FROM r") == [(3,)]
    for branch, state in (("nope", "42P01"), ("main", "22023")):
        with pytest.raises(SqlError) as info:
            run(session, f"CALL sys.replace_main(`table` => 'r', branch => '{branch}')")
        assert info.value.sqlstate == state
