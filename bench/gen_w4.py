#!/usr/bin/env python3
"""W4 generator (BENCHMARKS.md, "W4: bulk read for analytics"): two Parquet
files written by pyarrow (snappy), never by sluice, and the same rows as CSV
without a header (s1.csv, s3.csv, written by pyarrow.csv).

15,000,000 rows by default (--rows):
  s1.parquet  schema1: `id` string (25 alphanumerics; 100 consecutive rows
              per id), `timestamp` int64 (uniform), `val1`..`val10` int32
              (uniform over the whole int32 range)
  s3.parquet  schema3: `id`, `timestamp`, `data` string (`val1`..`val10` of
              the same row, in decimal, joined with '|')
  w4.meta.json  the reference answers of the queries, computed from the
              generated values in memory (not by reading the files back):
              count(*), max(greatest(val2, val3)) for s1; count(*), max(data)
              for s3; file sizes

Rows are made in chunks of 2^20; each chunk and column draws from its own
numpy PCG64 stream seeded with (seed, column, chunk), so the data is the same
for the same --rows and --seed whatever the machine. Row groups: pyarrow's
default (one per chunk of 2^20 rows written).

Usage: python3 bench/gen_w4.py [--rows N] [--out DIR] [--force] [--only s1|s3]
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv
import pyarrow.parquet as pq

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_ROWS = 15_000_000
DEFAULT_SEED = 20250404
CHUNK = 1 << 20
ROWS_PER_ID = 100
ID_LEN = 25
ALNUM = np.frombuffer(b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz",
                      dtype=np.uint8)
# Timestamps: milliseconds, uniform over 2015-01-01 .. 2025-01-01.
TS_LO, TS_HI = 1_420_070_400_000, 1_735_689_600_000
SCHEMA1 = pa.schema([("id", pa.string()), ("timestamp", pa.int64())]
                    + [(f"val{i}", pa.int32()) for i in range(1, 11)])
SCHEMA3 = pa.schema([("id", pa.string()), ("timestamp", pa.int64()), ("data", pa.string())])


def log(msg: str) -> None:
    print(f"[gen_w4 {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def rng(seed: int, column: int, chunk: int) -> np.random.Generator:
    return np.random.default_rng([seed, column, chunk])


def ids(start: int, n: int, seed: int) -> pa.Array:
    """Rows start..start+n-1: row r has id number r // 100, and id number k the
    25 characters drawn from stream (seed, 0, k // 2^14): ids do not depend on
    the chunking of rows either."""
    first, last = start // ROWS_PER_ID, (start + n - 1) // ROWS_PER_ID
    block = 1 << 14
    pieces = []
    for b in range(first // block, last // block + 1):
        chars = ALNUM[rng(seed, 0, b).integers(0, len(ALNUM), size=(block, ID_LEN))]
        lo = max(first, b * block) - b * block
        hi = min(last + 1, (b + 1) * block) - b * block
        pieces.append(chars[lo:hi])
    table = np.concatenate(pieces)  # one row of 25 bytes per id number
    per_row = np.repeat(np.arange(first, last + 1), ROWS_PER_ID)
    per_row = per_row[start - first * ROWS_PER_ID:][:n] - first
    data = np.ascontiguousarray(table[per_row]).tobytes()
    offsets = np.arange(0, (n + 1) * ID_LEN, ID_LEN, dtype=np.int32)
    return pa.StringArray.from_buffers(n, pa.py_buffer(offsets.tobytes()), pa.py_buffer(data))


def chunk(start: int, n: int, seed: int, index: int):
    ts = rng(seed, 1, index).integers(TS_LO, TS_HI, size=n, dtype=np.int64)
    vals = [rng(seed, 1 + i, index).integers(-2**31, 2**31, size=n, dtype=np.int64)
            .astype(np.int32) for i in range(1, 11)]
    return ids(start, n, seed), pa.array(ts), [pa.array(v) for v in vals]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", type=int, default=DEFAULT_ROWS, help="rows (default 15,000,000)")
    ap.add_argument("--seed", type=int, default=DEFAULT_SEED)
    ap.add_argument("--out", default=os.path.join(HERE, "data"), help="output dir (default bench/data)")
    ap.add_argument("--force", action="store_true", help="rewrite files that already exist")
    args = ap.parse_args(argv)
    os.makedirs(args.out, exist_ok=True)
    meta_path = os.path.join(args.out, "w4.meta.json")
    paths = {k: os.path.join(args.out, f"{k}.parquet") for k in ("s1", "s3")}
    csv_paths = {k: os.path.join(args.out, f"{k}.csv") for k in ("s1", "s3")}
    if not args.force and os.path.exists(meta_path) and all(
            map(os.path.exists, list(paths.values()) + list(csv_paths.values()))):
        with open(meta_path) as f:
            old = json.load(f)
        if old.get("rows") == args.rows and old.get("seed") == args.seed:
            log(f"{meta_path}: up to date (use --force to rewrite)")
            return 0

    t0 = time.perf_counter()
    tmp = {k: p + ".tmp" for k, p in paths.items()}
    csv_tmp = {k: p + ".tmp" for k, p in csv_paths.items()}
    w1 = pq.ParquetWriter(tmp["s1"], SCHEMA1, compression="snappy")
    w3 = pq.ParquetWriter(tmp["s3"], SCHEMA3, compression="snappy")
    # The CSV copies have no header (BENCHMARKS.md): readers are told the columns.
    no_header = pacsv.WriteOptions(include_header=False)
    c1 = pacsv.CSVWriter(csv_tmp["s1"], SCHEMA1, write_options=no_header)
    c3 = pacsv.CSVWriter(csv_tmp["s3"], SCHEMA3, write_options=no_header)
    max_val23 = None
    max_data = None
    table_bytes = {"s1": 0, "s3": 0}
    for index, start in enumerate(range(0, args.rows, CHUNK)):
        n = min(CHUNK, args.rows - start)
        id_col, ts, vals = chunk(start, n, args.seed, index)
        t1 = pa.Table.from_arrays([id_col, ts] + vals, schema=SCHEMA1)
        data = pc.binary_join_element_wise(*[pc.cast(v, pa.string()) for v in vals], "|")
        t3 = pa.Table.from_arrays([id_col, ts, data], schema=SCHEMA3)
        w1.write_table(t1)
        w3.write_table(t3)
        c1.write_table(t1)
        c3.write_table(t3)
        table_bytes["s1"] += t1.nbytes
        table_bytes["s3"] += t3.nbytes
        m = max(int(np.max(vals[1].to_numpy())), int(np.max(vals[2].to_numpy())))
        max_val23 = m if max_val23 is None else max(max_val23, m)
        d = pc.max(data).as_py()
        max_data = d if max_data is None else max(max_data, d)  # str order = byte order for ASCII
        if index % 4 == 0:
            log(f"{start + n:,} rows ({time.perf_counter() - t0:.0f}s)")
    for w in (w1, w3, c1, c3):
        w.close()
    for k in paths:
        os.replace(tmp[k], paths[k])
        os.replace(csv_tmp[k], csv_paths[k])
    meta = {
        "workload": "w4", "rows": args.rows, "seed": args.seed, "chunk_rows": CHUNK,
        "rows_per_id": ROWS_PER_ID,
        "answers": {"s1": {"count": args.rows, "max_greatest_val2_val3": max_val23},
                    "s3": {"count": args.rows, "max_data": max_data}},
        "table_bytes": sum(table_bytes.values()),  # both tables in Arrow memory
        "table_bytes_per_file": table_bytes,
        "files": {f"{k}.parquet": {"bytes": os.path.getsize(p), "writer": "pyarrow",
                                   "compression": "snappy"} for k, p in paths.items()}
        | {f"{k}.csv": {"bytes": os.path.getsize(p), "writer": "pyarrow", "header": False}
           for k, p in csv_paths.items()},
        "versions": {"pyarrow": pa.__version__, "numpy": np.__version__},
        "seconds": round(time.perf_counter() - t0, 1),
    }
    with open(meta_path + ".tmp", "w") as f:
        json.dump(meta, f, indent=2)
    os.replace(meta_path + ".tmp", meta_path)
    log(f"wrote {', '.join(paths.values())} and {meta_path} in {meta['seconds']}s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
