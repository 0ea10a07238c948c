"""`sluice convert --filter`: the rows kept reach every writer as pyarrow
keeps them. Sorted data cut by a range keeps one run of rows per batch, which
the scan hands over as a window of the decoded buffers (child offsets), not a
copy, when the run is half the batch or more (7123..8877 in batches of 1000:
runs at a batch's end and start), and copies when shorter (id<1234,
id>19990): every writer must honour those offsets, nested columns included."""
from __future__ import annotations

import os

import pytest

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")
pc = pytest.importorskip("pyarrow.compute")


def _table(n=20000):
    return pa.table({
        "id": pa.array(range(n), pa.int64()),
        "s": pa.array([None if i % 11 == 0 else "v%d" % i for i in range(n)]),
        "l": pa.array([None if i % 13 == 0 else list(range(i % 4)) for i in range(n)],
                      pa.list_(pa.int32())),
        "st": pa.array([{"a": i, "b": None if i % 7 == 0 else str(i)} for i in range(n)]),
        "f": pa.array([None if i % 5 == 0 else i / 3 for i in range(n)]),
    })


@pytest.mark.parametrize("ext", ["parquet", "arrow", "arrows", "avro", "csv", "jsonl"])
@pytest.mark.parametrize("text,lo,hi", [("id>=7123,id<8877", 7123, 8877),
                                        ("id<1234", 0, 1234),
                                        ("id>19990", 19991, 20000)])
def test_convert_with_a_filter(sluice, tmp_path, ext, text, lo, hi):
    t = _table()
    src = tmp_path / "src.parquet"
    pq.write_table(t, src, row_group_size=3000)
    dst = tmp_path / f"out.{ext}"
    cols = ["id", "s", "f"] if ext in ("csv", "jsonl") else t.column_names
    sluice.run("convert", "-q", src, dst, "--filter", text, "-c", ",".join(cols),
               "-O", "batch_rows=1000")
    want = t.slice(lo, hi - lo).select(cols)
    if ext == "parquet":
        got = pq.read_table(dst)
    elif ext in ("arrow", "arrows"):
        import pyarrow.ipc as ipc
        got = (ipc.open_file(dst) if ext == "arrow" else ipc.open_stream(dst)).read_all()
    elif ext == "avro":
        fastavro = pytest.importorskip("fastavro")
        with open(dst, "rb") as f:
            got = pa.Table.from_pylist(list(fastavro.reader(f)))
    elif ext == "csv":
        import pyarrow.csv as pcsv
        got = pcsv.read_csv(dst, convert_options=pcsv.ConvertOptions(
            column_types={"id": pa.int64(), "s": pa.string(), "f": pa.float64()},
            strings_can_be_null=True))
    else:
        import json
        got = pa.Table.from_pylist([json.loads(line) for line in open(dst)])
    assert got.num_rows == want.num_rows
    for name in cols:
        assert got[name].to_pylist() == want[name].to_pylist(), name


@pytest.mark.parametrize("text", [
    "x>2.5", "x>=2.5", "x<2.5", "x<=2.5", "x=2.5", "x!=2.5", "x=2.0", "x=1e0", "x>1e30",
    "x<-1e30", "x>=-1e30", "x=2.5|3", "x!=2.5|3", "x=0.5|1.5", "x!=0.5|1.5",
    "u>-1", "u<-1", "u=-1", "u!=-1", "u>=1e20", "u<1e20", "u>2.5", "u<=2.5", "u=-1|7"])
def test_other_numbers_on_integer_columns_compare_as_duckdb(sluice, tmp_path, text):
    """A float or an out-of-range number on an integer column compares as
    DuckDB compares it (x > 2.5 is x > 2, x = 2.5 holds for no row, u > -1
    for every non-null unsigned row); such filters were refused. Row groups
    of two rows: statistics prune with the same conditions."""
    import re
    duckdb = pytest.importorskip("duckdb")
    table = pa.table({"x": pa.array([1, 2, 3, -4, None, 7], pa.int32()),
                      "u": pa.array([0, 5, 2**64 - 1, None, 7, 2], pa.uint64())})
    src = tmp_path / "n.parquet"
    pq.write_table(table, src, row_group_size=2)
    proc = sluice.run("cat", "-q", src, "--filter", text, "-t", "arrows")
    import pyarrow.ipc as ipc
    got = ipc.open_stream(pa.BufferReader(proc.stdout)).read_all()
    col, op, values = re.match(r"(\w)(!=|>=|<=|=|<|>)(.*)", text).groups()
    values = values.split("|")
    if len(values) > 1:
        where = f"{col} {'IN' if op == '=' else 'NOT IN'} ({', '.join(values)})"
    else:
        where = f"{col} {op} {values[0]}"
    # (DuckDB's literals: 1e30 a DOUBLE; -1 against a UBIGINT column compares as numbers)
    want = duckdb.sql(f"SELECT x, u FROM '{src}' WHERE {where}").fetchall()
    assert [tuple(r.values()) for r in got.to_pylist()] == want, (text, where)


@pytest.mark.parametrize("late,text", [("0.5", "b>399990"), ("abc", "b>=399995")])
def test_filter_after_a_csv_column_widens(sluice, tmp_path, late, text):
    """A CSV column whose sampled type a late value widens (int64 to double,
    or to string) is read again as the new type: the filter is parsed again
    for it. It compared the new values as the old type, reading freed
    memory: `b>399990` kept 399,999 rows and stats gave min 0.5."""
    duckdb = pytest.importorskip("duckdb")
    rows = [str(i) for i in range(400000)]
    rows[300000] = late
    src = tmp_path / "w.csv"
    src.write_text("b\n" + "\n".join(rows) + "\n")
    dst = tmp_path / "out.arrow"
    sluice.run("convert", "-q", src, dst, "--filter", text)
    got = pa.ipc.open_file(dst).read_all()
    if late == "abc":  # a string column compares the literal as text
        want = [r for r in rows if r >= "399995"]
    else:
        want = [r[0] for r in duckdb.sql(f"select b from read_csv('{src}') where b > 399990")
                .fetchall()]
        assert len(want) == 9
    assert sorted(got.column("b").to_pylist()) == sorted(want)
    stats = sluice.run("stats", "-q", "--json", "--filter", text, src).stdout
    import json
    col = json.loads(stats)[0]
    assert col["count"] == len(want), col


def test_filter_the_widened_type_refuses_is_the_error(sluice, tmp_path):
    """A late value widens a CSV timestamp column to nanoseconds, which the
    filter's date cannot be compared in (2300 is past timestamp[ns]): the
    error says so, for stats and convert alike (they said the column would
    widen when read again, which it had; the dataset kept the old schema and
    filter, so a later scan compared nanoseconds as microseconds)."""
    import datetime
    base = datetime.datetime(2024, 1, 1)
    rows = [(base + datetime.timedelta(seconds=i)).strftime("%Y-%m-%d %H:%M:%S")
            for i in range(200000)]
    rows[150000] += ".123456789"
    src = tmp_path / "ns.csv"
    src.write_text("t\n" + "\n".join(rows) + "\n")
    for args in (["stats"], ["convert", "-q"]):
        tail = [tmp_path / "o.parquet"] if args[0] == "convert" else []
        err = sluice.expect_error(*args, "--filter", "t<2300-01-01", src, *tail).stderr.decode()
        assert "'2300-01-01' is past the range of column 't' (timestamp[ns]: years 1677 to " \
               "2262)" in err, err
        assert "when the input is read again" not in err, err
    assert not (tmp_path / "o.parquet").exists()


def _late_values_csv(tmp_path, c_late="true"):
    """id,b,c over 400,000 rows: b and c sampled as int64, and past the
    sample b holds 'hello' (the column widens to string) and c `c_late`."""
    src = tmp_path / "late.csv"
    with open(src, "w") as f:
        f.write("id,b,c\n")
        for i in range(400000):
            f.write("%d,%s,%s\n" % (i, "hello" if i == 170000 else i % 7,
                                     c_late if i == 170001 else i % 2))
    return src


@pytest.mark.parametrize("text,expr", [
    ("c=true", lambda ds: ds.field("c") == True),  # noqa: E712
    ("c!=true", lambda ds: ds.field("c") != True),  # noqa: E712
    ("b=hello", lambda ds: ds.field("b") == "hello"),
    ("b=hello|3", lambda ds: ds.field("b").isin(["hello", "3"])),
    ("b>=6,c=false", lambda ds: (ds.field("b") >= "6") & (ds.field("c") == False)),  # noqa: E712
    ("c=true,id<10;b=hello", lambda ds: ((ds.field("c") == True) & (ds.field("id") < 10)) |  # noqa: E712,E501
     (ds.field("b") == "hello")),
])
def test_a_value_the_sampled_type_refuses_filters_the_widened_column(sluice, tmp_path, text,
                                                                     expr):
    """A CSV column's type inferred from a sample (int64) widens when a later
    value does not fit it (b to string, c to bool): a filter value that fits
    only the wider type ('hello', 'true') was refused before the input was
    read; it filters the widened column as pyarrow filters the file read
    with those types."""
    import pyarrow.csv as pcsv
    import pyarrow.dataset as pads
    src = _late_values_csv(tmp_path)
    dst = tmp_path / "o.arrow"
    sluice.run("convert", "-q", src, dst, "--filter", text)
    got = pa.ipc.open_file(dst).read_all()
    assert got.schema.field("b").type == pa.string() and got.schema.field("c").type == pa.bool_()
    whole = pads.dataset(src, format=pads.CsvFileFormat(convert_options=pcsv.ConvertOptions(
        column_types={"id": pa.int64(), "b": pa.string(), "c": pa.bool_()})))
    want = whole.to_table(filter=expr(pads))
    assert got.num_rows == want.num_rows > 0, text
    assert got.sort_by("id").equals(want.sort_by("id")), text
    stats = sluice.run("stats", "-q", "--json", "--filter", text, src).stdout
    import json
    assert json.loads(stats)[0]["count"] == want.num_rows


@pytest.mark.parametrize("threads", ["1", "2", "4"])
def test_a_waiting_value_with_a_limit_reads_on_to_the_widening(sluice, tmp_path, threads):
    """'b=hello;id<5' with --limit 3: the other group fills the limit long
    before row 170,000 widens b. The scan went on or stopped depending on
    how far the threads had decoded (an error with 1 thread, 3 rows with 4):
    now rows past the limit are read and dropped, so the widening is always
    met and the result is DuckDB's over the whole file's types."""
    import duckdb
    src = _late_values_csv(tmp_path)
    dst = tmp_path / "o.arrow"
    sluice.run("--threads", threads, "convert", "-q", src, dst, "--filter", "b=hello;id<5",
               "--limit", "3")
    got = pa.ipc.open_file(dst).read_all()
    want = duckdb.sql(f"select * from read_csv('{src}', sample_size=-1, "
                      "types={'b': 'VARCHAR', 'c': 'BOOLEAN'}) where b = 'hello' or id < 5 "
                      "order by id limit 3").arrow()
    want = want.read_all() if hasattr(want, "read_all") else want
    assert got.schema.field("b").type == pa.string()
    assert got.column("id").to_pylist() == want.column("id").to_pylist() == [0, 1, 2]
    assert got.column("b").to_pylist() == want.column("b").to_pylist()


@pytest.mark.parametrize("c_late,text,why", [
    ("true", "c=hello", "'hello' is not true or false, as column 'c' (bool) needs"),
    ("1", "c=true", "'true' is not an integer, as column 'c' (int64) needs"),
    ("1", "b=x", "'x' is not an integer, as column 'b' (int64) needs"),
])
def test_a_value_the_whole_columns_type_refuses_is_the_error_after_the_read(sluice, tmp_path,
                                                                            c_late, text, why):
    """The value fits neither the sampled type nor the type the column has
    once the whole input is read (c widens to bool and 'hello' is no bool;
    c stays int64 and 'true' is no integer): the error is the one the
    sampled type gave, saying the type was inferred from the data, and no
    output is left."""
    src = _late_values_csv(tmp_path, c_late)
    if text.startswith("b="):  # (b never widens in this file)
        src.write_text(src.read_text().replace("hello", "5"))
    for args in (["stats"], ["convert", "-q"]):
        tail = [tmp_path / "o.parquet"] if args[0] == "convert" else []
        err = sluice.expect_error(*args, "--filter", text, src, *tail).stderr.decode()
        assert why in err and "inferred from the data" in err, err
    assert not (tmp_path / "o.parquet").exists()


@pytest.mark.parametrize("by_name", [False, True])
def test_a_value_the_sampled_type_refuses_filters_a_directory_of_csv(sluice, tmp_path, by_name):
    """The same over a directory of CSV files, one of which widens b late
    (the dataset's column widens with it), by position and by name."""
    import pyarrow.csv as pcsv
    import pyarrow.dataset as pads
    d = tmp_path / "d"
    d.mkdir()
    _late_values_csv(tmp_path, "1").rename(d / "a.csv")
    (d / "b.csv").write_text("id,b,c\n" + "".join("%d,%d,%d\n" % (i, i % 7, i % 2)
                                                   for i in range(1000, 2000)))
    dst = tmp_path / "o.arrow"
    sluice.run("convert", "-q", d, dst, "--filter", "b=hello|3",
               *(["--union-by-name"] if by_name else []))
    got = pa.ipc.open_file(dst).read_all()
    whole = pads.dataset(d, format=pads.CsvFileFormat(convert_options=pcsv.ConvertOptions(
        column_types={"id": pa.int64(), "b": pa.string(), "c": pa.int64()})))
    want = whole.to_table(filter=pads.field("b").isin(["hello", "3"]))
    assert got.num_rows == want.num_rows > 1
    assert got.sort_by("id").equals(want.sort_by("id").cast(got.schema))


def test_a_type_the_schema_gives_refuses_a_value_before_reading(sluice, tmp_path):
    """A column typed by --schema never widens: a value it refuses is refused
    up front, as before, without the note on inferred types."""
    src = _late_values_csv(tmp_path, "1")
    src.write_text(src.read_text().replace("hello", "5"))
    err = sluice.expect_error("convert", "-q", "--schema", "c:int64", "--filter", "c=true", src,
                              tmp_path / "o.parquet").stderr.decode()
    assert "'true' is not an integer, as column 'c' (int64) needs" in err, err
    assert "inferred" not in err, err


def test_an_escape_that_is_not_utf8_is_quoted_as_typed(sluice, tmp_path):
    """Messages quote a condition %XX-decoded, but `%80` decoded is a lone
    byte that is not UTF-8: the message carried it raw (invalid text on a
    terminal or in a log) instead of the escape the user typed."""
    src = tmp_path / "i.parquet"
    pq.write_table(pa.table({"i": [1, 2], "u": pa.array([[1], [2]])}), src)
    err = sluice.expect_error("cat", "--filter", "i>%80", src).stderr
    assert b"filter 'i>%80': '%80' is not an integer" in err, err
    err.decode("utf-8")
    err = sluice.expect_error("cat", "--filter", "u>%80", src).stderr
    assert b"filter 'u>%80': column 'u' has type list, which" in err, err
    # valid UTF-8 escapes are still shown decoded
    err = sluice.expect_error("cat", "--filter", "i>%e2%82%ac", src).stderr.decode()
    assert "filter 'i>\u20ac': '\u20ac' is not an integer" in err, err


def test_a_filter_of_bytes_that_are_not_plain_text_is_spelled_escaped(sluice, tmp_path):
    """A condition holding a raw byte that is not UTF-8, or a bidirectional
    control, is quoted with escapes, as a location is: the filter's own rule
    escaped only control bytes and copied the rest raw into the message."""
    src = tmp_path / "i.parquet"
    pq.write_table(pa.table({"i": [1, 2]}), src)
    err = sluice.expect_error("cat", "--filter", "i>" + os.fsdecode(b"\xff"), src).stderr
    assert b"filter 'i>\\xff': " in err, err
    err = sluice.expect_error("cat", "--filter", "i>\u202e1", src).stderr.decode()
    assert "filter 'i>\\u202e1': " in err, err


@pytest.mark.parametrize("text", [
    "x=9007199254740993.0", "x=9007199254740993.5", "x!=9007199254740993.0",
    "x<9007199254740993.0", "x<=9007199254740992.5", "x>9007199254740992.5",
    "x>=9007199254740993.0", "x=9.007199254740993e15", "x<9223372036854775807.5",
    "x>-9223372036854775808.5", "x=-9223372036854775808.0", "x>9223372036854775807.0",
    "u=18446744073709551615.0", "u>=18446744073709551614.5", "u<18446744073709551615.5",
    "u>18446744073709551615.0", "u=1.8446744073709551615e19", "x=9007199254740993.0|2.5"])
def test_numbers_past_2_53_on_int64_columns_compare_exactly_as_duckdb(sluice, tmp_path, text):
    """A number with a fraction or exponent on an int64/uint64 column is
    compared by its exact value, as DuckDB compares it: it went through a
    double, so x=9007199254740993.0 found 9007199254740992 and
    u=18446744073709551615.0 found nothing."""
    import re
    duckdb = pytest.importorskip("duckdb")
    big = 2**53
    table = pa.table({"x": pa.array([big, big + 1, big + 2, 2**63 - 1, -2**63, None], pa.int64()),
                      "u": pa.array([2**64 - 1, 2**64 - 2, 1, None, 0, big + 1], pa.uint64())})
    src = tmp_path / "big.parquet"
    pq.write_table(table, src, row_group_size=2)
    proc = sluice.run("cat", "-q", src, "--filter", text, "-t", "arrows")
    got = pa.ipc.open_stream(pa.BufferReader(proc.stdout)).read_all()
    col, op, values = re.match(r"(\w)(!=|>=|<=|=|<|>)(.*)", text).groups()
    values = values.split("|")
    where = f"{col} {op} {values[0]}" if len(values) == 1 else f"{col} IN ({', '.join(values)})"
    # (DuckDB reads 9007199254740993.0 as an exact DECIMAL, 9.007e15 as a DOUBLE: cast both.)
    where = re.sub(r"([0-9.]+e[0-9]+)", r"'\1'::DECIMAL(38,1)", where)
    want = duckdb.sql(f"SELECT x, u FROM '{src}' WHERE {where}").fetchall()
    assert [tuple(r.values()) for r in got.to_pylist()] == want, (text, where)


@pytest.mark.parametrize("col", ["x", "u"])
@pytest.mark.parametrize("op", ["=", "!=", "<", "<=", ">", ">="])
@pytest.mark.parametrize("value", [float("inf"), float("-inf"), float("nan")])
def test_inf_and_nan_on_integer_columns_compare_as_pyarrow(sluice, tmp_path, col, op, value):
    """x>inf on an integer column was refused ("'inf' is not an integer"):
    pyarrow compares it (none pass; x<inf, all), and so does DuckDB, which
    differs only for NaN, which it orders above every number."""
    table = pa.table({"x": pa.array([1, None, -3], pa.int64()),
                      "u": pa.array([1, None, 3], pa.uint64())})
    src = tmp_path / "i.parquet"
    pq.write_table(table, src)
    proc = sluice.run("cat", "-q", src, "-c", col, "--filter", f"{col}{op}{value}", "-t", "arrows")
    got = pa.ipc.open_stream(pa.BufferReader(proc.stdout)).read_all()
    want = pq.read_table(src, columns=[col], filters=[(col, op, value)])
    assert got.column(col).to_pylist() == want.column(col).to_pylist()


@pytest.mark.parametrize("text", ["x= 5", "x=5 ", "x=%205", "f= 1.5", "f=1.5 "])
def test_blanks_around_a_number_are_refused_at_either_end(sluice, tmp_path, text):
    """strtod and strtoll skip leading blanks, so x= 5 was 5 where x=5 was
    an error: both ends are refused now, as the blank in a name is."""
    src = tmp_path / "n.parquet"
    pq.write_table(pa.table({"x": pa.array([5], pa.int64()), "f": [1.5]}), src)
    err = sluice.expect_error("cat", "-q", src, "--filter", text).stderr.decode()
    assert "is not" in err and ("an integer" in err or "a number" in err), err


@pytest.mark.parametrize("op", ["=", "!=", "<", "<=", ">", ">="])
@pytest.mark.parametrize("value", ["1970-01-01T00:00:00.000500", "1970-01-01T00:00:01.001500",
                                   "1969-12-31T23:59:59.999500", "1970-01-01T00:00:01"])
def test_timestamps_finer_than_the_unit_compare_exactly_as_pyarrow(sluice, tmp_path, op, value):
    """A date-time finer than a timestamp column's unit (microseconds on
    timestamp[ms] or [s], as a Python datetime brings them) compares by its
    exact value, as pyarrow and DuckDB compare it: on ms, ts > 00:00:00.0005
    is ts >= 00:00:00.001 and ts = 00:00:00.0005 holds for no row. It was
    refused as "not a date-time ... in the column's unit"."""
    import datetime
    duckdb = pytest.importorskip("duckdb")
    ms = [-1001, -1, 0, 1, 1000, 1001, 1002, None]
    table = pa.table({"ms": pa.array(ms, pa.timestamp("ms")),
                      "s": pa.array([None if v is None else v // 1000 for v in ms],
                                    pa.timestamp("s")),
                      "t": pa.array([None if v is None else v % 86400000 for v in ms],
                                    pa.time32("ms"))})
    src = tmp_path / "ts.parquet"
    pq.write_table(table, src, row_group_size=3)
    literal = datetime.datetime.fromisoformat(value)
    for col in ("ms", "s", "t"):
        v = literal.time() if col == "t" else literal
        proc = sluice.run("cat", "-q", src, "-c", col, "--filter", f"{col}{op}{v.isoformat()}",
                          "-t", "arrows")
        got = pa.ipc.open_stream(pa.BufferReader(proc.stdout)).read_all().column(col).to_pylist()
        want = pq.read_table(src, columns=[col], filters=[(col, op, v)]).column(col).to_pylist()
        assert got == want, (col, op, v)
        kind = "TIME" if col == "t" else "TIMESTAMP"
        sql = f"SELECT {col} FROM '{src}' WHERE {col} {op} {kind} '{v.isoformat()}'"
        assert got == [r[0] for r in duckdb.sql(sql).fetchall()], sql


@pytest.mark.parametrize("col", ["id", "s", "f", "c", "d"])
@pytest.mark.parametrize("op", ["in", "not in"])
@pytest.mark.parametrize("n", [300, 5000])
def test_in_takes_any_number_of_values_as_pyarrow(sluice, tmp_path, col, op, n):
    """`in` / `|` takes as many values as pyarrow's filters do (more than
    256 were refused, with the whole condition echoed into the message);
    rows are looked up among them by bisection. Row groups of 700 rows, so
    statistics and dictionary pages (int16 `d`: two values per row group,
    far apart) prune with them too."""
    import random
    rng = random.Random(n)
    ids = list(range(20000))
    rng.shuffle(ids)
    table = pa.table({"id": ids, "s": ["v%d" % i for i in ids], "f": [i / 4 for i in ids],
                      "c": pa.array([i % 3000 - 1500 for i in ids], pa.int16()),
                      "d": pa.array([(r // 700 - 1000) * (1 if r % 2 else -1)
                                     for r in range(20000)], pa.int16())})
    src = tmp_path / "ids.parquet"
    pq.write_table(table, src, row_group_size=700)
    picks = rng.sample(range(-50, 24000), n)
    values = {"id": picks, "s": ["v%d" % i for i in picks], "f": [i / 4 for i in picks],
              "c": [i % 4000 - 2000 for i in picks], "d": [i % 2001 - 1000 for i in picks]}[col]
    text = "%s%s%s" % (col, "=" if op == "in" else "!=", "|".join(map(str, values)))
    proc = sluice.run("cat", "-q", src, "-c", col, "--filter", text, "-t", "arrows")
    got = pa.ipc.open_stream(pa.BufferReader(proc.stdout)).read_all().column(col).to_pylist()
    want = pq.read_table(src, columns=[col], filters=[(col, op, values)]).column(col).to_pylist()
    assert sorted(got) == sorted(want)


def test_a_float16_column_is_named_as_not_compared(sluice, tmp_path):
    """A float16 column cannot be filtered (nor can pyarrow compare one: no
    kernel for halffloat); the message listed "floats" among the types that
    compare, which reads as if it should."""
    import numpy as np
    src = tmp_path / "h.parquet"
    pq.write_table(pa.table({"h": pa.array(np.array([1, 2], dtype=np.float16))}), src)
    with pytest.raises(pa.ArrowNotImplementedError):
        pc.greater(pq.read_table(src).column("h"), pa.scalar(np.float16(1)))
    err = sluice.expect_error("cat", src, "--filter", "h>1").stderr.decode()
    assert "column 'h' has type halffloat, which filters do not compare (integers, 32- and 64-bit " \
           "floats, " in err, err


def _rows(proc, col="n"):
    return pa.ipc.open_stream(pa.BufferReader(proc.stdout)).read_all().column(col).to_pylist()


@pytest.mark.parametrize("text,flt", [
    ("fb=abc", [("fb", "=", b"abc")]), ("fb!=abc", [("fb", "!=", b"abc")]),
    ("fb<abd", [("fb", "<", b"abd")]), ("fb<=abd", [("fb", "<=", b"abd")]),
    ("fb>ab%00", [("fb", ">", b"ab\x00")]), ("fb>=%FF", [("fb", ">=", b"\xff")]),
    ("fb=zzz|ab%00|%2500|ab%7C", [("fb", "in", [b"zzz", b"ab\x00", b"%00", b"ab|"])]),
    ("fb=ab", [("fb", "=", b"ab")]), ("fb<abcd", [("fb", "<", b"abcd")]),
    ("fb>ab", [("fb", ">", b"ab")]), ("fb=", [("fb", "=", b"")])])
def test_fixed_size_binary_columns_take_filters_as_binary_ones(sluice, tmp_path, text, flt):
    """`--filter` on a fixed_size_binary column was "filters do not
    compare"; its values are spelled as a binary column's (%XX for any
    byte) and compare bytewise, another length included, as pyarrow
    compares them."""
    vals = [b"abc", b"abd", None, b"zzz", b"ab\x00", b"\xff\x00a", b"%00", b"ab|"]
    t = pa.table({"fb": pa.array(vals * 30, pa.binary(3)), "n": range(len(vals) * 30)})
    src = tmp_path / "fb.parquet"
    pq.write_table(t, src, row_group_size=7)
    got = _rows(sluice.run("cat", "-q", src, "--filter", text, "-t", "arrows"))
    want = pq.read_table(src, filters=flt).column("n").to_pylist()
    assert got == want


def test_uuid_columns_take_a_uuid_s_text_as_duckdb(sluice, tmp_path):
    """A Parquet UUID column (arrow.uuid) takes a UUID's text, hyphenated or
    not, any case, and compares as DuckDB compares UUIDs; other text is an
    error naming the column (it compared 36 bytes of text with 16 of UUID,
    matching nothing)."""
    import uuid
    duckdb = pytest.importorskip("duckdb")
    ids = [uuid.UUID(int=(k * 0x9E3779B97F4A7C15 << 60) % (1 << 128)) for k in range(1, 40)]
    src = tmp_path / "u.parquet"
    pq.write_table(pa.table({"u": pa.array([x.bytes for x in ids], pa.uuid()),
                             "n": range(len(ids))}), src, row_group_size=5)
    pick = ids[7]
    for op in ("=", "!=", "<", "<=", ">", ">="):
        # (DuckDB takes a '-' anywhere, also first or last)
        for spelled in (str(pick), pick.hex.upper(), "-%s-" % pick, "{%s}" % pick.hex):
            got = _rows(sluice.run("cat", "-q", src, "--filter", "u%s%s" % (op, spelled),
                                   "-t", "arrows"))
            want = [r[0] for r in duckdb.sql(
                f"SELECT n FROM '{src}' WHERE u {op} '{pick}'::UUID ORDER BY n").fetchall()]
            assert got == want, (op, spelled)
    got = _rows(sluice.run("cat", "-q", src, "--filter", "u=%s|%s" % (ids[3], ids[9]),
                           "-t", "arrows"))
    assert got == [3, 9]
    for bad in ("abc", str(pick) + "0", str(pick)[:-1] + "g"):
        err = sluice.expect_error("cat", src, "--filter", "u=" + bad).stderr.decode()
        assert "is not a UUID" in err and "column 'u'" in err, err


def test_a_column_named_empty_takes_a_filter(sluice, tmp_path):
    """A column named '' (Parquet and pyarrow allow one) is spelled by
    nothing before the operator: `--filter '=8'` (it was "expected
    NAME=VALUE"); pyarrow's filters keep the same rows."""
    src = tmp_path / "e.parquet"
    pq.write_table(pa.table({"": pa.array([8, 9, None, 8]), "n": range(4)}), src)
    for text, flt in (("=8", [("", "=", 8)]), ("!=8", [("", "!=", 8)]), ("<9", [("", "<", 9)]),
                      ("=9,n>0", [("", "=", 9), ("n", ">", 0)])):
        got = _rows(sluice.run("cat", "-q", src, "--filter", text, "-t", "arrows"))
        assert got == pq.read_table(src, filters=flt).column("n").to_pylist(), text
    err = sluice.expect_error("cat", src, "--filter", "=x").stderr.decode()
    assert "'x' is not an integer" in err, err
