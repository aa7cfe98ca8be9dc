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
from collections.abc import Callable
from typing import Any

from sqlext.source.dynamic import PREFIX
from sqlext.source.requests import JOB_PARALLELISM, SESSION_CONF
from sqlext.source.write_job import job_parallelism

NAME = "dyntable"
_FLAG = "_dyntable_format"  # set on a reader/writer whose format() named dyntable
_INSTALLED = "_dyntable_session_conf"


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


def _wrap_terminal(cls: type, method: str, format_position: int | None, *, writes: bool) -> None:
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
        return original(self, *args, **kwargs)

    setattr(cls, method, terminal)


def install() -> None:
    """Wrap pyspark's readers and writers once per process (idempotent)."""
    from pyspark.sql.readwriter import DataFrameReader, DataFrameWriter
    from pyspark.sql.streaming.readwriter import DataStreamReader, DataStreamWriter

    if getattr(DataFrameReader, _INSTALLED, False):
        return
    for cls in (DataFrameReader, DataFrameWriter, DataStreamReader, DataStreamWriter):
        _wrap_format(cls)
    _wrap_terminal(DataFrameReader, "load", 1, writes=False)  # load(path, format, schema, **options)
    _wrap_terminal(DataFrameWriter, "save", 1, writes=True)  # save(path, format, mode, partitionBy, ...)
    _wrap_terminal(DataStreamReader, "load", 1, writes=False)
    _wrap_terminal(DataStreamWriter, "start", 1, writes=True)  # start(path, format, ...)
    _wrap_terminal(DataStreamWriter, "toTable", 1, writes=True)  # toTable(tableName, format, ...)
    DataFrameReader._dyntable_session_conf = True  # type: ignore[attr-defined]
