"""Writing to Cassandra (`sluice convert SRC cql://...`) against a real
Cassandra 5.0 node: every CQL type written back from what sluice read and
compared, through the Python cassandra-driver, with the rows the driver wrote;
files as pyarrow and pandas make them (int64 into int, microsecond
timestamps, UUID text, ...) compared with the driver's reading of the table;
partition batches, nulls left unset or written, retries of writes that time
out, and the errors a user meets."""
from __future__ import annotations

import datetime
import decimal
import ipaddress
import uuid
from collections.abc import Mapping

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from cql_fault_proxy import OVERLOADED, WRITE_TIMEOUT, FaultProxy
from test_cql import KS, TYPES_DDL, insert_types, same_float, url

TYPES_COLUMNS = ("t_text t_ascii t_bigint t_int t_smallint t_tinyint t_boolean t_float t_double "
                 "t_timestamp t_date t_time t_uuid t_timeuuid t_blob t_inet t_varint t_decimal "
                 "t_duration t_list t_set t_map t_nested t_tuple t_udt t_vector").split()


@pytest.fixture(scope="module")
def session(cassandra_node):
    s = cassandra_node.session()
    s.execute(f"CREATE KEYSPACE IF NOT EXISTS {KS} WITH replication = "
              "{'class': 'SimpleStrategy', 'replication_factor': 1}")
    return cassandra_node.session(KS)


@pytest.fixture(scope="module")
def node(cassandra_node, session):
    return cassandra_node


def same(a, b) -> bool:
    """Driver values equal, NaN equal to NaN and -0.0 apart from 0.0."""
    if isinstance(a, float) or isinstance(b, float):
        return same_float(a, b)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        return sorted(a) == sorted(b) and all(same(a[k], b[k]) for k in a)
    if hasattr(a, "_fields") and hasattr(b, "_fields"):  # UDT values
        return a._fields == b._fields and all(same(x, y) for x, y in zip(a, b))
    return a == b


def table_rows(session, table: str, key: str = "id") -> dict:
    return {getattr(r, key): r for r in session.execute(f"SELECT * FROM {KS}.{table}")}


@pytest.mark.parametrize("lz4", [False, True])
def test_every_type_round_trips(sluice, node, session, tmp_path, lz4):
    """sluice reads the driver-written table, writes it to an empty copy of it;
    the driver reads both the same (also with LZ4 frames both ways)."""
    insert_types(session)
    session.execute(TYPES_DDL.replace(f"{KS}.types", f"{KS}.types_copy"))
    session.execute(f"TRUNCATE {KS}.types_copy")
    arrows = tmp_path / "types.arrows"
    sluice.run("convert", url(node, "types"), arrows, *(["-O", "compression=lz4"] if lz4 else []))
    sluice.run("convert", arrows, url(node, "types_copy"),
               *(["--compression", "lz4", "-W", "batch_rows=1"] if lz4 else []))
    want, got = table_rows(session, "types"), table_rows(session, "types_copy")
    assert sorted(got) == sorted(want)  # an INSERT makes the row even when every cell is unset
    for rid, row in got.items():
        for column in TYPES_COLUMNS:
            assert same(getattr(want[rid], column), getattr(row, column)), (rid, column)


def test_row_of_empty_values(sluice, node, session, tmp_path):
    """nulls=null writes nulls, so a row whose cells are all null still exists."""
    session.execute(f"CREATE TABLE IF NOT EXISTS {KS}.nullable (id int PRIMARY KEY, a int, b text)")
    src = tmp_path / "n.parquet"
    pq.write_table(pa.table({"id": pa.array([1, 2], pa.int32()), "a": [None, 5],
                             "b": [None, None]}), src)
    sluice.run("convert", src, url(node, "nullable"), "-W", "nulls=null")
    got = table_rows(session, "nullable")
    assert sorted(got) == [1, 2]
    assert (got[1].a, got[1].b, got[2].a, got[2].b) == (None, None, 5, None)


def test_nulls_unset_keep_what_is_there(sluice, node, session, tmp_path):
    session.execute(f"CREATE TABLE IF NOT EXISTS {KS}.patch (id int PRIMARY KEY, a int, b text)")
    session.execute(f"INSERT INTO {KS}.patch (id, a, b) VALUES (1, 10, 'keep')")
    src = tmp_path / "p.parquet"
    pq.write_table(pa.table({"id": pa.array([1], pa.int32()), "a": pa.array([11], pa.int32()),
                             "b": pa.array([None], pa.string())}), src)
    sluice.run("convert", src, url(node, "patch"))  # default nulls=unset
    row = table_rows(session, "patch")[1]
    assert (row.a, row.b) == (11, "keep")
    sluice.run("convert", src, url(node, "patch"), "-W", "nulls=null")
    row = table_rows(session, "patch")[1]
    assert (row.a, row.b) == (11, None)


def test_csv_column_empty_in_every_row(sluice, node, session, tmp_path):
    """A CSV column empty in every row is read as strings (as polars and
    DuckDB type it); its cells are null, so it loads into a column of any
    type as unset cells. A value in such a column is still refused, by row."""
    session.execute(f"CREATE TABLE IF NOT EXISTS {KS}.sparse (id int PRIMARY KEY, n int, "
                    "at timestamp, tags list<int>)")
    session.execute(f"INSERT INTO {KS}.sparse (id, n) VALUES (2, 20)")
    csv = tmp_path / "sparse.csv"
    csv.write_text("id,n,at,tags\n1,,,\n2,,,\n3,,,\n")
    sluice.run("convert", csv, url(node, "sparse"))
    got = table_rows(session, "sparse")
    assert sorted(got) == [1, 2, 3]
    assert [(got[i].n, got[i].at, got[i].tags) for i in (1, 2, 3)] == [
        (None, None, None), (20, None, None), (None, None, None)]
    csv.write_text("id,n\n4,\n5,x\n")
    err = sluice.expect_error("convert", csv, url(node, "sparse")).stderr.decode()
    assert "row 2, column 'n': Arrow string cannot be written as CQL int" in err, err
    assert sorted(table_rows(session, "sparse")) == [1, 2, 3]  # row 1 of the batch not sent


PANDAS_DDL = f"""CREATE TABLE IF NOT EXISTS {KS}.loaded (
  id bigint PRIMARY KEY, small int, tiny tinyint, ratio float, score double, wide varint,
  amount decimal, at timestamp, day date, tod time, uid uuid, ip inet, tags list<text>,
  attrs map<text, int>, flags set<int>, emb vector<float, 2>, raw blob)"""


def test_file_types_convert_to_the_columns(sluice, node, session, tmp_path):
    """A Parquet file as pyarrow writes it from pandas-like data: int64
    everywhere, microsecond timestamps, float64, UUIDs and addresses as text,
    decimals as decimal128 or text."""
    session.execute(PANDAS_DDL)
    n = 300
    ids = list(range(n))
    t0 = datetime.datetime(2024, 1, 1, tzinfo=datetime.timezone.utc)
    uuids = [uuid.UUID(int=i * 7919 + 1) for i in ids]
    data = pa.table({
        "id": pa.array(ids, pa.int64()),
        "small": pa.array([i - 150 for i in ids], pa.int64()),
        "tiny": pa.array([i % 100 for i in ids], pa.uint8()),
        "ratio": pa.array([i / 3 for i in ids], pa.float64()),
        "score": pa.array([None if i % 5 == 0 else i * 1.5 for i in ids], pa.float32()),
        "wide": pa.array([i * 10**20 for i in ids], pa.decimal128(38, 0)),
        "amount": pa.array([decimal.Decimal(i) / 100 - 1 for i in ids], pa.decimal128(12, 2)),
        "at": pa.array([t0 + datetime.timedelta(seconds=i, milliseconds=i) for i in ids],
                       pa.timestamp("us", tz="UTC")),
        "day": pa.array([datetime.date(2000, 1, 1) + datetime.timedelta(days=i) for i in ids],
                        pa.date32()),
        "tod": pa.array([i * 1_000_000 for i in ids], pa.time64("us")),
        "uid": pa.array([str(u) for u in uuids]),
        "ip": pa.array([f"10.0.{i // 256}.{i % 256}" if i % 2 else f"fe80::{i:x}" for i in ids]),
        "tags": pa.array([[f"t{j}" for j in range(i % 4)] for i in ids]),
        "attrs": pa.array([[(f"k{j}", j * i) for j in range(i % 3)] for i in ids],
                          pa.map_(pa.string(), pa.int64())),
        "flags": pa.array([[i % 2, i % 3, 7] for i in ids], pa.list_(pa.int64())),
        "emb": pa.array([[i * 0.5, -i * 0.25] for i in ids], pa.list_(pa.float64(), 2)),
        "raw": pa.array([bytes([i % 256]) * (i % 5) for i in ids], pa.binary()),
    })
    src = tmp_path / "loaded.parquet"
    pq.write_table(data, src)
    sluice.run("convert", src, url(node, "loaded"))
    got = table_rows(session, "loaded")
    assert sorted(got) == ids
    for i in ids:
        r = got[i]
        assert r.small == i - 150 and r.tiny == i % 100
        assert r.ratio == pytest.approx(i / 3, rel=1e-7)
        assert r.score == (None if i % 5 == 0 else i * 1.5)
        assert r.wide == i * 10**20
        assert r.amount == decimal.Decimal(i) / 100 - 1
        assert r.at == (t0 + datetime.timedelta(seconds=i, milliseconds=i)).replace(tzinfo=None)
        assert r.day.date() == datetime.date(2000, 1, 1) + datetime.timedelta(days=i)
        assert r.tod.nanosecond_time == i * 1_000_000_000
        assert r.uid == uuids[i]
        assert ipaddress.ip_address(r.ip) == ipaddress.ip_address(
            f"10.0.{i // 256}.{i % 256}" if i % 2 else f"fe80::{i:x}")
        assert (r.tags or []) == [f"t{j}" for j in range(i % 4)]
        assert dict(r.attrs or {}) == {f"k{j}": j * i for j in range(i % 3)}
        assert r.flags == {i % 2, i % 3, 7}
        assert list(r.emb) == [i * 0.5, -i * 0.25]
        assert (r.raw or b"") == bytes([i % 256]) * (i % 5)


def test_decimal_text_and_csv_input(sluice, node, session, tmp_path):
    """A CSV's text into decimal, uuid and inet columns, and its inferred
    int64 into int."""
    session.execute(f"CREATE TABLE IF NOT EXISTS {KS}.fromcsv (k int PRIMARY KEY, d decimal, "
                    "u uuid, a inet)")
    values = ["0", "-1.5", "123456789012345678901234567890.000000001", "1e3", "-2.5E-7",
              "+.25", "99999999999999999999999999999999999999999999"]
    csv = tmp_path / "in.csv"
    csv.write_text("k,d,u,a\n" + "".join(
        f"{i},{v},{uuid.UUID(int=i)},192.168.0.{i}\n" for i, v in enumerate(values)))
    # Without the schema, the CSV's d is float64: refused (a float has no
    # exact decimal digits), and the error says how to read it as text.
    err = sluice.expect_error("convert", csv, url(node, "fromcsv")).stderr.decode()
    assert "column 'd': Arrow double cannot be written as CQL decimal" in err, err
    assert "schema=d:string (CLI: --schema d:string)" in err, err
    sluice.run("convert", csv, url(node, "fromcsv"), "--schema", "k:int64,d:string")
    got = table_rows(session, "fromcsv", "k")
    for i, v in enumerate(values):
        assert got[i].d == decimal.Decimal(v), (i, v, got[i].d)
        assert got[i].u == uuid.UUID(int=i) and got[i].a == f"192.168.0.{i}"



def test_decimal_scale_beyond_what_reads_back(sluice, node, session, tmp_path):
    """Text decimals are written with a scale of up to +-100000, what the
    reader takes back; past it the row is refused by number."""
    session.execute(f"CREATE TABLE IF NOT EXISTS {KS}.far_decimals (k int PRIMARY KEY, d decimal)")
    csv = tmp_path / "far.csv"
    csv.write_text("k,d\n1,5E+100000\n2,7E-100000\n3,0.5E-99999\n")
    sluice.run("convert", csv, url(node, "far_decimals"), "--schema", "k:int64,d:string")
    got = table_rows(session, "far_decimals", "k")
    assert [str(got[k].d) for k in (1, 2, 3)] == ["5E+100000", "7E-100000", "5E-100000"]
    out = sluice.run("cat", url(node, "far_decimals"), "-t", "csv").stdout.decode()
    assert sorted(out.split()[1:]) == ["1,5E+100000", "2,7E-100000", "3,5E-100000"], out
    for far in ("5E+100001", "7E-100001", "0.5E-100000", "1E+1000000", "1E-1000001"):
        csv.write_text(f"k,d\n4,1\n5,{far}\n")
        err = sluice.expect_error("convert", csv, url(node, "far_decimals"),
                                  "--schema", "k:int64,d:string").stderr.decode()
        assert "row 2, column 'd'" in err and "100000" in err, (far, err)


ROWS = 12_000


@pytest.fixture(scope="module")
def readings():
    """Rows of 40 partitions, in runs (as a sorted file has them) and mixed."""
    n = ROWS
    return pa.table({
        "sensor": [f"s{(i // 300) % 40}" for i in range(n)],
        "day": pa.array([(i // 300) % 3 for i in range(n)], pa.int32()),
        "seq": pa.array(range(n), pa.int32()),
        "reading": [None if i % 11 == 0 else i * 0.5 for i in range(n)],
    })


def readings_table(session, name: str) -> None:
    session.execute(f"CREATE TABLE IF NOT EXISTS {KS}.{name} (sensor text, day int, seq int, "
                    "reading double, PRIMARY KEY ((sensor, day), seq))")
    session.execute(f"TRUNCATE {KS}.{name}")


def read_back(session, name: str) -> list:
    return sorted((r.sensor, r.day, r.seq, r.reading)
                  for r in session.execute(f"SELECT * FROM {KS}.{name}"))


def want_rows(t: pa.Table) -> list:
    return sorted(zip(*(t.column(c).to_pylist() for c in ("sensor", "day", "seq", "reading"))))


@pytest.mark.parametrize("options", [
    None,                                   # batches of up to 32 rows of one partition
    "batch_rows=1",                         # one EXECUTE per row
    "batch_rows=500,in_flight=3",           # big batches, few requests in flight
    "consistency=quorum,in_flight=1",       # strictly one request at a time
])
def test_partitions_batched_all_rows_once(sluice, node, session, readings, tmp_path, options):
    src = tmp_path / "r.arrows"
    with pa.ipc.new_stream(src, readings.schema) as w:
        for b in readings.to_batches(max_chunksize=1000):  # rows of a run cross batches
            w.write_batch(b)
    readings_table(session, "readings")
    extra = ["-W", options] if options else []
    sluice.run("convert", src, url(node, "readings"), *extra)
    assert read_back(session, "readings") == want_rows(readings)


def test_the_last_row_of_a_key_wins(sluice, node, session, tmp_path):
    """A key given several times keeps its last row, whether the rows share a
    batch (where the node would let the larger value win at one write time)
    or travel in different requests in flight at once."""
    session.execute(f"CREATE TABLE IF NOT EXISTS {KS}.dups (k int, c int, v int, "
                    "PRIMARY KEY (k, c))")
    session.execute(f"TRUNCATE {KS}.dups")
    rows = [(100, 1, 5), (100, 1, 9), (100, 1, 0)]  # one batch: 0 must win over 9
    for rnd in range(4):                    # each key again in later requests
        rows += [(k, c, rnd * 1000 + k * 20 + c) for k in range(10) for c in range(20)]
    rows += [(3, 3, -1)]
    src = tmp_path / "dups.parquet"
    pq.write_table(pa.table({n: pa.array([r[i] for r in rows], pa.int32())
                             for i, n in enumerate("kcv")}), src)
    sluice.run("convert", src, url(node, "dups"), "-W", "in_flight=64,batch_rows=7")
    want = {}
    for k, c, v in rows:
        want[(k, c)] = v
    got = {(r.k, r.c): r.v for r in session.execute(f"SELECT * FROM {KS}.dups")}
    assert got == want


@pytest.mark.parametrize("fault", [
    # Every fourth request answered "write timeout" (once each): sent again.
    dict(every=4, once=True, in_flight=16, least=10),
    # The connection closed before an answer, a few times: the writer connects
    # again, prepares again and sends what was in flight again.
    dict(every=60, drop=True, in_flight=8, least=2),
], ids=["timeouts", "dropped"])  # a node down for a while: test_cql_restart.py
def test_writes_that_fail_are_sent_again(sluice, node, session, readings, tmp_path, fault):
    fault = dict(fault)
    in_flight, least = fault.pop("in_flight"), fault.pop("least")
    src = tmp_path / "r.parquet"
    pq.write_table(readings, src)
    readings_table(session, "retried")
    proxy = FaultProxy(node, WRITE_TIMEOUT, writes=True, **fault)
    try:
        sluice.run("convert", src, proxy.url(f"{KS}.retried"), "-W", f"in_flight={in_flight}")
    finally:
        proxy.close()
    assert proxy.injected >= least
    assert read_back(session, "retried") == want_rows(readings)


def test_a_node_that_keeps_refusing_is_an_error(sluice, node, session, readings, tmp_path):
    src = tmp_path / "r.parquet"
    pq.write_table(readings.slice(0, 100), src)
    readings_table(session, "refused")
    proxy = FaultProxy(node, OVERLOADED, every=1, writes=True)
    try:
        err = sluice.expect_error("convert", src, proxy.url(f"{KS}.refused")).stderr.decode()
    finally:
        proxy.close()
    assert "overloaded (0x1001)" in err and "sent 5 times" in err and "rows 1 to " in err
    assert f":{node.password}@" not in err


# ---- static columns ----------------------------------------------------------------

STATICS_DDL = ("CREATE TABLE IF NOT EXISTS {ks}.{name} (p int, c int, d text, s int static, "
               "s2 text static, v int, PRIMARY KEY (p, c, d))")


def statics_table(session, name: str) -> None:
    session.execute(STATICS_DDL.format(ks=KS, name=name))
    session.execute(f"TRUNCATE {KS}.{name}")


def statics_rows(session, name: str) -> list:
    return sorted(((r.p, r.c, r.d, r.s, r.s2, r.v) for r in
                   session.execute(f"SELECT * FROM {KS}.{name}")),
                  key=lambda r: tuple((x is None, x) for x in r))


def row_count(session, name: str) -> int:
    return session.execute(f"SELECT COUNT(*) FROM {KS}.{name}").one()[0]


@pytest.fixture(scope="module")
def statics_source(session):
    """A table with statics: partitions 0-29 with clustering rows and static
    values, 30-39 with static values only (no clustering row), 40-59 with
    clustering rows and no static value set."""
    statics_table(session, "statics_src")
    whole = session.prepare(f"INSERT INTO {KS}.statics_src (p, c, d, s, s2, v) "
                            "VALUES (?, ?, ?, ?, ?, ?)")
    static_only = session.prepare(f"INSERT INTO {KS}.statics_src (p, s, s2) VALUES (?, ?, ?)")
    plain = session.prepare(f"INSERT INTO {KS}.statics_src (p, c, d, v) VALUES (?, ?, ?, ?)")
    for p in range(30):
        for c in range(4):
            session.execute(whole, (p, c, f"d{c % 2}", p * 10, f"s{p}", p * 100 + c))
    for p in range(30, 40):
        session.execute(static_only, (p, p * 10, None if p % 3 == 0 else f"s{p}"))
    for p in range(40, 60):
        for c in range(3):
            session.execute(plain, (p, c, "x", None if c == 1 else c))
    return statics_rows(session, "statics_src")


@pytest.mark.parametrize("options", [None, "batch_rows=1", "in_flight=1"])
def test_statics_round_trip(sluice, node, session, statics_source, tmp_path, options):
    """What sluice reads of a table with static columns, written into a table
    of the same definition, reads the same through the driver: the partitions
    of static values only stay so (no clustering row is made up)."""
    arrows = tmp_path / "statics.arrows"
    sluice.run("convert", url(node, "statics_src"), arrows)
    read = pa.ipc.open_stream(arrows).read_all()
    static_only = [p for p, c in zip(read["p"].to_pylist(), read["c"].to_pylist()) if c is None]
    assert sorted(static_only) == list(range(30, 40))  # what the writer is given
    statics_table(session, "statics_copy")
    extra = ["-W", options] if options else []
    sluice.run("convert", arrows, url(node, "statics_copy"), *extra)
    got = statics_rows(session, "statics_copy")
    assert got == statics_source
    assert row_count(session, "statics_copy") == row_count(session, "statics_src") == 30 * 4 + 10 + 20 * 3
    for p in (30, 31, 33):
        rows = list(session.execute(f"SELECT c, d, s, v FROM {KS}.statics_copy WHERE p = {p}"))
        assert [(r.c, r.d, r.s, r.v) for r in rows] == [(None, None, p * 10, None)]
    assert list(session.execute(f"SELECT s, s2 FROM {KS}.statics_copy WHERE p = 45")) == \
        [(None, None)] * 3


def test_statics_written_again_after_the_connection_drops(sluice, node, session, statics_source,
                                                          tmp_path):
    """Connections closed under the writer after both INSERTs were prepared:
    on each new connection both are prepared again and what was in flight is
    sent again."""
    arrows = tmp_path / "statics.arrows"
    sluice.run("convert", url(node, "statics_src"), arrows)
    statics_table(session, "statics_dropped")
    proxy = FaultProxy(node, WRITE_TIMEOUT, writes=True, every=25, drop=True)
    try:
        sluice.run("convert", arrows, proxy.url(f"{KS}.statics_dropped"), "-W",
                   "batch_rows=1,in_flight=4")
    finally:
        proxy.close()
    assert proxy.injected >= 3  # of about 200 requests: some after the statics INSERT's
    assert statics_rows(session, "statics_dropped") == statics_source


def test_static_row_errors(sluice, node, session, tmp_path):
    """Null clustering columns that are not a row of static values only are
    errors naming the row and the column, found before any row is sent."""
    statics_table(session, "statics_bad")
    session.execute(f"CREATE TABLE IF NOT EXISTS {KS}.no_statics (p int, c int, v int, "
                    "PRIMARY KEY (p, c))")
    i32 = lambda xs: pa.array(xs, pa.int32())  # noqa: E731
    text = lambda xs: pa.array(xs, pa.string())  # noqa: E731

    def fails(table, name, **columns):
        path = tmp_path / f"{name}.parquet"
        pq.write_table(pa.table(columns), path)
        err = sluice.expect_error("convert", path, url(node, table)).stderr.decode()
        assert not list(session.execute(f"SELECT * FROM {KS}.{table}")), name
        return err

    err = fails("no_statics", "no_statics", p=i32([1, 2, 3]), c=i32([1, 2, None]),
                v=i32([1, 2, None]))
    assert "row 3, column 'c': a null clustering column" in err and \
        "the table has no static columns" in err, err
    err = fails("statics_bad", "partial", p=i32([1, 2]), c=i32([1, 5]), d=text(["a", None]),
                s=i32([1, 2]))
    assert "row 2, column 'd': a null clustering column while clustering column 'c' is not" \
        in err, err
    err = fails("statics_bad", "regular", p=i32([1, 2]), c=i32([1, None]), d=text(["a", None]),
                s=i32([1, 2]), v=i32([1, 7]))
    assert "row 2, column 'v': a value in a row whose clustering columns are null" in err, err
    err = fails("statics_bad", "no_static_data", p=i32([1, 2]), c=i32([1, None]),
                d=text(["a", None]), v=i32([1, None]))
    assert "row 2, column 'c'" in err and "the data has none of the table's static columns" \
        in err, err
    err = fails("statics_bad", "null_key", p=i32([1, None]), c=i32([1, None]),
                d=text(["a", None]), s=i32([1, 2]))
    assert "row 2, column 'p': a null partition key column" in err, err


# ---- errors ------------------------------------------------------------------------

def test_errors(sluice, node, session, tmp_path):
    session.execute(f"CREATE TABLE IF NOT EXISTS {KS}.strict (id int PRIMARY KEY, v int, "
                    "at timestamp)")
    session.execute(f"CREATE TABLE IF NOT EXISTS {KS}.hits (page text PRIMARY KEY, n counter)")

    def src(name, **columns):
        path = tmp_path / f"{name}.parquet"
        pq.write_table(pa.table(columns), path)
        return path

    ok = src("ok", id=pa.array([1], pa.int32()), v=pa.array([1], pa.int32()))
    err = sluice.expect_error("convert", ok, url(node, "nosuch")).stderr.decode()
    assert "nosuch" in err and "invalid query (0x2200)" in err
    err = sluice.expect_error("convert", src("extra", id=[1], zz=[2]),
                              url(node, "strict")).stderr.decode()
    assert "zz" in err and "(0x2200)" in err  # the node names the unknown column
    err = sluice.expect_error("convert", src("type", id=[1], v=["x"]),
                              url(node, "strict")).stderr.decode()
    assert "column 'v': Arrow string cannot be written as CQL int" in err
    err = sluice.expect_error("convert", src("range", id=[1, 2, 3], v=[1, 2**31, 3]),
                              url(node, "strict")).stderr.decode()
    assert "row 2, column 'v'" in err and "out of the range" in err
    session.execute(f"CREATE TABLE IF NOT EXISTS {KS}.floats (id int PRIMARY KEY, f float)")
    for big in (1e300, -1e39):  # the driver refuses them too (OverflowError)
        err = sluice.expect_error("convert", src("float", id=[1, 2], f=[1.5, big]),
                                  url(node, "floats")).stderr.decode()
        assert "row 2, column 'f'" in err and "range of CQL float" in err, err
    ok_floats = src("floats_ok", id=[1, 2], f=[float("inf"), 3.4e38])
    sluice.run("convert", ok_floats, url(node, "floats"))
    assert sorted(r.f for r in session.execute(f"SELECT f FROM {KS}.floats")) == \
        [pytest.approx(3.4e38, rel=1e-7), float("inf")]
    stamps = pa.array([0, 1500], pa.timestamp("us"))
    err = sluice.expect_error("convert", src("us", id=[1, 2], at=stamps),
                              url(node, "strict")).stderr.decode()
    assert "row 2, column 'at'" in err and "sub-millisecond" in err
    err = sluice.expect_error("convert", src("count", page=["a"], n=[1]),
                              url(node, "hits")).stderr.decode()
    assert "not allowed on counter tables" in err  # the node says so at PREPARE
    err = sluice.expect_error("convert", ok, url(node, "strict"), "-W",
                              "batch_rows=0").stderr.decode()
    assert "batch_rows" in err
    err = sluice.expect_error("convert", ok, url(node, "strict"), "-W", "speed=max").stderr.decode()
    assert "unknown cql write option 'speed'" in err
    err = sluice.expect_error("convert", ok, url(node, "strict"), "-t", "csv").stderr.decode()
    assert "Cassandra table, not 'csv'" in err and f":{node.password}@" not in err
    err = sluice.expect_error("convert", ok, tmp_path / "x.out", "-t", "cql").stderr.decode()
    assert "cql:// tables only" in err
    bad = f"cql://{node.username}:wrong@{node.host}:{node.port}/{KS}.strict"
    err = sluice.expect_error("convert", ok, bad).stderr.decode()
    assert "wrong" not in err and "authentication" in err.lower()
    assert not list(session.execute(f"SELECT * FROM {KS}.strict WHERE id = 3"))


def batches_file(path, schema, *batches):
    with pa.ipc.new_file(path, schema) as f:
        for columns in batches:
            f.write_batch(pa.record_batch(columns, schema=schema))
    return path


def keys(session, table: str) -> list:
    return sorted((r.k, r.c) for r in session.execute(f"SELECT k, c FROM {KS}.{table}"))


@pytest.mark.parametrize("partitions", [1, 50])
def test_a_failed_write_keeps_every_row_of_the_earlier_batches(sluice, node, session, tmp_path,
                                                               partitions):
    """A batch refused before any of its rows is sent (a value in a column of
    the wrong type) leaves exactly the rows of the earlier batches written:
    the rows still gathered and the requests in flight are completed before
    the connection closes (one partition: the last group of the batch is
    gathered, not sent; 50: requests are in flight when the error comes)."""
    table = f"midway{partitions}"
    session.execute(f"CREATE TABLE IF NOT EXISTS {KS}.{table} (k int, c int, v int, "
                    "PRIMARY KEY (k, c))")
    schema = pa.schema([("k", pa.int32()), ("c", pa.int32()), ("v", pa.string())])
    n = 2000
    first = [pa.array([i % partitions for i in range(n)], pa.int32()),
             pa.array(range(n), pa.int32()), pa.array([None] * n, pa.string())]
    src = batches_file(tmp_path / "midway.arrow", schema, first,
                       [pa.array([partitions], pa.int32()), pa.array([0], pa.int32()),
                        pa.array(["x"])])
    err = sluice.expect_error("convert", src, url(node, table)).stderr.decode()
    assert f"row {n + 1}, column 'v': Arrow string cannot be written as CQL int" in err, err
    assert keys(session, table) == sorted((i % partitions, i) for i in range(n))


def test_a_bad_value_keeps_the_rows_before_it(sluice, node, session, tmp_path):
    """A value found bad while its batch is sent (out of its column's range)
    leaves exactly the rows before it written, of its batch too."""
    session.execute(f"CREATE TABLE IF NOT EXISTS {KS}.before_bad (k int, c int, v int, "
                    "PRIMARY KEY (k, c))")
    schema = pa.schema([("k", pa.int32()), ("c", pa.int32()), ("v", pa.int64())])
    first = [pa.array([0] * 100, pa.int32()), pa.array(range(100), pa.int32()),
             pa.array(range(100), pa.int64())]
    second = [pa.array([1] * 10, pa.int32()), pa.array(range(10), pa.int32()),
              pa.array([0, 1, 2, 3, 4, 2**40, 6, 7, 8, 9], pa.int64())]
    src = batches_file(tmp_path / "bad.arrow", schema, first, second)
    err = sluice.expect_error("convert", src, url(node, "before_bad")).stderr.decode()
    assert "row 106, column 'v'" in err and "out of the range" in err, err
    assert keys(session, "before_bad") == [(0, c) for c in range(100)] + [(1, c) for c in range(5)]
