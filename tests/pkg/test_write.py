"""sluice.write from pyarrow, polars, DuckDB, sluice tables and pandas (with
and without pyarrow), read back by the peers."""
import io
import re
import subprocess
import sys
import warnings

import duckdb
import numpy as np
import fastavro
import pandas as pd
import polars as pl
import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq
import pytest

import sluice
from ipc_messages import dictionary_messages
from pkg_helpers import unsynced_pages


@pytest.fixture(scope="module")
def simple():
    n = 5000
    return pa.table({"i": pa.array(range(n), pa.int64()),
                     "f": pa.array([i / 7 for i in range(n)]),
                     "s": pa.array([None if i % 11 == 0 else "s%d" % i for i in range(n)]),
                     "b": pa.array([i % 3 == 0 for i in range(n)]),
                     "t": pa.array([i * 1_000_000 for i in range(n)], pa.timestamp("us", "UTC"))})


def test_pyarrow_to_each_format(simple, tmp_path):
    sluice.write(simple, tmp_path / "x.arrow")
    assert pa.ipc.open_file(str(tmp_path / "x.arrow")).read_all().equals(simple)
    sluice.write(simple, tmp_path / "x.arrows")
    assert pa.ipc.open_stream(str(tmp_path / "x.arrows")).read_all().equals(simple)
    sluice.write(simple, tmp_path / "x.arrow.zst", format="arrow", compression="zstd")
    assert pa.ipc.open_file(str(tmp_path / "x.arrow.zst")).read_all().equals(simple)
    sluice.write(simple.drop(["t"]), tmp_path / "x.csv")
    back = pacsv.read_csv(str(tmp_path / "x.csv"),
                          convert_options=pacsv.ConvertOptions(strings_can_be_null=True))
    assert back.column("i").to_pylist() == simple.column("i").to_pylist()
    assert back.column("s").to_pylist() == simple.column("s").to_pylist()
    sluice.write(simple, tmp_path / "x.avro")
    with open(tmp_path / "x.avro", "rb") as f:
        records = list(fastavro.reader(f))
    assert [r["i"] for r in records] == simple.column("i").to_pylist()
    assert [r["s"] for r in records] == simple.column("s").to_pylist()


def test_csv_writer_options(simple, tmp_path):
    sluice.write(simple.select(["i", "s"]), tmp_path / "x.csv", delimiter=";", header=False)
    first = (tmp_path / "x.csv").read_text().splitlines()[0]
    assert first == "0;"


def test_tsv_name_writes_tab_separated(simple, tmp_path):
    """A .tsv name (also .tsv.gz / .tsv.zst, compressed whole as .csv.gz is)
    writes CSV with a tab delimiter, as the reader reads such a name (it was
    "cannot choose an output format"); pyarrow reads it back with
    delimiter='\\t'. delimiter= given still wins."""
    import gzip
    t = simple.select(["i", "s"])
    parse = pacsv.ParseOptions(delimiter="\t")
    convert = pacsv.ConvertOptions(strings_can_be_null=True)
    for name in ("x.tsv", "x.TSV", "x.tsv.gz", "x.tsv.zst"):
        path = tmp_path / name
        sluice.write(t, path)
        if name.endswith(".gz"):
            assert gzip.decompress(path.read_bytes()).startswith(b"i\ts\n"), name
        elif not name.endswith(".zst"):
            assert path.read_bytes().startswith(b"i\ts\n"), name
        back = pacsv.read_csv(str(path), parse_options=parse, convert_options=convert)
        assert back.column("i").to_pylist() == t.column("i").to_pylist(), name
        assert back.column("s").to_pylist() == t.column("s").to_pylist(), name
        assert pa.table(sluice.read(path)).equals(back), name
    sluice.write(t, tmp_path / "semi.tsv", delimiter=";")
    assert (tmp_path / "semi.tsv").read_text().splitlines()[0] == "i;s"
    sluice.write(t, tmp_path / "fmt.tsv", format="csv")
    assert (tmp_path / "fmt.tsv").read_text().splitlines()[0] == "i\ts"
    with open(tmp_path / "open.tsv", "wb") as f:  # an open file, told by its name too
        sluice.write(t, f)
    assert (tmp_path / "open.tsv").read_text().splitlines()[0] == "i\ts"
    with open(tmp_path / "open_semi.tsv", "wb") as f:
        sluice.write(t, f, sep=";")
    assert (tmp_path / "open_semi.tsv").read_text().splitlines()[0] == "i;s"
    with open(tmp_path / "open_fmt.tsv", "wb") as f:  # format='csv' as for a path
        sluice.write(t, f, format="csv")
    assert (tmp_path / "open_fmt.tsv").read_text().splitlines()[0] == "i\ts"


def test_sluice_table_round_trip(typed, tmp_path):
    expected, path = typed
    t = sluice.read(path)
    sluice.write(t, tmp_path / "copy.arrows")
    assert pa.ipc.open_stream(str(tmp_path / "copy.arrows")).read_all().equals(expected)
    assert pa.table(sluice.read(tmp_path / "copy.arrows")).equals(expected)


def test_polars(simple, tmp_path):
    # polars exports strings as views: short ones inline, long ones in data
    # buffers; sluice rewrites them as large strings for the writers.
    df = pl.DataFrame(simple).with_columns(
        long=pl.col("s") + pl.lit(" and a tail longer than twelve bytes"),
        words=pl.col("s").str.split("1"),
        raw=pl.col("s").cast(pl.Binary))
    sluice.write(df, tmp_path / "p.arrow")
    back = pl.read_ipc(str(tmp_path / "p.arrow"))
    assert back.equals(df)
    schema = pa.ipc.open_file(str(tmp_path / "p.arrow")).schema
    assert schema.field("long").type == pa.large_string()
    assert schema.field("raw").type == pa.large_binary()
    sliced = df.slice(777, 1000)
    sluice.write(sliced, tmp_path / "slice.arrows")
    assert pl.read_ipc_stream(str(tmp_path / "slice.arrows")).equals(sliced)


@pytest.mark.parametrize("ext", ["arrow", "arrows", "parquet", "csv", "avro", "jsonl"])
def test_polars_null_column(tmp_path, ext):
    # polars exports its Null type with one (unused) buffer, as Arrow C++
    # accepts; the checks of sluice's writers took it for a mismatch.
    df = pl.DataFrame({"nul": [None] * 3, "i": [1, 2, 3]})
    sluice.write(df, tmp_path / f"n.{ext}")
    if ext == "jsonl":
        import json
        rows = [json.loads(line) for line in (tmp_path / "n.jsonl").read_text().splitlines()]
        assert rows == [{"nul": None, "i": i} for i in (1, 2, 3)]
    else:
        assert sluice.read(tmp_path / f"n.{ext}").to_pydict() == {"nul": [None] * 3,
                                                                  "i": [1, 2, 3]}


def test_duckdb_relation(simple, tmp_path):
    con = duckdb.connect()
    rel = con.sql("select i, f, s, b from simple")
    sluice.write(rel, tmp_path / "d.arrow")
    back = pa.ipc.open_file(str(tmp_path / "d.arrow")).read_all()
    assert back.column("i").to_pylist() == simple.column("i").to_pylist()
    assert back.column("s").to_pylist() == simple.column("s").to_pylist()


def test_pandas_with_pyarrow(simple, tmp_path):
    df = simple.to_pandas()
    sluice.write(df, tmp_path / "pd.arrow")
    back = pa.ipc.open_file(str(tmp_path / "pd.arrow")).read_all()
    assert back.equals(pa.Table.from_pandas(df, preserve_index=False))


def test_pandas_without_pyarrow(tmp_path):
    out = tmp_path / "nopa.arrow"
    code = f"""
import sys
sys.modules["pyarrow"] = None
import numpy as np, pandas as pd, sluice
df = pd.DataFrame({{
    "i": np.arange(1000, dtype="i8"), "u8": np.arange(1000, dtype="u1"),
    "f": np.linspace(0, 1, 1000), "nan": [None if i % 5 == 0 else i / 2 for i in range(1000)],
    "b": np.arange(1000) % 2 == 0,
    "s": pd.array(["x%d" % i if i % 4 else None for i in range(1000)], dtype=object),
    "n": pd.array([i if i % 3 else None for i in range(1000)], dtype="Int32"),
    "t": pd.date_range("2024-01-01", periods=1000, freq="s", tz="UTC"),
    "naive": pd.date_range("2024-01-01", periods=1000, freq="ms").astype("datetime64[ms]"),
    "d": pd.to_timedelta(np.arange(1000), unit="s"),
    "nb": pd.array([None if i % 7 == 0 else i % 3 == 0 for i in range(1000)], dtype="boolean"),
    "icat": pd.Categorical([None if i % 6 == 0 else i % 4 for i in range(1000)]),
}})
sluice.write(df, {str(out)!r})
"""
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    back = pa.ipc.open_file(str(out)).read_all()
    assert back.column("i").to_pylist() == list(range(1000))
    assert back.schema.field("u8").type == pa.uint8()
    assert back.column("nan").to_pylist() == [None if i % 5 == 0 else i / 2 for i in range(1000)]
    assert back.column("b").to_pylist() == [i % 2 == 0 for i in range(1000)]
    assert back.column("s").to_pylist() == ["x%d" % i if i % 4 else None for i in range(1000)]
    assert back.schema.field("n").type == pa.int32()
    assert back.column("n").to_pylist() == [i if i % 3 else None for i in range(1000)]
    want_t = pd.date_range("2024-01-01", periods=1000, freq="s", tz="UTC")
    assert back.schema.field("t").type.tz == "UTC"
    assert back.column("t").to_pandas().tolist() == list(want_t)
    assert back.schema.field("naive").type == pa.timestamp("ms")
    assert back.column("nb").to_pylist() == [None if i % 7 == 0 else i % 3 == 0 for i in range(1000)]
    assert back.column("icat").to_pylist() == [None if i % 6 == 0 else i % 4 for i in range(1000)]
    assert back.schema.field("d").type == pa.duration(
        str(pd.to_timedelta(np.arange(1), unit="s").dtype).split("[")[1][:-1])


@pytest.mark.parametrize("pyarrow", [True, False])
def test_pandas_sparse_column_refused(tmp_path, pyarrow):
    """A pandas Sparse column is refused, with or without pyarrow (without
    it, the column was written densified, its dtype lost, silently): an
    UnsupportedError (a sluice.Error, as all errors) with pyarrow's
    message, its TypeError as the __cause__."""
    code = f"""
import sys
if not {pyarrow}:
    sys.modules["pyarrow"] = None
import pandas as pd, sluice
df = pd.DataFrame({{"x": pd.arrays.SparseArray([0, 0, 1]), 7: pd.arrays.SparseArray([0.5, None])[[0, 1, 1]]}})
for frame in (df, df[[7]]):
    try:
        sluice.write(frame, {str(tmp_path / "sparse.parquet")!r})
        print("written")
    except sluice.UnsupportedError as e:
        print(type(e.__cause__).__name__, e)
"""
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    lines = run.stdout.splitlines()
    assert len(lines) == 2 and all(line.startswith("TypeError sluice.write: ") for line in lines)
    assert lines[0].endswith("Sparse pandas data (column x) not supported."), lines
    assert lines[1].endswith("Sparse pandas data (column 7) not supported."), lines
    assert not (tmp_path / "sparse.parquet").exists()
    with pytest.raises(TypeError) as peer:
        pa.Table.from_pandas(pd.DataFrame({"x": pd.arrays.SparseArray([0, 0, 1])}))
    assert str(peer.value) == "Sparse pandas data (column x) not supported."


def test_failed_write_leaves_nothing(tmp_path):
    schema = pa.schema([("a", pa.int64())])

    def batches():
        yield pa.record_batch([pa.array([1, 2])], schema=schema)
        raise RuntimeError("producer failed")

    reader = pa.RecordBatchReader.from_batches(schema, batches())
    dst = tmp_path / "never.arrow"
    with pytest.raises((sluice.Error, RuntimeError)):
        sluice.write(reader, dst)
    assert not dst.exists()
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("fmt", ["arrow", "arrows", "parquet", "csv", "avro", "jsonl"])
def test_batch_unlike_its_schema_is_refused(tmp_path, fmt):
    # A producer bug: the stream says int64, its second batch holds strings.
    # Every writer walks the arrays by the schema, so this must be an error
    # (it used to write the string offsets as numbers), with the old file kept.
    schema = pa.schema([("a", pa.int64())])

    def batches():
        yield pa.record_batch([pa.array([1, 2])], schema=schema)
        yield pa.record_batch([pa.array(["x", "yz"])], names=["a"])

    dst = tmp_path / f"out.{fmt}"
    dst.write_bytes(b"old")
    with pytest.raises(sluice.InvalidArgumentError, match="batch 1 does not match.*'a'"):
        sluice.write(pa.RecordBatchReader.from_batches(schema, batches()), dst)
    assert dst.read_bytes() == b"old"
    assert [p.name for p in tmp_path.iterdir()] == [dst.name]


def _interrupted_write(tmp_path, setup: str, data: str, name: str, after: float) -> tuple:
    """Runs, in a fresh Python, `setup` then sluice.write(`data`, out/`name`)
    with a SIGINT sent `after` seconds in, over an old out/`name`: ("finished"
    or "interrupted", seconds), once the old file and the directory's
    contents were checked when interrupted."""
    script = tmp_path / "interrupt.py"
    script.write_text(f"""
import os, signal, sys, threading, time
import numpy as np, pyarrow as pa
import sluice
{setup}
threading.Timer({after}, os.kill, (os.getpid(), signal.SIGINT)).start()
t = time.monotonic()
try:
    sluice.write({data}, sys.argv[1])
    print("finished %.1f" % (time.monotonic() - t))
except KeyboardInterrupt:
    print("interrupted %.1f" % (time.monotonic() - t))
""")
    out = tmp_path / "out"
    out.mkdir()
    dst = out / name
    dst.write_bytes(b"old")
    done = subprocess.run([sys.executable, str(script), str(dst)], capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    word, seconds = done.stdout.split()
    if word == "interrupted":
        assert dst.read_bytes() == b"old"
        assert [p.name for p in out.iterdir()] == [name]
    return word, float(seconds)


def test_ctrl_c_undoes_the_write(tmp_path):
    # Ctrl-C while sluice.write runs, here while a slow Python producer feeds
    # it (the signal lands in the generator, and pyarrow's reader passes it on
    # as text): KeyboardInterrupt, raised once the write is undone, so the old
    # file is kept and no temporary file is left. (It used to become a
    # sluice.InvalidArgumentError.)
    setup = """
schema = pa.schema([("a", pa.int64())])
def batches():
    for i in range(200):
        time.sleep(0.05)
        yield pa.record_batch([pa.array(range(1000))], schema=schema)
"""
    word, seconds = _interrupted_write(
        tmp_path, setup, "pa.RecordBatchReader.from_batches(schema, batches())", "x.parquet", 0.5)
    assert word == "interrupted"
    assert seconds < 5  # not after the producer's 10 s


def test_ctrl_c_deep_in_a_producer_is_a_keyboard_interrupt(tmp_path):
    # The KeyboardInterrupt reaches sluice as pyarrow's text of its traceback,
    # here longer than an error message holds (Ctrl-C during an import
    # inside the producer gives such a one): its last line still tells it.
    code = "def f0():\n    raise KeyboardInterrupt\n" + "".join(
        f"def f{i}():\n    return f{i - 1}()\n" for i in range(1, 80))
    names = {}
    exec(code, names)
    schema = pa.schema([("a", pa.int64())])

    def batches():
        yield pa.record_batch([pa.array([1, 2])], schema=schema)
        names["f79"]()

    dst = tmp_path / "out.parquet"
    dst.write_bytes(b"old")
    with pytest.raises(KeyboardInterrupt):
        sluice.write(pa.RecordBatchReader.from_batches(schema, batches()), dst)
    assert dst.read_bytes() == b"old"
    assert [p.name for p in tmp_path.iterdir()] == [dst.name]


def test_ctrl_c_while_writing_a_table_undoes_the_write(tmp_path):
    # The producer is C (a pyarrow Table): the signal is taken between batches
    # by sluice's own check. (The write used to run on to the end and put the
    # new file in place, then raise.)
    setup = 'table = pa.table({"a": np.arange(30_000_000), "b": np.arange(30_000_000) * 0.5})'
    word, seconds = _interrupted_write(tmp_path, setup, "table", "x.jsonl", 0.3)
    if word == "finished":
        pytest.skip(f"the write took {seconds} s, less than the 0.3 s before the signal")
    assert word == "interrupted"


def test_producer_tied_to_the_calling_thread(tmp_path):
    # sqlite3 objects may be used only on the thread that made them: the
    # producer runs on the caller's thread (an earlier version moved the
    # write to a thread of its own to watch for Ctrl-C, and this failed).
    import sqlite3
    db = sqlite3.connect(":memory:")
    db.execute("create table t (a integer)")
    db.executemany("insert into t values (?)", [(i,) for i in range(5000)])
    schema = pa.schema([("a", pa.int64())])

    def batches():
        cursor = db.execute("select a from t order by a")
        while rows := cursor.fetchmany(1000):
            yield pa.record_batch([pa.array([r[0] for r in rows], pa.int64())], schema=schema)

    dst = tmp_path / "t.parquet"
    sluice.write(pa.RecordBatchReader.from_batches(schema, batches()), dst)
    assert pq.read_table(dst).column("a").to_pylist() == list(range(5000))


def test_written_files_are_synced_unless_asked(simple, tmp_path, sluice_bin):
    """A local output reaches the disk before it is renamed into place
    (fsync=True, the default); fsync=False and the CLI's --no-fsync leave it
    in the page cache, which shows that the check tells the two apart. New
    names each time: ext4 starts writeback itself when a rename replaces a
    file."""
    big = pa.table({"i": pa.array(range(500_000), pa.int64())})
    sluice.write(big, tmp_path / "synced.arrow")
    count = unsynced_pages(tmp_path / "synced.arrow")
    if count is None:
        pytest.skip("no cachestat(2) here, or a file system without a disk")
    assert count == 0
    sluice.write(big, tmp_path / "cached.arrow", fsync=False)
    assert unsynced_pages(tmp_path / "cached.arrow") > 0
    assert pa.ipc.open_file(str(tmp_path / "cached.arrow")).read_all().equals(big)
    for flag, name in (([], "cli_synced.arrow"), (["--no-fsync"], "cli_cached.arrow")):
        subprocess.run([sluice_bin, "-q", "convert", *flag, str(tmp_path / "synced.arrow"),
                        str(tmp_path / name)], check=True)
        count = unsynced_pages(tmp_path / name)
        assert count > 0 if flag else count == 0
        assert pa.ipc.open_file(str(tmp_path / name)).read_all().equals(big)


@pytest.mark.parametrize("index", ["named", "multi", "range", "default", "not_avro_names"])
def test_pandas_index_like_to_parquet(tmp_path, index):
    """sluice.write(df) keeps the index as df.to_parquet does: pandas and
    sluice read it back; index=False drops it."""
    df = pd.DataFrame({"a": np.arange(6, dtype=np.int64), "s": list("uvwxyz")})
    if index == "named":
        df.index = pd.Index(list("abcdef"), name="key")
    elif index == "multi":
        df.index = pd.MultiIndex.from_arrays([list("aabbcc"), [1, 2, 1, 2, 1, 2]], names=["k1", "k2"])
    elif index == "not_avro_names":  # the Avro writer renames the columns ("my_idx", "_2k")
        df.index = pd.MultiIndex.from_arrays([list("aabbcc"), [1, 2, 1, 2, 1, 2]],
                                             names=["my idx", "2k"])
    elif index == "range":
        df.index = pd.RangeIndex(100, 112, 2, name="r")
    path = tmp_path / "kept.parquet"
    sluice.write(df, path)
    want = tmp_path / "pandas.parquet"
    df.to_parquet(want)
    assert pq.read_table(path).column_names == pq.read_table(want).column_names
    back = pd.read_parquet(path)
    assert list(back.index.names) == list(df.index.names)
    assert back.index.tolist() == df.index.tolist()
    mine = sluice.read(path).to_pandas()
    assert list(mine.index.names) == list(df.index.names)
    assert mine.index.tolist() == df.index.tolist()
    assert mine["a"].tolist() == df["a"].tolist()

    dropped = tmp_path / "dropped.parquet"
    sluice.write(df, dropped, index=False)
    assert pq.read_table(dropped).column_names == ["a", "s"]

    # Avro keeps the description in its header (as its own metadata key).
    sluice.write(df, tmp_path / "kept.avro")
    mine = sluice.read_pandas(tmp_path / "kept.avro")
    assert list(mine.index.names) == list(df.index.names)
    assert mine.index.tolist() == df.index.tolist()


@pytest.mark.parametrize("labels", ["renamed", "numbers", "multi"])
def test_pandas_column_labels_back_from_avro(tmp_path, labels):
    """The Avro writer renames labels that are not Avro names ("a b" -> a_b,
    7 -> _7, a MultiIndex's tuples); the "pandas" metadata records each
    label beside its field name, and to_pandas / read_pandas give the labels
    back, as pyarrow's to_pandas of the same table does (they gave the Avro
    names, and a MultiIndex as flat strings)."""
    if labels == "renamed":
        df = pd.DataFrame({"a b": [1], "1x": [3], 7: [5]}, index=pd.Index(["r"], name="my idx"))
    elif labels == "numbers":
        df = pd.DataFrame({0: [1], 1: [2.5]})
        df.columns.name = "axis name"
    else:
        df = pd.DataFrame([[1, 2, 3]], columns=pd.MultiIndex.from_tuples(
            [("a", "x"), ("a", "y y"), ("b", "x")], names=["top", None]))
    path = tmp_path / "labels.avro"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (mixed label types: pyarrow's warning too)
        sluice.write(df, path)
    assert sluice.read(path).schema.names != [str(c) for c in df.columns]  # renamed
    want = pa.table(sluice.read(path)).to_pandas()
    for got in (sluice.read_pandas(path), sluice.read(path).to_pandas()):
        assert got.columns.equals(want.columns), (got.columns, want.columns)
        assert list(got.columns.names) == list(want.columns.names)
        assert got.index.equals(want.index)
    if labels != "renamed":  # (a mixed label 7 comes back "7", as from Parquet)
        pd.testing.assert_frame_equal(sluice.read_pandas(path), df)


def test_pandas_duplicate_names_without_pyarrow(tmp_path):
    """Refused as pyarrow's from_pandas refuses them (not an AttributeError)."""
    import pandas as pd
    df = pd.DataFrame([[1, 2]], columns=["a", "a"])
    with pytest.raises(ValueError, match="Duplicate column names"):
        pa.Table.from_pandas(df)
    code = f"""
import sys
sys.modules["pyarrow"] = None
import pandas as pd, sluice
try:
    sluice.write(pd.DataFrame([[1, 2]], columns=["a", "a"]), {str(tmp_path / "dup.arrow")!r})
except ValueError as e:
    print(e)
"""
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert run.returncode == 0 and "Duplicate column names" in run.stdout, run.stderr
    assert not (tmp_path / "dup.arrow").exists()


# Two levels, one unnamed (built the same with and without pyarrow).
MULTI_INDEXED = ('pd.DataFrame({"b": [1.5, 2.5], "a": [1, 2]}, index=pd.MultiIndex.from_arrays('
                 '[["x", "y"], [3, 4]], names=["k", None]))')


def test_pandas_index_without_pyarrow(tmp_path):
    out, dropped = tmp_path / "nopa.arrow", tmp_path / "nopa-dropped.arrow"
    code = f"""
import sys
sys.modules["pyarrow"] = None
import numpy as np, pandas as pd, sluice
df = pd.DataFrame({{"a": np.arange(4, dtype="i8")}}, index=pd.Index([10, 20, 30, 40], name="key"))
sluice.write(df, {str(out)!r})
sluice.write(df, {str(dropped)!r}, index=False)
plain = pd.DataFrame({{"a": np.arange(4, dtype="i8")}})
sluice.write(plain, {str(tmp_path / "plain.arrow")!r})
same = pd.DataFrame({{"a": np.arange(4, dtype="i8")}}, index=pd.Index([5, 6, 7, 8], name="a"))
sluice.write(same, {str(tmp_path / "same.arrow")!r})
sluice.write({MULTI_INDEXED}, {str(tmp_path / "multi.arrow")!r})
"""
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    back = pa.ipc.open_file(str(out)).read_all()
    # The index columns last, where pyarrow's from_pandas puts them.
    assert back.column_names == pa.Table.from_pandas(
        pd.DataFrame({"a": [0]}, index=pd.Index([10], name="key"))).column_names == ["a", "key"]
    assert back.column("key").to_pylist() == [10, 20, 30, 40]
    assert pa.ipc.open_file(str(dropped)).read_all().column_names == ["a"]
    assert pa.ipc.open_file(str(tmp_path / "plain.arrow")).read_all().column_names == ["a"]
    # An index named as a column is "__index_level_0__", as pyarrow names it.
    same = pa.ipc.open_file(str(tmp_path / "same.arrow")).read_all()
    assert same.column("__index_level_0__").to_pylist() == [5, 6, 7, 8]
    assert same.column("a").to_pylist() == [0, 1, 2, 3]
    assert "__index_level_0__" in pa.Table.from_pandas(
        pd.DataFrame({"a": [0]}, index=pd.Index([5], name="a"))).column_names
    multi = pa.ipc.open_file(str(tmp_path / "multi.arrow")).read_all()
    assert multi.column_names == pa.Table.from_pandas(eval(MULTI_INDEXED)).column_names
    assert multi.column("k").to_pylist() == ["x", "y"]


# Frames whose index, column labels and dtypes only the "pandas" metadata
# brings back (built the same with and without pyarrow).
PANDAS_ZOO = """{
    "range": pd.DataFrame({"a": np.arange(3)}, index=pd.RangeIndex(5, 11, 2, name="r")),
    "plain": pd.DataFrame({"a": np.arange(3)}),
    "str_index": pd.DataFrame({"a": [1, 2, 3]}, index=pd.Index(["x", "y", "z"], name="k")),
    "multi": pd.DataFrame({"b": [1.5, 2.5], "a": [1, 2]}, index=pd.MultiIndex.from_arrays(
        [["x", "y"], [3, 4]], names=["k", None])),
    "dtypes": pd.DataFrame({
        "cat": pd.Categorical(["a", "b", None, "a", "c", "b"]),
        "ocat": pd.Categorical(["c", "a", None, "a", "b", "c"], categories=["c", "b", "a"],
                               ordered=True),
        "I": pd.array([1, None, 3, 4, 5, 6], dtype="Int64"),
        "bo": pd.array([True, None, False, True, True, None], dtype="boolean"),
        "s": pd.array(["x", None, "z", "\u00e9", "", "w"], dtype="string"),
        "str": pd.Series(["x", None, "z", "\u00e9", "", "w"]),
        "tz": pd.date_range("2024-01-01", periods=6, freq="h", tz="Europe/Paris"),
        "f": [1.0, np.nan, 3.0, 4.0, 5.0, 6.0]}, index=pd.RangeIndex(0, 12, 2)),
    "int_labels": pd.DataFrame({0: [1, 2], 1: [3.5, 4.5]}, index=pd.Index([7, 8], name="n")),
    "no_values": pd.DataFrame({"o": pd.Series([None, None], dtype=object)}),
}"""


def test_pandas_metadata_without_pyarrow(tmp_path):
    """Without pyarrow, sluice.write records the "pandas" metadata that
    pyarrow's Table.from_pandas writes (it wrote none, so the index, the
    column labels and the dtypes were lost): the same JSON but for the
    creator, the same Arrow schema (a RangeIndex only in the metadata under
    index=None, a categorical a dictionary), and the frame comes back from
    sluice.read_pandas and pandas' readers as from the pyarrow path."""
    import json
    import pickle
    import warnings
    code = f"""
import sys
sys.modules["pyarrow"] = None
import pickle, warnings
import numpy as np, pandas as pd, sluice
warnings.simplefilter("ignore")  # (the int labels: as pyarrow, a UserWarning)
frames = {PANDAS_ZOO}
for name, df in frames.items():
    for index in (None, True, False):
        for ext in ("parquet", "arrow"):
            sluice.write(df, "{tmp_path}/%s-%s.%s" % (name, index, ext), index=index)
with open("{tmp_path}/frames.pickle", "wb") as f:
    pickle.dump(frames, f)
"""
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    with open(tmp_path / "frames.pickle", "rb") as f:
        written = pickle.load(f)  # (its strings stored as without pyarrow)
    originals = eval(PANDAS_ZOO)
    for name, df in written.items():
        for index in (None, True, False):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                want = pa.Table.from_pandas(df, preserve_index=index).schema
                sluice.write(df, tmp_path / f"pa-{name}-{index}.parquet", index=index)
                sluice.write(df, tmp_path / f"pa-{name}-{index}.arrow", index=index)
            original = originals[name]
            if index is False:  # (and no column labels: pyarrow records none then)
                original = original.reset_index(drop=True)
                original.columns = [str(c) for c in original.columns]
            for ext in ("parquet", "arrow"):
                path = tmp_path / f"{name}-{index}.{ext}"
                where = (name, index, ext)
                got = pq.read_schema(path) if ext == "parquet" else \
                    pa.ipc.open_file(str(path)).schema
                mine = json.loads(got.metadata[b"pandas"])
                theirs = json.loads(want.metadata[b"pandas"])
                assert mine.pop("creator") == {"library": "sluice", "version": sluice.__version__}
                theirs.pop("creator")
                assert mine == theirs, where
                if ext == "arrow":
                    assert got.remove_metadata() == want.remove_metadata(), where
                back = sluice.read_pandas(path)
                pd.testing.assert_frame_equal(back, sluice.read_pandas(
                    tmp_path / f"pa-{name}-{index}.{ext}"))
                # (sluice reads a float column with missing values as Float64)
                as_sluice = original.astype({"f": "Float64"}) if name == "dtypes" else original
                pd.testing.assert_frame_equal(back, as_sluice)
                pd.testing.assert_frame_equal(sluice.read(path).to_pandas(), back)
                theirs = pd.read_parquet(path) if ext == "parquet" else pd.read_feather(path)
                pd.testing.assert_frame_equal(theirs, original)


def test_pandas_integer_categorical_without_pyarrow(tmp_path):
    """An integer categorical is a dictionary of its categories, as
    pyarrow's from_pandas writes it (it was its categories' values, so
    the Categorical came back as a column of numbers)."""
    out = tmp_path / "icat.arrow"
    code = f"""
import sys
sys.modules["pyarrow"] = None
import pandas as pd, sluice
df = pd.DataFrame({{"c": pd.Categorical([3, 1, None, 1], categories=[3, 2, 1], ordered=True)}})
sluice.write(df, {str(out)!r})
"""
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    df = pd.DataFrame({"c": pd.Categorical([3, 1, None, 1], categories=[3, 2, 1], ordered=True)})
    back = pa.ipc.open_file(str(out)).read_all()
    assert back.equals(pa.Table.from_pandas(df))
    pd.testing.assert_frame_equal(sluice.read_pandas(out), df)
    pd.testing.assert_frame_equal(pd.read_feather(out), df)


@pytest.mark.parametrize("fmt", ["csv", "jsonl"])
def test_text_compression_by_name(simple, tmp_path, fmt):
    """compression= compresses a CSV or JSON Lines output whole, as pandas'
    to_csv(compression="gzip") does (it was ignored); an unknown codec is
    an error, and nothing is written."""
    import gzip
    df = pd.DataFrame({"i": [1, 2, 3], "s": ["a", None, "c"]})
    gz = tmp_path / f"out.{fmt}"
    sluice.write(df, gz, compression="gzip")
    raw = gz.read_bytes()
    assert raw[:2] == b"\x1f\x8b"
    if fmt == "csv":
        assert pd.read_csv(gz, compression="gzip").equals(pd.read_csv(
            __import__("io").StringIO(gzip.decompress(raw).decode())))
        assert pd.read_csv(gz, compression="gzip")["i"].tolist() == [1, 2, 3]
    else:
        assert [line for line in gzip.decompress(raw).decode().splitlines()][0].startswith('{"i":1')
    zst = tmp_path / f"z.{fmt}"
    sluice.write(df, zst, compression="zstd")
    assert zst.read_bytes()[:4] == b"\x28\xb5\x2f\xfd"
    if fmt == "csv":
        assert pa.table(sluice.read(zst, format="csv")).column("i").to_pylist() == [1, 2, 3]
    with pytest.raises(sluice.InvalidArgumentError):
        sluice.write(df, tmp_path / f"bad.{fmt}", compression="no-such-codec")
    assert not (tmp_path / f"bad.{fmt}").exists()


@pytest.mark.parametrize("fmt", ["csv", "jsonl"])
def test_text_compression_bz2_and_xz(tmp_path, fmt):
    """compression="bz2" (or "bzip2") and "xz", as pandas' to_csv spells
    them (they were "not 'bz2'" errors), and a .bz2 or .xz name: pandas
    reads back what it reads from the uncompressed output."""
    import bz2
    import lzma
    df = pd.DataFrame({"i": [1, 2, 3], "s": ["a", None, 'c, "q"\nd']})
    plain = tmp_path / f"plain.{fmt}"
    sluice.write(df, plain)
    for name, compression, inflate in [(f"a.{fmt}", "bz2", bz2.decompress),
                                       (f"b.{fmt}", "bzip2", bz2.decompress),
                                       (f"c.{fmt}", "xz", lzma.decompress),
                                       (f"d.{fmt}.bz2", "default", bz2.decompress),
                                       (f"e.{fmt}.xz", "default", lzma.decompress)]:
        out = tmp_path / name
        sluice.write(df, out, compression=compression)
        assert inflate(out.read_bytes()) == plain.read_bytes(), name
        pandas_kind = "bz2" if inflate is bz2.decompress else "xz"
        if fmt == "csv":
            assert pd.read_csv(out, compression=pandas_kind).equals(pd.read_csv(plain)), name
        else:
            assert pd.read_json(out, lines=True, compression=pandas_kind).equals(
                pd.read_json(plain, lines=True)), name


def test_compression_infer_takes_it_from_the_name_as_pandas(tmp_path):
    """compression="infer", pandas' to_csv default, compresses by the name's
    suffix as pandas does (it was an error, "not 'infer'"): the files are
    the ones pandas writes with it, byte for byte once inflated; a plain
    name is written plain. A tar archive's name is refused (pandas writes a
    tar there; a gzipped CSV is no tar)."""
    import bz2
    import gzip
    import lzma
    df = pd.DataFrame({"i": [1, 2, 3], "s": ["a", None, "c"]})
    inflate = {"gz": gzip.decompress, "bz2": bz2.decompress, "xz": lzma.decompress,
               "csv": lambda b: b}
    for name in ("x.csv.gz", "x.csv.bz2", "x.csv.xz", "x.csv"):
        ours, theirs = tmp_path / f"s_{name}", tmp_path / f"p_{name}"
        sluice.write(df, ours, compression="infer")
        df.to_csv(theirs, index=False, compression="infer")
        raw = inflate[name.rsplit(".", 1)[1]]
        assert raw(ours.read_bytes()) == raw(theirs.read_bytes()), name
        assert pd.read_csv(ours, compression="infer").equals(df), name
    with pytest.raises(sluice.InvalidArgumentError, match="not .tar.gz"):
        sluice.write(df, tmp_path / "x.tar.gz", format="csv", compression="infer")
    assert not (tmp_path / "x.tar.gz").exists()


@pytest.mark.parametrize("suffix", ["parquet", "arrow", "csv"])
def test_write_to_an_open_file(simple, tmp_path, suffix):
    """An open file object is written, its format told by its name's suffix
    or format=; the data is what the peer reads (it failed: no format from
    "/dev/fd/4", or a temporary file refused in /dev/fd/)."""
    path = tmp_path / f"out.{suffix}"
    with open(path, "wb") as f:
        sluice.write(simple, f)
    other = tmp_path / "other.bin"
    with open(other, "wb") as f:
        sluice.write(simple, f, format=suffix)
    for p in (path, other):
        got = (pq.read_table(p) if suffix == "parquet" else pa.ipc.open_file(p).read_all()
               if suffix == "arrow" else pacsv.read_csv(p))
        assert got.column("i").to_pylist() == simple.column("i").to_pylist()


_FILE_FORMATS = ["parquet", "arrow", "arrows", "csv", "jsonl", "avro"]


def _parts(data, *lengths):
    """`data` cut into pieces of these lengths (the last takes the rest),
    an Avro piece as its records (its sync marker is random)."""
    out, at = [], 0
    for n in lengths:
        out.append(data[at:at + n] if n is not None else data[at:])
        at += n or 0
    return [list(fastavro.reader(io.BytesIO(p))) if p.startswith(b"Obj\x01") else p
            for p in out]


@pytest.mark.parametrize("fmt", _FILE_FORMATS)
def test_open_file_is_written_at_its_position(tmp_path, fmt):
    """Into an open file, sluice.write puts its output at the file's
    position, between what was written before (buffered or flushed) and
    after, as pyarrow's writers do. It was reopened as /dev/fd/N with
    O_TRUNC: the header was lost, the trailer landed at Python's old offset
    (NUL bytes between), or the output itself was lost."""
    t = pa.table({"a": [1, 2], "s": ["x", None]})
    sluice.write(t, tmp_path / f"alone.{fmt}")
    body = (tmp_path / f"alone.{fmt}").read_bytes()
    for flush in (False, True):
        p = tmp_path / f"into.{fmt}"
        with open(p, "wb") as f:
            f.write(b"# header\n")
            if flush:
                f.flush()
            sluice.write(t, f, format=fmt)
            assert f.tell() == len(b"# header\n") + len(body)
            f.write(b"# trailer\n")
        assert _parts(p.read_bytes(), 9, len(body), None) == \
            _parts(b"# header\n" + body + b"# trailer\n", 9, len(body), None), (fmt, flush)
    if fmt == "csv":  # what pyarrow does with the same file object
        with open(tmp_path / "pa.csv", "wb") as f:
            f.write(b"# header\n")
            pacsv.write_csv(t, f)
            f.write(b"# trailer\n")
        data = (tmp_path / "pa.csv").read_bytes()
        assert data.startswith(b"# header\n") and data.endswith(b"\n2,\n# trailer\n"), data


@pytest.mark.parametrize("fmt", _FILE_FORMATS)
def test_open_file_append_mode_and_two_writes(tmp_path, fmt):
    """A file opened "ab" keeps what it held; two writes into one open file
    keep both outputs, one after the other (as into io.BytesIO). Append mode
    truncated the file; the second write replaced the first."""
    t = pa.table({"a": [1, 2]})
    sluice.write(t, tmp_path / f"alone.{fmt}")
    body = (tmp_path / f"alone.{fmt}").read_bytes()
    p = tmp_path / f"log.{fmt}"
    p.write_bytes(b"old\n")
    with open(p, "ab") as f:
        sluice.write(t, f, format=fmt)
    n = len(body)
    assert _parts(p.read_bytes(), 4, None) == _parts(b"old\n" + body, 4, None)
    with open(p, "wb") as f:
        sluice.write(t, f, format=fmt)
        sluice.write(t, f, format=fmt)
    assert _parts(p.read_bytes(), n, None) == _parts(body + body, n, None)
    mem = io.BytesIO()
    sluice.write(t, mem, format=fmt)
    sluice.write(t, mem, format=fmt)
    assert _parts(mem.getvalue(), n, None) == _parts(body + body, n, None)


@pytest.mark.parametrize("fmt", _FILE_FORMATS)
def test_open_file_keeps_its_contents_when_the_producer_fails(tmp_path, fmt):
    """A producer that fails mid-stream writes nothing into an open file:
    the output is made whole first. (It truncated the file and left part of
    the output, and the error named /dev/fd/N.)"""
    def batches():
        yield pa.record_batch({"a": [1, 2]})
        raise RuntimeError("producer failed")

    p = tmp_path / f"kept.{fmt}"
    with open(p, "wb") as f:
        f.write(b"# header\n")
        reader = pa.RecordBatchReader.from_batches(pa.schema([("a", pa.int64())]), batches())
        with pytest.raises(RuntimeError, match="producer failed") as info:
            sluice.write(reader, f, format=fmt)
        cause = str(info.value.__cause__)  # the sluice error, naming the file
        assert str(p) in cause and "/dev/fd" not in cause, cause
        assert f.tell() == len(b"# header\n")
        f.write(b"# trailer\n")
    assert p.read_bytes() == b"# header\n# trailer\n"


def test_text_file_and_pipe_keep_the_order_of_writes(tmp_path):
    """A text file takes the bytes through its binary buffer after its own
    text; a pipe's file object (a subprocess's stdin) is flushed first, so
    the output comes between what Python wrote before and after."""
    t = pa.table({"a": [1, 2]})
    p = tmp_path / "t.csv"
    with open(p, "w") as f:
        f.write("# text\n")
        sluice.write(t, f)
        f.write("# end\n")
    assert p.read_bytes() == b"# text\na\n1\n2\n# end\n"
    cat = subprocess.Popen(["cat"], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    cat.stdin.write(b"before\n")
    sluice.write(t, cat.stdin, format="csv")
    cat.stdin.write(b"after\n")
    cat.stdin.close()
    assert cat.stdout.read() == b"before\na\n1\n2\nafter\n"
    assert cat.wait() == 0


def test_writer_refuses_an_open_file(tmp_path):
    """sluice.Writer takes no file object (its docstring said so, but an
    open file went to /dev/fd/N and was truncated)."""
    p = tmp_path / "w.parquet"
    p.write_bytes(b"old")
    with open(p, "ab") as f:
        with pytest.raises(sluice.InvalidArgumentError, match="not a file object"):
            sluice.Writer(f)
    assert p.read_bytes() == b"old"


def test_an_option_value_with_a_comma_is_refused(tmp_path):
    """Options reach the C library as "key=value,key=value": a comma in a
    value would end it and start another option (header=false here, unseen);
    it is refused. A lone comma and a type's bracketed commas are values."""
    t = pa.table({"a": [1, None], "t": pa.array([0, 1], pa.timestamp("us", tz="UTC"))})
    with pytest.raises(sluice.InvalidArgumentError, match="more or less than one option"):
        sluice.write(t, tmp_path / "x.csv", null="NA,header=false")
    # An unclosed bracket would take the next option's comma as its own.
    with pytest.raises(sluice.InvalidArgumentError, match="option null_values"):
        sluice.read(tmp_path / "y.csv", null_values="x[", header=False, comment="]")
    assert not (tmp_path / "x.csv").exists()
    sluice.write(t, tmp_path / "x.csv", delimiter=",", null="NA")
    assert pacsv.read_csv(tmp_path / "x.csv").column("a").to_pylist() == [1, None]
    back = sluice.read(tmp_path / "x.csv", schema={"a": "int64", "t": "timestamp[us, tz=UTC]"})
    assert pa.table(back).column("t").equals(t.column("t"))


def test_csv_of_rows_without_columns_is_refused(tmp_path):
    """Three rows, no columns: as CSV they were three empty lines, read back
    (by pyarrow, by sluice) as no rows; refused, nothing written. Arrow IPC
    keeps them."""
    t = pa.table({"a": [1, 2, 3]}).select([])
    with pytest.raises(sluice.InvalidArgumentError, match="3 rows without columns"):
        sluice.write(t, tmp_path / "x.csv")
    assert not (tmp_path / "x.csv").exists()
    sluice.write(t, tmp_path / "x.arrow")
    assert pa.ipc.open_file(str(tmp_path / "x.arrow")).read_all().num_rows == 3
    sluice.write(t.slice(0, 0), tmp_path / "none.csv")  # no rows: nothing lost


def test_pandas_zones_and_unsigned_categories_without_pyarrow(tmp_path):
    """Without pyarrow, a zoned column's zone is written as pyarrow's
    from_pandas spells it (an IANA name from zoneinfo or dateutil, "UTC",
    "+HH:MM"; str() gave "UTC+05:30" and a file path, which readers refused or
    took as UTC), and an unsigned categorical with missing values writes
    (its nullable dtype is UInt8, not "Uint8")."""
    import datetime
    import zoneinfo
    import dateutil.tz
    zones = {
        "fixed": "datetime.timezone(datetime.timedelta(hours=5, minutes=30))",
        "west": "datetime.timezone(-datetime.timedelta(hours=3))",
        "dateutil": "dateutil.tz.gettz('Europe/Paris')",
        "dateutil_utc": "dateutil.tz.tzutc()",
        "zoneinfo": "zoneinfo.ZoneInfo('America/New_York')",
        "utc": "datetime.timezone.utc",
    }
    out = tmp_path / "zones.parquet"
    frame = ", ".join(f"{k!r}: pd.date_range('2021-03-28', periods=48, freq='h', tz={v})"
                      for k, v in zones.items())
    code = f"""
import sys
sys.modules["pyarrow"] = None
import datetime, zoneinfo, dateutil.tz, pandas as pd, sluice
df = pd.DataFrame({{{frame}}})
df["c"] = pd.Categorical([1, None] * 24, categories=pd.Index([1, 2], dtype="uint8"))
sluice.write(df, {str(out)!r})
"""
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    back = pq.read_table(out)
    want = pa.Table.from_pandas(pd.DataFrame({
        k: pd.date_range("2021-03-28", periods=48, freq="h", tz=eval(v, {"datetime": datetime, "zoneinfo": zoneinfo, "dateutil": dateutil}))
        for k, v in zones.items()}), preserve_index=False)
    for name in zones:
        assert back.schema.field(name).type.tz == want.schema.field(name).type.tz, name
        assert back.column(name).cast(want.schema.field(name).type).equals(want.column(name))
    assert back.column("c").to_pylist() == [1, None] * 24
    assert back.schema.field("c").type == pa.uint8()


def test_compression_none_writes_uncompressed_as_pyarrow(tmp_path):
    """compression=None writes uncompressed, as pq.write_table and
    DataFrame.to_parquet take it (it gave the format's default, snappy);
    left out, Parquet is snappy, as pyarrow's default. The Writer agrees."""
    import pyarrow.parquet as pq
    table = pa.table({"a": list(range(100)), "s": ["x"] * 100})

    def codec(path):
        return pq.ParquetFile(path).metadata.row_group(0).column(0).compression

    sluice.write(table, tmp_path / "none.parquet", compression=None)
    pq.write_table(table, tmp_path / "pa_none.parquet", compression=None)
    assert codec(tmp_path / "none.parquet") == codec(tmp_path / "pa_none.parquet") == \
        "UNCOMPRESSED"
    sluice.write(table, tmp_path / "default.parquet")
    assert codec(tmp_path / "default.parquet") == "SNAPPY"
    with sluice.Writer(tmp_path / "w.parquet", compression=None) as w:
        w.write(table)
    assert codec(tmp_path / "w.parquet") == "UNCOMPRESSED"
    assert pq.read_table(tmp_path / "w.parquet").equals(table)


def test_error_writing_into_a_file_object_names_it(tmp_path):
    """A failed write into a file object (a producer that raises) names the
    destination, not the scratch file the output was made in (which the
    message named, and which is gone)."""
    import io

    def batches():
        yield pa.record_batch({"a": [1, 2]})
        raise RuntimeError("producer failed")

    reader = pa.RecordBatchReader.from_batches(pa.schema([("a", pa.int64())]), batches())
    with pytest.raises(RuntimeError) as info:  # the producer's, the sluice error its cause
        sluice.write(reader, io.BytesIO(), format="parquet")
    message = str(info.value.__cause__)
    assert "<BytesIO>" in message and "producer failed" in message, message
    assert "sluice-" not in message, message


@pytest.mark.parametrize("codec", ["snappy", "none"])
def test_compression_level_for_a_codec_without_levels_is_refused(tmp_path, codec):
    """compression_level with snappy or none was ignored; pyarrow refuses it,
    naming the codec. zstd takes one, as in pyarrow."""
    t = pa.table({"x": [1]})
    with pytest.raises(pa.ArrowInvalid, match="support setting a compression level"):
        pq.write_table(t, tmp_path / "pa.parquet", compression=codec, compression_level=3)
    with pytest.raises(sluice.InvalidArgumentError, match="has no compression levels"):
        sluice.write(t, tmp_path / "sl.parquet", compression=codec, compression_level=3)
    assert not (tmp_path / "sl.parquet").exists()
    sluice.write(t, tmp_path / "z.parquet", compression="zstd", compression_level=3)
    assert pq.read_table(tmp_path / "z.parquet").equals(t)


def _strings_from_bytes(values, valid=None):
    """A utf8 array made of raw byte values, not checked by pyarrow."""
    offsets, data = [0], b""
    for v in values:
        data += v
        offsets.append(len(data))
    bitmap = None
    if valid is not None:
        bitmap = pa.py_buffer(bytes([sum(1 << i for i, ok in enumerate(valid) if ok)]))
    return pa.Array.from_buffers(pa.string(), len(values),
                                 [bitmap, pa.array(offsets, pa.int32()).buffers()[1],
                                  pa.py_buffer(data)],
                                 null_count=0 if valid is None else valid.count(False))


@pytest.mark.parametrize("fmt", ["jsonl", "csv", "parquet", "arrow", "avro"])
def test_strings_that_are_not_utf8_are_refused(tmp_path, fmt):
    # A producer's utf8 column holding ff fe: JSON Lines wrote "\u00ff\u00fe"
    # (other text), Parquet and IPC files that sluice.read then refused. As
    # pyarrow's full validation, an error naming the column, the row and the
    # byte; the bytes of a null may be anything (pyarrow's validation and
    # sluice both take them), and a large_utf8 column is checked too.
    good = pa.array(["ok", "fine"])
    bad = _strings_from_bytes([b"ok", b"h\xc3\xa9\xff\xfe"])
    with pytest.raises(pa.ArrowInvalid):
        bad.validate(full=True)
    schema = pa.schema([("s", pa.string())])

    def batches():
        yield pa.record_batch([good], schema=schema)
        yield pa.record_batch([bad], schema=schema)

    dst = tmp_path / f"out.{fmt}"
    with pytest.raises(sluice.InvalidArgumentError,
                       match=r"batch 1: column 's': invalid UTF-8 in row 3, at byte 3 of the "
                             r"value \(0xff\)"):
        sluice.write(pa.RecordBatchReader.from_batches(schema, batches()), dst)
    assert list(tmp_path.iterdir()) == []
    large = pa.table({"s": bad.cast(pa.large_string(), safe=False)})
    with pytest.raises(sluice.InvalidArgumentError, match="row 1, at byte 3"):
        sluice.write(large, dst)
    in_null = _strings_from_bytes([b"ok", b"\xff\xfe", b"hi"], valid=[True, False, True])
    in_null.validate(full=True)
    sluice.write(pa.table({"s": in_null, "k": [1, 2, 3]}), dst)
    if fmt == "jsonl":
        assert dst.read_text() == '{"s":"ok","k":1}\n{"s":null,"k":2}\n{"s":"hi","k":3}\n'
    else:
        back = sluice.read(dst)
        back = back if isinstance(back, pa.Table) else pa.table(back)
        assert back.column("s").to_pylist() == ["ok", None, "hi"]


def test_a_type_sluice_cannot_write_is_named(tmp_path):
    # A polars Int128 column ('_pli128') was refused without naming it.
    df = pl.DataFrame({"a": [1, 2]}).with_columns(
        big=pl.col("a").cast(pl.Int128), st=pl.struct(pl.col("a").cast(pl.Int128).alias("x")))
    for fmt in ("csv", "jsonl", "parquet"):
        with pytest.raises(sluice.Error, match="column 'big': unknown or malformed Arrow format "
                                               "string '_pli128'"):
            sluice.write(df, tmp_path / f"x.{fmt}")
        with pytest.raises(sluice.Error, match="column 'st.x': unknown or malformed"):
            sluice.write(df.select("st"), tmp_path / f"x.{fmt}")
    assert list(tmp_path.iterdir()) == []


def test_quote_none_is_the_default_quote_as_in_pyarrow(tmp_path):
    # An option given as None keeps its default, as pyarrow's
    # WriteOptions(quoting_style=None) is quoting_style="needed"; no quoting
    # is quote="none".
    assert pacsv.WriteOptions(quoting_style=None).quoting_style == "needed"
    t = pa.table({"s": ["a,b", "c"]})
    sluice.write(t, tmp_path / "none.csv", quote=None)
    sluice.write(t, tmp_path / "default.csv")
    assert (tmp_path / "none.csv").read_bytes() == (tmp_path / "default.csv").read_bytes()
    with pytest.raises(sluice.InvalidArgumentError, match="needs quotes"):
        sluice.write(t, tmp_path / "off.csv", quote="none")


def test_decimal32_and_decimal64_are_written_as_decimal128(tmp_path):
    # pyarrow's decimal32/64 (Arrow 18+) were refused by every writer; they
    # are written as decimal128 of the same precision and scale, which the
    # peers read back as the decimal128 cast of the input (offsets, nulls
    # and nesting included).
    import decimal
    D = decimal.Decimal
    t = pa.table({
        "a": pa.array([D("1.23"), None, D("-9.99"), D("99999.99")], pa.decimal32(7, 2)),
        "b": pa.array([D("123456.7"), None, D("-1"), D("-99999999999999999.9")],
                      pa.decimal64(18, 1)),
        "l": pa.array([[D("1.5")], None, [D("-2.5"), None], []], pa.list_(pa.decimal64(10, 1))),
    }).slice(1)
    wide = t.cast(pa.schema([("a", pa.decimal128(7, 2)), ("b", pa.decimal128(18, 1)),
                             ("l", pa.list_(pa.decimal128(10, 1)))]))
    sluice.write(t, tmp_path / "x.parquet")
    assert pq.read_table(tmp_path / "x.parquet").cast(wide.schema).equals(wide)
    assert duckdb.sql(f"select a::varchar, b::varchar from '{tmp_path / 'x.parquet'}'") \
        .fetchall() == [(None, None), ("-9.99", "-1.0"), ("99999.99", "-99999999999999999.9")]
    sluice.write(t, tmp_path / "x.arrow")
    assert pa.ipc.open_file(str(tmp_path / "x.arrow")).read_all().equals(wide)
    sluice.write(t, tmp_path / "x.avro")
    with open(tmp_path / "x.avro", "rb") as f:
        assert list(fastavro.reader(f)) == wide.to_pylist()
    sluice.write(t.select(["a", "b"]), tmp_path / "x.csv")
    back = pacsv.read_csv(str(tmp_path / "x.csv"), convert_options=pacsv.ConvertOptions(
        column_types={"a": pa.decimal128(7, 2), "b": pa.decimal128(18, 1)}))
    assert back.equals(wide.select(["a", "b"]))


def test_pandas_conversion_error_names_the_column_pyarrow_fails_on(tmp_path):
    """pyarrow fails on column 'b' (a list holding an int and a str); sluice
    named column 'a' (an int and a float, which pyarrow takes as double),
    blaming a column that converts. Now the column pyarrow names, the row
    whose value makes it fail and pyarrow's reason; an index level too."""
    import pandas as pd
    out = tmp_path / "m.parquet"
    df = pd.DataFrame({"a": pd.Series([1, 2.5], dtype=object),
                       "b": pd.Series([[2], [1, "x"]], dtype=object)})
    with pytest.raises(pa.ArrowInvalid) as theirs:
        pa.Table.from_pandas(df)
    assert "column b" in str(theirs.value)
    with pytest.raises(sluice.InvalidArgumentError,
                       match=r"column 'b', row 1: Could not convert 'x'") as e:
        sluice.write(df, out)
    assert "'a'" not in str(e.value) and isinstance(e.value.__cause__, pa.ArrowInvalid)
    sluice.write(df[["a"]], out)  # 'a' alone converts, as in pyarrow
    assert pq.read_table(out).column("a").to_pylist() == [1.0, 2.5]
    with pytest.raises(sluice.InvalidArgumentError,
                       match=r"column 'a', row 2: a value of type str where row 0 has int"):
        sluice.write(pd.DataFrame({"a": pd.Series([1, 2.5, "x"], dtype=object)}), out)
    with pytest.raises(sluice.InvalidArgumentError,
                       match=r"index 'ix', row 1: a value of type str where row 0 has int"):
        sluice.write(pd.DataFrame({"a": [1, 2]}, index=pd.Index([1, "x"], dtype=object,
                                                                  name="ix")), out)


def test_pandas_conversion_failures_are_sluice_errors(tmp_path):
    """What pyarrow (or, without it, sluice) cannot convert is a
    sluice.Error naming the column, pyarrow's exception its __cause__, as
    the README says of all errors: a complex column was pyarrow's
    ArrowNotImplementedError, an int past 2**64 a bare OverflowError, a
    sparse column a TypeError, duplicate labels a ValueError."""
    import pandas as pd
    out = tmp_path / "x.parquet"
    cases = [  # frame, sluice's class, pyarrow's, what the message says
        (pd.DataFrame({"c": np.array([1 + 2j])}), sluice.UnsupportedError,
         pa.ArrowNotImplementedError, "column 'c' (complex128)"),
        (pd.DataFrame({"o": pd.Series([1, 2**70], dtype=object)}),
         sluice.InvalidArgumentError, OverflowError, "column 'o', row 1"),
        (pd.DataFrame({"s": pd.arrays.SparseArray([0, 1, 0])}), sluice.UnsupportedError,
         TypeError, "column 's'"),
        (pd.DataFrame([[1, 2]], columns=["a", "a"]), sluice.InvalidArgumentError, ValueError,
         "Duplicate column names"),
    ]
    for df, ours, theirs, says in cases:
        with pytest.raises(theirs):
            pa.Table.from_pandas(df)
        with pytest.raises(ours, match=re.escape(says)) as e:
            sluice.write(df, out)
        assert type(e.value.__cause__) is theirs, (says, e.value.__cause__)
        assert not out.exists()
    code = f"""
import sys
sys.modules["pyarrow"] = None
import numpy as np, pandas as pd, sluice
for df in (pd.DataFrame({{"c": np.array([1 + 2j])}}),
           pd.DataFrame({{"s": pd.arrays.SparseArray([0, 1, 0])}}),
           pd.DataFrame([[1, 2]], columns=["a", "a"])):
    try:
        sluice.write(df, {str(out)!r})
    except sluice.Error as e:
        print(type(e).__name__, e)
"""
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    lines = run.stdout.splitlines()
    assert lines[0].startswith("UnsupportedError sluice.write: cannot convert column 'c'"), lines
    assert lines[1].startswith("UnsupportedError sluice.write: Sparse"), lines
    assert lines[2].startswith("InvalidArgumentError sluice.write: Duplicate"), lines
    assert not out.exists()


def test_pandas_dataframe_subclass_takes_index_false(tmp_path):
    """A DataFrame subclass goes sluice's pandas way as a DataFrame does:
    index=False drops its index, as to_parquet(index=False) does. It went
    through pandas' own __arrow_c_stream__, which kept the index."""
    import pandas as pd

    class Sub(pd.DataFrame):
        pass

    df = Sub({"a": [1, 2]}, index=["x", "y"])
    df.to_parquet(tmp_path / "pd.parquet", index=False)
    want = pq.read_table(tmp_path / "pd.parquet").column_names
    assert want == ["a"]
    sluice.write(df, tmp_path / "sub.parquet", index=False)
    assert pq.read_table(tmp_path / "sub.parquet").column_names == want
    sluice.write(df, tmp_path / "kept.parquet")
    assert pd.read_parquet(tmp_path / "kept.parquet").index.tolist() == ["x", "y"]


@pytest.mark.parametrize("fmt", ["parquet", "csv", "arrow", "arrows", "jsonl", "avro"])
def test_a_single_column_object_is_refused_as_not_a_table(tmp_path, fmt):
    """A pandas Series, a pyarrow ChunkedArray or Array, a polars Series:
    one TypeError saying a table is needed and what was passed, for every
    format (each writer refused the stream in its own words, "the stream's
    schema must be a struct, got 'l'"); pa.Array's was already such a one."""
    import io
    import pandas as pd
    for data, name in ((pd.Series([1, 2]), "Series"), (pa.chunked_array([[1, 2]]), "ChunkedArray"),
                       (pa.array([1, 2]), "Int64Array"), (pl.Series("x", [1, 2]), "Series")):
        for dst in (tmp_path / f"x.{fmt}", io.BytesIO()):
            with pytest.raises(TypeError, match=rf"^sluice.write takes a table or record batches "
                               rf"\(struct arrays\), not {name} \(of int64\): make a table"):
                sluice.write(data, dst, format=fmt)
        assert not (tmp_path / f"x.{fmt}").exists()
    with sluice.Writer(tmp_path / f"w.{fmt}") as w:
        with pytest.raises(TypeError, match=r"^Writer.write takes a table .* not Series"):
            w.write(pd.Series([1]))
        w.write(pa.table({"a": [1]}))  # the writer is as it was
    if fmt == "jsonl":
        import pyarrow.json as pajson
        assert pajson.read_json(tmp_path / f"w.{fmt}").to_pydict() == {"a": [1]}
    else:
        assert sluice.read(tmp_path / f"w.{fmt}").to_pydict() == {"a": [1]}


def test_pandas_mixed_object_column_names_column_row_and_type(tmp_path):
    """A str column with an int in it: pyarrow's ArrowTypeError came through
    (not a sluice.Error), and without pyarrow a TypeError named no row or
    type. Now a sluice.Error naming the column, the row and both types, and
    nothing written."""
    import pandas as pd
    out = tmp_path / "m.parquet"
    with pytest.raises(pa.ArrowTypeError):
        pa.Table.from_pandas(pd.DataFrame({"m": ["a", 1, None]}))
    with pytest.raises(sluice.InvalidArgumentError,
                       match=r"column 'm', row 2: a value of type int where row 0 has str") as e:
        sluice.write(pd.DataFrame({"k": [1, 2, 3], "m": ["a", None, 1]}), out)
    assert isinstance(e.value.__cause__, pa.ArrowTypeError) and not out.exists()
    code = f"""
import sys, datetime
sys.modules["pyarrow"] = None
import pandas as pd, sluice
for df in (pd.DataFrame({{"m": ["a", None, 1]}}),
           pd.DataFrame({{"d": [None, datetime.date(2024, 1, 2)]}})):
    try:
        sluice.write(df, {str(out)!r})
    except sluice.Error as e:
        print(type(e).__name__, e)
"""
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    lines = run.stdout.splitlines()
    assert lines[0].startswith("InvalidArgumentError sluice.write: column 'm', row 2: a value "
                               "of type int where row 0 has str"), lines
    assert lines[1].startswith("UnsupportedError sluice.write: column 'd', row 1: date values, "
                               "which sluice converts only with pyarrow"), lines
    assert not out.exists()


def test_a_leading_tilde_is_the_home_directory(tmp_path, monkeypatch):
    """"~/x.parquet" is $HOME/x.parquet for write and read, as pyarrow,
    pandas and polars take it (sluice made a file under a directory named
    "~" or failed: "cannot create a temporary file in '~/'")."""
    import pathlib
    import pandas as pd
    monkeypatch.setenv("HOME", str(tmp_path))
    t = pa.table({"a": [1, 2]})
    pq.write_table(t, "~/pa.parquet")  # the peers
    pl.DataFrame({"a": [1, 2]}).write_parquet("~/pl.parquet")
    assert (tmp_path / "pa.parquet").exists() and (tmp_path / "pl.parquet").exists()
    sluice.write(t, "~/x.parquet")
    sluice.write(t, pathlib.Path("~/x.csv"))
    sluice.write(t, b"~/x.arrow")
    sluice.write(pa.table({"a": [1, 2], "b": [3, 4]}), "~/parts", format="parquet",
                 partition_by="a")
    with sluice.Writer("~/w.parquet") as w:
        w.write(t)
    for name in ("x.parquet", "x.csv", "x.arrow", "w.parquet"):
        assert sluice.read(tmp_path / name).equals(sluice.Table.from_arrow(t)), name
        assert sluice.read("~/" + name).equals(sluice.Table.from_arrow(t)), name
    assert sorted(p.name for p in (tmp_path / "parts").iterdir()) == ["a=1", "a=2"]
    assert sluice.read("~/pa.parquet").to_pydict() == {"a": [1, 2]}
    assert sluice.read_pandas("~/pl.parquet").equals(pd.DataFrame({"a": [1, 2]}))
    assert sluice.schema(pathlib.Path("~/x.parquet")).names == ["a"]
    assert sluice.read_ipc("~/x.arrow").to_pydict() == {"a": [1, 2]}
    assert sluice.read(["~/x.parquet", "~/pa.parquet"]).num_rows == 4
    assert not (pathlib.Path.cwd() / "~").exists()
    with pytest.raises(sluice.NotFoundError) as e:
        sluice.read("~/missing.parquet")
    assert str(tmp_path) in str(e.value)


def test_parquet_without_columns_is_refused_as_documented(tmp_path):
    """A table without columns is refused as Parquet (the README says why):
    DuckDB cannot read the file pyarrow writes for it, and pyarrow's file
    holds 0 rows whatever the table had. Arrow IPC keeps the rows."""
    import pandas as pd
    t = pa.table({"a": [1, 2, 3]}).select([])
    pq.write_table(t, tmp_path / "pa.parquet")
    assert pq.read_metadata(tmp_path / "pa.parquet").num_rows == 0  # the 3 rows are lost
    with pytest.raises(duckdb.Error, match="at least one non-root column"):
        duckdb.sql(f"select count(*) from '{tmp_path / 'pa.parquet'}'").fetchall()
    for data in (t, pd.DataFrame(index=range(3)), pd.DataFrame()):
        with pytest.raises(sluice.UnsupportedError, match="a table without columns cannot be "
                                                          "written as Parquet"):
            sluice.write(data, tmp_path / "sl.parquet", index=False)
        assert not (tmp_path / "sl.parquet").exists()
    sluice.write(t, tmp_path / "sl.arrow")
    assert pa.ipc.open_file(tmp_path / "sl.arrow").read_all().num_rows == 3


def test_ipc_dictionary_deltas_option(tmp_path):
    """dictionary_deltas=True reaches the Arrow IPC stream writer from
    sluice.write and sluice.Writer: a dictionary that grows by appending goes
    out as deltas, the messages pyarrow's writer sends with
    emit_dictionary_deltas=True; without it, as replacements. The
    dictionaries are slices as pyarrow hands them over (offsets not at 0, a
    validity bitmap starting at bit 3), which the writer rebases."""
    D = pa.DictionaryArray.from_arrays
    strings = pa.array([None if k % 5 == 0 else "v%d" % k for k in range(80)])
    ints = pa.array([None if k % 7 == 0 else k * 3 for k in range(80)], pa.int64())
    chunks = {"s": [], "i": []}
    for b in range(1, 14):
        idx = pa.array([5 * b - 1, 0, None], pa.int32())
        chunks["s"].append(D(idx, strings.slice(3, 5 * b)))
        chunks["i"].append(D(idx, ints.slice(3, 5 * b)))
    t = pa.table({k: pa.chunked_array(v) for k, v in chunks.items()})
    options = pa.ipc.IpcWriteOptions(emit_dictionary_deltas=True)
    with pa.ipc.new_stream(tmp_path / "pa.arrows", t.schema, options=options) as w:
        w.write_table(t)
    want = dictionary_messages(tmp_path / "pa.arrows")
    assert sum(delta for _, delta in want) == 2 * 12, want
    sluice.write(t, tmp_path / "d.arrows", dictionary_deltas=True)
    with sluice.Writer(tmp_path / "w.arrows", t.schema, dictionary_deltas=True) as w:
        for batch in t.to_batches():
            w.write(pa.Table.from_batches([batch]))
    sluice.write(t, tmp_path / "r.arrows")
    for name in ("d.arrows", "w.arrows", "r.arrows"):
        assert pa.ipc.open_stream(tmp_path / name).read_all().to_pylist() == t.to_pylist(), name
    assert dictionary_messages(tmp_path / "d.arrows") == want
    assert dictionary_messages(tmp_path / "w.arrows") == want
    assert not any(delta for _, delta in dictionary_messages(tmp_path / "r.arrows"))
    with pytest.raises(sluice.InvalidArgumentError, match="dictionary_deltas='maybe'"):
        sluice.write(t, tmp_path / "x.arrows", dictionary_deltas="maybe")


def test_ipc_file_nested_dictionaries(tmp_path):
    """sluice.write to .arrow: a list column whose chunks have their own
    dictionaries (slices, as pyarrow hands them over) grows one dictionary
    and writes deltas, which pyarrow reads with the table's values (its own
    file writer refuses the table); a dictionary whose values hold a
    dictionary that changed is an error naming the column, with or without
    dictionary_deltas (pyarrow reads no delta of it)."""
    D = pa.DictionaryArray.from_arrays
    words = pa.array(["a", "b", "c", "d", "e", "f"])
    chunks = []
    for b in range(4):
        d = D(pa.array([2, 0, None, 1, 2, 1], pa.int8()), words.slice(b, 3))
        chunks.append(pa.ListArray.from_arrays(pa.array([0, 2, 2, 5, 6], pa.int32()), d)[1:])
    t = pa.table({"l": pa.chunked_array(chunks)})
    options = pa.ipc.IpcWriteOptions(emit_dictionary_deltas=True)
    with pytest.raises(pa.ArrowInvalid):
        with pa.ipc.new_file(tmp_path / "pa.arrow", t.schema, options=options) as w:
            w.write_table(t)
    for deltas in (None, True):
        kw = {} if deltas is None else {"dictionary_deltas": deltas}
        sluice.write(t, tmp_path / "l.arrow", **kw)
        got = pa.ipc.open_file(tmp_path / "l.arrow").read_all()
        got.validate(full=True)
        assert got.to_pylist() == t.to_pylist()
    with pytest.raises(sluice.UnsupportedError, match="column 'l': the dictionary changed"):
        sluice.write(t, tmp_path / "no.arrow", dictionary_deltas=False)

    def outer(n):  # dictionary<list<dictionary<string>>>, n outer values
        inner = D(pa.array(range(n), pa.int32()), words.slice(0, n))
        lists = pa.ListArray.from_arrays(pa.array(range(n + 1), pa.int32()), inner)
        return D(pa.array([n - 1, 0], pa.int32()), lists)
    t = pa.table({"nd": pa.chunked_array([outer(2), outer(3)])})
    for kw in ({}, {"dictionary_deltas": True}):
        with pytest.raises(sluice.UnsupportedError, match="column 'nd': the dictionary changed "
                           "between batches, and its values hold a dictionary"):
            sluice.write(t, tmp_path / "nd.arrow", **kw)
        assert not (tmp_path / "nd.arrow").exists()


AVRO_CATEGORICALS = """pd.DataFrame({
    "cat": pd.Categorical(["a", "b", None, "a", "c", "b"]),
    "ocat": pd.Categorical(["c", "a", None, "a", "b", "c"], categories=["c", "x", "b", "a"],
                           ordered=True),
    "icat": pd.Categorical([3, 1, None, 1, 2, 3]),
    "ucat": pd.Categorical(np.array([3, 1, 1, 1, 2, 3], dtype="uint8")),
    "fcat": pd.Categorical([1.5, 2.5, None, 1.5, 1.5, 1.5])})"""


def write_frame_in_a_child(frame: str, path, pyarrow: bool) -> None:
    """sluice.write of the pandas frame the expression `frame` makes, in a
    child process, with pyarrow importable or not."""
    code = f"""
import sys
if not {pyarrow}:
    sys.modules["pyarrow"] = None
import numpy as np, pandas as pd, sluice
sluice.write({frame}, {str(path)!r})
"""
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr


@pytest.mark.parametrize("pyarrow_writes", [True, False])
@pytest.mark.parametrize("pyarrow_reads", [True, False])
def test_pandas_categoricals_round_trip_through_avro(tmp_path, pyarrow_writes, pyarrow_reads):
    """A categorical written to Avro comes back from read_pandas as pandas'
    Arrow readers give it from Feather: its ordered flag (an Avro enum has
    none; the "pandas" metadata recorded it) and, for numbers (written as
    their values), a Categorical rather than a column of them; with and
    without pyarrow on either side. (Ordered ones written as their values:
    the next test.)"""
    path = tmp_path / "cats.avro"
    write_frame_in_a_child(AVRO_CATEGORICALS, path, pyarrow_writes)
    df = eval(AVRO_CATEGORICALS)
    feather = tmp_path / "cats.arrow"
    df.to_feather(feather)
    want = pd.read_feather(feather)
    pd.testing.assert_frame_equal(want, df)
    if pyarrow_reads:
        pd.testing.assert_frame_equal(sluice.read_pandas(path), want)
        pd.testing.assert_frame_equal(sluice.read(path).to_pandas(), want)
        return
    # (the frame as pandas makes it without pyarrow: what write took)
    code = f"""
import sys
sys.modules["pyarrow"] = None
import numpy as np, pandas as pd, sluice
df = {AVRO_CATEGORICALS}
pd.testing.assert_frame_equal(sluice.read_pandas({str(path)!r}), df)
pd.testing.assert_frame_equal(sluice.read({str(path)!r}).to_pandas(), df)
assert "pyarrow" not in [m for m in sys.modules if sys.modules[m] is not None], "pyarrow imported"
"""
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr


@pytest.mark.parametrize("pyarrow_writes", [True, False])
def test_ordered_categoricals_avro_keeps_as_values_come_back_unordered(tmp_path,
                                                                       pyarrow_writes):
    """An ordered categorical of numbers, or of strings that are not Avro
    enum symbols, is written as its values: the categories' order is not in
    the file, so read_pandas gives a Categorical of the values (sorted
    categories) without the ordered flag, never one ordered by the sorted
    categories, which made min, max and < answer by another order."""
    path = tmp_path / "ordered.avro"
    frame = """pd.DataFrame({
    "size": pd.Categorical(["small", "extra large", "medium"],
                           categories=["small", "medium", "extra large"], ordered=True),
    "rank": pd.Categorical([3, 1, 2], categories=[3, 1, 2], ordered=True)})"""
    write_frame_in_a_child(frame, path, pyarrow_writes)
    df = eval(frame)
    got = sluice.read_pandas(path)
    for c in ("size", "rank"):
        assert isinstance(got[c].dtype, pd.CategoricalDtype), got.dtypes
        assert not got[c].cat.ordered, c
        assert got[c].tolist() == df[c].tolist(), c
        assert list(got[c].cat.categories) == sorted(set(df[c])), c


@pytest.mark.parametrize("avro_type", [{"type": "array", "items": "long"},
                                       {"type": "record", "name": "R",
                                        "fields": [{"name": "x", "type": "long"}]}])
def test_foreign_pandas_metadata_calling_a_nested_column_categorical(tmp_path, avro_type):
    """An Avro file whose "pandas" metadata (written by another tool, or
    wrong) calls a list or record column an ordered categorical: read_pandas
    gives the column's values as they are, as fastavro reads them (it raised
    TypeError: unhashable type)."""
    fastavro = pytest.importorskip("fastavro")
    import json
    path = tmp_path / "foreign.avro"
    schema = {"type": "record", "name": "T", "fields": [{"name": "c", "type": avro_type}]}
    rows = [{"c": [1, 2]}, {"c": [3]}] if avro_type["type"] == "array" else \
        [{"c": {"x": 1}}, {"c": {"x": 2}}]
    meta = {"index_columns": [], "columns": [{
        "name": "c", "field_name": "c", "pandas_type": "categorical", "numpy_type": "int8",
        "metadata": {"num_categories": 2, "ordered": True}}]}
    with open(path, "wb") as f:
        fastavro.writer(f, fastavro.parse_schema(schema), rows,
                        metadata={"pandas": json.dumps(meta)})
    got = sluice.read_pandas(path)
    with open(path, "rb") as f:
        want = [r["c"] for r in fastavro.reader(f)]
    values = [list(v) if avro_type["type"] == "array" else v for v in got["c"]]
    assert values == want


def _nested_lists(n):
    """One row: an int32 inside n lists (n + 1 Arrow levels with the column)."""
    v = pa.array([1], pa.int32())
    for _ in range(n):
        v = pa.ListArray.from_arrays(pa.array([0, 1], pa.int32()), v)
    return v


def _nested_list_structs(levels):
    """One row: lists and structs alternating, `levels` Arrow levels deep
    (3 Parquet groups for every 2 of them)."""
    v = pa.array([1], pa.int32())
    for i in range(levels - 1):
        if i % 2:
            v = pa.StructArray.from_arrays([v], ["f"])
        else:
            v = pa.ListArray.from_arrays(pa.array([0, 1], pa.int32()), v)
    return v


def _nested_maps(k):
    """One row: an int32 inside k maps (each takes two Arrow levels)."""
    t, v = pa.int32(), 1
    for _ in range(k):
        t, v = pa.map_(pa.int32(), t), [(0, v)]
    return pa.array([v], t)


@pytest.mark.parametrize("column, peers_read", [
    (_nested_lists(32), True), (_nested_lists(62), False), (_nested_lists(63), False),
    (_nested_list_structs(44), True), (_nested_list_structs(64), False),
    (_nested_maps(31), False)],
    ids=["lists32", "lists62", "lists63", "mixed44", "mixed64", "maps31"])
def test_parquet_as_deep_as_the_writer_goes_reads_back(tmp_path, column, peers_read):
    """Each Arrow list takes two Parquet schema levels: sluice reads what it
    writes (up to its 64 Arrow levels), and what pyarrow writes as deep, as
    pyarrow, DuckDB and polars do (it refused from 32 lists on as if the
    footer were corrupt). pyarrow's reader stops at 100 schema levels."""
    t = pa.table({"c": column})
    want = t.to_pylist()
    sluice.write(t, tmp_path / "s.parquet")
    pq.write_table(t, tmp_path / "p.parquet")
    for name in ("s.parquet", "p.parquet"):
        if peers_read:
            assert pq.read_table(tmp_path / name).to_pylist() == want, name
            got = duckdb.sql("select c from '%s'" % (tmp_path / name)).fetchall()
            assert got == [(want[0]["c"],)], name
            assert pl.read_parquet(tmp_path / name)["c"].to_list() == [want[0]["c"]], name
        assert sluice.read(tmp_path / name).to_pylist() == want, name
        assert sluice.schema(tmp_path / name).names == ["c"], name


def test_parquet_deeper_than_sluice_arrow_limit_is_named(tmp_path):
    """A file nested past the 64 Arrow levels sluice represents (pyarrow
    writes one) is refused as past sluice's limit, not as a corrupt footer."""
    for column in (_nested_lists(64), _nested_lists(80), _nested_maps(32)):
        pq.write_table(pa.table({"c": column}), tmp_path / "p.parquet")
        with pytest.raises(sluice.UnsupportedError, match="sluice's limit of 64"):
            sluice.read(tmp_path / "p.parquet")


def test_parquet_all_null_chunks_keep_their_dictionary(tmp_path):
    """A dictionary column chunk of nulls only gets a dictionary page (and
    a data page of null keys) as pyarrow writes it: an all-null categorical,
    or a row group of nulls only, keeps its categories; an all-null string
    column gets an empty dictionary page, as pyarrow's."""
    d = pa.DictionaryArray.from_arrays(pa.array([None, None], pa.int32()), pa.array(["x", "y"]))
    mixed = pa.DictionaryArray.from_arrays(pa.array([0, 1, None, None], pa.int32()),
                                           pa.array(["x", "y"]))
    cases = [(pa.table({"c": d}), {}),
             (pa.table({"c": pa.array([None, None], pa.string())}), {}),
             (pa.table({"c": mixed}), {"row_group_size": 2})]
    for t, opts in cases:
        sluice.write(t, tmp_path / "s.parquet", **opts)
        pq.write_table(t, tmp_path / "p.parquet", **opts)
        s, p = pq.ParquetFile(tmp_path / "s.parquet"), pq.ParquetFile(tmp_path / "p.parquet")
        assert s.metadata.num_row_groups == p.metadata.num_row_groups
        for g in range(p.metadata.num_row_groups):
            sc, pc = s.metadata.row_group(g).column(0), p.metadata.row_group(g).column(0)
            assert sc.has_dictionary_page == pc.has_dictionary_page, (t, g)
            assert sc.encodings == pc.encodings, (t, g)
        want = pq.read_table(tmp_path / "p.parquet")
        got = pq.read_table(tmp_path / "s.parquet")
        assert got.equals(want), t
        if pa.types.is_dictionary(t.column(0).type):
            for chunk in got.column(0).chunks:
                assert chunk.dictionary.to_pylist() == ["x", "y"]
            assert pa.table(sluice.read(tmp_path / "s.parquet")).column(0).combine_chunks() \
                .dictionary.to_pylist() == ["x", "y"]
            cats = sluice.read_pandas(tmp_path / "s.parquet")["c"].cat.categories
            assert list(cats) == ["x", "y"]
        assert pl.read_parquet(tmp_path / "s.parquet")["c"].to_list() == \
            t.column(0).to_pylist()
        assert duckdb.sql("select c from '%s'" % (tmp_path / "s.parquet")).fetchall() == \
            [(v,) for v in t.column(0).to_pylist()]


def test_avro_as_deep_as_the_writer_goes_reads_back(tmp_path):
    """sluice reads the Avro files it writes at every depth it writes them
    (it refused lists 62 and 63 deep, which fastavro reads), enums (Arrow
    dictionaries, one level more) included; a non-record root (a wrapper
    column) as deep as sluice's 64 levels reads too, one deeper is refused
    as past the limit."""
    for n in (61, 62, 63):
        t = pa.table({"c": _nested_lists(n)})
        sluice.write(t, tmp_path / "x.avro")
        with open(tmp_path / "x.avro", "rb") as f:
            assert [r["c"] for r in fastavro.reader(f)] == [t.to_pylist()[0]["c"]]
        assert sluice.read(tmp_path / "x.avro").to_pylist() == t.to_pylist(), n
    d = pa.DictionaryArray.from_arrays(pa.array([1], pa.int32()), pa.array(["x", "y"]))
    for _ in range(62):
        d = pa.ListArray.from_arrays(pa.array([0, 1], pa.int32()), d)
    sluice.write(pa.table({"c": d}), tmp_path / "e.avro")
    assert sluice.read(tmp_path / "e.avro").to_pylist() == pa.table({"c": d}).to_pylist()
    for n, ok in ((63, True), (64, False)):
        schema = "long"
        value = 7
        for _ in range(n):
            schema, value = {"type": "array", "items": schema}, [value]
        with open(tmp_path / "r.avro", "wb") as f:
            fastavro.writer(f, fastavro.parse_schema(schema), [value])
        if ok:
            assert len(sluice.read(tmp_path / "r.avro").to_pylist()) == 1
        else:
            with pytest.raises(sluice.UnsupportedError, match="sluice's limit of 64"):
                sluice.read(tmp_path / "r.avro")


@pytest.mark.parametrize("fmt", ["avro", "csv", "jsonl", "arrow", "parquet"])
def test_input_deeper_than_sluice_limit_says_so(tmp_path, fmt):
    """An input nested past sluice's 64 levels is refused as that, not as a
    batch that "does not match the stream's schema"."""
    t = pa.table({"c": _nested_lists(64)})
    with pytest.raises(sluice.Error, match="deeper than (sluice's limit of )?64 levels") as e:
        sluice.write(t, tmp_path / ("x." + fmt))
    assert "does not match" not in str(e.value)
    assert not (tmp_path / ("x." + fmt)).exists()


@pytest.mark.parametrize("name", ["LZ4", "lz4_frame", "ZSTD", "Zstd", "lz4"])
def test_ipc_compression_names_as_pyarrow(tmp_path, name):
    """The IPC writer takes the codec names pyarrow's IpcWriteOptions takes
    (any case, lz4_frame); it refused 'LZ4'. pyarrow reads the bodies back."""
    import pyarrow.ipc as ipc
    pa.ipc.IpcWriteOptions(compression=name)  # pyarrow takes the name too
    table = pa.table({"a": list(range(5000)), "s": ["x%d" % (i % 7) for i in range(5000)]})
    sluice.write(table, tmp_path / "c.arrow", compression=name)
    with pa.memory_map(str(tmp_path / "c.arrow")) as src:
        assert ipc.open_file(src).read_all().equals(table)
    raw = (tmp_path / "c.arrow").read_bytes()
    plain = tmp_path / "p.arrow"
    sluice.write(table, plain, compression="none")
    assert len(raw) < plain.stat().st_size  # the bodies are compressed
    with pytest.raises(sluice.Error, match="unsupported compression 'snappy'"):
        sluice.write(table, tmp_path / "bad.arrow", compression="snappy")


@pytest.mark.parametrize("make", ["pyarrow", "polars", "pandas", "nested"])
def test_a_name_holding_a_nul_is_refused_not_cut(tmp_path, make):
    """Names cross the Arrow C interfaces as NUL-terminated strings: 'id\\0a'
    and 'id\\0b' arrived as 'id' and 'id' and were written so (pyarrow writes
    them whole). Refused, naming the column, and nothing is written."""
    import pandas as pd
    import polars as pl
    names = {"id\0a": [1], "id\0b": [2]}
    data = {"pyarrow": lambda: pa.table(names), "polars": lambda: pl.DataFrame(names),
            "pandas": lambda: pd.DataFrame(names),
            "nested": lambda: pa.table({"s": pa.array([{"x\0y": 1}])})}[make]()
    out = tmp_path / "n.parquet"
    with pytest.raises(sluice.InvalidArgumentError, match="holds a NUL character"):
        sluice.write(data, out)
    assert not out.exists()
    with pytest.raises(sluice.InvalidArgumentError, match="holds a NUL character"):
        with sluice.Writer(tmp_path / "w.parquet") as w:
            w.write(data)


def test_avro_enum_of_changing_dictionaries_is_written_again_as_strings(tmp_path):
    """A table whose dictionary column changes its dictionary between
    chunks (a Parquet categorical read row group by row group) is written
    to Avro as strings, with a RuntimeWarning: the first chunk's values
    could not be the enum's symbols (it was an error). A reader, which
    cannot be exported twice, keeps the error; enums=False is plain."""
    import fastavro
    chunks = pa.chunked_array([pa.array(["a", "b"]).dictionary_encode(),
                               pa.array(["c", None]).dictionary_encode()])
    table = pa.table({"k": chunks})
    out = tmp_path / "k.avro"
    with pytest.warns(RuntimeWarning, match="written again with the column as strings"):
        sluice.write(table, out)
    with open(out, "rb") as f:
        reader = fastavro.reader(f)
        assert reader.writer_schema["fields"][0]["type"] == ["null", "string"]
        assert [r["k"] for r in reader] == ["a", "b", "c", None]
    with pytest.raises(sluice.InvalidArgumentError, match="not one of the enum's symbols"):
        sluice.write(pa.RecordBatchReader.from_batches(table.schema, table.to_batches()),
                     tmp_path / "r.avro")
    assert not (tmp_path / "r.avro").exists()
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        sluice.write(table, tmp_path / "s.avro", enums=False)
