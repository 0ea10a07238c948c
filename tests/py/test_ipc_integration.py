"""Arrow IPC conformance against the Arrow project's integration corpus.

For every case in arrow-testing's integration data (1.0.0-littleendian and
2.0.0-compression), and for both its IPC stream (.stream) and IPC file
(.arrow_file), the expected schema and values come from the case's JSON
description, parsed by arrow_json independently of any IPC reader.

- test_peer_pyarrow_reads_case: pyarrow reading the original file agrees with
  the JSON. This proves the JSON parser and the comparison, and runs without
  sluice.
- test_sluice_convert: `sluice convert CASE OUT.arrows` / `OUT.arrow`, also
  with `--compression zstd` / `lz4`; the output, read back by pyarrow, must
  match the JSON (schema and values) and pyarrow's reading of the original.
- test_sluice_cat_arrows: `sluice cat CASE -t arrows` to standard output,
  likewise.

- test_sluice_keeps_field_names: field names and nullability at every depth,
  through `sluice schema --json`, of the original and of the converted files.

Known limitation of the peer: pyarrow renames a map's entries/key/value fields
to the canonical names on read (generated_map_non_canonical), so the checks
that read through pyarrow compare map field names after that renaming on both
sides; test_sluice_keeps_field_names covers those names instead.
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import pyarrow as pa
import pyarrow.ipc as ipc
import pytest

import arrow_json as aj
from conftest import corpora_dir

INTEGRATION = Path("arrow-testing/data/arrow-ipc-stream/integration")
SUITES = ("1.0.0-littleendian", "2.0.0-compression")
INPUTS = (".stream", ".arrow_file")


def _cases() -> list:
    root = corpora_dir() / INTEGRATION
    cases = []
    for suite in SUITES:
        for json_path in sorted((root / suite).glob("*.json.gz")):
            stem = json_path.name[: -len(".json.gz")]
            for ext in INPUTS:
                cases.append(pytest.param(suite, stem, ext, id=f"{suite}/{stem}{ext}"))
    return cases


CASES = _cases()

_expected_cache: dict = {}


def expected(corpora: Path, suite: str, stem: str) -> aj.ArrowJsonFile:
    key = (suite, stem)
    if key not in _expected_cache:
        _expected_cache[key] = aj.ArrowJsonFile(corpora / INTEGRATION / suite / f"{stem}.json.gz")
    return _expected_cache[key]


def read_ipc_path(path: Path) -> pa.Table:
    """Reads an IPC file or stream, whichever it is (by its magic bytes)."""
    with open(path, "rb") as fh:
        magic = fh.read(6)
    if magic == b"ARROW1":
        return ipc.open_file(path).read_all()
    return ipc.open_stream(path).read_all()


def check_against_json(table: pa.Table, exp: aj.ArrowJsonFile, what: str) -> None:
    got_schema = aj.pa_schema(table.schema)
    got_fields = aj.canonical_map_names(got_schema["fields"])
    want_fields = aj.canonical_map_names(exp.schema["fields"])
    assert len(got_fields) == len(want_fields), (
        f"{what}: {len(got_fields)} columns, expected {len(want_fields)}")
    for got, want in zip(got_fields, want_fields):
        assert got == want, f"{what}: field differs:\n  got      {got}\n  expected {want}"
    assert got_schema["metadata"] == exp.schema["metadata"], f"{what}: schema metadata differs"
    assert table.num_rows == exp.num_rows, f"{what}: {table.num_rows} rows, expected {exp.num_rows}"
    got_cols = aj.pa_table_columns(table)
    for field, got, want in zip(exp.schema["fields"], got_cols, exp.columns()):
        diff = aj.first_difference(want, got)
        assert diff is None, f"{what}: column {field[0]!r}{diff}"


def check_against_peer(table: pa.Table, original: Path, what: str) -> None:
    peer = read_ipc_path(original)
    assert aj.canonical_map_names(aj.pa_schema(table.schema)["fields"]) == \
        aj.canonical_map_names(aj.pa_schema(peer.schema)["fields"]), f"{what}: schema differs from pyarrow's"
    diff = aj.first_difference(aj.pa_table_columns(peer), aj.pa_table_columns(table))
    assert diff is None, f"{what}: differs from pyarrow reading the original: {diff}"


@pytest.mark.parametrize("suite,stem,ext", CASES)
def test_peer_pyarrow_reads_case(corpora, suite, stem, ext):
    exp = expected(corpora, suite, stem)
    original = corpora / INTEGRATION / suite / f"{stem}{ext}"
    table = ipc.open_stream(original).read_all() if ext == ".stream" else ipc.open_file(original).read_all()
    check_against_json(table, exp, f"pyarrow reading {original.name}")


OUTPUTS = [
    pytest.param(".arrows", None, id="to-arrows"),
    pytest.param(".arrow", None, id="to-arrow"),
    pytest.param(".arrows", "zstd", id="to-arrows-zstd"),
    pytest.param(".arrow", "lz4", id="to-arrow-lz4"),
]


@pytest.mark.parametrize("out_ext,compression", OUTPUTS)
@pytest.mark.parametrize("suite,stem,ext", CASES)
def test_sluice_convert(corpora, sluice, tmp_path, suite, stem, ext, out_ext, compression):
    exp = expected(corpora, suite, stem)
    original = corpora / INTEGRATION / suite / f"{stem}{ext}"
    out = tmp_path / f"out{out_ext}"
    extra = ["--compression", compression] if compression else []
    sluice.run("convert", original, out, *extra)
    assert out.exists(), f"sluice convert wrote no {out.name}"
    with open(out, "rb") as fh:
        is_file = fh.read(6) == b"ARROW1"
    assert is_file == (out_ext == ".arrow"), f"{out.name}: wrong IPC flavour (file magic: {is_file})"
    table = read_ipc_path(out)
    what = f"sluice convert {original.name} -> {out.name}"
    check_against_json(table, exp, what)
    check_against_peer(table, original, what)


@pytest.mark.parametrize("suite,stem,ext", CASES)
def test_sluice_cat_arrows(corpora, sluice, suite, stem, ext):
    exp = expected(corpora, suite, stem)
    original = corpora / INTEGRATION / suite / f"{stem}{ext}"
    proc = sluice.run("cat", original, "-t", "arrows")
    table = ipc.open_stream(io.BytesIO(proc.stdout)).read_all()
    what = f"sluice cat {original.name} -t arrows"
    check_against_json(table, exp, what)
    check_against_peer(table, original, what)


def _json_names(fields: list) -> list:
    """(name, nullable, children) trees of the integration JSON's fields."""
    return [(f["name"], bool(f["nullable"]), _json_names(f.get("children", []))) for f in fields]


def _sluice_names(fields: list) -> list:
    """The same trees from `sluice schema --json` (a dictionary-encoded field
    keeps its value type's children under "dictionary")."""
    out = []
    for f in fields:
        kids = f.get("children")
        if kids is None and "dictionary" in f:
            kids = f["dictionary"].get("children")
        out.append((f["name"], bool(f["nullable"]), _sluice_names(kids or [])))
    return out


# The 1.0.0 .stream of generated_map_non_canonical itself holds the canonical
# map names (entries/key/value; its writer renamed them), unlike its JSON and
# its .arrow_file.
_NAMES_DIFFER_IN_CORPUS = {("1.0.0-littleendian", "generated_map_non_canonical", ".stream")}


@pytest.mark.parametrize("suite,stem,ext", CASES)
def test_sluice_keeps_field_names(corpora, sluice, tmp_path, suite, stem, ext):
    """Field names and nullability at every depth, map entries included.
    pyarrow renames map fields on read, so this goes through `sluice schema
    --json`: the reader against the JSON, then the writer's output against
    the reader's view of the original."""
    doc = expected(corpora, suite, stem).doc
    original = corpora / INTEGRATION / suite / f"{stem}{ext}"
    got = _sluice_names(json.loads(sluice.run("schema", "--json", original).stdout)["fields"])
    if (suite, stem, ext) not in _NAMES_DIFFER_IN_CORPUS:
        assert got == _json_names(doc["schema"]["fields"]), f"sluice schema {original.name}"
    for out_ext in (".arrows", ".arrow"):
        out = tmp_path / f"out{out_ext}"
        sluice.run("convert", original, out)
        again = _sluice_names(json.loads(sluice.run("schema", "--json", out).stdout)["fields"])
        assert again == got, f"field names changed by sluice convert {original.name} -> {out.name}"
