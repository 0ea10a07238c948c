"""Parquet Bloom filters prune row groups for equality filters where the
statistics cannot (values in no order): files written by pyarrow
(bloom_filter_options) and DuckDB (its dictionary-encoded columns). Row
groups that a filter rules out are damaged, so reading them would fail: a
read that succeeds proves they were skipped. No false negatives: every value
present is found, as pyarrow and DuckDB find it."""
from __future__ import annotations

import datetime as dt
import random

import pytest

import sluice
from pkg_helpers import damage_row_groups

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

GROUPS, PER_GROUP = 8, 2000


def _table():
    rnd = random.Random(11)
    n = GROUPS * PER_GROUP
    ids = list(range(n))
    rnd.shuffle(ids)  # every row group spans the whole range: statistics prune nothing
    return pa.table({
        "k": pa.array(["key-%06d" % (i * 7919 % 1000003) for i in ids]),
        "i": pa.array([i * 37 - 5000 for i in ids], pa.int64()),
        "i32": pa.array([i - n // 2 for i in ids], pa.int32()),
        "u32": pa.array([i * 3 for i in ids], pa.uint32()),
        "x": pa.array([-0.0 if i == 777 else (i - n / 2 + 0.5) / 8 for i in ids], pa.float64()),
        "f": pa.array([(i - n / 2) / 4 for i in ids], pa.float32()),
        "d": pa.array([dt.date(2000, 1, 1) + dt.timedelta(days=i) for i in ids]),
        "cat": pa.array(["c%d" % (i % 50) for i in ids]).dictionary_encode(),
    })


COLUMNS = ["k", "i", "i32", "u32", "x", "f", "d", "cat"]


def _write(path, table):
    pq.write_table(table, path, row_group_size=PER_GROUP, write_page_index=False,
                   bloom_filter_options={c: {"ndv": PER_GROUP, "fpp": 0.0001} for c in COLUMNS})


def _damage_all_but(path, keep):
    """Overwrites the pages of every row group not in `keep` (their Bloom
    filters, written apart, stay readable)."""
    damage_row_groups(path, keep)


def _groups_holding(table, column, value):
    rows = [r for r, v in enumerate(table[column].to_pylist()) if v == value]
    return {r // PER_GROUP for r in rows}


@pytest.mark.parametrize("column,value", [
    ("k", "key-%06d" % (4321 * 7919 % 1000003)),
    ("i", 4321 * 37 - 5000),
    ("i32", 4321 - GROUPS * PER_GROUP // 2),
    ("u32", 4321 * 3),
    ("x", (4321 - GROUPS * PER_GROUP / 2 + 0.5) / 8),
    ("x", 0.0),  # only -0.0 is stored: both zeros are looked up
    ("f", (4321 - GROUPS * PER_GROUP / 2) / 4),
    ("d", dt.date(2000, 1, 1) + dt.timedelta(days=4321)),
])
def test_groups_the_filter_rules_out_are_not_read(tmp_path, column, value):
    t = _table()
    path = tmp_path / "bloom.parquet"
    _write(path, t)
    keep = _groups_holding(t, column, value)
    assert len(keep) == 1
    _damage_all_but(path, keep)
    got = pa.table(sluice.read(str(path), filters=[(column, "=", value)]))
    want = [r for r in t.to_pylist() if r[column] == value]
    assert [r["i"] for r in got.to_pylist()] == [r["i"] for r in want]
    # A value in a damaged row group must be read, and fails.
    other = t[column][(min(keep) + 1) % GROUPS * PER_GROUP].as_py()
    with pytest.raises(sluice.Error):
        sluice.read(str(path), filters=[(column, "=", other)])


def test_every_value_present_is_found(tmp_path):
    t = _table()
    path = tmp_path / "bloom.parquet"
    _write(path, t)
    rnd = random.Random(5)
    for column in COLUMNS:
        values = t[column].to_pylist()
        picks = rnd.sample(values, 120)
        for chunk in (picks[k:k + 40] for k in range(0, len(picks), 40)):
            flt = [(column, "in", chunk)]
            got = pa.table(sluice.read(str(path), filters=flt))
            want = pq.read_table(path, filters=flt)
            assert sorted(got["i"].to_pylist()) == sorted(want["i"].to_pylist()), column
        for v in picks[:20]:
            got = pa.table(sluice.read(str(path), filters=[(column, "=", v)]))
            assert got.num_rows == sum(1 for x in values if x == v), (column, v)


def test_absent_values_and_other_operators(tmp_path):
    t = _table()
    path = tmp_path / "bloom.parquet"
    _write(path, t)
    _damage_all_but(path, set())
    # Equality on values no row group holds: nothing is read at all.
    for flt in ([("k", "=", "nope")], [("k", "in", ["nope", "key-x"])], [("i", "=", 1)],
                [("i32", "=", 10**6)], [("d", "=", dt.date(1990, 1, 1))], [("u32", "=", 1)]):
        assert pa.table(sluice.read(str(path), filters=flt)).num_rows == 0, flt
    # Only equality uses the filters: a range needs the (damaged) pages.
    with pytest.raises(sluice.Error):
        sluice.read(str(path), filters=[("k", "<", "nope")])
    # u32 holds multiples of 3: 4 and 5 are absent, and the filters say so.
    assert pa.table(sluice.read(str(path), filters=[("u32", "in", [4, 5])])).num_rows == 0
    # A value past the physical type (uint32 as INT32) cannot be looked up,
    # so the filter proves nothing and the pages are read.
    with pytest.raises(sluice.Error):
        sluice.read(str(path), filters=[("u32", "in", [4, 2**40])])


def test_a_damaged_bloom_filter_is_ignored(tmp_path):
    t = _table()
    path = tmp_path / "bloom.parquet"
    _write(path, t)
    meta = pq.ParquetFile(path).metadata
    data = bytearray(path.read_bytes())
    for g in range(meta.num_row_groups):
        at = meta.row_group(g).column(0).to_dict()["bloom_filter_offset"]
        data[at:at + 6] = b"\xff" * 6  # a header that does not parse
    path.write_bytes(bytes(data))
    v = t["k"][4321].as_py()
    got = pa.table(sluice.read(str(path), filters=[("k", "=", v)]))
    assert got["k"].to_pylist() == [v]


def test_duckdb_written_filters(tmp_path):
    duckdb = pytest.importorskip("duckdb")
    path = tmp_path / "duck.parquet"
    duckdb.sql(f"""copy (select 'id' || (i * 7919 % 20011) as k, (i * 31 % 5003)::int as v, i
                        from range(600000) t(i))
                   to '{path}' (row_group_size 100000)""")
    meta = pq.ParquetFile(path).metadata
    assert meta.row_group(0).column(0).to_dict()["bloom_filter_offset"] is not None
    con = duckdb.connect()
    rnd = random.Random(3)
    for column, values in (("k", ["id%d" % rnd.randrange(20011) for _ in range(30)] + ["idx"]),
                           ("v", [rnd.randrange(5003) for _ in range(30)] + [-1, 99999])):
        for value in values:
            got = pa.table(sluice.read(str(path), filters=[(column, "=", value)]))
            want = con.execute(f"select i from read_parquet('{path}') where {column} = ?",
                               [value]).fetchall()
            assert sorted(got["i"].to_pylist()) == sorted(r[0] for r in want), (column, value)


@pytest.mark.parametrize("name", ["data_index_bloom_encoding_stats.parquet",
                                  "data_index_bloom_encoding_with_length.parquet"])
def test_parquet_mr_written_filters(name):
    # parquet-testing's files with a Bloom filter on their String column,
    # one without bloom_filter_length (its header is read first) and one with.
    from pkg_helpers import corpora_dir
    path = corpora_dir() / "parquet-testing" / "data" / name
    if not path.exists():
        pytest.skip(f"{path} not found")
    values = pq.read_table(path)["String"].to_pylist()
    for v in values + ["absent", "Hello!", ""]:
        got = pa.table(sluice.read(str(path), filters=[("String", "=", v)]))
        assert got["String"].to_pylist() == [x for x in values if x == v], v


def _damage_pages(path):
    _damage_all_but(path, set())


@pytest.mark.parametrize("options", [{}, {"dictionary_page_size_limit": "1k"},
                                     {"dictionary": False, "data_page_version": "2.0"}])
def test_sluice_writes_filters_that_duckdb_and_sluice_use(tmp_path, options):
    """-W bloom_filters=...: one filter per chunk of the columns named, sized
    by the dictionary (or by the values when there is none or it fell back).
    DuckDB skips the row groups they rule out (its reads of damaged pages
    would fail), and so does sluice; no value present is ever missed."""
    duckdb = pytest.importorskip("duckdb")
    rnd = random.Random(2)
    n = 40000
    ids = list(range(n))
    rnd.shuffle(ids)
    t = pa.table({
        "k": pa.array(["key-%06d" % (i * 7919 % 100003) for i in ids]),
        "m": pa.array([i * 3 for i in ids], pa.int64()),
        "x": pa.array([i / 8 for i in ids], pa.float64()),
        "d": pa.array([dt.date(2000, 1, 1) + dt.timedelta(days=i % 5000) for i in ids]),
        "plain": pa.array(ids, pa.int64()),
    })
    path = tmp_path / "w.parquet"
    sluice.write(t, str(path), row_group_size=10000, bloom_filters=["k", "m", "x", "d"],
                 bloom_filter_fpp=0.001, **options)
    meta = pq.ParquetFile(path).metadata
    for g in range(meta.num_row_groups):
        offsets = [meta.row_group(g).column(c).to_dict()["bloom_filter_offset"]
                   for c in range(meta.num_columns)]
        assert [o is not None for o in offsets] == [True, True, True, True, False]
    assert pq.read_table(path).equals(t)
    polars = pytest.importorskip("polars")
    assert polars.read_parquet(path).to_arrow().to_pylist() == t.to_pylist()
    con = duckdb.connect()
    rows = t.to_pylist()
    # No false negatives: values present are found by sluice and by DuckDB.
    for r in rnd.sample(rows, 25):
        for column in ("k", "m", "x", "d"):
            want = sum(1 for x in rows if x[column] == r[column])
            got = pa.table(sluice.read(str(path), filters=[(column, "=", r[column])]))
            assert got.num_rows == want, (column, r[column])
            duck = con.execute(f"select count(*) from read_parquet('{path}') where {column} = ?",
                               [r[column]]).fetchone()[0]
            assert duck == want, (column, r[column])
    # Every page damaged: lookups of absent values inside the statistics'
    # range still succeed, so both skipped every row group by its filter.
    _damage_pages(path)
    absent = [("k", "key-000001x"), ("m", 4), ("m", 30001), ("x", 0.0625), ("x", 100.3)]
    for column, value in absent:
        assert pa.table(sluice.read(str(path), filters=[(column, "=", value)])).num_rows == 0
        assert con.execute(f"select count(*) from read_parquet('{path}') where {column} = ?",
                           [value]).fetchone()[0] == 0
    with pytest.raises(sluice.Error):
        sluice.read(str(path), filters=[("m", "=", 3)])


def test_bloom_filter_options_are_checked(tmp_path):
    t = pa.table({"a": [1, 2, 3], "s": pa.array([{"b": 1}, {"b": 2}, None])})
    path = tmp_path / "o.parquet"
    with pytest.raises(sluice.Error, match="'nope'"):
        sluice.write(t, str(path), bloom_filters=["a", "nope"])
    with pytest.raises(sluice.Error, match="bloom_filter_fpp"):
        sluice.write(t, str(path), bloom_filters=["a"], bloom_filter_fpp=1.5)
    assert not path.exists()
    # A struct column names its leaves; "s.b" names one.
    for names in (["s"], ["s.b"]):
        sluice.write(t, str(path), bloom_filters=names)
        chunk = pq.ParquetFile(path).metadata.row_group(0).column(1).to_dict()
        assert chunk["bloom_filter_offset"] is not None
        assert pq.read_table(path).equals(t)


@pytest.mark.parametrize("value", [0.0, -0.0])
def test_either_zero_finds_both(tmp_path, value):
    # The filter takes 0.0 and -0.0 as equal; the Bloom filter holds the bits
    # written, so both zeros are looked up, whichever the filter names.
    t = pa.table({"x": pa.array([1.5, 0.0, 2.5, -0.0, 3.5, 4.5])})
    path = tmp_path / "zeros.parquet"
    pq.write_table(t, path, row_group_size=2,
                   bloom_filter_options={"x": {"ndv": 10, "fpp": 0.001}})
    got = pa.table(sluice.read(str(path), filters=[("x", "=", value)]))
    assert [str(v) for v in got["x"].to_pylist()] == ["0.0", "-0.0"]
