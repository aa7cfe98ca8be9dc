"""A PySpark job as its users write one, run by tests/integration/test_pyspark_job.py in a child
process: a plain ``SparkSession.builder`` (no dyntable helper), the interpreter of a virtual
environment that was never activated, no ``PYSPARK_PYTHON``.

It writes multi-partition DataFrames twice into the README's default-bucket primary-key table,
reads back, runs a CTAS with ``current_timestamp()`` and streams the table. Prints one JSON line
with what each step saw (the test compares it with plain Spark's rows, computed here too).
"""

import json
import sys

from pyspark.sql import SparkSession

from sqlext import SqlSession

warehouse, master = sys.argv[1], sys.argv[2]
spark = (SparkSession.builder.master(master).appName("pyspark-job")
         .config("spark.ui.enabled", "false").config("spark.sql.shuffle.partitions", "4").getOrCreate())
spark.sparkContext.setLogLevel("ERROR")
sql = SqlSession(spark, warehouse=warehouse)
sql.sql("CREATE TABLE t (id BIGINT, v STRING, PRIMARY KEY (id) NOT ENFORCED)")


def write(df):
    (df.write.format("dyntable").option("warehouse", warehouse).option("table", "default.t")
     .mode("append").save())


def read():
    return spark.read.format("dyntable").option("warehouse", warehouse).option("table", "default.t").load()


first = spark.range(0, 50_000).repartition(4).selectExpr("id", "concat('first-', id) v")
second = spark.range(25_000, 75_000).repartition(4).selectExpr("id", "concat('second-', id) v")
write(first)
write(second)
expected = first.join(second.select("id"), "id", "left_anti").union(second)
out = {
    "partitions": [first.rdd.getNumPartitions(), second.rdd.getNumPartitions()],
    "rows": read().count(),
    "distinct_ids": read().select("id").distinct().count(),
    "missing": expected.exceptAll(read()).count(),
    "extra": read().exceptAll(expected).count(),
    "expected_rows": expected.count(),
}
sql.sql("CREATE TABLE loads AS SELECT id, v, current_timestamp() AS loaded_at FROM t WHERE id < 10")
loads = sql.sql("SELECT count(*) AS n, count(DISTINCT loaded_at) AS stamps, "
                "min(loaded_at) IS NOT NULL AS set FROM loads").collect()[0]
out["ctas"] = {"rows": loads["n"], "stamps": loads["stamps"], "set": bool(loads["set"])}
query = (spark.readStream.format("dyntable").option("warehouse", warehouse)
         .option("table", "default.t").load().writeStream.format("memory").queryName("streamed")
         .trigger(availableNow=True).start())
query.awaitTermination(600)
streamed = spark.table("streamed")
out["streamed"] = {"rows": streamed.count(), "missing": expected.exceptAll(streamed).count()}
spark.stop()
print("JOB " + json.dumps(out))
