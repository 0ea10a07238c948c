"""cql:// over TLS (`-O tls=true` / `-W tls=true`) against the real Cassandra
5.0 node, whose native port also speaks TLS with a certificate signed by a CA
made for the test (tests/py/cassandra_node.py): reading and writing through
TLS give what the driver reads in plain text; the certificate is checked
against the CA (--ca-bundle), and against the system's CAs it is refused;
--insecure skips the check; a port that does not speak TLS is a clean
error."""
from __future__ import annotations

import io
import socket
import threading

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from test_cql import KS, url


@pytest.fixture(scope="module")
def table(cassandra_node):
    s = cassandra_node.session()
    s.execute(f"CREATE KEYSPACE IF NOT EXISTS {KS} WITH replication = "
              "{'class': 'SimpleStrategy', 'replication_factor': 1}")
    s.execute(f"CREATE TABLE IF NOT EXISTS {KS}.tls_rows (k int PRIMARY KEY, v text)")
    s.execute(f"TRUNCATE {KS}.tls_rows")
    ins = s.prepare(f"INSERT INTO {KS}.tls_rows (k, v) VALUES (?, ?)")
    for i in range(500):
        s.execute(ins, (i, f"v{i}" * (i % 7)))
    return sorted((r.k, r.v) for r in s.execute(f"SELECT * FROM {KS}.tls_rows"))


def rows(out: bytes):
    t = pa.ipc.open_stream(io.BytesIO(out)).read_all()
    return sorted(zip(t.column("k").to_pylist(), t.column("v").to_pylist()))


def test_read_over_tls(sluice, cassandra_node, table):
    out = sluice.run("cat", url(cassandra_node, "tls_rows"), "-t", "arrows", "-O", "tls=true",
                     "--ca-bundle", cassandra_node.ca_file).stdout
    assert rows(out) == table


def test_write_over_tls(sluice, cassandra_node, table, tmp_path):
    s = cassandra_node.session()
    s.execute(f"CREATE TABLE IF NOT EXISTS {KS}.tls_copy (k int PRIMARY KEY, v text)")
    s.execute(f"TRUNCATE {KS}.tls_copy")
    src = tmp_path / "rows.parquet"
    pq.write_table(pa.table({"k": pa.array([k for k, _ in table], pa.int32()),
                             "v": [v for _, v in table]}), src)
    sluice.run("convert", src, url(cassandra_node, "tls_copy"), "-W", "tls=true",
               "--ca-bundle", cassandra_node.ca_file)
    assert sorted((r.k, r.v) for r in s.execute(f"SELECT * FROM {KS}.tls_copy")) == table


def test_certificate_checked(sluice, cassandra_node, table):
    # The system's CAs do not know the test CA: refused, with the reason.
    err = sluice.expect_error("cat", url(cassandra_node, "tls_rows"), "-O",
                              "tls=true").stderr.decode()
    assert "TLS with 127.0.0.1" in err and "certificate" in err
    # --insecure skips the check (and says nothing about it being safe).
    out = sluice.run("cat", url(cassandra_node, "tls_rows"), "-t", "arrows", "-O", "tls=true",
                     "--insecure").stdout
    assert rows(out) == table


def test_host_name_checked(sluice, cassandra_node, table):
    # The certificate names localhost and 127.0.0.1; "localhost" passes too.
    loc = url(cassandra_node, "tls_rows").replace("@127.0.0.1:", "@localhost:")
    out = sluice.run("cat", loc, "-t", "arrows", "-O", "tls=true", "--ca-bundle",
                     cassandra_node.ca_file).stdout
    assert rows(out) == table


def test_port_without_tls(sluice, cassandra_node):
    # A listener that answers the handshake with plain bytes, as a non-TLS
    # service would.
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(4)
    port = server.getsockname()[1]

    def answer():
        for _ in range(4):
            try:
                conn, _ = server.accept()
            except OSError:
                return
            conn.recv(4096)
            conn.sendall(b"HTTP/1.1 400 Bad Request\r\n\r\n")
            conn.close()

    threading.Thread(target=answer, daemon=True).start()
    try:
        err = sluice.expect_error("cat", f"cql://u:p@127.0.0.1:{port}/{KS}.tls_rows", "-O",
                                  "tls=true").stderr.decode()
    finally:
        server.close()
    assert "TLS with 127.0.0.1" in err and ":p@" not in err


def test_bad_tls_option(sluice, cassandra_node):
    err = sluice.expect_error("cat", url(cassandra_node, "tls_rows"), "-O",
                              "tls=maybe").stderr.decode()
    assert "tls='maybe': expected true or false" in err
