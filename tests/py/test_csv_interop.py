"""The CSV reader against pyarrow.csv: generated files with quotes, embedded
newlines, CRLF, empty fields, long fields and 1..1000 columns, the
arrow-testing corpus, and the fuzzing corpus (errors or results, no crash).

sluice side: `test_csv --dump FILE [OPTIONS]` (the C test binary doubles as a
driver until the registry lists the CSV reader): first line `name:format|...`,
then one line per row of JSON values. Located via SLUICE_TEST_CSV, else beside
SLUICE_BIN (build/tests/test_csv), else any build*/tests/test_csv in the repo.
"""

from __future__ import annotations

import datetime
import json
import math
import os
import random
import subprocess
from pathlib import Path

import pytest

pa = pytest.importorskip("pyarrow")
pcsv = pytest.importorskip("pyarrow.csv")

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent


def _driver() -> Path | None:
    env = os.environ.get("SLUICE_TEST_CSV")
    if env:
        return Path(env)
    bin_ = os.environ.get("SLUICE_BIN")
    if bin_:
        for cand in (Path(bin_).parent / "tests" / "test_csv", Path(bin_).parent / "test_csv"):
            if cand.exists():
                return cand
    for cand in sorted(REPO.glob("build*/tests/test_csv")):
        return cand
    return None


DRIVER = _driver()
needs_driver = pytest.mark.skipif(DRIVER is None, reason="test_csv driver not built")


def corpora() -> Path:
    env = os.environ.get("SLUICE_CORPORA")
    return Path(env) if env else REPO.parent / "shared" / "corpora"


def sluice_read(path: Path, options: str = "") -> tuple[list[str], list[list]]:
    res = subprocess.run([str(DRIVER), "--dump", str(path), options], capture_output=True,
                         timeout=120)
    assert res.returncode == 0, res.stderr.decode(errors="replace")
    lines = res.stdout.decode().split("\n")
    header = lines[0]
    names = [f.split(":", 1)[0] for f in header.split("|")] if header else []
    rows = [json.loads("[" + line + "]") for line in lines[1:] if line != ""]
    return names, rows


def pyarrow_read(path: Path, **parse) -> "pa.Table":
    return pcsv.read_csv(
        path,
        parse_options=pcsv.ParseOptions(newlines_in_values=True, **parse),
        convert_options=pcsv.ConvertOptions(
            null_values=["", "NA", "NULL", "null"], strings_can_be_null=True,
            quoted_strings_can_be_null=False),
    )


def normalise(v):
    if isinstance(v, (datetime.date, datetime.datetime)):
        return v.isoformat()
    if isinstance(v, float) and not math.isfinite(v):
        return None  # sluice renders non-finite floats as JSON null
    return v


def compare(path: Path, options: str = "", **parse) -> None:
    names, rows = sluice_read(path, options)
    table = pyarrow_read(path, **parse)
    assert names == table.column_names
    want = [list(r) for r in zip(*[[normalise(v) for v in c.to_pylist()] for c in table.columns])]
    assert len(rows) == table.num_rows
    for i, (got, exp) in enumerate(zip(rows, want)):
        assert got == exp, f"row {i}: {got} != {exp}"
    # many small splits give the same rows
    _, again = sluice_read(path, (options + "," if options else "") + "split_size=100")
    assert again == rows


def rand_string(rng: random.Random) -> str:
    pieces = ["a", "b", ",", '"', "\n", "\r\n", " ", "é", "日本", "x" * rng.randint(1, 300), "|", ";"]
    return "".join(rng.choice(pieces) for _ in range(rng.randint(1, 6)))


def quote(s: str) -> str:
    return '"' + s.replace('"', '""') + '"'


@needs_driver
@pytest.mark.parametrize("seed", range(6))
def test_generated(tmp_path: Path, seed: int) -> None:
    rng = random.Random(seed)
    n_rows = rng.randint(1, 400)
    eol = "\r\n" if seed % 2 else "\n"
    cols = ["id", "f", "s", "b", "d"]
    lines = [",".join(cols)]
    for i in range(n_rows):
        f = rng.choice([repr(rng.random()), repr(rng.uniform(-1e30, 1e30)), "", str(rng.randint(-5, 5)),
                        f"{rng.random():.3e}"])
        s = rng.choice([quote(rand_string(rng)), "", "plain", quote("")])
        b = rng.choice(["true", "false", ""])
        d = rng.choice(["2020-02-29", "1969-07-20", ""])
        lines.append(",".join([str(i), f, s, b, d]))
    path = tmp_path / "gen.csv"
    path.write_bytes((eol.join(lines) + eol).encode())
    compare(path)


@needs_driver
@pytest.mark.parametrize("n_cols", [1, 7, 1000])
def test_wide(tmp_path: Path, n_cols: int) -> None:
    rng = random.Random(n_cols)
    lines = [",".join(f"c{j}" for j in range(n_cols))]
    for _ in range(20):
        lines.append(",".join(str(rng.randint(-10**12, 10**12)) for _ in range(n_cols)))
    path = tmp_path / "wide.csv"
    path.write_text("\n".join(lines) + "\n")
    compare(path)


@needs_driver
def test_delimiters(tmp_path: Path) -> None:
    path = tmp_path / "semi.csv"
    path.write_text('a;b;c\n1;"x;y";2.5\n2;"z\nw";-1\n')
    compare(path, "", delimiter=";")
    path = tmp_path / "tab.tsv"
    path.write_text("a\tb\n1\tx y\n2\t\n")
    compare(path, "", delimiter="\t")


@needs_driver
def test_aggregate_corpus() -> None:
    path = corpora() / "arrow-testing" / "data" / "csv" / "aggregate_test_100.csv"
    if not path.exists():
        pytest.skip("corpus missing")
    compare(path)


@needs_driver
def test_fuzz_corpus_no_crash() -> None:
    root = corpora() / "arrow-testing" / "data" / "csv" / "fuzzing"
    if not root.exists():
        pytest.skip("corpus missing")
    for f in sorted(root.iterdir()):
        for opts in ("", "split_size=4096", "header=false"):
            res = subprocess.run([str(DRIVER), "--dump", str(f), opts], capture_output=True,
                                 timeout=120)
            # 0 = read, 1 = a clean error; a signal (negative) is a crash
            assert res.returncode in (0, 1), (f.name, opts, res.returncode)
            if res.returncode == 1:
                assert res.stderr.strip() != b""


@needs_driver
def test_compressed(tmp_path: Path) -> None:
    import gzip
    import shutil
    part1 = "a,s\n" + "".join(f'{i},"x\n{i}"\n' for i in range(500))
    part2 = "".join(f"{i},y{i}\n" for i in range(500, 900))
    plain = tmp_path / "plain.csv"
    plain.write_text(part1 + part2)
    want = sluice_read(plain)
    gz = tmp_path / "multi.csv.gz"  # two gzip members, as `cat a.gz b.gz` makes
    gz.write_bytes(gzip.compress(part1.encode()) + gzip.compress(part2.encode()))
    assert sluice_read(gz) == want
    assert sluice_read(gz, "split_size=64") == want
    if shutil.which("zstd"):
        zst = tmp_path / "plain.csv.zst"
        subprocess.run(["zstd", "-q", "-f", str(plain), "-o", str(zst)], check=True)
        assert sluice_read(zst) == want
    bad = tmp_path / "bad.csv.gz"
    bad.write_bytes(gzip.compress(part1.encode())[:-20])
    res = subprocess.run([str(DRIVER), "--dump", str(bad), ""], capture_output=True, timeout=60)
    assert res.returncode == 1 and b"gzip" in res.stderr


def _sluice_bin() -> str | None:
    b = os.environ.get("SLUICE_BIN")
    return b if b and Path(b).exists() else None


@pytest.mark.skipif(_sluice_bin() is None, reason="SLUICE_BIN not set")
def test_cli_convert_matches_pyarrow(tmp_path: Path) -> None:
    """The public path: registry detection, the scan engine's threads, IPC out."""
    rng = random.Random(7)
    lines = ["id,x,s"]
    for i in range(150000):  # > 2 MiB: several splits
        s = rng.choice(['"a,b"', "plain", '"multi\nline"', '"q""q"', "é"])
        lines.append(f"{i},{rng.random()!r},{s}")
    src = tmp_path / "cli.csv"
    src.write_text("\n".join(lines) + "\n")
    out = tmp_path / "cli.arrows"
    res = subprocess.run([_sluice_bin(), "-q", "--threads", "2", "convert", str(src), str(out)],
                         capture_output=True, timeout=120)
    assert res.returncode == 0, res.stderr.decode(errors="replace")
    got = pa.ipc.open_stream(str(out)).read_all()
    want = pyarrow_read(src)
    assert got.column_names == want.column_names
    for name in want.column_names:
        assert got.column(name).to_pylist() == want.column(name).to_pylist(), name


@needs_driver
def test_stream_matches_file(tmp_path: Path) -> None:
    """A pipe is read through a bounded window (csv_stream.c): same rows, same
    errors (line and byte) as the mapped file, also for a quoted field longer
    than the window and rows cut at every window boundary."""
    rng = random.Random(3)
    parts = ["a,b,c\n"]
    for i in range(60000):
        parts.append('%d,"%s",%r\n' % (i, rng.choice(["x,y", "p\nq", 'r""s', ""]), rng.random()))
    parts.append('7,"' + "z\n\"\"," * 2_500_000 + '",1.5\n')  # ~10 MB field
    parts.extend("%d,w,%d\n" % (i, i) for i in range(20000))
    good = tmp_path / "s.csv"
    good.write_text("".join(parts))
    bad = tmp_path / "bad.csv"
    bad.write_text("".join(parts[:40000]) + '5,"never closed\n1,2,3\n')
    for path in (good, bad):
        f = subprocess.run([str(DRIVER), "--dump", str(path), ""], capture_output=True, timeout=120)
        with open(path, "rb") as stdin:
            p = subprocess.run([str(DRIVER), "--dump", "-", ""], stdin=stdin, capture_output=True,
                               timeout=120)
        assert p.returncode == f.returncode
        assert p.stdout == f.stdout
        assert p.stderr.replace(b"<stdin>", str(path).encode()) == f.stderr
