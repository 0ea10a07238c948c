"""Avro interop with avro-c (Debian's `avro-bin` tools and `libavro-dev`).

(a) Files sluice writes -- from a fastavro-written schema zoo read back
    through sluice (nested records, arrays, maps, enums, fixed, unions,
    decimals, logical types) and from an Arrow table of every type the writer
    maps -- are read by avro-c (a small reader program built here against
    libavro: avro_file_reader + generic values, printing JSON) with the
    values fastavro reads from the same file; Debian's `avrocat` reads them too.
(b) Files avro-c writes -- the zoo re-encoded value by value by `avromod`
    (libavro's reader + writer) and files from a small libavro writer program
    built here -- are read by sluice with the values fastavro reads.
Codecs: every one avro-c has (null, deflate, snappy, and its own "lzma", a
raw LZMA2 stream that only avro-c and sluice read; fastavro's values then
come from a null-codec twin of the file).

avro-c knows no logical types, so values are compared in their underlying
Avro types (fastavro's pure-Python reader with its logical readers off).
Without avro-c the tests skip, except under CI=true, where they fail.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import random
import shutil
import subprocess
from pathlib import Path

import pyarrow as pa
import pytest

fastavro = pytest.importorskip("fastavro")
import fastavro._read_py as fastavro_py  # noqa: E402

from test_avro_interop import ZOO, compare, norm_arrow, norm_avro, sluice_read, zoo_row  # noqa: E402
from test_avro_writer import all_types_table, write_arrow  # noqa: E402

AVROC_CODECS = ["null", "deflate", "snappy", "lzma"]
ROWS = 120


def _need(tool: str) -> str:
    path = shutil.which(tool)
    if path is None:
        msg = f"{tool} not found (Debian package avro-bin; scripts/setup.sh installs it)"
        if os.environ.get("CI") == "true":
            pytest.fail(msg)  # CI installs it: a skip there would hide a broken setup
        pytest.skip(msg)
    return path


@pytest.fixture(scope="module")
def avrocat() -> str:
    return _need("avrocat")


@pytest.fixture(scope="module")
def avromod() -> str:
    return _need("avromod")


# ---- values ---------------------------------------------------------------------


@contextlib.contextmanager
def no_logical_types():
    saved = dict(fastavro_py.LOGICAL_READERS)
    fastavro_py.LOGICAL_READERS.clear()
    try:
        yield
    finally:
        fastavro_py.LOGICAL_READERS.update(saved)


def fastavro_raw(path: Path):
    """The writer schema and rows in the underlying Avro types (bytes for
    decimals, ints for dates and times, strings for uuids)."""
    with no_logical_types(), open(path, "rb") as f:
        r = fastavro_py.reader(f)
        return r.writer_schema, list(r)


AVROC_READER = r"""
/* Reads an Avro file with libavro (avro_file_reader, generic values) and
   prints each record as one JSON line: unions as [branch, value], bytes and
   fixed as hex strings, enums as symbols, NaN/infinities as strings.
   (avrocat's own JSON stops a byte string at its first NUL byte.) */
#include <avro.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

static void put_hex(const void* p, size_t n) {
  putchar('"');
  for (size_t i = 0; i < n; ++i) printf("%02x", ((const unsigned char*)p)[i]);
  putchar('"');
}

static void put_str(const char* s, size_t n) {
  putchar('"');
  for (size_t i = 0; i < n; ++i) {
    unsigned char c = (unsigned char)s[i];
    if (c == '"' || c == '\\') printf("\\%c", c);
    else if (c < 0x20) printf("\\u%04x", c);
    else putchar(c);
  }
  putchar('"');
}

static void put_double(double d) {
  if (isnan(d)) printf("\"NaN\"");
  else if (isinf(d)) printf(d > 0 ? "\"Infinity\"" : "\"-Infinity\"");
  else printf("%.17g", d);
}

static int put_value(avro_value_t* v) {
  avro_value_t x;
  const char* name;
  size_t n, i;
  switch (avro_value_get_type(v)) {
    case AVRO_NULL: printf("null"); return 0;
    case AVRO_BOOLEAN: { int b; if (avro_value_get_boolean(v, &b)) return 1; printf(b ? "true" : "false"); return 0; }
    case AVRO_INT32: { int32_t k; if (avro_value_get_int(v, &k)) return 1; printf("%" PRId32, k); return 0; }
    case AVRO_INT64: { int64_t k; if (avro_value_get_long(v, &k)) return 1; printf("%" PRId64, k); return 0; }
    case AVRO_FLOAT: { float f; if (avro_value_get_float(v, &f)) return 1; put_double((double)f); return 0; }
    case AVRO_DOUBLE: { double d; if (avro_value_get_double(v, &d)) return 1; put_double(d); return 0; }
    case AVRO_STRING: { const char* s; if (avro_value_get_string(v, &s, &n)) return 1; put_str(s, n ? n - 1 : 0); return 0; }
    case AVRO_BYTES: { const void* p; if (avro_value_get_bytes(v, &p, &n)) return 1; put_hex(p, n); return 0; }
    case AVRO_FIXED: { const void* p; if (avro_value_get_fixed(v, &p, &n)) return 1; put_hex(p, n); return 0; }
    case AVRO_ENUM: {
      int e;
      if (avro_value_get_enum(v, &e)) return 1;
      const char* sym = avro_schema_enum_get(avro_value_get_schema(v), e);
      if (sym == NULL) return 1;
      put_str(sym, strlen(sym));
      return 0;
    }
    case AVRO_RECORD: case AVRO_MAP: {
      int rec = avro_value_get_type(v) == AVRO_RECORD;
      if (avro_value_get_size(v, &n)) return 1;
      putchar('{');
      for (i = 0; i < n; ++i) {
        if (avro_value_get_by_index(v, i, &x, &name)) return 1;
        if (rec) name = avro_schema_record_field_name(avro_value_get_schema(v), (int)i);
        if (i) putchar(',');
        put_str(name, strlen(name));
        putchar(':');
        if (put_value(&x)) return 1;
      }
      putchar('}');
      return 0;
    }
    case AVRO_ARRAY:
      if (avro_value_get_size(v, &n)) return 1;
      putchar('[');
      for (i = 0; i < n; ++i) {
        if (avro_value_get_by_index(v, i, &x, NULL)) return 1;
        if (i) putchar(',');
        if (put_value(&x)) return 1;
      }
      putchar(']');
      return 0;
    case AVRO_UNION: {
      int disc;
      if (avro_value_get_discriminant(v, &disc) || avro_value_get_current_branch(v, &x)) return 1;
      printf("[%d,", disc);
      if (put_value(&x)) return 1;
      putchar(']');
      return 0;
    }
    default: return 1;
  }
}

int main(int argc, char** argv) {
  if (argc != 2) { fprintf(stderr, "usage: FILE\n"); return 2; }
  avro_file_reader_t r;
  if (avro_file_reader(argv[1], &r)) { fprintf(stderr, "open: %s\n", avro_strerror()); return 1; }
  avro_schema_t schema = avro_file_reader_get_writer_schema(r);
  avro_value_iface_t* iface = avro_generic_class_from_schema(schema);
  avro_value_t v;
  if (iface == NULL || avro_generic_value_new(iface, &v)) { fprintf(stderr, "%s\n", avro_strerror()); return 1; }
  int rc;
  while ((rc = avro_file_reader_read_value(r, &v)) == 0) {
    if (put_value(&v)) { fprintf(stderr, "value: %s\n", avro_strerror()); return 1; }
    putchar('\n');
  }
  if (rc != EOF) { fprintf(stderr, "read: %s\n", avro_strerror()); return 1; }
  avro_value_decref(&v);
  avro_value_iface_decref(iface);
  avro_schema_decref(schema);
  avro_file_reader_close(r);
  return 0;
}
"""


def _build_c(tmp_path_factory, name: str, source: str) -> str:
    _need("avrocat")  # the same Debian packages: avro-bin and libavro-dev
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None or not Path("/usr/include/avro.h").exists():
        msg = "a C compiler and libavro-dev are needed to build the avro-c programs"
        if os.environ.get("CI") == "true":
            pytest.fail(msg)
        pytest.skip(msg)
    d = tmp_path_factory.mktemp(name)
    src, exe = d / f"{name}.c", d / name
    src.write_text(source)
    proc = subprocess.run([cc, "-O1", "-Wall", "-o", str(exe), str(src), "-lavro", "-lm"],
                          capture_output=True, timeout=120)
    assert proc.returncode == 0, proc.stderr.decode()
    return str(exe)


@pytest.fixture(scope="module")
def avroc_reader(tmp_path_factory) -> str:
    return _build_c(tmp_path_factory, "avroc_reader", AVROC_READER)


PRIMITIVES = {"null", "boolean", "int", "long", "float", "double", "bytes", "string"}
SPECIAL_FLOATS = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}


def from_reader_json(schema, v, names: dict):
    """The reader program's JSON for one value -> the Python value fastavro gives."""
    if isinstance(schema, str):
        schema = {"type": schema} if schema in PRIMITIVES else names[schema]
    if isinstance(schema, list):
        branch, x = v
        return from_reader_json(schema[branch], x, names)
    t = schema["type"]
    if isinstance(t, (dict, list)):
        return from_reader_json(t, v, names)
    if t in ("record", "enum", "fixed") and "name" in schema:
        names.setdefault(schema["name"], schema)
    if t == "record":
        return {f["name"]: from_reader_json(f["type"], v[f["name"]], names) for f in schema["fields"]}
    if t == "array":
        return [from_reader_json(schema["items"], x, names) for x in v]
    if t == "map":
        return {k: from_reader_json(schema["values"], x, names) for k, x in v.items()}
    if t in ("bytes", "fixed"):
        return bytes.fromhex(v)
    if t in ("float", "double"):
        return SPECIAL_FLOATS[v] if isinstance(v, str) else float(v)
    if t in PRIMITIVES or t == "enum":
        return v
    return from_reader_json(names[t], v, names)


def avroc_rows(reader: str, path: Path, schema) -> list:
    proc = subprocess.run([reader, str(path)], capture_output=True, timeout=300)
    err = proc.stderr.decode(errors="replace")
    assert proc.returncode == 0 and not err.strip(), f"avro-c reading {path.name}: {err}"
    names: dict = {}
    return [from_reader_json(schema, json.loads(line), names)
            for line in proc.stdout.decode().split("\n") if line]


def same(a, b) -> bool:
    """Equality, NaN equal to NaN."""
    if isinstance(a, float) and isinstance(b, float):
        return a == b or (math.isnan(a) and math.isnan(b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    return a == b


def check_rows(name: str, got: list, want: list):
    assert len(got) == len(want), f"{name}: avro-c read {len(got)} rows, fastavro {len(want)}"
    for i, (g, w) in enumerate(zip(got, want)):
        if not same(g, w):
            diff = {k: (g.get(k), w.get(k)) for k in w if not same(g.get(k), w.get(k))}
            raise AssertionError(f"{name} row {i}: avro-c vs fastavro differ: {diff}")


def check_avroc_reads(reader: str, path: Path, ref: Path | None = None):
    """avro-c's reading of `path` equals fastavro's reading of `ref` (the
    same file unless fastavro cannot read its codec)."""
    schema, want = fastavro_raw(ref or path)
    check_rows(path.name, avroc_rows(reader, path, schema), want)
    return want


# ---- (a) sluice writes, avro-c reads ------------------------------------------------


def write_zoo(path: Path, rows: int = ROWS, codec: str = "null"):
    rnd = random.Random(7)
    with open(path, "wb") as f:
        fastavro.writer(f, fastavro.parse_schema(ZOO), (zoo_row(k, rnd) for k in range(rows)),
                        codec=codec, sync_interval=500)


def sluice_write(sluice, src: Path, out: Path, codec: str, block_size: int):
    """sluice writes `out` with `codec`, and a null-codec twin when fastavro
    cannot read the codec (lzma); returns the file fastavro reads."""
    sluice.run("convert", src, out, "-W", f"codec={codec},block_size={block_size}")
    if codec != "lzma":
        return out
    ref = out.with_name(out.stem + "_ref.avro")
    sluice.run("convert", src, ref, "-W", f"codec=null,block_size={block_size}")
    with open(out, "rb") as f:
        assert b"\x14avro.codec\x08lzma" in f.read(1 << 16)
    return ref


@pytest.mark.parametrize("codec", AVROC_CODECS)
def test_avroc_reads_sluice_zoo(tmp_path, sluice, avroc_reader, codec):
    src, out = tmp_path / "zoo.avro", tmp_path / f"sluice_{codec}.avro"
    write_zoo(src)
    ref = sluice_write(sluice, src, out, codec, 4096)
    want = check_avroc_reads(avroc_reader, out, ref)
    assert len(want) == ROWS
    # the file sluice wrote keeps the zoo's values (fastavro, logical types on)
    with open(ref, "rb") as f:
        got = list(fastavro.reader(f))
    with open(src, "rb") as f:
        orig = list(fastavro.reader(f))
    for name in ("l", "rec", "mr", "aas", "fx", "dec", "decf", "tsms", "ltus", "date", "u"):
        assert [g[name] for g in got] == [o[name] for o in orig], name


@pytest.mark.parametrize("codec", AVROC_CODECS)
def test_avroc_reads_sluice_all_types(tmp_path, sluice, avroc_reader, codec):
    src, out = tmp_path / "in.arrow", tmp_path / f"types_{codec}.avro"
    table = pa.concat_tables([all_types_table()[0]] * 5)
    write_arrow(src, table, max_chunksize=7)
    ref = sluice_write(sluice, src, out, codec, 300)
    want = check_avroc_reads(avroc_reader, out, ref)
    assert len(want) == table.num_rows
    assert [r["i64"] for r in want] == table.column("i64").to_pylist()
    assert [r["s"] for r in want] == table.column("s").to_pylist()


def test_avroc_reads_sluice_empty(tmp_path, sluice, avroc_reader):
    src, out = tmp_path / "in.arrow", tmp_path / "empty.avro"
    write_arrow(src, all_types_table()[0].slice(0, 0))
    sluice.run("convert", src, out, "-W", "codec=deflate")
    schema, _ = fastavro_raw(out)
    assert avroc_rows(avroc_reader, out, schema) == []


@pytest.mark.parametrize("kind", ["enum", "fixed", "array", "map", "union"])
def test_avroc_reads_sluice_copy_of_a_non_record_root(tmp_path, sluice, avroc_reader, kind):
    """A copy `sluice convert` makes of a file whose root is no record is
    written with that root again, its names kept (test_avro_writer.py):
    avro-c parses it and reads the values fastavro reads from the original."""
    from test_avro_writer import NON_RECORD_ROOTS
    schema, rows = NON_RECORD_ROOTS[kind]
    src, copy = tmp_path / "in.avro", tmp_path / "copy.avro"
    with open(src, "wb") as f:
        fastavro.writer(f, schema, rows)
    sluice.run("convert", src, copy, "-W", "codec=deflate")
    assert check_avroc_reads(avroc_reader, copy) == fastavro_raw(src)[1]


def test_avrocat_reads_sluice_zoo(tmp_path, sluice, avrocat):
    """Debian's avrocat tool itself (its JSON is lossy for bytes with NUL
    bytes, so only the row count and the plain columns are checked)."""
    src, out = tmp_path / "zoo.avro", tmp_path / "zoo_snappy.avro"
    write_zoo(src)
    sluice.run("convert", src, out, "-W", "codec=snappy")
    proc = subprocess.run([avrocat, str(out)], capture_output=True, timeout=120)
    assert proc.returncode == 0, proc.stderr.decode()
    lines = proc.stdout.decode().splitlines()
    _, want = fastavro_raw(out)
    assert len(want) == ROWS
    # It cannot print NaN either: those rows are left out with a message.
    want = [w for w in want if not math.isnan(w["d"])]
    assert len(lines) == len(want)
    for line, w in zip(lines, want):
        g = json.loads(line)
        assert (g["l"], g["s"], g["e"], g["m"], g["uid"]) == (w["l"], w["s"], w["e"], w["m"], w["uid"])


# ---- (b) avro-c writes, sluice reads ------------------------------------------------


def sluice_vs(path: Path, tmp: Path, want_rows: list):
    """sluice's reading of `path` against rows fastavro read (underlying types)."""
    table = sluice_read(path, tmp)
    assert table.num_rows == len(want_rows)
    for name in table.column_names:
        col = table.column(name)
        got = [norm_arrow(col.type, v) for v in col.to_pylist()]
        want = [norm_avro(r[name]) for r in want_rows]
        assert got == want, f"{path.name}: column {name} differs"
    return table


@pytest.mark.parametrize("codec", AVROC_CODECS)
def test_sluice_reads_avromod_zoo(tmp_path, avromod, codec):
    """avromod decodes the fastavro zoo into libavro's generic values and
    encodes them again with its own writer."""
    src, out = tmp_path / "zoo.avro", tmp_path / f"avroc_{codec}.avro"
    write_zoo(src, codec="deflate")
    proc = subprocess.run([avromod, f"--codec={codec}", "--block-size=2000", str(src), str(out)],
                          capture_output=True, timeout=300)
    assert proc.returncode == 0, proc.stderr.decode()
    if codec == "lzma":
        ref = tmp_path / "avroc_null.avro"
        subprocess.run([avromod, "--codec=null", str(src), str(ref)], check=True, timeout=300)
        _, want = fastavro_raw(ref)
        with open(out, "rb") as f:
            assert b"lzma" in f.read(4096)
    else:
        _, want = fastavro_raw(out)
        compare(out, sluice_read(out, tmp_path))  # and with fastavro's own reading
    _, orig = fastavro_raw(src)
    assert len(want) == len(orig) == ROWS
    table = sluice_vs(out, tmp_path, want)
    assert pa.types.is_union(table.schema.field("u").type)
    assert table.schema.field("e").type == pa.dictionary(pa.int32(), pa.utf8())


AVROC_WRITER = r"""
/* Writes a schema zoo with libavro's generic value API: the same rows
   every run (no randomness), so the test can check them exactly. */
#include <avro.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK(x) do { if ((x) != 0) { fprintf(stderr, "%s: %s\n", #x, avro_strerror()); return 1; } } while (0)

static const char SCHEMA[] =
  "{\"type\":\"record\",\"name\":\"C\",\"namespace\":\"avroc\",\"fields\":["
  "{\"name\":\"id\",\"type\":\"long\"},"
  "{\"name\":\"i\",\"type\":\"int\"},"
  "{\"name\":\"b\",\"type\":\"boolean\"},"
  "{\"name\":\"f\",\"type\":\"float\"},"
  "{\"name\":\"d\",\"type\":\"double\"},"
  "{\"name\":\"s\",\"type\":\"string\"},"
  "{\"name\":\"by\",\"type\":\"bytes\"},"
  "{\"name\":\"ns\",\"type\":[\"null\",\"string\"]},"
  "{\"name\":\"e\",\"type\":{\"type\":\"enum\",\"name\":\"E\",\"symbols\":[\"A\",\"B\",\"C\"]}},"
  "{\"name\":\"fx\",\"type\":{\"type\":\"fixed\",\"name\":\"F3\",\"size\":3}},"
  "{\"name\":\"a\",\"type\":{\"type\":\"array\",\"items\":\"double\"}},"
  "{\"name\":\"m\",\"type\":{\"type\":\"map\",\"values\":[\"null\",\"long\"]}},"
  "{\"name\":\"r\",\"type\":{\"type\":\"record\",\"name\":\"R\",\"fields\":["
  "  {\"name\":\"x\",\"type\":\"int\"},"
  "  {\"name\":\"l\",\"type\":{\"type\":\"array\",\"items\":\"string\"}}]}},"
  "{\"name\":\"u\",\"type\":[\"int\",\"string\",\"R\",\"null\"]}"
  "]}";

int main(int argc, char** argv) {
  if (argc != 4) { fprintf(stderr, "usage: OUT CODEC ROWS\n"); return 2; }
  avro_schema_t schema;
  CHECK(avro_schema_from_json_length(SCHEMA, sizeof SCHEMA - 1, &schema));
  avro_file_writer_t w;
  CHECK(avro_file_writer_create_with_codec(argv[1], schema, &w, argv[2], 4096));
  avro_value_iface_t* iface = avro_generic_class_from_schema(schema);
  avro_value_t rec, v, x, y;
  CHECK(avro_generic_value_new(iface, &rec));
  long rows = atol(argv[3]);
  for (long k = 0; k < rows; ++k) {
    char buf[64];
    avro_value_reset(&rec);
    CHECK(avro_value_get_by_name(&rec, "id", &v, NULL)); CHECK(avro_value_set_long(&v, k * 1000003 - 5));
    CHECK(avro_value_get_by_name(&rec, "i", &v, NULL)); CHECK(avro_value_set_int(&v, (int)(k * 7919 % 100000) - 50000));
    CHECK(avro_value_get_by_name(&rec, "b", &v, NULL)); CHECK(avro_value_set_boolean(&v, k % 3 == 0));
    CHECK(avro_value_get_by_name(&rec, "f", &v, NULL)); CHECK(avro_value_set_float(&v, (float)k / 8.0f));
    CHECK(avro_value_get_by_name(&rec, "d", &v, NULL)); CHECK(avro_value_set_double(&v, (double)k / 3.0));
    snprintf(buf, sizeof buf, "row %ld \xc3\xa9", k);
    CHECK(avro_value_get_by_name(&rec, "s", &v, NULL)); CHECK(avro_value_set_string(&v, buf));
    unsigned char raw[8] = {0, 1, 2, 0xff, (unsigned char)k, 0x80, 7, 9};
    CHECK(avro_value_get_by_name(&rec, "by", &v, NULL)); CHECK(avro_value_set_bytes(&v, raw, (size_t)(k % 9)));
    CHECK(avro_value_get_by_name(&rec, "ns", &v, NULL));
    if (k % 3 == 1) { CHECK(avro_value_set_branch(&v, 0, &x)); CHECK(avro_value_set_null(&x)); }
    else { snprintf(buf, sizeof buf, "n%ld", k); CHECK(avro_value_set_branch(&v, 1, &x)); CHECK(avro_value_set_string(&x, buf)); }
    CHECK(avro_value_get_by_name(&rec, "e", &v, NULL)); CHECK(avro_value_set_enum(&v, (int)(k % 3)));
    unsigned char fx[3] = {(unsigned char)k, 0, 0xee};
    CHECK(avro_value_get_by_name(&rec, "fx", &v, NULL)); CHECK(avro_value_set_fixed(&v, fx, 3));
    CHECK(avro_value_get_by_name(&rec, "a", &v, NULL));
    for (long j = 0; j < k % 6; ++j) { CHECK(avro_value_append(&v, &x, NULL)); CHECK(avro_value_set_double(&x, (double)j * 0.5 - (double)k)); }
    CHECK(avro_value_get_by_name(&rec, "m", &v, NULL));
    for (long j = 0; j < k % 4; ++j) {
      snprintf(buf, sizeof buf, "k%ld", j);
      CHECK(avro_value_add(&v, buf, &x, NULL, NULL));
      if (j == 1) { CHECK(avro_value_set_branch(&x, 0, &y)); CHECK(avro_value_set_null(&y)); }
      else { CHECK(avro_value_set_branch(&x, 1, &y)); CHECK(avro_value_set_long(&y, j * k)); }
    }
    CHECK(avro_value_get_by_name(&rec, "r", &v, NULL));
    CHECK(avro_value_get_by_name(&v, "x", &x, NULL)); CHECK(avro_value_set_int(&x, (int)-k));
    CHECK(avro_value_get_by_name(&v, "l", &x, NULL));
    for (long j = 0; j < k % 3; ++j) { snprintf(buf, sizeof buf, "l%ld", j); CHECK(avro_value_append(&x, &y, NULL)); CHECK(avro_value_set_string(&y, buf)); }
    CHECK(avro_value_get_by_name(&rec, "u", &v, NULL));
    switch (k % 4) {
      case 0: CHECK(avro_value_set_branch(&v, 0, &x)); CHECK(avro_value_set_int(&x, (int)k)); break;
      case 1: snprintf(buf, sizeof buf, "u%ld", k); CHECK(avro_value_set_branch(&v, 1, &x)); CHECK(avro_value_set_string(&x, buf)); break;
      case 2:
        CHECK(avro_value_set_branch(&v, 2, &x));
        CHECK(avro_value_get_by_name(&x, "x", &y, NULL)); CHECK(avro_value_set_int(&y, (int)k));
        break;
      default: CHECK(avro_value_set_branch(&v, 3, &x)); CHECK(avro_value_set_null(&x)); break;
    }
    CHECK(avro_file_writer_append_value(w, &rec));
  }
  CHECK(avro_file_writer_close(w));
  avro_value_decref(&rec);
  avro_value_iface_decref(iface);
  avro_schema_decref(schema);
  return 0;
}
"""


@pytest.fixture(scope="module")
def avroc_writer(tmp_path_factory) -> str:
    return _build_c(tmp_path_factory, "avroc_writer", AVROC_WRITER)


@pytest.mark.parametrize("codec", AVROC_CODECS)
@pytest.mark.parametrize("rows", [0, 1, 700])
def test_sluice_reads_libavro_writer(tmp_path, avroc_writer, codec, rows):
    out = tmp_path / f"c_{codec}.avro"
    subprocess.run([avroc_writer, str(out), codec, str(rows)], check=True, timeout=120)
    if codec == "lzma":
        ref = tmp_path / "c_null.avro"
        subprocess.run([avroc_writer, str(ref), "null", str(rows)], check=True, timeout=120)
        _, want = fastavro_raw(ref)
    else:
        _, want = fastavro_raw(out)
        if rows:
            compare(out, sluice_read(out, tmp_path))
    assert len(want) == rows
    if rows:
        # what the C program set, spot-checked independently of fastavro
        assert want[rows - 1]["id"] == (rows - 1) * 1000003 - 5
        assert want[2 % rows]["s"] == f"row {2 % rows} é"
    table = sluice_vs(out, tmp_path, want)
    assert table.schema.field("fx").type == pa.binary(3)
    assert table.schema.field("ns").nullable


def test_lzma_codec_roundtrip_sluice_only(tmp_path, sluice):
    """lzma (avro-c's codec) written by sluice reads back in sluice, several blocks."""
    src, out = tmp_path / "zoo.avro", tmp_path / "z.avro"
    write_zoo(src, rows=500)
    sluice.run("convert", src, out, "-W", "codec=lzma,block_size=1000")
    with open(out, "rb") as f:
        assert b"\x14avro.codec\x08lzma" in f.read(8192)
    a = sluice_read(src, tmp_path)
    b = sluice_read(out, tmp_path)
    assert a.column_names == b.column_names and a.num_rows == b.num_rows == 500
    for name in a.column_names:
        assert same(a.column(name).to_pylist(), b.column(name).to_pylist()), name
