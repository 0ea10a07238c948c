"""pyarrow reads what sluice's Arrow IPC writer writes.

Two sources of files:
- `test_ipc_write --emit DIR` (the C unit test program) writes hand-built
  batches covering every type, sliced at a non-byte bit offset with rebased
  offsets, dictionaries (reused, replaced), metadata, lz4/zstd compression
  and an empty file. Its path: $SLUICE_IPC_WRITE_TEST, else
  tests/test_ipc_write beside the CLI ($SLUICE_BIN).
- `sluice convert` of pyarrow-written files (reader + writer round trip),
  skipped while the CLI cannot convert Arrow IPC.
"""

from __future__ import annotations

import datetime as dt
import decimal
import os
import subprocess
from pathlib import Path

import pyarrow as pa
import pyarrow.ipc as ipc
import pytest

CODECS = ("none", "lz4", "zstd")


def _emitter() -> Path | None:
    env = os.environ.get("SLUICE_IPC_WRITE_TEST")
    if env:
        return Path(env)
    cli = os.environ.get("SLUICE_BIN")
    if cli:
        candidate = Path(cli).resolve().parent / "tests" / "test_ipc_write"
        if candidate.exists():
            return candidate
    return None


@pytest.fixture(scope="module")
def emitted(tmp_path_factory) -> Path:
    exe = _emitter()
    if exe is None:
        pytest.skip("test_ipc_write not found (set SLUICE_IPC_WRITE_TEST or SLUICE_BIN)")
    out = tmp_path_factory.mktemp("ipc_write")
    proc = subprocess.run([str(exe), "--emit", str(out)], capture_output=True, timeout=120)
    assert proc.returncode == 0, proc.stderr.decode(errors="replace")
    return out


def _read(path: Path) -> pa.Table:
    if path.suffix == ".arrows":
        return ipc.open_stream(path).read_all()
    return ipc.open_file(path).read_all()


UTC = dt.timezone.utc

# Logical values of each column of one batch (the C side selects physical
# slots 2..4 of 5; slot 3 is null wherever the column has validity).
EXPECTED = {
    "bool": [True, None, False],
    "i8": [-3, None, -5],
    "u16": [3, 4, 65535],
    "i32": [30, None, 50],
    "u64": [2, 3, 2**64 - 1],
    "f16": [3.0, 4.0, -2.0],
    "f32": [2.5, 3.5, 4.5],
    "f64": [2.25, None, 4.25],
    "utf8": ["two", None, "four"],
    "large_utf8": ["two", None, "four"],
    "binary": [b"two", None, b"four"],
    "large_binary": [b"two", None, b"four"],
    "fsb3": [b"ccc", None, b"eee"],
    "date32": [dt.date(1970, 1, 3), dt.date(1970, 1, 4), dt.date(1970, 1, 1) + dt.timedelta(19000)],
    "date64": [dt.date(1970, 1, 3), dt.date(1970, 1, 4), dt.date(1970, 1, 5)],
    "time32s": [dt.time(0, 0, 3), dt.time(0, 0, 4), dt.time(0, 0, 5)],
    "ts_utc": [dt.datetime(1970, 1, 1, 0, 0, 3, tzinfo=UTC), None,
               dt.datetime(1970, 1, 1, 0, 0, 5, tzinfo=UTC)],
    "dur_ms": [dt.timedelta(seconds=3), dt.timedelta(seconds=4), dt.timedelta(seconds=5)],
    "iv_mdn": [pa.MonthDayNano([3, 3, 3]), pa.MonthDayNano([4, 4, 4]), pa.MonthDayNano([5, 5, -5])],
    "dec128": [decimal.Decimal("3.00"), decimal.Decimal("4.00"), decimal.Decimal("-5.00")],
    "dec256": [decimal.Decimal("3.000"), decimal.Decimal("4.000"), decimal.Decimal("5.000")],
    "list_i32": [[30, 40], None, [60]],
    "llist_utf8": [["c"], ["d"], ["e"]],
    "fsl_i16": [[4, 5], None, [8, 9]],
    "struct": [{"x": 2, "y": "p2"}, None, {"x": 4, "y": "p4"}],
    "map": [[("k1", 1), ("k2", 2)], [("k3", 3)], [("k4", 4), ("k5", 5)]],
    "sparse_union": [2, "d", 4],
    "dense_union": [2.5, False, True],
    "dict": ["c", None, "b"],
    "null": [None, None, None],
}

EXPECTED_TYPES = {
    "f16": pa.float16(),
    "fsb3": pa.binary(3),
    "time64ns": pa.time64("ns"),
    "ts_utc": pa.timestamp("us", tz="UTC"),
    "ts_naive": pa.timestamp("ns"),
    "iv_months": pa.month_interval() if hasattr(pa, "month_interval") else None,
    "iv_day_time": None,
    "iv_mdn": pa.month_day_nano_interval(),
    "dec128": pa.decimal128(10, 2),
    "dec256": pa.decimal256(40, 3),
    "llist_utf8": pa.large_list(pa.string()),
    "fsl_i16": pa.list_(pa.int16(), 2),
    "map": pa.map_(pa.string(), pa.int32(), keys_sorted=True),
    "dict": pa.dictionary(pa.int8(), pa.string(), ordered=True),
    "sparse_union": pa.sparse_union([pa.field("i", pa.int32()), pa.field("s", pa.string())],
                                    [0, 1]),
    "dense_union": pa.dense_union([pa.field("f", pa.float64()), pa.field("b", pa.bool_())], [5, 7]),
}


@pytest.mark.parametrize("codec", CODECS)
@pytest.mark.parametrize("ext", (".arrows", ".arrow"))
def test_all_types(emitted, codec, ext):
    path = emitted / f"all_types_{codec}{ext}"
    table = _read(path)
    table.validate(full=True)
    assert table.num_rows == 6  # the same batch twice
    assert table.schema.metadata == {b"origin": b"sluice-test"}
    assert table.schema.field("i32").metadata == {b"unit": b"m", b"empty": b""}
    assert table.schema.field("i32").nullable
    assert not table.schema.field("u16").nullable
    assert not table.schema.field("map").type.key_field.nullable
    for name, want in EXPECTED.items():
        got = table.column(name).to_pylist()
        assert got == want + want, name
    for name, want in EXPECTED_TYPES.items():
        if want is not None:
            assert table.schema.field(name).type == want, name
    assert str(table.schema.field("iv_day_time").type) == "day_time_interval"
    assert table.column("time64ns").cast(pa.int64()).to_pylist() == [3000, 4000, 5000] * 2
    assert table.column("ts_naive").cast(pa.int64()).to_pylist() == [3000000, 4000000, 5000000] * 2


def test_all_types_same_across_codecs(emitted):
    base = _read(emitted / "all_types_none.arrows")
    for codec in CODECS:
        for ext in (".arrows", ".arrow"):
            assert _read(emitted / f"all_types_{codec}{ext}").equals(base), (codec, ext)


def test_compression_shrinks_and_round_trips(emitted):
    # 100000 rows: int64 i % 1000 and utf8 "v<i % 100>" (compressible).
    sizes = {}
    for codec in CODECS:
        path = emitted / f"big_{codec}.arrows"
        sizes[codec] = path.stat().st_size
        table = _read(path)
        table.validate(full=True)
        assert table.column("n").to_pylist() == [i % 1000 for i in range(100000)]
        assert table.column("s").to_pylist()[:3] == ["v0", "v1", "v2"]
        assert table.column("s").to_pylist()[-1] == "v99"
    assert sizes["lz4"] < sizes["none"] / 2
    assert sizes["zstd"] < sizes["none"] / 2


def test_dictionary_replacement_in_stream(emitted):
    reader = ipc.open_stream(emitted / "dict_replace.arrows")
    table = reader.read_all()
    assert table.column("d").to_pylist() == ["a", "b", "b", "a"] * 2 + ["x", "y", "y", "x"]
    assert reader.stats.num_dictionary_batches == 2  # batch 2 reused batch 1's
    assert reader.stats.num_replaced_dictionaries == 1


@pytest.mark.parametrize("ext", (".arrows", ".arrow"))
def test_dictionary_delta(emitted, ext):
    # Batch 2's dictionary "abcde" extends batch 1's "abc": a file gets a
    # delta with only "de" (replacement is not allowed there); a stream gets
    # a replacement, which more readers accept (polars rejects deltas).
    path = emitted / f"dict_delta{ext}"
    reader = ipc.open_stream(path) if ext == ".arrows" else ipc.open_file(path)
    table = reader.read_all()
    assert table.column("d").to_pylist() == ["a", "b", "b", "a"] * 2
    assert table.column("d").chunk(1).dictionary.to_pylist() == list("abcde")
    if ext == ".arrow":
        assert reader.stats.num_dictionary_deltas == 1
    else:
        assert reader.stats.num_replaced_dictionaries == 1


def test_dictionary_reused_in_file(emitted):
    reader = ipc.open_file(emitted / "dict_same.arrow")
    assert reader.num_record_batches == 2
    table = reader.read_all()
    assert table.column("d").to_pylist() == ["a", "b", "b", "a"] * 2
    assert reader.stats.num_dictionary_batches == 1


def test_zero_row_batch(emitted):
    reader = ipc.open_stream(emitted / "zero_rows.arrows")
    batches = list(reader)
    assert [b.num_rows for b in batches] == [0, 3]
    for b in batches:
        b.validate(full=True)
    got = batches[1].column(batches[1].schema.get_field_index("map")).to_pylist()
    assert got == EXPECTED["map"]


def test_empty_file(emitted):
    reader = ipc.open_file(emitted / "empty.arrow")
    assert reader.num_record_batches == 0
    assert len(reader.schema) == len(_read(emitted / "all_types_none.arrow").schema)


# ---- Round trip through the CLI (reader + writer) ---------------------------


def _cli_convert(sluice_bin: str, src: Path, dst: Path, *extra: str) -> None:
    proc = subprocess.run([sluice_bin, "convert", str(src), str(dst), *extra],
                          capture_output=True, timeout=120)
    if proc.returncode != 0:
        err = proc.stderr.decode(errors="replace")
        if "unknown" in err or "not supported" in err or "no reader" in err:
            pytest.skip(f"sluice convert cannot do this yet: {err.strip()}")
        pytest.fail(f"sluice convert failed: {err.strip()}")


def _source_table() -> pa.Table:
    n = 1000
    ints = pa.array([i if i % 7 else None for i in range(n)], pa.int64())
    strs = pa.array([None if i % 5 == 0 else f"s{i}" * (i % 4) for i in range(n)])
    lists = pa.array([[j for j in range(i % 3)] if i % 11 else None for i in range(n)],
                     pa.list_(pa.int32()))
    dicts = pa.array([["red", "green", "blue"][i % 3] for i in range(n)]).dictionary_encode()
    table = pa.table({"i": ints, "s": strs, "l": lists, "d": dicts,
                      "b": pa.array([i % 3 == 0 for i in range(n)])})
    # Slices at odd offsets: batches whose buffers do not start at 0.
    return pa.Table.from_batches([b for b in table.slice(3, 990).to_batches(max_chunksize=97)])


@pytest.mark.parametrize("codec", (None, "lz4", "zstd"))
@pytest.mark.parametrize("ext", (".arrows", ".arrow"))
def test_cli_round_trip(sluice_bin, tmp_path, codec, ext):
    table = _source_table()
    src = tmp_path / "in.arrows"
    with ipc.new_stream(src, table.schema) as w:
        for batch in table.to_batches():
            w.write_batch(batch)
    dst = tmp_path / f"out{ext}"
    extra = ("--compression", codec) if codec else ()
    _cli_convert(sluice_bin, src, dst, *extra)
    got = _read(dst)
    got.validate(full=True)
    assert got.schema.equals(table.schema)
    assert got.combine_chunks().equals(table.combine_chunks())


@pytest.mark.parametrize("ext", (".arrows", ".arrow"))
def test_cli_round_trip_zero_width_fixed_size_binary(sluice_bin, tmp_path, ext):
    """fixed_size_binary(0) (an Avro fixed of size 0 reads as it) has no
    data bytes: it is written with an empty data buffer, as pyarrow writes
    it, nulls and sliced batches included."""
    table = pa.table({"z": pa.array([b"", None, b"", b""], pa.binary(0)), "i": [1, 2, 3, 4]})
    table = pa.Table.from_batches([table.slice(1, 3).to_batches()[0], table.slice(0, 1).to_batches()[0]])
    src = tmp_path / "in.arrows"
    with ipc.new_stream(src, table.schema) as w:
        for batch in table.to_batches():
            w.write_batch(batch)
    dst = tmp_path / f"out{ext}"
    _cli_convert(sluice_bin, src, dst)
    got = _read(dst)
    got.validate(full=True)
    assert got.schema.equals(table.schema)
    assert got.to_pylist() == table.to_pylist()


def test_file_grows_one_dictionary_across_batches(sluice_bin, tmp_path):
    """An IPC file cannot replace a dictionary (pyarrow's file writer refuses
    batches whose dictionaries differ). sluice grows one per top-level string
    or binary column (or list of them), maps each batch's indices into it and writes deltas:
    a Parquet categorical column of several row groups, or a stream of
    separately encoded batches, becomes a file pyarrow reads with the same
    values. A dictionary the index type cannot hold any more, or one nested
    in a struct, is still an error, and nothing is written."""
    import pyarrow.parquet as pq
    words = ["red", "green", "blue", "cyan", "", "magenta", "green", "blue"]
    # later row groups bring new words, and drop earlier ones
    cat = pa.array([words[(i // 60 + i % 3) % len(words)] if i % 11 else None for i in range(600)])
    raw = pa.array([w.encode() for w in cat.fill_null("x").to_pylist()])

    def by_row_group(a):  # each row group's dictionary its own, as Parquet keeps it
        return pa.chunked_array([a[k:k + 97].dictionary_encode() for k in range(0, 600, 97)])

    table = pa.table({"c": by_row_group(cat), "b": by_row_group(raw), "i": range(600)})
    pq.write_table(table, tmp_path / "cat.parquet", row_group_size=97)
    out = tmp_path / "cat.arrow"
    _cli_convert(sluice_bin, tmp_path / "cat.parquet", out)
    with ipc.open_file(out) as f:
        got = f.read_all()
        assert f.stats.num_dictionary_deltas > 0
    got.validate(full=True)
    assert got.to_pylist() == table.to_pylist()
    first_seen = list(dict.fromkeys(v for v in cat.to_pylist() if v is not None))
    assert got.column("c").chunk(0).dictionary.to_pylist() == first_seen
    # a stream whose batches were encoded separately, int8 indices
    batches = [pa.record_batch({"d": pa.DictionaryArray.from_arrays(
        pa.array(idx, pa.int8()), pa.array(vals))}) for idx, vals in
        (([0, 1, 1, None], ["a", "b"]), ([1, 0, 2], ["z", "a", "b"]), ([0], ["a"]))]
    src = tmp_path / "sep.arrows"
    with ipc.new_stream(src, batches[0].schema) as w:
        for b in batches:
            w.write_batch(b)
    with pytest.raises(pa.ArrowInvalid):  # what pyarrow's file writer does with them
        with ipc.new_file(tmp_path / "pa.arrow", batches[0].schema) as w:
            for b in batches:
                w.write_batch(b)
    _cli_convert(sluice_bin, src, tmp_path / "sep.arrow")
    got = _read(tmp_path / "sep.arrow")
    assert got.column("d").to_pylist() == ["a", "b", "b", None, "a", "z", "b", "a"]
    # 200 distinct values cannot be int8 indices
    many = [pa.record_batch({"d": pa.DictionaryArray.from_arrays(
        pa.array([0, 1], pa.int8()), pa.array([f"v{k}", f"w{k}"]))}) for k in range(100)]
    # nested in a struct: not grown, still refused cleanly (in a list it is
    # grown: test_ipc_write_dictionary_deltas.py)
    nested = [pa.record_batch({"s": pa.array([{"d": v}], pa.struct(
        [("d", pa.dictionary(pa.int32(), pa.string()))]))}) for v in ("a", "b")]
    for batches, says in ((many, b"column 'd': the unified dictionary has 130 values, more "
                                 b"than its 1-byte indices hold (an IPC file holds one "
                                 b"dictionary per column; write a stream, .arrows"),
                          (nested, b"cannot replace")):
        with ipc.new_stream(src, batches[0].schema) as w:
            for b in batches:
                w.write_batch(b)
        proc = subprocess.run([sluice_bin, "convert", str(src), str(tmp_path / "bad.arrow")],
                              capture_output=True, timeout=120)
        assert proc.returncode == 1 and says in proc.stderr, proc.stderr
        assert not (tmp_path / "bad.arrow").exists()


def test_file_grows_dictionaries_that_share_a_prefix_with_the_grown_one(sluice, tmp_path):
    """The file writer compares each batch's dictionary with the grown one
    (its first values map to themselves without hashing) and interns the
    rest: a prefix that ends inside a value's bytes, at a value whose length
    differs, a shorter or empty dictionary, one equal to the grown one plus
    a value. pyarrow reads the values of the input back, the dictionary in
    first-seen order."""
    dicts = [["aa", "bb", "cc"], ["aa", "bb", "cc", "dd"], ["aa", "bx", "cc"], ["aa", "bbcc"],
             ["aa"], [], ["aa", "bb", "cc", "dd", "bx", "bbcc", "new"], ["bb", "aa"],
             ["aa", "bb", "cc", "dd", "bx", "bbcc", "new", "", "z"]]
    batches = []
    for values in dicts:
        idx = pa.array(list(range(len(values)))[::-1] + [None], pa.int16())
        batches.append(pa.record_batch({"d": pa.DictionaryArray.from_arrays(
            idx, pa.array(values, pa.string()))}))
    src = tmp_path / "in.arrows"
    with ipc.new_stream(src, batches[0].schema) as w:
        for b in batches:
            w.write_batch(b)
    sluice.run("convert", src, tmp_path / "out.arrow")
    with ipc.open_file(tmp_path / "out.arrow") as f:
        got = f.read_all()
    got.validate(full=True)
    assert got.to_pylist() == ipc.open_stream(src).read_all().to_pylist()
    first_seen = list(dict.fromkeys(v for d in dicts for v in d))
    assert got.column("d").chunk(got.column("d").num_chunks - 1).dictionary.to_pylist() == first_seen


def test_write_options_are_checked(sluice_bin, tmp_path):
    """-W compression=zstd (the Parquet writer's spelling) compresses an IPC
    output as --compression does; an unknown -W key for the IPC or JSON
    Lines writer is an error (it was ignored), and nothing is written."""
    table = _source_table()
    src = tmp_path / "in.arrows"
    with ipc.new_stream(src, table.schema) as w:
        w.write_table(table)
    _cli_convert(sluice_bin, src, tmp_path / "flag.arrows", "--compression", "zstd")
    _cli_convert(sluice_bin, src, tmp_path / "w.arrows", "-W", "compression=zstd")
    assert (tmp_path / "w.arrows").stat().st_size == (tmp_path / "flag.arrows").stat().st_size
    assert _read(tmp_path / "w.arrows").equals(table)
    for out in ("bad.arrow", "bad.jsonl"):
        proc = subprocess.run([sluice_bin, "convert", str(src), str(tmp_path / out), "-W", "nope=1"],
                              capture_output=True, timeout=120)
        assert proc.returncode == 1 and b"nope" in proc.stderr, proc.stderr
        assert not (tmp_path / out).exists()


def test_file_dictionary_with_nulls_that_changes_is_refused_by_its_reason(sluice, tmp_path):
    """A file cannot replace a dictionary and sluice grows only dictionaries
    without null values: the refusal says so (it named only the column kinds,
    which this string column is); the stream format writes it."""
    D = pa.DictionaryArray.from_arrays
    t = pa.table({"d": pa.chunked_array([D(pa.array([0, 1]), pa.array(["b", "a"])),
                                         D(pa.array([0, 1]), pa.array(["c", None]))])})
    src = tmp_path / "dn.arrows"
    with pa.ipc.new_stream(src, t.schema) as w:
        w.write_table(t)
    err = sluice.expect_error("convert", src, tmp_path / "dn.arrow").stderr.decode()
    assert "whose dictionaries hold no null values (one of this column's does)" in err, err
    sluice.run("convert", src, tmp_path / "ok.arrows")
    assert pa.ipc.open_stream(tmp_path / "ok.arrows").read_all().column("d").to_pylist() == \
        ["b", "a", "c", None]


@pytest.mark.parametrize("kind", ("list", "struct"))
def test_stream_resends_outer_dictionary_when_only_its_nested_one_changes(sluice, tmp_path, kind):
    """dictionary<list<dictionary<string>>> (or <struct<dictionary>>) whose
    batches differ only in the inner dictionary: the outer one's bytes are
    the same, but its indexes into the inner one now mean other values, and
    readers bind them when they read the outer one. pyarrow's stream writer
    sends both again; sluice sent only the inner one, so every reader
    (pyarrow, sluice) decoded the second batch wrongly."""
    D = pa.DictionaryArray.from_arrays

    def chunk(vals):
        inner = D(pa.array([0, 1], pa.int32()), pa.array(vals))
        if kind == "list":
            values = pa.ListArray.from_arrays(pa.array([0, 1, 2], pa.int32()), inner)
        else:
            values = pa.StructArray.from_arrays([inner], ["s"])
        return D(pa.array([1, 0], pa.int32()), values)

    t = pa.table({"nd": pa.chunked_array([chunk(["a", "b"]), chunk(["x", "y"])])})
    src = tmp_path / "pa.arrows"
    with ipc.new_stream(src, t.schema) as w:
        w.write_table(t)
    with ipc.open_stream(src) as r:
        assert r.read_all().to_pylist() == t.to_pylist()
        assert r.stats.num_dictionary_batches == 4  # pyarrow: outer, inner, twice
    sluice.run("convert", src, tmp_path / "out.arrows")
    with ipc.open_stream(tmp_path / "out.arrows") as r:
        assert r.read_all().to_pylist() == t.to_pylist()
        assert r.stats.num_dictionary_batches == 4
    # a second batch equal to the first sends nothing again
    same = pa.table({"nd": pa.chunked_array([chunk(["a", "b"]), chunk(["a", "b"])])})
    with ipc.new_stream(src, same.schema) as w:
        w.write_table(same)
    sluice.run("convert", src, tmp_path / "same.arrows")
    with ipc.open_stream(tmp_path / "same.arrows") as r:
        assert r.read_all().to_pylist() == same.to_pylist()
        assert r.stats.num_dictionary_batches == 2


def test_convert_refuses_null_in_non_nullable_field(tmp_path):
    """pyarrow's IPC writer writes a "not null" field holding a null (and
    reads it back so); sluice convert to Arrow IPC refuses it, as its
    Parquet and Avro writers do, naming the column path and the input's row
    (across the part files of --max-rows-per-file too), and leaves nothing."""
    cli = os.environ.get("SLUICE_BIN", "sluice")
    struct = pa.struct([pa.field("x", pa.int64(), nullable=False)])
    schema = pa.schema([pa.field("a", pa.int64(), nullable=False), pa.field("s", struct)])
    table = pa.Table.from_arrays(
        [pa.array([1, 2, 3, None, 5]),
         pa.StructArray.from_arrays([pa.array([1, 2, 3, 4, None])], fields=list(struct))],
        schema=schema)
    src = tmp_path / "in.arrows"
    with ipc.new_stream(str(src), schema) as w:
        w.write_table(table)
    assert ipc.open_stream(str(src)).read_all().column("a").null_count == 1
    cases = [([str(tmp_path / "o.arrow")], "column 'a' row 3: a null in a field that is not "
              "nullable"),
             (["-c", "s", str(tmp_path / "o.arrows")], "column 's.x' row 4: a null"),
             (["-t", "arrow", "--max-rows-per-file", "2", str(tmp_path / "d") + "/"],
              "column 'a' row 3: a null")]
    for args, message in cases:
        r = subprocess.run([cli, "convert", str(src), *args], capture_output=True, text=True)
        assert r.returncode != 0 and message in r.stderr, (args, r.stderr)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.arrows"]
