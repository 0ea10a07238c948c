"""CSV header and quote sniffing, type inference of nulls, and schema
option errors, against pyarrow.csv, DuckDB and polars where they apply.

- header=auto: a first row of integer names over float columns (years over
  a pivot table, pandas' ,0,1 over float columns) is a header, as pyarrow,
  polars and pandas (which always assume one) read it; a headerless file
  stays headerless.
"""

from __future__ import annotations

import math
import shutil
import struct
import subprocess

import pytest

pa = pytest.importorskip("pyarrow")
pcsv = pytest.importorskip("pyarrow.csv")
ipc = pytest.importorskip("pyarrow.ipc")

from conftest import arrow_to_csv  # noqa: E402
from test_csv_options import sluice_read  # noqa: E402


# ---- header sniffing ---------------------------------------------------------------

@pytest.mark.parametrize("text", [
    "country,2022,2023,2024\nFrance,1.5,2.5,3.5\nSpain,4.0,5.0,6.0\n",
    # pandas' DataFrame(np_array).to_csv(): an unnamed index over float columns
    ",0,1\n0,0.5,1.25\n1,2.5,3.75\n2,1e-3,2e3\n",
    # a date over timestamps that all have times
    "2024-01-01,7\n2024-01-02 10:00:00,2\n2024-01-03T11:30:00,3\n",
])
def test_integer_names_over_float_columns_are_a_header(sluice, tmp_path, text):
    """An integer (a date) in the first row over a column whose sampled values
    are all floats with a fraction or exponent (timestamps with a time) is
    of another kind than they are: the row is a header, as pyarrow, polars
    and pandas read it. It was taken for data, the names became f0..fn."""
    path = tmp_path / "pivot.csv"
    path.write_text(text)
    got = sluice_read(sluice, path)
    want = pcsv.read_csv(path)
    assert got.column_names == want.column_names
    assert got.num_rows == want.num_rows
    for name in want.column_names[1:]:
        assert got.column(name).to_pylist() == want.column(name).to_pylist()
    polars = pytest.importorskip("polars")
    assert got.column_names == polars.read_csv(path).columns


def test_sluice_reads_back_its_float_table_with_year_names(sluice, tmp_path):
    """sluice's own CSV of a float table with integer column names reads
    back with those names."""
    table = pa.table({"2023": [1.5, 2.5], "2024": [3.25, 4.75]})
    out = arrow_to_csv(sluice, table, tmp_path, "years")
    assert sluice_read(sluice, out).equals(table)


@pytest.mark.parametrize("text", [
    # pandas' DataFrame({'city': [...], 'country': [...]}).to_csv(): its index
    ",city,country\n0,Paris,FR\n1,Rome,IT\n",
    ",name\n10,x\n20,y\n",
    # a first row of nulls alone
    ",\n1,2\n3,4\n",
])
def test_empty_first_name_over_an_integer_column_is_a_header(sluice, tmp_path, text):
    """An empty first name fits the integer column below it as a null does,
    and the other names fit their string columns: the row was taken for
    data (names f0.., the names a row of data, a null row added) on the
    strength of a column whose first-row value is null. It is a header, as
    pyarrow, polars and pandas read it (a first row of nulls alone too)."""
    path = tmp_path / "index.csv"
    path.write_text(text)
    got = sluice_read(sluice, path)
    want = pcsv.read_csv(path)
    assert got.column_names == want.column_names
    assert got.to_pydict() == want.to_pydict()
    # (polars and pandas rename empty and repeated names)
    polars = pytest.importorskip("polars")
    assert got.num_rows == polars.read_csv(path).height
    pandas = pytest.importorskip("pandas")
    assert got.num_rows == len(pandas.read_csv(path))


def test_sluice_reads_back_its_table_with_an_empty_name(sluice, tmp_path):
    """sluice writes a column named "" as a quoted "" (as pyarrow and polars
    name pandas' unnamed index): it reads back as that header, and so does
    a table of that column alone."""
    table = pa.table({"": pa.array([10, 20], pa.int64()), "name": ["x", "y"]})
    out = arrow_to_csv(sluice, table, tmp_path, "unnamed")
    assert out.read_text() == '"",name\n10,x\n20,y\n'
    assert sluice_read(sluice, out).equals(table)
    assert pcsv.read_csv(out).equals(table)
    alone = pa.table({"": pa.array([10, 20], pa.int64())})
    out = arrow_to_csv(sluice, alone, tmp_path, "unnamed_alone")
    assert sluice_read(sluice, out).equals(alone)
    assert pcsv.read_csv(out).equals(alone)


@pytest.mark.parametrize("text", [
    # headerless: text id, bigint, ints (W4's s1.csv); floats with integers among them
    "k1,1234567890123,1,2,3\nk2,1234567890124,4,5,6\nk3,1234567890125,7,8,9\n",
    "x,3,2.5\ny,1.5,2\nz,4,7.5\n",
    "2024-01-01,1\n2024-01-02,2\n2024-01-03 10:00:00,3\n",
    # integer names over integer columns: no sniffer can tell (header=true)
    "2023,2024\n1,2\n3,4\n",
])
def test_headerless_files_stay_headerless(sluice, tmp_path, text):
    """Where the first row is of the kinds of the rows below (an integer
    over a float column that holds integers too), it is data, as DuckDB's
    sniffer reads it."""
    path = tmp_path / "data.csv"
    path.write_text(text)
    got = sluice_read(sluice, path)
    assert got.column_names == [f"f{i}" for i in range(got.num_columns)]
    assert got.num_rows == text.count("\n")
    duckdb = pytest.importorskip("duckdb")
    want = duckdb.sql(f"SELECT * FROM read_csv('{path}')")
    assert want.columns == [f"column{i}" for i in range(got.num_columns)]
    assert len(want.fetchall()) == got.num_rows
    assert sluice_read(sluice, path, "header=true").num_rows == got.num_rows - 1


@pytest.mark.parametrize("text", ["id,name,2024\n", "2024,total\n", "a,true,1.5\n", "x\n"])
def test_a_lone_row_with_text_is_a_header(sluice, tmp_path, text):
    """A file of one row holding a text value is a header and no rows, as
    pyarrow, polars and pandas read it (a table of no rows that sluice wrote
    came back as one row of its names); a lone row of typed values alone
    (`1,2.5`) is still data, as DuckDB and sluice's sniffer take it."""
    import pyarrow.csv as pacsv
    path = tmp_path / "one.csv"
    path.write_text(text)
    got = sluice_read(sluice, path)
    want = pacsv.read_csv(path)
    assert got.column_names == want.column_names and got.num_rows == want.num_rows == 0
    path.write_text("1,2.5\n")
    got = sluice_read(sluice, path)
    assert got.column_names == ["f0", "f1"] and got.to_pylist() == [{"f0": 1, "f1": 2.5}]


@pytest.mark.parametrize("text", ["1,2,\n3,4,\n5,6,\n", "x,1.5,\ny,2.5,\nz,3,\n", "1,\n2,\n"])
def test_headerless_lines_ending_in_a_delimiter_keep_that_column(sluice, tmp_path, text):
    """Lines that all end in a delimiter, with no header (told so by
    header=auto): the empty last field is a column of nulls, as with
    header=false and as pyarrow, polars and DuckDB read it (the README says
    so); header=auto dropped it, taking the file for the dialect of a
    header that ends in a delimiter."""
    import pyarrow.csv as pacsv
    polars = pytest.importorskip("polars")
    path = tmp_path / "data.csv"
    path.write_text(text)
    want = pacsv.read_csv(path, read_options=pacsv.ReadOptions(autogenerate_column_names=True))
    got = sluice_read(sluice, path)
    assert got.column_names == want.column_names
    assert got.to_pylist() == want.to_pylist()
    assert got.num_columns == polars.read_csv(path, has_header=False).width
    assert sluice_read(sluice, path, "header=false").to_pylist() == got.to_pylist()


# ---- quoted null spellings -----------------------------------------------------------

@pytest.mark.parametrize("at", ["top", "middle"])
@pytest.mark.parametrize("spelling, value, options", [
    ('"NA"', "{i}", ()),
    ('"NA"', "{i}.5", ()),
    ('"null"', "{i}.5", ()),
])
def test_quoted_null_spelling_types_the_column_wherever_it_lies(sluice, tmp_path, at, spelling,
                                                                 value, options):
    """A quoted null spelling that is no number, in a column without a given
    type, is text (the writer quotes a string "NA" so), which makes the
    column a string, in the sample as past it, as DuckDB reads "NA". Past
    the sample it was a null ("NA" in an int column), while a sampled one
    made the column a string: the type depended on where the value lay."""
    n = 300_000
    k = 1 if at == "top" else n // 2 + 1234
    path = tmp_path / "quoted.csv"
    path.write_text("a,b\n" + "".join((spelling if i == k else value.format(i=i)) + f",{i}\n"
                                      for i in range(n)))
    for extra in [(), ("infer_bytes=all",)]:
        got = sluice_read(sluice, path, *options, *extra)
        assert got.schema.field("a").type == pa.string()
        assert got.column("a")[k].as_py() == spelling.strip('"')
        assert got.column("a")[k + 1].as_py() == value.format(i=k + 1)
    if spelling == '"NA"':
        duckdb = pytest.importorskip("duckdb")
        want = duckdb.sql(f"SELECT a FROM read_csv('{path}', sample_size=-1)").fetchall()
        assert got.column("a").to_pylist() == [r[0] for r in want]
    if spelling == '"NA"' and value == "{i}":
        # A given type takes it as a null, as pyarrow and DuckDB do by default.
        got = sluice_read(sluice, path, schema="a:int64")
        assert got.column("a").equals(pcsv.read_csv(path).column("a"))


@pytest.mark.parametrize("at", ["top", "middle"])
@pytest.mark.parametrize("spelling, value, want_type, options", [
    ('"NaN"', "{i}.5", pa.float64(), ()),
    ('"NaN"', "{i}", pa.float64(), ()),  # an int column: the NaN makes it float
    ('"1.5"', "{i}.5", pa.float64(), ()),
    ('"1.5"', "{i}", pa.float64(), ()),
    ('"inf"', "{i}.5", pa.float64(), ()),
    ('"-inf"', "{i}.5", pa.float64(), ()),
    ('"1"', "{i}", pa.int64(), ("null_values=1|",)),  # a quoted null spelling that is an int
])
def test_quoted_number_is_a_number_wherever_it_lies(sluice, tmp_path, at, spelling, value,
                                                     want_type, options):
    """Quoting does not change a number's type or value: a quoted "NaN" among
    floats is a NaN in a float column, as DuckDB and polars read it (pyarrow
    types the column float too, and takes the NaN for a null). It was text,
    and made its column a string, being a null spelling ("NaN" in float
    columns); a quoted "1.5" or "inf" was a number already. Past the sample,
    one the column does not hold widens it, as an unquoted one does."""
    n = 300_000
    k = 1 if at == "top" else n // 2 + 1234
    path = tmp_path / "quoted.csv"
    path.write_text("a,b\n" + "".join((spelling if i == k else value.format(i=i)) + f",{i}\n"
                                      for i in range(n)))
    want = float(spelling.strip('"')) if want_type == pa.float64() else int(spelling.strip('"'))
    for extra in [(), ("infer_bytes=all",)]:
        got = sluice_read(sluice, path, *options, *extra)
        assert got.schema.field("a").type == want_type
        a = got.column("a").to_pylist()
        assert a[k] == want or (math.isnan(want) and math.isnan(a[k]))
        assert a[k + 1] == (float if want_type == pa.float64() else int)(value.format(i=k + 1))
        # (the unquoted 1 in row 1 is the null spelling null_values=1 gives)
        assert got.column("a").null_count == (1 if options and at == "middle" else 0)
    if options:
        return
    # the peers, told to look at every row and that '"' quotes
    duckdb = pytest.importorskip("duckdb")
    rel = duckdb.sql(f"SELECT a FROM read_csv('{path}', quote='\"', sample_size=-1)")
    assert str(rel.types[0]) == "DOUBLE"
    peer = [r[0] for r in rel.fetchall()]
    polars = pytest.importorskip("polars")
    frame = polars.read_csv(path, infer_schema_length=None)
    assert frame.schema["a"] == polars.Float64
    for other in [peer, frame["a"].to_list()]:
        assert [x if x == x else "nan" for x in other] == [x if x == x else "nan" for x in a]
    # pyarrow types the column float (its "NaN" is a null, and makes no int
    # column float) where its first block holds the value
    if at == "top" and not (spelling == '"NaN"' and value == "{i}"):
        assert pcsv.read_csv(path).schema.field("a").type == pa.float64()


def test_quoted_number_from_a_pipe_is_a_number(sluice):
    """From a pipe, which cannot be read again, a quoted "NaN" past the
    sample is a NaN in a float column (as DuckDB and polars read it), and
    in an int column stops the read as an unquoted 1.5 does, naming it."""
    n = 300_000
    k = n // 2

    def cat(value, spelling):
        text = "a,b\n" + "".join((spelling if i == k else value.format(i=i)) + f",{i}\n"
                                 for i in range(n))
        return subprocess.run([sluice.binary, "cat", "-", "-f", "csv", "-t", "arrows", "-q"],
                              input=text.encode(), stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, timeout=120)

    proc = cat("{i}.5", '"NaN"')
    assert proc.returncode == 0, proc.stderr.decode()
    got = ipc.open_stream(proc.stdout).read_all()
    assert got.schema.field("a").type == pa.float64()
    assert math.isnan(got.column("a")[k].as_py()) and got.column("a").null_count == 0
    for spelling in ['"NaN"', "1.5"]:
        proc = cat("{i}", spelling)
        err = proc.stderr.decode()
        assert proc.returncode != 0 and f"line {k + 2} " in err, err
        assert f"'{spelling.strip(chr(34))}' as int64" in err and "schema=a:float64" in err, err


def test_quoted_null_spelling_from_a_pipe_is_a_null(sluice, tmp_path):
    """From a pipe, which cannot be read again, a quoted "NA" past the sample
    is a null in an int column, as before (pyarrow reads a null too)."""
    n = 300_000
    k = n // 2
    text = "a,b\n" + "".join(('"NA"' if i == k else str(i)) + f",{i}\n" for i in range(n))
    proc = subprocess.run([sluice.binary, "cat", "-", "-f", "csv", "-t", "arrows", "-q"],
                          input=text.encode(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr.decode()
    got = ipc.open_stream(proc.stdout).read_all()
    assert got.schema.field("a").type == pa.int64()
    assert got.column("a")[k].as_py() is None


# ---- quote sniffing ------------------------------------------------------------------

@pytest.mark.parametrize("text", [
    "id,name,poss\n1,'Allo,the Smiths'\n2,x,y\n",
    "city,country,owner\n's-Hertogenbosch,NL,the Jones'\nParis,FR,x\n",
])
def test_apostrophe_is_no_quote_when_rows_would_then_differ(sluice, tmp_path, text):
    """' is not sniffed as the quote when the rows read with it would hold
    different numbers of delimiters while read with " they do not: the
    apostrophes are text, as pyarrow, DuckDB and polars read them. It was
    taken for the quote, and the read failed with "expected 3 fields"."""
    path = tmp_path / "apostrophes.csv"
    path.write_text(text)
    got = sluice_read(sluice, path)
    assert got.equals(pcsv.read_csv(path))
    if text.startswith("id"):  # (DuckDB's sniffer makes one column of the other)
        duckdb = pytest.importorskip("duckdb")
        assert [tuple(r.values()) for r in got.to_pylist()] == \
            duckdb.sql(f"SELECT * FROM read_csv('{path}')").fetchall()
    polars = pytest.importorskip("polars")
    assert [tuple(r.values()) for r in got.to_pylist()] == polars.read_csv(path).rows()


def test_field_count_error_names_a_sniffed_apostrophe_quote(sluice, tmp_path):
    """A row with the wrong field count in a file whose quote was sniffed as
    ' says so, and how to read apostrophes as text."""
    path = tmp_path / "late.csv"
    path.write_text("a,b\n'x,y',1\n" + "z,2\n" * 40000 + "p,q,r\n")
    err = sluice.expect_error("cat", path, "-t", "csv").stderr.decode()
    assert "expected 2 fields, found 3" in err and "' was sniffed as the quote" in err, err
    assert "quote=\"" in err


# ---- compressed input told by its bytes ------------------------------------------------

def _skippable(magic_low: int, payload: bytes) -> bytes:
    return struct.pack("<II", 0x184D2A50 | magic_low, len(payload)) + payload


def test_zstd_starting_with_a_skippable_frame(sluice, tmp_path):
    """A zstd input whose first frame is a skippable one (magic 0x184D2A5?,
    as pzstd writes before every frame) is zstd: it was read as text, and
    failed on a stray quote or a header that is not UTF-8. pyarrow and
    DuckDB read such files; so do zstd -d and libzstd's stream decoder."""
    text = "a,b\n" + "".join(f"{i},x{i}\n" for i in range(50000))
    plain = tmp_path / "p.csv"
    plain.write_text(text)
    files = []
    # by hand: skippable frames (of two magics) around libzstd frames
    codec = pa.Codec("zstd")
    half = len(text) // 2
    cut = text.index("\n", half) + 1
    data = (_skippable(0, b"\x00\x01") + codec.compress(text[:cut].encode(), asbytes=True) +
            _skippable(0xF, b"") + codec.compress(text[cut:].encode(), asbytes=True))
    hand = tmp_path / "hand.csv.zst"
    hand.write_bytes(data)
    files.append(hand)
    if shutil.which("pzstd"):
        pz = tmp_path / "pz.csv.zst"
        subprocess.run(["pzstd", "-q", "-f", "-p", "2", str(plain), "-o", str(pz)], check=True)
        assert pz.read_bytes()[:4] == bytes.fromhex("502a4d18")
        files.append(pz)
    want = pcsv.read_csv(plain)
    for path in files:
        assert sluice_read(sluice, path).equals(want), path
        assert pcsv.read_csv(path).equals(want)
        # and from a pipe, told by its bytes alone
        proc = subprocess.run([sluice.binary, "cat", "-", "-f", "csv", "-t", "arrows", "-q"],
                              input=path.read_bytes(), stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, timeout=120)
        assert proc.returncode == 0, proc.stderr.decode()
        assert ipc.open_stream(proc.stdout).read_all().equals(want)


# ---- option errors ---------------------------------------------------------------------

@pytest.mark.parametrize("args, message", [
    (["--schema", "a:int8,a:string"], "schema names column 'a' twice (int8 and string)"),
    (["--schema", "a:int8", "-O", "schema=b:int8"],
     "option schema given twice with different values ('a:int8' and 'b:int8'"),
    (["-O", "delimiter=;", "-O", "delimiter=,"],
     "option delimiter given twice with different values (';' and ','"),
    (["-O", "sep=;", "-O", "delimiter=,"],
     "option delimiter given twice with different values (';' and ','"),
    (["-O", "header=true", "-O", "header=false"],
     "option header given twice with different values ('true' and 'false'"),
    (["--schema", "a:dictionary<values=string, indices=int32, ordered=0>"],
     "column 'a': dictionary types are not supported in a CSV schema"),
])
def test_schema_and_options_given_ambiguously_are_errors(sluice, tmp_path, args, message):
    """A schema naming a column twice, or --schema with a different
    -O schema=: an error naming them (one of them silently won). A dictionary type says it is not supported (the error
    was about a malformed format string)."""
    path = tmp_path / "s.csv"
    path.write_text("a,b\n1,2\n")
    err = sluice.expect_error("cat", path, *args).stderr.decode()
    assert message in err, err


def test_options_given_twice_alike_are_fine(sluice, tmp_path):
    path = tmp_path / "s.csv"
    path.write_text("a,b\n1,2\n")
    got = sluice_read(sluice, path, "schema=a:int8", schema="a:int8")
    assert got.schema.field("a").type == pa.int8()
    err = sluice.run("cat", path, "-O", "delimiter=,", "-O", "sep=,", "-O", "header=true",
                     "-O", "header=true").stderr.decode()
    assert err == "", err


def test_stray_quote_hint_grammar(sluice, tmp_path):
    path = tmp_path / "q.csv"
    path.write_text('a,b\n1,x"y\n')
    err = sluice.expect_error("cat", path).stderr.decode()
    assert "since the delimiter and quote were sniffed" in err, err
    err = sluice.expect_error("cat", path, "-O", "delimiter=,").stderr.decode()
    assert "since the quote was sniffed" in err, err


# ---- a first row longer than the first sample -------------------------------------

def _long_first_rows():
    # (name, text): a first data row of > 1 MiB, plain or with quoted line feeds
    return [
        ("header_quoted_lf", 'id,s,v\n0,"' + "ab\n" * 400_000 + '",1.5\n1,x,2.5\n'),
        ("header_plain", "id,s,v\n0," + "ab" * 600_000 + ",1.5\n1,x,2.5\n"),
        ("headerless_plain", "7," + "ab" * 600_000 + ",1.5\n1,x,2.5\n2,y,3.5\n"),
        ("headerless_quoted_lf", '7,"' + "ab\n" * 400_000 + '",1.5\n1,x,2.5\n2,y,3.5\n'),
    ]


def _read_all_ways(sluice, path):
    """The table sluice reads from the file, from a pipe and from its .gz."""
    import gzip
    gz = path.with_name(path.name + ".gz")
    gz.write_bytes(gzip.compress(path.read_bytes(), compresslevel=1))
    got = {"file": sluice_read(sluice, path), "gz": sluice_read(sluice, gz)}
    proc = subprocess.run([sluice.binary, "cat", "-", "-f", "csv", "-t", "arrows", "-q"],
                          input=path.read_bytes(), stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, timeout=120)
    assert proc.returncode == 0, proc.stderr.decode()
    got["pipe"] = ipc.open_stream(proc.stdout).read_all()
    return got


@pytest.mark.parametrize("name,text", _long_first_rows(), ids=[n for n, _ in _long_first_rows()])
def test_first_row_longer_than_the_sample(sluice, tmp_path, name, text):
    """A first data row longer than the 1 MiB sample: types come from whole
    rows (a stream's sample grows until it holds one; a quoted line feed
    inside the row is no row's end), and a headerless file's long first row
    stays data when more rows follow (the lone-row rule is for one-row
    files). It was: all columns string from a pipe or .gz, and the long row
    taken for a header. DuckDB reads it as here (pyarrow, with header and
    newlines_in_values, too)."""
    path = tmp_path / f"{name}.csv"
    path.write_text(text)
    duckdb = pytest.importorskip("duckdb")
    want = duckdb.sql(f"SELECT * FROM read_csv('{path}', max_line_size=10000000)").arrow()
    if hasattr(want, "read_all"):
        want = want.read_all()
    headerless = name.startswith("headerless")
    if not headerless:
        pa_want = pcsv.read_csv(path, parse_options=pcsv.ParseOptions(newlines_in_values=True))
        assert [f.type for f in pa_want.schema] == [f.type for f in want.schema]
    for how, got in _read_all_ways(sluice, path).items():
        assert [f.type for f in got.schema] == [pa.int64(), pa.string(), pa.float64()], how
        assert got.num_rows == want.num_rows, how
        if headerless:
            assert got.column_names == ["f0", "f1", "f2"], how
        else:
            assert got.column_names == want.column_names, how
        assert got.column(0).to_pylist() == want.column(0).to_pylist(), how
        assert got.column(2).to_pylist() == want.column(2).to_pylist(), how
        assert got.column(1).to_pylist() == want.column(1).to_pylist(), how
