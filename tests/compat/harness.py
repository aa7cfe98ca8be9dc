"""Our-side handle on pypaimon: locate (or create) its virtual environment and call the driver.

Its one job is to let tests in our environment run pypaimon operations (create table, batch
write, read, list snapshots, incremental read, manifest dump) by talking to
``pypaimon_driver.py`` running under the pypaimon venv's own interpreter.

Invariants:
* pypaimon is never imported here: it pins an older pyarrow/fsspec than ours, so it only ever
  runs as a subprocess of the venv's python.
* Tables cross the process boundary as Arrow IPC files in a private exchange directory that is
  removed by :meth:`PyPaimon.close`; requests and answers are JSON.
* By default one long-lived driver process (``--serve``) answers all calls, so the ~1 s pypaimon
  import is paid once per :class:`PyPaimon`; ``serve=False`` runs one process per call instead.
* :meth:`PyPaimon.read` returns the table's declared Arrow types (the driver casts pypaimon's
  output back to them); pass ``schema=`` to cast to exactly the Arrow schema you wrote with.
"""

from __future__ import annotations

import json
import os
import selectors
import shutil
import subprocess
import tempfile
import uuid
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.ipc as ipc

__all__ = [
    "DRIVER",
    "PyPaimon",
    "PyPaimonError",
    "find_or_create_venv",
    "locate_venv",
]

REPO_ROOT = Path(__file__).resolve().parents[2]
DRIVER = Path(__file__).resolve().with_name("pypaimon_driver.py")
ENV_PYTHON = "DYNTABLE_PYPAIMON_PYTHON"
REPO_VENV = REPO_ROOT / ".venv-pypaimon"
VENV_SCRIPT = REPO_ROOT / ".ci" / "pypaimon-venv.sh"

_DEFAULT_TIMEOUT_S = 180.0


class PyPaimonError(RuntimeError):
    """pypaimon (or the driver) failed; carries the remote exception type and traceback."""

    def __init__(self, error_type: str, message: str, remote_traceback: str = "") -> None:
        super().__init__(f"pypaimon {error_type}: {message}")
        self.error_type = error_type
        self.remote_message = message
        self.remote_traceback = remote_traceback


# ----------------------------------------------------------------------------------------------
# locating the virtual environment
# ----------------------------------------------------------------------------------------------

def _is_executable(path: Path) -> bool:
    return path.is_file() and os.access(path, os.X_OK)


def locate_venv() -> tuple[str | None, str]:
    """Find the python of a pypaimon venv, creating the repo venv on CI.

    Order: env ``DYNTABLE_PYPAIMON_PYTHON``; the repo's ``.venv-pypaimon/bin/python``; on CI
    (``CI=true``) create the latter with ``.ci/pypaimon-venv.sh``.

    Returns:
        ``(python_path, how_found)`` or ``(None, reason_it_is_unavailable)``.
    """
    configured = os.environ.get(ENV_PYTHON)
    if configured:
        if _is_executable(Path(configured)):
            return configured, f"from ${ENV_PYTHON}"
        return None, f"${ENV_PYTHON}={configured!r} is not an executable file"
    repo_python = REPO_VENV / "bin" / "python"
    if _is_executable(repo_python):
        return str(repo_python), "repo venv"
    if os.environ.get("CI", "").lower() == "true":
        proc = subprocess.run(["bash", str(VENV_SCRIPT), str(REPO_VENV)], capture_output=True,
                              text=True, timeout=1800, check=False)
        if proc.returncode == 0 and _is_executable(repo_python):
            return str(repo_python), "repo venv created by .ci/pypaimon-venv.sh"
        return None, (f".ci/pypaimon-venv.sh failed (exit {proc.returncode}): "
                      f"{proc.stderr.strip()[-2000:]}")
    return None, (f"no pypaimon venv: set ${ENV_PYTHON} to a python with pypaimon==2.1.0, or run "
                  f"`bash .ci/pypaimon-venv.sh` to create {REPO_VENV}")


def find_or_create_venv() -> str | None:
    """Return the pypaimon venv's python path, or None when unavailable (see :func:`locate_venv`)."""
    return locate_venv()[0]


# ----------------------------------------------------------------------------------------------
# Arrow IPC exchange
# ----------------------------------------------------------------------------------------------

def _write_ipc(table: pa.Table | pa.Schema, path: Path) -> None:
    schema = table if isinstance(table, pa.Schema) else table.schema
    with pa.OSFile(str(path), "wb") as sink, ipc.new_file(sink, schema) as writer:
        if isinstance(table, pa.Table):
            writer.write_table(table)


def _read_ipc(path: Path) -> pa.Table:
    with pa.memory_map(str(path), "r") as source:
        # read_all copies out of the map, so the file can be deleted afterwards
        return ipc.open_file(source).read_all()


def cast_to_schema(table: pa.Table, schema: pa.Schema) -> pa.Table:
    """Select ``schema``'s columns by name and cast to its exact types and nullability.

    Raises:
        PyPaimonError: a column is missing or a non-nullable column holds nulls.
    """
    missing = [n for n in schema.names if n not in table.column_names]
    if missing:
        raise PyPaimonError("HarnessError", f"result lacks columns {missing}; has {table.column_names}")
    arrays = []
    for field in schema:
        column = table.column(field.name)
        if not field.nullable and column.null_count:
            raise PyPaimonError("HarnessError", f"column {field.name!r} is NOT NULL but has nulls")
        arrays.append(column if column.type == field.type else column.cast(field.type))
    return pa.Table.from_arrays(arrays, schema=schema)


# ----------------------------------------------------------------------------------------------
# the driver handle
# ----------------------------------------------------------------------------------------------

class PyPaimon:
    """Runs pypaimon operations through ``pypaimon_driver.py`` under another interpreter.

    Not thread-safe: one request is in flight per instance. After :meth:`close` a new call
    simply starts a fresh driver process.

    Args:
        python: path of the pypaimon venv's python.
        serve: keep one driver process alive for all calls (default) instead of one per call.
        timeout: seconds to wait for any single call.
    """

    def __init__(self, python: str, *, serve: bool = True, timeout: float = _DEFAULT_TIMEOUT_S) -> None:
        self.python = str(python)
        self.serve = serve
        self.timeout = timeout
        self._xchg = Path(tempfile.mkdtemp(prefix="pypaimon-xchg-"))
        self._proc: subprocess.Popen[str] | None = None
        self._stderr_path = self._xchg / "driver-stderr.log"
        self._stderr_file: Any = None

    # ---- lifecycle ---------------------------------------------------------------------------

    def __enter__(self) -> PyPaimon:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Stop the driver process (if any) and delete the exchange directory."""
        if self._proc is not None:
            proc, self._proc = self._proc, None
            try:
                if proc.stdin:
                    proc.stdin.close()
                proc.wait(timeout=10)
            except (subprocess.TimeoutExpired, OSError):
                proc.kill()
                proc.wait()
            if proc.stdout:
                proc.stdout.close()
        if self._stderr_file is not None:
            self._stderr_file.close()
            self._stderr_file = None
        shutil.rmtree(self._xchg, ignore_errors=True)

    def _server(self) -> subprocess.Popen[str]:
        if self._proc is None or self._proc.poll() is not None:
            if self._stderr_file is None:
                self._xchg.mkdir(parents=True, exist_ok=True)
                self._stderr_file = open(self._stderr_path, "a", encoding="utf-8")  # noqa: SIM115
            self._proc = subprocess.Popen(
                [self.python, str(DRIVER), "--serve"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                stderr=self._stderr_file, text=True, encoding="utf-8", bufsize=1,
                env=_driver_env())
        return self._proc

    def _stderr_tail(self) -> str:
        try:
            return self._stderr_path.read_text(encoding="utf-8")[-4000:]
        except OSError:
            return ""

    # ---- raw call ----------------------------------------------------------------------------

    def call(self, command: str, **request: Any) -> Any:
        """Run one driver command and return its JSON result.

        Raises:
            PyPaimonError: pypaimon raised, the request was malformed, or the driver died/timed out.
        """
        if not self.serve:
            return self._call_once(command, request)
        proc = self._server()
        assert proc.stdin is not None and proc.stdout is not None
        try:
            proc.stdin.write(json.dumps({"command": command, "request": request}) + "\n")
            proc.stdin.flush()
        except OSError as exc:
            raise PyPaimonError("DriverDied", f"{exc}; stderr: {self._stderr_tail()}") from exc
        with selectors.DefaultSelector() as selector:
            selector.register(proc.stdout, selectors.EVENT_READ)
            if not selector.select(self.timeout):
                proc.kill()
                proc.wait()
                self._proc = None
                raise PyPaimonError("Timeout", f"{command} took longer than {self.timeout}s")
        line = proc.stdout.readline()
        if not line:
            proc.wait()
            self._proc = None
            raise PyPaimonError("DriverDied", f"exit {proc.returncode}; stderr: {self._stderr_tail()}")
        reply = json.loads(line)
        if not reply.get("ok"):
            raise PyPaimonError(reply.get("error", "?"), reply.get("message", ""),
                                reply.get("traceback", ""))
        return reply["result"]

    def _call_once(self, command: str, request: dict[str, Any]) -> Any:
        try:
            proc = subprocess.run([self.python, str(DRIVER), command], input=json.dumps(request),
                                  capture_output=True, text=True, timeout=self.timeout,
                                  env=_driver_env(), check=False)
        except subprocess.TimeoutExpired as exc:
            raise PyPaimonError("Timeout", f"{command} took longer than {self.timeout}s") from exc
        if proc.returncode != 0:
            last = proc.stderr.strip().splitlines()[-1:] or ["{}"]
            try:
                err = json.loads(last[0])
            except json.JSONDecodeError:
                err = {"error": "DriverDied", "message": proc.stderr[-4000:]}
            raise PyPaimonError(err.get("error", "?"), err.get("message", ""), err.get("traceback", ""))
        return json.loads(proc.stdout.strip().splitlines()[-1])

    def _tmp(self, suffix: str) -> Path:
        self._xchg.mkdir(parents=True, exist_ok=True)  # close() removes it; calls may follow
        return self._xchg / f"{uuid.uuid4().hex}{suffix}"

    # ---- operations --------------------------------------------------------------------------

    def version(self) -> dict[str, Any]:
        """Versions of pypaimon/pyarrow/fsspec in the venv and the pypaimon import time."""
        return self.call("version")

    def create_table(self, warehouse: str | os.PathLike[str], table: str, schema: pa.Schema,
                     partition_keys: tuple[str, ...] | list[str] = (),
                     primary_keys: tuple[str, ...] | list[str] = (),
                     options: dict[str, str] | None = None) -> None:
        """Create database and table ``table`` ("db.t") with pypaimon's filesystem catalog.

        The Arrow schema is converted by pypaimon (``Schema.from_pyarrow_schema``): e.g.
        string→STRING, int32→INT, timestamp('us')→TIMESTAMP(6), non-nullable→NOT NULL.
        """
        path = self._tmp(".arrow")
        _write_ipc(schema, path)
        try:
            self.call("create", warehouse=str(warehouse), table=table, schema_ipc=str(path),
                      partition_keys=list(partition_keys), primary_keys=list(primary_keys),
                      options=dict(options or {}))
        finally:
            path.unlink(missing_ok=True)

    def create_table_typed(self, warehouse: str | os.PathLike[str], table: str,
                           columns: list[tuple[str, Any]], partition_keys: tuple[str, ...] = (),
                           primary_keys: tuple[str, ...] = (),
                           options: dict[str, str] | None = None) -> dict[str, Any]:
        """Create a table from ``[(name, paimon_type)]`` (SQL string like ``"DECIMAL(10, 2)"``
        or a Paimon JSON type object); returns the stored schema as the driver reports it."""
        return self.call("create", warehouse=str(warehouse), table=table,
                         schema=[[n, t] for n, t in columns], partition_keys=list(partition_keys),
                         primary_keys=list(primary_keys), options=dict(options or {}))

    def write(self, warehouse: str | os.PathLike[str], table: str, data: pa.Table,
              overwrite: bool | dict[str, Any] | None = None) -> int | None:
        """One batch-write commit of ``data``; returns the new latest snapshot id.

        Args:
            overwrite: None/False = append; True = overwrite the whole table;
                a partition spec ``{"dt": "x"}`` = overwrite that partition only.
        """
        path = self._tmp(".arrow")
        _write_ipc(data, path)
        try:
            result = self.call("write", warehouse=str(warehouse), table=table, data=str(path),
                               overwrite=overwrite if overwrite else None)
        finally:
            path.unlink(missing_ok=True)
        return result["snapshot_id"]

    def read(self, warehouse: str | os.PathLike[str], table: str, snapshot_id: int | None = None,
             projection: list[str] | None = None, filter: dict[str, Any] | None = None,  # noqa: A002
             schema: pa.Schema | None = None) -> pa.Table:
        """Full merged batch read of the latest (or ``snapshot_id``) snapshot.

        Args:
            filter: AND of equalities ``{"col": value}`` (JSON scalars; None = IS NULL).
            schema: cast the result to exactly this Arrow schema (columns selected by name).
        """
        out = self._tmp(".arrow")
        try:
            self.call("read", warehouse=str(warehouse), table=table, out=str(out),
                      snapshot_id=snapshot_id, projection=projection, filter=filter)
            result = _read_ipc(out)
        finally:
            out.unlink(missing_ok=True)
        return cast_to_schema(result, schema) if schema is not None else result

    def read_incremental(self, warehouse: str | os.PathLike[str], table: str, start_snapshot: int,
                         end_snapshot: int, projection: list[str] | None = None,
                         include_row_kind: bool = True) -> pa.Table:
        """Rows added by snapshots in (start_snapshot, end_snapshot], via pypaimon's
        ``incremental-between-timestamp``; with ``include_row_kind`` a ``_row_kind`` string
        column (+I/-U/+U/-D) comes first."""
        out = self._tmp(".arrow")
        try:
            self.call("read_incremental", warehouse=str(warehouse), table=table, out=str(out),
                      start_snapshot=start_snapshot, end_snapshot=end_snapshot,
                      projection=projection, include_row_kind=include_row_kind)
            return _read_ipc(out)
        finally:
            out.unlink(missing_ok=True)

    def snapshots(self, warehouse: str | os.PathLike[str], table: str) -> list[dict[str, Any]]:
        """All snapshots, oldest first: id, commit_kind, total/delta/changelog record counts, ..."""
        return self.call("snapshots", warehouse=str(warehouse), table=table)["snapshots"]

    def manifest(self, warehouse: str | os.PathLike[str], table: str,
                 snapshot_id: int | None = None) -> dict[str, Any]:
        """Raw Avro records of a snapshot's manifest lists and manifests (bytes as base64)."""
        return self.call("manifest", warehouse=str(warehouse), table=table, snapshot_id=snapshot_id)

    def add_column(self, warehouse: str | os.PathLike[str], table: str, name: str | list[str],
                   type_: str) -> dict[str, Any]:
        """ALTER TABLE ADD COLUMN by pypaimon (``name``: a column or a nested field's path); returns
        the new schema."""
        return self.call("add_column", warehouse=str(warehouse), table=table, name=name, type=type_)

    def schema(self, warehouse: str | os.PathLike[str], table: str) -> dict[str, Any]:
        """The latest table schema as pypaimon loads it (fields, keys, options, bucket mode)."""
        return self.call("schema", warehouse=str(warehouse), table=table)


def _driver_env() -> dict[str, str]:
    env = dict(os.environ)
    # Our environment's site-packages must not leak into the venv interpreter.
    env.pop("PYTHONPATH", None)
    env.pop("PYTHONHOME", None)
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    return env
