"""delete_branch crashed at any storage call is completed by running it again.

A deletion killed after moving the branch to the trash but before deleting its base tag
(``branch-base-<name>`` on main) once left the tag for good: the rerun said the branch did not
exist, the tag pinned the base snapshot's files forever, and a new branch of that name failed
with TagAlreadyExistsError.
"""

from __future__ import annotations

import os
import shutil

import pytest

from engine import open_catalog
from engine.errors import NoSuchBranchError, StorageError
from engine.io.faults import FailingFileIO
from engine.ops.branches import BranchOps, base_tag_name
from engine.ops.reachability import UnsafeToDeleteError
from engine.store import FileStore
from tests.engine.ops.conftest import SCHEMA, content, rows


@pytest.mark.parametrize("after", [False, True])
def test_a_rerun_completes_a_branch_deletion_crashed_at_any_storage_call(tmp_path, after):
    template = str(tmp_path / "template")
    cat = open_catalog(template)
    cat.create_database("db")
    t = cat.create_table("db.t", SCHEMA)
    t.write_arrow(rows([1, 2]))
    t.write_arrow(rows([3]))
    t.refs.branches.create("dev", from_snapshot=1)  # pinned by the tag branch-base-dev on main
    cat.get_table("db.t$branch_dev").write_arrow(rows([10]))
    main_rows = content(t)
    crashed_with_pin_left = 0
    n = 0
    while True:  # a crash at the n-th storage call: nothing of that run happens after it
        n += 1
        wh = str(tmp_path / f"w{n}")
        shutil.copytree(template, wh)
        t = open_catalog(wh).get_table("db.t")
        io = FailingFileIO(t.store.io, "any", n, times=-1, after=after)
        try:
            BranchOps(FileStore(io, t.store.paths, t.store.schema)).delete("dev")
            break
        except (StorageError, UnsafeToDeleteError):
            pass
        t = open_catalog(wh).get_table("db.t")
        if "dev" not in t.refs.branches.names() and t.refs.tags.exists(base_tag_name("dev")):
            crashed_with_pin_left += 1
        try:
            t.refs.branches.delete("dev")  # the rerun
        except NoSuchBranchError:
            assert not t.refs.tags.exists(base_tag_name("dev")), f"crash at call {n}: the pin stayed"
        assert t.refs.branches.names() == [] and not t.refs.tags.exists(base_tag_name("dev"))
        assert os.listdir(os.path.join(t.path, "branch")) == [], f"crash at call {n}: trash left"
        assert content(t) == main_rows
        t.refs.branches.create("dev", from_snapshot=1)  # the name is free again
        assert content(open_catalog(wh).get_table("db.t$branch_dev")) == content(t, snapshot_id=1)
        shutil.rmtree(wh)
    assert n > 5 and crashed_with_pin_left > 0  # the case the rerun must finish did occur
