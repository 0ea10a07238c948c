"""Data and helpers shared by the tests of the Python package (tests/pkg).
A module of its own (not conftest) so that tests import it by a name no
other test directory uses."""
import contextlib
import datetime as dt
import decimal
import os
import threading
from pathlib import Path

import pyarrow as pa

import sluice

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent


def corpora_dir():
    env = os.environ.get("SLUICE_CORPORA")
    return Path(env) if env else REPO.parent / "shared" / "corpora"


def typed_table(rows=1000, seed=0):
    """Every Arrow type the formats produce, with nulls in every nullable column."""
    import random
    rnd = random.Random(seed)

    def maybe(v, i):
        return None if i % 7 == 3 else v

    ints = [maybe(rnd.randint(-2**40, 2**40), i) for i in range(rows)]
    cols = {
        "i8": pa.array([maybe(rnd.randint(-128, 127), i) for i in range(rows)], pa.int8()),
        "i16": pa.array([maybe(rnd.randint(-2**15, 2**15 - 1), i) for i in range(rows)], pa.int16()),
        "i32": pa.array([maybe(rnd.randint(-2**31, 2**31 - 1), i) for i in range(rows)], pa.int32()),
        "i64": pa.array(ints, pa.int64()),
        "i64_nonnull": pa.array(list(range(rows)), pa.int64()),
        "u8": pa.array([maybe(rnd.randint(0, 255), i) for i in range(rows)], pa.uint8()),
        "u16": pa.array([maybe(rnd.randint(0, 2**16 - 1), i) for i in range(rows)], pa.uint16()),
        "u32": pa.array([maybe(rnd.randint(0, 2**32 - 1), i) for i in range(rows)], pa.uint32()),
        "u64": pa.array([maybe(rnd.randint(0, 2**64 - 1), i) for i in range(rows)], pa.uint64()),
        "f32": pa.array([maybe(rnd.random() * 100, i) for i in range(rows)], pa.float32()),
        "f64": pa.array([maybe(rnd.gauss(0, 1e6), i) for i in range(rows)], pa.float64()),
        "f64_nonnull": pa.array([rnd.random() for _ in range(rows)], pa.float64()),
        "bool": pa.array([maybe(rnd.random() < 0.5, i) for i in range(rows)], pa.bool_()),
        "bool_nonnull": pa.array([rnd.random() < 0.5 for _ in range(rows)], pa.bool_()),
        "str": pa.array([maybe("s%d-%s" % (i, "é" * (i % 3)), i) for i in range(rows)]),
        "ascii": pa.array([maybe("row %d" % i, i) for i in range(rows)]),
        "large_str": pa.array([maybe("L%d" % i, i) for i in range(rows)], pa.large_string()),
        "bin": pa.array([maybe(bytes([i % 256]) * (i % 5), i) for i in range(rows)], pa.binary()),
        "fsb": pa.array([maybe(bytes([i % 256] * 4), i) for i in range(rows)], pa.binary(4)),
        "date32": pa.array([maybe(dt.date(2000, 1, 1) + dt.timedelta(days=i), i)
                            for i in range(rows)], pa.date32()),
        "time64": pa.array([maybe(i * 1_000_003, i) for i in range(rows)], pa.time64("us")),
        "time32": pa.array([maybe(i * 1003 % 86_400_000, i) for i in range(rows)], pa.time32("ms")),
        "ts_us": pa.array([maybe(1_600_000_000_000_000 + i * 997_000_001, i) for i in range(rows)],
                          pa.timestamp("us")),
        "ts_ns_nonnull": pa.array([1_600_000_000_000_000_000 + i * 13 for i in range(rows)],
                                  pa.timestamp("ns")),
        "ts_ms_utc": pa.array([maybe(1_600_000_000_000 + i * 61_001, i) for i in range(rows)],
                              pa.timestamp("ms", "UTC")),
        "ts_s_paris": pa.array([maybe(1_600_000_000 + i * 3_601, i) for i in range(rows)],
                               pa.timestamp("s", "Europe/Paris")),
        "dur": pa.array([maybe(i * 1_000, i) for i in range(rows)], pa.duration("ms")),
        "dec": pa.array([maybe(decimal.Decimal(i * 37 - 5000).scaleb(-3), i)
                         for i in range(rows)], pa.decimal128(12, 3)),
        "dict": pa.array([maybe(["red", "green", "blue"][i % 3], i) for i in range(rows)])
                  .dictionary_encode(),
        "list": pa.array([maybe(list(range(i % 4)), i) for i in range(rows)], pa.list_(pa.int32())),
        "struct": pa.array([maybe({"a": i, "b": str(i)}, i) for i in range(rows)],
                           pa.struct([("a", pa.int64()), ("b", pa.string())])),
        "null": pa.nulls(rows),
    }
    return pa.table(cols)


def write_ipc_file(table, path, max_chunksize=None):
    with pa.ipc.new_file(str(path), table.schema) as w:
        w.write_table(table, max_chunksize=max_chunksize)
    return path


def write_ipc_stream(table, path, max_chunksize=None):
    with pa.ipc.new_stream(str(path), table.schema) as w:
        w.write_table(table, max_chunksize=max_chunksize)
    return path


def has_format(name):
    return name in sluice.reader_formats()


@contextlib.contextmanager
def stalled_stream(fifo, table):
    """A named pipe at `fifo` that a thread feeds with `table` as an Arrow IPC
    stream and then stalls on (no end of stream) until the event this yields
    is set, or the block ends; the thread is joined on the way out."""
    os.mkfifo(fifo)
    release = threading.Event()

    def producer():
        with open(fifo, "wb") as f:
            w = pa.ipc.new_stream(f, table.schema)
            w.write_table(table)
            f.flush()
            release.wait(60)
            try:
                w.close()
            except OSError:  # the reader is gone
                pass

    writer = threading.Thread(target=producer)
    writer.start()
    try:
        yield release
    finally:
        release.set()
        writer.join()


def unsynced_pages(path):
    """Dirty plus under-writeback page-cache pages of the file at `path`, by
    cachestat(2) (Linux 6.5+, x86-64); None where that cannot be told (an
    older kernel, or tmpfs, whose pages never reach a disk)."""
    import ctypes
    import platform
    if platform.system() != "Linux" or platform.machine() != "x86_64":
        return None
    with open("/proc/self/mounts") as f:  # the file system of the longest mount prefix
        mounts = [line.split()[1:3] for line in f]
    real = os.path.realpath(path)
    best = max((m for m in mounts if real == m[0] or real.startswith(m[0].rstrip("/") + "/")),
               key=lambda m: len(m[0]), default=None)
    if best is None or best[1] == "tmpfs":
        return None
    libc = ctypes.CDLL(None, use_errno=True)
    rng = (ctypes.c_uint64 * 2)(0, 0)      # offset 0, length 0: the whole file
    stat = (ctypes.c_uint64 * 5)()        # cache, dirty, writeback, evicted, recently evicted
    fd = os.open(path, os.O_RDONLY)
    try:
        rc = libc.syscall(451, fd, ctypes.byref(rng), ctypes.byref(stat), 0)
    finally:
        os.close(fd)
    return int(stat[1] + stat[2]) if rc == 0 else None


def damage_row_groups(path, keep, data_pages_only=False):
    """Overwrites the pages of every row group of a Parquet file not in
    `keep` with 0xAB, so that reading one fails: a filtered read that
    succeeds proves those row groups were skipped. Bloom filters, written
    apart, stay readable; with data_pages_only, so do the page headers and
    dictionary pages (what dictionary pruning reads), only the data pages'
    bodies being overwritten."""
    import sys
    import pyarrow.parquet as pq
    sys.path.insert(0, str(REPO / "tests" / "py"))
    from parquet_encoding_vectors import read_struct  # a minimal Thrift compact reader

    meta = pq.ParquetFile(path).metadata
    data = bytearray(Path(path).read_bytes())
    for g in range(meta.num_row_groups):
        if g in keep:
            continue
        for c in range(meta.num_columns):
            chunk = meta.row_group(g).column(c)
            pos = chunk.dictionary_page_offset or chunk.data_page_offset
            end = pos + chunk.total_compressed_size
            if not data_pages_only:
                data[pos:end] = b"\xab" * (end - pos)
                continue
            while pos < end:
                header, body = read_struct(data, pos)
                pos = body + header[3]  # PageHeader.compressed_page_size
                if header[1] in (0, 3):  # DATA_PAGE, DATA_PAGE_V2
                    data[body:pos] = b"\xab" * (pos - body)
    Path(path).write_bytes(bytes(data))
