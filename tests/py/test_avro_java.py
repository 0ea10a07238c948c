"""Avro interop with Java Avro (`org.apache.avro:avro-tools` from Maven
Central; scripts/setup.sh fetches it into .cache/avro-tools/).

- Files sluice writes (the fastavro schema zoo read back through sluice, and
  an Arrow table of every type the writer maps), with every codec Java has
  (null, deflate, snappy, zstandard, bzip2, xz), are read by `avro-tools
  tojson` with the values fastavro reads from the same file.
- Files `avro-tools fromjson --codec X --schema-file S` writes from the zoo's
  rows are read by sluice with the values fastavro reads from them, which are
  the rows fed in.

tojson prints values in their underlying Avro types (no logical types), so
fastavro's values are taken the same way. Without java or the jar the tests
skip, except under CI=true, where they fail (CI installs both).
"""

from __future__ import annotations

import io
import json
import math
import os
import shutil
import struct
import subprocess
from pathlib import Path

import pyarrow as pa
import pytest

fastavro = pytest.importorskip("fastavro")

from conftest import REPO  # noqa: E402
from test_avro_avroc import PRIMITIVES, SPECIAL_FLOATS, fastavro_raw, same, write_zoo  # noqa: E402
from test_avro_interop import (ALIAS_CASES, ALIAS_ROWS, ALIAS_WRITER, JAVA_ALIAS_ROWS,  # noqa: E402
                                 RESOLVE_CASES,
                                 ROOT_NULLABLE_CASES,
                                 SAME_SHORT_NAME_CASES, SPECIAL_DEFAULTS_READER, _rec, compare, norm_arrow, read_resolved,
                                 sluice_read, union_as_branch_names, write_resolved)
from test_avro_writer import (FIXED_DECIMAL_ROWS, FIXED_DECIMAL_SCHEMA, NAMED_ROWS, NAMED_SCHEMA,  # noqa: E402
                               all_types_table, write_arrow)

JAVA_CODECS = ["null", "deflate", "snappy", "zstandard", "bzip2", "xz"]
ROWS = 120


def _unavailable(msg: str):
    if os.environ.get("CI") == "true":
        pytest.fail(msg + " (CI installs it through scripts/setup.sh)")
    pytest.skip(msg)


@pytest.fixture(scope="module")
def avro_tools() -> list[str]:
    java = shutil.which("java")
    if java is None:
        _unavailable("java not found")
    jar = os.environ.get("SLUICE_AVRO_TOOLS")
    if not jar:
        jars = sorted((REPO / ".cache" / "avro-tools").glob("avro-tools-*.jar"))
        jar = str(jars[-1]) if jars else None
    if not jar or not Path(jar).is_file():
        _unavailable("avro-tools jar not found in .cache/avro-tools/ (run scripts/setup.sh --deps) "
                     "or $SLUICE_AVRO_TOOLS")
    # C1 only and the serial collector: these runs are short, JVM start-up dominates.
    return [java, "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-Dfile.encoding=UTF-8",
            "-Dsun.stdout.encoding=UTF-8", "-jar", jar]


def run_tool(cmd: list[str], stdout=subprocess.PIPE) -> subprocess.CompletedProcess:
    proc = subprocess.run(cmd, stdout=stdout, stderr=subprocess.PIPE, timeout=300,
                          env={**os.environ, "LC_ALL": "C.UTF-8"})
    err = proc.stderr.decode(errors="replace")
    assert proc.returncode == 0, f"{' '.join(cmd[-4:])} failed: {err[-3000:]}"
    return proc


# ---- Java's JSON encoding -> Python values ------------------------------------------


def float32(x: float) -> float:
    return struct.unpack("<f", struct.pack("<f", x))[0]


def from_java_json(schema, v, names: dict):
    """One value of Avro's JSON encoding as Java writes it (unions as
    {"full.name": value}, bytes and fixed as strings of code points 0-255,
    NaN as a string) -> the Python value fastavro gives (no logical types)."""
    if isinstance(schema, str):
        schema = {"type": schema} if schema in PRIMITIVES else names[schema]
    if isinstance(schema, list):
        if v is None:
            return None
        assert isinstance(v, dict) and len(v) == 1, f"union value {v!r}"
        (key, x), = v.items()
        for branch in schema:
            name = branch if isinstance(branch, str) else branch.get("name", branch["type"])
            if not isinstance(name, str):
                continue
            if key in (name, name.rsplit(".", 1)[-1]):
                return from_java_json(branch, x, names)
        raise AssertionError(f"no union branch {key!r} in {schema}")
    t = schema["type"]
    if isinstance(t, (dict, list)):
        return from_java_json(t, v, names)
    if t in ("record", "enum", "fixed") and "name" in schema:
        names.setdefault(schema["name"], schema)
    if t == "record":
        return {f["name"]: from_java_json(f["type"], v[f["name"]], names) for f in schema["fields"]}
    if t == "array":
        return [from_java_json(schema["items"], x, names) for x in v]
    if t == "map":
        return {k: from_java_json(schema["values"], x, names) for k, x in v.items()}
    if t in ("bytes", "fixed"):
        return v.encode("latin-1")
    if t in ("float", "double"):
        x = SPECIAL_FLOATS[v] if isinstance(v, str) else float(v)
        return float32(x) if t == "float" else x
    if t in PRIMITIVES or t == "enum":
        return v
    return from_java_json(names[t], v, names)


def java_rows(avro_tools: list[str], path: Path, schema) -> list:
    proc = run_tool([*avro_tools, "tojson", str(path)])
    names: dict = {}
    return [from_java_json(schema, json.loads(line), names)
            for line in proc.stdout.decode("utf-8").split("\n") if line]


def check_java_reads(avro_tools, path: Path) -> list:
    schema, want = fastavro_raw(path)
    got = java_rows(avro_tools, path, schema)
    assert len(got) == len(want), f"{path.name}: Java read {len(got)} rows, fastavro {len(want)}"
    for i, (g, w) in enumerate(zip(got, want)):
        if not same(g, w):
            diff = {k: (g.get(k), w.get(k)) for k in w if not same(g.get(k), w.get(k))}
            raise AssertionError(f"{path.name} row {i}: Java vs fastavro differ: {diff}")
    return want


# ---- sluice writes, Java reads ------------------------------------------------------


@pytest.mark.parametrize("codec", JAVA_CODECS)
def test_java_reads_sluice_zoo(tmp_path, sluice, avro_tools, codec):
    src, out = tmp_path / "zoo.avro", tmp_path / f"sluice_{codec}.avro"
    write_zoo(src, ROWS)
    sluice.run("convert", src, out, "-W", f"codec={codec},block_size=4096")
    want = check_java_reads(avro_tools, out)
    assert len(want) == ROWS


@pytest.mark.parametrize("codec", ["null", "zstandard"])  # the zoo covers every codec
def test_java_reads_sluice_all_types(tmp_path, sluice, avro_tools, codec):
    src, out = tmp_path / "in.arrow", tmp_path / f"types_{codec}.avro"
    table = pa.concat_tables([all_types_table()[0]] * 5)
    write_arrow(src, table, max_chunksize=7)
    sluice.run("convert", src, out, "-W", f"codec={codec},block_size=300")
    want = check_java_reads(avro_tools, out)
    assert len(want) == table.num_rows
    assert [r["i64"] for r in want] == table.column("i64").to_pylist()


def test_java_reads_sluice_empty(tmp_path, sluice, avro_tools):
    src, out = tmp_path / "in.arrow", tmp_path / "empty.avro"
    write_arrow(src, all_types_table()[0].slice(0, 0))
    sluice.run("convert", src, out, "-W", "codec=deflate")
    assert check_java_reads(avro_tools, out) == []


def tojson_lines(avro_tools, path: Path, reader: Path | None = None) -> list[str]:
    extra = ["--reader-schema-file", str(reader)] if reader is not None else []
    proc = run_tool([*avro_tools, "tojson", *extra, str(path)])
    return [line for line in proc.stdout.decode("utf-8").split("\n") if line]


# Java's way of naming: short names and "namespace" keys.
JAVA_NAMED_SCHEMA = {"type": "record", "name": "Event", "namespace": "com.example", "fields": [
    {"name": "rec", "type": {"type": "record", "name": "Sub", "fields": [{"name": "x", "type": "int"}]}},
    {"name": "e", "type": {"type": "enum", "name": "Color", "symbols": ["RED", "GREEN"]}},
    {"name": "f", "type": {"type": "fixed", "name": "MD5", "namespace": "org.x", "size": 2}},
    {"name": "u", "type": ["null", "Sub", {"type": "record", "name": "B", "namespace": "other",
                                           "fields": [{"name": "b", "type": "string"}]}, "Color"]}]}
JAVA_NAMED_ROWS = [
    {"rec": {"x": 1}, "e": "RED", "f": "ab", "u": {"com.example.Sub": {"x": 2}}},
    {"rec": {"x": 3}, "e": "GREEN", "f": "cd", "u": {"other.B": {"b": "s"}}},
    {"rec": {"x": 4}, "e": "GREEN", "f": "ef", "u": {"com.example.Color": "GREEN"}},
    {"rec": {"x": 5}, "e": "RED", "f": "gh", "u": None}]


@pytest.mark.parametrize("writer", ["fastavro", "java"])
def test_java_reads_sluice_copy_with_the_original_schema(tmp_path, sluice, avro_tools, writer):
    """A copy `sluice convert` makes of an Avro file keeps the names of its
    records, enums and fixed types, so Java reads the copy with the original
    schema as reader schema, as it reads the original: of a fastavro-written
    file (full names) and of a Java-written one ("namespace" keys). Java
    refused the copy ("Found Root_e, expecting com.example.Color")."""
    src, copy, avsc = tmp_path / "in.avro", tmp_path / "copy.avro", tmp_path / "in.avsc"
    schema = NAMED_SCHEMA if writer == "fastavro" else JAVA_NAMED_SCHEMA
    avsc.write_text(json.dumps(schema))
    if writer == "fastavro":
        with open(src, "wb") as f:
            fastavro.writer(f, NAMED_SCHEMA, NAMED_ROWS)
    else:
        data = tmp_path / "in.json"
        data.write_text("".join(json.dumps(r) + "\n" for r in JAVA_NAMED_ROWS))
        with open(src, "wb") as f:
            run_tool([*avro_tools, "fromjson", "--schema-file", str(avsc), str(data)], stdout=f)
    sluice.run("convert", src, copy)
    want = tojson_lines(avro_tools, src)
    assert len(want) == 4
    assert tojson_lines(avro_tools, copy, avsc) == want


@pytest.mark.parametrize("kind", ["enum", "array", "union"])
def test_java_reads_sluice_copy_of_a_non_record_root(tmp_path, sluice, avro_tools, kind):
    """A copy `sluice convert` makes of a fastavro file whose root is no
    record keeps that root and its names: Java reads it with the original
    schema as reader schema, as it reads the original (the copy was a record
    Root of one field "value")."""
    from test_avro_writer import NON_RECORD_ROOTS
    schema, rows = NON_RECORD_ROOTS[kind]
    src, copy, avsc = tmp_path / "in.avro", tmp_path / "copy.avro", tmp_path / "in.avsc"
    avsc.write_text(json.dumps(schema))
    with open(src, "wb") as f:
        fastavro.writer(f, schema, rows)
    sluice.run("convert", src, copy)
    want = tojson_lines(avro_tools, src)
    assert len(want) == len(rows)
    assert tojson_lines(avro_tools, copy, avsc) == want


def test_java_reads_sluice_copy_of_fixed_decimals(tmp_path, sluice, avro_tools):
    """Decimals over fixed, as Java writes them (`fromjson`): sluice's copy
    keeps each fixed, so Java reads the copy with the original schema as
    reader schema, as it reads the original (it refused the copy, whose
    decimals were bytes: "Found bytes, expecting money.Amount")."""
    src, copy, avsc = tmp_path / "in.avro", tmp_path / "copy.avro", tmp_path / "in.avsc"
    avsc.write_text(json.dumps(FIXED_DECIMAL_SCHEMA))
    buf = io.StringIO()
    fastavro.json_writer(buf, FIXED_DECIMAL_SCHEMA, FIXED_DECIMAL_ROWS)
    data = tmp_path / "in.json"
    data.write_text(buf.getvalue())
    with open(src, "wb") as f:
        run_tool([*avro_tools, "fromjson", "--schema-file", str(avsc), str(data)], stdout=f)
    sluice.run("convert", src, copy)
    want = tojson_lines(avro_tools, src)
    assert len(want) == len(FIXED_DECIMAL_ROWS)
    assert tojson_lines(avro_tools, copy, avsc) == want


# ---- Java writes, sluice reads ------------------------------------------------------


def to_java_json(v):
    """fastavro's JSON lines carry NaN as a bare token; Java wants a string."""
    if isinstance(v, float) and not math.isfinite(v):
        return "NaN" if math.isnan(v) else ("Infinity" if v > 0 else "-Infinity")
    if isinstance(v, dict):
        return {k: to_java_json(x) for k, x in v.items()}
    if isinstance(v, list):
        return [to_java_json(x) for x in v]
    return v


@pytest.fixture(scope="module")
def zoo_json(tmp_path_factory):
    """The zoo (fastavro-written), its schema file, and its rows as Avro JSON."""
    d = tmp_path_factory.mktemp("java_zoo")
    src = d / "zoo.avro"
    write_zoo(src, ROWS)
    with open(src, "rb") as f:
        r = fastavro.reader(f)
        schema, rows = r.writer_schema, list(r)
    buf = io.StringIO()
    fastavro.json_writer(buf, schema, rows)
    data = d / "zoo.json"
    data.write_text("".join(json.dumps(to_java_json(json.loads(line))) + "\n"
                            for line in buf.getvalue().splitlines()))
    avsc = d / "zoo.avsc"
    avsc.write_text(json.dumps(schema))
    return src, avsc, data


@pytest.mark.parametrize("codec", JAVA_CODECS)
def test_sluice_reads_java_written(tmp_path, avro_tools, zoo_json, codec):
    src, avsc, data = zoo_json
    out = tmp_path / f"java_{codec}.avro"
    level = ["--level", "6"] if codec == "xz" else []  # xz has no default level in 1.12
    with open(out, "wb") as f:
        run_tool([*avro_tools, "fromjson", "--codec", codec, *level, "--schema-file", str(avsc),
                  str(data)], stdout=f)
    with open(out, "rb") as f:
        r = fastavro.reader(f)
        assert r.metadata.get("avro.codec", "null") == codec
        got = list(r)
    with open(src, "rb") as f:
        fed = list(fastavro.reader(f))
    assert same(got, fed)  # Java wrote the rows it was given
    table = sluice_read(out, tmp_path)
    compare(out, table)  # sluice reads them as fastavro does, logical types on
    assert table.num_rows == ROWS
    assert table.schema.field("dec").type == pa.decimal128(20, 4)
    assert pa.types.is_union(table.schema.field("u").type)


def test_sluice_reads_java_unicode_type_name(tmp_path, avro_tools):
    """Java 1.12 writes a record named `Beträge` (its name validator takes
    Unicode letters); Java and fastavro read it back, and so does sluice (it
    refused the file: "invalid type name")."""
    avsc, data, out = tmp_path / "r.avsc", tmp_path / "r.json", tmp_path / "r.avro"
    avsc.write_text(json.dumps({"type": "record", "name": "Zahlung", "namespace": "de.bank",
                                "fields": [{"name": "betrag", "type": {
                                    "type": "record", "name": "Beträge",
                                    "fields": [{"name": "wert", "type": "int"}]}}]},
                               ensure_ascii=False), encoding="utf-8")
    data.write_text('{"betrag": {"wert": 5}}\n')
    with open(out, "wb") as f:
        run_tool([*avro_tools, "fromjson", "--schema-file", str(avsc), str(data)], stdout=f)
    with open(out, "rb") as f:
        assert list(fastavro.reader(f)) == [{"betrag": {"wert": 5}}]
    assert sluice_read(out, tmp_path).to_pylist() == [{"betrag": {"wert": 5}}]


# ---- reader schemas: sluice resolves as Java does -----------------------------------


@pytest.mark.parametrize("case", sorted(RESOLVE_CASES))
def test_reader_schema_case_as_java(tmp_path, sluice, avro_tools, case):
    """`tojson --reader-schema-file` on the file sluice reads with
    --reader-schema: the same values."""
    writer, rows, reader = RESOLVE_CASES[case]
    path, rs, table = read_resolved(sluice, tmp_path, writer, rows, reader)
    proc = run_tool([*avro_tools, "tojson", "--reader-schema-file", str(rs), str(path)])
    names: dict = {}
    want = [from_java_json(reader, json.loads(line), names)
            for line in proc.stdout.decode("utf-8").split("\n") if line]
    got = [{name: norm_arrow(table.schema.field(name).type, v) for name, v in row.items()}
           for row in table.to_pylist()]
    assert got == want


@pytest.mark.parametrize("case", sorted(SAME_SHORT_NAME_CASES))
def test_union_branches_by_full_name_as_java(tmp_path, sluice, avro_tools, case):
    """Branches a.X and b.X of one reader union: each writer value goes to
    the branch Java's tojson names, with all its fields."""
    writer, rows, reader, branches = SAME_SHORT_NAME_CASES[case]
    path, rs, table = read_resolved(sluice, tmp_path, writer, rows, reader)
    proc = run_tool([*avro_tools, "tojson", "--reader-schema-file", str(rs), str(path)])
    want = [json.loads(line)["u"] for line in proc.stdout.decode("utf-8").split("\n") if line]
    assert union_as_branch_names(table, "u", branches) == want


@pytest.mark.parametrize("case", sorted(ALIAS_CASES))
def test_reader_schema_aliases_as_java(tmp_path, avro_tools, case):
    """The rows sluice reads under ALIAS_CASES' reader schemas are Java's,
    and Java fails on the schemas sluice refuses, except where
    JAVA_ALIAS_ROWS says what Java reads instead (it applies the aliases
    twice; sluice matches as fastavro does)."""
    reader, want = ALIAS_CASES[case]
    want = JAVA_ALIAS_ROWS.get(case, want)
    path, rs = write_resolved(tmp_path, ALIAS_WRITER, ALIAS_ROWS, reader)
    proc = subprocess.run([*avro_tools, "tojson", "--reader-schema-file", str(rs), str(path)],
                          capture_output=True, timeout=300)
    if isinstance(want, str):
        err = proc.stderr.decode(errors="replace")
        assert proc.returncode != 0 and ("missing required field" in err or
                                         "Duplicate field" in err), err
    else:
        assert proc.returncode == 0, proc.stderr.decode(errors="replace")[-3000:]
        names: dict = {}
        assert [from_java_json(reader, json.loads(line), names)
                for line in proc.stdout.decode("utf-8").split("\n") if line] == want


def test_reader_schema_non_finite_defaults_as_java(tmp_path, avro_tools):
    """Java reads "NaN" and the infinities as float and double defaults, as
    sluice does (test_reader_schema_non_finite_float_defaults). Java refuses
    them as a union's default (it checks those against the spec's JSON
    numbers, and not the others), so that field is left out here."""
    reader = dict(SPECIAL_DEFAULTS_READER,
                  fields=[f for f in SPECIAL_DEFAULTS_READER["fields"] if f["name"] != "u"])
    path, rs = write_resolved(tmp_path, _rec(("k", "int")), [{"k": 1}], reader)
    proc = run_tool([*avro_tools, "tojson", "--reader-schema-file", str(rs), str(path)])
    row, = [from_java_json(reader, json.loads(line), {})
            for line in proc.stdout.decode("utf-8").split("\n") if line]
    assert math.isnan(row["d"])
    assert row["f"] == -math.inf and row["g"] == math.inf and row["n"] is None


@pytest.mark.parametrize("case", sorted(ROOT_NULLABLE_CASES))
def test_reader_schema_top_level_nullable_as_java(tmp_path, sluice, avro_tools, case):
    """A top-level record read as ["null", record] and the other way round:
    the values Java reads (test_reader_schema_top_level_record_and_nullable_record)."""
    writer, reader, rows = ROOT_NULLABLE_CASES[case]
    path, rs, table = read_resolved(sluice, tmp_path, writer, rows, reader)
    proc = run_tool([*avro_tools, "tojson", "--reader-schema-file", str(rs), str(path)])
    want = [from_java_json(reader, json.loads(line), {})
            for line in proc.stdout.decode("utf-8").split("\n") if line]
    got = table.column("value").to_pylist() if isinstance(reader, list) else table.to_pylist()
    assert got == want
