"""The Python package over cql:// (a real Cassandra 5.0 node, as in
tests/py/test_cql.py): sluice.read into pandas with the values the
cassandra-driver reads, projection, unordered scans, sluice.write of a pandas
DataFrame and of a pyarrow table into a table, and errors as sluice.Error
subclasses without the password."""
import sys
from pathlib import Path

import pytest

import sluice

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "py"))
from cassandra_node import CassandraNode, cassandra_available  # noqa: E402

ROWS = 3000


@pytest.fixture(scope="module")
def node():
    reason = cassandra_available()
    if reason:
        pytest.skip(reason)
    n = CassandraNode().start()
    try:
        s = n.session()
        s.execute("CREATE KEYSPACE pkg WITH replication = "
                  "{'class': 'SimpleStrategy', 'replication_factor': 1}")
        s.execute("CREATE TABLE pkg.m (k int, c int, v double, s text, PRIMARY KEY (k, c))")
        ins = s.prepare("INSERT INTO pkg.m (k, c, v, s) VALUES (?, ?, ?, ?)")
        from cassandra.concurrent import execute_concurrent_with_args

        execute_concurrent_with_args(
            s, ins, [(i % 50, i, i / 8, None if i % 5 == 0 else f"s{i}") for i in range(ROWS)],
            concurrency=64, raise_on_first_error=True)
        yield n
    finally:
        n.stop()


def url(n, password=None):
    return f"cql://{n.username}:{password or n.password}@{n.host}:{n.port}/pkg.m"


@pytest.mark.parametrize("compression", [None, "lz4"])
def test_read_to_pandas_matches_driver(node, compression):
    options = {"compression": compression} if compression else {}
    df = sluice.read(url(node), **options).to_pandas()
    result = node.session().execute("SELECT * FROM pkg.m")
    want = sorted((r.k, r.c, r.v, r.s) for r in result)
    assert list(df.columns) == result.column_names  # Cassandra's order: keys, then by name
    got = sorted((int(k), int(c), float(v), None if s is None or s != s else s)
                 for k, c, v, s in df[["k", "c", "v", "s"]].itertuples(index=False))
    assert got == want


def test_projection_and_unordered(node):
    t = sluice.read(url(node), columns=["s", "c"], ordered=False, batch_rows=128)
    assert t.schema.names == ["s", "c"]
    assert t.num_rows == ROWS
    assert sorted(t.to_pydict()["c"]) == list(range(ROWS))


def test_errors(node):
    with pytest.raises(sluice.Error) as e:
        sluice.read(url(node, password="not-it"))
    assert "authentication error" in str(e.value)
    assert "not-it" not in str(e.value)
    with pytest.raises(sluice.Error, match="no table"):
        sluice.read(url(node).replace("pkg.m", "pkg.nothing"))


def test_write_pandas_and_pyarrow(node):
    import pandas as pd

    s = node.session()
    s.execute("CREATE TABLE IF NOT EXISTS pkg.w (k int, c int, v double, s text, "
              "PRIMARY KEY (k, c))")
    target = url(node).replace("/pkg.m", "/pkg.w")
    df = pd.DataFrame({"k": [1, 1, 2], "c": [1, 2, 3], "v": [0.5, None, -1.0],
                       "s": ["a", None, "c"]})
    sluice.write(df, target)  # int64 columns into int, NaN into an unset cell
    pa = pytest.importorskip("pyarrow")
    sluice.write(pa.table({"k": pa.array([3], pa.int32()), "c": pa.array([4], pa.int32()),
                           "v": [2.5], "s": ["d"]}), target, compression="lz4")
    got = sorted((r.k, r.c, r.v, r.s) for r in s.execute("SELECT * FROM pkg.w"))
    assert got == [(1, 1, 0.5, "a"), (1, 2, None, None), (2, 3, -1.0, "c"), (3, 4, 2.5, "d")]
    with pytest.raises(sluice.Error) as e:
        sluice.write(pd.DataFrame({"k": [1], "c": [2**40]}), target)
    assert "out of the range" in str(e.value) and f":{node.password}@" not in str(e.value)


def test_write_a_row_of_static_values_only(node):
    """A row whose clustering column is null (as sluice reads a partition
    that holds static values only) is written as the partition's static
    values, without a clustering row."""
    pa = pytest.importorskip("pyarrow")
    s = node.session()
    s.execute("CREATE TABLE IF NOT EXISTS pkg.st (k int, c int, s text static, v double, "
              "PRIMARY KEY (k, c))")
    target = url(node).replace("/pkg.m", "/pkg.st")
    i32 = lambda xs: pa.array(xs, pa.int32())  # noqa: E731
    sluice.write(pa.table({"k": i32([1, 1, 2, 3]), "c": i32([1, 2, None, 4]),
                           "s": ["a", "a", "b", None], "v": [0.5, 1.5, None, 2.5]}), target)
    got = sorted(((r.k, r.c, r.s, r.v) for r in s.execute("SELECT * FROM pkg.st")),
                 key=lambda r: r[0])
    assert got == [(1, 1, "a", 0.5), (1, 2, "a", 1.5), (2, None, "b", None), (3, 4, None, 2.5)]
    assert s.execute("SELECT COUNT(*) FROM pkg.st WHERE k = 2").one()[0] == 1
    back = sluice.read(target).to_pydict()  # what sluice reads, it writes the same
    assert sorted(zip(back["k"], back["c"], back["s"]), key=lambda r: r[0]) == \
        [(1, 1, "a"), (1, 2, "a"), (2, None, "b"), (3, 4, None)]
    with pytest.raises(sluice.Error) as e:
        sluice.write(pa.table({"k": i32([5]), "c": i32([None]), "s": ["x"], "v": [1.0]}), target)
    assert "row 1, column 'v'" in str(e.value)


def test_tls_with_the_test_ca(node):
    # The node asks TLS clients for a certificate of its CA (require_client_auth).
    cert = {"tls_cert": str(node.client_cert), "tls_key": str(node.client_key)}
    t = sluice.read(url(node), tls=True, ca_bundle=node.ca_file, columns=["c"], **cert)
    assert sorted(t.to_pydict()["c"]) == list(range(ROWS))
    with pytest.raises(sluice.Error) as e:  # the system's CAs do not know it
        sluice.read(url(node), tls=True, **cert)
    assert "certificate" in str(e.value)
    assert sluice.read(url(node), tls=True, insecure=True, columns=["c"],
                       **cert).num_rows == ROWS
    with pytest.raises(sluice.Error) as e:  # no client certificate: the node refuses
        sluice.read(url(node), tls=True, ca_bundle=node.ca_file)
    assert "client certificate" in str(e.value), str(e.value)


def test_write_creates_the_table(node):
    t = {"id": [1, 2, 3], "name": ["a", "b", None]}
    pa = pytest.importorskip("pyarrow")
    target = f"cql://{node.username}:{node.password}@{node.host}:{node.port}/pkg.made"
    sluice.write(pa.table({"id": pa.array(t["id"], pa.int32()), "name": t["name"]}), target,
                 create=True, partition_key=["id"])
    s = node.session()
    types = {r.column_name: (r.kind, r.type) for r in s.execute(
        "SELECT column_name, kind, type FROM system_schema.columns "
        "WHERE keyspace_name = 'pkg' AND table_name = 'made'")}
    assert types == {"id": ("partition_key", "int"), "name": ("regular", "text")}
    assert sorted((r.id, r.name) for r in s.execute("SELECT * FROM pkg.made")) == \
        [(1, "a"), (2, "b"), (3, None)]
