"""to_pandas without pyarrow: dtypes and values for every Arrow type the
formats produce, compared with pyarrow's to_pandas of the same file; numpy
views over the decoded buffers (no copy) where the column allows it."""
import gc
import math
import subprocess
import sys

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import sluice
from pkg_helpers import write_ipc_file

# Where sluice's dtype differs from pyarrow's on purpose: nulls in numeric and
# bool columns become pandas' nullable dtypes instead of float64 / object.
NULLABLE = {"i8": "Int8", "i16": "Int16", "i32": "Int32", "i64": "Int64", "u8": "UInt8",
            "u16": "UInt16", "u32": "UInt32", "u64": "UInt64", "f32": "Float32",
            "f64": "Float64", "bool": "boolean"}


def norm(v):
    """A value as plain Python, missing values as None."""
    if isinstance(v, np.ndarray):
        return [norm(x) for x in v.tolist()]
    if isinstance(v, (list, tuple)):
        return [norm(x) for x in v]
    if isinstance(v, dict):
        return {k: norm(x) for k, x in v.items()}
    if v is None or v is pd.NA or v is pd.NaT:
        return None
    if isinstance(v, float) and math.isnan(v):
        return None
    if isinstance(v, np.generic):
        return v.item()
    return v


@pytest.fixture(scope="module")
def frames(typed):
    expected, path = typed
    return sluice.read(path).to_pandas(), expected.to_pandas(), expected


def test_columns_and_length(frames):
    got, want, _ = frames
    assert list(got.columns) == list(want.columns)
    assert len(got) == len(want)
    assert isinstance(got.index, pd.RangeIndex)


@pytest.mark.parametrize("name", [f.name for f in __import__("pkg_helpers").typed_table(1).schema])
def test_dtype_and_values(frames, name):
    got, want, expected = frames
    g, w = got[name], want[name]
    assert str(g.dtype) == NULLABLE.get(name, str(w.dtype)), name
    if name in NULLABLE and name.startswith(("i", "u")):
        # pyarrow turns nullable ints into float64; compare with exact values.
        assert [norm(v) for v in g.tolist()] == expected.column(name).to_pylist()
    elif name == "dict":
        assert list(g.cat.categories) == list(w.cat.categories)
        assert [norm(v) for v in g.astype(object).tolist()] == \
               [norm(v) for v in w.astype(object).tolist()]
    else:
        assert [norm(v) for v in g.tolist()] == [norm(v) for v in w.tolist()], name


def test_one_batch_numeric_is_a_view(numbers):
    expected, one, _ = numbers
    t = sluice.read(one)
    assert len(t.batches) == 1
    df = t.to_pandas()
    pt = pa.table(t)
    for name in ("a", "b", "c"):
        arr = df[name].to_numpy()
        assert arr.__array_interface__["data"][0] == pt.column(name).chunk(0).buffers()[1].address
        assert not arr.flags.owndata
    a = df["a"].to_numpy()
    del t, df, pt
    gc.collect()
    # The view keeps the decoded batch alive.
    assert a[:3].tolist() == [0, 1, 2] and a[-1] == len(expected) - 1


def test_read_pandas_frames_can_be_edited(numbers, tmp_path):
    """read_pandas (and to_pandas(self_destruct=True)) hand the DataFrame
    the gathered memory: numeric columns, with and without nulls, can be
    assigned in place, as in pd.read_parquet's frames. A table that lives on
    keeps read-only views, as pyarrow's zero-copy conversion (split_blocks)
    gives them. (Only memory a gather allocated is handed over writable,
    never a view of a file's mapping or of another batch.)"""
    expected, one, _ = numbers
    want = expected.to_pandas()
    want.loc[0, "a"] = 10
    want.loc[2, "b"] = want.loc[2, "b"] * 2
    df = sluice.read_pandas(one)
    df.loc[0, "a"] = 10
    df.loc[2, "b"] = df.loc[2, "b"] * 2
    assert df.equals(want)
    nulls = pa.table({"n": pa.array([1, None, 3], pa.int32()), "f": [0.5, 1.5, None]})
    import pyarrow.parquet as pq
    pq.write_table(nulls, tmp_path / "nulls.parquet")
    dfn = sluice.read_pandas(tmp_path / "nulls.parquet")
    dfn.loc[1, "n"] = 7
    dfn.loc[2, "f"] = 2.5
    assert dfn["n"].tolist() == [1, 7, 3] and dfn["f"].tolist() == [0.5, 1.5, 2.5]
    t = sluice.read(one)
    kept = t.to_pandas()
    with pytest.raises(ValueError):
        kept.loc[0, "a"] = 10
    mine = t.to_pandas(self_destruct=True)
    mine.loc[0, "a"] = 11
    assert mine["a"].iloc[0] == 11


def test_ordered_dictionaries_that_change_between_batches(data_dir):
    """Ordered dictionaries whose values differ between batches unify into
    one ordered Categorical (pandas refuses to union ordered ones as they
    are), with pyarrow's categories; an index under a null, undefined in
    Arrow (here out of range), is never looked up (to_pylist did, and
    failed)."""
    d1 = pa.DictionaryArray.from_arrays(pa.array([0, 1]), pa.array(["lo", "hi"]), ordered=True)
    d2 = pa.DictionaryArray.from_arrays(pa.array([0, 1]), pa.array(["hi", "mid"]), ordered=True)
    t = pa.Table.from_batches([pa.record_batch({"c": d1}), pa.record_batch({"c": d2})])
    path = data_dir / "ordered_cat.arrows"
    with pa.ipc.new_stream(path, t.schema) as w:
        w.write_table(t)
    got, want = sluice.read(path).to_pandas()["c"], t.to_pandas()["c"]
    assert got.cat.ordered and want.cat.ordered
    assert got.cat.categories.tolist() == want.cat.categories.tolist()
    assert got.tolist() == want.tolist()
    garbage = pa.DictionaryArray.from_buffers(  # index 7 under the null
        pa.dictionary(pa.int32(), pa.string()), 3,
        [pa.py_buffer(bytes([0b101])), pa.py_buffer(np.array([0, 7, 1], np.int32).tobytes())],
        pa.array(["a", "b"]), null_count=1)
    gt = pa.table({"c": garbage})
    path = data_dir / "garbage_index.arrows"
    with pa.ipc.new_stream(path, gt.schema) as w:
        w.write_table(gt)
    assert sluice.read(path).to_pylist() == gt.to_pylist() == [{"c": "a"}, {"c": None}, {"c": "b"}]


def test_many_batches_concatenated_once(numbers):
    expected, _, many = numbers
    with sluice.scan(many) as s:
        t = sluice.Table(s.schema, list(s))
    assert len(t.batches) == 50
    df = t.to_pandas()
    want = expected.to_pandas()
    for name in ("a", "b", "c"):
        assert df[name].dtype == want[name].dtype
        assert np.array_equal(df[name].to_numpy(), want[name].to_numpy())


def test_multi_batch_with_nulls_and_dictionaries(typed):
    expected, path = typed
    t = sluice.read(path, columns=["i32", "str", "dict", "ts_s_paris"])
    assert len(t.batches) > 1
    df = t.to_pandas()
    assert df["dict"].dtype == "category"
    assert [norm(v) for v in df["i32"].tolist()] == expected.column("i32").to_pylist()
    assert df["ts_s_paris"].dt.tz is not None
    assert str(df["ts_s_paris"].dt.tz) == "Europe/Paris"


def test_to_pandas_without_pyarrow(typed):
    _, path = typed
    code = f"""
import sys
sys.modules["pyarrow"] = None  # any import of pyarrow fails
import sluice
df = sluice.read({str(path)!r}).to_pandas()
assert "pyarrow" not in [m for m in sys.modules if sys.modules[m] is not None], "pyarrow imported"
print(df.dtypes.astype(str).to_dict())
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    dtypes = eval(out.stdout)
    assert dtypes["i64"] == "Int64" and dtypes["i64_nonnull"] == "int64"
    assert dtypes["ts_ms_utc"] == "datetime64[ms, UTC]"
    assert dtypes["dict"] == "category"
    assert dtypes["str"] == "str"


def test_column_to_numpy(numbers):
    expected, one, _ = numbers
    t = sluice.read(one)
    assert np.array_equal(t.column("b").to_numpy(), expected.column("b").to_numpy())


def test_self_destruct_and_read_pandas(typed, numbers):
    expected, path = typed
    want = sluice.read(path).to_pandas()
    t = sluice.read(path)
    got = t.to_pandas(self_destruct=True)
    with pytest.raises(ValueError, match="consumed"):
        t.num_rows
    pd.testing.assert_frame_equal(got, want)
    pd.testing.assert_frame_equal(sluice.read_pandas(path), want)
    _, _, many = numbers
    pd.testing.assert_frame_equal(sluice.read_pandas(many, columns=["b", "a"]),
                                  sluice.read(many, columns=["b", "a"]).to_pandas())


def test_column_to_pandas_and_null_count(typed):
    expected, path = typed
    t = sluice.read(path, limit=777)
    df = t.to_pandas()
    want = expected.slice(0, 777)
    for name in ("i32", "str", "dict", "ts_ms_utc", "bool", "list"):
        pd.testing.assert_series_equal(t.column(name).to_pandas(), df[name])
        assert t.column(name).null_count == want.column(name).null_count, name


def test_strings_stay_arrow_buffers_with_pyarrow(data_dir):
    # With pyarrow installed pandas' str dtype is Arrow-backed: one batch's
    # strings are shared, not turned into Python objects.
    t = pa.table({"s": pa.array(["a", None, "ccc"] * 1000)})
    path = data_dir / "strings_one.arrow"
    with pa.ipc.new_file(str(path), t.schema) as w:
        w.write_table(t)
    st = sluice.read(path)
    df = st.to_pandas()
    assert df["s"].dtype == t.to_pandas()["s"].dtype
    shared = pa.array(df["s"].array)  # the Arrow data behind the pandas array
    shared = shared.chunk(0) if isinstance(shared, pa.ChunkedArray) else shared
    assert shared.buffers()[2].address == pa.table(st).column("s").chunk(0).buffers()[2].address
    assert df["s"].equals(t.to_pandas()["s"])


def test_strings_of_many_batches_are_shared_too(data_dir):
    """A table of several batches (a Parquet file of several row groups)
    shares its strings' bytes with the frame as one batch's are: each batch
    was copied, so read().to_pandas() of a string table peaked at twice the
    frame. With self_destruct the batches are copied and freed instead."""
    t = pa.table({"s": pa.array([f"v{i}" if i % 7 else None for i in range(30_000)])})
    path = data_dir / "strings_many.parquet"
    pq.write_table(t, path, row_group_size=10_000)
    st = sluice.read(path)
    assert len(pa.table(st).column("s").chunks) == 3
    df = st.to_pandas()
    assert df["s"].equals(t.to_pandas()["s"])
    shared = pa.chunked_array(pa.array(df["s"].array))
    ours = {c.buffers()[2].address for c in pa.table(st).column("s").chunks}
    assert {c.buffers()[2].address for c in shared.chunks} == ours
    own = sluice.read(path).to_pandas(self_destruct=True)
    assert own["s"].equals(df["s"])


def _indexed_frame(index):
    df = pd.DataFrame({"a": np.arange(6, dtype=np.int64), "s": list("uvwxyz")})
    if index == "named":
        df.index = pd.Index(list("abcdef"), name="key")
    elif index == "unnamed":
        df.index = pd.Index([10, 20, 30, 40, 50, 60])
    elif index == "multi":
        df.index = pd.MultiIndex.from_arrays([list("aabbcc"), [1, 2, 1, 2, 1, 2]], names=["k1", "k2"])
    elif index == "range_and_column":  # df.set_index(col, append=True): a range level stored as such
        df = df.set_index("s", append=True)
        df["s"] = list("uvwxyz")
    else:
        df.index = pd.RangeIndex(100, 112, 2, name="r")
    return df


@pytest.mark.parametrize("index", ["named", "unnamed", "multi", "range", "range_and_column"])
@pytest.mark.parametrize("kind", ["parquet", "arrow"])
def test_pandas_index_restored(tmp_path, kind, index):
    """A DataFrame pandas wrote (its index in the "pandas" schema metadata)
    comes back with that index, as pd.read_parquet / pyarrow give it."""
    df = _indexed_frame(index)
    path = tmp_path / f"frame.{kind}"
    if kind == "parquet":
        df.to_parquet(path)
        want = pd.read_parquet(path)
    else:
        table = pa.Table.from_pandas(df)
        with pa.ipc.new_file(path, table.schema) as w:
            w.write_table(table)
        want = pa.ipc.open_file(path).read_all().to_pandas()
    for got in (sluice.read(path).to_pandas(), sluice.read_pandas(path),
                sluice.read(path, batch_rows=4).to_pandas()):
        assert list(got.index.names) == list(want.index.names)
        assert [norm(v) for v in got.index.tolist()] == [norm(v) for v in want.index.tolist()]
        assert isinstance(got.index, type(want.index)), (type(got.index), type(want.index))
        assert list(got.columns) == list(want.columns) == ["a", "s"]
        assert got["a"].tolist() == df["a"].tolist() and got["s"].tolist() == df["s"].tolist()


@pytest.mark.parametrize("kind", ["parquet", "arrow"])
def test_pandas_attrs_restored(tmp_path, kind):
    """DataFrame.attrs, which pandas records in the "pandas" metadata, come
    back as pd.read_parquet and pyarrow's to_pandas give them (they were
    dropped); a file without them gives {}."""
    df = pd.DataFrame({"a": [1, 2]})
    df.attrs = {"source": "sensor 7", "scale": [1, 2.5], "nested": {"k": None}}
    path = tmp_path / f"attrs.{kind}"
    table = pa.Table.from_pandas(df)
    if kind == "parquet":
        pq.write_table(table, path)
        want = pd.read_parquet(path).attrs
    else:
        with pa.ipc.new_file(path, table.schema) as w:
            w.write_table(table)
        want = pa.ipc.open_file(path).read_all().to_pandas().attrs
    assert want == df.attrs
    for got in (sluice.read(path).to_pandas(), sluice.read_pandas(path)):
        assert got.attrs == want
    plain = tmp_path / f"plain.{kind}"
    sluice.write(pa.table({"a": [1]}), plain)
    assert sluice.read_pandas(plain).attrs == {}


def test_pandas_index_left_out_when_not_read(tmp_path):
    """A projection without the index column, or a limit that shortens a
    range index, keeps the default index instead of failing."""
    path = tmp_path / "named.parquet"
    _indexed_frame("named").to_parquet(path)
    got = sluice.read(path, columns=["a"]).to_pandas()
    assert list(got.columns) == ["a"] and isinstance(got.index, pd.RangeIndex)
    path = tmp_path / "range.parquet"
    _indexed_frame("range").to_parquet(path)
    got = sluice.read(path, limit=3).to_pandas()
    assert got["a"].tolist() == [0, 1, 2] and list(got.index) == [0, 1, 2]


@pytest.mark.parametrize("index", ["named", "unnamed", "multi", "range", "range_and_column"])
def test_read_pandas_with_columns_keeps_the_index_as_pd_read_parquet(tmp_path, index):
    """read_pandas(columns=) adds the index columns the "pandas" metadata
    names, as pd.read_parquet does (it gave the default index); so does
    sluice.dask.read, as dd.read_parquet."""
    import dask.dataframe as dd
    import sluice.dask

    path = tmp_path / "frame.parquet"
    _indexed_frame(index).to_parquet(path, row_group_size=2)
    for columns in (["a"], ["s", "a"]):
        want = pd.read_parquet(path, columns=columns)
        pd.testing.assert_frame_equal(sluice.read_pandas(path, columns=columns), want)
        flt = [("a", ">", 2)]
        pd.testing.assert_frame_equal(sluice.read_pandas(path, columns=columns, filters=flt),
                                      pd.read_parquet(path, columns=columns, filters=flt))
    if index in ("named", "unnamed", "multi"):  # (a range index is each partition's own)
        got = sluice.dask.read(path, columns=["a"], splits_per_partition=1).compute()
        want = dd.read_parquet(path, columns=["a"]).compute()
        assert list(got.index) == list(want.index) == list(pd.read_parquet(path).index)
        assert got.index.names == want.index.names
    # A Table's to_pandas is pyarrow's read_table(columns=).to_pandas(): no index.
    got = sluice.read(path, columns=["a"]).to_pandas()
    assert isinstance(got.index, pd.RangeIndex)


def test_nested_pyarrow_dtypes_come_back(tmp_path):
    """Columns of pd.ArrowDtype over nested types ("list<item: int64>[pyarrow]"
    in the pandas metadata, which pandas cannot parse: pyarrow's own
    to_pandas fails on it) come back as the ArrowDtype of the column's type,
    not object."""
    df = pd.DataFrame({
        "l": pd.Series([[1, 2], [3], None], dtype=pd.ArrowDtype(pa.list_(pa.int64()))),
        "s": pd.Series([{"a": 1}, None, {"a": 2}], dtype=pd.ArrowDtype(pa.struct([("a", pa.int64())]))),
        "m": pd.Series([[("k", 1)], [], None], dtype=pd.ArrowDtype(pa.map_(pa.string(), pa.int64()))),
        "i": pd.Series([1, None, 2], dtype="int64[pyarrow]")})
    sluice.write(df, tmp_path / "s.parquet")
    pq.write_table(pa.Table.from_pandas(df), tmp_path / "p.parquet")
    with pytest.raises(TypeError):  # (pyarrow: "data type 'list<item: int64>[pyarrow]' not understood")
        pq.read_table(tmp_path / "p.parquet").to_pandas()
    for name in ("s.parquet", "p.parquet"):
        got = sluice.read_pandas(tmp_path / name)
        assert all(isinstance(t, pd.ArrowDtype) for t in got.dtypes), name
        pd.testing.assert_frame_equal(got, df)


def test_a_boolean_partition_key_reads_back_as_its_text(tmp_path):
    """A pandas `boolean` column written as a partition key comes back as
    the keys' text, as pyarrow.dataset reads the directories (the "pandas"
    metadata's `boolean` dtype made every read fail with a bare TypeError;
    pd.read_parquet fails so on pandas' own output)."""
    import pyarrow.dataset as pds
    import sluice.dask

    df = pd.DataFrame({"b": pd.array([True, False, None], "boolean"), "v": [1, 2, 3]})
    sluice.write(df, tmp_path / "p", format="parquet", partition_by=["b"])
    want = pds.dataset(tmp_path / "p", partitioning="hive").to_table().sort_by("v")
    for got in (sluice.read_pandas(tmp_path / "p"), sluice.read(tmp_path / "p").to_pandas(),
                sluice.dask.read(tmp_path / "p").compute()):
        got = got.sort_values("v")
        assert got["v"].tolist() == want.column("v").to_pylist()
        assert [None if pd.isna(x) else x for x in got["b"]] == want.column("b").to_pylist()


def test_parquet_categorical_as_pandas_wrote_it(tmp_path):
    # Categories in their order, unused ones, the ordered flag: from the
    # file's dictionaries, as pd.read_parquet gives them.
    cats = pd.Categorical(["b", "a", None, "b", "c"] * 400, categories=["c", "b", "a", "z"],
                          ordered=True)
    df = pd.DataFrame({"cat": cats, "x": range(2000)})
    df.to_parquet(tmp_path / "cat.parquet", row_group_size=300)
    got = sluice.read_pandas(tmp_path / "cat.parquet")
    pd.testing.assert_frame_equal(got, pd.read_parquet(tmp_path / "cat.parquet"))
    assert got["cat"].cat.categories.tolist() == ["c", "b", "a", "z"] and got["cat"].cat.ordered


def test_self_destruct_edits_stay_in_the_frame(tmp_path):
    # A frame that took the table over is editable; when its memory is
    # shared (an earlier frame's views, a pyarrow table over it, memory
    # sluice does not own) the column is copied, so edits never show there.
    pq.write_table(pa.table({"a": np.arange(100_000), "b": np.arange(100_000) * 1.5}),
                   tmp_path / "n.parquet")
    t = sluice.read(tmp_path / "n.parquet", columns=["a"])
    before, arrow = t.to_pandas(), pa.table(t)
    mine = t.to_pandas(self_destruct=True)
    mine.loc[1, "a"] = -9
    assert before.loc[1, "a"] == 1 and arrow.column("a")[1].as_py() == 1
    assert mine.loc[1, "a"] == -9
    fresh = sluice.read_pandas(tmp_path / "n.parquet")
    fresh.loc[1, "b"] = 7.0
    assert fresh.loc[1, "b"] == 7.0
    borrowed = sluice.Table.from_arrow(pa.table({"a": [1, 2, 3]})).to_pandas(self_destruct=True)
    borrowed.loc[1, "a"] = -1
    assert borrowed["a"].tolist() == [1, -1, 3]
    # A Batch or Column taken from the table before keeps its values (the
    # Column once became empty, the Batch saw the frame's edits).
    t = sluice.read(tmp_path / "n.parquet", columns=["a"])
    batch, column = t.batches[0], t.column("a")
    mine = t.to_pandas(self_destruct=True)
    mine.loc[0, "a"] = -9
    assert mine.loc[0, "a"] == -9
    assert batch.column("a").to_pylist()[:2] == [0, 1]
    assert pa.record_batch(batch).column("a")[0].as_py() == 0
    assert len(column) == 100_000 and column.to_pylist()[:2] == [0, 1]
    t = sluice.read(tmp_path / "n.parquet", columns=["a"])
    columns = t.columns
    mine = t.to_pandas(self_destruct=True)
    mine.loc[0, "a"] = -9
    assert len(columns[0]) == 100_000 and columns[0].to_pylist()[:2] == [0, 1]


def test_column_labels_as_pandas_wrote_them(tmp_path):
    # Numbers stay numbers, a MultiIndex comes back from its tuples, the
    # columns' name is kept: what pd.read_parquet gives.
    frames = [pd.DataFrame({0: [1], 1: [2]}), pd.DataFrame({1.5: [1.0]}),
              pd.DataFrame([[1, 2]], columns=pd.MultiIndex.from_tuples([("a", 1), ("b", 2)],
                                                                        names=["x", "y"])),
              pd.DataFrame({"a": [1]}).rename_axis("cols", axis=1)]
    for k, df in enumerate(frames):
        path = tmp_path / f"labels{k}.parquet"
        df.to_parquet(path)
        want = pd.read_parquet(path)
        pd.testing.assert_frame_equal(sluice.read_pandas(path), want)
        pd.testing.assert_frame_equal(sluice.read(path).to_pandas(), want)


def test_bool_and_narrow_number_labels_keep_their_type(tmp_path):
    """Labels True/False come back as bools (they were the strings 'True',
    'False', so df[True] failed; pyarrow's to_pandas makes both True), and
    int8 / float32 labels keep their dtype, as pd.read_parquet keeps it."""
    for columns in ([True, False], np.array([1, 2], dtype=np.int8),
                    np.array([1.5, 2.5], dtype=np.float32)):
        df = pd.DataFrame([[1, 2]], columns=columns)
        df.to_parquet(tmp_path / "l.parquet")
        sluice.write(df, tmp_path / "s.parquet")
        for name in ("l.parquet", "s.parquet"):
            got = sluice.read_pandas(tmp_path / name)
            pd.testing.assert_index_equal(got.columns, df.columns, exact=True)
            if columns.dtype.kind != "b" if hasattr(columns, "dtype") else False:
                pd.testing.assert_index_equal(got.columns, pd.read_parquet(tmp_path / name).columns)


NULLABLE_FLOATS = {pa.float64(): pd.Float64Dtype(), pa.float32(): pd.Float32Dtype()}


@pytest.mark.parametrize("distinguish", [False, True])
def test_nan_in_a_float_column_with_nulls(tmp_path, distinguish):
    """A NaN next to nulls is missing or a value as pandas itself takes it in
    its Float64 arrays (pandas 3: missing unless distinguish_nan_and_na): what
    pyarrow's to_pandas with pandas' nullable floats and pd.read_parquet with
    dtype_backend="numpy_nullable" give, on every path."""
    table = pa.table({"f64": pa.array([1.0, float("nan"), None, 3.0] * 3, pa.float64()),
                      "f32": pa.array([float("nan"), 2.0, 3.0, None] * 3, pa.float32())})
    one = write_ipc_file(table, tmp_path / "one.arrow")
    many = write_ipc_file(table, tmp_path / "many.arrow", max_chunksize=5)
    pq.write_table(table, tmp_path / "f.parquet", row_group_size=5)
    with pd.option_context("future.distinguish_nan_and_na", distinguish):
        want = table.to_pandas(types_mapper=NULLABLE_FLOATS.get)
        pd.testing.assert_frame_equal(
            pd.read_parquet(tmp_path / "f.parquet", dtype_backend="numpy_nullable"), want)
        for path in (one, many, tmp_path / "f.parquet"):
            t = sluice.read(path)
            for got in (t.to_pandas(), sluice.read_pandas(path), sluice.read(path).to_pandas(
                    self_destruct=True), pd.concat([b.to_pandas() for b in t.batches],
                                                   ignore_index=True)):
                pd.testing.assert_frame_equal(got, want)
            for name in ("f64", "f32"):
                pd.testing.assert_series_equal(t.column(name).to_pandas(), want[name])
    assert want["f64"].isna().tolist()[:4] == [False, not distinguish, True, False]
    # Without nulls a column stays numpy float64 with NaN, as pyarrow gives it.
    plain = pa.table({"f": [1.0, float("nan")]})
    got = sluice.Table.from_arrow(plain).to_pandas()
    assert got["f"].dtype == plain.to_pandas()["f"].dtype == np.float64
    # Without pyarrow: the same.
    code = f"""
import sys
sys.modules["pyarrow"] = None
import sluice
for path in ({str(one)!r}, {str(many)!r}):
    print(sluice.read(path).to_pandas()["f64"].isna().tolist(),
          sluice.read_pandas(path)["f32"].isna().tolist())
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    want = table.to_pandas(types_mapper=NULLABLE_FLOATS.get)
    line = "%s %s" % (want["f64"].isna().tolist(), want["f32"].isna().tolist())
    assert out.stdout.splitlines() == [line, line]


def test_map_entries_not_named_key_and_value(tmp_path):
    """A map's entries are its struct's first and second fields whatever they
    are called, as pyarrow reads them."""
    mt = pa.map_(pa.field("some_key", pa.string(), nullable=False),
                 pa.field("some_value", pa.int32()))
    table = pa.table({"m": pa.array([[("a", 1), ("b", None)], None, []] * 3, type=mt)})
    path = write_ipc_file(table, tmp_path / "map.arrow", max_chunksize=4)
    t = sluice.read(path)
    assert t.to_pylist() == table.to_pylist()
    assert [norm(v) for v in t.to_pandas()["m"].tolist()] == \
           [norm(v) for v in table.to_pandas()["m"].tolist()]
    # a slice (the map at an offset), through the C data interface
    sliced = sluice.Table.from_arrow(table.slice(2, 5))
    assert sliced.to_pylist() == table.slice(2, 5).to_pylist()


def test_conversion_errors_name_the_column(tmp_path):
    """A value pandas or Python cannot hold is an error naming the column
    (and the value), as the C library's messages do; pyarrow refuses the
    same values."""
    cases = [
        ("day", pa.array([0, 3_000_000], pa.date32()), OverflowError, "3000000"),
        ("zoned", pa.array([1], pa.timestamp("s", "Mars/Base")), ValueError, "Mars/Base"),
        ("clock", pa.array([1], pa.time64("ns")), ValueError, "1 ns"),
    ]
    for name, array, error, value in cases:
        table = pa.table({"ok": pa.array(range(len(array))), name: array})
        with pytest.raises(Exception):
            table.to_pandas()
        path = write_ipc_file(table, tmp_path / f"{name}.arrow")
        t = sluice.read(path)
        calls = [t.to_pandas, lambda: sluice.read_pandas(path), t.column(name).to_pandas,
                 sluice.Table(t.schema, t.batches * 2).to_pandas]
        if name != "clock":  # (to_pylist gives Python's time, which holds no nanoseconds)
            calls.append(t.to_pylist)
        for call in calls:
            with pytest.raises(error, match="column '%s'.*%s" % (name, value)):
                call()
    # Nested: a date inside a struct names the top-level column.
    path = write_ipc_file(pa.table({"s": pa.array([{"d": 3_000_000}], pa.struct(
        [("d", pa.date32())]))}), tmp_path / "nested.arrow")
    with pytest.raises(OverflowError, match="column 's'.*3000000"):
        sluice.read(path).to_pandas()


def test_float16_with_nulls_as_documented(tmp_path):
    # pandas has no nullable float16: float32 with NaN for the nulls, the
    # values pyarrow gives (as float16 with NaN).
    table = pa.table({"h": pa.array([1.5, None, -2.0], pa.float16())})
    got = sluice.read(write_ipc_file(table, tmp_path / "h.arrow")).to_pandas()["h"]
    want = table.to_pandas()["h"]
    assert got.dtype == np.float32 and want.dtype == np.float16
    assert [norm(v) for v in got.tolist()] == [norm(v) for v in want.tolist()]
    assert "float16 with nulls becomes numpy float32" in sluice.Table.to_pandas.__doc__


def test_reading_values_does_not_defeat_self_destruct(tmp_path):
    # A notebook shows the table (repr) or its values before converting:
    # to_pandas(self_destruct=True) then copied the whole table (repr,
    # to_pylist and to_pydict counted as handing the batches out).
    import tracemalloc
    n = 400_000
    pq.write_table(pa.table({"i": np.arange(n), "f": np.arange(n) * 0.5}), tmp_path / "x.parquet")
    sluice.read(tmp_path / "x.parquet").to_pandas(self_destruct=True)  # (lazy imports)
    for look in (repr, str, lambda t: t.to_pylist()[:3], lambda t: t.to_pydict()):
        t = sluice.read(tmp_path / "x.parquet")
        assert len(t.batches) == 1
        t = sluice.read(tmp_path / "x.parquet")  # (batches not handed out)
        look(t)
        tracemalloc.start()
        df = t.to_pandas(self_destruct=True)
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        assert peak < n * 16 // 10, (look, peak)  # no copy of the 6.4 MB
        # ... and the frame still owns its columns: edits in place.
        df.loc[0, "i"] = -1
        df.loc[0, "f"] = -1.0
        assert df.loc[0, "i"] == -1 and df.loc[0, "f"] == -1.0


def test_self_destruct_twice_raises(tmp_path):
    # Two threads converting one table with self_destruct=True split its
    # batches between two frames, silently; one call takes the batches, a
    # second one (at the same time or later) raises.
    import threading
    n = 60_000
    pa_csv_path = tmp_path / "x.csv"
    import pyarrow.csv as pacsv
    pacsv.write_csv(pa.table({"i": np.arange(n), "s": ["v%d" % (i % 7) for i in range(n)]}),
                    pa_csv_path)
    for _ in range(5):
        t = sluice.read(pa_csv_path, batch_rows=2000)
        assert len(t.batches) > 10
        t = sluice.read(pa_csv_path, batch_rows=2000)
        barrier = threading.Barrier(2)
        frames, errors = [], []

        def convert():
            barrier.wait()
            try:
                frames.append(t.to_pandas(self_destruct=True))
            except ValueError as e:
                errors.append(e)

        threads = [threading.Thread(target=convert) for _ in range(2)]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        assert len(frames) == 1 and len(errors) == 1
        assert len(frames[0]) == n and frames[0]["i"].tolist() == list(range(n))
        assert "self_destruct" in str(errors[0])
        with pytest.raises(ValueError, match=r"consumed by to_pandas\(self_destruct=True\)"):
            t.to_pandas(self_destruct=True)
        with pytest.raises(ValueError, match=r"consumed by to_pandas\(self_destruct=True\)"):
            t.to_pandas()


def test_a_consumed_table_refuses_every_use(tmp_path):
    """After to_pandas(self_destruct=True) the table's batches are freed.
    It used to read as a valid empty table: num_rows 0, pyarrow.table(t)
    and to_pandas() empty, sluice.write(t, ...) a 0-row file without an
    error. Every use of its rows raises ValueError saying so; its schema
    stays, and repr says it was consumed."""
    import copy
    import pickle
    path = tmp_path / "x.parquet"
    pq.write_table(pa.table({"i": list(range(10)), "s": [str(i) for i in range(10)]}), path)
    for batch_rows in (None, 3):  # one batch (__arrow_c_array__ exists) or several
        t = sluice.read(path, batch_rows=batch_rows)
        df = t.to_pandas(self_destruct=True)
        assert df["i"].tolist() == list(range(10))
        uses = {
            "num_rows": lambda: t.num_rows, "len": lambda: len(t), "shape": lambda: t.shape,
            "batches": lambda: t.batches, "columns": lambda: t.columns,
            "column": lambda: t.column("i"), "getitem": lambda: t[0],
            "iter": lambda: list(t), "to_pylist": t.to_pylist, "to_pydict": t.to_pydict,
            "to_pandas": t.to_pandas, "self_destruct": lambda: t.to_pandas(self_destruct=True),
            "equals": lambda: t.equals(sluice.read(path)), "eq": lambda: t == t,
            "other_equals": lambda: sluice.read(path).equals(t),
            "stream": lambda: t.__arrow_c_stream__(), "array": lambda: t.__arrow_c_array__(),
            "pa.table": lambda: pa.table(t), "pa.record_batch": lambda: pa.record_batch(t),
            "polars": lambda: __import__("polars").DataFrame(t),
            "write": lambda: sluice.write(t, tmp_path / "out.parquet"),
            "pickle": lambda: pickle.dumps(t), "copy": lambda: copy.copy(t),
        }
        for name, use in uses.items():
            with pytest.raises(ValueError, match=r"consumed by to_pandas\(self_destruct=True\)"):
                use()
        assert not (tmp_path / "out.parquet").exists()
        import duckdb  # (DuckDB wraps the producer's error in its own)
        with pytest.raises(duckdb.Error, match=r"consumed by to_pandas\(self_destruct=True\)"):
            duckdb.from_arrow(t).fetchall()
        assert t.column_names == ["i", "s"] and t.num_columns == 2
        assert "consumed" in repr(t) and "i: int64" in repr(t)


def _dtyped_frame(nulls, rows=30):
    """A DataFrame of pandas' extension dtypes (Int*/UInt*/Float*, boolean,
    the string dtypes, ArrowDtype) and numpy ones, with or without nulls in
    the extension columns (numpy columns hold nulls only where their dtype
    can: float NaN, NaT)."""
    def gaps(values):
        return [None if nulls and i % 4 == 1 else v for i, v in enumerate(values)]

    ints = list(range(rows))
    floats = [i * 0.5 for i in range(rows)]
    words = ["w%d" % (i % 5) for i in range(rows)]
    return pd.DataFrame({
        "I8": pd.array(gaps(ints), dtype="Int8"), "I64": pd.array(gaps(ints), dtype="Int64"),
        "U8": pd.array(gaps(ints), dtype="UInt8"), "U64": pd.array(gaps(ints), dtype="UInt64"),
        "F32": pd.array(gaps(floats), dtype="Float32"), "F64": pd.array(gaps(floats), dtype="Float64"),
        "flag": pd.array(gaps([i % 3 == 0 for i in ints]), dtype="boolean"),
        "s": pd.array(gaps(words), dtype="string"),
        "s_nan": pd.array(gaps(words), dtype=pd.StringDtype(na_value=np.nan)),
        "pa_int": pd.array(gaps(ints), dtype="int64[pyarrow]"),
        "pa_f": pd.array(gaps(floats), dtype="double[pyarrow]"),
        "pa_ts": pd.array(gaps(pd.date_range("2024-01-01", periods=rows, freq="h", unit="us")),
                          dtype=pd.ArrowDtype(pa.timestamp("us", "Asia/Tokyo"))),
        "pa_str": pd.array(gaps(words), dtype=pd.ArrowDtype(pa.large_string())),
        "np_i": np.arange(rows, dtype="int32"), "np_u": np.arange(rows, dtype="uint16"),
        "np_f": np.array(gaps(floats), dtype="float64"),
        "np_b": np.array([i % 2 == 0 for i in ints]),
        "cat": pd.Categorical(gaps(words), categories=["w4", "w3", "w2", "w1", "w0"], ordered=True),
        "ts": pd.Series(pd.date_range("2024-03-30", periods=rows, freq="h", tz="Europe/Paris",
                                      unit="ms")).where([not (nulls and i % 4 == 1) for i in ints]),
        "td": pd.to_timedelta(gaps(ints), unit="s"),
    }, index=pd.Index(np.arange(rows) * 2, name="key"))


def _pandas_wrote(df, path, kind):
    """`df` written by pandas (Parquet, in row groups) or pyarrow's Feather
    (in record batches), and what pandas reads back."""
    if kind == "parquet":
        df.to_parquet(path, row_group_size=8)
        return pd.read_parquet(path)
    import pyarrow.feather as feather
    feather.write_feather(df, path, chunksize=8, compression="uncompressed")
    return pd.read_feather(path)


@pytest.mark.parametrize("nulls", [False, True])
@pytest.mark.parametrize("kind", ["parquet", "arrow"])
def test_dtypes_pandas_recorded_are_restored(tmp_path, kind, nulls):
    """A file pandas wrote comes back with the dtypes its "pandas" metadata
    records (Int64, boolean, string, int64[pyarrow], ...), as pd.read_parquet
    / pd.read_feather restore them; before, Int64 came
    back int64, boolean bool, string str and int64[pyarrow] int64 / Int64."""
    df = _dtyped_frame(nulls)
    path = tmp_path / f"frame.{kind}"
    want = _pandas_wrote(df, path, kind)
    if nulls:  # documented: a numpy column with nulls is nullable
        assert want["np_f"].dtype == np.float64
        want["np_f"] = want["np_f"].astype("Float64")
    t = sluice.read(path)
    assert len(t.batches) > 1
    for got in (sluice.read_pandas(path), t.to_pandas(), sluice.read(path).to_pandas(
            self_destruct=True), sluice.read(path, batch_rows=1000).to_pandas(),
            sluice.read(path, batch_rows=1000).to_pandas(self_destruct=True)):
        assert got.dtypes.to_dict() == want.dtypes.to_dict()
        pd.testing.assert_frame_equal(got, want)
    assert want["I64"].dtype == "Int64" and want["pa_int"].dtype == "int64[pyarrow]"
    # The index keeps the default conversion, as pyarrow's (not its Int32).
    df = pd.DataFrame({"a": [1, 2]}, index=pd.Index(pd.array([5, 6], dtype="Int32"), name="k"))
    df.to_parquet(tmp_path / "ix.parquet")
    want = pd.read_parquet(tmp_path / "ix.parquet")
    pd.testing.assert_frame_equal(sluice.read_pandas(tmp_path / "ix.parquet"), want)
    assert want.index.dtype == "int32"


@pytest.mark.parametrize("kind", ["parquet", "arrow"])
def test_pandas_frame_round_trips(tmp_path, kind):
    """sluice.write(df) then sluice.read_pandas gives df back, dtypes and
    all (a Float64 NaN is missing in pandas 3 before it is written)."""
    for nulls in (False, True):
        df = _dtyped_frame(nulls)
        path = tmp_path / f"rt{int(nulls)}.{kind}"
        sluice.write(df, path)
        if nulls:
            df["np_f"] = df["np_f"].astype("Float64")  # documented, as above
        pd.testing.assert_frame_equal(sluice.read_pandas(path), df)
        pd.testing.assert_frame_equal(sluice.read(path).to_pandas(), df)


def test_stored_dtypes_without_pyarrow(tmp_path):
    """Without pyarrow the pandas extension dtypes come back the same; an
    ArrowDtype column, which needs pyarrow, is what a column of its Arrow
    type gives (int64, or Int64 with nulls)."""
    paths = []
    for nulls in (False, True):
        paths.append(tmp_path / f"f{int(nulls)}.parquet")
        _dtyped_frame(nulls).to_parquet(paths[-1])
    code = f"""
import sys
sys.modules["pyarrow"] = None
import sluice
for path in {[str(p) for p in paths]!r}:
    df = sluice.read_pandas(path)
    print({{k: str(v) for k, v in df.dtypes.items()}}, df.index.dtype, df["s"].dtype.storage,
          df["s"].isna().sum(), df["F64"].isna().sum(), df["flag"].sum())
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert len(out.stdout.splitlines()) == 2
    for line, nulls in zip(out.stdout.splitlines(), (False, True)):
        want = pd.read_parquet(paths[nulls])
        dtypes = eval(line.split("}")[0] + "}")
        for name in ("I8", "I64", "U8", "U64", "F32", "F64", "flag", "s", "s_nan", "cat", "ts", "td"):
            assert dtypes[name] == str(want[name].dtype), name
        assert dtypes["pa_int"] == ("Int64" if nulls else "int64")
        assert dtypes["pa_f"] == ("Float64" if nulls else "float64")
        assert dtypes["pa_ts"] == "datetime64[us, Asia/Tokyo]"
        rest = line.split("}")[1].split()
        assert rest == ["int64", "python", str(want["s"].isna().sum()),
                        str(want["F64"].isna().sum()), str(want["flag"].sum())]


def test_stored_zone_of_a_naive_column(tmp_path):
    """A datetimetz column whose Arrow type lost its zone (a writer that kept
    the pandas metadata only) gets the recorded zone back, its values UTC
    instants, as pyarrow's to_pandas gives it (pyarrow also makes it ns)."""
    df = pd.DataFrame({"t": pd.date_range("2024-01-01", periods=3, freq="h", tz="America/Chicago",
                                          unit="us")})
    table = pa.Table.from_pandas(df)
    naive = pa.table({"t": table.column("t").cast(pa.timestamp("us"))},
                     metadata=table.schema.metadata)
    path = write_ipc_file(naive, tmp_path / "naive.arrow")
    want = naive.to_pandas()
    got = sluice.read_pandas(path)
    assert str(got["t"].dt.tz) == str(want["t"].dt.tz) == "America/Chicago"
    assert got["t"].tolist() == want["t"].tolist() == df["t"].tolist()


def same_cell(got, want, path, loose=False):
    """got (sluice's to_pandas value) is want (pyarrow's): the same type, a
    numpy array of the same dtype and shape with the same items (NaN, NaT
    and None where pyarrow has them), dicts, tuples, DateOffsets alike.
    loose: in a struct, where sluice keeps ints as ints (pyarrow gives 1.0
    and NaN for an int field with nulls), only the values count."""
    if isinstance(want, np.ndarray):
        assert isinstance(got, np.ndarray), (path, type(got), want)
        assert got.dtype == want.dtype and got.shape == want.shape, (path, got, want)
        items = (lambda a: list(a) if a.dtype == object else a.tolist())
        for i, (g, w) in enumerate(zip(items(got), items(want))):
            same_cell(g, w, f"{path}[{i}]", loose)
    elif isinstance(want, dict):
        assert isinstance(got, dict) and list(got) == list(want), (path, got, want)
        for k in want:
            same_cell(got[k], want[k], f"{path}.{k}", True)
    elif isinstance(want, (list, tuple)):
        assert type(got) is type(want) and len(got) == len(want), (path, got, want)
        for i, (g, w) in enumerate(zip(got, want)):
            same_cell(g, w, f"{path}[{i}]", loose)
    elif want is None or (isinstance(want, float) and math.isnan(want)):
        if want is None and not loose:
            assert got is None, (path, got)
        else:
            assert got is None or (isinstance(got, float) and math.isnan(got)), (path, got)
    elif isinstance(want, pd.DateOffset):
        assert isinstance(got, pd.DateOffset) and got.kwds == want.kwds, (path, got, want)
    else:
        assert loose or type(got) is type(want), (path, type(got), type(want))
        assert got == want, (path, got, want)


def _list_table():
    import datetime
    import decimal
    ts = datetime.datetime(2020, 1, 1, 12)
    return pa.table({
        "i64": pa.array([[1, 2], None, [], [3]]),
        "i64_nulls": pa.array([[1, 2], None, [], [3, None]]),  # (in the last batch only)
        "f32": pa.array([[1.5, None], [2], None, []], pa.list_(pa.float32())),
        "f16": pa.array([[1.5, None], [2], [], None], pa.list_(pa.float16())),
        "u64": pa.array([[2**64 - 1], [None], [], [0]], pa.list_(pa.uint64())),
        "bool": pa.array([[True, False], [True], None, []]),
        "bool_nulls": pa.array([[True, None], [True], None, []]),
        "str": pa.array([["a", None], ["b"], None, ["é"]]),
        "large_str": pa.array([["a", None], ["b"], None, []], pa.list_(pa.large_string())),
        "bin": pa.array([[b"a", None], [b"\xff"], None, []]),
        "structs": pa.array([[{"x": 1, "y": "a"}], [{"x": None, "y": None}], None, []]),
        "nested": pa.array([[[1, 2], [3]], [None], None, [[]]]),
        "nested_nulls": pa.array([[[1, None]], [[2], []], None, []]),
        "large": pa.array([[1, 2], None, [3], []], pa.large_list(pa.int16())),
        "fixed": pa.array([[1, 2], None, [3, 4], [5, 6]], pa.list_(pa.int32(), 2)),
        "fixed_f": pa.array([[1.5, 2], [5, 6], [3, 4], [0, 0]], pa.list_(pa.float64(), 2)),
        "ts": pa.array([[ts], [None], [], None], pa.list_(pa.timestamp("us"))),
        "ts_zone": pa.array([[ts], [None], None, []], pa.list_(pa.timestamp("ms", tz="Europe/Paris"))),
        "dur": pa.array([[1], [None], [2], []], pa.list_(pa.duration("s"))),
        "date": pa.array([[ts.date()], [None], [], None], pa.list_(pa.date32())),
        "time": pa.array([[ts.time()], [None], [], None], pa.list_(pa.time64("us"))),
        "dec": pa.array([[decimal.Decimal("1.5")], [None], [], None], pa.list_(pa.decimal128(5, 2))),
        "nulls": pa.array([[None], [], None, [None, None]], pa.list_(pa.null())),
        "dict_str": pa.ListArray.from_arrays([0, 1, 3, 3, 3], pa.array(["a", "b", None]).dictionary_encode()),
        "dict_int": pa.ListArray.from_arrays([0, 1, 3, 3, 3], pa.array([1, 2, None]).dictionary_encode()),
        "maps": pa.array([[[(1, "a")]], None, [], [[]]], pa.list_(pa.map_(pa.int32(), pa.string()))),
        "intervals": pa.array([[pa.MonthDayNano([1, 2, 3]), None], None, [], []],
                              pa.list_(pa.month_day_nano_interval())),
        "sliced_values": pa.ListArray.from_arrays(pa.array([2, 3, 5, 5, 6]), pa.array([None, 9, 1, 2, 3, 4])),
        "struct_of_list": pa.array([{"a": [1, 2], "b": 1}, {"a": None, "b": None}, None, {"a": [], "b": 2}]),
        "map_of_list": pa.array([[(1, [1, 2])], None, [], [(2, None)]], pa.map_(pa.int32(), pa.list_(pa.int8()))),
    })


def _same_frames(got, want, label):
    assert list(got.columns) == list(want.columns), label
    for name in want.columns:
        assert got[name].dtype == want[name].dtype, (label, name)
        same_cell(list(got[name]), list(want[name]), f"{label}:{name}")


@pytest.mark.parametrize("chunks", [None, 1, 3])
def test_list_cells_are_numpy_arrays_as_pyarrow_gives_them(tmp_path, chunks):
    """A list, large_list or fixed_size_list cell is a numpy array, as
    pyarrow's to_pandas (and pd.read_parquet, polars' and DuckDB's frames)
    give it (sluice gave Python lists): the values' dtype, NaN / NaT / None
    for nulls inside (ints with nulls anywhere in the column float64, in
    every cell and every batch, bools with nulls object), None for a null
    list, object arrays of str, dicts, arrays for nested lists; in structs
    and maps too."""
    t = _list_table()
    path = write_ipc_file(t, tmp_path / "lists.arrow", max_chunksize=chunks)
    want = pa.ipc.open_file(str(path)).read_all().to_pandas()
    _same_frames(sluice.read(path).to_pandas(), want, "to_pandas")
    _same_frames(sluice.read_pandas(path), want, "read_pandas")
    _same_frames(sluice.read(path).to_pandas(self_destruct=True), want, "self_destruct")
    table = sluice.read(path)
    _same_frames(pd.DataFrame({n: table.column(n).to_pandas() for n in t.column_names}), want,
                 "Column.to_pandas")
    sliced = t.slice(1, 2)  # (offsets not from 0; values outside the slice do not count)
    _same_frames(sluice.Table.from_arrow(sliced).to_pandas(), sliced.to_pandas(), "slice")
    got = sluice.read(path).to_pandas()
    assert got["i64"][0].sum() == 3 and np.stack(got["fixed_f"]).shape == (4, 2)


def test_list_cells_without_pyarrow(tmp_path):
    t = _list_table()
    path = write_ipc_file(t, tmp_path / "lists.arrow", max_chunksize=2)
    code = f"""
import pickle, sys
sys.modules["pyarrow"] = None
import sluice
frames = [sluice.read({str(path)!r}).to_pandas(), sluice.read_pandas({str(path)!r})]
assert "pyarrow" not in [m for m in sys.modules if sys.modules[m] is not None]
pickle.dump(frames, open({str(tmp_path / "frames.pickle")!r}, "wb"))
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    import pickle
    with open(tmp_path / "frames.pickle", "rb") as f:
        frames = pickle.load(f)
    want = pa.ipc.open_file(str(path)).read_all().to_pandas()
    for label, got in zip(("to_pandas", "read_pandas"), frames):
        _same_frames(got, want, label)


def test_list_cells_are_views_of_one_batch(tmp_path):
    """One batch's list cells are read-only views of its values buffer (no
    copy; the view keeps the batch alive), as pyarrow's are of its own."""
    t = pa.table({"l": pa.array([[i, i + 1] for i in range(1000)] + [None])})
    path = write_ipc_file(t, tmp_path / "view.arrow")
    st = sluice.read(path)
    df = st.to_pandas()
    values = pa.table(st).column("l").chunk(0).values.buffers()[1]
    cell = df["l"][7]
    at = cell.__array_interface__["data"][0]
    assert values.address <= at < values.address + values.size and not cell.flags.owndata
    assert not cell.flags.writeable and not t.to_pandas()["l"][7].flags.writeable
    del st, df, values
    gc.collect()
    assert cell.tolist() == [7, 8]
    own = sluice.read_pandas(path)["l"]
    assert own[7].tolist() == [7, 8] and own[1000] is None


def test_month_day_nano_intervals_are_date_offsets(tmp_path):
    """A month_day_nano interval is a pd.DateOffset, as pyarrow's to_pandas
    gives it (sluice gave its MonthDayNano tuple, which a Timestamp cannot be
    added to); to_pylist keeps MonthDayNano, as pyarrow's."""
    t = pa.table({"iv": pa.array([pa.MonthDayNano([1, 2, 3]), None, pa.MonthDayNano([0, -1, -1500]),
                                  pa.MonthDayNano([-3, 0, 86_400_000_000_007])],
                                 pa.month_day_nano_interval())})
    path = write_ipc_file(t, tmp_path / "iv.arrow", max_chunksize=3)
    want = t.to_pandas()
    for got in (sluice.read(path).to_pandas(), sluice.read_pandas(path)):
        _same_frames(got, want, "iv")
        ts = pd.Timestamp("2020-01-31")
        assert ts + got["iv"][0] == ts + want["iv"][0] == pd.Timestamp("2020-03-02 00:00:00.000000003")
    assert sluice.read(path).to_pylist() == t.to_pylist()


def test_period_and_interval_index_and_columns_without_metadata(tmp_path):
    """pandas' Arrow extension types (pandas.period, pandas.interval) come
    back as Period / Interval arrays in the index too, and in columns of a
    file without the "pandas" metadata, as pd.read_parquet (pyarrow's
    to_pandas through pandas' registered types) gives them. The index came
    back as int64 ordinals or {'left', 'right'} dicts; such columns without
    the metadata as int64 and dicts."""
    import pyarrow.parquet as pq
    frames = {
        "period_index": pd.DataFrame({"v": [1, 2, 3]},
                                     index=pd.period_range("2020-01", periods=3, freq="M")),
        "interval_index": pd.DataFrame({"v": [1, 2]}, index=pd.interval_range(0, 2)),
        "time_intervals": pd.DataFrame(
            {"v": [1, 2]}, index=pd.interval_range(pd.Timestamp("2020-01-01"), periods=2,
                                                   closed="left", name="when")),
        "multi": pd.DataFrame({"v": [1, 2]}, index=pd.MultiIndex.from_arrays(
            [pd.period_range("2021-01-01", periods=2, freq="D"), ["a", "b"]])),
        "columns": pd.DataFrame({"p": pd.PeriodIndex(["2020Q1", None, "2021Q3"], freq="Q"),
                                 "i": pd.arrays.IntervalArray.from_breaks([0.5, 1, 2, 4])}),
    }
    for name, df in frames.items():
        path = tmp_path / f"{name}.parquet"
        sluice.write(df, path)
        want = pd.read_parquet(path)
        pd.testing.assert_frame_equal(want, df)
        pd.testing.assert_frame_equal(sluice.read_pandas(path), want, obj=name)
        pd.testing.assert_frame_equal(sluice.read(path).to_pandas(), want, obj=name)
        sluice.write(df, tmp_path / f"{name}.arrow")
        pd.testing.assert_frame_equal(sluice.read_pandas(tmp_path / f"{name}.arrow"),
                                      pd.read_feather(tmp_path / f"{name}.arrow"), obj=name)
    bare = pa.Table.from_pandas(frames["columns"]).replace_schema_metadata(None)
    pq.write_table(bare, tmp_path / "bare.parquet")
    want = pd.read_parquet(tmp_path / "bare.parquet")
    assert [str(d) for d in want.dtypes] == ["period[Q-DEC]", "interval[float64, right]"]
    pd.testing.assert_frame_equal(sluice.read_pandas(tmp_path / "bare.parquet"), want)


def test_datetime_column_labels_come_back_as_timestamps(tmp_path):
    """Timestamp column labels (naive or zoned, in their unit; a level of a
    MultiIndex too) come back as timestamps, as pyarrow's to_pandas (and
    pd.read_parquet / read_feather) restores them; they came back as the
    strings the field names spell."""
    frames = [
        pd.DataFrame({pd.Timestamp("2020-01-01"): [1],
                      pd.Timestamp("2020-01-02 03:04:05.123456789"): [2]}),
        pd.DataFrame({pd.Timestamp("2020-01-01", tz="Europe/Paris"): [1]}),
        pd.DataFrame([[1]], columns=pd.DatetimeIndex(["2020-01-01"], name="when").as_unit("s")),
        pd.DataFrame([[1, 2]], columns=pd.MultiIndex.from_tuples(
            [(pd.Timestamp("2020-01-01"), "a"), (pd.Timestamp("2020-01-02"), "b")],
            names=["day", "k"])),
    ]
    for k, df in enumerate(frames):
        for suffix, peer in (("parquet", pd.read_parquet), ("arrow", pd.read_feather)):
            path = tmp_path / f"{k}.{suffix}"
            sluice.write(df, path)
            want = peer(path).columns
            pd.testing.assert_index_equal(want, df.columns)
            pd.testing.assert_index_equal(sluice.read_pandas(path).columns, want)
            pd.testing.assert_index_equal(sluice.read(path).to_pandas().columns, want)


def test_write_then_read_pandas_round_trip_caveats_as_documented(tmp_path):
    """The README's "sluice.write(df) then sluice.read_pandas gives df back"
    holds but for the nulls conversion it names: a float64 column or index
    with NaN comes back Float64 (pd.read_parquet: float64), a float16 one
    with NaN float32 (pd.read_parquet: float16); the values are equal."""
    df = pd.DataFrame({"f": [1.0, np.nan], "h": np.array([1, np.nan], dtype="float16"),
                       "i": [1, 2]}, index=pd.Index([0.5, np.nan], name="x"))
    path = tmp_path / "caveats.parquet"
    sluice.write(df, path)
    got, peer = sluice.read_pandas(path), pd.read_parquet(path)
    pd.testing.assert_frame_equal(peer, df)
    assert got.dtypes.astype(str).to_dict() == {"f": "Float64", "h": "float32", "i": "int64"}
    assert str(got.index.dtype) == "Float64"
    back = got.astype({"f": "float64", "h": "float16"})
    back.index = got.index.astype("float64")
    pd.testing.assert_frame_equal(back, df)
    clean = df.dropna()
    sluice.write(clean, path)
    pd.testing.assert_frame_equal(sluice.read_pandas(path), clean)  # no NaN: df back exactly
