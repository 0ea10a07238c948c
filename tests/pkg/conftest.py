"""Fixtures for the tests of the Python package `sluice` (tests/pkg).

The package must be installed (scripts/test.sh installs it into a venv);
pyarrow, polars, DuckDB and pandas are the peers values are compared with.
SLUICE_BIN (the CLI) is only needed by the IPC --unordered test.
"""
import os
import sys
from pathlib import Path

import pyarrow as pa
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # tests/servers.py
from pkg_helpers import typed_table, write_ipc_file  # noqa: E402,F401


@pytest.fixture(scope="session", autouse=True)
def sigint_raises():
    """The Ctrl-C tests send SIGINT to this process and expect
    KeyboardInterrupt. A process started in the background by a
    non-interactive shell inherits SIGINT ignored, and Python then installs no
    handler: put Python's default one in place for the session."""
    import signal
    before = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, before)


@pytest.fixture(scope="session")
def data_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("pkg")


@pytest.fixture(scope="session")
def typed(data_dir):
    """(pyarrow table, IPC file of it in several batches)."""
    t = typed_table()
    return t, write_ipc_file(t, data_dir / "typed.arrow", max_chunksize=300)


@pytest.fixture(scope="session")
def numbers(data_dir):
    """A numeric table without nulls in one batch, and in many."""
    import numpy as np
    n = 50_000
    t = pa.table({"a": np.arange(n, dtype="i8"), "b": np.linspace(0, 1, n),
                  "c": np.arange(n, dtype="i4") % 17})
    one = write_ipc_file(t, data_dir / "numbers_one.arrow")
    many = write_ipc_file(t, data_dir / "numbers_many.arrow", max_chunksize=1000)
    return t, one, many


@pytest.fixture(scope="session")
def sluice_bin():
    path = os.environ.get("SLUICE_BIN")
    if not path:
        pytest.skip("SLUICE_BIN is not set")
    return path
