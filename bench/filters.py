"""Row filters on W1's Parquet file: sluice.read(filters=...) beside the
peers doing the same in one run (pyarrow.parquet.read_table(filters=...),
polars scan_parquet().filter().collect(), DuckDB SELECT * ... WHERE into
Arrow), in one process each, best of --repeat after a warm-up. Five filters:
one no row group statistic can exclude (x1 > 0.9: a tenth of the rows of
every row group), one that excludes all row groups but the first
(id < 1,000,000), and a point lookup of one x1 value in w1_bloom.parquet
(w1.parquet rewritten by pyarrow with a Bloom filter on x1, made here on
first use), where only the Bloom filters can exclude row groups; and a
point lookup of one user in w1_dict.parquet (w1.parquet with a string
column `user` added by pyarrow, default options: dictionary-encoded, no
Bloom filter; 64 consecutive rows per user, users in random order, so every
row group's min/max span nearly all users), where only the dictionary pages
can exclude row groups; and two OR groups (pyarrow's list of lists) that
statistics settle. Every tool's row count must agree.

usage: python bench/filters.py [--data bench/data] [--repeat 5] [--out bench/results]
Writes <out>/<date>-filters.json and .png.
"""
from __future__ import annotations

import argparse
import datetime as dt
import os
import sys

from inprocess import HERE, machine, save, timed

CASES = [  # (label, file, column, op, value; None = picked from the file)
    ("x1 > 0.9 (no row group excluded)", "w1.parquet", "x1", ">", 0.9),
    ("id < 1,000,000 (31 of 32 row groups excluded)", "w1.parquet", "id", "<", 1000000),
    ("x1 = one value (Bloom filters exclude 31 of 32)", "w1_bloom.parquet", "x1", "=", None),
    ("user = one user (dictionaries exclude 31 of 32)", "w1_dict.parquet", "user", "=", None),
    # Two groups, either of which may hold (pyarrow's OR of ANDs): the first
    # and the last row group survive their statistics.
    ("id < 500,000 or id >= 33,000,000 (30 of 32 excluded)", "w1.parquet", "id", "or",
     [[("id", "<", 500_000)], [("id", ">=", 33_000_000)]]),
]
BLOOM_ROW = 20_000_000  # the row whose x1 the lookup asks for


def bloom_file(data):
    """w1_bloom.parquet (w1.parquet with a Bloom filter on x1, by pyarrow) and
    the x1 value of row BLOOM_ROW."""
    import pyarrow.parquet as pq
    src, dst = os.path.join(data, "w1.parquet"), os.path.join(data, "w1_bloom.parquet")
    if not os.path.exists(dst):
        meta = pq.ParquetFile(src).metadata
        per_group = meta.row_group(0).num_rows
        pq.write_table(pq.read_table(src), dst + ".tmp", row_group_size=per_group,
                       compression="snappy",
                       bloom_filter_options={"x1": {"ndv": per_group, "fpp": 0.01}})
        os.replace(dst + ".tmp", dst)
    pf = pq.ParquetFile(dst)
    per_group = pf.metadata.row_group(0).num_rows
    group = pf.read_row_group(BLOOM_ROW // per_group, columns=["x1"])
    return dst, group["x1"][BLOOM_ROW % per_group].as_py()


DICT_ROW = 20_000_000  # the row whose user the lookup asks for


def user_of(session, sessions):
    """A user name for a run of 64 rows, in an order unrelated to the rows."""
    return "user-%08d" % (session * 2654435761 % sessions)


def dict_file(data):
    """w1_dict.parquet (w1.parquet plus a `user` string column, by pyarrow
    with its defaults) and the user of row DICT_ROW."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq
    src, dst = os.path.join(data, "w1.parquet"), os.path.join(data, "w1_dict.parquet")
    meta = pq.ParquetFile(src).metadata
    sessions = (meta.num_rows + 63) // 64
    if not os.path.exists(dst):
        per_group = meta.row_group(0).num_rows
        t = pq.read_table(src)
        session = np.arange(sessions, dtype=np.int64)
        names = np.char.add("user-", np.char.zfill((session * 2654435761 % sessions)
                                                   .astype(str), 8))
        users = pa.array(np.repeat(names, 64)[:t.num_rows])
        pq.write_table(t.append_column("user", users), dst + ".tmp", row_group_size=per_group,
                       compression="snappy")
        os.replace(dst + ".tmp", dst)
    return dst, user_of(DICT_ROW // 64, sessions)


def _duck_arrow(relation):
    """The relation as a pyarrow Table (to_arrow_table in DuckDB 1.4+)."""
    to_table = getattr(relation, "to_arrow_table", None) or relation.fetch_arrow_table
    return to_table()


def tools(path, column, op, value):
    import duckdb
    import polars as pl
    import pyarrow.parquet as pq

    import sluice

    ops = {">": lambda c, v: pl.col(c) > v, "<": lambda c, v: pl.col(c) < v,
           ">=": lambda c, v: pl.col(c) >= v, "=": lambda c, v: pl.col(c) == v}
    if op == "or":  # value: groups of (column, op, value), any of which may hold
        flt = value
        expr = None
        where, params = [], []
        for group in value:
            e = None
            for c, o, v in group:
                e = ops[o](c, v) if e is None else e & ops[o](c, v)
                params.append(v)
            expr = e if expr is None else expr | e
            where.append("(" + " and ".join(f"{c} {o} ?" for c, o, _ in group) + ")")
        where = " or ".join(where)
    else:
        flt = [(column, op, value)]
        expr = ops[op](column, value)
        where, params = f"{column} {op} ?", [value]
    return {
        "sluice.read(filters=)": lambda: sluice.read(path, filters=flt).num_rows,
        "pyarrow read_table(filters=)": lambda: pq.read_table(path, filters=flt).num_rows,
        "polars scan_parquet().filter().collect()":
            lambda: pl.scan_parquet(path).filter(expr).collect().height,
        "duckdb SELECT * WHERE -> Arrow": lambda: _duck_arrow(duckdb.sql(
            f"select * from read_parquet('{path}') where {where}", params=params)).num_rows,
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default=os.path.join(HERE, "data"))
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--out", default=os.path.join(HERE, "results"))
    args = ap.parse_args()
    path = os.path.join(args.data, "w1.parquet")
    if not os.path.exists(path):
        print(f"no {path}: run bench/gen_w1.py first", file=sys.stderr)
        return 2
    with open(path, "rb") as f:  # page cache warm
        while f.read(1 << 24):
            pass
    results = []
    for label, name_of_file, column, op, value in CASES:
        file = path
        if name_of_file in ("w1_bloom.parquet", "w1_dict.parquet"):
            make = bloom_file if name_of_file == "w1_bloom.parquet" else dict_file
            file, value = make(args.data)
            with open(file, "rb") as f:
                while f.read(1 << 24):
                    pass
        counts = {}
        for name, fn in tools(file, column, op, value).items():
            times, counts[name] = timed(fn, args.repeat)
            results.append({"case": label, "tool": name, "seconds": times,
                            "best_s": times[0], "median_s": times[len(times) // 2],
                            "rows": counts[name]})
            print(f"{label:48s} {name:42s} median {times[len(times) // 2]:.3f} s  "
                  f"rows {counts[name]}", flush=True)
        if len(set(counts.values())) != 1:
            print(f"row counts differ for {label}: {counts}", file=sys.stderr)
            return 1
    doc = {"workload": "w1-filters", "date": dt.date.today().isoformat(),
           "machine": machine(),
           "method": f"in one process, best/median of {args.repeat} after one warm-up; page "
                     "cache warm; the time of the call that returns the filtered table",
           "results": results}
    panels = [(label, [r for r in results if r["case"] == label]) for label, *_rest in CASES]
    save(args.out, "w1-filters", doc, panels, (3.2 * len(CASES), 4))
    return 0


if __name__ == "__main__":
    sys.exit(main())
