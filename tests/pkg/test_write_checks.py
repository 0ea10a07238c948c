"""Checks on what sluice writes: nulls in fields that are not nullable (Arrow
IPC refuses them as pyarrow's IPC writer and sluice's Parquet and Avro
writers do), row numbers of errors in datasets split by max_rows_per_file,
file objects whose write() returns what io.BufferedWriter would refuse, and
the message refusing a float partition key."""
import io
import os
import subprocess

import pyarrow as pa
import pytest

import sluice

REQUIRED = pa.schema([pa.field("a", pa.int64(), nullable=False)])


def _holding_null():
    return pa.Table.from_arrays([pa.array([1, 2, None, 4])], schema=REQUIRED)


def test_what_pyarrow_ipc_writer_does():
    """The reference: pyarrow's IPC writer of a "not null" schema refuses a
    batch whose field is nullable (as sluice.Writer(schema=) now refuses
    its nulls), but writes a table whose own schema says "not null" with
    its null: sluice refuses that too, as its Parquet and Avro writers do
    (and pyarrow's Parquet writer: the null would be lost there)."""
    with pytest.raises(pa.ArrowInvalid, match="different schema"):
        with pa.ipc.new_file(io.BytesIO(), REQUIRED) as w:
            w.write_table(pa.table({"a": [1, None]}))
    b = io.BytesIO()
    with pa.ipc.new_file(b, REQUIRED) as w:
        w.write_table(_holding_null())
    assert pa.ipc.open_file(pa.BufferReader(b.getvalue())).read_all().column("a").null_count == 1


@pytest.mark.parametrize("name", ["x.arrow", "x.arrows", "x.parquet", "x.avro"])
def test_write_refuses_a_null_in_a_required_field(tmp_path, name):
    out = tmp_path / name
    with pytest.raises(sluice.InvalidArgumentError, match=r"column 'a'.*row 2"):
        sluice.write(_holding_null(), out)
    assert not out.exists()
    # Without a null it is written, "not null" kept.
    t = pa.Table.from_arrays([pa.array([1, 2])], schema=REQUIRED)
    sluice.write(t, out)
    assert pa.table(sluice.read(out)).column("a").to_pylist() == [1, 2]


@pytest.mark.parametrize("name", ["n.arrow", "n.arrows"])
def test_writer_schema_refuses_a_null(tmp_path, name):
    """Writer(schema=) with a field that is not nullable: a batch whose
    column holds a null (the batch's own field nullable) is refused, its row
    counted across writes, and nothing appears."""
    out = tmp_path / name
    with pytest.raises(sluice.InvalidArgumentError, match=r"column 'a' row 3: a null"):
        with sluice.Writer(out, schema=REQUIRED) as w:
            w.write(pa.table({"a": [1, 2]}))
            w.write(pa.table({"a": [3, None]}))
    assert not out.exists()


def test_nested_required_children(tmp_path):
    """A null in a required child of a struct, a list's required items: refused
    under a value; under a null struct the child's null is no value."""
    s = pa.struct([pa.field("x", pa.int64(), nullable=False)])
    sch = pa.schema([pa.field("s", s)])
    ok = pa.StructArray.from_arrays([pa.array([1, None])], fields=list(s),
                                    mask=pa.array([False, True]))
    t = pa.Table.from_arrays([ok], schema=sch)
    sluice.write(t, tmp_path / "ok.arrow")
    assert pa.ipc.open_file(tmp_path / "ok.arrow").read_all().column("s").to_pylist() == \
        [{"x": 1}, None]
    bad = pa.StructArray.from_arrays([pa.array([1, None])], fields=list(s))
    with pytest.raises(sluice.InvalidArgumentError, match=r"column 's.x' row 1"):
        sluice.write(pa.Table.from_arrays([bad], schema=sch), tmp_path / "bad.arrow")
    lt = pa.list_(pa.field("item", pa.int64(), nullable=False))
    lists = pa.array([[1], [], [2, None]], lt)
    with pytest.raises(sluice.InvalidArgumentError, match=r"column 'l.item' row 2"):
        sluice.write(pa.table({"l": lists}), tmp_path / "l.arrows")
    assert not (tmp_path / "bad.arrow").exists() and not (tmp_path / "l.arrows").exists()


def test_required_children_deep_and_wide(tmp_path):
    """The walk's plan covers a column's first 256 type nodes: a required
    field past them (a struct of 300 fields, then a list of structs) and one
    40 levels deep are still checked, and a null under a null parent there
    is still allowed (pyarrow reads the file back equal)."""
    inner = pa.StructArray.from_arrays([pa.array([1, None, 3])],
                                       fields=[pa.field("x", pa.int64(), nullable=False)])
    fields = [pa.field("f%d" % i, pa.int64()) for i in range(300)]
    for mask, bad in ((None, True), (pa.array([False, True]), False)):
        deep = pa.ListArray.from_arrays(pa.array([0, 1, 3], pa.int32()), inner, mask=mask)
        wide = pa.StructArray.from_arrays([pa.array([0, 1])] * 300 + [deep],
                                          fields=fields + [pa.field("deep", deep.type)])
        out = tmp_path / ("bad.arrow" if bad else "ok.arrow")
        if bad:
            with pytest.raises(sluice.InvalidArgumentError, match=r"column 'w.deep.item.x' row 1"):
                sluice.write(pa.table({"w": wide}), out)
            assert not out.exists()
        else:
            sluice.write(pa.table({"w": wide}), out)
            assert pa.ipc.open_file(out).read_all().equals(pa.table({"w": wide}))
    chain = pa.StructArray.from_arrays([pa.array([1, None, 3])],
                                       fields=[pa.field("x", pa.int64(), nullable=False)],
                                       mask=pa.array([False, True, False]))
    for _ in range(40):
        chain = pa.StructArray.from_arrays([chain], fields=[pa.field("s", chain.type)])
    sluice.write(pa.table({"c": chain}), tmp_path / "chain.arrow")
    assert pa.ipc.open_file(tmp_path / "chain.arrow").read_all().column("c").to_pylist() == \
        pa.table({"c": chain}).column("c").to_pylist()


def _union(mode, type_ids, children, offsets=None):
    fields = [pa.field("x", pa.int64(), nullable=False), pa.field("y", pa.string())]
    if len(children) == 3:
        fields.append(pa.field("s", children[2].type))
    t = (pa.dense_union if mode == "dense" else pa.sparse_union)(fields)
    bufs = [None, pa.array(type_ids, pa.int8()).buffers()[1]]
    if offsets is not None:
        bufs.append(pa.array(offsets, pa.int32()).buffers()[1])
    return pa.UnionArray.from_buffers(t, len(type_ids), bufs, children=children)


@pytest.mark.parametrize("name", ["u.arrow", "u.arrows"])
def test_union_required_children(tmp_path, name):
    """A union's value is its type id's child's slot (sparse: the same slot;
    dense: the one its offset names): a null there in a required field is
    refused. Slots no value selects are no values: their nulls are written
    (pyarrow's validate(full=True) looks at neither; it reads both back as
    to_pylist shows them)."""
    xs, ys = pa.array([1, None, 3], pa.int64()), pa.array(["a", "b", "c"])
    bad = [(_union("sparse", [0, 0, 1], [xs, ys]), 1),
           (_union("dense", [1, 0, 0], [xs, ys], offsets=[0, 0, 1]), 2)]
    for u, row in bad:
        u.validate(full=True)
        assert u.to_pylist()[row] is None
        with pytest.raises(sluice.InvalidArgumentError, match=r"column 'u.x' row %d: a null in "
                           r"a field that is not nullable" % row):
            sluice.write(pa.table({"u": u}), tmp_path / name)
        # Sliced: the union's offset applies to its type ids (and a sparse one's children).
        with pytest.raises(sluice.InvalidArgumentError, match=r"column 'u.x' row %d" % (row - 1)):
            sluice.write(pa.table({"u": u.slice(1)}), tmp_path / name)
        assert not (tmp_path / name).exists()
    ok = [_union("sparse", [0, 1, 0], [xs, ys]),
          _union("dense", [0, 1, 0], [xs, ys], offsets=[0, 1, 2])]
    for u in ok:
        sluice.write(pa.table({"u": u}), tmp_path / name)
        assert pa.table(sluice.read(tmp_path / name)).column("u").to_pylist() == [1, "b", 3]
        os.remove(tmp_path / name)
    # Deeper: a required field of a struct member, under a list of unions.
    st = pa.StructArray.from_arrays([pa.array([5, None])],
                                    fields=[pa.field("z", pa.int64(), nullable=False)],
                                    mask=pa.array([False, True]))
    u = _union("dense", [2, 0, 2], [xs, ys, st], offsets=[0, 0, 1])  # [{z: 5}, 1, None]
    lists = pa.ListArray.from_arrays(pa.array([0, 1, 3], pa.int32()), u)
    sluice.write(pa.table({"l": lists}), tmp_path / name)  # the null struct: no value under it
    assert pa.table(sluice.read(tmp_path / name)).column("l").to_pylist() == \
        [[{"z": 5}], [1, None]]
    os.remove(tmp_path / name)
    st = pa.StructArray.from_arrays([pa.array([5, None])],
                                    fields=[pa.field("z", pa.int64(), nullable=False)])
    u = _union("sparse", [1, 2, 2], [pa.array([0, 0, 0]), ys,
                                     pa.StructArray.from_arrays(
                                         [pa.array([7, 5, None])], fields=list(st.type))])
    lists = pa.ListArray.from_arrays(pa.array([0, 1, 3], pa.int32()), u)
    with pytest.raises(sluice.InvalidArgumentError, match=r"column 'l.item.s.z' row 1"):
        sluice.write(pa.table({"l": lists}), tmp_path / name)
    assert not (tmp_path / name).exists()


def test_cli_convert_refuses_a_null(tmp_path):
    """sluice convert of a stream whose "not null" field holds a null (which
    pyarrow, polars and sluice read as it is) refuses to write it to Arrow
    IPC, and leaves nothing."""
    stream = tmp_path / "in.arrows"
    _write_stream_unchecked(stream, pa.Table.from_arrays([pa.array([1, None])],
                                                         schema=REQUIRED))
    assert pa.ipc.open_stream(stream.read_bytes()).read_all().column("a").null_count == 1
    out = tmp_path / "out.arrow"
    exe = os.environ.get("SLUICE_BIN", "sluice")
    r = subprocess.run([exe, "convert", str(stream), str(out)], capture_output=True, text=True)
    assert r.returncode != 0
    assert "column 'a' row 1: a null in a field that is not nullable" in r.stderr
    assert not out.exists()


def _write_stream_unchecked(path, table):
    """An Arrow IPC stream of `table` whose schema says "not null" and whose
    column holds a null: pyarrow writes the nullable table, the schema
    message is swapped for the required one's (same layout otherwise)."""
    nullable = pa.schema([f.with_nullable(True) for f in table.schema])
    loose = pa.BufferOutputStream()
    with pa.ipc.new_stream(loose, nullable) as w:
        w.write_table(table.cast(nullable))
    strict = pa.BufferOutputStream()
    with pa.ipc.new_stream(strict, table.schema):
        pass
    loose_b, strict_b = loose.getvalue().to_pybytes(), strict.getvalue().to_pybytes()
    loose_schema = nullable.serialize().to_pybytes()
    strict_schema = table.schema.serialize().to_pybytes()
    assert loose_b.startswith(loose_schema) and strict_b.startswith(strict_schema)
    path.write_bytes(strict_schema + loose_b[len(loose_schema):])


@pytest.mark.parametrize("fmt", ["avro", "csv", "arrow", "parquet"])
def test_max_rows_per_file_rows_count_the_input(tmp_path, fmt):
    """An error in the third part file names the row as the input counts it
    (10), not as its file does (2)."""
    if fmt == "avro":
        t = pa.table({"u": pa.array(list(range(10)) + [2**64 - 1], pa.uint64())})
        what = r"column 'u' row 10:"
    elif fmt == "csv":
        t = pa.table({"u": pa.array(["x"] * 10 + [None])})
        what = r"column 'u', row 10:"
    else:
        t = pa.Table.from_arrays([pa.array(list(range(10)) + [None])], schema=pa.schema(
            [pa.field("u", pa.int64(), nullable=False)]))
        what = r"column 'u' row 10:"
    with pytest.raises(sluice.Error, match=what):
        sluice.write(t, tmp_path / "mr", format=fmt, max_rows_per_file=4)
    assert not (tmp_path / "mr").exists()


def test_partition_rows_counted_across_its_files(tmp_path):
    """With partition_by too, the row counts the partition's rows (as the
    message says), not its part file's."""
    t = pa.table({"k": [1, 1, 1, 2, 2, 2, 2, 2, 2],
                  "u": pa.array(list(range(8)) + [2**64 - 1], pa.uint64())})
    with pytest.raises(sluice.Error, match=r"partition k=2 \(a row number counts its rows\): "
                                           r"avro: column 'u' row 5:"):
        sluice.write(t, tmp_path / "mp", format="avro", partition_by=["k"], max_rows_per_file=4)


class _Raw(io.RawIOBase):
    def __init__(self, result):
        self.result = result
        self.got = []

    def writable(self):
        return True

    def write(self, b):
        n = self.result(b)
        if isinstance(n, int) and 0 < n <= len(b):
            self.got.append(bytes(b[:n]))
        return n


@pytest.mark.parametrize("result,error", [
    (lambda b: "x", OSError),
    (lambda b: len(b) + 1, OSError),
    (lambda b: -1, OSError),
    (lambda b: 0, OSError),
    (lambda b: 2.0, OSError),
    (lambda b: None, BlockingIOError),
])
def test_file_object_write_results_checked(result, error):
    """What io.BufferedWriter refuses from a raw stream's write() is refused,
    the file object named."""
    if result(b"abc") != 0:  # (io.BufferedWriter retries a 0 forever)
        with pytest.raises(error):
            w = io.BufferedWriter(_Raw(result))
            w.write(b"abc")
            w.flush()
    raw = _Raw(result)
    with pytest.raises(error, match=r"<_Raw>: write\(\) returned"):
        sluice.write(pa.table({"a": [1]}), raw, format="arrow")


def test_file_object_partial_and_plain_writes():
    """A raw stream taking part of each write gets the rest next; a plain
    object (not a raw stream) whose write() returns None took it all."""
    raw = _Raw(lambda b: min(len(b), 7))
    sluice.write(pa.table({"a": [1, 2]}), raw, format="arrow")
    assert pa.ipc.open_file(pa.BufferReader(b"".join(raw.got))).read_all().column(
        "a").to_pylist() == [1, 2]

    class Plain:
        def __init__(self):
            self.parts = []

        def write(self, b):
            self.parts.append(bytes(b))

    p = Plain()
    sluice.write(pa.table({"a": [1, 2]}), p, format="arrow")
    assert pa.ipc.open_file(pa.BufferReader(b"".join(p.parts))).read_all().num_rows == 2


def test_float_partition_key_message(tmp_path):
    """The message says what is true: booleans read back as strings."""
    with pytest.raises(sluice.InvalidArgumentError) as e:
        sluice.write(pa.table({"k": [1.5], "u": [1]}), tmp_path / "fl", format="parquet",
                     partition_by=["k"])
    assert "read back as the same values" not in str(e.value)
    assert "Booleans read back as the strings 'true' and 'false'" in str(e.value)
    sluice.write(pa.table({"k": [True, False], "u": [1, 2]}), tmp_path / "b", format="parquet",
                 partition_by=["k"])
    import pyarrow.dataset as pads
    assert pa.table(sluice.read(tmp_path / "b")).schema.field("k").type == pa.string()
    assert pads.dataset(tmp_path / "b", partitioning="hive").schema.field("k").type == \
        pa.string()
