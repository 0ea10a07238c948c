#!/usr/bin/env python3
"""The peers' side of the S3 benchmarks (bench/w3.py); one JSON line on stdout.

  w3_peers.py smart_open s3://bucket/key
      smart_open + boto3, buffer_size 4 MiB: read(1) for the length byte, then
      read(L), to the end; counts messages and payload bytes.
  w3_peers.py consume
      an Arrow IPC stream on stdin (sluice cat -t arrows): rows and the total
      length of the binary column's values (= payload bytes).
  w3_peers.py fetched LOCAL.parquet COLS -- CMD...
      runs CMD (a sluice reading s3://...) with AWS_ENDPOINT_URL pointing at a
      counting proxy in front of the server; prints CMD's JSON result (as
      "list" when it is a list) plus the bytes fetched and the bytes needed:
      the column chunks of COLS in every row group plus the footer (pyarrow's
      metadata of the same file, read locally).
  w3_peers.py many TOOL s3://bucket/prefix/ [FORMAT]
      every Parquet (or FORMAT: csv, .csv.gz objects) object under the prefix
      into one Arrow table: TOOL is sluice (sluice.read(url)), pyarrow
      (pyarrow.dataset over an S3FileSystem) or polars (pl.read_parquet of
      prefix*.parquet with storage_options; Parquet only); rows and sum(id).
  w3_peers.py lookup TOOL s3://bucket/key COLUMN VALUE
      the rows of one Parquet object where COLUMN equals VALUE (a string):
      sluice.read(filters=), pyarrow.parquet.read_table(filters=) over an
      S3FileSystem, polars scan_parquet().filter().collect(); rows and sum(id).
Credentials and endpoint come from the AWS_* environment (bench/s3server.py).
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from urllib.parse import urlparse


def emit(**kw) -> None:
    print(json.dumps(kw), flush=True)


def smart_open_read(url: str) -> None:
    t_imp = time.perf_counter()
    import boto3
    import smart_open
    client = boto3.client("s3", endpoint_url=os.environ["AWS_ENDPOINT_URL"],
                          region_name=os.environ.get("AWS_REGION"))
    t0 = time.perf_counter()
    n = payload = 0
    with smart_open.open(url, "rb", transport_params={"client": client,
                                                      "buffer_size": 4 * 2**20}) as f:
        while True:
            b = f.read(1)
            if not b:
                break
            length = b[0]
            msg = f.read(length)
            if len(msg) != length:
                raise SystemExit(f"truncated message {n} at the end: {len(msg)} of {length}")
            n += 1
            payload += length
    t1 = time.perf_counter()
    emit(tool="smart_open", rows=n, payload_bytes=payload, load_s=t1 - t0,
         import_s=t0 - t_imp, version=smart_open.__version__, boto3=boto3.__version__)


def _s3_filesystem():
    """pyarrow's S3FileSystem for the server in the AWS_* environment."""
    import pyarrow.fs as pafs
    ep = urlparse(os.environ["AWS_ENDPOINT_URL"])
    return pafs.S3FileSystem(access_key=os.environ["AWS_ACCESS_KEY_ID"],
                             secret_key=os.environ["AWS_SECRET_ACCESS_KEY"],
                             region=os.environ.get("AWS_REGION", "us-east-1"),
                             endpoint_override=ep.netloc, scheme=ep.scheme)


def _polars_storage_options() -> dict:
    return {"aws_endpoint_url": os.environ["AWS_ENDPOINT_URL"],
            "aws_access_key_id": os.environ["AWS_ACCESS_KEY_ID"],
            "aws_secret_access_key": os.environ["AWS_SECRET_ACCESS_KEY"],
            "aws_region": os.environ.get("AWS_REGION", "us-east-1"), "aws_allow_http": "true"}


def many(tool: str, url: str, fmt: str = "parquet") -> None:
    t_imp = time.perf_counter()
    import pyarrow as pa
    import pyarrow.compute as pc
    loc = urlparse(url)
    if tool == "sluice":
        import sluice
        version = sluice.__version__
        t0 = time.perf_counter()
        # (pa.table(x) imports pandas on its first call, 0.2 s that is not the read's)
        table = pa.RecordBatchReader.from_stream(sluice.read(url)).read_all()
    elif tool == "pyarrow":
        import pyarrow.dataset as ds
        version = pa.__version__
        t0 = time.perf_counter()
        table = ds.dataset(loc.netloc + loc.path, format=fmt,
                           filesystem=_s3_filesystem()).to_table()
    elif tool == "polars" and fmt == "parquet":
        import polars as pl
        version = pl.__version__
        t0 = time.perf_counter()
        table = pl.read_parquet(url + "*.parquet",
                                storage_options=_polars_storage_options()).to_arrow()
    else:
        raise SystemExit(f"unknown tool {tool}")
    t1 = time.perf_counter()
    emit(tool=tool, rows=table.num_rows, sum_id=pc.sum(table.column("id")).as_py(),
         load_s=t1 - t0, import_s=t0 - t_imp, version=version)


def lookup(tool: str, url: str, column: str, value: str) -> None:
    """The rows of a Parquet object whose `column` equals `value`."""
    t_imp = time.perf_counter()
    import pyarrow as pa
    import pyarrow.compute as pc
    loc = urlparse(url)
    if tool == "sluice":
        import sluice
        version = sluice.__version__
        t0 = time.perf_counter()
        table = pa.RecordBatchReader.from_stream(
            sluice.read(url, filters=[(column, "=", value)])).read_all()
    elif tool == "pyarrow":
        import pyarrow.parquet as pq
        version = pa.__version__
        t0 = time.perf_counter()
        table = pq.read_table(loc.netloc + loc.path, filesystem=_s3_filesystem(),
                              filters=[(column, "=", value)])
    elif tool == "polars":
        import polars as pl
        version = pl.__version__
        t0 = time.perf_counter()
        table = pl.scan_parquet(url, storage_options=_polars_storage_options()).filter(
            pl.col(column) == value).collect().to_arrow()
    else:
        raise SystemExit(f"unknown tool {tool}")
    t1 = time.perf_counter()
    emit(tool=tool, rows=table.num_rows, sum_id=pc.sum(table.column("id")).as_py(),
         load_s=t1 - t0, import_s=t0 - t_imp, version=version)


def consume() -> None:
    import pyarrow as pa
    import pyarrow.compute as pc

    t0 = time.perf_counter()
    rows = payload = batches = 0
    with pa.ipc.open_stream(sys.stdin.buffer) as reader:
        for batch in reader:
            rows += batch.num_rows
            col = batch.column(0)
            if batch.num_rows:
                payload += pc.sum(pc.binary_length(col)).as_py() or 0
            batches += 1
    emit(tool="consumer", rows=rows, payload_bytes=payload, batches=batches,
         load_s=time.perf_counter() - t0)


def needed_bytes(path: str, cols: list) -> dict:
    """Column chunk bytes of `cols` over all row groups + footer (pyarrow metadata)."""
    import pyarrow.parquet as pq
    md = pq.ParquetFile(path).metadata
    names = [md.schema.column(i).path for i in range(md.num_columns)]
    chunks = 0
    for rg in range(md.num_row_groups):
        for c in cols:
            cc = md.row_group(rg).column(names.index(c))
            chunks += cc.total_compressed_size
    footer = md.serialized_size + 8  # metadata, its 4-byte length, "PAR1"
    return {"column_chunk_bytes": chunks, "footer_bytes": footer,
            "needed_bytes": chunks + footer, "row_groups": md.num_row_groups,
            "file_bytes": os.path.getsize(path)}


def fetched(local: str, cols: str, cmd: list) -> int:
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    from s3server import CountingProxy

    upstream = urlparse(os.environ["AWS_ENDPOINT_URL"]).port
    proxy = CountingProxy(upstream).start()
    env = dict(os.environ, AWS_ENDPOINT_URL=proxy.endpoint)
    t0 = time.perf_counter()
    p = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    t1 = time.perf_counter()
    proxy.stop()
    if p.returncode != 0:
        sys.stderr.write(p.stderr.decode(errors="replace"))
        return p.returncode
    lines = [ln for ln in p.stdout.decode().splitlines() if ln.startswith(("{", "["))]
    result = json.loads(lines[-1]) if lines else {}
    if isinstance(result, list):
        result = {"list": result}
    need = needed_bytes(local, cols.split(","))
    got = proxy.fetched_bytes()
    result.update(need)
    result.update({"fetched_bytes": got, "requests": len(proxy.requests),
                   "fetch_ratio": round(got / need["needed_bytes"], 4),
                   "through_proxy_s": t1 - t0,
                   "request_log": [list(r) for r in proxy.requests[:200]]})
    emit(**result)
    return 0


def main(argv) -> int:
    if len(argv) == 2 and argv[0] == "smart_open":
        smart_open_read(argv[1])
    elif len(argv) in (3, 4) and argv[0] == "many":
        many(*argv[1:])
    elif len(argv) == 5 and argv[0] == "lookup":
        lookup(*argv[1:])
    elif argv == ["consume"]:
        consume()
    elif len(argv) >= 4 and argv[0] == "fetched" and argv[3] == "--":
        return fetched(argv[1], argv[2], argv[4:])
    else:
        print(__doc__, file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
