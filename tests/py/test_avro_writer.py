"""The Avro writer: Arrow IPC → `sluice convert` → .avro, read with fastavro
and read back with sluice, for every codec, every mapped type, nulls at every
level, sliced and multi-batch input, empty tables, the arrow-testing corpus
files rewritten, and the errors. avro-c and Java Avro read sluice's files in
test_avro_avroc.py and test_avro_java.py."""
import datetime
import io
import json
import os
import decimal
import subprocess
import uuid
import warnings
from pathlib import Path

import fastavro
import pyarrow as pa
import pyarrow.feather as feather
import pytest

from conftest import check_clean_failure, corpora_dir

CODECS = ["null", "deflate", "snappy", "zstandard", "bzip2", "xz"]
AVRO_DIR = corpora_dir() / "arrow-testing" / "data" / "avro"


def write_arrow(path: Path, table: pa.Table, max_chunksize=None) -> None:
    with pa.OSFile(str(path), "wb") as sink:
        with pa.ipc.new_file(sink, table.schema) as w:
            w.write_table(table, max_chunksize=max_chunksize)


def fastavro_rows(path: Path):
    with open(path, "rb") as f:
        r = fastavro.reader(f)
        return r.writer_schema, r.metadata, list(r)


def all_types_table() -> tuple[pa.Table, dict]:
    """Columns, and the Arrow type each should read back as."""
    cols = {}
    back = {}

    def add(name, arr, back_type=None):
        cols[name] = arr
        back[name] = back_type if back_type is not None else arr.type

    add("b", pa.array([True, None, False, True], pa.bool_()))
    add("i8", pa.array([-128, None, 127, 0], pa.int8()))
    add("u8", pa.array([255, None, 0, 1], pa.uint8()))
    add("i16", pa.array([-32768, None, 32767, 0], pa.int16()))
    add("u16", pa.array([65535, None, 0, 1], pa.uint16()))
    add("i32", pa.array([-2**31, None, 2**31 - 1, 0], pa.int32()))
    add("u32", pa.array([2**32 - 1, None, 0, 1], pa.uint32()))
    add("i64", pa.array([-2**63, None, 2**63 - 1, 0], pa.int64()))
    add("u64", pa.array([2**63 - 1, None, 0, 1], pa.uint64()))
    add("f16", pa.array([1.5, None, -2.0, 0.25], pa.float16()))
    add("f32", pa.array([1.5, None, float("inf"), -0.0], pa.float32()))
    add("f64", pa.array([1e300, None, -1.25, 0.1], pa.float64()))
    add("s", pa.array(["héllo", None, "", "x" * 300], pa.string()))
    add("ls", pa.array(["a", None, "", "b"], pa.large_string()))
    add("bin", pa.array([b"\x00\xff", None, b"", b"abc"], pa.binary()))
    add("lbin", pa.array([b"\x01", None, b"", b"z"], pa.large_binary()))
    add("fsb", pa.array([b"abcd", None, b"\x00\x00\x00\x00", b"wxyz"], pa.binary(4)))
    add("dec", pa.array([decimal.Decimal("123.45"), None, decimal.Decimal("-0.01"),
                         decimal.Decimal("-999.99")], pa.decimal128(5, 2)))
    add("dec38", pa.array([decimal.Decimal("1" * 38), None, decimal.Decimal("-" + "9" * 38),
                           decimal.Decimal(0)], pa.decimal128(38, 0)))
    add("dec256", pa.array([decimal.Decimal("1" * 70), None, decimal.Decimal(-128),
                            decimal.Decimal(255)], pa.decimal256(76, 0)))
    add("d32", pa.array([datetime.date(2024, 2, 29), None, datetime.date(1900, 1, 1),
                         datetime.date(1970, 1, 1)], pa.date32()))
    add("d64", pa.array([datetime.date(2024, 2, 29), None, datetime.date(1960, 5, 5),
                         datetime.date(1970, 1, 1)], pa.date64()))
    add("t32s", pa.array([0, None, 86399, 3600], pa.time32("s")))
    add("t32ms", pa.array([0, None, 86399999, 1], pa.time32("ms")))
    add("t64us", pa.array([0, None, 86399999999, 1], pa.time64("us")))
    add("t64ns", pa.array([0, None, 86399999999000, 1000], pa.time64("ns")), pa.time64("us"))
    for unit in ("s", "ms", "us", "ns"):
        add(f"ts_{unit}", pa.array([0, None, -1, 1_700_000_000], pa.timestamp(unit)))
        add(f"tsz_{unit}", pa.array([0, None, -1, 1_700_000_000], pa.timestamp(unit, tz="UTC")))
    add("tsny", pa.array([0, None, 5, 6], pa.timestamp("us", tz="America/New_York")))
    add("tsny_s", pa.array([0, None, 5, 6], pa.timestamp("s", tz="America/New_York")))
    add("tsoff", pa.array([0, None, 5, 6], pa.timestamp("ms", tz="+05:30")))
    add("ival", pa.array([pa.scalar((1, 2, 3_000_000), pa.month_day_nano_interval()).as_py(), None,
                          pa.scalar((0, 0, 0), pa.month_day_nano_interval()).as_py(),
                          pa.scalar((12, 31, 86_400_000_000_000), pa.month_day_nano_interval()).as_py()],
                         pa.month_day_nano_interval()))
    add("dict", pa.array(["red", None, "green", "red"]).dictionary_encode(),
        pa.dictionary(pa.int32(), pa.string()))
    add("dict_str", pa.array(["not a name", None, "1x", "not a name"]).dictionary_encode(),
        pa.string())
    add("dict8", pa.DictionaryArray.from_arrays(pa.array([1, 0, None, 1], pa.int8()),
                                                pa.array(["B", "A"])),
        pa.dictionary(pa.int32(), pa.string()))
    add("lst", pa.array([[1, None, 3], None, [], [4]], pa.list_(pa.int64())))
    add("llst", pa.array([["a"], None, [], ["b", None]], pa.large_list(pa.string())))
    add("fsl", pa.array([[1, 2], None, [3, None], [5, 6]], pa.list_(pa.int32(), 2)))
    add("lfsl", pa.array([[[0.5]], None, [], [[None], [-2.0]]],
                         pa.large_list(pa.list_(pa.float16(), 1))))
    add("nested", pa.array([[[1], [2, 3]], None, [[], None], [[None]]], pa.list_(pa.list_(pa.int16()))))
    st = pa.struct([("x", pa.int32()), ("y", pa.string()),
                    ("z", pa.struct([("q", pa.float64())]))])
    add("st", pa.array([{"x": 1, "y": "a", "z": {"q": 1.0}}, None,
                        {"x": None, "y": None, "z": None}, {"x": 4, "y": "d", "z": {"q": None}}], st))
    add("mp", pa.array([[("k", 1), ("l", None)], None, [], [("z", 26)]], pa.map_(pa.string(), pa.int32())))
    # (large keys are noted on the map: they came back as string keys)
    add("lmp", pa.array([[("k", 1)], None, [], [("zz", 2), ("y", None)]],
                        pa.map_(pa.large_string(), pa.int8())))
    add("lst_st", pa.array([[{"a": 1}], None, [None], []], pa.list_(pa.struct([("a", pa.int64())]))))
    add("nul", pa.array([None, None, None, None], pa.null()))
    return pa.table(cols), back


def expected_back(table: pa.Table, back: dict) -> pa.Schema:
    return pa.schema([pa.field(n, back[n]) for n in table.column_names])


@pytest.mark.parametrize("codec", CODECS)
def test_all_types_every_codec(tmp_path, sluice, codec):
    table, back = all_types_table()
    src, dst, rt = tmp_path / "in.arrow", tmp_path / "out.avro", tmp_path / "back.arrow"
    write_arrow(src, table)
    sluice.run("convert", src, dst, "-W", f"codec={codec}")
    schema, meta, rows = fastavro_rows(dst)
    assert meta["avro.codec"] == codec
    assert schema["name"] == "Root"
    types = {f["name"]: f["type"] for f in schema["fields"]}
    assert types["dict"][1]["type"] == "enum" and types["dict"][1]["symbols"] == ["red", "green"]
    assert types["dict8"][1]["symbols"] == ["B", "A"]
    assert types["dict_str"] == ["null", "string"]
    # Where Avro's type is wider, the Arrow type is noted for sluice's reader.
    assert types["i8"][1] == {"type": "int", "sluice.arrow_type": "c"}
    assert types["tsny"][1]["sluice.arrow_type"] == "tsu:America/New_York"
    assert types["fsl"][1]["sluice.arrow_type"] == "+w:2"
    assert types["d64"][1] == {"type": "int", "logicalType": "date", "sluice.arrow_type": "tdm"}
    assert len(rows) == table.num_rows
    orig = table.to_pylist()
    # fastavro spells these columns differently (fixed duration as bytes,
    # local timestamps as naive datetimes or ints, float16 widened, ...); the
    # others must be the same Python values.
    skip = {"ival", "f16", "lfsl", "tsz_ns", "tsoff", "ts_ns", "ts_s", "ts_ms", "ts_us", "tsny", "tsny_s", "tsz_s", "t32s",
            "t64ns", "d64", "nul", "i64", "mp", "lmp"}
    for name in table.column_names:
        if name in skip:
            continue
        assert [r[name] for r in rows] == [o[name] for o in orig], name
    assert [r["i64"] for r in rows] == [o["i64"] for o in orig]
    assert [r["mp"] for r in rows] == [None if o["mp"] is None else dict(o["mp"]) for o in orig]
    assert [r["lmp"] for r in rows] == [None if o["lmp"] is None else dict(o["lmp"]) for o in orig]
    assert types["lmp"][1]["sluice.arrow_key_type"] == "U"
    assert [r["f16"] for r in rows] == [1.5, None, -2.0, 0.25]
    assert [r["nul"] for r in rows] == [None] * 4

    sluice.run("convert", dst, rt)
    got = feather.read_table(rt)
    want = expected_back(table, back)
    for f in want:
        assert got.schema.field(f.name).type == f.type, f.name
    for name in table.column_names:
        assert got.column(name).to_pylist() == table.column(name).to_pylist(), name


def test_sliced_and_multibatch(tmp_path, sluice):
    table, _ = all_types_table()
    big = pa.concat_tables([table] * 50)
    # Slices: every array has a non-zero offset, at every level.
    sliced = big.slice(3, 190)
    src, dst, rt = tmp_path / "in.arrow", tmp_path / "out.avro", tmp_path / "back.arrow"
    write_arrow(src, sliced, max_chunksize=7)
    sluice.run("convert", src, dst, "-W", "codec=deflate,block_size=512")
    schema, _, rows = fastavro_rows(dst)
    assert len(rows) == sliced.num_rows
    assert [r["s"] for r in rows] == sliced.column("s").to_pylist()
    assert [r["mp"] for r in rows] == [None if m is None else dict(m) for m in sliced.column("mp").to_pylist()]
    # several blocks were written
    with open(dst, "rb") as f:
        blocks = list(fastavro.block_reader(f))
    assert len(blocks) > 5
    sluice.run("convert", dst, rt)
    got = feather.read_table(rt)
    for name in sliced.column_names:
        assert got.column(name).to_pylist() == sliced.column(name).to_pylist(), name


def test_float_arrays_fast_paths(tmp_path, sluice):
    """Arrays of doubles/floats are written in bulk where they have no nulls
    (nullable items or not), item by item where they have some; fastavro
    reads the same values either way, from sliced batches too."""
    n = 400
    ragged = [[float(i * 31 + k) / 7 for k in range(i % 23)] for i in range(n)]
    table = pa.table({
        "d": pa.array(ragged, pa.list_(pa.float64())),  # nullable items, no nulls
        "f": pa.array([[None if (i + k) % 5 == 0 else float(k) / 4 for k in range(i % 9)]
                       for i in range(n)], pa.list_(pa.float32())),  # some null items
        "r": pa.array(ragged, pa.list_(pa.field("item", pa.float64(), nullable=False))),
        "fr": pa.array([[float(k) / 8 for k in range(i % 7)] for i in range(n)],
                       pa.list_(pa.field("item", pa.float32(), nullable=False))),
    })
    sliced = table.slice(13, 350)
    src, dst = tmp_path / "in.arrow", tmp_path / "out.avro"
    write_arrow(src, sliced, max_chunksize=33)
    sluice.run("convert", src, dst)
    _, _, rows = fastavro_rows(dst)
    for name in sliced.column_names:
        assert [r[name] for r in rows] == sliced.column(name).to_pylist(), name


def test_pyarrow_slices_in_memory(tmp_path, sluice):
    # An IPC file keeps offsets 0; the reader's batches of an Avro file are
    # another path through the writer (avro → avro) with offsets.
    table, _ = all_types_table()
    src, mid, dst = tmp_path / "in.arrow", tmp_path / "mid.avro", tmp_path / "out.avro"
    write_arrow(src, pa.concat_tables([table] * 20))
    sluice.run("convert", src, mid, "-W", "codec=snappy")
    sluice.run("convert", mid, dst, "-W", "codec=zstandard,level=19")
    assert fastavro_rows(mid)[2] == fastavro_rows(dst)[2]


def test_empty_table(tmp_path, sluice):
    table, _ = all_types_table()
    empty = table.slice(0, 0)
    src, dst, rt = tmp_path / "in.arrow", tmp_path / "out.avro", tmp_path / "back.arrow"
    write_arrow(src, empty)
    sluice.run("convert", src, dst)
    schema, _, rows = fastavro_rows(dst)
    assert rows == []
    assert [f["name"] for f in schema["fields"]] == table.column_names
    sluice.run("convert", dst, rt)
    assert feather.read_table(rt).num_rows == 0


def test_sync_option_is_deterministic(tmp_path, sluice):
    table = pa.table({"a": [1, 2, 3]})
    src = tmp_path / "in.arrow"
    write_arrow(src, table)
    outs = []
    for i in range(2):
        dst = tmp_path / f"o{i}.avro"
        sluice.run("convert", src, dst, "-W", "sync=000102030405060708090a0b0c0d0e0f")
        outs.append(dst.read_bytes())
    assert outs[0] == outs[1]
    assert outs[0].endswith(bytes(range(16)))
    r1 = tmp_path / "r1.avro"
    r2 = tmp_path / "r2.avro"
    sluice.run("convert", src, r1)
    sluice.run("convert", src, r2)
    assert r1.read_bytes() != r2.read_bytes()  # random sync markers


def test_all_zero_sync_reads_back_with_any_thread_count(tmp_path, sluice):
    """A file written with sync=00..00 (4 MB, rows of 40 zero longs, so the
    data is full of runs of 34 zero bytes that look like a marker, an empty
    block and the marker) reads back from a file, with 1 and 2 threads, as
    fastavro reads it: one split reads it in one pass. Byte-range splits
    started inside the data ("bad sync marker" with 2 threads, "cannot be
    read in byte-range splits" with 1), though a pipe read it."""
    n = 100000
    fields = [pa.field(f"c{i}", pa.int64(), nullable=False) for i in range(40)]
    fields.append(pa.field("id", pa.int64(), nullable=False))  # no union: a long is 1 byte
    arrays = [pa.array([0] * n, pa.int64())] * 40 + [pa.array(range(n), pa.int64())]
    src, dst = tmp_path / "in.arrow", tmp_path / "zero.avro"
    write_arrow(src, pa.Table.from_arrays(arrays, schema=pa.schema(fields)))
    sluice.run("convert", src, dst, "-W", "sync=" + "0" * 32)
    assert dst.read_bytes().endswith(bytes(16)) and dst.stat().st_size > (3 << 20)
    _, _, rows = fastavro_rows(dst)
    want = [r["id"] for r in rows]
    assert want == list(range(n))
    for threads in ("1", "2"):
        out = tmp_path / f"back{threads}.arrow"
        sluice.run("--threads", threads, "convert", dst, out)
        assert feather.read_table(out).column("id").to_pylist() == want, threads


def test_names_sanitized(tmp_path, sluice):
    table = pa.table({"a b": [1], "1x": [2], "ok_": [3], "": [4]})
    src, dst = tmp_path / "in.arrow", tmp_path / "out.avro"
    write_arrow(src, table)
    sluice.run("convert", src, dst)
    schema, _, rows = fastavro_rows(dst)
    assert [f["name"] for f in schema["fields"]] == ["a_b", "_1x", "ok_", "_"]
    assert rows == [{"a_b": 1, "_1x": 2, "ok_": 3, "_": 4}]


@pytest.mark.parametrize("table,needle", [
    (pa.table({"big": pa.array([1, 2**63], pa.uint64())}), "big"),
    (pa.table({"dur": pa.array([1], pa.duration("s"))}), "dur"),
    (pa.table({"t": pa.array([1], pa.time64("ns"))}), "row 0"),
    (pa.table({"d": pa.array([1], pa.date64())}), "whole day"),
    # times outside the day: readers (sluice's, fastavro) refuse them
    (pa.table({"t": pa.array([0, 86_400_000], pa.time32("ms"))}), "row 1: time32 value is not"),
    (pa.table({"t": pa.array([100_000], pa.time32("s"))}), "time32 value is not a time of day"),
    (pa.table({"t": pa.array([-1], pa.time64("us"))}), "time64 value is not a time of day"),
    (pa.table({"a b": [1], "a_b": [2]}), "a_b"),
    # the key type by name, as other messages name types (it was 'i')
    (pa.table({"m": pa.array([[(1, 2)]], pa.map_(pa.int32(), pa.int32()))}),
     "column 'm': map keys must be strings (are int32)"),
    (pa.table({"m": pa.MapArray.from_arrays([0, 1], pa.array(["a"]).dictionary_encode(),
                                            pa.array(["b"]))}),
     "map keys must be strings (are dictionary<int32, string>)"),
    # a field of a struct is named by its path (it was 'x')
    (pa.table({"outer": pa.array([{"x": [(1, 2)]}],
                                 pa.struct([("x", pa.map_(pa.int32(), pa.int32()))]))}),
     "column 'outer.x': map keys must be strings (are int32)"),
    # a union member that is a union: Avro forbids it (the message said
    # "union has two '?' members")
    (pa.table({"u": pa.UnionArray.from_dense(
        pa.array([0, 1], pa.int8()), pa.array([0, 0], pa.int32()),
        [pa.array([1], pa.int64()),
         pa.UnionArray.from_dense(pa.array([0], pa.int8()), pa.array([0], pa.int32()),
                                  [pa.array(["x"])])])}),
     "column 'u': a union directly inside a union (Avro forbids it"),
])
def test_errors(tmp_path, sluice, table, needle):
    src, dst = tmp_path / "in.arrow", tmp_path / "out.avro"
    write_arrow(src, table)
    proc = sluice.expect_error("convert", src, dst)
    assert needle in proc.stderr.decode()
    assert not dst.exists()


@pytest.mark.parametrize("codec", ["deflate", "zstandard", "snappy"])
def test_compressed_blocks_in_order_and_write_errors(tmp_path, sluice, codec):
    """Compressed blocks are compressed on several threads and written in
    order: many small blocks read back in order; a write that fails (the
    device is full) fails the command with the reason."""
    n = 20_000
    table = pa.table({"i": pa.array(range(n), pa.int64()),
                      "s": pa.array([f"row {k} " * (k % 5) for k in range(n)])})
    src, dst = tmp_path / "in.arrow", tmp_path / "out.avro"
    write_arrow(src, table, max_chunksize=999)
    sluice.run("convert", src, dst, "-W", f"codec={codec},block_size=4096")
    _, _, rows = fastavro_rows(dst)
    assert [r["i"] for r in rows] == list(range(n))
    assert [r["s"] for r in rows] == table.column("s").to_pylist()
    with open(dst, "rb") as f:
        assert len(list(fastavro.block_reader(f))) > 20
    if os.path.exists("/dev/full"):
        proc = sluice.run_raw("convert", src, "/dev/full", "-t", "avro", "-W",
                              f"codec={codec},block_size=4096")
        assert proc.returncode != 0 and b"No space left" in proc.stderr, proc.stderr


def test_unknown_option(tmp_path, sluice):
    src = tmp_path / "in.arrow"
    write_arrow(src, pa.table({"a": [1]}))
    proc = sluice.expect_error("convert", src, tmp_path / "o.avro", "-W", "codec=lz4")
    assert "lz4" in proc.stderr.decode()
    proc = sluice.expect_error("convert", src, tmp_path / "o.avro", "-W", "bogus=1")
    assert "bogus" in proc.stderr.decode()


def test_deflate_levels(tmp_path, sluice):
    """deflate without a level is ISA-L's level 1, with level=N libdeflate's
    level N; every file decodes to the same rows in fastavro and in sluice,
    and a level past 12 is refused by name. Text, random doubles and runs,
    in blocks large and small (ISA-L falls back to stored blocks on noise)."""
    import random
    rnd = random.Random(7)
    n = 20000
    table = pa.table({
        "s": [f"row {i} {'abc' * (i % 11)}" for i in range(n)],
        "x": [rnd.random() for _ in range(n)],
        "k": [i // 1000 for i in range(n)],
        "b": [bytes(rnd.getrandbits(8) for _ in range(i % 40)) for i in range(n)],
    })
    src = tmp_path / "in.arrow"
    write_arrow(src, table, max_chunksize=3000)
    expected = table.to_pylist()
    sizes = {}
    for opts in ["codec=deflate", "codec=deflate,block_size=300", "codec=deflate,level=0",
                 "codec=deflate,level=1", "codec=deflate,level=6", "codec=deflate,level=12"]:
        dst = tmp_path / "o.avro"
        sluice.run("convert", src, dst, "-W", opts)
        _, meta, rows = fastavro_rows(dst)
        assert meta["avro.codec"] == "deflate", opts
        assert rows == expected, opts
        back = tmp_path / "back.arrow"
        sluice.run("convert", dst, back)
        assert feather.read_table(back).to_pylist() == expected, opts
        sizes[opts] = dst.stat().st_size
    # Level 0 stores; every other level compresses this table.
    assert sizes["codec=deflate"] < sizes["codec=deflate,level=0"]
    assert sizes["codec=deflate,level=12"] <= sizes["codec=deflate,level=1"]
    proc = sluice.expect_error("convert", src, tmp_path / "bad.avro", "-W",
                               "codec=deflate,level=13")
    assert "level=13" in proc.stderr.decode() and "0..12" in proc.stderr.decode()
    assert not (tmp_path / "bad.avro").exists()


@pytest.mark.parametrize("opts,says", [
    ("codec=snappy,level=3", "codec snappy has no compression levels"),
    ("codec=null,level=5", "codec null has no compression levels"),
    ("codec=bzip2,level=0", "codec bzip2 takes 1..9"),
    ("codec=xz,level=10", "codec xz takes 0..9"),
    ("codec=deflate,level=-1", "codec deflate takes 0..12"),
    ("codec=zstandard,level=23", "codec zstandard takes -131072..22"),
    ("codec=zstandard,level=-131073", "codec zstandard takes -131072..22"),
])
def test_level_the_codec_lacks_is_refused(tmp_path, sluice, opts, says):
    """A level was ignored for null and snappy, and clamped (to 9, or xz's 6)
    out of bzip2's and xz's ranges: a level that does nothing is refused,
    as pyarrow refuses one for snappy and uncompressed Parquet."""
    src, dst = tmp_path / "in.arrow", tmp_path / "o.avro"
    write_arrow(src, pa.table({"a": [1, 2]}))
    err = sluice.expect_error("convert", src, dst, "-W", opts).stderr.decode()
    assert says in err, err
    assert not dst.exists()


@pytest.mark.parametrize("level", [-1, -5, -131072])
def test_zstandard_negative_levels(tmp_path, sluice, level):
    """zstandard's negative (fastest) levels, which fastavro and Java take
    (they were refused as out of 0..22): fastavro reads the rows back, and
    fastavro takes the same level."""
    src, dst = tmp_path / "in.arrow", tmp_path / "o.avro"
    table = pa.table({"a": list(range(5000)), "s": [f"v{i % 13}" for i in range(5000)]})
    write_arrow(src, table)
    sluice.run("convert", src, dst, "-W", f"codec=zstandard,level={level}")
    _, meta, rows = fastavro_rows(dst)
    assert meta["avro.codec"] == "zstandard"
    assert rows == table.to_pylist()
    fastavro.writer(io.BytesIO(), {"type": "record", "name": "r", "fields": [
        {"name": "a", "type": "long"}]}, [{"a": 1}], codec="zstandard",
        codec_compression_level=level)
    # the level is used, not taken for the default (3): the fastest is larger
    if level == -131072:
        default = tmp_path / "d.avro"
        sluice.run("convert", src, default, "-W", "codec=zstandard")
        assert dst.stat().st_size > default.stat().st_size


def test_compression_flag_selects_codec(tmp_path, sluice):
    src, dst = tmp_path / "in.arrow", tmp_path / "o.avro"
    write_arrow(src, pa.table({"a": list(range(1000))}))
    sluice.run("convert", src, dst, "--compression", "zstd")
    _, meta, rows = fastavro_rows(dst)
    assert meta["avro.codec"] == "zstandard"
    assert [r["a"] for r in rows] == list(range(1000))


CORPUS = sorted(AVRO_DIR.glob("*.avro")) if AVRO_DIR.is_dir() else []


def normalize(v):
    if isinstance(v, dict):
        return {k: normalize(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [normalize(x) for x in v]
    if isinstance(v, uuid.UUID):  # uuid reads as utf8 and is written as a plain string
        return str(v)
    return v


@pytest.mark.parametrize("path", CORPUS, ids=[p.name for p in CORPUS])
@pytest.mark.parametrize("codec", ["null", "snappy"])
def test_corpus_rewrite(tmp_path, sluice, path, codec):
    dst = tmp_path / "out.avro"
    proc = sluice.run_raw("convert", path, dst, "-W", f"codec={codec}")
    err = proc.stderr.decode()
    assert "Sanitizer" not in err and "runtime error" not in err, err
    if proc.returncode != 0:
        # The reader refuses the file, or it has a type the writer cannot say.
        assert proc.returncode == 1, err
        pytest.skip(f"not convertible: {err.strip()}")
    wschema, _, want = fastavro_rows(path)
    gschema, _, got = fastavro_rows(dst)
    assert len(got) == len(want)
    if isinstance(wschema, dict) and wschema.get("type") == "record" and wschema.get("name"):
        # the source's record name (and namespace) is kept
        assert gschema["name"] == wschema["name"]
    # Record/field names are kept; the reader maps enums to dictionaries,
    # which the writer writes back as strings, and non-record top levels to
    # a "value" column.
    for g, w in zip(got, want):
        if not isinstance(w, dict):
            assert normalize(g["value"]) == normalize(w)
        else:
            assert normalize(g) == normalize(w)


def union_table() -> pa.Table:
    types = pa.array([0, 1, 0, 1, 1], pa.int8())
    dense = pa.UnionArray.from_dense(types, pa.array([0, 0, 1, 1, 2], pa.int32()),
                                     [pa.array([1, None], pa.int64()),
                                      pa.array(["a", "b", None], pa.string())], ["i", "s"])
    sparse = pa.UnionArray.from_sparse(types, [pa.array([1, 2, 3, 4, 5], pa.int32()),
                                               pa.array([b"a", b"b", b"c", b"d", b"e"])],
                                       ["n", "b"])
    return pa.table({"dense": dense, "sparse": sparse})


@pytest.mark.parametrize("sliced", [False, True])
def test_unions(tmp_path, sluice, sliced):
    table = union_table()
    if sliced:
        table = table.slice(1, 4)
    src, dst, rt = tmp_path / "in.arrow", tmp_path / "out.avro", tmp_path / "back.arrow"
    write_arrow(src, table)
    sluice.run("convert", src, dst, "-W", "codec=deflate")
    schema, _, rows = fastavro_rows(dst)
    fields = {f["name"]: f["type"] for f in schema["fields"]}
    assert fields["dense"] == ["null", "long", "string"]
    assert fields["sparse"] == ["null", "int", "bytes"]  # pyarrow members are nullable
    assert [r["dense"] for r in rows] == table.column("dense").to_pylist()
    assert [r["sparse"] for r in rows] == table.column("sparse").to_pylist()
    sluice.run("convert", dst, rt)
    got = feather.read_table(rt)
    assert got.column("dense").to_pylist() == table.column("dense").to_pylist()
    assert got.column("sparse").to_pylist() == table.column("sparse").to_pylist()


def test_union_duplicate_branch_types(tmp_path, sluice):
    types = pa.array([0, 1], pa.int8())
    u = pa.UnionArray.from_sparse(types, [pa.array([1, 2], pa.int32()),
                                          pa.array([3, 4], pa.int16())])
    src, dst = tmp_path / "in.arrow", tmp_path / "out.avro"
    write_arrow(src, pa.table({"u": u}))
    proc = sluice.expect_error("convert", src, dst)
    assert "'u'" in proc.stderr.decode() and "int" in proc.stderr.decode()


def write_stream(path: Path, batches) -> None:
    with pa.OSFile(str(path), "wb") as sink:
        with pa.ipc.new_stream(sink, batches[0].schema) as w:
            for b in batches:
                w.write_batch(b)


def dict_batch(indices, values):
    arr = pa.DictionaryArray.from_arrays(pa.array(indices, pa.int32()), pa.array(values))
    return pa.record_batch({"e": arr})


def test_enum_dictionaries_change_between_batches(tmp_path, sluice):
    src, dst, rt = tmp_path / "in.arrows", tmp_path / "out.avro", tmp_path / "back.arrow"
    write_stream(src, [dict_batch([0, 1, None], ["a", "b"]), dict_batch([0, 1, 1], ["b", "a"])])
    sluice.run("convert", src, dst)
    schema, _, rows = fastavro_rows(dst)
    assert schema["fields"][0]["type"][1]["symbols"] == ["a", "b"]
    assert [r["e"] for r in rows] == ["a", "b", None, "b", "a", "a"]
    sluice.run("convert", dst, rt)
    got = feather.read_table(rt)
    assert got.schema.field("e").type == pa.dictionary(pa.int32(), pa.string())
    assert got.column("e").to_pylist() == ["a", "b", None, "b", "a", "a"]


def test_null_dictionary_values_are_nulls(tmp_path, sluice):
    """A dictionary whose values hold a null (legal in Arrow) gives a null
    wherever an index points at it, as pyarrow's to_pylist reads it (it was
    refused as a null in a non-nullable field)."""
    src, dst = tmp_path / "in.arrows", tmp_path / "out.avro"
    batch = pa.record_batch({"e": pa.DictionaryArray.from_arrays(pa.array([0, 1, 2, None, 1]),
                                                                 pa.array(["A", None, "B"]))})
    write_stream(src, [batch])
    sluice.run("convert", src, dst)
    _, _, rows = fastavro_rows(dst)
    assert [r["e"] for r in rows] == batch.column(0).to_pylist() == ["A", None, "B", None, None]


def test_dictionaries_of_other_values_are_written_decoded(tmp_path, sluice):
    """A dictionary of values that are not strings (a pandas Categorical of
    integers is dictionary<int8, int64>) is written as its values' Avro type,
    decoded: fastavro reads the values pyarrow gives, over batches with
    different dictionaries, a null dictionary value, a dictionary in a list
    and a sliced batch; sluice reads them back as the value type (once
    refused: "has no Avro type (only dictionaries of strings)")."""
    pd = pytest.importorskip("pandas")
    cat = pa.Table.from_pandas(pd.DataFrame({"c": pd.Categorical([10, 20, 10, None])}),
                               preserve_index=False)
    assert cat.schema.field("c").type == pa.dictionary(pa.int8(), pa.int64())

    def batch(idx, ints, floats, blobs):
        return pa.record_batch({
            "c": pa.DictionaryArray.from_arrays(pa.array(idx, pa.int8()), pa.array(ints, pa.int64())),
            "f": pa.DictionaryArray.from_arrays(pa.array(idx, pa.int16()), pa.array(floats, pa.float32())),
            "b": pa.DictionaryArray.from_arrays(pa.array(idx, pa.uint8()), pa.array(blobs, pa.binary())),
            "s": pa.DictionaryArray.from_arrays(pa.array(idx, pa.int32()), pa.array([v % 1000 for v in ints], pa.int16())),
            "l": pa.array([[i] if i is not None else [] for i in ints[:1]] * len(idx),
                          pa.list_(pa.dictionary(pa.int32(), pa.int64()))),
        })
    batches = [batch([0, 1, None, 0], [10, 20], [1.5, None], [b"x", b"\x00y"]),
               batch([1, 1, 0, 2], [7, -3, 2**40], [0.25, -1.0, 3.0], [b"", b"z", b"q"]).slice(1, 3)]
    for name, parts in (("cat", cat.to_batches()), ("multi", batches)):
        src, dst, back = tmp_path / f"{name}.arrows", tmp_path / f"{name}.avro", tmp_path / f"{name}.arrow"
        write_stream(src, parts)
        sluice.run("convert", src, dst)
        want = pa.Table.from_batches(parts)
        _, _, rows = fastavro_rows(dst)
        assert rows == want.to_pylist(), name
        sluice.run("convert", dst, back)
        got = feather.read_table(back)
        assert got.to_pylist() == want.to_pylist(), name
        for field in want.schema:
            if pa.types.is_dictionary(field.type):
                assert got.schema.field(field.name).type == field.type.value_type, field.name


def test_dictionary_of_the_null_type_is_written_as_null(tmp_path, sluice):
    """A dictionary of null values (a pandas Categorical with no categories,
    as pyarrow converts it) is the Avro type "null", as a null column is:
    it was written as the union ["null", "null"], which no Avro reader
    takes ("a union lists the same type twice"); in a list and a struct too."""
    null_dict = pa.DictionaryArray.from_arrays(pa.array([None, None], pa.int8()), pa.array([], pa.null()))
    table = pa.table({"n": null_dict,
                      "l": pa.ListArray.from_arrays(pa.array([0, 1, 1], pa.int32()), null_dict.slice(0, 1)),
                      "s": pa.StructArray.from_arrays([null_dict], ["x"])})
    src, dst = tmp_path / "in.arrow", tmp_path / "out.avro"
    write_arrow(src, table)
    sluice.run("convert", src, dst)
    schema, _, rows = fastavro_rows(dst)
    fields = {f["name"]: f["type"] for f in schema["fields"]}
    assert fields["n"] == "null"
    # (pyarrow's to_pylist has no converter for dictionary<null>)
    want = [{"n": None, "l": [None], "s": {"x": None}}, {"n": None, "l": [], "s": {"x": None}}]
    assert rows == want
    back = tmp_path / "back.arrow"
    sluice.run("convert", dst, back)
    assert feather.read_table(back).to_pylist() == want


def test_enum_value_missing_from_first_dictionary(tmp_path, sluice):
    """A later batch's dictionary value that the enum's symbols (the first
    batch's) lack: an input that can be read again (an IPC file) is, and
    the column written as strings, with a note (it was an error asking for
    -W enums=false). So does a stream file; a pipe, read once, keeps the
    error (naming why it was not read again), and so do -W enums=true and
    standard output."""
    batches = [dict_batch([0], ["a"]), dict_batch([0, 0], ["zz"])]
    src, dst = tmp_path / "parts", tmp_path / "out.avro"  # (two IPC files: one may not replace)
    src.mkdir()
    for i, b in enumerate(batches):
        write_arrow(src / f"p{i}.arrow", pa.Table.from_batches([b]))
    proc = sluice.run("convert", src, dst)
    note = proc.stderr.decode()
    assert "'e'" in note and "row 1" in note and "written with the column as strings" in note
    schema, _, rows = fastavro_rows(dst)
    assert schema["fields"][0]["type"] == ["null", "string"]
    assert [r["e"] for r in rows] == ["a", "zz", "zz"]
    err = sluice.expect_error("convert", src, dst, "-W", "enums=true").stderr.decode()
    assert "'e'" in err and "row 1" in err and "enum" in err and "enums=false" in err
    err = sluice.expect_error("cat", src, "-t", "avro").stderr.decode()
    assert "enums=false" in err and "strings" not in err.split("writes the column as strings")[1]
    # A stream file starts over (it was refused as a stream, read once); a
    # pipe cannot, and keeps the error.
    stream = tmp_path / "in.arrows"
    write_stream(stream, batches)
    proc = sluice.run("convert", stream, dst)
    assert "written with the column as strings" in proc.stderr.decode()
    assert [r["e"] for r in fastavro_rows(dst)[2]] == ["a", "zz", "zz"]
    with open(stream, "rb") as f:
        proc = subprocess.run([sluice.binary, "convert", "-f", "arrows", "-", str(dst)], stdin=f,
                              capture_output=True, timeout=60)
    err = proc.stderr.decode()
    assert proc.returncode == 1
    assert "'e'" in err and "enums=false" in err and "scanned only once" in err, err


def test_parquet_categorical_of_row_groups_with_their_own_dictionaries(tmp_path, sluice):
    """A categorical column pyarrow wrote in row groups with dictionaries of
    their own (a chunked dictionary array) converts to Avro as strings (the
    first row group's values could not be the enum's symbols): it failed by
    default. fastavro reads pyarrow's values."""
    import pyarrow.parquet as pq
    chunks = pa.chunked_array([pa.array(["a", "b", "a"]).dictionary_encode(),
                               pa.array(["c", "a", None]).dictionary_encode()])
    src, dst = tmp_path / "cat.parquet", tmp_path / "cat.avro"
    pq.write_table(pa.table({"k": chunks, "i": list(range(6))}), src, row_group_size=3)
    assert pq.ParquetFile(src).metadata.num_row_groups == 2
    proc = sluice.run("convert", src, dst)
    assert "written with the column as strings" in proc.stderr.decode()
    _, _, rows = fastavro_rows(dst)
    assert [r["k"] for r in rows] == pq.read_table(src).column("k").to_pylist()


def test_enums_false_writes_growing_dictionaries_as_strings(tmp_path, sluice):
    """A stream of dictionary deltas (pyarrow's emit_dictionary_deltas: each
    batch adds values) has no enum symbols up front: with -W enums=false the
    column is an Avro string, and fastavro reads every value pyarrow wrote."""
    src, dst = tmp_path / "deltas.arrows", tmp_path / "out.avro"
    values = [f"v{i}" for i in range(50)]
    schema = pa.schema([("e", pa.dictionary(pa.int32(), pa.string()))])
    options = pa.ipc.IpcWriteOptions(emit_dictionary_deltas=True)
    with pa.OSFile(str(src), "wb") as sink, pa.ipc.new_stream(sink, schema, options=options) as w:
        for i in range(1, 51):
            arr = pa.DictionaryArray.from_arrays(pa.array([i - 1, 0, None], pa.int32()),
                                                 pa.array(values[:i]))
            w.write_batch(pa.record_batch([arr], schema=schema))
    want = pa.ipc.open_stream(src).read_all().column("e").to_pylist()
    err = sluice.expect_error("convert", src, dst, "-W", "enums=true").stderr.decode()
    assert "enums=false" in err, err
    sluice.run("convert", src, dst, "-W", "enums=false")
    avro_schema, _, rows = fastavro_rows(dst)
    assert avro_schema["fields"][0]["type"] == ["null", "string"]
    assert [r["e"] for r in rows] == want
    err = sluice.expect_error("convert", src, dst, "-W", "enums=maybe").stderr.decode()
    assert "enums='maybe': expected true or false" in err, err


def test_record_name_kept_only_when_fields_match(tmp_path, sluice):
    src = AVRO_DIR / "alltypes_plain.avro"
    if not src.exists():
        pytest.skip("corpus not found")
    full, part = tmp_path / "full.avro", tmp_path / "part.avro"
    sluice.run("convert", src, full)
    assert fastavro_rows(full)[0]["name"] == fastavro_rows(src)[0]["name"]
    sluice.run("convert", src, part, "-c", "id,bool_col")
    assert fastavro_rows(part)[0]["name"] == "Root"


# Named types in several namespaces (a dotted top-level name, as fastavro
# writes full names; one in the null namespace inside a namespaced record),
# used twice, in unions, arrays and maps: test_convert_keeps_avro_names, and
# Java in test_avro_java.py.
NAMED_SCHEMA = {"type": "record", "name": "com.example.Event", "fields": [
    {"name": "rec", "type": {"type": "record", "name": "Sub", "fields": [
        {"name": "x", "type": "int"},
        {"name": "c2", "type": {"type": "enum", "name": "Inner", "namespace": "",
                                "symbols": ["P", "Q"]}}]}},
    {"name": "rec2", "type": ["null", "Sub"]},
    {"name": "e", "type": {"type": "enum", "name": "Color", "symbols": ["RED", "GREEN"]}},
    {"name": "f", "type": {"type": "fixed", "name": "org.x.MD5", "size": 4}},
    {"name": "u", "type": ["null", {"type": "record", "name": "A", "fields": [{"name": "a", "type": "int"}]},
                           {"type": "record", "name": "other.B", "fields": [{"name": "b", "type": "string"}]},
                           "Color"]},
    {"name": "arr", "type": {"type": "array", "items": "org.x.MD5"}},
    {"name": "m", "type": {"type": "map", "values": "Color"}},
    {"name": "uu", "type": {"type": "fixed", "name": "U16", "size": 16, "logicalType": "uuid"}}]}
NAMED_ROWS = [
    {"rec": {"x": 1, "c2": "Q"}, "rec2": {"x": 2, "c2": "P"}, "e": "RED", "f": b"abcd",
     "u": ("com.example.A", {"a": 5}), "arr": [b"wxyz", b"1234"], "m": {"k": "RED"},
     "uu": bytes(15) + b"\x01"},
    {"rec": {"x": 3, "c2": "P"}, "rec2": None, "e": "GREEN", "f": b"efgh",
     "u": ("other.B", {"b": "s"}), "arr": [], "m": {}, "uu": bytes(15) + b"\x02"},
    {"rec": {"x": 4, "c2": "P"}, "rec2": None, "e": "GREEN", "f": b"ijkl", "u": "RED",
     "arr": [b"mnop"], "m": {"a": "GREEN", "b": "RED"}, "uu": bytes(15) + b"\x03"},
    {"rec": {"x": 5, "c2": "Q"}, "rec2": None, "e": "RED", "f": b"qrst", "u": None,
     "arr": [], "m": {}, "uu": bytes(15) + b"\x04"}]


def test_convert_keeps_avro_names(tmp_path, sluice):
    """`sluice convert x.avro y.avro` keeps the full names of records, enums
    and fixed types (from the avro.schema sluice's reader attaches), so the
    original schema reads the copy as reader schema, in fastavro and in
    sluice: they were renamed after their column (Root_rec, Root_e), and a
    dotted top-level name became Root, and both refused the copy."""
    src, copy, avsc = tmp_path / "in.avro", tmp_path / "copy.avro", tmp_path / "in.avsc"
    with open(src, "wb") as f:
        fastavro.writer(f, NAMED_SCHEMA, NAMED_ROWS)
    avsc.write_text(json.dumps(NAMED_SCHEMA))
    sluice.run("convert", src, copy)
    with open(copy, "rb") as f:
        r = fastavro.reader(f, reader_schema=NAMED_SCHEMA)
        got, schema = list(r), r.writer_schema
    with open(src, "rb") as f:
        assert got == list(fastavro.reader(f))
    types = {f["name"]: f["type"] for f in schema["fields"]}
    assert schema["name"] == "com.example.Event"
    assert types["rec"]["name"] == "com.example.Sub" and types["rec2"] == ["null", "com.example.Sub"]
    assert types["rec"]["fields"][1]["type"]["name"] == "Inner"  # the null namespace
    assert types["f"]["name"] == "org.x.MD5" and types["arr"]["items"] == "org.x.MD5"
    assert [b if isinstance(b, str) else b["name"] for b in types["u"]] == \
        ["null", "com.example.A", "other.B", "com.example.Color"]
    # sluice reads the copy with the original schema as it reads the original.
    back, want = tmp_path / "back.arrow", tmp_path / "want.arrow"
    sluice.run("convert", "--reader-schema", avsc, copy, back)
    sluice.run("convert", src, want)
    assert feather.read_table(back).to_pylist() == feather.read_table(want).to_pylist()
    # A projection keeps the nested names (the top level's fields differ: Root).
    part = tmp_path / "part.avro"
    sluice.run("convert", src, part, "-c", "rec,e")
    schema = fastavro_rows(part)[0]
    assert schema["name"] == "Root"
    assert [f["type"]["name"] for f in schema["fields"]] == ["com.example.Sub", "com.example.Color"]


def avro_names(schema) -> list:
    """(path, kind, full name) of every named type `schema` defines or
    references, as fastavro resolves them (namespaces inherited, "namespace"
    keys and dotted names alike)."""
    out = []

    def walk(t, path):
        if isinstance(t, str):
            if t not in ("null", "boolean", "int", "long", "float", "double", "bytes", "string"):
                out.append((path, "ref", t))
        elif isinstance(t, list):
            for i, b in enumerate(t):
                walk(b, f"{path}|{i}")
        elif t["type"] in ("record", "error", "enum", "fixed"):
            out.append((path, t["type"], t["name"]))
            for f in t.get("fields", []):
                walk(f["type"], f"{path}.{f['name']}")
        elif t["type"] == "array":
            walk(t["items"], path + "[]")
        elif t["type"] == "map":
            walk(t["values"], path + "{}")
        elif isinstance(t["type"], (dict, list)):
            walk(t["type"], path)
    walk(fastavro.parse_schema(schema, _write_hint=False), "$")
    return out


def header_schema(path: Path):
    """The schema JSON a file's header holds, as written."""
    with open(path, "rb") as f:
        return json.loads(fastavro.reader(f).metadata["avro.schema"])


# Files whose root is not a record (sluice reads the one column "value" of
# a wrapper row), with named records, enums and fixed in namespaces, one
# referenced twice by name: test_convert_keeps_a_non_record_root.
_ITEM = {"type": "record", "name": "Item", "namespace": "shop.v1", "fields": [
    {"name": "sku", "type": {"type": "fixed", "name": "Sku", "size": 3}},
    {"name": "state", "type": {"type": "enum", "name": "State", "namespace": "shop.common",
                               "symbols": ["NEW", "USED"]}},
    {"name": "was", "type": ["null", "shop.common.State"]},
    {"name": "alt", "type": {"type": "array", "items": "Sku"}}]}
_ITEM_ROWS = [{"sku": b"abc", "state": "NEW", "was": None, "alt": [b"xyz"]},
              {"sku": b"def", "state": "USED", "was": "NEW", "alt": []}]
NON_RECORD_ROOTS = {
    "enum": ({"type": "enum", "name": "Color", "namespace": "paint", "symbols": ["RED", "BLUE"]},
             ["RED", "BLUE", "RED"]),
    "fixed": ({"type": "fixed", "name": "org.x.Id", "size": 2}, [b"ab", b"cd"]),
    "array": ({"type": "array", "items": _ITEM}, [_ITEM_ROWS, [], _ITEM_ROWS[:1]]),
    "map": ({"type": "map", "values": _ITEM}, [{"a": _ITEM_ROWS[0], "b": _ITEM_ROWS[1]}, {}]),
    "nullable": (["null", _ITEM], [None, *_ITEM_ROWS]),
    "union": (["null", _ITEM, {"type": "record", "name": "Other", "namespace": "shop.v2",
                               "fields": [{"name": "s", "type": "shop.common.State"}]}],
              [("shop.v1.Item", _ITEM_ROWS[0]), None, ("shop.v2.Other", {"s": "USED"})]),
}


@pytest.mark.parametrize("kind", list(NON_RECORD_ROOTS))
def test_convert_keeps_a_non_record_root(tmp_path, sluice, kind):
    """`sluice convert x.avro y.avro` of a file whose root is an enum, a
    fixed, an array, a map or a union (fastavro writes them; sluice reads the
    column "value") writes that root again, with every record, enum and fixed
    keeping the full name fastavro gave it: the copy was a record "Root" of
    one field "value", its named types renamed after the path (Root_value,
    Root_value_item_state), so the original schema no longer read it."""
    schema, rows = NON_RECORD_ROOTS[kind]
    src, copy = tmp_path / "in.avro", tmp_path / "copy.avro"
    with open(src, "wb") as f:
        fastavro.writer(f, schema, rows)
    sluice.run("convert", src, copy)
    written = header_schema(copy)
    assert avro_names(written) == avro_names(header_schema(src)), json.dumps(written)
    with open(copy, "rb") as f:
        assert list(fastavro.reader(f)) == fastavro_rows(src)[2]
    with open(copy, "rb") as f:  # the original schema reads the copy
        assert list(fastavro.reader(f, reader_schema=schema)) == fastavro_rows(src)[2]
    back, want = tmp_path / "back.arrow", tmp_path / "want.arrow"
    sluice.run("convert", copy, back)
    sluice.run("convert", src, want)
    assert feather.read_table(back).equals(feather.read_table(want))


def test_non_record_root_with_other_columns_is_a_record(tmp_path, sluice):
    """A non-record root's column "value" next to others (the Avro schema
    still in the Arrow schema's metadata) is a field of a record "Root"; its
    named types keep their names there (they were Root_value_item, ...)."""
    schema, rows = NON_RECORD_ROOTS["array"]
    src, arrow, out = tmp_path / "in.avro", tmp_path / "in.arrow", tmp_path / "out.avro"
    with open(src, "wb") as f:
        fastavro.writer(f, schema, rows)
    sluice.run("convert", src, arrow)
    table = feather.read_table(arrow)
    assert b"avro.schema" in table.schema.metadata
    table = table.append_column("n", pa.array(range(table.num_rows), pa.int64()))
    two = tmp_path / "two.arrow"
    write_arrow(two, table)
    sluice.run("convert", two, out)
    written = header_schema(out)
    assert written["name"] == "Root" and [f["name"] for f in written["fields"]] == ["value", "n"]
    want = [(p.replace("$", "$.value", 1), k, n) for p, k, n in avro_names(header_schema(src))]
    assert avro_names(written)[1:] == want
    assert fastavro_rows(out)[2] == [{"value": r, "n": i} for i, r in enumerate(rows)]


def test_renamed_column_keeps_its_types_names(tmp_path, sluice):
    """A column renamed after the read (the Avro schema still in the Arrow
    schema's metadata) keeps the names of its records, enums and fixed: it
    takes the source field at its position, which no column names. They
    were named after the path (Root_addr, Root_addr_kind), and the type the
    next column used by reference was defined there under its own name. The
    top level's fields differ, so it is Root, as for a projection."""
    src, arrow, out = tmp_path / "in.avro", tmp_path / "in.arrow", tmp_path / "out.avro"
    with open(src, "wb") as f:
        fastavro.writer(f, NAMED_SCHEMA, NAMED_ROWS)
    sluice.run("convert", src, arrow)
    table = feather.read_table(arrow)
    renamed = [{"rec": "record", "f": "digest"}.get(n, n) for n in table.column_names]
    table = table.rename_columns(renamed).replace_schema_metadata(table.schema.metadata)
    moved = tmp_path / "renamed.arrow"
    write_arrow(moved, table)
    sluice.run("convert", moved, out)
    written = header_schema(out)
    assert written["name"] == "Root"
    rename = {"$.rec": "$.record", "$.f": "$.digest"}

    def renamed_path(p):
        for old, new in rename.items():
            if p == old or p.startswith(old + ".") or p.startswith(old + "["):
                return new + p[len(old):]
        return p
    want = [(renamed_path(p), k, n) for p, k, n in avro_names(NAMED_SCHEMA)[1:]]
    assert avro_names(written)[1:] == want, json.dumps(written)
    with open(src, "rb") as f:
        orig = list(fastavro.reader(f))
    for row in orig:
        row["record"], row["digest"] = row.pop("rec"), row.pop("f")
    assert fastavro_rows(out)[2] == [{n: r[n] for n in renamed} for r in orig]


def test_union_member_names_name_records(tmp_path, sluice):
    """Without an Avro schema, a union's struct members are records named
    after the members (Foo, Bar), as the reader names branches; a name used
    again for the same type is a reference, for another type a new name."""
    def union(names, second):
        return pa.UnionArray.from_dense(
            pa.array([0, 1], pa.int8()), pa.array([0, 0], pa.int32()),
            [pa.array([{"a": 1}], pa.struct([("a", pa.int32())])), pa.array([second])], names)
    table = pa.table({"u": union(["Foo", "Bar"], {"b": "x"}), "v": union(["Foo", "Bar"], {"b": "y"}),
                      "w": union(["Foo", "Bar"], {"c": 1.5})})
    src, dst = tmp_path / "in.arrow", tmp_path / "out.avro"
    write_arrow(src, table)
    sluice.run("convert", src, dst)
    schema, _, rows = fastavro_rows(dst)
    types = {f["name"]: f["type"] for f in schema["fields"]}
    assert [b["name"] for b in types["u"][1:]] == ["Foo", "Bar"]
    assert types["v"] == ["null", "Foo", "Bar"]
    assert types["w"][1] == "Foo" and types["w"][2]["name"] == "Root_w_1"
    assert rows == table.to_pylist()


@pytest.mark.parametrize("codec", ["null", "deflate", "bzip2", "zstandard"])
def test_apache_avro_reads_it(tmp_path, sluice, codec):
    """The Apache reference implementation (the `avro` package; it has no xz,
    and snappy only with python-snappy) parses the schema strictly and reads
    the data."""
    datafile = pytest.importorskip("avro.datafile")
    avro_io = pytest.importorskip("avro.io")
    table, _ = all_types_table()
    table = pa.concat_tables([table] * 3)
    src, dst = tmp_path / "in.arrow", tmp_path / "out.avro"
    write_arrow(src, table)
    sluice.run("convert", src, dst, "-W", f"codec={codec},block_size=100")
    # It warns about logical types it does not know (local-timestamp-*,
    # timestamp-nanos, duration) and reads them as their underlying types.
    with warnings.catch_warnings(), open(dst, "rb") as f:
        warnings.simplefilter("ignore")
        with datafile.DataFileReader(f, avro_io.DatumReader()) as reader:
            rows = list(reader)
    _, _, want = fastavro_rows(dst)
    assert len(rows) == table.num_rows
    for name in ["b", "i32", "i64", "s", "bin", "fsb", "lst", "st", "mp", "dict", "lst_st", "dec"]:
        assert [r[name] for r in rows] == [w[name] for w in want], name


def test_block_size_takes_size_suffixes(tmp_path, sluice):
    """block_size=1k is 1,024 bytes, as CSV's and Parquet's size options are
    spelled: the same blocks as block_size=1024; a bad suffix is an error."""
    table, _ = all_types_table()
    big = pa.concat_tables([table] * 50)
    src = tmp_path / "in.arrow"
    write_arrow(src, big)
    counts = []
    for spelling in ("1k", "1024"):
        dst = tmp_path / f"b{spelling}.avro"
        sluice.run("convert", src, dst, "-W", f"block_size={spelling}")
        with open(dst, "rb") as f:
            counts.append([b.num_records for b in fastavro.block_reader(f)])
    assert counts[0] == counts[1] and len(counts[0]) > 3
    err = sluice.expect_error("convert", src, tmp_path / "bad.avro", "-W", "block_size=1x")
    assert "block_size" in err.stderr.decode()


def test_timestamp_with_unknown_zone_keeps_its_unit(tmp_path, sluice):
    """A timestamp whose zone the tz database lacks comes back in UTC, in its
    own unit: timestamp[s] came back as timestamp[ms, UTC] (the whole note
    was dropped). String views come back as large strings (documented)."""
    for tz in ("Not/AZone", "utc"):
        table = pa.table({"t": pa.array([0, 1, -5], pa.timestamp("s", tz=tz))})
        src, dst, back = tmp_path / "in.arrow", tmp_path / "t.avro", tmp_path / "back.arrow"
        write_arrow(src, table)
        sluice.run("convert", src, dst)
        sluice.run("convert", dst, back)
        got = feather.read_table(back)
        assert got.schema.field("t").type == pa.timestamp("s", tz="UTC"), tz
        assert got.column("t").cast(pa.int64()).to_pylist() == [0, 1, -5]
    table = pa.table({"sv": pa.array(["a", None], pa.string_view())})
    src, dst, back = tmp_path / "in.arrow", tmp_path / "v.avro", tmp_path / "back.arrow"
    write_arrow(src, table)
    sluice.run("convert", src, dst)
    sluice.run("convert", dst, back)
    got = feather.read_table(back)
    assert got.schema.field("sv").type == pa.large_string()
    assert got.column("sv").to_pylist() == ["a", None]


@pytest.mark.parametrize("tz", ["+0530", "-0800", "+05:30", "+2359", "-00:00",
                                "+05", "+2400", "+0560", "+5:30"])
def test_fixed_offset_zones_as_arrow_cpp_takes_them(tmp_path, sluice, tz):
    """Arrow C++ takes a fixed offset as +HH:MM or +HHMM (hours below 24,
    minutes below 60; pyarrow's compute refuses other spellings): those
    zones come back through Avro as written (+0530 came back as UTC), the
    others as UTC, as unknown names do. The wall times agree with pyarrow's."""
    import pyarrow.compute as pc
    table = pa.table({"t": pa.array([0, 1_700_000_000, None], pa.timestamp("s", tz=tz))})
    try:
        want_local = pc.local_timestamp(table.column("t"))
        arrow_takes = True
    except pa.ArrowInvalid:
        arrow_takes = False
    src, dst, back = tmp_path / "in.arrow", tmp_path / "t.avro", tmp_path / "back.arrow"
    write_arrow(src, table)
    sluice.run("convert", src, dst)
    sluice.run("convert", dst, back)
    got = feather.read_table(back)
    assert got.schema.field("t").type == pa.timestamp("s", tz=tz if arrow_takes else "UTC")
    assert got.column("t").cast(pa.int64()).to_pylist() == [0, 1_700_000_000, None]
    if arrow_takes:
        assert pc.local_timestamp(got.column("t")).equals(want_local)
        # sluice's own rendering shows the same wall times with the offset
        text = sluice.run("cat", back, "-t", "csv").stdout.decode().splitlines()
        offset = tz if ":" in tz else tz[:3] + ":" + tz[3:]
        offset = "+00:00" if offset == "-00:00" else offset
        assert text[1:3] == [f"{v.as_py():%Y-%m-%d %H:%M:%S}{offset}"
                             for v in want_local.combine_chunks()[:2]]


def test_noted_arrow_types_are_checked_or_ignored(tmp_path, sluice):
    """A file another writer made with "sluice.arrow_type": a value that does
    not fit the noted type is an error naming it; a note that does not fit
    the Avro type (or names no such type) is ignored, as unknown logical
    types are; with a reader schema the plain mapping applies."""
    def write(name, field_type, values):
        schema = {"type": "record", "name": "R", "fields": [{"name": "v", "type": field_type}]}
        path = tmp_path / name
        with open(path, "wb") as f:
            fastavro.writer(f, fastavro.parse_schema(schema), [{"v": v} for v in values])
        return path

    bad = write("bad.avro", {"type": "int", "sluice.arrow_type": "c"}, [1, 300])
    proc = subprocess.run([sluice.binary, "convert", str(bad), str(tmp_path / "o.arrow")],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    check_clean_failure(proc)
    assert "value 300 does not fit the Arrow type int8 its schema names (sluice.arrow_type 'c')" in proc.stderr.decode(), proc.stderr.decode()
    for t, values, needle in (
            ({"type": "float", "sluice.arrow_type": "e"}, [1.5, 0.1], "float 0.100000001 is not"),
            ({"type": "int", "logicalType": "time-millis", "sluice.arrow_type": "tts"},
             [1000, 1500], "value 1500 is not a whole number"),
            ({"type": "array", "items": "int", "sluice.arrow_type": "+w:2"}, [[1, 2], [3]],
             "array of 1 items where its schema names fixed_size_list of 2")):
        proc = subprocess.run([sluice.binary, "convert", str(write("bad.avro", t, values)),
                               str(tmp_path / "o.arrow")],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        check_clean_failure(proc)
        assert needle in proc.stderr.decode(), proc.stderr.decode()
    for note, avro_type, want in (("c", "long", pa.int64()), ("q", "int", pa.int32()),
                                  ("e", "double", pa.float64()), ("+L", "long", pa.int64()),
                                  ("tsu:Bad Zone!", None, pa.timestamp("us", tz="UTC")),
                                  ("tsu:Bogus/Zone", None, pa.timestamp("us", tz="UTC")),
                                  ("tss:UTC", None, pa.timestamp("us", tz="UTC")),
                                  ("tsm:Europe/Paris", None, pa.timestamp("us", tz="UTC"))):
        t = ({"type": avro_type, "sluice.arrow_type": note} if avro_type else
             {"type": "long", "logicalType": "timestamp-micros", "sluice.arrow_type": note})
        path = write("ignored.avro", t, [1, 2])
        sluice.run("convert", path, tmp_path / "i.arrow")
        assert feather.read_table(tmp_path / "i.arrow").schema.field("v").type == want, note
    good = write("good.avro", {"type": "int", "sluice.arrow_type": "C"}, [0, 255])
    sluice.run("convert", good, tmp_path / "g.arrow")
    assert feather.read_table(tmp_path / "g.arrow").column("v").type == pa.uint8()
    reader = tmp_path / "reader.avsc"
    reader.write_text('{"type": "record", "name": "R", "fields": [{"name": "v", "type": '
                      '{"type": "long", "sluice.arrow_type": "c"}}]}')
    sluice.run("convert", good, tmp_path / "r.arrow", "--reader-schema", reader)
    got = feather.read_table(tmp_path / "r.arrow")
    assert got.column("v").type == pa.int64() and got.column("v").to_pylist() == [0, 255]


def test_uuid_columns_are_fixed_uuid_both_ways(tmp_path, sluice):
    """arrow.uuid (Parquet's UUID) is written as Avro 1.12's uuid over
    fixed(16), and such a fixed reads back as arrow.uuid, so a Parquet ->
    Avro -> Parquet round trip keeps the UUID type (it became plain
    fixed_size_binary[16]). fastavro, which does not know the logical type
    on fixed, reads the 16 bytes; so does Java Avro."""
    import pyarrow.parquet as pq
    values = [uuid.UUID(int=0x0123456789ABCDEF0123456789ABCDEF), None, uuid.uuid4()]
    table = pa.table({"u": pa.array([v.bytes if v else None for v in values], pa.uuid())})
    pq.write_table(table, tmp_path / "u.parquet")
    sluice.run("convert", tmp_path / "u.parquet", tmp_path / "u.avro")
    schema, _, rows = fastavro_rows(tmp_path / "u.avro")
    (fixed,) = [b for b in schema["fields"][0]["type"] if b != "null"]
    assert fixed["type"] == "fixed" and fixed["size"] == 16 and fixed["logicalType"] == "uuid"
    assert [r["u"] for r in rows] == [v.bytes if v else None for v in values]
    sluice.run("convert", tmp_path / "u.avro", tmp_path / "back.parquet")
    back = pq.read_table(tmp_path / "back.parquet")
    assert back.schema.field("u").type == pa.uuid()
    assert back.column("u").to_pylist() == values
    # A fixed uuid another writer made reads as arrow.uuid too.
    other = tmp_path / "fastavro.avro"
    with open(other, "wb") as f:
        fastavro.writer(f, {"type": "record", "name": "r", "fields": [
            {"name": "u", "type": {"type": "fixed", "name": "U", "size": 16, "logicalType": "uuid"}},
            {"name": "f", "type": {"type": "fixed", "name": "F", "size": 16}}]},
            [{"u": values[0].bytes, "f": values[0].bytes}])
    sluice.run("convert", other, tmp_path / "other.parquet")
    got = pq.read_table(tmp_path / "other.parquet")
    assert got.schema.field("u").type == pa.uuid() and got.column("u").to_pylist() == [values[0]]
    assert got.schema.field("f").type == pa.binary(16)


# Decimals over fixed, as Java Avro and Spark write them: in a namespace,
# nullable, decimal256 (precision 40 in 20 bytes), used again by name in an
# array, and a bytes decimal beside them.
FIXED_DECIMAL_SCHEMA = {"type": "record", "name": "Pay", "namespace": "com.example", "fields": [
    {"name": "d", "type": {"type": "fixed", "name": "Amount", "namespace": "money", "size": 8,
                           "logicalType": "decimal", "precision": 18, "scale": 2}},
    {"name": "n", "type": ["null", {"type": "fixed", "name": "Big", "size": 20,
                                    "logicalType": "decimal", "precision": 40, "scale": 3}]},
    {"name": "a", "type": {"type": "array", "items": "money.Amount"}},
    {"name": "b", "type": {"type": "bytes", "logicalType": "decimal", "precision": 9, "scale": 1}}]}
FIXED_DECIMAL_ROWS = [
    {"d": decimal.Decimal("1.23"), "n": decimal.Decimal("-1234567890123456789012345678901234567.890"),
     "a": [decimal.Decimal("-0.01"), decimal.Decimal("9999999999999999.99")], "b": decimal.Decimal("-5.5")},
    {"d": decimal.Decimal("-9999999999999999.99"), "n": None, "a": [], "b": decimal.Decimal("12345678.9")},
    {"d": decimal.Decimal("0.00"), "n": decimal.Decimal("0.001"), "a": [decimal.Decimal("-128.00")],
     "b": decimal.Decimal("0.0")}]


def test_convert_keeps_fixed_decimals(tmp_path, sluice):
    """A decimal read from an Avro fixed is written as that fixed (name,
    namespace, size), so the original schema reads `sluice convert`'s copy
    as reader schema; fastavro refused the copy ("bytes ... is not ...
    fixed": a fixed and bytes do not resolve in Avro). Without such an origin
    a decimal is bytes."""
    src, copy = tmp_path / "in.avro", tmp_path / "copy.avro"
    with open(src, "wb") as f:
        fastavro.writer(f, FIXED_DECIMAL_SCHEMA, FIXED_DECIMAL_ROWS)
    sluice.run("convert", src, copy)
    with open(copy, "rb") as f:
        r = fastavro.reader(f, reader_schema=FIXED_DECIMAL_SCHEMA)
        got, schema = list(r), r.writer_schema
    assert got == FIXED_DECIMAL_ROWS
    types = {f["name"]: f["type"] for f in schema["fields"]}
    assert (types["d"]["type"], types["d"]["name"], types["d"]["size"]) == ("fixed", "money.Amount", 8)
    assert (types["n"][1]["name"], types["n"][1]["size"]) == ("com.example.Big", 20)
    assert types["a"]["items"] == "money.Amount" and types["b"]["type"] == "bytes"
    # Through Arrow IPC the avro.schema metadata comes along, and so does the fixed.
    arrow, again = tmp_path / "in.arrow", tmp_path / "again.avro"
    sluice.run("convert", src, arrow)
    sluice.run("convert", arrow, again)
    with open(again, "rb") as f:
        assert list(fastavro.reader(f, reader_schema=FIXED_DECIMAL_SCHEMA)) == FIXED_DECIMAL_ROWS
    # Without it (or with another precision) the decimal is bytes.
    table = feather.read_table(arrow)
    plain = tmp_path / "plain.arrow"
    write_arrow(plain, table.replace_schema_metadata(None))
    sluice.run("convert", plain, tmp_path / "plain.avro")
    schema = fastavro_rows(tmp_path / "plain.avro")[0]
    assert [f["type"] for f in schema["fields"]][0]["type"] == "bytes"


def test_fixed_decimal_value_too_wide_is_an_error(tmp_path, sluice):
    """A value with more digits than the fixed's precision (Arrow does not
    check the precision) does not fit the fixed: an error naming column and
    row, as fastavro's writer refuses it."""
    schema = {"type": "record", "name": "R", "fields": [
        {"name": "d", "type": {"type": "fixed", "name": "F", "size": 2, "logicalType": "decimal",
                               "precision": 4, "scale": 0}}]}
    with pytest.raises(Exception):
        fastavro.writer(io.BytesIO(), schema, [{"d": decimal.Decimal(99999)}])
    wide = pa.array([decimal.Decimal(1), decimal.Decimal(99999)], pa.decimal128(5, 0))
    table = pa.table({"d": wide.view(pa.decimal128(4, 0))}).replace_schema_metadata(
        {"avro.schema": json.dumps(schema)})
    src = tmp_path / "in.arrow"
    write_arrow(src, table.cast(pa.schema([pa.field("d", pa.decimal128(4, 0), nullable=False)],
                                          table.schema.metadata), safe=False))
    err = sluice.expect_error("convert", src, tmp_path / "out.avro").stderr.decode()
    assert "'d'" in err and "row 1" in err and "precision 4" in err


def test_wide_table_names_repeated_far_apart_are_refused(tmp_path, sluice):
    """Columns 0 and 49,999 of one Avro name ("a b" and "a_b": the writer
    renames the first) are refused naming both, as two neighbours are (each
    name was compared with every earlier one: a minute for 100k columns;
    they are hashed now); without the repeat the table converts as fastavro
    reads it."""
    n = 50_000
    names = [f"c{i}" for i in range(n)]
    names[0], names[n - 1] = "a b", "a_b"
    src = tmp_path / "wide.arrow"
    write_arrow(src, pa.Table.from_arrays([pa.array([i], pa.int64()) for i in range(n)],
                                          names=names))
    proc = sluice.expect_error("convert", src, tmp_path / "o.avro")
    assert b"columns 'a b' and 'a_b' both become the Avro name 'a_b'" in proc.stderr, proc.stderr
    names[n - 1] = "z"
    write_arrow(src, pa.Table.from_arrays([pa.array([i], pa.int64()) for i in range(n)],
                                          names=names))
    sluice.run("convert", src, tmp_path / "o.avro")
    schema, _, rows = fastavro_rows(tmp_path / "o.avro")
    assert [f["name"] for f in schema["fields"]] == ["a_b", *names[1:]]
    assert rows == [dict(zip(["a_b", *names[1:]], range(n)))]


def decimal_past_precision(value: str, typ: pa.DataType) -> pa.Array:
    """One decimal of `typ` holding `value`, which may have more digits than
    its precision (Arrow does not check it; pyarrow passes such arrays
    through, as arrow-testing's generated_decimal files hold them)."""
    unscaled = int(decimal.Decimal(value).scaleb(typ.scale))
    raw = unscaled.to_bytes(typ.bit_width // 8, "little", signed=True)
    return pa.Array.from_buffers(typ, 1, [None, pa.py_buffer(raw)])


@pytest.mark.parametrize("value,typ", [
    ("128.10", pa.decimal128(3, 2)),
    ("-1000", pa.decimal128(3, 0)),
    ("1" + "0" * 38, pa.decimal128(38, 0)),  # past 10^38, below 2^127
    ("12345.6", pa.decimal256(4, 1)),
    ("1" + "0" * 76, pa.decimal256(76, 0)),  # past 10^76, below 2^255
])
def test_decimal_past_its_precision_is_an_error(tmp_path, sluice, value, typ):
    """A value with more digits than its decimal's precision is refused,
    naming column, row, value and precision, and leaves no file: fastavro's
    writer refuses it too, sluice's reader would refuse the file, and
    fastavro would read another number (128.10 in decimal(3, 2) as 128)."""
    arr = decimal_past_precision(value, typ)
    with pytest.raises(pa.ArrowInvalid):
        arr.validate(full=True)
    schema = {"type": "record", "name": "R", "fields": [
        {"name": "d", "type": {"type": "bytes", "logicalType": "decimal",
                               "precision": typ.precision, "scale": typ.scale}}]}
    with pytest.raises(Exception):
        fastavro.writer(io.BytesIO(), schema, [{"d": decimal.Decimal(value)}])
    src, dst = tmp_path / "in.arrow", tmp_path / "out.avro"
    ok = pa.array([decimal.Decimal(0)], typ)
    write_arrow(src, pa.table({"d": pa.concat_arrays([ok, arr])}))
    err = sluice.expect_error("convert", src, dst).stderr.decode()
    assert "'d' row 1" in err and f"decimal value {value} " in err, err
    assert f"precision {typ.precision}" in err, err
    assert not dst.exists()


def test_arrow_testing_decimals_past_precision_are_refused(tmp_path, sluice):
    """arrow-testing's generated_decimal files hold values with more digits
    than their precision (pyarrow's full validation refuses them): the
    writer names the first such value in row order."""
    path = (corpora_dir() / "arrow-testing" / "data" / "arrow-ipc-stream" / "integration" /
            "1.0.0-littleendian" / "generated_decimal.arrow_file")
    if not path.exists():
        pytest.skip("arrow-testing corpus missing")
    table = pa.ipc.open_file(str(path)).read_all()
    with pytest.raises(pa.ArrowInvalid):
        table.validate(full=True)
    first = None
    for row in range(table.num_rows):
        for name in table.column_names:
            col = table.column(name)
            one = col.slice(row, 1).combine_chunks()
            if one.null_count == 0:
                try:
                    one.validate(full=True)
                except pa.ArrowInvalid:
                    first = (name, row, col.type.precision)
                    break
        if first is not None:
            break
    assert first is not None
    dst = tmp_path / "out.avro"
    err = sluice.expect_error("convert", path, dst).stderr.decode()
    assert f"'{first[0]}' row {first[1]}:" in err and f"precision {first[2]} " in err, err
    assert not dst.exists()


def test_uuid_strings_keep_their_logical_type(tmp_path, sluice):
    """A string with logicalType uuid keeps it through Avro -> Avro (the
    copy's was a plain string: fastavro gave uuid.UUID for the source, str
    for the copy); fastavro reads the copy as it reads the source."""
    src = AVRO_DIR / "duration_uuid.avro"
    if not src.exists():
        pytest.skip("arrow-testing corpus missing")
    dst = tmp_path / "copy.avro"
    sluice.run("convert", src, dst)
    want_schema, _, want = fastavro_rows(src)
    got_schema, _, got = fastavro_rows(dst)
    field = lambda schema: next(f["type"] for f in schema["fields"] if f["name"] == "uuid_field")
    assert field(got_schema) == field(want_schema)
    assert [r["uuid_field"] for r in got] == [r["uuid_field"] for r in want]
    assert all(isinstance(r["uuid_field"], uuid.UUID) for r in got)
    # a large string keeps both the uuid and its width
    back = tmp_path / "back.arrow"
    sluice.run("convert", src, back)
    table = feather.read_table(back)
    table = table.cast(pa.schema([f.with_type(pa.large_string()) if f.name == "uuid_field" else f
                                  for f in table.schema], table.schema.metadata))
    big, big_avro, again = tmp_path / "big.arrow", tmp_path / "big.avro", tmp_path / "again.arrow"
    write_arrow(big, table)
    sluice.run("convert", big, big_avro)
    assert field(fastavro_rows(big_avro)[0])["logicalType"] == "uuid"
    sluice.run("convert", big_avro, again)
    assert feather.read_table(again).schema.field("uuid_field").type == pa.large_string()


def test_uuid_string_that_is_no_uuid_is_an_error(tmp_path, sluice):
    """A value of such a column that is not a UUID is an error naming column
    and row: fastavro's writer writes it, and its reader then cannot read
    the file."""
    schema = {"type": "record", "name": "R", "fields": [
        {"name": "u", "type": {"type": "string", "logicalType": "uuid"}}]}
    buf = io.BytesIO()
    fastavro.writer(buf, schema, [{"u": "not-a-uuid"}])
    buf.seek(0)
    with pytest.raises(ValueError):
        list(fastavro.reader(buf))
    table = pa.table({"u": pa.array([str(uuid.UUID(int=7)), "not-a-uuid"])}).replace_schema_metadata(
        {"avro.schema": json.dumps(schema)})
    src, dst = tmp_path / "in.arrow", tmp_path / "out.avro"
    write_arrow(src, table)
    err = sluice.expect_error("convert", src, dst).stderr.decode()
    assert "column 'u' row 1: value is not a UUID" in err, err
    assert not dst.exists()
