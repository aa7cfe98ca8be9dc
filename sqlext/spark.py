"""Building a SparkSession for dyntable and registering the data source on it.

Local sessions get settings measured to matter on small machines: few shuffle partitions,
no UI, a driver JIT capped at C1 (~35% faster start-up), Arrow for Python transfers. Python data
source filter pushdown stays off (Spark's default): see ``sqlext.datasource`` for why.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping

from pyspark.sql import SparkSession

LOCAL_DEFAULTS = {
    "spark.sql.shuffle.partitions": "4",
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.driver.extraJavaOptions": "-XX:TieredStopAtLevel=1 -Xss4m",
    "spark.sql.execution.arrow.pyspark.enabled": "true",
    "spark.sql.session.timeZone": "UTC",
    "spark.sql.sources.partitionOverwriteMode": "static",
}


def build_spark(
    master: str = "local[*]", conf: Mapping[str, str] | None = None, app_name: str = "dyntable"
) -> SparkSession:
    """Get or create a SparkSession with the dyntable data source registered."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    builder = SparkSession.builder.appName(app_name).master(master)
    settings = dict(LOCAL_DEFAULTS) if master.startswith("local") else {}
    settings.update(conf or {})
    for key, value in settings.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel(settings.get("dyntable.log-level", "ERROR"))
    register(spark)
    return spark


def register(spark: SparkSession) -> None:
    """Register the ``dyntable`` format on a session (idempotent)."""
    from sqlext.datasource import DyntableDataSource

    spark.dataSource.register(DyntableDataSource)
