#!/usr/bin/env python3
"""Generate the W1 data set (see /work/shared/BENCHMARKS.md, "W1").

Rows: `id` int64 0..n-1, `x1`..`x4` float64 uniform in [0, 1).
Default n = 2^25 = 33,554,432 (1.34 GB of column data).

Every file is written by a peer, never by sluice:

  w1.arrow           pyarrow, Arrow IPC *file* format, no compression,
                     one record batch per --batch-rows rows (default 2^20)
  w1.arrows          pyarrow, Arrow IPC *stream* format, same batches (the
                     zero-work producer for the pipe floor of task (c))
  w1.parquet         pyarrow.parquet.write_table with pyarrow's defaults
                     (snappy, default row-group size)
  w1_duckdb.parquet  DuckDB `COPY ... TO ... (FORMAT parquet)`, DuckDB defaults
  w1.avro            fastavro, null codec            (only with --avro: slow, big)
  w1.csv             pyarrow.csv, header, floats as the shortest digit string
                     that round-trips (Arrow's formatter: 0.000025 rather than
                     Python's 2.5e-05; same digits)    (only with --csv)
  w1_cat.parquet     pyarrow from a pandas DataFrame: `id` and `cat`, a
                     categorical of 1,000 categories "c0000".."c0999" listed in
                     a seeded shuffled order, codes uniform (only with
                     --categorical); its reference is sum over the rows of the
                     category's number (meta "categorical")
  w1_1rg.parquet     pyarrow.parquet.write_table, snappy, the whole table as
                     ONE row group (only with --one-row-group): task s_parquet,
                     streaming a row group larger than the memory budget

Values are reproducible: each column has its own numpy PCG64 stream seeded
with (seed, column index), drawn chunk by chunk, so the values do not depend
on --batch-rows.

Alongside the data, w1.meta.json records n, seed, the files written and the
reference checksums sum(id) (exact) and sum(x1) (float64, math.fsum) that
bench/run.py checks every tool's result against.

Usage: python3 bench/gen_w1.py [--rows N] [--out DIR] [--avro] [--csv] [--categorical]
                               [--one-row-group] [--force]
"""
from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time

import numpy as np
import pyarrow as pa

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_ROWS = 1 << 25
DEFAULT_SEED = 20250101
COLUMNS = ["id", "x1", "x2", "x3", "x4"]
SCHEMA = pa.schema([("id", pa.int64())] + [(c, pa.float64()) for c in COLUMNS[1:]])


def log(msg: str) -> None:
    print(f"[gen_w1 {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def batches(rows: int, seed: int, batch_rows: int):
    """Yield record batches of the W1 table, in order."""
    rngs = [np.random.default_rng([seed, i]) for i in range(1, 5)]
    start = 0
    while start < rows:
        n = min(batch_rows, rows - start)
        cols = [pa.array(np.arange(start, start + n, dtype=np.int64))]
        cols += [pa.array(r.random(n)) for r in rngs]
        yield pa.RecordBatch.from_arrays(cols, schema=SCHEMA)
        start += n


def write_arrow(path: str, table: pa.Table) -> None:
    opts = pa.ipc.IpcWriteOptions(compression=None)
    with pa.OSFile(path, "wb") as f, pa.ipc.new_file(f, SCHEMA, options=opts) as w:
        for b in table.to_batches():
            w.write_batch(b)


def write_arrows(path: str, table: pa.Table) -> None:
    opts = pa.ipc.IpcWriteOptions(compression=None)
    with pa.OSFile(path, "wb") as f, pa.ipc.new_stream(f, SCHEMA, options=opts) as w:
        for b in table.to_batches():
            w.write_batch(b)


def write_parquet(path: str, table: pa.Table) -> None:
    import pyarrow.parquet as pq

    pq.write_table(table, path)  # pyarrow defaults: snappy, default row groups


def write_one_row_group(path: str, table: pa.Table) -> None:
    import pyarrow.parquet as pq

    pq.write_table(table, path, row_group_size=table.num_rows)  # snappy, one row group


def write_duckdb_parquet(path: str, table: pa.Table) -> None:
    import duckdb

    con = duckdb.connect()
    con.register("w1", table)
    # preserve_insertion_order is DuckDB's default (true): rows stay in id order.
    con.execute(f"COPY (SELECT * FROM w1) TO '{path}' (FORMAT parquet)")
    con.close()


CATEGORIES = 1000


def categorical_codes(rows: int, seed: int):
    """(codes, order) of w1_cat.parquet: row i's category is order[codes[i]]."""
    rng = np.random.default_rng([seed, 99])
    order = rng.permutation(CATEGORIES)
    return rng.integers(0, CATEGORIES, size=rows, dtype=np.int32), order


def write_categorical(path: str, table: pa.Table, seed: int) -> None:
    import pandas as pd
    import pyarrow.parquet as pq

    codes, order = categorical_codes(table.num_rows, seed)
    cat = pd.Categorical.from_codes(codes, categories=[f"c{k:04d}" for k in order])
    df = pd.DataFrame({"id": table.column("id").to_numpy(), "cat": cat})
    pq.write_table(pa.Table.from_pandas(df, preserve_index=False), path)  # pyarrow defaults


def write_avro(path: str, table: pa.Table) -> None:
    import fastavro

    schema = fastavro.parse_schema({
        "type": "record", "name": "w1",
        "fields": [{"name": "id", "type": "long"}]
        + [{"name": c, "type": "double"} for c in COLUMNS[1:]],
    })

    def records():
        for b in table.to_batches():
            cols = [b.column(i).to_numpy().tolist() for i in range(5)]
            for row in zip(*cols):
                yield dict(zip(COLUMNS, row))

    with open(path, "wb") as f:
        fastavro.writer(f, schema, records(), codec="null")


def write_csv(path: str, table: pa.Table) -> None:
    import pyarrow.csv as pcsv

    try:
        opts = pcsv.WriteOptions(include_header=True, quoting_header="none")
    except TypeError:  # older pyarrow: header names get quoted, still valid CSV
        opts = pcsv.WriteOptions(include_header=True)
    pcsv.write_csv(table, path, opts)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", type=int, default=DEFAULT_ROWS, help="rows (default 2^25)")
    ap.add_argument("--seed", type=int, default=DEFAULT_SEED)
    ap.add_argument("--batch-rows", type=int, default=1 << 20,
                    help="rows per IPC record batch in w1.arrow (default 2^20)")
    ap.add_argument("--out", default=os.path.join(HERE, "data"), help="output dir (default bench/data)")
    ap.add_argument("--avro", action="store_true", help="also write w1.avro (slow: minutes at full size)")
    ap.add_argument("--csv", action="store_true", help="also write w1.csv")
    ap.add_argument("--categorical", action="store_true", help="also write w1_cat.parquet")
    ap.add_argument("--one-row-group", action="store_true",
                    help="also write w1_1rg.parquet (one row group)")
    ap.add_argument("--only", default="", help="comma list of files to (re)write, e.g. arrow,parquet"
                    " (a name that matches nothing, e.g. meta, only rewrites w1.meta.json)")
    ap.add_argument("--force", action="store_true", help="rewrite files that already exist")
    args = ap.parse_args(argv)

    os.makedirs(args.out, exist_ok=True)
    writers = [("arrow", "w1.arrow", write_arrow), ("arrows", "w1.arrows", write_arrows),
               ("parquet", "w1.parquet", write_parquet),
               ("duckdb", "w1_duckdb.parquet", write_duckdb_parquet)]
    if args.avro:
        writers.append(("avro", "w1.avro", write_avro))
    if args.csv:
        writers.append(("csv", "w1.csv", write_csv))
    if args.categorical:
        writers.append(("categorical", "w1_cat.parquet",
                        lambda path, table: write_categorical(path, table, args.seed)))
    if args.one_row_group:
        writers.append(("one_row_group", "w1_1rg.parquet", write_one_row_group))
    if args.only:
        wanted = set(args.only.split(","))
        writers = [w for w in writers if w[0] in wanted or w[1] in wanted]

    meta_path = os.path.join(args.out, "w1.meta.json")
    meta = {}
    if os.path.exists(meta_path):
        with open(meta_path) as f:
            meta = json.load(f)
        if meta.get("rows") != args.rows or meta.get("seed") != args.seed:
            if not args.force:
                log(f"{meta_path} describes rows={meta.get('rows')} seed={meta.get('seed')}; "
                    "use --force (or another --out) to regenerate")
                return 2
            meta = {}

    t0 = time.perf_counter()
    table = pa.Table.from_batches(list(batches(args.rows, args.seed, args.batch_rows)), schema=SCHEMA)
    log(f"generated {table.num_rows:,} rows ({table.nbytes / 1e9:.3f} GB) in {time.perf_counter() - t0:.1f}s")

    sum_id = args.rows * (args.rows - 1) // 2
    sum_x = {c: math.fsum(float(np.sum(ch.to_numpy())) for ch in table.column(c).chunks)
             for c in COLUMNS[1:]}  # numpy pairwise per chunk, exact sum of the chunk sums
    files = dict(meta.get("files", {}))
    categorical = meta.get("categorical")
    if args.categorical:
        codes, order = categorical_codes(args.rows, args.seed)
        categorical = {"rows": args.rows, "sum_id": sum_id,
                       "sum_x": {"cat": float(np.sum(order[codes], dtype=np.int64))}}
    for key, name, fn in writers:
        path = os.path.join(args.out, name)
        if os.path.exists(path) and not args.force and name in files:
            log(f"{name}: exists, skipping (use --force)")
            continue
        t0 = time.perf_counter()
        tmp = path + ".tmp"
        fn(tmp, table)
        os.replace(tmp, path)
        files[name] = {"bytes": os.path.getsize(path), "writer": key,
                       "seconds": round(time.perf_counter() - t0, 2)}
        log(f"{name}: {files[name]['bytes']:,} bytes in {files[name]['seconds']}s")

    meta = {
        "workload": "w1", "rows": args.rows, "seed": args.seed, "batch_rows": args.batch_rows,
        "columns": {f.name: str(f.type) for f in SCHEMA},
        "table_bytes": table.nbytes,
        "sum_id": sum_id, "sum_x1": sum_x["x1"], "sum_x": sum_x,
        "versions": {"pyarrow": pa.__version__, "numpy": np.__version__},
        "files": files,
    }
    if categorical is not None:
        meta["categorical"] = categorical
    for mod in ("duckdb", "fastavro"):
        try:
            meta["versions"][mod] = __import__(mod).__version__
        except Exception:
            pass
    with open(meta_path + ".tmp", "w") as f:
        json.dump(meta, f, indent=2)
    os.replace(meta_path + ".tmp", meta_path)
    log(f"wrote {meta_path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
