"""cql:// with LZ4 frame compression (`-O compression=lz4` when reading,
`--compression lz4` when writing) against the real Cassandra 5.0 node,
through a proxy that counts the frames each way: the rows are those the
driver reads, the node's answers (and the writer's requests) travel
compressed, and in fewer bytes than without compression. And crafted frames
from a fake node (lengths out of range, LZ4 data that does not decode to the
length it declares, compression nobody asked for): errors, never a crash."""
from __future__ import annotations

import io
import socket
import struct
import threading

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from cql_fault_proxy import FaultProxy
from test_cql import KS, node  # noqa: F401 - the keyspace fixture

ROWS = 3000


def lz4_block(data: bytes) -> bytes:
    """One LZ4 block of literals only (a valid block, no match): the token's
    high nibble is the literal count (under 15 here)."""
    assert len(data) < 15
    return bytes([len(data) << 4]) + data


@pytest.fixture(scope="module")
def table(node):  # noqa: F811
    s = node.session()
    s.execute(f"CREATE TABLE IF NOT EXISTS {KS}.lz4_rows (k int PRIMARY KEY, v text, n bigint)")
    s.execute(f"TRUNCATE {KS}.lz4_rows")
    ins = s.prepare(f"INSERT INTO {KS}.lz4_rows (k, v, n) VALUES (?, ?, ?)")
    for i in range(ROWS):  # text that compresses, and some that does not
        s.execute(ins, (i, "row of a table " * (i % 9) + format(i * 2654435761 % 2**32, "x"),
                        None if i % 5 == 0 else i * i))
    return sorted((r.k, r.v, r.n) for r in s.execute(f"SELECT * FROM {KS}.lz4_rows"))


def rows(t: pa.Table):
    return sorted(zip(t.column("k").to_pylist(), t.column("v").to_pylist(),
                      t.column("n").to_pylist()))


def cat(sluice, proxy, *args) -> pa.Table:
    out = sluice.run("cat", proxy.url(f"{KS}.lz4_rows"), "-t", "arrows", *args).stdout
    return pa.ipc.open_stream(io.BytesIO(out)).read_all()


def test_read_compressed(sluice, node, table):  # noqa: F811
    plain, packed = FaultProxy(node, 0, every=0), FaultProxy(node, 0, every=0)
    try:
        assert rows(cat(sluice, plain)) == table
        assert rows(cat(sluice, packed, "-O", "compression=lz4,splits=3")) == table
    finally:
        plain.close()
        packed.close()
    assert plain.traffic["down"][1] == 0 and plain.traffic["up"][1] == 0
    frames, compressed, size = packed.traffic["down"]
    # Every answer after STARTUP's comes compressed (the node compresses all).
    assert compressed >= frames - 1 and compressed > 3, packed.traffic
    assert size < plain.traffic["down"][2] / 2, (packed.traffic, plain.traffic)


def test_write_compressed(sluice, node, table, tmp_path):  # noqa: F811
    # Ten partitions: the writer sends their rows in batches, which are
    # large enough to compress (single-row requests under 512 bytes are not).
    s = node.session()
    s.execute(f"CREATE TABLE IF NOT EXISTS {KS}.lz4_copy (p int, k int, v text, n bigint, "
              "PRIMARY KEY (p, k))")
    s.execute(f"TRUNCATE {KS}.lz4_copy")
    src = tmp_path / "rows.parquet"
    by_partition = sorted(table, key=lambda r: (r[0] % 10, r[0]))  # batched: rows of one in a row
    pq.write_table(pa.table({"p": pa.array([k % 10 for k, _, _ in by_partition], pa.int32()),
                             "k": pa.array([k for k, _, _ in by_partition], pa.int32()),
                             "v": [v for _, v, _ in by_partition],
                             "n": pa.array([n for _, _, n in by_partition], pa.int64())}), src)
    proxy = FaultProxy(node, 0, every=0)
    try:
        sluice.run("convert", src, proxy.url(f"{KS}.lz4_copy"), "--compression", "lz4")
    finally:
        proxy.close()
    got = sorted((r.k, r.v, r.n) for r in s.execute(f"SELECT * FROM {KS}.lz4_copy"))
    assert got == table
    assert proxy.traffic["up"][1] > 0, proxy.traffic


def test_bad_compression(sluice, node, table, tmp_path):  # noqa: F811
    one = tmp_path / "one.csv"
    one.write_text("k\n1\n")
    loc = FaultProxy(node, 0, every=0)
    try:
        err = sluice.expect_error("cat", loc.url(f"{KS}.lz4_rows"), "-O",
                                  "compression=snappy").stderr.decode()
        assert "compression 'snappy': expected lz4 or none" in err, err
        err = sluice.expect_error("convert", one, loc.url(f"{KS}.lz4_rows"), "--compression",
                                  "zstd").stderr.decode()
        assert "compression 'zstd': expected lz4 or none" in err, err
    finally:
        loc.close()


def crafted_node(answer: bytes):
    """A listener that answers the first frame it gets with `answer` (a
    whole frame), as a broken or hostile node would; returns (port, stop)."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(4)

    def serve():
        while True:
            try:
                conn, _ = server.accept()
            except OSError:
                return
            with conn:
                conn.recv(65536)
                conn.sendall(answer)
                conn.recv(65536)  # until the client hangs up

    threading.Thread(target=serve, daemon=True).start()
    return server.getsockname()[1], server.close


@pytest.mark.parametrize("body, want", [
    (b"\x00\x00\x00", "a compressed frame of 3 bytes, too short for its inflated length"),
    (struct.pack(">I", 1 << 30) + b"\x00", "declares 1073741824 bytes inflated"),
    (struct.pack(">I", 100) + b"\xff\xff\xff\xff", "does not inflate to the 100 bytes"),
    (struct.pack(">I", 4) + lz4_block(b"abc"), "does not inflate to the 4 bytes"),
])
def test_bad_compressed_frames(sluice, body, want):
    """Declared lengths out of range, LZ4 data that does not decode, or that
    decodes to another length than declared: an error, never a crash."""
    frame = struct.pack(">BBhBi", 0x84, 0x01, 0, 0x02, len(body)) + body  # READY, compressed
    port, stop = crafted_node(frame)
    try:
        err = sluice.expect_error("cat", f"cql://127.0.0.1:{port}/ks.t", "-O",
                                  "compression=lz4").stderr.decode()
    finally:
        stop()
    assert want in err, err


def test_compressed_frame_not_asked_for(sluice):
    body = struct.pack(">I", 0)
    frame = struct.pack(">BBhBi", 0x84, 0x01, 0, 0x02, len(body)) + body
    port, stop = crafted_node(frame)
    try:
        err = sluice.expect_error("cat", f"cql://127.0.0.1:{port}/ks.t").stderr.decode()
    finally:
        stop()
    assert "sent a compressed frame without being asked" in err, err
