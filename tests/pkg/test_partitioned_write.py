"""sluice.write(partition_by=...): Hive-partitioned output laid out as
pyarrow's write_dataset and DuckDB's PARTITION_BY lay it out, read back with
equal values by pyarrow.dataset, DuckDB, polars and sluice; and nothing left
behind when it fails."""
import datetime
import io
from decimal import Decimal
import os
import random

import duckdb
import polars as pl
import pyarrow as pa
import pyarrow.csv as pcsv
import pyarrow.dataset as ds
import pyarrow.parquet as pq
import pytest

import sluice

KEYS = ["a/b", "x=y", "p%q", "", None, "sp ace", "é#?*", "plain-_.~"]


def _table(n=240, seed=7):
    rng = random.Random(seed)
    return pa.table({
        "k": pa.array([KEYS[rng.randrange(len(KEYS))] for _ in range(n)], pa.string()),
        "n": pa.array([rng.choice([1, -2, 300, None]) for _ in range(n)], pa.int32()),
        "d": pa.array([datetime.date(2024, 1 + rng.randrange(3), 1) for _ in range(n)],
                      pa.date32()),
        "v": pa.array(range(n), pa.int64()),
        "f": pa.array([rng.random() for _ in range(n)], pa.float64()),
        "s": pa.array([f"row{i}" if i % 5 else None for i in range(n)], pa.string()),
    })


def _layout(root):
    """Directories holding files, relative to root, and the files' count."""
    dirs, files = set(), 0
    for here, _, names in os.walk(root):
        if names:
            dirs.add(os.path.relpath(here, root))
            files += len(names)
    return dirs, files


def _rows(table, keys):
    """Rows as tuples ordered by v, key values spelled as text (readers infer
    partition types differently: int32, int64, date or string)."""
    cols = table.to_pydict()
    out = []
    for i in range(table.num_rows):
        row = []
        for name in ["v", "f", "s"] + keys:
            x = cols[name][i]
            if name in keys and x is not None:
                x = str(x)
            row.append(x)
        out.append(tuple(row))
    return sorted(out, key=lambda r: r[0])


@pytest.mark.parametrize("keys", [["k"], ["k", "d"], ["n", "k"]])
def test_layout_and_values_as_the_peers(tmp_path, keys):
    t = _table()
    out = tmp_path / "out"
    sluice.write(t, out, format="parquet", partition_by=keys)
    # The same directories as pyarrow's and DuckDB's partitioned writes.
    pa_dir, dd_dir = tmp_path / "pa", tmp_path / "dd"
    ds.write_dataset(t, pa_dir, format="parquet", partitioning=keys, partitioning_flavor="hive")
    duckdb.sql(f"copy (select * from t) to '{dd_dir}' "
               f"(format parquet, partition_by ({', '.join(keys)}))")
    dirs, files = _layout(out)
    assert dirs == _layout(pa_dir)[0] == _layout(dd_dir)[0]
    assert files == len(dirs)  # one file each: all fit the buffer
    assert all(name.startswith("part-0.parquet") for _, _, names in os.walk(out)
               for name in names)
    # The files leave the partition columns out.
    some = next(os.path.join(h, n) for h, _, names in os.walk(out) for n in names)
    assert set(pq.read_schema(some).names).isdisjoint(keys)
    want = _rows(t, keys)
    got_pa = ds.dataset(out, format="parquet", partitioning="hive").to_table()
    assert _rows(got_pa, keys) == want
    got_dd = duckdb.sql(f"select * from read_parquet('{out}/**/*.parquet', "
                        f"hive_partitioning=true)").arrow()
    got_dd = got_dd.read_all() if hasattr(got_dd, "read_all") else got_dd
    assert _rows(got_dd, keys) == want
    got_pl = pl.scan_parquet(f"{out}/**/*.parquet", hive_partitioning=True).collect().to_arrow()
    assert _rows(got_pl, keys) == want
    got = pa.table(sluice.read(out))
    assert _rows(got, keys) == want
    # sluice reads the keys back as int64 / date32 / string, as polars does.
    assert got.schema.field("k").type == pa.string()
    if "n" in keys:
        assert got.schema.field("n").type == pa.int64()
    if "d" in keys:
        assert got.schema.field("d").type == pa.date32()


@pytest.mark.parametrize("fmt,ext,compression", [("csv", ".csv", None), ("csv", ".csv.gz", "gzip"),
                                                 ("avro", ".avro", None), ("arrow", ".arrow", None)])
def test_other_formats(tmp_path, fmt, ext, compression):
    t = _table(100)
    out = tmp_path / "out"
    sluice.write(t, out, format=fmt, compression=compression, partition_by="k")
    names = {n for _, _, ns in os.walk(out) for n in ns}
    assert names == {"part-0" + ext}
    assert _rows(pa.table(sluice.read(out)), ["k"]) == _rows(t, ["k"])
    if fmt == "csv":
        got = ds.dataset(out, format="csv", partitioning="hive").to_table()
        assert sorted(got.column("v").to_pylist()) == list(range(100))


@pytest.mark.parametrize("name,fmt", [("out.parquet/", "parquet"), ("out.tsv/", "csv"),
                                      ("out.arrow//", "arrow")])
def test_a_directory_named_by_its_format_with_a_slash(tmp_path, name, fmt):
    """'out.parquet/' (as a directory is often spelled) tells the format as
    'out.parquet' does: it was "cannot tell the format". The parts take the
    directory's extension, and read back as pyarrow.dataset reads them."""
    t = _table(100)
    sluice.write(t, str(tmp_path) + "/" + name, partition_by="k")
    root = tmp_path / name.rstrip("/")
    ext = os.path.splitext(name.rstrip("/"))[1]
    assert {n for _, _, ns in os.walk(root) for n in ns} == {"part-0" + ext}
    fileformat = {"csv": ds.CsvFileFormat(parse_options=pcsv.ParseOptions(delimiter="\t")),
                  "arrow": "ipc"}.get(fmt, fmt)
    got = ds.dataset(root, format=fileformat, partitioning="hive").to_table()
    assert sorted(got.column("v").to_pylist()) == sorted(t.column("v").to_pylist())


@pytest.mark.parametrize("name", ["out.tsv.gz/", "out.csv.gz/", "out.csv.zst/", "out.tsv.zst",
                                  "out.tsv.gzip/"])
@pytest.mark.parametrize("partition", [True, False])
def test_a_directory_named_compressed_text_compresses_its_parts(tmp_path, name, partition):
    """'out.tsv.gz/' names tab-separated text compressed whole, as 'out.tsv.gz'
    does for one file: its parts are part-0.tsv.gz, gzip-compressed and
    tab-separated (they were plain comma-separated part-0.csv). pyarrow.csv
    reads every part back, decompressed, with the input's values."""
    import gzip
    t = pa.table({"k": pa.array([1, 2, 1, 3, 2], pa.int64()),
                  "v": pa.array(range(5), pa.int64()),
                  "s": pa.array(["a", "b\tc", None, "d,e", "f"])})
    ext = name.rstrip("/")[3:].replace(".gzip", ".gz")  # ".tsv.gz", ...
    codec = "gzip" if ext.endswith(".gz") else "zstd"
    delimiter = "\t" if ".tsv" in ext else ","
    kw = {"partition_by": "k"} if partition else {"max_rows_per_file": 2}
    sluice.write(t, str(tmp_path) + "/" + name, **kw)
    root = tmp_path / name.rstrip("/")
    files = sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file())
    if partition:
        assert files == [f"k={k}/part-0{ext}" for k in (1, 2, 3)], files
    else:
        assert files == [f"part-{i}{ext}" for i in range(3)], files
    rows = []
    for f in files:
        raw = (root / f).read_bytes()
        magic = b"\x1f\x8b" if codec == "gzip" else b"\x28\xb5\x2f\xfd"
        assert raw.startswith(magic), (f, raw[:8])
        if codec == "gzip":
            assert gzip.decompress(raw).split(b"\n", 1)[0] == delimiter.join(
                ["v", "s"] if partition else ["k", "v", "s"]).encode()
        stream = pa.CompressedInputStream(pa.BufferReader(raw), codec)
        got = pcsv.read_csv(stream, parse_options=pcsv.ParseOptions(delimiter=delimiter),
                            convert_options=pcsv.ConvertOptions(
                                column_types={"s": pa.string()}, strings_can_be_null=True,
                                quoted_strings_can_be_null=False)).to_pydict()
        if partition:
            got["k"] = [int(f.split("/")[0][2:])] * len(got["v"])
        rows += zip(got["k"], got["v"], got["s"])
    assert sorted(rows) == sorted(zip(*t.to_pydict().values()))


def test_many_batches_in_and_out_of_order(tmp_path):
    # Sorted input gives batches of one partition (kept without a copy);
    # shuffled input splits every batch.
    n = 50_000
    rng = random.Random(3)
    day = [rng.randrange(40) for _ in range(n)]
    t = pa.table({"day": pa.array(day, pa.int64()), "x": pa.array(range(n), pa.int64()),
                  "name": pa.array([f"n{i % 97}" for i in range(n)])})
    for name, table in [("sorted", t.sort_by("day")), ("shuffled", t)]:
        out = tmp_path / name
        sluice.write(table.to_reader(max_chunksize=1000), out, format="parquet",
                     partition_by=["day"])
        assert len(_layout(out)[0]) == 40
        got = ds.dataset(out, format="parquet", partitioning="hive").to_table().sort_by("x")
        assert got.column("x").to_pylist() == list(range(n))
        assert got.column("day").to_pylist() == day
        assert got.column("name").to_pylist() == t.column("name").to_pylist()


def test_categorical_and_bool_keys(tmp_path):
    import pandas as pd
    df = pd.DataFrame({"city": pd.Categorical(["Paris", "Rome", "Paris", None]),
                       "ok": [True, False, True, True], "x": [1.5, 2.5, 3.5, 4.5]})
    out = tmp_path / "out"
    sluice.write(df, out, format="parquet", partition_by=["city", "ok"], index=False)
    assert _layout(out)[0] == {"city=Paris/ok=true", "city=Rome/ok=false",
                               "city=__HIVE_DEFAULT_PARTITION__/ok=true"}
    got = pa.table(sluice.read(out)).sort_by("x")
    assert got.column("x").to_pylist() == [1.5, 2.5, 3.5, 4.5]
    assert got.column("city").to_pylist() == ["Paris", "Rome", "Paris", None]
    assert got.column("ok").to_pylist() == ["true", "false", "true", "true"]


def test_no_rows_makes_an_empty_directory(tmp_path):
    t = _table().slice(0, 0)
    out = tmp_path / "out"
    sluice.write(t, out, format="parquet", partition_by="k")
    assert out.is_dir() and list(out.iterdir()) == []


@pytest.mark.parametrize("keys,message", [
    (["f"], "cannot partition by column 'f' (double)"),
    (["nope"], "no column 'nope'"),
    (["k", "k"], "named twice"),
    (["k", "n", "d", "v", "f", "s"], None),  # f: refused as a float
])
def test_refused_keys_leave_nothing(tmp_path, keys, message):
    out = tmp_path / "out"
    with pytest.raises(sluice.InvalidArgumentError) as e:
        sluice.write(_table(), out, format="parquet", partition_by=keys)
    if message:
        assert message in str(e.value)
    assert not out.exists()


@pytest.mark.parametrize("key", ["_k", ".k"])
def test_hidden_directory_keys_are_refused(tmp_path, key):
    """_k=1/ would be skipped on reading (by sluice and pyarrow.dataset, which
    read such output as empty): refused, nothing written."""
    import pyarrow.dataset as pads
    peer = tmp_path / "peer"
    pads.write_dataset(pa.table({"x": [0, 1], key: [1, 2]}), peer, format="parquet",
                       partitioning=[key], partitioning_flavor="hive")
    assert pads.dataset(peer, format="parquet", partitioning="hive").to_table().num_rows == 0
    out = tmp_path / "out"
    with pytest.raises(sluice.InvalidArgumentError, match=f"cannot partition by '{key}'"):
        sluice.write(pa.table({"x": [0, 1], key: [1, 2]}), out, format="parquet",
                     partition_by=key)
    assert not out.exists()


def test_every_column_a_key_is_refused(tmp_path):
    t = pa.table({"a": [1, 2], "b": ["x", "y"]})
    with pytest.raises(sluice.InvalidArgumentError, match="every column is a partition column"):
        sluice.write(t, tmp_path / "out", format="parquet", partition_by=["a", "b"])
    assert list(tmp_path.iterdir()) == []


def test_too_many_partitions_leaves_nothing(tmp_path):
    t = pa.table({"k": list(range(30)), "x": list(range(30))})
    out = tmp_path / "out"
    with pytest.raises(sluice.InvalidArgumentError, match="more than 20 partitions"):
        sluice.write(t, out, format="parquet", partition_by="k", max_partitions=20)
    assert not out.exists()
    sluice.write(t, out, format="parquet", partition_by="k", max_partitions=30)
    assert len(_layout(out)[0]) == 30


def test_existing_directory_must_be_empty(tmp_path):
    out = tmp_path / "out"
    (out / "k=old").mkdir(parents=True)
    (out / "k=old" / "part-0.parquet").write_bytes(b"keep me")
    with pytest.raises(sluice.SourceError, match="not empty"):
        sluice.write(_table(), out, format="parquet", partition_by="k")
    assert [p.name for p in out.rglob("*")] == ["k=old", "part-0.parquet"]
    assert (out / "k=old" / "part-0.parquet").read_bytes() == b"keep me"
    # An empty directory is written into: it keeps its mode, and through a
    # symbolic link too; the partitions get the umask's mode, no hidden
    # staging directory stays.
    empty = tmp_path / "empty"
    empty.mkdir()
    os.chmod(empty, 0o751)
    link = tmp_path / "link"
    link.symlink_to(empty)
    sluice.write(_table(), link, format="parquet", partition_by="k")
    assert len(_layout(empty)[0]) == len(KEYS)
    assert os.stat(empty).st_mode & 0o777 == 0o751 and link.is_symlink()
    umask = os.umask(0)
    os.umask(umask)
    assert all(os.stat(d).st_mode & 0o777 == 0o777 & ~umask for d in empty.iterdir())
    assert not [p for p in empty.rglob(".*")]


def _tree(root):
    """Every entry under root with its bytes (None for directories)."""
    return {str(p.relative_to(root)): (None if p.is_dir() else p.read_bytes())
            for p in sorted(root.rglob("*"))}


def _kvs(table):
    cols = table.to_pydict()
    return sorted(zip(cols["k"], cols["v"]), key=lambda r: (r[0] or "", r[1]))


@pytest.mark.parametrize("behavior", ["overwrite_or_ignore", "delete_matching", "append"])
def test_existing_data_behavior_as_pyarrow(tmp_path, behavior):
    """Into a dataset pyarrow wrote: sluice's result holds the rows pyarrow's
    write_dataset(existing_data_behavior=...) gives (append: pyarrow's
    overwrite_or_ignore with new file names, as pyarrow's docs advise),
    read back by pyarrow.dataset and DuckDB; the old files that stay are
    untouched."""
    old = pa.table({"k": ["a", "b", "c", "a", "b"], "v": [1, 2, 3, 4, 5]})
    new = pa.table({"k": ["b", "d", "b"], "v": [10, 20, 30]})
    ours, theirs = tmp_path / "ours", tmp_path / "theirs"
    for root in (ours, theirs):
        ds.write_dataset(old, root, format="parquet", partitioning=["k"],
                         partitioning_flavor="hive")
    before = _tree(ours)
    sluice.write(new, ours, format="parquet", partition_by="k",
                 existing_data_behavior=behavior)
    ds.write_dataset(new, theirs, format="parquet", partitioning=["k"],
                     partitioning_flavor="hive",
                     existing_data_behavior="overwrite_or_ignore" if behavior == "append"
                     else behavior,
                     basename_template="new-{i}.parquet" if behavior == "append"
                     else "part-{i}.parquet")
    got = ds.dataset(ours, format="parquet", partitioning="hive").to_table()
    want = ds.dataset(theirs, format="parquet", partitioning="hive").to_table()
    assert _kvs(got) == _kvs(want)
    dd = duckdb.sql(f"select k, v from read_parquet('{ours}/**/*.parquet', "
                    "hive_partitioning=true)").fetchall()
    assert _kvs(got) == sorted(dd, key=lambda r: (r[0] or "", r[1]))
    after = _tree(ours)
    kept = {name: data for name, data in before.items()
            if behavior == "append" or not name.startswith("k=b")}
    assert all(after[name] == data for name, data in kept.items())
    if behavior == "append":
        # pyarrow named its file part-0: the new ones come after it.
        assert {"k=b/part-0.parquet", "k=b/part-1.parquet", "k=d/part-0.parquet"} <= set(after)
    else:
        assert sorted(n for n in after if n.startswith("k=b/")) == ["k=b/part-0.parquet"]
    assert not [n for n in after if n.startswith(".")]


def test_existing_data_behavior_refused_and_default(tmp_path):
    out = tmp_path / "out"
    sluice.write(_table(), out, format="parquet", partition_by="k")
    before = _tree(out)
    with pytest.raises(sluice.SourceError, match="existing_data_behavior"):
        sluice.write(_table(), out, format="parquet", partition_by="k")
    with pytest.raises(sluice.InvalidArgumentError, match="existing_data_behavior"):
        sluice.write(_table(), out, format="parquet", partition_by="k",
                     existing_data_behavior="nonsense")
    with pytest.raises(sluice.InvalidArgumentError, match="dataset output"):
        sluice.write(_table(), tmp_path / "one.parquet", existing_data_behavior="append")
    assert _tree(out) == before and not (tmp_path / "one.parquet").exists()
    # overwrite_or_ignore of the same table: the same files, as pyarrow's.
    sluice.write(_table(), out, format="parquet", partition_by="k",
                 existing_data_behavior="overwrite_or_ignore")
    assert set(_tree(out)) == set(before)
    # Appending it twice more: three copies of every row, in part-0, part-1
    # and part-2 of each partition.
    for _ in range(2):
        sluice.write(_table(), out, format="parquet", partition_by="k",
                     existing_data_behavior="append")
    got = ds.dataset(out, format="parquet", partitioning="hive").to_table()
    assert got.num_rows == 3 * _table().num_rows
    assert sorted(got.column("v").to_pylist()) == sorted(list(range(240)) * 3)
    assert {n.rsplit("/", 1)[-1] for n in _tree(out) if n.endswith(".parquet")} == {
        "part-0.parquet", "part-1.parquet", "part-2.parquet"}


def test_delete_matching_refuses_a_file_in_place_of_a_partition(tmp_path):
    out = tmp_path / "out"
    sluice.write(pa.table({"k": ["a"], "v": [1]}), out, format="parquet", partition_by="k")
    (out / "k=b").write_bytes(b"not a partition")
    before = _tree(out)
    with pytest.raises(sluice.Error, match="not a directory"):
        sluice.write(pa.table({"k": ["a", "b"], "v": [2, 3]}), out, format="parquet",
                     partition_by="k", existing_data_behavior="delete_matching")
    assert _tree(out) == before


def test_failing_input_keeps_existing_data(tmp_path):
    out = tmp_path / "out"
    sluice.write(_table(), out, format="parquet", partition_by="k")
    before = _tree(out)
    schema = pa.schema([("k", pa.string()), ("v", pa.int64())])

    def batches():
        yield pa.record_batch([pa.array(["a/b", "x=y"]), pa.array([1, 2])], schema=schema)
        raise RuntimeError("producer failed")

    for behavior in ("overwrite_or_ignore", "delete_matching", "append"):
        reader = pa.RecordBatchReader.from_batches(schema, batches())
        with pytest.raises((sluice.Error, RuntimeError)):
            sluice.write(reader, out, format="parquet", partition_by="k",
                         existing_data_behavior=behavior)
        assert _tree(out) == before


def test_failing_input_leaves_nothing(tmp_path):
    schema = pa.schema([("k", pa.string()), ("x", pa.int64())])

    def batches():
        yield pa.record_batch([pa.array(["a", "b/c"]), pa.array([1, 2])], schema=schema)
        yield pa.record_batch([pa.array(["d", "a"]), pa.array([3, 4])], schema=schema)
        raise RuntimeError("producer failed")

    reader = pa.RecordBatchReader.from_batches(schema, batches())
    with pytest.raises((sluice.Error, RuntimeError)):
        sluice.write(reader, tmp_path / "out", format="parquet", partition_by="k")
    assert list(tmp_path.iterdir()) == []


def test_file_object_is_refused(tmp_path):
    import io
    with pytest.raises(sluice.InvalidArgumentError, match="not a file object"):
        sluice.write(_table(), io.BytesIO(), format="parquet", partition_by="k")


@pytest.mark.parametrize("nested", [False, True])
def test_mixed_batches_with_nulls_and_nested_columns(tmp_path, nested):
    # Every batch holds every partition: flat columns are dealt out in one
    # pass, nested ones (lists, structs) copied out per partition.
    n = 5000
    cols = {"key": pa.array([["a", "b", None, "c"][i % 4] for i in range(n)]),
            "i": pa.array([i if i % 9 else None for i in range(n)], pa.int64()),
            "b": pa.array([None if i % 11 == 0 else i % 3 == 0 for i in range(n)]),
            "s": pa.array([None if i % 7 == 0 else "x" * (i % 13) for i in range(n)],
                          pa.large_string()),
            "bin": pa.array([bytes([i % 256]) * (i % 5) for i in range(n)], pa.binary()),
            "ts": pa.array(range(n), pa.timestamp("us", "UTC")),
            "dec": pa.array([Decimal(i) / 4 for i in range(n)], pa.decimal128(12, 2))}
    if nested:
        cols["lst"] = pa.array([list(range(i % 4)) if i % 5 else None for i in range(n)])
        cols["st"] = pa.array([{"p": i, "q": str(i)} for i in range(n)])
    t = pa.table(cols)
    out = tmp_path / "out"
    sluice.write(t.to_reader(max_chunksize=777), out, format="parquet", partition_by="key")
    got = ds.dataset(out, format="parquet", partitioning="hive").to_table()
    got = got.sort_by([("ts", "ascending")])
    assert got.column("key").to_pylist() == t.column("key").to_pylist()
    for name in cols:
        if name != "key":
            assert got.column(name).to_pylist() == t.column(name).to_pylist(), name


def test_null_and_the_default_partition_string_share_a_directory(tmp_path):
    # Hive spells a null __HIVE_DEFAULT_PARTITION__: both rows go to that
    # one directory (pyarrow keeps both too; it reads them back as nulls).
    t = pa.table({"k": [None, "__HIVE_DEFAULT_PARTITION__", "a", None], "x": [1, 2, 3, 4]})
    out = tmp_path / "out"
    sluice.write(t.to_reader(max_chunksize=1), out, format="parquet", partition_by="k")
    pa_dir = tmp_path / "pa"
    ds.write_dataset(t, pa_dir, format="parquet", partitioning=["k"], partitioning_flavor="hive")
    assert _layout(out) == ({"k=__HIVE_DEFAULT_PARTITION__", "k=a"}, 2)
    assert _layout(out)[0] == _layout(pa_dir)[0]
    got = ds.dataset(out, format="parquet", partitioning="hive").to_table().sort_by("x")
    assert got.column("x").to_pylist() == [1, 2, 3, 4]
    assert got.column("k").to_pylist() == [None, None, "a", None]


def test_names_and_late_dates_as_pyarrow_spells_them(tmp_path):
    # Column names are written as they are (but / = % \): pyarrow does so,
    # and DuckDB does not decode escaped names. Dates past 9999 lose the
    # sign their ISO spelling has, as in pyarrow.
    # 2024-01-02 and 10000-01-01 as days (Python's dates end at 9999).
    t = pa.table({"my col": ["a b", "c"], "when": pa.array([19724, 2932897], pa.date32()),
                  "x": [1, 2]})
    out, pa_dir = tmp_path / "out", tmp_path / "pa"
    sluice.write(t, out, format="parquet", partition_by=["my col", "when"])
    ds.write_dataset(t, pa_dir, format="parquet", partitioning=["my col", "when"],
                     partitioning_flavor="hive")
    assert _layout(out)[0] == _layout(pa_dir)[0]
    assert "my col=a%20b/when=2024-01-02" in _layout(out)[0]
    got = duckdb.sql(f"select * from read_parquet('{out}/**/*.parquet', hive_partitioning=true)"
                     " order by x").fetchall()
    assert [row[0] for row in got] == [1, 2]
    assert duckdb.sql(f"select \"my col\" from read_parquet('{out}/**/*.parquet', "
                      "hive_partitioning=true) order by x").fetchall() == [("a b",), ("c",)]


def test_destinations_refused(tmp_path):
    t = _table(10)
    hidden = tmp_path / "hidden"
    hidden.mkdir()
    (hidden / ".keep").write_bytes(b"")
    with pytest.raises(sluice.SourceError, match="not empty"):
        sluice.write(t, hidden, format="parquet", partition_by="k")
    assert [p.name for p in hidden.iterdir()] == [".keep"]
    with pytest.raises(sluice.InvalidArgumentError, match="no output location"):
        sluice.write(t, "", format="parquet", partition_by="k")
    twice = pa.Table.from_arrays([pa.array([1, 2]), pa.array([3, 4]), pa.array([5, 6])],
                                 names=["k", "k", "x"])
    with pytest.raises(sluice.InvalidArgumentError, match="two columns named 'k'"):
        sluice.write(twice, tmp_path / "twice", format="parquet", partition_by="k")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["hidden"]  # nothing else, no staging


def test_value_too_long_for_a_directory_name(tmp_path):
    ok = pa.table({"k": ["x" * 253], "v": [1]})  # k= + 253 bytes: 255, the limit
    sluice.write(ok, tmp_path / "ok", format="parquet", partition_by="k")
    assert _layout(tmp_path / "ok")[0] == {"k=" + "x" * 253}
    for value, shown in [("é" * 100, "602 bytes"), ("y" * 10_000_000, "over 10000002 bytes")]:
        with pytest.raises(sluice.InvalidArgumentError, match=shown):
            sluice.write(pa.table({"k": [value], "v": [1]}), tmp_path / "no", format="parquet",
                         partition_by="k")
        assert not (tmp_path / "no").exists()


@pytest.mark.parametrize("fmt", ["parquet", "arrow", "csv"])
def test_max_rows_per_file_as_pyarrow(tmp_path, fmt):
    """max_rows_per_file: each partition's rows fill files of at most that
    many, part-0 first, as pyarrow's write_dataset fills them (the same rows
    per file, in the same order), also when the rows come in many batches
    that mix partitions, and through sluice.Writer."""
    t = _table(n=1000)
    batches = t.to_batches(max_chunksize=57)
    out, pa_dir = tmp_path / "out", tmp_path / "pa"
    sluice.write(pa.Table.from_batches(batches), out, format=fmt, partition_by=["k"],
                 max_rows_per_file=40)
    ds.write_dataset(t, pa_dir, format="parquet", partitioning=["k"],
                     partitioning_flavor="hive", max_rows_per_file=40, max_rows_per_group=40,
                     basename_template="part-{i}.parquet")

    def files(root, ext):
        """{partition dir: [v values of part-0, part-1, ...]}"""
        got = {}
        for here, _, names in os.walk(root):
            if not names:
                continue
            parts = sorted(names, key=lambda n: int(n.split("-")[1].split(".")[0]))
            assert parts == [f"part-{i}.{ext}" for i in range(len(parts))]
            got[os.path.relpath(here, root)] = [
                pa.table(sluice.read(os.path.join(here, n))).column("v").to_pylist()
                for n in parts]
        return got

    mine, theirs = files(out, fmt), files(pa_dir, "parquet")
    assert mine == theirs
    assert max(len(v) for p in mine.values() for v in p) == 40
    # The Writer, batch by batch, gives the same files.
    w_dir = tmp_path / "w"
    with sluice.Writer(w_dir, format=fmt, partition_by="k", max_rows_per_file=40) as w:
        for b in batches:
            w.write(b)
    assert files(w_dir, fmt) == mine


def test_max_rows_per_file_refused(tmp_path):
    t = _table(n=10)
    for bad in [0, -1, 2**63, 2.5, True, "10"]:
        with pytest.raises(sluice.InvalidArgumentError, match="max_rows_per_file"):
            sluice.write(t, tmp_path / "a", format="parquet", partition_by="k",
                         max_rows_per_file=bad)
    with pytest.raises(sluice.InvalidArgumentError, match="file object"):
        sluice.write(t, io.BytesIO(), format="parquet", max_rows_per_file=5)
    with pytest.raises(sluice.InvalidArgumentError, match="existing_data_behavior"):
        sluice.write(t, tmp_path / "c.parquet", existing_data_behavior="append")
    assert os.listdir(tmp_path) == []


@pytest.mark.parametrize("fmt", ["parquet", "arrow", "csv"])
def test_max_rows_per_file_without_partitions_as_pyarrow(tmp_path, fmt):
    """max_rows_per_file alone: `dst` becomes a directory of part-0, part-1,
    ... holding every column, as pyarrow's write_dataset without
    partitioning makes it (the same rows per file, in order, also when
    the batches are smaller than the files and through sluice.Writer);
    a name with an extension is a directory too, as with pyarrow."""
    t = _table(n=1000)
    batches = t.to_batches(max_chunksize=57)
    out, pa_dir = tmp_path / "out.d", tmp_path / "pa"
    sluice.write(pa.Table.from_batches(batches), out, format=fmt, max_rows_per_file=300)
    ds.write_dataset(t, pa_dir, format="parquet", max_rows_per_file=300, max_rows_per_group=300,
                     basename_template="part-{i}.parquet")

    def files(root, ext):
        names = sorted(os.listdir(root), key=lambda n: int(n.split("-")[1].split(".")[0]))
        assert names == [f"part-{i}.{ext}" for i in range(len(names))]
        return [pa.table(sluice.read(os.path.join(root, n))).to_pydict() for n in names]

    mine, theirs = files(out, fmt), files(pa_dir, "parquet")
    assert [len(f["v"]) for f in mine] == [300, 300, 300, 100]
    assert [f["v"] for f in mine] == [f["v"] for f in theirs]
    if fmt != "csv":  # (CSV reads its dates back as they are inferred)
        assert mine == theirs
    w_dir = tmp_path / "w"
    with sluice.Writer(w_dir, format=fmt, max_rows_per_file=300) as w:
        for b in batches:
            w.write(b)
    assert files(w_dir, fmt) == mine
    # Written again: the default refuses, overwrite_or_ignore gives the same
    # files, append adds four more, delete_matching leaves only the new ones.
    with pytest.raises(sluice.SourceError, match="not empty"):
        sluice.write(t, out, format=fmt, max_rows_per_file=300)
    sluice.write(t, out, format=fmt, max_rows_per_file=300,
                 existing_data_behavior="overwrite_or_ignore")
    assert files(out, fmt) == mine
    sluice.write(t, out, format=fmt, max_rows_per_file=300, existing_data_behavior="append")
    assert len(os.listdir(out)) == 8
    (out / "stray.txt").write_text("x")
    sluice.write(t, out, format=fmt, max_rows_per_file=500,
                 existing_data_behavior="delete_matching")
    assert sorted(os.listdir(out)) == [f"part-0.{fmt}", f"part-1.{fmt}"]
    assert pa.table(sluice.read(out)).num_rows == 1000


def test_dataset_output_never_replaces_a_file_that_appears(tmp_path):
    """existing_data_behavior="error": a file that appears in the
    destination while the write runs is not replaced; the write fails and
    leaves it (the directories of partitions were safe already; a dataset
    without partition_by moves files)."""
    t = _table(n=10)
    dst = tmp_path / "out"
    w = sluice.Writer(dst, format="parquet", max_rows_per_file=3)
    w.write(t)
    # The writer's thread has checked the destination once its staging
    # directory is there.
    import time
    deadline = time.monotonic() + 30
    while not (dst.is_dir() and any(n.startswith(".sluice-") for n in os.listdir(dst))):
        assert time.monotonic() < deadline
        time.sleep(0.01)
    (dst / "part-0.parquet").write_bytes(b"precious")
    with pytest.raises(sluice.Error, match="appeared in it during the write"):
        w.close()
    assert sorted(os.listdir(dst)) == ["part-0.parquet"]
    assert (dst / "part-0.parquet").read_bytes() == b"precious"


@pytest.mark.parametrize("root", ["/", "//", "/.", "/tmp/.."])
def test_dataset_output_refuses_the_root(root):
    with pytest.raises(sluice.InvalidArgumentError, match="a directory of its own"):
        sluice.write(_table(n=4), root, format="csv", max_rows_per_file=2)


def test_an_error_names_the_partition_its_row_number_counts(tmp_path):
    """A file's writer counts the rows of its partition: the error says
    which partition (the null is row 2 of the input, row 1 of k=b)."""
    t = pa.table({"k": ["a", "b", "b"], "s": ["p", "q", None]})
    with pytest.raises(sluice.InvalidArgumentError) as e:
        sluice.write(t, tmp_path / "out", format="csv", partition_by=["k"], null="")
    assert "partition k=b (a row number counts its rows): csv: column 's', row 1" in str(e.value)
    assert not (tmp_path / "out").exists()


def test_a_bad_key_value_names_its_row_in_the_input(tmp_path):
    """A value too long for a directory name in a later batch is named by
    its row in the input (it was its row in the batch: row 0 here)."""
    schema = pa.schema([("f", pa.string()), ("v", pa.int64())])
    batches = [pa.record_batch({"f": ["a", "c", "a"], "v": [1, 2, 3]}, schema=schema),
               pa.record_batch({"f": ["a", "x" * 300], "v": [4, 5]}, schema=schema)]
    bad = pa.Table.from_batches(batches).column("f").to_pylist().index("x" * 300)
    with pytest.raises(sluice.InvalidArgumentError, match=f": row {bad}: the partition directory"):
        sluice.write(pa.RecordBatchReader.from_batches(schema, iter(batches)), tmp_path / "out",
                     format="parquet", partition_by=["f"])
    assert not (tmp_path / "out").exists()


def test_open_files_stay_under_a_low_descriptor_limit(tmp_path):
    """With 64 descriptors allowed (the floor of open files was 64 too),
    300 partitions are written: the files kept open stay below the limit,
    leaving room for the rest of the process, and read back as DuckDB reads
    them (it failed with 'Too many open files')."""
    import resource
    import subprocess
    import sys
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard < 64:
        pytest.skip(f"hard limit on open files is {hard}")
    n = 3000
    src = tmp_path / "in.parquet"
    pq.write_table(pa.table({"f": [i % 300 for i in range(n)], "v": list(range(n))}), src,
                   row_group_size=100)
    out = tmp_path / "out"
    code = ("import resource, sluice, pyarrow.parquet as pq\n"
            "resource.setrlimit(resource.RLIMIT_NOFILE, (64, resource.getrlimit("
            "resource.RLIMIT_NOFILE)[1]))\n"
            f"sluice.write(pq.read_table({str(src)!r}), "
            f"{str(out)!r}, format='parquet', partition_by=['f'])\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, timeout=300)
    assert proc.returncode == 0, proc.stderr.decode()
    assert len(_layout(out)[0]) == 300
    got = duckdb.sql(f"SELECT f, v FROM read_parquet('{out}/**/*.parquet', "
                     "hive_partitioning=true) ORDER BY v").fetchall()
    want = duckdb.sql(f"SELECT f, v FROM read_parquet('{src}') ORDER BY v").fetchall()
    assert got == want


def test_max_partitions_needs_partition_by(tmp_path):
    """max_partitions limits a partitioned write; without partition_by it was
    ignored and one file written, as if the limit held (the CLI's
    --max-partitions alike)."""
    out = tmp_path / "one.parquet"
    with pytest.raises(sluice.InvalidArgumentError, match="needs partition_by"):
        sluice.write(pa.table({"k": [1, 2, 3]}), out, max_partitions=2)
    assert not out.exists()
    table = pa.table({"k": [1, 2, 3], "v": [4, 5, 6]})
    sluice.write(table, tmp_path / "d", format="parquet", partition_by="k", max_partitions=3)
    assert sorted(p.name for p in (tmp_path / "d").iterdir()) == ["k=1", "k=2", "k=3"]
