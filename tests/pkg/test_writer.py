"""sluice.Writer: a table handed over in pieces (as pyarrow's ParquetWriter
and RecordBatchWriter take it) gives the file sluice.write gives for the
whole table, read back equal by the peers; nothing appears before close(),
and an abort, an exception in the with block, a bad batch or a dropped
writer leave nothing (an existing file as it was)."""
import gc
import os

import fastavro
import pandas as pd
import polars as pl
import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.dataset as ds
import pyarrow.ipc as ipc
import pyarrow.parquet as pq
import pytest

import sluice


def _table(n=1000):
    return pa.table({"id": pa.array(range(n), pa.int64()),
                     "x": pa.array([i / 7 if i % 11 else None for i in range(n)]),
                     "s": pa.array([f"v{i}, \"q\"" if i % 5 else None for i in range(n)]),
                     "k": pa.array([i % 4 for i in range(n)], pa.int32())})


@pytest.mark.parametrize("ext", ["parquet", "arrow", "arrows", "csv", "avro", "jsonl"])
def test_pieces_give_the_same_file_as_the_whole(tmp_path, ext):
    t = _table()
    pieces, whole = tmp_path / f"pieces.{ext}", tmp_path / f"whole.{ext}"
    opts = {"sync": "00" * 16} if ext == "avro" else {}
    with sluice.Writer(pieces, **opts) as w:
        assert not pieces.exists()  # nothing before close
        for batch in t.to_batches(max_chunksize=97):
            w.write(batch)
    assert w.closed
    sluice.write(t.to_reader(max_chunksize=97), whole, **opts)
    assert pieces.read_bytes() == whole.read_bytes()
    if ext == "parquet":
        assert pq.read_table(pieces).equals(t)
    elif ext == "arrow":
        assert ipc.open_file(pieces).read_all().equals(t)
    elif ext == "arrows":
        assert ipc.open_stream(pieces).read_all().equals(t)
    elif ext == "avro":
        with open(pieces, "rb") as f:
            rows = list(fastavro.reader(f))
        assert [r["id"] for r in rows] == list(range(1000))
        assert [r["s"] for r in rows] == t.column("s").to_pylist()
    elif ext == "csv":
        got = pacsv.read_csv(pieces)
        assert got.column("id").to_pylist() == list(range(1000))


def test_data_from_every_producer(tmp_path):
    """pyarrow batches and tables, polars, pandas, sluice tables: one file.
    (Strings as large_string, as polars and pandas give them: a write whose
    types differ from the writer's is refused, as pyarrow's writers do.)"""
    t = _table(40)
    t = t.set_column(2, "s", t.column("s").cast(pa.large_string()))
    parts = [t.slice(0, 10), t.slice(10, 10).to_batches()[0], pl.from_arrow(t.slice(20, 10)),
             t.slice(30, 10).to_pandas(), sluice.read(_written(tmp_path, t.slice(30, 10)))]
    out = tmp_path / "all.parquet"
    with sluice.Writer(out, schema=t.schema) as w:
        for part in parts:
            w.write(part)
    got = pq.read_table(out)
    want = pa.concat_tables([t, t.slice(30, 10)])
    assert got.column("id").to_pylist() == want.column("id").to_pylist()
    assert got.column("s").to_pylist() == want.column("s").to_pylist()
    with sluice.Writer(tmp_path / "mixed.parquet") as w:
        w.write(_table(3))
        with pytest.raises(sluice.InvalidArgumentError,
                           match="type large_string, the writer's is string"):
            w.write(pl.from_arrow(_table(3)))
        with pytest.raises(sluice.InvalidArgumentError, match="column 'y', the writer's is 'x'"):
            w.write(_table(3).rename_columns(["id", "y", "s", "k"]))
        w.write(_table(3))  # the writer goes on
    assert pq.read_table(tmp_path / "mixed.parquet").num_rows == 6
    # A categorical from pandas, then the same from polars: the message
    # names both dictionaries whole (it named the index types alone).
    cats = pd.DataFrame({"k": pd.Categorical(["a", "b", "a"])})
    with sluice.Writer(tmp_path / "cats.parquet") as w:
        w.write(cats)
        with pytest.raises(sluice.InvalidArgumentError, match=r"k: type dictionary<uint32, "
                           r"large_string>, the writer's is dictionary<int8, large_string>"):
            w.write(pl.from_pandas(cats))


def _written(tmp_path, table):
    path = tmp_path / "part.arrow"
    sluice.write(table, path)
    return path


def test_partitioned_pieces(tmp_path):
    t = _table()
    out = tmp_path / "parts"
    with sluice.Writer(out, format="parquet", partition_by="k") as w:
        for batch in t.to_batches(max_chunksize=128):
            w.write(batch)
    got = ds.dataset(out, format="parquet", partitioning="hive").to_table().sort_by("id")
    assert got.column("id").to_pylist() == list(range(1000))
    assert got.column("k").to_pylist() == t.column("k").to_pylist()
    assert sorted(os.listdir(out)) == ["k=0", "k=1", "k=2", "k=3"]


def test_nothing_appears_on_abort_error_or_drop(tmp_path):
    t = _table()
    out = tmp_path / "out.parquet"
    out.write_bytes(b"old")
    # An exception in the with block aborts.
    with pytest.raises(RuntimeError):
        with sluice.Writer(out) as w:
            w.write(t)
            raise RuntimeError("producer failed")
    assert out.read_bytes() == b"old"
    # abort() and a writer dropped without close.
    w = sluice.Writer(out)
    w.write(t)
    w.abort()
    assert w.closed and out.read_bytes() == b"old"
    w = sluice.Writer(out)
    w.write(t)
    del w
    gc.collect()
    assert out.read_bytes() == b"old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.parquet"]
    # A later write whose columns differ is refused before any of its rows
    # are taken; the writer goes on, and its abort leaves nothing.
    w = sluice.Writer(out)
    w.write(t)
    with pytest.raises(sluice.InvalidArgumentError, match="id: type string, the writer's is int64"):
        w.write(pa.table({"id": ["not", "ints"], "x": [1.0, 2.0], "s": ["a", "b"],
                          "k": pa.array([1, 2], pa.int32())}))
    w.abort()
    assert out.read_bytes() == b"old"


def test_empty_and_closed_writers(tmp_path):
    schema = pa.schema([("a", pa.int64()), ("b", pa.string())])
    out = tmp_path / "empty.parquet"
    with sluice.Writer(out, schema=schema):
        pass
    got = pq.read_table(out)
    assert got.num_rows == 0 and got.schema.names == ["a", "b"]
    w = sluice.Writer(tmp_path / "never.parquet")
    with pytest.raises(ValueError, match="no schema"):
        w.close()
    with pytest.raises(ValueError, match="nothing was written"):
        w.close()  # a failed close is no commit the second time either
    w = sluice.Writer(tmp_path / "twice.parquet", schema=schema)
    w.close()
    w.close()  # closing again after a commit does nothing, as a file's close
    w = sluice.Writer(tmp_path / "aborted.parquet", schema=schema)
    w.abort()
    with pytest.raises(ValueError, match="aborted"):
        w.close()
    assert not (tmp_path / "aborted.parquet").exists()
    with pytest.raises(TypeError, match="Arrow schema"):
        sluice.Writer(tmp_path / "bad.parquet", schema=5)
    with pytest.raises(ValueError, match="aborted"):
        w.write(pa.table({"a": [1]}))
    assert not (tmp_path / "never.parquet").exists()
    with pytest.raises(sluice.InvalidArgumentError, match="file object"):
        import io
        sluice.Writer(io.BytesIO(), format="parquet")
    # An output that cannot be written: the error comes from write or close.
    w = sluice.Writer(tmp_path / "x.unknown")
    with pytest.raises(sluice.Error, match="output format"):
        w.write(pa.table({"a": [1]}))
        w.close()


def test_same_rows_as_pyarrow_parquet_writer(tmp_path):
    t = _table()
    ours, theirs = tmp_path / "ours.parquet", tmp_path / "theirs.parquet"
    with sluice.Writer(ours, schema=t.schema) as w, pq.ParquetWriter(theirs, t.schema) as p:
        for batch in t.to_batches(max_chunksize=100):
            w.write(batch)
            p.write_batch(batch)
    assert pq.read_table(ours).equals(pq.read_table(theirs))
    assert pd.read_parquet(ours).equals(pd.read_parquet(theirs))


def test_a_write_that_fails_part_way_aborts_the_writer(tmp_path):
    """A producer failing after some of its rows were taken: nothing of
    them may be committed, so the writer is aborted and close() says so;
    another call while a write() runs is refused (here from inside the
    producer, on the same thread, as another thread's would be)."""
    t = _table(10)
    out = tmp_path / "out.parquet"
    out.write_bytes(b"old")

    def failing():
        yield from t.to_batches(max_chunksize=3)
        raise RuntimeError("producer failed")

    w = sluice.Writer(out, schema=t.schema)
    w.write(t)
    with pytest.raises(Exception, match="producer failed"):
        w.write(pa.RecordBatchReader.from_batches(t.schema, failing()))
    assert w.closed
    with pytest.raises(ValueError, match="aborted"):
        w.close()
    assert out.read_bytes() == b"old"

    w = sluice.Writer(out, schema=t.schema)
    seen = []

    def meddling():
        yield t.to_batches()[0]
        for call in (w.close, w.abort, lambda: w.write(t)):
            with pytest.raises(RuntimeError, match="running"):
                call()
            seen.append(call)
        yield t.to_batches()[0]

    w.write(pa.RecordBatchReader.from_batches(t.schema, meddling()))
    w.close()
    assert len(seen) == 3
    assert pq.read_table(out).num_rows == 20


def test_a_piece_with_more_columns_names_them(tmp_path):
    """A pandas piece whose index is kept as a column has one column more
    than the writer's: the message names both sides' columns and says how
    to leave the index out (it said ': 3 fields, the writer's has 2')."""
    pd = pytest.importorskip("pandas")
    w = sluice.Writer(tmp_path / "w.parquet")
    w.write(pd.DataFrame({"a": [1], "s": ["x"]}))
    with pytest.raises(sluice.InvalidArgumentError,
                       match=r"3 columns \(__index_level_0__, a, s|3 columns \(a, s, __index"):
        w.write(pd.DataFrame({"a": [3], "s": ["z"]}, index=[7]))
    w.abort()


def test_list_child_names_do_not_count_and_nested_differences_name_the_path(tmp_path):
    """A piece of list<item> after one of list<element> (pq.read_table's,
    pyarrow >= 13) was refused as "column 'item', the writer's is
    'element'": pyarrow's ParquetWriter takes it (the types are equal), and
    the names of a nested difference lacked their parents."""
    li = pa.list_(pa.field("element", pa.int32()))
    first = pa.table({"li": pa.array([[1, 2], None], li), "n": [1, 2]})
    more = pa.table({"li": pa.array([[3], []], pa.list_(pa.int32())), "n": [3, 4]})
    assert first.schema.field("li").type == more.schema.field("li").type  # in pyarrow
    ref = tmp_path / "ref.parquet"
    with pq.ParquetWriter(ref, first.schema) as w:
        w.write_table(first)
        w.write_table(more)
    for fmt in ("parquet", "arrow"):
        out = tmp_path / f"out.{fmt}"
        with sluice.Writer(out) as w:
            w.write(first)
            w.write(more)
        got = pa.table(sluice.read(out))
        assert got.to_pylist() == pq.read_table(ref).to_pylist(), fmt
        assert got.schema.field("li").type.value_field.name == "element", fmt
    # Differences inside nested columns name the column by its whole path.
    ls = pa.list_(pa.field("element", pa.struct([("a", pa.int32())])))
    with sluice.Writer(tmp_path / "n.parquet") as w:
        w.write(pa.table({"l": pa.array([[{"a": 1}]], ls),
                          "s": pa.array([{"x": 1}], pa.struct([("x", pa.int32())]))}))
        with pytest.raises(sluice.InvalidArgumentError,
                           match=r"column 'l\.element\.b', the writer's is 'l\.element\.a'"):
            w.write(pa.table({"l": pa.array([[{"b": 1}]], pa.list_(pa.struct([("b", pa.int32())]))),
                              "s": pa.array([{"x": 1}], pa.struct([("x", pa.int32())]))}))
        with pytest.raises(sluice.InvalidArgumentError,
                           match=r"s\.x: type int64, the writer's is int32"):
            w.write(pa.table({"l": pa.array([[{"a": 1}]], ls), "s": pa.array([{"x": 1}])}))
        with pytest.raises(sluice.InvalidArgumentError,
                           match=r"l\.element\.a: type int64, the writer's is int32"):
            w.write(pa.table({"l": pa.array([[{"a": 1}]]),
                              "s": pa.array([{"x": 1}], pa.struct([("x", pa.int32())]))}))
    assert pq.read_table(tmp_path / "n.parquet").num_rows == 1
