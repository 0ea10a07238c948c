"""Writing into a Cassandra table that does not exist yet (`-W create=true,
partition_key=..,clustering_key=..`), against a real Cassandra 5.0 node: the
table the node then describes (system_schema.columns: each column's CQL type
and its place in the primary key) and the rows the Python cassandra-driver
reads from it; an existing table kept as it is; and the errors."""
from __future__ import annotations

import datetime
import decimal

import pyarrow as pa
import pyarrow.parquet as pq
from test_cql import KS, url
from test_cql_write import same, session  # noqa: F401 - the keyspace's session fixture

ROWS = 40


def source() -> pa.Table:
    n = ROWS
    return pa.table({
        "region": pa.array([f"r{i % 4}" for i in range(n)]),
        "day": pa.array([datetime.date(2026, 1, 1 + i % 3) for i in range(n)], pa.date32()),
        "seq": pa.array(range(n), pa.int64()),
        "b": pa.array([i % 2 == 0 for i in range(n)]),
        "i8": pa.array([i - 20 for i in range(n)], pa.int8()),
        "i16": pa.array([i * 300 for i in range(n)], pa.int16()),
        "i32": pa.array([None if i % 7 == 0 else i * 70000 for i in range(n)], pa.int32()),
        "u32": pa.array([4_000_000_000 + i for i in range(n)], pa.uint32()),
        "u64": pa.array([2**63 + i for i in range(n)], pa.uint64()),
        "f32": pa.array([i / 4 for i in range(n)], pa.float32()),
        "f64": pa.array([i / 3 for i in range(n)], pa.float64()),
        "s": pa.array([f"text {i}" for i in range(n)]),
        "bin": pa.array([bytes([i, 255 - i]) for i in range(n)], pa.binary()),
        "ts": pa.array([datetime.datetime(2026, 5, 1, 12, 0, i % 60) for i in range(n)],
                       pa.timestamp("ms", tz="UTC")),
        "t": pa.array([datetime.time(10, i % 60) for i in range(n)], pa.time64("us")),
        "dec": pa.array([decimal.Decimal(f"{i}.25") for i in range(n)], pa.decimal128(10, 2)),
        "tags": pa.array([[f"t{j}" for j in range(i % 3)] for i in range(n)],
                         pa.list_(pa.string())),
        "m": pa.array([{"k": i} for i in range(n)], pa.map_(pa.string(), pa.int32())),
        "nested": pa.array([[[i, i + 1]] for i in range(n)], pa.list_(pa.list_(pa.int64()))),
        "pair": pa.array([{"x": i, "y": f"y{i}"} for i in range(n)],
                         pa.struct([("x", pa.int32()), ("y", pa.string())])),
        "cat": pa.array([f"c{i % 2}" for i in range(n)]).dictionary_encode(),
    })


WANT_TYPES = {
    "region": "text", "day": "date", "seq": "bigint", "b": "boolean", "i8": "tinyint",
    "i16": "smallint", "i32": "int", "u32": "bigint", "u64": "varint", "f32": "float",
    "f64": "double", "s": "text", "bin": "blob", "ts": "timestamp", "t": "time",
    "dec": "decimal", "tags": "list<text>", "m": "map<text, int>",
    "nested": "list<frozen<list<bigint>>>", "pair": "frozen<tuple<int, text>>", "cat": "text",
}


def columns(session, table: str) -> dict:
    rows = session.execute("SELECT column_name, kind, position, type FROM system_schema.columns "
                           f"WHERE keyspace_name = '{KS}' AND table_name = '{table}'")
    return {r.column_name: (r.kind, r.position, r.type) for r in rows}


def test_create_and_write(sluice, cassandra_node, session, tmp_path):  # noqa: F811
    session.execute(f"DROP TABLE IF EXISTS {KS}.made")
    src = tmp_path / "src.parquet"
    t = source()
    pq.write_table(t, src)
    sluice.run("convert", src, url(cassandra_node, "made"), "-W",
               "create=true,partition_key=region|day,clustering_key=seq")
    cols = columns(session, "made")
    assert {name: c[2] for name, c in cols.items()} == WANT_TYPES
    assert (cols["region"][:2], cols["day"][:2], cols["seq"][:2]) == \
        (("partition_key", 0), ("partition_key", 1), ("clustering", 0))
    assert all(c[0] == "regular" for n, c in cols.items() if n not in ("region", "day", "seq"))
    got = {r.seq: r for r in session.execute(f"SELECT * FROM {KS}.made")}
    assert len(got) == ROWS
    for row in t.to_pylist():
        r = got[row["seq"]]
        assert r.region == row["region"] and r.day.date() == row["day"]
        assert (r.b, r.i8, r.i16, r.i32, r.u32, r.u64) == \
            (row["b"], row["i8"], row["i16"], row["i32"], row["u32"], row["u64"])
        assert same(r.f32, row["f32"]) and same(r.f64, row["f64"])
        assert (r.s, r.bin, r.dec, r.cat) == (row["s"], row["bin"], row["dec"], row["cat"])
        assert r.ts.replace(tzinfo=datetime.timezone.utc) == row["ts"]
        assert r.t.time() == row["t"]
        assert list(r.tags or []) == row["tags"] and dict(r.m) == dict(row["m"])
        assert [list(x) for x in r.nested] == row["nested"]
        assert tuple(r.pair) == (row["pair"]["x"], row["pair"]["y"])
    # Again into the table that now exists: kept as it is (IF NOT EXISTS),
    # the rows upserted; a frozen key column of a collection type works too.
    sluice.run("convert", src, url(cassandra_node, "made"), "-W",
               "create=true,partition_key=region|day,clustering_key=seq")
    assert session.execute(f"SELECT COUNT(*) FROM {KS}.made").one()[0] == ROWS
    assert columns(session, "made") == cols


def test_create_with_a_collection_key(sluice, cassandra_node, session, tmp_path):  # noqa: F811
    session.execute(f"DROP TABLE IF EXISTS {KS}.made_list_key")
    src = tmp_path / "k.parquet"
    pq.write_table(pa.table({"k": pa.array([[1, 2], [3]], pa.list_(pa.int32())),
                             "v": ["a", "b"]}), src)
    sluice.run("convert", src, url(cassandra_node, "made_list_key"), "-W",
               "create=true,partition_key=k")
    assert columns(session, "made_list_key")["k"] == ("partition_key", 0, "frozen<list<int>>")
    got = sorted((list(r.k), r.v) for r in session.execute(f"SELECT * FROM {KS}.made_list_key"))
    assert got == [([1, 2], "a"), ([3], "b")]


def test_create_errors(sluice, cassandra_node, session, tmp_path):  # noqa: F811
    src = tmp_path / "e.parquet"
    pq.write_table(pa.table({"id": pa.array([1], pa.int32()), "v": ["x"]}), src)
    loc = url(cassandra_node, "made_err")
    session.execute(f"DROP TABLE IF EXISTS {KS}.made_err")
    for opts, want in (("create=true", "create=true needs partition_key="),
                       ("create=true,partition_key=nope", "partition_key column 'nope' is not"),
                       ("create=true,partition_key=id,clustering_key=id", "named twice"),
                       ("partition_key=id", "they go with create=true")):
        err = sluice.expect_error("convert", src, loc, "-W", opts).stderr.decode()
        assert want in err, (opts, err)
    assert session.execute("SELECT table_name FROM system_schema.tables WHERE keyspace_name = "
                           f"'{KS}' AND table_name = 'made_err'").one() is None
    # A type CQL has none for: named with its column, nothing created.
    odd = tmp_path / "odd.parquet"
    pq.write_table(pa.table({"id": pa.array([1], pa.int32()),
                             "d": pa.array([decimal.Decimal(1)], pa.decimal256(50, 0))}), odd)
    err = sluice.expect_error("convert", odd, loc, "-W",
                              "create=true,partition_key=id").stderr.decode()
    assert "column 'd' (Arrow decimal256(50, 0)) has no CQL type" in err, err
    # A keyspace that does not exist: the node's words.
    err = sluice.expect_error("convert", src, loc.replace(f"/{KS}.", "/no_such_ks."), "-W",
                              "create=true,partition_key=id").stderr.decode()
    assert "no_such_ks" in err, err


def test_create_keeps_uuid_and_vector_columns(sluice, cassandra_node, session, tmp_path):  # noqa: F811
    # A table read from Cassandra (through Parquet) and created elsewhere had
    # blob for uuid and list<float> for vector<float, 3>: now the same types.
    import uuid
    session.execute(f"DROP TABLE IF EXISTS {KS}.vec_src")
    session.execute(f"DROP TABLE IF EXISTS {KS}.vec_copy")
    session.execute(f"CREATE TABLE {KS}.vec_src (id int PRIMARY KEY, u uuid, "
                    "v vector<float, 3>)")
    rows = [(1, uuid.uuid4(), [1.0, 2.5, -3.0]), (2, uuid.uuid4(), [0.0, 0.5, 8.0])]
    for r in rows:
        session.execute(f"INSERT INTO {KS}.vec_src (id, u, v) VALUES (%s, %s, %s)", r)
    mid = tmp_path / "mid.parquet"
    sluice.run("convert", url(cassandra_node, "vec_src"), mid)
    sluice.run("convert", mid, url(cassandra_node, "vec_copy"), "-W",
               "create=true,partition_key=id")
    cols = columns(session, "vec_copy")
    assert cols["u"][2] == "uuid" and cols["v"][2] == "vector<float, 3>", cols
    got = sorted((r.id, r.u, list(r.v)) for r in session.execute(f"SELECT * FROM {KS}.vec_copy"))
    assert got == sorted((i, u, v) for i, u, v in rows)


def test_vectors_the_writer_cannot_fill_are_not_created(sluice, cassandra_node, session,  # noqa: F811
                                                       tmp_path):
    # A fixed_size_list of text, bool or int16 made a vector<text|boolean|
    # smallint, 2> table that the writer then refused to fill ("cannot be
    # written as CQL custom type"), leaving the table behind: now refused
    # before the CREATE, naming the column and the element types vectors
    # take; into such an existing table, the message names its CQL type.
    loc = url(cassandra_node, "made_vec")
    for element, values, cql in ((pa.string(), ["a", "b"], "text"),
                                 (pa.bool_(), [True, False], "boolean"),
                                 (pa.int16(), [1, 2], "smallint")):
        session.execute(f"DROP TABLE IF EXISTS {KS}.made_vec")
        src = tmp_path / "v.parquet"
        pq.write_table(pa.table({"id": pa.array([1], pa.int32()),
                                 "v": pa.array([values], pa.list_(element, 2))}), src)
        err = sluice.expect_error("convert", src, loc, "-W",
                                  "create=true,partition_key=id").stderr.decode()
        assert "column 'v'" in err and "vectors of float, double, int and bigint" in err, err
        assert session.execute("SELECT table_name FROM system_schema.tables WHERE keyspace_name "
                               f"= '{KS}' AND table_name = 'made_vec'").one() is None, element
        session.execute(f"CREATE TABLE {KS}.made_vec (id int PRIMARY KEY, v vector<{cql}, 2>)")
        err = sluice.expect_error("convert", src, loc).stderr.decode()
        assert f"column 'v': Arrow fixed_size_list[2] cannot be written as CQL vector<{cql}, 2>" \
            in err, err
    # int32 and int64 elements still make vectors it fills.
    session.execute(f"DROP TABLE IF EXISTS {KS}.made_vec")
    src = tmp_path / "ok.parquet"
    pq.write_table(pa.table({"id": pa.array([1], pa.int32()),
                             "v": pa.array([[3, -4]], pa.list_(pa.int32(), 2)),
                             "w": pa.array([[2**40, 5]], pa.list_(pa.int64(), 2))}), src)
    sluice.run("convert", src, loc, "-W", "create=true,partition_key=id")
    cols = columns(session, "made_vec")
    assert (cols["v"][2], cols["w"][2]) == ("vector<int, 2>", "vector<bigint, 2>"), cols
    r = session.execute(f"SELECT v, w FROM {KS}.made_vec").one()
    assert (list(r.v), list(r.w)) == ([3, -4], [2**40, 5])


def test_lossy_conversions_into_blob_and_double_are_errors(sluice, cassandra_node, session,  # noqa: F811
                                                           tmp_path):
    # Text into blob stored its UTF-8 bytes ('01ff' from a CSV of hex) and
    # 2**53 + 1 into double was rounded: errors naming the row, as the
    # cassandra-driver refuses a str for a blob and pyarrow's safe cast
    # refuses the rounding; what fits still loads.
    session.execute(f"DROP TABLE IF EXISTS {KS}.lossy")
    session.execute(f"CREATE TABLE {KS}.lossy (id int PRIMARY KEY, b blob, d double, f float)")
    loc = url(cassandra_node, "lossy")
    text = tmp_path / "text.parquet"
    pq.write_table(pa.table({"id": pa.array([1], pa.int32()), "b": ["01ff"]}), text)
    err = sluice.expect_error("convert", text, loc).stderr.decode()
    assert "Arrow string cannot be written as CQL blob" in err, err
    for col, value, word in (("d", 2**53 + 1, "double"), ("f", 2**24 + 1, "float")):
        bad = tmp_path / f"{col}.parquet"
        pq.write_table(pa.table({"id": pa.array([1, 2], pa.int32()),
                                 col: pa.array([3, value], pa.int64())}), bad)
        err = sluice.expect_error("convert", bad, loc).stderr.decode()
        assert f"CQL {word} cannot hold exactly" in err and "row 2" in err, err
    good = tmp_path / "good.parquet"
    pq.write_table(pa.table({"id": pa.array([5], pa.int32()), "d": pa.array([2**53], pa.int64()),
                             "f": pa.array([2**24], pa.int64())}), good)
    sluice.run("convert", good, loc)
    r = session.execute(f"SELECT d, f FROM {KS}.lossy WHERE id = 5").one()
    assert (r.d, r.f) == (float(2**53), float(2**24))


def test_whole_floats_into_integers_and_integers_into_decimal(sluice, cassandra_node, session,  # noqa: F811
                                                             tmp_path):
    # A pandas integer column with a missing value is float64; an int column
    # into a decimal one: refused for the whole column before (the error
    # named row 1 even where the value fit). Now per value, as DSBulk and the
    # driver take them: whole floats go in, 1.5 and NaN are errors naming
    # their row.
    import math
    session.execute(f"DROP TABLE IF EXISTS {KS}.wholes")
    session.execute(f"CREATE TABLE {KS}.wholes (id int PRIMARY KEY, i int, v varint, "
                    "d decimal)")
    loc = url(cassandra_node, "wholes")
    good = tmp_path / "good.parquet"
    pq.write_table(pa.table({"id": pa.array([1, 2, 3], pa.int32()),
                             "i": pa.array([1.0, -7.0, None], pa.float64()),
                             "v": pa.array([2.0**62, 3.0, 0.0], pa.float64()),
                             "d": pa.array([5, -12, 2**63 - 1], pa.int64())}), good)
    sluice.run("convert", good, loc)
    got = {r.id: (r.i, r.v, r.d) for r in session.execute(f"SELECT * FROM {KS}.wholes")}
    assert got == {1: (1, 2**62, decimal.Decimal(5)), 2: (-7, 3, decimal.Decimal(-12)),
                   3: (None, 0, decimal.Decimal(2**63 - 1))}
    for bad in (1.5, math.nan, 3e9):
        path = tmp_path / "bad.parquet"
        pq.write_table(pa.table({"id": pa.array([4, 5], pa.int32()),
                                 "i": pa.array([2.0, bad], pa.float64())}), path)
        err = sluice.expect_error("convert", path, loc).stderr.decode()
        assert "row 2, column 'i'" in err, (bad, err)
