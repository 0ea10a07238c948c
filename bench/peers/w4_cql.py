#!/usr/bin/env python3
"""W4 on Cassandra (BENCHMARKS.md, "W4"): loading the node, and the Python
cassandra-driver peer. bench/w4.py starts the node (tests/py/cassandra_node.py)
and runs these, one process per measurement.

  load HOST PORT DATA_DIR     create keyspace w4 with tables s1 and s3
                              (PRIMARY KEY (id, timestamp)) and insert the
                              rows of DATA_DIR/s1.parquet and s3.parquet
                              (unlogged batches of one partition each)
  query HOST PORT s1|s3       the driver's paged full scan of the columns the
                              query needs (fetch_size 5000, its default; rows
                              as tuples, the cheapest row factory), count(*)
                              and max(greatest(val2, val3)) or max(data) in
                              Python; one JSON line: rows, max, load_s, version

Login: cassandra/cassandra (the test node's superuser).
"""
from __future__ import annotations

import json
import sys
import time

USER = PASSWORD = "cassandra"
KEYSPACE = "w4"
DDL = {
    "s1": "CREATE TABLE IF NOT EXISTS w4.s1 (id text, timestamp bigint, "
          + ", ".join(f"val{i} int" for i in range(1, 11)) + ", PRIMARY KEY (id, timestamp))",
    "s3": "CREATE TABLE IF NOT EXISTS w4.s3 (id text, timestamp bigint, data text, "
          "PRIMARY KEY (id, timestamp))",
}


def connect(host: str, port: int):
    from cassandra.auth import PlainTextAuthProvider
    from cassandra.cluster import EXEC_PROFILE_DEFAULT, Cluster, ExecutionProfile
    from cassandra.policies import RoundRobinPolicy
    from cassandra.query import tuple_factory

    profile = ExecutionProfile(load_balancing_policy=RoundRobinPolicy(), request_timeout=120,
                               row_factory=tuple_factory)
    cluster = Cluster([host], port=port, auth_provider=PlainTextAuthProvider(USER, PASSWORD),
                      execution_profiles={EXEC_PROFILE_DEFAULT: profile})
    return cluster, cluster.connect()


def load(host: str, port: int, data_dir: str) -> dict:
    import os

    import pyarrow.parquet as pq
    from cassandra.concurrent import execute_concurrent
    from cassandra.query import BatchStatement, BatchType

    cluster, session = connect(host, port)
    session.execute(f"CREATE KEYSPACE IF NOT EXISTS {KEYSPACE} WITH replication = "
                    "{'class': 'SimpleStrategy', 'replication_factor': 1}")
    counts = {}
    t0 = time.perf_counter()
    for table, ddl in DDL.items():
        session.execute(ddl)
        pf = pq.ParquetFile(os.path.join(data_dir, f"{table}.parquet"))
        names = pf.schema_arrow.names
        insert = session.prepare(f"INSERT INTO w4.{table} ({', '.join(names)}) "
                                 f"VALUES ({', '.join('?' for _ in names)})")
        n = 0
        for batch in pf.iter_batches(batch_size=100_000):
            columns = [batch.column(i).to_pylist() for i in range(batch.num_columns)]
            rows = list(zip(*columns))
            # One unlogged batch per partition (the generator's ids come in
            # runs of 100 rows): one mutation per partition for the node.
            statements, start = [], 0
            for i in range(1, len(rows) + 1):
                if i == len(rows) or rows[i][0] != rows[start][0]:
                    b = BatchStatement(batch_type=BatchType.UNLOGGED)
                    for r in rows[start:i]:
                        b.add(insert, r)
                    statements.append((b, ()))
                    start = i
            for ok, result in execute_concurrent(session, statements, concurrency=32,
                                                 raise_on_first_error=True):
                pass
            n += len(rows)
        counts[table] = n
    cluster.shutdown()
    return {"rows": counts, "load_s": time.perf_counter() - t0}


def query(host: str, port: int, which: str) -> dict:
    import cassandra

    cluster, session = connect(host, port)
    t0 = time.perf_counter()
    rows = 0
    best = None
    if which == "s1":
        for v2, v3 in session.execute("SELECT val2, val3 FROM w4.s1"):
            rows += 1
            m = v2 if v3 is None or (v2 is not None and v2 > v3) else v3
            if m is not None and (best is None or m > best):
                best = m
    else:
        for (data,) in session.execute("SELECT data FROM w4.s3"):
            rows += 1
            if data is not None and (best is None or data > best):
                best = data
    out = {"rows": rows, "max": best, "load_s": time.perf_counter() - t0,
           "version": cassandra.__version__}
    cluster.shutdown()
    return out


def main(argv: list) -> int:
    if len(argv) == 4 and argv[0] == "load":
        print(json.dumps(load(argv[1], int(argv[2]), argv[3])))
    elif len(argv) == 4 and argv[0] == "query":
        print(json.dumps(query(argv[1], int(argv[2]), argv[3])))
    else:
        print(__doc__, file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
