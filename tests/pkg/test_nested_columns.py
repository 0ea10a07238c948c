"""A dotted column name that is no column selects a field of a struct column
(columns=["st.x"], sluice cat -c st.x), as pyarrow.parquet.read_table takes
it (pyarrow >= 15, the dataset reader): the name is split at every dot, the
first part names a column and each next part a field of the struct before
it; the result is a top-level column named by the field, null where the
field or a struct above it is null, in the order asked (two fields of one
struct are two columns, a repeat is a repeat). A column whose own name has a
dot ("a.b") is taken by that name first. A path through a list or a map, a
missing field or a field of a non-struct is refused, as pyarrow refuses it.
Values and schema are compared with pyarrow's reading of the same file.

One deliberate difference: a field declared non-nullable under a nullable
struct comes out nullable (its rows are null where the struct is); pyarrow
keeps the "not null" flag on a column that holds nulls."""
import subprocess

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as pads
import pyarrow.ipc as ipc
import pyarrow.parquet as pq
import pytest

import sluice

ROWS = 3000

INNER = pa.struct([("p", pa.int32()), ("q", pa.string())])
ST = pa.struct([("x", pa.int64()), ("y", pa.string()), ("z", INNER),
                ("w", pa.float64()), ("l", pa.list_(pa.int64()))])


def _table():
    def st(i):
        if i % 13 == 5:
            return None  # the struct itself null
        z = None if i % 7 == 2 else {"p": None if i % 5 == 1 else i, "q": "q%d" % (i % 17)}
        return {"x": None if i % 3 == 0 else i, "y": "y%d" % i, "z": z,
                "w": i * 0.25, "l": list(range(i % 4))}
    n = ROWS
    return pa.table({
        "id": pa.array(range(n), pa.int64()),
        "st": pa.array([st(i) for i in range(n)], ST),
        "l": pa.array([[{"x": i}] if i % 2 else None for i in range(n)],
                      pa.list_(pa.struct([("x", pa.int64())]))),
        "m": pa.array([[("k", i)] for i in range(n)], pa.map_(pa.string(), pa.int64())),
        "a.b": pa.array(range(n, 2 * n), pa.int64()),          # a column with a dot
        "a": pa.array([{"b": {"c": i}} for i in range(n)],   # and the path a.b.c
                      pa.struct([("b", pa.struct([("c", pa.int64())]))])),
        "v": pa.array(["v%d" % i for i in range(n)]),
    })


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("nested")
    t = _table()
    many = d / "many.parquet"
    pq.write_table(t, many, row_group_size=700)
    one = d / "one.parquet"
    pq.write_table(t, one)
    return {"many": many, "one": one}


CASES = [
    ["st.x"],
    ["st.y", "id", "st.x"],          # order as asked, two fields of one struct
    ["st.z.p"],                      # nested struct, null at two levels
    ["st.z"],                        # a struct field that is a struct
    ["st.z.p", "st.x", "st.z.q"],
    ["st", "st.x"],                  # whole column and a field of it
    ["st.x", "st"],
    ["st.x", "st.x", "id"],          # a repeat
    ["st.l", "st.w"],                # a list field, a float field
    ["a.b"],                         # the column named "a.b", not a's field b
    ["a.b.c", "a.b"],
    ["v", "st.y"],
]


def _want(path, names):
    return pq.read_table(path, columns=names)


def _check(got, want):
    got = got if isinstance(got, pa.Table) else pa.table(got)
    assert got.column_names == want.column_names
    for g, w in zip(got.columns, want.columns):
        assert g.type == w.type, (g.type, w.type)
        assert g.to_pylist() == w.to_pylist()
    for f, w in zip(got.schema, want.schema):
        assert f.nullable


@pytest.mark.parametrize("names", CASES, ids=",".join)
@pytest.mark.parametrize("which", ["many", "one"])
@pytest.mark.parametrize("threads", [1, 4])
def test_read_like_pyarrow(files, names, which, threads):
    path = files[which]
    want = _want(path, names)
    _check(sluice.read(str(path), columns=names, threads=threads), want)
    if "id" in names:  # unordered, by id
        got = pa.table(sluice.read(str(path), columns=names, threads=threads, ordered=False,
                                   batch_rows=333))
        _check(got.take(pc.sort_indices(got.column(names.index("id")))), want)
    _check(sluice.read(str(path), columns=names, threads=threads, batch_rows=333), want)
    _check(sluice.read(str(path), columns=names, threads=threads, limit=1234),
           want.slice(0, 1234))
    schema = pa.schema(sluice.schema(str(path), columns=names))
    assert [(f.name, f.type) for f in schema] == [(f.name, f.type) for f in want.schema]


def test_batches(files):
    """Batch by batch (sliced row groups): each batch's rows are the file's."""
    names = ["st.z.p", "id", "st.x"]
    want = _want(files["one"], names)
    got = []
    with sluice.scan(str(files["one"]), columns=names, batch_rows=257, threads=3) as sc:
        for b in sc:
            rb = pa.record_batch(b) if not isinstance(b, pa.RecordBatch) else b
            rb.validate(full=True)
            got.append(rb)
    _check(pa.Table.from_batches(got), want)


def test_not_null_field_under_nullable_struct(tmp_path):
    typ = pa.struct([pa.field("x", pa.int64(), nullable=False)])
    t = pa.table({"s": pa.array([{"x": 1}, None, {"x": 3}], typ)})
    path = tmp_path / "nn.parquet"
    pq.write_table(t, path)
    want = pq.read_table(path, columns=["s.x"])
    got = pa.table(sluice.read(str(path), columns=["s.x"]))
    assert got.column(0).to_pylist() == want.column(0).to_pylist() == [1, None, 3]
    assert got.schema.field(0).nullable  # pyarrow says "not null" here


@pytest.mark.parametrize("name, pyarrow_refuses", [
    ("st.nope", True), ("st.x.y", True), ("l.list.element.x", True), ("l.element", True),
    ("l.x", True), ("m.key", True), ("m.key_value.key", True), ("st.", True),
    ("nope.x", True),
])
def test_bad_path(files, name, pyarrow_refuses):
    path = files["many"]
    with pytest.raises(Exception):
        pq.read_table(path, columns=[name])
    with pytest.raises(sluice.Error, match="no column '%s'" % name.replace(".", r"\.")):
        sluice.read(str(path), columns=[name])


def test_bad_path_messages(files):
    path = str(files["many"])
    with pytest.raises(sluice.Error, match="struct 'st' has no field 'nope'; its fields "
                                                 "are: x, y, z, w, l"):
        sluice.read(path, columns=["st.nope"])
    with pytest.raises(sluice.Error, match="'l' is list, not a struct"):
        sluice.read(path, columns=["l.list.element.x"])
    with pytest.raises(sluice.Error, match="'st.x' is int64, not a struct"):
        sluice.read(path, columns=["st.x.y"])


def test_cli(sluice_bin, files):
    names = ["st.y", "id", "st.z.p", "a.b"]
    want = _want(files["many"], names)
    for threads in ("1", "4"):
        proc = subprocess.run([sluice_bin, "--threads", threads, "cat", str(files["many"]),
                               "-c", ",".join(names), "-t", "arrows"], capture_output=True,
                              timeout=120)
        assert proc.returncode == 0, proc.stderr
        _check(ipc.open_stream(pa.BufferReader(proc.stdout)).read_all(), want)
    proc = subprocess.run([sluice_bin, "cat", str(files["many"]), "-c", "st.nope"],
                          capture_output=True, timeout=120)
    assert proc.returncode != 0
    assert b"struct 'st' has no field 'nope'" in proc.stderr


def test_stats(sluice_bin, files):
    names = ["st.x", "id", "st.y", "st.z.p", "st.x"]
    want = _want(files["many"], names)
    st = sluice.stats(str(files["many"]), columns=names)
    assert [s["name"] for s in st] == want.column_names
    for s, col in zip(st, want.columns):
        assert s["count"] == len(col) and s["null_count"] == col.null_count, s
        mm = pc.min_max(col)
        assert s["min"] == str(mm["min"].as_py()) and s["max"] == str(mm["max"].as_py()), s
    proc = subprocess.run([sluice_bin, "stats", str(files["many"]), "-c", "st.z.p"],
                          capture_output=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.decode().splitlines()[1].split()[:4] == \
        ["p", "int32", str(ROWS), str(want.column("p").null_count)]


def test_arrow_ipc(tmp_path):
    """The Arrow IPC reader takes the same paths (pyarrow's dataset does)."""
    t = _table().select(["id", "st"])
    path = tmp_path / "t.arrow"
    with ipc.new_file(path, t.schema) as w:
        for b in t.to_batches(max_chunksize=500):
            w.write_batch(b)
    names = ["st.z.q", "id", "st.x"]
    want = pads.dataset(path, format="ipc").to_table(columns=names)
    _check(sluice.read(str(path), columns=names, threads=3), want)


@pytest.fixture(scope="module")
def torn(files, tmp_path_factory):
    """Copies of the files with every column chunk of st.y overwritten: a
    read that touches st.y fails, so one that succeeds did not read it."""
    d = tmp_path_factory.mktemp("torn")
    out = {}
    for which, path in files.items():
        md = pq.ParquetFile(path).metadata
        data = bytearray(path.read_bytes())
        for rg in range(md.num_row_groups):
            cc = next(md.row_group(rg).column(k) for k in range(md.num_columns)
                      if md.row_group(rg).column(k).path_in_schema == "st.y")
            start = cc.dictionary_page_offset or cc.data_page_offset
            data[start:start + cc.total_compressed_size] = b"\xab" * cc.total_compressed_size
        out[which] = d / path.name
        out[which].write_bytes(bytes(data))
    return out


@pytest.mark.parametrize("names", [c for c in CASES if "st.y" not in c and "st" not in c],
                         ids=",".join)
@pytest.mark.parametrize("which", ["many", "one"])
def test_fields_read_only_their_chunks(files, torn, names, which):
    """st's other fields are not decoded (as leaves of a Parquet file: only
    the chunks under the fields asked are read), in whole row groups and in
    slices, and with a filter on another column."""
    want = _want(files[which], names)
    for threads in (1, 4):
        _check(sluice.read(str(torn[which]), columns=names, threads=threads), want)
        _check(sluice.read(str(torn[which]), columns=names, threads=threads, batch_rows=333),
               want)
    got = sluice.read(str(torn[which]), columns=names, filters=[("id", ">=", 1000)])
    keep = pq.read_table(files[which], columns=["id"]).column(0).to_numpy() >= 1000
    _check(got, want.filter(pa.array(keep)))


@pytest.mark.parametrize("names", [["st.y"], ["st"], ["st.x", "st"]], ids=",".join)
def test_fields_torn_chunk_is_read(torn, names):
    """The torn chunk is read (and refused) whenever st.y is asked, itself or
    within st: what the test above relies on."""
    with pytest.raises(sluice.Error, match="column st.y"):
        sluice.read(str(torn["many"]), columns=names)


@pytest.mark.parametrize("threads", ["1", "2"])
def test_fields_read_only_their_chunks_in_slices(sluice_bin, files, torn, threads):
    """The same when a row group is read a batch at a time (slice_bytes made
    small: the column chunks are read page by page through cursors)."""
    names = ["st.z.p", "id", "st.x", "st.l"]
    want = _want(files["one"], names)
    proc = subprocess.run([sluice_bin, "-O", "slice_bytes=20000", "--threads", threads, "cat",
                           str(torn["one"]), "-c", ",".join(names), "--batch-rows", "333",
                           "-t", "arrows"], capture_output=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    got = ipc.open_stream(pa.BufferReader(proc.stdout)).read_all()
    assert max(len(b) for b in got.to_batches()) <= 333
    _check(got, want)


def test_arrow_ipc_beside_list_view(tmp_path):
    """A struct field of a type sluice cannot read (list_view) is read past
    when only other fields of the struct are asked, as pyarrow's dataset
    reads them; asking for it is still an error naming it."""
    st = pa.StructArray.from_arrays(
        [pa.array([1, 2, None]), pa.array([[1], [2, 3], None], pa.list_view(pa.int32())),
         pa.array(["a", None, "c"])], ["x", "lv", "s"])
    t = pa.table({"st": st, "i": [7, 8, 9]})
    path = tmp_path / "lv.arrow"
    with ipc.new_file(path, t.schema) as w:
        w.write_table(t)
    for names in (["st.x"], ["i", "st.s", "st.x"]):
        want = pads.dataset(path, format="ipc").to_table(columns=names)
        _check(sluice.read(str(path), columns=names), want)
    with pytest.raises(sluice.Error, match="st.lv': type list_view is not supported"):
        sluice.read(str(path), columns=["st"])


def test_fields_read_only_their_chunks_in_datasets(files, torn, tmp_path):
    """In a hive-partitioned directory with the partition key asked too, and
    in a union_by_name dataset whose objects order their columns otherwise,
    the objects' struct fields are pruned the same way (the dataset's
    columns mapped to each object's)."""
    names = ["st.x", "st.z.p"]
    want = _want(files["many"], names)
    hive = tmp_path / "hive"
    for k in (1, 2):
        (hive / f"k={k}").mkdir(parents=True)
        (hive / f"k={k}" / "a.parquet").write_bytes(torn["many"].read_bytes())
    got = pa.table(sluice.read(str(hive), columns=names + ["k"]))
    assert got.column("k").to_pylist() == [1] * ROWS + [2] * ROWS
    _check(got.select([0, 1]), pa.concat_tables([want, want]))
    mixed = tmp_path / "mixed"
    mixed.mkdir()
    (mixed / "a.parquet").write_bytes(torn["many"].read_bytes())
    t = pq.read_table(files["many"])
    reordered = t.select(list(reversed(t.column_names)))
    pq.write_table(reordered, mixed / "b.parquet", row_group_size=700)
    md = pq.ParquetFile(mixed / "b.parquet").metadata
    data = bytearray((mixed / "b.parquet").read_bytes())
    for rg in range(md.num_row_groups):
        cc = next(md.row_group(rg).column(k) for k in range(md.num_columns)
                  if md.row_group(rg).column(k).path_in_schema == "st.y")
        start = cc.dictionary_page_offset or cc.data_page_offset
        data[start:start + cc.total_compressed_size] = b"\xab" * cc.total_compressed_size
    (mixed / "b.parquet").write_bytes(bytes(data))
    got = sluice.read(str(mixed), columns=names, union_by_name=True)
    _check(got, pa.concat_tables([want, want]))
    with pytest.raises(sluice.Error, match="column st.y"):
        sluice.read(str(mixed), columns=["st.y"], union_by_name=True)


@pytest.mark.parametrize("fmt", ["parquet", "arrow"])
def test_fields_with_filter_when_an_object_is_cast(tmp_path, fmt):
    """A dataset one object of which holds the struct with another child
    type (so it is cast and decoded whole) or lacks it: a filter keeping
    scattered rows filtered the fields left out by the pruned schema and
    failed ('filtering column z: 1 buffers and 1 children do not fit type
    n'). Values equal pyarrow's dataset with the same filter."""
    import pyarrow.dataset as ds

    def table(xt, lt, first):
        n = 40
        z = pa.StructArray.from_arrays([pa.array([float(i) for i in range(n)])], names=["p"])
        st = pa.StructArray.from_arrays(
            [pa.array(range(first, first + n), xt), z,
             pa.array([[i] for i in range(n)], pa.list_(lt))], names=["x", "z", "l"])
        return pa.table({"k": pa.array(range(first, first + n)), "st": st})
    d = tmp_path / "d"
    d.mkdir()
    for name, t in (("a", table(pa.int64(), pa.int32(), 0)),
                    ("b", table(pa.int32(), pa.int64(), 100))):
        if fmt == "parquet":
            pq.write_table(t, d / f"{name}.parquet")
        else:
            with ipc.new_file(d / f"{name}.arrow", t.schema) as w:
                w.write_table(t)
    keep = [3, 17, 103, 117, 139]
    want = ds.dataset(d, format="parquet" if fmt == "parquet" else "ipc").to_table(
        columns=["st.x"], filter=ds.field("k").isin(keep))
    for names in (["st.x"], ["st.x", "st.z.p"]):
        got = pa.table(sluice.read(str(d), columns=names, filters=[("k", "in", keep)]))
        assert got.column(0).to_pylist() == want.column(0).to_pylist(), names
    missing = tmp_path / "m"
    missing.mkdir()
    pq.write_table(table(pa.int64(), pa.int32(), 0), missing / "a.parquet")
    pq.write_table(pa.table({"k": pa.array(range(100, 140))}), missing / "b.parquet")
    got = pa.table(sluice.read(str(missing), columns=["st.x", "k"], union_by_name=True,
                               filters=[("k", "in", keep)]))
    assert got.to_pylist() == [{"x": 3, "k": 3}, {"x": 17, "k": 17}, {"x": None, "k": 103},
                               {"x": None, "k": 117}, {"x": None, "k": 139}]


def test_dictionary_of_struct_path_is_refused_naming_it(tmp_path):
    """A dictionary whose values are structs is no struct for a path: the
    error says so (it named the index type: "'st' is int8")."""
    st = pa.array([{"x": 1}, {"x": 2}], pa.struct([("x", pa.int64())]))
    t = pa.table({"st": pa.DictionaryArray.from_arrays(pa.array([0, 1, 0], pa.int8()), st)})
    path = tmp_path / "dst.arrow"
    with ipc.new_file(path, t.schema) as w:
        w.write_table(t)
    with pytest.raises(sluice.Error, match="'st' is a dictionary of struct, not a struct"):
        sluice.read(str(path), columns=["st.x"])
