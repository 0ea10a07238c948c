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
  dsbulk HOST PORT s1|s3 DIR  DSBulk (bench/dsbulk/pom.xml, jars in
                              .cache/dsbulk/lib) unloads the same columns to CSV
                              files in DIR; load_s is that whole command, JVM
                              start included, as a user running `dsbulk
                              unload` waits for it. Count and max are then
                              computed from the files, untimed, to check the
                              unload is complete and exact.

Login: cassandra/cassandra (the test node's superuser).
"""
from __future__ import annotations

import csv
import glob
import json
import os
import shutil
import subprocess
import sys
import time

USER = PASSWORD = "cassandra"
KEYSPACE = "w4"
COLUMNS = {"s1": ("val2", "val3"), "s3": ("data",)}
DSBULK_LIB = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", ".cache",
                          "dsbulk", "lib")
DSBULK_MAIN = "com.datastax.oss.dsbulk.runner.DataStaxBulkLoader"
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
    rows, best = reduce(which, session.execute(select(which)))
    out = {"rows": rows, "max": best, "load_s": time.perf_counter() - t0,
           "version": cassandra.__version__}
    cluster.shutdown()
    return out


def select(which: str) -> str:
    return f"SELECT {', '.join(COLUMNS[which])} FROM {KEYSPACE}.{which}"


def reduce(which: str, rows) -> tuple:
    """(count(*), max(greatest(val2, val3)) or max(data)) over rows of the
    query's columns (ints for s1, strings for s3; None for null)."""
    count, best = 0, None
    for row in rows:
        count += 1
        present = [v for v in row if v is not None]
        m = max(present) if present else None
        if m is not None and (best is None or m > best):
            best = m
    return count, best


def dsbulk_version() -> str:
    jars = glob.glob(os.path.join(DSBULK_LIB, "dsbulk-runner-*.jar"))
    return os.path.basename(jars[0])[len("dsbulk-runner-"):-len(".jar")] if jars else "?"


def dsbulk(host: str, port: int, which: str, out_dir: str) -> dict:
    shutil.rmtree(out_dir, ignore_errors=True)
    argv = ["java", "-cp", os.path.join(DSBULK_LIB, "*"), DSBULK_MAIN, "unload",
            "-h", host, "-port", str(port), "-u", USER, "-p", PASSWORD,
            "-query", select(which), "-url", out_dir, "--connector.csv.header", "false",
            "--dsbulk.log.directory", out_dir + ".logs"]
    t0 = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, text=True)
    elapsed = time.perf_counter() - t0
    if done.returncode != 0:
        raise SystemExit(f"dsbulk unload failed ({done.returncode}): "
                         + (done.stdout + done.stderr).strip()[-2000:])
    parse = int if which == "s1" else str

    def rows():
        for path in sorted(glob.glob(os.path.join(out_dir, "*.csv"))):
            with open(path, newline="") as f:
                for rec in csv.reader(f):
                    yield [parse(v) if v != "" else None for v in rec]

    count, best = reduce(which, rows())
    shutil.rmtree(out_dir, ignore_errors=True)
    shutil.rmtree(out_dir + ".logs", ignore_errors=True)
    return {"rows": count, "max": best, "load_s": elapsed, "version": dsbulk_version()}


def main(argv: list) -> int:
    if len(argv) == 4 and argv[0] == "load":
        print(json.dumps(load(argv[1], int(argv[2]), argv[3])))
    elif len(argv) == 4 and argv[0] == "query":
        print(json.dumps(query(argv[1], int(argv[2]), argv[3])))
    elif len(argv) == 5 and argv[0] == "dsbulk":
        print(json.dumps(dsbulk(argv[1], int(argv[2]), argv[3], argv[4])))
    else:
        print(__doc__, file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
