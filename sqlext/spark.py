"""Building a SparkSession for dyntable and registering the data source on it.

Local sessions get settings measured to matter on small machines: few shuffle partitions,
no UI, Arrow for Python transfers. Spark's own warehouse directory is a scratch directory, never
the current directory. Python data source filter pushdown stays off (Spark's default): see
``sqlext.source.datasource`` for why.

The JVM's JIT: capping it at C1 (``-XX:TieredStopAtLevel=1``) makes the many short queries of a
test suite or a small script cheaper (less compilation at start-up), but leaves long queries on
code C1 compiled: ``SELECT sum(id % 7) FROM range(300000000)`` took 17-21 s with C1 against
1.5-2.3 s with the full JIT on the 2-core machine this was measured on. Short runs go the other
way: a Spark test file of two tests (start-up dominated) took 91-112 s with C1 and 136-178 s with
the full JIT while other jobs loaded the machine (alone, start-up took 10-23 s either way, within
noise). A user's job must never pay 10x, so the full JIT is the default and
the cap is an explicit choice: ``build_spark(fast_start=True)``, ``dyntable-sql --fast-start`` or
the environment variable ``DYNTABLE_FAST_START=1`` (which the test suite sets).

Python processes and the JVM: the driver's Python fetches results (and hands over local data)
through a socket the JVM opens for it, and a Python worker started on its own (a Python streaming
source's) connects back to the JVM; each authenticates with a shared secret. Spark's internal
``spark.python.authenticate.socketTimeout`` (15 s) bounds the JVM's wait for the driver's
connection and every Python-side connect-and-authenticate (read from ``$SPARK_AUTH_SOCKET_TIMEOUT``,
which the JVM sets for its workers and nobody sets for the driver). On a small machine under load
(load average 30 on 2 cores) that was too short and queries failed with ``CANNOT_OPEN_SOCKET ...
timed out``, so local sessions wait :data:`PYTHON_SOCKET_TIMEOUT_S` on all those sides: a longer
wait costs nothing when all is well, and a process that died is noticed by other means. No setting
reaches the JVM's own waits for workers (PySpark 4.3.0): 10 s for a worker started on its own to
connect back ("Python worker failed to connect back") and 10 s to read its secret, 60 s for one
PySpark's daemon forks.
"""

from __future__ import annotations

import os
import re
import sys
import tempfile
from collections.abc import Mapping

from pyspark.sql import SparkSession

#: Seconds a Python process and the JVM wait for each other's socket (see the module docstring).
PYTHON_SOCKET_TIMEOUT_S = 120
PYTHON_SOCKET_TIMEOUT_KEY = "spark.python.authenticate.socketTimeout"
PYTHON_SOCKET_TIMEOUT_ENV = "SPARK_AUTH_SOCKET_TIMEOUT"

LOCAL_DEFAULTS = {
    "spark.sql.shuffle.partitions": "4",
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.driver.extraJavaOptions": "-Xss4m",  # deep plans (long IN lists, wide unions) need the stack
    "spark.sql.execution.arrow.pyspark.enabled": "true",
    "spark.sql.session.timeZone": "UTC",
    "spark.sql.sources.partitionOverwriteMode": "static",
    PYTHON_SOCKET_TIMEOUT_KEY: f"{PYTHON_SOCKET_TIMEOUT_S}s",
}


FAST_START_ENV = "DYNTABLE_FAST_START"
FAST_START_JAVA_OPTIONS = "-XX:TieredStopAtLevel=1 -Xss4m"


def fast_start_requested(fast_start: bool | None = None) -> bool:
    """Whether a local session caps the JIT at C1: the argument if given, else ``$DYNTABLE_FAST_START``."""
    if fast_start is not None:
        return fast_start
    return os.environ.get(FAST_START_ENV, "").strip().lower() in ("1", "true", "yes", "on")


def build_spark(
    master: str = "local[*]",
    conf: Mapping[str, str] | None = None,
    app_name: str = "dyntable",
    *,
    fast_start: bool | None = None,
) -> SparkSession:
    """Get or create a SparkSession with the dyntable data source registered.

    Args:
        master: the Spark master; ``local*`` masters get :data:`LOCAL_DEFAULTS`.
        conf: Spark settings (they win over the defaults), plus ``dyntable.log-level``.
        app_name: the application name.
        fast_start: cap a local driver's JIT at C1 (short runs; long queries get ~10x slower);
            None reads ``$DYNTABLE_FAST_START``. A JVM that already runs keeps its settings.
    """
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    builder = SparkSession.builder.appName(app_name).master(master)
    settings = session_settings(master, conf, fast_start)
    driver_timeout = _seconds(settings.get(PYTHON_SOCKET_TIMEOUT_KEY))
    if driver_timeout is not None:  # the driver's Python reads it from the environment only
        os.environ.setdefault(PYTHON_SOCKET_TIMEOUT_ENV, str(driver_timeout))
    for key, value in settings.items():
        if not key.startswith("dyntable."):  # ours, read below; Spark would warn about it
            builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel(settings.get("dyntable.log-level", "ERROR"))
    register(spark)
    return spark


def session_settings(
    master: str, conf: Mapping[str, str] | None = None, fast_start: bool | None = None
) -> dict[str, str]:
    """The settings :func:`build_spark` gives a new session (see its arguments)."""
    settings = dict(LOCAL_DEFAULTS) if master.startswith("local") else {}
    if settings and fast_start_requested(fast_start):
        settings["spark.driver.extraJavaOptions"] = FAST_START_JAVA_OPTIONS
    settings["spark.sql.warehouse.dir"] = scratch_warehouse_dir()
    settings.update(conf or {})
    return settings


def _seconds(value: str | None) -> int | None:
    """Whole seconds of a Spark time setting in seconds (``120``, ``120s``, ``2min``, ``1h``);
    None for anything else (the environment is then left alone)."""
    match = re.fullmatch(r"\s*(\d+)\s*(s|sec|secs|m|min|mins|h)?\s*", value or "")
    if match is None:
        return None
    return int(match.group(1)) * {"m": 60, "min": 60, "mins": 60, "h": 3600}.get(match.group(2) or "s", 1)


def scratch_warehouse_dir() -> str:
    """Where Spark's own (in-memory, session-scoped) catalog keeps its default database.

    Spark creates that directory the first time anything consults its catalog, e.g. resolving a
    name that is not a dyntable table; its default, ``./spark-warehouse``, would litter whatever
    directory the user ran dyntable-sql from. Managed tables never live there, and what Spark's
    in-memory catalog holds ends with the session, so a per-user scratch directory fits: one
    stable place a user can find and clear, rather than a new directory per session that a killed
    session would leave behind in the temp directory.

    The files of Spark's own tables (``CREATE TABLE ... USING parquet``) do stay there after the
    session, and every session of the user on the machine shares the directory: a later or
    concurrent session creating a Spark table of the same name is refused by Spark
    (LOCATION_ALREADY_EXISTS). Runs that must not meet each other there (test runs, benchmarks)
    pass their own ``spark.sql.warehouse.dir``, which wins over this default.
    """
    user = os.getuid() if hasattr(os, "getuid") else os.getpid()
    return os.path.join(tempfile.gettempdir(), f"dyntable-spark-warehouse-{user}")


def register(spark: SparkSession) -> None:
    """Register the ``dyntable`` format on a session (idempotent), with workers that can run it
    (:func:`point_workers_at_this_python`), and make its DataFrame reads and writes carry the
    session's ``spark.paimon.*`` keys (``sqlext.source.session_conf``)."""
    from sqlext.source.format import DyntableDataSource
    from sqlext.source.session_conf import install

    point_workers_at_this_python(spark)
    spark.dataSource.register(DyntableDataSource)
    install()  # the session's spark.paimon.* keys and job parallelism reach DataFrame reads and writes


def point_workers_at_this_python(spark: SparkSession) -> str:
    """The Python the session's workers run; on a machine-local master, this interpreter when
    nobody chose one.

    Spark starts Python workers (the data source's planning, reads, writes and commits, and
    every Python UDF) with ``$PYSPARK_PYTHON``, else ``python3`` from the PATH, not the
    interpreter running the driver: a script run by a virtual environment's Python without
    activating it gets workers without the package (``No module named 'sqlext'``). When neither
    ``PYSPARK_PYTHON`` nor ``spark.pyspark.python`` is set and the master is ``local*`` (workers
    on this machine), the workers get ``sys.executable``, as :func:`build_spark` gives them; on
    a cluster the choice is the user's (the executors' paths differ), and a warning names it.
    """
    import logging

    sc = spark.sparkContext
    conf = sc.getConf()
    chosen = (os.environ.get("PYSPARK_PYTHON") or conf.get("spark.pyspark.python")
              or conf.get("spark.executorEnv.PYSPARK_PYTHON"))
    if chosen or sc.pythonExec != "python3":
        return str(chosen or sc.pythonExec)
    if (sc.master or "").startswith("local"):
        os.environ["PYSPARK_PYTHON"] = sys.executable  # later contexts of this process too
        sc.pythonExec = sys.executable
        return sys.executable
    logging.getLogger(__name__).warning(
        "Spark's Python workers will run 'python3' from the executors' PATH; it must have dyntable "
        "installed, or set PYSPARK_PYTHON (spark.pyspark.python) to a Python that has it "
        "(README: Running on a cluster)")
    return "python3"


def parse_conf(pairs: list[str]) -> tuple[dict[str, str], dict[str, str]]:
    """Split ``--conf KEY=VALUE`` pairs into Spark settings and session settings.

    Args:
        pairs: the raw ``KEY=VALUE`` strings.

    Returns:
        ``(spark_conf, session_conf)``: ``spark.*`` keys, and all others.

    Raises:
        ValueError: a pair has no ``=`` or an empty key.
    """
    spark_conf: dict[str, str] = {}
    session_conf: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        key = key.strip()
        if not sep or not key:
            raise ValueError(f"--conf expects KEY=VALUE, got {pair!r}")
        (spark_conf if key.startswith("spark.") else session_conf)[key] = value.strip()
    # Spark's own console progress bar would fight with ours over the same stderr line.
    spark_conf.setdefault("spark.ui.showConsoleProgress", "false")
    return spark_conf, session_conf
