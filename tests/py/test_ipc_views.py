"""String and binary views (Arrow's Utf8View / BinaryView) in IPC files and
streams, the way polars writes strings by default: sluice reads them as
large_string / large_binary.

Expected values are the writer's own table cast to those types by pyarrow (no
IPC reader on the expected side), or what polars reads back from its own file.
"""

from __future__ import annotations

import io
import struct

import pyarrow as pa
import pyarrow.ipc as ipc
import pytest

from conftest import check_clean_failure

STRINGS = ["", "short", "exactly12byt", "thirteen byte", None, "ü" * 20, "x" * 100,
           "tab\tand\nnewline", "€uro"]


def views(values, typ, n_data=2, bad_index=False):
    """A view array built by hand, so that it has `n_data` variadic data
    buffers (pyarrow's builders make one): long values alternate between
    them. With `bad_index`, the last long value points at a buffer that does
    not exist."""
    data = [bytearray() for _ in range(n_data)]
    packed = bytearray()
    valid = []
    long_seen = 0
    for i, v in enumerate(values):
        valid.append(v is not None)
        if v is None:
            packed += bytes(16)
            continue
        b = v.encode() if isinstance(v, str) else v
        if len(b) <= 12:
            packed += struct.pack("<i", len(b)) + b.ljust(12, b"\0")
            continue
        k = long_seen % n_data
        long_seen += 1
        at = len(data[k])
        data[k] += b
        packed += struct.pack("<i", len(b)) + b[:4] + struct.pack("<ii", n_data if bad_index else k, at)
    validity = pa.array(valid, pa.bool_()).buffers()[1]
    arr = pa.Array.from_buffers(typ, len(values), [validity, pa.py_buffer(bytes(packed)),
                                                   *[pa.py_buffer(bytes(d)) for d in data]],
                                null_count=valid.count(False))
    if not bad_index:
        arr.validate(full=True)
    return arr


def view_batches():
    """Batches whose view columns have different data buffer counts, a column
    after them (its buffers follow the variadic ones), views inside a list and
    a struct, and an empty batch."""
    def batch(values, n_data):
        n = len(values)
        sv = views(values, pa.string_view(), n_data)
        bv = views([None if v is None else v.encode() * 2 for v in values], pa.binary_view(), n_data)
        offsets = pa.array(list(range(0, n + 1, 1)), pa.int32())
        lv = pa.ListArray.from_arrays(offsets, views(values, pa.string_view(), n_data))
        st = pa.StructArray.from_arrays([views(list(reversed(values)), pa.string_view(), 1),
                                         pa.array(range(n), pa.int32())], names=["s", "i"])
        tail = pa.array([i * 3 for i in range(n)], pa.int64())
        return pa.record_batch([pa.array(range(n), pa.int64()), sv, bv, lv, st, tail],
                               names=["id", "sv", "bv", "lv", "st", "tail"])
    return [batch(STRINGS * 30, 2), batch(STRINGS[:0], 1), batch(list(reversed(STRINGS)) * 7, 3),
            batch(["a", None, "bb"], 0)]


def large_schema(schema: pa.Schema) -> pa.Schema:
    """The schema sluice reads: views become large_string / large_binary."""
    def swap(t):
        if t == pa.string_view():
            return pa.large_string()
        if t == pa.binary_view():
            return pa.large_binary()
        if pa.types.is_list(t):
            return pa.list_(pa.field(t.value_field.name, swap(t.value_type), t.value_field.nullable))
        if pa.types.is_struct(t):
            return pa.struct([pa.field(f.name, swap(f.type), f.nullable) for f in t])
        return t
    return pa.schema([pa.field(f.name, swap(f.type), f.nullable) for f in schema])


def write(path, batches, flavour, compression):
    options = ipc.IpcWriteOptions(compression=compression)
    schema = batches[0].schema
    writer = ipc.new_file(path, schema, options=options) if flavour == "file" \
        else ipc.new_stream(path, schema, options=options)
    with writer:
        for b in batches:
            writer.write_batch(b)


def read_stream(data: bytes) -> pa.Table:
    return ipc.open_stream(io.BytesIO(data)).read_all()


@pytest.mark.parametrize("compression", [None, "lz4", "zstd"])
@pytest.mark.parametrize("flavour", ["stream", "file"])
def test_views_read_as_large_types(sluice, tmp_path, flavour, compression):
    batches = view_batches()
    src = tmp_path / ("in.arrow" if flavour == "file" else "in.arrows")
    write(src, batches, flavour, compression)
    table = pa.Table.from_batches(batches)
    want = table.cast(large_schema(table.schema))

    got = read_stream(sluice.run("cat", src, "-t", "arrows").stdout)
    assert got.schema == want.schema, f"got {got.schema}, expected {want.schema}"
    assert got.to_pylist() == want.to_pylist()

    # Projection past the view columns: their data buffers shift every later
    # column's buffers by a count that differs from batch to batch.
    for cols in (["tail"], ["st", "id"], ["lv"]):
        got = read_stream(sluice.run("cat", src, "-c", ",".join(cols), "-t", "arrows").stdout)
        assert got.to_pylist() == want.select(cols).to_pylist(), f"columns {cols}"

    out = tmp_path / "out.parquet"
    sluice.run("convert", src, out)
    import pyarrow.parquet as pq
    assert pq.read_table(out).to_pylist() == want.to_pylist(), "convert to Parquet"


@pytest.mark.parametrize("flavour", ["stream", "file"])
def test_polars_written_ipc(sluice, tmp_path, flavour):
    pl = pytest.importorskip("polars")
    df = pl.DataFrame({
        "s": [None if i % 9 == 0 else STRINGS[i % len(STRINGS)] or f"row {i} of a longer text" for i in range(3000)],
        "b": [None if i % 11 == 0 else (b"\x00\xff" * (i % 17)) for i in range(3000)],
        "n": list(range(3000)),
    })
    src = tmp_path / ("polars.arrow" if flavour == "file" else "polars.arrows")
    if flavour == "file":
        df.write_ipc(src)
    else:
        df.write_ipc_stream(src)
    peer = (ipc.open_file(src) if flavour == "file" else ipc.open_stream(open(src, "rb"))).read_all()
    assert peer.schema.field("s").type == pa.string_view(), \
        f"polars no longer writes views ({peer.schema}): this test checks nothing"
    want = pl.read_ipc(src) if flavour == "file" else pl.read_ipc_stream(src)
    got = read_stream(sluice.run("cat", src, "-t", "arrows").stdout)
    assert got.schema.field("s").type == pa.large_string()
    assert got.schema.field("b").type == pa.large_binary()
    assert got.to_pylist() == want.to_dicts()


def test_view_outside_its_data_buffers_is_an_error(sluice, tmp_path):
    arr = views(STRINGS * 3, pa.string_view(), n_data=2, bad_index=True)
    batch = pa.record_batch([arr], names=["sv"])
    src = tmp_path / "bad.arrows"
    write(src, [batch], "stream", None)
    out = tmp_path / "out.arrows"
    proc = sluice.expect_error("convert", src, out)
    assert b"view" in proc.stderr and b"data buffer" in proc.stderr, proc.stderr
    assert not out.exists(), "a failed convert left an output file"


@pytest.mark.parametrize("flavour", ["stream", "file"])
def test_unsupported_type_is_reported(sluice, tmp_path, flavour):
    """A list view, which sluice does not read: a clean error, nothing written."""
    lv = pa.array([[1, 2], None, [3]], pa.list_view(pa.int32()))
    batch = pa.record_batch([lv], names=["lv"])
    src = tmp_path / ("in.arrow" if flavour == "file" else "in.arrows")
    write(src, [batch], flavour, None)
    out = tmp_path / "out.arrows"
    proc = sluice.expect_error("convert", src, out)
    assert b"type list_view is not supported" in proc.stderr, proc.stderr
    assert not out.exists(), "a failed convert left an output file"
    check_clean_failure(proc)


def test_dictionary_of_views_with_delta(sluice, tmp_path):
    """Dictionary values that are views, extended by a delta batch."""
    t = pa.dictionary(pa.int32(), pa.string_view())
    schema = pa.schema([("d", t)])
    batches = [pa.record_batch([pa.DictionaryArray.from_arrays(pa.array(idx, pa.int32()),
                                                               pa.array(dic, pa.string_view()))],
                               schema=schema)
               for dic, idx in [(["a", "a value longer than twelve"], [0, 1, None]),
                                (["a", "a value longer than twelve", "another long value, delta"], [2, 0])]]
    src = tmp_path / "dict.arrows"
    options = ipc.IpcWriteOptions(emit_dictionary_deltas=True)
    with ipc.new_stream(src, schema, options=options) as w:
        for b in batches:
            w.write_batch(b)
    got = read_stream(sluice.run("cat", src, "-t", "arrows").stdout)
    assert got.schema.field("d").type == pa.dictionary(pa.int32(), pa.large_string())
    assert got.to_pylist() == pa.Table.from_batches(batches).to_pylist()
