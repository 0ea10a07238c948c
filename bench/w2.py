"""W2 (wide Avro records, BENCHMARKS.md): the cells bench/run.py measures.

Tasks, one per codec so that ratios compare like with like:
  r_null, r_deflate, r_snappy, r_zstandard   read w2_<codec>.avro (fastavro
        wrote it) into memory: sluice into Arrow (features as list<double>),
        fastavro into records then Arrow, polars read_avro, avro-c and Java
        Avro through their generic value APIs (no Arrow: decode + walk)
  w_null, w_deflate, w_snappy, w_zstandard   write w2.arrow (Arrow IPC file)
        as Avro with that codec: sluice convert vs fastavro (Arrow -> Python
        records -> fastavro.writer); outputs are read back with polars (Java
        Avro for zstandard) and checked, untimed
See bench/README.md ("W2 cells") for what every cell does exactly.
"""
from __future__ import annotations

import json
import os
import subprocess
from typing import Optional

from harness import HERE, PY, ROOT, Cell, Context, check_result, log

FULL_ROWS = 2999
QUICK_ROWS = 300
CODECS = ["null", "deflate", "snappy", "zstandard"]
DEFAULT_TASKS = ",".join([f"r_{c}" for c in CODECS] + [f"w_{c}" for c in CODECS])
META = "w2.meta.json"


def avro_tools_jar() -> Optional[str]:
    path = os.path.join(HERE, "bin", "java", "avro-tools.path")
    try:
        with open(path) as f:
            jar = f.read().strip()
        return jar if os.path.isfile(jar) else None
    except OSError:
        return None


# Codecs each peer reader has (polars 2.1: null, deflate, snappy; avro-c 1.11:
# null, deflate, snappy and its own lzma; Java Avro and fastavro: all four).
POLARS_CODECS = {"null", "deflate", "snappy"}
AVROC_CODECS = {"null", "deflate", "snappy"}


def avro_output_check(path: str, codec: str, meta: dict, java: Optional[list]) -> Optional[str]:
    """An Avro file written by a tool under test: its codec, and its values as
    another reader (polars; Java Avro for zstandard, which polars lacks) reads
    them, against the reference. Untimed."""
    try:
        with open(path, "rb") as f:
            head = f.read(1 << 16)
    except OSError as e:
        return f"{os.path.basename(path)}: {e}"
    tag = b"\x14avro.codec" + bytes([len(codec) * 2]) + codec.encode()
    if codec != "null" and tag not in head:
        return f"{os.path.basename(path)}: avro.codec is not {codec}"
    if codec in POLARS_CODECS:
        who, argv = "polars", [PY, os.path.join(HERE, "peers", "w2_peers.py"), "check", path]
    elif java:
        who, argv = "Java Avro", java + [path]
    else:
        return None  # no independent reader for this codec here
    p = subprocess.run(argv, capture_output=True, text=True)
    if p.returncode != 0:
        return f"{os.path.basename(path)}: {who} cannot read it: {p.stderr.strip()[-300:]}"
    line = [ln for ln in p.stdout.splitlines() if ln.startswith("{")][-1]
    err = check_result(json.loads(line), meta)
    return f"{who} reading {os.path.basename(path)}: {err}" if err else None


def cells(ctx: Context) -> list:
    peers = os.path.join(HERE, "peers", "w2_peers.py")
    load_arrow = os.path.join(ctx.bin, "load_arrow")
    avroc = os.path.join(ctx.bin, "avroc_read")
    jar = avro_tools_jar()
    java_cp = os.path.join(ctx.bin, "java") + ":" + (jar or "")
    no_load_arrow = None if os.access(load_arrow, os.X_OK) else \
        "bench/bin/load_arrow not built - run bench/build.sh"
    no_avroc = None if os.access(avroc, os.X_OK) else \
        "bench/bin/avroc_read not built (needs libavro-dev) - run bench/build.sh"
    no_java = None if jar and os.path.exists(os.path.join(ctx.bin, "java", "AvroRead.class")) \
        else "bench/bin/java/AvroRead.class not built (needs javac and the avro-tools jar from " \
             "scripts/setup.sh --deps) - run bench/build.sh"
    no_cli = None if os.access(ctx.sluice, os.X_OK) else f"sluice CLI not found at {ctx.sluice}"
    try:
        import polars
        no_polars = None if hasattr(polars, "read_avro") else \
            f"polars {polars.__version__} has no read_avro"
    except ImportError:
        no_polars = "polars not installed"
    meta = ctx.meta
    java_argv = None if no_java else ["java", "-cp", java_cp, "AvroRead"]
    cells = []
    sizes = {}

    for codec in CODECS:
        path = os.path.join(ctx.data, f"w2_{codec}.avro")
        missing = None if os.path.exists(path) else f"no {os.path.basename(path)} (bench/gen_w2.py)"
        t = f"r_{codec}"
        sizes[t] = os.path.getsize(path) if os.path.exists(path) else None
        cells.append(Cell(t, "sluice load_arrow", "sluice", "sluice", [[load_arrow, path]],
                          how="bench/load_arrow: the dataset API scans the file to the end "
                              "(blocks are splits, all cores), all batches kept in Arrow "
                              "memory", skip=no_load_arrow or missing))
        cells.append(Cell(t, "sluice load_arrow --threads 1", "sluice", "sluice",
                          [[load_arrow, "--threads", "1", path]],
                          how="same, one decoding thread", skip=no_load_arrow or missing))
        cells.append(Cell(t, "sluice load_arrow --stream", "sluice", "sluice",
                          [[load_arrow, "--stream", path]],
                          how="bench/load_arrow --stream: every batch checksummed as it "
                              "arrives and released, no table kept (as the avro-c and Java "
                              "cells read: one reused record, every field summed); the "
                              "checksums are inside load_s", skip=no_load_arrow or missing))
        cells.append(Cell(t, "fastavro + Arrow", "fastavro", "peer",
                          [[PY, peers, "read", "fastavro", path]],
                          how="list(fastavro.reader(f)), then pa.table from the records "
                              "(features as list<double>); decode_s in the JSON is the first "
                              "part", skip=missing))
        cells.append(Cell(t, "polars read_avro", "polars", "peer",
                          [[PY, peers, "read", "polars", path]],
                          how="pl.read_avro(path)", skip=missing or no_polars or (
                              None if codec in POLARS_CODECS else
                              f"polars read_avro has no {codec} codec")))
        cells.append(Cell(t, "avro-c generic reader", "avro-c", "peer", [[avroc, path]],
                          how="bench/avroc_read: libavro's avro_file_reader_read_value into "
                              "one reused generic value, every field walked and summed "
                              "(no Arrow)", skip=missing or no_avroc or (
                              None if codec in AVROC_CODECS else
                              f"avro-c 1.11 has no {codec} codec")))
        cells.append(Cell(t, "Java Avro GenericDatumReader", "java-avro", "peer",
                          [["java", "-cp", java_cp, "AvroRead", path]],
                          how="bench/java/AvroRead: DataFileReader + GenericDatumReader, "
                              "record reused, every field walked and summed (no Arrow); wall "
                              "includes JVM start-up", skip=missing or no_java))
        cells.append(Cell(t, f"cat w2_{codec}.avro > /dev/null", "cat", "floor", [["cat", path]],
                          how="read the (cached) input once", parse_json=False, check=False,
                          stdout_devnull=True, skip=missing))

    arrow = os.path.join(ctx.data, "w2.arrow")
    no_arrow = None if os.path.exists(arrow) else "no w2.arrow (bench/gen_w2.py)"
    for codec in CODECS:
        t = f"w_{codec}"
        sizes[t] = ctx.meta["table_bytes"]
        out_s = os.path.join(ctx.tmp, f"sluice_{codec}.avro")
        out_f = os.path.join(ctx.tmp, f"fastavro_{codec}.avro")
        out_cp = os.path.join(ctx.tmp, "cp_w2.arrow")
        cells.append(Cell(t, "sluice convert", "sluice", "sluice",
                          [[ctx.sluice, "convert", "--no-fsync", arrow, out_s, "-W",
                            f"codec={codec}"]],
                          how=f"`sluice convert --no-fsync w2.arrow out.avro -W codec={codec}` "
                              "(default block size 256 KiB), output in the page cache, no fsync "
                              "(as the peers)",
                          parse_json=False, check=False,
                          post=lambda p=out_s, c=codec: avro_output_check(p, c, meta, java_argv),
                          cleanup=[out_s], skip=no_cli or no_arrow))
        cells.append(Cell(t, "fastavro writer", "fastavro", "peer",
                          [[PY, peers, "write", "fastavro", arrow, out_f, codec]],
                          how="memory-mapped read_all, Arrow -> Python records (features via "
                              "numpy .tolist()), fastavro.writer(codec); to_python_s in the "
                              "JSON is the first part", check=False,
                          post=lambda p=out_f, c=codec: avro_output_check(p, c, meta, java_argv),
                          cleanup=[out_f], skip=no_arrow))
        cells.append(Cell(t, "cp w2.arrow out", "cp", "floor", [["cp", arrow, out_cp]],
                          how="cp of the Arrow input (read + write floor)", parse_json=False,
                          check=False, cleanup=[out_cp], skip=no_arrow))
    for c in cells:
        c.nbytes = c.nbytes or sizes.get(c.task)
    return cells


def ensure_data(rows: int, data_dir: Optional[str]) -> str:
    """The data directory for `rows`, generating the W2 files there if missing."""
    if data_dir is None:
        data_dir = os.path.join(HERE, "data") if rows == FULL_ROWS else \
            os.path.join(HERE, "data", f"w2rows{rows}")
    meta = os.path.join(data_dir, META)
    need = not os.path.exists(meta) or not all(
        os.path.exists(os.path.join(data_dir, f))
        for f in ["w2.arrow"] + [f"w2_{c}.avro" for c in CODECS])
    if not need:
        with open(meta) as f:
            need = json.load(f)["rows"] != rows
    if need:
        log(f"generating W2 data ({rows:,} rows) in {data_dir}")
        subprocess.run([PY, os.path.join(HERE, "gen_w2.py"), "--rows", str(rows),
                        "--out", data_dir], check=True, cwd=ROOT)
    return data_dir
