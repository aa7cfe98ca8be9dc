"""Run by tests/integration/test_install.py inside a fresh install: a plain SparkSession, no SqlSession.

Nothing registers the ``dyntable`` format here: Spark must find it through the installed package
(its top-level ``pyspark_dyntable`` module). Prints one JSON line: where ``engine`` was imported
from, the rows read back, and the row count after an append through the same format.
"""

import json
import sys

import pyarrow as pa
from pyspark.sql import SparkSession

import engine
from engine import open_catalog

warehouse = sys.argv[1]
catalog = open_catalog(warehouse)
catalog.create_database("db", ignore_if_exists=True)
table = catalog.create_table("db.t", pa.schema([("id", pa.int64()), ("v", pa.string())]), primary_keys=["id"])
table.write_arrow(pa.table({"id": [1, 2], "v": ["a", "b"]}))

spark = SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false").getOrCreate()
spark.sparkContext.setLogLevel("ERROR")


def read():
    return spark.read.format("dyntable").option("warehouse", warehouse).option("table", "db.t").load()


rows = sorted(tuple(r) for r in read().collect())
appended = spark.createDataFrame([(3, "c")], "id BIGINT, v STRING")
appended.write.format("dyntable").option("warehouse", warehouse).option("table", "db.t").mode("append").save()
after = read().count()
spark.stop()
print(json.dumps({"engine": engine.__file__, "rows": rows, "after": after}))
