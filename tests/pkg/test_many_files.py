"""A dataset of many local files uses a bounded number of descriptors: a
mapped file needs none open. Each mapping kept a descriptor for as long as
the dataset (or any batch built on the file) lived, so a directory of ~1,000
files failed with the default soft limit of 1024 ("Too many open files")
where pyarrow.dataset, DuckDB and polars read it with a limit of 256; and
closing a scan returned before its descriptors were let go."""
import json
import os
import subprocess
import sys

import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.dataset as pads
import pyarrow.parquet as pq
import pytest

import sluice

pytestmark = pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="needs /proc")

N_FILES = 400
LIMIT = 256


@pytest.fixture(scope="module")
def many(tmp_path_factory):
    """{kind: directory} of N_FILES small files each (a hive dataset of
    2 x N_FILES / 2 Parquet partitions as pyarrow's write_dataset makes it,
    CSV, gzipped CSV, Arrow IPC files)."""
    root = tmp_path_factory.mktemp("many")
    n = N_FILES // 2
    t = pa.table({"k": [i // 2 for i in range(N_FILES)], "h": [i % 2 for i in range(N_FILES)],
                  "v": list(range(N_FILES)), "s": ["s%d" % i for i in range(N_FILES)]})
    pads.write_dataset(t, root / "hive", format="parquet", partitioning=["k", "h"],
                       partitioning_flavor="hive")
    assert sum(len(f) for _, _, f in os.walk(root / "hive")) == 2 * n
    dirs = {"hive": root / "hive"}
    for kind in ("csv", "csv.gz", "arrow"):
        d = root / kind.replace(".", "_")
        d.mkdir()
        for i in range(N_FILES):
            part = t.slice(i, 1).drop_columns(["k", "h"])
            path = d / ("part-%04d.%s" % (i, kind))
            if kind == "arrow":
                with pa.ipc.new_file(path, part.schema) as w:
                    w.write_table(part)
            else:
                with pa.CompressedOutputStream(path, "gzip") if kind == "csv.gz" else \
                        pa.OSFile(str(path), "wb") as out:
                    pacsv.write_csv(part, out)
        dirs[kind] = d
    return dirs


CHILD = r"""
import json, resource, sys
import sluice
limit = int(sys.argv[1])
resource.setrlimit(resource.RLIMIT_NOFILE, (limit, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))
src, fmt = sys.argv[2], sys.argv[3] or None
out = {}
try:
    t = sluice.read(src, format=fmt)
    out["rows"] = sorted(t.column("v").to_pylist())
    out["names"] = sorted(sluice.schema(src, format=fmt).names)
    st = {c["name"]: (c["count"], c["min"], c["max"]) for c in sluice.stats(src, format=fmt)}
    out["v_stats"] = st["v"]
    out["limit1"] = sluice.read(src, format=fmt, limit=1).num_rows
    with sluice.scan(src, format=fmt, limit=1) as sc:
        out["scan1"] = sum(b.num_rows for b in sc)
except Exception as e:
    out["error"] = "%s: %s" % (type(e).__name__, e)
print(json.dumps(out))
"""


@pytest.mark.parametrize("kind", ["hive", "csv", "csv.gz", "arrow"])
def test_many_files_read_with_a_low_descriptor_limit(many, kind):
    src = many[kind]
    fmt = {"hive": "parquet", "csv": "csv", "csv.gz": "csv", "arrow": "arrow"}[kind]
    if kind == "arrow":
        want = pads.dataset(src, format="ipc").to_table()
    elif kind == "hive":
        want = pads.dataset(src, format="parquet", partitioning="hive").to_table()
    else:
        want = pads.dataset(src, format="csv").to_table()
    proc = subprocess.run([sys.executable, "-c", CHILD, str(LIMIT), str(src), fmt],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    got = json.loads(proc.stdout)
    assert "error" not in got, got["error"]
    assert got["rows"] == sorted(want.column("v").to_pylist())
    assert got["names"] == sorted(want.column_names)
    assert got["v_stats"] == [N_FILES, "0", str(N_FILES - 1)]  # (as the CLI prints them)
    assert got["limit1"] == 1 and got["scan1"] == 1


def fd_count():
    return len(os.listdir("/proc/self/fd"))


def mapped(src):
    """Mappings of files under `src` in this process."""
    with open("/proc/self/maps") as f:
        return sum(str(src) in line for line in f)


@pytest.mark.parametrize("kind", ["hive", "csv.gz"])
def test_scan_close_lets_go_of_every_descriptor(many, kind):
    """Right when close() or the with block returns, not some time later (the
    scan's thread closed it after close() had returned), also while a batch
    taken from the scan (built on a mapped file) lives."""
    src = many[kind]
    before = fd_count()
    for _ in range(5):
        with sluice.scan(src) as sc:
            assert next(sc).num_rows >= 1
        assert fd_count() == before and mapped(src) == 0
        sc = sluice.scan(src)
        batch = next(sc)
        sc.close()
        assert fd_count() == before
        t = sluice.read(src)
        assert fd_count() == before
    assert batch.num_rows >= 1 and t.num_rows == N_FILES
    del batch, t
    assert mapped(src) == 0


def test_convert_many_large_arrow_files_with_a_low_descriptor_limit(sluice_bin, tmp_path):
    """Runs of 1 MiB or more of a mapped file are copied in the kernel from a
    descriptor opened for that copy only: converting 150 such files to an
    IPC stream needs no descriptor per file."""
    import numpy as np
    import resource
    d = tmp_path / "big"
    d.mkdir()
    for i in range(150):
        t = pa.table({"a": np.arange(200_000, dtype=np.int64) + i * 200_000})
        with pa.ipc.new_file(d / ("p%03d.arrow" % i), t.schema) as w:
            w.write_table(t)

    def low_limit():
        resource.setrlimit(resource.RLIMIT_NOFILE, (40, 40))
    out = tmp_path / "out.arrows"
    proc = subprocess.run([sluice_bin, "convert", str(d), str(out)], capture_output=True,
                          text=True, timeout=300, preexec_fn=low_limit)
    assert proc.returncode == 0, proc.stderr
    got = pa.ipc.open_stream(out).read_all()
    assert got.equals(pads.dataset(d, format="ipc").to_table())
