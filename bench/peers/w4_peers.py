#!/usr/bin/env python3
"""The peers' side of W4, one process per measurement (bench/run.py starts it).

  query TOOL s1 PATH   SELECT count(*), max(greatest(val2, val3)) over s1.parquet
  query TOOL s3 PATH   SELECT count(*), max(data) over s3.parquet
(PATH ending in .csv: the header-less CSV copy, with the columns given;
.csv.gz: the same, gzip'd.)

TOOL: duckdb (SQL over read_parquet), polars (scan_parquet, lazy: reads only
the columns the query needs), pyarrow (pyarrow.dataset to_table of the needed
columns, then pyarrow.compute). Each imports only the library it measures and
prints one JSON line: rows (the count), max, load_s (the query, imports
excluded), version.
"""
from __future__ import annotations

import json
import sys
import time


# The columns of the header-less CSV copies, as each reader is told them.
COLUMNS = {
    "s1": [("id", "string"), ("timestamp", "int64")] + [(f"val{i}", "int32")
                                                        for i in range(1, 11)],
    "s3": [("id", "string"), ("timestamp", "int64"), ("data", "string")],
}
DUCKDB_TYPES = {"string": "VARCHAR", "int64": "BIGINT", "int32": "INTEGER"}


def query(tool: str, which: str, path: str) -> dict:
    t0 = time.perf_counter()
    csv = path.endswith(".csv") or path.endswith(".csv.gz")
    gz = path.endswith(".gz")
    columns = COLUMNS[which]
    if tool == "duckdb":
        import duckdb

        con = duckdb.connect()
        agg = "max(greatest(val2, val3))" if which == "s1" else "max(data)"
        if csv:
            spec = ", ".join(f"'{n}': '{DUCKDB_TYPES[t]}'" for n, t in columns)
            source = f"read_csv(?, header=false, columns={{{spec}}})"
        else:
            source = "read_parquet(?)"
        rows, mx = con.execute(f"SELECT count(*), {agg} FROM {source}", [path]).fetchone()
        version = duckdb.__version__
    elif tool == "polars":
        import polars as pl

        agg = pl.max_horizontal("val2", "val3").max() if which == "s1" else pl.col("data").max()
        types = {"string": pl.String, "int64": pl.Int64, "int32": pl.Int32}
        schema = {n: types[t] for n, t in columns}
        if gz:  # scan_csv reads no compressed files
            need = [i for i, (n, _) in enumerate(columns) if n in ("val2", "val3", "data")]
            lazy = pl.read_csv(path, has_header=False, schema=schema, columns=need).lazy()
        elif csv:
            lazy = pl.scan_csv(path, has_header=False, schema=schema)
        else:
            lazy = pl.scan_parquet(path)
        df = lazy.select(pl.len().alias("n"), agg.alias("m")).collect()
        rows, mx = int(df["n"][0]), df["m"][0]
        version = pl.__version__
    elif tool == "pyarrow":
        import pyarrow as pa
        import pyarrow.compute as pc
        import pyarrow.csv as pacsv
        import pyarrow.dataset as ds

        cols = ["val2", "val3"] if which == "s1" else ["data"]
        if gz:
            table = pacsv.read_csv(path, read_options=pacsv.ReadOptions(
                column_names=[n for n, _ in columns]), convert_options=pacsv.ConvertOptions(
                column_types={n: pa.type_for_alias(t) for n, t in columns},
                include_columns=cols))
        elif csv:
            fmt = ds.CsvFileFormat(
                read_options=pacsv.ReadOptions(column_names=[n for n, _ in columns]),
                convert_options=pacsv.ConvertOptions(
                    column_types={n: pa.type_for_alias(t) for n, t in columns}))
        else:
            fmt = "parquet"
        if not gz:
            table = ds.dataset(path, format=fmt).to_table(columns=cols)
        rows = table.num_rows
        if which == "s1":
            mx = pc.max(pc.max_element_wise(table["val2"], table["val3"])).as_py()
        else:
            mx = pc.max(table["data"]).as_py()
        version = pa.__version__
    else:
        raise SystemExit(f"unknown tool {tool}")
    return {"tool": tool, "rows": int(rows), "max": mx, "load_s": time.perf_counter() - t0,
            "version": version}


def main(argv) -> int:
    if len(argv) != 4 or argv[0] != "query" or argv[2] not in ("s1", "s3"):
        print("usage: w4_peers.py query duckdb|polars|pyarrow s1|s3 PATH", file=sys.stderr)
        return 2
    sys.stdout.write(json.dumps(query(argv[1], argv[2], argv[3])) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
