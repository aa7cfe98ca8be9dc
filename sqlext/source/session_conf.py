"""A session's ``spark.paimon.*`` keys reach DataFrame reads and writes of ``format("dyntable")``.

Paimon's Spark connector reads its dynamic options (``SET spark.paimon.scan.snapshot-id = 1``,
``spark.paimon.<catalog>.<db>.<table>.<option>``) from the session's SQL configuration when it
opens a table. A Python data source cannot: Spark hands it the reader's or writer's options and
nothing else (measured on pyspark 4: its planner workers receive no session configuration, and
the JVM copies session keys into a source's options only for sources it knows as
``SessionConfigSupport``, which Python sources are not). So the process that builds the DataFrame
carries them: :func:`install` (run by ``sqlext.spark.register``, hence by ``SqlSession`` and
``build_spark``) makes the last call of a ``dyntable`` reader or writer (``load``, ``save``,
``start``, ``toTable``) add one option, ``session-conf``, holding the session's ``spark.paimon.*``
keys as JSON (and a writer's ``job-parallelism``, Paimon's default number of dynamic-bucket
assigners). ``ReadRequest`` / ``WriteRequest.from_options`` resolve them for the table read or
written (``sqlext.source.requests.session_dynamic``), under the explicit options — the same
resolution SQL statements get, since ``SqlSession`` reads through the same source with the same
option.

Only calls with format ``dyntable`` are touched; the wrapped methods keep their signatures and
return values. A session started without ``register`` (Spark's own discovery of the format)
reads and writes with the explicit options only.
"""

from __future__ import annotations

import functools
import json
import uuid
from collections.abc import Callable
from typing import Any

from engine import NoSuchTableError
from sqlext.source.datasource import load_table
from sqlext.source.dynamic import PREFIX
from sqlext.source.requests import (
    COMMIT_USER,
    COMPACTION_BY_DRIVER,
    JOB_PARALLELISM,
    SESSION_CONF,
    WriteRequest,
)
from sqlext.source.spark_compaction import spark_runner
from sqlext.source.write_job import job_parallelism

NAME = "dyntable"
_FLAG = "_dyntable_format"  # set on a reader/writer whose format() named dyntable
_INSTALLED = "_dyntable_session_conf"
_OPTIONS = "_dyntable_options"  # a writer's options, as given (see _wrap_options)
_SAVE_PARAMETERS = ("path", "format", "mode", "partitionBy")


def to_str(value: Any) -> str:
    """An option value as pyspark passes it to the JVM (booleans lower-case)."""
    return str(value).lower() if isinstance(value, bool) else str(value)


def session_conf(spark: Any) -> dict[str, str]:
    """The session's ``spark.paimon.*`` keys (empty when the session cannot list its settings)."""
    try:
        every = spark.conf.getAll
    except Exception:  # noqa: BLE001 - a session object without a readable configuration
        return {}
    return {k: str(v) for k, v in dict(every).items() if k.startswith(PREFIX)}


def session_conf_option(spark: Any) -> dict[str, str]:
    """The ``session-conf`` option for the session's keys (no option when there are none)."""
    conf = session_conf(spark)
    return {SESSION_CONF: json.dumps(conf, sort_keys=True)} if conf else {}


def _named(source: object) -> bool:
    return isinstance(source, str) and source.strip().lower() == NAME


def _wrap_format(cls: Any) -> None:
    original: Callable[..., Any] = cls.format

    @functools.wraps(original)
    def format(self: Any, source: str) -> Any:  # noqa: A001 - the method's own name
        setattr(self, _FLAG, _named(source))
        return original(self, source)

    cls.format = format


def _wrap_options(cls: Any) -> None:
    """Remember a writer's options on the Python object too (pyspark keeps them in the JVM only),
    so the driver can open the table the write goes to (:func:`_save_compacting_in_driver`)."""
    original_option: Callable[..., Any] = cls.option
    original_options: Callable[..., Any] = cls.options

    @functools.wraps(original_option)
    def option(self: Any, key: str, value: Any) -> Any:
        self.__dict__.setdefault(_OPTIONS, {})[str(key)] = to_str(value)
        return original_option(self, key, value)

    @functools.wraps(original_options)
    def options(self: Any, **given: Any) -> Any:
        self.__dict__.setdefault(_OPTIONS, {}).update({str(k): to_str(v) for k, v in given.items()})
        return original_options(self, **given)

    cls.option = option
    cls.options = options


def _wrap_terminal(cls: type, method: str, format_position: int | None, *, writes: bool,
                   compacts: bool = False) -> None:
    original: Callable[..., Any] = getattr(cls, method)

    @functools.wraps(original)
    def terminal(self: Any, *args: Any, **kwargs: Any) -> Any:
        given = kwargs.get("format")
        if given is None and format_position is not None and len(args) > format_position:
            given = args[format_position]
        if (_named(given) or (given is None and getattr(self, _FLAG, False))) and self._spark is not None:
            option = session_conf_option(self._spark)
            if writes:  # read when the job starts, so a later change of the settings is followed
                option[JOB_PARALLELISM] = str(job_parallelism(self._spark))
            if option:
                self.options(**option)
            if compacts:
                return _save_compacting_in_driver(self, original, args, kwargs)
        return original(self, *args, **kwargs)

    setattr(cls, method, terminal)


def _save_compacting_in_driver(writer: Any, save: Callable[..., Any], args: tuple[Any, ...],
                               kwargs: dict[str, Any]) -> Any:
    """``save`` with the post-commit compaction run here, as one Spark task per bucket, instead of
    in the Python worker that commits the job (one process, however large the cluster)."""
    options = dict(writer.__dict__.get(_OPTIONS, {}))
    path = kwargs.get("path", args[0] if args else None)
    if path is not None:
        options["path"] = str(path)
    options.update({k: to_str(v) for k, v in kwargs.items() if k not in _SAVE_PARAMETERS})
    try:
        request = WriteRequest.from_options(options, overwrite=False)
        before = _latest_snapshot_id(request)
    except Exception:  # noqa: BLE001 - the job itself reports bad options; compacting is its commit's
        return save(writer, *args, **kwargs)
    user = request.commit_user or str(uuid.uuid4())
    writer.options(**{COMMIT_USER: user, COMPACTION_BY_DRIVER: "true"})
    result = save(writer, *args, **kwargs)
    table = load_table(request)
    commit = table.new_write_builder(commit_user=user).new_commit().with_identifier(request.commit_identifier)
    commit.with_compaction_runner(spark_runner(writer._spark)).compact_deferred(before)  # never raises
    return result


def _latest_snapshot_id(request: WriteRequest) -> int | None:
    try:
        return load_table(request).store.snapshots.latest_id()
    except NoSuchTableError:
        return None  # the write creates it


def install() -> None:
    """Wrap pyspark's readers and writers once per process (idempotent)."""
    from pyspark.sql.readwriter import DataFrameReader, DataFrameWriter
    from pyspark.sql.streaming.readwriter import DataStreamReader, DataStreamWriter

    if getattr(DataFrameReader, _INSTALLED, False):
        return
    for cls in (DataFrameReader, DataFrameWriter, DataStreamReader, DataStreamWriter):
        _wrap_format(cls)
    _wrap_options(DataFrameWriter)
    _wrap_terminal(DataFrameReader, "load", 1, writes=False)  # load(path, format, schema, **options)
    # save(path, format, mode, partitionBy, **options)
    _wrap_terminal(DataFrameWriter, "save", 1, writes=True, compacts=True)
    _wrap_terminal(DataStreamReader, "load", 1, writes=False)
    _wrap_terminal(DataStreamWriter, "start", 1, writes=True)  # start(path, format, ...)
    _wrap_terminal(DataStreamWriter, "toTable", 1, writes=True)  # toTable(tableName, format, ...)
    DataFrameReader._dyntable_session_conf = True  # type: ignore[attr-defined]
