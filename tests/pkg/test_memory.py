"""Memory held and released: 1,000 reads of a small file (each also exported
to pyarrow and pandas) do not grow the process (RSS) or Python's traced
allocations beyond a small bound; an interrupted scan stops and frees."""
import gc
import os
import signal
import threading
import tracemalloc
from pathlib import Path

import pyarrow as pa
import pyarrow.csv as pacsv
import pytest

import sluice
from pkg_helpers import stalled_stream


def rss_bytes():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


SAMPLE = Path(__file__).resolve().parents[2] / "scripts" / "sample" / "sample.arrow"


def read_round(path):
    t = sluice.read(path)
    assert pa.table(t).num_rows == t.num_rows
    list(sluice.scan(path, ordered=False))
    sluice.schema(path)
    return t


def pandas_round(path):
    df = sluice.read(path).to_pandas()
    assert len(df) > 0


def grows(fn, path, rounds, traced):
    for _ in range(30):  # warm up caches, imports, allocator arenas
        fn(path)
    gc.collect()
    if traced:
        tracemalloc.start()
    rss0 = rss_bytes()
    traced0 = tracemalloc.get_traced_memory()[0] if traced else 0
    for _ in range(rounds):
        fn(path)
    gc.collect()
    traced1 = tracemalloc.get_traced_memory()[0] if traced else 0
    rss1 = rss_bytes()
    if traced:
        tracemalloc.stop()
    return rss1 - rss0, traced1 - traced0


# One round holds hundreds of KB of decoded data and Python objects: a leak
# of one table (or of its exports) per round would exceed these bounds many
# times over.
@pytest.mark.skipif(not os.path.exists("/proc/self/statm"), reason="needs /proc")
def test_thousand_reads_do_not_grow():
    rss, traced = grows(read_round, SAMPLE, 1000, traced=True)
    assert traced < 256 << 10, "traced Python memory grew by %d bytes" % traced
    assert rss < 16 << 20, "RSS grew by %d bytes" % rss


@pytest.mark.skipif(not os.path.exists("/proc/self/statm"), reason="needs /proc")
def test_thousand_to_pandas_do_not_grow():
    rss, _ = grows(pandas_round, SAMPLE, 1000, traced=False)
    assert rss < 16 << 20, "RSS grew by %d bytes" % rss


def test_interrupted_scan_stops_and_closes(data_dir):
    n = 300_000
    path = data_dir / "interrupt.csv"
    pacsv.write_csv(pa.table({"a": pa.array(range(n), pa.int64())}), str(path))
    seen = 0
    with pytest.raises(KeyboardInterrupt):
        with sluice.scan(path, batch_rows=1000, threads=1) as s:
            for batch in s:
                seen += 1
                if seen == 1:
                    # From another thread, as a terminal's Ctrl-C arrives.
                    t = threading.Thread(target=os.kill, args=(os.getpid(), signal.SIGINT))
                    t.start()
                    t.join()
    assert 1 <= seen < n // 1000
    # Ended early: not a normal end (StopIteration) but an error saying why.
    with pytest.raises(ValueError, match="closed|Ctrl-C"):
        next(s)


def test_ctrl_c_while_waiting_for_a_stalled_source(tmp_path):
    # A producer that writes one batch into a pipe and then stalls: the scan
    # waits inside the library for the next batch, and Ctrl-C must still get
    # through (the wait is sliced), before the producer goes on.
    fifo = tmp_path / "stalled.arrows"
    table = pa.table({"a": pa.array(range(1000), pa.int64())})
    with stalled_stream(fifo, table) as release:
        s = sluice.scan(fifo, format="arrows")
        assert next(s).num_rows == 1000
        killer = threading.Timer(0.2, os.kill, args=(os.getpid(), signal.SIGINT))
        killer.start()
        with pytest.raises(KeyboardInterrupt):
            next(s)
        killer.join()
        assert not release.is_set()  # the producer was still stalled
        with pytest.raises(ValueError, match="stopped by Ctrl-C"):
            next(s)


TRICKLE = ("import sys, time\nsys.stdout.write('a,b\\n'); sys.stdout.flush()\n"
           "for i in range(30):\n    time.sleep(0.5); sys.stdout.write('1,2\\n'); sys.stdout.flush()\n")


def open_fds():
    return set(os.listdir("/proc/self/fd"))


@pytest.mark.skipif(not os.path.exists("/proc/self/fd"), reason="needs /proc")
@pytest.mark.parametrize("how", ["read", "scan"])
def test_ctrl_c_while_opening_a_trickling_pipe(how):
    """A pipe that sends a row every half second keeps the open waiting (the
    CSV schema sample wants more bytes): Ctrl-C stopped it only when the
    writer ended, 15 s later. Now within a slice of it, with the open's
    threads and descriptors gone."""
    import subprocess
    import sys
    import time
    writer = subprocess.Popen([sys.executable, "-c", TRICKLE], stdout=subprocess.PIPE)
    try:
        fds, threads = open_fds(), threading.active_count()
        killer = threading.Timer(0.5, os.kill, args=(os.getpid(), signal.SIGINT))
        start = time.monotonic()
        killer.start()
        with pytest.raises(KeyboardInterrupt):
            getattr(sluice, how)(writer.stdout, format="csv", schema="a:int64,b:int64")
        took = time.monotonic() - start
        killer.join()
        assert took < 1.5, "KeyboardInterrupt came %.1f s after the start (Ctrl-C at 0.5 s)" % took
        assert writer.poll() is None  # the source had not ended
        assert open_fds() <= fds and threading.active_count() == threads
    finally:
        writer.kill()
        writer.wait()
        writer.stdout.close()


@pytest.mark.skipif(not os.path.exists("/proc/self/fd"), reason="needs /proc")
def test_ctrl_c_while_opening_several_objects_one_a_trickling_fifo(tmp_path):
    """A list of locations (a file, then a FIFO that sends a row every half
    second): Ctrl-C stopped only one object's open; the FIFO, opened by the
    files reader (on another thread maybe), waited for its writer to end."""
    import subprocess
    import sys
    import time
    first = tmp_path / "first.csv"
    first.write_text("a,b\n5,6\n")
    fifo = tmp_path / "second.csv"
    os.mkfifo(fifo)
    code = "import sys\nsys.stdout = open(%r, 'w')\n" % str(fifo) + TRICKLE
    writer = subprocess.Popen([sys.executable, "-c", code])
    try:
        fds, threads = open_fds(), threading.active_count()
        killer = threading.Timer(0.5, os.kill, args=(os.getpid(), signal.SIGINT))
        start = time.monotonic()
        killer.start()
        with pytest.raises(KeyboardInterrupt):
            sluice.read([str(first), str(fifo)], format="csv", schema="a:int64,b:int64")
        took = time.monotonic() - start
        killer.join()
        assert took < 1.5, "KeyboardInterrupt came %.1f s after the start (Ctrl-C at 0.5 s)" % took
        assert writer.poll() is None  # the source had not ended
        assert open_fds() <= fds and threading.active_count() == threads
    finally:
        writer.kill()
        writer.wait()


def test_ctrl_c_while_opening_a_trickling_http_body():
    """The same for an http:// object whose body trickles (the whole small
    object is fetched as the open's first request)."""
    import http.server
    import time
    body = b"a,b\n" + b"1,2\n" * 30

    class Trickle(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):
            pass

        def do_HEAD(self):
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()

        def do_GET(self):
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            try:
                for i in range(0, len(body), 4):
                    self.wfile.write(body[i:i + 4])
                    self.wfile.flush()
                    time.sleep(0.5)
            except OSError:
                pass  # the client gave up

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Trickle)
    serving = threading.Thread(target=server.serve_forever, daemon=True)
    serving.start()
    try:
        killer = threading.Timer(0.5, os.kill, args=(os.getpid(), signal.SIGINT))
        start = time.monotonic()
        killer.start()
        with pytest.raises(KeyboardInterrupt):
            sluice.read("http://127.0.0.1:%d/t.csv" % server.server_address[1])
        took = time.monotonic() - start
        killer.join()
        assert took < 2.0, "KeyboardInterrupt came %.1f s after the start (Ctrl-C at 0.5 s)" % took
    finally:
        server.shutdown()
        server.server_close()


class SilentServer:
    """A loopback server that accepts connections and never answers (a
    stalled server: the request waits for the response's headers)."""

    def __init__(self):
        import socket
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.port = self.sock.getsockname()[1]
        self.accepted = []
        self.thread = threading.Thread(target=self._accept, daemon=True)
        self.thread.start()

    def _accept(self):
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.accepted.append(conn)

    def close(self):
        import socket
        try:
            self.sock.shutdown(socket.SHUT_RDWR)  # (wakes accept)
        except OSError:
            pass
        self.sock.close()
        self.thread.join()
        for conn in self.accepted:
            conn.close()


# The open's timeout: a Ctrl-C that the hook did not stop came only then.
STALL_TIMEOUT_S = 30


def _ctrl_c_at(seconds, call):
    """Runs call() with a SIGINT sent after `seconds`: the seconds until the
    KeyboardInterrupt it must raise."""
    import time
    killer = threading.Timer(seconds, os.kill, args=(os.getpid(), signal.SIGINT))
    start = time.monotonic()
    killer.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            call()
    finally:
        killer.cancel()
        killer.join()
    return time.monotonic() - start


@pytest.mark.parametrize("name", ["t.arrows", "t.parquet"])
def test_ctrl_c_while_a_server_never_answers(name):
    """An http:// object whose server accepts the connection and never sends
    the response's headers: Ctrl-C stops the open, well before the timeout.
    A stream format (arrows) is opened by a download on its own thread, and
    the opening thread waited for its headers without asking the hook: a
    Ctrl-C came only with the timeout."""
    server = SilentServer()
    try:
        took = _ctrl_c_at(0.5, lambda: sluice.read("http://127.0.0.1:%d/%s" % (server.port, name),
                                                   timeout=STALL_TIMEOUT_S))
        assert took < STALL_TIMEOUT_S / 2, "KeyboardInterrupt only with the timeout (%.1f s)" % took
        assert server.accepted  # the request was sent, and waited for an answer
    finally:
        server.close()


@pytest.mark.parametrize("location", ["s3://bucket/logs/", "s3://bucket/**/*.parquet"])
def test_ctrl_c_while_an_s3_listing_waits(location):
    """Listing an s3:// prefix or glob (ListObjectsV2) from a server that
    never answers: Ctrl-C stops it, well before the timeout (the listing
    did not ask the hook)."""
    server = SilentServer()
    try:
        opts = {"key": "k", "secret": "s", "region": "us-east-1",
                "endpoint_url": "http://127.0.0.1:%d" % server.port}
        took = _ctrl_c_at(0.5, lambda: sluice.read(location, storage_options=opts,
                                                   timeout=STALL_TIMEOUT_S))
        assert took < STALL_TIMEOUT_S / 2, "KeyboardInterrupt only with the timeout (%.1f s)" % took
        assert server.accepted
    finally:
        server.close()


def test_scanner_shared_by_threads_and_closed_from_another(tmp_path):
    n = 200_000
    path = tmp_path / "threads.csv"
    pacsv.write_csv(pa.table({"a": pa.array(range(n), pa.int64())}), str(path))
    s = sluice.scan(path, batch_rows=1000, ordered=False)
    seen = []

    def consume():
        for b in s:
            seen.append(b.num_rows)

    workers = [threading.Thread(target=consume) for _ in range(4)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    assert sum(seen) == n

    # A thread waiting inside next() on a stalled source while another closes
    # the scanner: the waiter gets a ValueError saying so (StopIteration would
    # pass for the end of the rows).
    fifo = tmp_path / "stall.arrows"
    table = pa.table({"a": pa.array(range(10), pa.int64())})
    with stalled_stream(fifo, table):
        s = sluice.scan(fifo, format="arrows")
        next(s)
        outcome = []

        def waiter():
            try:
                next(s)
                outcome.append("batch")
            except ValueError as e:
                outcome.append("stopped" if "the scan was closed" in str(e) else str(e))

        w = threading.Thread(target=waiter)
        w.start()
        threading.Timer(0.2, s.close).start()
        w.join(30)
        assert outcome == ["stopped"]


def _rss_anon():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("RssAnon:"):
                return int(line.split()[1]) * 1024
    pytest.skip("no RssAnon in /proc/self/status")


def test_parquet_strings_hold_about_their_bytes(tmp_path):
    """A string column read from Parquet holds about its bytes of memory: its
    values buffer is reserved from the chunk's uncompressed size (rounded to
    a power of two) and the unused part of it was zeroed, so the table held
    twice its bytes (116 MiB for 61 MiB of buffers)."""
    import pyarrow.parquet as pq
    path = tmp_path / "s.parquet"
    n = 1_500_000
    pq.write_table(pa.table({"s": [f"user-{i % 1000}-{i}" for i in range(n)]}), path,
                   row_group_size=500_000)
    gc.collect()
    before = _rss_anon()
    t = sluice.read(path)
    held = _rss_anon() - before
    arrow = pa.table(t)
    size = sum(b.size for c in arrow.columns for ch in c.chunks for b in ch.buffers()
               if b is not None)
    assert size > 20 << 20 and held < 1.35 * size, (held >> 20, size >> 20)


@pytest.mark.parametrize("kind", ["string", "struct", "list"])
def test_dictionary_deltas_share_one_growing_dictionary(tmp_path, kind):
    """An Arrow IPC stream whose dictionary grows by one value per batch
    (pyarrow's emit_dictionary_deltas): the batches sluice reads view one
    dictionary that grows in place, moved to a bigger block now and then,
    not each a copy of every value before it (3,000 batches of strings held
    3,000 copies, 45 MiB for a dictionary of 40 KiB; a dictionary of structs
    or lists grows so in every child too). Values as pyarrow reads them,
    batch by batch."""
    import pyarrow.ipc as ipc
    n = 3000
    path = tmp_path / "deltas.arrows"
    if kind == "string":
        values = pa.array([None if i % 100 == 7 else f"value-{i}" for i in range(n)], pa.string())
    elif kind == "struct":
        values = pa.array([None if i % 100 == 7 else {"x": i, "y": f"value-{i}"}
                           for i in range(n)], pa.struct([("x", pa.int32()), ("y", pa.string())]))
    else:
        values = pa.array([None if i % 100 == 7 else [i, None, i][: i % 4]
                           for i in range(n)], pa.list_(pa.int64()))
    schema = pa.schema([("d", pa.dictionary(pa.int32(), values.type))])
    options = ipc.IpcWriteOptions(emit_dictionary_deltas=True)
    with pa.OSFile(str(path), "wb") as sink, ipc.new_stream(sink, schema, options=options) as w:
        for i in range(1, n + 1):
            idx = pa.array([i - 1, None, i // 2], pa.int32())
            w.write_batch(pa.record_batch([pa.DictionaryArray.from_arrays(idx, values.slice(0, i))],
                                          schema=schema))
    want = []
    with pa.OSFile(str(path), "rb") as fh:
        reader = ipc.open_stream(fh)
        for b in reader:
            want.extend(b.column(0).to_pylist())
        assert reader.stats.num_dictionary_deltas == n - 1
    column = pa.table(sluice.read(path)).column("d")
    assert column.to_pylist() == want
    assert column.num_chunks == n
    # Distinct blocks the bytes of the dictionary's strings (or a list's
    # int64 values) lie in, and the most of each block any batch views.
    blocks = {}
    for chunk in column.chunks:
        d = chunk.dictionary
        data = d.buffers()[2] if kind == "string" else \
            d.field("y").buffers()[2] if kind == "struct" else d.values.buffers()[1]
        blocks[data.address] = max(blocks.get(data.address, 0), data.size)
    final = data.size
    assert len(blocks) <= 32, len(blocks)
    assert sum(blocks.values()) <= 4 * final, (sum(blocks.values()), final)


def _zoo(seed, rows=200_000):
    import numpy as np
    rng = np.random.default_rng(seed)
    nulls = rng.random(rows) < 0.1
    ints = pa.array(rng.integers(-10**12, 10**12, rows), mask=nulls)
    floats = pa.array(rng.random(rows) * seed, mask=np.roll(nulls, seed))
    words = pa.array([None if m else f"w{seed}-{v}" for m, v in
                      zip(np.roll(nulls, 2 * seed), rng.integers(0, 10**9, rows))])
    flags = pa.array(rng.random(rows) < 0.5, mask=np.roll(nulls, 3))
    return pa.table({"i": ints, "f": floats, "s": words, "b": flags,
                     "st": pa.StructArray.from_arrays([ints, words], ["x", "y"])})


def _write_zoo(tmp_path, fmt, seed):
    import pyarrow.parquet as pq
    t = _zoo(seed)
    path = tmp_path / f"zoo{seed}.{fmt}"
    if fmt == "parquet-fixed":  # all fixed width: gathered into one column per field
        t = t.select(["i", "f", "b"]).append_column(
            "ts", t.column("i").cast(pa.timestamp("us")))
        path = tmp_path / f"zoo{seed}.parquet"
    if fmt.startswith("parquet"):
        pq.write_table(t, path, row_group_size=50_000)
        return path, pq.read_table(path)
    if fmt == "arrow":  # compressed: decoded into fresh buffers, not mapped
        with pa.ipc.new_file(path, t.schema,
                             options=pa.ipc.IpcWriteOptions(compression="zstd")) as w:
            w.write_table(t, max_chunksize=50_000)
        return path, pa.ipc.open_file(path).read_all()
    t = t.drop_columns(["st"])
    pacsv.write_csv(t, path)
    # sluice reads an empty field as null, strings too
    return path, pacsv.read_csv(path, convert_options=pacsv.ConvertOptions(
        strings_can_be_null=True))


# The module keeps the buffers of dropped tables for the next reads
# (sluice.release_unused): every read after the first decodes into memory
# that holds another file's values and nulls, and must still equal what
# pyarrow reads. Two files alternate so that no buffer is refilled with the
# values it held.
@pytest.mark.parametrize("fmt", ["parquet", "parquet-fixed", "arrow", "csv"])
def test_reads_into_a_dropped_tables_memory_stay_right(tmp_path, fmt):
    sluice.release_unused()
    files = [_write_zoo(tmp_path, fmt, seed) for seed in (1, 2)]
    for _ in range(3):
        for path, expected in files:
            got = pa.table(sluice.read(path))
            assert got.schema.types == expected.schema.types
            assert got.to_pylist() == expected.to_pylist()
            del got
            gc.collect()
    assert sluice.release_unused() > 0
    assert sluice.release_unused() == 0


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_a_forked_child_reads_while_the_parent_kept_reading(tmp_path):
    """A child forked while other threads of the parent read (and so work
    the module's buffer cache) reads on its own: the cache it inherits is
    emptied and its lock made anew (os.register_at_fork), so it cannot
    inherit the lock held. Values as pyarrow reads them."""
    import pyarrow.parquet as pq
    path, want = _write_zoo(tmp_path, "parquet", 5)
    stop = threading.Event()

    def reading():
        while not stop.is_set():
            sluice.read(path)

    threads = [threading.Thread(target=reading) for _ in range(2)]
    for t in threads:
        t.start()
    try:
        for _ in range(5):
            pid = os.fork()
            if pid == 0:  # the child: no pytest from here on
                code = 1
                try:
                    signal.alarm(20)
                    got = pa.table(sluice.read(path))
                    code = 0 if got.to_pylist() == pq.read_table(path).to_pylist() else 3
                finally:
                    os._exit(code)
            _, status = os.waitpid(pid, 0)
            assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, status
    finally:
        stop.set()
        for t in threads:
            t.join()
    assert pa.table(sluice.read(path)).to_pylist() == want.to_pylist()
