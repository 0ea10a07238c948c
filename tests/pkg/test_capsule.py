"""Tables, batches, columns and schemas through the Arrow PyCapsule protocol:
pyarrow, polars and DuckDB take them without copies, and the values are the
ones pyarrow reads from the same file."""
import gc

import duckdb
import polars as pl
import pyarrow as pa
import pytest

import sluice
from pkg_helpers import write_ipc_file, write_ipc_stream


def test_pyarrow_table_equals_pyarrow_read(typed):
    expected, path = typed
    t = sluice.read(path)
    got = pa.table(t)
    assert got.schema == expected.schema
    assert got.equals(expected)
    assert t.num_rows == expected.num_rows and t.num_columns == expected.num_columns
    assert t.schema.names == expected.column_names


def test_batches_and_schema_capsules(typed):
    expected, path = typed
    t = sluice.read(path)
    assert pa.schema(t.schema) == expected.schema
    assert pa.schema(t) == expected.schema
    for f in t.schema.fields:  # each column's Field too
        assert pa.field(f) == expected.schema.field(f.name), f.name
    batches = [pa.record_batch(b) for b in t.batches]
    assert [b.num_rows for b in batches] == [b.num_rows for b in t.batches]
    assert pa.Table.from_batches(batches).equals(expected)
    # A stream of one batch, too.
    assert pa.table(t.batches[0]).equals(pa.Table.from_batches(batches[:1]))


def test_column_capsules(typed):
    expected, path = typed
    t = sluice.read(path)
    for name in ["i64", "str", "dict", "list", "struct", "ts_s_paris"]:
        col = pa.chunked_array(t.column(name))
        assert col.equals(expected.column(name)), name
        assert pa.field(t.column(name)).type == expected.schema.field(name).type


def test_limit_cuts_children(typed):
    expected, path = typed
    t = sluice.read(path, limit=450)
    assert t.num_rows == 450
    assert pa.table(t).equals(expected.slice(0, 450))
    got, want = t.to_pydict(), expected.slice(0, 450).to_pydict()
    # pyarrow gives pandas Timestamps for nanoseconds; Python's datetime stops at us.
    del got["ts_ns_nonnull"], want["ts_ns_nonnull"]
    assert got == want


def test_polars(typed):
    expected, path = typed
    t = sluice.read(path, columns=["i64", "f64", "str", "ts_ms_utc", "bool", "dict", "list"])
    df = pl.DataFrame(t)
    peer = pl.DataFrame(pa.table(expected.select(t.schema.names)))
    assert df.equals(peer)
    # from_arrow gives a struct Series for any PyCapsule stream producer.
    assert pl.from_arrow(t).struct.unnest().equals(peer)


def test_duckdb(typed):
    expected, path = typed
    t = sluice.read(path, columns=["i64", "f64", "str", "date32", "ts_us", "dec"])
    got = duckdb.sql("select * from t").arrow()
    got = got.read_all() if hasattr(got, "read_all") else got
    peer_t = expected.select(t.schema.names)
    want = duckdb.sql("select * from peer_t").arrow()
    want = want.read_all() if hasattr(want, "read_all") else want
    assert got.equals(want)
    assert duckdb.sql("select count(*), sum(i64) from t").fetchall() == \
        duckdb.sql("select count(*), sum(i64) from peer_t").fetchall()


def _buffer_address(chunked, index):
    return chunked.chunk(0).buffers()[index].address


def test_zero_copy_shared_with_pyarrow(numbers):
    _, one, _ = numbers
    t = sluice.read(one)
    a1 = pa.table(t).column("a")
    a2 = pa.table(t).column("a")
    # Two exports of the same batch point at the same decoded bytes.
    assert _buffer_address(a1, 1) == _buffer_address(a2, 1)
    series = t.to_pandas()["a"]
    assert series.to_numpy().__array_interface__["data"][0] == _buffer_address(a1, 1)


def test_exports_outlive_the_table(numbers):
    expected, one, many = numbers
    for path in (one, many):
        t = sluice.read(path)
        pt = pa.table(t)
        df = t.to_pandas()
        batch = pa.record_batch(t.batches[0])
        del t
        gc.collect()
        assert pt.equals(expected)
        assert df["a"].tolist()[:5] == [0, 1, 2, 3, 4]
        assert batch.num_rows > 0


def test_stream_consumed_partially_then_dropped(numbers):
    _, _, many = numbers
    # A table of the scan's own batches (sluice.read gathers numeric ones
    # into a single batch).
    with sluice.scan(many) as s:
        t = sluice.Table(s.schema, list(s))
    reader = pa.RecordBatchReader.from_stream(t)
    first = reader.read_next_batch()
    del reader
    gc.collect()
    assert first.num_rows == 1000


def test_ipc_stream_format(typed, data_dir):
    expected, _ = typed
    path = write_ipc_stream(expected, data_dir / "typed.arrows", max_chunksize=250)
    t = sluice.read(path)
    assert pa.table(t).equals(expected)
    assert sluice.schema(path).names == expected.column_names


def test_empty_input_gives_empty_table_with_schema(data_dir):
    schema = pa.schema([("a", pa.int64()), ("s", pa.string()), ("t", pa.timestamp("us", "UTC"))])
    empty = schema.empty_table()
    for path in (write_ipc_file(empty, data_dir / "empty.arrow"),
                 write_ipc_stream(empty, data_dir / "empty.arrows")):
        for ordered in (True, False):
            t = sluice.read(path, ordered=ordered)
            assert t.num_rows == 0
            assert pa.schema(t) == schema
            got = pa.table(t)
            assert got.num_rows == 0 and got.schema == schema
            df = t.to_pandas()
            assert list(df.columns) == ["a", "s", "t"] and len(df) == 0
            assert str(df["t"].dtype) == "datetime64[us, UTC]"
            assert t.to_pydict() == {"a": [], "s": [], "t": []}


def test_repr_is_readable(typed):
    _, path = typed
    t = sluice.read(path, columns=["i64", "str"])
    text = repr(t)
    assert "1000 rows x 2 columns" in text and "i64: int64" in text and "str: string" in text
    assert "sluice.Schema" in repr(t.schema)
    assert "split=0, index=0" in repr(t.batches[0])


def test_from_arrow_shares_other_producers_batches(typed):
    expected, _ = typed
    small = expected.select(["i64", "f64", "str", "dict", "ts_s_paris", "list", "bool"])
    t = sluice.Table.from_arrow(small)
    assert pa.table(t).equals(small)
    assert t.to_pydict() == small.to_pydict()
    # The imported buffers are pyarrow's own: no copy.
    assert pa.table(t).column("i64").chunk(0).buffers()[1].address == \
        small.column("i64").chunk(0).buffers()[1].address
    # polars exports strings as views (inline up to 12 bytes, else in buffers).
    df = pl.DataFrame({"s": ["short", None, "a string longer than twelve bytes"] * 1000,
                       "i": list(range(3000))})
    p = sluice.Table.from_arrow(df)
    assert str(p.schema.field("s").type) == "string_view"
    assert p.to_pydict() == df.to_dict(as_series=False)
    pdf = p.to_pandas()
    assert str(pdf["s"].dtype) == "str"
    assert pdf["s"].tolist()[:3] == ["short", pdf["s"][1], "a string longer than twelve bytes"]
    two = sluice.Table.from_arrow(pl.concat([df, df], rechunk=False))
    assert two.to_pandas()["s"].tolist() == pdf["s"].tolist() * 2
    # One record batch through __arrow_c_array__.
    batch = small.to_batches()[0]
    assert pa.table(sluice.Table.from_arrow(batch)).equals(pa.Table.from_batches([batch]))
    with pytest.raises(TypeError):
        sluice.Table.from_arrow(pa.array([1, 2]))


def test_table_as_one_array(tmp_path):
    """pyarrow.record_batch(t): a one-batch table exports its batch without a
    copy; a table of several batches has no __arrow_c_array__ (a stream
    only), so polars, which prefers arrays, still takes it whole."""
    import pyarrow.parquet as pq
    want = pa.table({"a": list(range(100)), "b": [i / 3 for i in range(100)]})
    pq.write_table(want, tmp_path / "n.parquet", row_group_size=10)
    one = sluice.read(tmp_path / "n.parquet")
    assert len(one.batches) == 1
    batch = pa.record_batch(one)
    assert pa.Table.from_batches([batch]).equals(want)
    assert batch.column(0).buffers()[1].address == pa.table(one).column(0).chunk(0).buffers()[1].address
    many = sluice.Table(one.schema, list(sluice.scan(tmp_path / "n.parquet")))
    assert len(many.batches) == 10 and not hasattr(many, "__arrow_c_array__")
    with pytest.raises(TypeError):
        pa.record_batch(many)
    assert pl.DataFrame(many).equals(pl.DataFrame(want))


def test_scanner_streams_to_pyarrow_polars_and_duckdb(numbers, tmp_path):
    expected, _, many = numbers
    # pyarrow: every batch, in plan order, as decoded.
    reader = pa.RecordBatchReader.from_stream(sluice.scan(many, batch_rows=1000))
    assert reader.schema == expected.schema
    assert reader.read_all().equals(expected)
    # After one batch was taken, the stream has the rest; the scanner is then spent.
    s = sluice.scan(many, batch_rows=1000)
    first = next(s)
    rest = pa.RecordBatchReader.from_stream(s).read_all()
    assert first.num_rows + rest.num_rows == expected.num_rows
    assert rest.equals(expected.slice(first.num_rows))
    with pytest.raises(ValueError, match="handed to an Arrow consumer"):
        s.__arrow_c_stream__()
    assert pl.DataFrame(sluice.scan(many)).equals(pl.from_arrow(expected))
    scanned = sluice.scan(many)  # noqa: F841 (DuckDB finds it by name)
    assert duckdb.sql("select count(*), sum(a) from scanned").fetchall() == \
        [(expected.num_rows, sum(expected.column("a").to_pylist()))]
    # A stream dropped half read frees the scan.
    reader = pa.RecordBatchReader.from_stream(sluice.scan(many, batch_rows=1000))
    reader.read_next_batch()
    del reader
    gc.collect()


def test_scanner_stream_reports_the_readers_error(tmp_path):
    path = tmp_path / "bad.csv"
    path.write_text("a,b\n1,2\n300,4\n")
    reader = pa.RecordBatchReader.from_stream(sluice.scan(path, schema="a:int8"))
    with pytest.raises(OSError, match=r"line 3 .*'300' as int8"):
        reader.read_all()
    with pytest.raises(Exception, match=r"line 3 .*'300' as int8"):
        pl.DataFrame(sluice.scan(path, schema="a:int8"))


def test_values_under_nulls_are_never_converted():
    """Bytes under a null slot are undefined (pandas' NaT is INT64_MIN): a
    date past Python's range, an invalid UTF-8 string or a garbage view
    under a null gave OverflowError / UnicodeDecodeError from to_pydict and
    repr; pyarrow gives None there, and so does sluice."""
    import numpy as np
    valid = pa.py_buffer(np.packbits([1, 0], bitorder="little").tobytes())
    arrays = {
        "date32": pa.Array.from_buffers(pa.date32(), 2, [
            valid, pa.py_buffer(np.array([1, 2**31 - 1], np.int32).tobytes())]),
        "time64": pa.Array.from_buffers(pa.time64("us"), 2, [
            valid, pa.py_buffer(np.array([1, -5], np.int64).tobytes())]),
        "ts": pa.Array.from_buffers(pa.timestamp("ms", "UTC"), 2, [
            valid, pa.py_buffer(np.array([1, 2**62], np.int64).tobytes())]),
        "utf8": pa.Array.from_buffers(pa.string(), 2, [
            valid, pa.py_buffer(np.array([0, 1, 3], np.int32).tobytes()),
            pa.py_buffer(b"a\xff\xfe")]),
    }
    table = pa.table(arrays)
    got = sluice.Table.from_arrow(table)
    assert got.to_pydict() == table.to_pydict()
    assert "None" in repr(got) or "null" in repr(got)
    # pandas' NaT, through a file
    import pandas as pd
    df = pd.DataFrame({"t": pd.to_datetime(["2024-01-01", None]).astype("datetime64[us]")})
    back = sluice.Table.from_arrow(pa.Table.from_pandas(df, preserve_index=False))
    assert back.to_pydict() == pa.Table.from_pandas(df, preserve_index=False).to_pydict()


def test_table_of_batches_of_another_schema_is_an_error():
    """Table(schema, batches) checks that every batch has the schema's names
    and types, as pyarrow's Table.from_batches does: an int64 batch under a
    float64 schema was read as doubles (5e-324, ...)."""
    src = sluice.Table.from_arrow(pa.table({"a": [1, 2, 3]}))
    other = sluice.Table.from_arrow(pa.table({"q": pa.array([1.0])})).schema
    with pytest.raises(sluice.InvalidArgumentError, match="batch 0 has the columns a: int64"):
        sluice.Table(other, src.batches)
    with pytest.raises(ValueError):  # (as pyarrow's ArrowInvalid is a ValueError)
        sluice.Table(sluice.Table.from_arrow(pa.table({"a": ["x"]})).schema, src.batches)
    same = sluice.Table(src.schema, src.batches + src.batches)
    assert same.to_pydict() == {"a": [1, 2, 3, 1, 2, 3]}


def test_rows_without_columns_are_empty_dicts():
    """A table with rows and no columns gives one {} per row, as pyarrow."""
    table = pa.table({"a": [1, 2, 3]}).select([])
    got = sluice.Table.from_arrow(table)
    assert got.num_rows == 3
    assert got.to_pylist() == table.to_pylist() == [{}, {}, {}]


def test_struct_array_with_null_rows_is_refused(tmp_path):
    """A struct array's rows become a batch's rows, which cannot be null:
    pyarrow refuses to import one with nulls as a record batch. sluice read
    the children under a null row as if it were a row ({'x': 0, 's': ''})."""
    import pyarrow.parquet as pq
    arr = pa.array([{"x": 1, "s": "a"}, None, {"x": 3, "s": "c"}])
    with pytest.raises(pa.ArrowInvalid, match="non-zero null count"):
        pa.record_batch(arr)
    with pytest.raises(sluice.InvalidArgumentError, match=r"^row 1: the row is null") as e:
        sluice.Table.from_arrow(arr)
    assert isinstance(e.value, ValueError)  # as pyarrow's ArrowInvalid
    with pytest.raises(sluice.InvalidArgumentError, match=r"^batch 1, row 1: the row is null"):
        sluice.Table.from_arrow(pa.chunked_array([arr.slice(2), arr]))
    out = tmp_path / "structnull.parquet"
    for data in (arr, pa.chunked_array([arr.slice(2), arr])):
        with pytest.raises(sluice.InvalidArgumentError, match="row 2: the row is null"
                           if isinstance(data, pa.ChunkedArray) else "row 1: the row is null"):
            sluice.write(data, out)
        assert not out.exists()
    # Rows outside the slice the array shows do not count.
    tail = arr.slice(2)
    assert sluice.Table.from_arrow(tail).to_pydict() == {"x": [3], "s": ["c"]}
    sluice.write(pa.chunked_array([tail]), out)
    assert pq.read_table(out).to_pydict() == {"x": [3], "s": ["c"]}


def test_repr_shows_values_out_of_pythons_range_as_pyarrow_does():
    """A timestamp past year 9999 or a date32 in year 10183 made repr raise
    OverflowError; pyarrow prints <value out of range: N> and the date (a
    duration as its integer). Converting still names the value."""
    t = pa.table({"ts": pa.array([2**62, 0], pa.timestamp("us")),
                  "d": pa.array([3000000, -800000], pa.date32()),
                  "l": pa.array([[2**62], None], pa.list_(pa.timestamp("s"))),
                  "du": pa.array([2**62, 1], pa.duration("s"))})
    shown = str(t)
    for text in ("<value out of range: 4611686018427387904>", "10183-09-21", "-0221-09-04"):
        assert text in shown
    s = sluice.Table.from_arrow(t)
    assert "<value out of range: ... | 10183-09-21 | [<value out of range:... | " \
           "4611686018427387904" in repr(s)
    assert repr(s.column("d")).endswith("[10183-09-21, -0221-09-04]")
    assert repr(s.column("ts")).endswith(
        "[<value out of range: 4611686018427387904>, datetime.datetime(1970, 1, 1, 0, 0)]")
    with pytest.raises(OverflowError, match="column 'd': date32.* 3000000"):
        s.column("d").to_pylist()


def test_to_numpy_of_zoned_timestamps_and_dates_is_datetime64_as_pyarrow():
    """Zoned timestamps and dates came out as object arrays of Timestamps and
    datetime.dates; pyarrow gives datetime64 (UTC instants; [D] for date32,
    [ms] for date64) with NaT for nulls, over chunks and slices."""
    import numpy as np
    t = pa.table({
        "ts": pa.chunked_array([pa.array([0, None, 1], pa.timestamp("ms", "America/New_York")),
                                pa.array([2**40], pa.timestamp("ms", "America/New_York"))]),
        "utc": pa.chunked_array([pa.array([5, None], pa.timestamp("ns", "UTC")),
                          pa.array([7, 8], pa.timestamp("ns", "UTC"))]),
        "d": pa.chunked_array([pa.array([0, None, 3000000], pa.date32()).slice(1),
                               pa.array([7, -800000], pa.date32())]),
        "d64": pa.chunked_array([pa.array([86400000, None, 5], pa.date64()).slice(1),
                                 pa.array([1, 2], pa.date64())]),
    })
    s = sluice.Table.from_arrow(t)
    for name in t.column_names:
        got, want = s.column(name).to_numpy(), t.column(name).to_numpy()
        assert got.dtype == want.dtype, name
        assert np.array_equal(got, want, equal_nan=True), name


def test_numpy_takes_a_column_as_pyarrow_s_chunked_array():
    """np.asarray(column) is its values, as for pyarrow's ChunkedArray (it
    was a 0-d object array holding the Column, and np.mean failed)."""
    import numpy as np
    t = sluice.read(pa.py_buffer(b"a,b\n1,x\n2,\n3,z\n"), format="csv")
    want = pa.table(t)
    for name in ("a", "b"):
        got = np.asarray(t.column(name))
        assert got.tolist() == np.asarray(want.column(name)).tolist(), name
    assert np.mean(t.column("a")) == 2.0
    assert np.asarray(t.column("a"), dtype="f4").dtype == np.float32


def test_a_lazy_frame_is_refused_without_resolving_it():
    """A polars LazyFrame is not a table: refused as such, before its schema
    is asked for (which resolves the query, with a PerformanceWarning)."""
    import warnings
    pl = pytest.importorskip("polars")
    lf = pl.LazyFrame({"a": [1, 2]})
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(TypeError, match="not LazyFrame"):
            sluice.write(lf, "never-written.parquet")
