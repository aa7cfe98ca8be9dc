"""sql-examples/notebook.ipynb, executed in a real Jupyter kernel (nbclient + ipykernel).

One notebook run (its kernel starts its own Spark, ~20 s) checks the magics end to end: a
script cell's HTML table, a line magic assigned to a Spark DataFrame, a system table, a CALL
with time travel, the shared session from Python, and an error shown with its caret.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")
pytest.importorskip("ipykernel")

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOK = ROOT / "sql-examples" / "notebook.ipynb"


def _outputs(cell) -> str:
    """Everything a cell showed, as one text (HTML, plain text, streams, error lines)."""
    parts = []
    for out in cell.outputs:
        if out.output_type == "stream":
            parts.append(out.text)
        elif out.output_type == "error":
            parts.append("\n".join(out.traceback))
        else:
            parts.extend(str(v) for v in out.get("data", {}).values())
    return "\n".join(parts)


def _cell(nb, starts: str):
    (cell,) = [c for c in nb.cells if c.cell_type == "code" and c.source.startswith(starts)]
    return cell


@pytest.fixture(scope="module")
def executed(tmp_path_factory):
    nb = nbformat.read(NOTEBOOK, as_version=4)
    workdir = tmp_path_factory.mktemp("notebook")  # the kernel's cwd: ./warehouse lands here
    client = nbclient.NotebookClient(
        nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(workdir)}}
    )
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
    }
    client.execute(env=env)  # raises CellExecutionError on any failing cell not tagged raises-exception
    return nb, workdir


def test_notebook_runs_and_shows_results(executed):
    nb, workdir = executed
    assert (workdir / "warehouse" / "shop.db" / "orders").is_dir()
    connect = _outputs(_cell(nb, "%load_ext sqlext"))
    assert f"Connected: warehouse {workdir / 'warehouse'}" in connect

    script = _cell(nb, "%%sql\nCREATE DATABASE")
    html = next(o.data["text/html"] for o in script.outputs if "text/html" in o.get("data", {}))
    assert html.count("<tr>") == 4 and "3 rows" in html  # header + 3 orders, the upsert applied
    assert '<td style="text-align:right">42.00</td>' in html and "<td>alan</td>" in html
    assert "Table shop.orders created (" in _outputs(script)  # statements without rows report status

    frame = _outputs(_cell(nb, "big = %sql"))
    assert "alan" in frame and "ada" in frame  # the DataFrame went through Spark's groupBy

    snapshots = _outputs(_cell(nb, "%sql SELECT snapshot_id"))
    assert "APPEND" in snapshots and "2 rows" in snapshots

    travel = _outputs(_cell(nb, "%%sql\nCALL sys.create_tag"))
    assert "40.50" in travel and "42.00" in travel and "6 rows" in travel

    assert "[Row(orders=3)]" in _outputs(_cell(nb, "from sqlext import SqlSession"))


def test_notebook_error_cell_shows_message_and_caret(executed):
    nb, _ = executed
    (error,) = [o for o in _cell(nb, "%%sql\nSELECT customer, sum").outputs if o.output_type == "error"]
    text = "\n".join(error.traceback)
    assert error.ename == "SqlMagicError"
    assert text.startswith("Error [42703]") and "custmer" in text
    assert "line 3, column 10" in text and "  GROUP BY custmer" in text
    assert text.splitlines()[-1] == "           ^"  # under the 'c' of custmer
    assert "Traceback" not in text and ".py" not in text
