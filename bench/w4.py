"""W4 (bulk read for analytics, BENCHMARKS.md): the cells bench/run.py measures.

Tasks (both by default):
  q1  count(*) and max(greatest(val2, val3)) over s1.parquet (schema1)
  q3  count(*) and max(data) over s3.parquet (schema3)
  q1_csv, q3_csv  the same over s1.csv / s3.csv (no header; every tool is
      given the column names and types)
  q1_csv_gz  (opt-in) q1 over s1.csv.gz (gzip -1 of s1.csv, made on first
      use): a compressed file read as a stream
  q1_cql, q3_cql  (opt-in) the same over a Cassandra table, on a node started
      and loaded for the run: sluice over cql:// against the Python
      cassandra-driver and DSBulk's unload
reading only the columns the query needs. sluice answers with
`sluice stats -c val2,val3 --json` (the two maxes combined) and
`sluice stats -c data --json`: once as the CLI does by default (figures from
the Parquet footer where they are exact, which pyarrow's are for these
columns), once with `--limit <rows>`, which turns the footer shortcut off so
every value is decoded. Peers: DuckDB (SQL over read_parquet), polars
(scan_parquet, lazy), pyarrow.dataset (to_table of the needed columns +
pyarrow.compute). Every answer is checked against the generator's
(bench/gen_w4.py, w4.meta.json).
"""
from __future__ import annotations

import json
import os
import subprocess
import time
from typing import Optional

from harness import HERE, PY, ROOT, Cell, Context, log

FULL_ROWS = 15_000_000
QUICK_ROWS = 1_000_000
DEFAULT_TASKS = "q1,q3,q1_csv,q3_csv"
META = "w4.meta.json"
CHECKS = ("count(*) and the max of each query equal the generator's answers (w4.meta.json), "
          "exactly")

QUERIES = {
    # task: (file, answer key, sluice -c columns, extension)
    "q1": ("s1", "max_greatest_val2_val3", "val2,val3", "parquet"),
    "q3": ("s3", "max_data", "data", "parquet"),
    "q1_csv": ("s1", "max_greatest_val2_val3", "val2,val3", "csv"),
    "q3_csv": ("s3", "max_data", "data", "csv"),
    "q1_csv_gz": ("s1", "max_greatest_val2_val3", "val2,val3", "csv.gz"),
}
# The header-less CSV copies' columns, as `--schema` gives them to sluice.
CSV_SCHEMA = {
    "s1": "id:string,timestamp:int64," + ",".join(f"val{i}:int32" for i in range(1, 11)),
    "s3": "id:string,timestamp:int64,data:string",
}


def sluice_answer(result: dict, which: str) -> tuple:
    """(rows, max, sources) from `sluice stats --json` (one entry per column)."""
    stats = result["list"]
    rows = stats[0]["count"]
    sources = sorted({s.get("source", "computed") for s in stats})
    if which == "s1":
        return rows, max(int(s["max"]) for s in stats), sources
    return rows, stats[0]["max"], sources


def checker(meta: dict, which: str, key: str):
    want = meta["answers"][which]

    def check(result: dict) -> Optional[str]:
        try:
            if "list" in result:
                rows, mx, sources = sluice_answer(result, which)
                result["rows"], result["max"], result["sources"] = rows, mx, sources
            else:
                rows, mx = result.get("rows"), result.get("max")
        except (KeyError, ValueError, TypeError, IndexError) as e:
            return f"cannot read the answer from {json.dumps(result)[:300]}: {e}"
        if rows != want["count"]:
            return f"count(*) {rows} != {want['count']}"
        if mx != want[key]:
            return f"max {mx!r} != {want[key]!r}"
        return None

    return check


def sluice_reads_parquet(sluice: str, path: str) -> Optional[str]:
    """None when the CLI reads Parquet, else why not (its own message)."""
    if not os.access(sluice, os.X_OK):
        return f"sluice CLI not found or not runnable at {sluice}"
    try:
        p = subprocess.run([sluice, "-q", "schema", path], capture_output=True, text=True,
                           timeout=60)
    except (OSError, subprocess.TimeoutExpired) as e:
        return f"sluice schema {os.path.basename(path)}: {e}"
    if p.returncode != 0:
        return "sluice cannot read Parquet yet: " + (p.stderr.strip().splitlines() or ["?"])[-1]
    return None


# How each peer runs the query, by input format.
PEER_HOW = {
    "parquet": (("duckdb", "DuckDB SQL over read_parquet(path), fetchone"),
                ("polars", "pl.scan_parquet(path).select(len, max).collect()"),
                ("pyarrow", "pyarrow.dataset(path).to_table(columns) + pyarrow.compute max")),
    "csv": (("duckdb", "DuckDB SQL over read_csv(path, header=false, columns={...})"),
            ("polars", "pl.scan_csv(path, has_header=False, schema=...) lazy query"),
            ("pyarrow", "pyarrow.dataset(path, CsvFileFormat(column names and types))"
                        ".to_table(columns) + pyarrow.compute max")),
    "csv.gz": (("duckdb", "DuckDB SQL over read_csv(path, header=false, columns={...}): "
                          "inflates as it reads"),
               ("polars", "pl.read_csv(path, has_header=False, schema=..., columns=...) "
                          "(scan_csv reads no compressed files): inflates into memory"),
               ("pyarrow", "pyarrow.csv.read_csv(path, column names and types, "
                           "include_columns) + pyarrow.compute max: inflates as it reads")),
}


def sluice_cells(ctx: Context, task: str, which: str, cols: str, ext: str, path: str,
                 check) -> list:
    """sluice's cells of a query. CSV: every row split and the needed columns
    converted. Parquet: the decoding cell first (the report's headline ratio is
    the first sluice cell's, and decoding every value is what the peers do),
    then the default run that takes exact footer statistics."""
    if ext.startswith("csv"):
        return [Cell(task, f"sluice stats -c {cols} ({ext})", "sluice", "sluice",
                     [[ctx.sluice, "-q", "stats", path, "-O", "header=false", "--schema",
                       CSV_SCHEMA[which], "-c", cols, "--json"]],
                     how=f"`sluice stats {which}.{ext} -O header=false --schema ... -c {cols} "
                         "--json`: every row split and the needed columns converted, in "
                         "parallel" + ("" if ext == "csv" else "; inflated as it is read, "
                                       "parsed as one stream"),
                     checker=check)]
    no_sluice = sluice_reads_parquet(ctx.sluice, path)
    return [Cell(task, f"sluice stats -c {cols} --limit N (decode)", "sluice", "sluice",
                 [[ctx.sluice, "-q", "stats", path, "-c", cols, "--json",
                   "--limit", str(ctx.meta["rows"])]],
                 how=f"`sluice stats {which}.parquet -c {cols} --json --limit <row "
                     "count>`: the limit turns the footer shortcut off, so every value of "
                     "the columns is decoded; count, nulls, min, max computed in parallel",
                 checker=check, skip=no_sluice),
            Cell(task, f"sluice stats -c {cols} (footer stats)", "sluice", "sluice",
                 [[ctx.sluice, "-q", "stats", path, "-c", cols, "--json"]],
                 how=f"`sluice stats {which}.parquet -c {cols} --json` as it runs by "
                     "default: the Parquet footer statistics where they are exact "
                     "(no page decoded), else computed",
                 checker=check, skip=no_sluice)]


# Opt-in (--tasks q1_cql,q3_cql): the same queries over a Cassandra table,
# on a node bench/w4.py starts and loads for the run (minutes at full size).
CQL_QUERY_TASKS = {
    "q1_cql": ("s1", "max_greatest_val2_val3", "val2,val3"),
    "q3_cql": ("s3", "max_data", "data"),
}
CQL_TASKS = set(CQL_QUERY_TASKS) | {"load_cql"}


def cassandra_cells(ctx: Context) -> list:
    """A node on loopback (tests/py/cassandra_node.py), loaded from the
    Parquet files by the driver, then sluice's `stats` over cql:// and the
    driver's paged scan."""
    import atexit
    import sys

    sys.path.insert(0, os.path.join(ROOT, "tests", "py"))
    from cassandra_node import CassandraNode, cassandra_available

    reason = cassandra_available()
    if reason:
        return [Cell(t, "sluice stats (cql://)", "sluice", "sluice", [["true"]], skip=reason)
                for t in CQL_TASKS if t in ctx.tasks]
    node = CassandraNode(start_timeout=180).start()
    atexit.register(node.stop)
    log(f"Cassandra node on {node.contact} (started in {node.start_seconds:.1f} s)")
    peer = os.path.join(HERE, "peers", "w4_cql.py")
    base = f"cql://{node.username}:{node.password}@{node.host}:{node.port}/w4."

    def peer_run(*args) -> dict:
        done = subprocess.run([PY, peer, *map(str, args)], check=True, capture_output=True,
                              text=True)
        return json.loads(done.stdout)

    # The query tables, loaded by sluice itself (the load_cql task measures
    # the loaders; every query below checks count and max against the
    # generator's answers, so a wrong load cannot go unnoticed).
    if ctx.tasks & set(CQL_QUERY_TASKS):
        took = {}
        for which in ("s1", "s3"):
            peer_run("create", node.host, node.port, which, which)
            t0 = time.perf_counter()
            subprocess.run([ctx.sluice, "-q", "convert", os.path.join(ctx.data, f"{which}.parquet"),
                            base + which], check=True)
            took[which] = time.perf_counter() - t0
        log(f"loaded by sluice: {took}")
        ctx.notes.append(f"Cassandra 5.0 node on loopback (heap 1 GiB), started in "
                         f"{node.start_seconds:.0f} s; tables w4.s1 and w4.s3 loaded by "
                         f"`sluice convert sN.parquet cql://...` in {took['s1']:.0f} s and "
                         f"{took['s3']:.0f} s ({ctx.meta['rows']:,} rows each)")
    out = load_cells(ctx, node, peer, peer_run, base) if "load_cql" in ctx.tasks else []
    for task, (which, key, cols) in CQL_QUERY_TASKS.items():
        if task not in ctx.tasks:
            continue
        check = checker(ctx.meta, which, key)
        url = f"cql://{node.username}:{node.password}@{node.host}:{node.port}/w4.{which}"
        shown = f"cql://.../w4.{which}"
        out.append(Cell(task, f"sluice stats -c {cols} (cql://)", "sluice", "sluice",
                        [[ctx.sluice, "-q", "stats", url, "-c", cols, "--json"]],
                        how=f"`sluice stats {shown} -c {cols} --json`: 16 token ranges, each a "
                            "paged query of the columns on its own connection, values decoded "
                            "and reduced on all cores",
                        checker=check))
        out.append(Cell(task, f"sluice stats -c {cols} -O compression=lz4 (cql://)", "sluice",
                        "sluice",
                        [[ctx.sluice, "-q", "stats", url, "-c", cols, "--json", "-O",
                          "compression=lz4"]],
                        how="the same with LZ4 frames (protocol v4 compression): fewer bytes "
                            "on the wire for more CPU on both sides, which only pays where the "
                            "network is the limit (here it is loopback)",
                        checker=check))
        out.append(Cell(task, f"sluice stats -c {cols} -O splits=1 (cql://)", "sluice",
                        "sluice",
                        [[ctx.sluice, "-q", "stats", url, "-c", cols, "--json", "-O", "splits=1"]],
                        how="the same as one paged query (no token ranges)", checker=check))
        out.append(Cell(task, "cassandra-driver paged scan", "cassandra-driver", "peer",
                        [[PY, peer, "query", node.host, str(node.port), which]],
                        how="Python cassandra-driver: SELECT of the columns, fetch_size 5000, "
                            "tuple rows, count and max in Python", checker=check))
        out.append(Cell(task, "dsbulk unload", "dsbulk", "peer",
                        [[PY, peer, "dsbulk", node.host, str(node.port), which,
                          os.path.join(ctx.tmp, f"dsbulk-{which}")]],
                        how="DSBulk 1.10 `dsbulk unload -query 'SELECT <columns> ...'` to CSV "
                            "files (its default token-range parallelism), timed as the whole "
                            "command, JVM start included; count and max computed from the "
                            "files afterwards, untimed",
                        metric="load_s", checker=check, skip=dsbulk_missing()))
    return out


def load_cells(ctx: Context, node, peer: str, peer_run, base: str) -> list:
    """load_cql: s1 (schema1) loaded into an empty table w4.load_s1 by
    sluice, the driver and DSBulk. After each run (untimed) `sluice stats`
    over the table checks count(*) and max(greatest(val2, val3)) against the
    generator's answers, and the table is emptied for the next run."""
    want = ctx.meta["answers"]["s1"]
    table = "load_s1"
    peer_run("create", node.host, node.port, "s1", table)
    parquet = os.path.join(ctx.data, "s1.parquet")

    def verify_and_empty() -> Optional[str]:
        done = subprocess.run([ctx.sluice, "-q", "stats", base + table, "-c", "val2,val3",
                               "--json"], capture_output=True, text=True)
        peer_run("create", node.host, node.port, "s1", table)  # TRUNCATE
        if done.returncode != 0:
            return f"reading the loaded table back: {done.stderr.strip()[-300:]}"
        rows, mx, _ = sluice_answer({"list": json.loads(done.stdout)}, "s1")
        if rows != want["count"] or mx != want["max_greatest_val2_val3"]:
            return f"loaded table: count {rows}, max {mx}; want {want}"
        return None

    return [
        Cell("load_cql", "sluice convert s1.parquet cql://", "sluice", "sluice",
             [[ctx.sluice, "-q", "convert", parquet, base + table]],
             how="`sluice convert s1.parquet cql://.../w4.load_s1`: one prepared INSERT, "
                 "rows of a partition in UNLOGGED batches of up to 32, 128 requests in "
                 "flight on one connection (the defaults)",
             parse_json=False, check=False, post=verify_and_empty),
        Cell("load_cql", "sluice convert -W batch_rows=100", "sluice", "sluice",
             [[ctx.sluice, "-q", "convert", parquet, base + table, "-W", "batch_rows=100"]],
             how="the same with a whole partition (100 rows) per batch, as the driver "
                 "peer batches",
             parse_json=False, check=False, post=verify_and_empty),
        Cell("load_cql", "cassandra-driver batches", "cassandra-driver", "peer",
             [[PY, peer, "load", node.host, str(node.port), parquet, table]],
             how="Python cassandra-driver: pyarrow reads the file, prepared INSERTs in one "
                 "UNLOGGED batch per partition, execute_concurrent with 32 in flight",
             metric="load_s", check=False, post=verify_and_empty),
        Cell("load_cql", "dsbulk load (CSV)", "dsbulk", "peer",
             [[PY, peer, "dsbulk-load", node.host, str(node.port),
               os.path.join(ctx.data, "s1.csv"), "s1", table]],
             how="DSBulk 1.10 `dsbulk load` of the header-less s1.csv (DSBulk reads no "
                 "Parquet) with its defaults, timed as the whole command, JVM start included",
             metric="load_s", check=False, post=verify_and_empty, skip=dsbulk_missing()),
    ]


def dsbulk_missing() -> Optional[str]:
    """None when DSBulk's jars and a java are there, else why the cell is skipped."""
    import glob
    import shutil

    if not shutil.which("java"):
        return "no java on PATH"
    if not glob.glob(os.path.join(ROOT, ".cache", "dsbulk", "lib", "dsbulk-runner-*.jar")):
        return "DSBulk's jars are not in .cache/dsbulk/lib (bench/install_peers.sh fetches them)"
    return None


def cells(ctx: Context) -> list:
    peers = os.path.join(HERE, "peers", "w4_peers.py")
    out = []
    if ctx.tasks & set(CQL_TASKS):
        out += cassandra_cells(ctx)
    for task, (which, key, cols, ext) in QUERIES.items():
        path = os.path.join(ctx.data, f"{which}.{ext}")
        if ext.endswith(".gz") and task in ctx.tasks and not os.path.exists(path):
            log(f"compressing {which}.csv with gzip -1 for {task}")
            with open(path + ".tmp", "wb") as gz:
                subprocess.run(["gzip", "-1", "-c", path[:-3]], stdout=gz, check=True)
            os.replace(path + ".tmp", path)
        check = checker(ctx.meta, which, key)
        task_cells = sluice_cells(ctx, task, which, cols, ext, path, check)
        for tool, how in PEER_HOW[ext]:
            task_cells.append(Cell(task, tool, tool, "peer",
                                   [[PY, peers, "query", tool, which, path]],
                                   how=how, checker=check))
        task_cells.append(Cell(task, f"cat {which}.{ext} > /dev/null", "cat", "floor",
                               [["cat", path]], how="read the (cached) file once",
                               parse_json=False, check=False, stdout_devnull=True))
        size = os.path.getsize(path) if os.path.exists(path) else None
        for c in task_cells:
            c.nbytes = c.nbytes or size
        out += task_cells
    return out


def ensure_data(rows: int, data_dir: Optional[str]) -> str:
    """The data directory for `rows`, generating s1/s3.parquet there if missing."""
    if data_dir is None:
        data_dir = os.path.join(HERE, "data") if rows == FULL_ROWS else \
            os.path.join(HERE, "data", f"w4rows{rows}")
    meta = os.path.join(data_dir, META)
    need = not os.path.exists(meta) or not all(
        os.path.exists(os.path.join(data_dir, f))
        for f in ("s1.parquet", "s3.parquet", "s1.csv", "s3.csv"))
    if not need:
        with open(meta) as f:
            need = json.load(f)["rows"] != rows
    if need:
        log(f"generating W4 data ({rows:,} rows) in {data_dir}")
        subprocess.run([PY, os.path.join(HERE, "gen_w4.py"), "--rows", str(rows),
                        "--out", data_dir, "--force"], check=True, cwd=ROOT)
    return data_dir
