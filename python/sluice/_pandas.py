# mypy: disable-error-code="import-untyped,import-not-found"
"""sluice tables to pandas DataFrames (and pandas DataFrames to Arrow batches)
without pyarrow. numpy and pandas are imported here only, when first used.

Numeric, timestamp and duration columns without nulls become numpy arrays
over the decoded Arrow buffers when the table is one batch (no copy; the
array's base keeps the batch alive), and one concatenation (each value written
once) when it has several. Columns with nulls become pandas' nullable arrays
(Int64, Float64, boolean) from values + mask; strings pandas' string dtype;
timestamps keep their zone; dictionaries become Categoricals; a list cell is
a numpy array, as pyarrow's to_pandas gives it. A file pandas
wrote gets back the index and extension dtypes its "pandas" metadata records.
"""
import datetime as _dt
import uuid as _uuid

from ._arrow import Node, naming_column, node_to_pylist, _PRIMITIVES, _zone

_NUMPY_CODES = {"c": "i1", "C": "u1", "s": "i2", "S": "u2", "i": "i4", "I": "u4", "l": "i8",
                "L": "u8", "e": "f2", "f": "f4", "g": "f8"}
# The storage of arrow.uuid; sluice's pandas conversion makes it of UUIDs only
_UUID_FORMAT = "w:16"
_NO_UUID = bytes(16)


def _np():
    import numpy
    return numpy


def _pd():
    import pandas
    return pandas


def _values(node, dtype, width):
    """The node's values as a numpy view over its buffer (no copy)."""
    np = _np()
    o, n = node.offset, node.length
    if n == 0:
        return np.empty(0, dtype=dtype)
    buf = node.buffer(1, (o + n) * width)
    values = np.frombuffer(buf, dtype=dtype, count=n, offset=o * width)
    # Taken over but shared (a view or a pyarrow table has the memory too,
    # or it is not the batch's own): a copy, so that edits stay here.
    if node.writable and not values.flags.writeable:
        values = values.copy()
    return values


def _mask(node):
    """A bool array, True where the value is null, or None without nulls."""
    np = _np()
    if node.type.kind == "null":
        return np.ones(node.length, dtype=bool)
    bits = node.validity()
    if bits is None or node.length == 0:
        return None
    valid = np.unpackbits(np.frombuffer(bits, dtype=np.uint8), bitorder="little")
    mask = ~valid[node.offset:node.offset + node.length].astype(bool)
    return mask if mask.any() else None


def _join(parts, dtype):
    np = _np()
    if len(parts) == 1:
        return parts[0]
    if not parts:
        return np.empty(0, dtype=dtype)
    return np.concatenate(parts)


def _joined_mask(nodes, masks):
    np = _np()
    if all(m is None for m in masks):
        return None
    return _join([m if m is not None else np.zeros(nd.length, dtype=bool)
                  for nd, m in zip(nodes, masks)], bool)


def _numeric(nodes, fmt):
    dtype = _NUMPY_CODES[fmt]
    width = _PRIMITIVES[fmt][2]
    values = _join([_values(nd, dtype, width) for nd in nodes], dtype)
    return _numeric_finish(values, _joined_mask(nodes, [_mask(nd) for nd in nodes]), fmt)


def _numeric_finish(values, mask, fmt):
    pd = _pd()
    if mask is None:
        return values
    if fmt == "e":  # pandas has no nullable float16
        out = values.astype("f4")
        out[mask] = float("nan")
        return out
    if fmt in "fg":
        if _nan_is_na(pd):  # as pandas' own Float64 from Arrow (Float64Dtype.__from_arrow__)
            mask = mask | _np().isnan(values)
        return pd.arrays.FloatingArray(values, mask)
    return pd.arrays.IntegerArray(values, mask)


def _nan_is_na(pd):
    """Whether pandas takes NaN in its nullable float arrays as missing:
    pandas 3 does unless its option future.distinguish_nan_and_na is set;
    pandas 2's Float64 from Arrow kept NaN a value."""
    try:
        return not pd.get_option("future.distinguish_nan_and_na")
    except (KeyError, AttributeError):  # (pandas' OptionError is both)
        return False


def _bool_values(nd):
    np = _np()
    o, n = nd.offset, nd.length
    if n == 0:
        return np.empty(0, dtype=bool)
    bits = np.frombuffer(nd.buffer(1, (o + n + 7) // 8), dtype=np.uint8)
    return np.unpackbits(bits, bitorder="little")[o:o + n].astype(bool)


def _bools(nodes):
    values = _join([_bool_values(nd) for nd in nodes], bool)
    return _bool_finish(values, _joined_mask(nodes, [_mask(nd) for nd in nodes]))


def _bool_finish(values, mask):
    if mask is None:
        return values
    return _pd().arrays.BooleanArray(values, mask)


def _temporal(nodes, t):
    """timestamp / duration: datetime64 or timedelta64 over the int64s."""
    raw = _join([_values(nd, "i8", 8) for nd in nodes], "i8")
    mask = _joined_mask(nodes, [_mask(nd) for nd in nodes])
    if mask is not None:
        raw = raw.copy()
    return _temporal_finish(raw, mask, t)


def _check_whole_microseconds(nodes):
    """time64[ns] becomes datetime.time, which stops at microseconds: as in
    pyarrow's to_pandas, a value with nanoseconds is an error, not cut off."""
    for nd in nodes:
        raw = _values(nd, "i8", 8)
        mask = _mask(nd)
        bad = (raw % 1000) != 0
        if mask is not None:
            bad &= ~mask
        if bad.any():
            raise ValueError("time value %d ns has non-zero nanoseconds, which "
                             "datetime.time cannot hold" % int(raw[bad.argmax()]))


def _temporal_finish(raw, mask, t):
    """raw: int64 values (writable when there is a mask)."""
    np, pd = _np(), _pd()
    if mask is not None:
        raw[mask] = np.iinfo(np.int64).min  # NaT
    unit = t.unit
    values = raw.view(("datetime64[%s]" if t.kind == "timestamp" else "timedelta64[%s]") % unit)
    if t.kind == "timestamp" and t.tz:
        zone = _zone(t.tz)  # refuses what is not a zone, as pyarrow does
        index = pd.DatetimeIndex(values).tz_localize("UTC")
        if t.tz == "UTC" or not isinstance(zone, _dt.timezone):
            try:  # by name: the zone object pandas itself makes for it
                return index.tz_convert(t.tz).array
            except Exception:
                pass
        return index.tz_convert(zone).array
    return values


def _strings(nodes, t, pd_dtype):
    """string / binary columns: an object array of str (or bytes) and None."""
    np = _np()
    large = t.kind.startswith("large")
    text = t.kind.endswith("string")
    out = np.empty(sum(nd.length for nd in nodes), dtype=object)
    at = 0
    for nd in nodes:
        o, n = nd.offset, nd.length
        if n == 0:
            continue
        offs = np.frombuffer(nd.buffer(1, (o + n + 1) * (8 if large else 4)),
                             dtype="i8" if large else "i4")[o:o + n + 1]
        end = int(offs[-1])
        data = bytes(nd.buffer(2, end) or b"") if end > 0 else b""
        starts, ends = offs[:-1].tolist(), offs[1:].tolist()
        if text and data.isascii():
            # One decode for the batch: byte offsets equal character offsets.
            s = data.decode("ascii")
            vals = [s[a:b] for a, b in zip(starts, ends)]
        elif text:
            vals = [data[a:b].decode("utf-8") for a, b in zip(starts, ends)]
        else:
            vals = [data[a:b] for a, b in zip(starts, ends)]
        out[at:at + n] = vals
        mask = _mask(nd)
        if mask is not None:
            out[at:at + n][mask] = None
        at += n
    if text and pd_dtype is not None:
        return _pd().array(out, dtype=pd_dtype)
    return out


def _arrow_for_strings():
    """pyarrow when pandas' own string dtype is stored in it (pandas 3 with
    pyarrow installed: pandas has imported it already), else None. Strings
    then stay Arrow buffers, as pyarrow's to_pandas gives them, instead of
    one Python object per value."""
    pd = _pd()
    try:
        if pd.StringDtype(na_value=float("nan")).storage != "pyarrow":
            return None
    except (TypeError, ImportError):
        return None
    try:
        import pyarrow
    except ImportError:
        return None
    return pyarrow


def _arrow_string_chunk(pa, nd, t, copy):
    """One batch's string column as a pyarrow array over the same buffers
    (copy=False: a view that keeps the batch alive) or over copies of them
    (copy=True: the batch can be freed)."""
    large = t.kind.startswith("large")
    o, n = nd.offset, nd.length
    arrow_type = pa.large_string() if large else pa.string()
    if n == 0:
        return pa.array([], type=arrow_type)
    width = 8 if large else 4
    offsets = nd.buffer(1, (o + n + 1) * width)
    end = memoryview(offsets).cast("q" if large else "i")[o + n]
    data = nd.buffer(2, end) if end > 0 else None
    validity = nd.validity()

    def wrap(view):
        if view is None:
            return None
        return pa.py_buffer(bytes(view)) if copy else pa.py_buffer(view)

    buffers = [wrap(validity), wrap(offsets), wrap(data) if data is not None else pa.py_buffer(b"")]
    nulls = nd.null_count if validity is not None else 0
    return pa.Array.from_buffers(arrow_type, n, buffers, null_count=nulls, offset=o)


def _arrow_strings_finish(pa, chunks, t):
    arrow_type = pa.large_string() if t.kind.startswith("large") else pa.string()
    return pa.chunked_array(chunks, type=arrow_type).to_pandas().array


def _string_dtype():
    """pandas' own string dtype without pyarrow: "str" (pandas 3) backed by
    Python objects, else object."""
    pd = _pd()
    try:
        return pd.StringDtype("python", na_value=float("nan"))
    except TypeError:  # pandas < 2.3: no na_value; keep object like pandas did
        return None


def _categorical(nodes, t):
    return _categorical_finish([_categorical_part(nd, t) for nd in nodes], t)


def _categorical_part(nd, t):
    pd = _pd()
    idx = _values(nd, _NUMPY_CODES[t.format], _PRIMITIVES[t.format][2]).astype("i8")
    mask = _mask(nd)
    if mask is not None:
        idx[mask] = -1
    categories = _column([nd.dictionary_node()], t.dictionary)
    return pd.Categorical.from_codes(idx, categories=pd.Index(categories), ordered=t.ordered)


def _categorical_finish(parts, t):
    pd, np = _pd(), _np()
    if not parts:
        empty = _column([], t.dictionary)
        return pd.Categorical([], categories=pd.Index(empty), ordered=t.ordered)
    if len(parts) == 1:
        return parts[0]
    first = parts[0].categories
    if all(p.categories.equals(first) for p in parts[1:]):
        codes = np.concatenate([p.codes for p in parts])
        return pd.Categorical.from_codes(codes, categories=first, ordered=t.ordered)
    from pandas.api.types import union_categoricals
    # Ordered parts with different categories: pandas refuses to union them;
    # pyarrow unifies the dictionaries (first seen first) and keeps the flag.
    joined = union_categoricals(parts, ignore_order=True)
    return joined.as_ordered() if t.ordered else joined


def _objects(nodes):
    np = _np()
    out = np.empty(sum(nd.length for nd in nodes), dtype=object)
    at = 0
    for nd in nodes:
        vals = _pandas_objects(nd)
        out[at:at + len(vals)] = vals
        at += len(vals)
    return out


# ---- nested values, as pyarrow's to_pandas gives them -----------------------------
#
# A list cell is a numpy array: a slice of the list's values converted once
# for the whole column (every batch), so a null anywhere among them makes
# every cell's ints float64 (pyarrow's ConvertListsLike). The values convert
# as pyarrow's inner conversion does: numbers keep their dtype (NaN for nulls,
# ints with nulls float64, bools with nulls object), timestamps datetime64 of
# their unit (UTC, the zone dropped), durations timedelta64, dictionaries
# their values, anything else an object array (str, bytes, dicts, ...).

_LISTS = ("list", "large_list", "fixed_size_list")


def _narrow(node, start, length):
    """The node over rows [start, start + length) of its window."""
    import copy
    out = copy.copy(node)
    out.offset = node.offset + start
    out.length = length
    if node.null_count != 0:  # (the node's count is not the window's)
        out.null_count = -1
    return out


class _Flat:
    """Nested values (one node's, or several joined) before their numpy
    dtype is chosen. kind "numbers": `values` a numpy array of the Arrow
    type's dtype; "objects": an object array (None under the nulls); "list":
    `values` the int64 offsets (from 0) into `child`, the values' _Flat.
    `mask`: True under a null, or None."""

    __slots__ = ("kind", "values", "mask", "child")

    def __init__(self, kind, values, mask, child=None):
        self.kind, self.values, self.mask, self.child = kind, values, mask, child


def _flat(nd, copy=False):
    """A node's values as a _Flat; copy: none of it a view of the batch."""
    np = _np()
    t = nd.type
    k = t.kind
    if t.dictionary is not None:
        return _flat_decoded(nd)
    if t.format in _NUMPY_CODES or k in ("bool", "timestamp", "duration"):
        if k == "bool":
            values = _bool_values(nd)
        elif t.format in _NUMPY_CODES:
            values = _values(nd, _NUMPY_CODES[t.format], _PRIMITIVES[t.format][2])
        else:
            values = _values(nd, "i8", 8).view(
                ("datetime64[%s]" if k == "timestamp" else "timedelta64[%s]") % t.unit)
        return _Flat("numbers", values.copy() if copy else values, _mask(nd))
    if k in _LISTS:
        o, n = nd.offset, nd.length
        if k == "fixed_size_list":
            offsets = np.arange(n + 1, dtype="i8") * t.width
            start = o * t.width
        elif n == 0:
            offsets, start = np.zeros(1, dtype="i8"), 0
        else:
            large = k == "large_list"
            offsets = np.frombuffer(nd.buffer(1, (o + n + 1) * (8 if large else 4)),
                                    dtype="i8" if large else "i4")[o:o + n + 1].astype("i8")
            start = int(offsets[0])
            offsets -= start
        child = _narrow(nd.child(0), start, int(offsets[-1]))
        return _Flat("list", offsets, _mask(nd), _flat(child, copy))
    return _Flat("objects", _pandas_objects(nd), None)


def _flat_decoded(nd):
    """A dictionary node's values, decoded (as pyarrow's inner conversion;
    taken: not a view of the batch)."""
    np = _np()
    t = nd.type
    mask = _mask(nd)
    codes = _values(nd, _NUMPY_CODES[t.format], _PRIMITIVES[t.format][2]).astype("i8")
    if mask is not None:
        codes[mask] = 0
    values = _flat(nd.dictionary_node(), copy=False)
    if values.kind == "list":  # (a dictionary of lists: its cells, taken)
        values = _Flat("objects", _flat_finish(values), None)
    if len(values.values) == 0:  # every row null (else the codes are out of range)
        return _Flat(values.kind, np.full(len(codes), None, dtype=object)
                     if values.kind == "objects" else np.zeros(len(codes), values.values.dtype),
                     np.ones(len(codes), dtype=bool))
    taken = values.values[codes]
    if values.mask is not None:
        mask = values.mask[codes] if mask is None else mask | values.mask[codes]
    if values.kind == "objects" and mask is not None:
        taken[mask] = None
    return _Flat(values.kind, taken, mask)


def _flat_join(parts):
    """One _Flat of several (a column's batches, in order)."""
    np = _np()
    if len(parts) == 1:
        return parts[0]
    first = parts[0]
    mask = None
    if any(p.mask is not None for p in parts):
        mask = np.concatenate([p.mask if p.mask is not None else
                               np.zeros(len(p.values) - (p.kind == "list"), dtype=bool)
                               for p in parts])
    if first.kind != "list":
        return _Flat(first.kind, np.concatenate([p.values for p in parts]), mask)
    offsets, at = [parts[0].values[:1]], 0
    for p in parts:
        offsets.append(p.values[1:] + at)
        at += int(p.values[-1])
    return _Flat("list", np.concatenate(offsets), mask, _flat_join([p.child for p in parts]))


def _flat_finish(flat):
    """The numpy array pyarrow's to_pandas makes of the values; a list's
    cells are views of its values' array, None for a null list."""
    np = _np()
    values, mask = flat.values, flat.mask
    if flat.kind == "objects":
        return values
    if flat.kind == "list":
        child = _flat_finish(flat.child)
        bounds = values.tolist()
        out = np.fromiter((child[a:b] for a, b in zip(bounds, bounds[1:])), dtype=object,
                          count=len(bounds) - 1)
        if mask is not None:
            out[mask] = None
        return out
    if mask is None:
        return values
    kind = values.dtype.kind
    if kind == "b":
        out = values.astype(object)
        out[mask] = None
    elif kind in "iu":
        out = values.astype("f8")
        out[mask] = float("nan")
    else:  # floats, datetime64, timedelta64 (NaT)
        out = values.copy()
        out[mask] = np.array("NaT", dtype=values.dtype) if kind in "mM" else float("nan")
    return out


def _date_offset(months, days, nanoseconds):
    """A month-day-nano interval as pyarrow's to_pandas makes it."""
    return _pd().DateOffset(months=months, days=days, nanoseconds=nanoseconds)


def _pandas_objects(nd):
    """A node's values as the objects of pyarrow's to_pandas: lists as numpy
    arrays (over every level: in structs and maps too), month-day-nano
    intervals as pd.DateOffset, structs as dicts, maps as lists of (key,
    value) tuples, the rest as to_pylist gives them; None for nulls."""
    np = _np()
    t = nd.type
    k = t.kind
    o, n = nd.offset, nd.length
    out = np.empty(n, dtype=object)
    if n == 0:
        return out
    if t.dictionary is not None:  # (in a struct or map: a column's is a Categorical)
        values = _pandas_objects(nd.dictionary_node())
        mask = _mask(nd)
        if len(values) == 0:
            return out
        codes = _values(nd, _NUMPY_CODES[t.format], _PRIMITIVES[t.format][2]).astype("i8")
        if mask is not None:
            codes[mask] = 0
        out = values[codes]
    elif k in _LISTS:
        return _flat_finish(_flat(nd))
    if k == "struct":
        names = [c.name for c in t.children]
        # A child is read over its own window; the struct's window selects rows.
        fields = [_pandas_objects(_narrow(nd.child(i), o, n)) for i in range(len(names))]
        rows = zip(*fields) if fields else [()] * n
        out = np.fromiter((dict(zip(names, row)) for row in rows), dtype=object, count=n)
    elif k == "map":
        offsets = np.frombuffer(nd.buffer(1, (o + n + 1) * 4), dtype="i4")[o:o + n + 1]
        start, end = int(offsets[0]), int(offsets[-1])
        entries = _narrow(nd.child(0), start, end - start)
        keys = _pandas_objects(_narrow(entries.child(0), entries.offset, end - start))
        items = _pandas_objects(_narrow(entries.child(1), entries.offset, end - start))
        pairs = list(zip(keys, items))
        bounds = (offsets - start).tolist()
        out = np.fromiter((pairs[a:b] for a, b in zip(bounds, bounds[1:])), dtype=object,
                          count=n)
    elif k in ("string", "large_string", "binary", "large_binary"):
        return _strings([nd], t, None)  # (one decode for the batch)
    elif t.format == "tin":
        out[:] = [None if v is None else _date_offset(*v) for v in node_to_pylist(nd)]
        return out
    else:
        out[:] = node_to_pylist(nd)
        return out
    mask = _mask(nd)
    if mask is not None:
        out[mask] = None
    return out


def _column(nodes, t):
    """One column (its nodes, one per batch) as a numpy array or pandas array."""
    np = _np()
    if t.dictionary is not None:
        return _categorical(nodes, t)
    k = t.kind
    if t.format in _NUMPY_CODES:
        return _numeric(nodes, t.format)
    if k == "bool":
        return _bools(nodes)
    if k in ("timestamp", "duration"):
        return _temporal(nodes, t)
    if k == "time64" and t.unit == "ns":
        _check_whole_microseconds(nodes)
    if k in ("string", "large_string"):
        pa = _arrow_for_strings()
        if pa is not None:
            chunks = [_arrow_string_chunk(pa, nd, t, copy=False) for nd in nodes]
            return _arrow_strings_finish(pa, chunks, t)
        return _strings(nodes, t, _string_dtype())
    if k in ("binary", "large_binary"):
        return _strings(nodes, t, None)
    if k == "string_view":
        dtype = _string_dtype()
        objects = _objects(nodes)
        return _pd().array(objects, dtype=dtype) if dtype is not None else objects
    if k == "null":
        return np.full(sum(nd.length for nd in nodes), None, dtype=object)
    if k in _LISTS:  # numpy arrays, over values converted once for the column
        return _flat_finish(_flat_join([_flat(nd) for nd in nodes])) if nodes \
            else np.empty(0, dtype=object)
    # dates and times as datetime.date / datetime.time, decimals as Decimal,
    # structs as dicts, maps as lists of tuples, month-day-nano intervals as
    # pd.DateOffset: what pyarrow's to_pandas gives.
    return _objects(nodes)


class _Assembler:
    """One column of a many-batch table, assembled batch by batch into its
    final array, so that each batch can be released as soon as it is copied.

    Fixed-width columns are written once into an array of the final length
    (np.empty: pages become resident as they are written, while the released
    batches give theirs back); other columns convert each batch on its own and
    are joined at the end."""

    def __init__(self, t, total, views=False, stored=None):
        """total: the final length, or None to grow as batches come (the
        arrays are resized in place: realloc moves pages, not bytes).
        views: the batches outlive the frame (a table's to_pandas), so
        Arrow-backed strings are views of their buffers rather than copies.
        stored: the column's _Stored dtype from the pandas metadata, if any."""
        np = _np()
        self.t = t
        self.total = total
        self.capacity = total if total is not None else 0
        self.mask = None
        self.parts = None
        self.stored = stored if stored is not None and stored.arrow is not None else None
        if self.stored is not None:
            self.kind = "arrow"  # an ArrowDtype (or other Arrow-made) column
            self.parts = []
        elif t.dictionary is None and t.format in _NUMPY_CODES:
            self.kind = "numeric"
            self.out = np.empty(self.capacity, dtype=_NUMPY_CODES[t.format])
        elif t.dictionary is None and t.kind == "bool":
            self.kind = "bool"
            self.out = np.empty(self.capacity, dtype=bool)
        elif t.dictionary is None and t.kind in ("timestamp", "duration"):
            self.kind = "temporal"
            self.out = np.empty(self.capacity, dtype="i8")
        else:
            self.kind = "other"
            self.parts = []
        self.arrow = None
        self.views = views
        if t.dictionary is None and t.kind in ("string", "large_string"):
            self.arrow = _arrow_for_strings()

    def _reserve(self, end):
        if end <= self.capacity:
            return
        # numpy zero-fills what it adds: grow by a quarter to waste little.
        self.capacity = max(end, self.capacity + self.capacity // 4, 1 << 16)
        self.out.resize(self.capacity, refcheck=False)
        if self.mask is not None:
            self.mask.resize(self.capacity, refcheck=False)

    def add(self, nd, at):
        n = nd.length
        if self.kind not in ("other", "arrow"):
            self._reserve(at + n)
        if self.kind == "arrow":
            self.parts.append(_arrow_chunk(self.stored.arrow, nd, copy=not self.views))
            return
        if self.kind == "other":
            t = self.t
            if t.dictionary is not None:
                self.parts.append(_categorical_part(nd, t))
            elif t.kind in ("string", "large_string"):
                if self.arrow is not None:
                    self.parts.append(_arrow_string_chunk(self.arrow, nd, t,
                                                          copy=not self.views))
                else:
                    self.parts.append(_strings([nd], t, None))  # one conversion at the end
            elif t.kind == "string_view":
                self.parts.append(_objects([nd]))
            elif t.kind in _LISTS:  # (converted at the end: a null in any batch counts)
                self.parts.append(_flat(nd, copy=not self.views))
            else:
                self.parts.append(_column([nd], t))
            return
        if self.kind == "numeric":
            fmt = self.t.format
            self.out[at:at + n] = _values(nd, _NUMPY_CODES[fmt], _PRIMITIVES[fmt][2])
        elif self.kind == "bool":
            self.out[at:at + n] = _bool_values(nd)
        else:
            self.out[at:at + n] = _values(nd, "i8", 8)
        mask = _mask(nd)
        if mask is not None:
            if self.mask is None:
                self.mask = _np().zeros(self.capacity, dtype=bool)
            self.mask[at:at + n] = mask

    def finish(self, length):
        t = self.t
        if self.kind == "arrow":
            return _arrow_finish(self.stored, self.parts)
        if self.kind != "other" and self.capacity != length:
            self.out.resize(length, refcheck=False)
            if self.mask is not None:
                self.mask.resize(length, refcheck=False)
        if self.kind == "numeric":
            return _numeric_finish(self.out, self.mask, t.format)
        if self.kind == "bool":
            return _bool_finish(self.out, self.mask)
        if self.kind == "temporal":
            return _temporal_finish(self.out, self.mask, t)
        if t.dictionary is not None:
            return _categorical_finish(self.parts, t)
        if self.arrow is not None:
            return _arrow_strings_finish(self.arrow, self.parts, t)
        np = _np()
        if t.kind in _LISTS and self.parts:
            return _flat_finish(_flat_join(self.parts))
        joined = np.concatenate(self.parts) if self.parts else _column([], t)
        if t.kind in ("string", "large_string", "string_view") and self.parts:
            dtype = _string_dtype()
            return _pd().array(joined, dtype=dtype) if dtype is not None else joined
        return joined


def table_to_pandas(schema, batches, consume=False, writable=False):
    """A pandas DataFrame of the batches' columns.

    One batch: numpy views over its buffers where the column allows (no copy).
    Several: each value written once into its final place, batch by batch;
    with consume=True, `batches` (a list) is emptied as it goes so that each
    batch is freed once copied."""
    pd = _pd()
    fields = schema.fields
    if len(batches) > 1:
        total = sum(b.num_rows for b in batches)
        if consume:
            def drain():
                while batches:
                    yield batches.pop(0)
            return batches_to_pandas(schema, drain(), total)
        return batches_to_pandas(schema, iter(list(batches)), total, views=True)
    data = {}
    rows = sum(b.num_rows for b in batches)
    stored = _stored_dtypes(pd, schema)
    # Taken over (consume): the views may be writable, so that the DataFrame
    # can be edited in place as pandas' own (where the memory is the batch's);
    # not when a batch is held elsewhere too (`writable` false: a Batch or
    # Column taken from the table), which would see the edits.
    writable = consume and writable
    for i, field in enumerate(fields):
        nodes = [Node(b._batch, (i,), field.type, writable) for b in batches]
        with naming_column(field.name):
            if stored[i] is not None and stored[i].arrow is not None:
                chunks = [_arrow_chunk(stored[i].arrow, nd, copy=consume) for nd in nodes]
                data[i] = _arrow_finish(stored[i], chunks)
            else:
                data[i] = _column(nodes, field.type)
    if consume:
        del batches[:]
    frame = _frame(pd, schema, data, rows, stored)
    # Held elsewhere: the frame still owns its columns (a copy), as promised.
    return frame.copy(deep=True) if consume and not writable else frame


def batches_to_pandas(schema, batches, total=None, views=False):
    """A DataFrame from an iterator of Batches in plan order, each dropped as
    soon as it is copied: with a scan as the iterator, decoding and copying
    interleave and the decoded batches' memory is reused by the next ones, so
    the peak is about the DataFrame plus the batches in flight. views: the
    batches outlive the frame (see _Assembler)."""
    pd = _pd()
    fields = schema.fields
    stored = _stored_dtypes(pd, schema)
    columns = [_Assembler(f.type, total, views, stored[i]) for i, f in enumerate(fields)]
    at = 0
    for batch in batches:
        for i, (field, column) in enumerate(zip(fields, columns)):
            with naming_column(field.name):
                column.add(Node(batch._batch, (i,), field.type), at)
        at += batch.num_rows
        del batch
    data = {}
    for i, column in enumerate(columns):
        with naming_column(fields[i].name):
            data[i] = column.finish(at)
        columns[i] = None
    return _frame(pd, schema, data, at, stored)


def column_to_pandas(nodes, t, name):
    """One column (a node per batch) as a pandas Series."""
    pd = _pd()
    with naming_column(name):
        if len(nodes) > 1:
            assembler = _Assembler(t, sum(nd.length for nd in nodes))
            at = 0
            for nd in nodes:
                assembler.add(nd, at)
                at += nd.length
            values = assembler.finish(at)
        else:
            values = _column(nodes, t)
    return pd.Series(values, name=name, copy=False)


def _frame(pd, schema, data, rows, stored):
    fields = schema.fields
    if not fields:
        return pd.DataFrame(index=pd.RangeIndex(rows))
    names = [f.name for f in fields]
    for i, field in enumerate(fields):
        if stored[i] is not None and stored[i].arrow is None:
            with naming_column(field.name):
                data[i] = _restore(pd, stored[i], data[i])
    index, index_at = _pandas_index(pd, schema.metadata.get("pandas"), names, data, rows)
    if index_at:
        keep = [i for i in range(len(names)) if i not in index_at]
        data = {k: data[i] for k, i in enumerate(keep)}
        names = [names[i] for i in keep]
    df = pd.DataFrame(data, index=index, copy=False)
    df.columns = _column_labels(pd, schema.metadata.get("pandas"), names)
    df.attrs = _attributes(schema.metadata.get("pandas"))
    return df


def _attributes(pandas_metadata):
    """The DataFrame.attrs the "pandas" metadata recorded (pandas 2.1+ and
    pyarrow 14+ write them), as pyarrow's to_pandas restores them; {} when
    there are none or the metadata is malformed."""
    if not isinstance(pandas_metadata, str) or '"attributes"' not in pandas_metadata:
        return {}
    import json
    try:
        attributes = json.loads(pandas_metadata).get("attributes")
    except (ValueError, TypeError, AttributeError):
        return {}
    return attributes if isinstance(attributes, dict) else {}


class _Stored:
    """What the "pandas" metadata recorded for one column, that its Arrow
    type does not say: `dtype` the pandas extension dtype it had (Int64,
    boolean, string, Float32, int64[pyarrow], ...; None for a numpy one),
    made through pyarrow when `arrow` (pyarrow, for an ArrowDtype or another
    dtype only pyarrow's arrays make) is not None; `tz` the zone of a
    datetimetz column; `ordered` the ordered flag of a categorical that the
    Arrow type does not keep (an Avro file's: its enums have none, and its
    integers no categories), else None."""

    __slots__ = ("dtype", "arrow", "arrow_type", "tz", "ordered")

    def __init__(self, dtype, arrow, arrow_type, tz, ordered=None):
        self.dtype = dtype
        self.arrow = arrow
        self.arrow_type = arrow_type  # (the column's, as pyarrow's type)
        self.tz = tz
        self.ordered = ordered


# Arrow kinds whose values can be a Categorical's categories (an Avro
# file's "pandas" metadata may call any column categorical).
_CATEGORY_KINDS = frozenset((
    "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "halffloat",
    "float", "double", "bool", "string", "large_string", "binary", "large_binary", "date32",
    "date64", "timestamp", "decimal"))


def _stored_dtypes(pd, schema):
    """A _Stored or None per field, from the "pandas" schema metadata of a
    file pandas wrote (DataFrame.to_parquet / to_feather, pyarrow's
    Table.from_pandas): the column dtypes pyarrow's to_pandas (and so
    pd.read_parquet) restores. Its "numpy_type" names the dtype: an
    extension dtype that pandas can make from Arrow (__from_arrow__) is
    restored, except a string dtype over a dictionary column, which stays a
    Categorical (as pyarrow). A numpy dtype changes nothing (a column with
    nulls keeps its nullable dtype). A dtype that needs pyarrow
    (int64[pyarrow]) is left to the default conversion without it. Index
    columns keep the default conversion, as pyarrow gives them. Malformed
    metadata is ignored. Whatever the metadata says, and in index columns
    too, pandas' own Arrow extension types (pandas.period, pandas.interval)
    become Period and Interval arrays with pyarrow installed, as
    pd.read_parquet gives them."""
    fields = schema.fields
    stored = [_extension_stored(pd, f) for f in fields]
    raw = schema.metadata.get("pandas")
    if not isinstance(raw, str):
        return stored
    import json
    try:
        meta = json.loads(raw)
        columns = list(meta.get("columns") or [])
        index = set(s for s in meta.get("index_columns") or [] if isinstance(s, str))
    except (ValueError, TypeError, AttributeError):
        return stored
    names = [f.name for f in fields]
    made = {}
    avro = "avro.schema" in schema.metadata
    for column in columns:
        if not isinstance(column, dict):
            continue
        name = column.get("field_name", column.get("name"))
        if not isinstance(name, str) or names.count(name) != 1 or name in index:
            continue
        i = names.index(name)
        if stored[i] is not None:  # (an extension type says more)
            continue
        t = fields[i].type
        extra = column.get("metadata")
        if avro and column.get("pandas_type") == "categorical" and isinstance(extra, dict) and \
                isinstance(extra.get("ordered"), bool) and \
                (t.dictionary is None or t.ordered != extra["ordered"]) and \
                (t.dictionary is not None or t.kind in _CATEGORY_KINDS):
            # (Avro keeps a categorical as an enum without order, or as its
            # values: pd.read_parquet / read_feather give the Categorical
            # back from Arrow's dictionary type)
            stored[i] = _Stored(None, None, None, None, extra["ordered"])
            continue
        dtype, arrow = _stored_dtype(pd, column.get("numpy_type"), t, made)
        tz = None
        if column.get("pandas_type") == "datetimetz" and isinstance(extra, dict) and \
                t.kind == "timestamp" and isinstance(extra.get("timezone"), str) and \
                extra["timezone"] != t.tz:
            tz = extra["timezone"]
        if dtype is not None or tz is not None:
            arrow_type = arrow.field(fields[i]).type if arrow is not None else None
            if dtype is _ARROW_DTYPE_OF_COLUMN:
                dtype = pd.ArrowDtype(arrow_type)
            stored[i] = _Stored(dtype, arrow, arrow_type, tz)
    return stored


def _extension_stored(pd, field):
    """A _Stored for a field of pandas' Arrow extension types, pandas.period
    (int64 ordinals, {"freq": "M"}) and pandas.interval (a struct of left
    and right, {"closed": "right"}): the Period or Interval dtype that
    pandas' registered types give pyarrow's to_pandas (made through
    pyarrow, so None without it), or None."""
    name = field.metadata.get("ARROW:extension:name")
    if name not in ("pandas.period", "pandas.interval"):
        return None
    try:
        import pyarrow
    except ImportError:
        return None
    import json
    try:
        meta = json.loads(field.metadata.get("ARROW:extension:metadata") or "")
        t = pyarrow.field(field).type
        storage = t.storage_type if isinstance(t, pyarrow.ExtensionType) else t
        if name == "pandas.period" and storage == pyarrow.int64():
            dtype = pd.PeriodDtype(meta["freq"])
        elif name == "pandas.interval" and pyarrow.types.is_struct(storage) and \
                storage.num_fields == 2 and storage.field(0).type == storage.field(1).type:
            dtype = pd.IntervalDtype(storage.field(0).type.to_pandas_dtype(), meta["closed"])
        else:
            return None
    except Exception:  # (malformed metadata, a freq pandas does not know)
        return None
    return _Stored(dtype, pyarrow, t, None)


_ARROW_DTYPE_OF_COLUMN = object()  # (_stored_dtype: pd.ArrowDtype of the column's Arrow type)


def _stored_dtype(pd, spelled, t, made):
    """(the extension dtype `spelled` names for a column of Arrow type `t`,
    pyarrow if only pyarrow can make it, else None), or (None, None)."""
    if not isinstance(spelled, str) or t.dictionary is not None:
        return None, None  # (a dictionary stays a Categorical, whatever the dtype)
    if spelled not in made:
        try:
            made[spelled] = pd.api.types.pandas_dtype(spelled)
        except Exception:  # (ImportError: int64[pyarrow] without pyarrow)
            made[spelled] = None
    dtype = made[spelled]
    if dtype is None and spelled.endswith("[pyarrow]") and hasattr(pd, "ArrowDtype"):
        # pandas cannot parse the nested types it spells ("list<item:
        # int64>[pyarrow]"): the ArrowDtype of the column's own type.
        try:
            import pyarrow
            return _ARROW_DTYPE_OF_COLUMN, pyarrow
        except ImportError:
            return None, None
    if not isinstance(dtype, pd.api.extensions.ExtensionDtype) or \
            not hasattr(dtype, "__from_arrow__") or isinstance(dtype, pd.CategoricalDtype):
        return None, None
    if isinstance(dtype, pd.StringDtype):
        if t.kind in ("string", "large_string", "string_view"):
            return dtype, None
        return None, None
    if isinstance(dtype, pd.core.dtypes.dtypes.BaseMaskedDtype):
        if t.format in _NUMPY_CODES or t.kind == "bool":
            return dtype, None
        if t.kind != "null":  # (another type now: a boolean partition key read as text)
            return None, None
    try:
        import pyarrow
    except ImportError:
        return None, None
    return dtype, pyarrow


def _restore(pd, stored, values):
    """`values` (a column as _column made it) in the dtype or zone stored."""
    np = _np()
    if stored.ordered is not None:
        if isinstance(values, pd.Categorical):  # (an enum: its symbols in the categories' order)
            return values.set_ordered(stored.ordered)
        # The values as categories, sorted, as pandas makes a Categorical of
        # them (those no row holds are not in an Avro file); a missing value
        # is code -1. Unordered: the categories' order is not in the file,
        # and sorted ones would make min, max and < answer by another order.
        codes, uniques = pd.factorize(values, sort=True)
        numpy_dtype = getattr(uniques.dtype, "numpy_dtype", None)
        if numpy_dtype is not None:  # (Int64's: the categories an int64 Index)
            uniques = uniques.to_numpy(dtype=numpy_dtype)
        return pd.Categorical.from_codes(codes, categories=pd.Index(uniques), ordered=False)
    if stored.tz is not None:  # (as pyarrow: the values are UTC instants)
        index = pd.DatetimeIndex(values)
        if index.tz is None:
            index = index.tz_localize("UTC")
        values = index.tz_convert(stored.tz).array
    dtype = stored.dtype
    if dtype is None or values.dtype == dtype:
        return values
    if isinstance(values, np.ndarray) and values.dtype == getattr(dtype, "numpy_dtype", None):
        # Int64 / Float64 / boolean without nulls: over the same values (no copy)
        mask = np.zeros(len(values), dtype=bool)
        if values.dtype.kind == "f" and _nan_is_na(pd):
            mask = np.isnan(values)
        return dtype.construct_array_type()(values, mask)
    if isinstance(values, pd.api.extensions.ExtensionArray):
        return values.astype(dtype, copy=False)
    return pd.array(values, dtype=dtype)


def _arrow_chunk(pa, nd, copy):
    """One batch's column (top-level node `nd`) as a pyarrow array over its
    buffers (the batch kept alive) or, copy=True, over copies of them (the
    batch can be freed)."""
    array = pa.record_batch(nd.batch).column(nd.path[0])
    # (concatenating always writes new buffers)
    return pa.concat_arrays([array, array.slice(0, 0)]) if copy else array


def _arrow_finish(stored, chunks):
    return stored.dtype.__from_arrow__(stored.arrow.chunked_array(chunks, type=stored.arrow_type))


_LABEL_TYPES = {"int64": int, "int32": int, "int16": int, "int8": int, "uint64": int,
                "uint32": int, "uint16": int, "uint8": int, "float64": float, "float32": float,
                "bool": lambda v: v == "True"}


def _label_level(pd, level, values):
    """One level of column labels, `values` as the field names spell them,
    in the type its "column_indexes" entry `level` records: numbers as
    numbers, timestamps (zoned or not, in their unit) as a DatetimeIndex, as
    pyarrow's to_pandas restores them; other labels as they are."""
    kind = _LABEL_TYPES.get(level.get("pandas_type"))
    if kind is not None:  # (in the dtype recorded: int8 labels stay int8, as pyarrow keeps them)
        dtype = level.get("numpy_type")
        return pd.Index([kind(v) for v in values], name=level.get("name"),
                        dtype=dtype if dtype == level.get("pandas_type") else None)
    pandas_type, numpy_type = level.get("pandas_type"), level.get("numpy_type")
    if isinstance(pandas_type, str) and pandas_type.startswith("datetime64["):
        return pd.Index(values, name=level.get("name")).astype(pandas_type)
    if pandas_type == "datetimetz" and isinstance(numpy_type, str) and \
            numpy_type.startswith("datetime64["):
        tz = (level.get("metadata") or {}).get("timezone")
        if isinstance(tz, str):
            unit = numpy_type[len("datetime64["):-1]
            stamps = pd.to_datetime(values, utc=True).tz_convert(tz).as_unit(unit)
            return pd.Index(stamps, name=level.get("name"))
    return pd.Index(values, name=level.get("name"))


def _column_labels(pd, pandas_metadata, names):
    """The column labels pandas recorded, as pyarrow's to_pandas gives them
    back: each field's recorded "name" (a label the format had to rename,
    "a b" written to Avro as a_b), then by "column_indexes" numbers as
    numbers (DataFrame({0: ...})) and timestamps as timestamps, a
    MultiIndex from its stringified tuples, the columns' own name; else the
    names as they are."""
    if not isinstance(pandas_metadata, str):
        return names
    import ast
    import json
    try:
        meta = json.loads(pandas_metadata)
        recorded = {c.get("field_name", _name_to_strings(c.get("name"))): c.get("name")
                    for c in meta.get("columns") or [] if isinstance(c, dict)}
        names = [recorded.get(n, n) for n in names]
        levels = [level if isinstance(level, dict) else {}
                  for level in meta.get("column_indexes") or []]
        if len(levels) > 1:
            tuples = [ast.literal_eval(n) for n in names]
            if not all(isinstance(t, tuple) and len(t) == len(levels) for t in tuples):
                return names
            arrays = [_label_level(pd, level, [t[k] for t in tuples])
                      for k, level in enumerate(levels)]
            return pd.MultiIndex.from_arrays(arrays, names=[level.get("name") for level in levels])
        if len(levels) == 1:
            return _label_level(pd, levels[0], names)
    except (ValueError, TypeError, AttributeError, SyntaxError, OverflowError):
        pass
    return names


def _pandas_index(pd, pandas_metadata, names, data, rows):
    """The index that pandas recorded when it wrote the file (the "pandas"
    schema metadata of DataFrame.to_parquet / to_feather), as pyarrow's
    to_pandas and pd.read_parquet restore it: (index, positions of the
    columns it was made of). Index columns leave the columns, with their
    names; a RangeIndex gets back its start and step (a range level that a
    filter or limit shortened is left out, as pyarrow leaves it out).
    Anything missing (a projection without the index columns) or malformed
    gives (None, ()): the default index."""
    if not isinstance(pandas_metadata, str):
        return None, ()
    import json
    try:
        meta = json.loads(pandas_metadata)
        specs = list(meta.get("index_columns") or [])
        labels = {c.get("field_name"): c.get("name") for c in meta.get("columns") or []
                  if isinstance(c, dict)}
    except (ValueError, TypeError, AttributeError):
        return None, ()
    if specs and all(isinstance(s, str) for s in specs):
        if len(set(names)) != len(names) or not set(names).issuperset(specs):
            return None, ()
        at = [names.index(s) for s in specs]
        arrays = [data[i] for i in at]
        index_names = [labels.get(s, s) for s in specs]
        if len(at) == 1:
            return pd.Index(arrays[0], name=index_names[0], copy=False), at
        return pd.MultiIndex.from_arrays(arrays, names=index_names), at
    ranges = {}
    for k, spec in enumerate(specs):
        if isinstance(spec, dict) and spec.get("kind") == "range":
            try:
                level = pd.RangeIndex(spec.get("start", 0), spec["stop"], spec.get("step", 1),
                                      name=spec.get("name"))
            except (KeyError, TypeError, ValueError):
                return None, ()
            # A range of another length (rows a filter or a limit left out)
            # is left out, as pyarrow leaves it out.
            if len(level) == rows:
                ranges[k] = level
        elif not isinstance(spec, str):
            return None, ()
    levels = [k for k, spec in enumerate(specs) if k in ranges or isinstance(spec, str)]
    if not levels:
        return None, ()
    if len(specs) == 1:
        return ranges[0], ()
    # Levels of both kinds (df.set_index(col, append=True) over a RangeIndex)
    columns = [s for s in specs if isinstance(s, str)]
    if len(set(names)) != len(names) or not set(names).issuperset(columns):
        return None, ()
    at = [names.index(s) for s in columns]
    arrays = [ranges[k] if k in ranges else data[names.index(specs[k])] for k in levels]
    index_names = [ranges[k].name if k in ranges else labels.get(specs[k], specs[k])
                   for k in levels]
    if len(levels) == 1:
        return pd.Index(arrays[0], name=index_names[0], copy=False), at
    return pd.MultiIndex.from_arrays(arrays, names=index_names), at


# ---- pandas -> Arrow buffers (write without pyarrow) -----------------------------

_UNIT_CODES = {"s": "s", "ms": "m", "us": "u", "ns": "n"}

def _bitmap(np, valid):
    return np.packbits(valid.astype(bool), bitorder="little").tobytes()


def dataframe_to_batch(df, index, make_batch):
    """A pandas DataFrame as one _Batch (buffers copied), for sluice.write
    without pyarrow, laid out and described as pyarrow's
    Table.from_pandas(df, preserve_index=index) does: the index levels as
    columns after the others (None: a RangeIndex only in the metadata), a
    categorical as a dictionary, and the "pandas" schema metadata (index,
    column labels, dtypes) that pyarrow's to_pandas, pd.read_parquet and
    sluice read back. Numeric, bool, datetime (with zone), timedelta,
    string, bytes, uuid.UUID (arrow.uuid), categorical and pandas nullable
    columns; anything else raises TypeError."""
    np, pd = _np(), _pd()
    if df.columns.duplicated().any():  # (pyarrow's from_pandas refuses them too)
        raise ValueError("Duplicate column names found: %r" % list(df.columns))
    names = [_name_to_strings(c) for c in df.columns]
    field_names = [str(n) for n in names]
    series = [df.iloc[:, j] for j in range(df.shape[1])]
    levels = [] if index is False else \
        [df.index.get_level_values(i) for i in range(df.index.nlevels)]
    descriptors, index_names, index_levels = [], [], []
    for i, level in enumerate(levels):
        name = _index_level_name(level, i, names + index_names)
        if index is None and isinstance(level, pd.RangeIndex):
            descriptors.append({"kind": "range", "name": _level_name(level.name),
                                "start": level.start, "stop": level.stop, "step": level.step})
            continue
        descriptors.append(name)
        index_names.append(name)
        index_levels.append(level)
        series.append(pd.Series(level, name=level.name, copy=False))
    fields, columns, formats = [], [], []
    for name, s in zip(field_names + index_names, series):
        field, column = _column_buffers(np, pd, s)
        fields.append((name,) + field[:1] + (True,) + field[1:])
        columns.append(column)
        formats.append(field)
    metadata = _pandas_metadata(pd, df, index, names, field_names, series[:len(names)],
                                index_levels, descriptors, formats)
    return make_batch(fields, len(df), columns, {"pandas": metadata})


def _name_to_strings(name):
    """A column label as pyarrow's from_pandas names its field (and records
    it): str as it is, a tuple (a MultiIndex label) as the str of the tuple of
    its items' strings, None and NaN as they are, else str()."""
    if isinstance(name, str):
        return name
    if isinstance(name, bytes):
        return name.decode("utf8")
    if isinstance(name, tuple):
        return str(tuple(map(_name_to_strings, name)))
    if name is None or (isinstance(name, float) and name != name):
        return name
    return str(name)


def _index_level_name(level, i, taken):
    """An index level's column name, as pyarrow's from_pandas gives it: its
    name, unless it has none or a column has it: "__index_level_<i>__"."""
    if level.name is not None and level.name not in taken:
        return _name_to_strings(level.name)
    j = i
    while "__index_level_%d__" % j in taken:
        j += 1
    return "__index_level_%d__" % j


def _level_name(name):
    import json
    try:
        json.dumps(name)
        return name
    except TypeError:
        return str(name)


# The field metadata of an arrow.uuid column, as pyarrow writes it
_UUID_METADATA = {"ARROW:extension:name": "arrow.uuid", "ARROW:extension:metadata": ""}


def _column_buffers(np, pd, s):
    """((format[, values format, ordered[, field metadata]]), column) as
    make_batch takes them; a categorical is a dictionary of its categories
    over its codes, as pyarrow's from_pandas writes it."""
    if isinstance(s.dtype, pd.CategoricalDtype):
        codes = np.asarray(s.array.codes)
        mask = codes < 0
        fmt, data = _numpy_values(np, np.where(mask, 0, codes).astype(codes.dtype))
        nulls = int(mask.sum())
        categories = pd.Series(s.dtype.categories, name=s.name, copy=False)
        values_fmt, values_nulls, values = _series_buffers(np, pd, categories)
        if values_fmt == _UUID_FORMAT:  # (a dictionary of arrow.uuid: pyarrow's to make)
            raise TypeError("sluice.write: cannot convert column %r (categories of UUID) "
                            "without pyarrow" % (s.name,))
        return ((fmt, values_fmt, bool(s.dtype.ordered)),
                (nulls, [_bitmap(np, ~mask) if nulls else None, data], len(categories),
                 (values_nulls, values)))
    fmt, nulls, bufs = _series_buffers(np, pd, s)
    if fmt == _UUID_FORMAT:  # UUID objects: the arrow.uuid extension type, as pyarrow makes
        return (fmt, None, False, _UUID_METADATA), (nulls, bufs)
    return (fmt,), (nulls, bufs)


# Arrow formats as pyarrow's pandas metadata names their "pandas_type"
_LOGICAL_TYPES = {"n": "empty", "b": "bool", "c": "int8", "s": "int16", "i": "int32",
                  "l": "int64", "C": "uint8", "S": "uint16", "I": "uint32", "L": "uint64",
                  "e": "float16", "f": "float32", "g": "float64", "tdD": "date", "tdm": "date",
                  "z": "bytes", "u": "unicode"}


def _logical_type(field):
    fmt = field[0]
    if len(field) > 3:  # an extension type (arrow.uuid)
        return "object"
    if len(field) > 1:
        return "categorical"
    if fmt in _LOGICAL_TYPES:
        return _LOGICAL_TYPES[fmt]
    if fmt.startswith("tt"):
        return "time"
    if fmt.startswith("w:"):
        return "bytes"
    if fmt.startswith("ts"):
        return "datetimetz" if fmt.split(":", 1)[1] else "datetime"
    return "object"  # (large strings, durations, as pyarrow)


def _dtype_info(column):
    """(numpy_type, metadata) of a Series or Index, as pyarrow records them."""
    dtype = column.dtype
    if str(dtype) == "category":
        cats = getattr(column, "cat", column)
        return str(cats.codes.dtype), {"num_categories": len(cats.categories),
                                       "ordered": cats.ordered}
    if hasattr(dtype, "tz"):
        return "datetime64[%s]" % dtype.unit, {"timezone": _zone_name(dtype.tz)}
    return str(dtype), None


def _logical_type_of_labels(np, pd, level):
    """The "pandas_type" of the column labels (an Index), as pyarrow infers it."""
    numpy_types = {np.bool_: "bool", np.int8: "int8", np.int16: "int16", np.int32: "int32",
                   np.int64: "int64", np.uint8: "uint8", np.uint16: "uint16",
                   np.uint32: "uint32", np.uint64: "uint64", np.float32: "float32",
                   np.float64: "float64", np.str_: "string", np.bytes_: "bytes"}
    dtype = level.dtype
    if dtype.type in numpy_types:
        return numpy_types[dtype.type]
    if hasattr(dtype, "tz"):
        return "datetimetz"
    if str(dtype).startswith("datetime64"):
        return str(dtype)
    inferred = pd.api.types.infer_dtype(level, skipna=False)
    return "unicode" if inferred == "string" else inferred


def _pandas_metadata(pd, df, index, names, field_names, series, index_levels, descriptors,
                     formats):
    """The "pandas" schema metadata (JSON) of pyarrow's
    Table.from_pandas(df, preserve_index=index) for these columns, as its
    construct_metadata writes it (the creator is sluice)."""
    import json
    import warnings
    np = _np()

    def column(col, name, field_name, field):
        numpy_type, extra = _dtype_info(col)
        return {"name": name, "field_name": field_name, "pandas_type": _logical_type(field),
                "numpy_type": numpy_type, "metadata": extra}

    columns = [column(s, n, f, fmt) for s, n, f, fmt in
               zip(series, names, field_names, formats)]
    column_indexes = []
    if index is not False:
        odd = [level.name for level in index_levels
               if level.name is not None and not isinstance(level.name, str)]
        columns += [column(level, _name_to_strings(level.name), d, fmt) for level, d, fmt in
                    zip(index_levels, [d for d in descriptors if isinstance(d, str)],
                        formats[len(names):])]
        if odd:
            warnings.warn("The DataFrame has non-str index name `%s` which will be converted "
                          "to string and not roundtrip correctly." % odd, UserWarning,
                          stacklevel=5)
        labels = df.columns
        for level, name in zip(getattr(labels, "levels", [labels]),
                               getattr(labels, "names", [labels.name])):
            numpy_type, extra = _dtype_info(level)
            logical = _logical_type_of_labels(np, pd, level)
            if "mixed" in logical:
                warnings.warn("The DataFrame has column names of mixed type. They will be "
                              "converted to strings and not roundtrip correctly.",
                              UserWarning, stacklevel=5)
            if logical == "unicode":
                extra = {"encoding": "UTF-8"}
            column_indexes.append({"name": name, "field_name": name, "pandas_type": logical,
                                   "numpy_type": numpy_type, "metadata": extra})
    else:
        descriptors = []
    attributes = df.attrs
    try:
        json.dumps(attributes)
    except Exception as e:
        attributes = {}
        warnings.warn("Could not serialize pd.DataFrame.attrs: %s, defaulting to empty "
                      "attributes." % e, UserWarning, stacklevel=5)
    from ._sluice import version
    return json.dumps({"index_columns": descriptors, "column_indexes": column_indexes,
                       "columns": columns, "attributes": attributes,
                       "creator": {"library": "sluice", "version": version},
                       "pandas_version": pd.__version__})


def _zone_name(tz):
    """A pandas column's tzinfo as Arrow spells a zone: its IANA name
    (zoneinfo, pytz, dateutil), "UTC" or "+HH:MM" (as pyarrow writes them; str()
    gives "UTC+05:30" or a file path, which no reader takes)."""
    for attr in ("key", "zone"):  # zoneinfo, pytz
        name = getattr(tz, attr, None)
        if isinstance(name, str):
            return name
    path = getattr(tz, "_filename", None)  # dateutil's tzfile: a system file or a bundled name
    if isinstance(path, str) and "zoneinfo/" in path:
        return path.split("zoneinfo/", 1)[1]
    if isinstance(path, str) and path and not path.startswith("/"):
        return path
    if type(tz).__name__ == "tzutc":
        return "UTC"
    try:  # a fixed offset (datetime.timezone, pytz's FixedOffset) has one for any time
        offset = tz.utcoffset(None)
    except Exception:
        offset = None
    if isinstance(offset, _dt.timedelta):
        if offset == _dt.timedelta(0):
            return "UTC"
        minutes, seconds = divmod(int(offset.total_seconds()), 60)
        if seconds == 0:
            sign = "-" if minutes < 0 else "+"
            return "%s%02d:%02d" % (sign, abs(minutes) // 60, abs(minutes) % 60)
    raise TypeError("cannot name time zone %r as Arrow does (an IANA name or +HH:MM)" % (tz,))


def _series_buffers(np, pd, s):
    dtype = s.dtype
    n = len(s)
    if isinstance(dtype, pd.SparseDtype):  # (numeric: to_numpy() would densify it)
        raise TypeError("Sparse pandas data (column %s) not supported." % _name_to_strings(s.name))
    if isinstance(dtype, pd.core.dtypes.dtypes.BaseMaskedDtype):
        values = s.array._data
        mask = s.array._mask
        valid = ~mask
        if values.dtype.kind == "b":  # pandas' boolean: a bit-packed Arrow bool
            return "b", int(mask.sum()), [_bitmap(np, valid) if mask.any() else None,
                                          _bitmap(np, values)]
        fmt, data = _numpy_values(np, values)
        return fmt, int(mask.sum()), [_bitmap(np, valid) if mask.any() else None, data]
    if isinstance(dtype, pd.DatetimeTZDtype):
        unit = dtype.unit
        raw = s.array.asi8 if hasattr(s.array, "asi8") else s.values.view("i8")
        mask = s.isna().to_numpy()
        fmt = "ts%s:%s" % (_UNIT_CODES[unit], _zone_name(dtype.tz))
        return _fixed(np, fmt, np.asarray(raw, dtype="i8"), mask)
    if dtype.kind in "iuf":
        values = s.to_numpy()
        fmt, data = _numpy_values(np, values)
        if dtype.kind == "f":
            # NaN is null, as in pyarrow.Table.from_pandas.
            mask = np.isnan(values)
            if mask.any():
                return fmt, int(mask.sum()), [_bitmap(np, ~mask), data]
        return fmt, 0, [None, data]
    if dtype.kind == "b":
        return "b", 0, [None, _bitmap(np, s.to_numpy())]
    if dtype.kind in "mM":
        unit = np.datetime_data(dtype)[0]
        code = _UNIT_CODES[unit]
        fmt = "ts%s:" % code if dtype.kind == "M" else "tD%s" % code
        raw = s.to_numpy().view("i8")
        return _fixed(np, fmt, raw, s.isna().to_numpy())
    if dtype == object or isinstance(dtype, pd.StringDtype):
        values = s.to_numpy(dtype=object)
        mask = np.array([v is None or (isinstance(v, float) and v != v) or v is pd.NA
                         for v in values], dtype=bool)
        present = [v for v, m in zip(values, mask) if not m]
        if not present and dtype == object:  # (as pyarrow: nothing says a type)
            return "n", n, []
        if all(isinstance(v, str) for v in present):
            encoded = [v.encode("utf-8") if not m else b"" for v, m in zip(values, mask)]
            fmt = "u"
        elif all(isinstance(v, (bytes, bytearray)) for v in present):
            encoded = [bytes(v) if not m else b"" for v, m in zip(values, mask)]
            fmt = "z"
        elif all(isinstance(v, _uuid.UUID) for v in present):
            # 16 bytes each, zeros under the nulls: arrow.uuid (_column_buffers)
            data = b"".join(_NO_UUID if m else v.bytes for v, m in zip(values, mask))
            return _fixed(np, _UUID_FORMAT, data, mask)
        else:
            raise object_column_error(s, values, mask, pyarrow=False)
        lengths = np.fromiter((len(b) for b in encoded), dtype="i8", count=n)
        offsets = np.zeros(n + 1, dtype="i8")
        np.cumsum(lengths, out=offsets[1:])
        if offsets[-1] > 2**31 - 1:
            fmt = fmt.upper()
            off = offsets.tobytes()
        else:
            off = offsets.astype("i4").tobytes()
        data = b"".join(encoded)
        nulls = int(mask.sum())
        return fmt, nulls, [_bitmap(np, ~mask) if nulls else None, off, data]
    raise TypeError("sluice.write: cannot convert column %r of dtype %s without pyarrow"
                    % (s.name, dtype))


def object_column_error(s, values=None, mask=None, pyarrow=True):
    """The sluice.Error for an object column (Series `s`) that sluice.write
    cannot convert, naming the column, the row and the type found: values of
    two types (InvalidArgumentError, as pyarrow refuses them), or, without
    pyarrow, of a type other than str, bytes and uuid.UUID (UnsupportedError). None
    when the column holds one type (pyarrow's error is then its own)."""
    import errno
    import pandas as pd
    from ._errors import InvalidArgumentError, UnsupportedError
    if values is None:
        values = s.to_numpy(dtype=object)
        mask = [v is None or (isinstance(v, float) and v != v) or v is pd.NA for v in values]
    first = None
    for row, (v, m) in enumerate(zip(values, mask)):
        if m:
            continue
        if first is None:
            first = (row, type(v))
        elif not isinstance(v, first[1]) and not (isinstance(v, (bytes, bytearray)) and
                                                   issubclass(first[1], (bytes, bytearray))):
            return InvalidArgumentError(
                errno.EINVAL, "sluice.write: column %r, row %d: a value of type %s where row %d has %s: a "
                "column holds values of one type (convert it first, e.g. .astype(str))"
                % (s.name, row, type(v).__name__, first[0], first[1].__name__))
    if first is None or pyarrow:
        return None
    return UnsupportedError(
        errno.ENOTSUP, "sluice.write: column %r, row %d: %s values, which sluice converts only with "
        "pyarrow installed (without it, object columns must hold str, bytes or uuid.UUID)"
        % (s.name, first[0], first[1].__name__))


def _fixed(np, fmt, raw, mask):
    nulls = int(mask.sum())
    if not isinstance(raw, bytes):
        raw = np.ascontiguousarray(raw).tobytes()
    return fmt, nulls, [_bitmap(np, ~mask) if nulls else None, raw]


def _numpy_values(np, values):
    values = np.ascontiguousarray(values)
    code = values.dtype.str[1:]
    for fmt, c in _NUMPY_CODES.items():
        if c == code:
            return fmt, values.astype(values.dtype.newbyteorder("<")).tobytes()
    raise TypeError("sluice.write: numpy dtype %s has no Arrow type" % values.dtype)


def pyarrow_conversion_error(pa, frame, index, exc):
    """The sluice.Error for pyarrow's failure `exc` to convert DataFrame
    `frame` (Table.from_pandas): naming the column that fails (the one
    pyarrow's message names, else the first, index levels after, that fails
    on its own) and, in an object column, the first row whose value makes
    it fail, with pyarrow's reason, or the two types met when they differ.
    UnsupportedError for what pyarrow does not convert at all (complex
    numbers, sparse data), else InvalidArgumentError (OutOfMemoryError for
    a MemoryError)."""
    import errno
    import re
    import numpy as np
    from ._errors import InvalidArgumentError, OutOfMemoryError, UnsupportedError
    reason = str(exc.args[0]) if exc.args else str(exc)
    if isinstance(exc, MemoryError):
        return OutOfMemoryError(errno.ENOMEM, "sluice.write: %s" % (reason,))
    unsupported = isinstance(exc, pa.ArrowNotImplementedError) or (
        isinstance(exc, TypeError) and not isinstance(exc, pa.ArrowException))
    cls, code = (UnsupportedError, errno.ENOTSUP) if unsupported else \
        (InvalidArgumentError, errno.EINVAL)
    said = re.search(r"Conversion failed for column (.*) with type \S+$",
                     str(exc.args[-1]) if exc.args else "", re.S)
    columns = [("column %r" % (frame.columns[i],), frame.columns[i], frame.iloc[:, i])
               for i in range(frame.shape[1])]
    if index is not False:
        for i, name in enumerate(frame.index.names):
            what = "index level %d" % i if name is None else "index %r" % (name,)
            columns.append((what, name, frame.index.get_level_values(i)))

    def fails(values):
        try:
            pa.array(values, from_pandas=True)
        except (pa.ArrowException, OverflowError, TypeError, ValueError):
            return True
        return False

    named = [c for c in columns if said and str(c[1]) == said.group(1)]
    culprit = next((c for c in named + columns if fails(c[2])), None)
    if culprit is None:
        return cls(code, "sluice.write: %s" % (reason,))
    what, dtype = culprit[0], culprit[2].dtype
    values = np.asarray(culprit[2], dtype=object) if dtype == object else None
    if values is None or not fails(values):  # the dtype, not a value, fails
        return cls(code, "sluice.write: %s (%s): %s" % (what, dtype, reason))
    # The first row whose value makes the column's first rows fail.
    lo, hi = 0, len(values)  # values[:lo] converts, values[:hi] fails
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if fails(values[:mid]):
            hi = mid
        else:
            lo = mid
    row, bad = hi - 1, values[hi - 1]
    first = next(((r, v) for r, v in enumerate(values[:row])
                  if not (v is None or (isinstance(v, float) and v != v) or v is _pd().NA)),
                 None)
    if first is not None and not isinstance(bad, type(first[1])):
        return cls(
            code, "sluice.write: %s, row %d: a value of type %s where row %d has "
            "%s: a column holds values of one type (convert it first, e.g. .astype(str)); %s"
            % (what, row, type(bad).__name__, first[0], type(first[1]).__name__, reason))
    return cls(code, "sluice.write: %s, row %d: %s" % (what, row, reason))
