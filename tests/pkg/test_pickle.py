"""Pickling and copying sluice's data objects (multiprocessing, dask.delayed
on a cluster, copy.deepcopy), as pyarrow's Tables, RecordBatches and Schemas
pickle: an Arrow IPC stream sluice writes and reads back."""
import concurrent.futures
import copy
import multiprocessing
import pickle

import pyarrow as pa
import pyarrow.csv as pacsv
import pytest

import sluice
from pkg_helpers import typed_table


def roundtrip(obj):
    return pickle.loads(pickle.dumps(obj))


@pytest.fixture(scope="module")
def rich():
    """Every type the formats give, with nulls, an extension type, a
    dictionary that differs between batches, schema and field metadata, in
    several batches."""
    t = typed_table(rows=900)
    t = t.append_column(pa.field("uuid", pa.uuid(), metadata={b"k": b"v"}),
                        pa.ExtensionArray.from_storage(pa.uuid(),
                                                       pa.array([bytes([i % 256]) * 16
                                                                 for i in range(900)],
                                                                pa.binary(16))))
    t = t.replace_schema_metadata({"origin": "test"})
    batches = t.to_batches(max_chunksize=300)
    # A dictionary of each batch's own (replaced in the stream).
    batches = [pa.RecordBatch.from_arrays(
        b.columns + [pa.array(["x%d" % k, None, "y"] * 100).dictionary_encode()],
        schema=b.schema.append(pa.field("dict2", pa.dictionary(pa.int32(), pa.string()))))
        for k, b in enumerate(batches)]
    expected = pa.Table.from_batches(batches)
    return expected, sluice.Table.from_arrow(expected)


def test_table_batch_schema_column_field_pickle(rich):
    expected, t = rich
    back = roundtrip(t)
    assert isinstance(back, sluice.Table)
    got = pa.table(back)
    assert got.schema.equals(expected.schema, check_metadata=True)
    assert got.equals(expected)
    assert [b.num_rows for b in back.batches] == [b.num_rows for b in t.batches]

    b = roundtrip(t.batches[1])
    assert isinstance(b, sluice.Batch)
    assert pa.record_batch(b).equals(expected.to_batches()[1])

    s = roundtrip(t.schema)
    assert isinstance(s, sluice.Schema) and s == t.schema
    assert pa.schema(s).equals(expected.schema, check_metadata=True)

    c = roundtrip(t.column("dict2"))
    assert isinstance(c, sluice.Column) and c.name == "dict2"
    assert c.to_pylist() == expected.column("dict2").to_pylist()

    f = roundtrip(t.schema.field("uuid"))
    assert f == t.schema.field("uuid") and f.metadata == t.schema.field("uuid").metadata
    assert f.metadata["k"] == "v" and f.metadata["ARROW:extension:name"] == "arrow.uuid"
    assert pa.field(f).equals(expected.schema.field("uuid"), check_metadata=True)
    user = sluice.Field("x", sluice.DataType("l"), False, {"a": "b"})
    assert roundtrip(user) == user


def test_tags_and_metadata_are_kept(tmp_path):
    # A batch's (split, index) sorts an unordered scan back into plan order:
    # a worker that sends batches back must not lose them.
    path = tmp_path / "many.csv"
    pacsv.write_csv(pa.table({"i": list(range(100_000)), "s": ["v%d" % i for i in range(100_000)]}),
                    path)
    t = sluice.read(path, batch_rows=5000)
    tags = [b.tag for b in t.batches]
    assert len({split for split, _ in tags}) > 1 and len({i for _, i in tags}) > 1
    assert [b.tag for b in roundtrip(t).batches] == tags
    assert [roundtrip(b).tag for b in t.batches] == tags
    ipc = tmp_path / "meta.arrows"
    with pa.OSFile(str(ipc), "wb") as f, pa.ipc.new_stream(f, pa.schema([("a", pa.int64())])) as w:
        w.write_batch(pa.record_batch({"a": [1]}), custom_metadata={"sluice:split": "3"})
    b = sluice.read(ipc, format="arrows").batches[0]
    assert b.metadata == {"sluice:split": "3"}
    assert roundtrip(b).metadata == {"sluice:split": "3"}


def test_table_from_a_worker_process(tmp_path):
    # pyarrow Tables come back from ProcessPoolExecutor workers; sluice's
    # raised "cannot pickle 'sluice._sluice._Schema' object".
    path = tmp_path / "t.parquet"
    expected = typed_table(rows=200)
    import pyarrow.parquet as pq
    pq.write_table(expected, path)
    ctx = multiprocessing.get_context("spawn")
    with concurrent.futures.ProcessPoolExecutor(1, mp_context=ctx) as pool:
        got = pool.submit(sluice.read, str(path)).result(timeout=120)
    assert isinstance(got, sluice.Table)
    assert pa.table(got).equals(pq.read_table(path))


def test_copy_does_not_share_the_batch_list(tmp_path):
    path = tmp_path / "x.csv"
    pacsv.write_csv(pa.table({"i": list(range(50_000)), "s": ["v"] * 50_000}), path)
    t = sluice.read(path, batch_rows=5000)
    n, k = t.num_rows, len(t.batches)
    assert k > 1
    c = copy.copy(t)
    df = c.to_pandas(self_destruct=True)
    assert len(df) == n
    # The original was emptied along with the copy.
    assert (t.num_rows, len(t.batches)) == (n, k)
    assert t.to_pandas()["i"].tolist() == list(range(50_000))
    d = copy.deepcopy(t)
    assert d is not t and pa.table(d).equals(pa.table(t))


def test_views_come_back_as_large_types():
    t = sluice.Table.from_arrow(pa.table({"s": pa.array(["a", None], pa.string_view()),
                                          "b": pa.array([b"x", None], pa.binary_view())}))
    back = roundtrip(t)
    assert [str(ty) for ty in back.schema.types] == ["large_string", "large_binary"]
    assert back.to_pydict() == t.to_pydict()


def test_an_unwritable_type_says_pickle():
    t = sluice.Table.from_arrow(pa.table({"r": pa.RunEndEncodedArray.from_arrays([2, 3], [1, 2])}))
    with pytest.raises(sluice.UnsupportedError, match="cannot pickle.*column 'r'"):
        pickle.dumps(t)
