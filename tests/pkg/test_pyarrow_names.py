"""Methods named as pyarrow's behave as pyarrow's: Schema.field(int),
Table/Batch/Column equality by value, Batch's column_names/shape/[],
Column.to_numpy's nulls, and a clear TypeError for what picks no column."""
import math

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq
import pytest

import sluice


@pytest.fixture(scope="module")
def small(tmp_path_factory):
    path = tmp_path_factory.mktemp("names") / "small.parquet"
    pq.write_table(pa.table({"a": [1, 2, None], "b": ["x", None, "z"]}), path)
    return path


def test_schema_field_by_position(small):
    s, p = sluice.schema(small), pq.read_schema(small)
    for key in (0, 1, -1, "b"):
        assert s.field(key).name == p.field(key).name
    assert s.field(np.int64(1)).name == "b"
    with pytest.raises(IndexError):
        s.field(2)
    with pytest.raises(KeyError):
        s.field("zzz")


def test_equality_by_value(small, tmp_path):
    t, u = sluice.read(small), sluice.read(small)
    p, q = pq.read_table(small), pq.read_table(small)
    assert (t == u) == (p == q) is True
    assert t.equals(u) and t.batches[0] == u.batches[0] and t.column("b") == u.column("b")
    assert t != 5 and (p != 5)
    # Batch boundaries do not count, values and types do.
    csv = tmp_path / "x.csv"
    pacsv.write_csv(pa.table({"i": list(range(30_000)), "s": ["v"] * 30_000}), csv)
    many, one = sluice.read(csv, batch_rows=1000), sluice.read(csv, batch_rows=100_000)
    assert len(many.batches) > 1 and len(one.batches) == 1
    assert many == one and pa.table(many) == pa.table(one)
    other = sluice.Table.from_arrow(pa.table({"a": [1, 2, 3], "b": ["x", None, "z"]}))
    assert not t.equals(other) and not pa.table(t).equals(pa.table(other))
    typed = sluice.Table.from_arrow(pa.table({"a": pa.array([1, 2, None], pa.int32()),
                                              "b": ["x", None, "z"]}))
    assert t != typed and pa.table(t) != pa.table(typed)
    # NaN equals nothing, as in pyarrow.
    nan = pa.table({"f": [1.0, math.nan]})
    assert sluice.Table.from_arrow(nan) != sluice.Table.from_arrow(nan)
    assert not nan.equals(nan)
    # Metadata only with check_metadata=True, as pyarrow's.
    meta = pa.table(t).replace_schema_metadata({"k": "v"})
    m = sluice.Table.from_arrow(meta)
    assert m.equals(t) == meta.equals(pa.table(t)) is True
    assert m.equals(t, check_metadata=True) == meta.equals(pa.table(t), check_metadata=True) \
        is False
    with pytest.raises(TypeError):
        hash(t)


def test_list_element_names_do_not_count_as_in_pyarrow(tmp_path):
    """A list column read from Parquet (list<element>) equals the same one
    from Arrow (list<item>), and map entries named k/v equal key/value, as
    pyarrow's (and polars') equals say; they were unequal (sluice compared
    the printed types). A struct's names and a child's nullability count;
    with check_metadata=True the element names count too, as in pyarrow."""
    data = pa.table({"l": [[1], None], "m": pa.array([[("a", 1)], []],
                                                     pa.map_(pa.string(), pa.int64()))})
    pq.write_table(data, tmp_path / "l.parquet")
    sluice.write(data, tmp_path / "l.arrow")
    a, b = sluice.read(tmp_path / "l.arrow"), sluice.read(tmp_path / "l.parquet")
    pa_a, pa_b = pa.table(a), pa.table(b)
    assert pa_a.schema.field("l").type.value_field.name != \
        pa_b.schema.field("l").type.value_field.name
    assert pa_a.equals(pa_b) and a.equals(b) and a == b
    assert a.column("l").equals(b.column("l")) == pa_a.column("l").equals(pa_b.column("l"))
    assert a.schema == b.schema and a.schema.field("l").type == b.schema.field("l").type
    assert hash(a.schema.field("l").type) == hash(b.schema.field("l").type)
    assert a.equals(b, check_metadata=True) == pa_a.equals(pa_b, check_metadata=True) is False
    kv = pa.map_(pa.field("k", pa.string(), nullable=False), pa.field("v", pa.int64()))
    pa_m = pa_a.select(["m"])
    pa_kv = pa_m.cast(pa.schema([("m", kv)]))
    assert pa_kv.equals(pa_m)
    assert sluice.Table.from_arrow(pa_kv).equals(sluice.Table.from_arrow(pa_m))
    for left, right in ((pa.struct([("x", pa.int64())]), pa.struct([("y", pa.int64())])),
                        (pa.list_(pa.field("item", pa.int64(), nullable=False)),
                         pa.list_(pa.int64()))):
        x = sluice.Table.from_arrow(pa.table({"c": pa.array([None], left)}))
        y = sluice.Table.from_arrow(pa.table({"c": pa.array([None], right)}))
        assert (x.schema.field("c").type == y.schema.field("c").type) == (left == right) is False
        assert x.equals(y) == pa.table(x).equals(pa.table(y)) is False


def test_batch_has_tables_accessors(small):
    t = sluice.read(small)
    b, rb = t.batches[0], pq.read_table(small).to_batches()[0]
    assert b.column_names == rb.column_names and b.shape == rb.shape
    assert b[0].to_pylist() == rb[0].to_pylist() and b["b"].to_pylist() == rb["b"].to_pylist()


def test_column_to_numpy_nulls_as_pyarrow(tmp_path):
    p = pa.table({"flag": [True, None], "s": ["x", None], "i": [1, None],
                  "u": pa.array([2, None], pa.uint64()), "f": [0.5, None],
                  "f32": pa.array([0.5, None], pa.float32()),
                  "f16": pa.array([0.5, None], pa.float16()),
                  "plain": [1, 2], "ps": ["x", "y"]})
    t = sluice.Table.from_arrow(p)
    for name in p.column_names:
        mine, theirs = t.column(name).to_numpy(), p.column(name).to_numpy()
        assert mine.dtype == theirs.dtype, name
        assert [None if isinstance(v, float) and math.isnan(v) else v for v in mine.tolist()] == \
            [None if isinstance(v, float) and math.isnan(v) else v for v in theirs.tolist()], name
    # A dictionary of strings: None as for strings (pyarrow gives ['x', 'x'], its index 0).
    d = sluice.Table.from_arrow(pa.table({"d": pa.array(["x", None]).dictionary_encode()}))
    assert d.column("d").to_numpy().tolist() == ["x", None]


def test_what_is_not_a_column_is_a_type_error(small):
    t = sluice.read(small)
    with pytest.raises(TypeError, match="no row slicing"):
        t[0:2]
    for key in (1.0, None):
        with pytest.raises(TypeError, match="by name .str. or position .int."):
            t[key]
    assert t[np.int64(1)].name == "b"
