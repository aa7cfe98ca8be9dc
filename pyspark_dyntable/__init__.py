"""Spark's auto-registration hook: a top-level ``pyspark_<name>`` module defining ``DefaultSource``.

With the ``dyntable`` package installed, any Spark session (``spark-submit``, a JDBC/Thrift
session, a notebook) can use ``format("dyntable")`` without registering anything.
"""

from sqlext.source.format import DyntableDataSource as DefaultSource

__all__ = ["DefaultSource"]
