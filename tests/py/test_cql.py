"""cql:// against a real Cassandra 5.0 node (tests/py/cassandra_node.py):
tables written with the Python cassandra-driver, read by `sluice cat -t
arrows`, and every value compared with what the driver reads back from the
same table. Also token-range splits and paging (all rows, none twice),
projection, statistics, and the errors a user meets (login, missing table,
bad options)."""
from __future__ import annotations

import datetime
import decimal
import io
import math
import time
import uuid

import pyarrow as pa
import pytest
from conftest import check_clean_failure
from cql_fault_proxy import OVERLOADED, READ_TIMEOUT, FaultProxy
from servers import silent_server

KS = "sluice_cql"


@pytest.fixture(scope="module")
def node(cassandra_node):
    s = cassandra_node.session()
    s.execute(f"CREATE KEYSPACE IF NOT EXISTS {KS} WITH replication = "
              "{'class': 'SimpleStrategy', 'replication_factor': 1}")
    return cassandra_node


def url(node, table: str, auth: bool = True) -> str:
    cred = f"{node.username}:{node.password}@" if auth else ""
    return f"cql://{cred}{node.host}:{node.port}/{KS}.{table}"


def read(sluice, node, table: str, *args) -> pa.Table:
    out = sluice.run("cat", url(node, table), "-t", "arrows", *args).stdout
    return pa.ipc.open_stream(io.BytesIO(out)).read_all()


# ---- every type, compared with the driver ---------------------------------------

TYPES_DDL = f"""
CREATE TABLE IF NOT EXISTS {KS}.types (
  id int PRIMARY KEY,
  t_text text, t_ascii ascii, t_bigint bigint, t_int int, t_smallint smallint,
  t_tinyint tinyint, t_boolean boolean, t_float float, t_double double,
  t_timestamp timestamp, t_date date, t_time time, t_uuid uuid, t_timeuuid timeuuid,
  t_blob blob, t_inet inet, t_varint varint, t_decimal decimal, t_duration duration,
  t_list list<int>, t_set set<text>, t_map map<text, double>,
  t_nested frozen<list<map<int, text>>>, t_tuple tuple<int, text, double>,
  t_udt frozen<point>, t_vector vector<float, 3>)
"""


def insert_types(session) -> None:
    from cassandra.util import Duration

    session.execute(f"CREATE TYPE IF NOT EXISTS {KS}.point (x double, y double, label text)")
    session.execute(TYPES_DDL)
    ins = session.prepare(
        f"INSERT INTO {KS}.types (id, t_text, t_ascii, t_bigint, t_int, t_smallint, t_tinyint,"
        " t_boolean, t_float, t_double, t_timestamp, t_date, t_time, t_uuid, t_timeuuid, t_blob,"
        " t_inet, t_varint, t_decimal, t_duration, t_list, t_set, t_map, t_nested, t_tuple,"
        " t_vector) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?,"
        " ?, ?)")
    rows = [
        (1, "héllo, wörld", "ascii", 2**63 - 1, -2**31, -32768, -128, True, 1.5, -0.1,
         datetime.datetime(2024, 2, 29, 12, 34, 56, 789000), datetime.date(2024, 2, 29),
         45296789012345, uuid.UUID("12345678-1234-5678-1234-567812345678"),
         uuid.UUID("e0e3cb5e-7d5a-11ee-b962-0242ac120002"), b"\x00\x01\xff",
         "192.168.1.20", 2**100 - 7, decimal.Decimal("-12345.678901234567890123"),
         Duration(14, 3, 1_500_000_000), [1, 2, 3], {"a", "b"}, {"x": 1.25, "y": -2.5},
         [{1: "one", 2: "two"}, {}], (7, "seven", 7.5), [0.5, -1.0, 3.25]),
        (2, "", "", -2**63, 2**31 - 1, 32767, 127, False, float("inf"), float("nan"),
         datetime.datetime(1901, 1, 1, 0, 0, 0), datetime.date(1, 1, 1), 0,
         uuid.UUID(int=0), uuid.UUID("00000000-0000-1000-8000-000000000000"), b"",
         "::1", -(2**64), decimal.Decimal("1E+3"), Duration(0, 0, 0), [], set(), {}, [],
         (None, None, None), [float("-inf"), 0.0, -0.0]),
        (3, None, None, None, None, None, None, None, None, None, None, None, None, None,
         None, None, None, None, None, None, None, None, None, None, None, None),
        (4, "x" * 5000, "z", 0, 0, 0, 0, True, -0.0, 5e-324,
         datetime.datetime(2262, 4, 11, 23, 47, 16, 854000), datetime.date(9999, 12, 31),
         86399999999999, uuid.uuid4(), uuid.uuid1(), bytes(range(256)) * 20,
         "2001:db8::ff00:42:8329", 0, decimal.Decimal("0.000000000000000000000000000001"),
         Duration(-1, 0, -999), list(range(1000)), {"only"}, {"k": float("nan")},
         [{-1: ""}], (1, "", float("-inf")), [1e30, -1e-30, 3.0]),
    ]
    for r in rows:
        session.execute(ins, r)
    session.execute(f"INSERT INTO {KS}.types (id, t_udt) VALUES (1, {{x: 1.5, y: -2, label: 'p'}})")
    session.execute(f"INSERT INTO {KS}.types (id, t_udt) VALUES (2, {{x: 0, y: 0}})")
    # An empty value (zero bytes, which CQL allows for most types) reads as null.
    session.execute(f"INSERT INTO {KS}.types (id, t_int, t_double, t_inet) VALUES (5, "
                    "blobAsInt(0x), blobAsDouble(0x), blobAsInet(0x))")


def same_float(a, b) -> bool:
    if a is None or b is None:
        return a is b
    if math.isnan(a):
        return math.isnan(b)
    return a == b and math.copysign(1, a) == math.copysign(1, b)


def expected_value(column: str, v):
    """The driver's value in the form pyarrow's to_pylist gives for sluice's
    Arrow type (README: "Cassandra")."""
    if v is None:
        return None
    kind = column[2:]
    if kind == "timestamp":
        return v.replace(tzinfo=datetime.timezone.utc)
    if kind == "date":
        return datetime.date(1970, 1, 1) + datetime.timedelta(days=v.days_from_epoch)
    if kind == "time":
        return v.nanosecond_time
    if kind in ("uuid", "timeuuid"):
        return v.bytes
    if kind == "varint":
        return decimal.Decimal(v)
    if kind == "duration":
        return (v.months, v.days, v.nanoseconds)
    if kind == "set":
        return sorted(v)
    if kind == "map":
        return sorted(v.items())
    if kind == "nested":
        return [sorted(m.items()) for m in v]
    if kind == "tuple":
        return {"f0": v[0], "f1": v[1], "f2": v[2]}
    if kind == "udt":
        return {"x": v.x, "y": v.y, "label": v.label}
    if kind == "vector":
        return list(v)
    return v


def actual_value(column: str, v):
    if v is None:
        return None
    kind = column[2:]
    if kind in ("uuid", "timeuuid"):
        return v.bytes if isinstance(v, uuid.UUID) else bytes(v)
    if kind == "duration":
        return (v.months, v.days, v.nanoseconds)
    if kind == "set":
        return sorted(v)
    if kind == "map":
        return sorted(v)
    if kind == "nested":
        return [sorted(m) for m in v]
    if kind == "decimal":
        return decimal.Decimal(v)
    return v


def values_equal(column: str, want, got) -> bool:
    if want is None or got is None:
        return want is got
    kind = column[2:]
    if kind in ("float", "double"):
        return same_float(want, got)
    if kind in ("vector",):
        return len(want) == len(got) and all(same_float(a, b) for a, b in zip(want, got))
    if kind == "map":
        return [k for k, _ in want] == [k for k, _ in got] and all(
            same_float(a, b) for (_, a), (_, b) in zip(want, got))
    if kind == "tuple":
        return want["f0"] == got["f0"] and want["f1"] == got["f1"] and same_float(
            want["f2"], got["f2"])
    return want == got


def test_every_type_matches_the_driver(sluice, node):
    session = node.session(KS)
    insert_types(session)
    table = read(sluice, node, "types")
    driver = {r.id: r for r in session.execute(f"SELECT * FROM {KS}.types")}
    assert table.num_rows == len(driver) == 5
    types = {f.name: f.type for f in table.schema}
    assert types["t_text"] == pa.string() and types["t_bigint"] == pa.int64()
    assert types["t_int"] == pa.int32() and types["t_smallint"] == pa.int16()
    assert types["t_tinyint"] == pa.int8() and types["t_boolean"] == pa.bool_()
    assert types["t_float"] == pa.float32() and types["t_double"] == pa.float64()
    assert types["t_timestamp"] == pa.timestamp("ms", tz="UTC")
    assert types["t_date"] == pa.date32() and types["t_time"] == pa.time64("ns")
    assert types["t_blob"] == pa.binary() and types["t_inet"] == pa.string()
    assert types["t_varint"] == pa.decimal128(38, 0) and types["t_decimal"] == pa.string()
    assert types["t_duration"] == pa.month_day_nano_interval()
    assert types["t_list"] == pa.list_(pa.int32())
    assert types["t_map"] == pa.map_(pa.string(), pa.float64())
    assert pa.types.is_fixed_size_list(types["t_vector"]) and types["t_vector"].list_size == 3
    assert types["t_vector"].value_type == pa.float32()
    assert [f.name for f in types["t_udt"]] == ["x", "y", "label"]
    for f in ("t_uuid", "t_timeuuid"):  # the canonical extension type arrow.uuid
        assert types[f].extension_name == "arrow.uuid", f
        assert types[f].storage_type == pa.binary(16), f

    got_rows = {}
    cols = {name: table.column(name) for name in table.column_names}
    for i, rid in enumerate(cols["id"].to_pylist()):
        got_rows[rid] = i
    assert sorted(got_rows) == sorted(driver)
    for name in table.column_names:
        if name == "id":
            continue
        column = table.column(name)
        if name == "t_time":
            column = column.cast(pa.int64())
        elif name in ("t_uuid", "t_timeuuid") and hasattr(column.type, "storage_type"):
            column = pa.chunked_array([c.storage for c in column.chunks], column.type.storage_type)
        values = column.to_pylist()
        for rid, row in driver.items():
            want = expected_value(name, getattr(row, name))
            got = actual_value(name, values[got_rows[rid]])
            if name == "t_decimal" and want is not None:
                assert got == want, (rid, name, got, want)
                continue
            assert values_equal(name, want, got), (rid, name, got, want)


def test_counter_columns(sluice, node):
    session = node.session(KS)
    session.execute(f"CREATE TABLE IF NOT EXISTS {KS}.hits (page text PRIMARY KEY, n counter)")
    for page, n in (("a", 5), ("b", -3), ("c", 2**40)):
        session.execute(f"UPDATE {KS}.hits SET n = n + {n} WHERE page = '{page}'")
    table = read(sluice, node, "hits")
    assert table.schema.field("n").type == pa.int64()
    got = dict(zip(table.column("page").to_pylist(), table.column("n").to_pylist()))
    want = {r.page: r.n for r in session.execute(f"SELECT * FROM {KS}.hits")}
    assert got == want


# (unscaled, scale) and Java's BigDecimal.toString of it, what the drivers give
# (the Python driver's Decimal prints the same): plain digits while the scale
# is not negative and the adjusted exponent (digits - 1 - scale) is -6 or more,
# else one digit, the rest after a point, and E with the adjusted exponent.
DECIMAL_TEXT = [(12, -2, "1.2E+3"), (0, -2, "0E+2"), (-12, -2, "-1.2E+3"), (1, -1, "1E+1"),
                (100, -3, "1.00E+5"), (123, 0, "123"), (0, 0, "0"), (-1, 0, "-1"),
                (1, 6, "0.000001"), (1, 7, "1E-7"), (12, 7, "0.0000012"), (12, 8, "1.2E-7"),
                (0, 6, "0.000000"), (0, 7, "0E-7"), (-5, 10, "-5E-10"), (-9, 6, "-0.000009"),
                (123456, 3, "123.456"), (-123456, 3, "-123.456"),
                (1234567, 12, "0.000001234567"), (1234567, 13, "1.234567E-7"),
                (5, -100000, "5E+100000"), (7, 100000, "7E-100000")]


def test_decimal_text_is_java_bigdecimal_tostring(sluice, node):
    session = node.session(KS)
    session.execute(f"CREATE TABLE IF NOT EXISTS {KS}.decimals (k int PRIMARY KEY, d decimal)")
    insert = session.prepare(f"INSERT INTO {KS}.decimals (k, d) VALUES (?, ?)")
    for k, (unscaled, scale, _) in enumerate(DECIMAL_TEXT):
        digits = tuple(int(c) for c in str(abs(unscaled)))
        session.execute(insert, (k, decimal.Decimal((unscaled < 0, digits, -scale))))
    table = read(sluice, node, "decimals")
    got = dict(zip(table.column("k").to_pylist(), table.column("d").to_pylist()))
    driver = {r.k: str(r.d) for r in session.execute(f"SELECT k, d FROM {KS}.decimals")}
    for k, (unscaled, scale, java) in enumerate(DECIMAL_TEXT):
        assert got[k] == java == driver[k], (unscaled, scale, got[k], java, driver[k])


def test_varint_past_38_digits_is_an_error(sluice, node):
    """A varint that fits 128 bits but not decimal128(38, 0)'s 38 digits (the
    driver reads 10**38 and 2**127 - 1 exactly) is an error naming the
    column, not an invalid Arrow decimal; 10**38 - 1 still reads."""
    session = node.session(KS)
    session.execute(f"CREATE TABLE IF NOT EXISTS {KS}.wide_ints (k int PRIMARY KEY, v varint)")
    session.execute(f"INSERT INTO {KS}.wide_ints (k, v) VALUES (1, {10**38 - 1})")
    table = read(sluice, node, "wide_ints")
    table.validate(full=True)
    assert table.column("v").to_pylist() == [decimal.Decimal(10**38 - 1)]
    for big in (10**38, 2**127 - 1, -(10**38)):
        session.execute(f"INSERT INTO {KS}.wide_ints (k, v) VALUES (2, {big})")
        err = sluice.expect_error("cat", url(node, "wide_ints"), "-t", "arrows").stderr.decode()
        assert "38 digits" in err and "'v'" in err, err


def test_value_errors_name_the_row_and_its_key(sluice, node):
    """A value that cannot be read names its row counted from 1 (as the
    writer's errors do; it was 0-based within the split) and the row's
    primary key values, when the scan reads them."""
    session = node.session(KS)
    session.execute(f"CREATE TABLE IF NOT EXISTS {KS}.bad_rows (k int, c text, v varint, "
                    "PRIMARY KEY (k, c))")
    session.execute(f"INSERT INTO {KS}.bad_rows (k, c, v) VALUES (7, 'a', 1)")
    session.execute(f"INSERT INTO {KS}.bad_rows (k, c, v) VALUES (7, 'x', {10**50})")
    for args in ((), ("-O", "splits=1")):
        err = sluice.expect_error("cat", url(node, "bad_rows"), "-t", "arrows",
                                  *args).stderr.decode()
        assert "row 2 of the split (k=7, c='x'), column 'v': a varint beyond" in err, err
    err = sluice.expect_error("cat", url(node, "bad_rows"), "-t", "arrows", "-c", "v,c",
                              "-O", "splits=1").stderr.decode()
    assert "row 2 of the split (c='x'), column 'v'" in err, err
    err = sluice.expect_error("cat", url(node, "bad_rows"), "-t", "arrows", "-c", "v",
                              "-O", "splits=1").stderr.decode()
    assert "row 2 of the split, column 'v'" in err, err


# ---- splits, paging, order, projection ---------------------------------------------

ROWS = 20_000


@pytest.fixture(scope="module")
def events(node):
    session = node.session(KS)
    session.execute(f"CREATE TABLE IF NOT EXISTS {KS}.events (sensor text, day int, seq int, "
                    "reading double, note text, PRIMARY KEY ((sensor, day), seq))")
    from cassandra.concurrent import execute_concurrent_with_args

    ins = session.prepare(f"INSERT INTO {KS}.events (sensor, day, seq, reading, note) "
                          "VALUES (?, ?, ?, ?, ?)")
    args = [(f"s{i % 97}", i % 13, i, i * 0.25, None if i % 7 == 0 else f"n{i}")
            for i in range(ROWS)]
    execute_concurrent_with_args(session, ins, args, concurrency=64, raise_on_first_error=True)
    rows = sorted((r.sensor, r.day, r.seq, r.reading, r.note)
                  for r in session.execute(f"SELECT * FROM {KS}.events"))
    assert len(rows) == ROWS
    return rows


def as_rows(table: pa.Table):
    return sorted(zip(*(table.column(c).to_pylist()
                        for c in ("sensor", "day", "seq", "reading", "note"))))


@pytest.mark.parametrize("args", [
    (),                                       # 16 token ranges, 10,000-row pages
    ("-O", "splits=1"),                       # one query over the whole ring
    ("-O", "splits=257,page_rows=333"),       # many small ranges, many pages
    ("--unordered", "--threads", "2"),
])
def test_all_rows_once(sluice, node, events, args):
    table = read(sluice, node, "events", *args)
    assert table.num_rows == ROWS
    assert as_rows(table) == events


def test_projection(sluice, node, events):
    table = read(sluice, node, "events", "-c", "note,seq")
    assert table.column_names == ["note", "seq"]
    assert sorted(zip(table.column("seq").to_pylist(), table.column("note").to_pylist())) == \
        sorted((r[2], r[4]) for r in events)


def test_limit(sluice, node, events):
    table = read(sluice, node, "events", "--limit", "1234")
    assert table.num_rows == 1234
    assert set(as_rows(table)) <= set(events)


def test_stats_match_the_driver(sluice, node, events):
    import json

    out = sluice.run("stats", url(node, "events"), "-c", "seq,reading,note", "--json").stdout
    stats = {c["name"]: c for c in json.loads(out)}
    assert stats["seq"]["count"] == ROWS and stats["seq"]["nulls"] == 0
    assert int(stats["seq"]["min"]) == min(r[2] for r in events)
    assert int(stats["seq"]["max"]) == max(r[2] for r in events)
    assert float(stats["reading"]["max"]) == max(r[3] for r in events)
    notes = [r[4] for r in events]
    assert stats["note"]["nulls"] == sum(n is None for n in notes)
    assert stats["note"]["min"] == min(n for n in notes if n is not None)


def test_empty_table(sluice, node):
    session = node.session(KS)
    session.execute(f"CREATE TABLE IF NOT EXISTS {KS}.empty (k int PRIMARY KEY, v text)")
    table = read(sluice, node, "empty")
    assert table.num_rows == 0
    assert table.schema.names == ["k", "v"]


def test_convert_to_parquet(sluice, node, events, tmp_path):
    import pyarrow.parquet as pq

    out = tmp_path / "events.parquet"
    sluice.run("convert", url(node, "events"), out)
    assert as_rows(pq.read_table(out)) == events


# ---- errors ------------------------------------------------------------------------

def test_wrong_password(sluice, node):
    bad = f"cql://{node.username}:wrong@{node.host}:{node.port}/{KS}.events"
    err = sluice.expect_error("cat", bad).stderr.decode()
    assert "authentication error" in err and "cql://" in err
    assert ":wrong@" not in err and ":***@" in err  # no password in messages


def test_login_required(sluice, node, monkeypatch):
    monkeypatch.delenv("SLUICE_CQL_USER", raising=False)
    err = sluice.expect_error("schema", url(node, "events", auth=False)).stderr.decode()
    assert "asks for a login" in err


def test_login_from_environment(sluice, node, events, monkeypatch):
    monkeypatch.setenv("SLUICE_CQL_USER", node.username)
    monkeypatch.setenv("SLUICE_CQL_PASSWORD", node.password)
    out = sluice.run("stats", url(node, "events", auth=False), "-c", "seq", "--json").stdout
    assert f'"count":{ROWS}' in out.decode().replace(" ", "")


def test_password_from_environment_for_the_location_user(sluice, node, events, monkeypatch):
    # cql://user@host with the password in SLUICE_CQL_PASSWORD (as psql -U
    # with PGPASSWORD): the password was ignored unless SLUICE_CQL_USER was
    # set too, and the node said "Password must not be null".
    monkeypatch.delenv("SLUICE_CQL_USER", raising=False)
    monkeypatch.setenv("SLUICE_CQL_PASSWORD", node.password)
    loc = f"cql://{node.username}@{node.host}:{node.port}/{KS}.events"
    out = sluice.run("stats", loc, "-c", "seq", "--json").stdout
    assert f'"count":{ROWS}' in out.decode().replace(" ", "")
    # A password in the location (even an empty one) wins.
    monkeypatch.setenv("SLUICE_CQL_PASSWORD", "wrong")
    sluice.run("stats", url(node, "events"), "-c", "seq")
    err = sluice.expect_error("stats", loc.replace("@", ":@", 1), "-c", "seq").stderr.decode()
    assert "authentication error" in err, err


def test_virtual_tables(sluice, node):
    """Virtual tables (system_views.*, listed in system_virtual_schema, not
    system_schema) read as one split, with the rows the driver reads."""
    session = node.session()
    base = f"cql://{node.username}:{node.password}@{node.host}:{node.port}"
    out = sluice.run("cat", f"{base}/system_views.settings", "-t", "arrows").stdout
    got = pa.ipc.open_stream(io.BytesIO(out)).read_all()
    want = session.execute("SELECT name, value FROM system_views.settings")
    assert sorted(zip(got.column("name").to_pylist(), got.column("value").to_pylist()),
                  key=str) == sorted(((r.name, r.value) for r in want), key=str)
    assert "cluster_name" in got.column("name").to_pylist()
    # One of the clients is sluice itself: the driver's own connections are there too.
    out = sluice.run("cat", f"{base}/system_views.clients", "-t", "arrows", "-c", "port").stdout
    ports = set(pa.ipc.open_stream(io.BytesIO(out)).read_all().column("port").to_pylist())
    assert {r.port for r in session.execute("SELECT port FROM system_views.clients")} <= ports


def test_missing_table_and_keyspace(sluice, node):
    err = sluice.expect_error("schema", url(node, "nope")).stderr.decode()
    assert "no table 'nope'" in err
    other = f"cql://{node.username}:{node.password}@{node.host}:{node.port}/nokeyspace.t"
    assert "no table 't'" in sluice.expect_error("schema", other).stderr.decode()


def test_bad_options_and_locations(sluice, node):
    assert "unknown cql option" in sluice.expect_error(
        "cat", url(node, "events"), "-O", "fetch=3").stderr.decode()
    assert "consistency" in sluice.expect_error(
        "cat", url(node, "events"), "-O", "consistency=most").stderr.decode()
    assert "keyspace.table" in sluice.expect_error(
        "cat", f"cql://{node.host}:{node.port}/justone").stderr.decode()
    assert "not 'csv'" in sluice.expect_error(
        "cat", url(node, "events"), "-f", "csv").stderr.decode()
    err = sluice.expect_error("cat", url(node, "events"), url(node, "types")).stderr.decode()
    assert "cannot be read with others" in err and f":{node.password}@" not in err
    # A port that speaks something else (the node's storage port is not CQL).
    closed = f"cql://{node.host}:1/{KS}.events"
    assert "cannot connect" in sluice.expect_error("cat", closed).stderr.decode()


def test_silent_node_times_out_as_asked(sluice, tmp_path):
    """A server that accepts connections and never answers (a hung node):
    --timeout bounds the wait for the node's first answer, reading and
    writing, as it does for HTTP (by default a node has 120 s)."""
    csv = tmp_path / "one.csv"
    csv.write_text("a\n1\n")
    with silent_server() as (port, _):
        location = f"cql://127.0.0.1:{port}/ks.t"
        for args in (("schema", location), ("convert", csv, location)):
            start = time.monotonic()
            proc = sluice.run_raw(*args, "--timeout", "0.5", timeout=60)
            took = time.monotonic() - start
            check_clean_failure(proc)
            err = proc.stderr.decode()
            assert "no answer within" in err or "timed out" in err.lower(), err
            assert took < 20, (args, took)


# ---- retries: a proxy that answers some pages with a node's ERROR ---------------

@pytest.mark.parametrize("fault", [
    # Every third page answered "read timeout": asked for again after a pause.
    dict(code=READ_TIMEOUT, every=3, options="splits=8,page_rows=1000", least=5),
    # Every fifth page's connection closed before its answer, as when a node
    # restarts: asked for again on a new connection, from the same paging state.
    dict(code=READ_TIMEOUT, every=5, drop=True, options="splits=4,page_rows=1000", least=3),
], ids=["timeouts", "dropped"])  # a node down for a while: test_cql_restart.py
def test_pages_that_fail_are_asked_again(sluice, node, events, fault):
    fault = dict(fault)
    options, least = fault.pop("options"), fault.pop("least")
    proxy = FaultProxy(node, **fault)
    try:
        out = sluice.run("cat", proxy.url(f"{KS}.events"), "-t", "arrows", "-O", options).stdout
    finally:
        proxy.close()
    assert proxy.injected >= least
    # No row lost or read twice.
    assert as_rows(pa.ipc.open_stream(io.BytesIO(out)).read_all()) == events


def test_a_node_that_keeps_timing_out_is_an_error(sluice, node, events):
    proxy = FaultProxy(node, OVERLOADED, every=1)  # every time
    try:
        err = sluice.expect_error("cat", proxy.url(f"{KS}.events"), "-O", "splits=2").stderr.decode()
    finally:
        proxy.close()
    assert "overloaded (0x1001)" in err and "asked 5 times" in err

