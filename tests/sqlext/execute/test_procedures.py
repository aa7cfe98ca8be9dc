"""The CALL procedure registry and argument binding (no JVM: procedures here are fakes or metadata-only)."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine import open_catalog
from sqlext.errors import ProcedureArgumentError, SqlAnalysisError
from sqlext.execute import procedures as P
from sqlext.execute.planning import CallProcedure
from sqlext.execute.procedures import Param, ParamType, Procedure, ProcedureRegistry, bind_arguments
from sqlext.execute.procedures.plans import Answer
from sqlext.parse.ast import Call, CallArgument
from sqlext.parse.parser import parse_statement
from tests.sqlext.execute.fake_context import FakeContext, carry_out

OUT = pa.schema([("result", pa.bool_())])


def _echo(ctx, args):
    return Answer(pa.table({"result": [True]}))


def _registry():
    reg = ProcedureRegistry()
    reg.register(
        Procedure(
            "create_tag",
            (
                Param("table", required=True),
                Param("tag", required=True),
                Param("snapshot", ParamType.LONG),
                Param("time_retained", ParamType.DURATION),
            ),
            OUT,
            _echo,
        )
    )
    reg.register(Procedure("rollback", (Param("table", required=True), Param("version")), OUT, _echo))
    return reg


@pytest.fixture
def registry():
    return _registry()


def args(*positional, **named):
    return tuple(CallArgument(v) for v in positional) + tuple(CallArgument(v, k) for k, v in named.items())


# -- resolution ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "qualifier", [(), ("sys",), ("system",), ("SYS",), ("cat", "system"), ("paimon", "sys")]
)
def test_qualified_names_resolve_to_the_same_procedure(registry, qualifier):
    assert registry.resolve("Create_Tag", qualifier).name == "create_tag"


def test_every_call_spelling_parses_to_a_resolvable_procedure():
    for text in (
        "CALL sys.reset_consumer('t', 'c')",
        "CALL reset_consumer('t', 'c')",
        "CALL system.reset_consumer('t', 'c')",
        "CALL system$reset_consumer('t', 'c')",
        "CALL cat.sys.reset_consumer(table => 't', consumer_id => 'c')",
    ):
        node = parse_statement(text)
        assert isinstance(node, Call)
        assert P.resolve(node.name, node.qualifier).name == "reset_consumer"


def test_unknown_procedure_names_close_ones(registry):
    with pytest.raises(SqlAnalysisError) as info:
        registry.resolve("create_tags", ("sys",))
    assert info.value.sqlstate == "42883"
    assert "sys.create_tags" in str(info.value) and "create_tag" in str(info.value)
    with pytest.raises(SqlAnalysisError) as info:
        registry.resolve("zzz")
    assert "known procedures: create_tag, rollback" in str(info.value)
    with pytest.raises(SqlAnalysisError) as info:
        registry.resolve("rollback", ("mydb",))
    assert info.value.sqlstate == "42883" and "'sys'" in str(info.value)


def test_registry_is_open_and_guards_duplicates(registry):
    proc = Procedure(
        "expire_tags", (Param("table", required=True), Param("older_than", ParamType.TIME)), OUT, _echo
    )
    registry.register(proc)
    assert registry.get("EXPIRE_TAGS") is proc and "expire_tags" in registry.names()
    with pytest.raises(Exception, match="already registered"):
        registry.register(proc)
    registry.register(proc, replace=True)
    registry.unregister("expire_tags")
    assert registry.get("expire_tags") is None


def test_procedure_declarations_are_checked():
    with pytest.raises(Exception, match="twice"):
        Procedure("x", (Param("a"), Param("b", aliases=("A",))), OUT, _echo)
    with pytest.raises(Exception, match="follows an optional"):
        Procedure("x", (Param("a"), Param("b", required=True)), OUT, _echo)


def test_builtins_are_registered_with_paimon_parameter_names():
    compact = P.REGISTRY.get("compact")
    assert [p.name for p in compact.parameters][:3] == ["table", "partitions", "compact_strategy"]
    assert compact.param("where") is not None
    reset = P.REGISTRY.get("reset_consumer")
    assert reset.signature() == "reset_consumer(table, consumer_id, next_snapshot_id?)"
    assert reset.param("consumerId") is reset.param("consumer_id")


# -- binding ---------------------------------------------------------------------------------------


def test_positional_named_and_defaults(registry):
    proc = registry.get("create_tag")
    assert bind_arguments(proc, args("db.t", "t1")) == {
        "table": "db.t",
        "tag": "t1",
        "snapshot": None,
        "time_retained": None,
    }
    assert bind_arguments(proc, args("db.t", tag="t1", SNAPSHOT="12", time_retained="1 d")) == {
        "table": "db.t",
        "tag": "t1",
        "snapshot": 12,
        "time_retained": 86_400_000,
    }
    # NULL for an optional argument means its default
    assert bind_arguments(proc, args(table="t", tag="x", snapshot=None))["snapshot"] is None


@pytest.mark.parametrize(
    ("call_args", "words"),
    [
        (args(table="t"), "'tag' is missing"),
        (args(table="t", tag=None), "'tag' is NULL"),
        (args("t", "x", 1, "1 d", 5), "at most 4"),
        (args(table="t", tag="x", snap=1), "no parameter 'snap'"),
        (args("t", "x", table="u"), "given twice"),
        (args(table="t", tag="x", snapshot="abc"), "must be an integer"),
        (args(table="t", tag="x", snapshot=1.5), "must be an integer"),
        (args(table="t", tag="x", snapshot=True), "must be an integer"),
        (args(table="t", tag="x", snapshot=2**63), "must be an integer"),
        (args(table="t", tag="x", time_retained="soon"), "duration"),
        (args(table="t", tag=dt.date(2024, 1, 1)), "must be a string"),
    ],
)
def test_argument_errors(registry, call_args, words):
    with pytest.raises(ProcedureArgumentError) as info:
        bind_arguments(registry.get("create_tag"), call_args)
    assert info.value.sqlstate == "22023"
    assert words in str(info.value)


def test_positional_after_named_is_refused(registry):
    proc = registry.get("rollback")
    with pytest.raises(ProcedureArgumentError, match="follows a named"):
        bind_arguments(proc, (CallArgument("t", "table"), CallArgument("v")))


@pytest.mark.parametrize(
    ("type_", "value", "expected"),
    [
        (ParamType.INT, "42", 42),
        (ParamType.INT, Decimal("7"), 7),
        (ParamType.LONG, 2**40, 2**40),
        (ParamType.BOOLEAN, "TRUE", True),
        (ParamType.BOOLEAN, False, False),
        (ParamType.DOUBLE, Decimal("1.5"), 1.5),
        (ParamType.DOUBLE, "2e3", 2000.0),
        (ParamType.STRING, 12, "12"),
        (ParamType.STRING, True, "true"),
        # A time is passed on as given: the engine reads it (engine.time_bound), one rule everywhere.
        (ParamType.TIME, "2024-01-01 00:00:01", "2024-01-01 00:00:01"),
        (ParamType.TIME, "7 d", "7 d"),
        (ParamType.TIME, dt.datetime(2024, 1, 1), dt.datetime(2024, 1, 1)),
        (ParamType.TIME, dt.date(2024, 1, 1), dt.date(2024, 1, 1)),
        (ParamType.TIME, 1_678_883_047_356, 1_678_883_047_356),
        (ParamType.TIME, Decimal("1678883047356"), 1_678_883_047_356),
        (ParamType.DURATION, "2 h", 7_200_000),
    ],
)
def test_coercion(type_, value, expected):
    assert P.coerce_argument("p", Param("x", type_), value) == expected


@pytest.mark.parametrize(
    ("type_", "value"),
    [
        (ParamType.INT, 2**31),
        (ParamType.BOOLEAN, 1),
        (ParamType.BOOLEAN, "yes"),
        (ParamType.TIME, True),
        (ParamType.TIME, Decimal("1.5")),
        (ParamType.TIME, 1.5),
        (ParamType.DOUBLE, dt.date(2024, 1, 1)),
    ],
)
def test_coercion_errors(type_, value):
    with pytest.raises(ProcedureArgumentError):
        P.coerce_argument("p", Param("x", type_), value)


@settings(max_examples=60, deadline=None)
@given(st.integers(min_value=-(2**63), max_value=2**63 - 1))
def test_long_round_trips_from_text(n):
    assert P.coerce_argument("p", Param("x", ParamType.LONG), str(n)) == n


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.sampled_from(["table", "tag", "snapshot", "time_retained"]), min_size=2, max_size=4, unique=True
    ).filter(lambda names: {"table", "tag"} <= set(names))
)
def test_named_arguments_bind_in_any_order(names):
    registry = _registry()
    values = {"table": "db.t", "tag": "t1", "snapshot": 3, "time_retained": "1 h"}
    bound = bind_arguments(registry.get("create_tag"), tuple(CallArgument(values[n], n) for n in names))
    assert bound["table"] == "db.t" and bound["tag"] == "t1"
    assert bound["snapshot"] == (3 if "snapshot" in names else None)
    assert bound["time_retained"] == (3_600_000 if "time_retained" in names else None)


# -- helpers used by compact (metadata only) -------------------------------------------------------


def test_parse_partitions(tmp_path):
    cat = open_catalog(str(tmp_path / "wh"))
    cat.create_database("db")
    t = cat.create_table(
        "db.t",
        pa.schema([("id", pa.int32()), ("dt", pa.string()), ("hr", pa.int32())]),
        partition_keys=["dt", "hr"],
    )
    assert P.parse_partitions(t.schema, "dt=2024-01-01,hr=1; dt='2024-01-02' , HR = 2;") == [
        {"dt": "2024-01-01", "hr": 1},
        {"dt": "2024-01-02", "hr": 2},
    ]
    assert P.parse_partitions(t.schema, "hr=3") == [{"hr": 3}]
    for bad, words in [
        ("id=1", "'id' is not a partition column"),
        ("dt", "not key=value"),
        ("hr=x", "does not fit"),
        ("dt=a,dt=b", "twice"),
        (" ; ", "empty"),
    ]:
        with pytest.raises(ProcedureArgumentError, match=words):
            P.parse_partitions(t.schema, bad)
    flat = cat.create_table("db.f", pa.schema([("id", pa.int32())]))
    with pytest.raises(ProcedureArgumentError, match="not partitioned"):
        P.parse_partitions(flat.schema, "id=1")


def test_live_partitions_lists_partitions_with_data(tmp_path):
    cat = open_catalog(str(tmp_path / "wh"))
    cat.create_database("db")
    t = cat.create_table("db.t", pa.schema([("id", pa.int32()), ("dt", pa.string())]), partition_keys=["dt"])
    assert P.live_partitions(t) == []
    t.write_arrow(pa.table({"id": [1, 2, 3], "dt": ["b", "a", None]}, schema=t.arrow_schema))
    assert P.live_partitions(t) == [{"dt": "a"}, {"dt": "b"}, {"dt": None}]


def test_call_planner_locates_errors_and_its_plan_returns_the_result_table(tmp_path):
    from sqlext.execute.call import call
    from sqlext.parse.splitter import Statement

    P.register(
        Procedure(
            "fake_echo",
            (Param("n", ParamType.INT, True),),
            pa.schema([("n", pa.int64())]),
            lambda ctx, a: Answer(pa.table({"n": [a["n"] * 2]})),
        ),
        replace=True,
    )
    try:
        session = in_db(open_catalog(str(tmp_path / "wh")))
        stmt = Statement("CALL sys.fake_echo('21')", 3, 5, 40)
        plan = call(session, parse_statement(stmt.text), stmt)
        result = carry_out(plan)  # what the runner does
        assert result.to_pylist() == [{"n": 42}]
        assert result.schema.field("n").type == pa.int64()  # cast to the declared output
        with pytest.raises(ProcedureArgumentError) as info:
            call(session, parse_statement("CALL sys.fake_echo(n => 'x')"), stmt)
        assert (info.value.line, info.value.column) == (3, 5)
        with pytest.raises(SqlAnalysisError) as info:
            call(session, parse_statement("CALL sys.fake_ech(1)"), stmt)
        assert info.value.sqlstate == "42883" and "fake_echo" in str(info.value) and info.value.line == 3
    finally:
        P.REGISTRY.unregister("fake_echo")


# Every procedure of Paimon's Spark registry (SparkProcedures) resolves: served, or refused by name.
PAIMON_SPARK_PROCEDURES = (
    "rollback", "rollback_to_timestamp", "rollback_to_watermark", "purge_files", "create_tag", "replace_tag",
    "rename_tag", "create_tag_from_timestamp", "delete_tag", "expire_tags", "create_branch",
    "create_global_index", "drop_global_index", "delete_branch", "rename_branch", "compact",
    "materialize_deletion_vectors", "compact_database", "compact_chain_table", "rescale",
    "migrate_database", "migrate_table", "remove_orphan_files", "remove_unexisting_files", "expire_snapshots",
    "expire_partitions",
    "repair", "repair_earliest_snapshot", "fast_forward", "merge_branch", "reset_consumer",
    "mark_partition_done", "compact_manifest", "clear_consumers", "alter_view_dialect", "create_function",
    "alter_function", "drop_function", "trigger_tag_automatic_creation", "rewrite_file_index", "copy",
    "reassign_row_id",
)  # fmt: skip


def test_every_paimon_spark_procedure_resolves():
    assert len(PAIMON_SPARK_PROCEDURES) == 42
    for name in PAIMON_SPARK_PROCEDURES:
        assert P.resolve(name, ("sys",)).name == name


@pytest.mark.parametrize("name", ["create_function", "reassign_row_id", "compact_chain_table"])
def test_procedures_of_missing_features_refuse_any_arguments_naming_the_feature(name):
    from sqlext.errors import UnsupportedStatementError

    proc = P.resolve(name, ("sys",))
    for call_args in (args(), args("db.t"), args(table="db.t", anything=1)):
        with pytest.raises(UnsupportedStatementError, match=f"sys.{name} is not supported by dyntable") as e:
            bind_arguments(proc, call_args)
        assert e.value.sqlstate == "0A000"


# -- time arguments: the engine's one rule, the procedure's argument error -------------------------


FAR_FUTURE = dt.datetime(2099, 1, 1)


def in_db(catalog) -> FakeContext:
    """The planner context of a session whose current database is ``db``."""
    return FakeContext(catalog, current_database="db")


@pytest.fixture
def tagged(tmp_path):
    cat = open_catalog(str(tmp_path / "wh"))
    cat.create_database("db")
    t = cat.create_table("db.t", pa.schema([("id", pa.int64())]))
    for i in range(3):
        t.write_arrow(pa.table({"id": [i]}, schema=t.arrow_schema))
    t.refs.tags.create("a", 1)
    t.refs.tags.create("b", 2)
    return in_db(cat), t


def call_procedure(ctx, name, *positional, **named):
    """Plan a procedure over the context and carry out its metadata work, as the runner does."""
    proc = P.REGISTRY.get(name)
    values = bind_arguments(proc, args(*positional, **named))
    return carry_out(CallProcedure(proc, values, {}, "", proc.plan(ctx, values)))


@pytest.mark.parametrize(
    "older_than",
    ["2099-01-01 00:00:00", "2099-01-01", dt.datetime(2099, 1, 1), int(FAR_FUTURE.timestamp() * 1000)],
    ids=repr,
)
def test_expire_tags_reads_text_like_a_timestamp_literal(tagged, older_than):
    session, t = tagged
    result = call_procedure(session, "expire_tags", "t", older_than=older_than)
    assert result.column("expired_tags").to_pylist() == ["a", "b"] and t.refs.tags.names() == []


def test_expire_tags_with_a_past_bound_expires_nothing(tagged):
    session, t = tagged
    for past in ("2000-01-01 00:00:00", "1 d"):
        result = call_procedure(session, "expire_tags", "t", older_than=past)
        assert result.column(0).to_pylist() == ["No expired tags."]
    assert t.refs.tags.names() == ["a", "b"]


@pytest.mark.parametrize(
    ("procedure", "argument", "named"),
    [
        ("expire_tags", "older_than", {"older_than": "someday"}),
        ("expire_snapshots", "older_than", {"older_than": "someday"}),
        ("remove_orphan_files", "older_than", {"older_than": "someday"}),
        ("create_tag_from_timestamp", "timestamp", {"tag": "x", "timestamp": "someday"}),
        ("rollback_to_timestamp", "timestamp", {"timestamp": "someday"}),
    ],
)
def test_a_bad_time_is_the_arguments_error_in_every_procedure(tagged, procedure, argument, named):
    session, t = tagged
    with pytest.raises(ProcedureArgumentError) as info:
        call_procedure(session, procedure, "t", **named)
    assert info.value.sqlstate == "22023"
    assert str(info.value).startswith(f"{procedure}: argument {argument} = 'someday' is not a point in time")
    assert t.refs.tags.names() == ["a", "b"] and t.latest_snapshot().id == 3
