"""Hive-partitioned Parquet writes: W1's first 2^23 rows (id, x1..x4) plus
two partition keys, `day` (id // 2^18: 32 values in runs, as data sorted by
date arrives) and `k` (id % 32: 32 values, every batch holding all of
them), written as <dst>/<key>=<value>/...parquet (snappy) by each tool in
one run: sluice.write(sluice.scan(src), partition_by=) (streamed, no fsync:
the peers do not sync), pyarrow read_table + dataset.write_dataset(
partitioning_flavor="hive"), DuckDB COPY ... (FORMAT parquet, PARTITION_BY)
and polars read_parquet().write_parquet(partition_by=). Each tool reads the
same input file (page cache warm) in a process of its own, best and median
of --repeat after a warm-up; every output is read back by pyarrow.dataset
(row count and sum(id) per partition key must agree with the input's).

usage: python bench/partitioned_write.py [--data bench/data] [--repeat 3] [--out bench/results]
Writes <out>/<date>-partitioned-write.json and .png.
"""
from __future__ import annotations

import argparse
import datetime as dt
import os
import shutil
import subprocess
import sys

from inprocess import HERE, machine, save

ROWS = 1 << 23
INPUT = "w1_part_in.parquet"

# One process per measurement: the tool's import, then the timed write.
TOOLS = {
    "sluice.write(scan, partition_by=)":
        "import sluice\n"
        "t0 = time.perf_counter()\n"
        "sluice.write(sluice.scan(SRC), DST, format='parquet', partition_by=[KEY], fsync=False)\n",
    "pyarrow write_dataset(hive)":
        "import pyarrow.parquet as pq, pyarrow.dataset as ds\n"
        "t0 = time.perf_counter()\n"
        "ds.write_dataset(pq.read_table(SRC), DST, format='parquet', partitioning=[KEY],\n"
        "                 partitioning_flavor='hive')\n",
    "duckdb COPY PARTITION_BY":
        "import duckdb\n"
        "t0 = time.perf_counter()\n"
        "duckdb.sql(f\"copy (select * from read_parquet('{SRC}')) to '{DST}' \"\n"
        "           f\"(format parquet, partition_by ({KEY}))\")\n",
    "polars write_parquet(partition_by=)":
        "import polars as pl\n"
        "t0 = time.perf_counter()\n"
        "pl.read_parquet(SRC).write_parquet(DST, partition_by=KEY)\n",
}


def make_input(data: str) -> str:
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq
    dst = os.path.join(data, INPUT)
    if not os.path.exists(dst):
        t = pq.read_table(os.path.join(data, "w1.parquet")).slice(0, ROWS)
        ids = t.column("id")
        t = t.append_column("day", pc.divide(ids, pa.scalar(1 << 18, pa.int64())))
        t = t.append_column("k", pc.bit_wise_and(ids, pa.scalar(31, pa.int64())))
        pq.write_table(t, dst + ".tmp")
        os.replace(dst + ".tmp", dst)
    return dst


def run_tool(code: str, src: str, dst: str, key: str) -> float:
    script = (f"import time\nSRC, DST, KEY = {src!r}, {dst!r}, {key!r}\n" + code +
              "print(time.perf_counter() - t0)\n")
    out = subprocess.run([sys.executable, "-c", script], check=True, capture_output=True,
                         text=True)
    return float(out.stdout.strip().splitlines()[-1])


def check(dst: str, key: str, want: dict) -> str:
    """Rows and sum(id) per key value, read back by pyarrow.dataset."""
    import pyarrow as pa
    import pyarrow.dataset as ds
    # int64 keys: polars also keeps the key column in its files.
    part = ds.partitioning(pa.schema([(key, pa.int64())]), flavor="hive")
    t = ds.dataset(dst, format="parquet", partitioning=part).to_table(columns=["id", key])
    got = {}
    for i, k in zip(t.column("id").to_pylist(), t.column(key).to_pylist()):
        c, s = got.get(int(k), (0, 0))
        got[int(k)] = (c + 1, s + i)
    files = sum(len(names) for _, _, names in os.walk(dst))
    return "ok" if got == want else f"MISMATCH ({len(got)} keys)", files


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default=os.path.join(HERE, "data"))
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--out", default=os.path.join(HERE, "results"))
    args = ap.parse_args()
    if not os.path.exists(os.path.join(args.data, "w1.parquet")):
        print("no w1.parquet: run bench/gen_w1.py first", file=sys.stderr)
        return 2
    src = make_input(args.data)
    with open(src, "rb") as f:  # page cache warm
        while f.read(1 << 24):
            pass
    import pyarrow.parquet as pq
    table = pq.read_table(src, columns=["id", "day", "k"])
    expected = {}
    for key in ("day", "k"):
        want = {}
        for i, k in zip(table.column("id").to_pylist(), table.column(key).to_pylist()):
            c, s = want.get(k, (0, 0))
            want[k] = (c + 1, s + i)
        expected[key] = want
    del table
    scratch = os.path.join(args.data, "tmp", "partitioned")
    results, failed = [], False
    for key in ("day", "k"):
        for name, code in TOOLS.items():
            times = []
            for attempt in range(args.repeat + 1):  # the first is the warm-up
                shutil.rmtree(scratch, ignore_errors=True)
                os.makedirs(os.path.dirname(scratch), exist_ok=True)
                seconds = run_tool(code, src, scratch, key)
                if attempt > 0:
                    times.append(seconds)
            verdict, files = check(scratch, key, expected[key])
            failed |= verdict != "ok"
            times.sort()
            results.append({"key": key, "tool": name, "seconds": times, "best_s": times[0],
                            "median_s": times[len(times) // 2], "files": files,
                            "check": verdict})
            print(f"{key:4s} {name:38s} median {times[len(times) // 2]:.3f} s  best "
                  f"{times[0]:.3f} s  files {files}  {verdict}", flush=True)
    shutil.rmtree(scratch, ignore_errors=True)
    doc = {"workload": "partitioned-write", "date": dt.date.today().isoformat(),
           "machine": machine(),
           "data": {"input": INPUT, "rows": ROWS, "bytes": os.path.getsize(src)},
           "method": f"one process per run, the write timed inside it (imports excluded; "
                     f"reading the input included); best/median of {args.repeat} after one "
                     "warm-up; page cache warm; outputs on the same file system, not synced",
           "results": results}
    titles = {"day": "key in runs (day: 32 values, sorted)",
              "k": "key mixed in every batch (k = id % 32)"}
    panels = [(titles[key], [r for r in results if r["key"] == key]) for key in ("day", "k")]
    save(args.out, "partitioned-write", doc, panels, (11, 3.5),
         suptitle=f"Partitioned Parquet write of {ROWS:,} rows (W1 + keys), 2 cores")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
