#!/usr/bin/env python3
"""W1 task (b), a W1 file into a pandas DataFrame, and the order-restoring
pipe consumer of the Parquet pipe task; one process per measurement
(bench/run.py starts it).

Each `pandas` subcommand imports only the library it measures, reads the file
into a pandas DataFrame, then prints one JSON line on stdout: rows, sum_id,
sum_x (per float64 column, summed with pandas), load_s (file to DataFrame,
imports excluded: they are done first), verify_s (the checksum pass),
df_bytes (`df.memory_usage(deep=True).sum()`) and rss_before_kb (VmRSS after
the imports, before the read), so the report can give peak RSS over the
DataFrame's size, both whole-process and with the import baseline taken off
(what the read itself added at its peak).

  pandas sluice-read PATH          sluice.read(PATH).to_pandas()
  pandas sluice-read_pandas PATH   sluice.read_pandas(PATH)
  pandas pyarrow PATH              Parquet: pq.read_table(PATH).to_pandas();
                                   Arrow IPC file: pa.ipc.open_file(PATH)
                                   .read_all().to_pandas()
  pandas polars PATH               pl.read_parquet / read_ipc / read_avro /
                                   read_csv (by extension), then .to_pandas()
  pandas fastavro PATH             pd.DataFrame.from_records(list(fastavro
                                   .reader(f))): one dict per record first
  pandas pandas-pyarrow PATH       pd.read_csv(PATH, engine="pyarrow")
  pandas pandas-c PATH             pd.read_csv(PATH) (the C engine)

  consume-restore [--sluice]       reads an IPC stream on stdin whose batches
                                   carry sluice:split / sluice:batch custom
                                   metadata (`sluice cat -t arrows
                                   --unordered`), puts them back in plan order
                                   and checks that order (id runs 0..n-1 across
                                   the restored batches); with --sluice it
                                   uses sluice.read_ipc(restore_order=True)
                                   instead of pyarrow.
  consume-check-order              pyarrow open_stream, checksums and drops
                                   each batch, checks batches arrive in order.
  produce-parquet PATH [BATCH_ROWS]
                                   the pyarrow producer of the Parquet pipe
                                   tasks: pq.ParquetFile(PATH).iter_batches()
                                   (one batch per row group, or of BATCH_ROWS
                                   rows) written with a RecordBatchStreamWriter
                                   to stdout.
"""
from __future__ import annotations

import json
import os
import sys
import time


def emit(**fields) -> None:
    sys.stdout.write(json.dumps(fields) + "\n")
    sys.stdout.flush()


def rss_kb() -> dict:
    """VmRSS (now) and VmHWM (peak so far) of this process, in KiB."""
    out = {}
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(("VmRSS:", "VmHWM:")):
                    k, v = line.split(":", 1)
                    out[k] = int(v.split()[0])
    except (OSError, ValueError):
        pass
    return out


def pandas_reader(tool: str, ext: str):
    """Imports the tool (outside the timing) and returns (read(path) -> DataFrame, version)."""
    if tool in ("sluice-read", "sluice-read_pandas"):
        import pandas  # noqa: F401 - to_pandas imports it; keep imports out of the timing
        import sluice
        version = getattr(sluice, "__version__", None)
        if tool == "sluice-read":
            return (lambda p: sluice.read(p).to_pandas()), version
        return sluice.read_pandas, version
    if tool == "pyarrow":
        import pandas  # noqa: F401
        import pyarrow as pa
        import pyarrow.ipc
        import pyarrow.parquet as pq
        if ext == ".parquet":
            return (lambda p: pq.read_table(p).to_pandas()), pa.__version__
        if ext == ".arrow":
            return (lambda p: pyarrow.ipc.open_file(p).read_all().to_pandas()), pa.__version__
        raise SystemExit(f"pyarrow: no {ext} reader in this benchmark")
    if tool == "polars":
        import pandas  # noqa: F401
        import polars as pl
        import pyarrow  # noqa: F401 - polars' to_pandas goes through pyarrow
        read = {".parquet": pl.read_parquet, ".arrow": pl.read_ipc, ".avro": pl.read_avro,
                ".csv": pl.read_csv}[ext]
        return (lambda p: read(p).to_pandas()), pl.__version__
    if tool == "fastavro":
        import fastavro
        import pandas as pd

        def read_fastavro(p):
            with open(p, "rb") as f:
                return pd.DataFrame.from_records(list(fastavro.reader(f)))
        return read_fastavro, fastavro.__version__
    if tool in ("pandas-pyarrow", "pandas-c"):
        import pandas as pd
        if tool == "pandas-pyarrow":
            import pyarrow  # noqa: F401
        engine = "pyarrow" if tool == "pandas-pyarrow" else "c"
        return (lambda p: pd.read_csv(p, engine=engine)), pd.__version__
    raise SystemExit(f"unknown tool {tool}")


def to_pandas(tool: str, path: str) -> None:
    read, version = pandas_reader(tool, os.path.splitext(path)[1])
    before = rss_kb().get("VmRSS", 0)  # interpreter + imports
    t0 = time.perf_counter()
    df = read(path)
    t1 = time.perf_counter()
    mem = rss_kb()
    df_bytes = int(df.memory_usage(deep=True).sum())
    sum_id = 0
    sum_x = {}
    for name in df.columns:
        kind = df[name].dtype.kind
        if kind == "i":
            sum_id += int(df[name].sum())
        elif kind == "f":
            sum_x[name] = float(df[name].sum())
    t2 = time.perf_counter()
    # rss_before_kb: after imports, before the read; hwm_after_load_kb: the peak
    # up to the DataFrame being ready (the checksum pass allocates a little more).
    emit(tool=tool, rows=len(df), sum_id=sum_id, sum_x=sum_x, load_s=t1 - t0, verify_s=t2 - t1,
         df_bytes=df_bytes, rss_before_kb=before, hwm_after_load_kb=mem.get("VmHWM", 0),
         rss_after_load_kb=mem.get("VmRSS", 0),
         dtypes={k: str(v) for k, v in df.dtypes.items()}, version=version)


def _checksum(batch, sums: dict) -> int:
    """Adds the batch's sums into `sums`; returns the batch's first id (or -1)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    first = -1
    for name, col in zip(batch.schema.names, batch.columns):
        if col.type == pa.int64():
            sums["sum_id"] += pc.sum(col).as_py() or 0
            if name == "id" and len(col):
                first = col[0].as_py()
        elif col.type == pa.float64():
            sums["sum_x"][name] = sums["sum_x"].get(name, 0.0) + (pc.sum(col).as_py() or 0.0)
    return first


def consume_restore(use_sluice: bool) -> None:
    t0 = time.perf_counter()
    if use_sluice:
        import sluice
        table = sluice.read_ipc(sys.stdin.buffer, restore_order=True)
        import pyarrow as pa
        batches = pa.table(table).to_batches()
    else:
        import pyarrow as pa
        import pyarrow.ipc  # noqa: F401
        tagged = []
        with pa.ipc.open_stream(sys.stdin.buffer) as reader:
            while True:
                try:
                    batch, md = reader.read_next_batch_with_custom_metadata()
                except StopIteration:
                    break
                md = md or {}
                split = int(md.get(b"sluice:split", b"-1"))
                index = int(md.get(b"sluice:batch", b"-1").split()[0])
                tagged.append(((split, index), batch))
        tagged.sort(key=lambda t: t[0])  # stable: untagged batches keep stream order
        batches = [b for _, b in tagged]
    t1 = time.perf_counter()
    sums = {"sum_id": 0, "sum_x": {}}
    rows = 0
    out_of_order = 0
    for b in batches:
        first = _checksum(b, sums)
        if first not in (-1, rows):
            out_of_order += 1
        rows += b.num_rows
    if out_of_order:
        sys.stderr.write(f"restored order wrong: {out_of_order} batches do not start at "
                         "the running row count\n")
        sys.exit(3)
    emit(tool="consumer-restore" + ("-sluice" if use_sluice else ""), rows=rows,
         batches=len(batches), load_s=t1 - t0, verify_s=time.perf_counter() - t1, **sums)


def consume_check_order() -> None:
    import pyarrow as pa
    import pyarrow.ipc  # noqa: F401

    t0 = time.perf_counter()
    sums = {"sum_id": 0, "sum_x": {}}
    rows = n = 0
    with pa.ipc.open_stream(sys.stdin.buffer) as reader:
        for batch in reader:
            first = _checksum(batch, sums)
            if first not in (-1, rows):
                sys.stderr.write(f"batch {n} starts at id {first}, expected {rows}\n")
                sys.exit(3)
            rows += batch.num_rows
            n += 1
    emit(tool="consumer", rows=rows, batches=n, load_s=time.perf_counter() - t0, **sums)


def produce_parquet(path: str, batch_rows: int = 0) -> None:
    import pyarrow as pa
    import pyarrow.ipc  # noqa: F401
    import pyarrow.parquet as pq

    t0 = time.perf_counter()
    out = pa.PythonFile(sys.stdout.buffer, mode="w")
    pf = pq.ParquetFile(path)
    rows_per_group = max(pf.metadata.row_group(i).num_rows
                         for i in range(pf.metadata.num_row_groups)) if pf.metadata.num_row_groups \
        else 1
    with pa.ipc.new_stream(out, pf.schema_arrow) as writer:
        for batch in pf.iter_batches(batch_size=batch_rows or rows_per_group):
            writer.write_batch(batch)
    out.flush()
    sys.stderr.write(json.dumps({"tool": "pyarrow", "load_s": time.perf_counter() - t0}) + "\n")


def main(argv) -> int:
    usage = ("usage: w1_pandas.py pandas TOOL PATH | consume-restore [--sluice] | "
             "consume-check-order | produce-parquet PATH [BATCH_ROWS]")
    if len(argv) == 3 and argv[0] == "pandas":
        to_pandas(argv[1], argv[2])
    elif argv[:1] == ["consume-restore"] and argv[1:] in ([], ["--sluice"]):
        consume_restore(argv[1:] == ["--sluice"])
    elif argv == ["consume-check-order"]:
        consume_check_order()
    elif len(argv) in (2, 3) and argv[0] == "produce-parquet":
        produce_parquet(argv[1], int(argv[2]) if len(argv) == 3 else 0)
    else:
        print(usage, file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
