"""Hive-style partitioned datasets (`root/key=value/.../file`), against the
peers reading the same directory:

- Parquet written by pyarrow's write_to_dataset (ints, strings with
  characters it escapes as %XX, nulls as __HIVE_DEFAULT_PARTITION__), read by
  sluice, by DuckDB (read_parquet(..., hive_partitioning=true)) and by
  polars (read_parquet(dir)): the same rows, partition columns after the
  files' own, with the same types (int64, utf8) and values.
- CSV and dates written by DuckDB's COPY ... PARTITION_BY, read back by
  DuckDB: the same rows and a date32 column.
- Projection of partition columns alone, mixed with file columns, in any
  order; a key that is also a file column adds nothing (the file's values);
  objects with different keys are an error, as in DuckDB; --no-hive adds
  nothing.
"""

from __future__ import annotations

import datetime
import json

import pytest

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")
pds = pytest.importorskip("pyarrow.dataset")
ipc = pytest.importorskip("pyarrow.ipc")
duckdb = pytest.importorskip("duckdb")
pl = pytest.importorskip("polars")


def sluice_read(sluice, location, *args) -> pa.Table:
    res = sluice.run("cat", location, "-t", "arrows", "-q", *args)
    return ipc.open_stream(res.stdout).read_all()


def by_id(table: pa.Table) -> dict:
    """Column name -> values, rows sorted by `id`."""
    order = pa.compute.sort_indices(table, [("id", "ascending")])
    return table.take(order).to_pydict()


CITIES = ["Paris", "New York", "S\u00e3o Paulo", "a/b=c%d", None]


@pytest.fixture(scope="module")
def pq_dataset(tmp_path_factory):
    root = tmp_path_factory.mktemp("hive") / "sales"
    n = 400
    table = pa.table({
        "id": pa.array(range(n), pa.int64()),
        "amount": pa.array([i * 0.25 for i in range(n)], pa.float64()),
        "note": pa.array([None if i % 7 == 0 else f"n{i}" for i in range(n)], pa.string()),
        "year": pa.array([2020 + i % 3 for i in range(n)], pa.int64()),
        "city": pa.array([CITIES[i % len(CITIES)] for i in range(n)], pa.string()),
    })
    pq.write_to_dataset(table, root, partition_cols=["year", "city"])
    return root


def test_parquet_dataset_matches_duckdb_and_polars(sluice, pq_dataset):
    got = sluice_read(sluice, pq_dataset)
    assert got.column_names == ["id", "amount", "note", "year", "city"]
    assert got.schema.field("year").type == pa.int64()
    assert got.schema.field("city").type == pa.string()
    mine = by_id(got)
    duck = duckdb.sql(f"select id, amount, note, year, city from read_parquet("
                      f"'{pq_dataset}/**/*.parquet', hive_partitioning=true) order by id")
    assert [str(t) for t in duck.types] == ["BIGINT", "DOUBLE", "VARCHAR", "BIGINT", "VARCHAR"]
    want = dict(zip(duck.columns, map(list, zip(*duck.fetchall()))))
    assert mine == want
    polars = pl.read_parquet(str(pq_dataset)).sort("id").to_dict(as_series=False)
    assert mine == {k: polars[k] for k in mine}
    assert set(mine["city"]) == set(CITIES)  # decoded: spaces, '/', '=', '%', and null


def test_projection(sluice, pq_dataset):
    full = by_id(sluice_read(sluice, pq_dataset))
    for columns in (["city"], ["year", "id"], ["city", "amount", "year"], ["note"]):
        got = sluice_read(sluice, pq_dataset, "-c", ",".join(columns))
        assert got.column_names == columns
        if "id" in columns:
            assert by_id(got) == {c: full[c] for c in columns}
        else:  # same rows in the same (file) order as the full read
            ordered = sluice_read(sluice, pq_dataset).to_pydict()
            assert got.to_pydict() == {c: ordered[c] for c in columns}


def test_stats_and_limit(sluice, pq_dataset):
    import json

    def stats(*args):
        res = sluice.run("stats", pq_dataset, "--json", *args)
        return {c["name"]: {k: v for k, v in c.items() if k in ("count", "nulls", "min", "max")}
                for c in json.loads(res.stdout)}
    # From the footers and the partition values, nothing decoded ...
    stored = stats("-c", "year,city,amount")
    assert stored["year"] == {"count": 400, "nulls": 0, "min": "2020", "max": "2022"}
    assert stored["city"]["nulls"] == 80 and stored["city"]["min"] == "New York"
    # ... as a scan that decodes every value (a limit turns the footers off)
    assert stats("-c", "year,city,amount", "--limit", "100000") == stored
    assert stats("--metadata", "-c", "city")["city"] == stored["city"]
    got = sluice_read(sluice, pq_dataset, "--limit", "5")
    assert got.num_rows == 5 and got.column_names[-2:] == ["year", "city"]


def test_csv_and_dates_written_by_duckdb(sluice, tmp_path):
    root = tmp_path / "events"
    duckdb.sql(f"""copy (select i as id, 'e' || i as name,
                          date '2024-02-27' + (i % 4)::int as day, i % 2 as part
                   from range(50) t(i))
                   to '{root}' (format csv, header true, partition_by (day, part))""")
    got = sluice_read(sluice, root)
    assert got.column_names == ["id", "name", "day", "part"]
    assert got.schema.field("day").type == pa.date32()
    assert got.schema.field("part").type == pa.int64()
    duck = duckdb.sql(f"select id, name, day, part from read_csv('{root}/**/*.csv', "
                      f"hive_partitioning=true) order by id")
    want = dict(zip(duck.columns, map(list, zip(*duck.fetchall()))))
    assert by_id(got) == want
    assert datetime.date(2024, 2, 29) in want["day"]


@pytest.mark.parametrize("values", [["+3", "4"], [" 3", "4"], ["3 ", "4"], ["1", "01", " 3"],
                                    ["01", "007"], ["-0", "00"], ["-5", "6"], ["+0"],
                                    ["007", "07", "7"], ["01", "02", "12"]])
def test_integer_keys_inferred_as_pyarrow_and_polars(sluice, tmp_path, values):
    """A key is an integer when every value is digits after an optional '-'
    (leading zeros too), as pyarrow.dataset and polars infer it: '+3' and
    ' 3' keep their text (they were int64 3, and '01' beside ' 3' became 1).
    Unless two values spell one integer ('007' and '7', '-0' and '00'):
    as integers they would merge distinct directories (pyarrow and polars
    merge them), so the key keeps its text, as DuckDB keeps it."""
    root = tmp_path / "d"
    for i, v in enumerate(values):
        (root / f"k={v}").mkdir(parents=True)
        pq.write_table(pa.table({"x": [i]}), root / f"k={v}" / "a.parquet")
    got = sluice_read(sluice, root).sort_by("x")
    peer = pds.dataset(root, partitioning="hive").to_table().sort_by("x")
    polars = pl.read_parquet(f"{root}/**/*.parquet", hive_partitioning=True).sort("x")
    integer = pa.types.is_integer(peer.schema.field("k").type)
    assert integer == polars.schema["k"].is_integer()
    if integer and len(set(peer.column("k").to_pylist())) < len(values):
        duck = duckdb.sql(f"select k from read_parquet('{root}/**/*.parquet', "
                          "hive_partitioning=true) order by x").fetch_arrow_table()
        assert duck.schema.field("k").type == pa.string()
        assert got.schema.field("k").type == pa.string()
        assert got.column("k").to_pylist() == duck.column("k").to_pylist() == values
        return
    assert got.schema.field("k").type == (pa.int64() if integer else pa.string())
    assert got.column("k").to_pylist() == peer.column("k").to_pylist() == polars["k"].to_list()


def test_key_that_is_a_file_column_adds_nothing(sluice, tmp_path):
    root = tmp_path / "dup"
    for k in (1, 2):
        (root / f"k={k}").mkdir(parents=True)
        pq.write_table(pa.table({"id": [k], "k": ["from the file"]}), root / f"k={k}" / "p.parquet")
    got = sluice_read(sluice, root)
    assert got.column_names == ["id", "k"]
    assert got.column("k").to_pylist() == ["from the file"] * 2


def test_no_hive_adds_nothing(sluice, tmp_path):
    pq_root = tmp_path / "one"
    (pq_root / "a=1").mkdir(parents=True)
    pq.write_table(pa.table({"id": [7]}), pq_root / "a=1" / "p.parquet")
    assert sluice_read(sluice, pq_root).to_pydict() == {"id": [7], "a": [1]}  # one object too
    assert sluice_read(sluice, pq_root, "--no-hive").column_names == ["id"]
    # only segments below the location count
    assert sluice_read(sluice, pq_root / "a=1").column_names == ["id"]
    assert sluice_read(sluice, f"{pq_root}/a=*/*.parquet").column_names == ["id", "a"]


def test_keys_in_another_order_match_by_name(sluice, tmp_path):
    """a=1/b=2 and b=3/a=4 are the same keys (DuckDB matches them by name);
    they once added no columns at all, and a filter on a failed."""
    root = tmp_path / "order"
    for i, rel in enumerate(("a=1/b=2/p.parquet", "b=3/a=4/p.parquet", "b=5/a=6/p.parquet")):
        (root / rel).parent.mkdir(parents=True)
        pq.write_table(pa.table({"id": [i]}), root / rel)
    duck = duckdb.sql(f"select id, a, b from read_parquet('{root}/**/*.parquet', "
                      "hive_partitioning=true) order by id").fetch_arrow_table()
    got = sluice_read(sluice, root)
    assert got.column_names == ["id", "a", "b"]
    assert by_id(got) == duck.to_pydict()
    assert by_id(sluice_read(sluice, root, "--filter", "a>=4")) == \
        duck.filter(pa.compute.greater_equal(duck["a"], 4)).to_pydict()
    # An object naming a twice and no b does not have the others' keys: an
    # error, as DuckDB's (it was read with no partition columns at all).
    (root / "a=7" / "a=8").mkdir(parents=True)
    pq.write_table(pa.table({"id": [9]}), root / "a=7" / "a=8" / "p.parquet")
    assert b"are partitioned by different keys" in sluice.expect_error("cat", root).stderr
    with pytest.raises(duckdb.Error, match="Hive partition mismatch"):
        duckdb.sql(f"select * from read_parquet('{root}/**/*.parquet', hive_partitioning=true)")


def test_objects_of_other_types_are_named_by_type(sluice, tmp_path):
    """The message of objects whose columns differ names the types as
    people write them (int64, string), not as Arrow format codes ('l', 'u').
    (int32 beside int64 reads as int64: test_parquet_read's joinable types.)"""
    (tmp_path / "d").mkdir()
    pq.write_table(pa.table({"a": pa.array([1], pa.int64())}), tmp_path / "d" / "p1.parquet")
    pq.write_table(pa.table({"a": pa.array(["x"])}), tmp_path / "d" / "p2.parquet")
    err = sluice.expect_error("cat", tmp_path / "d").stderr.decode()
    assert "column 'a' is of type string here, int64 in the first" in err, err


def test_objects_of_another_format_by_name_are_an_error(sluice, tmp_path):
    """A directory whose objects' names say different formats: an error that
    names both objects and formats (the Parquet file was read as CSV, and the
    message spoke of a header that is not UTF-8). Named, the format is used."""
    (tmp_path / "d" / "z").mkdir(parents=True)
    (tmp_path / "d" / "a.csv").write_text("a\n1\n")
    pq.write_table(pa.table({"a": [2]}), tmp_path / "d" / "z" / "c.parquet")
    err = sluice.expect_error("cat", tmp_path / "d").stderr.decode()
    assert "c.parquet' is parquet by its name" in err and "a.csv', the first object, is csv" in err
    (tmp_path / "d" / "z" / "c.parquet").unlink()
    (tmp_path / "d" / "z" / "c.txt").write_text("a\n3\n")
    assert sorted(sluice_read(sluice, tmp_path / "d", "-f", "csv").column("a").to_pylist()) == [1, 3]


def test_ipc_streams_named_arrow_read_as_a_dataset(sluice, tmp_path):
    """IPC streams named x.arrow (Hugging Face datasets' shards): the first
    is a stream by its bytes, the others by a name like its own."""
    (tmp_path / "s").mkdir()
    for n, x in (("a", 1), ("b", 2)):
        with ipc.new_stream(str(tmp_path / "s" / f"{n}.arrow"), pa.schema([("x", pa.int64())])) as w:
            w.write_table(pa.table({"x": [x]}))
    assert sluice_read(sluice, tmp_path / "s").column("x").to_pylist() == [1, 2]


@pytest.mark.parametrize("segment", [b"k=%C3", b"k=caf\xe9", b"%FF=1"])
def test_partition_not_utf8_is_an_error(sluice, tmp_path, segment):
    """A key or value that is not UTF-8 once %XX-decoded is refused, as
    DuckDB and pyarrow.dataset refuse it (it went into a string column as
    it was: an Arrow array that is not valid)."""
    import os
    root = os.fsencode(tmp_path / "d")
    other = b"k=a" if segment.startswith(b"k=") else b"%FF=2"
    for part, x in ((segment, 1), (other, 2)):
        os.makedirs(os.path.join(root, part))
        with open(os.path.join(root, part, b"f.parquet"), "wb") as f:
            pq.write_table(pa.table({"x": [x]}), f)
    err = sluice.expect_error("cat", tmp_path / "d").stderr
    assert b"is not UTF-8 once %XX-decoded" in err and segment in err
    if segment.startswith(b"k="):
        with pytest.raises(duckdb.Error):
            duckdb.sql(f"select * from read_parquet('{tmp_path}/d/*/*.parquet', "
                       "hive_partitioning=true)").fetchall()
    # Without partitions, the files read.
    assert sorted(sluice_read(sluice, tmp_path / "d", "--no-hive").column("x").to_pylist()) == [1, 2]


@pytest.mark.parametrize("layout", [
    (("a=1/b=2", 1), ("a=2", 2)),       # a key missing below some objects
    (("a=1", 1), ("b=2", 2)),           # other keys, as many
    (("x=%FF", 1), ("y=1", 2)),         # other keys, one not UTF-8
    (("a=1/b=2", 1), ("b=3/b=4", 2)),   # a key named twice
    (("a=1/a=2", 1), ("b=3/c=4", 2)),   # the same, in the object that sorts first
    (("a=1", 1), (".", 2)),             # an object beside the partitions
])
def test_objects_with_different_keys_are_an_error(sluice, tmp_path, layout):
    """Objects whose directories name different keys: an error naming two of
    them, as DuckDB's 'Hive partition mismatch' (pyarrow fills the missing
    key with nulls, polars fails on the column lengths); they were read
    without partition columns at all. --no-hive reads them."""
    for part, x in layout:
        (tmp_path / "d" / part).mkdir(parents=True, exist_ok=True)
        pq.write_table(pa.table({"x": [x]}), tmp_path / "d" / part / f"f{x}.parquet")
    err = sluice.expect_error("cat", tmp_path / "d").stderr
    assert b"are partitioned by different keys" in err and b"--no-hive" in err, err
    named = [part for part, x in layout if f"f{x}.parquet".encode() in err]
    assert len(named) == 2, err
    with pytest.raises(duckdb.Error, match="Hive partition mismatch"):
        duckdb.sql(f"select * from read_parquet('{tmp_path}/d/**/*.parquet', "
                   "hive_partitioning=true)").fetchall()
    got = sluice_read(sluice, tmp_path / "d", "--no-hive")
    assert got.column_names == ["x"] and sorted(got.column("x").to_pylist()) == [1, 2]


def test_repeated_key_keeps_its_first_value(sluice, tmp_path):
    """A key named again below (a=1/k=1/k=2) keeps its first value, as
    pyarrow.dataset and DuckDB read it; every partition column was dropped
    (a too, though it is named once), silently."""
    import pyarrow.dataset as ds
    root = tmp_path / "rep"
    for i, rel in enumerate(("a=1/k=1/k=2", "a=2/k=3/k=4", "k=5/a=3/k=6/a=7")):
        (root / rel).mkdir(parents=True)
        pq.write_table(pa.table({"id": pa.array([i], pa.int64())}), root / rel / "p.parquet")
    got = sluice_read(sluice, root)
    assert got.column_names == ["id", "a", "k"]
    arrow = ds.dataset(root, partitioning="hive").to_table().sort_by("id")
    assert by_id(got) == {n: arrow.column(n).to_pylist() for n in ("id", "a", "k")}
    duck = duckdb.sql(f"select id, a, k from read_parquet('{root}/**/*.parquet', "
                      "hive_partitioning=true) order by id").fetchall()
    assert list(zip(*by_id(got).values())) == duck
    (root / "y=1" / "y=2").mkdir(parents=True)  # one that names only k: different keys
    pq.write_table(pa.table({"id": [9]}), root / "y=1" / "y=2" / "p.parquet")
    assert b"are partitioned by different keys" in sluice.expect_error("cat", root).stderr


def test_nul_in_a_partition_value_round_trips(sluice, tmp_path):
    """%00 in a value is a NUL byte, as pyarrow.dataset and DuckDB read it:
    sluice's partitioned write spells "a\\0b" `k=a%00b` (as pyarrow does) and
    read it back as the text `a%00b`. `1%00` is text, not the int 1; filters
    on the key, of objects (--partitions, --filter) or of rows
    (--union-by-name), compare the bytes past the NUL as DuckDB does."""
    src = tmp_path / "nul.parquet"
    pq.write_table(pa.table({"id": [0, 1], "k": ["a\x00b", "c"]}), src)
    sluice.run("convert", src, tmp_path / "w", "-t", "parquet", "--partition-by", "k")
    assert sorted(p.name for p in (tmp_path / "w").iterdir()) == ["k=a%00b", "k=c"]
    want = pds.dataset(tmp_path / "w", partitioning="hive").to_table().sort_by("id")
    assert want.column("k").to_pylist() == ["a\x00b", "c"]
    assert sluice_read(sluice, tmp_path / "w").sort_by("id").equals(want)
    root = tmp_path / "d"
    for i, value in enumerate(("%00", "1%00", "1", "a%00b")):
        (root / f"k={value}").mkdir(parents=True)
        pq.write_table(pa.table({"id": pa.array([i], pa.int64())}),
                       root / f"k={value}" / "p.parquet")
    got = sluice_read(sluice, root)
    arrow = pds.dataset(root, partitioning="hive").to_table()
    assert got.schema == arrow.schema
    assert by_id(got) == by_id(arrow)
    glob = f"read_parquet('{root}/**/*.parquet', hive_partitioning=true)"
    for text, where in (("k<1", "k < '1'"), ("k=1", "k = '1'"), ("k=1%00", "k = '1\x00'"),
                        ("k>1", "k > '1'"), ("k=%00|a%00b", "k in ('\x00', 'a\x00b')"),
                        ("k!=1%00", "k != '1\x00'")):
        duck = [r[0] for r in duckdb.sql(f"select id from {glob} where {where} order by id").fetchall()]
        for how in (["--partitions", text], ["--filter", text], ["--filter", text, "--union-by-name"]):
            assert sorted(sluice_read(sluice, root, *how).column("id").to_pylist()) == duck, (how, duck)


def test_empty_object(sluice, tmp_path):
    root = tmp_path / "empty"
    for k, rows in (("a", 0), ("b", 2)):
        (root / f"k={k}").mkdir(parents=True)
        pq.write_table(pa.table({"id": pa.array(range(rows), pa.int64())}),
                       root / f"k={k}" / "p.parquet")
    got = sluice_read(sluice, root)
    assert got.to_pydict() == {"id": [0, 1], "k": ["b", "b"]}
    duck = duckdb.sql(f"select id, k from read_parquet('{root}/**/*.parquet', "
                      f"hive_partitioning=true) order by id").fetchall()
    assert list(zip(*got.to_pydict().values())) == duck


FILTERS = [
    ("year=2021", [("year", "=", 2021)], "year = 2021"),
    ("year>=2021,city=Paris|New%20York", [("year", ">=", 2021), ("city", "in", ["Paris", "New York"])],
     "year >= 2021 and city in ('Paris', 'New York')"),
    ("city!=Paris|a%2Fb%3Dc%25d", [("city", "not in", ["Paris", "a/b=c%d"])],
     "city not in ('Paris', 'a/b=c%d')"),
    ("year<2022,year>2020", [("year", "<", 2022), ("year", ">", 2020)], "year < 2022 and year > 2020"),
    ("city>=S", [("city", ">=", "S")], "city >= 'S'"),
    ("year=1999", [("year", "=", 1999)], "year = 1999"),
    # Other numbers with an integer key, compared as row filters compare
    # them with an integer column (they were refused as not integers).
    ("year>2020.5", [("year", ">", 2020.5)], "year > 2020.5"),
    ("year<=2021.5", [("year", "<=", 2021.5)], "year <= 2021.5"),
    ("year=2021.0", [("year", "=", 2021.0)], "year = 2021.0"),
    ("year=2021.5|2022", [("year", "in", [2021.5, 2022])], "year in (2021.5, 2022)"),
    ("year!=2021.5", [("year", "!=", 2021.5)], "year != 2021.5"),
    ("year<99999999999999999999", [("year", "<", 1e20)], "year < 99999999999999999999"),
    ("year>-1e30", [("year", ">", -1e30)], "year > -1e30"),
    # Groups of which one must hold.
    ("year=2020,city=Paris;year=2022", [[("year", "=", 2020), ("city", "=", "Paris")],
                                        [("year", "=", 2022)]],
     "(year = 2020 and city = 'Paris') or year = 2022"),
]


@pytest.mark.parametrize("text,pyarrow_filters,where", FILTERS)
def test_partition_filters_match_pyarrow_and_duckdb(sluice, pq_dataset, text, pyarrow_filters,
                                                    where):
    got = sluice_read(sluice, pq_dataset, "--partitions", text)
    assert got.column_names == ["id", "amount", "note", "year", "city"]
    duck = duckdb.sql(f"select id, amount, note, year, city from read_parquet("
                      f"'{pq_dataset}/**/*.parquet', hive_partitioning=true) where {where} "
                      f"order by id").fetchall()
    assert sorted(zip(*got.to_pydict().values())) == duck
    # pyarrow reads the same rows (its partition columns are dictionaries),
    # except that its "not in" keeps null values, where SQL and sluice do not
    peer = pq.read_table(pq_dataset, filters=pyarrow_filters).to_pydict()
    keep = [i for i, c in zip(peer["id"], peer["city"]) if c is not None or "city!=" not in text]
    assert sorted(keep) == sorted(got.column("id").to_pylist())


@pytest.mark.parametrize("text,where", [
    ("year=1999", "year = 1999"),
    ("year>=2021", "year >= 2021"),
    ("city=Paris", "city = 'Paris'"),
])
@pytest.mark.parametrize("union", [[], ["--union-by-name"]])
def test_stats_from_footers_count_only_objects_the_partitions_keep(sluice, pq_dataset, text,
                                                                 where, union):
    """Footer statistics over a partition filter are those of the objects it
    keeps, as DuckDB's aggregates are: a refused object (kept only for its
    columns) adds no rows, also when none passes."""
    res = sluice.run("stats", pq_dataset, "--json", "-c", "id,amount,year", "--partitions", text,
                     *union)
    got = {s["name"]: s for s in json.loads(res.stdout)}
    count, lo, hi, ylo, yhi = duckdb.sql(
        f"select count(*), min(id), max(id), min(year), max(year) from read_parquet("
        f"'{pq_dataset}/**/*.parquet', hive_partitioning=true) where {where}").fetchall()[0]
    assert got["id"]["count"] == count
    assert got["id"].get("min") == (None if count == 0 else str(lo))
    assert got["id"].get("max") == (None if count == 0 else str(hi))
    assert got["year"].get("max") == (None if count == 0 else str(yhi))
    assert got["year"].get("min") == (None if count == 0 else str(ylo))


def test_partition_filter_errors(sluice, pq_dataset, tmp_path):
    err = sluice.expect_error("cat", pq_dataset, "--partitions", "yr=1").stderr.decode()
    assert "'yr' is not a partition key" in err and "year, city" in err
    err = sluice.expect_error("cat", pq_dataset, "--partitions", "year=x").stderr.decode()
    assert "'x' is not a number" in err
    err = sluice.expect_error("cat", pq_dataset, "--partitions", "year<1|2").stderr.decode()
    assert "several values" in err
    # An empty group read every object (';' a trailing separator).
    for text in ("city=Paris;", ";", "year=2021;;city=Paris"):
        err = sluice.expect_error("cat", pq_dataset, "--partitions", text).stderr.decode()
        assert "an empty condition" in err, text
    flat = tmp_path / "flat"
    flat.mkdir()
    pq.write_table(pa.table({"id": [1]}), flat / "p.parquet")
    err = sluice.expect_error("cat", flat, "--partitions", "a=1").stderr.decode()
    assert "no key=value directories" in err


ROW_FILTERS = [
    ("amount>50,year=2021", "amount > 50 and year = 2021"),
    ("note=n1|n8|n15,city!=Paris", "note in ('n1', 'n8', 'n15') and city != 'Paris'"),
    ("id<=30,note>=n2", "id <= 30 and note >= 'n2'"),
    ("amount<0", "amount < 0"),
    ("amount<5;id>=38,note!=n40", "amount < 5 or (id >= 38 and note != 'n40')"),  # OR groups
    # OR groups that name keys (were refused): all of the filter filters rows
    ("year=2021,amount>50;year=2020,city=Paris",
     "(year = 2021 and amount > 50) or (year = 2020 and city = 'Paris')"),
    ("year=2022;amount<3", "year = 2022 or amount < 3"),
    ("city=Paris|New%20York,year!=2021;year=2021,note=n1|n2|n4",
     "(city in ('Paris', 'New York') and year != 2021) or (year = 2021 and note in ('n1', 'n2', 'n4'))"),
]


@pytest.mark.parametrize("text,where", ROW_FILTERS)
def test_row_filters_match_duckdb(sluice, pq_dataset, text, where):
    """--filter: conditions on partition keys choose objects, the others rows
    (nulls pass none, as in DuckDB's WHERE); -c leaves the filter's columns out."""
    got = sluice_read(sluice, pq_dataset, "--filter", text)
    duck = duckdb.sql(f"select id, amount, note, year, city from read_parquet("
                      f"'{pq_dataset}/**/*.parquet', hive_partitioning=true) where {where} "
                      f"order by id").fetchall()
    assert sorted(zip(*got.to_pydict().values())) == duck
    got = sluice_read(sluice, pq_dataset, "--filter", text, "-c", "id")
    assert got.column_names == ["id"]
    assert sorted(got.column("id").to_pylist()) == [row[0] for row in duck]
    stats = json.loads(sluice.run("stats", pq_dataset, "--json", "--filter", text).stdout)
    assert {s["name"]: s["count"] for s in stats}["id"] == len(duck)


def test_row_filter_errors(sluice, pq_dataset):
    err = sluice.expect_error("cat", pq_dataset, "--filter", "nope=1").stderr.decode()
    assert "no column 'nope'" in err
    err = sluice.expect_error("cat", pq_dataset, "--filter", "amount>lots").stderr.decode()
    assert "'lots' is not a number" in err
    assert "--filter" in sluice.run("cat", "--help").stdout.decode()


@pytest.mark.parametrize("op", ["=", "!=", "<", "<=", ">", ">="])
def test_date_keys_compare_with_date_times_as_duckdb(sluice, tmp_path, op):
    # day>2024-01-01T12:00 was refused on day=YYYY-MM-DD directories (a
    # date column took it): compared with the day's midnight, as DuckDB does.
    root = tmp_path / "d"
    for k, day in enumerate(["2024-01-01", "2024-01-02", "2024-01-03"]):
        (root / f"day={day}").mkdir(parents=True)
        pq.write_table(pa.table({"x": [k]}), root / f"day={day}" / "a.parquet")
    for literal in ("2024-01-02T00:00:00", "2024-01-01T12:00"):
        want = [r[0] for r in duckdb.sql(
            f"select x from read_parquet('{root}/**/*.parquet', hive_partitioning=true) "
            f"where day {op} TIMESTAMP '{literal.replace('T', ' ')}' order by x").fetchall()]
        for flag in ("--partitions", "--filter"):
            got = sluice_read(sluice, root, flag, f"day{op}{literal.replace(':', '%3A')}")
            assert sorted(got.column("x").to_pylist()) == want, (flag, literal)


@pytest.mark.parametrize("text,where", [
    ("y=9007199254740993.0", "y = 9007199254740993.0"),
    ("y=9007199254740993.5", "y = 9007199254740993.5"),
    ("y<9007199254740993.0", "y < 9007199254740993.0"),
    ("y>=9007199254740992.5", "y >= 9007199254740992.5"),
    ("y<inf", "y < 'inf'::DOUBLE"),
    ("y>-inf,y!=9007199254740992", "y > '-inf'::DOUBLE and y != 9007199254740992")])
def test_integer_keys_past_2_53_compare_exactly_as_duckdb(sluice, tmp_path, text, where):
    # --partitions y=9007199254740993.0 chose y=9007199254740992 (the
    # literal went through a double), and y<inf was refused.
    root = tmp_path / "big"
    for k, y in enumerate([2**53, 2**53 + 1, 2**53 + 2]):
        (root / f"y={y}").mkdir(parents=True)
        pq.write_table(pa.table({"x": [k]}), root / f"y={y}" / "a.parquet")
    want = [r[0] for r in duckdb.sql(
        f"select x from read_parquet('{root}/**/*.parquet', hive_partitioning=true) "
        f"where {where} order by x").fetchall()]
    for flag in ("--partitions", "--filter"):
        got = sluice_read(sluice, root, flag, text)
        assert sorted(got.column("x").to_pylist()) == want, (flag, text)


def test_partition_keys_take_any_number_of_values(sluice, pq_dataset):
    # More than 64 values on a key were refused (256 on a column), with the
    # whole condition echoed into the message.
    years = [1900 + i for i in range(121)] + [2022.5]
    text = "year=" + "|".join(map(str, years))
    duck = duckdb.sql(f"select id from read_parquet('{pq_dataset}/**/*.parquet', "
                      f"hive_partitioning=true) where year in ({', '.join(map(str, years))}) "
                      f"order by id").fetchall()
    assert duck
    for flag in ("--partitions", "--filter"):
        got = sluice_read(sluice, pq_dataset, flag, text, "-c", "id")
        assert sorted(got.column("id").to_pylist()) == [r[0] for r in duck], flag
    # A bad value in a long condition: the message does not echo it whole.
    err = sluice.expect_error("cat", pq_dataset, "--partitions", text + "|x").stderr.decode()
    assert "'x' is not a number" in err and len(err) < 400, err
    err = sluice.expect_error("cat", pq_dataset, "--partitions",
                              "year<" + text[5:]).stderr.decode()
    assert "partition filter 'year<1900|1901|" in err and "...': several values" in err, err
    assert len(err) < 400, err


def test_or_groups_on_keys_read_only_the_objects_some_group_takes(sluice, tmp_path):
    # An object whose directories fail every group's key conditions is not
    # read (its data here is damaged); as pyarrow answers the same filter.
    root = tmp_path / "t"
    for year in (2023, 2024, 2025):
        (root / f"year={year}").mkdir(parents=True)
        pq.write_table(pa.table({"x": [1, 2, 3]}), root / f"year={year}" / "a.parquet")
    (root / "year=2025" / "a.parquet").write_bytes(b"damaged" * 10)
    got = sluice_read(sluice, root, "--filter", "year=2023,x>1;year=2024")
    want = pq.read_table(root, filters=[[("year", "=", 2023), ("x", ">", 1)], [("year", "=", 2024)]])
    assert sorted(zip(*got.to_pydict().values())) == \
        sorted(zip(want.column("x").to_pylist(), map(int, want.column("year").to_pylist())))
    # A group with no key condition may take every object: the damaged one is read.
    err = sluice.expect_error("cat", root, "--filter", "x>2;year=2024").stderr.decode()
    assert "year=2025/a.parquet" in err


def test_convert_partition_by_round_trips(sluice, pq_dataset, tmp_path):
    """convert --partition-by writes a tree that DuckDB (and sluice) read
    back as the source; refusals exit non-zero and leave nothing."""
    flat = tmp_path / "flat.parquet"
    sluice.run("convert", pq_dataset, flat, "-q")
    out = tmp_path / "out"
    sluice.run("convert", flat, out, "-t", "parquet", "--partition-by", "city,year", "-q")
    got = duckdb.sql(f"select * from read_parquet('{out}/**/*.parquet', hive_partitioning=true)"
                     ).arrow()
    got = got.read_all() if hasattr(got, "read_all") else got
    want = by_id(sluice_read(sluice, flat))
    back = by_id(got.select(list(want)))
    assert back["id"] == want["id"] and back["amount"] == want["amount"]
    assert back["city"] == want["city"]
    assert [str(y) for y in back["year"]] == [str(y) for y in want["year"]]
    assert by_id(sluice_read(sluice, out).select(list(want)))["city"] == want["city"]
    res = sluice.expect_error("convert", flat, tmp_path / "few", "-t", "parquet",
                              "--partition-by", "id", "--max-partitions", "10", "-q")
    assert b"more than 10 partitions" in res.stderr
    assert not (tmp_path / "few").exists()
    res = sluice.expect_error("convert", flat, out, "-t", "parquet", "--partition-by", "city",
                              "-q")
    assert b"not empty" in res.stderr
    # --max-rows-per-file: files of at most N rows, every row read back.
    split = tmp_path / "split"
    sluice.run("convert", flat, split, "-t", "parquet", "--partition-by", "city",
               "--max-rows-per-file", "7", "-q")
    sizes = [pq.ParquetFile(p).metadata.num_rows for p in split.rglob("*.parquet")]
    assert max(sizes) == 7 and len(sizes) > len(list(split.iterdir()))
    assert by_id(sluice_read(sluice, split).select(list(want)))["amount"] == want["amount"]
    # Without --partition-by: DST is a directory of part-N files (as
    # pyarrow's write_dataset without partitioning), every column in them.
    plain = tmp_path / "plain"
    sluice.run("convert", flat, plain, "-t", "parquet", "--max-rows-per-file", "7", "-q")
    names = sorted(p.name for p in plain.iterdir())
    assert names == sorted(f"part-{i}.parquet" for i in range(len(names)))
    sizes = [pq.ParquetFile(plain / n).metadata.num_rows for n in names]
    assert max(sizes) == 7 and sum(sizes) == len(want["id"])
    assert by_id(sluice_read(sluice, plain).select(list(want))) == want
    res = sluice.expect_error("convert", flat, tmp_path / "one.parquet", "--existing-data",
                              "append", "-q")
    assert b"existing_data_behavior is for dataset output" in res.stderr
    assert not (tmp_path / "one.parquet").exists()
    res = sluice.run_raw("convert", flat, tmp_path / "z", "--partition-by", "city",
                         "--max-rows-per-file", "0", "-q")
    assert res.returncode == 2 and b"bad --max-rows-per-file" in res.stderr  # usage


@pytest.mark.parametrize("codec,suffix", [("gzip", ".gz"), ("zstd", ".zst"), ("bz2", ".bz2"),
                                          ("bzip2", ".bz2"), ("xz", ".xz")])
def test_partitioned_compressed_text_is_named_by_its_compression(sluice, tmp_path, codec, suffix):
    """Partitions written with --compression are named part-0.csv.gz,
    .csv.zst, .csv.bz2, .csv.xz (bz2 and xz were written as part-0.csv, which
    readers took for plain text), and read back as the table."""
    import bz2
    import gzip
    import lzma
    src = tmp_path / "t.csv"
    src.write_text("k,x\n" + "".join(f"{i % 3},{i}\n" for i in range(30)))
    out = tmp_path / "out"
    sluice.run("convert", src, out, "--partition-by", "k", "-t", "csv", "--compression", codec)
    files = sorted(p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file())
    assert files == [f"k={k}/part-0.csv{suffix}" for k in range(3)], files
    opener = {".gz": gzip.open, ".bz2": bz2.open, ".xz": lzma.open}.get(suffix)
    if opener is not None:
        with opener(out / f"k=1/part-0.csv{suffix}", "rt") as f:
            assert f.read().splitlines()[1:] == [str(i) for i in range(1, 30, 3)]
    back = sluice_read(sluice, out)
    assert sorted(back.column("x").to_pylist()) == list(range(30))


@pytest.mark.parametrize("spelling", ["dir", "dir/", "escaped-glob"])
def test_location_whose_own_name_has_a_key_and_glob_characters(sluice, tmp_path, spelling):
    """A directory that exists is the location whole, whatever its
    characters: t=[x]/ gives b alone, as pyarrow.dataset reads it (only
    segments below the location are keys). Before, the root was cut at '['
    and t='[x]' became a column. An escaped spelling (t=\\[x\\]/*/...) is the
    same directory."""
    import pyarrow.dataset as ds
    top = tmp_path / "t=[x]"
    for b in (1, 2):
        (top / f"b={b}").mkdir(parents=True)
        pq.write_table(pa.table({"id": pa.array([b], pa.int64())}), top / f"b={b}" / "f.parquet")
    want = ds.dataset(top, partitioning="hive").to_table()
    location = {"dir": str(top), "dir/": f"{top}/",
                "escaped-glob": str(tmp_path / "t=\\[x\\]") + "/*/*.parquet"}[spelling]
    got = sluice_read(sluice, location)
    assert got.column_names == ["id", "b"]
    assert by_id(got) == by_id(want)


def test_a_partition_file_that_fails_at_its_end_is_named(sluice, tmp_path):
    """A CSV partition whose one column holds only nulls (refused when the
    file ends: its lines would read back as empty strings) is named in the
    error, as a failure while its rows go in is; nothing is written."""
    src = tmp_path / "an.parquet"
    pq.write_table(pa.table({"c": ["x", None, "x"], "v": [1.5, None, 3.0]}), src)
    out = tmp_path / "an"
    err = sluice.expect_error("convert", src, out, "-t", "csv", "--partition-by", "c").stderr
    assert b"partition c=__HIVE_DEFAULT_PARTITION__: csv: column 'v' holds only nulls" in err, err
    assert not out.exists() or not any(out.iterdir())
    sluice.run("convert", src, out, "-t", "csv", "--partition-by", "c", "-W", "null=NA")
    assert sorted(p.name for p in out.iterdir()) == ["c=__HIVE_DEFAULT_PARTITION__", "c=x"]


def test_a_left_staging_directory_is_named_when_it_is_all_there_is(sluice, tmp_path):
    """A write killed before its commit leaves `.sluice-XXXXXX`; the next
    write into the directory says that is all it holds (it said only "not
    empty", the directory looking empty to ls). It is not removed: another
    write may be filling it."""
    src = tmp_path / "in.parquet"
    pq.write_table(pa.table({"c": ["x", "y"], "v": [1, 2]}), src)
    out = tmp_path / "out"
    (out / ".sluice-abc123" / "c=x").mkdir(parents=True)
    err = sluice.expect_error("convert", src, out, "-t", "parquet", "--partition-by", "c").stderr
    assert b"it holds only .sluice-abc123, the staging directory of a write that did not " \
        b"finish" in err, err
    assert (out / ".sluice-abc123").is_dir()
    (out / "c=z").mkdir()
    err = sluice.expect_error("convert", src, out, "-t", "parquet", "--partition-by", "c").stderr
    assert b"the directory is not empty;" in err and b"it holds only" not in err, err
