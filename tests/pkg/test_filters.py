"""Row filters (filters=[(column, op, value)], the CLI's --filter): the rows
sluice keeps equal the rows pyarrow keeps with the same filters (DuckDB's
WHERE for `not in`, where pyarrow keeps nulls and SQL does not), on Parquet,
Arrow IPC, CSV and Avro; Parquet row groups whose statistics exclude every
row are not read at all (proved with a row group whose data is damaged)."""
from __future__ import annotations

import datetime as dt
import fractions
import math
import re
import uuid

import pytest

import sluice

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")
pc = pytest.importorskip("pyarrow.compute")

N = 5000


def _table():
    ts0 = dt.datetime(2024, 1, 1)
    rows = range(N)
    return pa.table({
        "i": pa.array([None if r % 97 == 0 else r for r in rows], pa.int64()),
        "s32": pa.array([(r * 7) % 1000 - 500 for r in rows], pa.int32()),
        "u8": pa.array([r % 256 for r in rows], pa.uint8()),
        "f": pa.array([math.nan if r % 101 == 0 else None if r % 103 == 0 else r / 10
                       for r in rows], pa.float64()),
        "s": pa.array([None if r % 89 == 0 else "k%04d" % (r % 300) for r in rows]),
        "b": pa.array([None if r % 53 == 0 else r % 3 == 0 for r in rows]),
        "d": pa.array([dt.date(2024, 1, 1) + dt.timedelta(days=r // 10) for r in rows]),
        "ts": pa.array([ts0 + dt.timedelta(minutes=r) for r in rows], pa.timestamp("us")),
        "tz": pa.array([ts0 + dt.timedelta(seconds=r) for r in rows],
                       pa.timestamp("ms", tz="UTC")),
        "cat": pa.array(["c%d" % (r % 5) for r in rows]).dictionary_encode(),
    })


FILTERS = [
    [("i", ">", 4000)],
    [("i", "<=", 10)],
    [("i", "==", 1234)],
    [("i", "in", [5, 6, 4999, 100000])],
    [("i", "!=", 3)],
    [("s32", ">=", 400), ("u8", "<", 10)],
    [("u8", "in", [0, 255])],
    [("f", ">", 250.5)],
    [("f", "<", 1.0)],
    [("s", "=", "k0042")],
    [("s", ">", "k0290")],
    [("s", "in", ["k0001", "k0299", "zzz"])],
    [("b", "=", True)],
    [("d", ">=", dt.date(2024, 1, 20)), ("d", "<", dt.date(2024, 1, 22))],
    [("ts", ">", dt.datetime(2024, 1, 4, 3, 0))],
    [("tz", "<", dt.datetime(2024, 1, 1, 0, 0, 30, tzinfo=dt.timezone.utc))],
    [("cat", "=", "c3")],
    [("i", ">", 10**9)],  # nothing passes: an empty table with the schema
]


def _expected(table, filters):
    mask = None
    for name, op, value in filters:
        col = table[name]
        if isinstance(col.type, pa.DictionaryType):
            col = col.cast(col.type.value_type)
        if op in ("=", "=="):
            m = pc.equal(col, pa.scalar(value, col.type))
        elif op == "!=":
            m = pc.not_equal(col, pa.scalar(value, col.type))
        elif op == "in":
            m = pc.is_in(col, value_set=pa.array(value, col.type))
            m = pc.and_kleene(m, pc.is_valid(col))
        else:
            fn = {"<": pc.less, "<=": pc.less_equal, ">": pc.greater, ">=": pc.greater_equal}[op]
            m = fn(col, pa.scalar(value, col.type))
        mask = m if mask is None else pc.and_kleene(mask, m)
    return table.filter(mask)  # nulls in the mask drop the row, as in SQL


def _same(got, want):
    got = pa.table(got)
    assert got.num_rows == want.num_rows
    for name in want.column_names:
        g, w = got[name], want[name]
        if isinstance(w.type, pa.DictionaryType):
            w = w.cast(w.type.value_type)
        if isinstance(g.type, pa.DictionaryType):
            g = g.cast(g.type.value_type)
        assert g.to_pylist() == w.to_pylist() or _nan_equal(g.to_pylist(), w.to_pylist()), name


def _nan_equal(a, b):
    return len(a) == len(b) and all(
        x == y or (isinstance(x, float) and isinstance(y, float) and math.isnan(x) and math.isnan(y))
        for x, y in zip(a, b))


@pytest.fixture(scope="module")
def table():
    return _table()


@pytest.fixture(scope="module")
def parquet_file(tmp_path_factory, table):
    path = tmp_path_factory.mktemp("filters") / "t.parquet"
    pq.write_table(table, path, row_group_size=500)
    return path


@pytest.mark.parametrize("filters", FILTERS, ids=lambda f: repr(f)[:60])
def test_parquet_rows_equal_pyarrows(parquet_file, table, filters):
    want = _expected(table, filters)
    # pyarrow's own reading of the file with the filter agrees with the mask
    assert pq.read_table(parquet_file, filters=filters).num_rows == want.num_rows
    _same(sluice.read(str(parquet_file), filters=filters), want)


@pytest.mark.parametrize("filters", FILTERS[:6] + FILTERS[9:12], ids=lambda f: repr(f)[:60])
@pytest.mark.parametrize("ext", ["arrow", "csv", "avro"])
def test_other_formats_rows_equal_pyarrows(tmp_path, table, filters, ext):
    small = table.select(["i", "s32", "u8", "f", "s"])
    path = tmp_path / ("t." + ext)
    sluice.write(small, str(path))
    want = _expected(small, [f for f in filters if f[0] in small.column_names])
    got = sluice.read(str(path), filters=[f for f in filters if f[0] in small.column_names])
    _same(got, want)


# pyarrow's disjunctive normal form: any group may hold.
DNF = [
    [[("i", "<", 10)], [("i", ">", 4990)]],
    [[("s32", ">=", 400), ("u8", "<", 10)], [("s", "in", ["k0001", "k0299"]), ("f", ">", 100.0)],
     [("i", "=", 2500)]],
    [[("f", "<", 1.0)], [("f", "<", 2.0)]],  # overlapping groups: rows once
    [[("s", "=", "k0042")], [("i", ">", 10**9)]],  # a group no row passes
    [[("cat", "=", "c3"), ("b", "=", True)], [("d", "=", dt.date(2024, 1, 5))]],
]


def _expected_dnf(table, groups):
    masks = []
    for group in groups:
        kept = _expected(table.append_column("__row", pa.array(range(table.num_rows))), group)
        masks.append(set(kept["__row"].to_pylist()))
    rows = sorted(set().union(*masks))
    return table.take(pa.array(rows, pa.int64()))


@pytest.mark.parametrize("groups", DNF, ids=lambda f: repr(f)[:60])
def test_or_groups_equal_pyarrows(parquet_file, table, groups):
    want = _expected_dnf(table, groups)
    assert pq.read_table(parquet_file, filters=groups).num_rows == want.num_rows
    _same(sluice.read(str(parquet_file), filters=groups), want)
    small = table.select(["i", "s32", "u8", "f", "s"])
    usable = [g for g in groups if all(c[0] in small.column_names for c in g)]
    if usable:
        for ext in ("arrow", "csv"):
            path = parquet_file.parent / ("dnf." + ext)
            sluice.write(small, str(path))
            _same(sluice.read(str(path), filters=usable), _expected_dnf(small, usable))


def test_or_groups_prune_row_groups(tmp_path):
    # Two point lookups in different row groups: the other row groups, damaged,
    # are excluded by statistics (i) or Bloom filters (k, values in no order).
    rows = 10000
    t = pa.table({"i": pa.array(range(rows), pa.int64()),
                  "k": pa.array(["key-%05d" % (r * 7919 % rows) for r in range(rows)])})
    path = tmp_path / "or.parquet"
    pq.write_table(t, path, row_group_size=1000, compression="snappy", use_dictionary=False,
                   write_page_index=False, bloom_filter_options={"k": {"ndv": 1000, "fpp": 0.001}})
    meta = pq.ParquetFile(path).metadata
    data = bytearray(path.read_bytes())
    for g in range(meta.num_row_groups):
        if g in (2, 7):
            continue
        for c in range(meta.num_columns):
            chunk = meta.row_group(g).column(c)
            for k in range(chunk.data_page_offset + 40,
                           chunk.data_page_offset + chunk.total_compressed_size - 8):
                data[k] = 0xAB
    path.write_bytes(bytes(data))
    k7 = "key-%05d" % (7500 * 7919 % rows)
    for groups in ([[("i", "=", 2100)], [("i", ">=", 7000), ("i", "<", 7003)]],
                   [[("i", "=", 2100)], [("k", "=", k7)]],
                   [[("k", "=", k7), ("i", ">", 0)], [("i", "in", [2001, 2002])]]):
        want = _expected_dnf(t, groups)
        assert pa.table(sluice.read(str(path), filters=groups))["i"].to_pylist() == \
            want["i"].to_pylist()
        assert want.num_rows > 0
    # A group that needs a damaged row group reads it, and fails.
    with pytest.raises(sluice.Error):
        sluice.read(str(path), filters=[[("i", "=", 2100)], [("i", "=", 5100)]])


def test_or_groups_errors_and_escapes(tmp_path, parquet_file):
    with pytest.raises(ValueError, match="empty group"):
        sluice.read(str(parquet_file), filters=[[("i", "=", 1)], []])
    with pytest.raises(sluice.InvalidArgumentError, match="empty condition"):
        sluice.read(str(parquet_file), filters="i=1;;i=2")
    # ';' inside a value is escaped by Python, a separator in text.
    t = pa.table({"s": ["a;b", "a", "b"], "p": [1, 2, 3]})
    path = tmp_path / "semi.parquet"
    pq.write_table(t, path)
    assert pa.table(sluice.read(str(path), filters=[("s", "=", "a;b")]))["p"].to_pylist() == [1]
    assert pa.table(sluice.read(str(path), filters="s=a;s=b"))["p"].to_pylist() == [2, 3]
    # Partition keys inside groups: rows as pyarrow keeps them.
    for year in (2023, 2024):
        d = tmp_path / "ds" / ("year=%d" % year)
        d.mkdir(parents=True)
        pq.write_table(pa.table({"x": [year * 10, year * 10 + 1]}), d / "part.parquet")
    groups = [[("year", "=", 2023)], [("x", "=", 20241)]]
    got = pa.table(sluice.read(str(tmp_path / "ds"), filters=groups))
    want = pq.read_table(tmp_path / "ds", filters=groups)
    assert sorted(got["x"].to_pylist()) == sorted(want["x"].to_pylist()) == [20230, 20231, 20241]
    # A NUL byte is a byte of the value (as %00 in directory names): not a
    # number for an integer key, spelled visibly in the message; from Python
    # a str that spells no key's int equals no key.
    assert pa.table(sluice.read(str(tmp_path / "ds"),
                                filters=[("year", "=", "20\x0023")])).num_rows == 0
    with pytest.raises(sluice.InvalidArgumentError,
                       match=r"'20\\x0023' is not a number, as the values of 'year' are"):
        sluice.read(str(tmp_path / "ds"), filters="year=20%0023")
    got = pa.table(sluice.read(str(tmp_path / "ds"), filters=[[("x", "=", 20231)],
                                                              [("x", "=", 20240)]]))
    assert sorted(got["x"].to_pylist()) == [20231, 20240]
    # Text on an int key is the number it spells, as pyarrow takes it in an
    # `in` (its `=` refuses it; sluice takes both alike)
    for values in (["2023", "2024"], ["2024"]):
        got = pa.table(sluice.read(str(tmp_path / "ds"), filters=[("year", "in", values)]))
        want = pq.read_table(tmp_path / "ds", filters=[("year", "in", values)])
        assert sorted(got["x"].to_pylist()) == sorted(want["x"].to_pylist()), values
    got = pa.table(sluice.read(str(tmp_path / "ds"), filters=[("year", "=", "2024")]))
    assert sorted(got["x"].to_pylist()) == [20240, 20241]


def test_not_in_drops_nulls_as_sql_does(parquet_file):
    duckdb = pytest.importorskip("duckdb")
    want = duckdb.sql(f"select i from read_parquet('{parquet_file}') "
                      "where i not in (1, 2, 3)").fetchall()
    got = sluice.read(str(parquet_file), filters=[("i", "not in", [1, 2, 3])], columns=["i"])
    assert pa.table(got)["i"].to_pylist() == [row[0] for row in want]


def test_projection_leaves_out_the_filter_columns(parquet_file, table):
    got = pa.table(sluice.read(str(parquet_file), columns=["s", "d"],
                               filters=[("i", ">", 4500), ("u8", "<", 100)]))
    assert got.column_names == ["s", "d"]
    want = _expected(table, [("i", ">", 4500), ("u8", "<", 100)])
    assert got["s"].to_pylist() == want["s"].to_pylist()


def test_limit_counts_rows_that_pass(parquet_file, table):
    got = pa.table(sluice.read(str(parquet_file), filters=[("s32", ">", 0)], limit=777))
    want = _expected(table, [("s32", ">", 0)]).slice(0, 777)
    assert got["i"].to_pylist() == want["i"].to_pylist()


def test_to_pandas_and_unordered(parquet_file, table):
    want = _expected(table, [("f", ">", 100.0)])
    df = sluice.read(str(parquet_file), filters=[("f", ">", 100.0)]).to_pandas()
    assert df["i"].dropna().astype("int64").tolist() == [v for v in want["i"].to_pylist()
                                                         if v is not None]
    got = sluice.read(str(parquet_file), filters=[("f", ">", 100.0)], ordered=False)
    assert sorted(v for v in pa.table(got)["f"].to_pylist()) == sorted(want["f"].to_pylist())


def test_pruned_row_groups_are_not_read(tmp_path):
    # Ten row groups of i = 0..9999; row group 3 (i 3000..3999) gets its data
    # damaged. A filter its statistics exclude reads fine; one that needs it fails.
    t = pa.table({"i": pa.array(range(10000), pa.int64())})
    path = tmp_path / "damaged.parquet"
    pq.write_table(t, path, row_group_size=1000, compression="snappy", use_dictionary=False,
                   write_page_index=False)
    meta = pq.ParquetFile(path).metadata
    chunk = meta.row_group(3).column(0)
    start = chunk.data_page_offset
    data = bytearray(path.read_bytes())
    # Past the page header (a few dozen bytes): garbage where the values are.
    for k in range(start + 40, start + chunk.total_compressed_size - 8):
        data[k] = 0xAB
    path.write_bytes(bytes(data))
    got = pa.table(sluice.read(str(path), filters=[("i", ">=", 5000)]))
    assert got["i"].to_pylist() == list(range(5000, 10000))
    got = pa.table(sluice.read(str(path), filters=[("i", "<", 1000)]))
    assert got["i"].to_pylist() == list(range(1000))
    with pytest.raises(sluice.Error):
        sluice.read(str(path), filters=[("i", ">=", 3500), ("i", "<", 3600)])


def test_pruned_row_groups_of_a_categorical_column_are_not_read(tmp_path):
    # A pandas categorical (read back as a dictionary column) is pruned by
    # its statistics like a plain string column: row group 3 is damaged.
    keys = ["g%d-%03d" % (r // 1000, r % 7) for r in range(10000)]
    t = pa.table({"k": pa.array(keys).dictionary_encode(), "i": pa.array(range(10000))})
    path = tmp_path / "damaged_cat.parquet"
    pq.write_table(t, path, row_group_size=1000, compression=None, write_page_index=False)
    meta = pq.ParquetFile(path).metadata
    data = bytearray(path.read_bytes())
    for column in range(meta.num_columns):
        chunk = meta.row_group(3).column(column)
        start = chunk.dictionary_page_offset or chunk.data_page_offset
        for k in range(start + 20, start + chunk.total_compressed_size - 4):
            data[k] = 0xAB
    path.write_bytes(bytes(data))
    assert pa.types.is_dictionary(pa.table(sluice.read(str(path), limit=1))["k"].type)
    got = pa.table(sluice.read(str(path), filters=[("k", "in", ["g5-001", "g7-006"])]))
    assert got["i"].to_pylist() == [r for r in range(10000) if keys[r] in ("g5-001", "g7-006")]
    assert got["k"].to_pylist() == [keys[r] for r in got["i"].to_pylist()]
    got = pa.table(sluice.read(str(path), filters=[("k", ">=", "g8")]))
    assert got["i"].to_pylist() == list(range(8000, 10000))
    with pytest.raises(sluice.Error):
        sluice.read(str(path), filters=[("k", "=", "g3-002")])
    # Written by a pyarrow before 11.0.0, whose dictionary statistics covered
    # a column's first chunk only (apache/arrow#15042): not believed, so the
    # damaged row group is read.
    version = pq.ParquetFile(path).metadata.created_by.encode()
    assert version.startswith(b"parquet-cpp-arrow version ")
    old = b"parquet-cpp-arrow version 10" + version[len(b"parquet-cpp-arrow version 10"):]
    assert len(old) == len(version)
    path.write_bytes(path.read_bytes().replace(version, old))
    assert pq.ParquetFile(path).metadata.created_by.startswith("parquet-cpp-arrow version 10")
    with pytest.raises(sluice.Error):
        sluice.read(str(path), filters=[("k", ">=", "g8")])


@pytest.mark.parametrize("fmt", ["csv", "parquet"])
def test_a_filter_on_a_duplicated_column_name_is_ambiguous(tmp_path, fmt):
    """Two columns named a: filtering by 'a' is refused, as pyarrow refuses
    it ("Multiple matches for FieldRef") and as columns=['a'] is; it used
    the first column, and ('a', '=', 2) gave no rows without a word."""
    path = tmp_path / f"dup.{fmt}"
    if fmt == "csv":
        path.write_bytes(b"a,a,b\n1,2,3\n")
    else:
        pq.write_table(pa.Table.from_arrays([pa.array([1]), pa.array([2]), pa.array([3])],
                                            names=["a", "a", "b"]), path)
    if fmt == "parquet":  # (pyarrow.dataset refuses such a CSV file whole)
        with pytest.raises(pa.ArrowInvalid):
            pq.read_table(path, filters=[("a", "=", 2)])
    for filters in ([("a", "=", 2)], "a=2"):
        with pytest.raises(sluice.InvalidArgumentError, match="column 'a' appears 2 times"):
            sluice.read(path, filters=filters)
    assert sluice.read(path, filters=[("b", "=", 3)]).num_rows == 1


def test_bad_filters_are_clear_errors(parquet_file):
    with pytest.raises(sluice.InvalidArgumentError, match="no column 'nope'"):
        sluice.read(str(parquet_file), filters=[("nope", "=", 1)])
    # A str that is no number on an int column: refused for its Python
    # type (as pyarrow refuses a str there) before the library parses it;
    # the text form's values take the column's type, and the library says
    # what the text is not.
    with pytest.raises(pa.ArrowNotImplementedError):
        pq.read_table(parquet_file, filters=[("i", "=", "x1")])
    with pytest.raises(sluice.InvalidArgumentError,
                       match=r"column 'i' has type int64; a value of type str \('x1'\)"):
        sluice.read(str(parquet_file), filters=[("i", "=", "x1")])
    with pytest.raises(sluice.InvalidArgumentError,
                       match=r"column 'i' has type int64; a value of type str \('b'\)"):
        sluice.read(str(parquet_file), columns=["d"], filters=[("i", ">", "b")])
    with pytest.raises(sluice.InvalidArgumentError, match="'x1' is not an integer"):
        sluice.read(str(parquet_file), filters="i=x1")
    with pytest.raises(sluice.InvalidArgumentError, match="'d' has type date32.* str"):
        sluice.read(str(parquet_file), filters=[("d", ">", "yesterday")])
    with pytest.raises(sluice.InvalidArgumentError, match="YYYY-MM-DD"):
        sluice.read(str(parquet_file), filters="d>yesterday")
    with pytest.raises(ValueError):
        sluice.read(str(parquet_file), filters=[("i", "=", None)])


@pytest.mark.parametrize("ext", ["parquet", "arrow"])
def test_binary_values_with_nul_bytes(tmp_path, ext):
    """%00 in a filter's value is a NUL byte (it stayed "%00" and matched
    nothing); a number with one is refused."""
    import pyarrow.dataset as ds

    t = pa.table({"b": pa.array([b"\x00k1", b"k2", b"\x00", b"%00", b"k\x00\x00"] * 3),
                  "i": pa.array(range(15), pa.int64())})
    path = tmp_path / ("nul." + ext)
    if ext == "parquet":
        pq.write_table(t, path)
    else:
        with pa.ipc.new_file(str(path), t.schema) as w:
            w.write_table(t)
    for flt in ([("b", "=", b"\x00k1")], [("b", "in", [b"\x00", b"k\x00\x00"])],
                [("b", "=", b"%00")], [("b", "!=", b"\x00")], [("b", ">", b"\x00")]):
        got = pa.table(sluice.read(str(path), filters=flt))
        want = ds.dataset(t).to_table(filter=pq.filters_to_expression(flt))
        assert got.to_pylist() == want.to_pylist(), flt
        assert got.num_rows > 0, flt
    with pytest.raises(sluice.InvalidArgumentError, match="'1%002' is not free of NUL bytes"):
        sluice.read(str(path), filters="i=1%002")


def test_unsupported_column_type(tmp_path):
    path = tmp_path / "l.parquet"
    pq.write_table(pa.table({"l": [[1], [2]]}), path)
    with pytest.raises(sluice.UnsupportedError, match="'l'"):
        sluice.read(str(path), filters=[("l", "=", 1)])


@pytest.mark.parametrize("ext", ["parquet", "arrow"])
def test_a_null_typed_column_passes_no_row_as_pyarrow(tmp_path, ext):
    # Every value of a null-typed column is null, which compares with
    # nothing: no row passes (it was an UnsupportedError).
    import pyarrow.dataset as ds

    t = pa.table({"n": pa.nulls(6), "a": pa.array(range(6), pa.int64())})
    path = tmp_path / ("nulls." + ext)
    if ext == "parquet":
        pq.write_table(t, path)
    else:
        with pa.ipc.new_file(str(path), t.schema) as w:
            w.write_table(t)
    assert pa.table(sluice.read(str(path))).schema == t.schema
    for flt in ([("n", "=", 1)], [("n", "!=", "x")], [("n", "<", 2.5)], [("n", "in", [1, 2])],
                [[("n", "=", 1)], [("a", ">", 3)]], [[("n", ">=", 0), ("a", "<", 3)], [("a", "=", 0)]]):
        got = pa.table(sluice.read(str(path), filters=flt))
        want = ds.dataset(t).to_table(filter=pq.filters_to_expression(flt))
        assert got.to_pylist() == want.to_pylist(), flt
    # `not in` drops nulls, as SQL does (test_not_in_drops_nulls_as_sql_does).
    assert pa.table(sluice.read(str(path), filters=[("n", "not in", [1])])).num_rows == 0


@pytest.mark.parametrize("threads", [1, 2, 4])
def test_one_row_group_decoded_by_column_parts(tmp_path, table, threads):
    # Fewer splits than threads: the row group's columns are decoded on
    # several threads and zipped; the filter runs on the zipped rows.
    path = tmp_path / "one.parquet"
    pq.write_table(table, path, row_group_size=N)
    for filters in ([("i", "<", 2500), ("s", ">=", "k0100")], [("f", ">", 1e9)], [("b", "=", False)]):
        got = sluice.read(str(path), filters=filters, threads=threads, batch_rows=700)
        _same(got, _expected(table, filters))
        got = sluice.read(str(path), filters=filters, threads=threads, columns=["d", "s"])
        want = _expected(table, filters)
        assert pa.table(got).column_names == ["d", "s"]
        assert pa.table(got)["s"].to_pylist() == want["s"].to_pylist()


@pytest.mark.parametrize("flt,rows,window", [
    ([("id", ">=", 40000)], range(40000, 100000), True),   # 60% at the end: a window
    ([("id", "<", 60000)], range(0, 60000), True),         # 60% at the start
    ([("id", ">=", 99990)], range(99990, 100000), False),  # 10 rows: copied
    ([("id", ">", 30000), ("id", "<", 30011)], range(30001, 30011), False),
])
def test_a_short_run_is_copied_a_long_one_is_a_window(tmp_path, flt, rows, window):
    # One batch of 100,000 rows cut by a range: the run of rows that passes is
    # handed over as a window of the decoded buffers (offset into them) when
    # it is half the batch or more; a shorter run is copied, so that a few
    # rows never hold the whole batch's memory.
    t = pa.table({"id": pa.array(range(100000), pa.int64()),
                  "x": pa.array([i * 0.5 for i in range(100000)])})
    path = tmp_path / "one_group.parquet"
    pq.write_table(t, path, row_group_size=100000)
    with sluice.scan(str(path), filters=flt, batch_rows=100000) as s:
        batches = [pa.record_batch(b) for b in s]
    assert [b.num_rows for b in batches] == [len(rows)]
    got = batches[0]
    assert got.column(0).to_pylist() == list(rows)
    assert got.column(1).to_pylist() == [i * 0.5 for i in rows]
    offset = got.column(0).offset
    assert offset == (rows[0] if window else 0)
    # The same rows through sluice.read (a lone batch is taken as it is).
    assert pa.table(sluice.read(str(path), filters=flt))["id"].to_pylist() == list(rows)


@pytest.mark.parametrize("ext", ["parquet", "arrow", "csv"])
def test_float32_column_compares_with_the_literal_as_float32(tmp_path, ext):
    """A float32 column compares with a literal rounded to float32, as
    DuckDB and polars cast it (README: values compare as the column's type):
    f32 == 0.1 finds the stored float32(0.1), which as a double is
    0.10000000149..., and the row groups pruned by statistics agree."""
    import duckdb
    import pyarrow.parquet as pq
    table = pa.table({"f32": pa.array([0.1, 1e30, -1.5, 0.2, None], pa.float32())})
    path = tmp_path / f"f32.{ext}"
    if ext == "parquet":
        pq.write_table(table, path, row_group_size=1)
    else:
        sluice.write(table, path)
    pq.write_table(table, tmp_path / "ref.parquet")
    for op, value in [("=", 0.1), ("<", 0.2), ("<=", 0.2), (">", 0.1), ("!=", 0.1),
                      (">=", 1e30), ("in", [0.1, -1.5])]:
        read = {"format": "csv", "schema": "f32:float32"} if ext == "csv" else {}
        got = pa.table(sluice.read(path, filters=[("f32", op, value)], **read))
        sql_value = f"({', '.join(map(str, value))})" if op == "in" else value
        sql_op = "IN" if op == "in" else op
        want = duckdb.sql(f"SELECT f32 FROM '{tmp_path / 'ref.parquet'}' "
                          f"WHERE f32 {sql_op} {sql_value}").to_arrow_table()
        assert sorted(got.column("f32").to_pylist()) == \
            sorted(want.column("f32").to_pylist()), (op, value)


def test_float32_column_and_a_literal_past_its_range(tmp_path):
    """1e39 is no float32: rounded to one it became infinity, so f = 1e39
    found a stored +inf. Compared as a double instead, as DuckDB compares
    a column with such a literal."""
    import duckdb
    table = pa.table({"f": pa.array([1.0, math.inf, -math.inf, 3e38, None], pa.float32())})
    path = tmp_path / "f32big.parquet"
    pq.write_table(table, path, row_group_size=1)
    for op in ["=", "!=", "<", "<=", ">", ">="]:
        for lit in ("1e39", "-1e39"):
            got = pa.table(sluice.read(path, filters=[("f", op, float(lit))]))
            want = duckdb.sql(f"SELECT f FROM '{path}' WHERE f {op} {lit}").to_arrow_table()
            assert sorted(got["f"].to_pylist()) == sorted(want["f"].to_pylist()), (op, lit)


def test_conditions_as_lists_are_one_group_as_pyarrow_tells_them(tmp_path):
    """A list whose first item is a [column, op, value] list is one group
    of conditions, as pyarrow tells them apart ([['x', '>', 2]] was refused);
    a list of lists of such is still a list of groups."""
    path = tmp_path / "x.parquet"
    table = pa.table({"x": [1, 2, 3, 4], "s": ["a", "b", "c", "d"]})
    pq.write_table(table, path)
    for filters in ([["x", ">", 2]], [["x", ">", 1], ("s", "!=", "c")],
                    [[["x", "=", 1]], [["s", "=", "d"]]]):
        got = pa.table(sluice.read(path, filters=filters))
        want = pq.read_table(path, filters=[tuple(f) if isinstance(f[0], str) else
                                            [tuple(c) for c in f] for f in filters])
        assert got.to_pydict() == want.to_pydict(), filters


DECIMALS = ["1.25", "2.50", None, "-1.25", "-0.01", "0", "99999999.99", "-99999999.99",
            "1.26", "-1.24"]


@pytest.mark.parametrize("dtype,store_as_integer", [
    ("decimal128(10, 2)", False), ("decimal128(10, 2)", True), ("decimal128(38, 2)", False),
    ("decimal256(40, 2)", False)])
def test_decimal_columns_compare_by_exact_value(tmp_path, dtype, store_as_integer):
    """Decimal columns filter as DuckDB compares them: by the literal's exact
    value (Decimal, int or float), so on a scale-2 column x > 1.255 is
    x > 1.25 and x = 1.255 holds for no row; Parquet row groups (one row
    each here) are pruned by their statistics, stored as fixed-length bytes
    or as INT32/INT64."""
    import decimal
    import duckdb
    D = decimal.Decimal
    typ = eval("pa." + dtype)
    table = pa.table({"m": pa.array([None if v is None else D(v) for v in DECIMALS], typ),
                      "i": pa.array(range(len(DECIMALS)), pa.int64())})
    path = tmp_path / "dec.parquet"
    pq.write_table(table, path, row_group_size=1, store_decimal_as_integer=store_as_integer)
    literals = [D("1.25"), D("1.255"), D("-1.255"), D("-1.25"), D("0"), D("-0.001"), D("1E+2"),
                D("1E-7"), D("-1E-7"), D("99999999.99"), D("1E+50"), D("-1E+50"), 1, -2, 2.5]
    for op in ["=", "!=", "<", "<=", ">", ">="]:
        for lit in literals:
            got = sluice.read(path, filters=[("m", op, lit)]).to_pydict()["i"]
            sql_op = "<>" if op == "!=" else op
            sql_lit = f"{lit}::DOUBLE" if abs(D(str(lit))) > 10**30 else str(lit)
            want = [r[0] for r in duckdb.sql(
                f"SELECT i FROM '{path}' WHERE m {sql_op} {sql_lit} ORDER BY i").fetchall()]
            assert sorted(got) == want, (op, lit)
    got = sluice.read(path, filters=[("m", "in", [D("1.25"), D("-0.01"), D("7.777")])])
    assert sorted(got.to_pydict()["i"]) == [0, 4]
    # Not numbers (strtol skipped the space of "1e 5"), as on float columns.
    for text in ("m=1e%205", "m=1e", "m=1e+", "m=.", "m=-"):
        with pytest.raises(sluice.InvalidArgumentError, match="is not a number"):
            sluice.read(path, filters=text)


@pytest.mark.parametrize("store_as_integer", [False, True])
def test_decimal_row_groups_pruned_by_statistics_are_not_read(tmp_path, store_as_integer):
    import decimal
    t = pa.table({"m": pa.array([decimal.Decimal(i) / 100 for i in range(10000)],
                                pa.decimal128(12, 2))})
    path = tmp_path / "damaged_dec.parquet"
    pq.write_table(t, path, row_group_size=1000, compression=None, use_dictionary=False,
                   write_page_index=False, store_decimal_as_integer=store_as_integer)
    chunk = pq.ParquetFile(path).metadata.row_group(3).column(0)
    data = bytearray(path.read_bytes())
    for k in range(chunk.data_page_offset + 40, chunk.data_page_offset + chunk.total_compressed_size - 8):
        data[k] = 0xAB
    path.write_bytes(bytes(data))
    got = sluice.read(path, filters=[("m", ">=", decimal.Decimal("50.005"))]).to_pydict()["m"]
    assert got == [decimal.Decimal(i) / 100 for i in range(5001, 10000)]
    with pytest.raises(sluice.Error):
        sluice.read(path, filters=[("m", "=", decimal.Decimal("35.5"))])


@pytest.mark.parametrize("dtype", ["date32", "date64"])
def test_date_columns_compare_with_datetimes_as_pyarrow_does(tmp_path, dtype):
    """A datetime on a date column compares with the date's midnight, as
    pyarrow compares them (sluice refused it)."""
    days = [dt.date(2023, 5, 30) + dt.timedelta(days=k) for k in range(5)] + [None]
    table = pa.table({"d": pa.array(days, getattr(pa, dtype)())})
    path = tmp_path / "d.parquet"
    pq.write_table(table, path, row_group_size=2)
    for op in ["=", "!=", "<", "<=", ">", ">="]:
        for lit in [dt.datetime(2023, 6, 1), dt.datetime(2023, 6, 1, 12, 30),
                    dt.datetime(2023, 5, 31, 0, 0, 0, 1)]:
            got = pa.table(sluice.read(path, filters=[("d", op, lit)]))
            want = pq.read_table(path, filters=[("d", op, lit)])
            assert got.column("d").to_pylist() == want.column("d").to_pylist(), (op, lit)
    # An aware datetime on a stream, which no second open can type, is
    # compared by the library as pyarrow compares it (its zone was refused).
    import subprocess
    flt = [("d", ">", dt.datetime(2023, 6, 1, 3, tzinfo=dt.timezone(dt.timedelta(hours=4))))]
    with subprocess.Popen(["cat", str(path)], stdout=subprocess.PIPE) as cat:
        got = pa.table(sluice.read(cat.stdout, format="parquet", filters=flt))
        cat.stdout.close()
    want = pq.read_table(path, filters=flt)
    assert got.column("d").to_pylist() == want.column("d").to_pylist()


@pytest.mark.parametrize("dtype", ["date32", "date64"])
def test_aware_datetimes_on_date_columns_as_pyarrow_compares_them(tmp_path, dtype):
    """pyarrow compares an aware datetime on a date column with the date's
    midnight in UTC; sluice passed its check and the library refused the
    zone. Naive ones and dates too, on a file and on a date partition key."""
    pd = pytest.importorskip("pandas")
    days = [dt.date(2024, 1, 1) + dt.timedelta(days=k) for k in range(4)] + [None]
    path = tmp_path / "d.parquet"
    pq.write_table(pa.table({"d": pa.array(days, getattr(pa, dtype)())}), path, row_group_size=2)
    zone = dt.timezone
    values = [dt.datetime(2024, 1, 2, tzinfo=zone.utc),
              dt.datetime(2024, 1, 2, tzinfo=zone(dt.timedelta(hours=5))),
              dt.datetime(2024, 1, 2, 23, tzinfo=zone(dt.timedelta(hours=-2))),
              pd.Timestamp("2024-01-02 09:00", tz="Asia/Tokyo"),
              pd.Timestamp("2024-01-02 03:00", tz="Asia/Tokyo"),
              dt.datetime(2024, 1, 2), dt.datetime(2024, 1, 2, 12), dt.date(2024, 1, 3)]
    for value in values:
        for op in ["=", "!=", "<", "<=", ">", ">="]:
            want = pq.read_table(path, filters=[("d", op, value)]).column("d").to_pylist()
            got = pa.table(sluice.read(path, filters=[("d", op, value)])).column("d").to_pylist()
            assert got == want, (op, value)
    # (`in` as the `=` of each value; pyarrow's casts the values to dates in
    # the first one's zone, and prunes row groups comparing timestamps,
    # which disagree off midnight: these are at a UTC midnight)
    for flt in ([("d", "in", [values[0], dt.datetime(2024, 1, 4, tzinfo=zone.utc)])],
                [("d", "not in", [values[0]])], [("d", "in", [values[3]])]):
        # (`not in` drops nulls, as SQL does, where pyarrow keeps them)
        want = [d for d in pq.read_table(path, filters=flt).column("d").to_pylist() if d]
        assert pa.table(sluice.read(path, filters=flt)).column("d").to_pylist() == want, flt


def test_str_on_a_date_partition_key_compares_as_pyarrow_compares_it(tmp_path):
    """pyarrow types a key d=2024-01-02 as text and compares a str with that
    text; sluice types it as a date, and its library refused '2024' (not a
    date) and read '2024-01-02T00:00' as the date's midnight (a row that
    pyarrow's text comparison does not keep). A str that spells no date
    is compared as pyarrow compares it: by the keys' YYYY-MM-DD text."""
    for k, day in enumerate(["2023-12-31", "2024-01-01", "2024-01-02", "2024-02-01"]):
        (tmp_path / ("d=" + day)).mkdir()
        pq.write_table(pa.table({"x": [k]}), tmp_path / ("d=" + day) / "p.parquet")
    assert pa.table(sluice.read(tmp_path)).schema.field("d").type == pa.date32()
    for value in ["2024", "2024-01", "2024-01-02", "2024-01-02T00:00:00", "2024-01-02 12:00",
                  "2024-1", "2025", "abc", "", "0000", "99999"]:
        for flt in ([("d", op, value)] for op in ["=", "!=", "<", "<=", ">", ">="]):
            want = sorted(pq.read_table(tmp_path, filters=flt).column("x").to_pylist())
            got = sorted(pa.table(sluice.read(tmp_path, filters=flt)).column("x").to_pylist())
            assert got == want, flt
        for flt in ([("d", "in", [value])], [("d", "in", [value, "2024-01-01"])],
                    [("d", "not in", [value])], [("d", "not in", [value, "2024-01-01"])]):
            want = sorted(pq.read_table(tmp_path, filters=flt).column("x").to_pylist())
            got = sorted(pa.table(sluice.read(tmp_path, filters=flt)).column("x").to_pylist())
            assert got == want, flt


def test_an_expression_is_a_clear_type_error(parquet_file):
    """pq.read_table takes a pyarrow Expression as filters=; sluice takes the
    list forms and the text: it said "'Expression' object is not iterable"."""
    with pytest.raises(TypeError, match=r"a list of \(column, op, value\) tuples.*not Expression"):
        sluice.read(str(parquet_file), filters=pc.field("i") > 5)
    with pytest.raises(TypeError, match="not int"):
        sluice.read(str(parquet_file), filters=5)


def test_repro_cases_of_the_review_equal_pyarrows(tmp_path):
    """A datetime with microseconds on a timestamp[ms] column (refused as
    "not a date-time"), an `in` of 300 ids (refused past 256), a number
    past 2^53 with a fraction (compared as a double): as pyarrow answers."""
    table = pa.table({"id": pa.array(range(1000), pa.int64()),
                      "ts": pa.array(range(1000), pa.timestamp("ms")),
                      "big": pa.array([2**53 + k for k in range(1000)], pa.int64())})
    path = tmp_path / "r.parquet"
    pq.write_table(table, path, row_group_size=100)
    for flt in ([("ts", ">", dt.datetime(1970, 1, 1, 0, 0, 0, 500))],
                [("ts", "=", dt.datetime(1970, 1, 1, 0, 0, 0, 1500))],
                [("ts", "<=", dt.datetime(1970, 1, 1, 0, 0, 0, 1500))],
                [("id", "in", list(range(0, 900, 3)))],
                [("id", "not in", list(range(0, 900, 3)))]):
        got = pa.table(sluice.read(str(path), filters=flt)).column("id").to_pylist()
        want = pq.read_table(path, filters=flt).column("id").to_pylist()
        assert sorted(got) == sorted(want), flt
    # (pyarrow refuses to compare int64 past 2^53 with a float; DuckDB's
    # answer, by the exact value, is the CLI tests'.)
    import decimal
    flt = [("big", "<", decimal.Decimal("9007199254740995.0"))]
    assert sorted(pa.table(sluice.read(str(path), filters=flt)).column("id").to_pylist()) == \
        [0, 1, 2]


def test_float_values_compare_by_the_double_they_are(tmp_path):
    """A float value in filters= is the double it holds: it went through
    str(), so numpy's float32(0.1) became '0.1' (another double) and 2.0**63
    '9.223372036854776e+18' (not 2**63 on a uint64 column). Float columns
    compared with pyarrow's reading of the same filters; integer columns,
    which pyarrow refuses to compare with a double past 2**53, with Python's
    own int-float comparisons, which are exact (as the README says filters
    compare)."""
    import operator
    import numpy as np
    import pyarrow.parquet as pq
    path = tmp_path / "fl.parquet"
    table = pa.table({"f": [float(np.float32(0.1)), 0.1, 2.5],
                      "u": pa.array([2**63, 2**63 + 1, 7], pa.uint64()),
                      "i": pa.array([-2**63, -2**63 + 1, 7], pa.int64())})
    pq.write_table(table, path)
    for flt in [("f", "=", np.float32(0.1)), ("f", "!=", np.float32(0.1)), ("f", "=", 0.1),
                ("f", "in", [np.float32(0.1), np.float64(2.5)]), ("f", ">", np.float32(0.1))]:
        got = pa.table(sluice.read(str(path), filters=[flt]))
        want = pq.read_table(path, filters=[flt])
        assert got.to_pylist() == want.to_pylist(), flt
    ops = {"<": operator.lt, "=": operator.eq, ">=": operator.ge, ">": operator.gt,
           "<=": operator.le}
    rows = table.to_pylist()
    for col, op, value in [("u", "<", 2.0**63), ("u", "=", 2.0**63), ("u", ">=", np.float64(2**63)),
                           ("u", ">", np.float32(2**63)), ("i", "=", -2.0**63),
                           ("i", ">", -2.0**63), ("i", "<", 6.5), ("i", "<=", np.float64(7.0))]:
        got = pa.table(sluice.read(str(path), filters=[(col, op, value)]))
        want = [r for r in rows if ops[op](r[col], float(value))]
        assert got.to_pylist() == want, (col, op, value)


def _typed_table():
    import decimal
    return pa.table({
        "i": pa.array([1, 7, 3]), "u": pa.array([1, 7, 3], pa.uint8()),
        "f": pa.array([1.0, 7.5, 3.0]), "s": ["75001", "01000", "1000"],
        "bin": pa.array([b"a", b"b", b"c"]), "bo": [True, False, True],
        "d": pa.array([dt.date(2024, 1, k) for k in (1, 2, 3)]),
        "ts": pa.array([dt.datetime(2024, 1, 1, k) for k in (1, 2, 3)], pa.timestamp("us")),
        "tm": pa.array([dt.time(k) for k in (1, 2, 3)]),
        "dec": pa.array([decimal.Decimal(v) for v in ("1.5", "7.25", "3")], pa.decimal128(5, 2)),
        "ds": pa.array(["a", "b", "a"]).dictionary_encode()})


def _typed_values():
    import decimal
    np = pytest.importorskip("numpy")
    return {"int": 5, "np.int64": np.int64(5), "float": 2.5, "np.float32": np.float32(2.5),
            "Decimal": decimal.Decimal("2.5"), "str": "5", "np.str_": np.str_("b"),
            "bytes": b"b", "bool": True, "date": dt.date(2024, 1, 2),
            "datetime": dt.datetime(2024, 1, 2), "time": dt.time(2),
            # (reached the library as their text, compared as strings)
            "UUID": uuid.UUID(int=5), "Fraction": fractions.Fraction(5, 2), "complex": 2.5j}


def test_a_value_of_another_type_is_refused_as_pyarrow_refuses_it(tmp_path):
    """A filter value whose Python type is not the column's is an error, as
    pyarrow's filters refuse it, before anything is read (an int on a string
    column was compared as its text: ("zip", ">", 5) kept "75001"; a str on
    an int column as the number it spells); the ones pyarrow takes give its
    rows. Also on a column that is not projected, and in an `in`."""
    table = _typed_table()
    path = tmp_path / "typed.parquet"
    pq.write_table(table, path)
    for column in table.column_names:
        for name, value in _typed_values().items():
            try:
                want = pq.read_table(path, filters=[(column, ">", value)]).column(column)
            except (pa.ArrowNotImplementedError, pa.ArrowInvalid, TypeError):
                want = None
            if want is None and column == "dec" and name in ("int", "np.int64"):
                # (an integer on a decimal column compares by its value, as
                # the README says and as pyarrow compares it as a Decimal)
                want = pq.read_table(path, filters=[(column, ">", decimal_of(value))]
                                     ).column(column)
            if want is None:
                # (text that is no value of the column, "b" on an int one,
                # the library refuses as it parses it, naming both too)
                with pytest.raises(sluice.InvalidArgumentError,
                                   match=r"column '%s' has type .*; a value of type %s |"
                                   r"is not .*column '%s'" % (
                                       column, "str" if isinstance(value, str) else
                                       type(value).__name__, column)):
                    sluice.read(path, filters=[(column, ">", value)])
                with pytest.raises(sluice.InvalidArgumentError, match="column '%s'" % column):
                    sluice.read(path, columns=["i" if column != "i" else "s"],
                                filters=[(column, "in", [value])])
            else:
                got = pa.table(sluice.read(path, filters=[(column, ">", value)])).column(column)
                assert got.to_pylist() == want.to_pylist(), (column, name)


def decimal_of(value):
    import decimal
    return decimal.Decimal(int(value))


def test_the_issue_s_zip_codes(tmp_path):
    """The report's case, and pyarrow's answer to it; the text form types
    the value by the column, by design (zip>5 compares the text '5')."""
    path = tmp_path / "zip.parquet"
    pq.write_table(pa.table({"zip": ["75001", "01000", "1000"]}), path)
    with pytest.raises(pa.ArrowNotImplementedError):
        pq.read_table(path, filters=[("zip", ">", 5)])
    with pytest.raises(sluice.InvalidArgumentError, match="'zip' has type string; .* int"):
        sluice.read(path, filters=[("zip", ">", 5)])
    assert pa.table(sluice.read(path, filters="zip>5")).column("zip").to_pylist() == \
        pq.read_table(path, filters=[("zip", ">", "5")]).column("zip").to_pylist()


def test_a_naive_datetime_on_a_column_with_a_zone_is_refused(tmp_path):
    """pyarrow refuses to compare a timestamp with a zone and one without;
    sluice took a naive datetime on a Tokyo column as UTC (21 rows where
    Tokyo's noon leaves 12), and an aware one on a naive column as its
    instant. Values with the column's kind of clock give pyarrow's rows."""
    pd = pytest.importorskip("pandas")
    np = pytest.importorskip("numpy")
    tz = tmp_path / "tk.parquet"
    pq.write_table(pa.table({"t": pa.array(pd.date_range("2024-01-01", periods=24, freq="h",
                                                         tz="Asia/Tokyo"))}), tz)
    naive = tmp_path / "naive.parquet"
    pq.write_table(pa.table({"t": pa.array([dt.datetime(2024, 1, 1, k) for k in range(24)],
                                           pa.timestamp("us"))}), naive)
    utc = dt.timezone.utc
    for path, value in [(tz, dt.datetime(2024, 1, 1, 12)), (tz, pd.Timestamp("2024-01-01 12:00")),
                        (tz, np.datetime64("2024-01-01T12:00:00")),
                        (naive, dt.datetime(2024, 1, 1, 12, tzinfo=utc)),
                        (naive, pd.Timestamp("2024-01-01 12:00", tz="Asia/Tokyo"))]:
        with pytest.raises(pa.ArrowInvalid, match="timezone"):
            pq.read_table(path, filters=[("t", "<", pd.Timestamp(value).to_pydatetime())])
        with pytest.raises(sluice.InvalidArgumentError, match="'t' has type timestamp.*time zone"):
            sluice.read(path, filters=[("t", "<", value)])
    for path, value in [(tz, dt.datetime(2024, 1, 1, 12, tzinfo=utc)),
                        (tz, pd.Timestamp("2024-01-01 12:00", tz="Asia/Tokyo")),
                        (naive, dt.datetime(2024, 1, 1, 12)), (naive, pd.Timestamp("2024-01-01 12:00"))]:
        want = pq.read_table(path, filters=[("t", "<", value)]).column("t").to_pylist()
        got = pa.table(sluice.read(path, filters=[("t", "<", value)])).column("t").to_pylist()
        assert got == want and 0 < len(got) < 24, value


def _widening_csv(tmp_path):
    """x: ints in the first rows (the sample, infer_bytes=16) and text at
    the end, so x is int64 at the open and string after the refine."""
    path = tmp_path / "late.csv"
    path.write_text("x,y\n" + "".join("%d,%d\n" % (k, k) for k in range(10)) + "b,10\n")
    return path


def test_a_value_checked_again_after_a_csv_column_widens(tmp_path):
    """A CSV column sampled as int64 and widened to string by a later
    value (the read again with the wider types) compared ("x", ">", 5) as
    the text "5" (kept "6".."9" and "b"): the check runs again on the
    refined types, as pyarrow, given the whole file's type, refuses int
    against string. The paths that do not refine (scan, dask partitions)
    stop at the late value, never with rows compared as text."""
    import pyarrow.csv as pacsv
    import pyarrow.dataset as pads
    path = _widening_csv(tmp_path)
    whole = pacsv.read_csv(path)
    assert whole.schema.field("x").type == pa.string()
    with pytest.raises(pa.ArrowNotImplementedError):
        pads.dataset(whole).to_table(filter=pq.filters_to_expression([("x", ">", 5)]))
    assert sluice.schema(path, infer_bytes=16).field("x").type.kind == "int64"
    match = "'x' has type string; a value of type int"
    with pytest.raises(sluice.InvalidArgumentError, match=match):
        sluice.read(path, infer_bytes=16, filters=[("x", ">", 5)])
    with pytest.raises(sluice.InvalidArgumentError, match=match):
        sluice.read_pandas(path, infer_bytes=16, filters=[("x", ">", 5)])
    with pytest.raises(sluice.InvalidArgumentError, match=match):
        sluice.read(path, infer_bytes=16, filters=[[("y", "<", 0)], [("x", "in", [5])]])
    with pytest.raises(sluice.InvalidArgumentError, match=match):
        sluice.stats(path, infer_bytes=16, filters=[("x", ">", 5)])
    with pytest.raises(sluice.Error):
        list(sluice.scan(path, infer_bytes=16, filters=[("x", ">", 5)]))
    # A str value, pyarrow's for the whole file's type, is not refused on
    # the sampled int64 (it was, at the open): the column widens to string.
    want = pads.dataset(whole).to_table(filter=pq.filters_to_expression([("x", ">", "5")]))
    for infer_bytes in (16, "all"):
        got = pa.table(sluice.read(path, infer_bytes=infer_bytes, filters=[("x", ">", "5")]))
        assert got.column("x").to_pylist() == want.column("x").to_pylist()
    # (a scan reads with the sampled types: refused at the open, with a
    # message that says how to type the column by every row)
    with pytest.raises(sluice.InvalidArgumentError, match="has type int64; a value of type str "
                       r".*inferred from a sample.*infer_bytes='all'"):
        sluice.scan(path, infer_bytes=16, filters=[("x", ">", "5")])
    # A widening the value still fits (int64 -> float64) keeps it.
    path2 = tmp_path / "float.csv"
    path2.write_text("x\n" + "".join("%d\n" % k for k in range(10)) + "2.5\n")
    want = pads.dataset(pacsv.read_csv(path2)).to_table(
        filter=pq.filters_to_expression([("x", ">", 5)]))
    got = pa.table(sluice.read(path2, infer_bytes=8, filters=[("x", ">", 5)]))
    assert got.column("x").to_pylist() == want.column("x").to_pylist()


def _late_values_csv(tmp_path, c_late="true"):
    """id,b,c: b and c sampled as int64 (infer_bytes=64); past the sample b
    holds 'hello' (the column widens to string) and c `c_late`."""
    path = tmp_path / "late.csv"
    rows = ["%d,%d,%d" % (i, i % 7, i % 2) for i in range(200)]
    rows[150] = "150,hello,0"
    rows[151] = "151,3,%s" % c_late
    path.write_text("id,b,c\n" + "\n".join(rows) + "\n")
    return path


@pytest.mark.parametrize("filters", [
    [("c", "=", True)], [("c", "!=", True)], [("b", "=", "hello")],
    [("b", "in", ["hello", "3"])], [("b", ">=", "6"), ("c", "=", False)],
    [[("c", "=", True), ("id", "<", 10)], [("b", "=", "hello")]],
])
def test_a_value_of_the_widened_type_filters_the_widened_column(tmp_path, filters):
    """A value that the type inferred from a sample (int64) does not take
    but the whole file's type does (c widens to bool, b to string) was
    refused at the open; it filters the widened column as pyarrow filters
    the file read with the whole file's types. A scan, which keeps the
    sampled types, still refuses it at the open."""
    import pyarrow.csv as pacsv
    import pyarrow.dataset as pads
    path = _late_values_csv(tmp_path)
    assert sluice.schema(path, infer_bytes=64).field("c").type.kind == "int64"
    whole = pacsv.read_csv(path)
    assert (whole.schema.field("b").type, whole.schema.field("c").type) == (pa.string(), pa.bool_())
    want = pads.dataset(whole).to_table(filter=pq.filters_to_expression(filters))
    got = pa.table(sluice.read(path, infer_bytes=64, filters=filters))
    assert got.num_rows == want.num_rows > 0
    assert got.sort_by("id").equals(want.sort_by("id"))
    frame = sluice.read_pandas(path, infer_bytes=64, filters=filters)
    assert sorted(frame["id"]) == sorted(want.column("id").to_pylist())
    stats = sluice.stats(path, infer_bytes=64, filters=filters)
    assert stats[0]["count"] == want.num_rows
    with pytest.raises(sluice.InvalidArgumentError, match="has type int64"):
        sluice.scan(path, infer_bytes=64, filters=filters)


@pytest.mark.parametrize("c_late,filters,match", [
    # (c widens to bool; pyarrow compares no int with a bool column)
    ("true", [("c", "=", 1)], "'c' has type bool; a value of type int"),
    # (b widens to string; pyarrow compares no int with a string column)
    ("true", [("b", "=", 3)], "'b' has type string; a value of type int"),
    # (c stays int64 in the whole file: a bool or a str is no value of it)
    ("1", [("c", "=", True)], "'c' has type int64; a value of type bool"),
    ("1", [("c", "=", "1")], "'c' has type int64; a value of type str"),
    ("1", [("id", "<", 10), ("c", "=", "x")], "'c' has type int64; a value of type str"),
])
def test_a_value_the_whole_files_type_refuses_is_refused_as_pyarrow_refuses_it(
        tmp_path, c_late, filters, match):
    """A value that neither the sampled type nor the whole file's fits is
    refused once the whole file is read, as pyarrow refuses it given the
    whole file's types, the message saying the type was inferred from the
    data."""
    import pyarrow.csv as pacsv
    import pyarrow.dataset as pads
    path = _late_values_csv(tmp_path, c_late)
    with pytest.raises((pa.ArrowNotImplementedError, pa.ArrowInvalid)):
        pads.dataset(pacsv.read_csv(path)).to_table(filter=pq.filters_to_expression(filters))
    for call in (sluice.read, sluice.read_pandas, sluice.stats):
        with pytest.raises(sluice.InvalidArgumentError, match=match + ".*inferred from the data"):
            call(path, infer_bytes=64, filters=filters)


def test_a_dask_partition_does_not_compare_a_widened_column_as_text(tmp_path):
    """sluice.dask keeps the graph's types (int64 here): the partition that
    meets the late text stops, its rows are never compared as text."""
    pytest.importorskip("dask")
    import sluice.dask
    path = _widening_csv(tmp_path)
    ddf = sluice.dask.read(str(path), infer_bytes=16, filters=[("x", ">", 5)])
    with pytest.raises(sluice.Error):
        ddf.compute(scheduler="synchronous")


def test_timedelta_values_on_duration_columns_as_pyarrow_compares_them(tmp_path):
    """A timedelta (datetime's, pd.Timedelta, np.timedelta64) on a duration
    column went to the library as text ("0:00:01.500000") and was refused;
    it is the number of the column's unit it spans, compared by its exact
    value (1.5 s on a duration[s] column is between 1 and 2), as pyarrow
    compares it. On another column type it is refused, as pyarrow refuses
    it (it was compared as the text "0:00:01" on a string column)."""
    np = pytest.importorskip("numpy")
    pd = pytest.importorskip("pandas")
    units = ("s", "ms", "us", "ns")
    table = pa.table({"d_" + u: pa.array([k * {"s": 1, "ms": 10**3, "us": 10**6, "ns": 10**9}[u]
                                          for k in range(-2, 5)], pa.duration(u))
                      for u in units})
    table = table.append_column("s", pa.array(["0:00:01", "0:00:02", "x", "y", "z", "a", "b"]))
    table = table.append_column("i", pa.array(range(7)))
    path = tmp_path / "dur.parquet"
    pq.write_table(table, path)
    values = [dt.timedelta(seconds=1), dt.timedelta(seconds=1, microseconds=500000),
              dt.timedelta(days=-1, seconds=86399), dt.timedelta(milliseconds=2001),
              pd.Timedelta("1.5s"), pd.Timedelta("2s"), np.timedelta64(1500, "ms"),
              np.timedelta64(2, "s"), np.timedelta64(-1000, "ms"), np.timedelta64(3000001, "us")]
    for u in units:
        column = "d_" + u
        for value in values:
            for op in ("=", "!=", "<", "<=", ">", ">="):
                want = pq.read_table(path, filters=[(column, op, value)]).column(column)
                got = pa.table(sluice.read(path, filters=[(column, op, value)])).column(column)
                assert got.to_pylist() == want.to_pylist(), (column, op, value)
            flt = [(column, "in", [value, value * 2])]
            want = pq.read_table(path, filters=flt).column(column)
            got = pa.table(sluice.read(path, filters=flt)).column(column)
            assert got.to_pylist() == want.to_pylist(), (column, "in", value)
    for column in ("s", "i"):
        for value in (dt.timedelta(seconds=1), np.timedelta64(1, "s")):
            with pytest.raises(pa.ArrowNotImplementedError):
                pq.read_table(path, filters=[(column, ">", value)])
            with pytest.raises(sluice.InvalidArgumentError,
                               match="column '%s' has type .*; a value of type" % column):
                sluice.read(path, filters=[(column, ">", value)])
    # The text form: a number of the column's unit, exactly.
    got = pa.table(sluice.read(path, filters="d_s>1.5")).column("d_s")
    want = pq.read_table(path, filters=[("d_s", ">", dt.timedelta(seconds=1.5))]).column("d_s")
    assert got.to_pylist() == want.to_pylist()
    # The unit is learnt by an open without the filter, which a stream
    # cannot take: an error that says so (an integer of the unit is read).
    import subprocess
    for value, ok in ((dt.timedelta(seconds=1), False), (1, True)):
        with subprocess.Popen(["cat", str(path)], stdout=subprocess.PIPE) as cat:
            if ok:
                got = pa.table(sluice.read(cat.stdout, format="parquet",
                                           filters=[("d_s", ">", value)])).column("d_s")
                want = pq.read_table(path, filters=[("d_s", ">", dt.timedelta(seconds=1))])
                assert got.to_pylist() == want.column("d_s").to_pylist()
            else:
                with pytest.raises(sluice.InvalidArgumentError, match="a stream .* integer"):
                    sluice.read(cat.stdout, format="parquet", filters=[("d_s", ">", value)])
            cat.stdout.close()


def test_timedelta64_units_pyarrow_refuses_are_refused(tmp_path):
    """pyarrow's filters take an np.timedelta64 in s, ms, us or ns only
    ("Unsupported timedelta64 time unit" for W, D, h, m, ps, ...; "Unbound
    or generic" for one without a unit); sluice compared them by their
    length. Refused as pyarrow refuses them, naming the column and the
    value; the units pyarrow takes give its rows."""
    np = pytest.importorskip("numpy")
    path = tmp_path / "dur.parquet"
    pq.write_table(pa.table({"d": pa.array([k * 3600 for k in (0, 1, 2, 24, 168, 200)],
                                           pa.duration("s"))}), path)
    for value in [np.timedelta64(1, "W"), np.timedelta64(1, "D"), np.timedelta64(2, "h"),
                  np.timedelta64(120, "m"), np.timedelta64(7200), np.timedelta64(3, "ps")]:
        for flt in ([("d", ">", value)], [("d", "in", [value])]):
            with pytest.raises(pa.ArrowNotImplementedError, match="timedelta64 time unit"):
                pq.read_table(path, filters=flt)
            with pytest.raises(sluice.InvalidArgumentError, match=r"column 'd'.*timedelta64 "
                               r"in unit .*%s" % re.escape(repr(value))):
                sluice.read(path, filters=flt)
    _rows_as_pyarrow(path, "d", [np.timedelta64(7200, "s"), np.timedelta64(7200001, "ms"),
                                 np.timedelta64(86400 * 10**6, "us"),
                                 np.timedelta64(3600 * 10**9 + 1, "ns")])


def _rows_as_pyarrow(path, column, values):
    """sluice.read gives pyarrow's rows of `column` for each value with =,
    < and >= (the numpy units pyarrow takes)."""
    for value in values:
        for op in ["=", "<", ">="]:
            flt = [(column, op, value)]
            want = pq.read_table(path, filters=flt).column(column).to_pylist()
            got = pa.table(sluice.read(path, filters=flt)).column(column).to_pylist()
            assert got == want, (op, value)


def test_enum_and_pyarrow_scalar_values_are_the_values_they_stand_for(tmp_path):
    """A str-mixin Enum member compared as its name ("S.A": no row for
    ('s', '=', S.A)), and a pyarrow scalar, which pyarrow's filters take,
    was refused: each is the value it stands for, as pyarrow compares it."""
    import enum

    class S(str, enum.Enum):
        A = "a"

    class I(enum.IntEnum):
        TWO = 2

    path = tmp_path / "e.parquet"
    pq.write_table(pa.table({"s": ["a", "b", "a"], "i": [1, 2, 3], "f": [0.5, 1.5, 2.5]}), path)
    for flt in ([("s", "=", S.A)], [("s", "!=", S.A)], [("s", "in", [S.A])], [("i", ">=", I.TWO)],
                [("s", "=", pa.scalar("a"))], [("i", "<", pa.scalar(3, pa.int8()))],
                [("f", ">", pa.scalar(1.0))], [("i", "in", [pa.scalar(1), pa.scalar(3)])]):
        want = pq.read_table(path, filters=flt)
        got = pa.table(sluice.read(path, filters=flt))
        assert got.to_pylist() == want.to_pylist(), flt


def test_a_named_pipe_is_not_opened_twice(tmp_path):
    """The open that learns a duration's unit, or the types a refused value
    is named by, reads the source a second time: a named pipe (whose second
    open waited forever for another writer) is refused as a stream is."""
    import os
    import subprocess
    import sys
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    code = f"""
import threading, sluice
def feed():
    with open({str(fifo)!r}, "w") as f:
        f.write("a\\n1\\n")
threading.Thread(target=feed, daemon=True).start()
try:
    sluice.read({str(fifo)!r}, format="csv", filters=[("nope", "=", 1)])
except sluice.Error as e:
    print("error:", e)
"""
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=60)
    assert run.returncode == 0, run.stderr
    assert "error:" in run.stdout and "nope" in run.stdout, run.stdout


def test_str_on_an_int_partition_key(tmp_path):
    """pyarrow types an int key int32 (refusing a str with = and taking one
    in `in` as its cast to an int reads it: '07' is 7) or, with a value past
    int32, string (comparing a str as text); sluice types it int64 and
    compared a str numerically: ('y', '<', '3') kept y=1 only (pyarrow, by
    text, both), '2147483648.0' found a key no directory spells. A str
    spelling an int as pyarrow's cast reads it compares as that int (with =
    too, which pyarrow refuses); any other equals no key (pyarrow's `in`
    refuses it); <, <=, >, >= with a str are refused, as text order is not
    number order."""
    small, large = tmp_path / "small", tmp_path / "large"
    for root, keys in ((small, ["1", "7", "-3"]), (large, ["1", "2147483648", "-3"])):
        for y in keys:
            (root / ("y=" + y)).mkdir(parents=True)
            pq.write_table(pa.table({"v": [int(y)]}), root / ("y=" + y) / "part.parquet")
        assert pa.table(sluice.read(root)).schema.field("y").type == pa.int64()
    assert pq.read_table(small).schema.field("y").type.value_type == pa.int32()
    assert pq.read_table(large).schema.field("y").type.value_type == pa.string()

    def rows(root, flt, reader):
        return sorted(pa.table(reader(root, filters=flt)).column("v").to_pylist())

    # int32-typed in pyarrow: `in` / `not in` as pyarrow's cast reads the str
    for value in ["7", "07", "-0", "-03", "+1", " 1", "1.0", "", "abc", "99999999999999999999"]:
        for op, same in (("in", "="), ("not in", "!=")):
            got = rows(small, [("y", op, [value])], sluice.read)
            try:
                want = rows(small, [("y", op, [value])], pq.read_table)
            except pa.ArrowTypeError:  # pyarrow refuses a str its cast cannot read
                want = [] if op == "in" else [-3, 1, 7]
            assert got == want, (op, value)
            assert rows(small, [("y", same, value)], sluice.read) == want, (same, value)
    # string-typed in pyarrow: the same rows where text and number agree
    for value in ["1", "2147483648", "-3", "+1", " 1", "1.0", "2147483648.0", "", "abc"]:
        for flt in ([("y", "=", value)], [("y", "!=", value)], [("y", "in", [value])],
                    [("y", "in", [value, "1"])], [("y", "not in", [value])],
                    [("y", "not in", [value, "-3"])]):
            assert rows(large, flt, sluice.read) == rows(large, flt, pq.read_table), flt
    for value in ["1", "01", "abc"]:
        for op in ["<", "<=", ">", ">="]:
            with pytest.raises(sluice.InvalidArgumentError,
                               match=r"partition key 'y' has type int64; a str \(%s\).*give an int"
                               % re.escape(repr(value))):
                sluice.read(large, filters=[("y", op, value)])
    # (an int still compares as a number)
    assert rows(large, [("y", "<", 3)], sluice.read) == [-3, 1]


@pytest.mark.parametrize("dtype", ["date32", "date64"])
def test_aware_datetimes_on_date_columns_at_the_calendar_s_ends(tmp_path, dtype):
    """An aware datetime on a date column near datetime's limits raised a
    bare OverflowError (Python shifted it to UTC), and on a file object the
    library's refusal of the zone surfaced: the library compares the zoned
    text itself now, as pyarrow compares it."""
    days = [dt.date(1, 1, 1), dt.date(2024, 1, 1), dt.date(2024, 1, 2), dt.date(9999, 12, 31)]
    path = tmp_path / "d.parquet"
    pq.write_table(pa.table({"d": pa.array(days, getattr(pa, dtype)())}), path)
    zone = dt.timezone
    east, west = zone(dt.timedelta(hours=5)), zone(dt.timedelta(hours=-5))
    for flt in ([("d", ">", dt.datetime(9999, 12, 31, 23, tzinfo=west))],
                [("d", ">=", dt.datetime(9999, 12, 31, 23, tzinfo=west))],
                [("d", "<", dt.datetime(1, 1, 1, 1, tzinfo=east))],
                [("d", "<=", dt.datetime(1, 1, 1, 1, tzinfo=east))],
                [("d", "=", dt.datetime(2024, 1, 1, 19, tzinfo=west))],
                [("d", ">", dt.datetime(2024, 1, 2, 4, 59, tzinfo=east))]):
        want = pq.read_table(path, filters=flt).column("d").to_pylist()
        got = pa.table(sluice.read(path, filters=flt)).column("d").to_pylist()
        assert got == want, flt
        with open(path, "rb") as f:  # (a stream, read once)
            got = pa.table(sluice.read(f, filters=flt)).column("d").to_pylist()
        assert got == want, flt


def test_a_number_past_a_double_on_a_float_column_is_refused(tmp_path):
    """10**400 or Decimal('1e400') on a float64 column parsed to inf: = kept
    the inf rows, > dropped them. pyarrow refuses them; so does sluice,
    naming the column, here and in the library (the text form)."""
    import decimal
    path = tmp_path / "f.parquet"
    pq.write_table(pa.table({"f": [1.0, math.inf, -math.inf, 1e308]}), path)
    for value in [10**400, -10**400, decimal.Decimal("1e400"), decimal.Decimal("-1.8e308")]:
        for flt in ([("f", "=", value)], [("f", ">", value)], [("f", "in", [value, 1.0])]):
            with pytest.raises(Exception):
                pq.read_table(path, filters=flt)
            with pytest.raises(sluice.InvalidArgumentError,
                               match=r"column 'f' has type double; the value .* past the range"):
                sluice.read(path, filters=flt)
    with pytest.raises(sluice.InvalidArgumentError, match="'1e400' is not a number within "
                       "float64's range"):
        sluice.read(path, filters="f=1e400")
    for flt in ([("f", "<", math.inf)], [("f", "=", 1e308)],
                [("f", ">", decimal.Decimal("1e-400"))]):
        got = pa.table(sluice.read(path, filters=flt)).column("f").to_pylist()
        assert got == [x for x in [1.0, math.inf, -math.inf, 1e308]
                       if {"<": x < flt[0][2], "=": x == flt[0][2], ">": x > flt[0][2]}
                       [flt[0][1]]], flt


def test_datetime64_units_pyarrow_refuses_are_refused(tmp_path):
    """pyarrow's filters take an np.datetime64 in s, ms, us or ns only
    ("Unsupported datetime64 time unit", "Unbound or generic"; D fails
    too); sluice took them. Refused as timedelta64's units are."""
    np = pytest.importorskip("numpy")
    path = tmp_path / "ts.parquet"
    pq.write_table(pa.table({"t": pa.array([0, 86400, 90000], pa.timestamp("s")),
                             "d": pa.array([0, 1, 2], pa.date32())}), path)
    for value in [np.datetime64("1970-01-02"), np.datetime64(25, "h"), np.datetime64(1500, "m"),
                  np.datetime64(1, "W"), np.datetime64(1, "M"), np.datetime64(1, "Y"),
                  np.datetime64(5, "D").astype("datetime64")]:
        for column in ["t", "d"]:
            for flt in ([(column, ">", value)], [(column, "in", [value])]):
                with pytest.raises(Exception):
                    pq.read_table(path, filters=flt)
                with pytest.raises(sluice.InvalidArgumentError, match=r"column '%s'.*datetime64 "
                                   r"in unit .*%s" % (column, re.escape(repr(value)))):
                    sluice.read(path, filters=flt)
    _rows_as_pyarrow(path, "t", [np.datetime64(86400, "s"), np.datetime64(86400001, "ms"),
                                 np.datetime64(90000 * 10**6, "us"),
                                 np.datetime64(86400 * 10**9 + 1, "ns")])


def test_bytearray_memoryview_and_nan_on_decimal_as_pyarrow_takes_them(tmp_path):
    """bytearray and memoryview on a binary column (refused: pyarrow takes
    them as bytes) and NaN on a decimal column (refused by the library:
    pyarrow finds no row for =, every non-null one for !=)."""
    import decimal
    path = tmp_path / "b.parquet"
    pq.write_table(pa.table({"b": [b"a", b"b", None],
                             "m": pa.array([decimal.Decimal("1.5"), decimal.Decimal(2), None],
                                           pa.decimal128(5, 2))}), path)
    for flt in ([("b", "=", bytearray(b"a"))], [("b", "!=", memoryview(b"a"))],
                [("b", "in", [memoryview(b"b"), bytearray(b"z")])],
                [("m", "=", math.nan)], [("m", "!=", math.nan)], [("m", "<", math.nan)],
                [("m", ">=", math.nan)], [("m", "in", [math.nan, 2])]):
        want = pq.read_table(path, filters=flt).to_pylist()
        got = pa.table(sluice.read(path, filters=flt)).to_pylist()
        assert got == want, flt
    # (`not in` drops nulls, as SQL does, where pyarrow keeps them)
    got = pa.table(sluice.read(path, filters=[("m", "not in", [math.nan])])).column("m")
    assert got.to_pylist() == [decimal.Decimal("1.5"), decimal.Decimal(2)]


def _fixed_binary_table():
    vals = [b"abc", b"abd", None, b"zzz", b"ab\x00", b"\xff\x00a", b"%00", b"ab|"]
    return pa.table({"fb": pa.array(vals * 40, pa.binary(3)),
                     "n": pa.array(range(len(vals) * 40), pa.int64())})


FIXED_BINARY_FILTERS = [
    [("fb", "=", b"abc")], [("fb", "!=", b"abc")], [("fb", "<", b"abd")],
    [("fb", "<=", b"abd")], [("fb", ">", b"ab\x00")], [("fb", ">=", b"\xff")],
    [("fb", "in", [b"zzz", b"ab\x00", b"%00", b"ab|"])], [("fb", "=", "abc")],
    [("fb", "=", bytearray(b"abd"))],
    # another length than the column's compares as binary, as pyarrow does
    [("fb", "=", b"ab")], [("fb", "<", b"ab")], [("fb", ">", b"ab")], [("fb", "<", b"abcd")],
    [("fb", ">=", b"abcd")], [("fb", "in", [b"", b"abcd", b"zzz"])], [("fb", "=", b"")],
]


@pytest.mark.parametrize("ext", ["parquet", "arrow"])
def test_fixed_size_binary_columns_compare_as_pyarrow(tmp_path, ext):
    """A fixed_size_binary column took no filter ("filters do not compare");
    pyarrow.dataset compares it as binary, a value of another length
    included, and so does sluice now (Parquet row groups whose FLBA
    statistics would exclude a value are still read correctly)."""
    import pyarrow.dataset as ds
    t = _fixed_binary_table()
    path = tmp_path / ("fb." + ext)
    if ext == "parquet":
        pq.write_table(t, path, row_group_size=16)
    else:
        with pa.ipc.new_file(str(path), t.schema) as w:
            w.write_table(t)
    fmt = "ipc" if ext == "arrow" else ext
    for flt in FIXED_BINARY_FILTERS:
        want = ds.dataset(str(path), format=fmt).to_table(
            filter=pq.filters_to_expression(flt)).to_pylist()
        got = pa.table(sluice.read(str(path), filters=flt)).to_pylist()
        assert got == want, flt
    # `not in` drops nulls, as SQL does (pyarrow keeps them)
    got = pa.table(sluice.read(str(path), filters=[("fb", "not in", [b"abc", b"zzz"])]))
    want = [r for r in t.to_pylist() if r["fb"] is not None and r["fb"] not in (b"abc", b"zzz")]
    assert got.to_pylist() == want


def test_fixed_size_binary_dictionary_column(tmp_path):
    """A dictionary-encoded fixed_size_binary column (Arrow IPC) compares
    through its dictionary's values."""
    import pyarrow.dataset as ds
    t = _fixed_binary_table()
    t = t.set_column(0, "fb", t.column("fb").dictionary_encode())
    path = tmp_path / "fbd.arrow"
    with pa.ipc.new_file(str(path), t.schema) as w:
        w.write_table(t)
    for flt in FIXED_BINARY_FILTERS[:7]:
        want = ds.dataset(str(path), format="ipc").to_table(
            filter=pq.filters_to_expression(flt)).to_pylist()
        got = pa.table(sluice.read(str(path), filters=flt)).to_pylist()
        assert got == want, flt


def test_uuid_column_values_are_refused_as_pyarrow_refuses_them(tmp_path):
    """A Parquet UUID column reads as extension<arrow.uuid>, which pyarrow's
    filters refuse any value on (no kernel): uuid.UUID, bytes and str are
    refused so, naming the column; the text form takes a UUID's text, as
    DuckDB compares a UUID column, and refuses text that is no UUID."""
    ids = [uuid.UUID(int=k * 0x0101010101) for k in range(1, 6)]
    path = tmp_path / "u.parquet"
    pq.write_table(pa.table({"u": pa.array([x.bytes for x in ids], pa.uuid()),
                             "n": range(5)}), path)
    assert str(sluice.schema(str(path)).field("u").type) == "extension<arrow.uuid>"
    for value in (ids[1], ids[1].bytes, str(ids[1])):
        with pytest.raises(pa.ArrowNotImplementedError):
            pq.read_table(path, filters=[("u", "=", value)])
        with pytest.raises(sluice.InvalidArgumentError, match="column 'u' has type "
                           "extension<arrow.uuid>; a value of type %s" % type(value).__name__):
            sluice.read(str(path), filters=[("u", "=", value)])
    got = pa.table(sluice.read(str(path), filters="u=%s" % ids[1])).column("n").to_pylist()
    assert got == [1]
    got = pa.table(sluice.read(str(path), filters="u>%s" % ids[1].hex.upper()))
    assert got.column("n").to_pylist() == [2, 3, 4]
    got = pa.table(sluice.read(str(path), filters="u=%s|%s" % (ids[0], ids[4])))
    assert got.column("n").to_pylist() == [0, 4]
    with pytest.raises(sluice.InvalidArgumentError, match="'abc' is not a UUID"):
        sluice.read(str(path), filters="u=abc")


@pytest.mark.parametrize("ext", ["parquet", "arrow", "csv"])
def test_a_column_named_empty_takes_a_filter_as_pyarrow(tmp_path, ext):
    """A column named '' (which columns=[''] takes) gave "filter '=8':
    expected NAME=VALUE" for filters=[('', '=', 8)]; pyarrow keeps its row."""
    import pyarrow.csv as pcsv
    import pyarrow.dataset as ds
    t = pa.table({"": pa.array([8, 9, None, 8], pa.int64()), "x": pa.array([1, 2, 3, 4])})
    path = tmp_path / ("e." + ext)
    if ext == "parquet":
        pq.write_table(t, path)
    elif ext == "arrow":
        with pa.ipc.new_file(str(path), t.schema) as w:
            w.write_table(t)
    else:
        pcsv.write_csv(t, path)
    fmt = {"arrow": "ipc"}.get(ext, ext)
    for flt in ([("", "=", 8)], [("", "!=", 8)], [("", ">=", 9)], [("", "in", [9, 10])],
                [[("", "=", 9)], [("x", "=", 1)]]):
        want = ds.dataset(str(path), format=fmt).to_table(
            filter=pq.filters_to_expression(flt)).to_pylist()
        got = pa.table(sluice.read(str(path), filters=flt)).to_pylist()
        assert got == want, flt


@pytest.mark.parametrize("filters", [
    [("i", "in", [])],
    [("i", "not in", [])],
    [("i", "not in", []), ("s", "=", "a")],
    [[("i", "in", [])], [("s", "=", "b")]],
    [[("i", "in", [])], [("i", "not in", [])]],
    [[("i", "in", [])]],
])
def test_in_with_no_values_as_pyarrow(tmp_path, filters):
    """("i", "in", []) passes no row and ("i", "not in", []) every row,
    nulls too, in a group or in any of several, as pyarrow reads them (it
    was a ValueError)."""
    path = tmp_path / "t.parquet"
    pq.write_table(pa.table({"i": [1, 2, None], "s": ["a", "b", "c"]}), path)
    want = pq.read_table(path, filters=filters)
    got = sluice.read(path, filters=filters)
    assert got.schema.names == want.schema.names
    assert pa.table(got).to_pylist() == want.to_pylist()
