#!/usr/bin/env python3
"""W2 generator (BENCHMARKS.md): wide Avro records, written by fastavro.

2,999 rows by default: `uid` long (1..n), `random` double uniform [0,1),
`uuid1`, `uuid2` strings (random UUIDs, version 4), `features`
array<double> of 16,000 uniform [0,1) values (384 MB of doubles).

Writes into --out (default bench/data/):
  w2_null.avro, w2_deflate.avro, w2_snappy.avro, w2_zstandard.avro
      fastavro, one codec each (sync_interval 16000 bytes: fastavro's default;
      with these rows that is one row per block)
  w2.arrow   the same table as an Arrow IPC file (pyarrow, uncompressed), the
             input of the write task
  w2.meta.json  the reference: rows, sum(uid), sum(random), sum(features),
             the table's Arrow size, file sizes

Seeded: one numpy PCG64 stream per column, seeded with (seed, column), so the
values do not depend on how the rows are batched.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import time
import uuid

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
CODECS = ["null", "deflate", "snappy", "zstandard"]
WIDTH = 16_000
SCHEMA = {
    "type": "record", "name": "W2", "namespace": "sluice.bench",
    "fields": [
        {"name": "uid", "type": "long"},
        {"name": "random", "type": "double"},
        {"name": "uuid1", "type": "string"},
        {"name": "uuid2", "type": "string"},
        {"name": "features", "type": {"type": "array", "items": "double"}},
    ],
}
CHUNK = 100  # rows generated at a time


def columns(rows: int, seed: int, width: int):
    """Yields (uid, random, uuid1, uuid2, features) chunks of CHUNK rows."""
    rng = {name: np.random.Generator(np.random.PCG64([seed, i]))
           for i, name in enumerate(["random", "uuid1", "uuid2", "features"])}
    for start in range(0, rows, CHUNK):
        n = min(CHUNK, rows - start)
        uid = np.arange(start + 1, start + n + 1, dtype=np.int64)
        rnd = rng["random"].random(n)
        u = [[str(uuid.UUID(bytes=rng[k].bytes(16), version=4)) for _ in range(n)]
             for k in ("uuid1", "uuid2")]
        feats = rng["features"].random((n, width))
        yield uid, rnd, u[0], u[1], feats


def rows_of(rows: int, seed: int, width: int):
    for uid, rnd, u1, u2, feats in columns(rows, seed, width):
        for i in range(len(uid)):
            yield {"uid": int(uid[i]), "random": float(rnd[i]), "uuid1": u1[i], "uuid2": u2[i],
                   "features": feats[i].tolist()}


def write_arrow(path: str, rows: int, seed: int, width: int) -> dict:
    import pyarrow as pa
    schema = pa.schema([("uid", pa.int64()), ("random", pa.float64()), ("uuid1", pa.string()),
                        ("uuid2", pa.string()), ("features", pa.list_(pa.float64()))])
    sums = {"uid": 0, "random": [], "features": []}
    nbytes = 0
    with pa.OSFile(path + ".tmp", "wb") as sink, pa.ipc.new_file(sink, schema) as w:
        for uid, rnd, u1, u2, feats in columns(rows, seed, width):
            values = pa.array(feats.reshape(-1), pa.float64())
            offsets = pa.array(np.arange(0, (len(uid) + 1) * width, width, dtype=np.int32))
            batch = pa.record_batch([pa.array(uid), pa.array(rnd), pa.array(u1), pa.array(u2),
                                     pa.ListArray.from_arrays(offsets, values)], schema=schema)
            w.write_batch(batch)
            nbytes += batch.nbytes
            sums["uid"] += int(uid.sum())
            sums["random"].append(float(rnd.sum()))
            sums["features"].append(float(feats.sum()))
    os.replace(path + ".tmp", path)
    return {"sum_id": sums["uid"], "sum_x": {"random": math.fsum(sums["random"]),
                                             "features": math.fsum(sums["features"])},
            "table_bytes": nbytes}


def write_avro(path: str, codec: str, rows: int, seed: int, width: int) -> None:
    import fastavro
    parsed = fastavro.parse_schema(SCHEMA)
    with open(path + ".tmp", "wb") as f:
        fastavro.writer(f, parsed, rows_of(rows, seed, width), codec=codec)
    os.replace(path + ".tmp", path)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rows", type=int, default=2999)
    ap.add_argument("--width", type=int, default=WIDTH, help="items per features array")
    ap.add_argument("--seed", type=int, default=20261130)
    ap.add_argument("--out", default=os.path.join(HERE, "data"))
    args = ap.parse_args(argv)
    os.makedirs(args.out, exist_ok=True)
    meta_path = os.path.join(args.out, "w2.meta.json")
    t0 = time.perf_counter()
    arrow = os.path.join(args.out, "w2.arrow")
    ref = write_arrow(arrow, args.rows, args.seed, args.width)
    print(f"wrote {arrow} ({time.perf_counter() - t0:.1f}s)", flush=True)
    files = {"w2.arrow": {"bytes": os.path.getsize(arrow), "writer": "pyarrow"}}
    for codec in CODECS:
        path = os.path.join(args.out, f"w2_{codec}.avro")
        t = time.perf_counter()
        write_avro(path, codec, args.rows, args.seed, args.width)
        files[os.path.basename(path)] = {"bytes": os.path.getsize(path), "writer": "fastavro",
                                         "codec": codec}
        print(f"wrote {path} ({time.perf_counter() - t:.1f}s, "
              f"{os.path.getsize(path) / 1e6:.0f} MB)", flush=True)
    meta = {"workload": "w2", "rows": args.rows, "width": args.width, "seed": args.seed,
            **ref, "files": files}
    with open(meta_path, "w") as f:
        json.dump(meta, f, indent=1)
    print(f"wrote {meta_path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
