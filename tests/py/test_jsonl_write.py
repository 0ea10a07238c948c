"""The JSON Lines writer: timestamps spelled as the CSV writer spells them,
which the peers (pyarrow.json, polars, DuckDB) read as the same instants.

Needs SLUICE_BIN; DuckDB and polars checks are skipped when not installed.
"""

from __future__ import annotations

import datetime as dt
import json

import pytest

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")
pj = pytest.importorskip("pyarrow.json")

UTC = dt.timezone.utc


def test_local_mean_time_is_spelled_as_the_csv_writer_spells_it(sluice, tmp_path):
    """Before ~1900 a zone's offset has seconds (New York: -04:56:02), which
    polars and pyarrow.json cannot parse. The CSV writer fell back to the UTC
    instant with a Z; JSON Lines wrote "1850-01-01 07:03:58-04:56:02". Both
    (and nested values, and `sluice cat`) now spell it the same way."""
    instants = [dt.datetime(1850, 1, 1, 12, tzinfo=UTC), dt.datetime(1880, 7, 1, 0, 30, tzinfo=UTC),
                dt.datetime(2024, 6, 1, 12, tzinfo=UTC)]
    zoned = pa.array(instants, pa.timestamp("us", "UTC")).cast(
        pa.timestamp("us", "America/New_York"))
    table = pa.table({"ts": zoned, "l": pa.array([[v] for v in instants],
                                                  pa.list_(zoned.type))})
    src = tmp_path / "lmt.parquet"
    pq.write_table(table, src)
    jsonl, csv = tmp_path / "lmt.jsonl", tmp_path / "lmt.csv"
    sluice.run("convert", src, jsonl)
    sluice.run("convert", src, csv)
    rows = [json.loads(line) for line in jsonl.read_text().splitlines()]
    json_ts = [r["ts"] for r in rows]
    assert json_ts[:2] == ["1850-01-01 12:00:00.000000Z", "1880-07-01 00:30:00.000000Z"]
    assert json_ts[2] == "2024-06-01 08:00:00.000000-04:00"
    csv_cells = [line.split(",", 1)[0] for line in csv.read_text().splitlines()[1:]]
    assert csv_cells == json_ts
    assert [r["l"][0] for r in rows] == json_ts  # nested values alike
    got = pj.read_json(jsonl, parse_options=pj.ParseOptions(explicit_schema=pa.schema(
        [("ts", pa.timestamp("us", "UTC"))]), unexpected_field_behavior="ignore"))
    assert got.column("ts").to_pylist() == instants
    pl = pytest.importorskip("polars")
    parsed = pl.read_ndjson(jsonl).select(pl.col("ts").str.to_datetime(time_zone="UTC"))
    assert parsed["ts"].to_list() == instants
    shown = sluice.run("cat", src).stdout.decode()
    assert "1850-01-01 12:00:00.000000Z" in shown and "-04:56:02" not in shown


def test_a_json_lines_name_is_refused_on_read_not_read_as_csv(sluice, tmp_path):
    """sluice writes JSON Lines but cannot read it. A .jsonl / .ndjson input
    (also compressed, also a directory of a partitioned write's part files)
    was read as CSV by the "looks like text" guess: `{"x":1}` lines failed
    with a CSV quoting error, `{}` lines gave a table with one row fewer than
    pyarrow.json reads, and `[1,2]` lines two columns. Now it is an error
    naming the file and the format; magic bytes still decide (a Parquet file
    named x.jsonl is Parquet), and -f csv still reads the text as CSV."""
    import gzip
    src = tmp_path / "t.parquet"
    pq.write_table(pa.table({"x": [1, 2, 3]}), src)
    empty = tmp_path / "e.arrow"  # pyarrow's Parquet keeps no rows without columns
    no_columns = pa.table({"x": [1, 2, 3]}).drop(["x"])
    with pa.ipc.new_file(empty, no_columns.schema) as writer:
        writer.write_table(no_columns)
    jsonl, ndjson = tmp_path / "x.jsonl", tmp_path / "e.ndjson"
    sluice.run("convert", src, jsonl)
    sluice.run("convert", empty, ndjson)
    assert pj.read_json(jsonl).column("x").to_pylist() == [1, 2, 3]
    assert [json.loads(line) for line in ndjson.read_text().splitlines()] == [{}, {}, {}]
    arrays = tmp_path / "a.ndjson"
    arrays.write_text("[1,2]\n[3,4]\n")
    zipped = tmp_path / "z.jsonl.gz"
    zipped.write_bytes(gzip.compress(jsonl.read_bytes()))
    parts = tmp_path / "parts"
    parts.mkdir()
    (parts / "part-0.jsonl").write_bytes(jsonl.read_bytes())
    (parts / "part-1.jsonl").write_bytes(jsonl.read_bytes())
    for path in (jsonl, ndjson, arrays, zipped, parts):
        proc = sluice.expect_error("cat", path)
        assert b"a format sluice writes but cannot read" in proc.stderr, (path, proc.stderr)
        assert b"jsonl" in proc.stderr, (path, proc.stderr)
    # The bytes decide over the name, and a named format is obeyed.
    disguised = tmp_path / "p.jsonl"
    disguised.write_bytes(src.read_bytes())
    got = sluice.run("cat", disguised, "-t", "csv").stdout.decode().split()
    assert got == ["x", "1", "2", "3"]
    got = sluice.run("cat", ndjson, "-f", "csv", "-O", "header=false", "-t", "csv").stdout
    assert got.decode().split() == ["f0", "{}", "{}", "{}"]


def test_uuids_are_spelled_as_duckdb_writes_them(sluice, tmp_path):
    """An arrow.uuid column (Parquet's UUID; Avro's and CQL's uuid) is
    written 8-4-4-4-12 in CSV, JSON Lines, `sluice cat` and `sluice stats`,
    as DuckDB writes the same Parquet file's column (and Python's str(UUID));
    before, as 32 hex digits, which no UUID parser in those tools reads.
    Other 16-byte binaries stay hex."""
    import uuid
    duckdb = pytest.importorskip("duckdb")
    values = [uuid.UUID(int=0x0123456789ABCDEF0123456789ABCDEF), None, uuid.uuid4()]
    table = pa.table({"u": pa.array([v.bytes if v else None for v in values], pa.uuid()),
                      "b": pa.array([v.bytes if v else None for v in values], pa.binary(16))})
    src = tmp_path / "u.parquet"
    pq.write_table(table, src)
    peer = duckdb.sql(f"select u::varchar as u from '{src}'").fetchall()
    want = [r[0] for r in peer]
    assert want == [str(v) if v else None for v in values]
    sluice.run("convert", src, tmp_path / "u.jsonl")
    rows = [json.loads(line) for line in (tmp_path / "u.jsonl").read_text().splitlines()]
    assert [r["u"] for r in rows] == want
    assert [r["b"] for r in rows] == [v.hex if v else None for v in values]
    sluice.run("convert", src, tmp_path / "u.csv")
    lines = (tmp_path / "u.csv").read_text().splitlines()
    assert [line.split(",")[0] or None for line in lines[1:]] == want
    shown = sluice.run("cat", src).stdout.decode()
    assert all(w in shown for w in want if w)
    stats = json.loads(sluice.run("stats", src, "--json").stdout)
    assert {stats[0]["min"], stats[0]["max"]} <= set(w for w in want if w)


def test_wide_tables_names_repeated_far_apart_are_refused(sluice, tmp_path):
    """Columns 0 and 49,999 of one name, or fields 0 and 49,999 of a struct,
    would make objects with a repeated key, which pyarrow.json refuses: they
    are refused naming the key, as two neighbours are (each name was compared
    with every earlier one: 23 s for 100k columns; they are hashed now).
    Without the repeat the wide table reads back as pyarrow wrote it."""
    n = 50_000
    names = [f"c{i}" for i in range(n)]
    names[n - 1] = "c0"
    line = "{" + ",".join(f'"{k}":{i}' for i, k in enumerate(names)) + "}\n"
    (tmp_path / "peer.jsonl").write_text(line)
    with pytest.raises(pa.ArrowInvalid):
        pj.read_json(tmp_path / "peer.jsonl")
    cols = [pa.array([i], pa.int64()) for i in range(n)]
    struct = pa.StructArray.from_arrays(cols, names=names)
    for table, says in ((pa.Table.from_arrays(cols, names=names), "two columns are named 'c0'"),
                        (pa.table({"s": struct}), "two fields of struct 's' are named 'c0'")):
        src = tmp_path / "wide.parquet"
        pq.write_table(table, src)
        proc = sluice.expect_error("convert", src, tmp_path / "o.jsonl")
        assert says.encode() in proc.stderr, proc.stderr
        assert not (tmp_path / "o.jsonl").exists()
    names[n - 1] = f"c{n - 1}"
    table = pa.Table.from_arrays(cols, names=names)
    pq.write_table(table, tmp_path / "wide.parquet")
    sluice.run("convert", tmp_path / "wide.parquet", tmp_path / "o.jsonl")
    assert pj.read_json(tmp_path / "o.jsonl").equals(table)
