"""Reading from S3 (issue 6, "Performance goal"): the cells bench/run.py
measures with `--workload w3`, all against one local S3 server (s3s-fs on
loopback, bench/s3server.py) started by this module for the run.

Tasks (all by default):
  w3          W3: w3.bin (16.5 MiB, ~692k messages of a 1-byte length L in 8..40
              + L bytes) read from s3://, every message counted.
              sluice `stats -f lenprefix --length-prefix u8` and `cat -t arrows
              | consumer`; smart_open + boto3 (buffer_size 4 MiB, read(1) then
              read(L)); floor: one `curl` GET of the object to /dev/null.
  w3_16       the same over w3_16.bin (1 MiB of 16-byte messages).
  parquet_s3  W1 w1.parquet from s3:// with two columns (x1, x2) projected and
              decoded (`sluice stats -c x1,x2 --limit <rows>`); a second cell
              runs the same through a counting proxy and reports the bytes
              fetched against the column chunks of x1, x2 + the footer
              (pyarrow's metadata): `fetch_ratio` in the result.
  csv_s3      W1 w1.csv: `sluice stats` via s3:// against the same command on the
              local file (the floor the issue compares with) and a curl GET.
  many_s3     the small-files case: W1's first 2^20 rows as 256 Parquet objects
              of 4,096 rows under one prefix (w3_many/, cut from w1.parquet),
              read into one Arrow table by sluice.read(s3://bench/many/),
              pyarrow.dataset over an S3FileSystem and polars read_parquet;
              rows and sum(id) checked. Per-object costs (a listing, opening
              GETs, footers, connections) dominate.
  big_s3      the same over larger objects: W1's first 2^24 rows as 64 Parquet
              objects of 2^18 rows (~9.4 MB each, w3_big/, under big/): every
              object is opened before the scan, so what each keeps until its
              turn shows in the peak RSS beside the table's 671 MB.
  lookup_s3   a point lookup that only dictionary pages can settle: the 64 rows
              of one user in w1_dict.parquet (bench/filters.py makes it: W1 plus
              a string column of users in runs of 64, pyarrow's defaults, no
              Bloom filter) by sluice.read(filters=), pyarrow read_table(filters=)
              over an S3FileSystem and polars scan_parquet().filter(); and the
              sluice cell through the counting proxy (fetch_ratio: of the
              whole file's chunks).
  gz_s3       compressed CSV objects: W1's first 96 * 2^16 rows as 96 .csv.gz
              objects (gzip -1, ~2.5 MB each, w3_gz/ cut from w1.csv, under
              gz/): sluice.read against pyarrow.dataset(format='csv'); each
              object is sampled to open it, so the peak RSS shows what the
              samples cost (polars and DuckDB read no compressed CSV from S3
              here).
Every message count and payload byte total is checked against the generator's
(w3.meta.json); the W1 tasks check the row count of every column (and the
parquet cell's stats against the local read).
"""
from __future__ import annotations

import atexit
import json
import os
import subprocess
from typing import Optional

import s3server
from harness import HERE, PY, ROOT, Cell, Context, log

FULL_ROWS = 1 << 25           # the W1 files of the parquet_s3 / csv_s3 tasks
QUICK_ROWS = 1 << 20
DEFAULT_TASKS = "w3,w3_16,parquet_s3,lookup_s3,csv_s3,many_s3,big_s3,gz_s3"
# The objects of the many-objects tasks: (directory, prefix, objects, rows each).
MANY_SETS = {"many_s3": ("w3_many", "many", 256, 4096),
             "big_s3": ("w3_big", "big", 64, 1 << 18)}
# ... and of the compressed-CSV one, cut from w1.csv.
GZ_SET = ("w3_gz", "gz", 96, 1 << 16)
META = "w3.meta.json"
CHECKS = ("W3: message count and payload bytes equal the generator's (w3.meta.json); the curl "
          "floor: bytes downloaded = object size; W1 over S3: row count of every column "
          "(w1.meta.json), and the bytes-fetched cell reports the proxy's count")
PROJECTED = "x1,x2"


def _count_checker(want_rows: int, want_payload: Optional[int]):
    def check(result: dict) -> Optional[str]:
        if "list" in result:  # sluice stats --json: one entry per column
            counts = {s["name"]: s.get("count") for s in result["list"]}
            if any(c != want_rows for c in counts.values()):
                return f"counts {counts} != {want_rows}"
            result["rows"] = want_rows
            return None
        if result.get("rows") != want_rows:
            return f"messages {result.get('rows')} != {want_rows}"
        if want_payload is not None and result.get("payload_bytes") != want_payload:
            return f"payload bytes {result.get('payload_bytes')} != {want_payload}"
        return None
    return check


def _curl_checker(want_bytes: int):
    def check(result: dict) -> Optional[str]:
        if result.get("status") != 200 or result.get("bytes") != want_bytes:
            return f"curl got HTTP {result.get('status')}, {result.get('bytes')} bytes, " \
                   f"want 200 and {want_bytes}"
        return None
    return check


def _sluice_payload_check(sluice: str, url: str, fmt_args: list, want_rows: int,
                          want_payload: int):
    """post() for `sluice stats` (which reports the count, not the payload
    bytes): reads the object once with `sluice cat -t arrows`, untimed, and
    sums the message lengths with pyarrow. Checked once per run of the runner."""
    done = {}

    def post() -> Optional[str]:
        if "ok" in done:
            return done["ok"]
        import pyarrow as pa
        import pyarrow.compute as pc
        p = subprocess.run([sluice, "-q", "cat", *fmt_args, url, "-t", "arrows"],
                           capture_output=True)
        if p.returncode != 0:
            done["ok"] = f"sluice cat {url}: {p.stderr.decode(errors='replace')[-300:]}"
            return done["ok"]
        t = pa.ipc.open_stream(p.stdout).read_all()
        payload = pc.sum(pc.binary_length(t.column(0))).as_py() or 0
        done["ok"] = None if (t.num_rows, payload) == (want_rows, want_payload) else \
            f"sluice cat: {t.num_rows} messages, {payload} payload bytes; want " \
            f"{want_rows}, {want_payload}"
        return done["ok"]
    return post


def _cut_objects(data: str, directory: str, count: int, ext: str, source: str,
                 write) -> list:
    """<data>/<directory>/part-NNN<ext> (NNN < count), made once by
    write(source, names) (each through a .tmp); [] without `source`."""
    out = os.path.join(data, directory)
    names = [os.path.join(out, f"part-{i:03d}{ext}") for i in range(count)]
    if all(os.path.exists(n) for n in names):
        return names
    if not os.path.exists(source):
        return []
    os.makedirs(out, exist_ok=True)
    write(source, names)
    return names


def _many_objects(data: str, parquet: str, task: str) -> list:
    """A many-objects task's objects: Parquet, cut from the first objects *
    rows rows of w1.parquet."""
    directory, _, count, rows = MANY_SETS[task]

    def write(source, names):
        import pyarrow as pa
        import pyarrow.parquet as pq
        batches = pq.ParquetFile(source).iter_batches(batch_size=rows)
        for name, batch in zip(names, batches):
            pq.write_table(pa.Table.from_batches([batch]), name + ".tmp")
            os.replace(name + ".tmp", name)
    return _cut_objects(data, directory, count, ".parquet", parquet, write)


def _gz_objects(data: str, csv: str) -> list:
    """gz_s3's objects: W1's first objects * rows rows of w1.csv, each
    with the header, gzip level 1."""
    import gzip
    directory, _, count, rows = GZ_SET

    def write(source, names):
        with open(source, "rb") as f:
            header = f.readline()
            for name in names:
                lines = [f.readline() for _ in range(rows)]
                with open(name + ".tmp", "wb") as g:
                    g.write(gzip.compress(header + b"".join(lines), 1))
                os.replace(name + ".tmp", name)
    return _cut_objects(data, directory, count, ".csv.gz", csv, write)


def _start_server(ctx: Context, files: list, keyed: dict) -> s3server.S3Server:
    """The server with `files` as objects named by their base names, and
    `keyed` (key -> path) under their keys."""
    root = os.path.join(ctx.tmp, "s3root")
    server = s3server.server_for(root)
    for f in files:
        server.put(f)
    for key, path in keyed.items():
        server.put(path, key)
    server.start()
    atexit.register(server.stop)
    # Every cell runs with these (the harness's children inherit the environment):
    # sluice, boto3 and curl all find the server and the credentials here.
    for k in list(os.environ):
        if k.startswith("AWS_"):
            del os.environ[k]
    os.environ.update(s3server.env(server.endpoint))
    # No ~/.aws files: a path that does not exist (botocore cannot parse /dev/null).
    os.environ["AWS_CONFIG_FILE"] = os.path.join(root, "no-aws-config")
    os.environ["AWS_SHARED_CREDENTIALS_FILE"] = os.path.join(root, "no-aws-credentials")
    log(f"{type(server).__name__} on {server.endpoint}, objects under {root}")
    return server


def _curl(server: s3server.S3Server, key: str) -> list:
    return ["curl", "-sS", "-o", "/dev/null", "-w", '{"bytes": %{size_download}, '
            '"status": %{http_code}}\n', "--aws-sigv4", f"aws:amz:{s3server.REGION}:s3",
            "--user", f"{s3server.ACCESS_KEY}:{s3server.SECRET_KEY}",
            "-H", "x-amz-content-sha256: UNSIGNED-PAYLOAD", server.http_url(key)]


def cells(ctx: Context) -> list:
    peers = os.path.join(HERE, "peers", "w3_peers.py")
    w1_meta_path = os.path.join(ctx.data, "w1.meta.json")
    with open(w1_meta_path) as f:
        w1_meta = json.load(f)
    rows = w1_meta["rows"]
    parquet = os.path.join(ctx.data, "w1.parquet")
    csv = os.path.join(ctx.data, "w1.csv")
    objects = [os.path.join(ctx.data, n) for n in ctx.meta["files"]]
    # A set is cut only from a W1 with enough rows (--rows below it: skipped).
    def cut_skip(task: str, count: int, rows_each: int, source: str) -> Optional[str]:
        if rows < count * rows_each:
            return f"W1 has {rows:,} rows, fewer than the {count * rows_each:,} {task} needs"
        return None if os.path.exists(source) else f"no {source} to cut the {task} objects from"
    skips = {task: cut_skip(task, *MANY_SETS[task][2:], parquet) for task in MANY_SETS}
    skips["gz_s3"] = cut_skip("gz_s3", *GZ_SET[2:], csv)
    sets = {task: _many_objects(ctx.data, parquet, task) if skips[task] is None else []
            for task in MANY_SETS if task in ctx.tasks}
    gz = _gz_objects(ctx.data, csv) if "gz_s3" in ctx.tasks and skips["gz_s3"] is None else []
    keyed = {f"{MANY_SETS[task][1]}/{os.path.basename(p)}": p
             for task, paths in sets.items() for p in paths}
    keyed.update({f"{GZ_SET[1]}/{os.path.basename(p)}": p for p in gz})
    lookup = None
    if "lookup_s3" in ctx.tasks and os.path.exists(parquet):
        import filters  # bench/filters.py: the same file and user as its local lookup
        dict_path, user = filters.dict_file(ctx.data)
        session = filters.DICT_ROW // 64
        ids = range(session * 64, min(session * 64 + 64, rows))
        lookup = (dict_path, user, len(ids), sum(ids))
    server = _start_server(ctx, objects + [p for p in (parquet, csv) if os.path.exists(p)] +
                           ([lookup[0]] if lookup else []), keyed)
    lp = ["-f", "lenprefix", "--length-prefix", "u8"]
    out = []

    for task, name in (("w3", "w3.bin"), ("w3_16", "w3_16.bin")):
        ref = ctx.meta["files"][name]
        url = server.url(name)
        check = _count_checker(ref["messages"], ref["payload_bytes"])
        size = ref["bytes"]
        out.append(Cell(task, "sluice stats -f lenprefix (s3://)", "sluice", "sluice",
                        [[ctx.sluice, "-q", "stats", *lp, url, "--json"]],
                        how=f"`sluice stats {url} -f lenprefix --length-prefix u8 --json`: every "
                            "message read (readahead: one GET streams the object; ranged GETs "
                            "in parallel join it on a slow link) and counted; "
                            "payload bytes checked once with `sluice cat -t arrows`, untimed",
                        checker=_count_checker(ref["messages"], None), nbytes=size,
                        post=_sluice_payload_check(ctx.sluice, url, lp, ref["messages"],
                                                   ref["payload_bytes"])))
        out.append(Cell(task, "sluice cat -t arrows | consumer (s3://)", "sluice", "sluice",
                        [[ctx.sluice, "-q", "cat", *lp, url, "-t", "arrows"],
                         [PY, peers, "consume"]], group="pipe",
                        how="`sluice cat ... -t arrows` piped to a pyarrow process that counts "
                            "rows and sums the binary lengths (payload bytes)",
                        checker=check, nbytes=size))
        out.append(Cell(task, "smart_open + boto3, read(1) + read(L)", "smart_open", "peer",
                        [[PY, peers, "smart_open", url]],
                        how="smart_open.open(url, 'rb', transport_params={'client': boto3 client,"
                            " 'buffer_size': 4 MiB}); read(1) for the length, read(L) for the "
                            "message, to the end", checker=check, nbytes=size))
        out.append(Cell(task, "curl GET whole object > /dev/null", "curl", "floor",
                        [_curl(server, name)],
                        how="one SigV4-signed GET of the whole object, body to /dev/null "
                            "(bytes downloaded checked, messages not parsed)",
                        checker=_curl_checker(size), nbytes=size))

    # W1 Parquet from S3, two columns projected.
    no_parquet = None if os.path.exists(parquet) else f"no {parquet} (gen_w1.py --only parquet)"
    stats_pq = ["-q", "stats", server.url("w1.parquet"), "-c", PROJECTED, "--json",
                "--limit", str(rows)]
    pq_check = _count_checker(rows, None)
    out.append(Cell("parquet_s3", f"sluice stats -c {PROJECTED} --limit N (s3://)", "sluice",
                    "sluice", [[ctx.sluice, *stats_pq]],
                    how="`sluice stats s3://.../w1.parquet -c x1,x2 --json --limit <rows>`: "
                        "footer, then the two columns' chunks, every value decoded",
                    checker=pq_check, skip=no_parquet))
    out.append(Cell("parquet_s3", f"sluice stats -c {PROJECTED} (local file)", "sluice", "floor",
                    [[ctx.sluice, *stats_pq[:2], parquet, *stats_pq[3:]]],
                    how="the same command on the local file", checker=pq_check,
                    skip=no_parquet))
    out.append(Cell("parquet_s3", "bytes fetched: same, through a counting proxy", "sluice",
                    "sluice", [[PY, peers, "fetched", parquet, PROJECTED, "--",
                                ctx.sluice, *stats_pq]], group="proxy",
                    how="the s3:// cell run with AWS_ENDPOINT_URL at a loopback proxy that "
                        "counts response body bytes; needed = x1, x2 column chunks of every "
                        "row group + footer from pyarrow's metadata; result fetch_ratio",
                    checker=pq_check, skip=no_parquet))

    # A point lookup in w1_dict.parquet from S3.
    if "lookup_s3" in ctx.tasks:
        no_lookup = None if lookup else f"no {parquet} to make w1_dict.parquet from"
        url = server.url("w1_dict.parquet") if lookup else ""
        user = lookup[1] if lookup else ""
        check = _many_checker(*lookup[2:]) if lookup else None
        for tool, name, python, how in (
                ("sluice", "sluice.read(filters=) (s3://)", ctx.python,
                 "sluice.read(url, filters=[('user', '=', u)]): footer, then each row "
                 "group's dictionary page of `user` as its split comes up, then the row "
                 "group that holds u"),
                ("pyarrow", "pyarrow read_table(filters=) (S3FileSystem)", PY,
                 "pq.read_table(bucket/key, filesystem=S3FileSystem(...), "
                 "filters=[('user', '=', u)])"),
                ("polars", "polars scan_parquet().filter() (s3://)", PY,
                 "pl.scan_parquet(url, storage_options=...).filter(pl.col('user') == u)"
                 ".collect()")):
            out.append(Cell("lookup_s3", name, tool, "sluice" if tool == "sluice" else "peer",
                            [[python, peers, "lookup", tool, url, "user", user]],
                            how=how, checker=check, skip=no_lookup))
        out.append(Cell("lookup_s3", "bytes fetched: sluice through a counting proxy", "sluice",
                        "sluice", [[PY, peers, "fetched", lookup[0] if lookup else "",
                                    "id,x1,x2,x3,x4,user", "--", ctx.python, peers, "lookup",
                                    "sluice", url, "user", user]], group="proxy",
                        how="the sluice cell with AWS_ENDPOINT_URL at a loopback proxy that "
                            "counts response body bytes; fetch_ratio = fetched / (every chunk "
                            "of the file + footer)", checker=check, skip=no_lookup))

    # W1 CSV from S3 against local.
    no_csv = None if os.path.exists(csv) else f"no {csv} (gen_w1.py --csv --only csv)"
    csv_size = os.path.getsize(csv) if os.path.exists(csv) else None
    csv_check = _count_checker(rows, None)
    out.append(Cell("csv_s3", "sluice stats w1.csv (s3://)", "sluice", "sluice",
                    [[ctx.sluice, "-q", "stats", server.url("w1.csv"), "--json"]],
                    how="`sluice stats s3://.../w1.csv --json`: every row parsed, all columns",
                    checker=csv_check, skip=no_csv, nbytes=csv_size))
    out.append(Cell("csv_s3", "sluice stats w1.csv (local file)", "sluice", "floor",
                    [[ctx.sluice, "-q", "stats", csv, "--json"]],
                    how="the same command on the local file (page cache warm)",
                    checker=csv_check, skip=no_csv, nbytes=csv_size))
    out.append(Cell("csv_s3", "curl GET w1.csv > /dev/null", "curl", "floor",
                    [_curl(server, "w1.csv")], how="one GET of the whole object",
                    checker=_curl_checker(csv_size or 0), skip=no_csv, nbytes=csv_size))

    # Many objects under one prefix: small ones, then larger ones.
    for task, paths in sets.items():
        _, prefix, count, rows_each = MANY_SETS[task]
        no_many = skips[task]
        n_many = count * rows_each
        many_check = _many_checker(n_many, n_many * (n_many - 1) // 2)
        many_url = server.url(f"{prefix}/")
        for tool, name, python, how in (
                ("sluice", f"sluice.read(s3://.../{prefix}/)", ctx.python,
                 "sluice.read(url) of the prefix (listing, objects opened 8 at a time, "
                 "requests on shared kept-alive connections), as a pyarrow table"),
                ("pyarrow", "pyarrow.dataset (S3FileSystem)", PY,
                 f"pyarrow.dataset.dataset(bucket/{prefix}/, format='parquet', "
                 "filesystem=S3FileSystem(endpoint_override=...)).to_table()"),
                ("polars", f"polars read_parquet(s3://.../{prefix}/*.parquet)", PY,
                 "pl.read_parquet(url + '*.parquet', storage_options={endpoint, keys, "
                 "aws_allow_http}).to_arrow()")):
            out.append(Cell(task, name, tool, "sluice" if tool == "sluice" else "peer",
                            [[python, peers, "many", tool, many_url]],
                            how=how + f"; {count} objects of {rows_each:,} rows",
                            checker=many_check, skip=no_many))

    # Many compressed CSV objects under one prefix: each opened (its head
    # sampled for the schema) before the scan, read in bounded memory.
    if "gz_s3" in ctx.tasks:
        _, prefix, count, rows_each = GZ_SET
        n_gz = count * rows_each
        gz_check = _many_checker(n_gz, n_gz * (n_gz - 1) // 2)
        gz_url = server.url(f"{prefix}/")
        no_gz = skips["gz_s3"]
        for tool, name, python, how in (
                ("sluice", f"sluice.read(s3://.../{prefix}/)", ctx.python,
                 "sluice.read(url) of the prefix: each .csv.gz object's head sampled by a "
                 "ranged GET to open it, then read from its start in its turn, inflated "
                 "on a thread of its own"),
                ("pyarrow", "pyarrow.dataset csv (S3FileSystem)", PY,
                 f"pyarrow.dataset.dataset(bucket/{prefix}/, format='csv', "
                 "filesystem=S3FileSystem(...)).to_table() (gzip by extension)")):
            out.append(Cell("gz_s3", name, tool, "sluice" if tool == "sluice" else "peer",
                            [[python, peers, "many", tool, gz_url, "csv"]],
                            how=how + f"; {count} objects of {rows_each:,} rows (gzip -1)",
                            checker=gz_check, skip=no_gz))
    return out


def _many_checker(want_rows: int, want_sum_id: int):
    def check(result: dict) -> Optional[str]:
        if (result.get("rows"), result.get("sum_id")) != (want_rows, want_sum_id):
            return f"rows {result.get('rows')}, sum(id) {result.get('sum_id')}; want " \
                   f"{want_rows}, {want_sum_id}"
        return None
    return check


def ensure_data(rows: int, data_dir: Optional[str]) -> str:
    """The data directory: W3's files (gen_w3.py) and W1's w1.parquet, w1.csv
    for `rows` (gen_w1.py), generated when missing. Shares W1's directories
    (bench/data at full size, bench/data/rowsN otherwise)."""
    if data_dir is None:
        data_dir = os.path.join(HERE, "data") if rows == FULL_ROWS else \
            os.path.join(HERE, "data", f"rows{rows}")
    if not os.path.exists(os.path.join(data_dir, META)):
        log(f"generating W3 data in {data_dir}")
        subprocess.run([PY, os.path.join(HERE, "gen_w3.py"), "--out", data_dir], check=True,
                       cwd=ROOT)
    w1_meta = os.path.join(data_dir, "w1.meta.json")
    missing = [k for k, n in (("parquet", "w1.parquet"), ("csv", "w1.csv"))
               if not os.path.exists(os.path.join(data_dir, n))]
    if os.path.exists(w1_meta):
        with open(w1_meta) as f:
            if json.load(f)["rows"] != rows:
                raise SystemExit(f"{w1_meta} is not for {rows} rows; pass --data")
    if missing or not os.path.exists(w1_meta):
        log(f"generating W1 {','.join(missing) or 'meta'} ({rows:,} rows) in {data_dir}")
        subprocess.run([PY, os.path.join(HERE, "gen_w1.py"), "--rows", str(rows), "--out",
                        data_dir, "--csv", "--only", ",".join(missing) or "meta"],
                       check=True, cwd=ROOT)
    return data_dir
