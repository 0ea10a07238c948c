#!/usr/bin/env python3
"""The Python peers' side of W2, one process per measurement (bench/run.py
starts it). Each subcommand imports only what it measures, does the task and
prints one JSON line like bench/load_arrow: rows, sum_id (the long column),
sum_x (`random`, and the items of `features`), load_s (the timed work) and
verify_s (the checksum pass).

  read fastavro PATH            fastavro.reader -> records (dicts), then the
                                Arrow table built from them (features as
                                list<double>); load_s is both, decode_s the first
  read polars PATH              pl.read_avro(PATH) (polars' own Avro reader)
  write fastavro SRC DST CODEC  the Arrow IPC file SRC (memory-mapped) ->
                                Python records -> fastavro.writer(DST, codec);
                                load_s is both, to_python_s the first
  check PATH                    untimed: reads an Avro file written by a tool
                                under test with polars and checksums it
"""
from __future__ import annotations

import json
import sys
import time


def emit(**fields) -> None:
    sys.stdout.write(json.dumps(fields) + "\n")
    sys.stdout.flush()


def arrow_sums(table):
    import pyarrow.compute as pc
    return {"rows": table.num_rows, "sum_id": pc.sum(table.column("uid")).as_py() or 0,
            "sum_x": {"random": pc.sum(table.column("random")).as_py() or 0.0,
                      "features": pc.sum(pc.list_flatten(table.column("features"))).as_py() or 0.0}}


def read_fastavro(path: str) -> None:
    import fastavro
    import pyarrow as pa
    t0 = time.perf_counter()
    with open(path, "rb") as f:
        records = list(fastavro.reader(f))
    t1 = time.perf_counter()
    table = pa.table({
        "uid": pa.array([r["uid"] for r in records], pa.int64()),
        "random": pa.array([r["random"] for r in records], pa.float64()),
        "uuid1": pa.array([r["uuid1"] for r in records], pa.string()),
        "uuid2": pa.array([r["uuid2"] for r in records], pa.string()),
        "features": pa.array([r["features"] for r in records], pa.list_(pa.float64())),
    })
    del records
    t2 = time.perf_counter()
    sums = arrow_sums(table)
    t3 = time.perf_counter()
    emit(tool="fastavro", **sums, load_s=t2 - t0, decode_s=t1 - t0, verify_s=t3 - t2,
         version=fastavro.__version__)


def polars_sums(df):
    import polars as pl
    return {"rows": df.height, "sum_id": int(df["uid"].sum()),
            "sum_x": {"random": float(df["random"].sum()),
                      "features": float(df.select(pl.col("features").explode().sum()).item())}}


def read_polars(path: str) -> None:
    import polars as pl
    t0 = time.perf_counter()
    df = pl.read_avro(path)
    t1 = time.perf_counter()
    sums = polars_sums(df)
    t2 = time.perf_counter()
    emit(tool="polars", **sums, load_s=t1 - t0, verify_s=t2 - t1, version=pl.__version__)


def write_fastavro(src: str, dst: str, codec: str) -> None:
    import fastavro
    import pyarrow as pa
    t0 = time.perf_counter()
    with pa.memory_map(src, "r") as f:
        table = pa.ipc.open_file(f).read_all()
    schema = fastavro.parse_schema({
        "type": "record", "name": "W2", "namespace": "sluice.bench",
        "fields": [{"name": "uid", "type": "long"}, {"name": "random", "type": "double"},
                   {"name": "uuid1", "type": "string"}, {"name": "uuid2", "type": "string"},
                   {"name": "features", "type": {"type": "array", "items": "double"}}]})
    records = []
    for batch in table.to_batches():
        cols = {n: batch.column(n) for n in ("uid", "random", "uuid1", "uuid2")}
        py = {n: c.to_pylist() for n, c in cols.items()}
        feats = batch.column("features")
        values = feats.values.to_numpy(zero_copy_only=False)
        offsets = feats.offsets.to_numpy()
        for i in range(batch.num_rows):
            records.append({"uid": py["uid"][i], "random": py["random"][i], "uuid1": py["uuid1"][i],
                            "uuid2": py["uuid2"][i],
                            "features": values[offsets[i]:offsets[i + 1]].tolist()})
    t1 = time.perf_counter()
    with open(dst, "wb") as out:
        fastavro.writer(out, schema, records, codec=codec)
    t2 = time.perf_counter()
    emit(tool="fastavro", rows=len(records), load_s=t2 - t0, to_python_s=t1 - t0,
         version=fastavro.__version__)


def check(path: str) -> None:
    import polars as pl
    emit(tool="polars-check", **polars_sums(pl.read_avro(path)))


def main(argv: list) -> int:
    if argv[:2] == ["read", "fastavro"]:
        read_fastavro(argv[2])
    elif argv[:2] == ["read", "polars"]:
        read_polars(argv[2])
    elif argv[:2] == ["write", "fastavro"]:
        write_fastavro(argv[2], argv[3], argv[4])
    elif argv[:1] == ["check"]:
        check(argv[1])
    else:
        print(__doc__, file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
