"""The Parquet writer: tables written by pyarrow to Arrow IPC, converted with
`sluice convert in.arrow out.parquet -W ...`, then read back by pyarrow
(values and exact types, thanks to ARROW:schema), DuckDB and polars. DuckDB
and polars results are compared with what they read from the same table
written by pyarrow.parquet, so no expected value is hard-coded. Statistics
are compared with the ones pyarrow computes for the same row groups."""
import datetime
import decimal
import functools
import math
import os
import random
import subprocess
from pathlib import Path

import duckdb
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from conftest import MEASURES_RSS, check_clean_failure, corpora_dir

CODECS = ["snappy", "zstd", "gzip", "lz4", "lz4_raw", "brotli", "none"]


def write_arrow(path: Path, table: pa.Table, max_chunksize=None) -> None:
    with pa.OSFile(str(path), "wb") as sink:
        with pa.ipc.new_file(sink, table.schema) as w:
            w.write_table(table, max_chunksize=max_chunksize)


def convert(sluice, tmp_path: Path, table: pa.Table, *options, name="out", max_chunksize=None):
    src = tmp_path / f"{name}.arrow"
    dst = tmp_path / f"{name}.parquet"
    write_arrow(src, table, max_chunksize)
    args = ["convert", src, dst]
    for o in options:
        args += ["-W", o]
    sluice.run(*args)
    return dst


def reference(tmp_path: Path, table: pa.Table, name="ref", **kwargs) -> Path:
    dst = tmp_path / f"{name}.parquet"
    pq.write_table(table, dst, **kwargs)
    return dst


def zoo_table(n=7, seed=1) -> pa.Table:
    """Every Arrow type with a Parquet mapping, nullable and not."""
    rnd = random.Random(seed)

    def maybe(vals, nulls=True):
        return [None if nulls and i % 3 == 1 else v for i, v in enumerate(vals)]

    ints = [rnd.randint(-100, 100) for _ in range(n)]
    cols = {}
    cols["b"] = pa.array(maybe([i % 2 == 0 for i in range(n)]), pa.bool_())
    cols["i8"] = pa.array(maybe([-128, 127] + ints[2:]), pa.int8())
    cols["u8"] = pa.array(maybe([255, 0] + [abs(x) for x in ints[2:]]), pa.uint8())
    cols["i16"] = pa.array(maybe([-32768, 32767] + ints[2:]), pa.int16())
    cols["u16"] = pa.array(maybe([65535, 0] + [abs(x) for x in ints[2:]]), pa.uint16())
    cols["i32"] = pa.array(maybe([-2**31, 2**31 - 1] + ints[2:]), pa.int32())
    cols["u32"] = pa.array(maybe([2**32 - 1, 0, 2**31] + [abs(x) for x in ints[3:]]), pa.uint32())
    cols["i64"] = pa.array(maybe([-2**63, 2**63 - 1] + ints[2:]), pa.int64())
    cols["u64"] = pa.array(maybe([2**64 - 1, 0, 2**63 + 5] + [abs(x) for x in ints[3:]]), pa.uint64())
    cols["f16"] = pa.array(maybe([1.5, -2.0, 0.0] + [float(x) for x in ints[3:]]), pa.float16())
    cols["f32"] = pa.array(maybe([1.5, -0.0, float("inf")] + [x / 4 for x in ints[3:]]), pa.float32())
    cols["f64"] = pa.array(maybe([math.pi, -1e300, float("-inf")] + [x / 8 for x in ints[3:]]), pa.float64())
    words = ["", "a", "héllo", "zz", "b\x00c", "日本", "Zebra"]
    cols["s"] = pa.array(maybe([words[i % len(words)] for i in range(n)]), pa.string())
    cols["ls"] = pa.array(maybe([words[(i + 2) % len(words)] for i in range(n)]), pa.large_string())
    cols["bin"] = pa.array(maybe([bytes([i, 255 - i]) * (i % 3) for i in range(n)]), pa.binary())
    cols["lbin"] = pa.array(maybe([b"\xff" * i for i in range(n)]), pa.large_binary())
    cols["fsb"] = pa.array(maybe([bytes([i, 0x80, 255 - i]) for i in range(n)]), pa.binary(3))
    cols["dec"] = pa.array(maybe([decimal.Decimal(x) / 100 for x in ints]), pa.decimal128(5, 2))
    cols["dec38"] = pa.array(maybe([decimal.Decimal(10**37 * (1 if x > 0 else -1) + x) for x in ints]),
                             pa.decimal128(38, 0))
    cols["dec256"] = pa.array(maybe([decimal.Decimal(10**45 + x) for x in ints]), pa.decimal256(50, 0))
    cols["d32"] = pa.array(maybe([datetime.date(1970, 1, 1) + datetime.timedelta(days=x * 300) for x in ints]),
                           pa.date32())
    cols["d64"] = pa.array(maybe([86400000 * x for x in ints]), pa.date64())
    cols["t32s"] = pa.array(maybe([abs(x) * 800 for x in ints]), pa.time32("s"))
    cols["t32ms"] = pa.array(maybe([abs(x) * 800000 for x in ints]), pa.time32("ms"))
    cols["t64us"] = pa.array(maybe([abs(x) * 8 * 10**8 for x in ints]), pa.time64("us"))
    cols["t64ns"] = pa.array(maybe([abs(x) * 8 * 10**11 + 7 for x in ints]), pa.time64("ns"))
    for unit in ["s", "ms", "us", "ns"]:
        scale = {"s": 10**6, "ms": 10**9, "us": 10**12, "ns": 10**15}[unit]
        cols[f"ts_{unit}"] = pa.array(maybe([x * scale for x in ints]), pa.timestamp(unit))
        cols[f"tsz_{unit}"] = pa.array(maybe([x * scale + 1 for x in ints]), pa.timestamp(unit, tz="UTC"))
        cols[f"dur_{unit}"] = pa.array(maybe([x * 1000 for x in ints]), pa.duration(unit))
    cols["tz_ny"] = pa.array(maybe([x * 10**12 for x in ints]), pa.timestamp("us", tz="America/New_York"))
    cols["dict"] = pa.array(maybe([words[i % 3] for i in range(n)])).dictionary_encode()
    cols["null"] = pa.nulls(n)
    cols["st"] = pa.array(maybe([{"x": i, "y": words[i % len(words)]} for i in range(n)]),
                          pa.struct([("x", pa.int32()), ("y", pa.string())]))
    cols["li"] = pa.array(maybe([list(range(i % 4)) + ([None] if i % 5 == 0 else []) for i in range(n)]),
                          pa.list_(pa.int64()))
    cols["lls"] = pa.array(maybe([[words[j % 7] for j in range(i % 3)] for i in range(n)]),
                           pa.large_list(pa.string()))
    cols["fsl"] = pa.array(maybe([[i, None if i % 4 == 0 else -i] for i in range(n)]),
                           pa.list_(pa.int32(), 2))
    ls_type = pa.list_(pa.struct([("x", pa.int32()), ("y", pa.list_(pa.string()))]))
    cols["lst"] = pa.array(maybe([[{"x": j, "y": [words[k % 7] for k in range(j)] if j % 2 else None}
                                   for j in range(i % 4)] for i in range(n)]), ls_type)
    cols["map"] = pa.array(maybe([[(words[j % 7] + str(j), None if j == 2 else j) for j in range(i % 4)]
                                  for i in range(n)]), pa.map_(pa.string(), pa.int32()))
    fields = [pa.field(k, v.type) for k, v in cols.items()]
    # Non-nullable twins of a few columns.
    for k in ["i32", "i64", "f64", "s", "u64", "dec", "tsz_us", "st", "li", "map"]:
        arr = cols[k].fill_null(cols[k][0]) if k not in ("st", "li", "map") else pa.array(
            [v if v is not None else cols[k][0].as_py() for v in cols[k].to_pylist()], cols[k].type)
        cols[k + "_nn"] = arr
        fields.append(pa.field(k + "_nn", arr.type, nullable=False))
    return pa.table(list(cols.values()), schema=pa.schema(fields))


def assert_same_table(got: pa.Table, want: pa.Table):
    assert got.schema.names == want.schema.names
    for name in want.schema.names:
        g, w = got.column(name), want.column(name)
        assert g.type == w.type, f"{name}: {g.type} != {w.type}"
        assert g.to_pylist() == w.to_pylist(), name


def peer_rows(path: Path, peer: str):
    if peer == "duckdb":
        return duckdb.sql(f"SELECT * FROM read_parquet('{path}')").fetchall()
    return pl.read_parquet(path).rows()


def assert_peer_reads_like_pyarrow_file(peer, ours: Path, ref: Path):
    try:
        want = peer_rows(ref, peer)
    except Exception as e:  # the peer cannot read this type at all
        with pytest.raises(Exception):
            peer_rows(ours, peer)
        pytest.skip(f"{peer} cannot read pyarrow's file either: {e}")
    got = peer_rows(ours, peer)
    assert got == want


def assert_reads_back(tmp_path, out: Path, table: pa.Table):
    """Types as pyarrow restores them from its own file of the table (date64
    comes back as date32 there too); values as written."""
    ref = reference(tmp_path, table, name="ref_types")
    got, want = pq.read_table(out), pq.read_table(ref)
    assert_same_table(got, want)
    for name in table.schema.names:
        assert got.column(name).to_pylist() == table.column(name).to_pylist(), name


def test_type_zoo_pyarrow_round_trip(sluice, tmp_path):
    table = zoo_table()
    out = convert(sluice, tmp_path, table)
    ref = reference(tmp_path, table)
    assert_reads_back(tmp_path, out, table)
    # The Parquet schema is the one Arrow C++ derives from the same table.
    assert pq.ParquetFile(out).schema == pq.ParquetFile(ref).schema


def test_uuid_and_json_extensions_get_parquet_annotations(sluice, tmp_path):
    """arrow.uuid and arrow.json columns are written with Parquet's UUID and
    JSON logical types, as Arrow C++ writes them, so DuckDB reads UUID and
    JSON columns (BLOB and VARCHAR before) and pyarrow the extension types."""
    import uuid
    rng = random.Random(3)
    table = pa.table({
        "u": pa.array([uuid.UUID(int=rng.getrandbits(128)).bytes if i % 4 else None
                       for i in range(50)], pa.uuid()),
        "j": pa.array(['{"k": %d}' % i if i % 5 else None for i in range(50)], pa.json_()),
        "s": pa.array([str(i) for i in range(50)]),
    })
    out = convert(sluice, tmp_path, table)
    ref = reference(tmp_path, table)
    assert pq.ParquetFile(out).schema == pq.ParquetFile(ref).schema
    assert pq.read_table(out).equals(table)
    query = "select typeof(u), typeof(j), typeof(s) from '%s' limit 1"
    assert duckdb.sql(query % out).fetchall() == duckdb.sql(query % ref).fetchall()
    assert duckdb.sql(f"select u::varchar, j from '{out}' order by s").fetchall() == \
        duckdb.sql(f"select u::varchar, j from '{ref}' order by s").fetchall()


ZOO_COLUMNS = list(zoo_table().schema.names)


@pytest.mark.parametrize("peer", ["duckdb", "polars"])
@pytest.mark.parametrize("column", ZOO_COLUMNS)
def test_type_zoo_peers(sluice, tmp_path, peer, column):
    table = zoo_table().select([column])
    out = convert(sluice, tmp_path, table)
    ref = reference(tmp_path, table)
    assert_peer_reads_like_pyarrow_file(peer, out, ref)


def stats_of(path: Path):
    md = pq.ParquetFile(path).metadata
    res = []
    for r in range(md.num_row_groups):
        rg = md.row_group(r)
        assert rg.num_rows > 0
        for c in range(rg.num_columns):
            col = rg.column(c)
            st = col.statistics
            if st is None:
                res.append((r, col.path_in_schema, None))
                continue
            mm = (st.min, st.max) if st.has_min_max else None
            res.append((r, col.path_in_schema, rg.num_rows, st.null_count, mm))
    return res


def test_statistics_match_pyarrow(sluice, tmp_path):
    table = zoo_table(n=40, seed=7)
    flat = [f.name for f in table.schema if not pa.types.is_nested(f.type)]
    table = table.select(flat)
    out = convert(sluice, tmp_path, table, "row_group_size=16")
    ref = reference(tmp_path, table, row_group_size=16)
    got, want = stats_of(out), stats_of(ref)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g == w, f"{g} != {w}"


def test_nested_statistics_null_counts(sluice, tmp_path):
    table = zoo_table(n=30, seed=3)
    nested = [f.name for f in table.schema if pa.types.is_nested(f.type)]
    table = table.select(nested)
    out = convert(sluice, tmp_path, table, "row_group_size=10")
    ref = reference(tmp_path, table, row_group_size=10)
    assert stats_of(out) == stats_of(ref)


def test_sort_orders(sluice, tmp_path):
    """Unsigned columns compare unsigned; strings as unsigned bytes."""
    table = pa.table({
        "u64": pa.array([1, 2**63 + 1, 2**64 - 1, 5], pa.uint64()),
        "u32": pa.array([1, 2**31 + 1, 2**32 - 1, 5], pa.uint32()),
        "u8": pa.array([1, 200, 255, 5], pa.uint8()),
        "s": pa.array(["a", "\u00e9", "z", "B"]),
        "bin": pa.array([b"\x01", b"\xff", b"\x80\x00", b""]),
        "dec": pa.array([decimal.Decimal("-1.5"), decimal.Decimal("2.25"),
                         decimal.Decimal("-300.01"), None], pa.decimal128(9, 2)),
        "f": pa.array([0.0, -0.0, float("nan"), 3.0]),
    })
    out = convert(sluice, tmp_path, table)
    st = pq.ParquetFile(out).metadata.row_group(0)
    assert st.column(0).statistics.min == 1 and st.column(0).statistics.max == 2**64 - 1
    assert st.column(1).statistics.max == 2**32 - 1
    assert st.column(2).statistics.max == 255
    assert st.column(3).statistics.max == "\u00e9"
    assert st.column(4).statistics.max == b"\xff" and st.column(4).statistics.min == b""
    assert stats_of(out) == stats_of(reference(tmp_path, table))


MIXED_N = 5000


def mixed_table(n=MIXED_N, seed=5) -> pa.Table:
    rnd = random.Random(seed)
    return pa.table({
        "id": pa.array(range(n), pa.int64()),
        "cat": pa.array([None if i % 11 == 0 else f"cat{rnd.randint(0, 20)}" for i in range(n)]),
        "txt": pa.array([f"row {i} {rnd.random()}" for i in range(n)]),
        "x": pa.array([None if i % 7 == 0 else rnd.random() for i in range(n)]),
        "flag": pa.array([rnd.random() < 0.3 for i in range(n)]),
        "l": pa.array([None if i % 13 == 0 else [rnd.randint(0, 5) for _ in range(i % 5)]
                       for i in range(n)], pa.list_(pa.int16())),
        "m": pa.array([[("k", i)] if i % 2 else [] for i in range(n)], pa.map_(pa.string(), pa.int64())),
    })


@pytest.mark.parametrize("version", ["1", "2"])
@pytest.mark.parametrize("codec", CODECS)
def test_codecs_and_page_versions(sluice, tmp_path, codec, version):
    table = mixed_table()
    out = convert(sluice, tmp_path, table, f"compression={codec}", f"data_page_version={version}",
                  "page_size=4096", "row_group_size=2000")
    md = pq.ParquetFile(out).metadata
    peer_codec = {"lz4_raw": "lz4"}.get(codec, codec)
    want_codec = pq.ParquetFile(reference(tmp_path, table.slice(0, 10), name="codec",
                                          compression=peer_codec)).metadata.row_group(0).column(0)
    assert md.row_group(0).column(0).compression == want_codec.compression
    assert md.num_row_groups == 3
    assert_same_table(pq.read_table(out), table)
    ref = reference(tmp_path, table, compression="snappy")
    for peer in ["duckdb", "polars"]:
        assert peer_rows(out, peer) == peer_rows(ref, peer), peer


def test_page_size_takes_size_suffixes(sluice, tmp_path):
    """page_size=4k is page_size=4096: the same pages."""
    table = mixed_table()
    pages = []
    for spelling in ("4k", "4096"):
        out = convert(sluice, tmp_path, table, f"page_size={spelling}", name=f"p{spelling}")
        md = pq.ParquetFile(out).metadata
        pages.append([md.row_group(0).column(c).total_compressed_size
                      for c in range(md.num_columns)])
    assert pages[0] == pages[1]


def test_default_codec_is_snappy(sluice, tmp_path):
    out = convert(sluice, tmp_path, mixed_table(100))
    assert pq.ParquetFile(out).metadata.row_group(0).column(0).compression == "SNAPPY"


def test_compression_level(sluice, tmp_path):
    table = mixed_table()
    out = convert(sluice, tmp_path, table, "compression=zstd", "compression_level=19")
    assert_same_table(pq.read_table(out), table)


@pytest.mark.parametrize("codec", CODECS)
def test_compression_level_for_a_codec_without_levels_is_refused(sluice, tmp_path, codec):
    """A level with snappy or none was ignored; pyarrow refuses it ("Codec
    'snappy' doesn't support setting a compression level"). Where pyarrow
    takes a level (zstd, gzip, brotli, lz4: its high-compression coder from
    level 3) sluice takes it too, and the file reads back."""
    table = pa.table({"x": [1, 2, 3]})
    try:
        reference(tmp_path, table, compression=codec, compression_level=3)
        pyarrow_takes = True
    except (pa.ArrowInvalid, ValueError):
        pyarrow_takes = False
    src = tmp_path / "t.arrow"
    write_arrow(src, table)
    out = tmp_path / "o.parquet"
    args = ["convert", src, out, "-W", f"compression={codec}", "-W", "compression_level=3"]
    if pyarrow_takes:
        sluice.run(*args)
        assert_same_table(pq.read_table(out), table)
        return
    err = sluice.expect_error(*args).stderr.decode()
    name = {"none": "UNCOMPRESSED", "lz4": "LZ4_RAW"}.get(codec, codec.upper())
    assert f"codec {name} has no compression levels" in err, err
    assert not out.exists()


def test_lz4_levels_compress_as_pyarrow_does(sluice, tmp_path):
    """lz4 levels from 3 use LZ4's high-compression coder, as Arrow C++
    does: the file is smaller than at the default and readable by pyarrow."""
    table = pa.table({"s": [f"value {i % 500} of a repetitive column" for i in range(20000)]})
    src = tmp_path / "t.arrow"
    write_arrow(src, table)
    sizes = {}
    for level in (None, 9):
        out = tmp_path / f"o{level}.parquet"
        args = ["convert", src, out, "-W", "compression=lz4", "-W", "use_dictionary=false"]
        if level is not None:
            args += ["-W", f"compression_level={level}"]
        sluice.run(*args)
        assert_same_table(pq.read_table(out), table)
        sizes[level] = out.stat().st_size
    assert sizes[9] < sizes[None]
    # Past LZ4's 12: as 12, as pyarrow takes it.
    pq.write_table(table, tmp_path / "pa.parquet", compression="lz4", compression_level=13)
    sluice.run("convert", src, tmp_path / "x.parquet", "-W", "compression=lz4",
               "-W", "compression_level=13")
    assert_same_table(pq.read_table(tmp_path / "x.parquet"), table)


def test_many_row_groups_and_pages_from_sliced_batches(sluice, tmp_path):
    table = mixed_table(3000)
    out = convert(sluice, tmp_path, table, "row_group_size=333", "page_size=100",
                  max_chunksize=97)
    pf = pq.ParquetFile(out)
    assert pf.metadata.num_row_groups == math.ceil(3000 / 333)
    assert [pf.metadata.row_group(i).num_rows for i in range(pf.metadata.num_row_groups)] == \
        [333] * 9 + [3]
    assert_same_table(pq.read_table(out), table)
    ref = reference(tmp_path, table)
    for peer in ["duckdb", "polars"]:
        assert peer_rows(out, peer) == peer_rows(ref, peer), peer
    # Small pages: pyarrow's page reader sees many of them.
    col = pf.metadata.row_group(0).column(2)
    assert col.total_uncompressed_size > 3000


@pytest.mark.parametrize("dictionary", ["true", "false"])
def test_dictionary_option(sluice, tmp_path, dictionary):
    table = mixed_table(1000)
    out = convert(sluice, tmp_path, table, f"dictionary={dictionary}")
    enc = pq.ParquetFile(out).metadata.row_group(0).column(1).encodings
    assert ("RLE_DICTIONARY" in enc) == (dictionary == "true")
    assert pq.ParquetFile(out).metadata.row_group(0).column(1).has_dictionary_page == \
        (dictionary == "true")
    assert_same_table(pq.read_table(out), table)


def test_dictionary_falls_back_to_plain_when_large(sluice, tmp_path):
    n = 40000
    table = pa.table({"s": pa.array([f"{i:08d}" * 4 for i in range(n)]),
                      "few": pa.array([f"v{i % 3}" for i in range(n)])})
    out = convert(sluice, tmp_path, table)
    rg = pq.ParquetFile(out).metadata.row_group(0)
    assert "RLE_DICTIONARY" not in rg.column(0).encodings
    assert "RLE_DICTIONARY" in rg.column(1).encodings
    assert_same_table(pq.read_table(out), table)
    # Past the limit at its third value, the chunk's first two rows are
    # dictionary-encoded and the rest PLAIN (as Arrow C++ falls back)
    out2 = convert(sluice, tmp_path, table, "dictionary_page_size_limit=10", name="small")
    stats = duckdb.sql(f"select encoding_stats from parquet_metadata('{out2}') "
                       "where path_in_schema = 'few'").fetchall()[0][0]
    assert [(e["encoding"], e["count"]) for e in stats] == \
        [("PLAIN", 1), ("PLAIN", 1), ("RLE_DICTIONARY", 1)]
    assert_same_table(pq.read_table(out2), table)


FALLBACK_N = 100_000


def fallback_table(n=FALLBACK_N) -> pa.Table:
    """Columns that begin with few distinct values and end with many: a
    dictionary fills up part-way through the chunk. Nullable strings, a
    list of strings (a page ends where a row does) and int64."""
    few = n * 9 // 10
    s = [None if i % 11 == 0 else f"category_{i % 10}" for i in range(few)] + \
        [f"unique_value_{i:012d}" for i in range(n - few)]
    return pa.table({
        "i": pa.array(range(n), pa.int64()),
        "s": pa.array(s),
        "l": pa.array([None if v is None else [v, "x", None] if i % 3 else [] for i, v in enumerate(s)],
                      pa.list_(pa.string())),
        "n": pa.array([i % 7 if i < few else i * 1000 for i in range(n)], pa.int64()),
    })


@pytest.mark.parametrize("version", ["1", "2"])
def test_dictionary_fallback_keeps_the_pages_written(sluice, tmp_path, version):
    """Past dictionary_page_size_limit, the pages so far stay dictionary-
    encoded (their dictionary the one collected until then) and only the
    rest are PLAIN, as Arrow C++ writes them; the whole chunk was PLAIN (4.5x
    pyarrow's file). The chunk lists both encodings in encoding_stats;
    pyarrow, DuckDB, polars and sluice read the same values; statistics and
    Bloom filters cover the PLAIN part; filters on a value only there (which
    the dictionary lacks) find it in sluice, DuckDB and pyarrow."""
    import subprocess
    table = fallback_table()
    opts = [f"data_page_version={version}", "dictionary_page_size_limit=64k", "page_size=16k",
            "compression=none", "bloom_filters=s"]
    out = convert(sluice, tmp_path, table, *opts)
    ref = reference(tmp_path, table, data_page_version="1.0" if version == "1" else "2.0",
                    dictionary_pagesize_limit=64 << 10, data_page_size=16 << 10,
                    compression="none")
    md = pq.ParquetFile(out).metadata.row_group(0)
    for c in range(md.num_columns):
        assert md.column(c).encodings == pq.ParquetFile(ref).metadata.row_group(0).column(c).encodings
    page = "DATA_PAGE_V2" if version == "2" else "DATA_PAGE"
    rows = duckdb.sql(f"select path_in_schema, encoding_stats from parquet_metadata('{out}') "
                      "order by column_id").fetchall()
    for name, st in rows:
        if name == "i":
            continue
        kinds = [(e["page_type"], e["encoding"]) for e in st]
        assert kinds == [("DICTIONARY_PAGE", "PLAIN"), (page, "PLAIN"), (page, "RLE_DICTIONARY")], \
            (name, st)
    # about pyarrow's size, not 4.5 times it
    assert out.stat().st_size < 1.5 * ref.stat().st_size, (out.stat().st_size, ref.stat().st_size)
    assert_same_table(pq.read_table(out), table)
    assert pl.read_parquet(out).to_arrow().equals(pl.read_parquet(ref).to_arrow())
    q = "select * from read_parquet('{}') order by i"
    assert duckdb.sql(q.format(out)).fetchall() == duckdb.sql(q.format(ref)).fetchall()
    got = pa.ipc.open_stream(sluice.run("cat", out, "-t", "arrows").stdout).read_all()
    assert_same_table(got, table)
    got = pa.ipc.open_stream(sluice.run("-O", "dictionary=true", "cat", out, "-t", "arrows",
                                        "-c", "s").stdout).read_all()
    assert got.column("s").to_pylist() == table.column("s").to_pylist()
    assert stats_of(out) == stats_of(ref)
    # a value only in the PLAIN pages, one only in the dictionary-encoded ones
    for v in ("unique_value_000000009999", "category_3", "absent"):
        want = [i for i, x in enumerate(table.column("s").to_pylist()) if x == v]
        proc = subprocess.run([sluice.binary, "cat", out, "--filter", f"s={v}", "-c", "i", "-t", "csv"],
                              capture_output=True, timeout=60)
        assert proc.returncode == 0, proc.stderr.decode()
        assert [int(x) for x in proc.stdout.decode().split()[1:]] == want, v
        assert [r[0] for r in duckdb.execute(f"select i from read_parquet('{out}') where s = ? "
                                             "order by i", [v]).fetchall()] == want, v
        assert pq.read_table(out, filters=[("s", "=", v)]).column("i").to_pylist() == want, v


def dictionary_index_widths(path: Path, col: int) -> list:
    """The bit width byte before the indices of each RLE_DICTIONARY data page
    of column `col` in row group 0 (of an uncompressed file), in page order."""
    from parquet_encoding_vectors import read_struct
    pf = pq.ParquetFile(path)
    cc, leaf = pf.metadata.row_group(0).column(col), pf.schema.column(col)
    buf = path.read_bytes()
    pos = cc.dictionary_page_offset if cc.has_dictionary_page else cc.data_page_offset
    end, widths = pos + cc.total_compressed_size, []
    while pos < end:
        h, pos = read_struct(buf, pos)
        body, pos = buf[pos:pos + h[3]], pos + h[3]
        if h[1] == 0 and h[5][2] == 8:  # DATA_PAGE: levels, each after its 4-byte length
            k = 0
            for max_level in (leaf.max_repetition_level, leaf.max_definition_level):
                if max_level:
                    k += 4 + int.from_bytes(body[k:k + 4], "little")
            widths.append(body[k])
        elif h[1] == 3 and h[8][4] == 8:  # DATA_PAGE_V2: levels' lengths in the header
            widths.append(body[h[8].get(5, 0) + h[8].get(6, 0)])
    return widths


@functools.lru_cache(maxsize=1)
def growing_dictionary_table() -> pa.Table:
    """900k rows of 10 categories then 100k distinct strings (the dictionary
    passes 1 MiB among them), nullable and in lists, and int32s whose
    dictionary grows through the chunk (250k values, 4 rows each)."""
    n, few = 1_000_000, 900_000
    s = [f"category_{i % 10}" for i in range(few)] + \
        [f"unique_value_{i:012d}" for i in range(n - few)]
    return pa.table({
        "i": pa.array(range(n), pa.int64()),
        "s": pa.array(s),
        "ns": pa.array([None if i % 11 == 0 else v for i, v in enumerate(s)]),
        "l": pa.array([[v, "x", None] if i % 3 else [] for i, v in enumerate(s)],
                      pa.list_(pa.string())),
        "g": pa.array([i // 4 for i in range(n)], pa.int32()),
    })


@pytest.mark.parametrize("version", ["1", "2"])
def test_dictionary_index_width_is_the_pages(sluice, tmp_path, version):
    """Each RLE_DICTIONARY page's indices take the bits of its own largest
    index, as Arrow C++ sizes them from the dictionary so far: the pages of
    10 categories take 4 bits, not the 16 of the 36000 values the dictionary
    ends with (which made the file 1.4x pyarrow's; now within 3%, column by
    column); a dictionary that grows through the chunk widens its pages one
    after another. pyarrow, DuckDB, polars and sluice read the same values."""
    table = growing_dictionary_table()
    out = convert(sluice, tmp_path, table, f"data_page_version={version}", "compression=none")
    ref = reference(tmp_path, table, data_page_version="1.0" if version == "1" else "2.0",
                    compression="none")
    got_md, ref_md = pq.ParquetFile(out).metadata, pq.ParquetFile(ref).metadata
    assert got_md.num_row_groups == ref_md.num_row_groups == 1
    for c in range(1, table.num_columns):  # "i": pyarrow tries a dictionary, sluice not
        got, want = got_md.row_group(0).column(c), ref_md.row_group(0).column(c)
        assert "RLE_DICTIONARY" in got.encodings
        assert got.total_compressed_size < 1.03 * want.total_compressed_size, \
            (got.path_in_schema, got.total_compressed_size, want.total_compressed_size)
    for c in (1, 2, 3):  # the categories' pages: 4 bits, as pyarrow's
        widths = dictionary_index_widths(out, c)
        assert widths[0] == dictionary_index_widths(ref, c)[0] == 4, widths
        assert max(widths) == 16, widths  # the dictionary's 36000 values
    widths, ref_widths = dictionary_index_widths(out, 4), dictionary_index_widths(ref, 4)
    assert len(widths) > 5 and widths == sorted(widths) and widths[0] < 14, widths
    assert widths[-1] == ref_widths[-1] == 18  # 250k values
    assert pq.read_table(out).equals(table)
    assert pl.read_parquet(out).to_arrow().equals(pl.read_parquet(ref).to_arrow())
    q = "select * from read_parquet('{}') order by i"
    assert duckdb.sql(q.format(out)).to_arrow_table().equals(
        duckdb.sql(q.format(ref)).to_arrow_table())
    got = pa.ipc.open_stream(sluice.run("cat", out, "-t", "arrows").stdout).read_all()
    assert got.equals(table)


@pytest.mark.parametrize("version", ["1", "2"])
def test_encoding_stats_say_which_chunks_are_all_dictionary(sluice, tmp_path, version):
    """encoding_stats (as pyarrow writes them) tell readers which chunks may
    be pruned by their dictionary: DuckDB lists them as they are."""
    n = 40000
    table = pa.table({"s": pa.array([f"{i:08d}" * 4 for i in range(n)]),
                      "few": pa.array([f"v{i % 3}" for i in range(n)])})
    out = convert(sluice, tmp_path, table, f"data_page_version={version},page_size=16k")
    rows = duckdb.sql(f"select path_in_schema, encoding_stats from parquet_metadata('{out}') "
                      "order by column_id").fetchall()
    page = "DATA_PAGE_V2" if version == "2" else "DATA_PAGE"
    plain, few = rows[0][1], rows[1][1]
    assert [(e["page_type"], e["encoding"]) for e in plain] == [(page, "PLAIN")]
    assert plain[0]["count"] > 1  # many pages, one entry
    assert [(e["page_type"], e["encoding"]) for e in few] == \
        [("DICTIONARY_PAGE", "PLAIN"), (page, "RLE_DICTIONARY")]
    assert_same_table(pq.read_table(out), table)
    assert pl.read_parquet(out).to_arrow().column("few").to_pylist() == \
        table.column("few").to_pylist()


def test_dictionary_columns_keep_their_dictionary(sluice, tmp_path):
    """A dictionary column is written with its own dictionary first, as
    pyarrow writes it: order and unused values kept (an ordered pandas
    categorical compares as before), also for numbers and a dictionary
    holding a null; a later batch's other dictionary adds its new values."""
    cat = pa.DictionaryArray.from_arrays(pa.array([1, 0, 1, None, 2], pa.int8()),
                                         pa.array(["y", "x", "w", "unused"]), ordered=True)
    ints = pa.DictionaryArray.from_arrays(pa.array([0, 1, None, 1, 0], pa.int32()),
                                          pa.array([5, 9, 3]))
    table = pa.table({"c": cat, "n": ints})
    out = convert(sluice, tmp_path, table, "row_group_size=3")
    want = tmp_path / "pyarrow.parquet"
    pq.write_table(table, want, row_group_size=3)
    got, ref = pq.read_table(out), pq.read_table(want)
    assert got.schema == ref.schema
    assert [c.dictionary.to_pylist() for c in got.column("c").chunks] == \
        [c.dictionary.to_pylist() for c in ref.column("c").chunks]
    for name in ("c", "n"):  # (pyarrow reads a number dictionary back decoded)
        assert got.column(name).to_pylist() == table.column(name).to_pylist(), name
    assert got.to_pandas()["c"].min() == table.to_pandas()["c"].min() == "y"
    # A null in the dictionary (pyarrow cannot write one) is a null value.
    nulls = pa.table({"n": pa.DictionaryArray.from_arrays(pa.array([0, 1, 2, 1], pa.int32()),
                                                          pa.array([5, None, 3]))})
    out = convert(sluice, tmp_path, nulls, name="nulls")
    assert pq.read_table(out).column("n").to_pylist() == [5, None, 3, None]
    # Batches with their own dictionaries in one row group: the first's, then
    # the values the others add.
    other = pa.DictionaryArray.from_arrays(pa.array([0, 1], pa.int8()), pa.array(["q", "y"]),
                                           ordered=True)
    two = pa.Table.from_batches([pa.record_batch({"c": cat}), pa.record_batch({"c": other})])
    src, out = tmp_path / "two.arrows", tmp_path / "two.parquet"
    with pa.ipc.new_stream(src, two.schema) as w:  # (a file cannot replace a dictionary)
        w.write_table(two)
    sluice.run("convert", src, out)
    back = pq.read_table(out)
    assert back.column("c").chunk(0).dictionary.to_pylist() == ["y", "x", "w", "unused", "q"]
    assert back.column("c").to_pylist() == two.column("c").to_pylist()
    # .pq names a Parquet file for writing too
    sluice.run("convert", out, tmp_path / "again.pq")
    assert pq.read_table(tmp_path / "again.pq").equals(back)


@pytest.mark.parametrize("index", [pa.int8(), pa.uint8(), pa.int16()])
def test_dictionaries_outgrowing_their_index_type_widen_it(sluice, tmp_path, index):
    """An IPC stream whose batches replace an int8 column's dictionary (100
    values each) makes a row group dictionary of 200: the stored Arrow
    schema's index type is widened to hold it (it kept int8, so pyarrow,
    polars and sluice refused the file: "Integer value 128 not in range",
    exit 0 on the write). A dictionary that fits keeps its index type."""
    size = {pa.int8(): 100, pa.uint8(): 200, pa.int16(): 20_000}[index]
    sch = pa.schema([("d", pa.dictionary(index, pa.string()))])
    src, out = tmp_path / "d.arrows", tmp_path / "d.parquet"
    with pa.ipc.new_stream(src, sch) as w:
        for b in range(2):
            w.write_batch(pa.record_batch([pa.DictionaryArray.from_arrays(
                pa.array(range(size), index), pa.array([f"v{b}_{i}" for i in range(size)]))],
                schema=sch))
    sluice.run("convert", src, out)
    want = pa.ipc.open_stream(src).read_all().column("d").to_pylist()
    got = pq.read_table(out)
    assert got.column("d").to_pylist() == want
    assert got.schema.field("d").type == pa.dictionary(pa.int16() if size < 20_000 else pa.int32(),
                                                        pa.string())
    assert pl.read_parquet(out)["d"].cast(pl.String).to_list() == want
    proc = sluice.run("stats", out)
    assert b"v1_" in proc.stdout
    one = tmp_path / "one.parquet"  # (one batch: the type as it was)
    sluice.run("convert", src, one, "-n", str(size))
    assert pq.read_table(one).schema.field("d").type == sch.field("d").type


def test_dictionary_column_statistics_cover_its_rows_only(sluice, tmp_path):
    """A dictionary column's min and max are its row group's values, not its
    dictionary's (whose unused values would widen them, yet read as exact):
    as pyarrow computes them, also for a sliced table over a sliced
    dictionary. DuckDB answers min() and max() from them."""
    cat = pa.DictionaryArray.from_arrays(pa.array([1, 1, None, 0, 3, 3], pa.int32()),
                                         pa.array(["m", "a", "z", "q"]))
    ints = pa.DictionaryArray.from_arrays(pa.array([0, 1, 2, 1, 0, 2], pa.int8()),
                                          pa.array([50, 10, 20, 30]).slice(1, 3))
    for name, table in (("whole", pa.table({"c": cat, "n": ints})),
                        ("sliced", pa.table({"c": cat, "n": ints}).slice(2, 3))):
        out = convert(sluice, tmp_path, table, "row_group_size=2", name=name)
        ref = reference(tmp_path, table, name=name + "_ref", row_group_size=2)
        assert stats_of(out) == stats_of(ref), name
        query = "select min(c), max(c), min(n), max(n) from '%s'"
        assert duckdb.sql(query % out).fetchall() == duckdb.sql(query % ref).fetchall(), name


def test_statistics_off(sluice, tmp_path):
    out = convert(sluice, tmp_path, mixed_table(100), "write_statistics=false")
    assert pq.ParquetFile(out).metadata.row_group(0).column(0).statistics is None


def test_empty_table(sluice, tmp_path):
    table = zoo_table().slice(0, 0)
    out = convert(sluice, tmp_path, table)
    got = pq.read_table(out)
    assert got.num_rows == 0
    assert got.schema.names == table.schema.names
    assert duckdb.sql(f"SELECT count(*) FROM read_parquet('{out}')").fetchall()[0][0] == 0
    assert pl.read_parquet(out).height == 0


def test_one_row(sluice, tmp_path):
    table = zoo_table().slice(0, 1)
    out = convert(sluice, tmp_path, table)
    assert_reads_back(tmp_path, out, table)


def test_threads_give_identical_files(sluice, tmp_path):
    table = mixed_table()
    a = convert(sluice, tmp_path, table, "threads=1", name="a")
    b = convert(sluice, tmp_path, table, "threads=4", name="b")
    assert a.read_bytes() == b.read_bytes()


def test_unknown_option_is_an_error(sluice, tmp_path):
    src = tmp_path / "in.arrow"
    write_arrow(src, mixed_table(10))
    dst = tmp_path / "out.parquet"
    proc = sluice.expect_error("convert", src, dst, "-W", "bogus=1")
    assert b"bogus" in proc.stderr
    assert not dst.exists()
    proc = sluice.expect_error("convert", src, dst, "-W", "compression=lzo")
    assert not dst.exists()
    proc = sluice.expect_error("convert", src, dst, "-W", "data_page_version=3")
    assert not dst.exists()


def test_union_is_a_clear_error(sluice, tmp_path):
    u = pa.UnionArray.from_sparse(pa.array([0, 1], pa.int8()),
                                  [pa.array([1, 2]), pa.array(["a", "b"])])
    src = tmp_path / "in.arrow"
    write_arrow(src, pa.table({"u": u}))
    dst = tmp_path / "out.parquet"
    proc = sluice.expect_error("convert", src, dst)
    assert b"'u'" in proc.stderr
    assert not dst.exists()


def test_null_in_non_nullable_field_is_an_error(sluice, tmp_path):
    schema = pa.schema([pa.field("a", pa.int32(), nullable=False)])
    table = pa.Table.from_arrays([pa.array([1, None, 3], pa.int32())], schema=schema)
    src = tmp_path / "in.arrow"
    write_arrow(src, table)
    dst = tmp_path / "out.parquet"
    proc = sluice.expect_error("convert", src, dst)
    assert b"non-nullable" in proc.stderr
    assert not dst.exists()


@pytest.mark.parametrize("bad,chunk", [(10, None), (2000, 1), (2600, 1)])
@pytest.mark.parametrize("nested", [False, True])
def test_null_in_non_nullable_field_names_the_input_row(sluice, tmp_path, bad, chunk, nested):
    """Past the first row group the message names the row as the input
    counts it, not its index in the row group: row groups of 4 rows, or of
    1500 rows fed one row a batch (the rows of row group 2 are folded out of
    their batches after 1024 of them: row 2000 is met while folding, row
    2600 after it)."""
    n = bad + 5
    values = pa.array([None if i == bad else i for i in range(n)], pa.int32())
    if nested:
        x = pa.field("x", pa.int32(), nullable=False)
        table = pa.table({"s": pa.StructArray.from_arrays([values], fields=[x])})
        name = "s.x"
    else:
        table = pa.Table.from_arrays([values], schema=pa.schema(
            [pa.field("a", pa.int32(), nullable=False)]))
        name = "a"
    src = tmp_path / "in.arrow"
    write_arrow(src, table, max_chunksize=chunk)
    dst = tmp_path / "out.parquet"
    size = 4 if chunk is None else 1500
    proc = sluice.expect_error("convert", src, dst, "-W", f"row_group_size={size}")
    assert f"column '{name}' row {bad}: a null in a non-nullable field".encode() in proc.stderr
    assert not dst.exists()


def test_schema_metadata_is_kept(sluice, tmp_path):
    table = mixed_table(10).replace_schema_metadata({"origin": "test", "k2": "v2"})
    out = convert(sluice, tmp_path, table)
    md = pq.ParquetFile(out).metadata.metadata
    assert md[b"origin"] == b"test" and b"ARROW:schema" in md
    assert pq.read_table(out).schema.metadata[b"origin"] == b"test"


INTEGRATION = corpora_dir() / "arrow-testing" / "data" / "arrow-ipc-stream" / "integration" / \
    "1.0.0-littleendian"
INTEGRATION_FILES = sorted(p.name for p in INTEGRATION.glob("*.arrow_file")) if INTEGRATION.is_dir() else []


@pytest.mark.parametrize("name", INTEGRATION_FILES)
def test_arrow_integration_files(sluice, tmp_path, name):
    """Every arrow-testing integration file: what pyarrow can write as Parquet,
    sluice writes too, and pyarrow reads both back the same; what pyarrow
    refuses, sluice refuses cleanly (or writes something pyarrow reads back
    with the original values)."""
    src = INTEGRATION / name
    table = pa.ipc.open_file(str(src)).read_all()
    dst = tmp_path / "out.parquet"
    try:
        ref = reference(tmp_path, table)
    except (pa.ArrowNotImplementedError, pa.ArrowInvalid, pa.ArrowTypeError):
        proc = sluice.run_raw("convert", src, dst)
        if proc.returncode != 0:
            check_clean_failure(proc)
            assert not dst.exists()
        return
    proc = sluice.run_raw("convert", src, dst)
    if proc.returncode != 0:
        pytest.fail(f"sluice failed where pyarrow wrote: {proc.stderr.decode()}")
    got, want = pq.ParquetFile(dst).read(), pq.ParquetFile(ref).read()
    assert got.schema == want.schema
    assert got.equals(want)


def test_peers_filter_with_statistics(sluice, tmp_path):
    """Row-group pruning by statistics gives the rows a full scan gives:
    unsigned and string bounds in the right order."""
    n = 4000
    table = pa.table({
        "u": pa.array([(2**64 - 1 - i) if (i // 500) % 2 else i for i in range(n)], pa.uint64()),
        "s": pa.array([("\u00e9" if (i // 500) % 2 else "a") + str(i) for i in range(n)]),
        "i": pa.array(range(n), pa.int32()),
    })
    out = convert(sluice, tmp_path, table, "row_group_size=500")
    ref = reference(tmp_path, table, row_group_size=500)
    for where in ["u > 9223372036854775808", "u < 100", "s > 'b'", "s < 'b'", "i BETWEEN 10 AND 20"]:
        q = "SELECT count(*), min(i), max(i) FROM read_parquet('{}') WHERE " + where
        assert duckdb.sql(q.format(out)).fetchall() == duckdb.sql(q.format(ref)).fetchall(), where
    for expr in [pl.col("u") > 2**63, pl.col("s") > "b", pl.col("i") < 30]:
        got = pl.scan_parquet(out).filter(expr).select(pl.len()).collect().item()
        want = pl.scan_parquet(ref).filter(expr).select(pl.len()).collect().item()
        assert got == want


def test_long_byte_array_bound_drops_only_itself(sluice, tmp_path):
    """A string / binary chunk whose max (or min) is longer than the 4096-byte
    statistics limit keeps its other bound, as Arrow C++ writes it (sluice
    dropped both); filters pushed down on such a one-sided statistic lose no
    row in sluice, DuckDB or pyarrow."""
    import json
    import subprocess
    long_z, long_a = "z" * 5000, "a" * 5000
    # row groups of 4: long max / long min / both long / neither
    s = ["abc", long_z, "m", None, long_a, "q", "r", "b",
         long_a, "k", long_z, "c", "d", "e", "f", "g"]
    table = pa.table({"i": pa.array(range(len(s)), pa.int32()), "s": pa.array(s),
                      "b": pa.array([None if v is None else v.encode() for v in s], pa.binary())})
    out = convert(sluice, tmp_path, table, "row_group_size=4")
    ref = reference(tmp_path, table, row_group_size=4)
    q = ("select row_group_id, path_in_schema, stats_min_value, stats_max_value, min_is_exact, "
         "max_is_exact from parquet_metadata('{}') order by row_group_id, column_id")
    got, want = duckdb.sql(q.format(out)).fetchall(), duckdb.sql(q.format(ref)).fetchall()
    assert got == want
    one_sided = [(r[0], r[1]) for r in got if r[1] != "i" and (r[2] is None) != (r[3] is None)]
    assert one_sided == [(0, "s"), (0, "b"), (1, "s"), (1, "b")], got
    assert got[1][2:] == ("abc", None, True, None)  # row group 0, column s
    # Readers: every filter gives the rows a full scan gives.
    conds = [("s", ">", "y"), ("s", "<", "b"), ("s", "=", long_z), ("s", "=", long_a),
             ("s", ">=", "m"), ("s", "<=", "abc"), ("s", "=", "q"), ("s", ">", long_z)]
    for col, op, v in conds:
        py_op = {"=": "__eq__", ">": "__gt__", "<": "__lt__", ">=": "__ge__", "<=": "__le__"}[op]
        expect = sorted(i for i, x in enumerate(s) if x is not None and getattr(x, py_op)(v))
        for path in (out, ref):
            rows = duckdb.execute(f"select i from read_parquet('{path}') where {col} {op} ? "
                                  "order by i", [v]).fetchall()
            assert [r[0] for r in rows] == expect, (path.name, "duckdb", op, v[:10])
            t = pq.read_table(path, filters=[(col, op, v)])
            assert sorted(t.column("i").to_pylist()) == expect, (path.name, "pyarrow", op, v[:10])
            proc = subprocess.run([sluice.binary, "cat", path, "--filter", f"{col}{op}{v}", "-t",
                                   "csv"], capture_output=True, timeout=60)
            assert proc.returncode == 0, proc.stderr.decode()
            lines = proc.stdout.decode().splitlines()[1:]
            assert sorted(int(x.split(",")[0]) for x in lines) == expect, (path.name, "sluice", op)
    # sluice stats cannot take the one-sided footer bounds: it computes them
    stats = {c["name"]: c for c in json.loads(sluice.run("stats", out, "--json", "-c", "s").stdout)}
    assert (stats["s"]["min"], stats["s"]["max"]) == (min(x for x in s if x), max(x for x in s if x))


@pytest.mark.parametrize("dtype", [pa.decimal128(5, -3), pa.decimal256(40, -10), pa.decimal128(1, 3)])
def test_decimal_scale_outside_zero_to_precision_is_refused(sluice, tmp_path, dtype):
    """Parquet and Avro hold a decimal's scale in 0..precision (Arrow allows
    more): such a column is refused, as pyarrow and fastavro refuse it,
    instead of a file no peer opens; an existing output stays."""
    import decimal
    import pyarrow.ipc as ipc
    v = decimal.Decimal("1.2E+5") if dtype.scale == -3 else None  # the type is what counts
    table = pa.table({"d": pa.array([v, None], dtype)})
    src = tmp_path / "d.arrow"
    with ipc.new_file(src, table.schema) as w:
        w.write_table(table)
    with pytest.raises(Exception):
        pq.write_table(table, tmp_path / "pa.parquet")
    for ext in ("parquet", "avro"):
        out = tmp_path / f"out.{ext}"
        out.write_bytes(b"OLD")
        err = sluice.expect_error("convert", src, out).stderr.decode()
        assert "'d'" in err and "scale" in err, err
        assert out.read_bytes() == b"OLD"


@pytest.mark.parametrize("codec,level,takes", [
    ("zstd", -5, True),        # zstd's fast levels (were refused)
    ("zstd", -200000, True),   # below its fastest: as the fastest, as pyarrow takes it
    ("zstd", 23, True),        # past 22: as 22 (was refused at the first page)
    ("brotli", 20, True),      # past 11: as 11 (was refused at the first page)
    ("lz4", -3, True),         # the fast coder
    ("gzip", -5, False),       # pyarrow: "deflateInit failed"
    ("gzip", 13, False),       # libdeflate stops at 12
    ("brotli", -1, False),
])
def test_compression_levels_past_the_codec_range(sluice, tmp_path, codec, level, takes):
    """Levels pyarrow takes past a codec's range are brought into it; the
    others are refused before anything is written, naming the range."""
    import pyarrow.ipc as ipc
    table = pa.table({"a": list(range(5000)), "s": [f"v{i % 7}" for i in range(5000)]})
    src = tmp_path / "t.arrow"
    with ipc.new_file(src, table.schema) as w:
        w.write_table(table)
    out = tmp_path / "o.parquet"
    args = ["convert", src, out, "-W", f"compression={codec}", "-W", f"compression_level={level}"]
    if takes:
        pq.write_table(table, tmp_path / "pa.parquet", compression=codec, compression_level=level)
        sluice.run(*args)
        assert_same_table(pq.read_table(out), table)
        name = {"lz4": "LZ4"}.get(codec, codec.upper())  # pyarrow calls LZ4_RAW "LZ4"
        assert pq.ParquetFile(out).metadata.row_group(0).column(0).compression == name
        if (codec, level) == ("zstd", -200000):  # used, not the default (1): larger
            default = tmp_path / "d.parquet"
            sluice.run("convert", src, default, "-W", "compression=zstd")
            assert out.stat().st_size > default.stat().st_size
        return
    err = sluice.expect_error(*args).stderr.decode()
    assert f"{codec.upper()} compression levels are" in err and str(level) in err, err
    assert not out.exists()


def test_bloom_filters_for_every_column_of_the_zoo(sluice, tmp_path):
    """-W bloom_filters names every column of the type zoo: the file reads
    back as without them, chunks of hashable physical types get a filter
    (booleans, INT96 and the null type none), and DuckDB finds every value
    of the integer, float, string and date columns through them."""
    table = zoo_table()
    out = convert(sluice, tmp_path, table, "bloom_filters=" + "|".join(table.column_names))
    assert_reads_back(tmp_path, out, table)
    meta = pq.ParquetFile(out).metadata
    with_filter = {meta.row_group(0).column(c).path_in_schema
                   for c in range(meta.num_columns)
                   if meta.row_group(0).column(c).to_dict()["bloom_filter_offset"] is not None}
    for c in range(meta.num_columns):
        col = meta.row_group(0).column(c)
        if col.physical_type in ("BOOLEAN", "INT96"):
            assert col.path_in_schema not in with_filter
        elif col.statistics is not None and col.statistics.has_min_max:  # some value
            assert col.path_in_schema in with_filter, col.path_in_schema
    checked = 0
    # A connection of its own: fetchone() leaves the result open, and the
    # default connection then refuses the next test's queries.
    con = duckdb.connect()
    for name in table.column_names:
        t = table.column(name).type
        if not (pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_string(t)
                or pa.types.is_date32(t)) or pa.types.is_float16(t):
            continue
        for value in [v for v in table.column(name).to_pylist() if v is not None][:5]:
            if isinstance(value, float) and math.isnan(value):
                continue
            want = sum(1 for v in table.column(name).to_pylist() if v == value)
            got = con.execute(f'select count(*) from read_parquet(\'{out}\') where "{name}" = ?',
                              [value]).fetchone()[0]
            assert got == want, (name, value)
            checked += 1
    assert checked > 10
    proc = sluice.expect_error("convert", tmp_path / "out.arrow", tmp_path / "bad.parquet",
                               "-W", "bloom_filters=no_such_column")
    assert b"no_such_column" in proc.stderr
    assert not (tmp_path / "bad.parquet").exists()


def test_dictionary_probe_in_mid_size_chunks(sluice, tmp_path):
    """Chunks of 16K-64K values (a partitioned write makes many): a column
    whose probe is half distinct but repeats over the chunk keeps its
    dictionary, as pyarrow's (about its size); random doubles drop it."""
    rnd = random.Random(3)
    words = [f"{i:06d}-" + "x" * 43 for i in range(12000)]
    table = pa.table({"s": pa.array([words[rnd.randrange(12000)] for _ in range(60000)]),
                      "f": pa.array([rnd.random() for _ in range(60000)])})
    out = convert(sluice, tmp_path, table, "row_group_size=30000")
    md = pq.ParquetFile(out).metadata
    assert md.num_row_groups == 2
    for g in range(2):
        assert "RLE_DICTIONARY" in md.row_group(g).column(0).encodings
        assert "RLE_DICTIONARY" not in md.row_group(g).column(1).encodings
    ref = tmp_path / "ref.parquet"
    pq.write_table(table.select(["s"]), ref, row_group_size=30000)
    mine = sum(md.row_group(g).column(0).total_compressed_size for g in range(2))
    theirs = sum(pq.ParquetFile(ref).metadata.row_group(g).column(0).total_compressed_size
                 for g in range(2))
    assert mine < 1.2 * theirs
    assert_same_table(pq.read_table(out), table)


def _field_ids(schema: pa.Schema):
    """(dotted path, PARQUET:field_id) of every field, nested ones included."""
    out = []

    def walk(field, prefix):
        out.append((prefix + field.name, (field.metadata or {}).get(b"PARQUET:field_id")))
        if pa.types.is_struct(field.type):
            for child in field.type:
                walk(child, prefix + field.name + ".")
        elif pa.types.is_list(field.type) or pa.types.is_large_list(field.type):
            walk(field.type.value_field, prefix + field.name + ".")

    for field in schema:
        walk(field, "")
    return out


@pytest.mark.parametrize("store_schema", [True, False])
def test_field_ids_read_and_written_as_pyarrow_does(sluice, tmp_path, store_schema):
    """Parquet field_ids (Iceberg's column ids) read as the PARQUET:field_id
    field metadata pyarrow gives them (with or without the footer's Arrow
    schema), and a file sluice writes from such fields keeps them, as
    pyarrow's reader finds them."""
    def field(name, typ, fid):
        return pa.field(name, typ, metadata={b"PARQUET:field_id": str(fid).encode()})

    schema = pa.schema([field("a", pa.int64(), 1),
                        field("s", pa.struct([field("x", pa.string(), 3)]), 2),
                        field("l", pa.list_(field("element", pa.int32(), 5)), 4),
                        field("m", pa.map_(pa.string(), pa.int64()), 6),
                        pa.field("plain", pa.int8())])
    table = pa.table({"a": [1, None], "s": [{"x": "q"}, None], "l": [[1, 2], []],
                      "m": [[("k", 1)], None], "plain": [1, 2]}, schema=schema)
    src = tmp_path / "ids.parquet"
    pq.write_table(table, src, store_schema=store_schema)
    proc = sluice.run("cat", src, "-t", "arrows")
    import pyarrow.ipc as ipc
    got = ipc.open_stream(pa.BufferReader(proc.stdout)).read_all()
    assert _field_ids(got.schema) == _field_ids(pq.read_schema(src))
    assert dict(_field_ids(got.schema))["l.element"] == b"5"
    out = tmp_path / "back.parquet"
    sluice.run("convert", src, out)
    assert _field_ids(pq.read_schema(out)) == _field_ids(schema)
    assert pq.read_table(out).equals(pq.read_table(src))
    # a negative id is no id, for pyarrow's writer and sluice's alike
    negative = pa.schema([field("a", pa.int64(), -3)])
    src = tmp_path / "negative.arrow"
    with pa.ipc.new_file(src, negative) as w:
        w.write_table(pa.table({"a": [1]}, schema=negative))
    sluice.run("convert", src, out)
    assert "int64 field_id=-1 a;" in str(pq.ParquetFile(out).schema)


def _convert_within(sluice, src: Path, dst: Path, limit_mib: int) -> None:
    """`sluice convert` under an address-space limit: glibc's malloc arenas
    are kept to one (each thread's own reserves 128 MB of address space,
    which would count however little it holds), and two threads. A 32 MiB
    budget bounds how far the reader runs ahead of the writer: with the
    default 256 MiB, a loaded machine can fill the limit with batches in
    flight before the writer takes them."""
    import resource

    def limit_memory():
        resource.setrlimit(resource.RLIMIT_AS, (limit_mib << 20, limit_mib << 20))
    proc = subprocess.run([sluice.binary, "--threads", "2", "--budget", "32M", "convert", str(src), str(dst)],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=300,
                          preexec_fn=limit_memory, env=dict(os.environ, MALLOC_ARENA_MAX="1"))
    assert proc.returncode == 0, proc.stderr.decode(errors="replace")


def assert_peers_read(path: Path, table: pa.Table):
    """pyarrow, DuckDB and polars read the rows of `table` (of flat string
    and integer columns) back from `path`."""
    assert_same_table(pq.read_table(path), table)
    rows = list(zip(*(table.column(n).to_pylist() for n in table.schema.names)))
    assert duckdb.sql(f"SELECT * FROM read_parquet('{path}')").fetchall() == rows
    assert pl.read_parquet(path).rows() == rows


@pytest.mark.skipif(not MEASURES_RSS, reason="address-space limits and ASan do not mix")
def test_dictionary_delta_stream_is_not_held_batch_by_batch(sluice, tmp_path):
    """3,000 one-row batches, each adding a value of 300 bytes to the
    dictionary as a delta: every batch read carries the whole dictionary so
    far, and the writer held them all until the row group was full (1.35 GB
    of them; 5,000 values of 110 bytes: 1.39 GB, 20,000 ran out of memory).
    Their rows are folded into the row group's values as they come now: 512
    MiB of address space is plenty (160 do)."""
    n, width = 3000, 300
    values = [f"v{k:06d}".ljust(width, "x") for k in range(n)]
    full = pa.array(values)
    schema = pa.schema([("d", pa.dictionary(pa.int32(), pa.string())), ("i", pa.int64())])
    src, dst = tmp_path / "deltas.arrows", tmp_path / "out.parquet"
    options = pa.ipc.IpcWriteOptions(emit_dictionary_deltas=True)
    with pa.ipc.new_stream(src, schema, options=options) as w:
        for k in range(n):
            d = pa.DictionaryArray.from_arrays(pa.array([k], pa.int32()), full.slice(0, k + 1))
            w.write_batch(pa.record_batch([d, pa.array([k])], schema=schema))
    assert src.stat().st_size < 10 * n * width  # deltas, not whole dictionaries (n * n / 2)
    _convert_within(sluice, src, dst, 512)
    md = pq.ParquetFile(dst).metadata
    assert md.num_row_groups == 1
    assert "RLE_DICTIONARY" in md.row_group(0).column(0).encodings
    assert_peers_read(dst, pa.table({"d": pa.array(values).dictionary_encode(),
                                     "i": pa.array(range(n))}))


@pytest.mark.skipif(not MEASURES_RSS, reason="address-space limits and ASan do not mix")
def test_many_one_row_batches_are_not_held_one_by_one(sluice, tmp_path):
    """200,000 one-row batches of an int and a string: each held batch cost
    about a KiB of array nodes until the row group was full (320 MiB of
    address space were not enough); folded as they come, 256 MiB are plenty
    (160 do), and the file is byte for byte the one the same rows in one
    batch make."""
    n = 200_000
    table = pa.table({"i": pa.array(range(n)), "s": pa.array([f"s{k:07d}" for k in range(n)])})
    tiny, whole = tmp_path / "tiny.arrows", tmp_path / "whole.arrows"
    with pa.ipc.new_stream(tiny, table.schema) as w:
        w.write_table(table, max_chunksize=1)
    with pa.ipc.new_stream(whole, table.schema) as w:
        w.write_table(table)
    _convert_within(sluice, tiny, tmp_path / "tiny.parquet", 256)
    sluice.run("convert", whole, tmp_path / "whole.parquet")
    assert (tmp_path / "tiny.parquet").read_bytes() == (tmp_path / "whole.parquet").read_bytes()
    assert_peers_read(tmp_path / "tiny.parquet", table)


def test_legacy_statistics_fields_are_pyarrows(sluice, tmp_path):
    """Statistics' legacy min/max (the only bounds old readers know) and
    min_value/max_value are those pyarrow writes for the same table:
    booleans, decimals (FIXED_LEN_BYTE_ARRAY) and float16 had no legacy
    ones; unsigned integers and strings keep none, as in pyarrow."""
    import decimal
    dec = [decimal.Decimal(v) for v in ("1.50", "-2.25", "999.99", "-0.01")]
    table = pa.table({
        "b": pa.array([True, False, None, True]),
        "d5": pa.array(dec, pa.decimal128(5, 2)),
        "d30": pa.array(dec, pa.decimal128(30, 2)),
        "h": pa.array([1.5, -2.0, None, 0.25], pa.float16()),
        "i8": pa.array([-3, 7, 0, None], pa.int8()),
        "u32": pa.array([1, 2**32 - 1, 0, None], pa.uint32()),
        "f": pa.array([0.5, -1.5, None, 2.0]),
        "s": pa.array(["b", "a", None, "é"]),
        "ts": pa.array([1, -5, None, 7], pa.timestamp("ms", "UTC")),
    })
    out = convert(sluice, tmp_path, table, "row_group_size=2")
    ref = reference(tmp_path, table, row_group_size=2)
    q = ("select row_group_id, path_in_schema, stats_min, stats_max, stats_min_value, "
         "stats_max_value, stats_null_count from parquet_metadata('{}') "
         "order by row_group_id, column_id")
    got, want = duckdb.sql(q.format(out)).fetchall(), duckdb.sql(q.format(ref)).fetchall()
    assert got == want
    legacy = {r[1] for r in got if r[2] is not None}
    assert {"b", "d5", "d30", "h"} <= legacy, legacy
