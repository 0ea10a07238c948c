"""Smoke test of the Cassandra test node (tests/py/cassandra_node.py, the
`cassandra_node` fixture in conftest.py) with cassandra-driver alone: the
cql:// tests rely on it taking writes and serving reads behind a password."""

from __future__ import annotations

import datetime
import uuid

import pytest


def test_node_writes_and_reads_back(cassandra_node):
    from cassandra.auth import PlainTextAuthProvider
    from cassandra.cluster import Cluster, NoHostAvailable

    session = cassandra_node.session()
    ks = "smoke_" + uuid.uuid4().hex[:8]
    session.execute(f"CREATE KEYSPACE {ks} WITH replication = "
                    "{'class': 'SimpleStrategy', 'replication_factor': 1}")
    session.set_keyspace(ks)
    session.execute("CREATE TABLE t (id int PRIMARY KEY, name text, score double, "
                    "at timestamp, tags list<text>)")
    insert = session.prepare("INSERT INTO t (id, name, score, at, tags) VALUES (?, ?, ?, ?, ?)")
    base = datetime.datetime(2024, 1, 2, 3, 4, 5, 678000)
    rows = {i: (f"row {i}", i * 0.5 if i % 7 else None, base + datetime.timedelta(seconds=i),
                [f"t{j}" for j in range(i % 3)] or None)
            for i in range(500)}
    for i, values in rows.items():
        session.execute(insert, (i, *values))

    got = {r.id: (r.name, r.score, r.at, r.tags)
           for r in session.execute("SELECT id, name, score, at, tags FROM t")}
    assert got == rows
    assert session.execute("SELECT count(*) FROM t").one()[0] == len(rows)

    # Authentication is really on: a wrong password is refused.
    bad = Cluster([cassandra_node.host], port=cassandra_node.port, protocol_version=5,
                  auth_provider=PlainTextAuthProvider(cassandra_node.username, "wrong"))
    try:
        with pytest.raises(NoHostAvailable, match="(?i)authentication|credentials|password"):
            bad.connect()
    finally:
        bad.shutdown()
    session.execute(f"DROP KEYSPACE {ks}")
