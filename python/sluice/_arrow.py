# mypy: disable-error-code="import-untyped,import-not-found"
"""Arrow types and buffers without pyarrow: the C Data Interface format strings
parsed into readable types, and read access to one column of one batch (its
validity bitmap, values and offsets) through zero-copy buffer views.
"""
import datetime as _dt
import decimal as _decimal
import struct as _struct
import uuid as _uuid

# format string -> (name, struct code for memoryview.cast, byte width)
_PRIMITIVES = {
    "c": ("int8", "b", 1), "C": ("uint8", "B", 1),
    "s": ("int16", "h", 2), "S": ("uint16", "H", 2),
    "i": ("int32", "i", 4), "I": ("uint32", "I", 4),
    "l": ("int64", "q", 8), "L": ("uint64", "Q", 8),
    "e": ("halffloat", "e", 2), "f": ("float", "f", 4), "g": ("double", "d", 8),
}
_SIMPLE = {"n": "null", "b": "bool", "u": "string", "U": "large_string", "z": "binary",
           "Z": "large_binary", "vu": "string_view", "vz": "binary_view",
           "tdD": "date32", "tdm": "date64", "tiM": "month_interval",
           "tiD": "day_time_interval", "tin": "month_day_nano_interval"}
_UNITS = {"s": "s", "m": "ms", "u": "us", "n": "ns"}
_PER_SECOND = {"s": 1, "ms": 1000, "us": 1000000, "ns": 1000000000}
# Extension types (a field's ARROW:extension:name) that sluice converts as
# pyarrow does, and the storage formats each takes; another name, or one over
# other storage, is its storage type (as pyarrow reads an unregistered one).
# arrow.json (Parquet's JSON) keeps its values as str, as pyarrow does.
_EXTENSIONS = {"arrow.uuid": ("w:16",), "arrow.json": ("u", "U", "vu")}


class DataType:
    """An Arrow data type, described by its C Data Interface format string.

    ``str(t)`` spells it the way pyarrow does (``int64``, ``string``,
    ``timestamp[us, tz=UTC]``, ``list<item: int32>``, ``extension<arrow.uuid>``).
    ``extension`` names the extension type (``"arrow.uuid"``: values are
    ``uuid.UUID``; ``"arrow.json"``: values are ``str``) or is None; ``kind`` is then its storage's
    (``fixed_size_binary``).
    """

    __slots__ = ("format", "kind", "unit", "tz", "width", "precision", "scale", "children",
                 "dictionary", "ordered", "extension", "_name")

    def __init__(self, format, children=(), dictionary=None, ordered=False, extension=None):
        self.format = format
        self.children = tuple(children)  # Field objects
        self.dictionary = dictionary     # DataType of the values, when dictionary-encoded
        self.ordered = ordered
        self.extension = extension if dictionary is None and \
            format in _EXTENSIONS.get(extension, ()) else None
        self.unit = self.tz = None
        self.width = self.precision = self.scale = None
        self._name = None
        f = format
        if f in _PRIMITIVES:
            self.kind = _PRIMITIVES[f][0]
        elif f in _SIMPLE:
            self.kind = _SIMPLE[f]
        elif f.startswith("ts") and len(f) >= 4 and f[3] == ":":
            self.kind, self.unit, self.tz = "timestamp", _UNITS.get(f[2]), f[4:] or None
        elif f.startswith("tt") and len(f) == 3:
            self.kind, self.unit = ("time32" if f[2] in "sm" else "time64"), _UNITS.get(f[2])
        elif f.startswith("tD") and len(f) == 3:
            self.kind, self.unit = "duration", _UNITS.get(f[2])
        elif f.startswith("d:"):
            parts = f[2:].split(",")
            self.kind = "decimal"
            self.precision, self.scale = int(parts[0]), int(parts[1])
            self.width = int(parts[2]) if len(parts) > 2 else 128
        elif f.startswith("w:"):
            self.kind, self.width = "fixed_size_binary", int(f[2:])
        elif f == "+l":
            self.kind = "list"
        elif f == "+L":
            self.kind = "large_list"
        elif f.startswith("+w:"):
            self.kind, self.width = "fixed_size_list", int(f[3:])
        elif f == "+s":
            self.kind = "struct"
        elif f == "+m":
            self.kind = "map"
        elif f.startswith("+u"):
            self.kind = "union"
        elif f == "+r":
            self.kind = "run_end_encoded"
        elif f in ("+vl", "+vL"):
            self.kind = "list_view"
        else:
            self.kind = "unknown"

    @property
    def is_dictionary(self):
        return self.dictionary is not None

    def __str__(self):
        if self._name is None:
            self._name = self._spell()
        return self._name

    def _spell(self):
        if self.dictionary is not None:
            index = DataType(self.format)
            return "dictionary<values=%s, indices=%s, ordered=%d>" % (
                self.dictionary, index, int(self.ordered))
        if self.extension is not None:
            return "extension<%s>" % self.extension
        k = self.kind
        if k in ("date32", "date64"):
            return "date32[day]" if k == "date32" else "date64[ms]"
        if k == "timestamp":
            return "timestamp[%s%s]" % (self.unit, ", tz=" + self.tz if self.tz else "")
        if k in ("time32", "time64", "duration"):
            return "%s[%s]" % (k, self.unit)
        if k == "decimal":
            return "decimal%d(%d, %d)" % (self.width, self.precision, self.scale)
        if k == "fixed_size_binary":
            return "fixed_size_binary[%d]" % self.width
        if k in ("list", "large_list"):
            return "%s<%s>" % (k, self.children[0] if self.children else "?")
        if k == "fixed_size_list":
            return "fixed_size_list<%s>[%d]" % (self.children[0] if self.children else "?",
                                                self.width)
        if k == "map" and self.children and len(self.children[0].type.children) == 2:
            key, item = self.children[0].type.children  # map<key, item>, as pyarrow spells it
            return "map<%s, %s>" % (key.type, item.type)
        if k in ("struct", "map"):
            return "%s<%s>" % (k, ", ".join(str(c) for c in self.children))
        if k == "unknown":
            return "unknown[%s]" % self.format
        return k

    def __repr__(self):
        return "DataType(%s)" % self

    def __eq__(self, other):
        # As pyarrow's ==: the names of a list's element and of a map's
        # entries, key and value do not count (list<item> from Arrow equals
        # list<element> from Parquet); a struct's names and any child's
        # nullability do.
        return isinstance(other, DataType) and type_key(self) == type_key(other)

    def __hash__(self):
        return hash(type_key(self))


# Nested types whose children's names are not part of the type, as pyarrow
# compares them.
_UNNAMED_CHILDREN = ("list", "large_list", "fixed_size_list", "list_view", "map")


def type_key(t, check_metadata=False, unnamed=False):
    """What makes two DataTypes equal, as pyarrow's DataType.equals:
    without check_metadata the names of list-like children and map entries
    (`unnamed`: a map's entries struct) are left out; with it they count,
    and so does the children's metadata."""
    if t.dictionary is not None:
        return ("dictionary", t.format, t.ordered, type_key(t.dictionary, check_metadata))
    if not t.children:
        return str(t)
    loose = not check_metadata and (unnamed or t.kind in _UNNAMED_CHILDREN)
    return (t.format, tuple((None if loose else c.name, c.nullable,
                             frozenset(c.metadata.items()) if check_metadata else None,
                             type_key(c.type, check_metadata, t.kind == "map"))
                            for c in t.children))


class Field:
    """A named column type: ``name``, ``type`` (DataType), ``nullable``, ``metadata``.

    A column of a table's schema implements ``__arrow_c_schema__``
    (``pyarrow.field(f)``)."""

    __slots__ = ("name", "type", "nullable", "metadata", "_column")

    def __init__(self, name, type, nullable=True, metadata=None):
        self.name = name
        self.type = type
        self.nullable = nullable
        self.metadata = metadata or {}
        self._column = None  # (the _Schema, column index) of a schema's column

    def __arrow_c_schema__(self):
        if self._column is None:
            raise TypeError("only a column of a sluice schema exports its Arrow field")
        schema, i = self._column
        return schema._child_capsule(i)

    def __str__(self):
        return "%s: %s%s" % (self.name, self.type, "" if self.nullable else " not null")

    def __reduce__(self):
        if self._column is not None:  # a column of a schema: that schema's field again
            from ._table import Schema
            schema, i = self._column
            return (_schema_field, (Schema(schema), i))
        return (Field, (self.name, self.type, self.nullable, self.metadata))

    def __repr__(self):
        return "Field(%s)" % self

    def __eq__(self, other):
        return (isinstance(other, Field) and self.name == other.name and self.type == other.type
                and self.nullable == other.nullable)

    def __hash__(self):
        return hash((self.name, self.type, self.nullable))


def _schema_field(schema, i):
    return schema.fields[i]


def parse_metadata(raw):
    """Arrow C metadata bytes (int32 count, then (int32 len, bytes) pairs) -> dict.

    Keys and values are decoded as UTF-8 where they are valid UTF-8, else kept
    as bytes.
    """
    if not raw:
        return {}
    out = {}
    (count,) = _struct.unpack_from("<i", raw, 0)
    at = 4
    for _ in range(count):
        pair = []
        for _ in range(2):
            (n,) = _struct.unpack_from("<i", raw, at)
            b = bytes(raw[at + 4:at + 4 + n])
            at += 4 + n
            try:
                pair.append(b.decode("utf-8"))
            except UnicodeDecodeError:
                pair.append(b)
        out[pair[0]] = pair[1]
    return out


def field_from_schema(schema, path):
    """The Field at `path` of a _Schema (children and dictionary resolved)."""
    node = schema._node(path)
    children = [field_from_schema(schema, path + (i,)) for i in range(node["n_children"])]
    dictionary = None
    if node["has_dictionary"]:
        dictionary = field_from_schema(schema, path + (-1,)).type
    metadata = parse_metadata(node["metadata"])
    dtype = DataType(node["format"], children, dictionary, bool(node["flags"] & 1),
                     metadata.get("ARROW:extension:name"))
    return Field(node["name"] or "", dtype, bool(node["flags"] & 2), metadata)


class Node:
    """One array node of one batch (a column, a child, a dictionary), read
    through zero-copy views of its buffers."""

    __slots__ = ("batch", "path", "type", "length", "offset", "null_count", "_info", "writable",
                 "transient")

    def __init__(self, batch, path, dtype, writable=False, transient=False):
        self.batch = batch  # the _Batch
        self.path = path
        self.type = dtype
        # Views may be writable (a consumer that took the batch over; only
        # where the batch owns its memory).
        self.writable = writable
        # The values are copied out (to_pylist, repr) and no view is kept:
        # reading them does not stop a later to_pandas(self_destruct=True)
        # from handing the buffers out writable.
        self.transient = transient
        info = batch._node(path)
        self._info = info
        self.length = info["length"]
        self.offset = info["offset"]
        self.null_count = info["null_count"]

    def buffer(self, i, nbytes):
        """Buffer i as a _BufferView of nbytes bytes. A NULL validity
        bitmap (no nulls) is None; any other NULL buffer of an empty node,
        or one that would hold no bytes (the C Data Interface allows both:
        a list's child when every list is empty, all strings empty), reads
        as nbytes zero bytes."""
        how = -1 if self.transient else int(self.writable)
        view = self.batch._buffer(self.path, i, nbytes, how)
        if view is None and (i > 0 or self.type.kind == "union") and \
                (self.length == 0 or nbytes == 0):
            return bytearray(nbytes) if self.writable else bytes(nbytes)
        return view

    def child(self, i):
        return Node(self.batch, self.path + (i,), self.type.children[i].type, self.writable,
                    self.transient)

    def dictionary_node(self):
        return Node(self.batch, self.path + (-1,), self.type.dictionary, self.writable,
                    self.transient)

    def has_validity(self):
        k = self.type.kind
        return k not in ("null", "union", "run_end_encoded") and self.null_count != 0

    def validity(self):
        """The validity bitmap view (bits offset..offset+length), or None."""
        if not self.has_validity():
            return None
        return self.buffer(0, (self.offset + self.length + 7) // 8)

    def valid_list(self):
        """[True/False] per value, or None when there are no nulls."""
        k = self.type.kind
        if k == "null":
            return [False] * self.length
        bits = self.validity()
        if bits is None:
            return None
        b = bytes(bits)
        o = self.offset
        return [bool((b[j >> 3] >> (j & 7)) & 1) for j in range(o, o + self.length)]

    def count_nulls(self):
        """Nulls in the node's window (from the bitmap when the count is -1)."""
        if self.type.kind == "null":
            return self.length
        if self.null_count >= 0 and not self.has_validity():
            return 0
        bits = self.validity()
        if bits is None:
            return 0
        if self.null_count >= 0:
            return self.null_count
        o, n = self.offset, self.length
        word = int.from_bytes(bytes(bits), "little") >> o
        return n - bin(word & ((1 << n) - 1)).count("1")

    def offsets(self, large):
        """The offsets as a memoryview of int32/int64 (offset..offset+length+1)."""
        width = 8 if large else 4
        view = self.buffer(1, (self.offset + self.length + 1) * width)
        return memoryview(view).cast("q" if large else "i")


def _decimal_values(raw, width, scale, start, count):
    size = width // 8
    ctx = _decimal.Context(prec=80)
    out = []
    for j in range(start, start + count):
        n = int.from_bytes(raw[j * size:(j + 1) * size], "little", signed=True)
        out.append(_decimal.Decimal(n).scaleb(-scale, ctx))
    return out


class _OutOfRange:
    """A value repr() shows that Python's date/time types cannot hold, as
    pyarrow prints it: a date32 as YYYY-MM-DD, others as
    <value out of range: N>."""

    __slots__ = ("text",)

    def __init__(self, text):
        self.text = text

    def __repr__(self):
        return self.text


def _civil_date(days):
    """YYYY-MM-DD of a day count since 1970-01-01, any year (proleptic
    Gregorian, Howard Hinnant's days_from_civil inverted)."""
    z = days + 719468
    era = z // 146097
    doe = z - era * 146097
    yoe = (doe - doe // 1460 + doe // 36524 - doe // 146096) // 365
    doy = doe - (365 * yoe + yoe // 4 - yoe // 100)
    mp = (5 * doy + 2) // 153
    d = doy - (153 * mp + 2) // 5 + 1
    m = mp + 3 if mp < 10 else mp - 9
    y = yoe + era * 400 + (m <= 2)
    return "%s%04d-%02d-%02d" % ("-" if y < 0 else "", abs(y), m, d)


def _out_of_range(v, t):
    # (pyarrow's ways: date32 as a date, a duration as its integer)
    if t.kind == "date32":
        return _OutOfRange(_civil_date(v))
    if t.kind == "duration":
        return v
    return _OutOfRange("<value out of range: %d>" % v)


def _epoch_values(ints, t, preview=False):
    """date, time, timestamp and duration values (ints since the epoch, of
    DataType t) as Python objects; a value past what they hold (a date after
    year 9999) is an OverflowError naming it, or with `preview` an
    _OutOfRange."""
    convert = _epoch_converter(t.kind, t.unit, t.tz)
    try:
        return [convert(v) for v in ints]
    except OverflowError:
        pass
    if preview:
        out = []
        for v in ints:
            try:
                out.append(convert(v))
            except OverflowError:
                out.append(_out_of_range(v, t))
        return out
    for v in ints:  # the first value that does not fit, named
        try:
            convert(v)
        except OverflowError:
            held = ("datetime.timedelta's +-999999999 days" if t.kind == "duration"
                    else "datetime's years 1 to 9999")
            raise OverflowError("%s value %d is outside %s" % (t, v, held)) from None
    raise AssertionError("unreachable")


def _epoch_converter(kind, unit, tz):
    """A function of one int (of that kind and unit since the epoch)."""
    if kind == "date32":
        base = _dt.date(1970, 1, 1)
        return lambda v: base + _dt.timedelta(days=v)
    if kind == "date64":
        base = _dt.date(1970, 1, 1)
        return lambda v: base + _dt.timedelta(days=v // 86400000)
    per = _PER_SECOND[unit]
    if per == 1000000000 and kind in ("duration", "timestamp"):
        # Nanoseconds: pandas' Timestamp / Timedelta hold them, as pyarrow
        # gives them; datetime would cut them off.
        try:
            import pandas as pd
        except ImportError:
            pd = None
        if pd is not None:
            if kind == "duration":
                return lambda v: pd.Timedelta(v, unit="ns")
            zone = _zone(tz) if tz else None
            if zone is not None:
                return lambda v: pd.Timestamp(v, unit="ns", tz=zone)
            return lambda v: pd.Timestamp(v, unit="ns")
    if kind == "duration":
        if per > 1000000:
            return lambda v: _dt.timedelta(microseconds=v * 1000000 // per)
        return lambda v: _dt.timedelta(seconds=v // per, microseconds=(v % per) * (1000000 // per))
    if kind in ("time32", "time64"):
        midnight = _dt.datetime(1970, 1, 1)
        return lambda v: (midnight + _dt.timedelta(microseconds=v * 1000000 // per)).time()
    # timestamp
    zone = _zone(tz) if tz else None
    epoch = _dt.datetime(1970, 1, 1, tzinfo=_dt.timezone.utc)

    def timestamp(v):
        d = epoch + _dt.timedelta(seconds=v // per, microseconds=(v % per) * 1000000 // per)
        return d.astimezone(zone) if zone is not None else d.replace(tzinfo=None)
    return timestamp


def _zone(tz):
    """An Arrow time zone string as a tzinfo: "UTC", a "+HH:MM" offset or an
    IANA name (the Arrow spec's forms). Anything else is a ValueError, as in
    pyarrow: a guess would shift every value silently."""
    if tz in ("UTC", "+00:00", "-00:00"):
        return _dt.timezone.utc
    if len(tz) == 6 and tz[0] in "+-" and tz[3] == ":" and (tz[1:3] + tz[4:]).isdigit() \
            and tz[1:3].isascii() and tz[4:].isascii():
        hours, minutes = int(tz[1:3]), int(tz[4:])
        if hours < 24 and minutes < 60:
            sign = -1 if tz[0] == "-" else 1
            return _dt.timezone(sign * _dt.timedelta(hours=hours, minutes=minutes))
    try:
        import zoneinfo
        return zoneinfo.ZoneInfo(tz)
    except ImportError:  # Python 3.8: no zone database to ask
        raise ValueError("time zone %r needs Python 3.9's zoneinfo" % tz) from None
    except Exception:
        raise ValueError("unknown time zone %r (Arrow takes an IANA name or +HH:MM)"
                         % tz) from None


class naming_column:
    """with naming_column(name): a conversion error (a value out of range, an
    unknown zone) raised in the block names the column, as the C library's
    messages do. (A class: cheap enough to enter per batch and column.)"""

    __slots__ = ("name",)

    def __init__(self, name):
        self.name = name

    def __enter__(self):
        return self

    def __exit__(self, kind, error, tb):
        # Only these exact types: sluice's own and pandas' errors have their
        # own arguments (and sluice's name what they are about).
        if kind in (ValueError, OverflowError, NotImplementedError):
            raise kind("column '%s': %s" % (self.name, error)).with_traceback(tb) from None
        return False


def node_to_pylist(node, preview=False):
    """The values of a node as Python objects (None for nulls). With
    `preview` (repr), a date or time value out of Python's range is an
    _OutOfRange that prints as pyarrow prints it, not an OverflowError."""
    t = node.type
    k = t.kind
    n, o = node.length, node.offset
    # Bytes under a null are undefined (pandas' NaT is INT64_MIN, a string
    # may be any bytes): they are never converted, only numbers copied.
    valid = node.valid_list()
    if t.dictionary is not None:
        indices = _ints(node, _PRIMITIVES[t.format])
        values = node_to_pylist(node.dictionary_node(), preview)
        out = [values[i] if valid is None or valid[j] else None for j, i in enumerate(indices)]
    elif k == "null":
        return [None] * n
    elif t.format in _PRIMITIVES:
        out = _ints(node, _PRIMITIVES[t.format])
    elif k == "bool":
        raw = bytes(node.buffer(1, (o + n + 7) // 8))
        out = [bool((raw[j >> 3] >> (j & 7)) & 1) for j in range(o, o + n)]
    elif k in ("string", "large_string", "binary", "large_binary"):
        large = k.startswith("large")
        offs = node.offsets(large)
        data = bytes(node.buffer(2, offs[o + n]) or b"") if n else b""
        if k.endswith("string"):
            out = [data[offs[j]:offs[j + 1]].decode("utf-8")
                   if valid is None or valid[j - o] else None for j in range(o, o + n)]
        else:
            out = [data[offs[j]:offs[j + 1]] for j in range(o, o + n)]
    elif k in ("string_view", "binary_view"):
        out = _views(node, k == "string_view", valid)
    elif k == "fixed_size_binary":
        w = t.width
        raw = bytes(node.buffer(1, (o + n) * w))
        out = [raw[j * w:(j + 1) * w] for j in range(o, o + n)]
        if t.extension == "arrow.uuid":  # as pyarrow gives them (any 16 bytes are one)
            out = [_uuid.UUID(bytes=b) for b in out]
    elif k == "decimal":
        raw = bytes(node.buffer(1, (o + n) * t.width // 8))
        out = _decimal_values(raw, t.width, t.scale, o, n)
    elif k in ("date32", "time32"):
        out = _epoch_values(_valid_only(_ints(node, ("", "i", 4)), valid), t, preview)
    elif k in ("date64", "time64", "timestamp", "duration"):
        out = _epoch_values(_valid_only(_ints(node, ("", "q", 8)), valid), t, preview)
    elif k in ("list", "large_list", "map"):
        offs = node.offsets(k == "large_list")
        child = _map_entries(node.child(0), preview) if k == "map" else node_to_pylist(node.child(0), preview)
        out = [child[offs[j]:offs[j + 1]] for j in range(o, o + n)]
    elif k == "fixed_size_list":
        w = t.width
        child = node_to_pylist(node.child(0), preview)
        out = [child[j * w:(j + 1) * w] for j in range(o, o + n)]
    elif k == "union":
        out = _union_values(node, t, preview)
    elif t.format in ("tiM", "tiD", "tin"):
        out = _interval_values(node, t.format)
    elif k == "struct":
        cols = [node_to_pylist(node.child(i), preview) for i in range(len(t.children))]
        names = [c.name for c in t.children]
        # A child is read over its own window; the struct's window selects rows.
        out = [{names[c]: cols[c][j] for c in range(len(cols))} for j in range(o, o + n)]
    else:
        raise NotImplementedError("sluice: no Python conversion for Arrow type %s" % t)
    if valid is not None:
        out = [v if ok else None for v, ok in zip(out, valid)]
    return out


def _map_entries(entries, preview=False):
    """A map's entries as (key, value) tuples: the entry struct's first and
    second fields, whatever they are named (as pyarrow reads them)."""
    keys, items = node_to_pylist(entries.child(0), preview), node_to_pylist(entries.child(1), preview)
    valid = entries.valid_list()
    # A child is read over its own window; the struct's window selects rows.
    o = entries.offset
    return [(keys[o + j], items[o + j]) if valid is None or valid[j] else None
            for j in range(entries.length)]


def _valid_only(values, valid):
    """values with 0 under the nulls (whatever was there need not convert)."""
    return values if valid is None else [v if ok else 0 for v, ok in zip(values, valid)]


def _union_values(node, t, preview=False):
    """A union's values: each row's value from the child its type id names
    (dense: at the row's offset into that child; sparse: at the row)."""
    o, n = node.offset, node.length
    if n == 0:
        return []
    dense = t.format.startswith("+ud")
    codes = [int(c) for c in t.format[4:].split(",")] if len(t.format) > 4 else []
    child_of = {code: i for i, code in enumerate(codes)}
    ids = memoryview(node.buffer(0, o + n)).cast("b")[o:o + n].tolist()
    offsets = memoryview(node.buffer(1, (o + n) * 4)).cast("i")[o:o + n].tolist() if dense else None
    children = [node_to_pylist(node.child(i), preview) for i in range(len(t.children))]
    # a sparse child is as long as the union, read over its own window
    return [children[child_of[tid]][offsets[j] if dense else o + j] for j, tid in enumerate(ids)]


class MonthDayNano(tuple):
    """A month_day_nano interval value, as pyarrow's MonthDayNano:
    (months, days, nanoseconds) with those names."""
    __slots__ = ()

    def __new__(cls, months, days, nanoseconds):
        return tuple.__new__(cls, (months, days, nanoseconds))

    @property
    def months(self):
        return self[0]

    @property
    def days(self):
        return self[1]

    @property
    def nanoseconds(self):
        return self[2]

    def __repr__(self):
        return "MonthDayNano(months=%d, days=%d, nanoseconds=%d)" % self

    def __getnewargs__(self):  # pickle (dask, multiprocessing): a tuple subclass's __new__ args
        return tuple(self)


def _interval_values(node, fmt):
    """Interval values: months (an int), day_time (days, milliseconds) and
    month_day_nano (MonthDayNano), as pyarrow gives their fields."""
    o, n = node.offset, node.length
    if n == 0:
        return []
    width = {"tiM": 4, "tiD": 8, "tin": 16}[fmt]
    raw = bytes(node.buffer(1, (o + n) * width))[o * width:]
    if fmt == "tiM":
        return list(_struct.unpack("<%di" % n, raw))
    if fmt == "tiD":
        return [_struct.unpack_from("<ii", raw, j * 8) for j in range(n)]
    return [MonthDayNano(*_struct.unpack_from("<iiq", raw, j * 16)) for j in range(n)]


def _views(node, text, valid):
    """Values of a string/binary view array (16-byte views: length, then the
    bytes inline up to 12, else prefix, buffer index, offset); None under
    the nulls, whose views need not point anywhere."""
    o, n = node.offset, node.length
    if n == 0:
        return []
    n_buffers = node._info["n_buffers"]
    n_data = n_buffers - 3
    raw = bytes(node.buffer(1, (o + n) * 16))
    sizes = []
    if n_data > 0:
        sizes = memoryview(node.buffer(n_buffers - 1, n_data * 8)).cast("q").tolist()
    data = [bytes(node.buffer(2 + i, sizes[i]) or b"") for i in range(n_data)]
    out = []
    for j in range(o, o + n):
        if valid is not None and not valid[j - o]:
            out.append(None)
            continue
        length, = _struct.unpack_from("<i", raw, j * 16)
        if length <= 12:
            b = raw[j * 16 + 4:j * 16 + 4 + length]
        else:
            index, at = _struct.unpack_from("<ii", raw, j * 16 + 8)
            b = data[index][at:at + length]
        out.append(b.decode("utf-8") if text else b)
    return out


def _ints(node, spec):
    _, code, width = spec
    o, n = node.offset, node.length
    if n == 0:
        return []
    raw = memoryview(node.buffer(1, (o + n) * width))
    if code == "e":  # memoryview.cast takes no half floats; struct does (little-endian, as Arrow)
        return [v for (v,) in _struct.iter_unpack("<e", raw[o * 2:(o + n) * 2])]
    return raw.cast(code)[o:o + n].tolist()
