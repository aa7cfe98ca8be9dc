"""How rows with equal keys merge, as a table's options say: :class:`MergeConfig`.

Read from Paimon's table options (``merge-engine``, ``sequence.field``, ``fields.<f>.*``,
``ignore-delete``, ...) by :meth:`MergeConfig.from_options`, which validates them; the merge
engines (:mod:`engine.merge.engines`, :mod:`engine.merge.aggregates`) and the merge itself
(:mod:`engine.merge.functions`) take it. The aggregate functions the ``aggregation`` engine knows,
by their canonical names, are here too, since the options name them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from engine.errors import InvalidArgumentError
from engine.options import (
    AGGREGATION_REMOVE_ON_DELETE,
    FIELDS_DEFAULT_AGGREGATE_FUNCTION,
    FIELDS_DISTINCT,
    FIELDS_IGNORE_RETRACT,
    IGNORE_DELETE,
    IGNORE_DELETE_ALIASES,
    PARTIAL_UPDATE_REMOVE_ON_DELETE,
    PARTIAL_UPDATE_REMOVE_ON_SEQUENCE_GROUP,
    SEQUENCE_FIELD_SORT_ORDER,
    CoreOptions,
)

ENGINES = ("deduplicate", "partial-update", "aggregation", "first-row")

DEFAULT_FUNCTION = "last_non_null_value"
SUPPORTED_FUNCTIONS = frozenset(
    {
        "sum",
        "min",
        "max",
        "count",
        "product",
        "last_value",
        "last_non_null_value",
        "first_value",
        "first_non_null_value",
        "listagg",
        "bool_and",
        "bool_or",
    }
)
RETRACTABLE_FUNCTIONS = frozenset({"sum", "product", "count", "last_value", "last_non_null_value"})
#: Functions whose result does not depend on the order of their inputs (Paimon's ``agg`` and
#: ``aggReversed`` agree): the ones a partial-update sequence group can aggregate.
ORDER_FREE_FUNCTIONS = frozenset({"sum", "product", "min", "max", "bool_and", "bool_or"})
_ALIASES = {"first_not_null_value": "first_non_null_value"}


def normalize_function(name: str, column: str | None = None) -> str:
    """The canonical name of an aggregate function, or InvalidArgumentError if unsupported."""
    canonical = name.strip().lower()
    canonical = _ALIASES.get(canonical, canonical)
    if canonical not in SUPPORTED_FUNCTIONS:
        where = f" for column '{column}'" if column else ""
        raise InvalidArgumentError(
            f"Unsupported aggregate function '{name}'{where}: use one of "
            f"{', '.join(sorted(SUPPORTED_FUNCTIONS))}."
        )
    return canonical


@dataclass(frozen=True)
class MergeConfig:
    """How rows with equal keys merge; built from Paimon's table options by :meth:`from_options`.

    Attributes:
        engine: ``deduplicate`` | ``partial-update`` | ``aggregation`` | ``first-row``.
        ignore_delete: drop ``-U``/``-D`` input rows before merging (``ignore-delete``).
        partial_update_remove_record_on_delete: a ``-D`` removes the whole partial-update row.
        aggregation_remove_record_on_delete: a ``-D`` removes the aggregated row.
        sequence_fields: order rows by these user columns, then ``_SEQUENCE_NUMBER``.
        field_aggregates: column -> aggregate function (aggregation engine).
        field_ignore_retract: column -> skip retract rows for that column's aggregate.
        listagg_delimiter: column -> ``listagg`` delimiter (default ``,``).
        default_aggregate_function: function of non-key columns without their own
            (``fields.default-aggregate-function``; Paimon's default ``last_non_null_value``).
        sequence_descending: ``sequence.field.sort-order`` = descending.
        sequence_groups: partial-update ``fields.<seq cols>.sequence-group`` = members, as
            (sequence columns, member columns) pairs: each group's columns change together, only
            by a row whose sequence columns are not all null and not lower than the group's.
    """

    engine: str = "deduplicate"
    ignore_delete: bool = False
    partial_update_remove_record_on_delete: bool = False
    aggregation_remove_record_on_delete: bool = False
    sequence_fields: tuple[str, ...] = ()
    field_aggregates: Mapping[str, str] = field(default_factory=dict)
    field_ignore_retract: Mapping[str, bool] = field(default_factory=dict)
    listagg_delimiter: Mapping[str, str] = field(default_factory=dict)
    default_aggregate_function: str = DEFAULT_FUNCTION
    sequence_descending: bool = False
    sequence_groups: tuple[tuple[tuple[str, ...], tuple[str, ...]], ...] = ()

    def __post_init__(self) -> None:
        if self.engine not in ENGINES:
            raise InvalidArgumentError(
                f"Unknown merge engine '{self.engine}': use one of {', '.join(ENGINES)}."
            )
        # Plain dicts and tuples keep the config picklable for executors.
        object.__setattr__(self, "sequence_fields", tuple(self.sequence_fields))
        object.__setattr__(
            self,
            "field_aggregates",
            {name: normalize_function(f, name) for name, f in dict(self.field_aggregates).items()},
        )
        object.__setattr__(self, "field_ignore_retract", dict(self.field_ignore_retract))
        object.__setattr__(self, "listagg_delimiter", dict(self.listagg_delimiter))
        object.__setattr__(
            self, "default_aggregate_function", normalize_function(self.default_aggregate_function)
        )
        if self.engine == "first-row" and self.sequence_fields:
            raise InvalidArgumentError(
                "The first-row merge engine does not support 'sequence.field': remove the option."
            )
        groups = tuple((tuple(seq), tuple(members)) for seq, members in self.sequence_groups)
        object.__setattr__(self, "sequence_groups", groups)
        owner: dict[str, str] = {}
        for seq, members in groups:
            key = f"fields.{','.join(seq)}.sequence-group"
            for column in (*seq, *members):
                if column in owner and owner[column] != key:
                    raise InvalidArgumentError(
                        f"Column '{column}' is defined repeatedly by multiple sequence groups: "
                        f"'{owner[column]}' and '{key}'."
                    )
                owner[column] = key
        sequences = set(self.group_sequence_fields)
        for column, function in self.field_aggregates.items() if self.engine == "partial-update" else ():
            if column not in owner:
                raise InvalidArgumentError(
                    f"Must use sequence group for aggregation functions but not found for field "
                    f"{column}: put it in a 'fields.<seq>.sequence-group' or remove "
                    f"'fields.{column}.aggregate-function'."
                )
            if column in sequences:
                raise InvalidArgumentError(
                    f"Sequence column '{column}' cannot be aggregated: "
                    f"remove 'fields.{column}.aggregate-function'."
                )
            if function not in ORDER_FREE_FUNCTIONS:
                raise InvalidArgumentError(
                    f"Aggregate function '{function}' inside a partial-update sequence group is not "
                    f"supported by dyntable (only {', '.join(sorted(ORDER_FREE_FUNCTIONS))}): change "
                    f"'fields.{column}.aggregate-function'."
                )
        if groups and self.partial_update_remove_record_on_delete:
            raise InvalidArgumentError(
                "sequence-group and 'partial-update.remove-record-on-delete' have conflicting behavior "
                "so should not be enabled at the same time."
            )

    @property
    def group_sequence_fields(self) -> tuple[str, ...]:
        """The sequence columns of every sequence group (merges and projected reads need them)."""
        return tuple(c for seq, _ in self.sequence_groups for c in seq)

    @staticmethod
    def from_options(options: Mapping[str, str], key_columns: Sequence[str]) -> MergeConfig:
        """Read Paimon's merge options (``merge-engine``, ``ignore-delete``, ``sequence.field``,
        ``fields.<f>.aggregate-function`` ...).

        Args:
            options: the table options.
            key_columns: the primary key (their aggregate functions are ignored, as in Paimon).

        Raises:
            InvalidArgumentError: an unknown engine or function, a bad boolean, or an option
                dyntable does not support (aggregation inside sequence groups, listagg distinct ...).
        """
        opts = CoreOptions(options)
        engine = opts.merge_engine
        ignore_delete = next(
            (opts.get(o) for o in (IGNORE_DELETE, *IGNORE_DELETE_ALIASES) if o.key in opts), False
        )
        keys = set(key_columns)
        aggregates: dict[str, str] = {}
        ignore_retract: dict[str, bool] = {}
        delimiters: dict[str, str] = {}
        default_function = options.get(FIELDS_DEFAULT_AGGREGATE_FUNCTION.key, DEFAULT_FUNCTION)
        for key, value in options.items():
            if not key.startswith("fields.") or key == FIELDS_DEFAULT_AGGREGATE_FUNCTION.key:
                continue
            rest = key[len("fields.") :]
            # Function names stay raw: normalize_function names what dyntable lacks (e.g. collect)
            # more clearly than the option's list of choices would.
            if rest.endswith(".aggregate-function"):
                column = rest[: -len(".aggregate-function")]
                if column not in keys:
                    aggregates[column] = value
            elif rest.endswith(".ignore-retract"):
                ignore_retract[rest[: -len(".ignore-retract")]] = opts.get(FIELDS_IGNORE_RETRACT, key)
            elif rest.endswith(".list-agg-delimiter"):
                delimiters[rest[: -len(".list-agg-delimiter")]] = value
            elif rest.endswith(".distinct") and opts.get(FIELDS_DISTINCT, key):
                raise InvalidArgumentError(f"'{key}' = true is not supported by dyntable; remove it.")
        if opts.get(PARTIAL_UPDATE_REMOVE_ON_SEQUENCE_GROUP):
            raise InvalidArgumentError(
                f"'{PARTIAL_UPDATE_REMOVE_ON_SEQUENCE_GROUP.key}' is not supported by dyntable; remove the "
                "option."
            )
        if engine == "partial-update" and normalize_function(default_function) != DEFAULT_FUNCTION:
            raise InvalidArgumentError(
                "'fields.default-aggregate-function' on a partial-update table aggregates inside "
                "sequence groups, which dyntable does not support: remove the option."
            )
        return MergeConfig(
            engine=engine,
            ignore_delete=ignore_delete,
            partial_update_remove_record_on_delete=opts.get(PARTIAL_UPDATE_REMOVE_ON_DELETE),
            aggregation_remove_record_on_delete=opts.get(AGGREGATION_REMOVE_ON_DELETE),
            sequence_fields=opts.sequence_fields,
            field_aggregates=aggregates if engine in ("aggregation", "partial-update") else {},
            field_ignore_retract=ignore_retract,
            listagg_delimiter=delimiters,
            default_aggregate_function=default_function,
            sequence_descending=opts.get(SEQUENCE_FIELD_SORT_ORDER) == "descending",
            # As in Paimon, only partial-update reads sequence groups.
            sequence_groups=tuple(opts.sequence_groups().items()) if engine == "partial-update" else (),
        )
