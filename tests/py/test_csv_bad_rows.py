"""CSV bad-row options against DuckDB: `-O bad_rows=skip` drops rows with the
wrong number of fields or values that do not convert (DuckDB's
ignore_errors=true), `-O missing_fields=null` ends short rows with nulls
(DuckDB's null_padding=true). Both read with one and with several threads
and splits, and the skipped rows are counted on stderr."""

from __future__ import annotations

import random
import re

import pyarrow as pa
import pyarrow.ipc as ipc
import pytest

duckdb = pytest.importorskip("duckdb")

SCHEMA = "a:int64|b:float64|c:string|d:int32"
DUCK_COLUMNS = {"a": "BIGINT", "b": "DOUBLE", "c": "VARCHAR", "d": "INTEGER"}


def _generate(path, rows: int, seed: int, bad: bool, short: bool):
    """Writes a CSV; returns the number of bad rows written."""
    rnd = random.Random(seed)
    n_bad = 0
    with open(path, "w", newline="") as f:
        f.write("a,b,c,d\n")
        for i in range(rows):
            fields = [str(i), repr(rnd.random()), f"s{rnd.randrange(1000)}",
                      str(rnd.randrange(-2**31, 2**31))]
            roll = rnd.random()
            if short and roll < 0.05:
                fields = fields[:rnd.randrange(1, 4)]
                n_bad += 1
            elif bad and roll < 0.08:
                kind = rnd.randrange(4)
                if kind == 0:
                    fields.append("extra")
                elif kind == 1:
                    fields[0] = "not-a-number"
                elif kind == 2:
                    fields[3] = str(2**40)  # out of int32 range
                else:
                    fields = fields[:2]
                n_bad += 1
            f.write(",".join(fields) + "\n")
    return n_bad


def _sluice(sluice, path, *options, threads=1):
    args = ["cat", "-t", "arrows", "--threads", threads, "--schema", SCHEMA, path]
    for o in options:
        args[1:1] = ["-O", o]
    proc = sluice.run(*args)
    return ipc.open_stream(pa.BufferReader(proc.stdout)).read_all(), proc.stderr.decode()


def _duckdb(path, option):
    types = ", ".join(f"'{k}': '{v}'" for k, v in DUCK_COLUMNS.items())
    rel = duckdb.sql(f"select * from read_csv('{path}', header=true, sep=',', {option}=true, "
                     f"types={{{types}}})")
    return rel.to_arrow_table()


def _rows(table):
    return sorted(zip(*(table.column(c).to_pylist() for c in ("a", "b", "c", "d"))),
                  key=lambda r: r[0])


@pytest.mark.parametrize("threads,split", [(1, None), (4, "split_size=4096")])
def test_skip_bad_rows_matches_duckdb(sluice, tmp_path, threads, split):
    path = tmp_path / "bad.csv"
    n_bad = _generate(path, 20_000, seed=3, bad=True, short=False)
    assert n_bad > 100
    opts = ["bad_rows=skip"] + ([split] if split else [])
    table, err = _sluice(sluice, path, *opts, threads=threads)
    expected = _duckdb(path, "ignore_errors")
    assert table.num_rows == expected.num_rows == 20_000 - n_bad
    assert _rows(table) == _rows(expected)
    m = re.search(r"skipped (\d+) bad rows \(first: line (\d+)", err)
    assert m, err
    assert int(m.group(1)) == n_bad
    # Plan order is kept: the surviving rows are in file order.
    assert table.column("a").to_pylist() == sorted(table.column("a").to_pylist())


@pytest.mark.parametrize("numeric", [False, True])
def test_skip_a_chunks_first_row(sluice, tmp_path, numeric):
    """A bad row first in a chunk (4096 rows; on the all-numbers path, each
    row it leaves to the general one, a null say): the rows after it keep
    their fields. Once, every later chunk's first row was lost or shifted."""
    path = tmp_path / "first.csv"
    rnd = random.Random(11)
    with open(path, "w") as f:
        f.write("a,b,c\n")
        for i in range(20_000):
            roll = rnd.random()
            if i == 0 or roll < 0.01:
                f.write(f"{i}\n")  # bad: one field
            elif numeric and roll < 0.03:
                f.write(f"{i},,{-i}\n")  # a null: the general path's
            else:
                f.write(f"{i},{i}.5,{'' if numeric else 's'}{-i}\n")
    schema = "a:int64|b:float64|c:" + ("int64" if numeric else "string")
    proc = sluice.run("cat", "-t", "arrows", "-O", "bad_rows=skip", "--schema", schema, path)
    table = ipc.open_stream(pa.BufferReader(proc.stdout)).read_all()
    types = "{'a': 'BIGINT', 'b': 'DOUBLE', 'c': '%s'}" % ("BIGINT" if numeric else "VARCHAR")
    want = duckdb.sql(f"select * from read_csv('{path}', header=true, ignore_errors=true, "
                      f"types={types})").to_arrow_table()
    got = list(zip(*(table.column(c).to_pylist() for c in "abc")))
    assert got == list(zip(*(want.column(c).to_pylist() for c in "abc")))
    m = re.search(r"skipped (\d+) bad rows", proc.stderr.decode())
    assert m and int(m.group(1)) == 20_000 - want.num_rows


def test_missing_fields_null_matches_duckdb(sluice, tmp_path):
    path = tmp_path / "short.csv"
    n_short = _generate(path, 5_000, seed=5, bad=False, short=True)
    assert n_short > 50
    table, err = _sluice(sluice, path, "missing_fields=null", threads=2)
    expected = _duckdb(path, "null_padding")
    assert table.num_rows == 5_000
    assert _rows(table) == _rows(expected)
    assert "skipped" not in err


def test_both_options_pad_then_skip(sluice, tmp_path):
    path = tmp_path / "both.csv"
    path.write_text("a,b,c,d\n1,0.5,x,7\n2,0.25\n3,oops,y,8\n4,1.5,z,9,extra\n5,2.5,w,10\n")
    table, err = _sluice(sluice, path, "missing_fields=null", "bad_rows=skip")
    assert table.column("a").to_pylist() == [1, 2, 5]
    assert table.column("c").to_pylist() == ["x", None, "w"]
    assert "skipped 2 bad rows (first: line 4 (byte 25): column 'b'" in err


def test_default_is_an_error_naming_the_line(sluice, tmp_path):
    path = tmp_path / "err.csv"
    path.write_text("a,b,c,d\n1,0.5,x,7\n2,0.25\n")
    proc = sluice.expect_error("cat", "--schema", SCHEMA, path)
    assert "line 3" in proc.stderr.decode()
    # missing_fields=null alone still rejects rows with too many fields.
    path.write_text("a,b,c,d\n1,0.5,x,7,8\n")
    proc = sluice.expect_error("cat", "-O", "missing_fields=null", "--schema", SCHEMA, path)
    assert "expected 4 fields, found 5" in proc.stderr.decode()


def test_header_that_is_not_utf8_is_an_error(sluice, tmp_path):
    """Column names are UTF-8 in Arrow: a Latin-1 header is refused with its
    line and byte (as DuckDB refuses it; pyarrow fails decoding it), and the
    same file reads without a header, its bytes then a binary column."""
    path = tmp_path / "latin1.csv"
    path.write_bytes("id,caf\u00e9\n1,2\n".encode("latin-1"))
    with pytest.raises(duckdb.Error):
        duckdb.sql(f"select * from read_csv('{path}')").fetchall()
    proc = sluice.expect_error("schema", path)
    err = proc.stderr.decode()
    assert "line 1 (byte 3): the header's column 1, which starts there, is not UTF-8" in err, err
    out = tmp_path / "out.arrow"
    sluice.run("convert", path, out, "-O", "header=false", "--schema", "f0:string,f1:binary")
    got = pa.ipc.open_file(out).read_all()
    assert got.column("f1").to_pylist() == ["caf\u00e9".encode("latin-1"), b"2"]


@pytest.mark.parametrize("name_bytes", [3, 100_000])
def test_header_with_a_nul_byte_is_an_error(sluice, tmp_path, name_bytes):
    """A column name is a C string (ArrowSchema.name ends at a NUL): a
    header field holding a NUL byte is refused with its line and byte, as a
    header that is not UTF-8 is, and the file reads without a header.
    Before, the name was cut at the NUL (pyarrow keeps 'a\\0b', which its C
    interface then cuts), and a field of 64 KiB and more crashed the reader
    as it freed the name ('free(): invalid pointer')."""
    path = tmp_path / "nul.csv"
    name = b"a\0" + b"b" * (name_bytes - 2)
    path.write_bytes(b"id," + name + b"\n1,2\n")
    import pyarrow.csv as pacsv
    assert pacsv.read_csv(path).column_names == ["id", name.decode()]
    proc = sluice.expect_error("schema", path)
    err = proc.stderr.decode()
    assert "nul.csv: line 1 (byte 3): the header's column 1, which starts there, holds a NUL " \
           "byte" in err, err
    out = tmp_path / "out.arrow"
    sluice.run("convert", path, out, "-O", "header=false", "--schema", "f0:string,f1:binary")
    assert pa.ipc.open_file(out).read_all().column("f1").to_pylist() == [name, b"2"]


@pytest.mark.parametrize("python_name, bom, named, iconv_from", [
    ("utf-16", True, "UTF-16LE", "UTF-16"),      # Python writes its mark, little-endian
    ("utf-16-be", True, "UTF-16BE", "UTF-16"),
    ("utf-16-le", False, "UTF-16LE", "UTF-16LE"),
    ("utf-32", True, "UTF-32LE", "UTF-32"),
    ("utf-32-be", False, "UTF-32BE", "UTF-32BE"),
])
def test_utf16_and_utf32_files_are_named(sluice, tmp_path, python_name, bom, named, iconv_from):
    """A UTF-16 or UTF-32 file, with a byte-order mark or without one (told
    by where its NUL bytes fall): an error naming the encoding and the iconv
    command that converts it, with header=false too. Before, the header
    error suggested iconv -f latin1, and header=false, which the README said
    reads such a file, split it into made-up rows ('expected 2 fields,
    found 1'). The command the message gives makes the file pyarrow reads
    with its encoding= option."""
    import subprocess
    import pyarrow.csv as pacsv
    text = "name,city,n\nZo\u00eb,Krak\u00f3w,1\nAl,Paris,2\nBo,Oslo,3\n"
    path = tmp_path / "wide_chars.csv"
    mark = "\ufeff" if bom and python_name.endswith(("-be", "-le")) else ""
    path.write_bytes((mark + text).encode(python_name))
    want = pacsv.read_csv(path, read_options=pacsv.ReadOptions(encoding=python_name))
    for options in ([], ["-O", "header=false"]):
        err = sluice.expect_error("cat", *options, path).stderr.decode()
        assert f"wide_chars.csv: byte 0: {named} text" in err, err
        assert f"iconv -f {iconv_from} -t UTF-8" in err, err
        assert ("byte-order mark" in err) and ("latin1" not in err), err
    converted = tmp_path / "converted.csv"
    with open(converted, "wb") as out:
        subprocess.run(["iconv", "-f", iconv_from, "-t", "UTF-8", path], stdout=out, check=True)
    proc = sluice.run("cat", "-t", "arrows", converted)
    assert pa.ipc.open_stream(pa.BufferReader(proc.stdout)).read_all().equals(want)


def test_utf16_stream_is_named_before_it_is_sampled(sluice, tmp_path):
    """A .csv.gz of UTF-16 text past the 1 MiB sample (read as a stream):
    the same error, from the head of the stream."""
    import gzip
    text = "a,b\n" + "".join(f"{i},x{i}\n" for i in range(300_000))
    path = tmp_path / "big.csv.gz"
    path.write_bytes(gzip.compress(text.encode("utf-16"), 1))
    err = sluice.expect_error("schema", path).stderr.decode()
    assert "big.csv.gz: byte 0: UTF-16LE text (its byte-order mark FF FE)" in err, err
    assert "iconv -f UTF-16 -t UTF-8" in err, err


def test_bad_option_value(sluice, tmp_path):
    path = tmp_path / "x.csv"
    path.write_text("a\n1\n")
    proc = sluice.expect_error("cat", "-O", "bad_rows=sometimes", path)
    assert "bad_rows" in proc.stderr.decode()


def test_skip_widens_inferred_columns_instead(sluice, tmp_path):
    """With bad_rows=skip, a value past the sample that does not fit its
    column's inferred type widens the column (int64 -> float64, as without
    the option, and as pyarrow reads the whole file), rather than dropping
    a good row; rows with the wrong number of fields are still skipped."""
    path = tmp_path / "late.csv"
    with open(path, "w") as f:
        f.write("a,b\n")
        for i in range(300_000):
            f.write(f"{'1.5' if i == 250_000 else i},{i}\n")
        f.write("1,2,3\n")
    out = tmp_path / "late.arrow"
    proc = sluice.run("-O", "bad_rows=skip", "convert", path, out)
    table = ipc.open_file(out).read_all()
    assert table.schema.field("a").type == pa.float64()
    assert table.num_rows == 300_000
    assert table.column("a")[250_000].as_py() == 1.5
    assert "skipped 1 bad row" in proc.stderr.decode()


def test_skipped_rows_have_no_say_in_inferred_types(sluice, tmp_path):
    """Rows bad_rows=skip drops (too many fields, or too few without
    missing_fields=null) are left out of the type inference too: their
    values do not turn an int column into strings. DuckDB's ignore_errors
    infers the same types and reads the same rows."""
    path = tmp_path / "sample_bad.csv"
    lines = ["a,b,c"] + [f"{i},{i * 0.5},s{i}" for i in range(200)]
    lines[10] = "oops,x,y,z"      # too many fields
    lines[20] = "text,here"       # too few
    lines[30] = "2024-01-01"      # too few, a lone field
    path.write_text("\n".join(lines) + "\n")
    out = tmp_path / "sample_bad.arrow"
    proc = sluice.run("-O", "bad_rows=skip", "convert", path, out)
    table = ipc.open_file(out).read_all()
    rel = duckdb.sql(f"select * from read_csv('{path}', header=true, ignore_errors=true)")
    assert [str(t) for t in rel.types] == ["BIGINT", "DOUBLE", "VARCHAR"]
    assert table.schema.types == [pa.int64(), pa.float64(), pa.string()]
    assert table.to_pylist() == rel.to_arrow_table().to_pylist()
    assert "skipped 3 bad rows" in proc.stderr.decode()
    # With missing_fields=null a short row is a row: its values count (the
    # long one is still dropped).
    proc = sluice.run("-O", "bad_rows=skip", "-O", "missing_fields=null", "convert", path, out)
    table = ipc.open_file(out).read_all()
    assert table.schema.field("a").type == pa.string() and table.num_rows == 199


def test_first_skipped_row_is_the_first_in_the_input(sluice, tmp_path):
    """Splits finish in any order: the report names the input's first bad
    row, not whichever split met one first in time. Here bad rows sit at
    the start and the end of every 64 KiB split, so workers meet theirs at
    about the same moment (the report named one thousands of lines later
    in some runs)."""
    path = tmp_path / "late.csv"
    lines = ["a,b,c,d"]
    first = None
    size = 8
    for i in range(200_000):
        bad = (size % 65536) > 65536 - 200 or (size % 65536) < 100
        lines.append(f"{i},oops" if bad else f"{i},{i * 0.5},s{i},{i}")
        if bad and first is None:
            first = len(lines)
        size += len(lines[-1]) + 1
    path.write_text("\n".join(lines) + "\n")
    seen = set()
    for _ in range(8):
        _, err = _sluice(sluice, path, "bad_rows=skip", "split_size=64k", threads=2)
        seen.add(re.search(r"first: line (\d+)", err).group(1))
    assert seen == {str(first)}, (seen, first)


def _pyarrow_skipping(path):
    """pyarrow.csv's reading with bad rows skipped, and their line numbers."""
    import pyarrow.csv as pcsv
    bad = []

    def handler(row):
        bad.append(row.number)
        return "skip"

    table = pcsv.read_csv(path, read_options=pcsv.ReadOptions(use_threads=False),
                          parse_options=pcsv.ParseOptions(invalid_row_handler=handler))
    return table, bad


@pytest.mark.parametrize("text", ["id,comment\n1,great,\n2,ok\n", "c0\nz\nab,\n",
                                  "c0,c1\n1,2\n3,\n4,,\n"])
def test_extra_empty_field_is_a_bad_row(sluice, tmp_path, text):
    """A row with one empty field more than the header names is a row with
    too many fields, as pyarrow and polars refuse it: an error naming its
    line and byte, or dropped and counted with bad_rows=skip. Once, such a
    field was dropped silently in every file (`ab,` read as `ab`), though
    only a header ending in a delimiter makes rows that may end in one."""
    import pyarrow.csv as pcsv
    polars = pytest.importorskip("polars")
    path = tmp_path / "extra.csv"
    path.write_text(text)
    with pytest.raises(pa.ArrowInvalid, match="Expected . columns, got"):
        pcsv.read_csv(path)
    with pytest.raises(Exception, match="more fields than defined"):
        polars.read_csv(path)
    want, bad = _pyarrow_skipping(path)
    line = bad[0]
    byte = len("".join(text.splitlines(keepends=True)[:line - 1]).encode())
    err = sluice.expect_error("cat", path).stderr.decode()
    assert f"line {line} (byte {byte}): expected {want.num_columns} fields, found " \
           f"{want.num_columns + 1}" in err, err
    proc = sluice.run("cat", "-t", "arrows", "-O", "bad_rows=skip", path)
    got = ipc.open_stream(pa.BufferReader(proc.stdout)).read_all()
    assert got.to_pylist() == want.to_pylist()
    assert f"skipped {len(bad)} bad row" in proc.stderr.decode()
    # missing_fields=null fills short rows only: a long one stays an error.
    err = sluice.expect_error("cat", "-O", "missing_fields=null", path).stderr.decode()
    assert f"line {line} (byte {byte})" in err, err


@pytest.mark.parametrize("simd", ["scalar", "sse2", "avx2", "auto"])
def test_extra_empty_field_on_every_path(sluice, tmp_path, simd):
    """Numeric rows (the fused loops' shape) with an extra empty field here
    and there: every loop, with one thread or two, whole splits or 4 KiB
    ones, the general path, and a compressed stream report the first such
    row, and bad_rows=skip drops just the rows pyarrow.csv drops."""
    import gzip
    rnd = random.Random(7)
    lines = ["a,b,c"]
    for i in range(30_000):
        row = f"{i},{rnd.random()},{rnd.randrange(-10**9, 10**9)}"
        lines.append(row + ("," if i in (7_000, 12_345, 29_999) else ""))
    text = "\n".join(lines) + "\n"
    path = tmp_path / "numbers.csv"
    path.write_text(text)
    gz = tmp_path / "numbers.csv.gz"
    gz.write_bytes(gzip.compress(text.encode()))
    want, bad = _pyarrow_skipping(path)
    assert len(bad) == 3
    byte = len("".join(text.splitlines(keepends=True)[:bad[0] - 1]).encode())
    for source in (path, gz):
        for options in ([], ["fastpath=false"], ["split_size=4096"]):
            for threads in (1, 2):
                args = ["--threads", threads, "-O", f"simd={simd}"]
                for o in options:
                    args += ["-O", o]
                err = sluice.expect_error("cat", *args, source).stderr.decode()
                assert f"line {bad[0]} (byte {byte}): expected 3 fields, found 4" in err, \
                    (source, options, threads, err)
                proc = sluice.run("cat", "-t", "arrows", "-O", "bad_rows=skip", *args, source)
                got = ipc.open_stream(pa.BufferReader(proc.stdout)).read_all()
                assert got.equals(want), (source, options, threads)
                assert "skipped 3 bad rows" in proc.stderr.decode()


def test_row_skipped_for_a_given_type_still_types_other_columns(sluice, tmp_path):
    """A row bad_rows=skip drops because a value does not convert to the
    type schema= gives (300 as int8) is sampled like any other: its `x`
    makes b a string, as DuckDB's ignore_errors with types= infers it (the
    docs said such rows had no say; only rows of a wrong field count have
    none). The row itself is dropped, as in DuckDB."""
    path = tmp_path / "br3.csv"
    path.write_text("a,b\n1,2\n300,x\n7,8\n")
    out = tmp_path / "br3.arrow"
    proc = sluice.run("-O", "bad_rows=skip", "--schema", "a:int8", "convert", path, out)
    table = ipc.open_file(out).read_all()
    rel = duckdb.sql(f"select * from read_csv('{path}', header=true, ignore_errors=true, "
                     "types={'a': 'TINYINT'})")
    assert [str(t) for t in rel.types] == ["TINYINT", "VARCHAR"]
    assert table.schema.types == [pa.int8(), pa.string()]
    assert table.to_pylist() == rel.to_arrow_table().to_pylist()
    assert "skipped 1 bad row" in proc.stderr.decode()
