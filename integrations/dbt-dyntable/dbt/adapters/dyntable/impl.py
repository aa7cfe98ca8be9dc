"""DyntableAdapter: dbt-spark's adapter whose relations know they are dyntable tables."""

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from dbt.adapters.base import BaseRelation
from dbt.adapters.contracts.relation import RelationConfig, RelationType
from dbt.adapters.dyntable.connections import DyntableConnectionManager
from dbt.adapters.dyntable.relation import DyntableRelation
from dbt.adapters.spark.impl import SparkAdapter, SparkConfig

if TYPE_CHECKING:
    import agate

# Formats whose tables dyntable manages (``USING dyntable`` / ``USING paimon``); any other
# file_format is one of Spark's own tables, passed through by the server as dbt-spark would run it.
DYNTABLE_FORMATS = ("dyntable", "paimon")


@dataclass
class DyntableConfig(SparkConfig):
    file_format: str = "dyntable"


class DyntableAdapter(SparkAdapter):
    Relation = DyntableRelation  # type: ignore[assignment]
    ConnectionManager = DyntableConnectionManager
    AdapterSpecificConfigs = DyntableConfig

    def _build_spark_relation_list(
        self,
        row_list: "agate.Table",
        relation_info_func: Callable[["agate.Row"], SparkAdapter.RelationInfo],
    ) -> list[BaseRelation]:
        relations: list[BaseRelation] = []
        for row in row_list:
            schema, name, information = relation_info_func(row)
            is_view = "Type: VIEW" in information
            relations.append(
                self.Relation.create(
                    schema=schema,
                    identifier=name,
                    type=RelationType.View if is_view else RelationType.Table,
                    information=information,
                    is_delta="Provider: delta" in information,
                    is_iceberg="Provider: iceberg" in information,
                    is_hudi="Provider: hudi" in information,
                    is_dyntable=any(f"Provider: {f}" in information for f in DYNTABLE_FORMATS),
                )
            )
        return relations

    @classmethod
    def _get_adapter_specific_run_info(cls, config: RelationConfig) -> dict[str, Any]:
        file_format: str | None = None
        if config is not None and hasattr(config, "_extra"):
            file_format = config._extra.get("file_format")
        return {"adapter_type": "dyntable", "table_format": file_format or "dyntable"}
