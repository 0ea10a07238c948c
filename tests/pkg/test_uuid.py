"""Columns of the Arrow extension type arrow.uuid (Parquet's UUID, Avro's
and CQL's uuid) come out of sluice's Python conversions as pyarrow gives
them: uuid.UUID values, the type spelled extension<arrow.uuid>."""
import subprocess
import sys
import uuid

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import sluice

ROWS = 1000


def _ids(rows=ROWS):
    return [None if i % 7 == 3 else uuid.UUID(int=(i * 0x9E3779B97F4A7C15_F39CC0605CEDC834) %
                                                (1 << 128)) for i in range(rows)]


def _uuids(values):
    return pa.array([None if v is None else v.bytes for v in values], pa.uuid())


@pytest.fixture(scope="module")
def uuid_file(tmp_path_factory):
    """(pyarrow's table, a Parquet file of it in several row groups): a
    uuid column with nulls, and uuids in a list, a struct and a map."""
    ids = _ids()
    flat = _uuids(ids)
    starts = list(range(0, ROWS + 1, 3))
    if starts[-1] != ROWS:
        starts.append(ROWS)
    lists = pa.ListArray.from_arrays(pa.array(starts, pa.int32()), flat.slice(0, ROWS),
                                     mask=pa.array([i % 11 == 5 for i in range(len(starts) - 1)]))
    lists = pa.concat_arrays([lists, pa.nulls(ROWS - len(lists), lists.type)])
    structs = pa.StructArray.from_arrays([flat, pa.array(range(ROWS))], ["id", "n"],
                                         mask=pa.array([i % 13 == 1 for i in range(ROWS)]))
    offsets = pa.array(list(range(0, ROWS + 1)), pa.int32())
    maps = pa.MapArray.from_arrays(offsets, pa.array(["k%d" % i for i in range(ROWS)]), flat)
    t = pa.table({"u": flat, "l": lists, "s": structs, "m": maps})
    path = tmp_path_factory.mktemp("uuid") / "uuid.parquet"
    pq.write_table(t, path, row_group_size=300)
    return pq.read_table(path), path


def test_values_are_uuids_as_pyarrow_gives_them(uuid_file):
    want, path = uuid_file
    t = sluice.read(path)
    assert len(t.batches) > 1
    got = t.to_pydict()
    assert got == want.to_pydict()
    assert isinstance(got["u"][0], uuid.UUID) and got["u"][3] is None
    assert isinstance(got["l"][0][0], uuid.UUID) and isinstance(got["s"][0]["id"], uuid.UUID)
    assert t.to_pylist() == want.to_pylist()
    assert t.column("u").to_pylist() == want.column("u").to_pylist()
    assert t.batches[1].to_pydict() == want.slice(300, t.batches[1].num_rows).to_pydict()
    # a window of a batch (a limit, a slice) starts where it should
    assert sluice.read(path, limit=5).to_pydict() == want.slice(0, 5).to_pydict()


def test_type_spelled_as_pyarrow_spells_it(uuid_file):
    want, path = uuid_file
    schema = sluice.schema(path)
    # (the map left out: pyarrow names its entries field "m" after the Parquet
    # group, map<string, extension<arrow.uuid> ('m')>, sluice not)
    assert [str(schema.field(c).type) for c in "uls"] == \
        [str(want.schema.field(c).type) for c in "uls"]
    assert str(schema.field("m").type) == "map<string, extension<arrow.uuid>>"
    assert str(schema.field("u").type) == "extension<arrow.uuid>"
    u = schema.field("u").type
    assert u.extension == "arrow.uuid" and u.kind == "fixed_size_binary" and u.width == 16
    # a uuid is not a fixed_size_binary[16], as in pyarrow
    assert pa.uuid() != pa.binary(16)
    assert u != sluice.DataType("w:16") and hash(u) != hash(sluice.DataType("w:16"))
    assert u == sluice.DataType("w:16", extension="arrow.uuid")
    # a name sluice does not convert, or arrow.uuid over other storage, is the storage type
    assert str(sluice.DataType("w:16", extension="x.other")) == "fixed_size_binary[16]"
    assert sluice.DataType("w:8", extension="arrow.uuid").extension is None
    assert str(sluice.DataType("l")) == "int64" and sluice.DataType("l").extension is None
    assert "u: extension<arrow.uuid>" in repr(sluice.read(path))


def test_to_pandas_as_pyarrow(uuid_file):
    want, path = uuid_file
    t = sluice.read(path)
    expected = want.select(["u"]).to_pandas()
    for got in (t.to_pandas(), sluice.read_pandas(path),
                sluice.read(path, batch_rows=128).to_pandas(self_destruct=True)):
        assert got["u"].dtype == object
        pd.testing.assert_series_equal(got["u"], expected["u"])
        assert isinstance(got["u"][0], uuid.UUID) and got["u"][3] is None
    pd.testing.assert_series_equal(t.column("u").to_pandas(), want.column("u").to_pandas())
    # Nested, pyarrow's to_pandas refuses a list of uuids and gives a struct's
    # as bytes; sluice gives them as to_pylist does, and as DuckDB's .df() does
    # (a list cell an object array of them, as a list cell is a numpy array).
    with pytest.raises(pa.ArrowNotImplementedError):
        want.select(["l"]).to_pandas()
    df = t.to_pandas()
    assert all(v is None or (isinstance(v, np.ndarray) and v.dtype == object) for v in df["l"])
    assert [None if v is None else list(v) for v in df["l"]] == want.column("l").to_pylist()
    assert df["s"].tolist() == want.column("s").to_pylist()
    duckdb = pytest.importorskip("duckdb")
    peer = duckdb.sql("SELECT * FROM read_parquet('%s')" % path).df()
    assert [v if isinstance(v, dict) else None for v in peer["s"]] == df["s"].tolist()
    assert [v if isinstance(v, uuid.UUID) else None for v in peer["u"]] == df["u"].tolist()


def test_to_numpy_as_pyarrow(uuid_file):
    # pyarrow's to_numpy gives the storage's bytes
    want, path = uuid_file
    got = sluice.read(path).column("u").to_numpy()
    expected = want.column("u").to_numpy()
    assert got.dtype == expected.dtype == object and got.tolist() == expected.tolist()


def test_repr_shows_uuids(uuid_file):
    _, path = uuid_file
    t = sluice.read(path, limit=5)
    first = t.column("u").to_pylist()[0]
    assert isinstance(first, uuid.UUID)
    # the table's preview spells it as the CLI does; the column's repr as a UUID
    assert "\n  %s... | [UUID('" % str(first)[:21] in repr(t)
    assert "[%r, " % first in repr(t.column("u"))


def test_file_pandas_wrote_reads_back_as_pandas_reads_it(tmp_path):
    # Table.from_pandas takes UUID objects as arrow.uuid, pandas_type "object"
    ids = _ids(50)
    path = tmp_path / "pandas.parquet"
    pd.DataFrame({"u": ids, "i": range(50)}).to_parquet(path)
    assert pq.read_schema(path).field("u").type == pa.uuid()
    pd.testing.assert_frame_equal(sluice.read_pandas(path), pd.read_parquet(path))


@pytest.mark.parametrize("suffix", [".parquet", ".arrow"])
def test_written_back_as_uuids(uuid_file, tmp_path, suffix):
    want, path = uuid_file
    out = tmp_path / ("back" + suffix)
    sluice.write(sluice.read(path), out)
    back = pq.read_table(out) if suffix == ".parquet" else pa.ipc.open_file(out).read_all()
    assert back.schema.field("u").type == pa.uuid()
    assert back.select(["u", "s"]).equals(want.select(["u", "s"]))
    assert sluice.read(out).to_pydict() == want.to_pydict()


def test_pandas_uuids_written_as_pyarrow_writes_them(tmp_path):
    ids = _ids(50)
    df = pd.DataFrame({"u": ids})
    out = tmp_path / "df.parquet"
    sluice.write(df, out)
    want = pa.Table.from_pandas(df)
    assert pq.read_schema(out).field("u").type == want.schema.field("u").type == pa.uuid()
    assert pq.read_table(out).column("u").to_pylist() == ids
    pd.testing.assert_frame_equal(sluice.read_pandas(out), df)


def test_pandas_uuids_written_without_pyarrow(tmp_path):
    ids = _ids(50)
    out = tmp_path / "nopa.parquet"
    code = f"""
import sys, uuid
sys.modules["pyarrow"] = None
import pandas as pd, sluice
ids = [None if v is None else uuid.UUID(v) for v in {[None if v is None else str(v) for v in ids]!r}]
sluice.write(pd.DataFrame({{"u": ids, "none": [None] * len(ids)}}), {str(out)!r})
df = sluice.read_pandas({str(out)!r})
print(str(sluice.schema({str(out)!r}).field("u").type), df["u"].tolist() == ids)
indexed = pd.DataFrame({{"x": [1, 2]}}, index=pd.Index([uuid.UUID(int=1), uuid.UUID(int=2)], name="id"))
sluice.write(indexed, {str(out.with_name("index.parquet"))!r})
"""
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    assert run.stdout.split() == ["extension<arrow.uuid>", "True"]
    back = pq.read_table(out)
    want = pa.Table.from_pandas(pd.DataFrame({"u": ids, "none": [None] * len(ids)}))
    assert back.schema.field("u").type == pa.uuid()
    assert back.column("u").to_pylist() == ids
    assert back.schema.pandas_metadata["columns"] == [
        {k: v for k, v in c.items()} for c in want.schema.pandas_metadata["columns"]]
    pd.testing.assert_frame_equal(pd.read_parquet(out), want.to_pandas())
    # an index of UUIDs too, as pyarrow stores it
    back = pd.read_parquet(out.with_name("index.parquet"))
    assert back.index.name == "id" and back.index.tolist() == [uuid.UUID(int=1), uuid.UUID(int=2)]


def test_uuids_beside_other_values_are_refused_without_pyarrow(tmp_path):
    # as pyarrow's from_pandas refuses them: the column, the row and the types named
    out = tmp_path / "mixed.parquet"
    code = f"""
import sys, uuid
sys.modules["pyarrow"] = None
import pandas as pd, sluice
try:
    sluice.write(pd.DataFrame({{"u": [uuid.UUID(int=1), "x"]}}), {str(out)!r})
except sluice.Error as e:
    print(type(e).__name__, e)
"""
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    assert run.stdout.startswith("InvalidArgumentError")
    assert "column 'u', row 1: a value of type str where row 0 has UUID" in run.stdout
    with pytest.raises((pa.ArrowTypeError, pa.ArrowInvalid)):
        pa.Table.from_pandas(pd.DataFrame({"u": [uuid.UUID(int=1), "x"]}))
    assert not out.exists()


def test_pickled_type_keeps_the_extension(uuid_file):
    import pickle
    _, path = uuid_file
    t = sluice.read(path, limit=3)
    f = t.schema.field("u")
    assert pickle.loads(pickle.dumps(f.type)) == f.type
    assert str(pickle.loads(pickle.dumps(t)).schema.field("u").type) == "extension<arrow.uuid>"
    assert np.array_equal(pickle.loads(pickle.dumps(t)).column("u").to_numpy(),
                          t.column("u").to_numpy())


def test_json_columns_are_strings_typed_as_arrow_json(tmp_path):
    """Parquet's JSON logical type reads as the arrow.json extension over
    utf8: its values are str and its type is spelled extension<arrow.json>,
    as pyarrow reads them (it was spelled string)."""
    table = pa.table({"j": pa.array(['{"a": 1}', None, "[]"], pa.json_())})
    path = tmp_path / "j.parquet"
    pq.write_table(table, path)
    want = pq.read_table(path)
    got = sluice.read(path)
    assert str(got.schema.field("j").type) == str(want.schema.field("j").type) == "extension<arrow.json>"
    assert got.to_pydict() == want.to_pydict()
    # (a pandas string column, as for any utf8 column: its null is NA)
    column = got.to_pandas()["j"]
    assert column.isna().tolist() == [False, True, False]
    assert column.dropna().tolist() == want.to_pandas()["j"].dropna().tolist()
