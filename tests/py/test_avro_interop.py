"""Avro reader interop: every corpus file and fastavro-written files over a
schema zoo (every type, nested, nullable, every codec fastavro writes, empty
files, zero-row blocks, one huge block) are read by sluice into Arrow IPC and
compared value by value with fastavro's reading of the same file.

sluice is driven through `$SLUICE_BIN convert FILE out.arrows` once the CLI
knows the avro format; until then through the C test binary's driver mode
(`tests/test_avro --to-ipc IN OUT`, found beside the CLI or via
$SLUICE_AVRO_DRIVER).
"""

from __future__ import annotations

import datetime as dt
import decimal
import json
import math
import os
import random
import subprocess
import uuid
from pathlib import Path

import pyarrow as pa
import pyarrow.ipc as ipc
import pytest

fastavro = pytest.importorskip("fastavro")

from conftest import SANITIZER_MARKERS, corpora_dir, uvarint  # noqa: E402

AVRO_DIR = corpora_dir() / "arrow-testing" / "data" / "avro"


def _driver() -> list[str] | None:
    env = os.environ.get("SLUICE_AVRO_DRIVER")
    if env:
        return [env, "--to-ipc"]
    binary = os.environ.get("SLUICE_BIN")
    if binary:
        cand = Path(binary).resolve().parent / "tests" / "test_avro"
        if cand.exists():
            return [str(cand), "--to-ipc"]
    return None


_MODE: list = []


def _mode(tmp: Path) -> list[str]:
    """The command prefix that turns IN into OUT (an IPC stream)."""
    if _MODE:
        return _MODE[0]
    binary = os.environ.get("SLUICE_BIN")
    chosen = None
    if binary:
        probe = tmp / "probe.avro"
        with open(probe, "wb") as f:
            fastavro.writer(f, {"type": "record", "name": "p", "fields": [{"name": "x", "type": "int"}]},
                            [{"x": 1}])
        proc = subprocess.run([binary, "convert", str(probe), str(tmp / "probe.arrows")],
                              capture_output=True, timeout=60)
        if proc.returncode == 0:
            chosen = [binary, "convert"]
    if chosen is None:
        chosen = _driver()
    if chosen is None:
        pytest.skip("neither SLUICE_BIN with the avro reader nor the test_avro driver found")
    _MODE.append(chosen)
    return chosen


def sluice_read(path: Path, tmp: Path) -> pa.Table:
    out = tmp / (path.name + ".arrows")
    proc = subprocess.run([*_mode(tmp), str(path), str(out)], capture_output=True, timeout=300)
    err = proc.stderr.decode(errors="replace")
    assert not any(m in err for m in SANITIZER_MARKERS), err
    assert proc.returncode == 0, f"sluice failed on {path.name}: {err}"
    with open(out, "rb") as f:
        return ipc.open_stream(f).read_all()


def sluice_error(path: Path, tmp: Path) -> str:
    out = tmp / (path.name + ".arrows")
    proc = subprocess.run([*_mode(tmp), str(path), str(out)], capture_output=True, timeout=300)
    err = proc.stderr.decode(errors="replace")
    assert not any(m in err for m in SANITIZER_MARKERS), err
    assert proc.returncode != 0, f"{path.name}: expected an error"
    assert err.strip()
    return err


# ---- comparison ---------------------------------------------------------------


def norm_arrow(t: pa.DataType, v):
    """Arrow's Python value → what fastavro returns for the same Avro value."""
    if v is None:
        return None
    if pa.types.is_map(t):
        return {k: norm_arrow(t.item_type, x) for k, x in v}
    if pa.types.is_list(t):
        return [norm_arrow(t.value_type, x) for x in v]
    if pa.types.is_struct(t):
        return {t.field(i).name: norm_arrow(t.field(i).type, v[t.field(i).name]) for i in range(t.num_fields)}
    if pa.types.is_union(t):
        # The branch's value: normalise it by the first child type it fits.
        for i in range(t.num_fields):
            ct = t.field(i).type
            if (pa.types.is_struct(ct) and isinstance(v, dict)) or (pa.types.is_list(ct) and isinstance(v, list)):
                return norm_arrow(ct, v)
        return v
    if pa.types.is_timestamp(t) and t.unit == "ns":
        return getattr(v, "value", v)  # fastavro has no nanosecond logical types: ints
    if isinstance(v, pa.MonthDayNano):
        return (v.months, v.days, v.nanoseconds // 1_000_000)
    if isinstance(v, float) and math.isnan(v):
        return "NaN"
    return v


def norm_avro(v):
    if isinstance(v, dict):
        return {k: norm_avro(x) for k, x in v.items()}
    if isinstance(v, list):
        return [norm_avro(x) for x in v]
    if isinstance(v, tuple) and len(v) == 2 and isinstance(v[0], str):
        return norm_avro(v[1])  # (record name, value) from return_record_name
    if isinstance(v, uuid.UUID):
        return str(v)
    if isinstance(v, float) and math.isnan(v):
        return "NaN"
    return v


def fastavro_rows(path: Path):
    with open(path, "rb") as f:
        r = fastavro.reader(f)
        return r.writer_schema, [dict(x) if isinstance(x, dict) else x for x in r]


def compare(path: Path, table: pa.Table, durations=()):
    schema, rows = fastavro_rows(path)
    assert table.num_rows == len(rows), f"{path.name}: {table.num_rows} rows, fastavro {len(rows)}"
    assert table.schema.metadata and b"avro.schema" in table.schema.metadata
    is_record = isinstance(schema, dict) and schema.get("type") == "record"
    for name in table.column_names:
        col = table.column(name)
        got = [norm_arrow(col.type, v) for v in col.to_pylist()]
        if is_record:
            want = [norm_avro(r.get(name)) for r in rows]
        else:
            want = [norm_avro(r) for r in rows]
        if name in durations:
            want = [None if w is None else tuple(int.from_bytes(w[i:i + 4], "little") for i in (0, 4, 8))
                    for w in want]
        assert got == want, f"{path.name}: column {name} differs"


# ---- corpus -------------------------------------------------------------------

CORPUS = sorted(AVRO_DIR.glob("*.avro")) if AVRO_DIR.is_dir() else []


@pytest.mark.parametrize("path", CORPUS, ids=[p.name for p in CORPUS])
def test_corpus_file(path, tmp_path):
    try:
        fastavro_rows(path)
    except Exception as e:  # fastavro cannot read it: check sluice reads it at all
        sluice_read(path, tmp_path)
        pytest.skip(f"fastavro cannot read {path.name}: {e}")
    table = sluice_read(path, tmp_path)
    # fastavro returns Avro durations as their 12 raw bytes.
    durations = ("duration_field",) if path.name == "duration_uuid.avro" else ()
    compare(path, table, durations)


# ---- zoo ----------------------------------------------------------------------

ZOO = {
    "type": "record", "name": "Zoo", "namespace": "t.zoo",
    "fields": [
        {"name": "n", "type": "null"},
        {"name": "b", "type": "boolean"},
        {"name": "i", "type": "int"},
        {"name": "l", "type": "long"},
        {"name": "f", "type": "float"},
        {"name": "d", "type": "double"},
        {"name": "by", "type": "bytes"},
        {"name": "s", "type": "string"},
        {"name": "ns", "type": ["null", "string"]},
        {"name": "sn", "type": ["long", "null"]},
        {"name": "rec", "type": {"type": "record", "name": "Inner", "fields": [
            {"name": "x", "type": "int"}, {"name": "y", "type": ["null", "double"]}]}},
        {"name": "rec2", "type": ["null", "Inner"]},
        {"name": "e", "type": {"type": "enum", "name": "Color", "symbols": ["RED", "GREEN", "BLUE"]}},
        {"name": "ae", "type": {"type": "array", "items": "Color"}},
        {"name": "ad", "type": {"type": "array", "items": "double"}},
        {"name": "al", "type": {"type": "array", "items": "long"}},
        {"name": "aas", "type": {"type": "array", "items": {"type": "array", "items": ["null", "string"]}}},
        {"name": "m", "type": {"type": "map", "values": "int"}},
        {"name": "mr", "type": {"type": "map", "values": ["null", "Inner"]}},
        {"name": "fx", "type": {"type": "fixed", "name": "F4", "size": 4}},
        {"name": "u", "type": ["int", "string", "Inner", "null"]},
        {"name": "dec", "type": {"type": "bytes", "logicalType": "decimal", "precision": 20, "scale": 4}},
        {"name": "decf", "type": {"type": "fixed", "name": "D16", "size": 16, "logicalType": "decimal",
                                  "precision": 38, "scale": 2}},
        {"name": "dec256", "type": {"type": "bytes", "logicalType": "decimal", "precision": 60, "scale": 10}},
        {"name": "uid", "type": {"type": "string", "logicalType": "uuid"}},
        {"name": "date", "type": {"type": "int", "logicalType": "date"}},
        {"name": "tms", "type": {"type": "int", "logicalType": "time-millis"}},
        {"name": "tus", "type": {"type": "long", "logicalType": "time-micros"}},
        {"name": "tsms", "type": {"type": "long", "logicalType": "timestamp-millis"}},
        {"name": "tsus", "type": ["null", {"type": "long", "logicalType": "timestamp-micros"}]},
        {"name": "ltms", "type": {"type": "long", "logicalType": "local-timestamp-millis"}},
        {"name": "ltus", "type": {"type": "long", "logicalType": "local-timestamp-micros"}},
        {"name": "unk", "type": {"type": "string", "logicalType": "no-such-thing"}},
    ],
}


def zoo_row(k: int, rnd: random.Random):
    utc = dt.timezone.utc
    inner = {"x": k, "y": None if k % 3 == 0 else k / 7}
    return {
        "n": None, "b": k % 2 == 0, "i": rnd.randint(-2**31, 2**31 - 1), "l": rnd.randint(-2**63, 2**63 - 1),
        "f": float(k) / 4, "d": rnd.random() * 1e300 if k % 5 else float("nan"),
        "by": bytes(rnd.getrandbits(8) for _ in range(k % 9)), "s": "é" * (k % 4) + str(k),
        "ns": None if k % 2 else f"v{k}", "sn": None if k % 3 == 1 else -k,
        "rec": inner, "rec2": None if k % 2 else inner,
        "e": ["RED", "GREEN", "BLUE"][k % 3], "ae": ["BLUE"] * (k % 3),
        "ad": [rnd.random() for _ in range(k % 20)], "al": [rnd.randint(-2**40, 2**40) for _ in range(k % 5)],
        "aas": [[None, "a"], []] if k % 2 else [],
        "m": {f"k{j}": j for j in range(k % 4)}, "mr": {"a": None, "b": inner} if k % 2 else {},
        "fx": bytes([k % 256, 1, 2, 3]),
        "u": [k, f"s{k}", inner, None][k % 4],
        "dec": decimal.Decimal(rnd.randint(-10**19, 10**19)).scaleb(-4),
        "decf": decimal.Decimal(rnd.randint(-10**37, 10**37)).scaleb(-2),
        "dec256": decimal.Decimal(rnd.randint(-10**59, 10**59)).scaleb(-10),
        "uid": str(uuid.UUID(int=rnd.getrandbits(128))),
        "date": dt.date(1970, 1, 1) + dt.timedelta(days=rnd.randint(-10000, 30000)),
        "tms": dt.time(k % 24, k % 60, 1, (k % 1000) * 1000),
        "tus": dt.time(k % 24, 2, 3, k % 1000000),
        "tsms": dt.datetime(2020, 1, 1, tzinfo=utc) + dt.timedelta(milliseconds=rnd.randint(0, 10**11)),
        "tsus": None if k % 4 == 0 else dt.datetime(1999, 1, 1, tzinfo=utc) + dt.timedelta(microseconds=k * 12345),
        "ltms": dt.datetime(2021, 5, 5) + dt.timedelta(milliseconds=k),
        "ltus": dt.datetime(2021, 5, 5) + dt.timedelta(microseconds=k),
        "unk": f"u{k}",
    }


CODECS = ["null", "deflate", "snappy", "zstandard", "bzip2", "xz"]


def write_zoo(path: Path, codec: str, rows: int, sync_interval: int = 2000):
    rnd = random.Random(42)
    with open(path, "wb") as f:
        fastavro.writer(f, fastavro.parse_schema(ZOO), (zoo_row(k, rnd) for k in range(rows)),
                        codec=codec, sync_interval=sync_interval)


@pytest.mark.parametrize("codec", CODECS)
def test_zoo_codecs(codec, tmp_path):
    path = tmp_path / f"zoo_{codec}.avro"
    try:
        write_zoo(path, codec, 300)
    except (ImportError, ValueError) as e:  # snappy: cramjam; zstandard: backports.zstd
        pytest.skip(f"fastavro cannot write {codec} here: {e}")
    table = sluice_read(path, tmp_path)
    compare(path, table)
    t = table.schema
    assert t.field("e").type == pa.dictionary(pa.int32(), pa.utf8())
    assert t.field("m").type == pa.map_(pa.utf8(), pa.field("value", pa.int32(), nullable=False))
    assert t.field("fx").type == pa.binary(4)
    assert t.field("dec").type == pa.decimal128(20, 4)
    assert t.field("dec256").type == pa.decimal256(60, 10)
    assert t.field("tsms").type == pa.timestamp("ms", tz="UTC")
    assert t.field("ltus").type == pa.timestamp("us")
    assert t.field("date").type == pa.date32()
    assert t.field("tms").type == pa.time32("ms")
    assert t.field("tus").type == pa.time64("us")
    assert t.field("uid").type == pa.utf8()
    assert t.field("ns").nullable and not t.field("s").nullable
    assert pa.types.is_union(t.field("u").type)


def test_columns_named_twice(tmp_path):
    """A column asked for twice comes out twice, as pyarrow's read_table
    (columns=["s", "s"]) and sluice's other readers give it, over several
    splits and with nested and dictionary columns; values are fastavro's."""
    if "convert" not in _mode(tmp_path):
        pytest.skip("needs the sluice CLI")
    path = tmp_path / "zoo_twice.avro"
    write_zoo(path, "deflate", 3000, sync_interval=500)
    names = ["rec", "s", "e", "rec", "ad", "s", "e"]
    out = tmp_path / "twice.arrows"
    proc = subprocess.run([*_mode(tmp_path), str(path), str(out), "--threads", "2",
                           "-c", ",".join(names)], capture_output=True, timeout=300)
    assert proc.returncode == 0, proc.stderr.decode(errors="replace")
    with open(out, "rb") as f:
        got = ipc.open_stream(f).read_all()
    assert got.column_names == names
    _, rows = fastavro_rows(path)
    for i, name in enumerate(names):
        col = got.column(i)
        assert [norm_arrow(col.type, v) for v in col.to_pylist()] == [norm_avro(r[name]) for r in rows], name


def test_zoo_one_huge_block(tmp_path):
    path = tmp_path / "zoo_big.avro"
    write_zoo(path, "deflate", 3000, sync_interval=1 << 30)
    compare(path, sluice_read(path, tmp_path))


def test_header_metadata_both_ways(tmp_path):
    """The header's own keys (not avro.*) become schema metadata, and a
    table's schema metadata goes into the header of the Avro file written
    from it, where fastavro finds it."""
    path = tmp_path / "meta.avro"
    with open(path, "wb") as f:
        fastavro.writer(f, fastavro.parse_schema(ZOO), [], metadata={"origin": "ü-test", "k.2": "v"})
    table = sluice_read(path, tmp_path)
    assert table.schema.metadata[b"origin"] == "ü-test".encode()
    assert table.schema.metadata[b"k.2"] == b"v"
    binary = os.environ.get("SLUICE_BIN")
    if not binary:
        pytest.skip("writing needs SLUICE_BIN")
    src, out = tmp_path / "meta.arrow", tmp_path / "out.avro"
    t = pa.table({"a": [1, 2]}).replace_schema_metadata({"pandas": "{}", "avro.codec": "x",
                                                         "sluice.warning": "w"})
    with ipc.new_file(src, t.schema) as w:
        w.write_table(t)
    subprocess.run([binary, "convert", str(src), str(out)], check=True)
    with open(out, "rb") as f:
        reader = fastavro.reader(f)
        assert reader.metadata["pandas"] == "{}"
        assert reader.metadata["avro.codec"] == "null"
        assert "sluice.warning" not in reader.metadata
        assert [r["a"] for r in reader] == [1, 2]


def test_header_with_many_metadata_entries(tmp_path):
    """A header map block of 5000 entries (fastavro writes them in one block)
    reads as fastavro reads it, every key kept; a count that the bytes left
    cannot hold (each entry takes 2 bytes at least) is an error naming it."""
    path = tmp_path / "many_meta.avro"
    meta = {f"k{i}": f"v{i}" for i in range(5000)}
    with open(path, "wb") as f:
        fastavro.writer(f, {"type": "record", "name": "r", "fields": [{"name": "a", "type": "int"}]},
                        [{"a": 1}, {"a": 2}], metadata=dict(meta))  # it adds avro.* keys
    table = sluice_read(path, tmp_path)
    with open(path, "rb") as f:
        r = fastavro.reader(f)
        assert table.to_pylist() == list(r)
        assert all(r.metadata[k] == v for k, v in meta.items())
    assert {k.decode(): v.decode() for k, v in table.schema.metadata.items()
            if k.startswith(b"k")} == meta
    data = path.read_bytes()
    forged = tmp_path / "forged_meta.avro"
    # the count 5002 (zigzag varint 0x94 0x4e) → 2^20
    assert data[4:6] == bytes([0x94, 0x4e])
    forged.write_bytes(data[:4] + bytes([0x80, 0x80, 0x80, 0x01]) + data[6:])
    err = sluice_error(forged, tmp_path)
    assert "1048576 metadata entries cannot fit" in err and "byte 8" in err, err


def test_empty_file(tmp_path):
    path = tmp_path / "empty.avro"
    with open(path, "wb") as f:
        fastavro.writer(f, fastavro.parse_schema(ZOO), [])
    table = sluice_read(path, tmp_path)
    assert table.num_rows == 0
    assert table.schema.names == [f["name"] for f in ZOO["fields"]]


def _splice_zero_blocks(src: Path, dst: Path):
    """Inserts zero-row blocks after the header and between blocks."""
    data = src.read_bytes()
    sync = data[-16:]
    header_end = data.index(sync) + 16
    body = data[header_end:]
    zero = b"\x00\x00" + sync
    parts = body.split(sync)
    assert parts[-1] == b""
    blocks = [p + sync for p in parts[:-1]]
    dst.write_bytes(data[:header_end] + zero + zero.join(blocks) + zero)


def test_zero_row_blocks(tmp_path):
    src = tmp_path / "zoo_src.avro"
    write_zoo(src, "null", 50, sync_interval=500)
    dst = tmp_path / "zoo_zero.avro"
    _splice_zero_blocks(src, dst)
    table = sluice_read(dst, tmp_path)
    compare(src, table)


def test_non_record_root_and_nanos(tmp_path):
    path = tmp_path / "root.avro"
    with open(path, "wb") as f:
        fastavro.writer(f, {"type": "array", "items": "int"}, [[1, 2], [], [3]])
    t = sluice_read(path, tmp_path)
    assert t.column_names == ["value"]
    assert t.column("value").to_pylist() == [[1, 2], [], [3]]
    path = tmp_path / "nanos.avro"
    # fastavro has no nanosecond logical types: it writes the longs as given.
    sch = {"type": "record", "name": "r", "fields": [
        {"name": "ts", "type": {"type": "long", "logicalType": "timestamp-nanos"}},
        {"name": "lt", "type": {"type": "long", "logicalType": "local-timestamp-nanos"}}]}
    with open(path, "wb") as f:
        fastavro.writer(f, sch, [{"ts": 1234567890123456789, "lt": -5}])
    t = sluice_read(path, tmp_path)
    assert t.schema.field("ts").type == pa.timestamp("ns", tz="UTC")
    assert t.schema.field("lt").type == pa.timestamp("ns")
    assert t.column("ts").cast(pa.int64()).to_pylist() == [1234567890123456789]
    assert t.column("lt").cast(pa.int64()).to_pylist() == [-5]


def test_w2_shape(tmp_path):
    path = tmp_path / "w2.avro"
    sch = {"type": "record", "name": "w2", "fields": [
        {"name": "uid", "type": "long"}, {"name": "random", "type": "double"},
        {"name": "uuid1", "type": "string"}, {"name": "uuid2", "type": "string"},
        {"name": "features", "type": {"type": "array", "items": "double"}}]}
    rnd = random.Random(7)
    rows = [{"uid": k + 1, "random": rnd.random(), "uuid1": str(uuid.uuid4()), "uuid2": str(uuid.uuid4()),
             "features": [rnd.random() for _ in range(1600)]} for k in range(60)]
    with open(path, "wb") as f:
        fastavro.writer(f, sch, rows, codec="snappy")
    t = sluice_read(path, tmp_path)
    # Avro items are never null unless a union says so: the Arrow field says it too.
    assert t.schema.field("features").type == pa.list_(pa.field("item", pa.float64(), nullable=False))
    assert t.column("features").to_pylist() == [r["features"] for r in rows]
    assert t.column("uid").to_pylist() == list(range(1, 61))


@pytest.mark.parametrize("codec", ["null", "deflate"])
def test_double_arrays_over_many_splits(codec, tmp_path):
    # 3.5 MB of arrays: several splits, blocks crossing split ends, and rows
    # whose lengths vary tenfold, so that the room a split reserves for its
    # items (its bytes, plus one block guessed as large as the current one)
    # is sometimes short and sometimes not; values must not depend on it.
    path = tmp_path / "arrays.avro"
    sch = {"type": "record", "name": "r", "fields": [
        {"name": "id", "type": "long"},
        {"name": "xs", "type": {"type": "array", "items": "double"}}]}
    rnd = random.Random(11)
    rows = [{"id": k, "xs": [rnd.random() for _ in range(rnd.choice((300, 3000)))]}
            for k in range(260)]
    with open(path, "wb") as f:
        fastavro.writer(f, sch, rows, codec=codec, sync_interval=16000)
    t = sluice_read(path, tmp_path)
    assert t.column("id").to_pylist() == list(range(260))
    assert t.column("xs").to_pylist() == [r["xs"] for r in rows]


def test_nesting_depth_limit(tmp_path):
    """Nesting is counted in Arrow levels, so ["null", record] wrappers cost
    none: 24 (once refused as "invalid Avro schema: types nested too
    deeply") and 63 nested optional records read as fastavro reads them, and
    so do 62 arrays (a non-record root) of an enum, whose wrapper column and
    dictionary take two of the builders' (and writers') 64 levels; one more
    level is an error naming sluice's limit of 64 (fastavro reads it)."""
    def optional_records(n):
        t, v = "int", 1
        for i in range(n):
            t = ["null", {"type": "record", "name": f"N{i}", "fields": [{"name": "c", "type": t}]}]
            v = {"c": v}
        return {"type": "record", "name": "R", "fields": [{"name": "r", "type": t}]}, [{"r": v}]

    def arrays(n):
        t, v = {"type": "enum", "name": "E", "symbols": ["A", "B"]}, "B"
        for _ in range(n):
            t, v = {"type": "array", "items": t}, [v]
        return t, [v]

    for i, (schema, rows) in enumerate([optional_records(24), optional_records(63), arrays(62)]):
        path = tmp_path / f"deep{i}.avro"
        with open(path, "wb") as f:
            fastavro.writer(f, fastavro.parse_schema(schema), rows)
        compare(path, sluice_read(path, tmp_path))
    for i, (schema, rows) in enumerate([optional_records(64), arrays(63)]):
        path = tmp_path / f"too_deep{i}.avro"
        with open(path, "wb") as f:
            fastavro.writer(f, fastavro.parse_schema(schema), rows)
        assert fastavro_rows(path)[1] == rows
        err = sluice_error(path, tmp_path)
        assert "deeper than sluice's limit of 64 levels" in err and "invalid" not in err, err


def test_schema_json_past_parser_depth(tmp_path):
    """A schema nested past the JSON parser's 2,048 levels is still valid
    JSON: the error says how deep is too deep, not "not valid JSON"."""
    def zigzag(n):
        n, out = (n << 1) ^ (n >> 63), b""
        while n > 0x7F:
            out, n = out + bytes([(n & 0x7F) | 0x80]), n >> 7
        return out + bytes([n])

    def text(b):
        return zigzag(len(b)) + b

    schema = '{"type": "array", "items": ' * 3000 + '"int"' + "}" * 3000
    assert schema.count("[") == 0 and schema.count("{") == schema.count("}")  # balanced JSON
    path = tmp_path / "deep_json.avro"
    path.write_bytes(b"Obj\x01" + zigzag(1) + text(b"avro.schema") + text(schema.encode())
                     + zigzag(0) + bytes(16))
    err = sluice_error(path, tmp_path)
    assert "deeper than the JSON parser's limit of 2048 levels" in err and "not valid JSON" not in err, err
    assert "at most 64 deep" in err, err


# ---- bad input ----------------------------------------------------------------


def test_bad_inputs(tmp_path):
    src = tmp_path / "good.avro"
    write_zoo(src, "snappy", 40, sync_interval=500)
    data = src.read_bytes()
    cases = {
        "magic.avro": b"Obj\x02" + data[4:],
        "trunc.avro": data[: len(data) - 30],
        "crc.avro": data[:-20] + bytes([data[-20] ^ 0x55]) + data[-19:],
    }
    for name, blob in cases.items():
        p = tmp_path / name
        p.write_bytes(blob)
        err = sluice_error(p, tmp_path)
        assert name in err or "avro" in err
    assert "bad magic" in sluice_error(tmp_path / "magic.avro", tmp_path)


def _zigzag(n: int) -> bytes:
    return uvarint((n << 1) ^ (n >> 63))


def _read_long(data: bytes, at: int) -> tuple:
    shift = n = 0
    while True:
        b = data[at]
        at += 1
        n |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            return (n >> 1) ^ -(n & 1), at


def test_zstd_window_over_the_limit_is_named(tmp_path):
    """A zstandard block whose frame has no content size (so it is decoded
    as a stream) and a window past zstd's default 128 MiB limit: the error
    names the window it needs, not a corrupt block."""
    zstandard = pytest.importorskip("zstandard")
    src = tmp_path / "zstd.avro"
    with open(src, "wb") as f:
        fastavro.writer(f, {"type": "record", "name": "r", "fields": [{"name": "a", "type": "long"}]},
                        [{"a": i} for i in range(1000)], codec="zstandard", sync_interval=1 << 20)
    data = src.read_bytes()
    sync = data[-16:]
    start = data.index(sync) + 16
    count, at = _read_long(data, start)
    size, at = _read_long(data, at)
    assert data[at + size:] == sync  # one block
    raw = zstandard.ZstdDecompressor().decompress(data[at:at + size])
    params = zstandard.ZstdCompressionParameters(window_log=28, write_content_size=False)
    co = zstandard.ZstdCompressor(compression_params=params).compressobj()
    frame = co.compress(raw) + co.flush()
    path = tmp_path / "long_window.avro"
    path.write_bytes(data[:start] + _zigzag(count) + _zigzag(len(frame)) + frame + sync)
    err = sluice_error(path, tmp_path)
    assert f"block 0 at byte {start}" in err, err
    assert "the zstd frame needs a window of 256 MiB, more than the 128 MiB limit" in err, err


def test_forged_count_of_a_top_level_long(tmp_path):
    """A file of top-level "long" values with a forged count: the count that
    cannot fit in the block's bytes, with a reader schema too. The one-column
    wrapper row was taken for a value of no bytes ("the schema holds only
    nulls and empty records")."""
    binary = os.environ.get("SLUICE_BIN")
    if not binary:
        pytest.skip("needs the sluice CLI")
    good = tmp_path / "top.avro"
    with open(good, "wb") as f:
        fastavro.writer(f, "long", [5])
    data = good.read_bytes()
    sync = data[-16:]
    start = data.index(sync) + 16
    assert data[start:start + 2] == _zigzag(1) + _zigzag(1)  # one value of one byte
    path = tmp_path / "forged.avro"
    path.write_bytes(data[:start] + _zigzag(1 << 30) + data[start + 1:])
    rs = tmp_path / "long.avsc"
    rs.write_text('"long"')
    for extra in ([], ["--reader-schema", str(rs)]):
        proc = subprocess.run([binary, "convert", *extra, str(path), str(tmp_path / "o.arrow")],
                              capture_output=True, timeout=60)
        err = proc.stderr.decode(errors="replace")
        assert proc.returncode != 0
        assert f"block 0 at byte {start}: 1073741824 objects cannot fit in 1 bytes" in err, (extra, err)


def test_map_block_size_is_checked(tmp_path):
    """A map block with a negative count gives its byte size: a wrong one is
    an error whichever columns are read, as for arrays (the map was decoded
    by its count and the size ignored, while a projection that skips the
    map jumps by the size: the file read whole but failed with -c z)."""
    binary = os.environ.get("SLUICE_BIN")
    if not binary:
        pytest.skip("needs the sluice CLI")
    sch = {"type": "record", "name": "r", "fields": [
        {"name": "a", "type": {"type": "map", "values": "int"}}, {"name": "z", "type": "int"}]}
    good = tmp_path / "map.avro"
    with open(good, "wb") as f:
        fastavro.writer(f, sch, [{"a": {"k": 1, "j": 0}, "z": 42}])
    data = good.read_bytes()
    sync = data[-16:]
    start = data.index(sync) + 16
    _, at = _read_long(data, start)
    _, at = _read_long(data, at)
    entries = _zigzag(1) + b"k" + _zigzag(1) + _zigzag(1) + b"j" + _zigzag(0)
    assert data[at:at + 1 + len(entries) + 2] == _zigzag(2) + entries + _zigzag(0) + _zigzag(42)

    def with_size(size: int) -> Path:
        rec = _zigzag(-2) + _zigzag(size) + entries + _zigzag(0) + _zigzag(42)
        path = tmp_path / f"map{size}.avro"
        path.write_bytes(data[:start] + _zigzag(1) + _zigzag(len(rec)) + rec + sync)
        return path

    right = with_size(len(entries))
    with open(right, "rb") as f:
        assert list(fastavro.reader(f)) == [{"a": {"k": 1, "j": 0}, "z": 42}]
    for cols in (["a", "z"], ["z"], ["a"]):
        out = tmp_path / "o.arrow"
        subprocess.run([binary, "convert", "-c", ",".join(cols), str(right), str(out)], check=True,
                       capture_output=True)
        with open(out, "rb") as f:
            got = ipc.open_file(f).read_all().to_pylist()
        assert got == [{k: v for k, v in {"a": [("k", 1), ("j", 0)], "z": 42}.items() if k in cols}]
    wrong = with_size(0)
    for cols in (["a", "z"], ["z"], ["a"]):
        proc = subprocess.run([binary, "convert", "-c", ",".join(cols), str(wrong),
                               str(tmp_path / "o.arrow")], capture_output=True)
        err = proc.stderr.decode(errors="replace")
        assert proc.returncode != 0, cols
        assert "object 0: field 'a'" in err, (cols, err)
        if "a" in cols:
            assert "map block of 6 bytes declared 0" in err, err


def _fastavro_ids(path: Path) -> tuple:
    """The ids fastavro reads, and whether it read the whole file."""
    ids = []
    try:
        with open(path, "rb") as f:
            for r in fastavro.reader(f):
                ids.append(r["id"])
    except Exception:  # noqa: BLE001 - any error: the file is not whole
        return ids, False
    return ids, True


def test_corrupt_block_after_a_split_boundary(tmp_path):
    """A corrupt or truncated block at or next to a split boundary (1 MiB
    splits): sluice, with 1 and 2 threads, gives the rows fastavro reads or
    an error, never fewer rows and exit 0. The next split's search steps
    over a block that fails its check, so the block just past a boundary
    was lost (98,873 of 100,000 rows for a bad sync marker, exit 0)."""
    binary = os.environ.get("SLUICE_BIN")
    if not binary:
        pytest.skip("needs the sluice CLI")
    sch = {"type": "record", "name": "r", "fields": [{"name": "id", "type": "long"},
                                                     {"name": "s", "type": "string"}]}
    src = tmp_path / "good.avro"
    with open(src, "wb") as f:
        fastavro.writer(f, sch, ({"id": i, "s": "x" * (i % 50)} for i in range(100000)),
                        sync_interval=16000)
    good = src.read_bytes()
    hdr_end = good.index(good[-16:]) + 16
    blocks, pos = [], hdr_end  # (header, data, size)
    while pos < len(good):
        _, at = _read_long(good, pos)
        size, data = _read_long(good, at)
        blocks.append((pos, data, size))
        pos = data + size + 16
    cases = []
    for boundary in (hdr_end + (1 << 20), hdr_end + (2 << 20)):
        k = next(i for i, b in enumerate(blocks) if b[0] >= boundary)
        for h, data, size in blocks[k - 2:k + 2]:
            for name, at in (("sync", data + size + 5), ("size", data - 1), ("count", h)):
                bad = bytearray(good)
                bad[at] ^= 0x04
                cases.append((f"{name}@{at}", bytes(bad)))
            cases.append((f"cut@{data + 100}", good[:data + 100]))
            cases.append((f"cut@{data + size + 8}", good[:data + size + 8]))
    errors = 0
    for label, content in cases:
        path = tmp_path / "bad.avro"
        path.write_bytes(content)
        want, whole = _fastavro_ids(path)
        for threads in ("1", "2"):
            out = tmp_path / "bad.arrows"
            proc = subprocess.run([binary, "--threads", threads, "convert", str(path), str(out)],
                                  capture_output=True, timeout=300)
            err = proc.stderr.decode(errors="replace")
            assert not any(m in err for m in SANITIZER_MARKERS), err
            if proc.returncode != 0:
                assert "bad.avro" in err and "byte" in err, (label, err)
                errors += 1
                continue
            with open(out, "rb") as f:
                got = ipc.open_stream(f).read_all().column("id").to_pylist()
            assert whole and got == want, (label, threads, len(got), len(want))
    assert errors > 0


def test_sync_marker_and_a_block_inside_data(tmp_path):
    """Every tenth row holds, in a bytes field, the file's sync marker, a
    well-formed block of one object and the marker again (fastavro writes
    the file). Where a split boundary falls before such a copy, the next
    split does not believe it (the rows after it do not fit as blocks) and
    finds its first block by walking from the first: sluice reads the rows
    fastavro reads, in order, with 1, 2 and 8 threads. It read 1,156 rows and
    then refused the file ("the sync marker also occurs inside the data"),
    with 1 thread too, which a pipe read whole."""
    binary = os.environ.get("SLUICE_BIN")
    if not binary:
        pytest.skip("needs the sluice CLI")
    import io
    sch = {"type": "record", "name": "R", "fields": [{"name": "i", "type": "long"},
                                                     {"name": "b", "type": "bytes"}]}
    sync = b"SYNCSYNCSYNCSYNC"
    inner = io.BytesIO()
    fastavro.schemaless_writer(inner, sch, {"i": 999, "b": b""})
    fake = sync + bytes([2, 2 * len(inner.getvalue())]) + inner.getvalue() + sync
    path = tmp_path / "embedded_sync.avro"
    with open(path, "wb") as f:
        fastavro.writer(f, sch, [{"i": i, "b": fake if i % 10 == 0 else b"x" * 1000}
                                 for i in range(3000)], sync_marker=sync, sync_interval=20000)
    with open(path, "rb") as f:
        want = [r["i"] for r in fastavro.reader(f)]
    for threads in ("1", "2", "8"):
        out = tmp_path / "out.arrows"
        proc = subprocess.run([binary, "--threads", threads, "convert", str(path), str(out)],
                              capture_output=True, timeout=300)
        assert proc.returncode == 0, (threads, proc.stderr.decode(errors="replace"))
        with open(out, "rb") as f:
            assert ipc.open_stream(f).read_all().column("i").to_pylist() == want, threads


def test_embedded_avro_file_with_the_same_sync_marker(tmp_path):
    """Two rows hold, in a bytes field, a whole Avro file of 3 MB written
    with the outer file's sync marker and schema (fastavro's sync_marker=):
    its blocks hold up as blocks for far more than the 1 MiB a split checks
    past its first marker, so a split boundary before them started a split
    inside the outer block. sluice reads the rows fastavro reads, from a
    path with 1, 2 and 8 threads (1 MiB splits: 10 of them) and from a
    pipe. It refused the path ("the sync marker also occurs inside the
    data ... read it from a pipe"), with 1 thread too."""
    binary = os.environ.get("SLUICE_BIN")
    if not binary:
        pytest.skip("needs the sluice CLI")
    import io
    sch = {"type": "record", "name": "R", "fields": [{"name": "i", "type": "long"},
                                                     {"name": "b", "type": "bytes"}]}
    sync = bytes(range(16))
    inner = io.BytesIO()
    fastavro.writer(inner, sch, ({"i": -j, "b": bytes([j % 251]) * 900} for j in range(3500)),
                    sync_marker=sync, sync_interval=16000)
    emb = inner.getvalue()
    path = tmp_path / "embedded_file.avro"
    with open(path, "wb") as f:
        fastavro.writer(f, sch, ({"i": i, "b": emb if i in (40, 190) else b"y" * 20000}
                                 for i in range(250)), sync_marker=sync, sync_interval=16000)
    assert path.stat().st_size > 10 << 20
    with open(path, "rb") as f:
        want = [(r["i"], r["b"]) for r in fastavro.reader(f)]
    assert [i for i, _ in want] == list(range(250))
    for threads in ("1", "2", "8", "pipe"):
        out = tmp_path / "out.arrows"
        if threads == "pipe":
            with open(path, "rb") as f:
                proc = subprocess.run([binary, "convert", "-f", "avro", "-", str(out)], stdin=f,
                                      capture_output=True, timeout=300)
        else:
            proc = subprocess.run([binary, "--threads", threads, "convert", str(path), str(out)],
                                  capture_output=True, timeout=300)
        err = proc.stderr.decode(errors="replace")
        assert proc.returncode == 0 and not any(m in err for m in SANITIZER_MARKERS), (threads, err)
        with open(out, "rb") as f:
            got = ipc.open_stream(f).read_all()
        assert list(zip(got.column("i").to_pylist(), got.column("b").to_pylist())) == want, \
            threads


@pytest.mark.parametrize("name", ["Beträge", "1R", "a-b", "R.", "a..b"])
def test_type_names_outside_the_spec(name, tmp_path):
    """Type names that the spec's [A-Za-z_][A-Za-z0-9_]* does not allow are
    read, defined and referred to, as fastavro and Java read them (Java 1.12
    writes Unicode letters), and as sluice reads such field names; it
    refused the file ("invalid type name")."""
    inner = {"type": "record", "name": name, "fields": [{"name": "w", "type": "int"}]}
    sch = {"type": "record", "name": "Z", "namespace": "de.bank",
           "fields": [{"name": "b", "type": inner}, {"name": "c", "type": name}]}
    path = tmp_path / "names.avro"
    rows = [{"b": {"w": 5}, "c": {"w": 6}}]
    with open(path, "wb") as f:
        fastavro.writer(f, sch, rows)
    with open(path, "rb") as f:
        assert list(fastavro.reader(f)) == rows
    assert sluice_read(path, tmp_path).to_pylist() == rows


# ---- reader schema resolution ---------------------------------------------------


def test_reader_schema_resolution(tmp_path):
    driver = _driver()
    if driver is None:
        pytest.skip("the test_avro driver (format options) is not available")
    import copy
    import json
    path = tmp_path / "zoo_resolve.avro"
    write_zoo(path, "deflate", 200)
    reader = copy.deepcopy(ZOO)
    fields = {f["name"]: f for f in reader["fields"]}
    fields["i"]["type"] = "long"                       # int → long
    fields["l"]["type"] = "double"                     # long → double
    fields["f"]["type"] = "double"                     # float → double
    fields["s"]["type"] = "bytes"                      # string → bytes
    fields["ns"]["type"] = ["string", "null"]          # branch order swapped
    fields["e"]["type"] = {"type": "enum", "name": "Color", "symbols": ["BLUE", "GREEN", "RED", "PINK"]}
    fields["rec"]["type"] = {"type": "record", "name": "Inner", "fields": [
        {"name": "y", "type": ["null", "double"]},
        {"name": "z", "type": {"type": "map", "values": "long"}, "default": {"q": 7}},
        {"name": "x", "type": "long"}]}
    fields["rec2"]["type"] = ["null", "Inner"]
    fields["mr"]["type"] = {"type": "map", "values": ["null", "Inner"]}
    fields["u"]["type"] = ["int", "string", "Inner", "null"]
    keep = [f for f in reader["fields"] if f["name"] not in ("d", "by", "al", "ad")]
    keep = keep[2:] + keep[:2] + [  # reordered: n and b move to the end
        {"name": "new_i", "type": "int", "default": 42},
        {"name": "new_n", "type": ["null", "string"], "default": None},
        {"name": "new_a", "type": {"type": "array", "items": "string"}, "default": ["a", "b"]},
        {"name": "new_f", "type": {"type": "fixed", "name": "F2", "size": 2}, "default": "\u00ff\u0001"},
        {"name": "new_e", "type": "Color", "default": "PINK"},
    ]
    reader["fields"] = keep
    rs = tmp_path / "reader.avsc"
    rs.write_text(json.dumps(reader))
    out = tmp_path / "resolved.arrows"
    proc = subprocess.run([*driver, str(path), str(out), f"reader_schema={rs}"], capture_output=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr.decode()
    with open(out, "rb") as f:
        table = ipc.open_stream(f).read_all()
    with open(path, "rb") as f:
        rows = list(fastavro.reader(f, reader_schema=fastavro.parse_schema(reader)))
    assert table.column_names == [f["name"] for f in keep]
    assert table.num_rows == len(rows)
    for name in table.column_names:
        col = table.column(name)
        got = [norm_arrow(col.type, v) for v in col.to_pylist()]
        want = [norm_avro(r[name]) for r in rows]
        if name == "new_f":  # fastavro hands a fixed default back as its JSON string
            want = [w.encode("latin-1") if isinstance(w, str) else w for w in want]
        assert got == want, f"column {name} differs"
    assert table.schema.field("i").type == pa.int64()
    assert table.schema.field("s").type == pa.binary()


def test_polars_written_empty_record_name(tmp_path):
    """polars names its top-level record "" (invalid Avro; avro-c refuses it):
    sluice reads it and says so in the schema metadata."""
    pl = pytest.importorskip("polars")
    df = pl.DataFrame({
        "a": [1, 2, None], "s": ["x", None, "z"], "f": [1.5, None, 2.5], "l": [[1, 2], [], None],
        "d": [dt.date(2020, 1, 1), None, dt.date(2021, 1, 1)],
        "t": [dt.datetime(2020, 1, 1, 1, 2, 3), None, dt.datetime(2000, 1, 1)],
        "st": [{"x": 1, "y": "a"}, None, {"x": 3, "y": None}],
    })
    path = tmp_path / "polars.avro"
    df.write_avro(path)
    table = sluice_read(path, tmp_path)
    assert b"sluice.warning" in table.schema.metadata
    binary = os.environ.get("SLUICE_BIN")
    if binary:  # the CLI says it on stderr too, unless -q
        err = subprocess.run([binary, "cat", str(path)], capture_output=True).stderr.decode()
        assert "warning" in err and "empty name" in err, err
        err = subprocess.run([binary, "-q", "cat", str(path)], capture_output=True).stderr
        assert err == b""
    want = df.to_arrow()
    for name in df.columns:
        assert table.column(name).to_pylist() == want.column(name).to_pylist(), name


def test_reader_schema_unions(tmp_path):
    """Unions on either side resolve branch by branch, as fastavro does."""
    driver = _driver()
    if driver is None:
        pytest.skip("the test_avro driver (format options) is not available")
    import json
    inner = {"type": "record", "name": "In", "fields": [{"name": "x", "type": "int"}]}
    writer = {"type": "record", "name": "w", "fields": [
        {"name": "a", "type": "int"},
        {"name": "b", "type": ["int", "string", inner, "null"]},
        {"name": "c", "type": ["null", "string"]},
        {"name": "d", "type": ["int", "long"]},
        {"name": "e", "type": ["null", "int", "long"]},
        {"name": "f", "type": "string"},
    ]}
    reader = {"type": "record", "name": "w", "fields": [
        {"name": "a", "type": ["null", "string", "long"]},            # int → branch long
        {"name": "b", "type": ["null", inner, "string", "double"]},   # branch map, int → double
        {"name": "c", "type": ["null", "string", "int"]},             # nullable → general union
        {"name": "d", "type": "double"},                               # union → one type
        {"name": "e", "type": ["null", "double"]},                     # union → nullable
        {"name": "f", "type": ["int", "bytes"]},                       # string → bytes branch
    ]}
    rows = [{"a": k, "b": [k, f"s{k}", {"x": k}, None][k % 4], "c": None if k % 3 == 0 else f"c{k}",
             "d": k if k % 2 else 2**40 + k, "e": [None, k, 2**35][k % 3], "f": f"f{k}"}
            for k in range(50)]
    path = tmp_path / "unions.avro"
    with open(path, "wb") as f:
        fastavro.writer(f, writer, rows)
    rs = tmp_path / "unions.avsc"
    rs.write_text(json.dumps(reader))
    out = tmp_path / "unions.arrows"
    proc = subprocess.run([*driver, str(path), str(out), f"reader_schema={rs}"], capture_output=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr.decode()
    with open(out, "rb") as f:
        table = ipc.open_stream(f).read_all()
    with open(path, "rb") as f:
        want_rows = list(fastavro.reader(f, reader_schema=reader))
    for name in table.column_names:
        col = table.column(name)
        got = [norm_arrow(col.type, v) for v in col.to_pylist()]
        want = [norm_avro(r[name]) for r in want_rows]
        assert got == want, f"column {name} differs"
        if name in ("d", "e"):
            assert all(isinstance(v, float) for v in got if v is not None), name
    assert pa.types.is_union(table.schema.field("a").type)
    assert table.schema.field("e").type == pa.float64()
    # A writer branch with no match fails only when the data uses it.
    bad = dict(reader, fields=[{"name": "b", "type": ["null", "string"]}])
    rs.write_text(json.dumps(bad))
    proc = subprocess.run([*driver, str(path), str(out), f"reader_schema={rs}"], capture_output=True,
                          timeout=300)
    assert proc.returncode != 0 and b"has no match" in proc.stderr


def _rec(*fields, name="R"):
    """A record of (field name, type) pairs."""
    return {"type": "record", "name": name, "fields": [{"name": n, "type": t} for n, t in fields]}


# Writer schema, rows, reader schema: sluice reads with --reader-schema what
# fastavro reads (test_reader_schema_case) and Java avro-tools reads
# (test_avro_java.py) from the same file.
RESOLVE_CASES = {
    # The writer's "null" type into a nullable reader field, either order.
    "null_to_nullable": (
        _rec(("n", "null"), ("m", "null"), ("k", "int")),
        [{"n": None, "m": None, "k": k} for k in range(3)],
        _rec(("n", ["null", "int"]), ("m", ["int", "null"]), ("k", "int"))),
    # Values of no bytes (a null, an empty record) into a branch of a reader
    # union: rows of 1 byte, arrays of 0-byte items (once "N objects cannot
    # fit in M bytes").
    "zero_bytes_to_union_branch": (
        _rec(("n", "null"), ("e", _rec(name="E")), ("a", {"type": "array", "items": "null"}),
             ("k", "int")),
        [{"n": None, "e": {}, "a": [None] * (k % 3), "k": k} for k in range(10)],
        _rec(("n", ["int", "string", "null"]), ("e", ["int", _rec(name="E")]),
             ("a", {"type": "array", "items": ["int", "string", "null"]}), ("k", "int"))),
    # Nullable into nullable whose values do not match: all nulls read (a
    # value would fail when met: test_reader_schema_unmatched_value_fails_when_met).
    "nullable_unmatched_value_all_nulls": (
        _rec(("ns", ["null", "string"]), ("sn", ["string", "null"]), ("k", "int")),
        [{"ns": None, "sn": None, "k": k} for k in range(4)],
        _rec(("ns", ["null", "int"]), ("sn", ["long", "null"]), ("k", "int"))),
    # Writer union branches that match a reader type whose inner types do
    # not resolve (array of int / of string, map of long / of int, a record
    # lacking a required field): no value uses them, so the file reads (it
    # failed at open). test_reader_schema_unresolved_branch_fails_when_met
    # has values that do.
    "union_branch_inner_types_unresolved_unused": (
        _rec(("u", ["null", "string", {"type": "array", "items": "int"}]),
             ("m", ["null", {"type": "map", "values": "long"}]),
             ("x", ["null", _rec(("p", "int"), name="a.X"), _rec(("q", "string"), name="b.X")])),
        [{"u": None, "m": None, "x": None}, {"u": "s", "m": None, "x": ("a.X", {"p": 1})}],
        _rec(("u", ["null", "string", {"type": "array", "items": "string"}]),
             ("m", ["null", {"type": "map", "values": "int"}]),
             ("x", ["null", _rec(("p", "int"), name="c.X")]))),
    # A union field's default is a value of the first branch it matches
    # (Avro 1.12, AVRO-3649), not only of the first branch.
    "union_default_of_any_branch": (
        _rec(("k", "int")), [{"k": k} for k in range(3)],
        {"type": "record", "name": "R", "fields": [
            {"name": "k", "type": "int"},
            {"name": "x", "type": ["null", "string"], "default": "dflt"},
            {"name": "y", "type": ["string", "null"], "default": None},
            {"name": "z", "type": ["int", "boolean", "string"], "default": "s"},
            {"name": "m", "type": ["null", {"type": "map", "values": "long"}], "default": {"a": 1}}]}),
}


def write_resolved(tmp_path: Path, writer, rows, reader):
    """Writes `rows` with fastavro under `writer`, and `reader` as a schema
    file: (file, reader schema file)."""
    import json
    path, rs = tmp_path / "w.avro", tmp_path / "reader.avsc"
    with open(path, "wb") as f:
        fastavro.writer(f, fastavro.parse_schema(writer), rows)
    rs.write_text(json.dumps(reader))
    return path, rs


def read_resolved(sluice, tmp_path: Path, writer, rows, reader):
    """write_resolved, then sluice reads the file with `reader` as
    --reader-schema: (file, reader schema file, table)."""
    path, rs = write_resolved(tmp_path, writer, rows, reader)
    out = tmp_path / "out.arrow"
    sluice.run("convert", "--reader-schema", rs, path, out)
    with ipc.open_file(out) as f:
        return path, rs, f.read_all()


@pytest.mark.parametrize("case", sorted(RESOLVE_CASES))
def test_reader_schema_case(tmp_path, sluice, case):
    writer, rows, reader = RESOLVE_CASES[case]
    path, _, table = read_resolved(sluice, tmp_path, writer, rows, reader)
    with open(path, "rb") as f:
        want = list(fastavro.reader(f, reader_schema=fastavro.parse_schema(reader)))
    assert table.column_names == [fl["name"] for fl in reader["fields"]]
    for name in table.column_names:
        col = table.column(name)
        assert [norm_arrow(col.type, v) for v in col.to_pylist()] == \
            [norm_avro(r[name]) for r in want], name


_AX = {"type": "record", "name": "X", "namespace": "a", "fields": [{"name": "x", "type": "int"}]}
_BX = {"type": "record", "name": "X", "namespace": "b", "fields": [
    {"name": "x", "type": "int"}, {"name": "y", "type": "string", "default": "dflt"}]}
# Union branches of one short name in two namespaces: (writer, rows, reader,
# the full names of the reader union's branches).
SAME_SHORT_NAME_CASES = {
    "union_read_as_itself": (
        _rec(("u", ["null", _AX, _BX])),
        [{"u": ("a.X", {"x": 1})}, {"u": ("b.X", {"x": 2, "y": "hello"})}, {"u": None}],
        _rec(("u", ["null", _AX, _BX])), ["null", "a.X", "b.X"]),
    "record_into_union": (
        _rec(("u", _BX)), [{"u": {"x": 5, "y": "kept"}}],
        _rec(("u", [_AX, _BX])), ["a.X", "b.X"]),
}


def union_as_branch_names(table: pa.Table, name: str, branches: list) -> list:
    """A dense union column as Java's JSON shows it: {full name: value}, or None."""
    col = table.column(name).combine_chunks()
    return [None if branches[code] == "null" else {branches[code]: v}
            for code, v in zip(col.type_codes.to_pylist(), col.to_pylist())]


@pytest.mark.parametrize("case", sorted(SAME_SHORT_NAME_CASES))
def test_reader_schema_union_branches_by_full_name(tmp_path, sluice, case):
    """A writer a.X or b.X goes to the reader union's branch of that full
    name (the unqualified name only when none has it), as Java resolves it
    (test_avro_java.py); b.X's values once landed in a.X, y dropped. fastavro
    mixes them up itself, so the union read as itself is checked against the
    file read without a reader schema (fastavro's branch names)."""
    writer, rows, reader, branches = SAME_SHORT_NAME_CASES[case]
    _, _, table = read_resolved(sluice, tmp_path, writer, rows, reader)
    got = union_as_branch_names(table, "u", branches)
    if case == "union_read_as_itself":
        with open(tmp_path / "w.avro", "rb") as f:
            assert got == [r["u"] if r["u"] is None else {r["u"][0]: r["u"][1]}
                           for r in fastavro.reader(f, return_record_name=True)]
    else:
        assert got == [{"b.X": {"x": 5, "y": "kept"}}]


def test_reader_schema_decimal_of_another_scale_is_an_error(tmp_path, sluice):
    """Decimals match only with equal scales (the spec): a reader decimal of
    another scale is an error at open naming both, never 12.34 read as
    0.1234 (fastavro reads 12.34: it keeps the writer's logical type). A
    wider precision reads as fastavro reads it."""
    def dec(p, s, fixed=None):
        t = {"type": "bytes"} if fixed is None else {"type": "fixed", "name": fixed, "size": 8}
        return {**t, "logicalType": "decimal", "precision": p, "scale": s}
    writer = _rec(("d", dec(10, 2)), ("f", dec(10, 2, "F")))
    rows = [{"d": decimal.Decimal("12.34"), "f": decimal.Decimal("-0.05")}]
    wider = _rec(("d", dec(12, 2)), ("f", dec(18, 2, "F")))
    _, _, table = read_resolved(sluice, tmp_path, writer, rows, wider)
    assert table.schema.field("d").type == pa.decimal128(12, 2)
    with open(tmp_path / "w.avro", "rb") as f:
        assert table.to_pylist() == list(fastavro.reader(f, reader_schema=fastavro.parse_schema(wider)))
    for bad, field in ((_rec(("d", dec(10, 4)), ("f", dec(10, 2, "F"))), "d"),
                       (_rec(("d", dec(10, 2)), ("f", dec(10, 0, "F"))), "f")):
        path, rs = write_resolved(tmp_path, writer, rows, bad)
        with open(path, "rb") as f:
            assert list(fastavro.reader(f, reader_schema=fastavro.parse_schema(bad))) == rows
        err = sluice.expect_error("convert", "--reader-schema", rs, path,
                                  tmp_path / "out.arrow").stderr.decode()
        assert f"field '{field}'" in err and "decimals of different scales" in err, err


def test_reader_schema_unmatched_value_fails_when_met(tmp_path, sluice):
    """The nullable case above with one string among the nulls: an error
    naming the object, as fastavro fails on it too."""
    writer, rows, reader = RESOLVE_CASES["nullable_unmatched_value_all_nulls"]
    path, rs = write_resolved(tmp_path, writer, rows + [{"ns": "x", "sn": None, "k": 9}], reader)
    with open(path, "rb") as f, pytest.raises(fastavro.read.SchemaResolutionError):
        list(fastavro.reader(f, reader_schema=fastavro.parse_schema(reader)))
    err = sluice.expect_error("convert", "--reader-schema", rs, path,
                              tmp_path / "out.arrow").stderr.decode()
    assert "object 4" in err and "has no match" in err, err
    # and the field and the writer's branch (it said only "union branch 1")
    assert "field 'ns': union branch 1 of the writer (string)" in err, err


def test_defaults_with_nul_characters(tmp_path, sluice):
    """A bytes or fixed default is a JSON string of code points 0-255, so
    "\\u0000" is a legal byte there (and in a string default): the writer's
    and the reader's schema load, and the defaults read as fastavro reads
    them. Elsewhere (a name) a NUL would cut the string short unseen: an
    error naming the reader schema, not the file's avro.schema."""
    import json
    writer = {"type": "record", "name": "r", "fields": [
        {"name": "a", "type": "int"},
        {"name": "b", "type": "bytes", "default": "\u0000\u00ff"}]}
    path = tmp_path / "nul.avro"
    with open(path, "wb") as f:
        fastavro.writer(f, fastavro.parse_schema(writer), [{"a": k, "b": bytes([k, 0])} for k in range(5)])
    reader = {"type": "record", "name": "r", "fields": [
        {"name": "a", "type": "int"},
        {"name": "b", "type": "bytes"},
        {"name": "c", "type": "bytes", "default": "\u0000\u00ff"},
        {"name": "f", "type": {"type": "fixed", "name": "F", "size": 3}, "default": "a\u0000b"},
        {"name": "d", "type": "string", "default": "x\u0000y"}]}
    rs = tmp_path / "reader.avsc"
    rs.write_text(json.dumps(reader))
    out = tmp_path / "out.arrow"
    sluice.run("convert", path, out)  # the writer's schema alone
    with ipc.open_file(out) as f:
        assert f.read_all().column("b").to_pylist() == [bytes([k, 0]) for k in range(5)]
    sluice.run("convert", "--reader-schema", rs, path, out)
    with ipc.open_file(out) as f:
        table = f.read_all()
    with open(path, "rb") as f:
        want = list(fastavro.reader(f, reader_schema=fastavro.parse_schema(reader)))
    for name in ("a", "b", "d"):
        assert table.column(name).to_pylist() == [r[name] for r in want], name
    # fastavro hands bytes and fixed defaults back as their JSON strings
    for name in ("c", "f"):
        assert table.column(name).to_pylist() == [r[name].encode("latin-1") for r in want], name
    assert table.column("f").to_pylist()[0] == b"a\x00b"
    bad = json.loads(json.dumps(reader))
    bad["fields"][0]["name"] = "a\u0000b"
    rs.write_text(json.dumps(bad))
    err = sluice.expect_error("convert", "--reader-schema", rs, path, out).stderr.decode()
    assert "reader schema" in err and "NUL" in err and "avro.schema" not in err, err


def test_duration_past_int32_is_an_error(tmp_path, sluice):
    """An Avro duration holds months and days as uint32; Arrow's
    month_day_nano as int32. Values that fit read as fastavro's raw bytes
    say; 2^31 months or days is an error naming the object, not a negative
    duration."""
    schema = {"type": "record", "name": "r", "fields": [
        {"name": "d", "type": {"type": "fixed", "name": "D", "size": 12, "logicalType": "duration"}}]}

    def dur(months, days, ms):
        return b"".join(v.to_bytes(4, "little") for v in (months, days, ms))
    good = [dur(2**31 - 1, 2**31 - 1, 2**32 - 1), dur(0, 1, 2)]
    path = tmp_path / "dur.avro"
    with open(path, "wb") as f:
        fastavro.writer(f, schema, [{"d": v} for v in good])
    out = tmp_path / "dur.arrow"
    sluice.run("convert", path, out)
    with ipc.open_file(out) as f:
        got = f.read_all().column("d").to_pylist()
    assert [(m.months, m.days, m.nanoseconds) for m in got] == \
        [(2**31 - 1, 2**31 - 1, (2**32 - 1) * 10**6), (0, 1, 2 * 10**6)]
    for bad in (dur(2**31, 0, 0), dur(0, 2**32 - 1, 0)):
        with open(path, "wb") as f:
            fastavro.writer(f, schema, [{"d": v} for v in good + [bad]])
        err = sluice.expect_error("convert", path, out).stderr.decode()
        assert "duration" in err and "month_day_nano" in err and "object 2" in err, err


def test_time_of_day_out_of_range_is_an_error(tmp_path, sluice):
    """time-millis and time-micros count from midnight: the ends of the day
    read as fastavro reads them; a value outside the day (fastavro cannot
    make a time of it either) is an error naming the object, not a time32
    no reader can show."""
    schema = {"type": "record", "name": "r", "fields": [
        {"name": "ms", "type": {"type": "int", "logicalType": "time-millis"}},
        {"name": "us", "type": ["null", {"type": "long", "logicalType": "time-micros"}]}]}
    rows = [{"ms": 0, "us": None}, {"ms": 86_399_999, "us": 86_399_999_999}, {"ms": 1, "us": 0}]
    path = tmp_path / "times.avro"
    with open(path, "wb") as f:
        fastavro.writer(f, fastavro.parse_schema(schema), rows)
    out = tmp_path / "times.arrow"
    sluice.run("convert", path, out)
    with ipc.open_file(out) as f:
        table = f.read_all()
    with open(path, "rb") as f:
        want = list(fastavro.reader(f))
    for name in ("ms", "us"):
        assert table.column(name).to_pylist() == [r[name] for r in want], name
    for bad, says in (({"ms": 86_400_000, "us": 1}, "time-millis value 86400000"),
                      ({"ms": -1, "us": 1}, "time-millis value -1"),
                      ({"ms": 5, "us": 86_400_000_000}, "time-micros value 86400000000")):
        with open(path, "wb") as f:
            fastavro.writer(f, fastavro.parse_schema(schema), rows + [bad], validator=False)
        err = sluice.expect_error("convert", path, out).stderr.decode()
        assert says in err and "object 3" in err, err


def test_time_of_day_checked_after_promotion(tmp_path, sluice):
    """A writer int read as a time-micros long (a promotion) is checked as a
    direct read is: times of day read as the microseconds fastavro reads
    (it leaves the reader's logical type off a promoted value, as Java's
    tojson prints it); -1, which no time64 holds, is an error naming the
    object, as it is read directly (test_time_of_day_out_of_range_is_an_error)."""
    writer = _rec(("t", "int"), ("n", ["null", "int"]))
    reader = _rec(("t", {"type": "long", "logicalType": "time-micros"}),
                  ("n", ["null", {"type": "long", "logicalType": "time-micros"}]))
    rows = [{"t": 0, "n": None}, {"t": 5, "n": 2**31 - 1}]
    _, _, table = read_resolved(sluice, tmp_path, writer, rows, reader)
    assert table.schema.field("t").type == pa.time64("us")
    with open(tmp_path / "w.avro", "rb") as f:
        want = list(fastavro.reader(f, reader_schema=fastavro.parse_schema(reader)))
    for name in ("t", "n"):
        assert table.column(name).cast(pa.int64()).to_pylist() == [r[name] for r in want], name
    for bad in ({"t": -1, "n": None}, {"t": 1, "n": -5}):
        path, rs = write_resolved(tmp_path, writer, rows + [bad], reader)
        err = sluice.expect_error("convert", "--reader-schema", rs, path,
                                  tmp_path / "out.arrow").stderr.decode()
        assert "time-micros value -" in err and "not a time of day" in err and "object 2" in err, err


def test_reader_schema_enum_default(tmp_path, sluice):
    """A writer enum symbol the reader's enum lacks reads as the reader's
    "default" symbol (`--reader-schema`), as fastavro resolves it; without a
    default it is an error, but only if the data uses that symbol."""
    import json
    color = {"type": "enum", "name": "Color", "symbols": ["RED", "GREEN", "BLUE", "PINK", "TEAL"]}
    writer = {"type": "record", "name": "r", "fields": [
        {"name": "e", "type": color},
        {"name": "ne", "type": ["null", "Color"]},
        {"name": "ae", "type": {"type": "array", "items": "Color"}},
        {"name": "other", "type": {"type": "enum", "name": "Other", "symbols": ["A", "B"]}},
    ]}
    symbols = color["symbols"]
    rows = [{"e": symbols[k % 5], "ne": None if k % 4 == 0 else symbols[(k * 3) % 5],
             "ae": [symbols[(k + j) % 5] for j in range(k % 4)], "other": "A"} for k in range(60)]
    path = tmp_path / "enums.avro"
    with open(path, "wb") as f:
        fastavro.writer(f, writer, rows, codec="deflate")
    # The reader lacks PINK and TEAL, has a new symbol, and orders them differently.
    rcolor = {"type": "enum", "name": "Color", "symbols": ["UNKNOWN", "BLUE", "RED", "GREEN"],
              "default": "UNKNOWN"}
    reader = {"type": "record", "name": "r", "fields": [
        {"name": "e", "type": rcolor},
        {"name": "ne", "type": ["null", "Color"]},
        {"name": "ae", "type": {"type": "array", "items": "Color"}},
        {"name": "other", "type": {"type": "enum", "name": "Other", "symbols": ["A"]}},
    ]}
    rs = tmp_path / "reader.avsc"
    rs.write_text(json.dumps(reader))
    out = tmp_path / "out.arrows"
    sluice.run("convert", "--reader-schema", rs, path, out)
    with open(out, "rb") as f:
        table = ipc.open_stream(f).read_all()
    with open(path, "rb") as f:
        want_rows = list(fastavro.reader(f, reader_schema=fastavro.parse_schema(reader)))
    assert table.num_rows == len(want_rows) == len(rows)
    assert any(r["e"] == "UNKNOWN" for r in want_rows)  # the default was really used
    for name in table.column_names:
        col = table.column(name)
        assert col.to_pylist() == [r[name] for r in want_rows], name
    assert table.schema.field("e").type == pa.dictionary(pa.int32(), pa.utf8())
    assert table.column("e").chunk(0).dictionary.to_pylist() == rcolor["symbols"]

    # Without a default, a writer symbol the reader lacks fails when met.
    nodef = json.loads(json.dumps(reader))
    del nodef["fields"][0]["type"]["default"]
    rs.write_text(json.dumps(nodef))
    proc = sluice.expect_error("convert", "--reader-schema", rs, path, out)
    assert b"no match" in proc.stderr
    # A default that is not one of the symbols is an invalid schema.
    bad = json.loads(json.dumps(reader))
    bad["fields"][0]["type"]["default"] = "PURPLE"
    rs.write_text(json.dumps(bad))
    proc = sluice.expect_error("convert", "--reader-schema", rs, path, out)
    assert b"PURPLE" in proc.stderr


def _int(name, *aliases, **default):
    """An int field with aliases (and default=...)."""
    return {"name": name, "type": "int", "aliases": list(aliases), **default}


# A writer field goes to the reader field of its name, else to the reader
# field that lists it among its aliases (the last one, when several do), as
# fastavro matches them. Reader schemas over ALIAS_WRITER's one row: the rows
# read, or the error. test_avro_java.py checks Java's tojson; where it
# differs, JAVA_ALIAS_ROWS has its answer (GenericDatumReader applies the
# aliases to the writer's schema, and Resolver.resolve applies them again,
# unless the once-renamed schema equals the reader's: so a swap reads as
# itself or swapped depending on the reader's field order, and an alias of a
# name the reader also has takes the writer's field from it).
ALIAS_S = _rec(("x", "int"), name="S")
ALIAS_WRITER = _rec(("a", "int"), ("b", "int"), ("s", ALIAS_S))
ALIAS_ROWS = [{"a": 1, "b": 2, "s": {"x": 3}}]
ALIAS_CASES = {
    "swap": ({"type": "record", "name": "R", "fields": [
        _int("b", "a"), _int("a", "b"), {"name": "s", "type": ALIAS_S}]},
        [{"b": 2, "a": 1, "s": {"x": 3}}]),
    "swap_in_the_writers_order": ({"type": "record", "name": "R", "fields": [
        _int("a", "b"), _int("b", "a"), {"name": "s", "type": ALIAS_S}]},
        [{"a": 1, "b": 2, "s": {"x": 3}}]),
    "swap_without_a_third_field": ({"type": "record", "name": "R", "fields": [
        _int("a", "b"), _int("b", "a")]},
        [{"a": 1, "b": 2}]),
    "alias_of_a_name_the_reader_has": ({"type": "record", "name": "R", "fields": [
        _int("z", "a"), _int("a", default=7)]},
        "field 'z' has no default, and the writer's field 'a', which it lists among its "
        "aliases, goes to field 'a' (a field of its name comes before aliases)"),
    "nested_alias_of_a_name_the_reader_has": ({"type": "record", "name": "R", "fields": [
        {"name": "s", "type": {"type": "record", "name": "S", "fields": [
            _int("y", "x", default=4), _int("x", default=5)]}}]},
        [{"s": {"y": 4, "x": 3}}]),
    "two_fields_alias_one_last_wins": ({"type": "record", "name": "R", "fields": [
        _int("p", "a", default=3), _int("q", "a")]},
        [{"p": 3, "q": 1}]),
    "name_beats_the_alias": ({"type": "record", "name": "R", "fields": [
        _int("a"), _int("a2", "a", default=9)]},
        [{"a": 1, "a2": 9}]),
    "two_fields_alias_one": ({"type": "record", "name": "R", "fields": [
        _int("p", "a"), _int("q", "a", default=9)]},
        "field 'p' has no default, and the writer's field 'a', which it lists among its "
        "aliases, goes to field 'q' (the last field to list it takes it)"),
    "two_writer_fields_to_one": ({"type": "record", "name": "R", "fields": [
        _int("p", "a", "b")]},
        "field 'p': the writer's fields 'a' and 'b' both go to it"),
}
# What Java's tojson reads where it differs from ALIAS_CASES (see above).
JAVA_ALIAS_ROWS = {
    "swap": [{"b": 1, "a": 2, "s": {"x": 3}}],
    "alias_of_a_name_the_reader_has": [{"z": 1, "a": 7}],
    "nested_alias_of_a_name_the_reader_has": [{"s": {"y": 3, "x": 5}}],
    "name_beats_the_alias": "missing required field a",
}


@pytest.mark.parametrize("case", sorted(ALIAS_CASES))
def test_reader_schema_aliases_rename_writer_fields(tmp_path, sluice, case):
    """ALIAS_CASES: the rows fastavro reads, or an error at open naming the
    field and where its alias's writer field went (the aliases renamed the
    writer's fields first: a reader a with alias b and b with alias a read
    a=2, b=1, where fastavro and Java read a=1, b=2)."""
    reader, want = ALIAS_CASES[case]
    path, rs = write_resolved(tmp_path, ALIAS_WRITER, ALIAS_ROWS, reader)
    if isinstance(want, str):
        err = sluice.expect_error("convert", "--reader-schema", rs, path,
                                  tmp_path / "out.arrow").stderr.decode()
        assert "reader schema: " + want in err, err
    else:
        out = tmp_path / "out.arrow"
        sluice.run("convert", "--reader-schema", rs, path, out)
        with ipc.open_file(out) as f:
            assert f.read_all().to_pylist() == want
        with open(path, "rb") as f:
            assert [dict(r) for r in fastavro.reader(f, reader_schema=reader)] == want


def test_decimal_on_a_fixed_wider_than_32_bytes(tmp_path, sluice):
    """A decimal on a fixed of 33 or 40 bytes (the spec sets no upper size) is
    a decimal, read as fastavro reads it, not the fixed's raw bytes."""
    import decimal
    schema = {"type": "record", "name": "r", "fields": [
        {"name": "d", "type": {"type": "fixed", "name": "F", "size": 40,
                               "logicalType": "decimal", "precision": 5, "scale": 2}},
        {"name": "e", "type": {"type": "fixed", "name": "G", "size": 33,
                               "logicalType": "decimal", "precision": 70, "scale": 0}}]}
    rows = [{"d": decimal.Decimal("-123.45"), "e": decimal.Decimal(-10**69 + 7)},
            {"d": decimal.Decimal("0.01"), "e": decimal.Decimal(10**69)}]
    path = tmp_path / "wide.avro"
    with open(path, "wb") as f:
        fastavro.writer(f, schema, rows)
    out = tmp_path / "wide.arrows"
    sluice.run("convert", path, out)
    with open(out, "rb") as f:
        table = ipc.open_stream(f).read_all()
    assert table.schema.field("d").type == pa.decimal128(5, 2)
    assert table.schema.field("e").type == pa.decimal256(70, 0)
    with open(path, "rb") as f:
        assert table.to_pylist() == list(fastavro.reader(f))


def test_reader_schema_errors_name_the_field_of_the_value(tmp_path, sluice):
    """An error in a value under a reader schema names the field the value
    is in, as the reader calls it (a writer field it drops by the writer's
    name): it named the reader's field at the writer field's position (here
    'a' for a null in 'b'), or none past the reader's field count.
    fastavro fails on the same null."""
    writer = _rec(("a", "int"), ("b", ["null", "string"]), ("c", "int"),
                  ("s", _rec(("p", "int"), ("q", ["null", "string"]), name="S")))
    rows = [{"a": 1, "b": "x", "c": 2, "s": {"p": 3, "q": "y"}},
            {"a": 1, "b": None, "c": 2, "s": {"p": 3, "q": "y"}},
            {"a": 1, "b": "x", "c": 2, "s": {"p": 3, "q": None}}]
    inner = _rec(("q", "string"), name="S")
    for reader, at, field in (
            (_rec(("c", "int"), ("a", "int"), ("b", "string")), 1, "b"),  # reordered
            (_rec(("b", "string")), 1, "b"),                                # fewer fields
            (_rec(("s", inner), ("b", ["null", "string"])), 2, "s.q"),      # nested, reordered
    ):
        path, rs = write_resolved(tmp_path, writer, rows, reader)
        with open(path, "rb") as f, pytest.raises(Exception):
            list(fastavro.reader(f, reader_schema=fastavro.parse_schema(reader)))
        err = sluice.expect_error("convert", "--reader-schema", rs, path,
                                  tmp_path / "out.arrow").stderr.decode()
        assert f"object {at}: field '{field}': null written where the reader schema allows none" \
            in err, err


def test_reader_schema_error_in_a_dropped_field_names_it(tmp_path, sluice):
    """A bad union index in a writer field the reader schema drops (skipped,
    not read): the error names that field by the writer's name."""
    writer = _rec(("a", "int"), ("b", ["null", "int"]), ("c", "int"))
    path, rs = write_resolved(tmp_path, writer, [{"a": 1, "b": None, "c": 2}],
                              _rec(("a", "int"), ("c", "int")))
    data = path.read_bytes()
    at = data.rindex(b"\x02\x00\x04")  # the row: a = 1, b's null branch, c = 2
    path.write_bytes(data[:at + 1] + b"\x0a" + data[at + 2:])  # b's union index 5
    err = sluice.expect_error("convert", "--reader-schema", rs, path,
                              tmp_path / "out.arrow").stderr.decode()
    assert "object 0: field 'b': invalid union index 5" in err, err


def test_reader_schema_union_default_of_no_branch(tmp_path, sluice):
    """A union default that is a value of none of its branches is an error
    naming the field, as fastavro refuses the schema."""
    reader = {"type": "record", "name": "R", "fields": [
        {"name": "k", "type": "int"}, {"name": "z", "type": ["int", "string"], "default": 2.5}]}
    path, rs = write_resolved(tmp_path, _rec(("k", "int")), [{"k": 1}], reader)
    with pytest.raises(Exception):
        fastavro.parse_schema(reader)
    err = sluice.expect_error("convert", "--reader-schema", rs, path,
                              tmp_path / "out.arrow").stderr.decode()
    assert "field 'z': default is a value of no branch of the union" in err, err


def test_reader_schema_unresolved_branch_fails_when_met(tmp_path, sluice):
    """The case above with a value in each branch that does not resolve: an
    error naming the object, the field, the writer's branch and why, as
    fastavro fails on them too."""
    writer, rows, reader = RESOLVE_CASES["union_branch_inner_types_unresolved_unused"]
    for bad, says in (
            ({"u": [1], "m": None, "x": None},
             "object 2: field 'u': union branch 2 of the writer (array) has no match in the "
             "reader's schema: field 'u': cannot read the writer's int as string"),
            ({"u": None, "m": {"k": 1}, "x": None},
             "object 2: field 'm': union branch 1 of the writer (map) has no match in the "
             "reader's schema: field 'm': cannot read the writer's long as int"),
            ({"u": None, "m": None, "x": ("b.X", {"q": "v"})},
             "object 2: field 'x': union branch 2 of the writer (b.X) has no match in the "
             "reader's schema: field 'x.p' is not in the writer's schema and has no default")):
        path, rs = write_resolved(tmp_path, writer, rows + [bad], reader)
        with open(path, "rb") as f, pytest.raises(Exception):
            list(fastavro.reader(f, reader_schema=fastavro.parse_schema(reader)))
        err = sluice.expect_error("convert", "--reader-schema", rs, path,
                                  tmp_path / "out.arrow").stderr.decode()
        assert says in err, err


# Non-finite float and double defaults as Java writes them: JSON has no NaN
# or infinities, so they are strings.
SPECIAL_DEFAULTS_READER = {"type": "record", "name": "R", "fields": [
    {"name": "k", "type": "int"},
    {"name": "d", "type": "double", "default": "NaN"},
    {"name": "f", "type": "float", "default": "-Infinity"},
    {"name": "g", "type": "double", "default": "Infinity"},
    {"name": "n", "type": ["null", "float"], "default": None},
    {"name": "u", "type": ["float", "null"], "default": "NaN"}]}


def test_reader_schema_non_finite_float_defaults(tmp_path, sluice):
    """"NaN", "Infinity" and "-Infinity" defaults read as those values, as
    Java reads them (test_avro_java.py; fastavro hands back the strings);
    they were refused as "not a valid double". Other strings still are."""
    path, rs = write_resolved(tmp_path, _rec(("k", "int")), [{"k": 1}], SPECIAL_DEFAULTS_READER)
    out = tmp_path / "out.arrow"
    sluice.run("convert", "--reader-schema", rs, path, out)
    with ipc.open_file(out) as f:
        row, = f.read_all().to_pylist()
    assert math.isnan(row["d"]) and math.isnan(row["u"])
    assert row["f"] == -math.inf and row["g"] == math.inf and row["n"] is None
    bad = {"type": "record", "name": "R", "fields": [
        {"name": "k", "type": "int"}, {"name": "d", "type": "double", "default": "nan"}]}
    path, rs = write_resolved(tmp_path, _rec(("k", "int")), [{"k": 1}], bad)
    err = sluice.expect_error("convert", "--reader-schema", rs, path, out).stderr.decode()
    assert "field 'd': default is not a valid double" in err, err


# A top-level record and a top-level ["null", record], either one the
# writer's and the other the reader's: (writer, reader, rows).
ROOT_NULLABLE_CASES = {
    "record_read_as_nullable": (_rec(("a", "int"), ("s", "string")),
                                ["null", _rec(("a", "long"), ("s", "string"))],
                                [{"a": 1, "s": "x"}, {"a": 2, "s": "y"}]),
    "nullable_read_as_record": (["null", _rec(("a", "int"), ("s", "string"))],
                                _rec(("s", "string"), ("a", "long")),
                                [{"a": 1, "s": "x"}, {"a": 2, "s": "y"}]),
}


@pytest.mark.parametrize("case", sorted(ROOT_NULLABLE_CASES))
def test_reader_schema_top_level_record_and_nullable_record(tmp_path, sluice, case):
    """The spec's union rules hold at the top level too: a record read as
    ["null", record] is the one column "value" that file would have without
    a reader schema, and ["null", record] read as a record has the record's
    columns; as fastavro reads them (and Java: test_avro_java.py). Both were
    refused at open ("cannot read the writer's record as union")."""
    writer, reader, rows = ROOT_NULLABLE_CASES[case]
    _, _, table = read_resolved(sluice, tmp_path, writer, rows, reader)
    with open(tmp_path / "w.avro", "rb") as f:
        want = list(fastavro.reader(f, reader_schema=fastavro.parse_schema(reader)))
    if isinstance(reader, list):
        assert table.column_names == ["value"]
        assert table.column("value").to_pylist() == want
    else:
        assert table.to_pylist() == want


def test_reader_schema_top_level_null_read_as_record_fails_when_met(tmp_path, sluice):
    """A null row of a top-level ["null", record] read as a record is an
    error naming the object and the writer's branch, as fastavro fails on it."""
    writer, reader, rows = ROOT_NULLABLE_CASES["nullable_read_as_record"]
    path, rs = write_resolved(tmp_path, writer, [rows[0], None], reader)
    with open(path, "rb") as f, pytest.raises(Exception):
        list(fastavro.reader(f, reader_schema=fastavro.parse_schema(reader)))
    err = sluice.expect_error("convert", "--reader-schema", rs, path,
                              tmp_path / "out.arrow").stderr.decode()
    assert "object 1: union branch 0 of the writer (null) has no match in the reader's schema" \
        in err, err


def test_reader_schema_errors_say_what_and_where(tmp_path, sluice):
    """Resolution errors name the writer's enum symbol (not its index), the
    path of a nested field, and, in a branch error, the field of the union
    after another branch failed deeper in (its path once stayed inside that
    branch: 'u.p')."""
    out = tmp_path / "out.arrow"
    enum = {"type": "enum", "name": "E", "symbols": ["A", "B", "C"]}
    path, rs = write_resolved(tmp_path, _rec(("e", enum)), [{"e": "C"}, {"e": "A"}],
                              _rec(("e", dict(enum, symbols=["C", "B"]))))
    err = sluice.expect_error("convert", "--reader-schema", rs, path, out).stderr.decode()
    assert "object 1: field 'e': the writer's enum symbol 'A' (0) has no match" in err, err

    path, rs = write_resolved(tmp_path, _rec(("s", _rec(("x", "int"), name="S"))),
                              [{"s": {"x": 1}}],
                              _rec(("s", _rec(("x", "int"), ("y", "int"), name="S"))))
    err = sluice.expect_error("convert", "--reader-schema", rs, path, out).stderr.decode()
    assert "reader schema: field 's.y' is not in the writer's schema and has no default" in err, err

    writer = _rec(("u", [_rec(("q", "string"), name="b.X"), _rec(("p", "int"), name="a.X"),
                         {"type": "array", "items": "int"}]))
    reader = _rec(("u", ["null", _rec(("p", "int"), name="c.X"),
                         {"type": "array", "items": "string"}]))
    path, rs = write_resolved(tmp_path, writer, [{"u": ("a.X", {"p": 1})}, {"u": [1]}], reader)
    err = sluice.expect_error("convert", "--reader-schema", rs, path, out).stderr.decode()
    assert "object 1: field 'u': union branch 2 of the writer (array) has no match in the " \
        "reader's schema: field 'u': cannot read the writer's int as string" in err, err


def test_reader_schema_bad_default_in_a_union_branch_fails_at_open(tmp_path, sluice):
    """An invalid default is the reader schema's fault, whatever the data:
    inside a union branch it was deferred like a type mismatch, so a file of
    nulls read without error (fastavro refuses the schema)."""
    s = {"type": "record", "name": "S", "fields": [{"name": "a", "type": "int"}]}
    bad = {"type": "record", "name": "S", "fields": [
        {"name": "a", "type": "int"}, {"name": "b", "type": "int", "default": "x"}]}
    reader = _rec(("u", ["null", bad]))
    with pytest.raises(Exception, match="Default value"):
        fastavro.parse_schema(reader)
    for rows in ([{"u": None}], [{"u": {"a": 1}}]):
        path, rs = write_resolved(tmp_path, _rec(("u", ["null", s])), rows, reader)
        err = sluice.expect_error("convert", "--reader-schema", rs, path,
                                  tmp_path / "out.arrow").stderr.decode()
        assert "field 'u.b': default is not a valid int" in err, err


@pytest.mark.parametrize("field,says", [
    ({"name": "t", "type": {"type": "int", "logicalType": "time-millis"}, "default": -5},
     "field 't': default -5 is not a time of day (time-millis: 0 to 86399999)"),
    ({"name": "t", "type": {"type": "long", "logicalType": "time-micros"},
      "default": 86400000000},
     "field 't': default 86400000000 is not a time of day (time-micros: 0 to 86399999999)"),
    ({"name": "d", "type": {"type": "fixed", "name": "D", "size": 12, "logicalType": "duration"},
      "default": "\u0000\u0000\u0000\u0080" + "\u0000" * 8},
     "field 'd': default duration has more than 2147483647 months or days"),
])
def test_reader_schema_default_outside_its_logical_type(tmp_path, sluice, field, says):
    """A default the reader's logical type cannot hold (a time of day
    outside 0 to 24 h, a duration of more months than Arrow holds) is a
    reader-schema error at open naming the field, as sluice's decoder refuses
    such values in the data (and Java's time conversions refuse the -5: "Invalid
    value for NanoOfDay"; fastavro and Java without conversions give the raw
    number). Every read failed on the file's data instead ("block 0 at byte
    128: object 0: field 't': time-millis value -5 is not a time of day")."""
    reader = {"type": "record", "name": "R", "fields": [{"name": "a", "type": "int"}, field]}
    path, rs = write_resolved(tmp_path, _rec(("a", "int")), [{"a": 1}], reader)
    err = sluice.expect_error("convert", "--reader-schema", rs, path,
                              tmp_path / "out.arrow").stderr.decode()
    assert "reader schema: " + says in err, err
    assert "block" not in err, err


def _latin1(n: int, size: int) -> str:
    """A decimal default: the big-endian two's complement bytes as a JSON string."""
    return n.to_bytes(size, "big", signed=True).decode("latin-1")


@pytest.mark.parametrize("t,ok,wide", [
    ({"type": "bytes", "logicalType": "decimal", "precision": 2, "scale": 1}, 99, -100),
    ({"type": "fixed", "name": "F", "size": 4, "logicalType": "decimal", "precision": 2, "scale": 0},
     -99, 1000),
    ({"type": "fixed", "name": "G", "size": 20, "logicalType": "decimal", "precision": 40, "scale": 0},
     10**40 - 1, 10**40),
])
def test_reader_schema_decimal_default_past_its_precision(tmp_path, sluice, t, ok, wide):
    """A decimal default with more digits than its precision is a reader-
    schema error at open naming the field, as the data's decimals are
    checked (Arrow's decimals require it): it failed only on the first row
    ("block 0 at byte 128: object 0: field 'd': decimal value with more
    digits than its precision 2"), and a file of 0 rows read without error.
    The peers take it: Java Avro 1.12 (GenericDatumReader with the
    DecimalConversion) gives the BigDecimal 1000 for a precision of 2, and
    fastavro gives the default's JSON string unconverted; neither checks the
    precision. A default of as many digits as the precision reads, 0 rows
    or 1, with the value Python's int of those bytes has."""
    size = t.get("size", 20)
    for rows in (0, 1):
        reader = {"type": "record", "name": "R", "fields": [
            {"name": "a", "type": "int"}, {"name": "d", "type": t, "default": _latin1(wide, size)}]}
        path, rs = write_resolved(tmp_path, _rec(("a", "int")), [{"a": 1}] * rows, reader)
        err = sluice.expect_error("convert", "--reader-schema", rs, path,
                                  tmp_path / "out.arrow").stderr.decode()
        assert "reader schema: field 'd': default decimal has more digits than its " \
            f"precision {t['precision']}" in err, err
        assert "block" not in err, err
        reader["fields"][1]["default"] = _latin1(ok, size)
        _, _, table = read_resolved(sluice, tmp_path, _rec(("a", "int")), [{"a": 1}] * rows, reader)
        assert table.column("d").to_pylist() == \
            [decimal.Decimal(ok).scaleb(-t["scale"], decimal.Context(prec=80))] * rows


def test_reader_schema_messages_for_nested_aliases_and_nulls(tmp_path, sluice):
    """Two writer fields renamed onto one nested reader field are named by
    path ('s.x'); a null read where the reader allows none says so, also
    when another field of the record does not resolve (it said "union branch
    0 of the writer (null) has no match")."""
    def s(*fields):
        return {"type": "record", "name": "S", "fields": list(fields)}
    writer = _rec(("s", s({"name": "a", "type": "int"}, {"name": "b", "type": "int"})))
    reader = _rec(("s", s({"name": "x", "type": "int", "aliases": ["a", "b"]})))
    path, rs = write_resolved(tmp_path, writer, [{"s": {"a": 1, "b": 2}}], reader)
    err = sluice.expect_error("convert", "--reader-schema", rs, path,
                              tmp_path / "out.arrow").stderr.decode()
    assert "field 's.x': the writer's fields 'a' and 'b' both go to it" in err, err
    for t in ("int", "string"):
        path, rs = write_resolved(tmp_path, _rec(("s", ["null", s({"name": "x", "type": "int"})])),
                                  [{"s": None}], _rec(("s", s({"name": "x", "type": t}))))
        err = sluice.expect_error("convert", "--reader-schema", rs, path,
                                  tmp_path / "out.arrow").stderr.decode()
        assert "field 's': null written where the reader schema allows none" in err, (t, err)


# ---- wide schemas ---------------------------------------------------------------

WIDE = 50_000  # fields or symbols: wide enough that a quadratic check shows


def avro_header_only(schema: str) -> bytes:
    """An Avro file of no blocks whose header holds `schema` as it is (fastavro
    would refuse to write a schema that repeats a name)."""
    def put_bytes(b: bytes) -> bytes:
        return uvarint(2 * len(b)) + b  # zigzag of a non-negative long
    return (b"Obj\x01" + uvarint(2) + put_bytes(b"avro.schema") +
            put_bytes(schema.encode()) + uvarint(0) + bytes(range(16)))


def test_wide_schemas_refuse_names_repeated_far_apart(tmp_path):
    """A record whose field 0 and field 49,999 share a name, and an enum whose
    symbol 0 and symbol 49,999 do, are refused naming the name, as short ones
    are (each name was compared with every earlier one: minutes for 100k
    fields; they are hashed now). fastavro refuses the enum too; Java Avro
    refuses both."""
    import json
    names = [f"f{i}" for i in range(WIDE)]
    names[WIDE - 1] = "f0"
    rec = {"type": "record", "name": "r",
           "fields": [{"name": n, "type": "long"} for n in names]}
    path = tmp_path / "dup_field.avro"
    path.write_bytes(avro_header_only(json.dumps(rec)))
    err = sluice_error(path, tmp_path)
    assert "duplicate field name: f0" in err, err
    syms = [f"S{i}" for i in range(WIDE)]
    syms[WIDE - 1] = "S0"
    enum = {"type": "record", "name": "r", "fields": [
        {"name": "e", "type": {"type": "enum", "name": "E", "symbols": syms}}]}
    with pytest.raises(fastavro.schema.SchemaParseException, match="unique"):
        fastavro.parse_schema(enum)
    path = tmp_path / "dup_symbol.avro"
    path.write_bytes(avro_header_only(json.dumps(enum)))
    err = sluice_error(path, tmp_path)
    assert "duplicate enum symbol: S0" in err, err
    # Without the repeat both read as fastavro reads them.
    names[WIDE - 1], syms[WIDE - 1] = f"f{WIDE - 1}", f"S{WIDE - 1}"
    rec["fields"][WIDE - 1]["name"] = names[WIDE - 1]
    rec["fields"][1] = {"name": "f1", "type": enum["fields"][0]["type"]}
    path = tmp_path / "wide.avro"
    with open(path, "wb") as f:
        fastavro.writer(f, fastavro.parse_schema(rec),
                        [{n: (syms[-1] if n == "f1" else i) for i, n in enumerate(names)}])
    compare(path, sluice_read(path, tmp_path))


def test_wide_reader_schema_matches_fields_and_symbols_as_fastavro(sluice, tmp_path):
    """A reader schema of 50,000 fields in reverse order, each renamed with
    the writer's name as alias (the last of two fields to list one takes
    it), and an enum of 50,000 symbols in reverse order: read as fastavro
    resolves them (each writer field and symbol was looked for in all the
    reader's: quadratic; they are hashed now)."""
    syms = [f"S{i}" for i in range(WIDE)]
    enum = {"type": "enum", "name": "E", "symbols": syms}
    writer = {"type": "record", "name": "r", "fields": [
        {"name": "e", "type": enum}] + [{"name": f"f{i}", "type": "long"} for i in range(WIDE)]}
    rows = [{"e": syms[k], **{f"f{i}": i * 10 + k for i in range(WIDE)}} for k in (0, WIDE - 1)]
    fields = [{"name": f"g{i}", "aliases": [f"f{i}"], "type": "long"}
              for i in reversed(range(WIDE))]
    fields[0]["aliases"].append("f0")  # g49999 lists f0 too, before g0 does: g0 takes it
    reader = {"type": "record", "name": "r", "fields": [
        {"name": "e", "type": {**enum, "symbols": syms[::-1]}}] + fields}
    path, _, table = read_resolved(sluice, tmp_path, writer, rows, reader)
    with open(path, "rb") as f:
        want = list(fastavro.reader(f, reader_schema=fastavro.parse_schema(reader)))
    assert table.column_names == [fl["name"] for fl in reader["fields"]]
    assert table.to_pylist() == want


def test_trailing_bytes_and_a_piped_reader_schema_are_named(tmp_path, sluice):
    """Bytes after the last block read as a block header whose size is
    negative: the error says which field is negative and that it is no block
    header (it said "negative object count (0) or size (-1)"; fastavro fails
    too). A reader schema from a pipe is refused as the reader schema, not as
    the data file (it is read for each object)."""
    good = tmp_path / "good.avro"
    with open(good, "wb") as f:
        fastavro.writer(f, {"type": "record", "name": "r", "fields": [{"name": "a", "type": "long"}]},
                        [{"a": i} for i in range(10)])
    path = tmp_path / "tail.avro"
    path.write_bytes(good.read_bytes() + b"\x00\x01garbage")
    proc = sluice.run_raw("cat", path, "-t", "jsonl")
    err = proc.stderr.decode()
    assert proc.returncode != 0
    assert f"block 1 at byte {len(good.read_bytes())}: negative byte size (-1): not a block " \
        "header" in err, err
    with pytest.raises(Exception):
        list(fastavro.reader(open(path, "rb")))
    proc = subprocess.run(["bash", "-c", f"'{sluice.binary}' cat '{good}' --reader-schema "
                           "<(echo '\"long\"')"], capture_output=True, timeout=60)
    err = proc.stderr.decode()
    assert proc.returncode != 0 and "reader schema /dev/fd/" in err and "not a regular file" in err, err
