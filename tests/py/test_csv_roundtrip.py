"""CSV writer round trips: `sluice convert x.arrow y.csv` then `sluice convert
y.csv z.arrow` gives back the same values (int64, tricky float64 values,
strings with quotes/commas/newlines, bools, dates, timestamps, nulls), under
every writer option (-W); files written by sluice read by pyarrow.csv, DuckDB
and polars with equal values; a million random finite doubles bit-exact.

Readers need settings to tell the empty string from null, which sluice
writes as "" and as nothing: pyarrow `strings_can_be_null=True,
quoted_strings_can_be_null=False`, DuckDB `allow_quoted_nulls=false` (polars
does by default).

Needs SLUICE_BIN; DuckDB and polars checks are skipped when not installed.
"""

from __future__ import annotations

import datetime as dt
import math
import struct
from pathlib import Path

import pytest

pa = pytest.importorskip("pyarrow")
ipc = pytest.importorskip("pyarrow.ipc")
pcsv = pytest.importorskip("pyarrow.csv")
np = pytest.importorskip("numpy")

from conftest import MEASURES_RSS, arrow_to_csv  # noqa: E402

UTC = dt.timezone.utc

TRICKY_DOUBLES = [
    0.1, 1e-310, 1.7976931348623157e308, -0.0, 0.0, 5e-324, 2.2250738585072014e-308,
    -1.5, 1 / 3, 123456789.125, 1e22, 9007199254740993.0, 0.30000000000000004, 100.0,
    -2.5e-300, None,
]
N = len(TRICKY_DOUBLES)

STRINGS = [
    'he said "hi"', "a,b", "line\nbreak", "cr\r\nlf", "", None, "  spaced  ", "é ünïcødé ✓",
    '"', ",", "'single'", "tab\there", "x" * 1000, "semi;colon", "pipe|bar", "#hash",
]

TIMESTAMPS = [
    dt.datetime(2023, 1, 15, 12, 0, 0, 123456), dt.datetime(1969, 12, 31, 23, 59, 59, 999999),
    dt.datetime(1900, 3, 1), None, dt.datetime(2038, 1, 19, 3, 14, 8), dt.datetime(1970, 1, 1),
    dt.datetime(2000, 2, 29, 0, 0, 0, 1), dt.datetime(1850, 6, 30, 12, 30),
    dt.datetime(2262, 4, 11), dt.datetime(1677, 9, 22), dt.datetime(2024, 3, 31, 1, 59, 59),
    dt.datetime(2024, 3, 31, 3, 0), dt.datetime(2024, 10, 27, 1, 30), None,
    dt.datetime(1999, 12, 31, 23, 59, 59), dt.datetime(2001, 9, 9, 1, 46, 40),
]


def source_table() -> pa.Table:
    """One column per type the reader infers back exactly; no string that
    reads as another type or as a null spelling (NA, NULL, null)."""
    ints = [0, 1, -1, 2**63 - 1, -(2**63), None, 42, -7, 10**18, 3, 4, 5, 6, 7, 8, None]
    bools = [True, False, None, True] * 4
    dates = [dt.date(2023, 1, 15), dt.date(1969, 12, 31), dt.date(1900, 1, 1), None,
             dt.date(2100, 12, 31), dt.date(1970, 1, 1), dt.date(2000, 2, 29),
             dt.date(1583, 1, 1)] * 2
    return pa.table({
        "i64": pa.array(ints, pa.int64()),
        "f64": pa.array(TRICKY_DOUBLES, pa.float64()),
        "s": pa.array(STRINGS, pa.string()),
        "b": pa.array(bools, pa.bool_()),
        "d": pa.array(dates, pa.date32()),
        "ts": pa.array(TIMESTAMPS, pa.timestamp("us")),
        "tsz": pa.array([None if t is None else t.replace(tzinfo=UTC) for t in TIMESTAMPS],
                        pa.timestamp("us", tz="UTC")),
        "tsp": pa.array([None if t is None else t.replace(tzinfo=UTC) for t in TIMESTAMPS],
                        pa.timestamp("us", tz="Europe/Paris")),
        "all nulls but one": pa.array([None] * (N - 1) + ["only"], pa.string()),
    })


def expected_back(table: pa.Table) -> pa.Table:
    """What reading the CSV gives: zoned timestamps come back in UTC (the
    instant is kept, the zone name is not)."""
    fields = []
    for f in table.schema:
        if pa.types.is_timestamp(f.type) and f.type.tz is not None:
            f = f.with_type(pa.timestamp(f.type.unit, tz="UTC"))
        fields.append(f)
    return table.cast(pa.schema(fields))


def write_arrow(table: pa.Table, path: Path) -> Path:
    with ipc.new_file(path, table.schema) as w:
        w.write_table(table, max_chunksize=5)  # several batches
    return path


def read_arrow(path: Path) -> pa.Table:
    return ipc.open_file(path).read_all()


def float_bits(values) -> list:
    return [None if v is None else struct.pack("<d", v) for v in values]


def assert_same_values(got: pa.Table, want: pa.Table, what: str) -> None:
    assert got.num_rows == want.num_rows, what
    assert got.column_names == want.column_names, what
    for name in want.column_names:
        g, w = got.column(name), want.column(name)
        if pa.types.is_floating(w.type):
            assert pa.types.is_floating(g.type), f"{what}: {name}: {g.type}"
            assert float_bits(g.to_pylist()) == float_bits(w.to_pylist()), f"{what}: {name}"
            continue
        if g.type != w.type:
            g = g.cast(w.type)
        assert g.to_pylist() == w.to_pylist(), f"{what}: column {name!r} ({g.type})"


def sluice_csv_round_trip(sluice, tmp_path: Path, table: pa.Table, write_opts=(),
                          read_opts=()) -> tuple[Path, pa.Table]:
    src = write_arrow(table, tmp_path / "x.arrow")
    csv_path = tmp_path / "y.csv"
    args = ["convert", src, csv_path]
    for o in write_opts:
        args += ["-W", o]
    sluice.run(*args)
    back = tmp_path / "z.arrow"
    args = ["convert", csv_path, back]
    for o in read_opts:
        args += ["-O", o]
    sluice.run(*args)
    return csv_path, read_arrow(back)


# ---- sluice -> CSV -> sluice ------------------------------------------------

def test_round_trip_types_and_values(sluice, tmp_path):
    table = source_table()
    _, back = sluice_csv_round_trip(sluice, tmp_path, table)
    want = expected_back(table)
    assert back.schema.names == want.schema.names
    for f_got, f_want in zip(back.schema, want.schema):
        assert f_got.type == f_want.type, f"{f_want.name}: {f_got.type} != {f_want.type}"
    assert_same_values(back, want, "default options")


WRITE_VARIANTS = [
    ([], []),
    (["delimiter=;"], ["delimiter=;"]),
    (["delimiter=tab"], ["delimiter=tab"]),
    (["delimiter=pipe", "quote=squote"], ["delimiter=pipe", "quote=squote"]),
    (["null=NA"], []),
    (["null=NULL", "delimiter=semicolon"], []),
    (["line_terminator=crlf"], []),
    (["float_format=point", "timestamp_format=iso"], []),
    (["delimiter=,", "quote=\"", "header=true"], ["delimiter=comma"]),
]


@pytest.mark.parametrize("write_opts,read_opts", WRITE_VARIANTS,
                         ids=[",".join(w) or "default" for w, _ in WRITE_VARIANTS])
def test_round_trip_write_options(sluice, tmp_path, write_opts, read_opts):
    table = source_table()
    _, back = sluice_csv_round_trip(sluice, tmp_path, table, write_opts, read_opts)
    assert_same_values(back, expected_back(table), " ".join(write_opts))


def test_header_false(sluice, tmp_path):
    table = source_table().select(["i64", "f64", "s", "d"])
    csv_path, back = sluice_csv_round_trip(sluice, tmp_path, table, ["header=false"],
                                           ["header=false"])
    first = csv_path.read_text().split("\n", 1)[0]
    assert first.startswith("0,0.1,"), first
    assert back.num_columns == 4
    assert_same_values(back.rename_columns(table.column_names), table, "header=false")


def test_tsv_name_writes_tab_separated(sluice, tmp_path):
    """`convert x y.tsv` (and y.tsv.gz, y.tsv.zst, compressed whole as
    y.csv.gz is) writes CSV with a tab delimiter, as the reader reads a .tsv
    name (it was "cannot choose an output format"); pyarrow reads it with
    delimiter='\\t' as sluice reads it back. -W delimiter= still wins, -t csv
    to a .tsv name is tab-separated too, and a dataset named out.tsv/ is
    written as part-0.tsv files."""
    import gzip
    table = source_table().select(["i64", "s", "d"])
    src = write_arrow(table, tmp_path / "x.arrow")
    parse = pcsv.ParseOptions(delimiter="\t", newlines_in_values=True)
    convert = pcsv.ConvertOptions(strings_can_be_null=True, quoted_strings_can_be_null=False)
    for name in ("y.tsv", "y.tsv.gz", "y.tsv.zst"):
        out = tmp_path / name
        sluice.run("convert", src, out)
        raw = gzip.decompress(out.read_bytes()) if name.endswith(".gz") else out.read_bytes()
        if not name.endswith(".zst"):
            assert raw.startswith(b"i64\ts\td\n"), raw[:40]
        want = pcsv.read_csv(out, parse_options=parse, convert_options=convert)
        assert_same_values(want, table, name)
        back = tmp_path / "back.arrow"
        sluice.run("convert", out, back)
        assert_same_values(read_arrow(back), table, name)
    out = tmp_path / "semi.tsv"
    sluice.run("convert", src, out, "-W", "delimiter=;")
    assert out.read_text().startswith("i64;s;d\n")
    out = tmp_path / "t.tsv"
    sluice.run("cat", src, "-t", "csv", "-o", out)
    assert out.read_text().startswith("i64\ts\td\n")
    keyed = pa.table({"k": pa.array([1, 2, 1], pa.int64()), "v": pa.array(["a", "b", "c"]),
                      "w": pa.array([7, 8, 9], pa.int64())})
    ds_src = write_arrow(keyed, tmp_path / "k.arrow")
    root = tmp_path / "out.tsv"
    sluice.run("convert", ds_src, root, "--partition-by", "k")
    files = sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file())
    assert files == ["k=1/part-0.tsv", "k=2/part-0.tsv"], files
    assert (root / "k=1/part-0.tsv").read_text() == "v\tw\na\t7\nc\t9\n"
    got = pcsv.read_csv(root / "k=1/part-0.tsv", parse_options=parse)
    assert got.to_pydict() == {"v": ["a", "c"], "w": [7, 9]}


def test_compressed_tsv_directory_name_writes_compressed_tsv_parts(sluice, tmp_path):
    """`convert x p.tsv.gz/ --partition-by k` (and a dataset of
    --max-rows-per-file) writes part-0.tsv.gz files, gzip-compressed and
    tab-separated as `convert x y.tsv.gz` writes one file: they were plain
    comma-separated part-0.csv. pyarrow.csv reads them with the input's
    values."""
    keyed = pa.table({"k": pa.array([1, 2, 1], pa.int64()), "v": pa.array(["a", "b", "c"]),
                      "w": pa.array([7, 8, 9], pa.int64())})
    src = write_arrow(keyed, tmp_path / "k.arrow")
    parse = pcsv.ParseOptions(delimiter="\t")
    for name, codec in (("p.tsv.gz", "gzip"), ("p.tsv.zst", "zstd")):
        root = tmp_path / name
        sluice.run("convert", src, str(root) + "/", "--partition-by", "k")
        ext = name[1:]
        files = sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file())
        assert files == [f"k=1/part-0{ext}", f"k=2/part-0{ext}"], files
        stream = pa.CompressedInputStream(pa.OSFile(str(root / files[0])), codec)
        assert pcsv.read_csv(stream, parse_options=parse).to_pydict() == {
            "v": ["a", "c"], "w": [7, 9]}
    root = tmp_path / "m.tsv.gz"
    sluice.run("convert", src, str(root) + "/", "--max-rows-per-file", "2")
    files = sorted(p.name for p in root.iterdir())
    assert files == ["part-0.tsv.gz", "part-1.tsv.gz"], files
    got = pa.concat_tables(
        pcsv.read_csv(pa.CompressedInputStream(pa.OSFile(str(root / f)), "gzip"),
                      parse_options=parse) for f in files)
    assert got.to_pydict() == keyed.to_pydict()


def test_float_format_point_keeps_whole_floats_floats(sluice, tmp_path):
    table = pa.table({"f": pa.array([1.0, -0.0, 2.0, 1e300, None, 3.0]),
                      "h": pa.array([1.0, 2.0, 3.0, 4.0, 5.0, 6.0], pa.float32())})
    csv_path, back = sluice_csv_round_trip(sluice, tmp_path, table, ["float_format=point"])
    assert csv_path.read_text().splitlines()[1:3] == ["1.0,1.0", "-0.0,2.0"]
    assert back.schema.field("f").type == pa.float64()
    assert float_bits(back.column("f").to_pylist()) == float_bits(table.column("f").to_pylist())
    assert back.column("h").to_pylist() == table.column("h").to_pylist()
    # Default (pyarrow's spelling): whole numbers read back as integers.
    csv_path, back = sluice_csv_round_trip(sluice, tmp_path, table)
    assert csv_path.read_text().splitlines()[1:3] == ["1,1", "-0,2"]


def test_timestamp_spellings(sluice, tmp_path):
    table = pa.table({
        "ms": pa.array([1_673_784_000_123, None], pa.timestamp("ms")),
        "s_utc": pa.array([1_673_784_000, 0], pa.timestamp("s", tz="UTC")),
        "ns_paris": pa.array([1_673_784_000_123_456_789, 0], pa.timestamp("ns", tz="Europe/Paris")),
    })
    src = write_arrow(table, tmp_path / "t.arrow")
    default = sluice.run("cat", src, "-t", "csv").stdout.decode().splitlines()
    assert default == ["ms,s_utc,ns_paris",
                       "2023-01-15 12:00:00.123,2023-01-15 12:00:00Z,"
                       "2023-01-15 13:00:00.123456789+01:00",
                       ",1970-01-01 00:00:00Z,1970-01-01 01:00:00.000000000+01:00"]
    # Local mean time has offsets with seconds, which no reader takes: UTC.
    lmt = pa.table({"t": pa.array([-4_000_000_000], pa.timestamp("s", tz="Europe/Paris"))})
    out = sluice.run("cat", write_arrow(lmt, tmp_path / "lmt.arrow"), "-t", "csv").stdout
    assert out.decode().splitlines()[1] == "1843-03-31 16:53:20Z"
    iso = sluice.run("cat", src, "-t", "csv", "-W", "timestamp_format=iso").stdout.decode()
    assert iso.splitlines()[1:] == [
        "2023-01-15T12:00:00.123,2023-01-15T12:00:00Z,2023-01-15T12:00:00.123456789Z",
        ",1970-01-01T00:00:00Z,1970-01-01T00:00:00.000000000Z"]
    # Nanoseconds survive when the reader is told the unit.
    for opts in ([], ["timestamp_format=iso"]):
        csv_path, back = sluice_csv_round_trip(
            sluice, tmp_path, table.select(["ns_paris"]), opts,
            ["schema=ns_paris:tsn:UTC"])
        assert back.column(0).cast(pa.int64()).to_pylist() == \
            table.column("ns_paris").cast(pa.int64()).to_pylist()


def test_timestamp_extremes_spelled_exactly(sluice, tmp_path):
    # The int64 ends in every unit: the seconds round below INT64_MIN, so the
    # fraction is taken as a remainder, not as value - seconds * unit.
    units = {"s": 1, "ms": 1000, "us": 10**6, "ns": 10**9}
    values = [-(2**63), -(2**63) + 1, -1, 2**63 - 1]
    table = pa.table({u: pa.array(values, pa.timestamp(u, tz="UTC")) for u in units})
    src = write_arrow(table, tmp_path / "ends.arrow")
    rows = sluice.run("cat", src, "-t", "csv", "-W", "timestamp_format=iso").stdout.decode()
    got = [line.split(",") for line in rows.splitlines()[1:]]

    def spelled(value: int, per_second: int) -> str:
        seconds, fraction = divmod(value, per_second)
        days, in_day = divmod(seconds, 86400)
        # numpy's calendar (Python's date stops at year 9999); years past
        # 0..9999 signed, as ISO 8601's expanded years
        date = str(np.datetime_as_string(np.datetime64(days, "D")))
        y, rest = date[:-6], date[-6:]
        year = y if 0 <= int(y) <= 9999 else f"{int(y):+05d}"
        text = f"{year}{rest}T{in_day // 3600:02d}:{in_day // 60 % 60:02d}:{in_day % 60:02d}"
        digits = len(str(per_second)) - 1
        return text + (f".{fraction:0{digits}d}" if digits else "") + "Z"

    want = [[spelled(v, per) for per in units.values()] for v in values]
    assert got == want
    assert got[2][1] == "1969-12-31T23:59:59.999Z"  # -1 ms


def test_years_outside_0_to_9999_read_back(sluice, tmp_path):
    """Years past 9999 are written with a sign, ISO 8601's expanded form
    (`+10000-01-01`, which polars and numpy read; `-0001-01-01` is 2 BC, as
    pyarrow and numpy write it). sluice's reader took them for text (with a
    schema: "cannot parse"); it reads them now, inferred or given, and reads
    DuckDB's and pyarrow's unsigned `10000-01-01` too. Values no timestamp
    unit holds stay text."""
    days = [int(np.datetime64(d, "D").astype(np.int64)) for d in
            ["2024-01-01", "+10000-01-01", "-0001-01-01", "0000-02-29", "+294246-12-31"]]
    table = pa.table({"d": pa.array(days, pa.date32()),
                      "ts": pa.array([d * 86400 * 10**6 + 1 for d in days], pa.timestamp("us")),
                      "tsz": pa.array([d * 86400 for d in days], pa.timestamp("s", tz="UTC"))})
    csv_path, back = sluice_csv_round_trip(sluice, tmp_path, table)
    lines = csv_path.read_text().splitlines()
    assert lines[2] == "+10000-01-01,+10000-01-01 00:00:00.000001,+10000-01-01 00:00:00Z"
    assert lines[3].startswith("-0001-01-01,")
    want = table.set_column(2, "tsz", table.column("tsz").cast(pa.timestamp("us", tz="UTC")))
    assert back.equals(want)
    _, given = sluice_csv_round_trip(sluice, tmp_path, table, read_opts=[
        "schema=d:date32|ts:timestamp[us]|tsz:timestamp[s, tz=UTC]"])
    assert given.equals(table)
    polars = pytest.importorskip("polars")
    dates = tmp_path / "dates.csv"  # (polars takes no year past 262143)
    dates.write_text("\n".join(line.split(",")[0] for line in lines[:-1]) + "\n")
    got = polars.read_csv(dates, try_parse_dates=True)
    assert got["d"].cast(polars.Int32).to_list() == days[:-1]
    duckdb = pytest.importorskip("duckdb")
    theirs = tmp_path / "duck.csv"
    duckdb.sql("copy (select DATE '10000-01-01' d, TIMESTAMP '10000-01-01 00:00:01' ts, "
               "DATE '2024-01-01' d2) to '%s'" % theirs)
    assert theirs.read_text().splitlines()[1] == "10000-01-01,10000-01-01 00:00:01,2024-01-01"
    out = tmp_path / "duck.arrow"
    sluice.run("convert", theirs, out)
    back = read_arrow(out)
    assert back.schema.types == [pa.date32(), pa.timestamp("us"), pa.date32()]
    assert back.column("d").cast(pa.int32()).to_pylist() == [days[1]]
    assert back.column("ts").cast(pa.int64()).to_pylist() == [days[1] * 86400 * 10**6 + 10**6]
    # no timestamp unit reaches these: text, as pyarrow reads any of them
    big = tmp_path / "big.csv"
    big.write_text("d\n+300000-01-01 00:00:00\n2024-01-01\n")
    sluice.run("convert", big, tmp_path / "big.arrow")
    assert read_arrow(tmp_path / "big.arrow").schema.field("d").type == pa.string()


def test_uint64_past_int64_is_inferred_as_float64_and_read_exactly_by_schema(sluice, tmp_path):
    """The writer spells uint64 exactly. Inferred, integers past int64 make
    the column float64, as pyarrow infers it (18446744073709551615 becomes
    2**64); --schema u:uint64 reads them exactly, the values DuckDB reads as
    HUGEINT (README: CSV types)."""
    values = [1, 2**64 - 1, 2**63 + 1, None]
    table = pa.table({"u": pa.array(values, pa.uint64()), "i": pa.array([1, 2, 3, 4])})
    csv_path, back = sluice_csv_round_trip(sluice, tmp_path, table)
    assert csv_path.read_text() == \
        "u,i\n1,1\n18446744073709551615,2\n9223372036854775809,3\n,4\n"
    assert back.schema.field("u").type == pcsv.read_csv(csv_path).schema.field("u").type \
        == pa.float64()
    assert back.column("u").to_pylist() == [1.0, 2.0**64, 2.0**63, None]
    _, exact = sluice_csv_round_trip(sluice, tmp_path, table, read_opts=["schema=u:uint64"])
    assert exact.equals(table)
    duckdb = pytest.importorskip("duckdb")
    assert [r[0] for r in duckdb.sql(f"select u from '{csv_path}'").fetchall()] == values


def test_strings_that_look_like_other_types(sluice, tmp_path):
    table = pa.table({"s": pa.array(["123", "true", "2023-01-15", "1e5", "-0", "", None, "x"]),
                      "i": pa.array(range(8), pa.int64())})
    _, back = sluice_csv_round_trip(sluice, tmp_path, table, [], ["schema=s:string"])
    assert back.column("s").to_pylist() == table.column("s").to_pylist()


def test_digits_and_null_spellings_stay_strings_without_a_schema(sluice, tmp_path):
    """The writer quotes "NA" so that it stays text; inference must count a
    quoted null spelling as text too, or ['1', 'NA', '2'] reads back as int64
    with a null (as DuckDB reads it: VARCHAR). A quoted "" is still a null
    and leaves a number column a number."""
    table = pa.table({"s": pa.array(["1", "NA", "2"]), "t": pa.array(["3", "null", None])})
    csv_path, back = sluice_csv_round_trip(sluice, tmp_path, table)
    assert csv_path.read_text().splitlines()[2] == '"NA","null"'
    assert back.equals(table)
    import duckdb
    assert duckdb.sql(f"select * from '{csv_path}'").types == ["VARCHAR", "VARCHAR"]
    quoted_empty = tmp_path / "quoted_empty.csv"
    quoted_empty.write_text('i\n1\n""\n2\n')
    sluice.run("convert", quoted_empty, tmp_path / "quoted_empty.arrow")
    back = read_arrow(tmp_path / "quoted_empty.arrow")
    assert back.schema.field("i").type == pa.int64()
    assert back.column("i").to_pylist() == [1, None, 2]


def test_single_column_nulls_keep_their_rows(sluice, tmp_path):
    # An empty line would be skipped by readers: a lone null is written "".
    table = pa.table({"i": pa.array([1, None, 3, None], pa.int64())})
    csv_path, back = sluice_csv_round_trip(sluice, tmp_path, table)
    assert csv_path.read_text() == 'i\n1\n""\n3\n""\n'
    assert back.column("i").to_pylist() == [1, None, 3, None]
    back_pa = pcsv.read_csv(csv_path)
    assert back_pa.column("i").to_pylist() == [1, None, 3, None]
    # A lone string column cannot tell null from "" (pyarrow reads "" in a
    # string column as the empty string too): an error naming the row, and
    # nothing written, rather than a null silently turned into ""; a null
    # spelling writes it.
    # A column of the null type is "" on every line, which reads back as
    # strings: the same error.
    for values in (pa.array(["a", None, ""]), pa.array([b"a", None], pa.binary()),
                   pa.array([None, None], pa.null())):
        table = pa.table({"s": values})
        src = tmp_path / "lone_text.arrow"
        with ipc.new_file(src, table.schema) as w:
            w.write_table(table)
        out = tmp_path / "lone_text.csv"
        err = sluice.expect_error("convert", src, out).stderr.decode()
        first_null = values.to_pylist().index(None)  # (rows count from 0)
        assert f"row {first_null}:" in err and "null=NA" in err, err
        assert not out.exists()
    table = pa.table({"s": pa.array(["a", None, ""])})
    csv_path, back = sluice_csv_round_trip(sluice, tmp_path, table, write_opts=["null=NA"])
    assert back.column("s").to_pylist() == ["a", None, ""]
    strings_null = pcsv.ConvertOptions(strings_can_be_null=True, quoted_strings_can_be_null=False)
    assert pcsv.read_csv(csv_path, convert_options=strings_null).column("s").to_pylist() == \
        ["a", None, ""]


@pytest.mark.parametrize("values, written_before", [
    (pa.array([[1], None], pa.list_(pa.int64())), 'c\n"[1]"\n""\n'),
    (pa.array([{"a": 1}, None], pa.struct([("a", pa.int64())])), 'c\n"{""a"":1}"\n""\n'),
    (pa.array([pa.MonthDayNano([1, 2, 3]), None], pa.month_day_nano_interval()),
     'c\n1M2d3ns\n""\n'),
    (pa.array([None, None], pa.int64()), 'c\n""\n""\n'),
])
def test_single_column_nulls_that_read_back_as_strings_are_an_error(sluice, tmp_path, values,
                                                                    written_before):
    """A lone null written "" read back as the empty string wherever the
    column reads back as strings: nested values (JSON text) and intervals
    are strings to pyarrow's reader and sluice's, and a column with no value
    at all is a column of strings (a null type in pyarrow, whose own writer
    loses such rows as empty lines). These are refused as string columns
    are, naming the column, and nothing is written; a null spelling writes
    them. Before, `[[1], None]` came back as `['[1]', '']`."""
    table = pa.table({"c": values})
    src = write_arrow(table, tmp_path / "lone.arrow")
    out = tmp_path / "lone.csv"
    err = sluice.expect_error("convert", src, out).stderr.decode()
    assert "column 'c'" in err and "null=NA" in err, err
    assert not out.exists()
    # what was written before: pyarrow too reads its "" as the empty string
    before = tmp_path / "before.csv"
    before.write_text(written_before)
    if values.null_count < len(values):
        assert pcsv.read_csv(before).column("c").to_pylist()[-1] == ""
    _, back = sluice_csv_round_trip(sluice, tmp_path, table, write_opts=["null=NA"])
    assert back.column("c").to_pylist()[-1] is None


def test_single_column_nulls_before_the_first_value_round_trip(sluice, tmp_path):
    """Nulls of a typed column written "" over several batches before its
    one value: the column has a value, so it reads back as int64 with its
    nulls, as in pyarrow and DuckDB."""
    table = pa.table({"i": pa.array([None] * 5 + [7], pa.int64())})
    src = tmp_path / "late.arrow"
    with ipc.new_file(src, table.schema) as w:
        w.write_table(table, max_chunksize=2)
    out = tmp_path / "late.csv"
    sluice.run("convert", src, out, "--threads", "4")
    assert out.read_text() == 'i\n' + '""\n' * 5 + '7\n'
    assert pcsv.read_csv(out).column("i").to_pylist() == [None] * 5 + [7]
    back = tmp_path / "late_back.arrow"
    sluice.run("convert", out, back)
    assert read_arrow(back).equals(table)


def test_null_spelling_strings_round_trip(sluice, tmp_path):
    """Strings spelled like the reader's default nulls are written quoted,
    and a quoted field in a string column is a string: they come back (as
    pyarrow, DuckDB and polars read them too), and nulls stay nulls."""
    table = pa.table({"s": pa.array(["NA", "NULL", "null", "x", None, ""]),
                      "i": pa.array([1, 2, None, 4, 5, 6])})
    csv_path, back = sluice_csv_round_trip(sluice, tmp_path, table)
    assert csv_path.read_text().splitlines()[1:4] == ['"NA",1', '"NULL",2', '"null",']
    assert back.equals(table)
    assert pcsv.read_csv(csv_path, convert_options=pcsv.ConvertOptions(
        strings_can_be_null=True, quoted_strings_can_be_null=False)).equals(table)
    import duckdb
    assert duckdb.sql(f"select s from read_csv('{csv_path}', allow_quoted_nulls=false)"
                      ).fetchall() == [(v,) for v in table.column("s").to_pylist()]


def test_million_random_doubles_bit_exact(sluice, tmp_path):
    rng = np.random.default_rng(20261130)
    bits = rng.integers(0, 2**64, size=1_000_000, dtype=np.uint64)
    exponent = (bits >> np.uint64(52)) & np.uint64(0x7FF)
    bits = bits[exponent != 0x7FF]  # finite only
    values = bits.view(np.float64)
    table = pa.table({"f": pa.array(values)})
    csv_path, back = sluice_csv_round_trip(sluice, tmp_path, table)
    assert back.schema.field("f").type == pa.float64()
    got = back.column("f").to_numpy().view(np.uint64)
    mismatches = np.nonzero(got != bits)[0]
    assert mismatches.size == 0, (
        f"{mismatches.size} doubles differ, first {values[mismatches[0]]!r} -> "
        f"{got.view(np.float64)[mismatches[0]]!r}")
    # pyarrow's parser (correctly rounded) reads the same bits.
    theirs = pcsv.read_csv(csv_path).column("f").to_numpy().view(np.uint64)
    assert np.array_equal(theirs, bits)


def test_every_float16_bit_exact(sluice, tmp_path):
    """Every finite float16 is written with digits that read back as the
    same half (as float64, then rounded to float16 as numpy does) and as
    its exact value in float32, powers of
    two included, whose neighbour below is twice as near (0.0078125 was
    written 0.00781, which reads back as the half below)."""
    bits = np.arange(0, 2**16, dtype=np.uint16)
    bits = bits[((bits >> 10) & 0x1F) != 0x1F]
    table = pa.table({"h": pa.array(bits.view(np.float16), pa.float16())})
    csv_path, _ = sluice_csv_round_trip(sluice, tmp_path, table)
    text = pcsv.read_csv(csv_path, convert_options=pcsv.ConvertOptions(column_types={"h": pa.float64()}))
    got = text.column("h").to_numpy().astype(np.float16).view(np.uint16)
    bad = np.nonzero(got != bits)[0]
    assert bad.size == 0, f"{bad.size} halves differ, first {bits.view(np.float16)[bad[0]]!r}"
    # Read as float32 (and as float64 then float32), every value is the
    # half's exact value, as pyarrow writes them: 65504, not 6.55e+04 (which
    # every reader, none of which parses halves, took for 65500).
    exact = bits.view(np.float16).astype(np.float32)
    as_f32 = pcsv.read_csv(csv_path, convert_options=pcsv.ConvertOptions(
        column_types={"h": pa.float32()})).column("h").to_numpy()
    assert np.array_equal(as_f32, exact)
    assert np.array_equal(text.column("h").to_numpy().astype(np.float32), exact)


def significant_digits(text: str) -> str:
    """The significant digits of a decimal spelling ("-1.250e-05" -> "125")."""
    mantissa = text.lstrip("-").lower().split("e")[0].replace(".", "")
    return mantissa.lstrip("0").rstrip("0") or "0"


def test_floats_written_with_the_shortest_closest_digits(sluice, tmp_path):
    """Each float64 is written with the digits Python's repr gives (the fewest
    that read back, and of those the closest), each float32 with numpy's
    (shortest for float32, ties to even): what pyarrow and polars write too."""
    rng = np.random.default_rng(20261201)
    bits = rng.integers(0, 2**64, size=200_000, dtype=np.uint64)
    bits = bits[((bits >> np.uint64(52)) & np.uint64(0x7FF)) != 0x7FF]
    doubles = np.concatenate([bits.view(np.float64), rng.random(50_000),
                              np.round(rng.random(50_000) * 1e6, 2)])
    fbits = rng.integers(0, 2**32, size=len(doubles), dtype=np.uint64).astype(np.uint32)
    fbits[((fbits >> np.uint32(23)) & np.uint32(0xFF)) == 0xFF] = 0x3DCCCCCD  # 0.1f
    floats = fbits.view(np.float32)
    floats[: len(floats) // 2] = (rng.random(len(floats) // 2) * 1000).astype(np.float32)
    path = sluice_write_csv(sluice, tmp_path, pa.table({"d": pa.array(doubles),
                                                        "f": pa.array(floats)}))
    lines = path.read_text().splitlines()
    assert lines[0] == "d,f" and len(lines) == len(doubles) + 1
    wrong = []
    for line, d, f in zip(lines[1:], doubles.tolist(), floats):
        d_text, f_text = line.split(",")
        if (float(d_text) != d or
                significant_digits(d_text) != significant_digits(repr(d))):
            wrong.append((repr(d), d_text))
        want_f = np.format_float_scientific(f, unique=True)
        if (np.float32(f_text) != f or
                significant_digits(f_text) != significant_digits(want_f)):
            wrong.append((want_f, f_text))
    assert not wrong, f"{len(wrong)} values spelled differently, first {wrong[:5]}"


# ---- other readers ------------------------------------------------------------

def sluice_write_csv(sluice, tmp_path: Path, table: pa.Table, opts=()) -> Path:
    src = write_arrow(table, tmp_path / "x.arrow")
    out = tmp_path / "y.csv"
    args = ["convert", src, out]
    for o in opts:
        args += ["-W", o]
    sluice.run(*args)
    return out


def arrow_table(relation) -> pa.Table:
    fetch = getattr(relation, "to_arrow_table", None) or relation.fetch_arrow_table
    return fetch()


PEER_VARIANTS = [[], ["timestamp_format=iso"], ["delimiter=;", "line_terminator=crlf"]]


def _delimiter(opts) -> str:
    return ";" if "delimiter=;" in opts else ","


@pytest.mark.parametrize("opts", PEER_VARIANTS, ids=lambda o: ",".join(o) or "default")
def test_pyarrow_reads_sluice_csv(sluice, tmp_path, opts):
    table = source_table()
    path = sluice_write_csv(sluice, tmp_path, table, opts)
    got = pcsv.read_csv(path, parse_options=pcsv.ParseOptions(delimiter=_delimiter(opts),
                                                             newlines_in_values=True),
                        convert_options=pcsv.ConvertOptions(strings_can_be_null=True,
                                                            quoted_strings_can_be_null=False))
    assert_same_values(got, expected_back(table), "pyarrow.csv")


@pytest.mark.parametrize("opts", PEER_VARIANTS, ids=lambda o: ",".join(o) or "default")
def test_duckdb_reads_sluice_csv(sluice, tmp_path, opts):
    duckdb = pytest.importorskip("duckdb")
    table = source_table()
    path = sluice_write_csv(sluice, tmp_path, table, opts)
    con = duckdb.connect()
    rel = con.read_csv(str(path), delimiter=_delimiter(opts), allow_quoted_nulls=False)
    got = arrow_table(rel)
    assert_same_values(got, expected_back(table), "duckdb")


@pytest.mark.parametrize("opts", PEER_VARIANTS, ids=lambda o: ",".join(o) or "default")
def test_polars_reads_sluice_csv(sluice, tmp_path, opts):
    pl = pytest.importorskip("polars")
    table = source_table()
    path = sluice_write_csv(sluice, tmp_path, table, opts)
    got = pl.read_csv(path, try_parse_dates=True, separator=_delimiter(opts)).to_arrow()
    assert_same_values(got, expected_back(table), "polars")


def test_peers_read_million_doubles(sluice, tmp_path):
    rng = np.random.default_rng(7)
    bits = rng.integers(0, 2**64, size=200_000, dtype=np.uint64)
    bits = bits[((bits >> np.uint64(52)) & np.uint64(0x7FF)) != 0x7FF]
    path = sluice_write_csv(sluice, tmp_path, pa.table({"f": pa.array(bits.view(np.float64))}))
    duckdb = pytest.importorskip("duckdb")
    got = arrow_table(duckdb.connect().read_csv(str(path))).column("f")
    assert np.array_equal(got.to_numpy().view(np.uint64), bits), "duckdb"
    pl = pytest.importorskip("polars")
    got = pl.read_csv(path).to_arrow().column("f")
    assert np.array_equal(got.to_numpy().view(np.uint64), bits), "polars"


# ---- option errors --------------------------------------------------------------

@pytest.fixture
def small_arrow(tmp_path) -> Path:
    return write_arrow(pa.table({"s": ["a,b", "c"], "i": [1, 2]}), tmp_path / "small.arrow")


@pytest.mark.parametrize("opt,message", [
    ("colour=red", "unknown CSV write option 'colour' (known: delimiter, header, null, quote, "
                   "line_terminator, float_format, timestamp_format)"),
    ("header=maybe", "bad value 'maybe'"),
    ("delimiter=ab", "bad value 'ab'"),
    ("line_terminator=cr", "bad value 'cr'"),
    ("null=a,b", "expected key=value"),
    ("null=x;y", None),
    ("quote=none", "needs quotes"),
    ("delimiter=\"", "delimiter equals the quote"),
    # the reason, not only the value (review finding)
    ("delimiter=é", "bad value 'é' (one single-byte character other than a line break, or "
                    "comma, semicolon, tab, pipe or space)"),
    ("quote=ab", "or dquote, squote or none)"),
    ("header=yes", "bad value 'yes' (true or false)"),
    ("compression=gzip", "by its name's suffix (.gz, .zst, .bz2, .xz) or by --compression"),
])
def test_bad_write_options(sluice, tmp_path, small_arrow, opt, message):
    out = tmp_path / "o.csv"
    extra = ["-W", "delimiter=;"] if opt == "null=x;y" else []
    proc = sluice.expect_error("convert", small_arrow, out, "-W", opt, *extra)
    err = proc.stderr.decode()
    if message is not None:
        assert message in err, err
    assert not out.exists(), "a failed write leaves no file"


def test_big_batches_spelled_in_parallel_match_pyarrow(sluice, tmp_path):
    """Batches of many rows are spelled in parts on all cores: the file is
    byte for byte the one a batch of one part gives (written row by row in
    small batches), pyarrow reads it back, and an unwritable value deep in a
    later part is reported at its own row."""
    rows = 100_000
    table = pa.table({"i": pa.array(range(rows), pa.int64()),
                      "s": pa.array([f"v{i}" if i % 3 else f"q,{i}" for i in range(rows)]),
                      "x": pa.array([i / 3 for i in range(rows)])})
    out = arrow_to_csv(sluice, table, tmp_path, "big", "-q")  # one batch: cut into parts
    small = tmp_path / "small.csv"  # batches of 5 rows: one part each
    sluice.run("convert", write_arrow(table, tmp_path / "small.arrow"), small, "-q")
    assert out.read_bytes() == small.read_bytes()
    back = pcsv.read_csv(out)
    assert back.column("i").to_pylist() == table.column("i").to_pylist()
    assert back.column("s").to_pylist() == table.column("s").to_pylist()
    assert back.column("x").to_pylist() == table.column("x").to_pylist()
    late = pa.table({"s": pa.array(["plain"] * 90_000 + ["a,b"] + ["plain"] * 9_999)})
    src = tmp_path / "late.arrow"
    with ipc.new_file(src, late.schema) as w:
        w.write_table(late)
    err = sluice.expect_error("convert", src, tmp_path / "late.csv", "-W", "quote=none")
    assert "row 90000" in err.stderr.decode(), err.stderr


def test_write_option_usage(sluice, small_arrow):
    proc = sluice.run_raw("convert", small_arrow, "-t", "csv", "-", "-W", "novalue")
    assert proc.returncode == 2 and b"-W wants KEY=VALUE" in proc.stderr
    proc = sluice.run_raw("schema", small_arrow, "-W", "a=b")
    assert proc.returncode == 2
    help_text = sluice.run("convert", "--help").stdout.decode()
    assert "--write-option" in help_text and "-W" in help_text
    assert "--write-option" in sluice.run("cat", "--help").stdout.decode()


def test_cat_with_write_options(sluice, small_arrow):
    out = sluice.run("cat", small_arrow, "-t", "csv", "--write-option", "delimiter=tab",
                     "-W", "header=false").stdout
    assert out == b"a,b\t1\nc\t2\n"
    out = sluice.run("cat", small_arrow, "-t", "csv", "-W", "delimiter=,", "-W",
                     "quote=squote").stdout
    assert out == b"s,i\n'a,b',1\nc,2\n"
    out = sluice.run("cat", small_arrow, "-t", "csv", "-W", "quote=none", "-W", "delimiter=tab",
                     "-W", "null=\\N").stdout
    assert out == b"s\ti\na,b\t1\nc\t2\n"


def test_write_options_for_other_formats_are_errors(sluice, tmp_path, small_arrow):
    """A CSV -W option given to another writer is an error naming it, as
    every writer's unknown keys are (the IPC writer ignored them)."""
    for ext in ("arrow", "parquet", "avro"):
        out = tmp_path / f"o.{ext}"
        err = sluice.expect_error("convert", small_arrow, out, "-W", "delimiter=;").stderr.decode()
        assert "delimiter" in err and not out.exists(), err


def test_null_spelling_strings_go_out_bare_without_quoting(sluice, tmp_path):
    """With quote=none there is no way to mark them: "NA" and a column named
    null are written bare, not refused."""
    table = pa.table({"null": pa.array(["NA", "x"])})
    csv_path, _ = sluice_csv_round_trip(sluice, tmp_path, table, write_opts=["quote=none"])
    assert csv_path.read_text() == "null\nNA\nx\n"


@pytest.mark.parametrize("value", [None, ""])
def test_lone_empty_line_without_quoting_is_an_error(sluice, tmp_path, value):
    """One column, quote=none and the empty null spelling: a null or empty
    value would be an empty line, which readers (pyarrow too) skip, losing
    the row. An error naming the row, and nothing written; a null spelling
    writes it."""
    table = pa.table({"s": pa.array(["a", value, "b"], pa.string())})
    src = tmp_path / "lone.arrow"
    with ipc.new_file(src, table.schema) as w:
        w.write_table(table)
    out = tmp_path / "lone.csv"
    err = sluice.expect_error("convert", src, out, "-W", "quote=none").stderr.decode()
    assert "row 1" in err and "empty line" in err, err
    assert not out.exists()
    if value is None:  # a null spelling writes it
        sluice.run("convert", src, out, "-W", "quote=none", "-W", "null=NA")
        assert pcsv.read_csv(out).num_rows == 3
    else:  # an empty string stays unwritable
        sluice.expect_error("convert", src, out, "-W", "quote=none", "-W", "null=NA")


@pytest.mark.parametrize("table", [
    pa.table({"a": ['x"y', "z"], "b": [1, 2]}),
    pa.table({'a"b': ["x", "z"]}),
])
def test_quote_none_refuses_a_double_quote(sluice, tmp_path, table):
    """With quote=none a '"' in a value or a name went out bare, and sluice's
    reader (and pyarrow's, DuckDB's) then took it for a quote: refused, as
    pyarrow's quoting_style="none" refuses it in a value (it quotes names
    whatever the style; sluice's header follows the style, as before)."""
    import io
    if table.column_names == ["a", "b"]:
        with pytest.raises(pa.ArrowInvalid):
            pcsv.write_csv(table, io.BytesIO(), pcsv.WriteOptions(quoting_style="none"))
    src = write_arrow(table, tmp_path / "q.arrow")
    out = tmp_path / "q.csv"
    err = sluice.expect_error("convert", src, out, "-W", "quote=none").stderr.decode()
    assert "needs quotes" in err and "quote=none" in err, err
    assert not out.exists()


def test_quote_none_refuses_a_double_quote_in_the_null_spelling(sluice, tmp_path):
    """null='"N' with quote=none was written bare ('"N,2'), a quoted field
    to readers: sluice's reader then failed "unterminated quoted field" and
    pyarrow's "Expected 2 columns, got 1". Refused as a value holding '"' is;
    with quoting on, the quote character is refused as before."""
    table = pa.table({"s": ["ok", None], "i": [1, 2]})
    src = write_arrow(table, tmp_path / "qn.arrow")
    out = tmp_path / "qn.csv"
    err = sluice.expect_error("convert", src, out, "-W", "quote=none",
                              "-W", 'null="N').stderr.decode()
    assert "null='\"N'" in err and "quote=none" in err, err
    assert not out.exists()
    err = sluice.expect_error("convert", src, out, "-W", "quote=squote",
                              "-W", "null='N").stderr.decode()
    assert "the quote" in err, err
    # a '"' is fine where quotes are another character
    sluice.run("convert", src, out, "-W", "quote=squote", "-W", 'null="N')
    assert out.read_text() == "s,i\nok,1\n\"N,2\n"


# ---- values spelled like null spellings, and the first field -------------------

def test_nan_string_stays_a_string(sluice, tmp_path):
    """The string "NaN" (a null in float columns by default, for sluice and
    pyarrow) went out bare and came back as a null float: it is quoted, as
    "NA" is, and reads back as the text in a column of text. A quoted "NaN"
    among numbers is a NaN (quoting does not change a number), as DuckDB
    and polars read it; pyarrow types that column float too."""
    table = pa.table({"s": pa.array(["NaN", "x", None]), "k": pa.array([1, 2, 3])})
    csv_path, back = sluice_csv_round_trip(sluice, tmp_path, table)
    assert csv_path.read_text().splitlines()[1] == '"NaN",1'
    assert back.equals(table)
    # pyarrow told not to take quoted text for a null reads the same values
    peer = pcsv.read_csv(csv_path, convert_options=pcsv.ConvertOptions(
        strings_can_be_null=True, quoted_strings_can_be_null=False))
    assert peer.column("s").to_pylist() == table.column("s").to_pylist()
    hand = tmp_path / "quoted.csv"
    hand.write_text('a,b,c\n"NA","NaN",NaN\n1.5,1.5,1.5\n')
    sluice.run("convert", hand, tmp_path / "quoted.arrow")
    back = read_arrow(tmp_path / "quoted.arrow")
    assert [f.type for f in back.schema] == [pa.string(), pa.float64(), pa.float64()]
    rows = back.to_pylist()
    assert rows[0]["a"] == "NA" and math.isnan(rows[0]["b"]) and rows[0]["c"] is None
    assert rows[1] == {"a": "1.5", "b": 1.5, "c": 1.5}
    assert pcsv.read_csv(hand).schema.field("b").type == pa.float64()
    polars = pytest.importorskip("polars")
    assert math.isnan(polars.read_csv(hand)["b"][0])


@pytest.mark.parametrize("null", ["1", "inf", "nan", "true", "2024-01-01"])
def test_values_spelled_as_the_null_spelling_read_back(sluice, tmp_path, null):
    """With null=1 the writer quotes an int 1 ("1") so that it is not read as
    a null; sluice's reader took quotes into account in string columns only,
    and read it back as a null. A quoted field that is not empty is a value
    in every column, as pyarrow reads it with quoted_strings_can_be_null=False
    (the numeric fast path and the general one alike)."""
    n = 3000  # enough rows for the fused numeric path
    ints = [1 if i % 7 == 0 else None if i % 11 == 0 else i for i in range(n)]
    floats = [math.inf if i % 7 == 0 else math.nan if i % 13 == 0 else
              None if i % 11 == 0 else i / 4 for i in range(n)]
    bools = [None if i % 11 == 0 else i % 3 == 0 for i in range(n)]
    dates = [None if i % 11 == 0 else dt.date(2024, 1, 1) + dt.timedelta(days=i % 5)
             for i in range(n)]
    table = pa.table({"i": pa.array(ints, pa.int64()), "f": pa.array(floats, pa.float64()),
                      "b": pa.array(bools, pa.bool_()), "d": pa.array(dates, pa.date32())})
    schema = "schema=i:int64|f:float64|b:bool|d:date32"
    for extra in ([], ["fastpath=false"]):
        csv_path, back = sluice_csv_round_trip(sluice, tmp_path, table, [f"null={null}"],
                                               [f"null_values={null}", schema, *extra])
        assert_same_values(back, table, f"null={null} {extra}")
    peer = pcsv.read_csv(csv_path, convert_options=pcsv.ConvertOptions(
        column_types=table.schema, null_values=[null], quoted_strings_can_be_null=False))
    assert_same_values(peer, table, f"pyarrow, null={null}")


def test_quoted_null_spelling_in_a_typed_column(sluice, tmp_path):
    """A quoted "NA" in an int64 column spells no integer: a null, as
    pyarrow and DuckDB read it by default (it was an error for a while);
    a quoted "" stays a null there; a quoted "1" under null_values=1 is the
    1 the writer quoted to keep it."""
    path = tmp_path / "na.csv"
    path.write_text('i,s\n1,x\n"NA",y\n"",z\n"2",w\n')
    sluice.run("convert", path, tmp_path / "na.arrow", "-O", "schema=i:int64|s:string")
    got = read_arrow(tmp_path / "na.arrow").column("i").to_pylist()
    want = pcsv.read_csv(path, convert_options=pcsv.ConvertOptions(
        column_types={"i": pa.int64()})).column("i").to_pylist()
    assert got == want == [1, None, None, 2]
    duckdb = pytest.importorskip("duckdb")
    assert [r[0] for r in duckdb.sql(
        f"select i from read_csv('{path}', header=true, columns={{'i': 'BIGINT', 's': 'VARCHAR'}}, "
        "nullstr=['NA', ''])").fetchall()] == want
    ones = tmp_path / "ones.csv"
    ones.write_text('i\n"1"\n1\n')
    sluice.run("convert", ones, tmp_path / "ones.arrow", "-O", "schema=i:int64", "-O",
               "null_values=1")
    assert read_arrow(tmp_path / "ones.arrow").column("i").to_pylist() == [1, None]


def test_leading_bom_in_the_first_field_is_quoted(sluice, tmp_path):
    """A U+FEFF at the start of the file is taken for a byte order mark and
    dropped by every reader: the first name (or, without a header, the
    first value) that starts with one is quoted, as pyarrow writes it, and
    comes back whole; elsewhere it stays bare."""
    table = pa.table({"\ufeffid": ["\ufeffv", "w"], "b": ["\ufeffx", "y"]})
    csv_path, back = sluice_csv_round_trip(sluice, tmp_path, table)
    assert csv_path.read_bytes().startswith('"\ufeffid",b\n\ufeffv,\ufeffx\n'.encode())
    assert back.equals(table)
    assert pcsv.read_csv(csv_path).column_names == table.column_names
    csv_path, back = sluice_csv_round_trip(sluice, tmp_path, table, ["header=false"],
                                           ["header=false"])
    assert csv_path.read_bytes().startswith('"\ufeffv",\ufeffx\n'.encode())
    assert back.column(0).to_pylist() == table.column(0).to_pylist()
    peer = pcsv.read_csv(csv_path, read_options=pcsv.ReadOptions(autogenerate_column_names=True))
    assert peer.column(0).to_pylist() == table.column(0).to_pylist()
    src = write_arrow(table, tmp_path / "bom.arrow")
    err = sluice.expect_error("convert", src, tmp_path / "bom.csv", "-W",
                              "quote=none").stderr.decode()
    assert "byte order mark" in err, err


def test_line_terminator_as_characters_and_escaped_messages(sluice, tmp_path, small_arrow):
    """line_terminator="\\r\\n" (pandas' spelling) is crlf; a bad value is shown
    with its control characters escaped, not as a raw line break."""
    crlf = tmp_path / "crlf.csv"
    sluice.run("convert", small_arrow, crlf, "-W", "line_terminator=crlf")
    chars = tmp_path / "chars.csv"
    sluice.run("convert", small_arrow, chars, "-W", "line_terminator=\r\n")
    assert chars.read_bytes() == crlf.read_bytes() and b"\r\n" in crlf.read_bytes()
    # Spelled with backslashes, as a shell passes -W 'line_terminator=\r\n'
    # (as delimiter=\t is taken): the message listed the spelling as valid
    # and refused it.
    for spelled, want in (("\\r\\n", crlf), ("\\n", None)):
        out = tmp_path / "spelled.csv"
        sluice.run("convert", small_arrow, out, "-W", f"line_terminator={spelled}")
        assert out.read_bytes() == (want.read_bytes() if want else
                                    crlf.read_bytes().replace(b"\r\n", b"\n"))
    err = sluice.expect_error("convert", small_arrow, tmp_path / "bad.csv", "-W",
                              "line_terminator=\n\r\x01").stderr.decode()
    assert "bad value '\\n\\r\\x01'" in err and err.count("\n") == 1, repr(err)
    err = sluice.expect_error("cat", "-O", "delimiter=\t\t", crlf).stderr.decode()
    assert "bad value '\\t\\t'" in err, repr(err)
    # A backslash and the quote are escaped too: '\\t' is not a tab.
    err = sluice.expect_error("cat", "-O", "delimiter=\\t'", crlf).stderr.decode()
    assert "bad value '\\\\t\\''" in err, repr(err)


@pytest.mark.parametrize("opts,read_opt", [(["delimiter=space"], "delimiter= "),
                                           (["quote=squote"], "quote='")])
def test_stray_quote_error_points_at_the_sniffed_dialect(sluice, tmp_path, opts, read_opt):
    """A file written with delimiter=space or quote=squote whose text holds a
    '"' is sniffed as another dialect: the error says the delimiter and quote
    were sniffed and which, and reads back given them."""
    table = pa.table({"s": ['5" screen', "a b"], "n": [1, 2]})
    path = sluice_write_csv(sluice, tmp_path, table, opts)
    err = sluice.expect_error("convert", path, tmp_path / "z.arrow").stderr.decode()
    assert "were sniffed" in err and "give delimiter= or quote=" in err, err
    sluice.run("convert", path, tmp_path / "z.arrow", "-O", read_opt)
    assert read_arrow(tmp_path / "z.arrow").to_pylist() == table.to_pylist()


@pytest.mark.skipif(not MEASURES_RSS, reason="address-space limits and ASan do not mix")
def test_many_one_row_batches_keep_up_with_the_reader(sluice, tmp_path):
    """200,000 one-row batches to CSV and JSON Lines: each batch's text went
    to the flusher thread on its own (two thread switches a batch: 3.5 s for
    100,000), the reader ran ahead, and the batches waiting took over 256
    MiB of address space; small batches' text is now gathered (256 KiB).
    How far the reader runs ahead depends on the machine's load, so the run
    sets a 32 MiB budget: whether or not the writer keeps up, the batches in
    flight (each one-row batch charged what it holds) stay under it and the
    run fits 192 MiB with the 58 MB input mapped. The default 256 MiB budget
    did not, on a loaded CI machine. The text is the one the same rows in
    one batch make."""
    import os
    import resource
    import subprocess
    pj = pytest.importorskip("pyarrow.json")
    n = 200_000
    table = pa.table({"i": pa.array(range(n)), "s": pa.array([f"s{k:07d}" for k in range(n)])})
    tiny, whole = tmp_path / "tiny.arrows", tmp_path / "whole.arrows"
    with ipc.new_stream(tiny, table.schema) as w:
        w.write_table(table, max_chunksize=1)
    with ipc.new_stream(whole, table.schema) as w:
        w.write_table(table)

    def limit_memory():
        resource.setrlimit(resource.RLIMIT_AS, (192 << 20, 192 << 20))
    for ext in ["csv", "jsonl"]:
        out, ref = tmp_path / f"tiny.{ext}", tmp_path / f"whole.{ext}"
        # One malloc arena: each thread's own reserves 128 MB of address space.
        proc = subprocess.run([sluice.binary, "--threads", "2", "--budget", "32M", "convert", str(tiny), str(out)],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=300,
                              preexec_fn=limit_memory, env=dict(os.environ, MALLOC_ARENA_MAX="1"))
        assert proc.returncode == 0, proc.stderr.decode(errors="replace")
        sluice.run("convert", whole, ref)
        assert out.read_bytes() == ref.read_bytes(), ext
    assert pcsv.read_csv(tmp_path / "tiny.csv").equals(table)
    assert pj.read_json(tmp_path / "tiny.jsonl").equals(table)
