"""union_by_name=True: objects whose columns differ read as one table, their
columns matched by name in the order first met and rows null where their
object lacks the column, as DuckDB's read_parquet(union_by_name=true) and
pyarrow's concat_tables(promote_options="default") give them."""
import decimal
import os

import duckdb
import fastavro
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
import pyarrow.feather as feather
import pyarrow.parquet as pq
import pytest

import sluice


def _objects():
    """Three tables: columns missing, added, reordered, a nested one."""
    point = pa.struct([("x", pa.int32()), ("y", pa.int32())])
    return [
        pa.table({"id": pa.array([1, 2, 3], pa.int64()), "name": ["a", "b", None]}),
        pa.table({"id": pa.array([4, 5], pa.int64()), "score": [0.5, None],
                  "p": pa.array([{"x": 1, "y": 2}, None], point)}),
        pa.table({"score": [2.5], "name": ["c"], "id": pa.array([6], pa.int64()),
                  "p": pa.array([{"x": 3, "y": 4}], point)}),
    ]


def _want():
    return pa.concat_tables(_objects(), promote_options="default")


@pytest.fixture()
def parquet_dir(tmp_path):
    d = tmp_path / "pq"
    d.mkdir()
    for i, t in enumerate(_objects()):
        pq.write_table(t, d / f"f{i}.parquet")
    return d


def test_parquet_matches_duckdb_and_pyarrow(parquet_dir):
    got = pa.table(sluice.read(parquet_dir, union_by_name=True))
    want = _want()
    assert got.column_names == ["id", "name", "score", "p"] == want.column_names
    assert got.to_pylist() == want.to_pylist()
    duck = duckdb.connect()
    d = duck.sql(f"select * from read_parquet('{parquet_dir}/*.parquet', union_by_name=true) "
                 "order by id").arrow()
    d = d.read_all() if hasattr(d, "read_all") else d
    assert got.to_pylist() == d.to_pylist()
    # Every column is nullable in the dataset's schema where some object lacks it.
    assert all(f.nullable for f in got.schema)


def test_projection_filters_and_pandas(parquet_dir):
    got = pa.table(sluice.read(parquet_dir, union_by_name=True, columns=["score", "id"]))
    assert got.column_names == ["score", "id"]
    assert got.to_pylist() == _want().select(["score", "id"]).to_pylist()
    # A condition on a column an object lacks: its rows are null there and
    # a null passes none.
    got = pa.table(sluice.read(parquet_dir, union_by_name=True, filters=[("score", ">", 0)]))
    assert sorted(got.column("id").to_pylist()) == [4, 6]
    got = pa.table(sluice.read(parquet_dir, union_by_name=True, filters=[("name", "=", "c")]))
    assert got.column("id").to_pylist() == [6]
    df = sluice.read(parquet_dir, union_by_name=True).to_pandas()
    want = _want().to_pandas()
    assert list(df["id"]) == list(want["id"])
    import pandas as pd
    assert [None if pd.isna(v) else v for v in df["score"]] == \
        [None if pd.isna(v) else v for v in want["score"]]
    assert [None if pd.isna(v) else v for v in df["name"]] == ["a", "b", None, None, None, "c"]
    # Statistics are computed (the objects' footers hold other columns).
    schema = sluice.schema(parquet_dir, union_by_name=True)
    assert [f.name for f in schema] == ["id", "name", "score", "p"]


def test_hive_partitions_and_many_batches(tmp_path):
    """Partition columns come after the objects' columns; many row groups
    and batches per object, the first object lacking a column."""
    root = tmp_path / "hive"
    parts = []
    for k in range(3):
        d = root / f"k={k}"
        d.mkdir(parents=True)
        n = 5000 + k
        cols = {"id": pa.array(range(k * 10000, k * 10000 + n), pa.int64())}
        if k > 0:
            cols["v"] = pa.array([float(i) for i in range(n)])
        if k != 1:
            cols["s"] = pa.array([f"s{i}" for i in range(n)])
        t = pa.table(cols)
        pq.write_table(t, d / "part-0.parquet", row_group_size=700)
        parts.append(t.append_column("k", pa.array([k] * n, pa.int32())))
    got = pa.table(sluice.read(root, union_by_name=True, batch_rows=333))
    assert got.column_names == ["id", "s", "v", "k"]
    want = pa.concat_tables(parts, promote_options="default").select(got.column_names)
    assert got.column("id").to_pylist() == want.column("id").to_pylist()
    assert got.column("v").to_pylist() == want.column("v").to_pylist()
    assert got.column("s").to_pylist() == want.column("s").to_pylist()
    assert got.column("k").to_pylist() == want.column("k").to_pylist()
    unordered = pa.table(sluice.read(root, union_by_name=True, ordered=False))
    assert unordered.to_pylist() == got.to_pylist()


def test_arrow_ipc_and_avro(tmp_path):
    for fmt in ("arrow", "avro"):
        d = tmp_path / fmt
        d.mkdir()
        for i, t in enumerate(_objects()):
            t = t.drop_columns(["p"]) if "p" in t.column_names else t
            path = d / f"f{i}.{fmt}"
            if fmt == "arrow":
                feather.write_feather(t, path, compression="uncompressed")
            else:
                sluice.write(t, path)
        got = pa.table(sluice.read(d, union_by_name=True))
        want = pa.concat_tables([t.drop_columns(["p"]) if "p" in t.column_names else t
                                 for t in _objects()], promote_options="default")
        assert got.column_names == want.column_names, fmt
        assert got.to_pylist() == want.to_pylist(), fmt
    # fastavro reads the same rows from each file (the avro files are sound).
    with open(tmp_path / "avro" / "f1.avro", "rb") as f:
        assert [r["id"] for r in fastavro.reader(f)] == [4, 5]


def test_conflicts_and_refusals(tmp_path):
    d = tmp_path / "clash"
    d.mkdir()
    pq.write_table(pa.table({"id": pa.array([1], pa.int64())}), d / "a.parquet")
    # (int32 beside int64 would read as int64: types that join losslessly)
    pq.write_table(pa.table({"id": pa.array(["2"])}), d / "b.parquet")
    with pytest.raises(sluice.InvalidArgumentError, match="union_by_name.*'id'.*a.parquet"):
        sluice.read(d, union_by_name=True)
    # (the same names: matching them by name cannot help, the hint says not)
    with pytest.raises(sluice.InvalidArgumentError, match="read the objects separately$"):
        sluice.read(d)
    c = tmp_path / "csv"
    c.mkdir()
    (c / "a.csv").write_text("x,y\n1,2\n")
    (c / "b.csv").write_text("y,x\n3,4\n")
    # (CSV was refused: "union_by_name: csv objects are matched by position")
    assert pa.table(sluice.read(c, union_by_name=True)).to_pylist() == \
        [{"x": 1, "y": 2}, {"x": 4, "y": 3}]
    with pytest.raises(sluice.InvalidArgumentError, match="match their columns by name"):
        sluice.read(c)
    # The same columns everywhere: union_by_name changes nothing.
    same = tmp_path / "same"
    same.mkdir()
    for i in range(3):
        pq.write_table(pa.table({"a": [i], "b": [str(i)]}), same / f"{i}.parquet")
    assert pa.table(sluice.read(same, union_by_name=True)).equals(pa.table(sluice.read(same)))


def test_partition_key_that_some_objects_have_as_a_column(tmp_path):
    """k=1/f.parquet holds a column k, k=2/f.parquet does not: the first
    keeps its own values (as without union_by_name), the second's rows take
    the directory's value, as DuckDB gives them; of another type than the
    column, that is an error."""
    root = tmp_path / "hv"
    (root / "k=1").mkdir(parents=True)
    (root / "k=2").mkdir()
    pq.write_table(pa.table({"a": [1, 2], "k": pa.array([1, 1], pa.int64())}),
                   root / "k=1" / "f.parquet")
    pq.write_table(pa.table({"a": [3]}), root / "k=2" / "f.parquet")
    got = pa.table(sluice.read(root, union_by_name=True))
    assert got.column_names == ["a", "k"]
    duck = duckdb.connect().sql(f"select a, k from read_parquet('{root}/*/*.parquet', "
                                "union_by_name=true, hive_partitioning=true) order by a").fetchall()
    assert [tuple(r.values()) for r in got.to_pylist()] == duck
    pq.write_table(pa.table({"a": [1, 2], "k": pa.array([1, 1], pa.int32())}),
                   root / "k=1" / "f.parquet")
    with pytest.raises(sluice.InvalidArgumentError, match="partition key 'k'"):
        sluice.read(root, union_by_name=True)
    assert pa.table(sluice.read(root, union_by_name=True, hive_partitioning=False)
                    ).column("k").to_pylist() == [1, 1, None]


def test_filters_keep_the_columns_and_objects_without_columns(tmp_path):
    """The table's columns do not depend on which objects a filter or a
    partition filter keeps (the refused objects are opened for their
    columns only); conditions on partition keys filter rows, in OR groups
    too; an object with rows but no columns gives rows of nulls, as
    pyarrow's concat_tables(promote_options="default") does."""
    root = tmp_path / "hv"
    (root / "k=0").mkdir(parents=True)
    (root / "k=1").mkdir()
    pq.write_table(pa.table({"b": ["u"], "a": [1]}), root / "k=0" / "p.parquet")
    pq.write_table(pa.table({"a": [2], "b": ["v"], "x": [1.5]}), root / "k=1" / "p.parquet")
    cols = ["b", "a", "x", "k"]
    for kw in ({}, {"filters": [("k", "=", 1)]}, {"filters": [("k", "=", 7)]},
               {"filters": [[("k", "=", 0)], [("a", "=", 2)]]}):
        got = pa.table(sluice.read(root, union_by_name=True, **kw))
        assert got.column_names == cols, kw
    assert pa.table(sluice.read(root, union_by_name=True, filters=[("k", "=", 1)])
                    ).to_pylist() == [{"b": "v", "a": 2, "x": 1.5, "k": 1}]
    assert len(pa.table(sluice.read(root, union_by_name=True,
                                    filters=[[("k", "=", 0)], [("a", "=", 2)]]))) == 2
    z = tmp_path / "z"
    z.mkdir()
    tables = [pa.table({"a": [1, 2]}), pa.table({"a": [1, 2, 3]}).select([]),
              pa.table({"b": ["q"]})]
    for i, t in enumerate(tables):
        feather.write_feather(t, z / f"f{i}.arrow", compression="uncompressed")
    assert pa.table(sluice.read(z, union_by_name=True)).to_pylist() == \
        pa.concat_tables(tables, promote_options="default").to_pylist()


def _corrupt_pages(path):
    """Overwrites every byte between the magic and the footer: the footer
    (and its statistics) stay readable, any page read fails."""
    data = bytearray(path.read_bytes())
    footer = int.from_bytes(data[-8:-4], "little")
    end = len(data) - 8 - footer
    data[4:end] = b"\xff" * (end - 4)
    path.write_bytes(bytes(data))


def test_statistics_prune_objects_of_other_columns(tmp_path):
    """Row group statistics exclude splits in a dataset of many objects (the
    pages of those excluded are never read: they are corrupt here), with
    union_by_name too: an object's own columns are found through the
    mapping, and one lacking a column a condition names cannot match."""
    plain = tmp_path / "plain"
    plain.mkdir()
    pq.write_table(pa.table({"id": pa.array(range(100), pa.int64())}), plain / "f1.parquet")
    pq.write_table(pa.table({"id": pa.array(range(1000, 1100), pa.int64())}), plain / "f2.parquet")
    _corrupt_pages(plain / "f2.parquet")
    with pytest.raises(sluice.Error):
        sluice.read(plain)
    assert len(pa.table(sluice.read(plain, filters=[("id", "<", 100)]))) == 100

    d = tmp_path / "u"
    d.mkdir()
    pq.write_table(pa.table({"id": pa.array(range(100), pa.int64()),
                             "score": [float(i) for i in range(100)]}), d / "f1.parquet")
    pq.write_table(pa.table({"id": pa.array(range(1000, 1100), pa.int64())}), d / "f2.parquet")
    pq.write_table(pa.table({"score": [1.0] * 100,
                             "id": pa.array(range(5000, 5100), pa.int64())}), d / "f3.parquet")
    _corrupt_pages(d / "f2.parquet")
    _corrupt_pages(d / "f3.parquet")
    with pytest.raises(sluice.Error):
        sluice.read(d, union_by_name=True)
    # f2 lacks score; f3's id statistics (its second column) exclude it.
    got = pa.table(sluice.read(d, union_by_name=True,
                               filters=[("score", ">", 10.0), ("id", "<", 100)]))
    assert got.column("id").to_pylist() == list(range(11, 100))
    got = pa.table(sluice.read(d, union_by_name=True,
                               filters=[[("score", "<", 1.0)], [("id", "<", 3)]]))
    assert got.column("id").to_pylist() == [0, 1, 2]


def test_rows_counted_from_the_cheapest_column(tmp_path):
    """Reading only partition columns (or only columns an object lacks)
    decodes one column of each object for its row count: the smallest, not
    the first (here the first's pages are corrupt, the second's are not)."""
    root = tmp_path / "hv"
    (root / "k=1").mkdir(parents=True)
    path = root / "k=1" / "f.parquet"
    pq.write_table(pa.table({"s": ["x" * 200 + str(i) for i in range(2000)],
                             "id": pa.array(range(2000), pa.int64())}), path,
                   compression="none", use_dictionary=False)
    chunk = pq.ParquetFile(path).metadata.row_group(0).column(0)
    data = bytearray(path.read_bytes())
    start = chunk.data_page_offset
    data[start:start + chunk.total_compressed_size] = b"\xff" * chunk.total_compressed_size
    path.write_bytes(bytes(data))
    with pytest.raises(sluice.Error):
        sluice.read(root, columns=["s"])
    got = pa.table(sluice.read(root, columns=["k"]))
    assert got.column("k").to_pylist() == [1] * 2000
    got = pa.table(sluice.read(root, columns=["k"], union_by_name=True))
    assert len(got) == 2000


def test_filter_on_a_key_that_is_also_a_column(tmp_path):
    """k=1/ holding rows whose own k is 99: a filter on k cannot both choose
    directories and rows, so without union_by_name it is refused (it used
    to choose the directories and return no row); with hive_partitioning
    off, or union_by_name, it filters the rows by the values they show."""
    root = tmp_path / "d"
    (root / "k=1").mkdir(parents=True)
    (root / "k=2").mkdir()
    pq.write_table(pa.table({"id": [1, 2], "k": [99, 99]}), root / "k=1" / "a.parquet")
    pq.write_table(pa.table({"id": [3], "k": [5]}), root / "k=2" / "a.parquet")
    with pytest.raises(sluice.InvalidArgumentError, match="partition key .* and a column"):
        sluice.read(root, filters=[("k", "=", 99)])
    for kw in ({"hive_partitioning": False}, {"union_by_name": True}):
        got = pa.table(sluice.read(root, filters=[("k", "=", 99)], **kw))
        assert got.column("id").to_pylist() == [1, 2], kw
    # A filter on another column, and a key that is no column, work as before.
    assert pa.table(sluice.read(root, filters=[("id", "=", 3)])).column("k").to_pylist() == [5]


def _nested_names(compliant):
    """Lists and a map whose element names are pyarrow's compliant
    (`element`) or its pre-13 default (`item`)."""
    name = "element" if compliant else "item"
    li = pa.list_(pa.field(name, pa.int32()))
    lli = pa.list_(pa.field(name, li))
    ls = pa.list_(pa.field(name, pa.struct([("a", pa.int64())])))
    m = pa.map_(pa.string(), li)
    base = 0 if compliant else 10
    return pa.table({
        "li": pa.array([[base + 1, None], None, []], li),
        "lli": pa.array([[[base]], [None, []], None], lli),
        "ls": pa.array([[{"a": base}], None, [None]], ls),
        "m": pa.array([[("k", [base])], None, [("z", None)]], m),
    })


@pytest.mark.parametrize("first_compliant", [True, False])
def test_list_element_names_do_not_split_a_dataset(tmp_path, first_compliant):
    """Files of pyarrow >= 13 (`list.element`) beside files of older pyarrow
    (`list.item`, use_compliant_nested_type=False) were refused as columns
    that differ ('li.item' here, 'li.element' in the first). pyarrow.dataset,
    DuckDB and polars read them as one table; its type is the first file's."""
    d = tmp_path / "lnds"
    d.mkdir()
    for i, compliant in enumerate([first_compliant, not first_compliant]):
        pq.write_table(_nested_names(compliant), d / f"part-{i}.parquet",
                       use_compliant_nested_type=compliant)
    want = ds.dataset(d).to_table()
    # (pyarrow's type equality ignores the names: compare them spelled out)
    want_types = [str(f.type) for f in pq.read_schema(d / "part-0.parquet")]
    want_types[3] = want_types[3].replace(" ('m')", "")  # (pyarrow names the entries 'm')
    assert ("element" in want_types[0]) == first_compliant
    duck = duckdb.sql(f"select li, lli from read_parquet('{d}/*.parquet') "
                      "order by filename").fetchall()
    for kw in ({}, {"union_by_name": True}):
        got = pa.table(sluice.read(d, **kw))
        assert [str(f.type) for f in got.schema] == want_types, kw
        assert got.to_pylist() == want.to_pylist(), kw
        assert [(r["li"], r["lli"]) for r in got.to_pylist()] == duck, kw
    # union_by_name with a column only the second file has
    t = pq.read_table(d / "part-1.parquet").append_column("x", pa.array([1, 2, 3]))
    pq.write_table(t, d / "part-1.parquet", use_compliant_nested_type=not first_compliant)
    got = pa.table(sluice.read(d, union_by_name=True))
    assert got.column_names == ["li", "lli", "ls", "m", "x"]
    assert got.column("x").to_pylist() == [None] * 3 + [1, 2, 3]
    assert got.drop_columns(["x"]).to_pylist() == want.to_pylist()
    assert [str(f.type) for f in got.schema][:4] == want_types


def test_list_and_map_child_names_in_arrow_ipc_and_parquet(tmp_path):
    """A list's child name, and a map's entries, key and value names, are not
    part of the type (pyarrow's type equality ignores them); a struct's field
    names are."""
    d = tmp_path / "ipc"
    d.mkdir()
    feather.write_feather(pa.table({"li": pa.array([[1]], pa.list_(pa.field("x", pa.int32())))}),
                          d / "a.arrow", compression="uncompressed")
    feather.write_feather(pa.table({"li": pa.array([[2, 3], None], pa.list_(pa.int32()))}),
                          d / "b.arrow", compression="uncompressed")
    want = ds.dataset(d, format="ipc").to_table()
    for kw in ({}, {"union_by_name": True}):
        got = pa.table(sluice.read(d, **kw))
        assert got.to_pylist() == want.to_pylist(), kw
        assert got.schema.field("li").type.value_field.name == "x"
    # Parquet maps from writers that name the key_value group, key and value
    # otherwise (pyarrow writes key_value/key/value: its file renamed in place)
    m = tmp_path / "maps"
    m.mkdir()
    mt = pa.map_(pa.int32(), pa.string())
    pq.write_table(pa.table({"m": pa.array([[(1, "a")]], mt)}), m / "a.parquet",
                   store_schema=False)
    pq.write_table(pa.table({"m": pa.array([None, [(2, None)]], mt)}), m / "b.parquet",
                   store_schema=False)
    raw = (m / "a.parquet").read_bytes()
    assert raw.count(b"\x03key") == 2 and raw.count(b"\x05value") == 2  # schema, path
    (m / "a.parquet").write_bytes(raw.replace(b"\x03key", b"\x03kez")
                                  .replace(b"\x05value", b"\x05valu3")
                                  .replace(b"\x09key_value", b"\x09kay_value"))
    assert pq.read_schema(m / "a.parquet").field("m").type.key_field.name == "kez"
    want = ds.dataset(m).to_table()
    for kw in ({}, {"union_by_name": True}):
        assert pa.table(sluice.read(m, **kw)).to_pylist() == want.to_pylist(), kw
    # a struct's field names still count
    s = tmp_path / "st"
    s.mkdir()
    feather.write_feather(pa.table({"l": pa.array([[{"a": 1}]])}), s / "a.arrow")
    feather.write_feather(pa.table({"l": pa.array([[{"b": 1}]])}), s / "b.arrow")
    for kw in ({}, {"union_by_name": True}):
        with pytest.raises(sluice.InvalidArgumentError, match=r"'l\.item\.b' here, 'l\.item\.a'"):
            sluice.read(s, **kw)


def _null_column_tables():
    """(name, [tables]): column `b` of type null (all None, as pandas'
    to_parquet writes an all-None column) beside b of another type, the null
    one first, second, or in the middle of three; a column only the null
    object has; a column of type null everywhere."""
    point = pa.struct([("x", pa.int32()), ("y", pa.string())])
    typed = {
        "string": pa.array(["x", None, "y"]),
        "int64": pa.array([1, 2, None], pa.int64()),
        "timestamp": pa.array([0, None, 10**15], pa.timestamp("us", "UTC")),
        "decimal": pa.array([decimal.Decimal("1.25"), None, decimal.Decimal("-3.50")],
                            pa.decimal128(9, 2)),
        "list": pa.array([[1, None], None, []], pa.list_(pa.int32())),
        "struct": pa.array([{"x": 1, "y": "p"}, None, {"x": None, "y": None}], point),
        "map": pa.array([[("k", 1)], None, []], pa.map_(pa.string(), pa.int64())),
        "dictionary": pa.array(["red", None, "red"]).dictionary_encode(),
    }
    out = []
    for kind, values in typed.items():
        full = pa.table({"a": pa.array([1, 2, 3], pa.int64()), "b": values})
        empty = pa.table({"a": pa.array([4, 5], pa.int64()), "b": pa.nulls(2)})
        other = pa.table({"b": values.slice(1, 2), "a": pa.array([6, 7], pa.int64())})
        out.append((kind + "-null-first", [empty, full]))
        out.append((kind + "-null-second", [full, empty]))
        out.append((kind + "-null-middle", [full, empty, other]))
    out.append(("only-in-null-object", [
        pa.table({"a": pa.array([1], pa.int64())}),
        pa.table({"a": pa.array([2], pa.int64()), "z": pa.nulls(1)})]))
    out.append(("null-everywhere", [
        pa.table({"a": pa.array([1], pa.int64()), "b": pa.nulls(1)}),
        pa.table({"b": pa.nulls(2), "a": pa.array([2, 3], pa.int64())})]))
    return out


def _write(tables, d, fmt):
    d.mkdir()
    for i, t in enumerate(tables):
        if fmt == "parquet":
            pq.write_table(t, d / f"f{i}.parquet")
        else:
            feather.write_feather(t, d / f"f{i}.arrow", compression="uncompressed")
    return sorted(str(p) for p in d.iterdir())


def _as_read(t):
    """pyarrow's table with dictionaries decoded (DuckDB's and concat_tables'
    results hold the same values, one as a dictionary, one not)."""
    return pa.table({name: (c.cast(c.type.value_type) if pa.types.is_dictionary(c.type) else c)
                     for name, c in zip(t.column_names, t.columns)})


@pytest.mark.parametrize("fmt", ["parquet", "arrow"])
@pytest.mark.parametrize("name,tables", _null_column_tables(),
                         ids=[n for n, _ in _null_column_tables()])
def test_a_column_of_type_null_joins_any_type(tmp_path, fmt, name, tables):
    """A column of type null in some objects (all None) reads as nulls of
    the others' type, as DuckDB's union_by_name and pyarrow's
    concat_tables(promote_options="default") read it; it was refused
    ("column 'b' is of type null here, string in the first"). The same
    without union_by_name when the objects' columns are in one order."""
    files = _write(tables, tmp_path / "d", fmt)
    want = pa.concat_tables(tables, promote_options="default")
    got = pa.table(sluice.read(files, union_by_name=True))
    assert got.column_names == want.column_names
    assert [f.type for f in _as_read(got).schema] == [f.type for f in _as_read(want).schema]
    assert got.to_pylist() == want.to_pylist()
    if fmt == "parquet":
        duck = duckdb.sql(f"select * from read_parquet({files!r}, union_by_name=true)").arrow()
        duck = duck.read_all() if hasattr(duck, "read_all") else duck
        assert got.to_pylist() == duck.to_pylist()
    # projections: the column alone (the null object's rows counted from
    # its other column), and filtered rows (a null passes no condition)
    alone = pa.table(sluice.read(files, union_by_name=True, columns=["a", want.column_names[-1]]))
    assert alone.to_pylist() == want.select(alone.column_names).to_pylist()
    if "b" in want.column_names and pa.types.is_integer(want.schema.field("b").type):
        got = pa.table(sluice.read(files, union_by_name=True, filters=[("b", ">=", 1)]))
        assert got.column("a").to_pylist() == want.filter(
            pc.greater_equal(want["b"], 1)).column("a").to_pylist()
    # The same columns in the same order: read as one without union_by_name.
    if all(t.column_names == tables[0].column_names for t in tables):
        assert pa.table(sluice.read(files)).to_pylist() == want.to_pylist()
    assert sluice.read(files, union_by_name=True).to_pandas()["a"].tolist() == \
        want.column("a").to_pylist()


def test_avro_null_fields_join(tmp_path):
    """Avro's own null type ({"type": "null"}) beside a string field, both
    orders, against fastavro's records."""
    typed = {"type": "record", "name": "r",
             "fields": [{"name": "a", "type": "long"}, {"name": "b", "type": ["null", "string"]}]}
    nulled = {"type": "record", "name": "r",
              "fields": [{"name": "b", "type": "null"}, {"name": "a", "type": "long"}]}
    d = tmp_path / "avro"
    d.mkdir()
    with open(d / "f0.avro", "wb") as f:
        fastavro.writer(f, nulled, [{"a": 1, "b": None}, {"a": 2, "b": None}])
    with open(d / "f1.avro", "wb") as f:
        fastavro.writer(f, typed, [{"a": 3, "b": "x"}, {"a": 4, "b": None}])
    for files in ([d / "f0.avro", d / "f1.avro"], [d / "f1.avro", d / "f0.avro"]):
        want = []
        for p in files:
            with open(p, "rb") as f:
                want += [{"a": r["a"], "b": r["b"]} for r in fastavro.reader(f)]
        got = pa.table(sluice.read(files, union_by_name=True))
        assert got.schema.field("b").type == pa.string()
        assert got.select(["a", "b"]).to_pylist() == want


def test_csv_with_an_empty_column(tmp_path):
    """CSV (positional: its types are inferred object by object) already
    reads a column empty in one file as the others' type, as DuckDB's
    read_csv(union_by_name=true) does."""
    d = tmp_path / "csv"
    d.mkdir()
    (d / "f0.csv").write_text("a,b\n1,\n2,\n")
    (d / "f1.csv").write_text("a,b\n3,x\n")
    for files in ([d / "f0.csv", d / "f1.csv"], [d / "f1.csv", d / "f0.csv"]):
        names = [str(p) for p in files]
        duck = duckdb.sql(f"select * from read_csv({names!r}, union_by_name=true)").fetchall()
        got = pa.table(sluice.read(files))
        assert got.schema.field("b").type == pa.string()
        assert [tuple(r.values()) for r in got.to_pylist()] == duck


def test_a_column_of_type_null_still_refuses_other_differences(tmp_path):
    """A null column joins any type; the types of the others must still
    join, and the error names the object that gave the column its type."""
    d = tmp_path / "clash"
    d.mkdir()
    pq.write_table(pa.table({"b": pa.nulls(1)}), d / "f0.parquet")
    pq.write_table(pa.table({"b": ["x"]}), d / "f1.parquet")
    pq.write_table(pa.table({"b": [[1]]}), d / "f2.parquet")
    with pytest.raises(sluice.InvalidArgumentError, match=r"f2.parquet: union_by_name: column "
                       r"'b' is of type list here, string in the first; the first is in "
                       r".*f1.parquet"):
        sluice.read(d, union_by_name=True)
    with pytest.raises(sluice.InvalidArgumentError, match=r"f2.parquet: its columns differ .*"
                       r"column 'b' is of type list here, string in .*f1.parquet"):
        sluice.read(d)


def _duck_csv(files, **kw):
    names = [str(p) for p in files]
    opts = "".join(f", {k}={v}" for k, v in kw.items())
    d = duckdb.sql(f"select * from read_csv({names!r}, union_by_name=true{opts})")
    t = d.arrow()
    return t.read_all() if hasattr(t, "read_all") else t


@pytest.mark.parametrize("threads", [1, 2])
def test_csv_matches_duckdb(tmp_path, threads):
    """CSV objects of other columns (added, dropped, reordered), their types
    inferred file by file and joined by name (int64 and float64 as float64,
    a date and text as string), as DuckDB's read_csv(union_by_name=true)
    reads them; a glob, a list and a projection."""
    d = tmp_path / "csv"
    d.mkdir()
    (d / "f0.csv").write_text("id,when,v\n1,2024-01-01,3\n2,2024-02-03,4\n")
    (d / "f1.csv").write_text("v,id\n0.5,3\n,4\n")
    (d / "f2.csv").write_text("note,id,when\nhi,5,not a date\n")
    (d / "f3.csv").write_text("id,b\n6,\n7,\n")  # b empty here, text in f4
    (d / "f4.csv").write_text("b,id\nx,8\n")
    files = sorted(d.glob("*.csv"))
    want = _duck_csv(files)
    for src in (str(d / "*.csv"), [str(p) for p in files]):
        got = pa.table(sluice.read(src, union_by_name=True, threads=threads))
        assert got.column_names == want.column_names == ["id", "when", "v", "note", "b"]
        assert got.schema.types == want.schema.types
        assert got.to_pylist() == want.to_pylist()
    got = pa.table(sluice.read(d, union_by_name=True, columns=["note", "v"], threads=threads))
    assert got.to_pylist() == want.select(["note", "v"]).to_pylist()
    got = pa.table(sluice.read(d, union_by_name=True, filters=[("v", ">", 1)], threads=threads))
    assert got.column("id").to_pylist() == [1, 2]


def test_csv_late_value_reads_again(tmp_path):
    """A value past the sample widens its column in that file; sluice.read
    reads again with every file's column of that name widened too, as
    DuckDB (whose sample holds the files whole) types them."""
    d = tmp_path / "late"
    d.mkdir()
    (d / "a.csv").write_text("n,x\n" + "".join(f"{i},{i}\n" for i in range(4000)) + "4000,2.5\n")
    (d / "b.csv").write_text("x,s\n7,q\n")
    want = _duck_csv(sorted(d.glob("*.csv")))
    assert want.schema.field("x").type == pa.float64()
    got = pa.table(sluice.read(d, union_by_name=True, infer_bytes=500))
    assert got.schema.types == want.schema.types
    assert got.to_pylist() == want.to_pylist()


@pytest.mark.parametrize("zone", [None, "Europe/Paris"])
def test_timestamps_in_two_units_read_as_the_finer(tmp_path, zone):
    """pandas 2 wrote timestamp[ns], pandas 3 writes timestamp[us]: files of
    both read as one table in the finer unit (they were refused), as
    pyarrow.dataset and DuckDB read them when the first file is the finer;
    durations too, and inside a struct. A value past the finer unit's range
    is an error naming the row."""
    import pyarrow.dataset as pds

    d = tmp_path / "d"
    d.mkdir()
    base = 1_700_000_000_000_000
    for name, unit, scale in (("a", "ns", 1000), ("b", "us", 1), ("c", "ms", 0.001)):
        ts = pa.array([int(base * scale) + 7 * (unit != "ms"), None], pa.timestamp(unit, zone))
        dur = pa.array([int(5_000_000 * scale), -1], pa.duration(unit))
        pq.write_table(pa.table({"ts": ts, "dur": dur, "st": pa.StructArray.from_arrays(
            [ts], ["t"])}), d / f"{name}.parquet")
    got = pa.table(sluice.read(d))
    want = pds.dataset(d).to_table()
    assert got.schema == want.schema
    assert got.schema.field("ts").type == pa.timestamp("ns", zone)
    assert got.to_pylist() == want.to_pylist()
    flt = [("ts", ">", want.column("ts")[2].as_py())]
    assert pa.table(sluice.read(d, filters=flt)).to_pylist() == \
        pds.dataset(d).to_table(filter=pq.filters_to_expression(flt)).to_pylist()
    past = tmp_path / "past"
    past.mkdir()
    pq.write_table(pa.table({"ts": pa.array([1, 32503680000], pa.timestamp("s", zone))}),
                   past / "a.parquet")
    pq.write_table(pa.table({"ts": pa.array([1], pa.timestamp("ns", zone))}), past / "b.parquet")
    with pytest.raises(sluice.Error, match=r"a.parquet.*'ts'.*row 1: .* is past the range of "
                       r"timestamp\[ns"):
        sluice.read(past)


def test_polars_nested_large_types_beside_pyarrows(tmp_path):
    """A polars-written object (large_list, large_string inside a struct)
    beside pyarrow's reads as pyarrow.dataset and DuckDB read the two, with
    and without union_by_name (columns reordered in the second case)."""
    pl = pytest.importorskip("polars")
    t = pa.table({"l": pa.array([[1], None], pa.list_(pa.int64())),
                  "st": pa.array([{"a": "x"}, {"a": None}], pa.struct([("a", pa.string())]))})
    pq.write_table(t, tmp_path / "p1.parquet")
    pl.from_arrow(t).write_parquet(tmp_path / "p2.parquet")
    want = ds.dataset(tmp_path).to_table()
    got = pa.table(sluice.read(tmp_path))
    assert got.schema == want.schema and got.to_pylist() == want.to_pylist()
    assert sorted(map(str, duckdb.sql(f"select * from '{tmp_path}/*.parquet'").fetchall())) == \
        sorted(str((r["l"], r["st"])) for r in got.to_pylist())
    pl.from_arrow(t.select(["st", "l"])).write_parquet(tmp_path / "p2.parquet")
    got = pa.table(sluice.read(tmp_path, union_by_name=True))
    assert got.schema == want.schema and got.to_pylist() == want.to_pylist()
