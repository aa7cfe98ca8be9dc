"""Our-side handle on the Java Paimon oracle: find (or build) it and call Paimon 0.9's own Java API.

Its one job is to let tests run Apache Paimon's Java code (read, write, compact, tag, roll back,
branch, fast-forward, expire snapshots, verify every snapshot and tag) on a warehouse, through the
driver in ``tests/compat/java/PaimonOracle.java`` running in a JVM.

Invariants:
* The class path comes from ``$DYNTABLE_PAIMON_JAVA_CP`` or, when that is unset, from running
  ``.ci/paimon-java.sh`` into its default cache directory; if neither works the caller gets a
  :class:`JavaOracleUnavailable` that says why (the test fixture turns it into a failure: an oracle
  that silently skips proves nothing).
* One JVM (``--serve``) answers every call of a :class:`JavaOracle`; each call opens a fresh,
  uncached Paimon catalog, so nothing is remembered between calls. Requests and answers are JSON
  lines; values use the encodings documented in ``RowCodec.java`` and are decoded here to the
  Python values dyntable's ``to_arrow().to_pylist()`` gives (Decimal, date, datetime, bytes).
* :meth:`JavaPaimon.read` returns rows as tuples in column order, sorted, so results of Java,
  dyntable (:func:`arrow_rows`) and pypaimon compare with ``==``.
"""

from __future__ import annotations

import base64
import datetime as dt
import decimal
import json
import os
import re
import selectors
import subprocess
import sys
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa

from tests.compat.harness import REPO_ROOT

__all__ = [
    "ENV_CLASSPATH",
    "JavaOracle",
    "JavaOracleError",
    "JavaOracleUnavailable",
    "JavaPaimon",
    "arrow_rows",
    "locate_classpath",
    "sort_rows",
]

ENV_CLASSPATH = "DYNTABLE_PAIMON_JAVA_CP"
BUILD_SCRIPT = REPO_ROOT / ".ci" / "paimon-java.sh"
MAIN_CLASS = "PaimonOracle"
# A short-lived oracle: C1 only and a serial collector start fastest and are plenty for test tables.
JVM_FLAGS = ("-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-Xss4m", "-Xmx1g")

_DEFAULT_TIMEOUT_S = 180.0


class JavaOracleUnavailable(RuntimeError):
    """The oracle cannot be found or built; the message says what to do."""


class JavaOracleError(RuntimeError):
    """Paimon's Java code (or the driver) failed; carries the Java exception and its root cause."""

    def __init__(self, reply: Mapping[str, Any]) -> None:
        self.error_type = str(reply.get("error", "?"))
        self.remote_message = str(reply.get("message", ""))
        self.root_error = str(reply.get("root_error", self.error_type))
        self.root_message = str(reply.get("root_message", self.remote_message))
        self.remote_traceback = str(reply.get("traceback", ""))
        detail = ("" if self.root_error == self.error_type
                  else f" (root cause {self.root_error}: {self.root_message})")
        super().__init__(f"Java Paimon {self.error_type}: {self.remote_message}{detail}")


# ----------------------------------------------------------------------------------------------
# finding the class path
# ----------------------------------------------------------------------------------------------


def locate_classpath() -> tuple[str, str]:
    """The oracle's class path and how it was found.

    ``$DYNTABLE_PAIMON_JAVA_CP`` when set (every entry must exist); otherwise the last line of
    ``bash .ci/paimon-java.sh`` (which downloads and compiles into its cache directory once, then
    answers in about a second).

    Raises:
        JavaOracleUnavailable: the variable names missing files, or the build script failed.
    """
    configured = os.environ.get(ENV_CLASSPATH)
    if configured:
        missing = [p for p in configured.split(os.pathsep) if p and not Path(p).exists()]
        if missing:
            raise JavaOracleUnavailable(
                f"${ENV_CLASSPATH} names missing files {missing}; rebuild it with "
                f"`export {ENV_CLASSPATH}=\"$(bash .ci/paimon-java.sh | tail -n 1)\"`")
        return configured, f"from ${ENV_CLASSPATH}"
    env = dict(os.environ, PYTHON=sys.executable)  # the tests' interpreter has pyspark (Hadoop jars)
    try:
        proc = subprocess.run(["bash", str(BUILD_SCRIPT)], capture_output=True, text=True, env=env,
                              timeout=900, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise JavaOracleUnavailable(f"could not run {BUILD_SCRIPT}: {exc}") from exc
    lines = proc.stdout.strip().splitlines()
    if proc.returncode != 0 or not lines:
        raise JavaOracleUnavailable(
            f"${ENV_CLASSPATH} is unset and {BUILD_SCRIPT} failed (exit {proc.returncode}): "
            f"{proc.stderr.strip()[-2000:]}\nThe Java oracle needs java/javac 11+ on PATH, pip access to "
            "PyPI (pypaimon 0.2.0's sdist) and pyspark installed.")
    return lines[-1], f"built by {BUILD_SCRIPT.name}"


# ----------------------------------------------------------------------------------------------
# value encodings (RowCodec.java)
# ----------------------------------------------------------------------------------------------


def _encode(value: Any) -> Any:
    if isinstance(value, decimal.Decimal):
        return str(value)
    if isinstance(value, dt.datetime):
        if value.tzinfo is not None:
            value = value.astimezone(dt.UTC).replace(tzinfo=None)
        return value.isoformat()
    if isinstance(value, dt.date):
        return value.isoformat()
    if isinstance(value, dt.time):
        return (value.hour * 3600 + value.minute * 60 + value.second) * 1000 + value.microsecond // 1000
    if isinstance(value, (bytes, bytearray)):
        return base64.b64encode(value).decode("ascii")
    return value


def _decoder(sql_type: str):
    """A function decoding one JSON value of the Paimon type ``sql_type`` (e.g. "DECIMAL(10, 2)")."""
    base = " ".join(re.sub(r"\(.*?\)", "", sql_type.upper()).replace("NOT NULL", "").split())
    if base == "DECIMAL":
        return decimal.Decimal
    if base == "DATE":
        return dt.date.fromisoformat
    if base == "TIME":
        return lambda ms: (dt.datetime.min + dt.timedelta(milliseconds=ms)).time()
    if base == "TIMESTAMP WITH LOCAL TIME ZONE":
        return lambda v: dt.datetime.fromisoformat(v).replace(tzinfo=dt.UTC)
    if base == "TIMESTAMP":
        return dt.datetime.fromisoformat
    if base in ("BINARY", "VARBINARY", "BYTES"):
        return base64.b64decode
    return None


def _decode_rows(fields: list[dict[str, str]], rows: list[list[Any]]) -> list[tuple]:
    decoders = [_decoder(f["type"]) for f in fields]
    return [tuple(v if v is None or d is None else d(v) for v, d in zip(row, decoders, strict=True))
            for row in rows]


def _sort_key(row: Sequence[Any]) -> tuple:
    return tuple((v is not None, v if v is not None else 0) for v in row)


def sort_rows(rows: Iterable[Sequence[Any]]) -> list[tuple]:
    """Rows as tuples, sorted column by column with nulls first."""
    return sorted((tuple(r) for r in rows), key=_sort_key)


def arrow_rows(table: pa.Table, columns: Sequence[str] | None = None) -> list[tuple]:
    """An Arrow table (dyntable's or pypaimon's read) as :func:`sort_rows` tuples."""
    if columns is not None:
        table = table.select(list(columns))
    return sort_rows(zip(*(table.column(i).to_pylist() for i in range(table.num_columns)), strict=True)) \
        if table.num_columns else []


# ----------------------------------------------------------------------------------------------
# the JVM
# ----------------------------------------------------------------------------------------------


def _java_executable() -> str:
    home = os.environ.get("JAVA_HOME")
    if home and (Path(home) / "bin" / "java").is_file():
        return str(Path(home) / "bin" / "java")
    return "java"


class JavaOracle:
    """One JVM running ``PaimonOracle --serve``; started on first use, stopped by :meth:`close`.

    Not thread-safe: one request is in flight at a time.
    """

    def __init__(self, classpath: str, *, java: str | None = None,
                 timeout: float = _DEFAULT_TIMEOUT_S) -> None:
        self.classpath = classpath
        self.java = java or _java_executable()
        self.timeout = timeout
        self._proc: subprocess.Popen[str] | None = None
        self._stderr: Any = None  # the JVM's stderr (Paimon's logs), kept for error messages

    def __enter__(self) -> JavaOracle:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self, *, kill: bool = False) -> None:
        """Stop the JVM (a later call starts a new one); ``kill`` does not wait for it to finish."""
        if self._proc is not None:
            proc, self._proc = self._proc, None
            try:
                if kill:
                    proc.kill()
                elif proc.stdin:
                    proc.stdin.close()
                proc.wait(timeout=10)
            except (subprocess.TimeoutExpired, OSError):
                proc.kill()
                proc.wait()
            for stream in (proc.stdin, proc.stdout):
                if stream:
                    try:
                        stream.close()
                    except OSError:
                        pass
        if self._stderr is not None:
            self._stderr.close()
            self._stderr = None

    def _server(self) -> subprocess.Popen[str]:
        if self._proc is None or self._proc.poll() is not None:
            if self._stderr is None:
                self._stderr = tempfile.TemporaryFile(mode="w+", encoding="utf-8")  # noqa: SIM115
            command = [self.java, *JVM_FLAGS, "-cp", self.classpath, MAIN_CLASS, "--serve"]
            try:
                self._proc = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                              stderr=self._stderr, text=True, encoding="utf-8", bufsize=1)
            except OSError as exc:
                raise JavaOracleError({"error": "JVMNotStarted", "message": f"{command[0]}: {exc}"}) from exc
        return self._proc

    def _stderr_tail(self) -> str:
        if self._stderr is None:
            return ""
        self._stderr.seek(0)
        lines = [ln for ln in self._stderr.read().splitlines() if not ln.startswith("SLF4J:")]
        return "\n".join(lines)[-4000:]

    def _roundtrip(self, request: Mapping[str, Any]) -> dict[str, Any]:
        proc = self._server()
        assert proc.stdin is not None and proc.stdout is not None
        try:
            proc.stdin.write(json.dumps(request) + "\n")
            proc.stdin.flush()
        except OSError as exc:
            raise JavaOracleError({"error": "DriverDied",
                                   "message": f"{exc}; {self._stderr_tail()}"}) from exc
        with selectors.DefaultSelector() as selector:
            selector.register(proc.stdout, selectors.EVENT_READ)
            if not selector.select(self.timeout):
                self.close(kill=True)
                raise JavaOracleError({"error": "Timeout",
                                       "message": f"{request.get('op')} took over {self.timeout}s"})
        line = proc.stdout.readline()
        if not line:
            proc.wait()
            self._proc = None
            raise JavaOracleError({"error": "DriverDied",
                                   "message": f"JVM exit {proc.returncode}; stderr: {self._stderr_tail()}"})
        return json.loads(line)

    def call(self, op: str, **request: Any) -> Any:
        """Run one operation; its result, or :class:`JavaOracleError` with Paimon's exception."""
        reply = self._roundtrip({"op": op, **request})
        if not reply.get("ok"):
            raise JavaOracleError(reply)
        return reply["result"]

    def batch(self, requests: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
        """Several operations in one round trip; one ``{"ok": ..., ...}`` answer each, in order."""
        return self.call("batch", requests=list(requests))

    def version(self) -> dict[str, str]:
        return self.call("version")


# ----------------------------------------------------------------------------------------------
# one warehouse
# ----------------------------------------------------------------------------------------------


def _encode_filter(spec: Mapping[str, Any] | None) -> dict[str, Any] | None:
    if spec is None:
        return None
    values = [_encode(v) for v in spec["values"]]
    return {"column": spec["column"], "op": spec.get("op", "eq"), "values": values}


class JavaPaimon:
    """Paimon's Java API on the tables of one warehouse (``table`` is ``"db.name"``).

    ``branch=`` selects a branch through ``FileStoreTable.switchToBranch``; reads take ``tag=``
    (``scan.tag-name``) or ``snapshot_id=`` (``scan.snapshot-id``).
    """

    def __init__(self, warehouse: str | os.PathLike[str], oracle: JavaOracle) -> None:
        self.warehouse = str(warehouse)
        self.oracle = oracle

    def _call(self, op: str, table: str, branch: str | None = None, **request: Any) -> Any:
        return self.oracle.call(op, warehouse=self.warehouse, table=table, branch=branch, **request)

    # ---- reads -------------------------------------------------------------------------------

    def read_full(self, table: str, *, branch: str | None = None, tag: str | None = None,
                  snapshot_id: int | None = None,
                  filter: Mapping[str, Any] | None = None) -> tuple[list[str], list[tuple]]:
        """Column names and sorted rows of a batch read (latest, a tag, or a snapshot).

        ``filter`` (``{"column", "op": "eq" | "in", "values"}``) is pushed down: Paimon skips files
        by it (statistics, file indexes) but returns every row of the files it reads."""
        result = self._call("read", table, branch, tag=tag, snapshot_id=snapshot_id,
                            filter=_encode_filter(filter))
        names = [f["name"] for f in result["fields"]]
        return names, sort_rows(_decode_rows(result["fields"], result["rows"]))

    def read_incremental(self, table: str, between: str, branch: str | None = None) -> list[tuple]:
        """Sorted rows of Paimon's batch ``incremental-between`` read (its default scan mode)."""
        result = self._call("read", table, branch, incremental_between=between)
        return sort_rows(_decode_rows(result["fields"], result["rows"]))

    def read(self, table: str, branch: str | None = None, tag: str | None = None,
             snapshot_id: int | None = None, filter: Mapping[str, Any] | None = None) -> list[tuple]:
        """Sorted rows (tuples in column order) of a batch read by Paimon's ``ReadBuilder``."""
        return self.read_full(table, branch=branch, tag=tag, snapshot_id=snapshot_id, filter=filter)[1]

    def snapshots(self, table: str, branch: str | None = None) -> list[dict[str, Any]]:
        """Every snapshot Paimon lists, oldest first (id, schema_id, commit_kind, counts)."""
        return self._call("snapshots", table, branch)

    def snapshot_ids(self, table: str, branch: str | None = None) -> list[int]:
        return [s["id"] for s in self.snapshots(table, branch)]

    def tags(self, table: str, branch: str | None = None) -> dict[str, int]:
        """Tag name -> tagged snapshot id."""
        return self._call("tags", table, branch)

    def branches(self, table: str) -> list[str]:
        return sorted(self._call("branches", table))

    def verify(self, table: str, branch: str | None = None) -> dict[str, dict[str, Any]]:
        """Reads every snapshot and tag: ``{"snapshot-3": {"rows": n}, "tag-t": {"error": ...}}``."""
        return self._call("verify", table, branch)

    def files(self, table: str, branch: str | None = None, tag: str | None = None,
              snapshot_id: int | None = None,
              filter: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
        """The data files a batch scan reads: partition, bucket, file, level, row_count,
        ``extra_files``, ``embedded_index`` (base64 or None) and ``deletion_file`` (``{"path",
        "offset", "length"}`` of its deletion vector, or None); ``filter`` as in :meth:`read_full`."""
        return self._call("files", table, branch, tag=tag, snapshot_id=snapshot_id,
                          filter=_encode_filter(filter))

    def unreadable(self, table: str, branch: str | None = None) -> dict[str, str]:
        """The snapshots and tags :meth:`verify` could not read, with Paimon's root error."""
        return {ref: f"{r['error']}: {r['message']}" for ref, r in self.verify(table, branch).items()
                if "error" in r}

    # ---- writes and maintenance --------------------------------------------------------------

    def create_table(self, table: str, columns: Sequence[tuple[str, str]], *,
                     partition_keys: Sequence[str] = (), primary_keys: Sequence[str] = (),
                     options: Mapping[str, str] | None = None) -> None:
        """Create database (if absent) and table with Paimon's catalog; ``columns`` are
        ``(name, Paimon SQL type)`` pairs such as ``("id", "BIGINT NOT NULL")``."""
        self.oracle.call("create_table", warehouse=self.warehouse, table=table,
                         columns=[list(c) for c in columns], partition_keys=list(partition_keys),
                         primary_keys=list(primary_keys), options=dict(options or {}))

    def write(self, table: str, rows: Iterable[Sequence[Any] | Mapping[str, Any]], *,
              row_kinds: Sequence[str] | None = None, branch: str | None = None,
              overwrite: bool = False) -> int:
        """One batch-write commit; rows in column order or dicts by column name. Returns the snapshot id."""
        encoded = [{k: _encode(v) for k, v in r.items()} if isinstance(r, Mapping)
                   else [_encode(v) for v in r] for r in rows]
        result = self._call("write", table, branch, rows=encoded,
                            row_kinds=list(row_kinds) if row_kinds is not None else None, overwrite=overwrite)
        return result["snapshot_id"]

    def compact(self, table: str, full: bool = True, branch: str | None = None) -> int | None:
        """Compact every bucket (unaware-bucket append tables: Paimon's compaction coordinator)."""
        return self._call("compact", table, branch, full=full)["snapshot_id"]

    def delete_positions(self, table: str, positions: Mapping[str, Sequence[int]],
                         branch: str | None = None) -> int | None:
        """Mark rows of an append table with deletion vectors deleted through Paimon's own DV
        maintainers (as its Spark DELETE does): ``positions`` maps a live data file's name to row
        positions in it. One snapshot; returns its id."""
        return self._call("delete_positions", table, branch,
                          positions={k: [int(p) for p in v] for k, v in positions.items()})["snapshot_id"]

    def expire_snapshots(self, table: str, retain_max: int | None = None, retain_min: int | None = None,
                         older_than: int | dt.datetime | None = None, max_deletes: int | None = None,
                         branch: str | None = None) -> dict[str, Any]:
        """Paimon's ``ExpireSnapshotsImpl`` (``table.newExpireSnapshots()``).

        Args:
            older_than: epoch milliseconds or a datetime: snapshots older than this may expire
                (Paimon's ``snapshot.time-retained`` as ``now - older_than``); None = by count only.

        Returns:
            ``{"expired": n, "snapshots": [...]}`` (the snapshots left).
        """
        if isinstance(older_than, dt.datetime):
            older_than = int(older_than.timestamp() * 1000)
        return self._call("expire_snapshots", table, branch, retain_max=retain_max, retain_min=retain_min,
                          older_than_ms=older_than, max_deletes=max_deletes)

    def create_tag(self, table: str, tag: str, snapshot_id: int | None = None,
                   branch: str | None = None) -> dict[str, int]:
        """Tag a snapshot (default the latest); returns all tags."""
        return self._call("create_tag", table, branch, tag=tag, snapshot_id=snapshot_id)

    def delete_tag(self, table: str, tag: str, branch: str | None = None) -> dict[str, int]:
        return self._call("delete_tag", table, branch, tag=tag)

    def rollback_to(self, table: str, version: int | str, branch: str | None = None) -> list[dict[str, Any]]:
        """Paimon's own (destructive) rollback to a snapshot id or tag; returns the snapshots left."""
        key = "tag" if isinstance(version, str) else "snapshot_id"
        return self._call("rollback_to", table, branch, **{key: version})

    def create_branch(self, table: str, name: str, from_tag: str | None = None) -> list[str]:
        return self._call("create_branch", table, new_branch=name, from_tag=from_tag)

    def fast_forward(self, table: str, from_branch: str) -> list[dict[str, Any]]:
        return self._call("fast_forward", table, from_branch=from_branch)
