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


def test_misuse_is_refused(tmp_path):
    # src was Any to a type checker (InMemory included Any), and the classes
    # sluice makes took no arguments (no __init__ in the stubs).
    code, out = run_mypy(tmp_path, """\
        import sluice


        def misuse() -> None:
            sluice.read(None)
            sluice.read(123)
            sluice.Schema()
            sluice.Scanner()
        """)
    assert code == 1, out
    lines = [line for line in out.splitlines() if ": error:" in line]
    assert [line.split(":")[1] for line in lines] == ["5", "6", "7", "8"], out


def test_stubtest_finds_no_difference():
    # The stubs against the installed package: aliases only in the stubs,
    # missing __init__s and __all__, keywords hidden in **format_options.
    pytest.importorskip("mypy")
    proc = subprocess.run([sys.executable, "-m", "mypy.stubtest", "--concise", "sluice"],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_aliases_exist_at_runtime():
    import typing

    import sluice

    # Annotations evaluated at runtime (no `from __future__ import annotations`).
    def f(src: sluice.Sources, p: sluice.PathLike, m: sluice.InMemory,
          filters: sluice.PartitionFilters) -> sluice.Table:
        return sluice.read(src, filters=filters)

    assert typing.get_type_hints(f)["src"] is sluice.Sources
    assert all(hasattr(sluice, name) for name in sluice.__all__)
    assert "Scanner" in sluice.__all__


def test_dataset_keywords_are_in_the_signatures():
    # They were taken through **format_options: help() did not show them.
    import inspect

    import sluice
    import sluice.dask
    for fn in (sluice.read, sluice.scan, sluice.read_pandas, sluice.schema, sluice.stats,
               sluice.dask.read):
        params = inspect.signature(fn).parameters
        for name, default in (("hive_partitioning", True), ("union_by_name", False),
                              ("filters", None)):
            assert params[name].kind is inspect.Parameter.KEYWORD_ONLY, (fn, name)
            assert params[name].default is default, (fn, name)
    assert "hive_partitioning:" in sluice.read.__doc__ and "filters:" in sluice.read.__doc__


def test_public_methods_have_docstrings():
    """help() showed nothing for these."""
    import sluice
    for fn in (sluice.Table.column, sluice.Batch.column, sluice.Batch.to_pydict,
               sluice.Batch.to_pylist, sluice.Batch.to_pandas, sluice.Column.to_pylist,
               sluice.Scanner.close):
        assert fn.__doc__ and len(fn.__doc__.split()) > 5, fn.__qualname__
    # filters=: what `not in` does with nulls (as the README's CLI section
    # says): dropped, as DuckDB and polars do; pyarrow keeps them.
    doc = " ".join(sluice.read.__doc__.split())
    assert "``not in`` and ``!=`` drop rows whose value is null" in doc
    assert "pyarrow's ``not in`` keeps them" in doc
