"""dbt-dyntable: dbt's adapter for dyntable-server, a plugin on dbt-spark (adapter type ``dyntable``).

dbt-spark's macros and materializations do the work; this plugin changes only what stands between
them and dyntable's tables: the default ``file_format`` (``dyntable``), which formats may merge and
be snapshotted, and how a listed relation is recognised as a dyntable table (``Provider: dyntable``
in SHOW TABLE EXTENDED's information).
"""

from dbt.adapters.base import AdapterPlugin
from dbt.adapters.dyntable.connections import DyntableConnectionManager, DyntableCredentials  # noqa: F401
from dbt.adapters.dyntable.impl import DyntableAdapter
from dbt.adapters.dyntable.relation import DyntableRelation  # noqa: F401
from dbt.include import dyntable

Plugin = AdapterPlugin(
    adapter=DyntableAdapter,  # type: ignore[arg-type]
    credentials=DyntableCredentials,
    include_path=dyntable.PACKAGE_PATH,
    dependencies=["spark"],
)
