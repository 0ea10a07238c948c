"""A producer may refill the memory of a batch once it was handed over, as
pyarrow's writers let it (RecordBatchFileWriter.write_batch and
ParquetWriter.write_table consume the data before they return): what
sluice.Writer.write returned from, or what a stream's get_next was called
again after, is not read again. pa.array(numpy) is zero-copy, so a loop
that refills one numpy buffer hands over the same memory every time."""
import fastavro
import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.ipc as ipc
import pyarrow.parquet as pq
import pytest

import sluice

N = 100_000
FORMATS = ["arrow", "arrows", "parquet", "csv", "avro"]


def _options(ext):
    # Small batches under a big row group: the Parquet writer holds slices of
    # earlier batches while it asks for the next.
    return {"row_group_size": 10 * N} if ext == "parquet" else {}


def _refilled(n_batches=3):
    """The batches a loop refilling one numpy buffer hands over, one at a time."""
    buf = np.zeros(N, dtype=np.int64)
    for i in range(n_batches):
        buf[:] = i
        yield pa.record_batch([pa.array(buf), pa.array(buf % 7 == i % 7),
                               pa.array(buf.astype(np.float64) / 2)], names=["x", "b", "f"])


def _read(path, ext):
    if ext == "csv":
        return pacsv.read_csv(path).column("x").to_pylist()
    if ext == "avro":
        with open(path, "rb") as f:
            return [r["x"] for r in fastavro.reader(f)]
    if ext == "parquet":
        return pq.read_table(path).column("x").to_pylist()
    if ext == "arrow":
        return ipc.open_file(path).read_all().column("x").to_pylist()
    return ipc.open_stream(path).read_all().column("x").to_pylist()


def _pyarrow_loop(path, ext):
    """What pyarrow's own writers give for the same loop (Arrow and Parquet)."""
    batches = _refilled()
    first = next(batches)
    if ext == "parquet":
        with pq.ParquetWriter(path, first.schema) as w:
            w.write_batch(first, row_group_size=10 * N)
            for b in batches:
                w.write_batch(b, row_group_size=10 * N)
    else:
        new = ipc.new_file if ext == "arrow" else ipc.new_stream
        with new(path, first.schema) as w:
            w.write_batch(first)
            for b in batches:
                w.write_batch(b)


@pytest.mark.parametrize("ext", FORMATS)
def test_writer_loop_refilling_one_buffer(tmp_path, ext):
    path = tmp_path / f"w.{ext}"
    with sluice.Writer(path, **_options(ext)) as w:
        for batch in _refilled():
            w.write(batch)
    got = _read(path, ext)
    assert len(got) == 3 * N
    assert got[::N] == [0, 1, 2] and got[N - 1::N] == [0, 1, 2]
    if ext in ("arrow", "arrows", "parquet"):
        theirs = tmp_path / f"pyarrow.{ext}"
        _pyarrow_loop(theirs, ext)
        assert _read(theirs, ext) == got


@pytest.mark.parametrize("ext", FORMATS)
def test_writer_loop_refilling_a_dataframe(tmp_path, ext):
    path = tmp_path / f"df.{ext}"
    df = pd.DataFrame({"x": np.zeros(N, dtype=np.int64)})
    with sluice.Writer(path, **_options(ext)) as w:
        for i in range(3):
            df.loc[:, "x"] = i
            w.write(df)
    got = _read(path, ext)
    assert got[::N] == [0, 1, 2] and got[N - 1::N] == [0, 1, 2]


@pytest.mark.parametrize("ext", FORMATS)
def test_write_of_a_generator_refilling_one_buffer(tmp_path, ext):
    path = tmp_path / f"g.{ext}"
    first = next(_refilled(1))
    sluice.write(pa.RecordBatchReader.from_batches(first.schema, _refilled()), path,
                 **_options(ext))
    got = _read(path, ext)
    assert got[::N] == [0, 1, 2] and got[N - 1::N] == [0, 1, 2]


@pytest.mark.parametrize("ext", FORMATS)
def test_writer_write_of_a_generator_refilling_one_buffer(tmp_path, ext):
    # One write() of a multi-batch stream: the batches are handed over one by one.
    path = tmp_path / f"wg.{ext}"
    first = next(_refilled(1))
    with sluice.Writer(path, **_options(ext)) as w:
        w.write(pa.RecordBatchReader.from_batches(first.schema, _refilled()))
    got = _read(path, ext)
    assert got[::N] == [0, 1, 2] and got[N - 1::N] == [0, 1, 2]


def test_writer_loop_partitioned(tmp_path):
    # Partitioned writes buffer rows per partition across batches.
    out = tmp_path / "part"
    buf = np.zeros(N, dtype=np.int64)
    key = np.arange(N, dtype=np.int64) % 2
    with sluice.Writer(out, format="parquet", partition_by=["k"]) as w:
        for i in range(3):
            buf[:] = i
            w.write(pa.record_batch([pa.array(key), pa.array(buf)], names=["k", "x"]))
    got = sorted(pq.read_table(out).column("x").to_pylist())
    assert got[::N] == [0, 1, 2] and got[N - 1::N] == [0, 1, 2]


def test_writer_loop_max_rows_per_file(tmp_path):
    out = tmp_path / "files"
    with sluice.Writer(out, format="parquet", max_rows_per_file=N + N // 2) as w:
        for batch in _refilled():
            w.write(batch)
    got = sorted(pq.read_table(out).column("x").to_pylist())
    assert got[::N] == [0, 1, 2] and got[N - 1::N] == [0, 1, 2]


def test_writer_loop_dictionary_column(tmp_path):
    # The IPC file writer unifies dictionaries across batches.
    path = tmp_path / "d.arrow"
    values = np.array(["a", "b", "c"], dtype=object)
    idx = np.zeros(N, dtype=np.int32)
    with sluice.Writer(path) as w:
        for i in range(3):
            idx[:] = i
            values[:] = [f"{c}{i}" for c in "abc"]
            col = pa.DictionaryArray.from_arrays(pa.array(idx), pa.array(values))
            w.write(pa.record_batch([col], names=["d"]))
    got = ipc.open_file(path).read_all().column("d").to_pylist()
    assert got[::N] == ["a0", "b1", "c2"]


@pytest.mark.parametrize("ext", ["parquet", "csv"])
def test_writer_loop_one_partition_per_batch(tmp_path, ext):
    # A batch of one partition is kept uncopied until the next one is asked for.
    out = tmp_path / "one"
    buf = np.zeros(N, dtype=np.int64)
    key = np.zeros(N, dtype=np.int64)
    with sluice.Writer(out, format=ext, partition_by=["k"]) as w:
        for i in range(3):
            buf[:] = i
            w.write(pa.record_batch([pa.array(key), pa.array(buf)], names=["k", "x"]))
    files = sorted(out.rglob(f"*.{ext}"))
    if ext == "parquet":
        got = sorted(v for f in files for v in pq.read_table(f).column("x").to_pylist())
    else:
        got = sorted(v for f in files for v in pacsv.read_csv(f).column("x").to_pylist())
    assert got[::N] == [0, 1, 2] and got[N - 1::N] == [0, 1, 2]
