"""Parquet reader interop: sluice's reading of a Parquet file is compared,
schema and values, with pyarrow.parquet's reading of the same file.

Inputs:
  - every file of $SLUICE_CORPORA/parquet-testing/data (and geospatial/,
    aes256/), the *_expect.csv files, and every file of bad_data/;
  - a type zoo written at test time by pyarrow (every type it writes, every
    codec, data page v1/v2, dictionary on/off, the DELTA_*, BYTE_STREAM_SPLIT
    and RLE (boolean) encodings, tiny pages, many / one / empty row groups,
    INT96, no ARROW:schema, checksums);
  - files written by DuckDB (COPY ... TO ... (FORMAT parquet)) and polars
    (write_parquet), nested types included;
  - projection (`cat -c`), `-O dictionary=true`, `sluice stats` against
    pyarrow.compute, a STRING column holding invalid UTF-8.

sluice is driven through `$SLUICE_BIN cat FILE -t arrows` (an Arrow IPC
stream on stdout). pyarrow's extension types (uuid, json, ...) are compared
by their storage type; dictionary-encoded columns are compared decoded (the
type check still says whether sluice kept the dictionary).
"""

from __future__ import annotations

import csv
import datetime as dt
import decimal
import math
import subprocess
import uuid
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.ipc as ipc
import pyarrow.parquet as pq
import pytest

from conftest import MEASURES_RSS, SANITIZER_MARKERS, corpora_dir  # noqa: E402

PQ_DIR = corpora_dir() / "parquet-testing"
DATA = PQ_DIR / "data"
BAD = PQ_DIR / "bad_data"
TIMEOUT = 60


# ---- running sluice -------------------------------------------------------------


def _run(sluice_bin: str, args: list, timeout: float = TIMEOUT) -> subprocess.CompletedProcess:
    cmd = [sluice_bin, "-q", *map(str, args)]
    try:
        return subprocess.run(cmd, capture_output=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        pytest.fail(f"{' '.join(cmd)}: no answer within {timeout}s (hang?)")


def _opts(options) -> list:
    out = []
    for o in options:
        out += ["-O", o]
    return out


def sluice_read(sluice_bin: str, path: Path, columns=None, options=()) -> pa.Table:
    """The file as sluice reads it: `sluice cat FILE -t arrows` into a Table."""
    args = [*_opts(options), "cat", path, "-t", "arrows"]
    if columns is not None:
        args += ["-c", ",".join(columns)]
    proc = _run(sluice_bin, args)
    err = proc.stderr.decode(errors="replace").strip()
    if any(m in err for m in SANITIZER_MARKERS):
        pytest.fail(f"sluice on {path.name}: sanitizer report:\n{err}")
    if proc.returncode != 0:
        pytest.fail(f"sluice cat {path.name} exited {proc.returncode}: {err[-1500:]}")
    try:
        return ipc.open_stream(pa.BufferReader(proc.stdout)).read_all()
    except pa.ArrowInvalid as e:
        pytest.fail(f"sluice cat {path.name} -t arrows: not a readable IPC stream: {e}")


def expect_clean_error(sluice_bin: str, path: Path, options=(), must_say=None,
                       timeout: float = TIMEOUT) -> str:
    """sluice must refuse the file: exit > 0 (no signal), a message, no
    sanitizer report; returns the message."""
    proc = _run(sluice_bin, [*_opts(options), "cat", path, "-t", "arrows"], timeout=timeout)
    err = proc.stderr.decode(errors="replace")
    assert not any(m in err for m in SANITIZER_MARKERS), f"{path.name}: sanitizer report:\n{err}"
    assert proc.returncode > 0, \
        f"{path.name}: expected a clean error, got exit {proc.returncode} " \
        f"({'signal' if proc.returncode < 0 else 'success'}): {err[-800:]}"
    assert err.strip(), f"{path.name}: failed without a message"
    if must_say is not None:
        assert must_say.lower() in err.lower(), f"{path.name}: message lacks {must_say!r}: {err}"
    return err


# ---- comparison -----------------------------------------------------------------


def norm_type(t: pa.DataType) -> pa.DataType:
    """Extension types -> their storage, recursively (sluice has no registry
    of extension types; it hands out the storage). sluice has no view types
    and no 32/64-bit decimals (README, "not supported"): a file whose
    ARROW:schema asks for them gives utf8 / binary / decimal128 with the same
    values."""
    if isinstance(t, pa.ExtensionType):
        return norm_type(t.storage_type)
    if t == pa.string_view():
        return pa.string()
    if t == pa.binary_view():
        return pa.binary()
    if pa.types.is_decimal32(t) or pa.types.is_decimal64(t):
        return pa.decimal128(t.precision, t.scale)
    if pa.types.is_map(t):
        return pa.map_(norm_field(t.key_field), norm_field(t.item_field), t.keys_sorted)
    if pa.types.is_large_list(t):
        return pa.large_list(norm_field(t.value_field))
    if pa.types.is_fixed_size_list(t):
        return pa.list_(norm_field(t.value_field), t.list_size)
    if pa.types.is_list(t):
        return pa.list_(norm_field(t.value_field))
    if pa.types.is_struct(t):
        return pa.struct([norm_field(t.field(i)) for i in range(t.num_fields)])
    return t


def norm_field(f: pa.Field) -> pa.Field:
    return pa.field(f.name, norm_type(f.type), f.nullable)


def decoded_type(t: pa.DataType) -> pa.DataType:
    return t.value_type if pa.types.is_dictionary(t) else t


def plain_type(t: pa.DataType) -> pa.DataType:
    """The type whose Python values compare exactly: temporals as their
    integers (datetime cannot hold every timestamp), extensions as their
    storage, dictionaries decoded."""
    t = decoded_type(norm_type(t))
    if pa.types.is_timestamp(t) or pa.types.is_duration(t) or pa.types.is_time64(t) \
            or pa.types.is_date64(t):
        return pa.int64()
    if pa.types.is_date32(t) or pa.types.is_time32(t):
        return pa.int32()
    if pa.types.is_map(t):
        return pa.map_(plain_field(t.key_field), plain_field(t.item_field))
    if pa.types.is_large_list(t):
        return pa.large_list(plain_field(t.value_field))
    if pa.types.is_fixed_size_list(t):
        return pa.list_(plain_field(t.value_field), t.list_size)
    if pa.types.is_list(t):
        return pa.list_(plain_field(t.value_field))
    if pa.types.is_struct(t):
        return pa.struct([plain_field(t.field(i)) for i in range(t.num_fields)])
    return t


def plain_field(f: pa.Field) -> pa.Field:
    return pa.field(f.name, plain_type(f.type), f.nullable)


def plain_array(col) -> pa.Array:
    """One array of the column: extension storage, dictionaries decoded."""
    if isinstance(col, pa.ChunkedArray):
        chunks = [plain_array(c) for c in col.chunks]
        t = chunks[0].type if chunks else decoded_type(norm_type(col.type))
        return pa.concat_arrays(chunks) if chunks else pa.array([], t)
    if isinstance(col, pa.ExtensionArray):
        col = col.storage
    if pa.types.is_dictionary(col.type):
        col = col.dictionary_decode()
    t = norm_type(col.type)
    if t != col.type:
        col = col.cast(t)
    return col


def to_values(col) -> list:
    """Python values of a column in comparable form (see plain_type)."""
    a = plain_array(col)
    pt = plain_type(a.type)
    if pt != a.type:
        a = a.cast(pt)
    return [norm_value(v) for v in a.to_pylist()]


def norm_value(v):
    if isinstance(v, uuid.UUID):
        return v.bytes
    if isinstance(v, list):
        return [norm_value(x) for x in v]
    if isinstance(v, tuple):
        return tuple(norm_value(x) for x in v)
    if isinstance(v, dict):
        return {k: norm_value(x) for k, x in v.items()}
    return v


def same(a, b) -> bool:
    """Exact equality; NaN equals NaN, 0.0 differs from -0.0."""
    if isinstance(a, (float, np.floating)) and isinstance(b, (float, np.floating)):
        if math.isnan(a) or math.isnan(b):
            return math.isnan(a) and math.isnan(b)
        return a == b and math.copysign(1.0, a) == math.copysign(1.0, b)
    if isinstance(a, decimal.Decimal) and isinstance(b, decimal.Decimal):
        return a == b and a.as_tuple().exponent == b.as_tuple().exponent
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if a is None or b is None:
        return a is None and b is None
    if isinstance(a, bool) != isinstance(b, bool):
        return False
    return a == b


def _short(v) -> str:
    s = repr(v)
    return s if len(s) < 160 else s[:160] + "..."


def column_problem(name: str, got, want) -> str | None:
    g, w = plain_array(got), plain_array(want)
    if len(g) != len(w):
        return f"column {name!r}: {len(g)} values, pyarrow {len(w)}"
    if g.type == w.type and g.equals(w):
        # Fast path; NaNs take the slow one (NaN != NaN in Arrow). Arrow's
        # equality also holds 0.0 == -0.0: the signs are compared apart.
        if pa.types.is_floating(g.type) and len(g):
            gs = np.signbit(g.fill_null(0).to_numpy(zero_copy_only=False))
            ws = np.signbit(w.fill_null(0).to_numpy(zero_copy_only=False))
            if not np.array_equal(gs, ws):
                i = int(np.argmax(gs != ws))
                return f"column {name!r} row {i}: sluice {g[i].as_py()!r} != pyarrow {w[i].as_py()!r}"
        return None
    if g.type != w.type:
        try:
            g = g.cast(w.type)  # a type difference is reported apart
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            pass
    gv, wv = to_values(g), to_values(w)
    for i, (a, b) in enumerate(zip(gv, wv)):
        if not same(a, b):
            return f"column {name!r} row {i}: sluice {_short(a)} != pyarrow {_short(b)}"
    return None


def table_problems(got: pa.Table, want: pa.Table, check_types: bool = True) -> list:
    problems = []
    if got.num_rows != want.num_rows:
        problems.append(f"{got.num_rows} rows, pyarrow {want.num_rows}")
    gnames, wnames = got.schema.names, want.schema.names
    if gnames != wnames:
        problems.append(f"column names {gnames} != pyarrow {wnames}")
    for i, name in enumerate(wnames):
        if i >= len(gnames):
            break
        gf, wf = got.schema.field(i), want.schema.field(i)
        if check_types:
            gt, wt = norm_type(gf.type), norm_type(wf.type)
            if gt != wt:
                problems.append(f"column {name!r}: type {gt} != pyarrow {wt}")
            elif gf.nullable != wf.nullable:
                problems.append(f"column {name!r}: nullable={gf.nullable}, pyarrow {wf.nullable}")
        if got.num_rows == want.num_rows:
            p = column_problem(name, got.column(i), want.column(i))
            if p:
                problems.append(p)
    return problems


def assert_same(got: pa.Table, want: pa.Table, what: str, check_types: bool = True) -> None:
    problems = table_problems(got, want, check_types)
    assert not problems, f"{what}:\n  " + "\n  ".join(problems)


def pyarrow_read(path, **kw) -> pa.Table:
    return pq.read_table(path, **kw)


# ---- the corpus -----------------------------------------------------------------

CHECKSUM_CORRUPT = {"datapage_v1-corrupt-checksum.parquet",
                    "rle-dict-uncompressed-corrupt-checksum.parquet"}
# pyarrow cannot read these for a pyarrow limitation, not a fault of the file:
# sluice may read them or refuse them cleanly.
PYARROW_LIMITATION = {"large_string_map.brotli.parquet"}  # 2 GiB of strings in one chunk
# INT96 dates that timestamp[ns] cannot hold: pyarrow's default wraps them
# into other dates, sluice refuses them unless -O int96_timestamp_unit says a
# unit that holds them (compared with pyarrow's coerce_int96_timestamp_unit).
# int96_from_spark holds 9999-12-31 and a value Spark overflowed on write
# (year 11465252 read as Arrow C++ and DuckDB read it, the Julian day
# unsigned), which only ms and s hold (pyarrow's us wraps it too).
INT96_PAST_NS = {"int96_from_spark.parquet": "ms"}


def _files(d: Path, pattern: str) -> list:
    return sorted(d.glob(pattern)) if d.is_dir() else []


CORPUS = [p for p in _files(DATA, "*.parquet") if p.name not in CHECKSUM_CORRUPT]
ENCRYPTED = _files(DATA, "*.parquet.encrypted") + _files(DATA / "aes256", "*.parquet.encrypted")
GEO = _files(DATA / "geospatial", "*.parquet")
BAD_DATA = _files(BAD, "*.parquet")
EXPECT_CSV = _files(DATA, "*_expect.csv")


def _ids(paths):
    return [p.name if p.parent in (DATA, BAD) else f"{p.parent.name}/{p.name}" for p in paths]


@pytest.mark.parametrize("path", CORPUS, ids=_ids(CORPUS))
def test_corpus_file(sluice_bin, path):
    if path.name in PYARROW_LIMITATION:
        proc = _run(sluice_bin, ["cat", path, "-t", "arrows", "-o", "/dev/null"], timeout=300)
        err = proc.stderr.decode(errors="replace")
        assert not any(m in err for m in SANITIZER_MARKERS), err
        assert proc.returncode >= 0, f"{path.name}: killed by signal {-proc.returncode}"
        assert proc.returncode == 0 or err.strip(), f"{path.name}: failed without a message"
        return
    if path.name in INT96_PAST_NS:
        unit = INT96_PAST_NS[path.name]
        expect_clean_error(sluice_bin, path, must_say="int96_timestamp_unit=us")
        got = sluice_read(sluice_bin, path, options=[f"int96_timestamp_unit={unit}"])
        want = pyarrow_read(path, coerce_int96_timestamp_unit=unit)
        assert got.schema == want.schema
        # (as int64: Python's datetime stops at year 9999)
        for name in want.schema.names:
            assert got.column(name).cast(pa.int64()).to_pylist() == \
                want.column(name).cast(pa.int64()).to_pylist(), name
        return
    try:
        want = pyarrow_read(path)
    except Exception as e:  # noqa: BLE001 - pyarrow refuses: so must sluice, cleanly
        expect_clean_error(sluice_bin, path)
        print(f"pyarrow and sluice both refuse {path.name}; pyarrow: {e}")
        return
    got = sluice_read(sluice_bin, path)
    assert_same(got, want, path.name)


@pytest.mark.parametrize("name", sorted(CHECKSUM_CORRUPT))
def test_corrupt_checksum(sluice_bin, name):
    path = DATA / name
    if not path.exists():
        pytest.skip(f"{name} not in the corpus")
    # pyarrow: reads it when not verifying (its default), refuses when verifying.
    want = pyarrow_read(path)
    with pytest.raises(OSError):
        pq.read_table(path, page_checksum_verification=True)
    expect_clean_error(sluice_bin, path)
    got = sluice_read(sluice_bin, path, options=["verify_checksums=false"])
    assert_same(got, want, f"{name} with verify_checksums=false")


@pytest.mark.parametrize("name", ["datapage_v1-uncompressed-checksum.parquet",
                                  "datapage_v1-snappy-compressed-checksum.parquet",
                                  "plain-dict-uncompressed-checksum.parquet",
                                  "rle-dict-snappy-checksum.parquet"])
def test_good_checksum_explicit(sluice_bin, name):
    path = DATA / name
    if not path.exists():
        pytest.skip(f"{name} not in the corpus")
    want = pq.read_table(path, page_checksum_verification=True)
    got = sluice_read(sluice_bin, path, options=["verify_checksums=true"])
    assert_same(got, want, f"{name} with verify_checksums=true")


@pytest.mark.parametrize("path", ENCRYPTED, ids=_ids(ENCRYPTED))
def test_encrypted(sluice_bin, path):
    expect_clean_error(sluice_bin, path, must_say="encrypted")


@pytest.mark.parametrize("path", GEO, ids=_ids(GEO))
def test_geospatial(sluice_bin, path):
    """Read (then equal to pyarrow, geometry as its WKB storage) or a clear error."""
    want = pyarrow_read(path)
    proc = _run(sluice_bin, ["cat", path, "-t", "arrows"])
    err = proc.stderr.decode(errors="replace")
    assert not any(m in err for m in SANITIZER_MARKERS), err
    if proc.returncode != 0:
        assert proc.returncode > 0 and err.strip(), f"{path.name}: exit {proc.returncode}: {err}"
        return
    got = ipc.open_stream(pa.BufferReader(proc.stdout)).read_all()
    assert_same(got, want, path.name)


@pytest.mark.parametrize("path", EXPECT_CSV, ids=_ids(EXPECT_CSV))
def test_expect_csv(sluice_bin, path):
    """The *_expect.csv files list the expected values of the .parquet beside
    them (columns by position; an empty field is a null)."""
    pq_path = path.with_name(path.name[: -len("_expect.csv")] + ".parquet")
    got = sluice_read(sluice_bin, pq_path)
    with open(path, newline="") as f:
        rows = list(csv.reader(f))
    header, rows = rows[0], rows[1:]
    assert got.num_columns == len(header), f"{pq_path.name}: {got.num_columns} columns, csv {len(header)}"
    assert got.num_rows == len(rows), f"{pq_path.name}: {got.num_rows} rows, csv {len(rows)}"
    for i in range(got.num_columns):
        values = to_values(got.column(i))
        t = decoded_type(got.schema.field(i).type)
        for r, (v, row) in enumerate(zip(values, rows)):
            text = row[i]
            if text == "":
                want = None if not (pa.types.is_string(t) or pa.types.is_large_string(t)) or v is None \
                    else ""
            elif pa.types.is_integer(t):
                want = int(text)
            elif pa.types.is_floating(t):
                want = float(text)
            elif pa.types.is_binary(t) or pa.types.is_large_binary(t):
                want = text.encode()
            else:
                want = text
            assert same(v, want), f"{pq_path.name} column {header[i]!r} row {r}: sluice {v!r} != csv {text!r}"


@pytest.mark.parametrize("path", BAD_DATA, ids=_ids(BAD_DATA))
def test_bad_data(sluice_bin, path):
    """Every file of bad_data/ is refused cleanly within the timeout. (pyarrow
    has since learnt to read ARROW-GH-43605.parquet; sluice may read it too,
    then with pyarrow's values.)"""
    try:
        want = pyarrow_read(path)
    except Exception:  # noqa: BLE001
        want = None
    proc = _run(sluice_bin, ["cat", path, "-t", "arrows"], timeout=30)
    err = proc.stderr.decode(errors="replace")
    assert not any(m in err for m in SANITIZER_MARKERS), f"{path.name}: sanitizer report:\n{err}"
    if want is not None and proc.returncode == 0:
        got = ipc.open_stream(pa.BufferReader(proc.stdout)).read_all()
        assert_same(got, want, path.name)
        return
    assert proc.returncode > 0, f"{path.name}: expected a clean error, got exit {proc.returncode}: {err}"
    assert err.strip(), f"{path.name}: failed without a message"


# ---- the zoo: pyarrow-written files ---------------------------------------------

N = 2000


def _nulls(rng, n=N, p=0.1):
    return rng.random(n) < p


def _with_nulls(values, mask):
    return [None if m else v for v, m in zip(values, mask)]


def zoo_main(n: int = N, seed: int = 7) -> pa.Table:
    """Primitives, temporals, decimals, dictionary and nested types, nulls in
    every nullable column and at every nesting level."""
    rng = np.random.default_rng(seed)
    cols = {}
    for t in (pa.int8(), pa.int16(), pa.int32(), pa.int64(),
              pa.uint8(), pa.uint16(), pa.uint32(), pa.uint64()):
        info = np.iinfo(t.to_pandas_dtype())
        v = rng.integers(info.min, info.max, size=n, endpoint=True, dtype=t.to_pandas_dtype())
        v[:2] = [info.min, info.max]
        cols[str(t)] = pa.array(v, t, mask=_nulls(rng))
    specials = [math.nan, math.inf, -math.inf, -0.0, 0.0, 1e-310, 3.4e38, -1.5]
    for t, dtype in ((pa.float32(), np.float32), (pa.float64(), np.float64),
                     (pa.float16(), np.float16)):
        v = rng.normal(0, 1000, size=n).astype(dtype)
        with np.errstate(over="ignore"):
            v[: len(specials)] = np.array(specials, dtype=np.float64).astype(dtype)
        cols[str(t)] = pa.array(v, t, mask=_nulls(rng))
    cols["bool"] = pa.array(rng.random(n) < 0.5, mask=_nulls(rng))
    words = ["", "a", "héllo", "日本語", "x" * 300, "tab\tnl\n", "zz", "quote\"", "\u0000nul"]
    strs = [words[i % len(words)] + str(int(x)) * (i % 3) for i, x in
            enumerate(rng.integers(0, 10**6, size=n))]
    cols["string"] = pa.array(_with_nulls(strs, _nulls(rng)), pa.string())
    cols["large_string"] = pa.array(_with_nulls(strs[::-1], _nulls(rng)), pa.large_string())
    blobs = [rng.bytes(int(k)) for k in rng.integers(0, 40, size=n)]
    cols["binary"] = pa.array(_with_nulls(blobs, _nulls(rng)), pa.binary())
    cols["large_binary"] = pa.array(_with_nulls(blobs[::-1], _nulls(rng)), pa.large_binary())
    cols["fixed_size_binary"] = pa.array(_with_nulls([rng.bytes(5) for _ in range(n)], _nulls(rng)),
                                         pa.binary(5))
    ints = rng.integers(-10**8, 10**8, size=n)
    for p, s in ((7, 2), (15, 3), (30, 5)):
        q = decimal.Decimal(1).scaleb(-s)
        vals = [decimal.Decimal(int(x) * (10 ** max(0, p - s - 9) if p > 18 else 1)).scaleb(-s)
                .quantize(q) for x in ints]
        if p == 7:
            vals = [decimal.Decimal(int(x) % 10**7 - 5 * 10**6).scaleb(-s).quantize(q) for x in ints]
        cols[f"decimal128_{p}_{s}"] = pa.array(_with_nulls(vals, _nulls(rng)), pa.decimal128(p, s))
    days = rng.integers(-50000, 50000, size=n)
    cols["date32"] = pa.array(days.astype(np.int32), pa.date32(), mask=_nulls(rng))
    cols["time32[s]"] = pa.array(rng.integers(0, 86400, size=n).astype(np.int32), pa.time32("s"),
                                 mask=_nulls(rng))
    cols["time32[ms]"] = pa.array(rng.integers(0, 86400000, size=n).astype(np.int32),
                                  pa.time32("ms"), mask=_nulls(rng))
    cols["time64[us]"] = pa.array(rng.integers(0, 86400 * 10**6, size=n), pa.time64("us"),
                                  mask=_nulls(rng))
    cols["time64[ns]"] = pa.array(rng.integers(0, 86400 * 10**9, size=n), pa.time64("ns"),
                                  mask=_nulls(rng))
    secs = rng.integers(-2 * 10**9, 4 * 10**9, size=n)
    for unit, mul in (("s", 1), ("ms", 10**3), ("us", 10**6), ("ns", 10**9)):
        for tz in (None, "UTC", "America/New_York"):
            v = secs * mul + (rng.integers(0, mul, size=n) if mul > 1 else 0)
            if unit == "ns":
                v = (secs % (2 * 10**9)) * mul  # within ns range
            cols[f"ts_{unit}_{tz}"] = pa.array(v, pa.timestamp(unit, tz), mask=_nulls(rng))
    cats = ["red", "green", "blue", "", "violet"]
    cols["dictionary"] = pa.array(
        _with_nulls([cats[int(i)] for i in rng.integers(0, 5, size=n)], _nulls(rng))
    ).dictionary_encode()

    def small_list(i, maker):
        k = i % 5
        if k == 0:
            return None
        if k == 1:
            return []
        return [None if (i + j) % 4 == 0 else maker(i, j) for j in range(k)]

    cols["list<int32>"] = pa.array([small_list(i, lambda i, j: i * 10 + j) for i in range(n)],
                                   pa.list_(pa.int32()))
    cols["large_list<int64>"] = pa.array([small_list(i, lambda i, j: -i * j) for i in range(n)],
                                         pa.large_list(pa.int64()))
    cols["list<list<int32>>"] = pa.array(
        [small_list(i, lambda i, j: small_list(i + j + 1, lambda a, b: a - b)) for i in range(n)],
        pa.list_(pa.list_(pa.int32())))
    st = pa.struct([("a", pa.int32()), ("b", pa.string())])
    cols["struct"] = pa.array([None if i % 9 == 0 else {"a": None if i % 4 == 0 else i,
                                                         "b": None if i % 6 == 0 else f"s{i}"}
                               for i in range(n)], st)
    ls = pa.list_(pa.struct([("x", pa.int16()), ("y", pa.float64())]))
    cols["list<struct>"] = pa.array(
        [small_list(i, lambda i, j: {"x": (i + j) % 30000, "y": None if j == 1 else i / (j + 1)})
         for i in range(n)], ls)
    sl = pa.struct([("l", pa.list_(pa.int32())), ("s", pa.struct([("z", pa.bool_())]))])
    cols["struct<list>"] = pa.array(
        [None if i % 11 == 0 else {"l": small_list(i, lambda i, j: j),
                                   "s": None if i % 3 == 0 else {"z": None if i % 5 == 0 else i % 2 == 0}}
         for i in range(n)], sl)
    cols["map_string_int32"] = pa.array(
        [None if i % 8 == 0 else [(f"k{j}", None if j == 2 else i + j) for j in range(i % 4)]
         for i in range(n)], pa.map_(pa.string(), pa.int32()))
    cols["map_int32_list_string"] = pa.array(
        [None if i % 7 == 0 else [(j, small_list(i + j, lambda a, b: f"{a}.{b}")) for j in range(i % 3)]
         for i in range(n)], pa.map_(pa.int32(), pa.list_(pa.string())))
    cols["all_null_int32"] = pa.nulls(n, pa.int32())
    fields = [pa.field(k, v.type) for k, v in cols.items()]
    # REQUIRED columns (no definition levels), flat and nested.
    fields.append(pa.field("required_int64", pa.int64(), nullable=False))
    cols["required_int64"] = pa.array(np.arange(n, dtype=np.int64) * 7 - 1000)
    rl = pa.list_(pa.field("item", pa.int32(), nullable=False))
    fields.append(pa.field("required_list", rl, nullable=False))
    cols["required_list"] = pa.array([[j for j in range(i % 4)] for i in range(n)], rl)
    rs = pa.struct([pa.field("r", pa.int32(), nullable=False), pa.field("o", pa.string())])
    fields.append(pa.field("required_struct", rs, nullable=False))
    cols["required_struct"] = pa.array([{"r": i, "o": None if i % 3 else str(i)} for i in range(n)], rs)
    return pa.Table.from_arrays(list(cols.values()), schema=pa.schema(fields))


def zoo_extra(n: int = N, seed: int = 11) -> pa.Table:
    """The types pyarrow writes with an ARROW:schema to restore them:
    views, extension types, durations, decimal32/64/256, null, date64,
    fixed-size lists."""
    rng = np.random.default_rng(seed)
    mask = lambda: _nulls(rng)  # noqa: E731
    strs = [f"v{int(x)}" * (int(x) % 4) for x in rng.integers(0, 1000, size=n)]
    cols = {
        "string_view": pa.array(_with_nulls(strs, mask()), pa.string_view()),
        "binary_view": pa.array(_with_nulls([s.encode() * 3 for s in strs], mask()), pa.binary_view()),
        "uuid": pa.ExtensionArray.from_storage(
            pa.uuid(), pa.array(_with_nulls([rng.bytes(16) for _ in range(n)], mask()), pa.binary(16))),
        "json": pa.ExtensionArray.from_storage(
            pa.json_(), pa.array(_with_nulls([f'{{"k": {i}}}' for i in range(n)], mask()))),
        "null": pa.nulls(n),
        "date64": pa.array(rng.integers(-10**5, 10**5, size=n) * 86400000, pa.date64(), mask=mask()),
        "fixed_size_list": pa.array([None if i % 6 == 0 else [i, None if i % 4 == 0 else -i, 3]
                                     for i in range(n)], pa.list_(pa.int32(), 3)),
        "decimal256_60_10": pa.array(
            _with_nulls([decimal.Decimal(int(x) * 10**40 + 12345).scaleb(-10)
                         for x in rng.integers(-10**9, 10**9, size=n)], mask()), pa.decimal256(60, 10)),
        "decimal32_7_2": pa.array(_with_nulls([decimal.Decimal(int(x)).scaleb(-2)
                                                for x in rng.integers(-10**6, 10**6, size=n)], mask()),
                                   pa.decimal32(7, 2)),
        "decimal64_15_3": pa.array(_with_nulls([decimal.Decimal(int(x)).scaleb(-3)
                                                 for x in rng.integers(-10**14, 10**14, size=n)], mask()),
                                    pa.decimal64(15, 3)),
    }
    for unit in ("s", "ms", "us", "ns"):
        cols[f"duration[{unit}]"] = pa.array(rng.integers(-10**12, 10**12, size=n),
                                             pa.duration(unit), mask=mask())
    return pa.table(cols)


FLAT_BY_ENCODING = {
    "DELTA_BINARY_PACKED": lambda t: [c for c in t.schema.names
                                      if pa.types.is_integer(t.schema.field(c).type)
                                      or pa.types.is_temporal(t.schema.field(c).type)],
    "DELTA_LENGTH_BYTE_ARRAY": lambda t: ["string", "large_string", "binary", "large_binary"],
    "DELTA_BYTE_ARRAY": lambda t: ["string", "large_string", "binary", "large_binary",
                                   "fixed_size_binary", "decimal128_30_5"],
    "BYTE_STREAM_SPLIT": lambda t: ["float", "double", "halffloat", "int32", "int64",
                                    "fixed_size_binary", "decimal128_30_5"],
    "RLE": lambda t: ["bool"],
}
CODECS = ["none", "snappy", "gzip", "brotli", "zstd", "lz4"]


def _write_cases():
    """(id, table maker, write function) for every zoo case."""
    cases = []
    for codec in CODECS:
        for version in ("1.0", "2.0"):
            for dictionary in (True, False):
                cid = f"main-{codec}-v{version[0]}-{'dict' if dictionary else 'plain'}"
                kw = dict(compression=codec, data_page_version=version, use_dictionary=dictionary)
                cases.append((cid, "main", kw))
    for enc, cols in FLAT_BY_ENCODING.items():
        for version in ("1.0", "2.0"):
            cases.append((f"enc-{enc}-v{version[0]}", f"enc:{enc}",
                          dict(use_dictionary=False, data_page_version=version, compression="zstd")))
    cases += [
        ("tiny-pages-v1", "main", dict(data_page_size=64, write_batch_size=7,
                                       dictionary_pagesize_limit=256, row_group_size=700)),
        ("tiny-pages-v2", "main", dict(data_page_size=64, write_batch_size=5, data_page_version="2.0",
                                       dictionary_pagesize_limit=128, compression="snappy")),
        ("many-row-groups", "main", dict(row_group_size=64)),
        ("one-row-group", "main", dict(row_group_size=N * 2)),
        ("empty-table", "main-empty", {}),
        ("empty-row-groups", "main-emptygroups", {}),
        ("int96", "main", dict(use_deprecated_int96_timestamps=True)),
        ("no-arrow-schema", "main", dict(store_schema=False)),
        ("decimal-as-integer", "main", dict(store_decimal_as_integer=True)),
        ("checksums", "main", dict(write_page_checksum=True, compression="snappy")),
        ("checksums-v2", "main", dict(write_page_checksum=True, data_page_version="2.0")),
        ("no-statistics-page-index", "main", dict(write_statistics=False, write_page_index=True)),
        ("extra-default", "extra", {}),
        ("extra-v2-zstd-plain", "extra", dict(data_page_version="2.0", compression="zstd",
                                              use_dictionary=False)),
        ("extra-no-arrow-schema", "extra", dict(store_schema=False)),
    ]
    return cases


ZOO_CASES = _write_cases()


@pytest.fixture(scope="session")
def zoo_tables():
    return {"main": zoo_main(), "extra": zoo_extra()}


def write_zoo_case(path: Path, kind: str, kw: dict, tables: dict) -> None:
    if kind == "main-empty":
        pq.write_table(tables["main"].slice(0, 0), path)
    elif kind == "main-emptygroups":
        t = tables["main"]
        with pq.ParquetWriter(path, t.schema) as w:
            w.write_table(t.slice(0, 0))
            w.write_table(t.slice(0, 500))
            w.write_table(t.slice(500, 0))
            w.write_table(t.slice(500), row_group_size=600)
            w.write_table(t.slice(0, 0))
        groups = [pq.ParquetFile(path).metadata.row_group(i).num_rows
                  for i in range(pq.ParquetFile(path).metadata.num_row_groups)]
        assert 0 in groups, f"pyarrow wrote no empty row group: {groups}"
    elif kind.startswith("enc:"):
        enc = kind[4:]
        t = tables["main"]
        names = [c for c in FLAT_BY_ENCODING[enc](t) if c in t.schema.names]
        sub = t.select(names)
        pq.write_table(sub, path, column_encoding={c: enc for c in names}, **kw)
    else:
        pq.write_table(tables[kind], path, **kw)


@pytest.mark.parametrize("cid,kind,kw", ZOO_CASES, ids=[c[0] for c in ZOO_CASES])
def test_zoo(sluice_bin, zoo_tables, tmp_path, cid, kind, kw):
    path = tmp_path / f"{cid}.parquet"
    write_zoo_case(path, kind, kw, zoo_tables)
    want = pyarrow_read(path)
    got = sluice_read(sluice_bin, path)
    assert_same(got, want, f"zoo case {cid}")


# ---- DuckDB-written files -------------------------------------------------------

DUCK_SELECT = """
SELECT
  i::BIGINT AS id,
  CASE WHEN i % 7 = 0 THEN NULL ELSE (i % 256 - 128)::TINYINT END AS i8,
  CASE WHEN i % 5 = 0 THEN NULL ELSE (i * 37 % 65536 - 32768)::SMALLINT END AS i16,
  CASE WHEN i % 3 = 0 THEN NULL ELSE (i * 2654435761 % 4294967296 - 2147483648)::INTEGER END AS i32,
  (i * 11400714819323198485::UBIGINT % 18446744073709551615::UBIGINT)::UBIGINT AS u64,
  (i % 256)::UTINYINT AS u8, (i * 7 % 65536)::USMALLINT AS u16, (i * 13 % 4294967296)::UINTEGER AS u32,
  CASE WHEN i % 9 = 0 THEN NULL ELSE (i / 7.0)::FLOAT END AS f32,
  CASE WHEN i % 11 = 0 THEN 'nan'::DOUBLE WHEN i % 13 = 0 THEN NULL ELSE i * 1.5e10 / 3 END AS f64,
  (i % 2 = 0) AS b,
  CASE WHEN i % 4 = 0 THEN NULL ELSE 'str-' || (i % 97)::VARCHAR || repeat('x', i % 17) END AS s,
  ('blob' || i::VARCHAR)::BLOB AS bl,
  (i * 31 % 10000 / 100)::DECIMAL(4,2) AS d4,
  (i * 1234567 % 1000000000)::DECIMAL(9,0) / 1000 AS d9,
  (i::DECIMAL(18,3) * 12345.678)::DECIMAL(18,3) AS d18,
  (i::DECIMAL(38,10) * 98765432109.123456789)::DECIMAL(38,10) AS d38,
  DATE '1970-01-01' + (i * 37 % 40000 - 20000)::INTEGER AS dt,
  make_time((i % 24), (i % 60), (i % 60) + 0.25) AS tm,
  TIMESTAMP '2000-01-01' + to_microseconds(i * 123456789) AS ts,
  TIMESTAMPTZ '2000-01-01 00:00:00+00' + to_microseconds(i * 987654) AS tstz,
  ('00000000-0000-0000-0000-' || lpad(i::VARCHAR, 12, '0'))::UUID AS u,
  CASE WHEN i % 6 = 0 THEN NULL ELSE [i, NULL, i + 1][1:(i % 4)] END AS li,
  [['a' || i::VARCHAR], [], NULL] AS lls,
  CASE WHEN i % 8 = 0 THEN NULL ELSE {'x': i, 'y': CASE WHEN i % 3 = 0 THEN NULL ELSE 'y' || i END} END AS st,
  [{'p': i, 'q': [i, i]}, NULL] AS lst,
  CASE WHEN i % 5 = 0 THEN NULL ELSE MAP {'k' || (i % 3): i, 'z': NULL} END AS mp,
  {'inner': {'deep': [i]}} AS nested
FROM range(0, 3000) t(i)
"""

DUCK_CASES = [(c, rg, v) for c in ("uncompressed", "snappy", "gzip", "zstd", "lz4", "brotli")
              for rg, v in ((1000, "V1"), (100000, "V2"))]


@pytest.mark.parametrize("codec,rgs,version", DUCK_CASES,
                         ids=[f"{c}-rg{r}-{v}" for c, r, v in DUCK_CASES])
def test_duckdb_written(sluice_bin, tmp_path, codec, rgs, version):
    duckdb = pytest.importorskip("duckdb")
    path = tmp_path / f"duck-{codec}.parquet"
    con = duckdb.connect()
    con.execute(f"COPY ({DUCK_SELECT}) TO '{path}' (FORMAT parquet, COMPRESSION {codec}, "
                f"ROW_GROUP_SIZE {rgs}, PARQUET_VERSION {version})")
    got = sluice_read(sluice_bin, path)
    try:
        want = pyarrow_read(path)
    except OSError:
        # pyarrow 26 cannot decode some DELTA_BINARY_PACKED int32 columns
        # DuckDB writes with PARQUET_VERSION V2 (DuckDB and polars read them):
        # those columns are compared with DuckDB's values, the rest with pyarrow.
        f = pq.ParquetFile(path)
        names, problems = f.schema_arrow.names, []
        if got.schema.names != names:
            problems.append(f"column names {got.schema.names} != pyarrow {names}")
        for name in names:
            if name not in got.schema.names:
                continue
            try:
                want_col = f.read(columns=[name])
                problems += table_problems(got.select([name]), want_col)
            except OSError:
                rel = con.sql(f"SELECT \"{name}\" FROM read_parquet('{path}')")
                # DuckDB 2.x renamed arrow() / fetch_arrow_table() to to_arrow_table().
                ref = (getattr(rel, "to_arrow_table", None) or rel.fetch_arrow_table)()
                p = column_problem(name, got.column(name), ref.column(0))
                if p:
                    problems.append(p + " (reference: DuckDB; pyarrow cannot read it)")
        assert not problems, f"DuckDB {codec} rg={rgs} {version}:\n  " + "\n  ".join(problems)
        return
    assert_same(got, want, f"DuckDB {codec} rg={rgs} {version}")


def test_snappy_pages_decompress_in_place(sluice_bin, tmp_path):
    """v1 snappy pages of fixed-width values without nulls decompress straight
    into the output column: a later page borrows the bytes in front of its
    slots for its level bytes; the first page of a chunk (DuckDB writes one
    page per chunk) has them scattered aside by snappy. Covered: values that
    repeat the level bytes (snappy copies reaching back across the seam),
    compressible and random values, a required column, a row group whose
    nulls come late (the predicted level bytes do not match), many small
    pages. Values equal pyarrow's."""
    duckdb = pytest.importorskip("duckdb")
    n = 3000
    rng = np.random.default_rng(5)
    table = pa.table({
        # 1000 ones as levels are 03 00 00 00 d0 0f 01; the value 3 is 03 00 00 00
        "seam": pa.array([3] * n, pa.int32()),
        "id": pa.array(range(n), pa.int64()),
        "x": rng.random(n),
        "f": pa.array(rng.random(n).astype(np.float32)),
        "late_nulls": pa.array([None if i > 2500 and i % 3 == 0 else i for i in range(n)], pa.int64()),
        "req": pa.array(rng.integers(-2**62, 2**62, n), pa.int64()),
    }, schema=pa.schema([("seam", pa.int32()), ("id", pa.int64()), ("x", pa.float64()),
                         ("f", pa.float32()), ("late_nulls", pa.int64()),
                         pa.field("req", pa.int64(), nullable=False)]))
    for i, kw in enumerate((dict(row_group_size=1000), dict(row_group_size=n, data_page_size=2048))):
        path = tmp_path / f"pa{i}.parquet"
        pq.write_table(table, path, compression="snappy", use_dictionary=False, **kw)
        assert_same(sluice_read(sluice_bin, path), pyarrow_read(path), f"pyarrow-written {kw}")
    path = tmp_path / "duck.parquet"
    duckdb.connect().execute(
        f"COPY (SELECT i::BIGINT AS id, (i * 0.37 % 1)::DOUBLE AS x, 3::INTEGER AS seam, "
        f"CASE WHEN i > 250000 AND i % 3 = 0 THEN NULL ELSE i END AS late_nulls "
        f"FROM range(0, 300000) t(i)) TO '{path}' (FORMAT parquet, COMPRESSION snappy, "
        f"PARQUET_VERSION V1)")
    meta = pq.ParquetFile(path).metadata
    assert meta.num_row_groups > 1 and meta.row_group(0).column(0).encodings == ("PLAIN",)
    assert_same(sluice_read(sluice_bin, path), pyarrow_read(path), "DuckDB-written")


# ---- polars-written files -------------------------------------------------------

POLARS_CODECS = ["uncompressed", "snappy", "gzip", "lz4", "zstd", "brotli"]


def polars_frame(pl, n=2500):
    rng = np.random.default_rng(3)
    ints = rng.integers(-10**9, 10**9, size=n)
    return pl.DataFrame({
        "i64": ints,
        "i32": pl.Series(ints % 100000, dtype=pl.Int32),
        "u16": pl.Series(np.abs(ints) % 60000, dtype=pl.UInt16),
        "f64": pl.Series(rng.normal(size=n)),
        "f32": pl.Series(rng.normal(size=n).astype(np.float32)),
        "s": [None if i % 7 == 0 else f"polars-{i % 50}" for i in range(n)],
        "cat": pl.Series([["a", "b", "c"][i % 3] for i in range(n)], dtype=pl.Categorical),
        "b": [None if i % 5 == 0 else i % 2 == 0 for i in range(n)],
        "d": pl.Series([dt.date(2000, 1, 1) + dt.timedelta(days=int(x % 20000)) for x in ints]),
        "ts": pl.Series([dt.datetime(2020, 1, 1) + dt.timedelta(microseconds=int(x)) for x in ints]),
        "dec": pl.Series([decimal.Decimal(int(x)).scaleb(-3) for x in ints],
                         dtype=pl.Decimal(20, 3)),
        "l": [None if i % 6 == 0 else [j for j in range(i % 4)] for i in range(n)],
        "ls": [[f"s{i}", None] if i % 3 else [] for i in range(n)],
        "st": [{"a": i, "b": None if i % 2 else f"b{i}"} for i in range(n)],
        "lst": [[{"x": i, "y": [i]}] if i % 4 else None for i in range(n)],
    })


@pytest.mark.parametrize("codec", POLARS_CODECS)
def test_polars_written(sluice_bin, tmp_path, codec):
    pl = pytest.importorskip("polars")
    path = tmp_path / f"polars-{codec}.parquet"
    polars_frame(pl).write_parquet(path, compression=codec, row_group_size=700, statistics=True)
    want = pyarrow_read(path)
    got = sluice_read(sluice_bin, path)
    assert_same(got, want, f"polars {codec}")



def test_required_fixed_size_list_under_null_struct(sluice_bin, tmp_path):
    """A required fixed_size_list inside a nullable struct has no values
    where the struct is null: its slot gets N fillers, not "wrong length".
    pyarrow 26 fails on the file it wrote itself ("Expected all lists to be
    of size=1"), so the reference is the table it wrote."""
    fsl = pa.list_(pa.string(), 1)
    table = pa.table({
        "s": pa.array([{"f0": ["a"]}, None, {"f0": ["b"]}, None],
                      pa.struct([pa.field("f0", fsl, nullable=False)])),
        "t": pa.array([{"f0": [1, None]}, None, None, {"f0": [3, 4]}],
                      pa.struct([pa.field("f0", pa.list_(pa.int32(), 2), nullable=False)])),
        "l": pa.array([[[1, 2]], None, [], [[5, 6], [7, 8]]],
                      pa.list_(pa.field("x", pa.list_(pa.int32(), 2), nullable=False))),
    })
    path = tmp_path / "fsl.parquet"
    pq.write_table(table, path, row_group_size=3)
    got = sluice_read(sluice_bin, path)
    got.validate(full=True)
    assert got.to_pylist() == table.to_pylist()
    assert got.schema == table.schema

# fixed_size_list<T> for the child types whose restoring came later than the
# plain leaves': each written by pyarrow (a list plus ARROW:schema).
FSL_CHILDREN = {
    "string": pa.string(), "large_string": pa.large_string(), "binary": pa.binary(),
    "large_binary": pa.large_binary(), "list": pa.list_(pa.int32()),
    "struct": pa.struct([("a", pa.int32()), ("b", pa.string())]),
    "fsl": pa.list_(pa.int16(), 2),
    "dictionary": pa.dictionary(pa.int32(), pa.string()),
    "dictionary_int8": pa.dictionary(pa.int8(), pa.string()),
}


def _fsl_value(t: pa.DataType, i: int, nulls: bool = True):
    """Value i of type t (None now and then when `nulls`)."""
    if nulls and i % 5 == 1:
        return None
    if pa.types.is_dictionary(t):
        return "d%d" % (i % 4)
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return "s%d" % i * (i % 3)
    if pa.types.is_binary(t) or pa.types.is_large_binary(t):
        return bytes([i % 256]) * (i % 4)
    if pa.types.is_fixed_size_list(t):
        return [i, None if nulls and i % 7 == 0 else -i]
    if pa.types.is_list(t):
        return list(range(i % 3)) + ([None] if nulls and i % 4 == 0 else [])
    return {"a": None if nulls and i % 6 == 0 else i, "b": None if nulls and i % 4 == 0 else f"b{i}"}


def fsl_table(t: pa.DataType, rows: int = 11) -> pa.Table:
    """fixed_size_list<t> columns with nulls at the list level and inside,
    under null structs, inside lists, and with required items."""
    def lists(n, k, nulls=True):
        return [None if nulls and r % 4 == 2 else [_fsl_value(t, r * n + j, nulls) for j in range(n)]
                for r in range(k)]
    v = lists(3, rows)
    s = [None if r % 3 == 1 else {"f": x} for r, x in enumerate(lists(2, rows))]
    flat = lists(2, 3 * rows)
    li = [None if r % 5 == 3 else flat[r:r + r % 3] for r in range(rows)]
    req = [None if r % 3 == 0 else x for r, x in enumerate(lists(2, rows, nulls=False))]
    return pa.table({
        "v": pa.array(v, pa.list_(t, 3)),
        "s": pa.array(s, pa.struct([("f", pa.list_(t, 2))])),
        "l": pa.array(li, pa.list_(pa.list_(t, 2))),
        "r": pa.array(req, pa.list_(pa.field("item", t, nullable=False), 2)),
    })


@pytest.mark.parametrize("child", list(FSL_CHILDREN))
def test_fixed_size_list_of_any_child(sluice_bin, tmp_path, child):
    """fixed_size_list<T> comes back as pq.read_table gives it (type and
    values) whatever T is: strings and binaries of both widths, lists,
    structs and fixed-size lists, not only plain leaves; across a row group
    boundary, and for a table without rows."""
    t = FSL_CHILDREN[child]
    for name, table, rgs in (("rows", fsl_table(t), 4), ("empty", fsl_table(t, 0), None)):
        path = tmp_path / f"{name}.parquet"
        pq.write_table(table, path, row_group_size=rgs)
        want = pyarrow_read(path)
        assert want.schema == table.schema  # (pyarrow restores them all)
        got = sluice_read(sluice_bin, path)
        got.validate(full=True)
        assert got.schema == want.schema, f"{child} {name}"
        assert_same(got, want, f"fixed_size_list<{child}> {name}")
        assert got.to_pylist() == table.to_pylist()


def test_fixed_size_list_of_required_dictionaries_in_an_all_null_row_group(sluice_bin, tmp_path):
    """fixed_size_list<dictionary not null>: the null lists' fillers are
    valid index 0, so a row group whose lists are all null (no dictionary
    value at all) gets one empty value for them to name; the array stays
    valid and the values are pyarrow's."""
    item = pa.field("item", pa.dictionary(pa.int32(), pa.string()), nullable=False)
    rows = [["a", "b"], None, ["c", "a"], None, None, None, ["b", "b"]]
    table = pa.table({"v": pa.array(rows, pa.list_(item, 2))})
    path = tmp_path / "fsl_dict_null_rg.parquet"
    pq.write_table(table, path, row_group_size=3)  # row group 1: rows 3-5, all null
    want = pyarrow_read(path)
    got = sluice_read(sluice_bin, path)
    got.validate(full=True)
    assert got.schema == want.schema
    assert got.to_pylist() == want.to_pylist() == [{"v": r} for r in rows]


@pytest.mark.parametrize("child", ["string", "large_string", "list", "struct", "fsl"])
def test_fixed_size_list_of_the_wrong_length_is_an_error(sluice_bin, tmp_path, child):
    """A list whose ARROW:schema says fixed_size_list<T, 2> but that holds
    one value in some row: pyarrow refuses it ("Expected all lists to be of
    size=2"), sluice too, naming the file, the column, the row and why,
    never giving the values shifted. (pyarrow writes the ARROW:schema it
    is given before its own, and reads the first, as sluice does.)"""
    t = FSL_CHILDREN[child]
    good = tmp_path / "good.parquet"
    pq.write_table(pa.table({"v": pa.array([[_fsl_value(t, 0), _fsl_value(t, 2)]],
                                           pa.list_(t, 2))}), good)
    arrow_schema = pq.read_metadata(good).metadata[b"ARROW:schema"]
    rows = [[_fsl_value(t, 2 * r), _fsl_value(t, 2 * r + 2)] for r in range(7)]
    rows[1] = None
    rows[5] = [_fsl_value(t, 3)]
    bad = pa.table({"v": pa.array(rows, pa.list_(t))})
    path = tmp_path / "bad.parquet"
    pq.write_table(bad.replace_schema_metadata({b"ARROW:schema": arrow_schema}), path,
                   row_group_size=4)
    with pytest.raises(pa.ArrowInvalid, match="size=2"):
        pq.read_table(path)
    err = expect_clean_error(sluice_bin, path)
    # (row 5 of the file: row 1 of row group 1)
    for says in ("bad.parquet: row group 1, column v: row 1: a list of 1 value where",
                 "fixed_size_list of 2"):
        assert says in err, (says, err)


def test_fixed_size_list_row_group_read_in_slices(sluice_bin, tmp_path):
    """A row group read a slice at a time (-O slice_bytes) gives the same
    fixed-size lists, and an error names the row in the row group, not in
    the slice."""
    n = 60_000
    t = pa.struct([("a", pa.int32()), ("b", pa.string())])
    rows = [None if r % 7 == 3 else
            [{"a": r, "b": "x" * (r % 9)}, None if r % 5 == 0 else {"a": -r, "b": None}]
            for r in range(n)]
    table = pa.table({"v": pa.array(rows, pa.list_(t, 2)), "w": pa.array(rows, pa.list_(t))})
    path = tmp_path / "good.parquet"
    pq.write_table(table.select(["v"]), path, row_group_size=n, data_page_size=20_000)
    got = sluice_read(sluice_bin, path, options=["slice_bytes=300000"])
    assert_same(got, pyarrow_read(path), "fixed_size_list read in slices")
    arrow_schema = pq.read_metadata(path).metadata[b"ARROW:schema"]
    rows[50_001] = rows[50_001][:1]
    bad = pa.table({"v": pa.array(rows, pa.list_(t))})
    path = tmp_path / "bad.parquet"
    pq.write_table(bad.replace_schema_metadata({b"ARROW:schema": arrow_schema}), path,
                   row_group_size=n, data_page_size=20_000)
    err = expect_clean_error(sluice_bin, path, options=["slice_bytes=300000"])
    assert "row group 0, column v: row 50001: a list of 1 value" in err, err


FASTPARQUET_CASES = [("SNAPPY", "int64", None), ("GZIP", "int96", 100), ("ZSTD", "int64", [0, 5, 7]),
                     (None, "int96", 1000)]


@pytest.mark.parametrize("codec,times,row_groups", FASTPARQUET_CASES,
                         ids=[f"{c}-{t}-{r}" for c, t, r in FASTPARQUET_CASES])
def test_fastparquet_written(sluice_bin, tmp_path, codec, times, row_groups):
    """fastparquet (the pandas-native writer dask used for years) writes an
    empty Thrift list as one byte with no element type (0x00): such footers
    read like pyarrow reads them. Columns: the pandas dtypes it writes, with
    nulls, int96 or int64 times, a zoned timestamp, a categorical (dictionary
    pages), and its own index column."""
    fastparquet = pytest.importorskip("fastparquet")
    pd = pytest.importorskip("pandas")
    n = 1500
    rng = np.random.default_rng(13)
    df = pd.DataFrame({
        "i64": rng.integers(-2**62, 2**62, n),
        "i32": rng.integers(-2**31, 2**31 - 1, n).astype("int32"),
        "u8": rng.integers(0, 255, n).astype("uint8"),
        "f64": np.where(rng.random(n) < 0.2, np.nan, rng.normal(size=n)),
        "b": rng.random(n) < 0.5,
        "s": pd.Series([None if i % 7 == 0 else f"v{i % 13}é" for i in range(n)], dtype=object),
        "raw": pd.Series([bytes([i % 256, 0]) for i in range(n)], dtype=object),
        "t": pd.Series(pd.to_datetime(rng.integers(-2**40, 2**40, n), unit="ms")).where(rng.random(n) > 0.2),
        "tz": pd.Series(pd.to_datetime(rng.integers(0, 2**40, n), unit="ms")).dt.tz_localize("UTC")
              .dt.tz_convert("Europe/Paris"),
        "cat": pd.Categorical([["a", "b", "c", None][i % 4] for i in range(n)]),
        "ni": pd.array([None if i % 5 == 0 else i for i in range(n)], dtype="Int64"),
    }, index=pd.Index(range(100, 100 + n), name="idx"))
    path = tmp_path / "fastparquet.parquet"
    kw = {"compression": codec, "times": times, "write_index": True,
          "object_encoding": {"s": "utf8", "raw": "bytes"}}
    if row_groups is not None:
        kw["row_group_offsets"] = row_groups
    fastparquet.write(str(path), df, **kw)
    want = pyarrow_read(path)
    got = sluice_read(sluice_bin, path)
    assert_same(got, want, f"fastparquet {codec} {times} {row_groups}")


# ---- projection -----------------------------------------------------------------

PROJECTIONS = [
    ("alltypes_plain.parquet", ["string_col", "id"]),
    ("alltypes_tiny_pages.parquet", ["timestamp_col", "bool_col", "float_col"]),
    ("nested_structs.rust.parquet", None),  # last, then first column
    ("nullable.impala.parquet", None),
    ("nested_maps.snappy.parquet", None),
    ("zoo", ["map_int32_list_string", "int8", "list<struct>", "string", "ts_ns_UTC"]),
    ("zoo", ["struct<list>"]),
]


@pytest.mark.parametrize("source,columns", PROJECTIONS,
                         ids=[f"{s}-{'-'.join(c) if c else 'last-first'}" for s, c in PROJECTIONS])
def test_projection(sluice_bin, zoo_tables, tmp_path, source, columns):
    if source == "zoo":
        path = tmp_path / "zoo.parquet"
        pq.write_table(zoo_tables["main"], path, row_group_size=300)
    else:
        path = DATA / source
        if not path.exists():
            pytest.skip(f"{source} not in the corpus")
    if columns is None:
        names = pq.ParquetFile(path).schema_arrow.names
        columns = [names[-1], names[0]]
    want = pq.read_table(path, columns=columns)
    assert want.schema.names == columns
    got = sluice_read(sluice_bin, path, columns=columns)
    assert_same(got, want, f"{source} -c {','.join(columns)}")


# ---- stats ----------------------------------------------------------------------


def test_stats_match_pyarrow(sluice_bin, zoo_tables, tmp_path):
    """`sluice stats --json` (count, nulls, min, max) against pyarrow.compute
    over the same file, for integer, float and string columns."""
    import json

    import pyarrow.compute as pc

    path = tmp_path / "stats.parquet"
    pq.write_table(zoo_tables["main"], path, row_group_size=333)
    cols = ["int8", "uint64", "int64", "double", "string", "required_int64", "all_null_int32"]
    proc = _run(sluice_bin, ["stats", path, "--json", "-c", ",".join(cols)])
    assert proc.returncode == 0, proc.stderr.decode(errors="replace")
    stats = {s["name"]: s for s in json.loads(proc.stdout)}
    table = pq.read_table(path, columns=cols)
    problems = []
    for c in cols:
        col = table.column(c)
        s = stats.get(c)
        if s is None:
            problems.append(f"{c}: no stats")
            continue
        if s.get("count") != table.num_rows or s.get("nulls") != col.null_count:
            problems.append(f"{c}: count/nulls {s.get('count')}/{s.get('nulls')} != "
                            f"{table.num_rows}/{col.null_count}")
        mm = pc.min_max(col).as_py()
        for k in ("min", "max"):
            want, have = mm[k], s.get(k)
            if want is None:
                ok = have in (None, "", "null")
            elif isinstance(want, float):
                ok = have is not None and float(have) == want
            elif isinstance(want, int):
                ok = have is not None and int(have) == want
            else:
                ok = have == want
            if not ok:
                problems.append(f"{c}: {k} {have!r} != pyarrow {want!r}")
    assert not problems, "\n".join(problems)


# ---- invalid UTF-8 --------------------------------------------------------------


def test_invalid_utf8_in_string_column(sluice_bin, tmp_path):
    """A STRING column holding bytes that are not UTF-8 (pyarrow writes them
    without looking, and hands them back as an invalid utf8 array): sluice
    refuses the file cleanly, as its CSV and Avro readers do, or hands out
    valid Arrow; never an invalid string array."""
    data = b"ok\xff\xfebad"
    offsets = pa.array([0, 2, 7], pa.int32()).buffers()[1]
    strings = pa.StringArray.from_buffers(2, offsets, pa.py_buffer(data))
    path = tmp_path / "bad_utf8.parquet"
    pq.write_table(pa.table({"s": strings}), path)
    proc = _run(sluice_bin, ["cat", path, "-t", "arrows"])
    err = proc.stderr.decode(errors="replace")
    assert not any(m in err for m in SANITIZER_MARKERS), err
    if proc.returncode != 0:
        assert proc.returncode > 0 and err.strip(), f"exit {proc.returncode}: {err}"
        return
    table = ipc.open_stream(pa.BufferReader(proc.stdout)).read_all()
    table.validate(full=True)


# ---- -O dictionary=true -----------------------------------------------------------


@pytest.mark.parametrize("parents", ["all null", "some null"])
def test_dictionary_option_required_string_under_null_parents(sluice_bin, tmp_path, parents):
    """-O dictionary=true on a required string inside structs that are all
    null in a row group: the leaf has slots but no value, so no dictionary.
    Its indices pointed into an empty dictionary (pyarrow's read_dictionary
    builds the same invalid array), which full validation refuses and
    sluice's own IPC writer would not write; the dictionary now holds one
    empty value. Values equal pyarrow's plain read."""
    leaf = pa.struct([pa.field("s", pa.string(), nullable=False), pa.field("i", pa.int32())])
    rows = [None] * 5 if parents == "all null" else [None, {"s": "x", "i": 1}, None]
    table = pa.table({"c": pa.array(rows, leaf), "k": pa.array(range(len(rows)), pa.int64())})
    path = tmp_path / "null_parents.parquet"
    pq.write_table(table, path)
    got = sluice_read(sluice_bin, path, options=["dictionary=true"])
    got.validate(full=True)
    assert got.schema.field("c").type.field("s").type == pa.dictionary(pa.int32(), pa.string())
    assert got.to_pylist() == pq.read_table(path).to_pylist()


@pytest.mark.parametrize("child", ["string", "large_string"])
def test_dictionary_option_leaves_fixed_size_lists_alone(sluice_bin, tmp_path, child):
    """-O dictionary=true reads the strings inside a fixed_size_list as
    strings, whatever the data: with a null list (its slots get fillers)
    the read failed ('a fixed_size_list of dictionaries'), without one it
    gave dictionaries. Other string columns become dictionaries."""
    t = FSL_CHILDREN[child]
    for nulls in (True, False):
        table = fsl_table(t).append_column("plain", pa.array(["p%d" % (i % 3) for i in range(11)]))
        if not nulls:
            table = table.select(["r", "plain"]).filter(pa.array([i % 3 != 0 for i in range(11)]))
        path = tmp_path / f"fsl_dict_{nulls}.parquet"
        pq.write_table(table, path, row_group_size=4)
        got = sluice_read(sluice_bin, path, options=["dictionary=true"])
        got.validate(full=True)
        want = pyarrow_read(path)
        for name in table.column_names:
            if name == "plain":
                assert got.schema.field(name).type == pa.dictionary(pa.int32(), pa.string())
            else:
                assert got.schema.field(name).type == want.schema.field(name).type, name
        assert got.to_pylist() == want.to_pylist()


def test_dictionary_option(sluice_bin, tmp_path):
    """-O dictionary=true: a string column comes out as dictionary<int32,
    string> whether its chunks were dictionary-encoded or not (what pyarrow's
    read_dictionary gives); other columns as without the option. Files
    written with and without dictionaries then read as one dataset (the
    type once followed the first chunk's encoding, and they could not)."""
    n = 3000
    table = pa.table({
        "dict_s": pa.array([None if i % 9 == 0 else f"v{i % 13}" for i in range(n)]),
        "plain_s": pa.array([f"p{i}" for i in range(n)]),
        "i": pa.array(range(n), pa.int64()),
        "b": pa.array([f"b{i % 5}".encode() for i in range(n)], pa.binary()),
    })
    path = tmp_path / "dict.parquet"
    pq.write_table(table, path, use_dictionary=["dict_s", "b"], store_schema=False,
                   row_group_size=1000)
    md = pq.ParquetFile(path).metadata
    names = table.schema.names
    dict_cols = [c for j, c in enumerate(names)
                 if md.row_group(0).column(j).has_dictionary_page
                 and pa.types.is_string(table.schema.field(c).type)]
    assert dict_cols == ["dict_s"]
    want = pq.read_table(path, read_dictionary=["dict_s", "plain_s"])
    got = sluice_read(sluice_bin, path, options=["dictionary=true"])
    assert_same(got, want, "dictionary=true")
    plain = sluice_read(sluice_bin, path, options=["dictionary=false"])
    assert_same(plain, pq.read_table(path), "dictionary=false")
    ds = tmp_path / "ds"
    ds.mkdir()
    pq.write_table(table, ds / "a.parquet", row_group_size=1000)
    pq.write_table(table, ds / "b.parquet", use_dictionary=False, row_group_size=1000)
    got = sluice_read(sluice_bin, ds, options=["dictionary=true"])
    assert got.schema.field("plain_s").type == pa.dictionary(pa.int32(), pa.string())
    assert got.column("plain_s").to_pylist() == table.column("plain_s").to_pylist() * 2
    assert got.column("dict_s").to_pylist() == table.column("dict_s").to_pylist() * 2


def test_dictionary_option_leaves_extension_columns_alone(sluice_bin, tmp_path):
    """-O dictionary=true made a JSON column (pyarrow's json_, DuckDB's
    JSON) a dictionary still named arrow.json, which pyarrow refuses to
    read ("Invalid storage type for JsonExtensionType"); the column keeps
    its type, as pyarrow's read_dictionary leaves it, and the other string
    columns become dictionaries."""
    import duckdb
    path = tmp_path / "json.parquet"
    pq.write_table(pa.table({"j": pa.array(['{"a":1}', None], pa.json_()),
                             "s": ["x", "y"]}), path)
    want = pq.read_table(path, read_dictionary=["j", "s"])
    got = sluice_read(sluice_bin, path, options=["dictionary=true"])
    assert got.schema == want.schema
    assert got.to_pylist() == want.to_pylist()
    duck = tmp_path / "duck.parquet"
    duckdb.sql(f"copy (select '[1, 2]'::json as j, 'z' as s) to '{duck}' (format parquet)")
    got = sluice_read(sluice_bin, duck, options=["dictionary=true"])
    assert got.schema.field("j").type == pa.json_()
    assert got.schema.field("s").type == pa.dictionary(pa.int32(), pa.string())
    assert got.to_pylist() == [{"j": "[1, 2]", "s": "z"}]


def test_dictionary_as_written(sluice_bin, tmp_path):
    """A dictionary column comes back with the file's own dictionary, as
    pyarrow reads it: a pandas categorical keeps its categories' order, the
    unused ones and its ordered flag; also inside lists, with nulls, across
    row groups, data page v2, and when the writer fell back to plain values
    mid-chunk (then the values are dictionary-encoded as they come)."""
    import pandas as pd
    cats = pd.Categorical(["b", "a", None, "b", "c"] * 400, categories=["c", "b", "a", "z"],
                          ordered=True)
    table = pa.Table.from_pandas(pd.DataFrame({"cat": cats}), preserve_index=False)
    words = pa.array([None if i % 11 == 0 else f"w{i % 97}" for i in range(2000)])
    table = table.append_column("d", words.dictionary_encode())
    table = table.append_column("l", pa.array(
        [None if i % 5 == 0 else [f"x{i % 7}", None] for i in range(2000)],
        pa.list_(pa.dictionary(pa.int16(), pa.string()))))
    unique = pa.array([f"u{i}" for i in range(2000)])
    cases = {
        "v1": (table, dict(row_group_size=700)),
        "v2": (table, dict(row_group_size=700, data_page_version="2.0", data_page_size=512)),
        "fallback": (pa.table({"f": unique}), dict(dictionary_pagesize_limit=256,
                                                   data_page_size=256)),
    }
    for name, (t, kw) in cases.items():
        path = tmp_path / f"{name}.parquet"
        pq.write_table(t, path, **kw)
        read_dictionary = ["f"] if name == "fallback" else None
        want = pq.read_table(path, read_dictionary=read_dictionary)
        options = ["dictionary=true"] if name == "fallback" else []
        got = sluice_read(sluice_bin, path, options=options)
        got.validate(full=True)
        assert got.schema == want.schema, name
        for c in got.column_names:
            if pa.types.is_list(got.schema.field(c).type):
                g = [x.flatten() for x in got.column(c).chunks]
                w = [x.flatten() for x in want.column(c).chunks]
            else:
                g, w = got.column(c).chunks, want.column(c).chunks
            assert [x.dictionary.to_pylist() for x in g] == \
                [x.dictionary.to_pylist() for x in w], (name, c)
            assert [x.indices.to_pylist() for x in g] == [x.indices.to_pylist() for x in w], \
                (name, c)


# ---- one big row group on several threads (column parts) --------------------------

BIG_ROWS = 1_500_000  # two batches (sluice cuts row groups at 2**20 rows)


def big_row_group_table(n: int = BIG_ROWS, seed: int = 5) -> pa.Table:
    """Flat and nested columns with nulls, strings among them."""
    rng = np.random.default_rng(seed)

    def mask(p):
        return rng.random(n) < p

    lengths = rng.integers(0, 4, n)
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int32)
    items = pa.array(rng.integers(-1000, 1000, int(offsets[-1])), pa.int32(),
                     mask=rng.random(int(offsets[-1])) < 0.05)
    lists = pa.ListArray.from_arrays(pa.array(offsets), items, mask=pa.array(mask(0.1)))
    words = np.array(["", "alpha", "beta", "gamma", "δέλτα", "epsilon" * 5])
    strings = pa.array(words[rng.integers(0, len(words), n)], pa.string(), mask=mask(0.1))
    struct = pa.StructArray.from_arrays(
        [pa.array(rng.integers(0, 1 << 30, n), pa.int32()),
         pa.array(np.char.add("k", rng.integers(0, 50000, n).astype(str)), pa.string())],
        names=["id", "key"], mask=pa.array(mask(0.05)))
    return pa.table({
        "i64": pa.array(rng.integers(-(1 << 40), 1 << 40, n), pa.int64(), mask=mask(0.1)),
        "f64": pa.array(rng.standard_normal(n), mask=mask(0.05)),
        "s": strings,
        "l": lists,
        "st": struct,
        "b": pa.array(rng.random(n) < 0.5, mask=mask(0.2)),
        "d": pa.array(rng.integers(0, 20000, n), pa.int32()).cast(pa.date32()),
    })


@pytest.fixture(scope="module")
def big_row_group_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("big_rg") / "one_row_group.parquet"
    pq.write_table(big_row_group_table(), path, row_group_size=10**7)
    assert pq.ParquetFile(path).metadata.num_row_groups == 1
    return path


def sluice_read_batches(sluice_bin: str, path: Path, global_args=(), cat_args=()) -> pa.Table:
    """sluice's reading as a Table, its batches put back in (split, batch)
    order when they came unordered."""
    proc = _run(sluice_bin, [*global_args, "cat", path, "-t", "arrows", *cat_args])
    err = proc.stderr.decode(errors="replace").strip()
    assert not any(m in err for m in SANITIZER_MARKERS), f"sanitizer report:\n{err}"
    assert proc.returncode == 0, f"sluice cat exited {proc.returncode}: {err[-1500:]}"
    reader = ipc.open_stream(pa.BufferReader(proc.stdout))
    tagged = []
    while True:
        try:
            batch, meta = reader.read_next_batch_with_custom_metadata()
        except StopIteration:
            break
        key = (0, len(tagged))
        if meta is not None and b"sluice:split" in meta:
            key = (int(meta[b"sluice:split"]), int(meta[b"sluice:batch"]))
        tagged.append((key, batch))
    tagged.sort(key=lambda kb: kb[0])
    return pa.Table.from_batches([b for _, b in tagged], schema=reader.schema)


@pytest.mark.parametrize("order", ["--ordered", "--unordered"])
@pytest.mark.parametrize("columns,limit", [
    (None, None),
    (["st", "i64", "l", "s"], None),
    (["s", "f64", "b"], 1_100_000),
    (None, 12345),
], ids=["all", "projection", "projection-limit", "limit"])
def test_one_row_group_two_threads(sluice_bin, big_row_group_file, order, columns, limit):
    """A file of one row group read on 2 threads (the row group decoded as
    column parts on both, then zipped) equals pyarrow's reading."""
    cat_args = []
    if columns is not None:
        cat_args += ["-c", ",".join(columns)]
    if limit is not None:
        cat_args += ["--limit", str(limit)]
    got = sluice_read_batches(sluice_bin, big_row_group_file, ["--threads", "2", order], cat_args)
    want = pq.read_table(big_row_group_file, columns=columns)
    if limit is not None:
        want = want.slice(0, limit)
    assert_same(got, want, f"one row group, --threads 2 {order} {cat_args}")


def test_one_row_group_small_budget(sluice_bin, big_row_group_file):
    """A budget far below one batch still reads everything, in order."""
    got = sluice_read_batches(sluice_bin, big_row_group_file,
                              ["--threads", "2", "--budget", "1M"], ["-c", "l,s,i64"])
    assert_same(got, pq.read_table(big_row_group_file, columns=["l", "s", "i64"]),
                "one row group, --threads 2 --budget 1M")


# ---- row groups larger than a batch should be: read page by page ------------------

SLICE_ROWS = 120_000


def sliced_table(n: int = SLICE_ROWS, seed: int = 9) -> pa.Table:
    """Flat columns with nulls (ints, doubles, bools, strings of a few
    thousand values and unique ones), a struct, a required column, and a
    list<struct>."""
    rng = np.random.default_rng(seed)

    def mask(p):
        return rng.random(n) < p

    lengths = rng.integers(0, 3, n)
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int32)
    m = int(offsets[-1])
    items = pa.StructArray.from_arrays(
        [pa.array(rng.integers(0, 100, m), pa.int32()),
         pa.array([f"e{j % 97}" for j in range(m)], pa.string())], names=["x", "y"])
    return pa.table({
        "i": pa.array(rng.integers(-1000, 1000, n), pa.int64(), mask=mask(0.1)),
        "f": pa.array(rng.standard_normal(n), mask=mask(0.2)),
        "b": pa.array(rng.random(n) < 0.5, mask=mask(0.1)),
        "cat": pa.array([f"c{j}" for j in rng.integers(0, 3000, n)], pa.string(), mask=mask(0.1)),
        "u": pa.array([("é" * (j % 7)) + str(j) for j in range(n)], pa.string()),
        "bin": pa.array([bytes([j % 251]) * (j % 5) for j in range(n)], pa.binary()),
        "st": pa.StructArray.from_arrays(
            [pa.array(rng.integers(0, 9, n), pa.int16()),
             pa.array([f"k{j % 500}" for j in range(n)], pa.string())],
            names=["p", "q"], mask=pa.array(mask(0.05))),
        "req": pa.array(np.arange(n), pa.int64()),
        "ls": pa.ListArray.from_arrays(pa.array(offsets), items, mask=pa.array(mask(0.1))),
    })


FLAT = ["i", "f", "b", "cat", "u", "bin", "st", "req"]


def one_row_group_files(d: Path, table: pa.Table, **kw) -> dict:
    """`table` written to `d` once per data page version (1.0, 2.0) and
    dictionary setting, each file one row group (pq.write_table's other
    options in `kw`): {(version, dictionary): path}."""
    files = {}
    for version in ("1.0", "2.0"):
        for dictionary in (True, False):
            path = d / f"v{version}-{'dict' if dictionary else 'plain'}.parquet"
            pq.write_table(table, path, row_group_size=len(table), data_page_version=version,
                           use_dictionary=dictionary, **kw)
            assert pq.ParquetFile(path).metadata.num_row_groups == 1
            files[(version, dictionary)] = path
    return files


@pytest.fixture(scope="module")
def sliced_files(tmp_path_factory):
    """One row group each, in pages of about 20 kB (a few thousand rows,
    which batches do not line up with): data page v1 and v2, with and
    without dictionaries."""
    return one_row_group_files(tmp_path_factory.mktemp("sliced"), sliced_table(),
                               data_page_size=20_000, write_page_checksum=True)


@pytest.mark.parametrize("version", ["1.0", "2.0"])
@pytest.mark.parametrize("dictionary", [True, False], ids=["dict", "plain"])
@pytest.mark.parametrize("args", [
    [],
    ["--unordered", "--threads", "2"],
    ["-c", "u,i,st"],
    ["--threads", "2", "-c", "req,cat,f,ls"],
    ["-O", "dictionary=true"],
    ["--batch-rows", "7000"],
], ids=["all", "unordered-parts", "projection", "parts-with-list", "dictionary-true",
        "batch-rows"])
def test_large_row_group_read_in_slices(sluice_bin, sliced_files, version, dictionary, args):
    """A row group larger than slice_bytes (made small) comes out in batches
    of equal rows, read page by page, and equals pyarrow's reading: ordered,
    unordered, projected, decoded as column parts on two threads next to a
    list column (the parts' batches line up), with dictionary=true (one
    dictionary, the chunk's, in every batch)."""
    path = sliced_files[(version, dictionary)]
    global_args = ["-O", "slice_bytes=300000"]
    cat_args = list(args)
    for flag in ("--unordered", "--threads", "2", "-O", "dictionary=true"):
        if flag in cat_args:
            cat_args.remove(flag)
            global_args.append(flag)
    columns = None
    if "-c" in cat_args:
        columns = cat_args[cat_args.index("-c") + 1].split(",")
    schema, batches = _batches(sluice_bin, path, global_args, cat_args)
    rows = [b.num_rows for b in batches]
    assert len(rows) > 4, f"not cut: {rows}"
    # All batches of the same rows but the last (the metadata decides them,
    # so that column parts line up).
    assert rows.count(max(rows)) >= len(rows) - 1, rows
    if "--batch-rows" in cat_args:
        assert max(rows) == 7000, rows
    got = pa.Table.from_batches(batches, schema=schema)
    if "--unordered" in global_args:
        got = got.sort_by("req")
    want = pq.read_table(path, columns=columns)
    assert_same(got, want, f"{path.name} {args}", check_types="dictionary=true" not in args)
    if "dictionary=true" in args and dictionary:
        # Every page of "cat" uses the chunk's dictionary: each batch has it all.
        dicts = [b.column("cat").dictionary for b in batches]
        assert all(d.equals(dicts[0]) for d in dicts), "the dictionary changed between batches"
        assert len(dicts[0]) == pc.count_distinct(want["cat"]).as_py()


def test_large_row_group_sliced_by_the_budget(sluice_bin, tmp_path):
    """Without options, a row group expected to decode to more than a
    quarter of --budget (at least 8 MiB) comes out in batches of about that
    many bytes; smaller ones stay whole."""
    n = 1_200_000  # two int64 and a double: about 29 MB decoded
    rng = np.random.default_rng(4)
    table = pa.table({"a": pa.array(np.arange(n)),
                      "b": pa.array(rng.integers(0, 10, n), mask=rng.random(n) < 0.3),
                      "c": pa.array(rng.standard_normal(n))})
    path = tmp_path / "one.parquet"
    pq.write_table(table, path, row_group_size=n)
    schema, batches = _batches(sluice_bin, path, ["--budget", "16M"])
    assert [b.num_rows for b in batches] == [300_000] * 4
    assert_same(pa.Table.from_batches(batches, schema=schema), pq.read_table(path), "--budget 16M")
    _, batches = _batches(sluice_bin, path, ["--budget", "256M"])
    assert [b.num_rows for b in batches] == [2**20, n - 2**20]  # as before: cut at 2^20 rows


def test_large_row_group_sliced_errors_name_the_page(sluice_bin, tmp_path):
    """A corrupt page met in a later batch of a row group read in slices is
    reported with the file, row group, column and the page's offset."""
    n = 200_000
    path = tmp_path / "crc.parquet"
    pq.write_table(pa.table({"a": pa.array(np.arange(n)), "b": pa.array(np.arange(n) * 2)}), path,
                   row_group_size=n, data_page_size=20_000, write_page_checksum=True,
                   compression="none", use_dictionary=False)
    col = pq.ParquetFile(path).metadata.row_group(0).column(1)
    data = bytearray(path.read_bytes())
    at = col.data_page_offset + col.total_compressed_size - 100  # in the last page's values
    data[at] ^= 0xFF
    path.write_bytes(bytes(data))
    err = expect_clean_error(sluice_bin, path, ["slice_bytes=200000"], must_say="CRC")
    assert "row group 0, column b: page at byte" in err, err


# ---- lists and maps in a row group read page by page ----------------------------

NESTED_ROWS = 40_000


def nested_sliced_table(n: int = NESTED_ROWS, seed: int = 11) -> pa.Table:
    """Lists and maps of every shape next to flat columns: list<int64> and
    list<string> with null lists, empty lists and null elements,
    list<struct>, map<string, int32>, list<list<int32>>, a list inside a
    struct, and "long", whose every 997th row holds 20,000 values (160 kB,
    many pages' worth: the row goes on from page to page)."""
    rng = np.random.default_rng(seed)

    def offsets(count, most):
        return np.concatenate([[0], np.cumsum(rng.integers(0, most + 1, count))]).astype(np.int32)

    def nulls(count, p):
        return pa.array(rng.random(count) < p)

    def list_of(values_of, count, most, p_null):
        o = offsets(count, most)
        return pa.ListArray.from_arrays(pa.array(o), values_of(int(o[-1])), mask=nulls(count, p_null))

    li = list_of(lambda m: pa.array(rng.integers(-50, 50, m), pa.int64()), n, 5, 0.1)
    ls = list_of(lambda m: pa.array([None if j % 7 == 0 else f"s{j % 301}" for j in range(m)],
                                    pa.string()), n, 4, 0.1)
    lst = list_of(lambda m: pa.StructArray.from_arrays(
        [pa.array(rng.integers(0, 100, m), pa.int32()),
         pa.array([f"e{j % 97}" for j in range(m)], pa.string())], names=["x", "y"],
        mask=nulls(m, 0.05)), n, 3, 0.05)
    mo = offsets(n, 3)
    mm = int(mo[-1])
    mp = pa.MapArray.from_arrays(pa.array(mo), pa.array([f"k{j % 13}" for j in range(mm)]),
                                 pa.array(rng.integers(0, 1000, mm), pa.int32()))
    oo = offsets(n, 2)
    inner = list_of(lambda m: pa.array(rng.integers(0, 5, m), pa.int32()), int(oo[-1]), 3, 0.1)
    nested = pa.ListArray.from_arrays(pa.array(oo), inner, mask=nulls(n, 0.1))
    long = pa.array([list(range(20_000)) if i % 997 == 5 else [i] for i in range(n)],
                    pa.list_(pa.int64()))
    st = pa.StructArray.from_arrays(
        [pa.array(np.arange(n)), list_of(lambda m: pa.array(np.arange(m)), n, 3, 0.2)],
        names=["a", "l"], mask=nulls(n, 0.05))
    return pa.table({"id": pa.array(np.arange(n)), "li": li, "ls": ls, "lst": lst, "m": mp,
                     "nested": nested, "long": long, "st": st,
                     "f": pa.array(rng.standard_normal(n), mask=rng.random(n) < 0.1)})


@pytest.fixture(scope="module")
def nested_sliced_files(tmp_path_factory):
    """One row group each, in pages of about 4 kB written 37 levels at a
    time: data page v1 (whose pages end where the writer's batches do, rows
    going on into the next page) and v2 (pages end with rows), with and
    without dictionaries."""
    return one_row_group_files(tmp_path_factory.mktemp("nested-sliced"), nested_sliced_table(),
                               data_page_size=4_000, write_batch_size=37)


@pytest.mark.parametrize("version", ["1.0", "2.0"])
@pytest.mark.parametrize("dictionary", [True, False], ids=["dict", "plain"])
@pytest.mark.parametrize("args", [
    [],
    ["--unordered", "--threads", "2"],
    ["-c", "f,nested,id,st"],
    ["-c", "ls,m,long"],
    ["-O", "dictionary=true"],
    ["--batch-rows", "777"],
    ["--batch-rows", "1"],
], ids=["all", "unordered-parts", "flat-and-nested", "lists-and-map", "dictionary-true",
        "batch-rows", "one-row-batches"])
def test_large_nested_row_group_read_in_slices(sluice_bin, nested_sliced_files, version,
                                               dictionary, args):
    """A row group with lists and maps larger than slice_bytes (made small)
    is read page by page too: each batch ends where a row does (a
    repetition level of 0) and the next goes on from there inside its page,
    also in the middle of a row of 20,000 values spread over pages;
    the batches equal pyarrow's reading, ordered, unordered in column
    parts, projected, with dictionary=true."""
    if args == ["--batch-rows", "1"] and (version, dictionary) != ("1.0", True):
        pytest.skip("one file is enough for 40,000 batches")
    path = nested_sliced_files[(version, dictionary)]
    global_args = ["-O", "slice_bytes=100000"]
    cat_args = list(args)
    for flag in ("--unordered", "--threads", "2", "-O", "dictionary=true"):
        if flag in cat_args:
            cat_args.remove(flag)
            global_args.append(flag)
    columns = None
    if "-c" in cat_args:
        columns = cat_args[cat_args.index("-c") + 1].split(",")
    got = sluice_read_batches(sluice_bin, path, global_args, cat_args)
    rows = [b.num_rows for b in got.to_batches()]
    assert len(rows) > 4, f"not cut: {rows}"
    if "--batch-rows" in cat_args:
        assert max(rows) == int(cat_args[cat_args.index("--batch-rows") + 1]), rows
    want = pq.read_table(path, columns=columns)
    assert_same(got, want, f"{path.name} {args}", check_types="dictionary=true" not in args)


def test_large_nested_row_group_sliced_equals_whole(sluice_bin, nested_sliced_files):
    """Read page by page or decoded whole (slice_bytes large), the same
    batches: the same rows in each, the same values and types."""
    path = nested_sliced_files[("1.0", True)]
    sliced = _batches(sluice_bin, path, ["-O", "slice_bytes=100000"], ["--batch-rows", "3000"])
    whole = _batches(sluice_bin, path, ["-O", "slice_bytes=1000000000"], ["--batch-rows", "3000"])
    assert sliced[0] == whole[0]
    assert [b.num_rows for b in sliced[1]] == [b.num_rows for b in whole[1]]
    for a, b in zip(sliced[1], whole[1]):
        assert a.equals(b)


def rows_across_pages(n: int = 3000) -> list:
    """Null lists, empty lists, null elements, and every 97th row 300 values
    long (six pages of 50 level entries)."""
    return [None if i % 11 == 0 else [] if i % 7 == 0 else
            [None if (i + k) % 5 == 0 else i * 10 + k for k in range(i % 4 + 1 if i % 97 else 300)]
            for i in range(n)]


@pytest.mark.parametrize("page_entries", [50, 7])
@pytest.mark.parametrize("batch_rows", [1, 7, 100, 2999])
def test_rows_across_pages_read_in_slices(sluice_bin, tmp_path, page_entries, batch_rows):
    """A list column whose rows go on from one v1 page into the next (as
    parquet-mr wrote them), read page by page: a batch that ends in the
    middle of a page leaves its rest to the next, and one whose last row goes
    on into the next page waits for that row's end; equal to pyarrow's
    reading."""
    from parquet_split_pages import write_list_pages_file

    path = tmp_path / "across.parquet"
    rows = rows_across_pages()
    write_list_pages_file(path, rows, page_entries)
    want = pq.read_table(path)
    assert want.column("l").to_pylist() == rows
    got = sluice_read_batches(sluice_bin, path, ["-O", "slice_bytes=1"],
                              ["--batch-rows", str(batch_rows)])
    assert {b.num_rows for b in got.to_batches()[:-1]} == {batch_rows}
    assert_same(got, want, f"pages of {page_entries} entries, batches of {batch_rows} rows")


NESTED_CORPUS = ["list_columns.parquet", "nested_lists.snappy.parquet",
                 "nested_maps.snappy.parquet", "nullable.impala.parquet", "null_list.parquet",
                 "map_no_value.parquet", "old_list_structure.parquet",
                 "repeated_no_annotation.parquet", "repeated_primitive_no_list.parquet",
                 "nested_structs.rust.parquet", "nonnullable.impala.parquet"]


@pytest.mark.parametrize("name", NESTED_CORPUS)
def test_nested_corpus_read_in_slices(sluice_bin, name):
    """Lists the way other writers spell them (legacy 2-level lists: a
    repeated field without LIST; 3-level lists of old parquet-mr; Impala's
    nested maps and lists) read page by page in batches of two rows equal
    pyarrow's reading."""
    path = DATA / name
    if not path.exists():
        pytest.skip(f"{name} not in the corpus")
    got = sluice_read_batches(sluice_bin, path, ["-O", "slice_bytes=1"], ["--batch-rows", "2"])
    assert_same(got, pq.read_table(path), f"{name} in batches of 2 rows")


def test_large_nested_row_group_sliced_errors_name_the_page(sluice_bin, tmp_path):
    """A corrupt page of a list column met in a later batch of a row group
    read in slices is reported with the file, row group, column and page."""
    n = 100_000
    path = tmp_path / "crc.parquet"
    lists = pa.array([[i, i + 1] if i % 3 else [] for i in range(n)], pa.list_(pa.int64()))
    pq.write_table(pa.table({"a": pa.array(np.arange(n)), "l": lists}), path, row_group_size=n,
                   data_page_size=20_000, write_page_checksum=True, compression="none",
                   use_dictionary=False)
    col = pq.ParquetFile(path).metadata.row_group(0).column(1)
    data = bytearray(path.read_bytes())
    at = col.data_page_offset + col.total_compressed_size - 100  # in the last page's values
    data[at] ^= 0xFF
    path.write_bytes(bytes(data))
    err = expect_clean_error(sluice_bin, path, ["slice_bytes=200000"], must_say="CRC")
    assert "row group 0, column l.element: page at byte" in err, err


# ---- pages decoded a batch's share at a time ---------------------------------------

PIECE_ROWS = 20_000


def pieces_table(n: int = PIECE_ROWS, seed: int = 17) -> pa.Table:
    """A column for every value encoding pyarrow writes (named after it),
    nullable and required, and lists, a map and a struct with nulls and
    empty lists, for pages read in pieces."""
    rng = np.random.default_rng(seed)

    def mask(p):
        return rng.random(n) < p

    ints = rng.integers(-10**6, 10**6, n)
    words = [f"w{j % 37}-" + "x" * int(j % 11) for j in range(n)]
    lists = [None if i % 13 == 0 else [] if i % 7 == 0 else
             [None if (i + k) % 5 == 0 else i * 10 + k for k in range(i % 4 + 1 if i % 97 else 300)]
             for i in range(n)]
    return pa.table({
        "plain_i64": pa.array(ints, pa.int64(), mask=mask(0.1)),
        "plain_req": pa.array(np.arange(n), pa.int64()),
        "plain_s": pa.array(words, pa.string(), mask=mask(0.1)),
        "plain_b": pa.array(rng.random(n) < 0.5, mask=mask(0.1)),
        "plain_b_req": pa.array(rng.random(n) < 0.3),
        "plain_i96": pa.array(np.arange(n) * 1_000_000_007, pa.timestamp("ns"), mask=mask(0.1)),
        "rle_b": pa.array(rng.random(n) < 0.5, mask=mask(0.2)),
        "dict_s": pa.array([f"c{j}" for j in rng.integers(0, 300, n)], pa.string(), mask=mask(0.1)),
        "dict_i32": pa.array(rng.integers(0, 50, n), pa.int32(), mask=mask(0.1)),
        "dict_req": pa.array([f"r{j % 5}" for j in range(n)], pa.string()),
        "dbp_i32": pa.array(ints.astype(np.int32), pa.int32(), mask=mask(0.1)),
        "dbp_i64": pa.array(np.cumsum(ints), pa.int64()),
        "dlba_s": pa.array(words, pa.string(), mask=mask(0.15)),
        "dba_s": pa.array(sorted(words), pa.string(), mask=mask(0.15)),
        "dba_flba": pa.array([bytes([j % 7, j % 3, 1]) for j in range(n)], pa.binary(3),
                             mask=mask(0.1)),
        "bss_f64": pa.array(rng.standard_normal(n), mask=mask(0.1)),
        "bss_f32": pa.array(rng.standard_normal(n).astype(np.float32)),
        "bss_dec": pa.array([decimal.Decimal(int(v)) / 100 for v in ints], pa.decimal128(12, 2),
                            mask=mask(0.1)),
        "list_i64": pa.array(lists, pa.list_(pa.int64())),
        "list_s": pa.array([None if v is None else [None if x is None else f"e{x % 41}" for x in v]
                            for v in lists], pa.list_(pa.string())),
        "map": pa.array([None if i % 9 == 0 else [(f"k{k}", i + k) for k in range(i % 3)]
                         for i in range(n)], pa.map_(pa.string(), pa.int32())),
        "st": pa.StructArray.from_arrays(
            [pa.array(ints, pa.int64(), mask=mask(0.1)),
             pa.array([None if i % 6 == 0 else [i] * (i % 3) for i in range(n)],
                      pa.list_(pa.int32()))],
            names=["x", "l"], mask=pa.array(mask(0.05))),
    })


PIECE_ENCODINGS = {"plain_": "PLAIN", "rle_": "RLE", "dbp_": "DELTA_BINARY_PACKED",
                   "dlba_": "DELTA_LENGTH_BYTE_ARRAY", "dba_": "DELTA_BYTE_ARRAY",
                   "bss_": "BYTE_STREAM_SPLIT"}


def write_pieces_file(path: Path, table: pa.Table, version: str, page_size: int) -> None:
    """`table` in one row group, each column in the encoding its name
    starts with (dict_*: RLE_DICTIONARY; lists, map, struct: dictionary
    where pyarrow chooses it), in data pages of about `page_size` bytes."""
    encodings = {name: enc for name in table.column_names
                 for prefix, enc in PIECE_ENCODINGS.items() if name.startswith(prefix)}
    dictionary = [c for c in table.column_names if c not in encodings]
    pq.write_table(table, path, row_group_size=len(table), data_page_version=version,
                   use_dictionary=dictionary, column_encoding=encodings,
                   use_deprecated_int96_timestamps=True, data_page_size=page_size,
                   write_batch_size=len(table), dictionary_pagesize_limit=1 << 30,
                   compression="snappy")
    meta = pq.ParquetFile(path).metadata.row_group(0)
    for i in range(meta.num_columns):
        col = meta.column(i)
        name = col.path_in_schema.split(".")[0]
        if name in encodings:
            assert encodings[name] in col.encodings, (col.path_in_schema, col.encodings)
        elif name.startswith("dict_"):
            assert "RLE_DICTIONARY" in col.encodings, (col.path_in_schema, col.encodings)


@pytest.fixture(scope="module")
def pieces_files(tmp_path_factory):
    """The table of every encoding in one page per column (whatever a
    batch asks, the page holds more) and in pages of ~3 kB (batches and
    pages do not line up), data page v1 and v2: {(version, pages): path}."""
    d = tmp_path_factory.mktemp("pieces")
    table = pieces_table()
    files = {}
    for version in ("1.0", "2.0"):
        for pages, size in (("one", 1 << 30), ("small", 3000)):
            path = d / f"v{version}-{pages}.parquet"
            write_pieces_file(path, table, version, size)
            files[(version, pages)] = path
    return files


@pytest.mark.parametrize("version", ["1.0", "2.0"])
@pytest.mark.parametrize("pages", ["one", "small"])
@pytest.mark.parametrize("batch_rows", [1, 7, 1000, 65536])
def test_pages_read_in_pieces(sluice_bin, pieces_files, version, pages, batch_rows):
    """A row group read a batch at a time decodes each page a batch's share
    at a time (levels, then the values they hold) and goes on from there
    with the next batch, in every value encoding, nullable and required,
    flat and nested (a list's batch ends where a row does): the batches
    equal pyarrow's iter_batches of the same size."""
    if batch_rows == 1 and pages == "small":
        pytest.skip("20,000 one-row batches once per file version are enough")
    path = pieces_files[(version, pages)]
    got = sluice_read_batches(sluice_bin, path, ["-O", "slice_bytes=1"],
                              ["--batch-rows", str(batch_rows)])
    want = pq.ParquetFile(path).iter_batches(batch_size=batch_rows)
    want = pa.Table.from_batches(list(want))
    assert [b.num_rows for b in got.to_batches()] == \
        [min(batch_rows, PIECE_ROWS - i) for i in range(0, PIECE_ROWS, batch_rows)]
    assert_same(got, want, f"{path.name} in batches of {batch_rows}")


def test_pages_read_in_pieces_dictionary_true(sluice_bin, pieces_files):
    """dictionary=true: a page's keys decoded a batch's share at a time,
    every batch with the chunk's dictionary."""
    path = pieces_files[("2.0", "one")]
    got = sluice_read_batches(sluice_bin, path, ["-O", "slice_bytes=1", "-O", "dictionary=true"],
                              ["--batch-rows", "777", "-c", "dict_s,dict_req,list_s,plain_i64"])
    want = pq.read_table(path, columns=["dict_s", "dict_req", "list_s", "plain_i64"])
    assert_same(got, want, "dictionary=true in batches of 777", check_types=False)
    dicts = [b.column("dict_s").dictionary for b in got.to_batches()]
    assert all(d.equals(dicts[0]) for d in dicts)


def _run_limited(sluice_bin: str, args: list, limit: int) -> list:
    """The batches of a sluice run whose address space is capped at `limit`
    bytes (RLIMIT_AS), which must succeed."""
    import resource

    def cap():
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    cmd = [sluice_bin, "-q", *map(str, args)]
    proc = subprocess.run(cmd, capture_output=True, timeout=TIMEOUT, preexec_fn=cap)
    err = proc.stderr.decode(errors="replace").strip()
    assert proc.returncode == 0, f"{' '.join(cmd)}: exit {proc.returncode}: {err[-1500:]}"
    return list(ipc.open_stream(pa.BufferReader(proc.stdout)))


@pytest.mark.skipif(not MEASURES_RSS, reason="address-space limits and ASan do not mix")
def test_null_run_page_read_in_pieces(sluice_bin, tmp_path):
    """A page of 2^31 - 1 nulls in a few bytes (one run of definition
    levels) was decoded whole: 17 GB asked for before a batch came out (and
    1 GB for 10^8 nulls). Read in batches it takes a batch's memory, under
    a 1 GiB address-space cap, and its batches equal pyarrow's
    iter_batches; also over pages of 10^8 nulls each."""
    from parquet_split_pages import write_null_run_file

    for rows, pages, limit in ((2**31 - 1, 1, 300_000), (10**8, 3, 10**8 + 70_000)):
        path = tmp_path / f"nulls-{rows}.parquet"
        write_null_run_file(path, rows, pages)
        at = limit - 200_000  # the batches around the end of the first page
        got = _run_limited(sluice_bin, ["--batch-rows", "65536", "cat", path, "-t", "arrows",
                                        "--limit", limit], 1 << 30)
        got = pa.Table.from_batches(got).slice(at)
        want = []
        n = 0
        for b in pq.ParquetFile(path).iter_batches(batch_size=65536):
            if n + b.num_rows > at:
                want.append(b)
            n += b.num_rows
            if n >= limit:
                break
        want = pa.Table.from_batches(want)
        want = want.slice(at - (n - want.num_rows) if n - want.num_rows < at else 0)
        want = want.slice(0, limit - at)
        assert got.num_rows == want.num_rows == limit - at
        assert got.column("a").null_count == want.column("a").null_count == got.num_rows
        assert_same(got, want, f"{rows} nulls a page")


@pytest.mark.skipif(not MEASURES_RSS, reason="address-space limits and ASan do not mix")
@pytest.mark.parametrize("dictionary", ["false", "true"])
def test_dictionary_page_read_in_pieces(sluice_bin, tmp_path, dictionary):
    """100,000 indices into one 30,000-byte string in one page (a 1.5 kB
    file pyarrow writes): the page's values were materialised whole (3 GB)
    whatever the batch size. In batches of 1000 rows, a batch's share under
    a 1 GiB address-space cap; the same values as pyarrow's iter_batches.
    dictionary=true: keys, and the one value in each batch's dictionary."""
    path = tmp_path / "dict.parquet"
    pq.write_table(pa.table({"s": pa.array(["x" * 30000] * 100_000)}), path,
                   use_dictionary=True, data_page_size=1 << 30, write_batch_size=1 << 20)
    assert "RLE_DICTIONARY" in pq.ParquetFile(path).metadata.row_group(0).column(0).encodings
    args = ["-O", f"dictionary={dictionary}", "--batch-rows", "1000", "cat", path, "-t", "arrows"]
    if dictionary == "false":
        args += ["--limit", "5500"]  # 165 MB of output is enough
    got = _run_limited(sluice_bin, args, 1 << 30)
    f = pq.ParquetFile(path, read_dictionary=["s"] if dictionary == "true" else None)
    want = list(f.iter_batches(batch_size=1000))
    assert sum(b.num_rows for b in got) == (5500 if dictionary == "false" else 100_000)
    if dictionary == "false":
        got = pa.Table.from_batches(got)
        assert_same(got, pa.Table.from_batches(want).slice(0, 5500), "dictionary=false")
        return
    for a, b in zip(got, want, strict=True):  # 3 GB decoded: compared as keys
        assert a.column("s").indices.equals(b.column("s").indices)
        assert a.column("s").dictionary.equals(b.column("s").dictionary)


# ---- -O max_binary_batch_bytes (utf8 / binary columns over 2 GiB) -----------------


import pyarrow.compute as pc  # noqa: E402


def _batches(sluice_bin: str, path: Path, global_args=(), cat_args=(), timeout=TIMEOUT):
    proc = _run(sluice_bin, [*global_args, "cat", path, "-t", "arrows", *cat_args], timeout)
    err = proc.stderr.decode(errors="replace").strip()
    assert not any(m in err for m in SANITIZER_MARKERS), f"sanitizer report:\n{err}"
    assert proc.returncode == 0, f"sluice cat exited {proc.returncode}: {err[-1500:]}"
    reader = ipc.open_stream(pa.BufferReader(proc.stdout))
    return reader.schema, list(reader)


def binary_cut_table(n: int = 30000, seed: int = 3) -> pa.Table:
    rng = np.random.default_rng(seed)
    lengths = rng.integers(0, 60, n)
    strings = [None if i % 11 == 0 else "é" * int(lengths[i] // 2) + str(i) for i in range(n)]
    return pa.table({
        "i": pa.array(range(n), pa.int64()),
        "s": pa.array(strings, pa.string()),
        "b": pa.array([bytes([i % 251]) * int(lengths[i]) for i in range(n)], pa.binary()),
        "ls": pa.array([f"L{i}" * 3 for i in range(n)], pa.large_string()),
        "nested": pa.array([[f"n{i}"] if i % 5 else None for i in range(n)],
                           pa.list_(pa.string())),
    })


@pytest.mark.parametrize("dictionary", [False, True], ids=["plain", "dict"])
@pytest.mark.parametrize("args", [
    [],
    ["--threads", "2", "--unordered"],
    ["--threads", "2", "--unordered", "-c", "s,i"],
], ids=["all", "threads", "threads-projection"])
def test_max_binary_batch_bytes(sluice_bin, tmp_path, dictionary, args):
    """A row group whose utf8 / binary chunks pass max_binary_batch_bytes
    (the 2 GiB int32-offset limit, made small) comes out in several batches
    of utf8 / binary (as pyarrow, which chunks), none holding more value
    bytes than the limit; all equal pyarrow's reading, also when the row
    group is decoded as column parts on two threads."""
    limit = 150_000
    path = tmp_path / "cut.parquet"
    table = binary_cut_table()
    pq.write_table(table, path, row_group_size=20000, use_dictionary=dictionary)
    global_args = ["-O", f"max_binary_batch_bytes={limit}"]
    cat_args = [a for a in args if a not in ("--threads", "2", "--unordered")]
    global_args += [a for a in args if a not in cat_args]
    schema, batches = _batches(sluice_bin, path, global_args, cat_args)
    md = pq.ParquetFile(path).metadata
    assert len(batches) > 2 * md.num_row_groups, "row groups were not cut"
    for b in batches:
        for name in b.schema.names:
            col = b.column(name)
            if pa.types.is_string(col.type) or pa.types.is_binary(col.type):
                nbytes = pc.sum(pc.binary_length(col)).as_py() or 0
                assert nbytes <= limit, f"batch column {name}: {nbytes} value bytes > {limit}"
    got = pa.Table.from_batches(batches, schema=schema).sort_by("i")
    want = pq.read_table(path, columns=cat_args[1].split(",") if cat_args else None)
    assert_same(got, want.sort_by("i"), f"max_binary_batch_bytes={limit} {args}")


def test_max_binary_batch_bytes_dictionary_expansion(sluice_bin, tmp_path):
    """Dictionary pages can expand past what the chunk sizes say (one long
    value repeated): the batch cut points (fixed from the metadata) cannot
    follow, and sluice says so instead of overflowing."""
    path = tmp_path / "expand.parquet"
    n = 20000
    pq.write_table(pa.table({"i": pa.array(range(n)), "s": pa.array(["z" * 1000] * n)}), path)
    expect_clean_error(sluice_bin, path, ["max_binary_batch_bytes=1000000"],
                       must_say="smaller batch size")
    # With batches that fit (or under the real limit) it reads.
    schema, batches = _batches(sluice_bin, path,
                               _opts(["max_binary_batch_bytes=1000000", "batch_rows=900"]))
    assert len(batches) == 23 and all(b.column("s").type == pa.string() for b in batches)
    assert_same(pa.Table.from_batches(batches, schema=schema), pq.read_table(path),
                "dictionary expansion, batch_rows=900")
    assert_same(sluice_read(sluice_bin, path), pq.read_table(path), "dictionary expansion")


def test_max_binary_batch_bytes_bad_value(sluice_bin, tmp_path):
    path = tmp_path / "t.parquet"
    pq.write_table(pa.table({"s": ["a"]}), path)
    for v in ["0", "-5", "x", "3000000000", ""]:
        expect_clean_error(sluice_bin, path, [f"max_binary_batch_bytes={v}"],
                           must_say="max_binary_batch_bytes")
    for v in ["0", "-1", "1e3", ""]:
        expect_clean_error(sluice_bin, path, [f"batch_rows={v}"], must_say="batch_rows")


def test_size_options_take_suffixes(sluice_bin, tmp_path):
    """slice_bytes and max_binary_batch_bytes are sizes as every other size
    option: 1m cuts a row group as 1048576 does, 100k as 102400; a bad
    value is refused naming the option and what it takes."""
    path = tmp_path / "cut.parquet"
    pq.write_table(binary_cut_table(), path, row_group_size=30000)
    want = pq.read_table(path)
    for key, suffixed, plain in [("slice_bytes", "1m", "1048576"),
                                 ("max_binary_batch_bytes", "100k", "102400")]:
        _, whole = _batches(sluice_bin, path)
        _, a = _batches(sluice_bin, path, ["-O", f"{key}={suffixed}"])
        schema, b = _batches(sluice_bin, path, ["-O", f"{key}={plain}"])
        rows = [x.num_rows for x in a]
        assert len(rows) > len(whole), f"{key}={suffixed} did not cut the row group: {rows}"
        assert rows == [x.num_rows for x in b], f"{key}={suffixed} and ={plain} differ"
        assert_same(pa.Table.from_batches(b, schema=schema), want, f"{key}={plain}")
        for v in ["1q", "1mb", "k", "0k"]:
            err = expect_clean_error(sluice_bin, path, [f"{key}={v}"], must_say=key)
            assert "k, m, g" in err and f"'{v}'" in err, err


@pytest.mark.skipif(not __import__("os").environ.get("SLUICE_SLOW_TESTS"),
                    reason="writes and reads a 2.2 GiB string column (SLUICE_SLOW_TESTS=1)")
def test_string_column_over_2gib(sluice_bin, tmp_path):
    """A real row group with 2.2 GiB of string values in one column chunk
    (PLAIN): sluice cuts it into utf8 batches under 2 GiB each, equal to
    pyarrow's reading."""
    n_chunks, rows, width = 4, 550_000, 1000
    base = np.char.add(np.arange(rows).astype(str), "|")
    chunk = pa.array(np.char.ljust(base, width, "x"), pa.string())
    chunks = [chunk] * n_chunks  # 2.2 GB of values; "i" tells the rows apart
    col = pa.chunked_array(chunks)
    table = pa.table({"i": pa.array(range(n_chunks * rows), pa.int64()), "s": col})
    path = tmp_path / "big_strings.parquet"
    pq.write_table(table, path, row_group_size=n_chunks * rows, use_dictionary=False,
                   compression="snappy")
    del table, chunks, chunk, col
    assert pq.ParquetFile(path).metadata.num_row_groups == 1
    schema, batches = _batches(sluice_bin, path, ["--threads", "2"], [], timeout=300)
    assert len(batches) >= 2
    for b in batches:
        s = b.column("s")
        assert s.type == pa.string()
        assert (pc.sum(pc.binary_length(s)).as_py() or 0) <= 2**31 - 1
    got = pa.Table.from_batches(batches, schema=schema)
    del batches
    assert got.equals(pq.read_table(path))


def test_dictionary_option_cut_row_groups(sluice_bin, tmp_path):
    """-O dictionary=true on row groups cut into several batches: values and
    types equal pyarrow's read_dictionary, and each column chunk's
    dictionary is sent once, not once per batch (the batches share it)."""
    n = 24000
    table = pa.table({
        "i": pa.array(range(n), pa.int64()),
        "d": pa.array([None if i % 10 == 0 else f"value-{i % 97}" for i in range(n)]),
        "p": pa.array([f"plain-{i}-" + "x" * (i % 40) for i in range(n)]),
    })
    path = tmp_path / "dict_cut.parquet"
    pq.write_table(table, path, use_dictionary=["d"], row_group_size=8000)
    opts = ["-O", "dictionary=true", "-O", "max_binary_batch_bytes=60000"]
    proc = _run(sluice_bin, [*opts, "cat", path, "-t", "arrows"])
    assert proc.returncode == 0, proc.stderr.decode(errors="replace")
    reader = ipc.open_stream(pa.BufferReader(proc.stdout))
    batches = list(reader)
    n_rg = pq.ParquetFile(path).metadata.num_row_groups
    assert len(batches) > 2 * n_rg
    assert reader.stats.num_dictionary_batches <= 2 * n_rg  # d and p, once per chunk
    got = pa.Table.from_batches(batches, schema=reader.schema)
    want = pq.read_table(path, read_dictionary=["d", "p"])
    assert got.schema.field("d").type == pa.dictionary(pa.int32(), pa.string())
    assert_same(got, want, "dictionary=true, cut row groups")


# ---- decimal statistics (legacy min/max vs min_value/max_value) ------------------


def _stats_json(sluice_bin: str, path: Path) -> dict:
    import json

    proc = _run(sluice_bin, ["stats", path, "--json"])
    assert proc.returncode == 0, proc.stderr.decode(errors="replace")
    return {s["name"]: s for s in json.loads(proc.stdout)}


def _check_decimal_stats(stats: dict, table: pa.Table, names) -> list:
    problems = []
    for c in names:
        mm = pc.min_max(table.column(c)).as_py()
        s = stats[c]
        for k in ("min", "max"):
            have = s.get(k)
            if mm[k] is None:
                ok = have in (None, "", "null")
            else:
                ok = have is not None and decimal.Decimal(have) == mm[k]
            if not ok:
                problems.append(f"{c}: {k} {have!r} != pyarrow.compute {mm[k]!r} "
                                f"(source {s.get('source')})")
    return problems


def test_decimal_stats_pyarrow_duckdb(sluice_bin, tmp_path):
    """Decimals stored as FIXED_LEN_BYTE_ARRAY by pyarrow and DuckDB (with
    column_orders and min_value / max_value, signed): `sluice stats` takes
    min/max from the footer, equal to pyarrow.compute over the data."""
    import duckdb

    rng = np.random.default_rng(8)
    n = 3000
    unscaled = rng.integers(-10**12, 10**12, n)
    mask = rng.random(n) < 0.1
    d20 = [None if m else decimal.Decimal(int(u)).scaleb(-2) for u, m in zip(unscaled, mask)]
    d40 = [None if m else decimal.Decimal(int(u) * 10**20 + 7).scaleb(-5)
           for u, m in zip(unscaled[::-1], mask)]
    table = pa.table({"d20": pa.array(d20, pa.decimal128(20, 2)),
                      "d40": pa.array(d40, pa.decimal256(40, 5)),
                      "d9": pa.array([decimal.Decimal(int(u) % 10**7 - 5 * 10**6).scaleb(-3)
                                      for u in unscaled], pa.decimal128(9, 3))})
    path = tmp_path / "dec_pa.parquet"
    pq.write_table(table, path, row_group_size=700)
    stats = _stats_json(sluice_bin, path)
    problems = _check_decimal_stats(stats, pq.read_table(path), table.column_names)
    assert not problems, "\n".join(problems)
    assert stats["d20"]["source"] == "metadata" and stats["d40"]["source"] == "metadata"

    duck = tmp_path / "dec_duck.parquet"
    # A connection of its own: the default one may hold another test's
    # unfinished result, which newer DuckDB refuses to run beside.
    duckdb.connect().execute(f"COPY (SELECT (i * 7919 - 400000)::DECIMAL(30, 3) AS d30, "
               f"(i - 500)::DECIMAL(18, 2) AS d18 FROM range(1000) t(i)) "
               f"TO '{duck}' (FORMAT parquet, ROW_GROUP_SIZE 300)")
    stats = _stats_json(sluice_bin, duck)
    problems = _check_decimal_stats(stats, pq.read_table(duck), ["d30", "d18"])
    assert not problems, "\n".join(problems)
    assert stats["d30"]["source"] == "metadata"


@pytest.mark.parametrize("name", ["fixed_length_decimal.parquet",
                                  "fixed_length_decimal_legacy.parquet",
                                  "byte_array_decimal.parquet"])
def test_decimal_stats_legacy_corpus(sluice_bin, name):
    """parquet-mr 1.8 wrote FIXED_LEN_BYTE_ARRAY decimal statistics in the
    legacy min/max fields compared as unsigned bytes (PARQUET-1065): the
    stored min of fixed_length_decimal.parquet is 2.00 over data whose min is
    1.00. sluice does not trust them and computes: equal to pyarrow.compute."""
    path = DATA / name
    if not path.exists():
        pytest.skip(f"{name} not in the corpus")
    table = pq.read_table(path)
    stats = _stats_json(sluice_bin, path)
    problems = _check_decimal_stats(stats, table, table.column_names)
    assert not problems, "\n".join(problems)
    md = pq.ParquetFile(path).metadata
    if md.row_group(0).column(0).physical_type != "BYTE_ARRAY":
        assert all(s["source"] == "computed" for s in stats.values())


def test_decimal_stats_need_column_orders(sluice_bin, tmp_path):
    """min_value / max_value of a FIXED_LEN_BYTE_ARRAY decimal are trusted
    only under a TypeDefinedOrder in column_orders: the same pyarrow file
    with its footer's column_orders cut off has its bounds computed (equal
    values either way)."""
    import struct

    table = pa.table({"d": pa.array([decimal.Decimal("1.5"), decimal.Decimal("-2.25"), None,
                                     decimal.Decimal("-0.01")], pa.decimal128(20, 2))})
    path = tmp_path / "orders.parquet"
    pq.write_table(table, path)
    raw = path.read_bytes()
    n = struct.unpack("<I", raw[-8:-4])[0]
    footer = raw[-8 - n:-8]
    # FileMetaData ends with field 7 column_orders = [ColumnOrder{TYPE_ORDER{}}]
    # (compact protocol: 19 1c 1c 00 00) and the struct's stop byte.
    tail = bytes.fromhex("191c1c000000")
    assert footer.endswith(tail), footer[-12:].hex()
    cut = footer[:-len(tail)] + b"\x00"
    stripped = tmp_path / "no_orders.parquet"
    stripped.write_bytes(raw[:-8 - n] + cut + struct.pack("<I", len(cut)) + b"PAR1")
    assert pq.read_table(stripped).equals(table)
    for p, source in [(path, "metadata"), (stripped, "computed")]:
        stats = _stats_json(sluice_bin, p)
        problems = _check_decimal_stats(stats, table, ["d"])
        assert not problems, f"{p.name}: " + "\n".join(problems)
        assert stats["d"]["source"] == source, f"{p.name}: {stats['d']}"


# ---- objects whose writers chose other types -------------------------------------


def _mixed_writers(directory: Path, polars_first: bool) -> None:
    """Two objects of one table, as pyarrow and polars write it: string /
    large_string, int32 / int64, float32 / float64, binary / large_binary,
    uint16 / int32; the file names put polars' first or second."""
    directory.mkdir()
    a = pa.table({"s": pa.array(["a", None, "bb"]), "i": pa.array([1, -2, None], pa.int32()),
                  "f": pa.array([0.5, None, -1.25], pa.float32()),
                  "b": pa.array([b"\x00x", None, b""]), "u": pa.array([65535, 1, None], pa.uint16())})
    b = pa.table({"s": pa.array(["c", "dd"], pa.large_string()),
                  "i": pa.array([2**40, None], pa.int64()),
                  "f": pa.array([1e300, 0.1], pa.float64()),
                  "b": pa.array([b"y", None], pa.large_binary()),
                  "u": pa.array([-7, None], pa.int32())})
    first, second = ("0", "1") if not polars_first else ("1", "0")
    pq.write_table(a, directory / f"{first}_pyarrow.parquet")
    pq.write_table(b, directory / f"{second}_polars.parquet")


@pytest.mark.parametrize("polars_first", [False, True])
@pytest.mark.parametrize("union_by_name", [False, True])
def test_objects_of_joinable_types_read_as_one_dataset(sluice_bin, tmp_path, polars_first,
                                                       union_by_name):
    """A directory of files one writer wrote with string and int32 and
    another with large_string and int64 (pyarrow's and polars' defaults)
    reads as one table of the joined types, as DuckDB reads it (it was an
    error): the first object's string type, the wider integer, float64,
    int32 for uint16 with int32. The values are DuckDB's, in file order."""
    duckdb = pytest.importorskip("duckdb")
    d = tmp_path / "mixed"
    _mixed_writers(d, polars_first)
    union = ["--union-by-name"] if union_by_name else []
    args = ["cat", d, "-t", "arrows", *union]
    proc = _run(sluice_bin, args)
    assert proc.returncode == 0, proc.stderr.decode()
    got = ipc.open_stream(pa.BufferReader(proc.stdout)).read_all()
    string = pa.large_string() if polars_first else pa.string()
    binary = pa.large_binary() if polars_first else pa.binary()
    assert got.schema.types == [string, pa.int64(), pa.float64(), binary, pa.int32()]
    want = {k: [] for k in "sifbu"}
    for path in sorted(d.iterdir()):
        t = duckdb.sql(f"SELECT s, i, f, b, u FROM '{path}'").fetchall()
        for row in t:
            for k, v in zip("sifbu", row):
                want[k].append(v)
    assert got.to_pydict() == want
    # filters and statistics see the joined types too
    proc = _run(sluice_bin, ["cat", d, "-t", "arrows", *union, "--filter", "i>1"])
    assert proc.returncode == 0, proc.stderr.decode()
    kept = ipc.open_stream(pa.BufferReader(proc.stdout)).read_all()
    assert kept.column("i").to_pylist() == [v for v in want["i"] if v is not None and v > 1]


def test_objects_of_other_types_are_still_an_error(sluice_bin, tmp_path):
    """Types with no lossless join (a string and an int64; int64 and
    float64, where a double would round) stay an error naming both."""
    d = tmp_path / "odd"
    d.mkdir()
    pq.write_table(pa.table({"x": pa.array(["a"])}), d / "0.parquet")
    pq.write_table(pa.table({"x": pa.array([1], pa.int64())}), d / "1.parquet")
    err = expect_clean_error(sluice_bin, d, must_say="its columns differ")
    assert "'x' is of type int64 here, string in the first" in err, err
    pq.write_table(pa.table({"x": pa.array([1.5])}), d / "0.parquet")
    err = expect_clean_error(sluice_bin, d, must_say="its columns differ")
    assert "int64 here, double in the first" in err, err


def test_type_that_does_not_join_names_its_object(sluice_bin, tmp_path):
    """Of three objects whose first two join (int32 and int64), the error
    names the third, whose type joins neither, as DuckDB names the file it
    cannot cast (it named the second, whose int64 joins int32). Where the
    types before it joined to another than the first's (int8 and int16;
    int32 and float64), the message says so."""
    duckdb = pytest.importorskip("duckdb")
    cases = {"string": [pa.array([1], pa.int32()), pa.array([2], pa.int64()), pa.array(["s"])],
             "uint64": [pa.array([1], pa.int8()), pa.array([2], pa.int16()),
                        pa.array([3], pa.uint64())],
             "int64": [pa.array([1], pa.int32()), pa.array([2.5]), pa.array([3], pa.int64())]}
    for name, arrays in cases.items():
        d = tmp_path / name
        d.mkdir()
        for i, a in enumerate(arrays):
            pq.write_table(pa.table({"x": a}), d / f"{i}.parquet")
        # the first two alone read as one table: their types join
        assert _run(sluice_bin, ["cat", d / "[01].parquet", "-t", "arrows"]).returncode == 0
        err = expect_clean_error(sluice_bin, d, must_say="its columns differ")
        assert err.startswith(f"sluice: {d / '2.parquet'}: "), err
        if name == "string":
            with pytest.raises(duckdb.Error) as e:
                duckdb.sql(f"SELECT * FROM read_parquet('{d}/*.parquet')").fetchall()
            assert f'file "{d / "2.parquet"}"' in str(e.value), str(e.value)
            assert "type string here, int64 in the objects before it (int32 in the first)" in err
        else:
            joined = {"uint64": "int16", "int64": "double"}[name]
            assert f"type {name} here, {joined} in the objects before it" in err, err


def test_joined_types_filter_and_stats_as_duckdb(sluice_bin, tmp_path):
    """Filters and `sluice stats` over objects whose types were joined: a
    uint8 object's dictionary asked for 200 in an int16 dataset (it was read
    as the signed entry -56, and the row group skipped), and footer bounds
    cast to the dataset's type (int8's 100 beside int64's -50..7 was lost;
    uint8's 200 read as an int16's bytes) equal DuckDB's answers."""
    duckdb = pytest.importorskip("duckdb")
    cases = {
        "signs": [pa.array([1, 2, -5], pa.int8()), pa.array([200, 3, 200], pa.uint8())],
        "widths": [pa.array([1, 100], pa.int8()), pa.array([-50, 7], pa.int64())],
        "strings": [pa.array(["apple", "zebra"], pa.large_string()),
                    pa.array(["banana", "cherry"], pa.string())],
    }
    for name, arrays in cases.items():
        d = tmp_path / name
        d.mkdir()
        for i, a in enumerate(arrays):
            pq.write_table(pa.table({"x": a}), d / f"{i}.parquet")
        glob = f"read_parquet('{d}/*.parquet', union_by_name=true)"
        lo, hi, n = duckdb.sql(f"SELECT min(x), max(x), count(x) FROM {glob}").fetchall()[0]
        proc = _run(sluice_bin, ["stats", d, "--json"])
        assert proc.returncode == 0, proc.stderr.decode()
        import json
        got = json.loads(proc.stdout)
        got = got[0] if isinstance(got, list) else got["columns"][0]
        assert (got["min"], got["max"], got["count"]) == (str(lo), str(hi), n), (name, got)
        if name == "signs":
            for value in (200, 3, -5):
                proc = _run(sluice_bin, ["cat", d, "-t", "arrows", "--filter", f"x={value}"])
                assert proc.returncode == 0, proc.stderr.decode()
                kept = ipc.open_stream(pa.BufferReader(proc.stdout)).read_all()
                want = duckdb.sql(f"SELECT count(*) FROM {glob} WHERE x = {value}").fetchall()[0][0]
                assert kept.num_rows == want, (value, kept.num_rows, want)


def nested_key_maps(n: int = 600, seed: int = 9) -> pa.Table:
    """Maps whose keys are a struct, a list, and a struct holding a list,
    with null maps, empty maps and null values."""
    rnd = np.random.default_rng(seed)

    def rows(key):
        out = []
        for i in range(n):
            r = rnd.random()
            if r < 0.1:
                out.append(None)
            elif r < 0.2:
                out.append([])
            else:
                out.append([(key(i, j), None if rnd.random() < 0.2 else f"v{i}.{j}")
                            for j in range(int(rnd.integers(1, 4)))])
        return out

    return pa.table({
        "ms": pa.array(rows(lambda i, j: {"k": i * 10 + j}),
                       pa.map_(pa.struct([("k", pa.int32())]), pa.string())),
        "ml": pa.array(rows(lambda i, j: [i, j] if j else []),
                       pa.map_(pa.list_(pa.int32()), pa.string())),
        "msl": pa.array(rows(lambda i, j: {"a": [i] * j, "b": None if j == 2 else str(j)}),
                        pa.map_(pa.struct([("a", pa.list_(pa.int64())), ("b", pa.string())]),
                                pa.string())),
    })


@pytest.mark.parametrize("writer", ["pyarrow", "pyarrow-v2", "sluice", "sluice-v2"])
def test_map_with_nested_keys(sluice_bin, tmp_path, writer):
    """A map keyed by a struct or a list was refused ("a map key must be
    primitive") though sluice writes such maps and pyarrow, DuckDB and polars
    read them. Written in many small pages, read as pyarrow reads it."""
    table = nested_key_maps()
    path = tmp_path / "mk.parquet"
    v2 = writer.endswith("-v2")
    if writer.startswith("pyarrow"):
        pq.write_table(table, path, data_page_size=100, write_batch_size=7, row_group_size=250,
                       data_page_version="2.0" if v2 else "1.0")
    else:
        src = tmp_path / "mk.arrow"
        with ipc.new_file(src, table.schema) as w:
            w.write_table(table)
        proc = _run(sluice_bin, ["convert", src, path, "-W", "page_size=100",
                                 "-W", "row_group_size=250",
                                 "-W", f"data_page_version={2 if v2 else 1}"])
        assert proc.returncode == 0, proc.stderr.decode()
    assert pq.ParquetFile(path).metadata.num_row_groups > 1
    want = pyarrow_read(path)
    assert want.to_pylist() == table.to_pylist()
    got = sluice_read(sluice_bin, path)
    got.validate(full=True)
    assert_same(got, want, writer)
    assert got.to_pylist() == want.to_pylist()
    # a batch boundary inside a row group, and a projection
    got = sluice_read_batches(sluice_bin, path, global_args=["-O", "batch_rows=7"],
                              cat_args=["-c", "msl,ms", "--limit", "400"])
    assert got.to_pylist() == want.select(["msl", "ms"]).slice(0, 400).to_pylist()


@pytest.mark.parametrize("union", [False, True])
def test_list_element_names_do_not_split_a_dataset(sluice_bin, tmp_path, union):
    """`list.element` (pyarrow >= 13) beside `list.item` (older pyarrow,
    use_compliant_nested_type=False) was refused as columns that differ, by
    cat and convert: read as one table, of the first file's type, as
    pyarrow.dataset reads them."""
    import pyarrow.dataset as ds
    li = pa.array([[1, 2], None, [None]], pa.list_(pa.int32()))
    a, b = tmp_path / "a.parquet", tmp_path / "b.parquet"
    pq.write_table(pa.table({"li": li, "x": [1, 2, 3]}), a)
    pq.write_table(pa.table({"li": li.slice(1), "x": [4, 5]}), b, use_compliant_nested_type=False)
    want = ds.dataset([str(a), str(b)]).to_table()
    glob = ["--union-by-name"] if union else []
    got = sluice_read_batches(sluice_bin, a, global_args=glob, cat_args=[b])
    assert got.to_pylist() == want.to_pylist()
    assert got.schema.field("li").type.value_field.name == "element"
    out = tmp_path / "out.parquet"
    proc = _run(sluice_bin, [*glob, "convert", b, a, out])
    assert proc.returncode == 0, proc.stderr.decode()
    assert pq.read_table(out).to_pylist() == ds.dataset([str(b), str(a)]).to_table().to_pylist()


def test_list_view_column_keeps_the_other_columns_stored_types(sluice_bin, tmp_path):
    """A list_view column in the stored Arrow schema (pyarrow writes it as a
    list) made the whole schema unusable: every other column lost its
    restored type (zone, duration, large_string, dictionary). Now only the
    list views come out as lists, and the rest as pyarrow reads them."""
    t = pa.table({"tz": pa.array([1, 2], pa.timestamp("us", "Asia/Tokyo")),
                  "dur": pa.array([1, 2], pa.duration("ms")),
                  "ls": pa.array(["a", "b"], pa.large_string()),
                  "lv": pa.array([[1], []], pa.list_view(pa.int32())),
                  "llv": pa.array([[1], None], pa.large_list_view(pa.int32())),
                  "d": pa.array(["x", "y"]).dictionary_encode()})
    path = tmp_path / "lv.parquet"
    pq.write_table(t, path)
    want = pq.read_table(path)
    got = sluice_read(sluice_bin, path)
    for name in ("tz", "dur", "ls", "d"):
        assert got.schema.field(name).type == want.schema.field(name).type, name
    assert got.schema.field("lv").type == pa.list_(pa.field("element", pa.int32()))
    assert got.schema.field("llv").type == pa.large_list(pa.field("element", pa.int32()))
    assert got.to_pylist() == want.to_pylist()


# ---- INT96 timestamps outside timestamp[ns] (-O int96_timestamp_unit) ----------

# Old Spark / Impala / Hive files hold dates int64 nanoseconds cannot
# (0001-01-01 sentinels): they wrapped silently into other dates, as
# pyarrow's default still does.
INT96_WIDE = [dt.datetime(1000, 1, 1), dt.datetime(3000, 1, 1, 1, 2, 3, 456789), None,
              dt.datetime(2020, 1, 1), dt.datetime(1, 1, 1), dt.datetime(9999, 12, 31, 23, 59, 59, 999999),
              dt.datetime(1677, 9, 21, 0, 12, 43, 145225), dt.datetime(1969, 12, 31, 23, 59, 59, 999999)]


def int96_file(path: Path, values, n_copies=1, **kw) -> Path:
    t = pa.table({"i": pa.array(range(len(values) * n_copies), pa.int64()),
                  "t": pa.array(values * n_copies, pa.timestamp("us")),
                  "lt": pa.array([[v, None] for v in values] * n_copies,
                                 pa.list_(pa.timestamp("us")))})
    pq.write_table(t, path, use_deprecated_int96_timestamps=True, **kw)
    return path


@pytest.mark.parametrize("kw", [dict(), dict(use_dictionary=False), dict(data_page_version="2.0"),
                                dict(store_schema=False, row_group_size=3, data_page_size=16)],
                         ids=["dict", "plain", "v2", "small-pages"])
@pytest.mark.parametrize("unit", ["s", "ms", "us"])
def test_int96_timestamp_unit(sluice_bin, tmp_path, kw, unit):
    """-O int96_timestamp_unit=s|ms|us reads INT96 timestamps as that unit,
    as pyarrow's coerce_int96_timestamp_unit does: every date of years 1 to
    9999 right (DuckDB gives the same for us)."""
    path = int96_file(tmp_path / "wide.parquet", INT96_WIDE, **kw)
    want = pq.read_table(path, coerce_int96_timestamp_unit=unit)
    got = sluice_read(sluice_bin, path, options=[f"int96_timestamp_unit={unit}"])
    assert got.schema.field("t").type == pa.timestamp(unit)
    assert_same(got, want, f"int96_timestamp_unit={unit} {kw}")
    if unit == "us":
        import duckdb
        rows = duckdb.sql(f"select t from '{path}' order by i").fetchall()
        assert got.column("t").to_pylist() == [r[0] for r in rows]


def test_int96_in_range_default_ns(sluice_bin, tmp_path):
    """Dates that int64 nanoseconds hold read as timestamp[ns] by default, as
    pyarrow reads them, the edges of the range included."""
    vals = [dt.datetime(1677, 9, 21, 0, 12, 43, 145225), dt.datetime(2262, 4, 11, 23, 47, 16, 854775),
            dt.datetime(1969, 12, 31, 23, 59, 59, 999999), None, dt.datetime(2020, 6, 1, 12)]
    for kw in (dict(), dict(use_dictionary=False)):
        path = int96_file(tmp_path / "ns.parquet", vals, **kw)
        got = sluice_read(sluice_bin, path)
        assert got.schema.field("t").type == pa.timestamp("ns")
        assert_same(got, pq.read_table(path), f"default unit {kw}")
        assert_same(sluice_read(sluice_bin, path, options=["int96_timestamp_unit=ns"]),
                    pq.read_table(path, coerce_int96_timestamp_unit="ns"), "ns")
    # a microsecond past either end: int64 nanoseconds end at
    # 1677-09-21 00:12:43.145224192 and 2262-04-11 23:47:16.854775807
    for past in (dt.datetime(1677, 9, 21, 0, 12, 43, 145224), dt.datetime(2262, 4, 11, 23, 47, 16, 854776)):
        path = int96_file(tmp_path / "past.parquet", [past])
        expect_clean_error(sluice_bin, path, must_say="row 0: the INT96 timestamp " + str(past)[:19])


@pytest.mark.parametrize("kw", [dict(), dict(use_dictionary=False)], ids=["dict", "plain"])
@pytest.mark.parametrize("args", [[], ["slice_bytes=20000"]], ids=["whole", "sliced"])
def test_int96_out_of_ns_range_is_an_error(sluice_bin, tmp_path, kw, args):
    """A date int64 nanoseconds cannot hold is an error naming the file,
    row group, column and row (counted in the row group, nulls included)
    and the option that reads it, not a silently wrapped date (pyarrow's
    default gives 2169-02-08 for 1000-01-01)."""
    n = 3000
    vals = [dt.datetime(2000, 1, 1) + dt.timedelta(days=i) if i % 7 else None for i in range(n)]
    vals[2345] = dt.datetime(1000, 1, 1)
    path = tmp_path / "bad.parquet"
    pq.write_table(pa.table({"x": pa.array(range(n)), "t": pa.array(vals, pa.timestamp("us"))}),
                   path, use_deprecated_int96_timestamps=True, row_group_size=2000,
                   data_page_size=1000, **kw)
    assert pq.ParquetFile(path).metadata.row_group(1).column(1).physical_type == "INT96"
    err = expect_clean_error(sluice_bin, path, args, must_say="int96_timestamp_unit=us")
    assert f"{path.name}: row group 1, column t: row 345:" in err, err
    assert "1000-01-01" in err and "timestamp[ns]" in err, err
    # pyarrow's default wraps it into another date; DuckDB and the option agree
    assert pq.read_table(path).column("t")[2345].as_py().year == 2169
    got = sluice_read(sluice_bin, path, options=["int96_timestamp_unit=us", *args])
    assert_same(got, pq.read_table(path, coerce_int96_timestamp_unit="us"), "us")
    assert got.column("t")[2345].as_py() == dt.datetime(1000, 1, 1)
    # the other column reads without it
    assert sluice_read(sluice_bin, path, columns=["x"]).column("x").to_pylist() == list(range(n))


def test_int96_out_of_ns_range_in_a_list(sluice_bin, tmp_path):
    """Under a list the error names the level entry of the chunk."""
    path = int96_file(tmp_path / "list.parquet", [dt.datetime(2000, 1, 1), dt.datetime(1, 1, 1)])
    got = sluice_read(sluice_bin, path, columns=["lt"], options=["int96_timestamp_unit=ms"])
    assert_same(got, pq.read_table(path, columns=["lt"], coerce_int96_timestamp_unit="ms"), "ms")
    proc = _run(sluice_bin, ["cat", path, "-c", "lt", "-t", "arrows"])
    assert proc.returncode > 0
    # entries: [2000-01-01, null], [0001-01-01, null]
    assert "column lt.element: level entry 2: the INT96 timestamp 0001-01-01" \
        in proc.stderr.decode(), proc.stderr.decode()


def test_int96_timestamp_unit_bad_value(sluice_bin, tmp_path):
    path = int96_file(tmp_path / "t.parquet", [dt.datetime(2000, 1, 1)])
    for v in ("", "ns2", "h", "US", "micros"):
        expect_clean_error(sluice_bin, path, [f"int96_timestamp_unit={v}"],
                           must_say="int96_timestamp_unit wants s, ms, us or ns")


def test_int96_stats_and_filters(sluice_bin, tmp_path):
    """`sluice stats` (INT96 has no usable footer statistics: the values are
    decoded) and row filters on an INT96 column go through the same
    conversion: the right bounds and rows with the option, an error without."""
    import json

    import pyarrow.compute as pc
    path = int96_file(tmp_path / "wide.parquet", INT96_WIDE, n_copies=50, row_group_size=100)
    want = pq.read_table(path, coerce_int96_timestamp_unit="us")
    proc = _run(sluice_bin, ["-O", "int96_timestamp_unit=us", "stats", path, "--json", "-c", "t"])
    assert proc.returncode == 0, proc.stderr.decode()
    s = json.loads(proc.stdout)[0]
    mm = pc.min_max(want.column("t")).as_py()
    text = [f"{d.year:04d}{d.strftime('-%m-%d %H:%M:%S.%f')}" for d in (mm["min"], mm["max"])]
    assert [s["min"], s["max"]] == text
    assert s["nulls"] == want.column("t").null_count
    proc = _run(sluice_bin, ["stats", path, "-c", "t"])
    assert proc.returncode > 0 and b"int96_timestamp_unit" in proc.stderr
    for text, (op, value) in [("t<1500-01-01", ("<", dt.datetime(1500, 1, 1))),
                              ("t>=2500-01-01", (">=", dt.datetime(2500, 1, 1))),
                              ("t=1000-01-01", ("=", dt.datetime(1000, 1, 1)))]:
        got = sluice_read_batches(sluice_bin, path, global_args=["-O", "int96_timestamp_unit=us"],
                                  cat_args=["--filter", text])
        exp = pq.read_table(path, coerce_int96_timestamp_unit="us", filters=[("t", op, value)])
        assert got.sort_by("i").column("t").to_pylist() == exp.sort_by("i").column("t").to_pylist(), text
        assert got.num_rows > 0, text


def test_json_by_converted_type_alone_as_pyarrow(sluice_bin, tmp_path):
    """A BYTE_ARRAY column marked JSON only by its converted_type (no
    logicalType, as parquet-mr and Spark wrote it) is arrow.json, as pyarrow
    reads it and as a column with the logical type reads; it was plain utf8."""
    import struct
    path = tmp_path / "json_converted.parquet"
    pq.write_table(pa.table({"jsoncol": ['{"a": 1}', None, "[2]"]}), path, store_schema=False)
    d = bytearray(path.read_bytes())
    flen = struct.unpack("<i", d[-8:-4])[0]
    k = d.find(b"jsoncol", len(d) - 8 - flen) + len("jsoncol")
    # converted_type UTF8 (0), logicalType {STRING: {}} -> converted_type
    # JSON (19, zigzag 38) and no logicalType; the footer holds no offsets
    # into itself, so only its length changes.
    assert d[k:k + 6] == bytes([0x25, 0x00, 0x4c, 0x1c, 0x00, 0x00]), "pyarrow's footer layout changed"
    d[k + 1] = 38
    del d[k + 2:k + 6]
    d[-8:-4] = struct.pack("<i", flen - 4)
    path.write_bytes(bytes(d))
    col = pq.ParquetFile(path).schema.column(0)
    assert col.converted_type == "JSON"  # (pyarrow derives a logical type from it)
    want = pq.read_table(path)
    assert str(want.schema.field("jsoncol").type) == "extension<arrow.json>"
    got = sluice_read(sluice_bin, path)
    assert str(got.schema.field("jsoncol").type) == "extension<arrow.json>"
    assert got.column("jsoncol").to_pylist() == want.column("jsoncol").to_pylist()


def test_enum_reads_as_binary_as_pyarrow(sluice_bin, tmp_path):
    """A BYTE_ARRAY column annotated ENUM (logical and converted type) reads
    as binary, as pyarrow reads it (polars and DuckDB give strings); the
    README listed ENUM with the utf8 types."""
    import struct
    path = tmp_path / "enum.parquet"
    pq.write_table(pa.table({"enumcol": ["x", "y", None]}), path, store_schema=False)
    d = bytearray(path.read_bytes())
    flen = struct.unpack("<i", d[-8:-4])[0]
    k = d.find(b"enumcol", len(d) - 8 - flen) + len("enumcol")
    # converted_type UTF8 (0), logicalType {STRING: field 1} ->
    # converted_type ENUM (4, zigzag 8), logicalType {ENUM: field 4}
    assert d[k:k + 4] == bytes([0x25, 0x00, 0x4c, 0x1c]), "pyarrow's footer layout changed"
    d[k + 1] = 8
    d[k + 3] = 0x4c
    path.write_bytes(bytes(d))
    col = pq.ParquetFile(path).schema.column(0)
    assert (str(col.logical_type), col.converted_type) == ("Enum", "ENUM")
    want = pq.read_table(path)
    assert want.schema.field("enumcol").type == pa.binary()
    got = sluice_read(sluice_bin, path)
    assert_same(got, want, "ENUM column")


def _cat_table(sluice_bin, path, *args) -> pa.Table:
    proc = _run(sluice_bin, ["cat", path, "-t", "arrows", *args])
    assert proc.returncode == 0, proc.stderr.decode()
    return ipc.open_stream(pa.BufferReader(proc.stdout)).read_all()


def test_nested_types_join_like_top_level_columns(sluice_bin, tmp_path):
    """Objects whose lists, structs and maps differ only in types that join
    (polars writes large_list and large_string everywhere, pyarrow list and
    string) read as one dataset, as pyarrow.dataset, DuckDB and polars read
    them, by the top-level rule applied inside: a list's kind and a
    string's as the first object's (as pq.read_table), integers as the
    wider (int32 beside int64 is int64, as top-level columns and
    pa.unify_schemas(promote_options="permissive"); pq.read_table gives the
    first's int32, and fails on 2**40). Values equal pq.read_table's (the
    written ones where it fails), also with union_by_name."""
    big = pa.large_list(pa.int64())
    cases = {
        "list_large": ([[1], None, [2, 3]], pa.list_(pa.int64()), [[4, None]], big,
                       pa.list_(pa.int64())),
        "large_list": ([[1]], big, [[2], []], pa.list_(pa.int64()), big),
        "items": ([[1]], pa.list_(pa.int32()), [[2**40]], pa.list_(pa.int64()),
                  pa.list_(pa.int64())),
        "struct": ([{"a": "x", "b": 1}], pa.struct([("a", pa.string()), ("b", pa.int32())]),
                   [{"a": "yy", "b": None}, None],
                   pa.struct([("a", pa.large_string()), ("b", pa.int32())]),
                   pa.struct([("a", pa.string()), ("b", pa.int32())])),
        "map": ([[("k", 1)]], pa.map_(pa.string(), pa.int32()), [[("kk", 2), ("l", None)]],
                pa.map_(pa.large_string(), pa.int64()), pa.map_(pa.string(), pa.int64())),
        "deep": ([{"l": ["a"]}], pa.struct([("l", pa.list_(pa.string()))]), [{"l": ["b", None]}],
                 pa.struct([("l", pa.large_list(pa.large_string()))]),
                 pa.struct([("l", pa.list_(pa.string()))])),
        "fixed": ([[1, 2]], pa.list_(pa.int16(), 2), [[3, 4]], pa.list_(pa.int32(), 2),
                  pa.list_(pa.int32(), 2)),
        "fixed_strings": ([["a", None], None], pa.list_(pa.string(), 2), [["b", "cc"]],
                          pa.list_(pa.large_string(), 2), pa.list_(pa.string(), 2)),
        "fixed_large_first": ([[b"a", b"b"]], pa.list_(pa.large_binary(), 2), [[b"c", None]],
                              pa.list_(pa.binary(), 2), pa.list_(pa.large_binary(), 2)),
    }
    for name, (v1, t1, v2, t2, want_type) in cases.items():
        d = tmp_path / name
        d.mkdir()
        pq.write_table(pa.table({"c": pa.array(v1, t1), "n": [1] * len(v1)}), d / "0.parquet")
        pq.write_table(pa.table({"c": pa.array(v2, t2), "n": [2] * len(v2)}), d / "1.parquet")
        want = [{"c": v, "n": 1} for v in v1] + [{"c": v, "n": 2} for v in v2]
        if name != "items":
            assert pq.read_table(d).to_pylist() == want
        for args in ([], ["--union-by-name"]):
            got = _cat_table(sluice_bin, d, *args)
            assert got.schema.field("c").type.equals(want_type), (name, args, got.schema)
            assert got.to_pylist() == want, (name, args)
    # The polars-written file of the finding, beside pyarrow's.
    pl = pytest.importorskip("polars")
    d = tmp_path / "polars"
    d.mkdir()
    t = pa.table({"l": pa.array([[1]], pa.list_(pa.int64())),
                  "st": pa.array([{"a": "x"}], pa.struct([("a", pa.string())]))})
    pq.write_table(t, d / "p1.parquet")
    pl.from_arrow(t).write_parquet(d / "p2.parquet")
    assert _cat_table(sluice_bin, d).to_pylist() == pq.read_table(d).to_pylist()


def test_nested_null_type_joins_like_a_null_column(sluice_bin, tmp_path):
    """A field of type null inside a struct, list or map (pyarrow writes
    struct<a: null> for a field None in every row, list<null> for a column
    of empty lists) takes the other objects' type, as a top-level column of
    type null does; pyarrow.dataset and DuckDB read them so when the typed
    object is first (they fail the other way round: sluice gives the typed
    one's type in both orders, as pa.unify_schemas(permissive) does), also
    with union_by_name. The rows of type null read as nulls of that type."""
    import pyarrow.dataset as pads
    st = pa.struct([("x", pa.int64())])
    cases = {  # typed values and type, the null-typed ones and type
        "struct": ([{"a": "x"}, None], pa.struct([("a", pa.string())]),
                   [{"a": None}, None, {"a": None}], pa.struct([("a", pa.null())])),
        "list": ([["t"], None, ["u", None]], pa.list_(pa.string()),
                 [[], None, [None, None]], pa.list_(pa.null())),
        "map": ([[("k", "v")]], pa.map_(pa.string(), pa.string()),
                [[("k", None), ("l", None)], None], pa.map_(pa.string(), pa.null())),
        "deep": ([{"a": {"x": 1}}], pa.struct([("a", st)]),
                 [{"a": None}, {"a": None}], pa.struct([("a", pa.null())])),
        "list_of_structs": ([[{"x": 1}, None]], pa.list_(st), [[None], []], pa.list_(pa.null())),
    }
    for name, (v1, t1, v2, t2) in cases.items():
        for null_first in (False, True):
            d = tmp_path / f"{name}-{int(null_first)}"
            d.mkdir()
            typed = pa.table({"c": pa.array(v1, t1), "n": [1] * len(v1)})
            nulls = pa.table({"c": pa.array(v2, t2), "n": [2] * len(v2)})
            first, second = (nulls, typed) if null_first else (typed, nulls)
            pq.write_table(first, d / "0.parquet")
            pq.write_table(second, d / "1.parquet")
            schema_of = {k: pq.read_schema(d / f"{int(k != null_first)}.parquet")
                         for k in (False, True)}  # (by: is it the null-typed one)
            assert schema_of[True].field("c").type.equals(t2)
            want_type = schema_of[False].field("c").type
            want = first.to_pylist() + second.to_pylist()
            if not null_first:  # (pyarrow.dataset cannot cast the other way)
                assert pads.dataset(d).to_table().to_pylist() == want
            for args in ([], ["--union-by-name"]):
                got = _cat_table(sluice_bin, d, *args)
                assert got.schema.field("c").type.equals(want_type), (name, null_first, args,
                                                                        got.schema)
                assert got.to_pylist() == want, (name, null_first, args)


def test_nested_types_that_do_not_join_stay_an_error(sluice_bin, tmp_path):
    """A struct whose fields differ, or a list of strings beside one of
    integers, is still an error naming the field; the hint proposes
    union_by_name only where the columns' names differ."""
    cases = {"fields": (pa.struct([("a", pa.int32())]), [{"a": 1}],
                        pa.struct([("b", pa.int32())]), [{"b": 1}], "'c.b' here, 'c.a'"),
             "items": (pa.list_(pa.string()), [["s"]], pa.list_(pa.int64()), [[1]],
                       "'c.element' is of type int64 here, string in the first")}
    for name, (t1, v1, t2, v2, says) in cases.items():
        d = tmp_path / name
        d.mkdir()
        pq.write_table(pa.table({"c": pa.array(v1, t1)}), d / "0.parquet")
        pq.write_table(pa.table({"c": pa.array(v2, t2)}), d / "1.parquet")
        err = expect_clean_error(sluice_bin, d, must_say="its columns differ")
        assert says in err, err
        assert "union_by_name" not in err, err
        proc = _run(sluice_bin, ["cat", d, "-t", "arrows", "--union-by-name"])
        assert proc.returncode == 1 and says in proc.stderr.decode(), proc.stderr.decode()
    d = tmp_path / "names"
    d.mkdir()
    pq.write_table(pa.table({"a": [1]}), d / "0.parquet")
    pq.write_table(pa.table({"b": [1]}), d / "1.parquet")
    assert "union_by_name" in expect_clean_error(sluice_bin, d, must_say="its columns differ")
    # int32, then uint32 (joined: int64), then uint64: the type the third
    # meets is the objects' before it, not the first's (it said "int64 in
    # the first", whose items are int32)
    d = tmp_path / "widened"
    d.mkdir()
    for i, t in enumerate((pa.int32(), pa.uint32(), pa.uint64())):
        pq.write_table(pa.table({"x": pa.array([[1]], pa.list_(t))}), d / f"{i}.parquet")
    says = "'x.element' is of type uint64 here, int64 in the objects before it"
    err = expect_clean_error(sluice_bin, d, must_say="its columns differ")
    assert says in err, err
    proc = _run(sluice_bin, ["cat", d, "-t", "arrows", "--union-by-name"])
    assert proc.returncode == 1 and says in proc.stderr.decode(), proc.stderr.decode()


def test_sorted_map_keys_flag_as_pyarrow(sluice_bin, tmp_path):
    """pyarrow keeps map<..., keys_sorted=True> in ARROW:schema and restores
    the flag on read; so does sluice."""
    t = pa.table({"m": pa.array([[("a", 1), ("b", 2)]],
                                pa.map_(pa.string(), pa.int32(), keys_sorted=True)),
                  "u": pa.array([[("b", 1)]], pa.map_(pa.string(), pa.int32()))})
    pq.write_table(t, tmp_path / "m.parquet")
    want = pq.read_table(tmp_path / "m.parquet").schema
    assert want.field("m").type.keys_sorted and not want.field("u").type.keys_sorted
    got = _cat_table(sluice_bin, tmp_path / "m.parquet")
    assert got.schema.field("m").type.keys_sorted
    assert not got.schema.field("u").type.keys_sorted
    assert got.to_pylist() == t.to_pylist()
