"""Reader for the Arrow integration-test JSON format, independent of pyarrow.

The Arrow project describes each integration case twice: as IPC files and as a
human-readable JSON document (schema, dictionaries, batches with their buffers
spelled out: VALIDITY, OFFSET, TYPE_ID, DATA, children). This module turns the
JSON into *canonical* values, and turns a pyarrow array or schema (whatever
produced it: sluice's output read back, or pyarrow's own reader) into the same
canonical shape, so that the two can be compared with ``==``.

Canonical types are nested tuples, e.g. ``("int", 32, True)`` or
``("list", FIELD)``; a field is ``(name, nullable, type, dictionary, metadata)``
with ``dictionary`` ``None`` or ``(index_type, ordered)``.

Canonical values avoid every lossy or failing conversion (pyarrow's to_pylist
cannot convert out-of-range dates or day-time intervals):

- null slot: ``None``
- integers, and the integer storage of date/time/timestamp/duration/
  year-month interval values: ``int``
- floating point: ``float`` (float32 rounded to float32); NaN: the string "NaN"
- decimal: the unscaled ``int`` (the scale is part of the type)
- day-time interval: ``(days, milliseconds)``; month-day-nano:
  ``(months, days, nanoseconds)``
- utf8: ``str``; binary, fixed-size binary: ``bytes``
- list, large list, fixed-size list: ``list``; struct: ``tuple`` (by child
  position, so duplicate field names are fine); map: ``list`` of
  ``(key, value)``; union: ``(type_code, value)``
- dictionary-encoded: the decoded value
"""

from __future__ import annotations

import gzip
import json
import math
import struct
from typing import Any

# ---------------------------------------------------------------------------
# Types from JSON


def _json_type(field: dict) -> tuple:
    t = field["type"]
    name = t["name"]
    children = [json_field(c) for c in field.get("children", [])]
    if name == "null":
        return ("null",)
    if name == "bool":
        return ("bool",)
    if name == "int":
        return ("int", t["bitWidth"], bool(t["isSigned"]))
    if name == "floatingpoint":
        return ("float", {"HALF": 16, "SINGLE": 32, "DOUBLE": 64}[t["precision"]])
    if name in ("utf8", "largeutf8", "binary", "largebinary"):
        return (name,)
    if name == "fixedsizebinary":
        return ("fixedsizebinary", t["byteWidth"])
    if name == "decimal":
        return ("decimal", t.get("bitWidth", 128), t["precision"], t["scale"])
    if name == "date":
        return ("date", t["unit"])
    if name == "time":
        return ("time", t["unit"], t["bitWidth"])
    if name == "timestamp":
        return ("timestamp", t["unit"], t.get("timezone") or None)
    if name == "duration":
        return ("duration", t["unit"])
    if name == "interval":
        return ("interval", t["unit"])
    if name in ("list", "largelist"):
        return (name, children[0])
    if name == "fixedsizelist":
        return ("fixedsizelist", t["listSize"], children[0])
    if name == "struct":
        return ("struct", tuple(children))
    if name == "map":
        return ("map", bool(t.get("keysSorted", False)), children[0])
    if name == "union":
        return ("union", t["mode"], tuple(t["typeIds"]), tuple(children))
    raise NotImplementedError(f"JSON type {name!r} is not supported by arrow_json")


def _json_metadata(obj: dict) -> tuple:
    md = obj.get("metadata") or []
    if isinstance(md, dict):  # some writers use an object
        md = [{"key": k, "value": v} for k, v in md.items()]
    return tuple(sorted((m["key"], m["value"]) for m in md))


def json_field(field: dict) -> tuple:
    d = field.get("dictionary")
    dict_desc = None
    if d is not None:
        it = d["indexType"]
        dict_desc = (("int", it["bitWidth"], bool(it["isSigned"])), bool(d.get("isOrdered", False)))
    return (field["name"], bool(field["nullable"]), _json_type(field), dict_desc, _json_metadata(field))


# ---------------------------------------------------------------------------
# Types from pyarrow


def _pa_type(t) -> tuple:
    import pyarrow as pa
    import pyarrow.types as pt

    if isinstance(t, pa.ExtensionType):  # registered extension: compare its storage
        t = t.storage_type
    if pt.is_null(t):
        return ("null",)
    if pt.is_boolean(t):
        return ("bool",)
    if pt.is_integer(t):
        return ("int", t.bit_width, pt.is_signed_integer(t))
    if pt.is_floating(t):
        return ("float", t.bit_width)
    if pt.is_large_string(t):
        return ("largeutf8",)
    if pt.is_string(t):
        return ("utf8",)
    if pt.is_large_binary(t):
        return ("largebinary",)
    if pt.is_fixed_size_binary(t) and not pt.is_decimal(t):
        return ("fixedsizebinary", t.byte_width)
    if pt.is_binary(t):
        return ("binary",)
    if pt.is_decimal(t):
        return ("decimal", t.bit_width, t.precision, t.scale)
    if pt.is_date32(t):
        return ("date", "DAY")
    if pt.is_date64(t):
        return ("date", "MILLISECOND")
    units = {"s": "SECOND", "ms": "MILLISECOND", "us": "MICROSECOND", "ns": "NANOSECOND"}
    if pt.is_time(t):
        return ("time", units[t.unit], t.bit_width)
    if pt.is_timestamp(t):
        return ("timestamp", units[t.unit], t.tz or None)
    if pt.is_duration(t):
        return ("duration", units[t.unit])
    if t.id == pa.month_day_nano_interval().id:
        return ("interval", "MONTH_DAY_NANO")
    if str(t) == "month_interval":
        return ("interval", "YEAR_MONTH")
    if str(t) == "day_time_interval":
        return ("interval", "DAY_TIME")
    if pt.is_map(t):
        return ("map", bool(t.keys_sorted), pa_field(t.field(0)))
    if pt.is_large_list(t):
        return ("largelist", pa_field(t.value_field))
    if pt.is_fixed_size_list(t):
        return ("fixedsizelist", t.list_size, pa_field(t.value_field))
    if pt.is_list(t):
        return ("list", pa_field(t.value_field))
    if pt.is_struct(t):
        return ("struct", tuple(pa_field(t.field(i)) for i in range(t.num_fields)))
    if pt.is_union(t):
        mode = "SPARSE" if t.mode == "sparse" else "DENSE"
        return ("union", mode, tuple(t.type_codes), tuple(pa_field(t.field(i)) for i in range(t.num_fields)))
    raise NotImplementedError(f"pyarrow type {t} is not supported by arrow_json")


def _pa_metadata(md) -> tuple:
    if not md:
        return ()
    return tuple(sorted((k.decode(), v.decode()) for k, v in md.items()))


def pa_field(f) -> tuple:
    import pyarrow as pa
    import pyarrow.types as pt

    t = f.type
    md = dict(f.metadata or {})
    if isinstance(t, pa.ExtensionType):
        # A registered extension type: put its name and metadata back where the
        # JSON keeps them.
        md[b"ARROW:extension:name"] = t.extension_name.encode()
        md[b"ARROW:extension:metadata"] = t.__arrow_ext_serialize__()
        t = t.storage_type
    dict_desc = None
    if pt.is_dictionary(t):
        dict_desc = (_pa_type(t.index_type), bool(t.ordered))
        t = t.value_type
    return (f.name, bool(f.nullable), _pa_type(t), dict_desc, _pa_metadata(md))


def pa_schema(schema) -> dict:
    return {"fields": [pa_field(f) for f in schema], "metadata": _pa_metadata(schema.metadata)}


# ---------------------------------------------------------------------------
# Values from JSON

_NAN = "NaN"


def _norm_float(x, bits: int):
    if isinstance(x, str):
        x = float(x)
    x = float(x)
    if math.isnan(x):
        return _NAN
    if bits == 32:
        return struct.unpack("<f", struct.pack("<f", x))[0]
    if bits == 16:
        return struct.unpack("<e", struct.pack("<e", x))[0]
    return x


class _Ctx:
    def __init__(self, dictionaries: dict):
        self.dictionaries = dictionaries  # id -> list of canonical values


def _json_values(field: dict, col: dict, ctx: _Ctx) -> list:
    n = col["count"]
    t = field["type"]
    name = t["name"]
    validity = col.get("VALIDITY")
    valid = [True] * n if validity is None else [bool(v) for v in validity]
    if len(valid) != n:
        raise ValueError(f"{field['name']}: VALIDITY has {len(valid)} entries for count {n}")

    d = field.get("dictionary")
    if d is not None:
        dvals = ctx.dictionaries[d["id"]]
        return [dvals[int(i)] if ok else None for i, ok in zip(col["DATA"], valid)]

    children = field.get("children", [])
    if name == "null":
        return [None] * n
    if name == "union":
        type_ids = [int(x) for x in col["TYPE_ID"]]
        kids = [_json_values(cf, cc, ctx) for cf, cc in zip(children, col["children"])]
        code_to_child = {code: i for i, code in enumerate(t["typeIds"])}
        out = []
        for slot, code in enumerate(type_ids):
            k = code_to_child[code]
            pos = int(col["OFFSET"][slot]) if t["mode"] == "DENSE" else slot
            out.append((code, kids[k][pos]))
        return out
    if name == "struct":
        kids = [_json_values(cf, cc, ctx) for cf, cc in zip(children, col["children"])]
        return [tuple(k[i] for k in kids) if valid[i] else None for i in range(n)]
    if name in ("list", "largelist", "map"):
        offsets = [int(o) for o in col["OFFSET"]]
        kid = _json_values(children[0], col["children"][0], ctx)
        out = []
        for i in range(n):
            if not valid[i]:
                out.append(None)
                continue
            items = kid[offsets[i]:offsets[i + 1]]
            if name == "map":
                items = [(e[0], e[1]) for e in items]
            out.append(items)
        return out
    if name == "fixedsizelist":
        size = t["listSize"]
        kid = _json_values(children[0], col["children"][0], ctx)
        return [kid[i * size:(i + 1) * size] if valid[i] else None for i in range(n)]

    data = col["DATA"]
    if len(data) != n:
        raise ValueError(f"{field['name']}: DATA has {len(data)} entries for count {n}")
    if name == "bool":
        conv = bool
    elif name in ("int", "date", "time", "timestamp", "duration"):
        conv = int
    elif name == "floatingpoint":
        bits = {"HALF": 16, "SINGLE": 32, "DOUBLE": 64}[t["precision"]]
        conv = lambda x: _norm_float(x, bits)  # noqa: E731
    elif name == "decimal":
        conv = int  # unscaled value, as a decimal string
    elif name in ("utf8", "largeutf8"):
        conv = str
    elif name in ("binary", "largebinary", "fixedsizebinary"):
        conv = bytes.fromhex
    elif name == "interval":
        unit = t["unit"]
        if unit == "YEAR_MONTH":
            conv = int
        elif unit == "DAY_TIME":
            conv = lambda x: (int(x["days"]), int(x["milliseconds"]))  # noqa: E731
        else:
            conv = lambda x: (int(x["months"]), int(x["days"]), int(x["nanoseconds"]))  # noqa: E731
    else:
        raise NotImplementedError(f"JSON type {name!r} is not supported by arrow_json")
    return [conv(v) if ok else None for v, ok in zip(data, valid)]


def _walk_dict_fields(fields: list, out: dict) -> None:
    for f in fields:
        d = f.get("dictionary")
        if d is not None:
            out[d["id"]] = f
        _walk_dict_fields(f.get("children", []), out)


class ArrowJsonFile:
    """One integration case: its canonical schema and its rows, batch by batch."""

    def __init__(self, path: str):
        opener = gzip.open if str(path).endswith(".gz") else open
        with opener(path, "rt", encoding="utf-8") as fh:
            self.doc = json.load(fh)
        schema = self.doc["schema"]
        self.fields_json = schema["fields"]
        self.schema = {"fields": [json_field(f) for f in self.fields_json],
                       "metadata": _json_metadata(schema)}

        dict_fields: dict = {}
        _walk_dict_fields(self.fields_json, dict_fields)
        ctx = _Ctx({})
        # A dictionary's values may themselves be dictionary-encoded; resolve
        # those first (ids of inner dictionaries are listed before use in
        # practice, but do not rely on document order).
        pending = {d["id"]: d for d in self.doc.get("dictionaries", [])}
        for _ in range(len(pending) + 1):
            for did, d in list(pending.items()):
                f = dict(dict_fields[did])
                f.pop("dictionary")
                try:
                    ctx.dictionaries[did] = _json_values(f, d["data"]["columns"][0], ctx)
                except KeyError:
                    continue
                del pending[did]
        if pending:
            raise ValueError(f"unresolvable dictionaries {sorted(pending)}")

        self.batches = []  # list of (row count, [column values])
        for b in self.doc.get("batches", []):
            cols = [_json_values(f, c, ctx) for f, c in zip(self.fields_json, b["columns"])]
            if len(cols) != len(self.fields_json):
                raise ValueError("batch has the wrong number of columns")
            self.batches.append((b["count"], cols))

    @property
    def num_rows(self) -> int:
        return sum(n for n, _ in self.batches)

    def columns(self) -> list:
        """Canonical values per column, all batches concatenated."""
        out = [[] for _ in self.fields_json]
        for _, cols in self.batches:
            for acc, c in zip(out, cols):
                acc.extend(c)
        return out


# ---------------------------------------------------------------------------
# Values from pyarrow


def _valid_mask(arr) -> list:
    n = len(arr)
    if arr.null_count == 0:
        return [True] * n
    return [v for v in arr.is_valid().to_pylist()]


def _fixed_bytes(arr, width: int, nbits_buffer: int = 1) -> list:
    """Raw fixed-width slots of arr's data buffer (index nbits_buffer)."""
    buf = arr.buffers()[nbits_buffer]
    raw = buf.to_pybytes() if buf is not None else b""
    start = arr.offset * width
    return [raw[start + i * width:start + (i + 1) * width] for i in range(len(arr))]


def pa_values(arr) -> list:
    """Canonical values of a pyarrow Array or ChunkedArray."""
    import pyarrow as pa
    import pyarrow.types as pt

    if isinstance(arr, pa.ChunkedArray):
        out = []
        for c in arr.chunks:
            out.extend(pa_values(c))
        return out
    t = arr.type
    if isinstance(t, pa.ExtensionType):
        arr = arr.storage
        t = arr.type
    n = len(arr)
    if n == 0:
        # pyarrow crashes on some accessors (union type_codes) of empty arrays
        # whose buffers were read with length 0.
        return []
    if pt.is_dictionary(t):
        dvals = pa_values(arr.dictionary)
        idx = arr.indices.to_pylist()
        return [dvals[i] if i is not None else None for i in idx]
    if pt.is_null(t):
        return [None] * n
    valid = _valid_mask(arr)
    if pt.is_union(t):
        codes = arr.type_codes.to_pylist()
        code_to_child = {c: i for i, c in enumerate(t.type_codes)}
        dense = t.mode != "sparse"
        offs = arr.offsets.to_pylist() if dense else None
        kids = {}
        out = []
        for slot, code in enumerate(codes):
            k = code_to_child[code]
            if k not in kids:
                # field() applies the union's offset to sparse children.
                kids[k] = pa_values(arr.field(k))
            out.append((code, kids[k][offs[slot] if dense else slot]))
        return out
    if pt.is_struct(t):
        kids = [pa_values(arr.field(i)) for i in range(t.num_fields)]
        return [tuple(k[i] for k in kids) if valid[i] else None for i in range(n)]
    if pt.is_map(t) or pt.is_list(t) or pt.is_large_list(t):
        offsets = arr.offsets.to_pylist()
        if pt.is_map(t):
            keys = pa_values(arr.keys)
            items = pa_values(arr.items)
            kid = list(zip(keys, items))
        else:
            kid = pa_values(arr.values)
        return [kid[offsets[i]:offsets[i + 1]] if valid[i] else None for i in range(n)]
    if pt.is_fixed_size_list(t):
        size = t.list_size
        kid = pa_values(arr.values)  # unsliced child: add the parent's offset
        base = arr.offset
        return [kid[(base + i) * size:(base + i + 1) * size] if valid[i] else None for i in range(n)]
    if pt.is_floating(t):
        bits = t.bit_width
        if bits == 16:
            raw = _fixed_bytes(arr, 2)
            vals = [struct.unpack("<e", r)[0] for r in raw]
        else:
            vals = arr.to_pylist()
        return [_norm_float(v, bits) if ok else None for v, ok in zip(vals, valid)]
    if pt.is_decimal(t):
        width = t.bit_width // 8
        return [int.from_bytes(r, "little", signed=True) if ok else None
                for r, ok in zip(_fixed_bytes(arr, width), valid)]
    if (pt.is_temporal(t) or pt.is_interval(t)) and not pt.is_boolean(t):
        s = str(t)
        if s == "day_time_interval":
            return [struct.unpack("<ii", r) if ok else None for r, ok in zip(_fixed_bytes(arr, 8), valid)]
        if s == "month_day_nano_interval":
            return [struct.unpack("<iiq", r) if ok else None for r, ok in zip(_fixed_bytes(arr, 16), valid)]
        width = t.bit_width // 8
        fmt = {4: "<i", 8: "<q"}[width]
        return [struct.unpack(fmt, r)[0] if ok else None for r, ok in zip(_fixed_bytes(arr, width), valid)]
    # bool, integers, strings, binaries: pyarrow's own conversion is exact.
    return arr.to_pylist()


def _substitute_day_time(t):
    """t with every day-time interval replaced by fixed_size_binary(8) and every
    year-month interval by int32, which have the same layouts. pyarrow cannot
    hand arrays of either interval type to Python at all (no Array class for
    them), but can re-import their buffers under the substitute type."""
    import pyarrow as pa
    import pyarrow.types as pt

    def sub_field(f):
        return f.with_type(_substitute_day_time(f.type))

    if str(t) == "day_time_interval":
        return pa.binary(8)
    if str(t) == "month_interval":
        return pa.int32()  # same layout; its canonical values are the ints
    if pt.is_dictionary(t):
        return pa.dictionary(t.index_type, _substitute_day_time(t.value_type), t.ordered)
    if pt.is_map(t):
        return pa.map_(sub_field(t.key_field), sub_field(t.item_field), t.keys_sorted)
    if pt.is_large_list(t):
        return pa.large_list(sub_field(t.value_field))
    if pt.is_fixed_size_list(t):
        return pa.list_(sub_field(t.value_field), t.list_size)
    if pt.is_list(t):
        return pa.list_(sub_field(t.value_field))
    if pt.is_struct(t):
        return pa.struct([sub_field(t.field(i)) for i in range(t.num_fields)])
    if pt.is_union(t):
        return pa.union([sub_field(t.field(i)) for i in range(t.num_fields)], t.mode, t.type_codes)
    return t


def _fix_day_time(ftype: tuple, values: list) -> list:
    """Undo _substitute_day_time on canonical values, guided by the canonical type."""
    kind = ftype[0]
    if ftype == ("interval", "DAY_TIME"):
        return [struct.unpack("<ii", v) if v is not None else None for v in values]
    if kind in ("list", "largelist", "fixedsizelist"):
        child = ftype[-1][2]
        return [_fix_day_time(child, v) if v is not None else None for v in values]
    if kind == "map":
        entries = ftype[2][2]  # struct<key, value>
        kt, vt = entries[1][0][2], entries[1][1][2]
        return [[(_fix_day_time(kt, [k])[0], _fix_day_time(vt, [x])[0]) for k, x in v] if v is not None else None
                for v in values]
    if kind == "struct":
        kids = [f[2] for f in ftype[1]]
        return [tuple(_fix_day_time(kt, [x])[0] for kt, x in zip(kids, v)) if v is not None else None
                for v in values]
    if kind == "union":
        by_code = {code: f[2] for code, f in zip(ftype[2], ftype[3])}
        return [(c, _fix_day_time(by_code[c], [x])[0]) for c, x in values]
    return values


def _has_day_time(ctype: tuple) -> bool:
    return "DAY_TIME" in repr(ctype) or "YEAR_MONTH" in repr(ctype)


def pa_table_columns(table) -> list:
    """Canonical values of every column of a pyarrow Table, in order."""
    import pyarrow as pa
    fields = [pa_field(f) for f in table.schema]
    if not any(_has_day_time(f[2]) for f in fields):
        return [pa_values(table.column(i)) for i in range(table.num_columns)]
    sub_schema = pa.schema([f.with_type(_substitute_day_time(f.type)) for f in table.schema],
                           metadata=table.schema.metadata)
    cols = [[] for _ in fields]
    for batch in table.to_batches():
        # Re-import the batch's buffers under the substitute schema through
        # the C data interface (PyCapsules).
        _, array_capsule = batch.__arrow_c_array__()
        sub = pa.RecordBatch._import_from_c_capsule(sub_schema.__arrow_c_schema__(), array_capsule)
        for i, f in enumerate(fields):
            cols[i].extend(_fix_day_time(f[2], pa_values(sub.column(i))))
    return cols


# ---------------------------------------------------------------------------
# Comparison helpers


def _canonical_map_type(t: tuple) -> tuple:
    kind = t[0]
    if kind == "map":
        name, nullable, entries_type, dict_desc, md = t[2]
        key, value = entries_type[1]
        kids = (canonical_map_names(("key",) + key[1:]), canonical_map_names(("value",) + value[1:]))
        return ("map", t[1], ("entries", nullable, ("struct", kids), dict_desc, md))
    if kind in ("list", "largelist", "fixedsizelist"):
        return t[:-1] + (canonical_map_names(t[-1]),)
    if kind == "struct":
        return ("struct", tuple(canonical_map_names(f) for f in t[1]))
    if kind == "union":
        return t[:3] + (tuple(canonical_map_names(f) for f in t[3]),)
    return t


def canonical_map_names(field):
    """A canonical field (or list of them) with every map's field names
    replaced by the canonical "entries", "key", "value". pyarrow's IPC reader
    renames them on read (generated_map_non_canonical), so a schema read
    through pyarrow can only be compared with this applied to both sides."""
    if isinstance(field, list):
        return [canonical_map_names(f) for f in field]
    name, nullable, t, dict_desc, md = field
    return (name, nullable, _canonical_map_type(t), dict_desc, md)


def first_difference(expected: list, actual: list, path: str = "") -> str | None:
    """A short description of the first place two canonical values differ."""
    if type(expected) is not type(actual) and not (
        isinstance(expected, (int, float)) and isinstance(actual, (int, float))
        and not isinstance(expected, bool) and not isinstance(actual, bool)
    ):
        return f"{path}: expected {expected!r} ({type(expected).__name__}), got {actual!r} ({type(actual).__name__})"
    if isinstance(expected, (list, tuple)):
        if len(expected) != len(actual):
            return f"{path}: expected length {len(expected)}, got {len(actual)}"
        for i, (e, a) in enumerate(zip(expected, actual)):
            d = first_difference(e, a, f"{path}[{i}]")
            if d:
                return d
        return None
    if expected != actual:
        return f"{path}: expected {expected!r}, got {actual!r}"
    return None


def describe(value: Any, limit: int = 200) -> str:
    s = repr(value)
    return s if len(s) <= limit else s[:limit] + "..."
