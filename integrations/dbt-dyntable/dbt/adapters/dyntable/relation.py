"""A relation as dbt sees it on dyntable-server: dbt-spark's, knowing whether it is a dyntable table."""

from dataclasses import dataclass

from dbt.adapters.spark.relation import SparkRelation


@dataclass(frozen=True, eq=False, repr=False)
class DyntableRelation(SparkRelation):
    # Set from SHOW TABLE EXTENDED's ``Provider: dyntable``: a managed table of the warehouse (not
    # one of Spark's own ``USING parquet`` tables), which the merge and snapshot paths require.
    is_dyntable: bool | None = None
