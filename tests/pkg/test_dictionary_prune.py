"""Parquet dictionary pages prune row groups for equality filters: a chunk
whose every data page is dictionary-encoded holds no value outside its
dictionary (parquet-mr's DictionaryFilter). Files by pyarrow (format 2 and
1.0 layouts), DuckDB and polars, none with Bloom filters, over columns whose
statistics prune nothing. The data pages of row groups a filter rules out
are damaged (their dictionaries left intact), so a read that succeeds proves
they were skipped; values are compared with pyarrow's reading of the
undamaged file."""
from __future__ import annotations

import datetime as dt

import pytest

import sluice
from pkg_helpers import damage_row_groups

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

GROUPS, PER_GROUP = 6, 4096  # DuckDB cuts row groups at multiples of 2,048


def _table():
    # Group g holds the values v with v % GROUPS == g, spread over the whole
    # range, so every group's min/max cover every value.
    rows = [(g, j) for g in range(GROUPS) for j in range(PER_GROUP)]
    vals = [g + GROUPS * (j % 40) for g, j in rows]
    return pa.table({
        "row": pa.array(range(len(rows)), pa.int64()),
        "s": pa.array(["city-%04d" % v for v in vals]),
        "i": pa.array([v * 1000 - 7 for v in vals], pa.int64()),
        "i32": pa.array([v - 100 for v in vals], pa.int32()),
        "x": pa.array([-0.0 if v == 0 else v / 4 for v in vals], pa.float64()),
        "d": pa.array([dt.date(2001, 1, 1) + dt.timedelta(days=v) for v in vals]),
        "b": pa.array([b"\x00k%d" % v for v in vals], pa.binary()),
        # Narrow integers are INT32 in the file: entries compare as read.
        "i8": pa.array([v % 120 - 60 for v in vals], pa.int8()),
        "u8": pa.array([v % 120 + 100 for v in vals], pa.uint8()),
        "i16": pa.array([v * 100 - 12000 for v in vals], pa.int16()),
        "u16": pa.array([v * 200 for v in vals], pa.uint16()),
    })


def _write(path, writer, table):
    if writer == "pyarrow":
        pq.write_table(table, path, row_group_size=PER_GROUP)
    elif writer == "pyarrow-1.0":
        pq.write_table(table, path, row_group_size=PER_GROUP, version="1.0",
                       data_page_version="1.0")
    elif writer == "duckdb":
        duckdb = pytest.importorskip("duckdb")
        con = duckdb.connect()
        con.register("t", table)
        con.execute(f"copy (select * from t order by row) to '{path}' "
                    f"(format parquet, row_group_size {PER_GROUP})")
    elif writer == "polars":
        pl = pytest.importorskip("polars")
        pl.from_arrow(table).write_parquet(path, row_group_size=PER_GROUP, statistics=True)
    meta = pq.ParquetFile(path).metadata
    assert meta.num_row_groups == GROUPS, writer


def _damage_data_pages(path, keep):
    damage_row_groups(path, keep, data_pages_only=True)


def _dictionary_columns(path):
    meta = pq.ParquetFile(path).metadata
    return {meta.schema.column(c).name for c in range(meta.num_columns)
            if all(meta.row_group(g).column(c).has_dictionary_page
                   for g in range(meta.num_row_groups))}


WRITERS = ["pyarrow", "pyarrow-1.0", "duckdb", "polars"]
CASES = [
    ("s", "city-%04d" % (2 + GROUPS * 7)),
    ("i", (2 + GROUPS * 7) * 1000 - 7),
    ("i32", 2 + GROUPS * 7 - 100),
    ("x", (2 + GROUPS * 7) / 4),
    ("x", 0.0),  # only -0.0 is stored (group 0): both zeros are looked up
    ("d", dt.date(2001, 1, 1) + dt.timedelta(days=2 + GROUPS * 7)),
    ("b", b"\x00k%d" % (2 + GROUPS * 7)),
    ("i8", (2 + GROUPS * 7) % 120 - 60),
    ("u8", (2 + GROUPS * 7) % 120 + 100),
    ("i16", (2 + GROUPS * 7) * 100 - 12000),
    ("u16", (2 + GROUPS * 7) * 200),
]


@pytest.mark.parametrize("writer", WRITERS)
@pytest.mark.parametrize("column,value", CASES)
def test_groups_the_dictionaries_rule_out_are_not_read(tmp_path, writer, column, value):
    t = _table()
    clean = tmp_path / "clean.parquet"
    _write(clean, writer, t)
    flt = [(column, "=", value)]
    want = pq.read_table(clean, filters=flt)
    if column not in _dictionary_columns(clean):
        # polars writes floats without a dictionary: nothing to prune by,
        # so the damaged row groups are read (and fail).
        damaged = tmp_path / "damaged.parquet"
        damaged.write_bytes(clean.read_bytes())
        _damage_data_pages(damaged, set())
        with pytest.raises(sluice.Error):
            sluice.read(str(damaged), filters=flt)
        return
    keep = {r // PER_GROUP for r in want["row"].to_pylist()}
    assert len(keep) == 1
    damaged = tmp_path / "damaged.parquet"
    damaged.write_bytes(clean.read_bytes())
    _damage_data_pages(damaged, keep)
    got = pa.table(sluice.read(str(damaged), filters=flt))
    assert got.to_pylist() == want.to_pylist()
    # A value in another row group reads a damaged group: an error.
    other = t[column][((min(keep) + 1) % GROUPS) * PER_GROUP].as_py()
    with pytest.raises(sluice.Error):
        sluice.read(str(damaged), filters=[(column, "=", other)])


@pytest.mark.parametrize("writer", WRITERS)
def test_in_lists_and_absent_values(tmp_path, writer):
    t = _table()
    clean = tmp_path / "clean.parquet"
    _write(clean, writer, t)
    damaged = tmp_path / "damaged.parquet"
    damaged.write_bytes(clean.read_bytes())
    _damage_data_pages(damaged, {1, 4})
    # Values of groups 1 and 4 (and absent ones) read those two groups only.
    flt = [("s", "in", ["city-0001", "city-%04d" % (4 + GROUPS * 9), "nope"])]
    want = pq.read_table(clean, filters=flt)
    assert pa.table(sluice.read(str(damaged), filters=flt)).to_pylist() == want.to_pylist()
    assert want.num_rows > 0
    # Values in no dictionary read nothing at all.
    dictionary_columns = _dictionary_columns(clean)
    for flt in ([("s", "=", "nope")], [("i", "in", [1, 2, 3])], [("i32", "=", 10**6)],
                [("x", "=", 0.1)], [("b", "=", b"k1")],
                [("d", "=", dt.date(1990, 1, 1))], [("i8", "=", 100)], [("u8", "=", 7)],
                [("i16", "in", [1, 2])], [("u16", "=", 1)]):
        if flt[0][0] in dictionary_columns:
            assert pa.table(sluice.read(str(damaged), filters=flt)).num_rows == 0, flt
        assert pq.read_table(clean, filters=flt).num_rows == 0, flt


def test_chunks_that_fell_back_to_plain_are_read(tmp_path):
    """A dictionary that grew too big: later pages are PLAIN and may hold
    values the dictionary does not, so the chunk is never pruned by it."""
    n = 40000
    t = pa.table({"s": pa.array(["v%06d" % i for i in range(n)])})
    path = tmp_path / "fallback.parquet"
    pq.write_table(t, path, dictionary_pagesize_limit=4096, data_page_size=4096)
    chunk = pq.ParquetFile(path).metadata.row_group(0).column(0)
    assert chunk.has_dictionary_page and "PLAIN" in chunk.encodings
    for v in ("v000003", "v039999", "nope"):
        flt = [("s", "=", v)]
        assert pa.table(sluice.read(str(path), filters=flt)).to_pylist() == \
            pq.read_table(path, filters=flt).to_pylist()
    # With its data pages damaged, the chunk must be read (and fail) even
    # for a value its dictionary lacks.
    _damage_data_pages(path, set())
    with pytest.raises(sluice.Error):
        sluice.read(str(path), filters=[("s", "=", "v039999")])


def test_a_corrupt_dictionary_page_is_reported_not_pruned(tmp_path):
    """With page checksums, a dictionary page whose bytes were changed fails
    its CRC: the row group is read (and the CRC error raised), not skipped
    as if the changed dictionary told the truth."""
    t = pa.table({"s": ["apple", "pear"] * 2 + ["plum", "fig"] * 2})
    path = tmp_path / "crc.parquet"
    pq.write_table(t, path, row_group_size=4, compression="none", write_page_checksum=True)
    data = bytearray(path.read_bytes())
    chunk = pq.ParquetFile(path).metadata.row_group(0).column(0)
    start = chunk.dictionary_page_offset
    at = data.index(b"apple", start, chunk.data_page_offset)
    data[at] = ord("b")  # row group 0's dictionary now says "bpple"
    path.write_bytes(bytes(data))
    for value in ("apple", "fig"):  # in row group 0 or not, it is read
        with pytest.raises(sluice.Error, match="CRC"):
            sluice.read(str(path), filters=[("s", "=", value)])
    # Told not to check checksums, the page is taken at its word, as
    # pyarrow takes it.
    for value in ("apple", "bpple", "fig"):
        got = pa.table(sluice.read(str(path), filters=[("s", "=", value)],
                                   verify_checksums=False))
        assert got.to_pylist() == pq.read_table(path, filters=[("s", "=", value)]).to_pylist()
