"""NULL buffers of empty arrays: the Arrow C Data Interface lets a producer
give a NULL pointer for any buffer of a zero-length array (a list's child
when every list in the batch is empty) and for a buffer that would hold no
bytes. sluice's readers give them (an Avro array of booleans, all empty),
and so may any producer Table.from_arrow takes. Every conversion to Python
objects (to_pylist, to_pydict, repr, ==, equals) reads them as empty, as
pyarrow does; they raised TypeError: cannot convert 'NoneType' object to
bytes for bool, decimal and fixed_size_binary children."""
import ctypes
import datetime as dt
import decimal
import uuid

import fastavro
import pyarrow as pa
import pytest

import sluice


class _Schema(ctypes.Structure):
    pass


_Schema._fields_ = [("format", ctypes.c_char_p), ("name", ctypes.c_char_p),
                    ("metadata", ctypes.c_char_p), ("flags", ctypes.c_int64),
                    ("n_children", ctypes.c_int64),
                    ("children", ctypes.POINTER(ctypes.POINTER(_Schema))),
                    ("dictionary", ctypes.POINTER(_Schema)),
                    ("release", ctypes.c_void_p), ("private_data", ctypes.c_void_p)]


class _Array(ctypes.Structure):
    pass


_Array._fields_ = [("length", ctypes.c_int64), ("null_count", ctypes.c_int64),
                   ("offset", ctypes.c_int64), ("n_buffers", ctypes.c_int64),
                   ("n_children", ctypes.c_int64),
                   ("buffers", ctypes.POINTER(ctypes.c_void_p)),
                   ("children", ctypes.POINTER(ctypes.POINTER(_Array))),
                   ("dictionary", ctypes.POINTER(_Array)),
                   ("release", ctypes.c_void_p), ("private_data", ctypes.c_void_p)]

_capsule_new = ctypes.pythonapi.PyCapsule_New
_capsule_new.restype = ctypes.py_object
_capsule_new.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
_SCHEMA_NAME = b"arrow_schema"
_ARRAY_NAME = b"arrow_array"
_RELEASE = ctypes.CFUNCTYPE(None, ctypes.c_void_p)


def _null_empty_buffers(schema, array):
    """Sets to NULL every buffer pyarrow exported for a zero-length node,
    and the data buffer of a string or binary node whose values are all
    empty (their size would be 0), through the tree (dictionaries too)."""
    fmt = schema.format
    if array.length == 0:
        for i in range(array.n_buffers):
            array.buffers[i] = None
    elif fmt in (b"u", b"z", b"U", b"Z") and array.buffers[1]:
        width = 8 if fmt in (b"U", b"Z") else 4
        kind = ctypes.c_int64 if width == 8 else ctypes.c_int32
        offsets = ctypes.cast(array.buffers[1], ctypes.POINTER(kind))
        if offsets[array.offset + array.length] == 0:
            array.buffers[2] = None
    if array.null_count == 0 and fmt not in (b"n",) and not fmt.startswith(b"+u") \
            and array.n_buffers > 0:
        array.buffers[0] = None
    for i in range(array.n_children):
        _null_empty_buffers(schema.children[i].contents, array.children[i].contents)
    if array.dictionary:
        _null_empty_buffers(schema.dictionary.contents, array.dictionary.contents)


class NullBuffers:
    """A pyarrow record batch exported with NULL pointers where the C Data
    Interface allows them (pyarrow's own exports allocate them)."""

    def __init__(self, batch):
        self.schema, self.array = _Schema(), _Array()
        batch._export_to_c(ctypes.addressof(self.array), ctypes.addressof(self.schema))
        _null_empty_buffers(self.schema, self.array)

    def __arrow_c_array__(self, requested_schema=None):
        return (_capsule_new(ctypes.addressof(self.schema), _SCHEMA_NAME, None),
                _capsule_new(ctypes.addressof(self.array), _ARRAY_NAME, None))

    def release(self):
        for struct in (self.array, self.schema):  # what the consumer did not move
            if struct.release:
                _RELEASE(struct.release)(ctypes.addressof(struct))


def _samples():
    """(type, two non-null values) for every Arrow type sluice converts to
    Python objects."""
    d = decimal.Decimal
    out = [
        (pa.null(), [None, None]),
        (pa.bool_(), [True, False]),
        (pa.int8(), [-5, 7]), (pa.int16(), [-300, 300]), (pa.int32(), [-2**31, 5]),
        (pa.int64(), [2**40, -1]), (pa.uint8(), [0, 255]), (pa.uint16(), [1, 65535]),
        (pa.uint32(), [2**32 - 1, 0]), (pa.uint64(), [2**64 - 1, 3]),
        (pa.float16(), [1.5, -2.0]), (pa.float32(), [0.25, 3.0]), (pa.float64(), [1e300, -0.5]),
        (pa.string(), ["a", ""]), (pa.large_string(), ["é", "zz"]),
        (pa.string_view(), ["short", "a string longer than twelve"]),
        (pa.binary(), [b"\x00", b""]), (pa.large_binary(), [b"ab", b"c"]),
        (pa.binary_view(), [b"x", b"y" * 20]),
        (pa.binary(3), [b"abc", b"xyz"]),
        (pa.decimal128(7, 2), [d("12345.67"), d("-0.01")]),
        (pa.decimal256(40, 5), [d("1" * 35 + ".12345"), d("0.00001")]),
        (pa.date32(), [dt.date(2024, 2, 29), dt.date(1969, 12, 31)]),
        (pa.date64(), [dt.date(2000, 1, 1), dt.date(1970, 1, 2)]),
        (pa.time32("s"), [dt.time(1, 2, 3), dt.time(0)]),
        (pa.time32("ms"), [dt.time(23, 59, 59, 999000), dt.time(0)]),
        (pa.time64("us"), [dt.time(12, 0, 0, 1), dt.time(0)]),
        (pa.time64("ns"), [dt.time(12, 0, 0, 2), dt.time(0)]),
        (pa.timestamp("us"), [dt.datetime(2020, 1, 1, 1, 2, 3, 4), dt.datetime(1960, 5, 5)]),
        (pa.timestamp("ms", "UTC"), [dt.datetime(2020, 1, 1, tzinfo=dt.timezone.utc)] * 2),
        (pa.timestamp("s", "Europe/Paris"), [dt.datetime(2021, 6, 1, tzinfo=dt.timezone.utc)] * 2),
        (pa.timestamp("ns"), [10**18 + 1, 0]),
        (pa.duration("s"), [dt.timedelta(seconds=5), dt.timedelta(0)]),
        (pa.duration("us"), [dt.timedelta(microseconds=-7), dt.timedelta(days=3)]),
        (pa.duration("ns"), [12345, -1]),
        (pa.month_day_nano_interval(), [pa.MonthDayNano([1, 2, 3]), pa.MonthDayNano([0, 0, 0])]),
        (pa.uuid(), [uuid.UUID(int=1), uuid.UUID(int=2**128 - 1)]),
        (pa.dictionary(pa.int32(), pa.string()), ["red", "blue"]),
        (pa.list_(pa.bool_()), [[True], []]),
        (pa.large_list(pa.decimal128(5, 1)), [[d("1.5")], []]),
        (pa.list_(pa.bool_(), 2), [[True, False], [False, False]]),
        (pa.struct([("b", pa.bool_()), ("f", pa.binary(2))]),
         [{"b": True, "f": b"ab"}, {"b": None, "f": None}]),
        (pa.map_(pa.string(), pa.bool_()), [[("k", True)], []]),
        (pa.dense_union([pa.field("b", pa.bool_()), pa.field("s", pa.string())]), None),
        (pa.sparse_union([pa.field("b", pa.bool_()), pa.field("d", pa.decimal128(4, 1))]), None),
    ]
    if hasattr(pa, "json_"):
        out.append((pa.json_(), ['{"a": 1}', "[]"]))
    return out


def _union(t, n_rows):
    """n_rows values of union type t (first child's true, then the second's)."""
    kids = [pa.array([True] * n_rows), pa.array(["x"] * n_rows) if t.field(1).type == pa.string()
            else pa.array([decimal.Decimal("1.5")] * n_rows, t.field(1).type)]
    types = pa.array([i % 2 for i in range(n_rows)], pa.int8())
    if t.mode == "dense":
        offsets = pa.array([i // 2 for i in range(n_rows)], pa.int32())
        kids = [k.slice(0, (n_rows + 1) // 2) for k in kids]
        return pa.UnionArray.from_dense(types, offsets, kids, [t.field(i).name for i in range(2)])
    return pa.UnionArray.from_sparse(types, kids, [t.field(i).name for i in range(2)])


def _values(t, sample, n, nulls):
    """n values of type t: the samples over and over, every third null."""
    if sample is None:  # a union: no nulls of its own
        return _union(t, n)
    vals = [None if nulls and i % 3 == 1 else sample[i % 2] for i in range(n)]
    return pa.array(vals, t)


def _columns(t, sample):
    """Columns holding t nested in list, large_list, map and struct: every
    list empty (a zero-length child), some lists null, and filled ones,
    with and without nulls among the values."""
    empty = _values(t, sample, 0, False)
    three_empty = pa.array([0, 0, 0, 0], pa.int32())
    cols = {
        "list_empty": pa.ListArray.from_arrays(three_empty, empty),
        "list_empty_nulls": pa.ListArray.from_arrays(pa.array([0, 0, None, 0], pa.int32()),
                                                     empty),
        "large_list_empty": pa.LargeListArray.from_arrays(pa.array([0, 0, 0, 0], pa.int64()),
                                                          empty),
        "map_empty": pa.MapArray.from_arrays(three_empty, pa.array([], pa.string()), empty),
        "list_struct_empty": pa.ListArray.from_arrays(
            three_empty, pa.StructArray.from_arrays([empty], names=["x"])),
    }
    for nulls in (False, True):
        values = _values(t, sample, 4, nulls)
        tag = "_nulls" if nulls else ""
        offsets = pa.array([0, 2, 2, 4], pa.int32())
        cols["list" + tag] = pa.ListArray.from_arrays(offsets, values)
        cols["map" + tag] = pa.MapArray.from_arrays(offsets, pa.array(list("abcd")), values)
        cols["struct" + tag] = pa.StructArray.from_arrays([values.slice(0, 3)], names=["x"])
    return cols


def _types():
    return [pytest.param(t, s, id=str(t)) for t, s in _samples()]


def _check(batch, holder_batch=None):
    """sluice's view of `batch`, exported with NULL empty buffers, against
    pyarrow's to_pylist of the same data."""
    want = batch.to_pylist()
    exported = NullBuffers(batch)
    try:
        t = sluice.Table.from_arrow(exported)
    finally:
        exported.release()
    assert t.to_pylist() == want
    assert t.batches[0].to_pydict() == batch.to_pydict()
    assert t.batches[0].to_pylist() == want
    for name in batch.column_names:
        assert t.column(name).to_pylist() == batch.column(name).to_pylist(), name
    repr(t)
    str(t)
    for name in batch.column_names:
        repr(t.column(name))
    assert t == t and t.equals(t)
    # and equal to the same data with pyarrow's own (allocated) buffers
    assert t.equals(sluice.Table.from_arrow(pa.table(batch)))
    return t


@pytest.mark.parametrize("t,sample", _types())
def test_nested_children_with_null_buffers(t, sample):
    cols = _columns(t, sample)
    _check(pa.record_batch(cols))
    # no rows at all: every node empty, every buffer NULL
    _check(pa.record_batch(cols).slice(0, 0))


@pytest.mark.parametrize("t,sample", _types())
def test_top_level_empty_strings_and_columns(t, sample):
    """A column of the type itself, filled and with nulls; strings all empty
    (their data buffer NULL, as its size is 0)."""
    values = _values(t, sample, 5, False)
    with_nulls = _values(t, sample, 5, sample is not None)
    _check(pa.record_batch({"v": values, "n": with_nulls,
                            "e": pa.array([""] * 5), "eb": pa.array([b""] * 5, pa.binary())}))


def test_pandas_of_empty_children():
    """to_pandas reads the same NULL buffers (as pyarrow's to_pandas gives
    the column: empty arrays)."""
    b = pa.record_batch({"l": pa.ListArray.from_arrays(pa.array([0, 0, 0], pa.int32()),
                                                       pa.array([], pa.bool_())),
                         "d": pa.ListArray.from_arrays(pa.array([0, 0, 0], pa.int32()),
                                                       pa.array([], pa.decimal128(5, 2)))})
    exported = NullBuffers(b)
    try:
        t = sluice.Table.from_arrow(exported)
    finally:
        exported.release()
    df, want = t.to_pandas(), b.to_pandas()
    for name in ("l", "d"):
        assert [list(v) for v in df[name]] == [list(v) for v in want[name]]


_AVRO_ITEMS = [
    "boolean", "int", "long", "float", "double", "string", "bytes",
    {"type": "int", "logicalType": "date"},
    {"type": "long", "logicalType": "timestamp-micros"},
    {"type": "bytes", "logicalType": "decimal", "precision": 12, "scale": 3},
    {"type": "string", "logicalType": "uuid"},
    {"type": "fixed", "name": "F", "size": 4},
    {"type": "enum", "name": "E", "symbols": ["A"]},
    {"type": "int", "logicalType": "time-millis"},
    ["null", "boolean"],
    {"type": "record", "name": "R", "fields": [{"name": "b", "type": "boolean"}]},
    {"type": "fixed", "name": "U", "size": 16, "logicalType": "uuid"},
    {"type": "fixed", "name": "D", "size": 8, "logicalType": "decimal", "precision": 10,
     "scale": 2},
    {"type": "fixed", "name": "Dur", "size": 12, "logicalType": "duration"},
]


@pytest.mark.parametrize("item", _AVRO_ITEMS, ids=[str(i)[:40] for i in _AVRO_ITEMS])
@pytest.mark.parametrize("container", ["array", "map"])
def test_avro_arrays_and_maps_all_empty(tmp_path, item, container):
    """sluice's own Avro reader gives NULL buffers for the child of arrays
    and maps that are all empty (the reviewer's case: an array of booleans).
    Compared with what pyarrow reads from the same batches, and fastavro's
    row count."""
    key = "items" if container == "array" else "values"
    schema = {"type": "record", "name": "r",
              "fields": [{"name": "x", "type": {"type": container, key: item}}]}
    path = tmp_path / "e.avro"
    with open(path, "wb") as f:
        fastavro.writer(f, schema, [{"x": [] if container == "array" else {}}] * 3)
    t = sluice.read(path)
    via_pyarrow = pa.table(t)
    via_pyarrow.validate(full=True)
    with open(path, "rb") as f:
        assert len(list(fastavro.reader(f))) == 3
    assert t.to_pylist() == via_pyarrow.to_pylist() == [{"x": []}] * 3
    assert t.column("x").to_pylist() == [[]] * 3
    assert t.batches[0].to_pydict() == {"x": [[]] * 3}
    assert "first rows:" in repr(t)
    assert t == t and t.equals(sluice.read(path))
    assert [list(v) for v in t.to_pandas()["x"]] == [[]] * 3
