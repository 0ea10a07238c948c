"""Arrow IPC streams and files whose dictionaries grow by deltas, written by
pyarrow (emit_dictionary_deltas=True): many batches, each adding values,
for string, binary, integer, bool, fixed-size and nested value types, with
nulls among the indexes and the values, at the top level and inside struct
and list columns, a replacement between deltas. sluice reads them to what
pyarrow reads from the same bytes.

sluice appends a delta to the dictionary in place, nested values too (each
batch viewing the values it was sent with); the checks here cover the growth
(blocks moved as they fill), the batches read before a move, and the
replacement that starts a dictionary over.
"""

from __future__ import annotations

import decimal
import io

import pyarrow as pa
import pyarrow.ipc as ipc
import pyarrow.parquet as pq
import pytest


def write_ipc(path, schema, batches, file=False):
    """The batches as an IPC stream (or file) with dictionary deltas; pyarrow's
    reading stats of it, which must show deltas (so the test tests them)."""
    options = ipc.IpcWriteOptions(emit_dictionary_deltas=True)
    with pa.OSFile(str(path), "wb") as sink:
        writer = (ipc.new_file if file else ipc.new_stream)(sink, schema, options=options)
        with writer:
            for b in batches:
                writer.write_batch(b)
    with pa.OSFile(str(path), "rb") as fh:
        reader = ipc.open_file(fh) if file else ipc.open_stream(fh)
        if file:
            for i in range(reader.num_record_batches):
                reader.get_batch(i)
        else:
            for _ in reader:
                pass
        return reader.stats


def peer_rows(path, file=False):
    """pyarrow's reading: the schema and each column's decoded values."""
    with pa.OSFile(str(path), "rb") as fh:
        reader = ipc.open_file(fh) if file else ipc.open_stream(fh)
        table = reader.read_all()
    return table.schema, {name: table.column(name).to_pylist() for name in table.column_names}


def sluice_rows(sluice, path):
    proc = sluice.run("cat", path, "-t", "arrows")
    table = ipc.open_stream(io.BytesIO(proc.stdout)).read_all()
    return table.schema, {name: table.column(name).to_pylist() for name in table.column_names}


# Dictionary sizes per batch: one value at a time, none new, a big jump
# (several blocks' growth at once), then small steps again, so appends land
# both inside a block and across the moves to bigger ones.
SIZES = [1, 2, 3, 3, 4, 9, 10, 11, 300, 301, 302, 310, 311, 700, 701, 702, 703]


def sample_values(value_type, n):
    """n values of `value_type`, every 7th null, not all distinct."""
    def one(i):
        if i % 7 == 3:
            return None
        if pa.types.is_large_string(value_type) or pa.types.is_string(value_type):
            return "" if i % 11 == 5 else f"v{i}-" + "é" * (i % 4)
        if pa.types.is_fixed_size_binary(value_type):
            return bytes([i % 256, (i * 7) % 256, 65])
        if pa.types.is_binary(value_type) or pa.types.is_large_binary(value_type):
            return bytes(range(i % 9)) + b"\xff"
        if pa.types.is_boolean(value_type):
            return i % 3 == 0
        if pa.types.is_decimal(value_type):
            return decimal.Decimal(i * 37 - 1000).scaleb(-2)
        if pa.types.is_int8(value_type):
            return (i * 13) % 250 - 125
        if pa.types.is_floating(value_type):
            return i * 0.5 - 3
        if pa.types.is_integer(value_type):
            return i * 1000003 - 7
        if pa.types.is_list(value_type) and pa.types.is_struct(value_type.value_type):
            return [{"b": i % 3 == 1, "s": f"s{i}"}, None][: i % 3]
        if pa.types.is_list(value_type):
            return [i, None, i + 1][: i % 4]
        if pa.types.is_large_list(value_type):
            return [f"e{i}", None, ""][: i % 4]
        if pa.types.is_fixed_size_list(value_type):
            return [i % 100, None if i % 3 else -i % 100]
        if pa.types.is_map(value_type):
            return [(f"k{i}", i), ("z", None)][: i % 3]
        if pa.types.is_struct(value_type) and value_type.names == ["b", "l"]:
            return {"b": None if i % 4 == 1 else i % 3 == 0, "l": [i % 100, -1][: i % 3]}
        if pa.types.is_struct(value_type):
            return {"x": i, "y": None if i % 5 == 0 else f"y{i}"}
        raise AssertionError(value_type)
    return pa.array([one(i) for i in range(n)], value_type)


def indexes(size, k):
    """Indexes into a dictionary of `size` values: its newest ones, its
    first, a null."""
    return pa.array([size - 1, None, 0, max(size - 2, 0), (k * 31) % size], pa.int32())


def growing_dictionary_batches(value_type, sizes=SIZES, replace_at=None):
    """One column d: dictionary<int32, value_type>, the dictionary of batch
    k the first sizes[k] values; from batch `replace_at` on, the values are
    others (pyarrow sends a replacement, then deltas again)."""
    n = max(sizes)
    first = sample_values(value_type, n)
    second = sample_values(value_type, n + 3).slice(3)
    schema = pa.schema([("d", pa.dictionary(pa.int32(), value_type)), ("k", pa.int32())])
    batches = []
    for k, size in enumerate(sizes):
        values = second if replace_at is not None and k >= replace_at else first
        d = pa.DictionaryArray.from_arrays(indexes(size, k), values.slice(0, size))
        batches.append(pa.record_batch([d, pa.array([k] * 5, pa.int32())], schema=schema))
    return schema, batches


FLAT_TYPES = [pa.string(), pa.large_string(), pa.binary(), pa.large_binary(), pa.int64(),
              pa.int8(), pa.float64(), pa.bool_(), pa.binary(3), pa.decimal128(12, 2)]
NESTED_TYPES = [pa.list_(pa.int64()), pa.struct([("x", pa.int32()), ("y", pa.string())]),
                pa.large_list(pa.string()), pa.list_(pa.struct([("b", pa.bool_()), ("s", pa.string())])),
                pa.list_(pa.int16(), 2), pa.map_(pa.string(), pa.int32()),
                pa.struct([("b", pa.bool_()), ("l", pa.list_(pa.int8()))])]


@pytest.mark.parametrize("value_type", FLAT_TYPES + NESTED_TYPES, ids=str)
@pytest.mark.parametrize("flavour", ["stream", "file"])
def test_growing_dictionary_reads_as_pyarrow_reads_it(sluice, tmp_path, value_type, flavour):
    path = tmp_path / ("in.arrow" if flavour == "file" else "in.arrows")
    schema, batches = growing_dictionary_batches(value_type)
    stats = write_ipc(path, schema, batches, file=flavour == "file")
    assert stats.num_dictionary_deltas >= len(set(SIZES)) - 2, stats
    want_schema, want = peer_rows(path, file=flavour == "file")
    got_schema, got = sluice_rows(sluice, path)
    assert got_schema == want_schema
    assert got == want


@pytest.mark.parametrize("value_type", [pa.string(), pa.int64(), pa.bool_(),
                                        pa.list_(pa.int64()), NESTED_TYPES[-1]], ids=str)
def test_replacement_between_deltas(sluice, tmp_path, value_type):
    """A stream replaces a grown dictionary and grows the new one: the
    batches before keep the old values, those after see only the new."""
    path = tmp_path / "in.arrows"
    schema, batches = growing_dictionary_batches(value_type, replace_at=9)
    stats = write_ipc(path, schema, batches)
    assert stats.num_replaced_dictionaries >= 1 and stats.num_dictionary_deltas >= 8, stats
    assert sluice_rows(sluice, path) == peer_rows(path)


def nested_column_batches(n_batches):
    """A struct column and a list column holding dictionary<int32, utf8>
    (two dictionaries, each growing), nulls at every level."""
    values = sample_values(pa.string(), 2 * n_batches)
    dtype = pa.dictionary(pa.int32(), pa.string())
    schema = pa.schema([("s", pa.struct([("d", dtype), ("k", pa.int32())])),
                        ("l", pa.list_(dtype))])
    batches = []
    for k in range(1, n_batches + 1):
        size = k + 30 * (k // 25)  # every 25th step adds 31 values
        dictionary = values.slice(0, size)
        d = pa.DictionaryArray.from_arrays(pa.array([size - 1, None, 0], pa.int32()), dictionary)
        s = pa.StructArray.from_arrays([d, pa.array([k, None, 3], pa.int32())], names=["d", "k"],
                                       mask=pa.array([False, False, k % 3 == 0]))
        items = pa.DictionaryArray.from_arrays(pa.array([0, None, size - 1, size // 2], pa.int32()),
                                               dictionary)
        l = pa.ListArray.from_arrays(pa.array([0, 1, 1, 4], pa.int32()), items,
                                     mask=pa.array([False, k % 4 == 0, False]))
        batches.append(pa.record_batch([s, l], schema=schema))
    return schema, batches


@pytest.mark.parametrize("flavour", ["stream", "file"])
def test_growing_dictionaries_inside_struct_and_list(sluice, tmp_path, flavour):
    path = tmp_path / ("in.arrow" if flavour == "file" else "in.arrows")
    schema, batches = nested_column_batches(120)
    stats = write_ipc(path, schema, batches, file=flavour == "file")
    assert stats.num_dictionary_deltas >= 100, stats
    assert sluice_rows(sluice, path) == peer_rows(path, file=flavour == "file")


def test_twenty_thousand_one_value_deltas(sluice, tmp_path):
    """20,000 batches, each adding one value to a string dictionary (nulls in
    the values and the indexes): sluice reads it (each delta used to copy
    the whole dictionary: 20,000 of them took 18 s) to what pyarrow reads.
    No timing is asserted; the subprocess timeout only guards against a
    hang. The output is Parquet: an IPC stream writer sends each batch's
    whole dictionary again."""
    n = 20_000
    path, out = tmp_path / "in.arrows", tmp_path / "out.parquet"
    values = pa.array([None if i % 1000 == 7 else f"value-{i}" for i in range(n)], pa.string())
    schema = pa.schema([("d", pa.dictionary(pa.int32(), pa.string()))])
    options = ipc.IpcWriteOptions(emit_dictionary_deltas=True)
    with pa.OSFile(str(path), "wb") as sink, ipc.new_stream(sink, schema, options=options) as w:
        for i in range(1, n + 1):
            idx = pa.array([i - 1, None if i % 3 == 0 else i // 2], pa.int32())
            w.write_batch(pa.record_batch(
                [pa.DictionaryArray.from_arrays(idx, values.slice(0, i))], schema=schema))
    # pyarrow batch by batch: its read_all keeps each batch's own copy of the
    # dictionary, gigabytes here.
    want = []
    with pa.OSFile(str(path), "rb") as fh:
        reader = ipc.open_stream(fh)
        for b in reader:
            want.extend(b.column(0).to_pylist())
        assert reader.stats.num_dictionary_deltas == n - 1, reader.stats
    sluice.run("convert", path, out, timeout=300)
    got = pq.read_table(out).column("d").to_pylist()
    assert got == want
