"""sluice.read of flat fixed-width tables: batches copied, in any arrival
order, into one chunk per column at their row offsets and freed at once
(sluice/_gather.py, _sluice_gather.c). Values, dtypes and order are checked
against pyarrow reading the same files (Parquet, Avro, CSV, Arrow IPC), with
nulls, many splits, two threads, a delayed first split, a limit, and the
safety net for splits that deliver other row counts than planned; pandas
columns are views over the gathered buffers; memory is released and the peak
stays near the table's size."""
import decimal
import gc
import os
import subprocess
import sys

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq
import pytest

import sluice
from sluice import _gather
from pkg_helpers import stalled_stream, write_ipc_file


def fixed_table(n=20_000, seed=3):
    """Every gathered kind of column, with nulls in most."""
    rng = np.random.default_rng(seed)
    nulls = rng.random(n) < 0.1

    def masked(values):
        return pa.array(values, mask=nulls)
    ts = np.arange(n, dtype="i8") * 1_000_003
    return pa.table({
        "i64": pa.array(np.arange(n, dtype="i8")),
        "i32": masked(rng.integers(-1000, 1000, n).astype("i4")),
        "u8": masked(rng.integers(0, 255, n).astype("u1")),
        "i16": pa.array(rng.integers(-300, 300, n).astype("i2")),
        "f64": masked(rng.random(n)),
        "f32": pa.array(rng.random(n).astype("f4")),
        "bool": masked(rng.random(n) < 0.5),
        "bool_nonnull": pa.array(rng.random(n) < 0.3),
        "ts_ms_utc": pa.array(ts, mask=nulls, type=pa.timestamp("ms", tz="UTC")),
        "ts_us_paris": pa.array(ts, type=pa.timestamp("us", tz="Europe/Paris")),
        "ts_ns": pa.array(ts, type=pa.timestamp("ns")),
        "date32": pa.array((np.arange(n) % 20000).astype("i4"), mask=nulls, type=pa.date32()),
        "dec": pa.array([decimal.Decimal(i) / 100 for i in range(n)], type=pa.decimal128(12, 2)),
    })


def assert_frames_match(got, table):
    """got (sluice's DataFrame) against pyarrow's to_pandas of the same table:
    equal values; dtypes equal, or pandas' nullable dtype where pyarrow falls
    back to float64 / object for nulls."""
    want = table.to_pandas()
    assert list(got.columns) == list(want.columns)
    for name in want.columns:
        g, w = got[name], want[name]
        col = table.column(name)
        if col.null_count and (pa.types.is_integer(col.type) or pa.types.is_floating(col.type)
                               or pa.types.is_boolean(col.type)):
            assert isinstance(g.dtype, pd.api.extensions.ExtensionDtype), name
            assert [None if v is pd.NA else v for v in g.astype(object).tolist()] == \
                col.to_pylist(), name
        else:
            assert str(g.dtype) == str(w.dtype), name
            pd.testing.assert_series_equal(g, w, check_names=False)


@pytest.fixture(scope="module")
def fixed():
    return fixed_table()


@pytest.fixture(scope="module")
def fixed_parquet(fixed, data_dir):
    path = data_dir / "fixed.parquet"
    pq.write_table(fixed, str(path), row_group_size=1500)  # 14 row groups
    return path


def test_parquet_gathered_equals_pyarrow(fixed, fixed_parquet):
    want = pq.read_table(str(fixed_parquet))
    assert want.equals(fixed)
    for ordered in (True, False):
        t = sluice.read(fixed_parquet, threads=2, ordered=ordered)
        assert len(t.batches) == 1
        assert pa.table(t).equals(want)
        assert_frames_match(t.to_pandas(), want)
    assert_frames_match(sluice.read_pandas(fixed_parquet, threads=2), want)
    # The same frame as the per-batch path (sluice's own conversion).
    pd.testing.assert_frame_equal(sluice.read(fixed_parquet).to_pandas(),
                                  sluice.read(fixed_parquet, _gather=False).to_pandas())


def test_delayed_first_split_keeps_plan_order(fixed, fixed_parquet):
    delayed = {"slow_split": 0, "slow_split_delay_us": 200_000}
    s = sluice.scan(fixed_parquet, ordered=False, threads=2, _scan=delayed)
    arrival = [b.tag for b in s]
    assert len(arrival) == 14 and arrival != sorted(arrival)  # split 0 came late
    for ordered in (True, False):
        t = sluice.read(fixed_parquet, ordered=ordered, threads=2, _scan=delayed)
        assert pa.table(t).equals(fixed)


def test_split_ranges_and_limit(fixed, fixed_parquet):
    parts = [pa.table(sluice.read(fixed_parquet, _scan={"first_split": f, "num_splits": 3}))
             for f in range(0, 14, 3) if f + 3 <= 14]
    parts.append(pa.table(sluice.read(fixed_parquet, _scan={"first_split": 12})))
    assert pa.concat_tables(parts).equals(fixed)
    t = sluice.read(fixed_parquet, limit=2345, threads=2)
    assert len(t.batches) == 1 and pa.table(t).equals(fixed.slice(0, 2345))


def test_avro_csv_arrow_gathered(data_dir):
    fastavro = pytest.importorskip("fastavro")
    n = 30_000
    t = pa.table({"id": pa.array(np.arange(n, dtype="i8")),
                  "x": pa.array(np.linspace(0, 1, n)),
                  "k": pa.array((np.arange(n) % 7).astype("i4"))})
    avro = data_dir / "fixed.avro"
    schema = {"type": "record", "name": "r", "fields": [
        {"name": "id", "type": "long"}, {"name": "x", "type": "double"},
        {"name": "k", "type": "int"}]}
    with open(avro, "wb") as f:
        fastavro.writer(f, schema, t.to_pylist(), sync_interval=4096)  # many blocks
    csv = data_dir / "fixed.csv"
    pacsv.write_csv(t, str(csv))
    arrow = write_ipc_file(t, data_dir / "fixed_many.arrow", max_chunksize=777)
    peers = {avro: t, csv: pacsv.read_csv(str(csv)), arrow: t}
    for path, opts in ((avro, {"batch_rows": 1000}), (csv, {"batch_rows": 1000}),
                       (arrow, {})):
        want = peers[path]
        assert len(list(sluice.scan(path, **opts))) > 1  # many batches to place
        for ordered in (True, False):
            got = sluice.read(path, threads=2, ordered=ordered, **opts)
            assert len(got.batches) == 1, path
            assert pa.table(got).cast(want.schema).equals(want), path  # Avro's are not null
        pd.testing.assert_frame_equal(sluice.read_pandas(path, threads=2, **opts),
                                      want.to_pandas())


def test_avro_split_rows_from_block_headers(data_dir):
    """A local Avro file's splits (byte ranges) learn their rows from the
    block headers, so its splits are placed like Parquet's row groups."""
    fastavro = pytest.importorskip("fastavro")
    n = 200_000  # about 3.6 MB: several 1 MiB splits
    t = pa.table({"id": pa.array(np.arange(n, dtype="i8")),
                  "x": pa.array(np.sin(np.arange(n, dtype="f8")))})
    schema = {"type": "record", "name": "r", "fields": [
        {"name": "id", "type": "long"}, {"name": "x", "type": "double"}]}
    path = data_dir / "counted.avro"
    with open(path, "wb") as f:
        fastavro.writer(f, schema, t.to_pylist())
    rows = sluice._sluice.open(str(path), threads=2).split_rows()
    assert len(rows) >= 3 and min(rows) >= 0 and sum(rows) == n, rows
    assert _gather.placement_plan(sluice._sluice.open(str(path)), {}, None) is not None
    got = sluice.read(path, threads=2, ordered=False)
    assert len(got.batches) == 1 and pa.table(got).cast(t.schema).equals(t)  # Avro's: not null
    pd.testing.assert_frame_equal(sluice.read_pandas(path, threads=2), t.to_pandas())
    # Placed: the splits decode straight into the columns, nothing is copied;
    # small batches too (each continues where the split's last one ended).
    for batch_rows in (0, 5000):
        ds = sluice._sluice.open(str(path), threads=2, ordered=False, batch_rows=batch_rows)
        rows = ds.split_rows()
        g = sluice._sluice._Gather(ds.schema(), sum(rows))
        scanner = ds.scan(ordered=False, placement=g, split_rows=rows)
        raw, got_n = _gather.gather_placed(ds.schema(), scanner, dict(enumerate(rows)), g)
        assert got_n == n and g.copied_bytes == 0
        schema = sluice.Schema(ds.schema())
        assert pa.table(sluice.Table(schema, [sluice.Batch(raw, schema)])).cast(t.schema).equals(t)


def test_safety_net_for_other_row_counts(fixed, fixed_parquet):
    # Splits that deliver more or fewer rows than planned still land in plan
    # order (the planned counts are exact for Parquet; this fakes wrong ones).
    ds = sluice._sluice.open(str(fixed_parquet), threads=2, ordered=False)
    rows = ds.split_rows()
    assert rows == [1500] * 13 + [len(fixed) - 13 * 1500]
    for wrong in ({i: r + (7 if i % 2 else -7) for i, r in enumerate(rows)},
                  {i: (r if i else 10) for i, r in enumerate(rows)}):
        scanner = ds.scan(ordered=False)
        raw, n = _gather.gather_placed(ds.schema(), scanner, wrong)
        assert n == len(fixed)
        schema = sluice.Schema(ds.schema())
        assert pa.table(sluice.Table(schema, [sluice.Batch(raw, schema)])).equals(fixed)


def test_parquet_decodes_straight_into_the_columns(fixed, fixed_parquet):
    """A placed scan: Parquet decodes each column stored as its Arrow bytes
    straight into the gathered column, so add() finds those rows in place
    and copies only the converted ones (uint8, int16, decimal)."""
    ds = sluice._sluice.open(str(fixed_parquet), threads=2, ordered=False)
    rows = ds.split_rows()
    g = sluice._sluice._Gather(ds.schema(), sum(rows))
    scanner = ds.scan(ordered=False, placement=g, split_rows=rows)
    raw, n = _gather.gather_placed(ds.schema(), scanner, dict(enumerate(rows)), g)
    assert n == len(fixed)
    schema = sluice.Schema(ds.schema())
    assert pa.table(sluice.Table(schema, [sluice.Batch(raw, schema)])).equals(fixed)
    assert g.copied_bytes == n * (1 + 2 + 16)  # u8, i16 and dec only
    # Without a placement every value is copied.
    g2 = sluice._sluice._Gather(ds.schema(), sum(rows))
    _gather.gather_placed(ds.schema(), ds.scan(ordered=False), dict(enumerate(rows)), g2)
    assert g2.copied_bytes == n * (8 + 4 + 1 + 2 + 8 + 4 + 8 + 8 + 8 + 4 + 16)
    # sluice.read places too.
    t = sluice.read(fixed_parquet, threads=2)
    assert pa.table(t).equals(fixed)


def test_many_files_decode_in_place(fixed, data_dir):
    """A directory of Parquet files is one plan: each file's row groups land
    after the rows of the files before it."""
    root = data_dir / "placed_dir"
    root.mkdir(exist_ok=True)
    cols = ["i64", "f64", "ts_ns", "date32"]
    parts = [fixed.select(cols).slice(0, 7000), fixed.select(cols).slice(7000, 5000),
             fixed.select(cols).slice(12000)]
    for k, part in enumerate(parts):
        pq.write_table(part, str(root / f"part-{k}.parquet"), row_group_size=2000)
    ds = sluice._sluice.open(str(root), threads=2, ordered=False)
    rows = ds.split_rows()
    g = sluice._sluice._Gather(ds.schema(), sum(rows))
    scanner = ds.scan(ordered=False, placement=g, split_rows=rows)
    raw, n = _gather.gather_placed(ds.schema(), scanner, dict(enumerate(rows)), g)
    assert n == len(fixed) and g.copied_bytes == 0
    schema = sluice.Schema(ds.schema())
    assert pa.table(sluice.Table(schema, [sluice.Batch(raw, schema)])).equals(fixed.select(cols))


def test_cancelled_placed_scan_keeps_its_memory(fixed, fixed_parquet):
    """The workers of a cancelled placed scan may still be decoding into the
    columns after the _Gather is gone: the memory stays mapped until the
    scan lets go (a write to unmapped memory would kill the process)."""
    for _ in range(3):
        ds = sluice._sluice.open(str(fixed_parquet), threads=2, ordered=False)
        rows = ds.split_rows()
        g = sluice._sluice._Gather(ds.schema(), sum(rows))
        scanner = ds.scan(ordered=False, placement=g, split_rows=rows, slow_split=0,
                          slow_split_delay_us=300_000)
        next(scanner)
        scanner.close()
        del scanner, g, ds
        gc.collect()
        import time
        time.sleep(0.4)  # split 0 decodes now, into the held memory
    assert pa.table(sluice.read(fixed_parquet)).equals(fixed)


def test_not_gathered_kinds_keep_batches(data_dir):
    t = pa.table({"a": pa.array(range(3000), pa.int64()),
                  "s": pa.array(["v%d" % i for i in range(3000)])})
    path = write_ipc_file(t, data_dir / "with_strings.arrow", max_chunksize=500)
    got = sluice.read(path)
    assert len(got.batches) == 6 and pa.table(got).equals(t)


def test_pandas_columns_are_views_of_the_gathered_buffers(fixed_parquet):
    t = sluice.read(fixed_parquet)
    pt = pa.table(t)
    df = t.to_pandas()
    for name in ("i64", "f32", "ts_ns"):
        arr = df[name].to_numpy() if name != "ts_ns" else df[name].to_numpy().view("i8")
        assert arr.__array_interface__["data"][0] == pt.column(name).chunk(0).buffers()[1].address
    a = df["i64"].to_numpy()
    del t, pt, df
    gc.collect()
    assert a[:3].tolist() == [0, 1, 2] and a[-1] == 19_999  # the view keeps them alive


def test_gather_argument_errors(fixed_parquet):
    ds = sluice._sluice.open(str(fixed_parquet))
    with pytest.raises(TypeError):
        sluice._sluice._Gather(None, 0)
    g = sluice._sluice._Gather(ds.schema(), 10)
    batch = next(ds.scan())
    with pytest.raises(ValueError):
        g.add(batch, 0, 1490, 20)  # past the batch's rows
    with pytest.raises(ValueError):
        g.add(batch, -1)
    g.add(batch, 0, 0, 5)
    with pytest.raises(ValueError):
        g.finish(1 << 40)
    out = g.finish(5)
    with pytest.raises(RuntimeError):
        g.add(batch, 0)
    schema = sluice.Schema(ds.schema())
    assert pa.table(sluice.Table(schema, [sluice.Batch(out, schema)])).num_rows == 5
    # Placements whose counts do not fit the scan or the room: refused.
    rows = ds.split_rows()
    g = sluice._sluice._Gather(ds.schema(), sum(rows))
    with pytest.raises(ValueError):
        ds.scan(placement=g, split_rows=rows[:-1])  # one count short
    with pytest.raises(ValueError):
        ds.scan(placement=g, split_rows=[1 << 62, 1 << 62] + rows[2:])  # a sum that wraps
    with pytest.raises(ValueError):
        ds.scan(placement=g, split_rows=[rows[0] + 1] + rows[1:])  # past the room
    with pytest.raises(TypeError):
        ds.scan(placement=g)  # no counts
    # The gather is still usable for a good placement.
    raw, n = _gather.gather_placed(ds.schema(), ds.scan(placement=g, split_rows=rows),
                                   dict(enumerate(rows)), g)
    assert n == sum(rows) and g.copied_bytes == n * (1 + 2 + 16)  # u8, i16, dec


def rss_bytes():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


@pytest.mark.skipif(not os.path.exists("/proc/self/statm"), reason="needs /proc")
def test_gathered_reads_do_not_leak(fixed_parquet):
    def round_trip():
        df = sluice.read(fixed_parquet).to_pandas()
        assert len(df) == 20_000
    for _ in range(20):
        round_trip()
    gc.collect()
    rss0 = rss_bytes()
    for _ in range(200):
        round_trip()
    gc.collect()
    # One round maps ~1 MB of columns: a leak per round would show 200 MB.
    assert rss_bytes() - rss0 < 40 << 20


PEAK_SCRIPT = """
import resource, sys
import numpy, pandas  # imported before the baseline: they are not the read's
import sluice
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
df = sluice.read(sys.argv[1], memory=8 << 20, threads=2).to_pandas()
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print((peak - before) * 1024, int(df.memory_usage(index=False).sum()))
"""


@pytest.mark.skipif(sys.platform != "linux", reason="ru_maxrss in KiB on Linux")
def test_peak_is_near_the_frame_size(data_dir):
    # 8M rows x 2 float64 = 128 MiB in 32 row groups: the per-batch path
    # needs the batches and the frame (2x); gathering needs the frame plus
    # what is in flight.
    n = 8 << 20
    path = data_dir / "peak.parquet"
    t = pa.table({"a": np.arange(n, dtype="f8"), "b": np.arange(n, dtype="f8") * 0.5})
    pq.write_table(t, str(path), row_group_size=n // 32, compression="none")
    del t
    out = subprocess.run([sys.executable, "-c", PEAK_SCRIPT, str(path)], capture_output=True,
                         text=True, env=dict(os.environ))
    assert out.returncode == 0, out.stderr
    net, frame = map(int, out.stdout.split())
    assert frame == 2 * 8 * n
    assert net < 1.5 * frame, (net, frame)  # ~1.2 here; the per-batch path ~2.1


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs named pipes")
def test_ctrl_c_stops_a_gathered_read(tmp_path):
    # The gathered read waits for a stalled producer's next batch: Ctrl-C
    # must get through and leave nothing behind.
    import signal
    import threading
    fifo = tmp_path / "stalled_numbers.arrows"
    table = pa.table({"a": pa.array(range(1000), pa.int64())})
    with stalled_stream(fifo, table) as release:
        killer = threading.Timer(0.3, os.kill, args=(os.getpid(), signal.SIGINT))
        killer.start()
        with pytest.raises(KeyboardInterrupt):
            sluice.read(fifo, format="arrows")
        killer.join()
        assert not release.is_set()  # stopped while the producer still stalled
