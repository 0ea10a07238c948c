#!/usr/bin/env python3
"""The peers' side of W1, one process per measurement (bench/run.py starts it).

Each subcommand imports only the library it measures, does the task, then
prints one JSON line on stdout with the same fields bench/load_arrow prints:
rows, sum_id, sum_x (per float64 column), load_s (the timed work, imports
excluded) and verify_s (the checksum pass, which touches every value so that
lazily mapped data is paid for somewhere), plus `mapped_bytes`: how much of
the input file is memory-mapped into this process after the load (read from
/proc/self/maps), so the report can say who copies and who maps.

  load pyarrow-file PATH   pa.ipc.open_file(pa.OSFile(PATH)).read_all()
                           reads the file into buffers pyarrow allocates
                           (what pa.ipc.open_file(str_path) does too)
  load pyarrow-mmap PATH   pa.ipc.open_file(pa.memory_map(PATH)).read_all()
                           zero-copy: the table's buffers point into the map
  load polars PATH         pl.read_ipc(PATH), polars' defaults (in polars 2.x:
                           scan_ipc(PATH).collect(); polars decides whether to
                           map; there is no memory_map= argument any more)
  load TOOL PATH           the other W1 files: pyarrow-parquet (pq.read_table),
                           pyarrow-csv (pyarrow.csv.read_csv), duckdb (SELECT *
                           FROM read_parquet/read_csv -> fetch_arrow_table),
                           polars-parquet / polars-csv / polars-avro
                           (pl.read_*), fastavro (records -> pa.Table.from_pylist)
  convert pyarrow SRC DST  memory-mapped read_all + RecordBatchStreamWriter
                           to DST (IPC stream, uncompressed), batch by batch
  convert polars SRC DST   pl.read_ipc(SRC).write_ipc_stream(DST)
  write-parquet TOOL SRC DST
                           reads SRC (IPC file) into memory, then writes it
                           as Parquet with snappy; load_s times the write
                           only: pyarrow (pq.write_table), duckdb (COPY of
                           the registered Arrow table ... (FORMAT parquet,
                           COMPRESSION snappy)), polars (read_ipc +
                           write_parquet(compression="snappy"))
  write-csv TOOL SRC DST   the same for CSV (header line, comma): pyarrow
                           (pyarrow.csv.write_csv), duckdb (COPY ... (FORMAT
                           csv, HEADER)), polars (write_csv)
  produce pyarrow SRC      IPC stream of SRC on stdout (memory-mapped file,
                           RecordBatchStreamWriter, one batch at a time)
  consume                  reads an IPC stream on stdin with
                           pa.ipc.open_stream(sys.stdin.buffer), checksums each
                           batch and drops it
"""
from __future__ import annotations

import json
import os
import sys
import time


def mapped_bytes(path: str) -> int:
    """Bytes of `path` mapped into this process right now."""
    real = os.path.realpath(path)
    total = 0
    try:
        with open("/proc/self/maps") as f:
            for line in f:
                parts = line.split(None, 5)
                if len(parts) == 6 and parts[5].strip() == real:
                    lo, hi = (int(x, 16) for x in parts[0].split("-"))
                    total += hi - lo
    except OSError:
        return -1
    return total


def emit(**fields) -> None:
    sys.stdout.write(json.dumps(fields) + "\n")
    sys.stdout.flush()


def arrow_checksum(table):
    """rows, sum(id), {float column: sum} of a pyarrow Table or RecordBatch."""
    import pyarrow as pa
    import pyarrow.compute as pc

    sum_id = 0
    sum_x = {}
    for name, col in zip(table.schema.names, table.columns):
        if col.type == pa.int64():
            s = pc.sum(col).as_py()
            sum_id += s or 0
        elif col.type == pa.float64():
            s = pc.sum(col).as_py()
            sum_x[name] = s or 0.0
        elif pa.types.is_dictionary(col.type) or pa.types.is_string(col.type):
            sum_x[name] = spelled_number_sum(pc.value_counts(col))
    return table.num_rows, sum_id, sum_x


def spelled_number_sum(counts) -> float:
    """sum over the rows of the number each string spells after its first
    character ("c0042" -> 42), from a value_counts struct array (w1_cat's
    categorical; load_arrow computes the same)."""
    values = counts.field("values")
    if hasattr(values, "dictionary_decode"):
        values = values.dictionary_decode()
    return float(sum(int(v[1:]) * n for v, n in zip(values.to_pylist(),
                                                     counts.field("counts").to_pylist())
                     if v is not None))


def load_pyarrow(path: str, mmap: bool) -> None:
    import pyarrow as pa
    import pyarrow.ipc  # noqa: F401

    t0 = time.perf_counter()
    source = pa.memory_map(path, "r") if mmap else pa.OSFile(path, "rb")
    table = pa.ipc.open_file(source).read_all()
    t1 = time.perf_counter()
    rows, sum_id, sum_x = arrow_checksum(table)
    t2 = time.perf_counter()
    emit(tool="pyarrow", rows=rows, batches=table.column(0).num_chunks, sum_id=sum_id,
         sum_x=sum_x, load_s=t1 - t0, verify_s=t2 - t1, mapped_bytes=mapped_bytes(path),
         version=pa.__version__)
    del table
    source.close()


def load_polars(path: str) -> None:
    import polars as pl

    t0 = time.perf_counter()
    df = pl.read_ipc(path)
    t1 = time.perf_counter()
    sum_id = 0
    sum_x = {}
    for name, dtype in df.schema.items():
        if dtype == pl.Int64:
            sum_id += int(df[name].sum())
        elif dtype == pl.Float64:
            sum_x[name] = float(df[name].sum())
    t2 = time.perf_counter()
    emit(tool="polars", rows=df.height, batches=df.n_chunks(), sum_id=sum_id, sum_x=sum_x,
         load_s=t1 - t0, verify_s=t2 - t1, mapped_bytes=mapped_bytes(path),
         version=pl.__version__)


def load_other(tool: str, path: str) -> None:
    """Loads one of the other W1 files (Parquet, CSV, Avro) into Arrow memory
    (or the tool's own Arrow-based frame), timed like load_pyarrow."""
    t0 = time.perf_counter()
    if tool == "pyarrow-parquet":
        import pyarrow.parquet as pq
        table = pq.read_table(path)  # pyarrow defaults: threads, no memory map
    elif tool == "pyarrow-csv":
        import pyarrow.csv as pcsv
        table = pcsv.read_csv(path)
    elif tool == "duckdb":
        import duckdb
        con = duckdb.connect()
        fn = "read_parquet" if path.endswith(".parquet") else "read_csv"
        result = con.execute(f"SELECT * FROM {fn}('{path}')")
        # DuckDB 2.x renamed fetch_arrow_table to to_arrow_table.
        fetch = getattr(result, "to_arrow_table", None) or result.fetch_arrow_table
        table = fetch()
    elif tool == "fastavro":
        import fastavro
        import pyarrow as pa
        with open(path, "rb") as f:
            records = list(fastavro.reader(f))
        table = pa.Table.from_pylist(records)
    elif tool.startswith("polars-"):
        import polars as pl
        read = {"polars-parquet": pl.read_parquet, "polars-csv": pl.read_csv,
                "polars-avro": pl.read_avro}[tool]
        df = read(path)
        t1 = time.perf_counter()
        sum_x = {n: float(df[n].sum()) for n, d in df.schema.items() if d == pl.Float64}
        for n, d in df.schema.items():
            if d in (pl.Categorical, pl.Enum, pl.String) or isinstance(d, (pl.Categorical, pl.Enum)):
                counts = df[n].value_counts()
                sum_x[n] = float(sum(int(v[1:]) * c for v, c in counts.iter_rows() if v is not None))
        sum_id = sum(int(df[n].sum()) for n, d in df.schema.items() if d == pl.Int64)
        emit(tool="polars", rows=df.height, batches=df.n_chunks(), sum_id=sum_id, sum_x=sum_x,
             load_s=t1 - t0, verify_s=time.perf_counter() - t1, version=pl.__version__)
        return
    else:
        raise SystemExit(f"unknown tool {tool}")
    t1 = time.perf_counter()
    rows, sum_id, sum_x = arrow_checksum(table)
    emit(tool=tool.split("-")[0], rows=rows, batches=table.column(0).num_chunks, sum_id=sum_id,
         sum_x=sum_x, load_s=t1 - t0, verify_s=time.perf_counter() - t1)


def convert_pyarrow(src: str, dst: str) -> None:
    import pyarrow as pa
    import pyarrow.ipc  # noqa: F401

    t0 = time.perf_counter()
    with pa.memory_map(src, "r") as source:
        table = pa.ipc.open_file(source).read_all()
        with pa.OSFile(dst, "wb") as sink, pa.ipc.new_stream(sink, table.schema) as writer:
            writer.write_table(table)
    t1 = time.perf_counter()
    emit(tool="pyarrow", load_s=t1 - t0, version=pa.__version__)


def convert_polars(src: str, dst: str) -> None:
    import polars as pl

    t0 = time.perf_counter()
    pl.read_ipc(src).write_ipc_stream(dst)
    t1 = time.perf_counter()
    emit(tool="polars", load_s=t1 - t0, version=pl.__version__)


def write_table(kind: str, tool: str, src: str, dst: str) -> None:
    """An in-memory table (read from the IPC file, untimed) written as
    Parquet with snappy (kind "parquet") or as CSV with a header line (kind
    "csv"); load_s is the write alone."""
    if tool == "polars":
        import polars as pl

        df = pl.read_ipc(src).rechunk()  # rechunk: one owned copy in memory
        t0 = time.perf_counter()
        if kind == "parquet":
            df.write_parquet(dst, compression="snappy")
        else:
            df.write_csv(dst)
        emit(tool="polars", load_s=time.perf_counter() - t0, version=pl.__version__)
        return
    import pyarrow as pa
    import pyarrow.ipc  # noqa: F401

    table = pa.ipc.open_file(pa.OSFile(src, "rb")).read_all()  # in memory, not mapped
    t0 = time.perf_counter()
    if tool == "pyarrow":
        if kind == "parquet":
            import pyarrow.parquet as pq
            pq.write_table(table, dst, compression="snappy")
        else:
            import pyarrow.csv as pacsv
            pacsv.write_csv(table, dst)
        version = pa.__version__
    elif tool == "duckdb":
        import duckdb
        con = duckdb.connect()
        con.register("w1", table)
        how = "FORMAT parquet, COMPRESSION snappy" if kind == "parquet" else "FORMAT csv, HEADER"
        con.execute(f"COPY (SELECT * FROM w1) TO '{dst}' ({how})")
        con.close()
        version = duckdb.__version__
    else:
        raise SystemExit(f"unknown tool {tool}")
    emit(tool=tool, load_s=time.perf_counter() - t0, version=version)


def produce_pyarrow(src: str) -> None:
    import pyarrow as pa
    import pyarrow.ipc  # noqa: F401

    t0 = time.perf_counter()
    out = pa.PythonFile(sys.stdout.buffer, mode="w")
    with pa.memory_map(src, "r") as source:
        reader = pa.ipc.open_file(source)
        with pa.ipc.new_stream(out, reader.schema) as writer:
            for i in range(reader.num_record_batches):
                writer.write_batch(reader.get_batch(i))
    out.flush()
    sys.stderr.write(json.dumps({"tool": "pyarrow", "load_s": time.perf_counter() - t0}) + "\n")


def consume() -> None:
    import pyarrow as pa
    import pyarrow.ipc  # noqa: F401

    t0 = time.perf_counter()
    rows = 0
    sum_id = 0
    sum_x: dict = {}
    n = 0
    with pa.ipc.open_stream(sys.stdin.buffer) as reader:
        for batch in reader:
            r, s, xs = arrow_checksum(batch)
            rows += r
            sum_id += s
            for k, v in xs.items():
                sum_x[k] = sum_x.get(k, 0.0) + v
            n += 1
    t1 = time.perf_counter()
    emit(tool="consumer", rows=rows, batches=n, sum_id=sum_id, sum_x=sum_x, load_s=t1 - t0)


def main(argv) -> int:
    usage = ("usage: w1_peers.py load|convert|write-parquet|write-csv|produce|consume TOOL "
             "[PATH...]")
    if not argv:
        print(usage, file=sys.stderr)
        return 2
    cmd, rest = argv[0], argv[1:]
    if cmd == "load" and len(rest) == 2:
        tool, path = rest
        if tool == "pyarrow-file":
            load_pyarrow(path, mmap=False)
        elif tool == "pyarrow-mmap":
            load_pyarrow(path, mmap=True)
        elif tool == "polars":
            load_polars(path)
        else:
            load_other(tool, path)
    elif cmd == "convert" and len(rest) == 3:
        {"pyarrow": convert_pyarrow, "polars": convert_polars}[rest[0]](rest[1], rest[2])
    elif cmd in ("write-parquet", "write-csv") and len(rest) == 3:
        write_table(cmd[len("write-"):], *rest)
    elif cmd == "produce" and len(rest) == 2 and rest[0] == "pyarrow":
        produce_pyarrow(rest[1])
    elif cmd == "consume" and not rest:
        consume()
    else:
        print(usage, file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
