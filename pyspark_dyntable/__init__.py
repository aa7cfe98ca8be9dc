"""Spark's auto-registration hook: a top-level ``pyspark_<name>`` module defining ``DefaultSource``.

With the ``dyntable`` package installed, any Spark session (``spark-submit``, a JDBC/Thrift
session, a notebook) can use ``format("dyntable")`` without registering anything: when a session
starts, Spark lists the top-level modules of its Python (``pkgutil.iter_modules``) and registers
the ``DefaultSource`` of every ``pyspark_*`` one. That listing sees directories and zip files on
``sys.path`` (a wheel install, a packed environment, ``--py-files dyntable.whl``) but not import
hooks, which is why ``pyproject.toml`` makes ``pip install -e .`` add the project directory with a
plain ``.pth`` (tests/integration/test_install.py checks each kind of install).
"""

from sqlext.source.format import DyntableDataSource as DefaultSource

__all__ = ["DefaultSource"]
