"""The type stubs (__init__.pyi, dask.pyi) against what sluice does: code the
README documents type-checks under mypy --strict (when mypy is installed)."""
import subprocess
import sys
import textwrap

import pytest


def run_mypy(tmp_path, source):
    """mypy --strict on `source` as a user's script: (exit code, output)."""
    pytest.importorskip("mypy")
    script = tmp_path / "user_script.py"
    script.write_text(textwrap.dedent(source))
    proc = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-incremental", "--no-error-summary",
         "--cache-dir", str(tmp_path / "cache"), "--python-executable", sys.executable,
         script.name], cwd=tmp_path, capture_output=True, text=True, timeout=600)
    return proc.returncode, proc.stdout + proc.stderr


def test_documented_usage_type_checks(tmp_path):
    # Each line works at runtime and is in the README; mypy once refused the
    # BytesIO destination and source, OR-groups of filters, Error("message"),
    # and took `with` blocks for ones that swallow exceptions ("Missing
    # return statement" after a return inside them).
    code, out = run_mypy(tmp_path, """\
        import io

        import sluice
        import sluice.dask


        def main(t: sluice.Table) -> None:
            buf = io.BytesIO()
            sluice.write(t, buf, format="parquet")
            with open("out.parquet", "wb") as f:
                sluice.write(t, f)
            sluice.dask.read(io.BytesIO(b"a\\n1\\n"), format="csv")
            sluice.dask.read(b"a\\n1\\n", format="csv")
            sluice.dask.read("x.parquet", filters=[[("i", ">", 5)], [("i", "=", 1)]])
            sluice.dask.read(["a.parquet", "b.parquet"], filters="year>=2023")
            raise sluice.Error("my message")


        def writes(t: sluice.Table) -> int:
            with sluice.Writer("o.parquet") as w:
                w.write(t)
                return 1


        def scans() -> int:
            with sluice.scan("x.csv") as sc:
                return sum(b.num_rows for b in sc)
        """)
    assert code == 0, out
