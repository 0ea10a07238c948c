"""Schema, Batch, Column and Table: sluice's decoded data, shared with pyarrow,
polars, DuckDB and pandas without copies through the Arrow PyCapsule protocol.
"""
import errno as _errno
import operator as _operator
import threading as _threading
import uuid as _uuid

from . import _sluice
from ._arrow import (DataType, Node, field_from_schema, naming_column, node_to_pylist,
                     parse_metadata, type_key)
from ._errors import InvalidArgumentError


# Guards Table._destructed (one to_pandas(self_destruct=True) per table).
_DESTRUCT_LOCK = _threading.Lock()


class Schema:
    """The columns of a table: names, types (DataType), nullability, metadata.

    Implements ``__arrow_c_schema__``: ``pyarrow.schema(s)`` takes it.
    """

    __slots__ = ("_schema", "_fields", "_metadata")

    def __init__(self, raw):
        self._schema = raw  # _sluice._Schema (a struct type)
        self._fields = None
        self._metadata = None

    @property
    def fields(self):
        if self._fields is None:
            n = self._schema._node(())["n_children"]
            self._fields = [field_from_schema(self._schema, (i,)) for i in range(n)]
            for i, f in enumerate(self._fields):
                f._column = (self._schema, i)
        return self._fields

    @property
    def names(self):
        return [f.name for f in self.fields]

    @property
    def types(self):
        return [f.type for f in self.fields]

    @property
    def metadata(self):
        """The schema's custom metadata as a dict."""
        if self._metadata is None:
            self._metadata = parse_metadata(self._schema._node(())["metadata"])
        return self._metadata

    def field(self, name_or_index):
        """The Field of a column by name, or by position (as pyarrow's)."""
        return self.fields[_index(self, name_or_index)]

    def index(self, name):
        """The position of the column named `name`. A name that several
        columns have (a CSV header "a,a,b", columns=["a", "a"]) is a
        KeyError, as pyarrow's Table.column raises: choose by position."""
        at = [i for i, f in enumerate(self.fields) if f.name == name]
        if len(at) == 1:
            return at[0]
        if at:
            raise KeyError('column %r exists %d times (at positions %s): choose one by '
                           'position' % (name, len(at), ", ".join(map(str, at))))
        raise KeyError("no column %r; columns are: %s" % (name, ", ".join(self.names)))

    def __len__(self):
        return len(self.fields)

    def __iter__(self):
        return iter(self.fields)

    def __eq__(self, other):
        return isinstance(other, Schema) and self.fields == other.fields

    def __hash__(self):
        return hash(tuple(self.fields))

    def __arrow_c_schema__(self):
        return self._schema.__arrow_c_schema__()

    def __reduce__(self):
        return (_unpickle_schema, (_ipc_bytes(self, []),))

    def __copy__(self):
        return self

    def __repr__(self):
        lines = ["sluice.Schema"] + ["  " + str(f) for f in self.fields]
        return "\n".join(lines)


class Batch:
    """One decoded record batch, tagged with where it came from: ``split``
    (the split that produced it, in plan order) and ``index`` (its position
    within that split). Implements ``__arrow_c_array__``: ``pyarrow.record_batch(b)``
    takes it without copying."""

    __slots__ = ("_batch", "_schema")

    def __init__(self, raw, schema=None):
        self._batch = raw  # _sluice._Batch
        self._schema = schema if schema is not None else Schema(raw.schema)

    @property
    def num_rows(self):
        return self._batch.num_rows

    @property
    def num_columns(self):
        return self._batch.num_columns

    @property
    def schema(self):
        return self._schema

    @property
    def split(self):
        return self._batch.split

    @property
    def index(self):
        return self._batch.index

    @property
    def tag(self):
        """(split, index): sorting by it restores plan order."""
        return (self._batch.split, self._batch.index)

    @property
    def metadata(self):
        """Custom metadata the source attached to the batch (e.g. an Arrow IPC
        message's), as a dict."""
        return parse_metadata(self._batch.metadata)

    @property
    def column_names(self):
        return self._schema.names

    @property
    def shape(self):
        return (self.num_rows, self.num_columns)

    def __len__(self):
        return self._batch.num_rows

    def column(self, name_or_index):
        """The column named `name_or_index`, or at that position (an int;
        negative counts from the end), as a Column of one chunk sharing the
        batch's memory. A name several columns have is a KeyError (choose
        by position)."""
        return Column(self._schema, [self], _index(self._schema, name_or_index))

    def __getitem__(self, name_or_index):
        return self.column(name_or_index)

    def equals(self, other, check_metadata=False):
        """Whether `other` (a Batch) has the same columns (names, types,
        nullability; and metadata, and the names of list elements and map
        entries, with check_metadata) and values, as
        pyarrow's RecordBatch.equals. NaN equals nothing. Costs a
        conversion of the values to Python objects."""
        if not isinstance(other, Batch):
            raise TypeError("Batch.equals takes a sluice.Batch, not %s" % type(other).__name__)
        return (self.num_rows == other.num_rows and
                _same_schema(self._schema, other._schema, check_metadata) and
                _values_equal(self._schema, [self], [other]))

    def __eq__(self, other):
        # As pyarrow's: == compares the values.
        return self.equals(other) if isinstance(other, Batch) else NotImplemented

    __hash__ = None  # type: ignore[assignment]  # (as pyarrow's RecordBatch: equal by value)

    def to_pydict(self):
        """{name: [values]} with Python objects (None for nulls), as
        Table.to_pydict and pyarrow's RecordBatch.to_pydict give them."""
        return Table(self._schema, [self]).to_pydict()

    def to_pylist(self):
        """[{name: value}] per row, as Table.to_pylist."""
        return Table(self._schema, [self]).to_pylist()

    def to_pandas(self):
        """The batch as a pandas DataFrame, converted as Table.to_pandas
        converts a table (numeric columns without nulls are read-only views
        of the batch's memory)."""
        return Table(self._schema, [self]).to_pandas()

    def __arrow_c_schema__(self):
        return self._batch.__arrow_c_schema__()

    def __arrow_c_array__(self, requested_schema=None):
        return self._batch.__arrow_c_array__(requested_schema)

    def __arrow_c_stream__(self, requested_schema=None):
        return _sluice.batches_stream(self._schema._schema, [self._batch])

    def __reduce__(self):
        return (_unpickle_batch, (_ipc_bytes(self._schema, [self]), _tags([self])[0]))

    def __copy__(self):
        return self

    def __repr__(self):
        return "sluice.Batch(split=%d, index=%d, %d rows x %d columns: %s)" % (
            self.split, self.index, self.num_rows, self.num_columns,
            ", ".join(str(f) for f in self._schema.fields))


# Pickling (multiprocessing, dask.distributed, copy.deepcopy): an Arrow IPC
# stream that sluice writes and reads back in place, as pyarrow pickles its
# tables. Each batch keeps its tag and metadata, its Arrow type (dictionaries,
# extension and schema metadata included) and its rows; string and binary
# views come back as large_string / large_binary (the writers' spelling).

def _ipc_bytes(schema, batches):
    """The batches (sluice Batches of `schema`) as Arrow IPC stream bytes."""
    import io

    from . import Error, write
    buf = io.BytesIO()
    try:
        write(Table._made(schema, batches), buf, format="arrows", compression=None)
    except Error as e:  # a type the IPC writer does not take (run-end encoded, list views)
        raise type(e)(e.code, "cannot pickle sluice data (as an Arrow IPC stream): %s"
                      % e.message.replace("<BytesIO>: ", "")) from None
    return buf.getvalue()


def _tags(batches):
    return [(b._batch.split, b._batch.index, b._batch.metadata) for b in batches]


def _from_ipc(data, tags):
    """(Schema, [Batch]) back from _ipc_bytes' bytes, each batch re-tagged."""
    from . import read
    t = read(memoryview(data), format="arrows", _gather=False)
    if len(t._batches) != len(tags):
        raise ValueError("a pickled sluice table of %d batches came back with %d"
                         % (len(tags), len(t._batches)))
    schema = t._schema
    return schema, [Batch(b._batch._with_tag(*tag), schema) for b, tag in zip(t._batches, tags)]


def _unpickle_schema(data):
    return _from_ipc(data, [])[0]


def _unpickle_batch(data, tag):
    return _from_ipc(data, [tag])[1][0]


def _unpickle_column(data, tags, i):
    schema, batches = _from_ipc(data, tags)
    return Column(schema, batches, i)


def _unpickle_table(data, tags):
    return Table._made(*_from_ipc(data, tags))


def _index(schema, name_or_index):
    if isinstance(name_or_index, str):
        return schema.index(name_or_index)
    try:
        i = _operator.index(name_or_index)  # an int, a numpy integer
    except TypeError:
        raise TypeError("a column is chosen by name (str) or position (int), not %s%s" % (
            type(name_or_index).__name__, " (sluice tables have no row slicing: slice "
            "pyarrow.table(t))" if isinstance(name_or_index, slice) else "")) from None
    n = len(schema)
    if not -n <= i < n:
        raise IndexError("column %d out of range (%d columns)" % (i, n))
    return i % n


def _values_equal(schema, mine, theirs):
    """Whether two lists of batches of `schema` hold the same values, column
    by column (as to_pylist gives them: a null equals a null, NaN nothing),
    whatever their batch boundaries."""
    for i in range(len(schema)):
        if Column(schema, mine, i).to_pylist() != Column(schema, theirs, i).to_pylist():
            return False
    return True


def not_a_table_error(e, data, who):
    """For the C library's TypeError `e` on `data` that is not a struct (an
    array, chunked array or Series of one type: "sluice imports record
    batches (struct arrays), not Arrow type 'l'"), one that says what was
    passed, its type as pyarrow spells it, and what to do; else None."""
    text = str(e)
    if not text.startswith(("sluice imports record batches", "sluice writes record batches")):
        return None
    fmt = text[text.index("'") + 1:-1]
    return TypeError("%s takes a table or record batches (struct arrays), not %s (of %s): make "
                     "a table of it first (pyarrow.table({'name': ...}), series.to_frame())"
                     % (who, type(data).__name__, DataType(fmt)))


def _same_schema(a, b, check_metadata):
    if a != b:  # names, types (not a list's element name), nullability
        return False
    # With check_metadata, as pyarrow's: the children's names and metadata too.
    return not check_metadata or (a.metadata == b.metadata and
                                  [f.metadata for f in a.fields] == [f.metadata for f in b.fields]
                                  and [type_key(f.type, True) for f in a.fields] ==
                                  [type_key(f.type, True) for f in b.fields])


class Column:
    """One column of a table: a chunk per batch, shared without copies.

    Implements ``__arrow_c_stream__`` (``pyarrow.chunked_array(c)``)."""

    __slots__ = ("_schema", "_batches", "_i")

    def __init__(self, schema, batches, i):
        self._schema = schema
        self._batches = batches
        self._i = i

    @property
    def name(self):
        return self._schema.fields[self._i].name

    @property
    def type(self):
        return self._schema.fields[self._i].type

    @property
    def num_chunks(self):
        return len(self._batches)

    def __len__(self):
        return sum(b.num_rows for b in self._batches)

    def _nodes(self, transient=False):
        t = self.type
        return [Node(b._batch, (self._i,), t, transient=transient) for b in self._batches]

    @property
    def null_count(self):
        total = 0
        for node in self._nodes(transient=True):
            total += node.count_nulls()
        return total

    def to_pylist(self):
        """The values as Python objects (None for nulls), as pyarrow's
        ChunkedArray.to_pylist gives them: ints, floats, bools, str, bytes,
        datetime/date/time/timedelta (pandas Timestamp/Timedelta for
        nanoseconds), Decimal, uuid.UUID (arrow.uuid), dicts for structs,
        lists of (key, value) tuples for maps. A value Python cannot hold
        (a date after year 9999) is an OverflowError naming the column."""
        out = []
        with naming_column(self.name):
            for node in self._nodes(transient=True):
                out.extend(node_to_pylist(node))
        return out

    def to_pandas(self):
        """The column as a pandas Series (see Table.to_pandas)."""
        from ._pandas import column_to_pandas
        return column_to_pandas(self._nodes(), self.type, self.name)

    def to_numpy(self):
        """The column as a numpy array (a view over the Arrow buffer when the
        column is one chunk of a fixed-width type without nulls). Nulls are
        as pyarrow's to_numpy gives them: integers with nulls become float64
        with NaN, floats keep their width with NaN, booleans with nulls and
        strings (dictionary-encoded too) an object array with None. Timestamps with a zone are datetime64 of their
        unit holding the UTC instants, dates datetime64[D] (date32) or
        datetime64[ms] (date64), nulls NaT, as pyarrow gives them."""
        import numpy as np
        kind = self.type.kind
        if kind in ("date32", "date64"):
            # From the Arrow ints: no datetime.date objects, any year.
            width, unit = (4, "D") if kind == "date32" else (8, "ms")
            parts = []
            for node in self._nodes(transient=True):
                o, n = node.offset, node.length
                raw = node.buffer(1, (o + n) * width) if n else b""
                values = np.frombuffer(raw, dtype="<i%d" % width)[o:o + n].astype("i8")
                valid = node.valid_list()
                if valid is not None:
                    values[~np.array(valid, dtype=bool)] = np.iinfo("i8").min  # NaT
                parts.append(values)
            return (np.concatenate(parts) if parts else np.empty(0, "i8")).view("M8[%s]" % unit)
        if self.type.extension == "arrow.uuid":  # its bytes, as pyarrow's (to_pandas: UUIDs)
            return np.array([None if v is None else v.bytes for v in self.to_pylist()],
                            dtype=object)
        series = self.to_pandas()
        dtype = series.dtype
        if kind == "halffloat":  # (with nulls pandas holds it as float32)
            return series.to_numpy(dtype=np.float16)
        if isinstance(dtype, np.dtype):
            return series.to_numpy()
        if kind == "timestamp":  # with a zone: the UTC instants, as pyarrow
            return series.dt.tz_convert("UTC").dt.tz_localize(None).to_numpy()
        kind = getattr(dtype, "kind", "O")
        if kind == "f":  # Float32, Float64: a column with nulls keeps its width
            return series.to_numpy(dtype=dtype.numpy_dtype, na_value=np.nan)
        if kind in "iu":  # Int64 ...: a column with nulls
            return series.to_numpy(dtype=np.float64, na_value=np.nan)
        text = ("string", "large_string", "string_view")
        if kind == "b" or self.type.kind in text or (
                self.type.dictionary is not None and self.type.dictionary.kind in text):
            return series.to_numpy(dtype=object, na_value=None)
        return series.to_numpy()

    def __array__(self, dtype=None, copy=None):
        """np.asarray(column), as pyarrow's ChunkedArray takes it: to_numpy()."""
        if copy is False:
            raise ValueError("sluice.Column: a numpy array without a copy is not always "
                             "possible: use to_numpy()")
        values = self.to_numpy()
        return values if dtype is None else values.astype(dtype, copy=False)

    def equals(self, other):
        """Whether `other` (a Column) has the same type (a list's element
        name aside) and values, whatever the chunks, as pyarrow's
        ChunkedArray.equals. NaN equals nothing."""
        if not isinstance(other, Column):
            raise TypeError("Column.equals takes a sluice.Column, not %s" % type(other).__name__)
        return (self.type == other.type and len(self) == len(other) and
                self.to_pylist() == other.to_pylist())

    def __eq__(self, other):
        return self.equals(other) if isinstance(other, Column) else NotImplemented

    __hash__ = None  # type: ignore[assignment]  # (as pyarrow's ChunkedArray)

    def __arrow_c_schema__(self):
        return self._schema._schema._child_capsule(self._i)

    def __arrow_c_stream__(self, requested_schema=None):
        return _sluice.batches_stream(self._schema._schema, [b._batch for b in self._batches],
                                      self._i)

    def __reduce__(self):
        # (the batches' other columns go too: sluice has no projection of a batch)
        return (_unpickle_column, (_ipc_bytes(self._schema, self._batches), _tags(self._batches),
                                   self._i))

    def __copy__(self):
        return Column(self._schema, list(self._batches), self._i)

    def __repr__(self):
        head = _head(self, 10)
        more = ", ..." if len(self) > 10 else ""
        return "sluice.Column %r: %s, %d rows\n[%s%s]" % (
            self.name, self.type, len(self), ", ".join(repr(v) for v in head), more)


def _head(column, n):
    """The first n values for repr: a value Python cannot hold (a timestamp
    past year 9999) shows as pyarrow shows it, as repr must not raise."""
    out = []
    for node in column._nodes(transient=True):
        out.extend(node_to_pylist(node, preview=True))
        if len(out) >= n:
            break
    return out[:n]


class Table:
    """Decoded batches with one schema, in plan order.

    Implements ``__arrow_c_stream__``, ``__arrow_c_schema__`` and
    ``__arrow_c_array__``: ``pyarrow.table(t)``, ``pl.DataFrame(t)`` and
    DuckDB's ``duckdb.sql("select * from t")`` take it without copying;
    ``pyarrow.record_batch(t)`` too when it is one batch (``__arrow_c_array__``
    exists only then).

    Pickles (and deep-copies) as an Arrow IPC stream, as pyarrow's Table
    does; see the README for what changes on the way.
    """

    __slots__ = ("_schema", "_batches", "_sole", "_destructed")

    def __init__(self, schema, batches):
        """A table of `batches` (sluice Batches), which must all have
        `schema`'s column names and types (as pyarrow's from_batches checks:
        a batch of other types was read as if it had them)."""
        self._schema = schema
        self._batches = list(batches)
        for i, batch in enumerate(self._batches):
            theirs = batch.schema
            if theirs is schema or (theirs.names == schema.names and theirs.types == schema.types):
                continue
            raise InvalidArgumentError(
                _errno.EINVAL, "Table: batch %d has the columns %s, the schema %s" % (
                    i, ", ".join("%s: %s" % (f.name, f.type) for f in theirs.fields),
                    ", ".join("%s: %s" % (f.name, f.type) for f in schema.fields)))
        # Whether no Batch of this table is held elsewhere: only then may
        # to_pandas(self_destruct=True) hand out writable views of their
        # memory (a holder would see the frame's edits). Tables sluice makes
        # are (_made); one made of someone's batches is not, nor one whose
        # batches or columns were handed out.
        self._sole = False
        self._destructed = False  # to_pandas(self_destruct=True) took the batches

    @classmethod
    def _made(cls, schema, batches):
        """A table of batches nothing else holds (sluice's own)."""
        table = cls.__new__(cls)  # (sluice's own batches: no check)
        table._schema = schema
        table._batches = list(batches)
        table._sole = True
        table._destructed = False
        return table

    @classmethod
    def from_arrow(cls, data):
        """A Table sharing the batches of any Arrow producer: an object with
        ``__arrow_c_stream__`` (pyarrow, polars, DuckDB) or
        ``__arrow_c_array__`` (a record batch). No copies, no pyarrow needed."""
        return cls._from_arrow(data, "Table.from_arrow")

    @classmethod
    def _from_arrow(cls, data, who):
        try:
            if hasattr(data, "__arrow_c_stream__"):
                raw_schema, raw_batches = _sluice.import_stream(data.__arrow_c_stream__())
            elif hasattr(data, "__arrow_c_array__"):
                batch = _sluice.import_array(*data.__arrow_c_array__())
                raw_schema, raw_batches = batch.schema, [batch]
            else:
                raise TypeError("Table.from_arrow takes an object with __arrow_c_stream__ or "
                                "__arrow_c_array__, not %s" % type(data).__name__)
        except TypeError as e:
            error = not_a_table_error(e, data, who)
            if error is None:
                raise
            raise error from None
        schema = Schema(raw_schema)
        return cls._made(schema, [Batch(b, schema) for b in raw_batches])

    @property
    def schema(self):
        return self._schema

    def _live(self):
        """The batches; a ValueError once to_pandas(self_destruct=True) took
        them (the table would read as empty, and write an empty file)."""
        if self._destructed:
            raise ValueError("this sluice.Table was consumed by to_pandas(self_destruct=True): "
                             "its batches were freed; read the source again")
        return self._batches

    @property
    def batches(self):
        """The batches, in plan order."""
        batches = self._live()
        self._sole = False
        return list(batches)

    @property
    def num_rows(self):
        return sum(b.num_rows for b in self._live())

    @property
    def num_columns(self):
        return len(self._schema)

    @property
    def column_names(self):
        return self._schema.names

    @property
    def shape(self):
        return (self.num_rows, self.num_columns)

    def __len__(self):
        return self.num_rows

    def column(self, name_or_index):
        """The column named `name_or_index`, or at that position (an int;
        negative counts from the end), as a Column sharing the batches."""
        # (its own list: to_pandas(self_destruct=True) empties the table's)
        batches = list(self._live())
        self._sole = False
        return Column(self._schema, batches, _index(self._schema, name_or_index))

    def __getitem__(self, name_or_index):
        return self.column(name_or_index)

    @property
    def columns(self):
        columns = self._columns()
        self._sole = False
        return columns

    def _columns(self):
        """The columns, for reads that copy the values out (to_pylist, repr):
        no batch is handed out, so a later to_pandas(self_destruct=True) may
        still take the memory over."""
        batches = self._live()
        return [Column(self._schema, list(batches), i) for i in range(self.num_columns)]

    def equals(self, other, check_metadata=False):
        """Whether `other` (a Table) has the same columns (names, types,
        nullability; and metadata, and the names of list elements and map
        entries, with check_metadata) and values, whatever
        the batch boundaries, as pyarrow's Table.equals. NaN equals nothing.
        Costs a conversion of the values to Python objects, a column at a
        time."""
        if not isinstance(other, Table):
            raise TypeError("Table.equals takes a sluice.Table, not %s" % type(other).__name__)
        mine, theirs = list(self._live()), list(other._live())
        return (sum(b.num_rows for b in mine) == sum(b.num_rows for b in theirs) and
                _same_schema(self._schema, other._schema, check_metadata) and
                _values_equal(self._schema, mine, theirs))

    def __eq__(self, other):
        # As pyarrow's: == compares the values (it compared identity).
        return self.equals(other) if isinstance(other, Table) else NotImplemented

    __hash__ = None  # type: ignore[assignment]  # (as pyarrow's Table: equal by value)

    def to_pydict(self):
        """{name: [values]} with Python objects (None for nulls)."""
        return {c.name: c.to_pylist() for c in self._columns()}

    def to_pylist(self):
        """[{name: value}] per row."""
        d = self.to_pydict()
        names = list(d)
        if not names:  # one empty row per row, as pyarrow gives them
            return [{} for _ in range(self.num_rows)]
        return [dict(zip(names, row)) for row in zip(*d.values())]

    def to_pandas(self, *, self_destruct=False):
        """A pandas DataFrame, without pyarrow.

        self_destruct=True frees each batch as soon as it is converted and
        consumes the table: peak memory is about the DataFrame's size
        instead of twice the data (as pyarrow's option of the same name).
        The DataFrame then owns the views (read_pandas does this): its
        columns can be edited in place (a table whose batches or columns
        were handed out gives a copy; reading its values, repr or
        to_pylist, does not count). Any later use of the table's rows (a
        second to_pandas, from another thread at the same time too,
        num_rows, columns, to_pylist, pyarrow.table(t), sluice.write)
        raises ValueError; its schema stays. Without it, views of a table that
        lives on are read-only, as pyarrow's zero-copy (split_blocks)
        conversion gives them: df.loc[...] = v fails; copy first.

        Numeric, timestamp and duration columns without nulls are numpy views
        over the decoded buffers when the table is one batch (no copy), else
        one concatenation. Columns with nulls become pandas nullable arrays
        (Int64, Float64, boolean; a NaN in a Float64 one is missing too, as
        pandas 3 takes NaN there and reads it from Arrow); strings pandas'
        string dtype; timestamps keep their zone; dictionaries become
        Categoricals; dates, times, decimals, structs (dicts) and maps
        (lists of tuples) Python objects, and a list cell a numpy array, as
        pyarrow gives them (its values' dtype; ints with nulls anywhere in
        the column float64, bools with nulls object; None for a null list);
        month-day-nano intervals pd.DateOffset, as pyarrow gives them.
        float16 with nulls becomes numpy float32 with NaN for the nulls
        (pandas has no nullable float16; pyarrow gives float16 with NaN,
        the same values). A conversion error (a date after year 9999, an
        unknown time zone) names the column and the value.
        The index pandas recorded in the schema's "pandas" metadata (files
        written by DataFrame.to_parquet) is restored, as pyarrow does, and
        so are the extension dtypes it records for the other columns
        (Int64, boolean, string, Float32, int64[pyarrow] with pyarrow
        installed; see the README); numpy dtypes there change nothing.
        With pyarrow installed, pandas' own Arrow extension types
        (pandas.period, pandas.interval) become Period and Interval dtypes,
        in the index too and without that metadata, as pd.read_parquet
        gives them.
        """
        from ._pandas import table_to_pandas
        if self_destruct:
            # One conversion takes the batches: a second one, at the same
            # time in another thread or after, would get some or none of
            # the rows (as pyarrow says, the table is unusable after).
            with _DESTRUCT_LOCK:
                batches = self._live()
                self._destructed = True
            return table_to_pandas(self._schema, batches, consume=True, writable=self._sole)
        return table_to_pandas(self._schema, self._live())

    def __arrow_c_schema__(self):
        return self._schema.__arrow_c_schema__()

    def __arrow_c_stream__(self, requested_schema=None):
        return _sluice.batches_stream(self._schema._schema, [b._batch for b in self._live()])

    def __reduce__(self):
        batches = self._live()
        return (_unpickle_table, (_ipc_bytes(self._schema, batches), _tags(batches)))

    def __copy__(self):
        # Its own list of the same batches: to_pandas(self_destruct=True) on
        # either empties only that table's list, and writes through neither's
        # memory (the other holds the batches).
        batches = self._live()
        self._sole = False
        return Table(self._schema, batches)

    @property
    def __arrow_c_array__(self):
        """The table as one struct array (``pyarrow.record_batch(t)``), when
        it is one batch (every read whose columns are all fixed-width is):
        its batch, no copy. A table of several batches is a stream only, and
        has no such attribute, so that consumers which prefer an array
        (polars) take the stream rather than a copy or an error."""
        batches = self._live()
        if len(batches) != 1:
            raise AttributeError("a sluice.Table of %d batches is a stream: use "
                                 "__arrow_c_stream__" % len(batches))
        return batches[0].__arrow_c_array__

    def __repr__(self):
        if self._destructed:
            return "\n".join(["sluice.Table: <consumed by to_pandas(self_destruct=True)>"] +
                             ["  " + str(f) for f in self._schema.fields])
        lines = ["sluice.Table: %d rows x %d columns in %d batches" % (
            self.num_rows, self.num_columns, len(self._batches))]
        lines += ["  " + str(f) for f in self._schema.fields]
        if self._batches and self.num_columns:
            preview = [_head(c, 5) for c in self._columns()]
            rows = min(5, self.num_rows)
            lines.append("first rows:")
            for r in range(rows):
                lines.append("  " + " | ".join(_short(col[r]) for col in preview))
            if self.num_rows > rows:
                lines.append("  ...")
        return "\n".join(lines)


def _short(value):
    # a UUID as the CLI spells it (its repr's first 21 characters tell little)
    s = str(value) if isinstance(value, _uuid.UUID) else repr(value)
    return s if len(s) <= 24 else s[:21] + "..."
