"""CSV reader options against peers, and Parquet -> CSV -> Parquet round trips.

- comment=#: generated files with comment lines (before the header, between
  rows, holding quotes and delimiters) and quoted fields holding '#' at line
  starts, read by sluice with small splits on several threads and by DuckDB's
  read_csv(comment='#'): the same rows.
- null_values=A|B|: generated files read by sluice and by pyarrow.csv with
  ConvertOptions(null_values=[...], strings_can_be_null=True): the same
  values and types.
- `sluice convert x.parquet y.csv` and back gives what pyarrow reads from
  x.parquet.
- .csv.bz2 and .csv.xz from Python's bz2 and lzma (one stream or several)
  read as pyarrow reads them, bad ones a clear error; sluice's own read
  back by pandas, pyarrow and Python's bz2 and lzma.
- lines ending in a bare CR (classic Mac OS): generated files read as
  pyarrow.csv reads them, in small splits, gzip-compressed, from a pipe and
  through the Python package.
"""

from __future__ import annotations

import datetime
import decimal
import json
import math
import random
import shutil
import struct
import subprocess
from pathlib import Path

import pytest
from conftest import MEASURES_RSS, arrow_to_csv, check_clean_failure, peak_rss_kib

pa = pytest.importorskip("pyarrow")
pcsv = pytest.importorskip("pyarrow.csv")
ipc = pytest.importorskip("pyarrow.ipc")
pq = pytest.importorskip("pyarrow.parquet")


def sluice_read(sluice, path: Path, *options: str, threads: int | None = None,
                schema: str | None = None) -> pa.Table:
    out = path.with_suffix(".out.arrow")
    args = ["convert", path, out, "-q"]
    for o in options:
        args += ["-O", o]
    if threads is not None:
        args += ["--threads", str(threads)]
    if schema is not None:
        args += ["--schema", schema]
    sluice.run(*args)
    with ipc.open_file(out) as f:
        return f.read_all()


# ---- comment lines ---------------------------------------------------------------

def _quoted(rng: random.Random) -> str:
    # '#' right after a line feed inside quotes is data, not a comment
    parts = ["a", "#x", "\n#y", ",", '""', "\n", " # ", "b"]
    return '"' + "".join(rng.choice(parts) for _ in range(rng.randint(0, 6))) + '"'


def _comment(rng: random.Random) -> str:
    parts = ["note", '"', ",", "'", "#", "x y", '""']
    return "#" + "".join(rng.choice(parts) for _ in range(rng.randint(0, 5)))


def comment_file(rng: random.Random, rows: int, crlf: bool) -> str:
    eol = "\r\n" if crlf else "\n"
    lines = [_comment(rng) for _ in range(rng.randint(0, 2))]
    lines.append("id,s,v")
    for i in range(rows):
        while rng.random() < 0.3:
            lines.append(_comment(rng))
        s = _quoted(rng) if rng.random() < 0.6 else rng.choice(["plain", "x y", "z"])
        lines.append(f"{i},{s},{rng.randint(-1000, 1000)}")
    if rng.random() < 0.5:
        lines.append(_comment(rng))
    return eol.join(lines) + (eol if rng.random() < 0.7 else "")


def duckdb_comment_read(path: Path) -> list[dict]:
    duckdb = pytest.importorskip("duckdb")
    # (DuckDB's sniffer, which fails when columns= is given with comments)
    rel = duckdb.sql(f"SELECT * FROM read_csv('{path}', comment='#', header=true, "
                     "allow_quoted_nulls=false)")
    return rel.to_arrow_table().to_pylist()


@pytest.mark.parametrize("seed", range(6))
def test_comments_match_duckdb(sluice, tmp_path, seed):
    rng = random.Random(seed)
    path = tmp_path / f"c{seed}.csv"
    path.write_bytes(comment_file(rng, rows=200, crlf=seed % 3 == 2).encode())
    want = duckdb_comment_read(path)
    assert len(want) == 200
    # splits small enough to start on, inside and next to comment lines
    for opts in ([], ["split_size=17"], ["split_size=64"], ["split_size=1k"]):
        got = sluice_read(sluice, path, "comment=#", "schema=s:string", *opts, threads=4)
        assert got.schema.field("id").type == pa.int64()
        assert got.schema.field("v").type == pa.int64()
        assert got.to_pylist() == want, opts


def test_comment_with_fused_numeric_path(sluice, tmp_path):
    # all-numeric rows take the fused path; comment lines must still be skipped
    rng = random.Random(9)
    lines = ["a,b"]
    for i in range(5000):
        if rng.random() < 0.1:
            lines.append("# 1,2 \"")
        lines.append(f"{i},{rng.uniform(-1, 1)!r}")
    path = tmp_path / "n.csv"
    path.write_text("\n".join(lines) + "\n")
    want = duckdb_comment_read(path)
    for opts in ([], ["split_size=4k"], ["fastpath=false", "split_size=333"]):
        got = sluice_read(sluice, path, "comment=#", *opts, threads=3)
        assert got.to_pylist() == want, opts


def test_hash_is_data_without_the_option(sluice, tmp_path):
    path = tmp_path / "h.csv"
    path.write_text("a,b\n#x,1\ny,2\n")
    got = sluice_read(sluice, path)
    want = pcsv.read_csv(path).to_pylist()
    assert got.to_pylist() == want


@pytest.mark.parametrize("seed", range(4))
def test_comment_lines_are_sniffed(sluice, tmp_path, seed):
    """Without comment=, lines starting with '#' that break the first rows'
    field count are comments when the rows are even without them, as
    DuckDB's sniffer reads them (pyarrow and polars fail on the field count):
    from a file in small splits and from a pipe, the rows DuckDB reads with
    comment='#'. comment=none turns the sniff off (the field-count error)."""
    rng = random.Random(100 + seed)
    eol = "\r\n" if seed == 3 else "\n"
    text = "# generated by a tool, for tests" + eol + comment_file(rng, 3000, crlf=seed == 3)
    path = tmp_path / "c.csv"
    path.write_bytes(text.encode())
    want = duckdb_comment_read(path)
    assert len(want) == 3000
    for opts in ([], ["split_size=1k"]):
        got = sluice_read(sluice, path, "schema=s:string", *opts, threads=3)
        assert got.to_pylist() == want, opts
    out = tmp_path / "pipe.arrow"
    proc = subprocess.run([sluice.binary, "convert", "-", str(out), "-f", "csv", "-q",
                           "-O", "schema=s:string"], input=path.read_bytes(),
                          capture_output=True, timeout=120)
    assert proc.returncode == 0, proc.stderr.decode(errors="replace")
    with ipc.open_file(out) as f:
        assert f.read_all().to_pylist() == want
    proc = sluice.run_raw("cat", path, "-t", "csv", "-O", "comment=none")
    # (a field count or a comment's stray quote)
    assert proc.returncode != 0 and b"c.csv: line " in proc.stderr, proc.stderr


@pytest.mark.parametrize("text", [
    "#ff0000,red\n#00ff00,green\n#0000ff,blue\n",  # every row starts with '#': data
    "a,b\n#x,1\n# y\n1,2,3\n",  # ragged with or without '#' lines: the error
])
def test_hash_lines_that_are_not_sniffed_as_comments(sluice, tmp_path, text):
    path = tmp_path / "h.csv"
    path.write_text(text)
    proc = sluice.run_raw("cat", path, "-t", "jsonl")
    try:
        want = pcsv.read_csv(path).to_pylist()
    except pa.ArrowInvalid:
        assert proc.returncode != 0 and b"expected 2 fields" in proc.stderr, proc.stderr
        return
    assert proc.returncode == 0, proc.stderr
    assert [json.loads(line) for line in proc.stdout.decode().splitlines()] == want


@pytest.mark.parametrize("text,options,want", [
    # bad_rows=skip: '#' rows are rows, the wide one skipped (DuckDB's
    # ignore_errors reads these three; the sniff took '#' for a comment)
    ("tag,count\n#ai,5\n#ml,3,x\n#db,7\nplain,1\n", ["bad_rows=skip"],
     [{"tag": "#ai", "count": 5}, {"tag": "#db", "count": 7}, {"tag": "plain", "count": 1}]),
    ("c,n,note\n#ff0000,red\n#00ff00,green,ok\n", ["missing_fields=null"],
     [{"c": "#ff0000", "n": "red", "note": None}, {"c": "#00ff00", "n": "green", "note": "ok"}]),
    # a header ending in a delimiter over rows without one: even, no comment
    ("colour,name,\n#ff0000,red\n#00ff00,green\n", [],
     [{"colour": "#ff0000", "name": "red"}, {"colour": "#00ff00", "name": "green"}]),
    # one row left without the '#' lines is no evidence: the field-count error
    ("#1,a\n#2,b,c\n3,d\n", [], "expected 2 fields, found 3"),
])
def test_hash_rows_the_options_take_are_not_comments(sluice, tmp_path, text, options, want):
    """The comment sniff leaves '#' rows that bad_rows=skip, missing_fields=
    null or a header's trailing delimiter make rows: they were dropped
    silently as comments."""
    path = tmp_path / "h.csv"
    path.write_text(text)
    args = [a for o in options for a in ("-O", o)]
    proc = sluice.run_raw("cat", path, "-t", "jsonl", *args)
    if isinstance(want, str):
        assert proc.returncode != 0 and want.encode() in proc.stderr, proc.stderr
        return
    assert proc.returncode == 0, proc.stderr
    assert [json.loads(line) for line in proc.stdout.decode().splitlines()] == want


# ---- null spellings -----------------------------------------------------------------

NULL_SETS = [
    ["missing", "-999"],
    [""],
    ["NA"],
    ["", "NA", "N/A", "nan"],
]


def null_file(rng: random.Random, spellings: list[str], rows: int) -> str:
    lines = ["i,f,s"]
    pool = spellings + ["NA", "NULL", ""]
    for _ in range(rows):
        i = rng.choice(pool) if rng.random() < 0.2 else str(rng.randint(-50, 50))
        f = rng.choice(pool) if rng.random() < 0.2 else repr(rng.uniform(-10, 10))
        s = rng.choice(pool) if rng.random() < 0.3 else rng.choice(["x", "y z", "none"])
        lines.append(f"{i},{f},{s}")
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("k", range(len(NULL_SETS)))
def test_null_values_match_pyarrow(sluice, tmp_path, k):
    spellings = NULL_SETS[k]
    rng = random.Random(100 + k)
    path = tmp_path / f"n{k}.csv"
    path.write_text(null_file(rng, spellings, 300))
    want = pcsv.read_csv(path, convert_options=pcsv.ConvertOptions(
        null_values=spellings, strings_can_be_null=True))
    option = "null_values=" + "|".join(spellings)
    for extra in ([], ["split_size=100"], ["fastpath=false"]):
        got = sluice_read(sluice, path, option, *extra, threads=2)
        assert got.schema.names == want.schema.names
        for name in want.schema.names:
            g, w = got.column(name), want.column(name)
            if pa.types.is_large_string(w.type) or pa.types.is_string(w.type):
                assert pa.types.is_string(g.type), name
                g = g.cast(w.type)
            else:
                assert g.type == w.type, (name, g.type, w.type)
            assert g.to_pylist() == w.to_pylist(), (k, name, extra)


def test_default_nulls(sluice, tmp_path):
    # no option: "", NA, NULL, null are null; "NaN" too in float columns only
    # (as pandas and pyarrow read it), while "nan", which sluice writes for a
    # NaN, stays a NaN
    path = tmp_path / "d.csv"
    path.write_text("i,f,s,g\n1,NaN,NA,1\nNULL,2.5,null,NaN\n,,x,nan\n3,nan,NaN,4\n")
    got = sluice_read(sluice, path)
    assert got.column("i").to_pylist() == [1, None, None, 3]
    f = got.column("f").to_pylist()
    assert f[:3] == [None, 2.5, None] and math.isnan(f[3])
    assert got.column("s").to_pylist() == [None, None, "x", "NaN"]
    g = got.column("g").to_pylist()
    assert got.column("g").type == pa.float64() and g[:2] == [1.0, None] and math.isnan(g[2])
    # a custom set replaces the defaults, "NaN" included
    got = sluice_read(sluice, path, "null_values=NA|NULL|null|")
    assert math.isnan(got.column("f").to_pylist()[0])


def test_nan_null_in_long_numeric_file_matches_pyarrow(sluice, tmp_path):
    """Numeric rows take a fused fast path; rows holding "NaN" leave it for
    the general one: nulls land on the right rows, as pyarrow reads them."""
    path = tmp_path / "n.csv"
    rows = ["a,x,y"] + [f"{i},{'NaN' if i % 97 == 5 else i / 8},{i * 0.25}"
                        for i in range(50_000)]
    path.write_text("\n".join(rows) + "\n")
    got = sluice_read(sluice, path, threads=2)
    want = pcsv.read_csv(path)
    for name in ("a", "x", "y"):
        assert got.column(name).to_pylist() == want.column(name).to_pylist(), name


def test_int32_columns_on_the_fused_path_match_pyarrow(sluice, tmp_path):
    """int32 columns given by a schema take the fused numeric path too (W4's
    val columns), which crosses the quoted fields of columns it does not read
    (delimiters, line feeds and "" inside); extremes, nulls (which leave the
    path) and the string column itself read as pyarrow reads them, and a
    value past int32 is an error that names its line."""
    rng = random.Random(11)
    path = tmp_path / "i.csv"
    extremes = [-2 ** 31, 2 ** 31 - 1, 0, -1, 1]
    lines = []
    for i in range(60_000):
        v = extremes[i] if i < len(extremes) else rng.randint(-2 ** 31, 2 ** 31 - 1)
        w = "" if i % 1013 == 7 else str(rng.randint(-2 ** 31, 2 ** 31 - 1))
        ident = ['"id{:05d}"', 'id{:05d}', '"a,{:05d}"', '"line\n{:05d}"', '"say ""{:05d}"""',
                 '""'][i % 6].format(i)
        lines.append(f"{ident},{v},{w},{i * 0.5},{rng.randint(-2 ** 63, 2 ** 63 - 1)}")
    path.write_text("\n".join(lines) + "\n")
    names = ["id", "v", "w", "x", "big"]
    types = {"id": pa.string(), "v": pa.int32(), "w": pa.int32(), "x": pa.float64(),
             "big": pa.int64()}
    want = pcsv.read_csv(path, read_options=pcsv.ReadOptions(column_names=names),
                         parse_options=pcsv.ParseOptions(newlines_in_values=True),
                         convert_options=pcsv.ConvertOptions(column_types=types))
    schema = "id:string,v:int32,w:int32,x:float64,big:int64"
    for columns in ("v,w,x,big", "w,v", "id,v"):
        out = tmp_path / "i.arrow"
        sluice.run("convert", path, out, "-q", "--threads", "2", "-O", "header=false",
                   "-O", "split_size=200k", "--schema", schema, "-c", columns)
        with ipc.open_file(out) as f:
            got = f.read_all()
        assert got.column_names == columns.split(",")
        for name in got.column_names:
            assert got.column(name).type == want.column(name).type, name
            assert got.column(name).to_pylist() == want.column(name).to_pylist(), name

    fields = lines[45_678].split(",")
    fields[1] = str(2 ** 31)
    lines[45_678] = ",".join(fields)
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(pa.ArrowInvalid):
        pcsv.read_csv(path, read_options=pcsv.ReadOptions(column_names=names),
                      parse_options=pcsv.ParseOptions(newlines_in_values=True),
                      convert_options=pcsv.ConvertOptions(column_types=types))
    proc = sluice.expect_error("convert", path, tmp_path / "bad.arrow", "-q", "-O",
                               "header=false", "--schema", schema, "-c", "v,w")
    err = proc.stderr.decode()
    line = 1 + 45_678 + sum(x.count("\n") for x in lines[:45_678])  # ids hold line feeds
    assert "out of range" in err and "2147483648" in err and f"line {line} " in err, err


def test_integer_columns_take_a_plus_sign_and_name_out_of_range_values(sluice, tmp_path):
    """Unsigned columns take "+5" as signed ones do (and DuckDB's UTINYINT);
    an integer too large for int64 (or negative for an unsigned column) is
    "out of range", as a too-large int8 is, not "cannot parse"."""
    path = tmp_path / "ints.csv"
    path.write_text("u,i\n+5,+7\n6,-8\n")
    got = sluice_read(sluice, path, "schema=u:uint8|i:int64")
    duckdb = pytest.importorskip("duckdb")
    want = duckdb.sql(f"SELECT * FROM read_csv('{path}', columns={{'u': 'UTINYINT', "
                      f"'i': 'BIGINT'}}, header=true)").fetchall()
    assert list(zip(*got.to_pydict().values())) == want
    # two signs are no number, as before '+' was taken for unsigned ones
    doubled = tmp_path / "doubled.csv"
    doubled.write_text("a\n-+1234567890123456789\n++1234567890123456789\n")
    assert sluice_read(sluice, doubled).equals(pcsv.read_csv(doubled))
    assert sluice_read(sluice, doubled).schema.types == [pa.string()]
    for text, schema, says in (("9223372036854775808", "a:int64", "out of range: '9223"),
                               ("99999999999999999999", "a:int8", "out of range: '9999"),
                               ("-3", "a:uint64", "out of range: '-3'"),
                               ("x1", "a:uint64", "cannot parse 'x1'")):
        bad = tmp_path / "bad.csv"
        bad.write_text(f"a\n{text}\n")
        err = sluice.expect_error("cat", bad, "--schema", schema).stderr.decode()
        assert says in err and "line 2" in err, err


def test_spaces_around_dates_and_times_are_trimmed(sluice, tmp_path):
    """" 2024-01-01 " is a date and " 2024-01-01 10:00:00" a timestamp, as
    DuckDB reads them (pyarrow trims the dates too); they were strings."""
    duckdb = pytest.importorskip("duckdb")
    path = tmp_path / "spaced.csv"
    path.write_text("d,t,h\n 2024-01-01 , 2024-01-01 10:00:00,\t12:30:00\n"
                    "2024-01-02,2024-01-02T11:00:00.5 ,13:00:00 \n")
    got = sluice_read(sluice, path)
    rel = duckdb.sql(f"SELECT * FROM read_csv('{path}')")
    assert [str(t) for t in rel.types] == ["DATE", "TIMESTAMP", "TIME"]
    assert got.schema.types == [pa.date32(), pa.timestamp("us"), pa.time64("us")]
    assert [tuple(r.values()) for r in got.to_pylist()] == rel.fetchall()
    assert got.column("d").equals(pcsv.read_csv(path).column("d"))


def test_quoted_fields_across_blocks_match_pyarrow(sluice, tmp_path):
    """The block tokenizer counts each field's quote bytes across its 64-byte
    blocks; a field with exactly two, at its ends, is read as a view of its
    text. Quoted fields of every length up to 200 at every offset within a
    block, with and without "" inside, CRLF line ends, read as pyarrow reads
    them, with small splits."""
    rng = random.Random(3)
    rows = []
    for i in range(3000):
        n = i % 201
        text = "".join(rng.choice("abc,|\n x") for _ in range(n))
        if i % 3 == 1 and n > 2:
            k = rng.randrange(1, n)
            text = text[:k] + '"' + text[k:]  # one quote inside, written as ""
        pad = "p" * (1 + i % 64)  # moves the field's start through the block
        quoted = '"' + text.replace('"', '""') + '"'
        rows.append(f"{pad},{quoted},{i}")
    path = tmp_path / "q.csv"
    path.write_bytes(("a,b,c\r\n" + "\r\n".join(rows) + "\r\n").encode())
    want = pcsv.read_csv(path, parse_options=pcsv.ParseOptions(newlines_in_values=True),
                         convert_options=pcsv.ConvertOptions(
                             column_types={"a": pa.string(), "b": pa.string(),
                                           "c": pa.int64()},
                             strings_can_be_null=False))
    assert want.num_rows == 3000
    for options in ([], ["split_size=4k"]):
        got = sluice_read(sluice, path, *options, threads=2)
        for name in ("a", "b", "c"):
            assert got.column(name).to_pylist() == want.column(name).to_pylist(), (name, options)


# ---- Parquet -> CSV -> Parquet ------------------------------------------------------

def float_bits(values):
    return [None if v is None else struct.pack("<d", v) for v in values]


def round_trip_table() -> pa.Table:
    rng = random.Random(5)
    n = 64
    hard = [0.1, 1 / 3, 2 ** -1074, 1.7976931348623157e308, -0.0, 0.0, 5e-324,
            123456789.12345679, 9007199254740993.0, float("inf"), float("-inf"), float("nan"),
            2.2250738585072014e-308, 0.30000000000000004]
    floats = [hard[i] if i < len(hard) else
              struct.unpack("<d", struct.pack("<Q", rng.getrandbits(64)))[0] for i in range(n)]
    floats = [None if (i % 9 == 8) else (1.5 if math.isnan(v) and i >= len(hard) else v)
              for i, v in enumerate(floats)]
    strings = ['say "hi"', "a,b", "line1\nline2", "", "NA", "  spaced  ", "crlf\r\nx",
               "ünï", '"', ",", "null", "#hash"]
    base = datetime.datetime(2001, 2, 3, 4, 5, 6, 789012)
    return pa.table({
        "i64": pa.array([None if i % 7 == 3 else rng.randint(-2 ** 63, 2 ** 63 - 1)
                         for i in range(n)], pa.int64()),
        "i32": pa.array([None if i % 5 == 1 else rng.randint(-2 ** 31, 2 ** 31 - 1)
                         for i in range(n)], pa.int32()),
        "f64": pa.array(floats, pa.float64()),
        "whole": pa.array([float(i) for i in range(n)], pa.float64()),
        "s": pa.array([None if i % 6 == 5 else strings[i % len(strings)] for i in range(n)],
                      pa.string()),
        "d": pa.array([None if i % 8 == 2 else datetime.date(1969, 12, 25) +
                       datetime.timedelta(days=37 * i) for i in range(n)], pa.date32()),
        "ts": pa.array([None if i % 10 == 4 else base + datetime.timedelta(seconds=99991 * i,
                                                                           microseconds=i)
                        for i in range(n)], pa.timestamp("us")),
        "tsz": pa.array([None if i % 11 == 6 else base - datetime.timedelta(days=400 * i)
                         for i in range(n)], pa.timestamp("us", tz="UTC")),
        "b": pa.array([None if i % 4 == 0 else i % 3 == 0 for i in range(n)], pa.bool_()),
    })


SCHEMA = "i64:int64,i32:int32,f64:float64,whole:float64,s:string,d:date32,ts:timestamp[us]," \
         "tsz:tsu:UTC,b:bool"


def test_parquet_csv_parquet_round_trip(sluice, tmp_path):
    table = round_trip_table()
    src = tmp_path / "x.parquet"
    pq.write_table(table, src)
    want = pq.read_table(src)
    csv_path = tmp_path / "y.csv"
    sluice.run("convert", src, csv_path, "-q")
    back = tmp_path / "z.parquet"
    # null_values= : only empty fields are null, so the strings "NA" and
    # "null" stay strings (the writer quotes the empty string)
    sluice.run("convert", csv_path, back, "-q", "--schema", SCHEMA, "-O", "null_values=")
    got = pq.read_table(back)
    assert got.column_names == want.column_names
    for name in want.column_names:
        g, w = got.column(name), want.column(name)
        assert g.type == w.type, (name, g.type, w.type)
        if name == "f64" or name == "whole":
            assert float_bits(g.to_pylist()) == float_bits(w.to_pylist()), name
        else:
            assert g.to_pylist() == w.to_pylist(), name
    # pyarrow reads the intermediate CSV as the same values too
    peer = pcsv.read_csv(csv_path, convert_options=pcsv.ConvertOptions(
        column_types=want.schema, null_values=[""], strings_can_be_null=True,
        quoted_strings_can_be_null=False))
    for name in ("i64", "i32", "s", "d", "b"):
        assert peer.column(name).to_pylist() == want.column(name).to_pylist(), name


def test_comments_from_a_pipe(sluice, tmp_path):
    # standard input above the sample size is read through a window (stream mode)
    import subprocess
    rng = random.Random(3)
    data = comment_file(rng, rows=60000, crlf=False).encode()
    assert len(data) > (1 << 20) + (64 << 10)
    path = tmp_path / "big.csv"
    path.write_bytes(data)
    want = duckdb_comment_read(path)
    out = tmp_path / "pipe.arrow"
    proc = subprocess.run([sluice.binary, "convert", "-", str(out), "-f", "csv", "-q",
                           "-O", "comment=#", "-O", "schema=s:string", "-O", "batch_bytes=64k"],
                          input=data, capture_output=True, timeout=120)
    assert proc.returncode == 0, proc.stderr.decode(errors="replace")
    with ipc.open_file(out) as f:
        assert f.read_all().to_pylist() == want


def test_writer_null_spelling_with_reader_null_values(sluice, tmp_path):
    # -W null=\N and -O null_values=\N: nulls, "", "NA" and "null" all survive;
    # pyarrow told the same spelling reads the same values
    table = pa.table({"s": pa.array(["", "NA", None, "null", "x", None], pa.string()),
                      "i": pa.array([1, None, 3, None, 5, 6], pa.int64())})
    src = tmp_path / "x.parquet"
    pq.write_table(table, src)
    csv_path = tmp_path / "y.csv"
    sluice.run("convert", src, csv_path, "-q", "-W", "null=\\N", "-W", "delimiter=;")
    got = sluice_read(sluice, csv_path, "null_values=\\N", "delimiter=;")
    assert got.to_pylist() == table.to_pylist()
    peer = pcsv.read_csv(csv_path, parse_options=pcsv.ParseOptions(delimiter=";"),
                         convert_options=pcsv.ConvertOptions(
                             null_values=["\\N"], strings_can_be_null=True,
                             quoted_strings_can_be_null=False))
    assert peer.to_pylist() == table.to_pylist()


# ---- empty files ----------------------------------------------------------------------

def test_empty_file_takes_the_given_schema(sluice, tmp_path):
    """An empty file (no header, no rows) read with schema= has the schema's
    columns and no rows, so it can sit in a glob next to files with data
    (without a schema it has no columns, and the glob is an error naming it)."""
    (tmp_path / "a.csv").write_bytes(b"")
    empty = sluice_read(sluice, tmp_path / "a.csv", "schema=id:int64|name:string")
    assert empty.schema == pa.schema([("id", pa.int64()), ("name", pa.string())])
    assert empty.num_rows == 0
    rows = "id,name\n" + "".join(f"{i},n{i}\n" for i in range(1000))
    (tmp_path / "b.csv").write_text(rows)
    want = pcsv.read_csv(tmp_path / "b.csv",
                         convert_options=pcsv.ConvertOptions(column_types={"id": pa.int64(),
                                                                            "name": pa.string()}))
    out = tmp_path / "glob.arrows"
    sluice.run("convert", str(tmp_path / "*.csv"), out, "-t", "arrows", "-q",
               "-O", "schema=id:int64|name:string")
    got = ipc.open_stream(out.read_bytes()).read_all()
    assert got.equals(want)
    proc = sluice.run_raw("convert", str(tmp_path / "*.csv"), str(out), "-t", "arrows", "-q")
    assert proc.returncode != 0 and b"a.csv" in proc.stderr


# ---- schema= types spelled as pyarrow prints them ----------------------------------

PYARROW_SPELLED = pa.schema([("t", pa.timestamp("us", "UTC")), ("tm", pa.timestamp("ms", "+02:00")),
                             ("ts", pa.timestamp("s")), ("d", pa.date32()), ("f", pa.float32()),
                             ("x", pa.float64()), ("h", pa.time32("ms")), ("s", pa.string())])


def test_schema_types_as_pyarrow_prints_them(sluice, tmp_path):
    """schema= takes a type as str(pyarrow type) spells it, commas and all
    ("timestamp[us, tz=UTC]"): in -O schema= (the option list splits at
    commas outside brackets), in --schema (whose commas separate columns),
    with the Arrow format too ("tsu:UTC"). The values equal pyarrow's read
    with the same column_types."""
    path = tmp_path / "typed.csv"
    path.write_text("t,tm,ts,d,f,x,h,s\n"
                    "2024-01-02 03:04:05.123456Z,2024-01-02T03:04:05.5+02:00,2024-01-02 03:04:05,"
                    "2024-01-02,1.5,2.25,12:30:45.250,a\n"
                    "1970-01-01T00:00:00Z,1999-12-31T23:59:59.999+02:00,2000-02-29 00:00:00,"
                    "1900-03-01,-0.5,1e300,00:00:00.001,\"b,c\"\n")
    want = pcsv.read_csv(path, convert_options=pcsv.ConvertOptions(
        column_types={f.name: f.type for f in PYARROW_SPELLED}))
    assert want.schema == PYARROW_SPELLED
    spelled = [f"{f.name}:{f.type}" for f in PYARROW_SPELLED]
    assert spelled[0] == "t:timestamp[us, tz=UTC]"
    got = sluice_read(sluice, path, "schema=" + "|".join(spelled), "header=true")
    assert got.equals(want), got
    out = tmp_path / "cli.arrow"
    sluice.run("convert", path, out, "-q", "--schema", ",".join(spelled))
    with ipc.open_file(out) as f:
        assert f.read_all().equals(want)
    # the Arrow format, and the bracket form without "tz="
    got = sluice_read(sluice, path, "schema=t:tsu:UTC|tm:timestamp[ms,+02:00]|ts:timestamp[s]|"
                      "d:date32|f:float|x:double|h:time32[ms]|s:string")
    assert got.equals(want), got
    # a bracket after '=' is a plain character: the comma after it separates
    odd = tmp_path / "bracket.csv"
    odd.write_text("a[b\n1[x\n2[y\n")
    got = sluice_read(sluice, odd, "delimiter=[,header=true")
    assert got.equals(pcsv.read_csv(odd, parse_options=pcsv.ParseOptions(delimiter="[")))
    for bad, says in (("t:timestamp[xs]", "timestamp[xs]"), ("t:timestamp[us", "timestamp[us"),
                      ("t:decimal128(10)", "decimal128(10)")):
        proc = sluice.run_raw("convert", str(path), str(out), "-q", "--schema", bad)
        assert proc.returncode != 0 and says.encode() in proc.stderr, proc.stderr
    # a type CSV cannot hold is named as pyarrow prints it, not by its format
    for bad, says in (("s:float16", "type halffloat cannot"), ("s:date64", "type date64[ms]")):
        err = sluice.expect_error("convert", path, out, "-q", "--schema", bad).stderr.decode()
        assert says in err and "types that can: bool" in err, err


def test_spaces_around_numbers_are_trimmed(sluice, tmp_path):
    """" 1" and "2.5 " are numbers, as pyarrow reads them (spaces and tabs
    around ints and floats are trimmed; strings keep theirs), on the fused
    numeric path and off it, inferred and given."""
    rng = random.Random(4)
    lines = ["a,b,s,u"]
    for i in range(50_000):
        pad = [" ", "\t", "", ""][i % 4]
        lines.append(f"{pad}{i - 25_000}{pad[::-1]},{rng.random()}{pad},{pad}s{i % 9},{i}")
    path = tmp_path / "spaces.csv"
    path.write_text("\n".join(lines) + "\n")
    want = pcsv.read_csv(path)
    assert want.schema.types == [pa.int64(), pa.float64(), pa.string(), pa.int64()]
    for options in ([], ["split_size=64k"]):
        got = sluice_read(sluice, path, *options, threads=2)
        assert got.equals(want)
    given = {"a": pa.int32(), "b": pa.float32(), "s": pa.string(), "u": pa.uint32()}
    want = pcsv.read_csv(path, convert_options=pcsv.ConvertOptions(column_types=given))
    got = sluice_read(sluice, path, "schema=a:int32|b:float32|s:string|u:uint32")
    assert got.equals(want)
    # only blanks is not a number: the column is text
    (tmp_path / "blank.csv").write_text("a\n1\n \n")
    assert sluice_read(sluice, tmp_path / "blank.csv").equals(pcsv.read_csv(tmp_path / "blank.csv"))


def test_leading_zeros_do_not_count_against_integer_digits(sluice, tmp_path):
    """00001234567890123456789 is the int64 1234567890123456789, as pyarrow
    reads it (not a rounded float64), inferred and given, signed and not."""
    path = tmp_path / "zeros.csv"
    path.write_text("i,u\n00001234567890123456789,0000000000000000000000005\n"
                    "-00009223372036854775808,00018446744073709551615\n0000000000000000000042,0\n")
    want = pcsv.read_csv(path, convert_options=pcsv.ConvertOptions(
        column_types={"i": pa.int64(), "u": pa.uint64()}))
    assert want.column("i").to_pylist() == [1234567890123456789, -(1 << 63), 42]
    got = sluice_read(sluice, path, "schema=i:int64|u:uint64")
    assert got.equals(want)
    inferred = sluice_read(sluice, path)
    assert inferred.schema.field("i").type == pa.int64()
    assert inferred.column("i").equals(want.column("i"))


DECIMAL_TEXTS = ["1.5", "-0.25", "3", "7E2", "0.000", "-0", "+5.10", "00012.3", "1e-2", ".5", "5.",
                 " 3 ", "1.230", "12345678.1", "NA", "-99999999.99"]


@pytest.mark.parametrize("spec,pa_type", [("decimal128(10, 2)", pa.decimal128(10, 2)),
                                          ("decimal256(40,3)", pa.decimal256(40, 3)),
                                          ("decimal128(38, 0)", pa.decimal128(38, 0))])
def test_decimal_columns_match_pyarrow(sluice, tmp_path, spec, pa_type):
    """schema= decimal128(p, s) / decimal256(p, s): the values pyarrow.csv
    reads with the same column_types (exponents, signs, surrounding spaces,
    trailing zeros past the scale); digits past the scale that are not
    zeros, or more digits than the precision, are an error naming the line,
    as pyarrow refuses to round."""
    texts = DECIMAL_TEXTS + (["-12345678901234567890123456789012345.678"] if pa_type.precision == 40
                             else [])
    if pa_type.scale == 0:
        texts = [t for t in texts if t not in ("1.5", "-0.25", "1.230", "12345678.1", "1e-2", ".5",
                                               "-99999999.99", "+5.10", "00012.3")]
        texts.append("9" * 38)
    path = tmp_path / "dec.csv"
    path.write_text("d\n" + "\n".join(texts) + "\n")
    if pa.types.is_decimal256(pa_type):  # pyarrow.csv reads no decimal256: Python's decimal
        want = pa.table({"d": pa.array([None if t == "NA" else decimal.Decimal(t.strip())
                                         for t in texts], pa_type)})
    else:
        want = pcsv.read_csv(path, convert_options=pcsv.ConvertOptions(column_types={"d": pa_type}))
    got = sluice_read(sluice, path, "schema=d:" + spec)
    assert got.schema == want.schema
    assert got.equals(want), (got.column("d").to_pylist(), want.column("d").to_pylist())
    for bad, says in (("1.234", "more fraction digits than the scale"),
                      ("1" * 39, "more digits than the precision"), ("1.2.3", "cannot parse"),
                      ("e5", "cannot parse"), ("1e", "cannot parse"), ("-", "cannot parse")):
        if pa_type.scale != 2 and bad == "1.234":
            continue
        if pa_type.precision > 38 and bad == "1" * 39:
            bad = "1" * 41
        path.write_text("d\n1\n" + bad + "\n")
        if not pa.types.is_decimal256(pa_type):
            with pytest.raises(pa.ArrowInvalid):
                pcsv.read_csv(path, convert_options=pcsv.ConvertOptions(column_types={"d": pa_type}))
        err = sluice.expect_error("cat", path, "--schema", "d:" + spec).stderr.decode()
        assert "line 3" in err and says in err and bad[:40] in err, err


def test_decimal_round_trip_through_csv(sluice, tmp_path):
    """A Parquet decimal column written as CSV by sluice reads back equal
    when given its type."""
    table = pa.table({"d": pa.array([decimal.Decimal("-1.05"), None, decimal.Decimal("123456.78")],
                                    pa.decimal128(12, 2)),
                      "w": pa.array([decimal.Decimal("1" * 39 + ".5"), decimal.Decimal("-0.5"), None],
                                    pa.decimal256(45, 1))})
    pq.write_table(table, tmp_path / "d.parquet")
    sluice.run("convert", tmp_path / "d.parquet", tmp_path / "d.csv")
    got = sluice_read(sluice, tmp_path / "d.csv", "schema=d:decimal128(12, 2)|w:decimal256(45, 1)")
    assert got.equals(table)


# ---- types of values past the head sample ------------------------------------

def test_late_values_widen_types_from_stretches_further_on(sluice, tmp_path):
    """A whole, unquoted file is also sampled in stretches spread to its end:
    ints that turn into floats (or text) near the end widen the column at
    open instead of failing the scan there (pyarrow and polars fail; DuckDB's
    sniffer keeps BIGINT)."""
    rows = 200_000
    lines = ["id,v,w"] + [f"{i},{i % 1000},{i}" for i in range(rows)]
    lines += [f"{rows},2.5,x", f"{rows + 1},7,8"]
    path = tmp_path / "late.csv"
    path.write_text("\n".join(lines) + "\n")
    got = sluice_read(sluice, path)
    assert got.schema.field("id").type == pa.int64()
    assert got.schema.field("v").type == pa.float64()
    assert got.schema.field("w").type == pa.string()
    want = pcsv.read_csv(path, convert_options=pcsv.ConvertOptions(
        column_types={"id": pa.int64(), "v": pa.float64(), "w": pa.string()}))
    assert got.equals(want)
    # A head sample the user made small is all there is: the late value fails
    # (a stream: the text table would read the input again).
    err = sluice.expect_error("cat", path, "-O", "infer_bytes=64k", "-t", "csv").stderr.decode()
    assert "cannot parse '2.5' as int64" in err and "infer_bytes=all" in err
    # Quotes anywhere in a stretch: its line feeds may sit inside a field, so
    # it is not sampled; the late value fails with the same hint.
    quoted = tmp_path / "late_quoted.csv"
    quoted.write_text("\n".join(["id,s"] + [f'{i},"a,{i}"' for i in range(rows)]
                                + [f"{rows}.5,z"]) + "\n")
    err = sluice.expect_error("cat", quoted, "-t", "csv").stderr.decode()
    assert f"cannot parse '{rows}.5' as int64" in err


def test_stretches_inside_a_long_quoted_field_do_not_widen_types(sluice, tmp_path):
    """A quoted field longer than a stretch, holding no quote, looks like
    rows from inside: its lines ("1.5,ok") made the int64 column float64,
    rounding ids past 2^53. A stretch that would change a type is taken only
    when the quotes before it are even in number; the values are pyarrow's
    (given blocks larger than the field)."""
    path = tmp_path / "long_field.csv"
    first = 9007199254740993
    with open(path, "w") as f:
        f.write("id,note\n")
        f.writelines(f"{first + 2 * i},short\n" for i in range(100_000))
        f.write('1,"' + "1.5,ok\n" * 300_000 + 'end"\n')
        f.writelines(f"{first + 2 * i},short\n" for i in range(100_000))
    got = sluice_read(sluice, path)
    want = pcsv.read_csv(path, parse_options=pcsv.ParseOptions(newlines_in_values=True),
                         read_options=pcsv.ReadOptions(block_size=16 << 20))
    assert want.schema.types == [pa.int64(), pa.string()]
    assert got.equals(want)
    # A real late misfit after an even number of quotes still widens at open.
    with open(path, "a") as f:
        f.writelines(f"{i}.5,late\n" for i in range(20_000))
    got = sluice_read(sluice, path)
    assert got.schema.types == [pa.float64(), pa.string()]
    assert got.num_rows == 220_001


def _late_values_file(path: Path, rows: int) -> None:
    """Columns whose sample (the head; quotes keep the stretches further on
    out of it) says int64, int64, timestamp[us], bool, int64 until values
    past it say float64, string, timestamp[ns], string; `keep` stays int64."""
    late = {rows // 3: ("2.5", "7", "2020-01-01T00:00:00.5", "true"),
            rows // 2: ("8", "x7", "2020-01-01T00:00:00.123456789", "false"),
            2 * rows // 3: ("-1e300", "9", "2021-06-30T12:00:00", "maybe")}
    lines = ["a,b,ts,flag,keep,q"]
    for i in range(rows):
        a, b, ts, flag = late.get(i, (str(i), str(-i), f"2020-01-01T00:00:{i % 60:02d}",
                                      "true" if i % 3 else "false"))
        lines.append(f'{a},{b},{ts},{flag},{i},"q{i % 7}"')
    path.write_text("\n".join(lines) + "\n")


WIDENED = {"a": pa.float64(), "b": pa.string(), "ts": pa.timestamp("ns"), "flag": pa.string(),
           "keep": pa.int64(), "q": pa.string()}


@pytest.mark.parametrize("threads", [1, 2])
def test_late_values_past_the_sample_widen_the_type_on_a_second_read(sluice, tmp_path,
                                                                      threads):
    """A value past the sample that does not fit the inferred type fails the
    scan and widens the column (int64 -> float64 -> string, microseconds ->
    nanoseconds); convert and cat -o then write the whole input again with
    the wider types: the table pyarrow reads when given those types."""
    rows = 120_000
    path = tmp_path / "late.csv"
    _late_values_file(path, rows)
    header = sluice.run("schema", path).stdout.decode()
    assert [line.split()[1] for line in header.splitlines()] == \
        ["int64", "int64", "timestamp[us]", "bool", "int64", "string"]
    want = pcsv.read_csv(path, convert_options=pcsv.ConvertOptions(column_types=WIDENED))
    got = sluice_read(sluice, path, threads=threads)
    assert got.schema == want.schema
    assert got.equals(want)
    out = tmp_path / "cat.arrow"
    proc = sluice.run("cat", path, "-t", "arrow", "-o", out, "--threads", str(threads))
    assert "reading again" in proc.stderr.decode()
    with ipc.open_file(out) as f:
        assert f.read_all().equals(want)
    # stats count and bound the widened columns
    stats = json.loads(sluice.run("stats", path, "--json").stdout)
    by_name = {c["name"]: c for c in stats["columns"]} if isinstance(stats, dict) else \
        {c["name"]: c for c in stats}
    assert by_name["b"]["max"] == max(want.column("b").to_pylist())
    assert by_name["a"]["count"] == rows
    # DuckDB sniffing the whole file agrees on the types it has
    duckdb = pytest.importorskip("duckdb")
    rel = duckdb.sql(f"SELECT * FROM read_csv('{path}', sample_size=-1)")
    assert dict(zip(rel.columns, map(str, rel.types)))["a"] == "DOUBLE"
    assert dict(zip(rel.columns, map(str, rel.types)))["b"] == "VARCHAR"


def test_late_zone_offset_makes_the_column_utc(sluice, tmp_path):
    """A zone offset past the sample in a column inferred zone-less is not
    moved to UTC silently into a zone-less column: the scan fails, the column
    becomes timestamp[us, tz=UTC] (what a sample holding both infers, as
    DuckDB's TIMESTAMPTZ) and is read again; the values equal DuckDB's with
    the session zone UTC. A zone-less type given in the schema refuses the
    offset, as pyarrow does."""
    rows = 120_000
    path = tmp_path / "zones.csv"
    lines = ["id,ts,q"] + [f'{i},2020-01-01T00:{i // 60 % 60:02d}:{i % 60:02d},"q"' for i in range(rows)]
    lines[1 + rows // 2] = f'{rows // 2},2020-06-30T23:30:00.25+02:00,"q"'
    lines[1 + 2 * rows // 3] = f'{2 * rows // 3},2020-07-01 08:00:00Z,"q"'
    path.write_text("\n".join(lines) + "\n")
    header = sluice.run("schema", path).stdout.decode()
    assert header.splitlines()[1].split()[1] == "timestamp[us]", header
    got = sluice_read(sluice, path)
    assert got.schema.field("ts").type == pa.timestamp("us", "UTC")
    duckdb = pytest.importorskip("duckdb")
    con = duckdb.connect()
    con.execute("SET TimeZone='UTC'")
    want = con.sql(f"SELECT ts FROM read_csv('{path}', types={{'ts': 'TIMESTAMPTZ'}})").fetchall()
    assert got.column("ts").to_pylist() == [row[0] for row in want]
    assert got.column("ts")[rows // 2].as_py().isoformat() == "2020-06-30T21:30:00.250000+00:00"
    with pytest.raises(pa.ArrowInvalid):
        pcsv.read_csv(path, convert_options=pcsv.ConvertOptions(column_types={"ts": pa.timestamp("us")}))
    err = sluice.expect_error("convert", path, tmp_path / "x.arrow", "--schema",
                              "ts:timestamp[us]").stderr.decode()
    # (the split that fails first names its line: either offset's)
    assert ((f"line {rows // 2 + 2}" in err and "+02:00" in err) or
            (f"line {2 * rows // 3 + 2}" in err and "08:00:00Z" in err)) and "zone offset" in err, err


def _table_rows(text: str) -> tuple[list[str], list[str], list[list[str]]]:
    """`sluice cat`'s text table: names, types, and the rows shown (head and
    tail, without the ellipsis row and the row count)."""
    lines = text.splitlines()
    rows = [line.split() for line in lines[3:-1] if set(line.split()) != {"…"}]
    return lines[0].split(), lines[1].split(), rows


def test_table_view_reads_a_column_widened_past_the_sample_again(sluice, tmp_path):
    """`sluice cat` (the text table, on standard output or -o x.txt) prints
    nothing until the input ends, so a CSV value past the inference sample
    that widens its column makes it read the input again with the wider
    type, as convert and cat -o x.arrow do (it failed: "cannot parse 'hello'
    as int64"). The types and the rows shown are pyarrow's, reading the whole
    file; a stream to standard output (-t csv) still fails: it cannot take
    back what it wrote."""
    rows = 400_000
    path = tmp_path / "r.csv"
    with open(path, "w") as f:
        f.write("id,b,c\n")
        for i in range(rows):
            b = "hello" if i == 170_000 else i % 7
            c = "true" if i == 170_001 else i % 2
            f.write(f"{i},{b},{c}\n")
    assert sluice.run("schema", path).stdout.decode().split() == \
        ["id", "int64", "b", "int64", "c", "int64"]
    want = pcsv.read_csv(path, read_options=pcsv.ReadOptions(block_size=1 << 26))
    assert want.schema.types == [pa.int64(), pa.string(), pa.bool_()]
    txt = tmp_path / "t.txt"
    for args, out in ((["cat", path], None), (["cat", path, "-o", txt], txt),
                      (["cat", path, "-t", "table", "--threads", "1"], None)):
        proc = sluice.run(*args)
        assert "reading again" in proc.stderr.decode(), proc.stderr.decode()
        text = out.read_text() if out is not None else proc.stdout.decode()
        names, types, shown = _table_rows(text)
        assert names == want.column_names and types == ["int64", "string", "bool"], text
        assert text.splitlines()[-1] == f"{rows} rows", text
        head, tail = want.slice(0, 10).to_pylist(), want.slice(rows - 10).to_pylist()
        expect = [[str(r["id"]), r["b"], "true" if r["c"] else "false"] for r in head + tail]
        assert shown == expect, text
    proc = sluice.expect_error("cat", path, "-t", "csv")
    assert b"cannot parse 'hello' as int64" in proc.stderr
    assert b"reading again" not in proc.stderr
    # so does one to -o /dev/stdout when that is a pipe, written in place (a
    # second read wrote its rows after the first's: 485,483 lines, exit 0)
    proc = sluice.expect_error("cat", path, "-t", "csv", "-o", "/dev/stdout")
    assert b"cannot parse 'hello' as int64" in proc.stderr
    assert b"reading again" not in proc.stderr
    assert proc.stdout.count(b"\n") < rows
    # 0/1 then 'true': the hint names bool, which the re-read gives (it said
    # string)
    proc = sluice.expect_error("cat", path, "-c", "c", "-t", "csv")
    assert b"the column becomes bool (string if it holds numbers other than 0 and 1) when" \
        in proc.stderr, proc.stderr.decode()
    # /dev/null keeps nothing: it is written again, as a file is
    proc = sluice.run("cat", path, "-t", "csv", "-o", "/dev/null")
    assert b"reading again" in proc.stderr, proc.stderr.decode()


def test_schema_types_a_column_named_empty(sluice, tmp_path):
    """An empty header field names a column "" (sluice writes such headers
    too): --schema ':string' types it, as pyarrow's column_types={'': ...}
    does (it was "schema entry ':string': expected name:type"). The CSV
    sluice writes from it reads back under its own schema."""
    path = tmp_path / "en.csv"
    path.write_text(",b\n1,2\n,3\n")
    types = {"": pa.string(), "b": pa.int64()}
    want = pcsv.read_csv(path, convert_options=pcsv.ConvertOptions(column_types=types,
                                                               strings_can_be_null=True))
    assert want.schema.types == [pa.string(), pa.int64()]
    for spec in (":string", ":string,b:int64", "b:int64,:string"):
        out = tmp_path / "en.arrow"
        sluice.run("convert", path, out, "-q", "--schema", spec)
        with ipc.open_file(out) as f:
            assert f.read_all().equals(want), spec
    assert sluice_read(sluice, path, "schema=:string|b:int64").equals(want)
    back = tmp_path / "back.csv"
    sluice.run("convert", path, back, "-q", "--schema", ":string")
    assert back.read_text().splitlines()[0] == '"",b'  # (pyarrow writes it so too)
    got = sluice_read(sluice, back, schema=":string,b:int64")
    assert got.equals(pcsv.read_csv(back, convert_options=pcsv.ConvertOptions(
        column_types=types, strings_can_be_null=True)))
    bad = sluice.run_raw("cat", path, "--schema", "string")
    assert bad.returncode != 0 and b"expected name:type" in bad.stderr


def test_nanosecond_digits_outside_the_nanosecond_range_infer_string(sluice, tmp_path):
    """timestamp[ns] spans 1677-09-21 to 2262-04-11 only: a sampled date-time
    with digits past the microsecond outside it (the sentinel
    9999-12-31 23:59:59.999999999) makes the column a string, as pyarrow.csv
    infers it, so that sluice cat, cat -o and infer_bytes=all read the file
    (sluice once inferred timestamp[ns] and failed on its own sample). One
    past the sample widens the column to string in one more read. The ends,
    INT64_MIN and INT64_MAX nanoseconds, read as polars reads them."""
    path = tmp_path / "sentinel.csv"
    path.write_text("c\n2024-01-01 00:00:00.000000000\n9999-12-31 23:59:59.999999999\n")
    want = pcsv.read_csv(path)
    assert want.schema.field("c").type == pa.string()
    assert sluice.run("schema", path).stdout.decode().split() == ["c", "string"]
    assert sluice_read(sluice, path).equals(want)
    for extra in ([], ["--option", "infer_bytes=all"]):
        out = sluice.run("cat", path, "-t", "csv", *extra).stdout.decode()
        assert out.splitlines()[2] == "9999-12-31 23:59:59.999999999", out
    # past the sample (quotes keep the stretches further on out of it)
    rows = 120_000
    late = tmp_path / "late.csv"
    lines = ["ts,q"] + [f'2020-01-01T00:00:{i % 60:02d},"q"' for i in range(rows)]
    lines[1 + rows // 2] = '9999-12-31 23:59:59.999999999,"q"'
    late.write_text("\n".join(lines) + "\n")
    assert sluice.run("schema", late).stdout.decode().split()[:2] == ["ts", "timestamp[us]"]
    proc = sluice.run("cat", late, "-t", "arrow", "-o", tmp_path / "late.arrow")
    assert proc.stderr.decode().count("reading again") == 1, proc.stderr.decode()
    with ipc.open_file(tmp_path / "late.arrow") as f:
        got = f.read_all()
    assert got.equals(pcsv.read_csv(late, convert_options=pcsv.ConvertOptions(
        column_types={"ts": pa.string()})))
    # the ends of timestamp[ns]
    ends = tmp_path / "ends.csv"
    ends.write_text("c\n1677-09-21 00:12:43.145224192\n2262-04-11 23:47:16.854775807\n")
    got = sluice_read(sluice, ends)
    assert got.schema.field("c").type == pa.timestamp("ns")
    assert got.column("c").cast(pa.int64()).to_pylist() == [-2**63, 2**63 - 1]
    pl = pytest.importorskip("polars")
    want = pl.read_csv(ends, schema={"c": pl.Datetime("ns")})["c"].cast(pl.Int64).to_list()
    assert want == [-2**63, 2**63 - 1]
    err = sluice.expect_error("cat", ends, "-t", "csv", "--schema", "c:timestamp[ms]")
    assert "more fraction digits than the unit holds" in err.stderr.decode()


def test_late_values_stay_errors_where_a_second_read_cannot_help(sluice, tmp_path):
    rows = 120_000
    path = tmp_path / "late.csv"
    _late_values_file(path, rows)
    # standard output cannot be taken back: the error says what to do
    err = sluice.expect_error("cat", path, "-t", "csv").stderr.decode()
    assert "cannot parse" in err and "read again" in err and "infer_bytes=all" in err, err
    # a type the user gave is never widened
    err = sluice.expect_error("convert", path, tmp_path / "x.arrow",
                              "--schema", "a:int64").stderr.decode()
    assert "cannot parse '2.5' as int64" in err and "given in the schema" in err, err
    assert not (tmp_path / "x.arrow").exists()
    # a pipe is read once: the error stands, suggesting the wider type
    proc = subprocess.run([sluice.binary, "stats", "-"], input=path.read_bytes(),
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120)
    check_clean_failure(proc)
    err = proc.stderr.decode()
    assert "cannot parse '2.5' as int64" in err and "schema=a:float64" in err, err
    # bad_rows=skip widens too (values that fit a wider type are not bad
    # rows): the same table as without it
    got = sluice_read(sluice, path, "bad_rows=skip")
    assert got.equals(sluice_read(sluice, path))
    assert got.schema.field("a").type == pa.float64() and got.num_rows == rows
    # ...except from a pipe, read once: there those rows are dropped
    proc = subprocess.run([sluice.binary, "-O", "bad_rows=skip", "cat", "-", "-t", "arrows"],
                          input=path.read_bytes(), stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, timeout=120)
    assert proc.returncode == 0, proc.stderr.decode()
    piped = ipc.open_stream(pa.BufferReader(proc.stdout)).read_all()
    assert piped.schema.field("a").type == pa.int64() and piped.num_rows == rows - 3


@pytest.mark.parametrize("how", ["file", "gz", "pipe", "small infer_bytes"])
def test_a_header_longer_than_the_sample_still_samples_a_row(sluice, tmp_path, how):
    """A header longer than the inference sample (60,000 names: 1.26 MB,
    past the 1 MiB default) left no data row sampled, so every column was
    a string, which no later value widens: the types are now those of the
    first row at least, as polars and DuckDB give them (int64 here, then
    float64 for a column a later row widens, where the input can be read
    again), for a file, a compressed one and a pipe; infer_bytes smaller
    than the header too."""
    import gzip
    n = 60_000 if how != "small infer_bytes" else 3
    names = [f"column_name_{i:06d}" for i in range(n)]
    late = "3" if how == "pipe" else "2.5"  # (a pipe is read once: no widening there)
    text = ",".join(names) + "\n" + ",".join("1" for _ in range(n)) + "\n" + \
        ",".join(late if i == 0 else "3" for i in range(n)) + "\n"
    path = tmp_path / "wide.csv"
    path.write_text(text)
    out = tmp_path / "out.arrow"
    if how == "pipe":
        with open(path, "rb") as f:
            proc = subprocess.run([sluice.binary, "convert", "-", str(out), "-f", "csv"],
                                  stdin=f, capture_output=True, timeout=120)
        assert proc.returncode == 0, proc.stderr
    elif how == "gz":
        gz = tmp_path / "wide.csv.gz"
        gz.write_bytes(gzip.compress(text.encode()))
        sluice.run("convert", gz, out)
    elif how == "small infer_bytes":
        sluice.run("convert", path, out, "-O", "infer_bytes=10")
    else:
        sluice.run("convert", path, out)
    got = pa.ipc.open_file(out).read_all()
    assert got.schema.field(names[1]).type == pa.int64()
    first = got.column(names[0]).to_pylist()
    assert first == ([1, 3] if how == "pipe" else [1.0, 2.5])
    assert got.column(names[1]).to_pylist() == [1, 3]


def test_files_inferred_differently_read_with_one_schema(sluice, tmp_path):
    """Objects of one dataset whose samples say different types read with
    the narrowest type that holds all (int64 + float64 -> float64, date +
    timestamp -> timestamp, other mixes -> string), as DuckDB and polars read
    a glob: the values are pyarrow's for each file given those types. A
    type given in the schema option is kept, and a mix that does not fit
    it stays an error naming the odd file."""
    d = tmp_path / "parts"
    d.mkdir()
    (d / "a.csv").write_text("x,y,t,z\n1,a,2020-01-01,1\n2,b,2020-01-02,2\n")
    (d / "b.csv").write_text("x,y,t,z\n1.5,c,2020-01-01T10:00:00,x\n2,d,2020-01-01T00:00:00.5,3\n")
    (d / "c.csv").write_text("x,y,t,z\n3,7,2021-01-01,4\n")
    types = {"x": pa.float64(), "y": pa.string(), "t": pa.timestamp("us"), "z": pa.string()}
    want = pa.concat_tables(
        pcsv.read_csv(d / n, convert_options=pcsv.ConvertOptions(column_types=types))
        for n in ("a.csv", "b.csv", "c.csv"))
    got = sluice_read(sluice, d)
    assert got.schema == want.schema
    assert got.equals(want)
    duckdb = pytest.importorskip("duckdb")
    rel = duckdb.sql(f"SELECT x, y, z FROM read_csv('{d}/*.csv')")
    assert [str(t) for t in rel.types] == ["DOUBLE", "VARCHAR", "VARCHAR"]
    err = sluice.expect_error("convert", d, tmp_path / "o.arrow", "--schema", "z:int64")
    assert "b.csv" in err.stderr.decode() and "'z'" in err.stderr.decode(), err.stderr
    # a column of another name: the message names both
    (d / "c.csv").write_text("x,y,t,w\n3,7,2021-01-01,4\n")
    err = sluice.expect_error("convert", d, tmp_path / "o.arrow").stderr.decode()
    assert "c.csv: its columns differ" in err and "column 'w' here, 'z' in the first" in err, err


def test_header_only_files_take_the_types_of_the_others(sluice, tmp_path):
    """A file of a header alone (an empty partition) has no say in the
    types: the glob reads with the others' types, as DuckDB reads it (its
    strings would make every column a string)."""
    d = tmp_path / "parts"
    d.mkdir()
    (d / "a.csv").write_text("x,d\n")
    (d / "b.csv").write_text("x,d\n1,2024-01-01\n2,2024-01-02\n")
    (d / "c.csv").write_text("x,d\n")
    got = sluice_read(sluice, d)
    assert got.schema.types == [pa.int64(), pa.date32()]
    assert got.equals(pcsv.read_csv(d / "b.csv"))
    duckdb = pytest.importorskip("duckdb")
    rel = duckdb.sql(f"SELECT x, d FROM read_csv('{d}/*.csv')")
    assert [str(t) for t in rel.types] == ["BIGINT", "DATE"]
    # only headers: strings, as a single such file reads
    (d / "b.csv").write_text("x,d\n")
    assert sluice_read(sluice, d).schema.types == [pa.string(), pa.string()]


def test_columns_of_only_nulls_take_the_types_of_the_others(sluice, tmp_path):
    """A column whose sample in one file holds only nulls says nothing of
    its type: the glob reads it with the type the other files give it, as
    DuckDB does (joining its string with a double gave string). Null in
    every file stays string, as one such file reads."""
    d = tmp_path / "parts"
    d.mkdir()
    (d / "a.csv").write_text("x,y,z\n1,,\n2,,\n")
    (d / "b.csv").write_text("x,y,z\n3,2.5,\n4,,\n")
    (d / "c.csv").write_text("x,y,z\n5,,\n6,7,\n")
    got = sluice_read(sluice, d)
    duckdb = pytest.importorskip("duckdb")
    rel = duckdb.sql(f"SELECT x, y, z FROM read_csv('{d}/*.csv') ORDER BY x")
    assert [str(t) for t in rel.types] == ["BIGINT", "DOUBLE", "VARCHAR"]
    assert got.schema.types == [pa.int64(), pa.float64(), pa.string()]
    assert got.to_pydict() == {k: list(v) for k, v in zip("xyz", zip(*rel.fetchall()))}
    # the first file's own late value still widens the joined type
    (d / "a.csv").write_text("x,y,z\n1,,\n2,,\n" + "0,,\n" * 20000 + "9,oops,\n")
    got = sluice_read(sluice, d)
    assert got.schema.types == [pa.int64(), pa.string(), pa.string()]
    assert got.column("y").to_pylist()[-5:] == ["oops", "2.5", None, None, "7"]


# ---- compressed input, read as a stream ------------------------------------------

def _counts_in_bounded_memory(sluice, path, rows, limit_mb, *options):
    """`sluice stats` of a compressed a,b,c file: every column counts `rows`,
    and (where RSS is measured) the process stayed under `limit_mb`."""
    peak_kb, out = peak_rss_kib([sluice.binary, *options, "stats", path, "--json"])
    stats = json.loads(out)
    columns = stats["columns"] if isinstance(stats, dict) else stats
    assert {c["name"]: c["count"] for c in columns} == {"a": rows, "b": rows, "c": rows}
    if MEASURES_RSS:
        assert peak_kb / 1024 < limit_mb, peak_kb


def test_compressed_input_streams_in_bounded_memory(sluice, tmp_path):
    """.csv.gz (members cut anywhere, even inside a quoted field) and
    .csv.zst (several frames) larger than the sample are inflated as they
    are read: the values equal the plain file's (as pyarrow reads it), and
    a reader of 160 MB of text stays far below that in memory."""
    import gzip
    import shutil
    rows = 200_000
    text = "id,name,v\n" + "".join(f'{i},"n{i}\nx, ""q""",{i * 0.5}\n' for i in range(rows))
    plain = tmp_path / "plain.csv"
    plain.write_text(text)
    data = text.encode()
    cuts = [0, 1, 1_234_567, 1_234_568, 3_000_001, len(data)]
    gz = tmp_path / "multi.csv.gz"
    gz.write_bytes(b"".join(gzip.compress(data[a:b], 1) for a, b in zip(cuts, cuts[1:])))
    want = pcsv.read_csv(plain, parse_options=pcsv.ParseOptions(newlines_in_values=True))
    assert sluice_read(sluice, gz).equals(want)
    assert sluice_read(sluice, gz, threads=1).equals(want)
    if shutil.which("zstd"):
        halves = [tmp_path / "h1.zst", tmp_path / "h2.zst"]
        for half, (a, b) in zip(halves, [(0, 2_000_003), (2_000_003, len(data))]):
            (tmp_path / "part").write_bytes(data[a:b])
            subprocess.run(["zstd", "-q", "-f", str(tmp_path / "part"), "-o", str(half)],
                           check=True)
        zst = tmp_path / "frames.csv.zst"
        zst.write_bytes(halves[0].read_bytes() + halves[1].read_bytes())
        assert sluice_read(sluice, zst).equals(want)
    # A late value past the sample: the second read starts the inflation over.
    late = tmp_path / "late.csv"
    _late_values_file(late, 120_000)
    late_gz = tmp_path / "late.csv.gz"
    late_gz.write_bytes(gzip.compress(late.read_bytes(), 1))
    assert sluice_read(sluice, late_gz).equals(sluice_read(sluice, late))
    assert sluice_read(sluice, late_gz).schema.field("a").type == pa.float64()
    # A truncated member names the compressed offset; nothing is written.
    bad = tmp_path / "bad.csv.gz"
    bad.write_bytes(gz.read_bytes()[:-1000])
    err = sluice.expect_error("convert", bad, tmp_path / "bad.arrow").stderr.decode()
    assert "truncated gzip data near compressed byte" in err, err
    assert not (tmp_path / "bad.arrow").exists()
    # Bytes after the last member that are no gzip member: said so (they
    # were reported as a truncated member).
    junk = tmp_path / "junk.csv.gz"
    junk.write_bytes(gz.read_bytes() + b"garbage!")
    err = sluice.expect_error("convert", junk, tmp_path / "junk.arrow").stderr.decode()
    assert f"after the last gzip member near compressed byte {gz.stat().st_size}" in err, err
    assert "trailing garbage" in err, err
    # 160 MB of text through a 1 MB window: the peak stays near the window.
    big = tmp_path / "big.csv.gz"
    block = "".join(f"{i},abcdefghij,{i}.5\n" for i in range(100_000)).encode()
    with gzip.open(big, "wb", compresslevel=1) as f:
        f.write(b"a,b,c\n")
        for _ in range(80):
            f.write(block)
    _counts_in_bounded_memory(sluice, big, 8_000_000, 100)  # the inflated text is 160 MB


@pytest.mark.parametrize("kind", ["gzip", "zstd", "bzip2", "xz"])
def test_compressed_input_whose_name_does_not_tell_is_read_by_its_contents(sluice, tmp_path,
                                                                           kind):
    """Compressed CSV on a pipe (`curl ... | sluice cat -`) or named without
    the format (data.gz): the format is told from the bytes the head
    inflates to, as `-f csv` reads it (it was "cannot tell the format").
    bzip2 holds back a whole block (up to 900 kB) before its first byte,
    so 1.2 MB of text checks the larger head. Compressed Parquet is
    refused by name."""
    import shutil
    if shutil.which(kind) is None:
        pytest.skip(f"no {kind} command")
    rows = 60_000
    plain = tmp_path / "plain.csv"
    plain.write_text("id,v,s\n" + "".join(f"{i},{i * 0.25},s{i % 97}\n" for i in range(rows)))
    suffix = {"gzip": "gz", "zstd": "zst", "bzip2": "bz2", "xz": "xz"}[kind]
    packed = tmp_path / f"data.{suffix}"
    with open(plain, "rb") as src, open(packed, "wb") as dst:
        subprocess.run([kind, "-c"], stdin=src, stdout=dst, check=True)
    want = pcsv.read_csv(plain)
    out = tmp_path / "out.arrow"
    with open(packed, "rb") as stdin:
        subprocess.run([str(sluice.binary), "convert", "-q", "-", str(out), "-t", "arrow"],
                       stdin=stdin, check=True)
    with ipc.open_file(out) as f:
        assert f.read_all().equals(want)
    sluice.run("convert", "-q", packed, out)
    with ipc.open_file(out) as f:
        assert f.read_all().equals(want)
    pq = pytest.importorskip("pyarrow.parquet")
    pq.write_table(want, tmp_path / "t.parquet")
    with open(tmp_path / "t.parquet", "rb") as src, open(tmp_path / "t.bin", "wb") as dst:
        subprocess.run([kind, "-c"], stdin=src, stdout=dst, check=True)
    err = sluice.expect_error("cat", tmp_path / "t.bin").stderr.decode()
    assert f"t.bin: compressed parquet input ({kind}) is not read; decompress it first" in err, err


def test_many_compressed_objects_in_bounded_memory(sluice, tmp_path):
    """A directory of .csv.gz files is one table (values as pyarrow reads
    them); memory does not grow with the files: each opens without
    inflating ahead, and lets go of its inflated chunks once read (they were
    held until the dataset closed, about 20 MB a file of 16 MB)."""
    import gzip
    root = tmp_path / "gz"
    root.mkdir()
    n_files, rows = 24, 250_000
    tables = []
    for k in range(n_files):
        first = k * rows
        text = "id,x,s\n" + "".join(f"{i},{i * 0.25},s{i % 977}\n"
                                      for i in range(first, first + rows))
        (root / f"part-{k:02d}.csv.gz").write_bytes(gzip.compress(text.encode(), 1))
        tables.append(pcsv.read_csv(pa.py_buffer(text.encode())))
    want = pa.concat_tables(tables)
    assert sluice_read(sluice, root).equals(want)
    peak_kb, out = peak_rss_kib([sluice.binary, "stats", root, "--json"])
    stats = json.loads(out)
    columns = stats["columns"] if isinstance(stats, dict) else stats
    assert {c["name"]: c["count"] for c in columns} == {"id": n_files * rows, "x": n_files * rows,
                                                         "s": n_files * rows}
    if MEASURES_RSS:
        # 24 files of 6.5 MB of text: 125-135 MB here; holding each file's
        # chunks until the end peaked at 290 MB
        assert peak_kb / 1024 < 200, peak_kb


def _gzip_of_parts(path: Path, head: bytes, block: bytes, times: int, tail: bytes = b"") -> None:
    import zlib
    c = zlib.compressobj(1, zlib.DEFLATED, 31)
    with open(path, "wb") as f:
        f.write(c.compress(head))
        for _ in range(times):
            f.write(c.compress(block))
        f.write(c.compress(tail) + c.flush())


def _run_with_address_limit(cmd, limit: int) -> subprocess.CompletedProcess:
    import resource

    def limit_memory():
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    return subprocess.run([str(c) for c in cmd], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          preexec_fn=limit_memory, timeout=120)


@pytest.mark.skipif(not MEASURES_RSS, reason="address-space limits and ASan do not mix")
def test_out_of_memory_names_the_byte(sluice, tmp_path):
    """Input that does not fit in memory (a 400 MB address-space limit):
    the error names where in the input, and how much was asked for (it was
    'out of memory reading the input'). Lines ending in a bare CR are read
    whole (150 MB here)."""
    import re
    cr = tmp_path / "cr.csv.gz"
    _gzip_of_parts(cr, b"a,b\r", b"1,2\r" * (1 << 18), 150)
    proc = _run_with_address_limit([sluice.binary, "-q", "stats", cr], 400 << 20)
    check_clean_failure(proc)
    err = proc.stderr.decode()
    assert re.search(r"cr\.csv\.gz: byte \d+: out of memory \(\d+ bytes\) reading the input "
                     r"into memory", err), err
    # A first row too long for memory: where it starts, and its length so far.
    long_row = tmp_path / "long.csv.gz"
    _gzip_of_parts(long_row, b"a,b\n1,", b"x" * (1 << 20), 600, b"\n2,3\n")
    # (max_row_bytes above the memory: that limit would come first.)
    proc = _run_with_address_limit([sluice.binary, "-q", "-O", "max_row_bytes=2g", "stats",
                                    long_row], 400 << 20)
    check_clean_failure(proc)
    err = proc.stderr.decode()
    assert re.search(r"long\.csv\.gz: byte 4: out of memory \(\d+ bytes\) for a row of \d+ "
                     r"bytes or more", err), err


def _escaped_rows(rows: int) -> bytes:
    """i,s rows whose s holds 50 backslash-escaped line feeds and an escaped
    comma, and ends in 0-2 escaped backslashes (an even run before the row's
    line feed): almost every line feed is data, so a window's last one
    usually is."""
    return b"i,s\n" + b"".join(b"%d," % i + b"x\\\n" * 50 + b"y\\," + b"\\\\" * (i % 3) + b"\n"
                               for i in range(rows))


def test_escape_dialect_streams(sluice, tmp_path):
    """escape=backslash on .csv.gz and a pipe goes through the window like
    any stream (it read the input whole): a line feed after an odd run of
    escapes is data, not a row's end, wherever a window ends. The values are
    pyarrow's (escape_char='\\', newlines_in_values=True), and 160 MB of
    text stays far below that in memory."""
    import gzip
    data = _escaped_rows(60_000)  # 9.7 MB: a few windows
    plain = tmp_path / "esc.csv"
    plain.write_bytes(data)
    gz = tmp_path / "esc.csv.gz"
    gz.write_bytes(gzip.compress(data, 1))
    want = pcsv.read_csv(plain, parse_options=pcsv.ParseOptions(escape_char="\\",
                                                                newlines_in_values=True))
    assert want.num_rows == 60_000
    assert sluice_read(sluice, gz, "escape=backslash").equals(want)
    out = tmp_path / "piped.arrow"
    with open(plain, "rb") as stdin:
        proc = subprocess.run([sluice.binary, "-q", "-O", "escape=backslash", "convert", "-f",
                               "csv", "-", out], stdin=stdin, stderr=subprocess.PIPE, timeout=120)
    assert proc.returncode == 0, proc.stderr
    with ipc.open_file(out) as f:
        assert f.read_all().equals(want)
    big = tmp_path / "big.csv.gz"
    block = "".join(f"{i},abc\\,def,{i}.5\n" for i in range(100_000)).encode()
    _gzip_of_parts(big, b"a,b,c\n", block, 80)
    # it held the 170 MB of text: 350 MB
    _counts_in_bounded_memory(sluice, big, 8_000_000, 100, "-O", "escape=backslash")


def test_long_first_row_streams(sluice, tmp_path):
    """A first data row longer than the 1 MiB sample: the sample grows until
    a row ends, and the stream goes through the window (the input was read
    whole: 300 MB for 150 MB of text). Values as pyarrow reads them."""
    import gzip
    first = b"-1,0," + b"x" * (2 << 20) + b"\n"
    block = b"".join(b"%d,%d,row%d\n" % (i, i * 7, i) for i in range(100_000))
    small = tmp_path / "small.csv.gz"
    _gzip_of_parts(small, b"a,b,c\n" + first, block, 3)
    plain = tmp_path / "small.csv"
    plain.write_bytes(gzip.decompress(small.read_bytes()))
    want = pcsv.read_csv(plain, read_options=pcsv.ReadOptions(block_size=8 << 20))
    assert sluice_read(sluice, small).equals(want)
    big = tmp_path / "big.csv.gz"
    _gzip_of_parts(big, b"a,b,c\n" + first, block, 80)
    _counts_in_bounded_memory(sluice, big, 8_000_001, 100)


# ---- max_row_bytes: one row of a stream in bounded memory -------------------------

# Above the 1 MiB sample, so that a long first row grows the sample too.
ROW_LIMIT = 1_500_000


def _long_row_input(where: str, row_bytes: int) -> tuple[bytes, int, int]:
    """a,b rows with one row of `row_bytes` bytes, its line feed included
    ("last" ends the input without one, and DuckDB counts one byte for
    that): (input, its line, its byte)."""
    head = b"a,b\n"
    short = b"".join(b"%d,x\n" % i for i in range(200_000))  # 1.6 MB: past the sample
    if where == "quoted":  # quoted line feeds inside, as in a JSON or text value
        body = b"\"" + b"y\n" * ((row_bytes - 5) // 2) + b"y" * ((row_bytes - 5) % 2) + b"\""
        row = b"1," + body + b"\n"
    else:
        row = b"1," + b"y" * (row_bytes - 3) + b"\n"
    assert len(row) == row_bytes
    if where == "first":
        return head + row + short, 2, len(head)
    if where == "last":
        return head + short + row[:-1], 200_002, len(head) + len(short)
    return head + short + row + short, 200_002, len(head) + len(short)


def _stream_of(sluice, tmp_path, data: bytes, source: str, *options: str):
    """`sluice convert` of `data` as a .csv.gz, a .csv.zst or standard input."""
    import gzip
    args = [x for o in options for x in ("-O", o)]
    out = tmp_path / "out.arrow"
    if source == "stdin":
        return subprocess.run([sluice.binary, "-q", *args, "convert", "-f", "csv", "-", out],
                              input=data, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              timeout=120), out
    path = tmp_path / f"in.csv.{source}"
    if source == "gz":
        path.write_bytes(gzip.compress(data, 1))
    else:
        zstandard = pytest.importorskip("zstandard")
        path.write_bytes(zstandard.ZstdCompressor(level=1).compress(data))
    return subprocess.run([sluice.binary, "-q", *args, "convert", path, out],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120), out


@pytest.mark.parametrize("source", ["gz", "zst", "stdin"])
@pytest.mark.parametrize("where", ["first", "later", "last", "quoted"])
def test_max_row_bytes_bounds_one_row_of_a_stream(sluice, tmp_path, where, source):
    """max_row_bytes=N: a row of N bytes (its line ending included) reads,
    with pyarrow's values; one of N + 1 is an error naming the object, the
    line and byte where the row starts, and the option. DuckDB's
    max_line_size counts the same way (N reads, N + 1 is 'Maximum line size
    of N bytes exceeded'). Before, no row was too long: a stream grew its
    window for any row, until memory ran out."""
    duckdb = pytest.importorskip("duckdb")
    option = f"max_row_bytes={ROW_LIMIT}"
    for size in (ROW_LIMIT, ROW_LIMIT + 1):
        data, line, at = _long_row_input(where, size)
        plain = tmp_path / "plain.csv"
        plain.write_bytes(data)
        def duckdb_rows():
            return duckdb.sql(f"SELECT count(*) FROM read_csv('{plain}', header=true, quote='\"', "
                              f"max_line_size={ROW_LIMIT})").fetchall()[0][0]
        if size == ROW_LIMIT:
            proc, out = _stream_of(sluice, tmp_path, data, source, option)
            assert proc.returncode == 0, proc.stderr
            with ipc.open_file(out) as f:
                got = f.read_all()
            want = pcsv.read_csv(plain, read_options=pcsv.ReadOptions(block_size=4 << 20),
                                 parse_options=pcsv.ParseOptions(newlines_in_values=True))
            assert got.equals(want)
            assert duckdb_rows() == want.num_rows
        else:
            with pytest.raises(duckdb.Error, match=f"Maximum line size of {ROW_LIMIT} bytes"):
                duckdb_rows()
            proc, _ = _stream_of(sluice, tmp_path, data, source, option)
            check_clean_failure(proc)
            err = proc.stderr.decode()
            name = "<stdin>" if source == "stdin" else f"in.csv.{source}"
            assert f"{name}: line {line} (byte {at}): a row longer than {ROW_LIMIT} bytes (the " \
                   "CSV option max_row_bytes" in err, err


def _peak_rss_of_failure(cmd) -> tuple[int, str]:
    """Runs `cmd`, which must fail: (its peak RSS in KiB, its stderr), as
    conftest's peak_rss_kib measures it."""
    import sys
    probe = ("import json, resource, subprocess, sys\n"
             "p = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)\n"
             "print(json.dumps([p.returncode, p.stderr.decode(errors='replace'),\n"
             "                  resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss]))\n")
    proc = subprocess.run([sys.executable, "-c", probe, *map(str, cmd)], stdout=subprocess.PIPE,
                          check=True, timeout=120)
    rc, err, peak = json.loads(proc.stdout)
    assert rc == 1, err
    return peak, err


@pytest.mark.parametrize("late", [False, True])
def test_a_row_bomb_stops_at_max_row_bytes(sluice, tmp_path, late):
    """200 MB of zeros (no line feed) in a .csv.gz of 0.2 MB (1.4 MB with
    1.6 MB of rows before it), as the first row or after those rows: with max_row_bytes=1m the read stops at once
    with the row's line and byte, its memory far below the row's (the
    sample, or the window, never grows past the limit). Before, it grew
    with the row (3 GB of zeros passed 6.9 GB); pyarrow refuses such a row
    by its block_size, DuckDB by max_line_size."""
    import time
    head = b"a,b\n" + (b"".join(b"%d,x\n" % i for i in range(200_000)) if late else b"")
    bomb = tmp_path / "bomb.csv.gz"
    _gzip_of_parts(bomb, head, bytes(1 << 20), 200)
    assert bomb.stat().st_size < 2 << 20
    started = time.monotonic()
    peak_kb, err = _peak_rss_of_failure([sluice.binary, "-q", "-O", "max_row_bytes=1m", "stats",
                                         bomb])
    assert time.monotonic() - started < 30
    line, at = (200_002, len(head)) if late else (2, 4)
    assert f"bomb.csv.gz: line {line} (byte {at}): a row longer than 1048576 bytes" in err, err
    if MEASURES_RSS:
        assert peak_kb < 60 << 10, peak_kb


# ---- max_columns: the columns of a row in bounded memory ---------------------------

@pytest.mark.parametrize("source", ["csv", "zst"])
def test_a_column_bomb_stops_at_max_columns(sluice, tmp_path, source):
    """A header of 2.2 million empty names ('a' and 2.2 MB of commas; a .zst
    of a few hundred bytes): each column costs memory whatever its bytes (1
    to 5 KiB through a read), and the row is far shorter than max_row_bytes,
    so it passed: 1 GB for `schema` at a million columns, 3.5 GB for `cat`.
    Now more than max_columns (by default the memory budget / 1 KiB:
    262,144) is an error naming the line, byte and option, found while the
    row is tokenized, in a few MB. pyarrow and DuckDB refuse the row for
    its length (block_size, max_line_size)."""
    duckdb = pytest.importorskip("duckdb")
    data = b"a" + b"," * 2_200_000 + b"\n"
    plain = tmp_path / "bomb.csv"
    plain.write_bytes(data)
    with pytest.raises(pa.ArrowInvalid):
        pcsv.read_csv(plain)
    with pytest.raises(duckdb.Error):
        duckdb.sql(f"SELECT * FROM read_csv('{plain}')").fetchall()
    path = plain
    if source == "zst":
        zstandard = pytest.importorskip("zstandard")
        path = tmp_path / "bomb.csv.zst"
        path.write_bytes(zstandard.ZstdCompressor(level=19).compress(data))
        assert path.stat().st_size < 1000
    for command in ("schema", "cat"):
        peak_kb, err = _peak_rss_of_failure([sluice.binary, command, path])
        assert f"{path.name}: line 1 (byte 0): a row of too many fields (more than 262144, the " \
               "CSV option max_columns" in err, err
        if MEASURES_RSS:
            assert peak_kb < 100 << 10, (command, peak_kb)


def test_max_columns_bounds_the_header_and_every_row(sluice, tmp_path):
    """max_columns=N: a file of N columns reads as pyarrow reads it; one of
    N + 1 is an error naming the count and the option, and so is a later
    row of more fields, at the line pyarrow's invalid-row handler names;
    bad_rows=skip skips that row (without keeping its fields)."""
    n = 1000
    path = tmp_path / "wide.csv"
    names = ",".join(f"c{i}" for i in range(n))
    rows = "".join(",".join(str(r * n + i) for i in range(n)) + "\n" for r in range(3))
    path.write_text(names + "\n" + rows)
    got = sluice_read(sluice, path, f"max_columns={n}")
    assert got.equals(pcsv.read_csv(path))
    path.write_text(names + ",extra\n" + rows)
    err = sluice.expect_error("schema", "-O", f"max_columns={n}", path).stderr.decode()
    assert f"wide.csv: line 1 (byte 0): {n + 1} columns, more than the CSV option max_columns " \
           f"({n}:" in err, err
    long_row = tmp_path / "long_row.csv"
    long_row.write_text("a,b\n1,2\n3" + "," * 50_000 + "\n4,5\n")
    bad = []

    def handler(row):
        bad.append(row.number)
        return "skip"

    pcsv.read_csv(long_row, read_options=pcsv.ReadOptions(use_threads=False),
                  parse_options=pcsv.ParseOptions(invalid_row_handler=handler))
    err = sluice.expect_error("cat", "-O", f"max_columns={n}", long_row).stderr.decode()
    assert f"long_row.csv: line {bad[0]} (byte 8): a row of too many fields (more than " \
           f"{n}, the CSV option max_columns" in err, err
    # Skipped either way: past max_columns, or as a row of the wrong count.
    want = pcsv.read_csv(long_row, parse_options=pcsv.ParseOptions(invalid_row_handler=handler))
    for limit, why in ((n, f"more than {n} fields (the CSV option max_columns)"),
                       (100_000, "expected 2 fields, found 50001")):
        proc = sluice.run("cat", "-t", "csv", "-O", "bad_rows=skip", "-O", f"max_columns={limit}",
                          long_row)
        assert pcsv.read_csv(pa.py_buffer(proc.stdout)).equals(want)
        assert f"skipped 1 bad row (first: line {bad[0]} (byte 8): {why})" in \
            proc.stderr.decode(), proc.stderr


@pytest.mark.parametrize("dialect", ["quoted", "escape", "stray"])
def test_bad_rows_skip_drops_rows_past_max_columns(sluice, tmp_path, dialect):
    """bad_rows=skip with rows wider than max_columns anywhere (in the
    sample, at split boundaries, at the end, with quoted delimiters and
    line feeds in them): the same table and skip count as with a
    max_columns they fit (rows of the wrong count are skipped either way),
    with 1 and 2 threads and from a .zst stream, and the table pyarrow's
    invalid-row handler gives."""
    zstandard = pytest.importorskip("zstandard")
    rng = random.Random(7)
    escape = dialect == "escape"
    options = ["bad_rows=skip"] + (["escape=\\"] if escape else []) + \
        (["stray_quotes=text", "delimiter=,"] if dialect == "stray" else [])
    lines, n_wide = ["id,text,x"], 0
    for i in range(30_000):
        if rng.random() < 0.0005 or i in (1, 29_999):
            # Wide enough to pass the field array's spare room (the check
            # runs when it grows), with quoted delimiters and line feeds.
            n_wide += 1
            cells = ["7"] * 100_000
            for j in rng.sample(range(100_000), 50):
                cells[j] = f'"q,{j}\n"'

            if escape:
                cells[5] = 'a\\"b\\,c'
            elif dialect == "stray":
                cells[5] = 'a"b'
            lines.append(",".join(cells))
        else:
            lines.append(f'{i},"t {i}, ""quoted""\nline",{i / 8}')
    path = tmp_path / "wide_rows.csv"
    path.write_text("\n".join(lines) + "\n")
    zst = tmp_path / "wide_rows.csv.zst"
    zst.write_bytes(zstandard.ZstdCompressor().compress(path.read_bytes()))
    reference = sluice_read(sluice, path, *options, "max_columns=200000")
    assert reference.num_rows == 30_000 - n_wide  # each wide row took a row's place
    if not escape:
        handler = lambda row: "skip"  # noqa: E731
        want = pcsv.read_csv(path, parse_options=pcsv.ParseOptions(invalid_row_handler=handler,
                                                                   newlines_in_values=True))
        assert reference.equals(want)
    for source in (path, zst):
        for threads in (1, 2):
            out = tmp_path / f"out{threads}.arrow"
            proc = sluice.run("convert", source, out, "--threads", str(threads), "--batch-rows",
                              "977", *[x for o in options + ["max_columns=100"] for x in ("-O", o)])
            with ipc.open_file(out) as f:
                assert f.read_all().equals(reference), (source, threads)
            assert f"skipped {n_wide} bad rows" in proc.stderr.decode(), proc.stderr


def test_zstd_window_over_the_limit_is_named(sluice, tmp_path):
    """A .csv.zst written with a window past zstd's default 128 MiB limit
    (zstd --long=28): the error says the window the frame needs, not
    'corrupt zstd data'. pyarrow, polars, DuckDB and the zstd CLI refuse it
    too (the CLI: 'Use --long=28 or --memory=256MB')."""
    zstandard = pytest.importorskip("zstandard")
    params = zstandard.ZstdCompressionParameters(window_log=28, write_content_size=False)
    co = zstandard.ZstdCompressor(compression_params=params).compressobj()
    path = tmp_path / "long.csv.zst"
    path.write_bytes(co.compress(b"a,b\n" + b"1,2\n" * (1 << 20)) + co.flush())
    err = sluice.expect_error("stats", path).stderr.decode()
    assert "long.csv.zst: near compressed byte 0: the zstd frame needs a window of 256 MiB, " \
           "more than the 128 MiB limit" in err, err
    assert "corrupt" not in err, err


def _quoted_lines_source(sluice, tmp_path):
    """A table of 50,000 rows whose strings hold commas, quotes and line
    feeds, as src.parquet and as sluice's plain.csv: (table, src, plain)."""
    rows = 50_000
    src = tmp_path / "src.parquet"
    table = pa.table({"i": pa.array(range(rows), pa.int64()),
                      "s": pa.array([f"v{i}, \"q\"\n{i % 7}" if i % 5 else None
                                     for i in range(rows)]),
                      "x": pa.array([i / 8 for i in range(rows)])})
    pq.write_table(table, src)
    plain = tmp_path / "plain.csv"
    sluice.run("convert", src, plain, "-q")
    return table, src, plain


def test_compressed_output_reads_back_in_every_peer(sluice, tmp_path):
    """x.csv.gz and x.csv.zst outputs are compressed whole (gzip by ISA-L,
    zstd): pyarrow, DuckDB and polars read them back to the table sluice
    wrote; a .gz name picks no other writer, and a write that fails leaves
    nothing behind."""
    import shutil
    table, src, plain = _quoted_lines_source(sluice, tmp_path)
    want = pcsv.read_csv(plain, parse_options=pcsv.ParseOptions(newlines_in_values=True))
    polars = pytest.importorskip("polars")
    duckdb = pytest.importorskip("duckdb")
    for name in ("out.csv.gz", "out.csv.zst"):
        out = tmp_path / name
        sluice.run("convert", src, out, "-q")
        assert out.read_bytes()[:2] in (b"\x1f\x8b", b"\x28\xb5"), name
        got = pcsv.read_csv(out, parse_options=pcsv.ParseOptions(newlines_in_values=True))
        assert got.equals(want), name
        assert duckdb.sql(f"SELECT count(*), sum(i) FROM read_csv('{out}')").fetchall() == \
            [(table.num_rows, table.num_rows * (table.num_rows - 1) // 2)], name
        frame = polars.read_csv(out)
        assert frame["s"].fill_null("").to_list() == want.column("s").to_pylist(), name
        assert sluice_read(sluice, out).equals(sluice_read(sluice, plain)), name
    if shutil.which("gzip"):
        unzipped = subprocess.run(["gzip", "-dc", str(tmp_path / "out.csv.gz")], check=True,
                                  stdout=subprocess.PIPE).stdout
        assert unzipped == plain.read_bytes()
    # Only CSV is compressed whole: a Parquet name with .gz picks no writer.
    proc = sluice.run_raw("convert", src, tmp_path / "x.parquet.gz")
    assert proc.returncode == 2 and b"cannot tell the format" in proc.stderr, proc.stderr
    assert not (tmp_path / "x.parquet.gz").exists()
    bad = tmp_path / "bad.csv"
    bad.write_text("a\n" + "".join(f"{i}\n" for i in range(100_000)) + "oops,1\n")
    sluice.expect_error("convert", bad, tmp_path / "bad.csv.gz")
    assert not (tmp_path / "bad.csv.gz").exists()


# ---- bzip2 and xz, read and written whole ------------------------------------------

def _compress(kind: str, data: bytes, level: int | None = None) -> bytes:
    import bz2
    import lzma
    if kind == "bz2":
        return bz2.compress(data, 9 if level is None else level)
    return lzma.compress(data, preset=0 if level is None else level)  # fast to make


def _decompress(kind: str, raw: bytes) -> bytes:
    import bz2
    import lzma
    return bz2.decompress(raw) if kind == "bz2" else lzma.decompress(raw)


def _hex_rows(rows: int, seed: int) -> bytes:
    """CSV text that compresses to about 40%: quoted fields with newlines
    and doubled quotes around random hex."""
    rng = random.Random(seed)
    return ("id,name,v\n" + "".join(
        f'{i},"{rng.getrandbits(96):024x}\n{rng.getrandbits(64):x}, ""q""",{i * 0.5}\n'
        for i in range(rows))).encode()


@pytest.mark.parametrize("kind", ["bz2", "xz"])
def test_bz2_and_xz_input_streams_like_peers(sluice, tmp_path, kind):
    """.csv.bz2 and .csv.xz written by Python's bz2 and lzma modules, one
    stream or several back to back (cut anywhere, inside quoted fields; xz
    with stream padding between and after), 13 MB of text in 5 MB and more
    compressed (several of the inflating source's 4 MiB reads and chunks):
    sluice reads the values pyarrow reads (the .bz2 file itself, which
    pyarrow inflates by its extension; the xz text, as this pyarrow has no
    lzma), by suffix and by magic bytes alone, from a file and from a pipe.
    They were read as plain text ('quote character inside an unquoted
    field', a header that is not UTF-8)."""
    data = _hex_rows(200_000, 11)
    assert len(data) > 12 << 20
    parse = pcsv.ParseOptions(newlines_in_values=True)
    want = pcsv.read_csv(pa.py_buffer(data), parse_options=parse)
    single = tmp_path / f"one.csv.{kind}"
    single.write_bytes(_compress(kind, data))
    assert single.stat().st_size > 4 << 20
    cuts = [0, 1, 1_234_567, 5_000_001, len(data)]
    pad = b"\0" * 4 if kind == "xz" else b""
    multi = tmp_path / f"multi.csv.{kind}"
    multi.write_bytes(b"".join(_compress(kind, data[a:b]) + pad
                               for a, b in zip(cuts, cuts[1:])))
    if kind == "bz2":
        assert _decompress(kind, multi.read_bytes()) == data
    elif shutil.which("xz"):  # Python's lzma stops at stream padding
        assert subprocess.run(["xz", "-dc", str(multi)], check=True,
                              stdout=subprocess.PIPE).stdout == data
    if kind == "bz2":
        for path in (single, multi):
            assert pcsv.read_csv(path, parse_options=parse).equals(want)
    for path in (single, multi):
        assert sluice_read(sluice, path).equals(want), path.name
        assert sluice_read(sluice, path, threads=1).equals(want), path.name
    # No suffix: the magic bytes tell.
    unnamed = tmp_path / "unnamed.csv"
    unnamed.write_bytes(multi.read_bytes())
    assert sluice_read(sluice, unnamed).equals(want)
    # A pipe: read forward, never mapped.
    out = tmp_path / "pipe.arrow"
    proc = subprocess.run([sluice.binary, "convert", "-", str(out), "-f", "csv", "-q"],
                          input=multi.read_bytes(), capture_output=True, timeout=120)
    assert proc.returncode == 0, proc.stderr.decode(errors="replace")
    with ipc.open_file(out) as f:
        assert f.read_all().equals(want)


@pytest.mark.parametrize("kind", ["bz2", "xz"])
def test_bad_bz2_and_xz_input_is_a_clear_error(sluice, tmp_path, kind):
    """Truncated, corrupt and trailing bytes: exit 1 with a message that
    names the file, what is wrong and the compressed byte offset; no crash
    and no output."""
    name = "bzip2" if kind == "bz2" else "xz"
    data = _hex_rows(40_000, 5)
    raw = _compress(kind, data)
    out = tmp_path / "out.arrow"

    def error(payload: bytes, label: str) -> str:
        path = tmp_path / f"{label}.csv.{kind}"
        path.write_bytes(payload)
        err = sluice.expect_error("convert", path, out).stderr.decode()
        assert not out.exists(), label
        assert str(path) in err, err
        return err

    err = error(raw[:len(raw) * 2 // 3], "truncated")
    assert f"truncated {name} data near compressed byte" in err, err
    err = error(raw[:-1], "short")
    assert f"truncated {name} data near compressed byte" in err, err
    corrupt = bytearray(raw)
    for at in range(len(raw) // 2, len(raw) // 2 + 64):
        corrupt[at] ^= 0x55
    err = error(bytes(corrupt), "corrupt")
    assert f"corrupt {name} data near compressed byte" in err, err
    err = error(raw + b"garbage!", "trailing")
    assert f"bytes after the last {name} stream near compressed byte {len(raw)}" in err, err
    assert "trailing garbage" in err, err
    if kind == "xz":  # stream padding is whole 4-byte words
        err = error(raw + b"\0\0", "padding")
        assert "corrupt xz data near compressed byte" in err, err
        assert "padding is not a multiple of four bytes" in err, err


@pytest.mark.parametrize("kind", ["bz2", "xz"])
def test_bz2_and_xz_input_in_bounded_memory(sluice, tmp_path, kind):
    """120 MB of text inflated as it is read: the peak stays far below it."""
    import bz2
    import lzma
    path = tmp_path / f"big.csv.{kind}"
    block = "".join(f"{i},abcdefghij,{i}.5\n" for i in range(100_000)).encode()
    c = bz2.BZ2Compressor(1) if kind == "bz2" else lzma.LZMACompressor(preset=0)
    with open(path, "wb") as f:
        f.write(c.compress(b"a,b,c\n"))
        for _ in range(60):
            f.write(c.compress(block))
        f.write(c.flush())
    _counts_in_bounded_memory(sluice, path, 6_000_000, 80)  # the inflated text is 120 MB


def test_bz2_and_xz_output_reads_back_in_peers(sluice, tmp_path):
    """x.csv.bz2 and x.csv.xz (and --compression bz2|bzip2|xz under any
    name) are compressed whole: pandas reads them back to what it reads
    from the plain output, pyarrow the .bz2 one, Python's bz2 and lzma
    inflate them to the plain bytes, and sluice reads them back. A .csv.bz2
    name found no writer and `-t csv x.csv.bz2` wrote plain text; a
    compressed name sluice cannot write (.lz4) is an error now."""
    import bz2
    import lzma
    pd = pytest.importorskip("pandas")
    table, src, plain = _quoted_lines_source(sluice, tmp_path)
    frame = pd.read_csv(plain)
    for name, compression, magic, inflate in [
            ("out.csv.bz2", None, b"BZh9", bz2.decompress),
            ("out.csv.xz", None, b"\xfd7zXZ\x00", lzma.decompress),
            ("bz2.csv", "bz2", b"BZh9", bz2.decompress),
            ("bzip2.csv", "bzip2", b"BZh9", bz2.decompress),
            ("xz.csv", "xz", b"\xfd7zXZ\x00", lzma.decompress)]:
        out = tmp_path / name
        sluice.run("convert", src, out, "-q",
                   *(["--compression", compression] if compression else []))
        raw = out.read_bytes()
        assert raw.startswith(magic), name
        assert inflate(raw) == plain.read_bytes(), name
        pandas_kind = {"bzip2": "bz2"}.get(compression, compression) or "infer"
        assert pd.read_csv(out, compression=pandas_kind).equals(frame), name
        assert sluice_read(sluice, out).equals(sluice_read(sluice, plain)), name
    got = pcsv.read_csv(tmp_path / "out.csv.bz2",
                        parse_options=pcsv.ParseOptions(newlines_in_values=True))
    assert got.equals(pcsv.read_csv(plain, parse_options=pcsv.ParseOptions(
        newlines_in_values=True)))
    # JSON Lines is compressed whole too.
    sluice.run("convert", src, tmp_path / "plain.jsonl", "-q")
    sluice.run("convert", src, tmp_path / "out.jsonl.xz", "-q")
    assert lzma.decompress((tmp_path / "out.jsonl.xz").read_bytes()) == \
        (tmp_path / "plain.jsonl").read_bytes()
    assert pd.read_json(tmp_path / "out.jsonl.xz", lines=True).equals(
        pd.read_json(tmp_path / "plain.jsonl", lines=True))
    # A compressed name sluice does not write is never written plain.
    # (.zip and the rest were: pandas then failed with BadZipFile.)
    for name in ("x.csv.lz4", "x.csv.snappy", "x.csv.zip", "x.csv.br", "x.csv.Z", "x.csv.lz",
                 "x.csv.lzma", "x.jsonl.7z"):
        proc = sluice.expect_error("convert", src, tmp_path / name, "-t", name.split(".")[1])
        assert b"compresses whole files with gzip, zstd, bzip2 or xz" in proc.stderr, name
        assert not (tmp_path / name).exists(), name
    # Read: an archive or a compression sluice does not read is named as such
    # (a zip was read as text: "the header's column 0 ... is not UTF-8").
    import zipfile
    with zipfile.ZipFile(tmp_path / "z.csv.zip", "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("z.csv", plain.read_text())
    assert pd.read_csv(tmp_path / "z.csv.zip").equals(pd.read_csv(plain))  # pandas reads zips
    # x.csv.zip is no CSV by its name (nor x.csv.tar: the suffix is not looked
    # through, so a tar's bytes never reach the CSV parser)
    proc = sluice.expect_error("cat", tmp_path / "z.csv.zip")
    assert b"cannot tell the format" in proc.stderr, proc.stderr
    (tmp_path / "z.csv").write_bytes((tmp_path / "z.csv.zip").read_bytes())
    for args in (["-f", "csv", tmp_path / "z.csv.zip"], [tmp_path / "z.csv"]):
        proc = sluice.expect_error("cat", *args)
        assert b"zip-compressed, which sluice does not read" in proc.stderr, proc.stderr
    # A text that starts like lzip's magic is text.
    (tmp_path / "lz.csv").write_text("LZIPCODE,city\n1,x\n")
    assert b"LZIPCODE" in sluice.run("cat", tmp_path / "lz.csv", "-t", "csv").stdout


# ---- quotes where RFC 4180 has none ------------------------------------------------


@pytest.mark.parametrize("strays", [1, 2])
@pytest.mark.parametrize("how", ["serial", "parallel", "gzip"])
def test_stray_quotes_are_errors_at_their_byte(sluice, tmp_path, strays, how):
    """A quote inside an unquoted field (5" screen) is read as text by
    pyarrow; every quote toggles quoting in sluice's split planning, so it
    is an error naming the quote's line and byte, wherever splits fall. Two
    of them rows apart used to merge those rows into one field silently."""
    import gzip
    rows = 400_000
    lines = [f"{i},{i * 0.5},item{i}\n" for i in range(rows)]
    at = [rows * 3 // 4, rows * 3 // 4 + 1000][:strays]
    for i in at:
        lines[i] = f'{i},{i * 0.5},5" screen {i}\n'
    text = "a,b,c\n" + "".join(lines)
    path = tmp_path / "stray.csv"
    path.write_text(text)
    first = text.index('"')
    line = text.count("\n", 0, first) + 1
    want = pcsv.read_csv(path)  # the peer reads the quote as text
    assert want.column("c")[at[0]].as_py() == f'5" screen {at[0]}'
    if how == "gzip":
        path = tmp_path / "stray.csv.gz"
        path.write_bytes(gzip.compress(text.encode(), compresslevel=1))
    args = ["convert", path, tmp_path / "out.arrow", "-q", "--threads",
            "1" if how == "serial" else "2"]
    proc = subprocess.run([sluice.binary, *map(str, args)], stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, timeout=120)
    check_clean_failure(proc)
    err = proc.stderr.decode()
    assert f"line {line} (byte {first}): quote character inside an unquoted field" in err, err
    assert not (tmp_path / "out.arrow").exists()
    # -O stray_quotes=text reads them as text, as pyarrow does.
    got = sluice_read(sluice, path, "stray_quotes=text", threads=1 if how == "serial" else 2)
    assert got.equals(want)


@pytest.mark.parametrize("seed", range(4))
def test_stray_quotes_as_text_match_pyarrow(sluice, tmp_path, seed):
    """Random fields mixing stray quotes, quoted fields (doubled quotes,
    delimiters, line feeds, text after the closing quote), CRLF and empty
    fields: read with stray_quotes=text, the values pyarrow reads."""
    rng = random.Random(seed)
    pieces = ["a", "b", "5\"", "x\"y", "", "z\"\"", " ", "1"]

    def field():
        roll = rng.random()
        if roll < 0.5:
            return "".join(rng.choice(pieces) for _ in range(rng.randrange(3))).lstrip('"')
        inner = "".join(rng.choice(["q", ",", "\n", '""', "w"]) for _ in range(rng.randrange(5)))
        tail = rng.choice(["", "", "t", 't"u'])
        return f'"{inner}"{tail}'

    eol = "\r\n" if seed % 2 else "\n"
    lines = ["c0,c1,c2"] + [",".join(field() for _ in range(3)) for _ in range(3000)]
    path = tmp_path / "q.csv"
    path.write_text(eol.join(lines) + eol)
    schema = "schema=c0:string|c1:string|c2:string"
    want = pcsv.read_csv(path, convert_options=pcsv.ConvertOptions(
        column_types={c: pa.string() for c in ("c0", "c1", "c2")}, strings_can_be_null=True,
        null_values=[""], quoted_strings_can_be_null=False))
    for threads in (1, 2):
        got = sluice_read(sluice, path, "stray_quotes=text", schema, "null_values=",
                          threads=threads)
        assert got.to_pydict() == want.to_pydict()


# ---- lines ending in a bare CR (classic Mac OS) -----------------------------------

def cr_file(rng: random.Random, rows: int, header: bool, trailing_cr: bool) -> bytes:
    """Lines that end in a bare CR: ints, floats, nulls, empty lines, and
    quoted values holding line feeds, delimiters and doubled quotes."""
    lines = ["id,x,s,t"] if header else []
    strings = ["plain", "", "x y", '"q\nline"', '"a,b"', '"say ""hi"""', '"\n"',
               '"multi\nline,\nvalue"', '"\n\n"', "NA", "z"]
    for i in range(rows):
        if rng.random() < 0.05:
            lines.append("")  # an empty line: skipped by both
        x = rng.choice(["", "NA", f"{rng.uniform(-1e6, 1e6):.6g}", str(rng.randint(-5, 5))])
        t = rng.choice(["a", "b", "", "NULL", str(i)])
        lines.append(f"{i},{x},{rng.choice(strings)},{t}")
    return ("\r".join(lines) + ("\r" if trailing_cr else "")).encode()


def pyarrow_cr_read(path: Path, header: bool) -> pa.Table:
    return pcsv.read_csv(
        path,
        read_options=pcsv.ReadOptions(autogenerate_column_names=not header),
        parse_options=pcsv.ParseOptions(newlines_in_values=True),
        convert_options=pcsv.ConvertOptions(null_values=["", "NA", "NULL", "null"],
                                            strings_can_be_null=True))


def assert_same_values(got: pa.Table, want: pa.Table, what) -> None:
    assert got.column_names == want.column_names, what
    assert got.num_rows == want.num_rows, what
    for name in want.column_names:
        assert got.column(name).type == want.column(name).type, (what, name)
        assert got.column(name).to_pylist() == want.column(name).to_pylist(), (what, name)


@pytest.mark.parametrize("header", [True, False])
@pytest.mark.parametrize("trailing_cr", [True, False])
def test_bare_cr_lines_match_pyarrow(sluice, tmp_path, header, trailing_cr):
    """Lines ending in a bare CR read as pyarrow.csv reads them, whole and in
    small splits on two threads (a split's rows start after a CR)."""
    rng = random.Random(11 + 2 * header + trailing_cr)
    data = cr_file(rng, 5000, header, trailing_cr)
    assert b"\r" in data and b"\n" in data  # line feeds only inside quotes
    path = tmp_path / "mac.csv"
    path.write_bytes(data)
    want = pyarrow_cr_read(path, header)
    assert want.num_rows == 5000
    hdr = "header=true" if header else "header=false"
    for options in ([hdr], [hdr, "split_size=4k"], [hdr, "split_size=4k", "simd=scalar"]):
        got = sluice_read(sluice, path, *options, threads=2)
        assert_same_values(got, want, options)


def test_bare_cr_lines_numeric_fused_path(sluice, tmp_path):
    """All-numeric columns take the fused numeric path, which knows only LF
    and CRLF line ends."""
    rng = random.Random(5)
    lines = ["a,b,c"] + [f"{rng.randint(-10**9, 10**9)},{rng.uniform(-1, 1)!r},{i}"
                         for i in range(20000)]
    path = tmp_path / "num.csv"
    path.write_bytes("\r".join(lines).encode())
    want = pyarrow_cr_read(path, True)
    for options in ([], ["split_size=8k"]):
        assert_same_values(sluice_read(sluice, path, *options, threads=2), want, options)


def test_bare_cr_lines_from_gzip_and_a_pipe(sluice, tmp_path):
    """Compressed input and standard input larger than the stream sample
    (which would be read through a window) read the same as the file."""
    import gzip
    rng = random.Random(7)
    data = cr_file(rng, 60000, True, True)
    assert len(data) > (1 << 20) + (64 << 10)
    path = tmp_path / "mac.csv"
    path.write_bytes(data)
    want = pyarrow_cr_read(path, True)
    gz = tmp_path / "mac.csv.gz"
    gz.write_bytes(gzip.compress(data))
    assert_same_values(sluice_read(sluice, gz, threads=2), want, "gzip")
    out = tmp_path / "pipe.arrow"
    proc = subprocess.run([sluice.binary, "convert", "-", str(out), "-f", "csv", "-q"],
                          input=data, capture_output=True, timeout=120)
    assert proc.returncode == 0, proc.stderr.decode(errors="replace")
    with ipc.open_file(out) as f:
        assert_same_values(f.read_all(), want, "pipe")


def test_bare_cr_lines_through_the_python_package(tmp_path):
    sluice_py = pytest.importorskip("sluice")
    path = tmp_path / "mac.csv"
    path.write_bytes(b'a,b\r1,"x\ry"\r2,\r\r3,"p\nq"')
    got = sluice_py.read(str(path))
    got = pa.table(got) if not isinstance(got, pa.Table) else got
    assert got.to_pylist() == pyarrow_cr_read(path, True).to_pylist() == [
        {"a": 1, "b": "x\ry"}, {"a": 2, "b": None}, {"a": 3, "b": "p\nq"}]


def test_bare_cr_errors_name_the_line(sluice, tmp_path):
    path = tmp_path / "bad.csv"
    path.write_bytes(b"a,b\r1,2\r3,4,5\r6,7\r")
    proc = sluice.expect_error("cat", path)
    assert "line 3 (byte 8)" in proc.stderr.decode()


def test_crlf_and_mixed_line_ends_are_unchanged(sluice, tmp_path):
    """LF, CRLF and mixed files are not rewritten: a CR inside a line of such
    a file stays data, as before."""
    path = tmp_path / "mixed.csv"
    path.write_bytes(b"a,b\r\n1,x\n2,y\r\n3,p\rq\n")
    got = sluice_read(sluice, path)
    assert got.to_pylist() == [{"a": 1, "b": "x"}, {"a": 2, "b": "y"}, {"a": 3, "b": "p\rq"}]


@pytest.mark.parametrize("data,options", [
    # A comment line before the header holding an odd number of quotes.
    (b'#it\'s "x\ra,b\r1,2\r3,4\r', ["comment=#"]),
    # A stray quote in the header with stray_quotes=text.
    (b'a"b,c\r1,2\r3,4\r', ["stray_quotes=text"]),
])
def test_bare_cr_lines_found_past_comment_and_stray_quotes(sluice, tmp_path, data, options):
    """The head is read as the rewrite reads it: a quote in a comment line, or
    a stray quote read as text, does not hide the line ends (which made the
    whole file one line: no rows, or made-up columns holding CRs)."""
    path = tmp_path / "mac.csv"
    path.write_bytes(data)
    lf = tmp_path / "unix.csv"
    lf.write_bytes(data.replace(b"\r", b"\n"))
    got = sluice_read(sluice, path, *options)
    assert got.num_rows == 2
    assert got.to_pylist() == sluice_read(sluice, lf, *options).to_pylist()


@pytest.mark.parametrize("line_end", [b"\r", b"\n", b"\r\n"])
def test_first_line_longer_than_the_head(sluice, tmp_path, line_end):
    """A first line of over a MiB (a long quoted value holding CRs, or a
    header of many columns): the first line end, wherever it is, decides
    how lines end (it used to be garbage: one row of made-up columns)."""
    pcsv = pytest.importorskip("pyarrow.csv")
    value = b'"' + b"x\r" * 700_000 + b'"'
    names = b",".join(b"c%d" % i for i in range(150_000))
    cases = {
        "value": value + b",1" + line_end + b"2,3" + line_end,
        "header": names + line_end + b",".join(b"%d" % i for i in range(150_000)) + line_end,
    }
    if line_end != b"\r":
        del cases["header"]  # (slow: 150,000 columns; LF files read it as before)
    for name, data in cases.items():
        path = tmp_path / f"{name}.csv"
        path.write_bytes(data)
        options = ("header=false",) if name == "value" else ()
        read = pcsv.ReadOptions(autogenerate_column_names=name == "value", block_size=16 << 20)
        want = pcsv.read_csv(path, read_options=read,
                             parse_options=pcsv.ParseOptions(newlines_in_values=True))
        # (the header is past the sample: a data row is still sampled to type
        # by, as pyarrow types it; it gave strings)
        for threads in (1, 2):
            got = sluice_read(sluice, path, *options, threads=threads)
            assert got.column_names == want.column_names, (name, threads)
            assert got.to_pylist() == want.to_pylist(), (name, threads)


def test_header_ending_in_a_delimiter(sluice, tmp_path):
    """"a,b," over rows that leave the third field empty: rows end in a
    delimiter (two columns). When a sampled row has a value there, it is a
    column, as pyarrow reads it; past the sample, the error says why and
    infer_bytes=all reads it (it once kept the first MiB's decision)."""
    path = tmp_path / "trail.csv"
    path.write_text("a,b,\n1,2,\n3,4,\n")
    got = sluice_read(sluice, path)
    assert got.column_names == ["a", "b"] and got.column("b").to_pylist() == [2, 4]
    rows = ["%d,%d,\n" % (i, i) for i in range(400_000)]
    rows[-1] = "7,8,9\n"  # past the first MiB, in the sample's last stretch
    path.write_text("a,b,\n" + "".join(rows))
    got = sluice_read(sluice, path)
    want = pcsv.read_csv(path)
    assert got.schema == want.schema and got.equals(want)
    rows[-1], rows[250_000] = "1,1,\n", "7,8,9\n"  # in no sampled stretch
    path.write_text("a,b,\n" + "".join(rows))
    err = sluice.expect_error("cat", path).stderr.decode()
    assert "line 250002" in err and "infer_bytes=all" in err, err
    got = sluice_read(sluice, path, "infer_bytes=all")
    assert got.equals(pcsv.read_csv(path))


@pytest.mark.parametrize("option", ["escape=,", "quote=,"])
def test_sniffed_delimiter_is_never_the_quote_or_escape(sluice, tmp_path, option):
    """The sniffer takes no delimiter that is the quote or escape character,
    also when none fits (one column): the first candidate that is neither
    (',' as the escape once became the delimiter too, reading 1,true,x as one
    column). A given one that collides is an error."""
    one = tmp_path / "one.csv"
    one.write_text("a\n1\n2\n")
    assert sluice_read(sluice, one, option).column("a").to_pylist() == [1, 2]
    semi = tmp_path / "semi.csv"
    semi.write_text("a;b\n1;x\n")
    assert sluice_read(sluice, semi, option).column_names == ["a", "b"]
    given = sluice.expect_error("cat", "-O", option, "-O", "delimiter=,", one)
    assert "delimiter equals the quote/escape character" in given.stderr.decode()
    # Rows that split at ',' as at a delimiter, ',' being the escape or
    # quote: an error, not one column of mangled rows ("1truex").
    commas = tmp_path / "commas.csv"
    commas.write_text("a,b,c\n1,true,x\n2,false,y\n")
    err = sluice.expect_error("cat", "-O", option, commas).stderr.decode()
    assert "the rows split at ',' as at a delimiter, but it is the" in err, err


@pytest.mark.parametrize("text, rows", [
    # apostrophes in text, at field ends on different lines: not quotes
    ("title,year\n'90s hits,1999\nthe students',2000\nbob,3\n",
     [["'90s hits", 1999], ["the students'", 2000], ["bob", 3]]),
    ("name,n\n'hello',1\nx,2\n", [["'hello'", 1], ["x", 2]]),
    ("name,n\nit's,1\n'a',2\n", [["it's", 1], ["'a'", 2]]),
    # a field quoted with ' on one line holding the delimiter: the quote
    ("a,b\n'x,y',1\n'z',2\n'it''s',3\n", [["x,y", 1], ["z", 2], ["it's", 3]]),
    # a quoted line break that only ' as the quote makes rows of
    ("a,b\n'x\ny',1\n'z',2\n", [["x\ny", 1], ["z", 2]]),
    # the same with lines that end in a bare CR (told before they become LF)
    ("a,b\r'x\ry',1\r'z',2\r", [["x\ry", 1], ["z", 2]]),
])
def test_sniffed_quote_takes_apostrophes_only_where_they_quote(sluice, tmp_path, text, rows):
    """' is sniffed as the quote only when the sample reads consistently
    with it and it matters: a one-line field quoted with it holds a
    delimiter ('x,y' is one field), or only it makes even rows of lines
    broken inside a field. Otherwise apostrophes stay text, as pyarrow and polars
    read them (a wrongly sniffed ' merged two rows into one field)."""
    path = tmp_path / "apostrophes.csv"
    path.write_text(text)
    got = sluice_read(sluice, path)
    assert [list(r.values()) for r in got.to_pylist()] == rows
    if not any(isinstance(v, str) and ("," in v or "\n" in v or "\r" in v)
               for r in rows for v in r):
        assert got.equals(pcsv.read_csv(path))  # (pyarrow takes no ' as the quote)


def test_texts_starting_with_an_apostrophe_round_trip(sluice, tmp_path):
    """The writer quotes a text that starts with ', so that the file holds
    a '"' and no reader that sniffs the quote takes ' for it: these values
    come back from sluice, pyarrow and DuckDB as written."""
    table = pa.table({"a": ["'a", "x'", "'90s hits", "the students'", "it's"],
                      "b": ["b'", "y", "z", "w", "'q'"]})
    out = arrow_to_csv(sluice, table, tmp_path, "apostrophes")
    assert sluice_read(sluice, out).equals(table)
    assert pcsv.read_csv(out).equals(table)
    duckdb = pytest.importorskip("duckdb")
    assert duckdb.sql(f"SELECT * FROM '{out}'").fetchall() == \
        [tuple(r.values()) for r in table.to_pylist()]


def test_float32_schema_rounds_the_text_once(sluice, tmp_path):
    """A float32 column parses each text straight to the nearest float, as
    pyarrow (fast_float) does: through a double first, texts just off a
    midpoint between two floats rounded the wrong way, and one just under
    the largest float's upper midpoint became inf."""
    import numpy as np
    rng = random.Random(7)
    texts = []
    bits = [rng.getrandbits(31) & 0x7f7fffff for _ in range(300)] + [0x7f7ffffe, 0x00000001]
    for b in bits:
        lo = np.frombuffer(struct.pack("<I", b), np.float32)[0]
        hi = np.nextafter(lo, np.float32(np.inf), dtype=np.float32)
        mid = (decimal.Decimal(float(lo)) + decimal.Decimal(float(hi))) / 2 \
            if np.isfinite(hi) else decimal.Decimal(2) ** 128 - decimal.Decimal(2) ** 103
        tiny = mid.scaleb(-30)
        for v in (mid, mid + tiny, mid - tiny):
            texts.append(format(v, "e").replace("E", "e"))
    path = tmp_path / "f32.csv"
    path.write_text("a\n" + "\n".join(texts) + "\n")
    got = sluice_read(sluice, path, "schema=a:float32")
    want = pcsv.read_csv(path, convert_options=pcsv.ConvertOptions(
        column_types={"a": pa.float32()}))
    assert got.column("a").type == pa.float32()
    assert got.equals(want)


def test_header_sniffing_with_0_and_1_in_a_bool_column(sluice, tmp_path):
    """0 and 1 count as bools in inference, so they fit a bool column when
    the first row is tested for being a header: a first row of x,1,1.5 is
    data, not column names (it once cost the file that row)."""
    path = tmp_path / "bools.csv"
    path.write_text("x,1,1.5\ny,true,2.5\nz,false,3.5\nw,0,4.5\n")
    got = sluice_read(sluice, path)
    assert got.column_names == ["f0", "f1", "f2"] and got.num_rows == 4
    assert got.column("f1").to_pylist() == [True, True, False, False]
    want = pcsv.read_csv(path, read_options=pcsv.ReadOptions(autogenerate_column_names=True))
    assert got.column("f1").to_pylist() == want.column("f1").to_pylist()
    # A header 0,1,2 over true/false columns (pandas' default labels) is a
    # header still: 0 and 1 fit a bool column only when its rows hold them.
    pdbool = tmp_path / "pdbool.csv"
    pdbool.write_text("0,1,2\nTrue,False,x\nFalse,True,y\n")
    got = sluice_read(sluice, pdbool)
    assert got.column_names == ["0", "1", "2"] and got.num_rows == 2
    assert got.column("1").to_pylist() == pcsv.read_csv(pdbool).column("1").to_pylist()


# ---- names that say compressed --------------------------------------------------


def _compress(kind: str, data: bytes) -> bytes:
    import bz2
    import gzip
    import lzma
    if kind == "zst":
        zstandard = pytest.importorskip("zstandard")
        return zstandard.ZstdCompressor().compress(data)
    return {"gz": gzip.compress, "bz2": bz2.compress, "xz": lzma.compress}[kind](data)


def test_tsv_names_read_with_tabs_compressed_too(sluice, tmp_path):
    """x.tsv is read with tab as its delimiter (not sniffed), and so are
    x.tsv.gz, .zst, .bz2, .xz and X.TSV.GZ: the compressed copies were
    sniffed, and rows like `1,1<TAB>1` split at the comma, so the same bytes
    gave another table. pyarrow with delimiter tab reads them all as sluice
    reads the plain one."""
    data = ("a,b\tc\n" + "".join(f"{i},{i}\t{i}\n" for i in range(50))).encode()
    plain = tmp_path / "amb.tsv"
    plain.write_bytes(data)
    want = sluice_read(sluice, plain)
    assert want.column_names == ["a,b", "c"]
    assert want.equals(pcsv.read_csv(plain, parse_options=pcsv.ParseOptions(delimiter="\t")))
    for kind in ("gz", "zst", "bz2", "xz"):
        for name in (f"amb.tsv.{kind}", f"AMB.TSV.{kind.upper()}"):
            path = tmp_path / name
            path.write_bytes(_compress(kind, data))
            assert sluice_read(sluice, path).equals(want), name
    # A delimiter given is taken over the name's.
    comma = sluice_read(sluice, tmp_path / "amb.tsv.gz", "delimiter=comma")
    assert comma.column_names == ["a", "b\tc"]


@pytest.mark.parametrize("kind", ["gz", "zst", "bz2", "xz"])
def test_named_compressed_with_cut_or_damaged_magic(sluice, tmp_path, kind):
    """An object named compressed that ends within that compression's magic
    (a .csv.bz2 cut to 6 bytes, a .csv.gz to 1) is "truncated" data, as
    pyarrow ("Truncated compressed stream"), gzip -t and bzip2 -t say: it
    was read as text, 0 rows under a header such as "BZh91A", exit 0. One
    whose first bytes are binary but not the magic (a damaged header) is
    "named .gz but not gzip data", which pyarrow refuses too: it was a CSV
    parse error about the compressed bytes. Plain text under such a name is
    still read as it is (a misnamed file, or a body its server decoded)."""
    name = {"gz": "gzip", "zst": "zstd", "bz2": "bzip2", "xz": "xz"}[kind]
    magic_size = {"gz": 2, "zst": 4, "bz2": 10, "xz": 6}[kind]
    raw = _compress(kind, b"a,b\n1,2\n")
    out = tmp_path / "out.arrow"
    for n in range(1, magic_size):
        path = tmp_path / f"cut{n}.csv.{kind}"
        path.write_bytes(raw[:n])
        err = sluice.expect_error("convert", path, out).stderr.decode()
        assert f"{path}: truncated {name} data: the object ends after {n} bytes" in err, err
        assert not out.exists()
        with pytest.raises(Exception):
            pcsv.read_csv(path)
    damaged = bytearray(raw)
    damaged[magic_size - 1] ^= 0x04  # the magic's last byte
    path = tmp_path / f"damaged.csv.{kind}"
    path.write_bytes(bytes(damaged))
    err = sluice.expect_error("convert", path, out).stderr.decode()
    assert f"{path}: named .{kind} but not {name} data" in err, err
    with pytest.raises(Exception):
        pcsv.read_csv(path)
    # Plain text under the name: read as it is.
    for text in (b"a,b\n1,2\n", b"BZh,x\n1,2\n", b"(,x\n1,2\n"):
        path = tmp_path / f"plain.csv.{kind}"
        path.write_bytes(text)
        (tmp_path / "plain.csv").write_bytes(text)
        assert sluice_read(sluice, path).equals(sluice_read(sluice, tmp_path / "plain.csv"))


def test_gzip_zero_padding_is_refused_as_peers_refuse_it(sluice, tmp_path):
    """Zero bytes after the last gzip member (tar pads so) are refused as
    trailing garbage, as pyarrow refuses them (and polars and DuckDB); the
    message says they are zero padding. gzip(1) and Python's gzip skip
    them."""
    import gzip
    path = tmp_path / "zp.csv.gz"
    body = gzip.compress(b"a,b\n1,2\n")
    path.write_bytes(body + b"\0" * 512)
    assert gzip.decompress(path.read_bytes()) == b"a,b\n1,2\n"
    with pytest.raises(Exception):
        pcsv.read_csv(path)
    err = sluice.expect_error("convert", path, tmp_path / "o.arrow").stderr.decode()
    assert f"after the last gzip member near compressed byte {len(body)}" in err, err
    assert "trailing garbage: zero padding is not read" in err, err


def test_tar_archive_names_are_not_written(sluice, tmp_path):
    """-t csv x.tar.gz (or .tgz, .tar.zst, .tbz2, .txz) is refused, as .tar
    is: it wrote a gzipped CSV, which is no tar, so pandas (which opens
    such a name as a tar archive) failed on it and sluice could not tell
    its format by name."""
    src = tmp_path / "s.csv"
    src.write_text("a,b\n1,x\n")
    for name in ("x.tar.gz", "x.TAR.GZ", "x.tgz", "x.tar.zst", "x.tar.bz2", "x.tbz2", "x.txz",
                 "x.tar.xz", "x.tar"):
        proc = sluice.expect_error("convert", src, tmp_path / name, "-t", "csv")
        err = proc.stderr.decode()
        suffix = name[1:]
        assert f"compresses whole files with gzip, zstd, bzip2 or xz (.gz, .zst, .bz2, .xz), " \
            f"not {suffix}" in err, err
        assert not (tmp_path / name).exists(), name
        proc = sluice.run_raw("cat", src, "-o", tmp_path / name, "-t", "table")  # (usage: 2)
        assert proc.returncode == 2 and b"the text table is written uncompressed" in proc.stderr
        assert not (tmp_path / name).exists(), name
    # A name that only ends like one is written: x.star.gz is a gzipped CSV.
    import gzip
    sluice.run("convert", src, tmp_path / "x.star.gz", "-t", "csv", "-q")
    assert gzip.decompress((tmp_path / "x.star.gz").read_bytes()) == src.read_bytes()


def test_a_backslash_escaped_quote_suggests_escape_backslash(sluice, tmp_path):
    """A quote after a backslash ("x\\"y", pandas' escapechar) is not RFC
    4180: the error says escape=backslash (it suggested only stray_quotes=
    and other dialects), and with it the values are pyarrow's with
    escape_char='\\\\'."""
    import pyarrow.csv as pacsv
    path = tmp_path / "esc.csv"
    path.write_bytes(b'a,b\n"x\\"y",2\n"plain",3\n')
    for src in (path, "-"):
        proc = sluice.run_raw("cat", src, "-t", "csv") if src != "-" else subprocess.run(
            [sluice.binary, "cat", "-", "-t", "csv"], input=path.read_bytes(),
            capture_output=True, timeout=60)
        err = proc.stderr.decode()
        assert proc.returncode != 0 and "line 2 (byte 7)" in err, err
        assert "follows a backslash" in err and "escape=backslash" in err, err
    got = sluice.run("cat", path, "-t", "jsonl", "-O", "escape=backslash").stdout.decode()
    want = pacsv.read_csv(path, parse_options=pacsv.ParseOptions(escape_char="\\"))
    assert [json.loads(line) for line in got.splitlines()] == want.to_pylist()
