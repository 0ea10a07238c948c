"""Times of day in CSV, against the peers reading the same file.

- Inference: a column of `HH:MM`, `HH:MM:SS` or `HH:MM:SS.fff` values is
  time64[us]. DuckDB infers TIME (microseconds) for all three spellings and
  gives the same values; pyarrow infers time32[s] for whole seconds (same
  values in seconds) and leaves fractions as strings.
- `--schema` asks for time32[s|ms] / time64[us|ns]: the values pyarrow.csv
  gives for those column types; digits the unit cannot hold are an error for
  both (never a value cut short). Times and timestamps with digits past the
  microsecond are inferred as nanoseconds.
- A value that is not a time (25:00, 12:60, 12:34:5) is an error naming its
  line and column, never a wrong time; the writer's output reads back the same.
"""

from __future__ import annotations

import datetime
import random
from pathlib import Path

import pytest

pa = pytest.importorskip("pyarrow")
pcsv = pytest.importorskip("pyarrow.csv")
ipc = pytest.importorskip("pyarrow.ipc")
duckdb = pytest.importorskip("duckdb")

from conftest import arrow_to_csv  # noqa: E402


def sluice_read(sluice, path: Path, *args: str) -> pa.Table:
    out = path.with_suffix(".out.arrow")
    sluice.run("convert", path, out, "-q", *args)
    with ipc.open_file(out) as f:
        return f.read_all()


def time_file(tmp_path: Path, rows: int, seed: int) -> Path:
    rng = random.Random(seed)
    lines = ["hm,hms,frac,n"]
    for i in range(rows):
        h, m, s = rng.randrange(24), rng.randrange(60), rng.randrange(60)
        us = rng.randrange(1_000_000)
        frac = f"{h:02}:{m:02}:{s:02}.{us:06}".rstrip("0").rstrip(".") if i % 5 else \
            f"{h:02}:{m:02}:{s:02}.{us // 1000:03}"
        null = i % 7 == 3
        lines.append(",".join(["" if null else f"{h:02}:{m:02}", f"{h:02}:{m:02}:{s:02}",
                               "" if i % 9 == 4 else frac, str(i)]))
    lines[1] = "00:00,23:59:59,00:00:00.000001,0"  # the ends of the day
    path = tmp_path / f"times{seed}.csv"
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.mark.parametrize("seed", [1, 2])
def test_inferred_times_match_duckdb(sluice, tmp_path, seed):
    path = time_file(tmp_path, 3000, seed)
    got = sluice_read(sluice, path, "-O", "split_size=16k", "--threads", "2")
    assert [f.type for f in got.schema][:3] == [pa.time64("us")] * 3
    rel = duckdb.sql(f"select hm, hms, frac from read_csv('{path}', header=true)")
    assert [str(t) for t in rel.types] == ["TIME", "TIME", "TIME"]
    want = rel.fetchall()
    for k, name in enumerate(("hm", "hms", "frac")):
        assert got.column(name).to_pylist() == [row[k] for row in want], name


def test_whole_seconds_match_pyarrow(sluice, tmp_path):
    path = time_file(tmp_path, 500, 3)
    got = sluice_read(sluice, path)
    peer = pcsv.read_csv(path)
    for name in ("hm", "hms"):
        assert peer.column(name).type == pa.time32("s")
        assert got.column(name).to_pylist() == peer.column(name).to_pylist(), name


UNITS = {"time32[s]": pa.time32("s"), "time32[ms]": pa.time32("ms"),
         "time64[us]": pa.time64("us"), "time64[ns]": pa.time64("ns")}
# Each value with the finest unit that holds it exactly.
SPELLINGS = [("00:00", "s"), ("23:59:59", "s"), ("12:34:56.5", "ms"), ("12:34:56.120", "ms"),
             ("01:02:03.000004", "us"), ("07:08:09.987654321", "ns")]
ORDER = ["s", "ms", "us", "ns"]


@pytest.mark.parametrize("spec", list(UNITS))
def test_schema_units_match_pyarrow(sluice, tmp_path, spec):
    unit = spec.split("[")[1].rstrip("]")
    fits = [v for v, finest in SPELLINGS if ORDER.index(finest) <= ORDER.index(unit)]
    path = tmp_path / "units.csv"
    path.write_text("t\n" + "\n".join(fits) + "\n\n")
    got = sluice_read(sluice, path, "--schema", f"t:{spec}")
    assert got.schema.field("t").type == UNITS[spec]
    peer = pcsv.read_csv(path, convert_options=pcsv.ConvertOptions(
        column_types={"t": UNITS[spec]}))
    assert got.column("t").to_pylist() == peer.column("t").to_pylist()


@pytest.mark.parametrize("spec", ["time32[s]", "time32[ms]", "time64[us]"])
def test_digits_the_unit_cannot_hold_are_an_error(sluice, tmp_path, spec):
    unit = spec.split("[")[1].rstrip("]")
    finer = next(v for v, finest in SPELLINGS if ORDER.index(finest) > ORDER.index(unit))
    path = tmp_path / "fine.csv"
    path.write_text("t\n00:00\n" + finer + "\n")
    with pytest.raises(pa.ArrowInvalid):  # pyarrow refuses to cut digits too
        pcsv.read_csv(path, convert_options=pcsv.ConvertOptions(column_types={"t": UNITS[spec]}))
    err = sluice.expect_error("cat", path, "--schema", f"t:{spec}").stderr.decode()
    assert "line 3" in err and "fraction digits" in err and finer in err, err


def test_nanosecond_digits_infer_nanoseconds(sluice, tmp_path):
    path = tmp_path / "ns.csv"
    path.write_text("t,ts\n07:08:09.987654321,2020-02-29T23:59:59.123456789\n"
                    "00:00,2020-03-01\n")
    got = sluice_read(sluice, path)
    assert got.schema.field("t").type == pa.time64("ns")
    assert got.schema.field("ts").type == pa.timestamp("ns")
    assert got.column("t").cast(pa.int64()).to_pylist() == [25_689_987_654_321, 0]
    peer = pcsv.read_csv(path, convert_options=pcsv.ConvertOptions(
        column_types={"ts": pa.timestamp("ns")}))
    assert got.column("ts").to_pylist() == peer.column("ts").to_pylist()
    # finer than a nanosecond is not a time at all; zeros there lose nothing
    # (pyarrow refuses any tenth digit)
    path.write_text("t\n07:08:09.9876543219\n")
    assert sluice_read(sluice, path).schema.field("t").type == pa.string()
    path.write_text("t\n07:08:09.5000000000\n")
    got = sluice_read(sluice, path, "--schema", "t:time32[ms]")
    assert got.column("t").to_pylist() == [datetime.time(7, 8, 9, 500000)]


@pytest.mark.parametrize("bad", ["25:00", "12:60", "12:34:60", "12:34:5", "1:02", "12:34:56.",
                                 "12:34:56.5x"])
def test_bad_time_is_an_error_naming_the_row(sluice, tmp_path, bad):
    path = tmp_path / "bad.csv"
    path.write_text("id,t\n1,12:00:00\n2," + bad + "\n")
    err = sluice.expect_error("cat", path, "--schema", "t:time64[us]").stderr.decode()
    assert "line 3" in err and "'t'" in err and bad in err, err
    # inferred from the whole file, the column is not a time at all
    table = sluice_read(sluice, path, "-O", "infer_bytes=all")
    assert table.schema.field("t").type == pa.string()
    assert table.column("t").to_pylist() == ["12:00:00", bad]


def test_written_times_read_back(sluice, tmp_path):
    values = [datetime.time(0, 0), datetime.time(23, 59, 59, 999999), None,
              datetime.time(7, 5, 3, 120)]
    table = pa.table({"t": pa.array(values, pa.time64("us")),
                      "s": pa.array([v.replace(microsecond=0) if v else None for v in values],
                                    pa.time32("s"))})
    csv_path = arrow_to_csv(sluice, table, tmp_path, "t", "-q")
    back = sluice_read(sluice, csv_path, "--schema", "t:time64[us],s:time32[s]")
    assert back.equals(table), (back, csv_path.read_text())


def test_leap_second_is_not_a_timestamp(sluice, tmp_path):
    """23:59:60 (a leap second) has no place on Arrow's timeline: the column
    is text, as pyarrow and DuckDB infer it, rather than a value rolled over
    to the next day; a timestamp type given for it is an error naming the
    line, as pyarrow's."""
    path = tmp_path / "leap.csv"
    path.write_text("t\n2016-12-31T23:59:60\n2017-01-01T00:00:00\n")
    got = sluice_read(sluice, path)
    assert got.equals(pcsv.read_csv(path))
    assert got.schema.field("t").type == pa.string()
    rel = duckdb.sql(f"select t from read_csv('{path}')")
    assert [str(t) for t in rel.types] == ["VARCHAR"]
    err = sluice.expect_error("cat", path, "--schema", "t:timestamp[s]").stderr.decode()
    assert "line 2" in err and "23:59:60" in err, err


def test_values_without_offset_in_a_zoned_column(sluice, tmp_path):
    """A value without an offset in a timestamp type whose zone is not UTC is
    an error (pyarrow.csv refuses it: which instant is a guess), not 10:00
    UTC shown as 12:00+02:00; with offsets the column reads as pyarrow reads
    it, and in a UTC column a value without one is UTC."""
    path = tmp_path / "naive.csv"
    path.write_text("ts\n2024-07-01 09:00:00+01:00\n2024-07-01 10:00:00\n")
    paris = pa.timestamp("us", tz="Europe/Paris")
    with pytest.raises(pa.ArrowInvalid):
        pcsv.read_csv(path, convert_options=pcsv.ConvertOptions(column_types={"ts": paris}))
    err = sluice.expect_error("cat", path, "--schema", "ts:timestamp[us, tz=Europe/Paris]")
    err = err.stderr.decode()
    assert "line 3" in err and "no zone offset" in err, err
    path.write_text("ts\n2024-07-01 09:00:00+01:00\n2024-07-01 10:00:00Z\n")
    got = sluice_read(sluice, path, "--schema", "ts:timestamp[us, tz=Europe/Paris]")
    peer = pcsv.read_csv(path, convert_options=pcsv.ConvertOptions(column_types={"ts": paris}))
    assert got.column("ts").type == paris
    assert got.column("ts").to_pylist() == peer.column("ts").to_pylist()
    path.write_text("ts\n2024-07-01 10:00:00\n")
    utc = sluice_read(sluice, path, "--schema", "ts:timestamp[us, tz=UTC]")
    assert utc.column("ts").to_pylist() == [
        datetime.datetime(2024, 7, 1, 10, tzinfo=datetime.timezone.utc)]
