"""cql:// over TLS (`-O tls=true` / `-W tls=true`) against the real Cassandra
5.0 node, whose native port also speaks TLS with a certificate signed by a CA
made for the test (tests/py/cassandra_node.py) and asks TLS clients for a
certificate of that CA (`tls_cert=`, `tls_key=`): reading and writing
through TLS give what the driver reads in plain text; the certificate is
checked against the CA (--ca-bundle), and against the system's CAs it is
refused; --insecure skips the check; without a client certificate, or with
one of another CA, the node refuses; a port that does not speak TLS is a
clean error."""
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


def cert(node, extra: str = "tls=true") -> str:
    """The -O / -W value for TLS with the client certificate the node accepts."""
    return f"{extra},tls_cert={node.client_cert},tls_key={node.client_key}"


def rows(out: bytes):
    t = pa.ipc.open_stream(io.BytesIO(out)).read_all()
    return sorted(zip(t.column("k").to_pylist(), t.column("v").to_pylist()))


def test_read_over_tls(sluice, cassandra_node, table):
    out = sluice.run("cat", url(cassandra_node, "tls_rows"), "-t", "arrows", "-O",
                     cert(cassandra_node), "--ca-bundle", cassandra_node.ca_file).stdout
    assert rows(out) == table


def test_write_over_tls(sluice, cassandra_node, table, tmp_path):
    s = cassandra_node.session()
    s.execute(f"CREATE TABLE IF NOT EXISTS {KS}.tls_copy (k int PRIMARY KEY, v text)")
    s.execute(f"TRUNCATE {KS}.tls_copy")
    src = tmp_path / "rows.parquet"
    pq.write_table(pa.table({"k": pa.array([k for k, _ in table], pa.int32()),
                             "v": [v for _, v in table]}), src)
    sluice.run("convert", src, url(cassandra_node, "tls_copy"), "-W", cert(cassandra_node),
               "--ca-bundle", cassandra_node.ca_file)
    assert sorted((r.k, r.v) for r in s.execute(f"SELECT * FROM {KS}.tls_copy")) == table


def test_certificate_checked(sluice, cassandra_node, table):
    # The system's CAs do not know the test CA: refused, with the reason.
    err = sluice.expect_error("cat", url(cassandra_node, "tls_rows"), "-O",
                              cert(cassandra_node)).stderr.decode()
    assert "TLS with 127.0.0.1" in err and "certificate" in err
    # The hint names the Python keywords too (it named only the CLI's flags).
    assert "insecure=True" in err and "ca_bundle=" in err and "--ca-bundle" in err, err
    # --insecure skips the check (and says nothing about it being safe).
    out = sluice.run("cat", url(cassandra_node, "tls_rows"), "-t", "arrows", "-O",
                     cert(cassandra_node), "--insecure").stdout
    assert rows(out) == table


def test_host_name_checked(sluice, cassandra_node, table):
    # The certificate names localhost and 127.0.0.1; "localhost" passes too.
    loc = url(cassandra_node, "tls_rows").replace("@127.0.0.1:", "@localhost:")
    out = sluice.run("cat", loc, "-t", "arrows", "-O", cert(cassandra_node), "--ca-bundle",
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


def test_client_certificate_required(sluice, cassandra_node, table, tmp_path):
    node = cassandra_node
    # Reading and writing without one: the node ends the connection, and the
    # message says why.
    for cmd, opt in (("cat", "-O"), ("convert", "-W")):
        args = [url(node, "tls_rows"), opt, "tls=true", "--ca-bundle", node.ca_file]
        if cmd == "convert":
            src = tmp_path / "one.parquet"
            pq.write_table(pa.table({"k": pa.array([1], pa.int32()), "v": ["x"]}), src)
            args = [src, *args]
        err = sluice.expect_error(cmd, *args).stderr.decode()
        assert "client certificate" in err and "tls_cert" in err, err
    # One signed by a CA the node does not trust: refused as well.
    rogue = f"tls=true,tls_cert={node.rogue_cert},tls_key={node.rogue_key}"
    err = sluice.expect_error("cat", url(node, "tls_rows"), "-O", rogue, "--ca-bundle",
                              node.ca_file).stderr.decode()
    assert "refused the client certificate" in err, err
    # The key in the certificate's file works too (no tls_key).
    both = tmp_path / "both.pem"
    both.write_bytes(node.client_cert.read_bytes() + node.client_key.read_bytes())
    out = sluice.run("cat", url(node, "tls_rows"), "-t", "arrows", "-O",
                     f"tls=true,tls_cert={both}", "--ca-bundle", node.ca_file).stdout
    assert rows(out) == table


def test_client_certificate_files_checked(sluice, cassandra_node, tmp_path):
    node = cassandra_node
    loc = url(node, "tls_rows")
    missing = tmp_path / "missing.pem"
    err = sluice.expect_error("cat", loc, "-O", f"tls=true,tls_cert={missing}").stderr.decode()
    assert f"cannot use the client certificate {missing}" in err, err
    err = sluice.expect_error("cat", loc, "-O", f"tls=true,tls_cert={node.client_cert},"
                              f"tls_key={node.rogue_key}").stderr.decode()
    assert "does not belong to the certificate" in err, err
    err = sluice.expect_error("cat", loc, "-O", f"tls=true,tls_cert={node.client_cert},"
                              f"tls_key={missing}").stderr.decode()
    assert f"cannot use the client key {missing}" in err, err
    err = sluice.expect_error("cat", loc, "-O", f"tls_cert={node.client_cert}").stderr.decode()
    assert "needs tls=true" in err, err
    err = sluice.expect_error("cat", loc, "-O", f"tls=true,tls_key={node.client_key}",
                              "--ca-bundle", node.ca_file).stderr.decode()
    assert "tls_cert names no certificate" in err, err
