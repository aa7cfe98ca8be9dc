"""The profile of a dyntable target: dbt-spark's thrift credentials with dyntable-server's defaults."""

from dataclasses import dataclass

from dbt.adapters.spark.connections import (
    SparkConnectionManager,
    SparkConnectionMethod,
    SparkCredentials,
)


@dataclass
class DyntableCredentials(SparkCredentials):
    """``type: dyntable``: thrift on port 10000 unless the profile says otherwise.

    dbt-spark runs every statement asynchronously and sleeps ``poll_interval`` seconds (5 by default)
    between status requests, so each statement that is not done at the first request costs at least
    that. dyntable-server holds a status request until the statement finishes or a wait elapses
    (HiveServer2's long polling), so dbt need not sleep at all: the default here is 0. A profile may
    still set it.
    """

    method: SparkConnectionMethod = SparkConnectionMethod.THRIFT
    port: int = 10000
    poll_interval: int = 0

    @property
    def type(self) -> str:
        return "dyntable"


class DyntableConnectionManager(SparkConnectionManager):
    TYPE = "dyntable"
