"""A Cassandra node killed (SIGKILL, a crash) and started again on the same
data and port while sluice scans and while it loads a table: the scan and the
load wait for it (a restart takes 15 to 40 s; sluice tries again for up to
60 s since the node's last answer) and neither loses nor repeats a row.

The scan goes through the fault proxy, which holds its pages' answers until
the node is killed (else the whole table is read before), and closes the
connections the node refuses while it is down. A node of its own, not the
session's: the other tests' driver sessions would meet the node down."""
from __future__ import annotations

import io
import subprocess
import threading
import time

import pyarrow as pa
import pytest
from cql_fault_proxy import READ_TIMEOUT, FaultProxy

KS = "sluice_restart"
ROWS = 30_000


@pytest.fixture(scope="module")
def node():
    from cassandra_node import CassandraNode, cassandra_available

    reason = cassandra_available()
    if reason:
        pytest.skip(reason)
    n = CassandraNode()
    n.start()
    try:
        yield n
    finally:
        n.stop()


def url(node, table: str) -> str:
    return f"cql://{node.username}:{node.password}@{node.host}:{node.port}/{KS}.{table}"


def drain(stream, into: list) -> threading.Thread:
    def run():
        into.append(stream.read())
    t = threading.Thread(target=run, daemon=True)
    t.start()
    return t


def test_a_scan_and_a_load_wait_for_a_restarted_node(sluice, node, tmp_path):
    from cassandra.concurrent import execute_concurrent_with_args

    session = node.session()
    session.execute(f"CREATE KEYSPACE IF NOT EXISTS {KS} WITH replication = "
                    "{'class': 'SimpleStrategy', 'replication_factor': 1}")
    session.execute(f"CREATE TABLE {KS}.src (p int, c int, v text, PRIMARY KEY (p, c))")
    session.execute(f"CREATE TABLE {KS}.dst (p int, c int, v text, PRIMARY KEY (p, c))")
    insert = session.prepare(f"INSERT INTO {KS}.src (p, c, v) VALUES (?, ?, ?)")
    want = sorted((i % 300, i, f"value {i:06d}") for i in range(ROWS))
    execute_concurrent_with_args(session, insert, want, concurrency=100)

    # The scan starts, through a proxy that then holds the answers to its
    # pages while the node is killed: it goes on once they are released,
    # meets the node down (the proxy closes what the node refuses) and waits.
    proxy = FaultProxy(node, READ_TIMEOUT, every=0, hold_after=20)
    scan = subprocess.Popen([sluice.binary, "cat", proxy.url(f"{KS}.src"), "-t", "arrows",
                             "-O", "splits=4,page_rows=100"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    out, err = [], []
    readers = [drain(scan.stdout, out), drain(scan.stderr, err)]
    assert proxy.holding.wait(timeout=60)
    # A load stalls the same way on its input, a pipe fed a batch at a time.
    src = tmp_path / "rows.arrows"
    table = pa.table({"p": pa.array([r[0] for r in want], pa.int32()),
                      "c": pa.array([r[1] for r in want], pa.int32()),
                      "v": [r[2] for r in want]})
    with pa.ipc.new_stream(src, table.schema) as w:
        for batch in table.to_batches(max_chunksize=1000):
            w.write_batch(batch)
    data = src.read_bytes()
    load = subprocess.Popen([sluice.binary, "convert", "-", url(node, "dst"), "-f", "arrows"],
                            stdin=subprocess.PIPE, stderr=subprocess.PIPE)
    half = len(data) // 2
    load.stdin.write(data[:half])
    load.stdin.flush()
    time.sleep(1)

    node.kill()
    proxy.release()
    readers.append(drain(load.stderr, err))
    load.stdin.write(data[half:])  # sent while the node is down
    load.stdin.close()
    t0 = time.monotonic()
    node.restart()
    down = time.monotonic() - t0
    try:
        assert scan.wait(timeout=90) == 0 and load.wait(timeout=90) == 0, (down, err)
    finally:
        proxy.close()
    for t in readers:
        t.join(timeout=10)
    got = pa.ipc.open_stream(io.BytesIO(out[0])).read_all()
    assert sorted(zip(*(got.column(n).to_pylist() for n in ("p", "c", "v")))) == want
    session = node.session()
    loaded = sorted((r.p, r.c, r.v) for r in session.execute(f"SELECT p, c, v FROM {KS}.dst"))
    assert loaded == want
