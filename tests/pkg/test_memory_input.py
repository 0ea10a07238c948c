"""A file's contents in memory (bytes, bytearray, memoryview, io.BytesIO, a
numpy or pyarrow buffer) read in place by sluice.read / scan / schema /
read_pandas: the same table pyarrow reads from the same bytes, for every
format; the buffer held while arrays point into it and given back after
(a bytearray cannot be resized while it is exported); bytes that could be a
path stay a path. And sluice.write into a file object (io.BytesIO, a bare
writer): the bytes of a file of the format, nothing written on an error."""
import gc
import io
import sys
import threading

import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.ipc as ipc
import pyarrow.parquet as pq
import pytest

import sluice

N = 3000


def _table():
    return pa.table({
        "id": pa.array(range(N), pa.int64()),
        "x": pa.array([None if i % 7 == 0 else i / 4 for i in range(N)]),
        "s": pa.array([f"s{i}" for i in range(N)]),
    })


def _files():
    """{format: bytes of a file of _table() written by a peer}."""
    t = _table()
    out = {}
    b = io.BytesIO()
    pq.write_table(t, b, row_group_size=1000)
    out["parquet"] = b.getvalue()
    b = io.BytesIO()
    with ipc.new_file(b, t.schema) as w:
        for batch in t.to_batches(max_chunksize=700):
            w.write_batch(batch)
    out["arrow"] = b.getvalue()
    b = io.BytesIO()
    with ipc.new_stream(b, t.schema) as w:
        w.write_table(t)
    out["arrows"] = b.getvalue()
    b = io.BytesIO()
    pacsv.write_csv(t, b)
    out["csv"] = b.getvalue()
    fastavro = pytest.importorskip("fastavro")
    b = io.BytesIO()
    fastavro.writer(b, {"type": "record", "name": "r", "fields": [
        {"name": "id", "type": "long"}, {"name": "x", "type": ["null", "double"]},
        {"name": "s", "type": "string"}]}, t.to_pylist())
    out["avro"] = b.getvalue()
    return out


FILES = _files()
WRAPS = {
    "bytes": bytes,
    "memoryview": memoryview,
    "bytearray": bytearray,
    "BytesIO": io.BytesIO,
    "numpy": lambda d: pytest.importorskip("numpy").frombuffer(d, "uint8"),
    "pyarrow": pa.py_buffer,
}


@pytest.mark.parametrize("fmt", sorted(FILES))
@pytest.mark.parametrize("wrap", sorted(WRAPS))
def test_same_table_as_pyarrow(fmt, wrap):
    data = FILES[fmt]
    got = pa.table(sluice.read(WRAPS[wrap](data), threads=2))
    want = _table()
    if fmt == "csv":  # pyarrow's reading of the CSV bytes (same types)
        want = pacsv.read_csv(io.BytesIO(data))
    assert got.column_names == want.column_names
    for name in want.column_names:
        assert got.column(name).to_pylist() == want.column(name).to_pylist(), (fmt, wrap, name)


def test_projection_limit_schema_and_pandas():
    data = memoryview(FILES["parquet"])
    t = sluice.read(data, columns=["s", "id"], limit=1234)
    assert t.schema.names == ["s", "id"] and t.num_rows == 1234
    assert [f.name for f in sluice.schema(data)] == ["id", "x", "s"]
    df = sluice.read_pandas(io.BytesIO(FILES["arrow"]))
    assert df["id"].tolist() == list(range(N))
    rows = sum(b.num_rows for b in sluice.scan(data, ordered=False))
    assert rows == N


def test_format_option_and_errors():
    # CSV bytes told apart from nothing by their format option too.
    t = sluice.read(memoryview(b"a;b\n1;x\n"), format="csv", delimiter=";")
    assert t.to_pydict() == {"a": [1], "b": ["x"]}
    with pytest.raises(sluice.Error) as e:
        sluice.read(memoryview(b"PAR1 and then nothing of a Parquet file"))
    assert "<bytes>" in str(e.value)


def test_buffer_held_while_arrays_point_into_it():
    # IPC bodies are read in place: the table's arrays are views of the
    # bytearray, which cannot be resized while it is exported.
    data = bytearray(FILES["arrow"])
    t = sluice.read(data)
    with pytest.raises(BufferError):
        data.extend(b"x")
    p = pa.table(t)
    del t
    gc.collect()
    with pytest.raises(BufferError):  # pyarrow's table holds the views now
        data.extend(b"x")
    assert p.column("id").to_pylist() == list(range(N))
    del p
    gc.collect()
    data.extend(b"x")  # given back


def test_buffer_given_back_from_another_thread():
    data = bytearray(FILES["arrows"])
    batches = []
    th = threading.Thread(target=lambda: batches.extend(sluice.scan(data, threads=2)))
    th.start()
    th.join()
    assert sum(b.num_rows for b in batches) == N
    batches.clear()
    gc.collect()
    data.extend(b"x")


def test_no_reference_leak():
    data = FILES["arrow"]
    before = sys.getrefcount(data)
    for _ in range(200):
        assert sluice.read(memoryview(data)).num_rows == N
    gc.collect()
    assert sys.getrefcount(data) == before


def test_bytes_that_could_be_a_path_are_one(tmp_path):
    path = tmp_path / "t.parquet"
    path.write_bytes(FILES["parquet"])
    assert sluice.read(bytes(path)).num_rows == N  # os.fsencode'd path
    with pytest.raises(sluice.Error):
        sluice.read(b"no-such-file.parquet")


class _Sink:
    """A writable object with no descriptor, as a web framework's response
    body is: only write()."""

    def __init__(self):
        self.parts = []

    def write(self, b):
        self.parts.append(bytes(b))
        return len(b)


def _read_back(fmt, body):
    """A peer's reading of `body`, a file of format `fmt` (sluice's for Avro,
    which pyarrow does not read)."""
    if fmt == "parquet":
        return pq.read_table(io.BytesIO(body))
    if fmt == "arrow":
        return ipc.open_file(io.BytesIO(body)).read_all()
    if fmt == "arrows":
        return ipc.open_stream(io.BytesIO(body)).read_all()
    if fmt == "csv":
        return pacsv.read_csv(io.BytesIO(body))
    return pa.table(sluice.read(memoryview(body)))


@pytest.mark.parametrize("fmt", ["parquet", "arrow", "arrows", "csv", "avro"])
def test_write_into_a_file_object(fmt):
    """sluice.write into io.BytesIO (after what it holds) and into a bare
    writer gives the bytes a file of that format holds: read back, the
    table written."""
    t = _table()
    b = io.BytesIO(b"kept:")
    b.seek(0, io.SEEK_END)
    sluice.write(t, b, format=fmt)
    assert b.getvalue().startswith(b"kept:")
    sink = _Sink()
    sluice.write(t, sink, format=fmt)
    for body in (b.getvalue()[5:], b"".join(sink.parts)):
        back = _read_back(fmt, body)
        for name in t.column_names:
            assert back.column(name).to_pylist() == t.column(name).to_pylist(), (fmt, name)


def test_write_into_a_file_object_errors():
    b = io.BytesIO()
    with pytest.raises(sluice.InvalidArgumentError, match="needs format="):
        sluice.write(_table(), b)
    # A failed write puts nothing into the object.
    bad = pa.table({"u": pa.array([1], pa.int64())}).to_reader()
    with pytest.raises(sluice.Error):
        sluice.write(bad, b, format="csv", delimiter="no such option value")
    assert b.getvalue() == b""


def test_a_partly_read_bytesio_is_read_from_its_position():
    """A BytesIO whose preamble the caller read past is read from there, as
    pyarrow's, pandas' and polars' CSV readers read it (sluice read it from
    byte 0: the preamble became the header); one at its end (just written)
    is read whole, as pd.read_parquet reads it."""
    b = io.BytesIO(b"exported by tool X\n" + FILES["csv"])
    b.readline()
    want = pacsv.read_csv(b)
    b.seek(len(b"exported by tool X\n"))
    got = pa.table(sluice.read(b, format="csv"))
    assert got.column_names == want.column_names == ["id", "x", "s"]
    assert got.to_pydict() == want.to_pydict()
    b = io.BytesIO()
    pq.write_table(_table(), b)  # the position is now at the end
    assert pa.table(sluice.read(b)).to_pydict() == pq.read_table(b).to_pydict()
