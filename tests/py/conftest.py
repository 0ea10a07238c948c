"""Shared fixtures for sluice's Python interop tests.

Environment (set by the `interop_python` CTest; set them by hand to run
pytest directly):
  SLUICE_BIN      path to the built `sluice` CLI. Tests that run sluice are
                  skipped when it is unset; peer-only checks still run.
  SLUICE_CORPORA  the peer-written corpora (default: ../shared/corpora beside
                  the repository).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))  # tests/servers.py


def corpora_dir() -> Path:
    env = os.environ.get("SLUICE_CORPORA")
    return Path(env) if env else REPO.parent / "shared" / "corpora"


@pytest.fixture(scope="session")
def corpora() -> Path:
    path = corpora_dir()
    if not path.is_dir():
        pytest.fail(f"corpora not found at {path} (set SLUICE_CORPORA)")
    return path


@pytest.fixture(scope="session")
def sluice_bin() -> str:
    path = os.environ.get("SLUICE_BIN")
    if not path:
        pytest.skip("SLUICE_BIN is not set: no sluice CLI to test")
    if not os.access(path, os.X_OK):
        pytest.fail(f"SLUICE_BIN={path} is not an executable file")
    return path


class Sluice:
    """Runs the CLI with a timeout and reports its stderr on failure."""

    def __init__(self, binary: str):
        self.binary = binary

    def run(self, *args, stdout=None, timeout: float = 120) -> subprocess.CompletedProcess:
        cmd = [self.binary, *map(str, args)]
        proc = subprocess.run(cmd, stdout=stdout if stdout is not None else subprocess.PIPE,
                              stderr=subprocess.PIPE, timeout=timeout)
        err = proc.stderr.decode(errors="replace").strip()
        if proc.returncode != 0:
            pytest.fail(f"{' '.join(cmd)} exited {proc.returncode}: {err}")
        if any(m in err for m in SANITIZER_MARKERS):
            pytest.fail(f"{' '.join(cmd)}: sanitizer report:\n{err}")
        return proc


    def run_raw(self, *args, timeout: float = 120) -> subprocess.CompletedProcess:
        return subprocess.run([self.binary, *map(str, args)], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, timeout=timeout)

    def expect_error(self, *args, timeout: float = 120) -> subprocess.CompletedProcess:
        """Runs a command that must fail cleanly: exit status 1 (a data or I/O
        error), a message on stderr, and no crash or sanitizer report (under
        ASan, a report also exits non-zero, so the status alone cannot tell)."""
        proc = self.run_raw(*args, timeout=timeout)
        check_clean_failure(proc)
        return proc


SANITIZER_MARKERS = ("Sanitizer", "runtime error:", "Segmentation fault")


def arrow_to_csv(sluice: Sluice, table, directory: Path, name: str, *args) -> Path:
    """`table` written by pyarrow as the Arrow file directory/name.arrow (one
    batch), then converted by sluice (`sluice convert ... *args`) to
    directory/name.csv, whose path is returned."""
    import pyarrow.ipc as ipc  # (imported here: some test files run without pyarrow)

    src = directory / f"{name}.arrow"
    with ipc.new_file(src, table.schema) as w:
        w.write_table(table)
    out = directory / f"{name}.csv"
    sluice.run("convert", src, out, *args)
    return out

# ASan's shadow memory and quarantine are no measure of what a build holds.
MEASURES_RSS = "ASAN_OPTIONS" not in os.environ


def peak_rss_kib(cmd, env=None, timeout=300) -> tuple:
    """Runs `cmd`, which must succeed: (its peak RSS in KiB, its stdout). A
    child forked from pytest would count pytest's RSS as its own (Linux keeps
    the largest across exec): a fresh Python runs it and reports its only
    child's peak."""
    probe = ("import json, resource, subprocess, sys\n"
             "p = subprocess.run(sys.argv[1:], stdout=subprocess.PIPE, stderr=subprocess.PIPE)\n"
             "print(json.dumps([p.returncode, p.stderr.decode(errors='replace'),\n"
             "                  resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss,\n"
             "                  p.stdout.decode(errors='replace')]))\n")
    proc = subprocess.run([sys.executable, "-c", probe, *map(str, cmd)], stdout=subprocess.PIPE,
                          check=True, timeout=timeout, env=env)
    import json
    rc, err, peak, out = json.loads(proc.stdout)
    assert rc == 0, f"{' '.join(map(str, cmd))}: exit {rc}:\n{err}"
    return peak, out


def uvarint(n: int) -> bytes:
    """n >= 0 as an unsigned LEB128 varint (protobuf's, Avro's after zigzag,
    Parquet's Thrift compact protocol's and RLE headers'), for tests that
    write such bytes by hand."""
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def check_clean_failure(proc: subprocess.CompletedProcess) -> None:
    err = proc.stderr.decode(errors="replace")
    what = " ".join(map(str, proc.args))
    assert not any(m in err for m in SANITIZER_MARKERS), f"{what}: sanitizer report:\n{err}"
    assert proc.returncode == 1, f"{what}: expected exit 1 (clean error), got {proc.returncode}:\n{err}"
    assert err.strip(), f"{what}: failed without a message"


@pytest.fixture(scope="session")
def sluice(sluice_bin) -> Sluice:
    return Sluice(sluice_bin)


@pytest.fixture(scope="session")
def cassandra_node():
    """One real Cassandra 5.0 node on loopback for the whole session
    (tests/py/cassandra_node.py): .host, .port, .username, .password,
    .session(keyspace=None). Skipped when the jars (scripts/setup.sh), java or
    cassandra-driver are missing."""
    from cassandra_node import CassandraNode, cassandra_available

    reason = cassandra_available()
    if reason:
        pytest.skip(reason)
    node = CassandraNode()
    node.start()
    try:
        yield node
    finally:
        node.stop()
