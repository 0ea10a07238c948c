"""W1 (table to memory / to a pipe): the cells bench/run.py measures.

Tasks a, b, c run by default; a_parquet, a_duckdb_parquet, a_categorical, a_csv, a_avro,
w_parquet (write w1.arrow as Parquet, snappy), w_csv (as CSV), pd_parquet, pd_avro, pd_csv,
pd_arrow (task (b): into a pandas DataFrame), c_parquet (task (c) from
w1.parquet) and s_parquet (task (c) from w1_1rg.parquet, one row group larger
than the memory budget) on request. See bench/README.md for what every cell does exactly.
"""
from __future__ import annotations

import json
import os
import subprocess
from typing import Optional

from harness import HERE, PY, Cell, Context, check_result, log

FULL_ROWS = 1 << 25
QUICK_ROWS = 1 << 20
DEFAULT_TASKS = "a,b,c"
META = "w1.meta.json"


def arrow_stream_file_check(path: str, meta: dict) -> Optional[str]:
    """Reads an IPC stream file written by a tool under test and checks it."""
    try:
        import pyarrow as pa
        import pyarrow.compute as pc
    except ImportError:
        return None
    try:
        with pa.memory_map(path, "r") as src:
            table = pa.ipc.open_stream(src).read_all()
            result = {"rows": table.num_rows, "sum_id": 0, "sum_x": {}}
            for name, col in zip(table.schema.names, table.columns):
                if col.type == pa.int64():
                    result["sum_id"] += pc.sum(col).as_py() or 0
                elif col.type == pa.float64():
                    result["sum_x"][name] = pc.sum(col).as_py() or 0.0
            del table, col
    except Exception as e:  # noqa: BLE001 - any failure to read is the finding
        return f"{os.path.basename(path)} is not a readable IPC stream: {e}"
    return check_result(result, meta)


def table_sums(table) -> dict:
    """A pyarrow table's rows, sum(id) and float column sums, as
    check_result compares them with the reference."""
    import pyarrow.compute as pc
    return {"rows": table.num_rows, "sum_id": pc.sum(table["id"]).as_py() or 0,
            "sum_x": {c: pc.sum(table[c]).as_py() or 0.0
                      for c in table.schema.names if c != "id"}}


def parquet_file_check(path: str, meta: dict) -> Optional[str]:
    """A Parquet file written by a tool under test: every column chunk
    snappy-compressed, values (read back with pyarrow) equal to the reference."""
    try:
        import pyarrow.parquet as pq
    except ImportError:
        return None
    name = os.path.basename(path)
    try:
        md = pq.ParquetFile(path).metadata
        codecs = {md.row_group(i).column(j).compression
                  for i in range(md.num_row_groups) for j in range(md.num_columns)}
        if md.num_rows and codecs != {"SNAPPY"}:
            return f"{name}: column chunks compressed with {sorted(codecs)}, not SNAPPY"
        table = pq.read_table(path)
        result = table_sums(table)
        del table
    except Exception as e:  # noqa: BLE001 - any failure to read is the finding
        return f"{name} is not a Parquet file pyarrow reads: {e}"
    return check_result(result, meta)


def csv_file_check(path: str, meta: dict) -> Optional[str]:
    """A CSV file written by a tool under test: a header line naming W1's
    columns, values (read back with pyarrow.csv) equal to the reference."""
    try:
        import pyarrow.csv as pacsv
    except ImportError:
        return None
    name = os.path.basename(path)
    try:
        table = pacsv.read_csv(path)
        if table.schema.names != ["id", "x1", "x2", "x3", "x4"]:
            return f"{name}: header names {table.schema.names}"
        result = table_sums(table)
        del table
    except Exception as e:  # noqa: BLE001 - any failure to read is the finding
        return f"{name} is not a CSV file pyarrow reads: {e}"
    return check_result(result, meta)


def sluice_help(sluice: str) -> str:
    """Everything the CLI says about itself (empty if it cannot run)."""
    text = ""
    for args in (["--help"], ["cat", "--help"], ["convert", "--help"]):
        try:
            p = subprocess.run([sluice] + args, capture_output=True, text=True, timeout=10)
            text += p.stdout + p.stderr
        except (OSError, subprocess.TimeoutExpired):
            pass
    return text


# Task (b): a W1 file into a pandas DataFrame (opt-in: --tasks pd_parquet,...).
PANDAS_FILES = {"pd_parquet": "w1.parquet", "pd_avro": "w1.avro", "pd_csv": "w1.csv",
                "pd_arrow": "w1.arrow", "c_parquet": "w1.parquet"}
# The peers of each file, as `bench/peers/w1_pandas.py pandas TOOL PATH` tools.
PANDAS_PEERS = {
    "pd_parquet": [("pyarrow", "pq.read_table(path).to_pandas()"),
                   ("polars", "pl.read_parquet(path).to_pandas()")],
    "pd_avro": [("fastavro", "pd.DataFrame.from_records(list(fastavro.reader(f)))"),
                ("polars", "pl.read_avro(path).to_pandas()")],
    "pd_csv": [("pandas-pyarrow", 'pd.read_csv(path, engine="pyarrow")'),
               ("pandas-c", "pd.read_csv(path) (C engine)"),
               ("polars", "pl.read_csv(path).to_pandas()")],
    "pd_arrow": [("pyarrow", "pa.ipc.open_file(path).read_all().to_pandas()"),
                 ("polars", "pl.read_ipc(path).to_pandas()")],
}


def sluice_module_missing(python: str) -> Optional[str]:
    """None if `python` imports the sluice package, else why the cells are skipped."""
    try:
        p = subprocess.run([python, "-c", "import sluice"], capture_output=True, text=True,
                           timeout=60)
    except (OSError, subprocess.TimeoutExpired) as e:
        return f"cannot run {python}: {e}"
    if p.returncode != 0:
        return (f"no sluice Python package in {python} (`pip install .` from the repository "
                "root, then --python or $SLUICE_BENCH_PYTHON; see bench/README.md)")
    return None


def pandas_and_pipe_cells(ctx: Context, no_cat: Optional[str],
                          no_unordered: Optional[str]) -> list:
    """pd_* (W1 (b): file -> pandas DataFrame) and c_parquet (W1 (c) from the
    Parquet file: ordered vs unordered, with consumers that check or restore
    the order)."""
    script = os.path.join(HERE, "peers", "w1_pandas.py")
    no_module = sluice_module_missing(ctx.python)
    out = []
    for t in ("pd_parquet", "pd_avro", "pd_csv", "pd_arrow"):
        name = PANDAS_FILES[t]
        path = os.path.join(ctx.data, name)
        missing = None if os.path.exists(path) else \
            f"no {name} in the data dir (bench/gen_w1.py --avro --csv writes it)"
        for tool, how in (("sluice-read", "sluice.read(path).to_pandas()"),
                          ("sluice-read_pandas", "sluice.read_pandas(path)")):
            out.append(Cell(t, how, "sluice", "sluice",
                            [[ctx.python, script, "pandas", tool, path]],
                            how=f"{how}: {name} into a pandas DataFrame (default threads)",
                            skip=missing or no_module))
        for tool, how in PANDAS_PEERS[t]:
            heavy = None
            if tool == "fastavro" and ctx.meta["rows"] > (1 << 22) and not ctx.heavy:
                heavy = ("fastavro builds one Python dict per record (~15 GB at 2^25 rows); "
                         "pass --heavy to run it")
            out.append(Cell(t, how, tool.split("-")[0], "peer",
                            [[PY, script, "pandas", tool, path]],
                            how=f"{how}: {name} into a pandas DataFrame", skip=missing or heavy))
        out.append(Cell(t, f"cat {name} > /dev/null", "cat", "floor", [["cat", path]],
                        how="read the (cached) input once", parse_json=False, check=False,
                        stdout_devnull=True, skip=missing))

    # c_parquet: `sluice cat w1.parquet -t arrows [--unordered]` through a pipe.
    t = "c_parquet"
    pq_path = os.path.join(ctx.data, "w1.parquet")
    arrows = os.path.join(ctx.data, "w1.arrows")
    no_pq = None if os.path.exists(pq_path) else "no w1.parquet in the data dir"
    no_arrows = None if os.path.exists(arrows) else "no w1.arrows in the data dir"
    cat_o = [ctx.sluice, "cat", pq_path, "-t", "arrows"]
    cat_u = cat_o + ["--unordered"]
    check_order = [PY, script, "consume-check-order"]
    plain = [PY, os.path.join(HERE, "peers", "w1_peers.py"), "consume"]
    restore = [PY, script, "consume-restore"]
    restore_sluice = [ctx.python, script, "consume-restore", "--sluice"]
    producer = [PY, script, "produce-parquet", pq_path]
    out += [
        Cell(t, "sluice cat -t arrows | consumer (checks order)", "sluice", "sluice",
             [cat_o, check_order],
             how="`sluice cat w1.parquet -t arrows` (ordered) piped to a pyarrow open_stream "
                 "consumer that checksums and drops each batch and checks they come in order",
             skip=no_pq or no_cat),
        Cell(t, "sluice cat -t arrows --unordered | consumer", "sluice", "sluice",
             [cat_u, plain],
             how="unordered, to the plain pyarrow consumer (any order accepted)",
             skip=no_pq or no_unordered),
        Cell(t, "sluice cat --unordered | consumer restoring order", "sluice", "sluice",
             [cat_u, restore],
             how="unordered; the consumer reads each batch with "
                 "read_next_batch_with_custom_metadata, keeps all, sorts them by "
                 "(sluice:split, sluice:batch) and checks id runs 0..n-1",
             skip=no_pq or no_unordered),
        Cell(t, "sluice cat --unordered | sluice.read_ipc(restore_order=True)", "sluice",
             "sluice", [cat_u, restore_sluice],
             how="unordered; the consumer is sluice.read_ipc(stdin, restore_order=True), "
                 "order checked the same way",
             skip=no_pq or no_unordered or no_module),
        Cell(t, "pyarrow Parquet producer | consumer (checks order)", "pyarrow", "peer",
             [producer, check_order],
             how="python: pq.ParquetFile.iter_batches (one batch per row group) -> "
                 "RecordBatchStreamWriter on stdout; same consumer", skip=no_pq),
        Cell(t, "cat w1.arrows | consumer", "cat", "floor", [["cat", arrows], plain],
             how="a zero-work producer: the stream file pyarrow wrote, plain consumer",
             skip=no_arrows),
    ]
    sink = ["cat"]
    for name, argv, role, tool, skip in (
            ("sluice cat -t arrows | cat > /dev/null", cat_o, "sluice", "sluice", no_cat),
            ("sluice cat -t arrows --unordered | cat > /dev/null", cat_u, "sluice", "sluice",
             no_unordered),
            ("pyarrow Parquet producer | cat > /dev/null", producer, "peer", "pyarrow", None),
            ("cat w1.arrows | cat > /dev/null", ["cat", arrows], "floor", "cat", no_arrows)):
        out.append(Cell(t, name, tool, role, [argv, sink], how="producer alone",
                        parse_json=False, check=False, stdout_devnull=True, group="alone",
                        skip=no_pq or skip))
    return out


def cells(ctx: Context) -> list:
    arrow = os.path.join(ctx.data, "w1.arrow")
    arrows = os.path.join(ctx.data, "w1.arrows")
    peers = os.path.join(HERE, "peers", "w1_peers.py")
    load_arrow = os.path.join(ctx.bin, "load_arrow")
    memcpy = os.path.join(ctx.bin, "memcpy_floor")
    table_bytes = str(ctx.meta["table_bytes"])
    cells = []

    no_load_arrow = None if os.access(load_arrow, os.X_OK) else \
        "bench/bin/load_arrow not built (libsluice lacks the dataset API?) - run bench/build.sh"
    no_memcpy = None if os.access(memcpy, os.X_OK) else "bench/bin/memcpy_floor not built"
    help_text = sluice_help(ctx.sluice) if os.access(ctx.sluice, os.X_OK) else ""
    no_cli = None if help_text else f"sluice CLI not found or not runnable at {ctx.sluice}"
    no_convert = no_cli or (None if "convert" in help_text else "sluice CLI has no `convert` yet")
    no_cat = no_cli or (None if "cat" in help_text else "sluice CLI has no `cat` yet")
    no_unordered = no_cat or (None if "--unordered" in help_text else
                              "sluice CLI has no `--unordered` flag yet")

    def floors(task: str, nbytes: str, what: str, touch: bool) -> list:
        out = []
        for t in sorted({1, ctx.threads}):
            out.append(Cell(task, f"memcpy {what} ({t} thread{'s' if t > 1 else ''})", "memcpy",
                            "floor", [[memcpy, "--threads", str(t), "--repeat", "3", nbytes]],
                            how=f"memcpy of {nbytes} bytes between two pre-faulted buffers, "
                                "median of 3 inside one process", metric="load_s",
                            check=False, skip=no_memcpy))
        if touch:
            # Loading into fresh memory also pays the first-touch page faults.
            for huge in (False, True):
                argv = [memcpy, "--touch", "--threads", str(ctx.threads), "--repeat", "3"]
                argv += ["--hugepage"] if huge else []
                out.append(Cell(task, f"first-touch {what}" + (" (THP)" if huge else ""),
                                "first-touch", "floor", [argv + [nbytes]],
                                how=f"mmap {nbytes} fresh anonymous bytes and write them once, "
                                    f"{ctx.threads} threads"
                                    + (", after madvise(MADV_HUGEPAGE)" if huge else
                                       ", 4 KiB pages") + "; median of 3 in one process",
                                metric="load_s", check=False, skip=no_memcpy))
        out.append(Cell(task, "cat w1.arrow > /dev/null", "cat", "floor", [["cat", arrow]],
                        how="read the (cached) input once", parse_json=False, check=False,
                        stdout_devnull=True))
        return out

    # (a) load w1.arrow into Arrow memory --------------------------------------
    t = "a"
    cells.append(Cell(t, "sluice load_arrow", "sluice", "sluice", [[load_arrow, arrow]],
                      how="bench/load_arrow: sluice_dataset_open + sluice_dataset_scan to the "
                          "end, all batches kept alive (default threads and budget)",
                      skip=no_load_arrow))
    cells.append(Cell(t, "sluice load_arrow --threads 1", "sluice", "sluice",
                      [[load_arrow, "--threads", "1", arrow]],
                      how="same, one decoding thread", skip=no_load_arrow))
    cells.append(Cell(t, "pyarrow OSFile read_all", "pyarrow", "peer",
                      [[PY, peers, "load", "pyarrow-file", arrow]],
                      how="pa.ipc.open_file(pa.OSFile(path)).read_all(): reads into "
                          "pyarrow-allocated buffers"))
    cells.append(Cell(t, "pyarrow memory_map read_all", "pyarrow", "peer",
                      [[PY, peers, "load", "pyarrow-mmap", arrow]],
                      how="pa.ipc.open_file(pa.memory_map(path)).read_all(): zero-copy, "
                          "buffers point into the map; pages are faulted in by the checksum"))
    cells.append(Cell(t, "polars read_ipc", "polars", "peer",
                      [[PY, peers, "load", "polars", arrow]],
                      how="pl.read_ipc(path) with polars' defaults (2.x: scan_ipc().collect())"))
    cells += floors(t, table_bytes, "table size", touch=True)

    # (b) sluice convert w1.arrow out.arrows ------------------------------------
    t = "b"
    out_s = os.path.join(ctx.tmp, "sluice.arrows")
    out_pa = os.path.join(ctx.tmp, "pyarrow.arrows")
    out_pl = os.path.join(ctx.tmp, "polars.arrows")
    out_cp = os.path.join(ctx.tmp, "cp.arrow")
    meta = ctx.meta
    cells.append(Cell(t, "sluice convert", "sluice", "sluice",
                      [[ctx.sluice, "convert", "--no-fsync", arrow, out_s]],
                      how="`sluice convert --no-fsync w1.arrow out.arrows` (IPC file -> IPC "
                          "stream), output to a file on the same disk (page cache, no fsync, "
                          "as the peers)",
                      parse_json=False, check=False,
                      post=lambda: arrow_stream_file_check(out_s, meta),
                      cleanup=[out_s], skip=no_convert))
    cells.append(Cell(t, "pyarrow mmap read_all + StreamWriter", "pyarrow", "peer",
                      [[PY, peers, "convert", "pyarrow", arrow, out_pa]],
                      how="pa.memory_map + open_file().read_all() + RecordBatchStreamWriter",
                      check=False, post=lambda: arrow_stream_file_check(out_pa, meta),
                      cleanup=[out_pa]))
    cells.append(Cell(t, "polars read_ipc + write_ipc_stream", "polars", "peer",
                      [[PY, peers, "convert", "polars", arrow, out_pl]],
                      how="pl.read_ipc(src).write_ipc_stream(dst)",
                      check=False, post=lambda: arrow_stream_file_check(out_pl, meta),
                      cleanup=[out_pl]))
    cells.append(Cell(t, "cp w1.arrow out", "cp", "floor", [["cp", arrow, out_cp]],
                      how="cp of the input to the output directory (read + write floor)",
                      parse_json=False, check=False, cleanup=[out_cp]))
    cells += floors(t, str(os.path.getsize(arrow)) if os.path.exists(arrow) else table_bytes,
                    "file size", touch=False)

    # (c) IPC stream through a pipe to a consumer process -----------------------
    t = "c"
    consumer = [PY, peers, "consume"]
    cells.append(Cell(t, "sluice cat -t arrows | consumer", "sluice", "sluice",
                      [[ctx.sluice, "cat", arrow, "-t", "arrows"], consumer],
                      how="`sluice cat w1.arrow -t arrows` (ordered) piped to a pyarrow "
                          "open_stream consumer that checksums and drops each batch",
                      skip=no_cat))
    cells.append(Cell(t, "sluice cat -t arrows --unordered | consumer", "sluice", "sluice",
                      [[ctx.sluice, "cat", arrow, "-t", "arrows", "--unordered"], consumer],
                      how="same, batches in completion order", skip=no_unordered))
    cells.append(Cell(t, "pyarrow producer | consumer", "pyarrow", "peer",
                      [[PY, peers, "produce", "pyarrow", arrow], consumer],
                      how="python: memory-mapped open_file, RecordBatchStreamWriter to stdout "
                          "batch by batch, same consumer"))
    cells.append(Cell(t, "cat w1.arrows | consumer", "cat", "floor", [["cat", arrows], consumer],
                      how="a zero-work producer: the stream file pyarrow wrote, same consumer",
                      skip=None if os.path.exists(arrows) else "no w1.arrows in the data dir"))
    # The producers with a consumer that does nothing (`cat > /dev/null`):
    # separates producer cost from what the Python consumer can take. (Straight
    # to /dev/null would not do: write() to /dev/null never reads the buffer, so
    # a producer writing from a memory map would touch nothing.)
    sink = ["cat"]
    cells.append(Cell(t, "sluice cat -t arrows | cat > /dev/null", "sluice", "sluice",
                      [[ctx.sluice, "cat", arrow, "-t", "arrows"], sink], how="producer alone",
                      parse_json=False, check=False, stdout_devnull=True, skip=no_cat,
                      group="alone"))
    cells.append(Cell(t, "pyarrow producer | cat > /dev/null", "pyarrow", "peer",
                      [[PY, peers, "produce", "pyarrow", arrow], sink], how="producer alone",
                      parse_json=False, check=False, stdout_devnull=True, group="alone"))
    cells.append(Cell(t, "cat w1.arrows | cat > /dev/null", "cat", "floor",
                      [["cat", arrows], sink], how="pipe floor: a zero-work producer and sink",
                      parse_json=False, check=False, stdout_devnull=True, group="alone",
                      skip=None if os.path.exists(arrows) else "no w1.arrows in the data dir"))

    # Opt-in (--tasks): the other W1 files into Arrow memory. sluice's cell is
    # skipped with the reader's own error until it reads the format.
    others = {
        "a_parquet": ("w1.parquet", ["pyarrow-parquet", "polars-parquet", "duckdb"]),
        "a_duckdb_parquet": ("w1_duckdb.parquet", ["pyarrow-parquet", "polars-parquet", "duckdb"]),
        "a_categorical": ("w1_cat.parquet", ["pyarrow-parquet", "polars-parquet", "duckdb"]),
        "a_csv": ("w1.csv", ["pyarrow-csv", "polars-csv", "duckdb"]),
        "a_avro": ("w1.avro", ["polars-avro", "fastavro"]),
    }
    # w1_cat.parquet has its own reference (id and the categorical's sum).
    cat_meta = ctx.meta.get("categorical")
    cat_checker = None if cat_meta is None else (lambda r, m=cat_meta: check_result(r, m))
    for t, (name, tools) in others.items():
        path = os.path.join(ctx.data, name)
        missing = None if os.path.exists(path) else \
            f"no {name} in the data dir (bench/gen_w1.py --avro --csv --categorical writes it)"
        if t == "a_categorical" and cat_meta is None and not missing:
            missing = "w1.meta.json has no categorical reference (bench/gen_w1.py --categorical)"
        checker = cat_checker if t == "a_categorical" else None
        cells.append(Cell(t, "sluice load_arrow", "sluice", "sluice", [[load_arrow, path]],
                          how=f"bench/load_arrow {name}", skip=no_load_arrow or missing,
                          checker=checker))
        for tool in tools:
            heavy = None
            if tool == "fastavro" and ctx.meta["rows"] > (1 << 22) and not ctx.heavy:
                heavy = ("fastavro builds one Python dict per record (~15 GB at 2^25 rows); "
                         "pass --heavy to run it")
            cells.append(Cell(t, tool, tool.split("-")[0], "peer",
                              [[PY, peers, "load", tool, path]],
                              how=f"{tool} loading {name} (see bench/peers/w1_peers.py)",
                              skip=missing or heavy, checker=checker))
        if t == "a_avro":
            # The Avro goal is set against avro-c's generic reader,
            # which keeps no table: sluice doing the same task beside it.
            cells.append(Cell(t, "sluice load_arrow --stream", "sluice", "sluice",
                              [[load_arrow, "--stream", path]],
                              how=f"bench/load_arrow --stream {name}: each batch checksummed "
                                  "as it arrives and released, no table kept (the avro-c "
                                  "cell's task)", skip=no_load_arrow or missing))
            avroc = os.path.join(ctx.bin, "avroc_read")
            cells.append(Cell(t, "avro-c generic reader", "avro-c", "peer", [[avroc, path]],
                              how="bench/avroc_read: libavro's avro_file_reader_read_value "
                                  "into one reused generic value, every field walked and "
                                  "summed (no Arrow)",
                              skip=missing or (None if os.access(avroc, os.X_OK) else
                                               "bench/bin/avroc_read not built (libavro-dev)")))
        cells.append(Cell(t, f"cat {name} > /dev/null", "cat", "floor", [["cat", path]],
                          how="read the (cached) input once", parse_json=False, check=False,
                          stdout_devnull=True, skip=missing))
    # Opt-in (--tasks w_parquet,w_csv): write w1.arrow as Parquet with snappy,
    # or as CSV with a header line.
    for t, ext, check, sluice_args, hows in (
            ("w_parquet", "parquet", parquet_file_check, ["-W", "compression=snappy"],
             (("pyarrow", "pq.write_table(table, dst, compression='snappy') of a table read "
                          "(untimed in load_s) from w1.arrow into memory"),
              ("duckdb", "COPY (SELECT * FROM registered Arrow table) TO dst "
                         "(FORMAT parquet, COMPRESSION snappy)"),
              ("polars", "pl.read_ipc(src).rechunk().write_parquet(dst, compression='snappy')"))),
            ("w_csv", "csv", csv_file_check, [],
             (("pyarrow", "pyarrow.csv.write_csv(table, dst) of a table read (untimed in "
                          "load_s) from w1.arrow into memory"),
              ("duckdb", "COPY (SELECT * FROM registered Arrow table) TO dst "
                         "(FORMAT csv, HEADER)"),
              ("polars", "pl.read_ipc(src).rechunk().write_csv(dst)")))):
        outs = {k: os.path.join(ctx.tmp, f"{k}.{ext}") for k in ("sluice", "pyarrow", "duckdb",
                                                                 "polars")}
        cells.append(Cell(t, f"sluice convert -> .{ext}", "sluice", "sluice",
                          [[ctx.sluice, "-q", "convert", "--no-fsync", arrow, outs["sluice"]]
                           + sluice_args],
                          how=f"`sluice convert --no-fsync w1.arrow out.{ext} "
                              f"{' '.join(sluice_args)}` (reads the IPC file, writes {ext}), "
                              "output in the page cache, no fsync (as the peers)",
                          parse_json=False, check=False,
                          post=lambda p=outs["sluice"], c=check: c(p, meta),
                          cleanup=[outs["sluice"]], skip=no_convert))
        for tool, how in hows:
            cells.append(Cell(t, f"{tool} write {ext}", tool, "peer",
                              [[PY, peers, f"write-{ext}", tool, arrow, outs[tool]]],
                              how=how, check=False,
                              post=lambda p=outs[tool], c=check: c(p, meta),
                              cleanup=[outs[tool]]))
        cp_out = os.path.join(ctx.tmp, f"cp-{ext}.arrow")
        cells.append(Cell(t, "cp w1.arrow out", "cp", "floor", [["cp", arrow, cp_out]],
                          how="cp of the input to the output directory (read + write floor)",
                          parse_json=False, check=False, cleanup=[cp_out]))
    cells += pandas_and_pipe_cells(ctx, no_cat, no_unordered)
    # Opt-in (--tasks s_parquet): W1 as ONE Parquet row group (1.34 GB decoded,
    # more than the 256 MiB default budget) streamed through a pipe to the
    # checksumming consumer; peak RSS is the producer's. sluice reads such a
    # row group page by page under its budget; pyarrow's iter_batches.
    t = "s_parquet"
    one = os.path.join(ctx.data, "w1_1rg.parquet")
    no_one = None if os.path.exists(one) else \
        "no w1_1rg.parquet in the data dir (bench/gen_w1.py --one-row-group writes it)"
    for label, extra in (("", []), (" --budget 64M", ["--budget", "64M"])):
        cells.append(Cell(t, f"sluice{label} cat -t arrows | consumer", "sluice", "sluice",
                          [[ctx.sluice, *extra, "cat", one, "-t", "arrows"],
                           [PY, peers, "consume"]],
                          how=f"`sluice{label} cat w1_1rg.parquet -t arrows` piped to the "
                              "pyarrow consumer", skip=no_cat or no_one))
    cells.append(Cell(t, "pyarrow iter_batches | consumer", "pyarrow", "peer",
                      [[PY, os.path.join(HERE, "peers", "w1_pandas.py"), "produce-parquet", one,
                        "65536"], [PY, peers, "consume"]],
                      how="ParquetFile.iter_batches(batch_size=65536) into a "
                          "RecordBatchStreamWriter on stdout, same consumer", skip=no_one))
    sizes = {"a": ctx.meta["table_bytes"], "w_parquet": ctx.meta["table_bytes"],
             "w_csv": ctx.meta["table_bytes"],
             "b": os.path.getsize(arrow) if os.path.exists(arrow) else None,
             "c": os.path.getsize(arrow) if os.path.exists(arrow) else None,
             "s_parquet": ctx.meta["table_bytes"]}
    for t, (name, _) in others.items():
        path = os.path.join(ctx.data, name)
        sizes[t] = os.path.getsize(path) if os.path.exists(path) else None  # input bytes
    for t, name in PANDAS_FILES.items():
        path = os.path.join(ctx.data, name)
        sizes[t] = os.path.getsize(path) if os.path.exists(path) else None  # input bytes
    for c in cells:
        c.nbytes = c.nbytes or sizes.get(c.task)
    return cells


def ensure_data(rows: int, data_dir: Optional[str]) -> str:
    """The data directory for `rows`, generating w1.arrow(s) there if missing."""
    if data_dir is None:
        data_dir = os.path.join(HERE, "data") if rows == FULL_ROWS else \
            os.path.join(HERE, "data", f"rows{rows}")
    meta = os.path.join(data_dir, "w1.meta.json")
    need = not os.path.exists(meta) or not all(
        os.path.exists(os.path.join(data_dir, f)) for f in ("w1.arrow", "w1.arrows"))
    if not need:
        with open(meta) as f:
            need = json.load(f)["rows"] != rows
    if need:
        log(f"generating W1 data ({rows:,} rows) in {data_dir}")
        args = [PY, os.path.join(HERE, "gen_w1.py"), "--rows", str(rows), "--out", data_dir]
        if rows != FULL_ROWS:
            args += ["--only", "arrow,arrows", "--force"]
        subprocess.run(args, check=True)
    return data_dir
