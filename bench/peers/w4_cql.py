#!/usr/bin/env python3
"""W4 on Cassandra (BENCHMARKS.md, "W4"): creating and loading the tables, and
the peers: the Python cassandra-driver and DSBulk. bench/w4.py starts the node
(tests/py/cassandra_node.py) and runs these, one process per measurement.

  create HOST PORT s1|s3 TABLE  create keyspace w4 and table w4.TABLE of that
                                schema (PRIMARY KEY (id, timestamp)), emptied
  load HOST PORT FILE TABLE     the driver inserts the rows of FILE (Parquet)
                                into w4.TABLE: prepared INSERTs, one unlogged
                                batch per partition, 32 requests in flight
  dsbulk-load HOST PORT FILE s1|s3 TABLE
                                DSBulk loads FILE (the header-less CSV copy)
                                into w4.TABLE; load_s is the whole command
  query HOST PORT s1|s3         the driver's paged full scan of the columns the
                                query needs (fetch_size 5000, its default; rows
                                as tuples, the cheapest row factory), count(*)
                                and max(greatest(val2, val3)) or max(data) in
                                Python; one JSON line: rows, max, load_s, version
  dsbulk HOST PORT s1|s3 DIR    DSBulk (bench/dsbulk/pom.xml, jars in
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
# The columns of each schema, as CQL declares them (BENCHMARKS.md, W4).
SCHEMA = {
    "s1": "id text, timestamp bigint, " + ", ".join(f"val{i} int" for i in range(1, 11)),
    "s3": "id text, timestamp bigint, data text",
}
NAMES = {
    "s1": ["id", "timestamp"] + [f"val{i}" for i in range(1, 11)],
    "s3": ["id", "timestamp", "data"],
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


def create(host: str, port: int, which: str, table: str) -> dict:
    cluster, session = connect(host, port)
    session.execute(f"CREATE KEYSPACE IF NOT EXISTS {KEYSPACE} WITH replication = "
                    "{'class': 'SimpleStrategy', 'replication_factor': 1}")
    session.execute(f"CREATE TABLE IF NOT EXISTS {KEYSPACE}.{table} ({SCHEMA[which]}, "
                    "PRIMARY KEY (id, timestamp))")
    session.execute(f"TRUNCATE {KEYSPACE}.{table}")
    cluster.shutdown()
    return {"table": f"{KEYSPACE}.{table}"}


def load(host: str, port: int, path: str, table: str) -> dict:
    import pyarrow.parquet as pq
    from cassandra.concurrent import execute_concurrent
    from cassandra.query import BatchStatement, BatchType

    import cassandra

    cluster, session = connect(host, port)
    t0 = time.perf_counter()
    pf = pq.ParquetFile(path)
    names = pf.schema_arrow.names
    insert = session.prepare(f"INSERT INTO {KEYSPACE}.{table} ({', '.join(names)}) "
                             f"VALUES ({', '.join('?' for _ in names)})")
    n = 0
    for batch in pf.iter_batches(batch_size=100_000):
        columns = [batch.column(i).to_pylist() for i in range(batch.num_columns)]
        rows = list(zip(*columns))
        # One unlogged batch per partition (the generator's ids come in runs
        # of 100 rows): one mutation per partition for the node.
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
    cluster.shutdown()
    return {"rows": n, "load_s": time.perf_counter() - t0, "version": cassandra.__version__}


def dsbulk_load(host: str, port: int, path: str, which: str, table: str) -> dict:
    argv = ["java", "-cp", os.path.join(DSBULK_LIB, "*"), DSBULK_MAIN, "load",
            "-h", host, "-port", str(port), "-u", USER, "-p", PASSWORD,
            "-k", KEYSPACE, "-t", table, "-url", path, "--connector.csv.header", "false",
            "-m", ",".join(NAMES[which]),
            "--dsbulk.log.directory", os.path.join(os.path.dirname(path), "dsbulk-logs")]
    t0 = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, text=True)
    elapsed = time.perf_counter() - t0
    shutil.rmtree(os.path.join(os.path.dirname(path), "dsbulk-logs"), ignore_errors=True)
    if done.returncode != 0:
        raise SystemExit(f"dsbulk load failed ({done.returncode}): "
                         + (done.stdout + done.stderr).strip()[-2000:])
    return {"load_s": elapsed, "version": dsbulk_version()}


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
    commands = {  # name: (function, argument count, argument types)
        "create": (create, (str, int, str, str)),
        "load": (load, (str, int, str, str)),
        "dsbulk-load": (dsbulk_load, (str, int, str, str, str)),
        "query": (query, (str, int, str)),
        "dsbulk": (dsbulk, (str, int, str, str)),
    }
    if not argv or argv[0] not in commands or len(argv) - 1 != len(commands[argv[0]][1]):
        print(__doc__, file=sys.stderr)
        return 2
    fn, types = commands[argv[0]]
    print(json.dumps(fn(*(t(a) for t, a in zip(types, argv[1:])))))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
