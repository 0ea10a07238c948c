"""Fields of a struct column read from Parquet: sluice.read(columns=["st.x"])
beside the peers selecting the same field in one run
(pyarrow.parquet.read_table(columns=["st.x"]), polars
scan_parquet().select(pl.col("st").struct.field("x")), DuckDB
SELECT st.x into Arrow), in one process each, median of --repeat after a
warm-up. The file (bench/data/nested.parquet, made here on first use by
pyarrow with its defaults: snappy, dictionary where it pays) holds --rows
rows of `id` and a struct `st` of ten fields: x int64, f0..f7 float64
(seeded uniform) and s, a 17-byte string. Cases: one field, two fields,
and the whole struct (what reading every leaf costs). Every tool's sum of
x (or row count) must agree.

usage: python bench/nested_fields.py [--data bench/data] [--rows 4000000] [--repeat 5]
       [--out bench/results]
Writes <out>/<date>-nested-fields.json and .png.
"""
from __future__ import annotations

import argparse
import datetime as dt
import os
import sys

from inprocess import HERE, machine, save, timed

CASES = [["st.x"], ["st.x", "st.f3"], ["st"]]


def nested_file(data: str, rows: int) -> str:
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq
    path = os.path.join(data, "nested.parquet")
    if os.path.exists(path) and pq.ParquetFile(path).metadata.num_rows == rows:
        return path
    rng = np.random.default_rng(20261207)
    fields = {"x": pa.array(np.arange(rows, dtype=np.int64))}
    for i in range(8):
        fields[f"f{i}"] = pa.array(rng.random(rows))
    s = pa.array(np.char.add("value-", np.char.zfill(np.arange(rows).astype(str), 11)))
    fields["s"] = s.combine_chunks() if isinstance(s, pa.ChunkedArray) else s
    st = pa.StructArray.from_arrays(list(fields.values()), names=list(fields))
    os.makedirs(data, exist_ok=True)
    pq.write_table(pa.table({"id": np.arange(rows, dtype=np.int64), "st": st}), path + ".tmp")
    os.replace(path + ".tmp", path)
    return path


def _duck_arrow(relation):
    to_table = getattr(relation, "to_arrow_table", None) or relation.fetch_arrow_table
    return to_table()


def check_value(table) -> int:
    """sum(x) where the table has x (a field asked), else its rows."""
    import pyarrow as pa
    import pyarrow.compute as pc
    t = table if isinstance(table, pa.Table) else pa.table(table)
    if "x" in t.column_names:
        return int(pc.sum(t.column("x")).as_py())
    return t.num_rows


def tools(path: str, names: list):
    import duckdb
    import polars as pl
    import pyarrow.parquet as pq

    import sluice

    def polars_select():
        exprs = [pl.col("st").struct.field(n.split(".", 1)[1]) if "." in n else pl.col(n)
                 for n in names]
        return pl.scan_parquet(path).select(exprs).collect().to_arrow()

    select = ", ".join(names)
    return {
        "sluice.read(columns=)": lambda: check_value(sluice.read(path, columns=names)),
        "pyarrow read_table(columns=)":
            lambda: check_value(pq.read_table(path, columns=names)),
        "polars scan_parquet().select()": lambda: check_value(polars_select()),
        "duckdb SELECT -> Arrow": lambda: check_value(_duck_arrow(duckdb.sql(
            f"select {select} from read_parquet('{path}')"))),
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default=os.path.join(HERE, "data"))
    ap.add_argument("--rows", type=int, default=4_000_000)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--out", default=os.path.join(HERE, "results"))
    args = ap.parse_args()
    path = nested_file(args.data, args.rows)
    with open(path, "rb") as f:  # page cache warm
        while f.read(1 << 24):
            pass
    results = []
    for names in CASES:
        label = ",".join(names)
        checks = {}
        for name, fn in tools(path, names).items():
            times, checks[name] = timed(fn, args.repeat)
            results.append({"case": label, "tool": name, "seconds": times,
                            "best_s": times[0], "median_s": times[len(times) // 2],
                            "check": checks[name]})
            print(f"{label:12s} {name:32s} median {times[len(times) // 2]:.3f} s  "
                  f"check {checks[name]}", flush=True)
        if len(set(checks.values())) != 1:
            print(f"results differ for {label}: {checks}", file=sys.stderr)
            return 1
    doc = {"workload": "nested-fields", "date": dt.date.today().isoformat(),
           "machine": machine(),
           "file": {"rows": args.rows, "bytes": os.path.getsize(path)},
           "method": f"in one process, best/median of {args.repeat} after one warm-up; page "
                     "cache warm; the time of the call that returns the table",
           "results": results}
    panels = [(f"columns={','.join(n)}", [r for r in results if r["case"] == ",".join(n)])
              for n in CASES]
    save(args.out, "nested-fields", doc, panels, (3.6 * len(CASES), 3.6))
    return 0


if __name__ == "__main__":
    sys.exit(main())
