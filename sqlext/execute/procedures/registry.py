"""The CALL procedure registry: a name, typed parameters and a planner that says what the call does.

```
 CALL [catalog.]{sys|system}.name(args) / CALL name(args) / CALL system$name(args)
   ── resolve(name, qualifier) ──► Procedure ── bind_arguments(args) ──► {param: typed value}
   ── procedure.plan(ctx, values) ──► ProcedurePlan (plans.py; the runner carries it out)
   ── procedure.shaped(values, result) ──► pa.Table (cast to the procedure's output schema)
```
Invariants:
* names resolve case-insensitively; the qualifier is empty or ends in ``sys`` / ``system`` (any
  catalog before it), so Paimon and Databend scripts run unchanged;
* parameter names are Paimon's (``aliases`` adds the spelling of the other engine, e.g. Spark's
  ``consumerId`` next to Flink's ``consumer_id``) and match case-insensitively;
* arguments bind by position, then by name; every problem with them (missing, unknown, duplicated,
  NULL where required, a value that does not convert to the parameter's type) is a
  :class:`ProcedureArgumentError` (22023); an unknown procedure is a :class:`SqlAnalysisError`
  (42883) listing the close names;
* the registry is open: :func:`register` adds procedures (the package registers the built-in,
  tag, branch and maintenance ones); a name is registered once unless ``replace=True``;
* a procedure's function is a planner: it gets the narrow planner context and the bound values
  and returns a typed plan (``plans.py``), changing nothing; the runner carries the plan out, so
  procedures import neither Spark nor the session and are tested without a JVM.
"""

from __future__ import annotations

import datetime as dt
import difflib
import enum
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from typing import TYPE_CHECKING, Any, Protocol

import pyarrow as pa

from engine.errors import InvalidArgumentError, TimeBoundError
from sqlext.errors import ProcedureArgumentError, SqlAnalysisError, UnsupportedStatementError
from sqlext.parse.ast import CallArgument

if TYPE_CHECKING:
    from engine import Identifier, Table, TableSchema
    from sqlext.execute.procedures.plans import ProcedurePlan
    from sqlext.parse.names import TableName

UNDEFINED_FUNCTION = "42883"
SYSTEM_QUALIFIERS = ("sys", "system")


class ParamType(enum.StrEnum):
    """What a parameter's value is converted to before the procedure sees it."""

    STRING = "string"
    INT = "int"
    LONG = "long"
    BOOLEAN = "boolean"
    DOUBLE = "double"
    # A point in time, passed on as given (epoch ms, a TIMESTAMP or DATE literal, ISO or duration
    # text): the engine reads it with engine.time_bound, the one rule for every time argument.
    TIME = "time"
    DURATION = "duration"  # milliseconds (int); accepts '1 d', '2 h', 'PT1H' or a number of ms


_INT_RANGE = {ParamType.INT: (-(2**31), 2**31 - 1), ParamType.LONG: (-(2**63), 2**63 - 1)}


@dataclass(frozen=True, slots=True)
class Param:
    """One parameter: Paimon's name, its type, whether it must be given, and the default otherwise."""

    name: str
    type: ParamType = ParamType.STRING
    required: bool = False
    default: Any = None
    aliases: tuple[str, ...] = ()
    description: str = ""

    def names(self) -> tuple[str, ...]:
        return (self.name, *self.aliases)


# A procedure's function is a planner: (the planner context, the bound values) -> its plan. The
# context is typed loosely here: what naming a table needs is ``Tables``, and a procedure that reads
# more of the context (the catalog, the current database) annotates it as ``PlannerContext``.
ProcedureFunction = Callable[[Any, dict[str, Any]], "ProcedurePlan"]


class Tables(Protocol):
    """What naming a table argument needs: the session's (or a planner context's) name lookups."""

    def is_managed(self, name: TableName) -> bool: ...

    def identifier(self, name: TableName) -> Identifier: ...

    def table(self, name: TableName) -> Table: ...


@dataclass(frozen=True)
class Procedure:
    """A named procedure: parameters, output schema, and the planner saying what a call does."""

    name: str
    parameters: tuple[Param, ...]
    output: pa.Schema
    function: ProcedureFunction
    description: str = ""
    #: set for Paimon procedures of features dyntable lacks: binding any call raises this message
    #: as an UnsupportedStatementError (0A000), whatever the arguments.
    unsupported: str | None = None
    #: an output other than ``output`` chosen by the bound arguments (None: ``output``), for a
    #: dyntable argument asking for more than Paimon's columns (``expire_snapshots(detail => true)``)
    output_for: Callable[[dict[str, Any]], pa.Schema | None] | None = None
    _index: dict[str, Param] = field(default_factory=dict, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        for p in self.parameters:
            for n in p.names():
                key = n.lower()
                if key in self._index:
                    raise InvalidArgumentError(f"procedure '{self.name}' declares parameter '{n}' twice")
                self._index[key] = p
        seen_optional = False
        for p in self.parameters:
            if p.required and seen_optional:
                raise InvalidArgumentError(
                    f"procedure '{self.name}': required parameter '{p.name}' follows an optional one"
                )
            seen_optional = seen_optional or not p.required

    def param(self, name: str) -> Param | None:
        """The parameter called ``name`` (or one of its aliases), case-insensitively."""
        return self._index.get(name.lower())

    def signature(self) -> str:
        """``name(table, partitions?, ...)`` for messages."""
        return (
            f"{self.name}(" + ", ".join(p.name + ("" if p.required else "?") for p in self.parameters) + ")"
        )

    def plan(self, ctx: Any, values: dict[str, Any]) -> ProcedurePlan:
        """What a call with bound ``values`` does, planned over the context ``ctx`` (nothing runs)."""
        with self.argument_errors():
            return self.function(ctx, values)

    @contextmanager
    def argument_errors(self) -> Iterator[None]:
        """A time argument the engine cannot read (``TimeBoundError``, while planning or while the
        runner carries the plan out) is reported as the argument's error (22023), like every other
        bad argument."""
        try:
            yield
        except TimeBoundError as e:  # its message starts with the argument's name
            raise ProcedureArgumentError(f"{self.name}: argument {e}") from None

    def shaped(self, values: dict[str, Any], result: pa.Table) -> pa.Table:
        """A carried-out plan's result, cast to the output schema the bound ``values`` ask for."""
        output = (self.output_for(values) if self.output_for is not None else None) or self.output
        if not result.schema.equals(output, check_metadata=False):
            result = result.select(output.names).cast(output)
        return result


class ProcedureRegistry:
    """Procedures by lower-case name."""

    def __init__(self) -> None:
        self._procedures: dict[str, Procedure] = {}

    def register(self, procedure: Procedure, *, replace: bool = False) -> Procedure:
        """Add a procedure; an existing name is an error unless ``replace``."""
        key = procedure.name.lower()
        if key in self._procedures and not replace:
            raise InvalidArgumentError(f"procedure '{procedure.name}' is already registered")
        self._procedures[key] = procedure
        return procedure

    def unregister(self, name: str) -> None:
        self._procedures.pop(name.lower(), None)

    def names(self) -> list[str]:
        return sorted(p.name for p in self._procedures.values())

    def get(self, name: str) -> Procedure | None:
        return self._procedures.get(name.lower())

    def resolve(self, name: str, qualifier: Sequence[str] = ()) -> Procedure:
        """The procedure a CALL names.

        Args:
            name: the procedure name as written (any case).
            qualifier: the parts before it: ``()``, ``('sys',)``, ``('system',)``, ``('cat', 'sys')``.

        Raises:
            SqlAnalysisError: (42883) the qualifier is not ``sys``/``system`` or no such procedure;
                the message lists the close names.
        """
        full = ".".join([*qualifier, name])
        if qualifier and qualifier[-1].lower() not in SYSTEM_QUALIFIERS:
            raise SqlAnalysisError(
                f"procedure '{full}' not found: procedures live in the 'sys' namespace "
                f"(CALL sys.{name}(...))",
                sqlstate=UNDEFINED_FUNCTION,
            )
        found = self.get(name)
        if found is None:
            close = difflib.get_close_matches(name.lower(), list(self._procedures), n=3, cutoff=0.6)
            hint = (
                f"; did you mean {', '.join(close)}?"
                if close
                else f"; known procedures: {', '.join(self.names())}"
            )
            raise SqlAnalysisError(f"procedure '{full}' not found{hint}", sqlstate=UNDEFINED_FUNCTION)
        return found


REGISTRY = ProcedureRegistry()


def register(procedure: Procedure, *, replace: bool = False) -> Procedure:
    """Register a procedure in the global registry (the one CALL uses)."""
    return REGISTRY.register(procedure, replace=replace)


def resolve(name: str, qualifier: Sequence[str] = ()) -> Procedure:
    """Resolve a CALL's procedure in the global registry (see :meth:`ProcedureRegistry.resolve`)."""
    return REGISTRY.resolve(name, qualifier)


# -- argument binding ---------------------------------------------------------------------------


def bind_arguments(procedure: Procedure, args: Sequence[CallArgument]) -> dict[str, Any]:
    """Bind CALL arguments to the procedure's parameters, converting each to its type.

    Args:
        procedure: the resolved procedure.
        args: positional arguments first, then ``name => value`` ones.

    Returns:
        ``{parameter name: value}`` for every parameter (defaults filled in).

    Raises:
        ProcedureArgumentError: too many positional arguments, a positional after a named one,
            an unknown or duplicated name, a missing/NULL required argument, or a value that
            does not convert to the parameter's type.
    """
    if procedure.unsupported is not None:
        raise UnsupportedStatementError(procedure.unsupported)
    given: dict[str, Any] = {}
    named_seen = False
    for i, arg in enumerate(args):
        if arg.name is None:
            if named_seen:
                raise ProcedureArgumentError(
                    f"{procedure.name}: positional argument {i + 1} follows a named argument; "
                    "put positional arguments first"
                )
            if i >= len(procedure.parameters):
                raise ProcedureArgumentError(
                    f"{procedure.name} takes at most {len(procedure.parameters)} argument(s), "
                    f"got {len(args)}: "
                    f"{procedure.signature()}"
                )
            param = procedure.parameters[i]
        else:
            named_seen = True
            found = procedure.param(arg.name)
            if found is None:
                raise ProcedureArgumentError(
                    f"{procedure.name} has no parameter '{arg.name}'; parameters: {procedure.signature()}"
                )
            param = found
        if param.name in given:
            raise ProcedureArgumentError(f"{procedure.name}: argument '{param.name}' is given twice")
        given[param.name] = arg.value
    values: dict[str, Any] = {}
    for param in procedure.parameters:
        raw = given.get(param.name)
        if raw is None:
            if param.required:
                state = "is NULL" if param.name in given else "is missing"
                raise ProcedureArgumentError(
                    f"{procedure.name}: required argument '{param.name}' {state}; {procedure.signature()}"
                )
            values[param.name] = param.default
            continue
        values[param.name] = coerce_argument(procedure.name, param, raw)
    return values


def coerce_argument(procedure: str, param: Param, value: Any) -> Any:
    """Convert one argument value to its parameter's type (strings to numbers/booleans and so on)."""
    try:
        return _coerce(param.type, value)
    except (ValueError, TypeError, InvalidOperation, InvalidArgumentError, OverflowError) as e:
        detail = f": {e}" if isinstance(e, InvalidArgumentError) else ""
        raise ProcedureArgumentError(
            f"{procedure}: argument '{param.name}' must be {_type_text(param.type)}, not {value!r}{detail}"
        ) from None


def _type_text(t: ParamType) -> str:
    return {
        ParamType.STRING: "a string",
        ParamType.INT: "an integer",
        ParamType.LONG: "an integer",
        ParamType.BOOLEAN: "true or false",
        ParamType.DOUBLE: "a number",
        ParamType.TIME: "a time ('yyyy-MM-dd HH:mm:ss', a duration such as '1 d', or epoch milliseconds)",
        ParamType.DURATION: "a duration (e.g. '1 d', '2 h')",
    }[t]


def _coerce(t: ParamType, value: Any) -> Any:  # noqa: C901 - one branch per type
    if t is ParamType.STRING:
        if isinstance(value, bool):
            return "true" if value else "false"
        if isinstance(value, str | int | Decimal):
            return str(value)
        if isinstance(value, float):
            return repr(value)
        raise TypeError(type(value).__name__)
    if t in (ParamType.INT, ParamType.LONG):
        if isinstance(value, bool) or isinstance(value, dt.date):
            raise TypeError(type(value).__name__)
        if isinstance(value, str):
            number = int(value.strip())
        elif isinstance(value, Decimal | float):
            if value != int(value):
                raise ValueError("not a whole number")
            number = int(value)
        else:
            number = int(value)
        lo, hi = _INT_RANGE[t]
        if not lo <= number <= hi:
            raise ValueError("out of range")
        return number
    if t is ParamType.BOOLEAN:
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.strip().lower() in ("true", "false"):
            return value.strip().lower() == "true"
        raise ValueError("not a boolean")
    if t is ParamType.DOUBLE:
        if isinstance(value, bool) or isinstance(value, dt.date):
            raise TypeError(type(value).__name__)
        return float(value.strip() if isinstance(value, str) else value)
    if t is ParamType.TIME:
        if isinstance(value, bool) or not isinstance(value, int | str | dt.date | Decimal):
            raise TypeError(type(value).__name__)
        if isinstance(value, Decimal):
            if value != int(value):
                raise ValueError("not a whole number of milliseconds")
            return int(value)
        return value
    if t is ParamType.DURATION:
        from engine.options import parse_duration

        if isinstance(value, bool):
            raise TypeError("bool")
        if isinstance(value, int):
            return value
        if isinstance(value, str):
            return parse_duration(value)
        raise TypeError(type(value).__name__)
    raise TypeError(t)  # pragma: no cover - every ParamType is handled above


# -- helpers for procedure functions ------------------------------------------------------------


def table_argument(session: Tables, text: str, param: str = "table") -> Table:
    """The managed table a ``table`` argument names (``db.t``, ``t``, ``db.t$branch_b``).

    Raises:
        ProcedureArgumentError: the text is not a table name, or names a system table.
        SqlAnalysisError: (42P01) no such managed table.
    """
    from sqlext.parse.names import TableName

    try:
        name = TableName.parse(text)
    except InvalidArgumentError as e:
        raise ProcedureArgumentError(f"argument '{param}': {e}") from None
    if name.system_table is not None:
        raise ProcedureArgumentError(f"argument '{param}': '{text}' is a system table; name the table itself")
    if not session.is_managed(name):
        raise SqlAnalysisError(
            f"argument '{param}': table '{session.identifier(name).base().full_name}' does not exist",
            sqlstate="42P01",
        )
    return session.table(name)


def parse_partitions(schema: TableSchema, text: str) -> list[dict[str, Any]]:
    """Paimon's ``partitions`` argument: ``k1=v1,k2=v2;k1=v3,...`` → typed partition specs.

    Raises:
        ProcedureArgumentError: the table is not partitioned, an entry is not ``key=value``, a key
            is not a partition column, or a value does not fit the column's type.
    """
    from engine import coerce_spec

    keys = schema.partition_keys
    if not keys:
        raise ProcedureArgumentError("argument 'partitions': the table is not partitioned")
    specs: list[dict[str, Any]] = []
    for part in text.split(";"):
        if not part.strip():
            continue
        spec: dict[str, Any] = {}
        for entry in part.split(","):
            key, eq, value = entry.partition("=")
            key, value = key.strip().strip("`"), value.strip()
            if not eq or not key:
                raise ProcedureArgumentError(
                    f"argument 'partitions': {entry.strip()!r} is not key=value; "
                    "write e.g. 'dt=2024-01-01,hr=1;dt=...'"
                )
            if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
                value = value[1:-1]
            column = next((k for k in keys if k.lower() == key.lower()), None)
            if column is None:
                raise ProcedureArgumentError(
                    f"argument 'partitions': '{key}' is not a partition column; "
                    f"partition columns: {list(keys)}"
                )
            if column in spec:
                raise ProcedureArgumentError(
                    f"argument 'partitions': '{column}' appears twice in {part.strip()!r}"
                )
            spec[column] = value
        try:
            specs.append(coerce_spec(schema, spec))
        except InvalidArgumentError as e:
            raise ProcedureArgumentError(f"argument 'partitions': {e}") from None
    if not specs:
        raise ProcedureArgumentError(
            "argument 'partitions' is empty; write e.g. 'dt=2024-01-01;dt=2024-01-02'"
        )
    return specs
