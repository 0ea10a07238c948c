#!/usr/bin/env python3
"""Writes Parquet value streams encoded by pyarrow, for the C test
tests/c/test_parquet_encoding.c (test_pyarrow_vectors), which runs this at
test time: `parquet_encoding_vectors.py OUT_DIR [CORPORA_DIR]`.

With CORPORA_DIR, it also extracts every compressed page of the
parquet-testing files (written by parquet-mr, Arrow, parquet-rs, ...) into
codec_pages.bin: records of <u8 codec> <u32 LE compressed size> <u32 LE
uncompressed size> <compressed bytes>, for the C test to decompress.

For each case, pyarrow writes a one-column file (required column, data page
v1, no compression, one data page); this script walks the column chunk's page
headers (Thrift compact protocol, parsed minimally here) and stores:
  NAME.page    the data page's value bytes exactly as pyarrow wrote them
  NAME.expect  the values pyarrow was given (see the C test for the layout)
and lists "NAME KIND COUNT" lines in cases.txt. Exits 77 without pyarrow.
"""
import os
import random
import struct
import sys

try:
    import pyarrow as pa
    import pyarrow.parquet as pq
except ImportError:  # pragma: no cover
    sys.exit(77)


def varint(buf, pos):
    shift = value = 0
    while True:
        b = buf[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            return value, pos


def zigzag(v):
    return (v >> 1) ^ -(v & 1)


def read_value(buf, pos, ftype):
    """One compact-protocol value of type `ftype`; returns (value, pos)."""
    if ftype in (1, 2):
        return ftype == 1, pos
    if ftype == 3:
        return buf[pos], pos + 1
    if ftype in (4, 5, 6):
        v, pos = varint(buf, pos)
        return zigzag(v), pos
    if ftype == 7:
        return None, pos + 8
    if ftype == 8:
        n, pos = varint(buf, pos)
        return bytes(buf[pos:pos + n]), pos + n
    if ftype in (9, 10):
        h = buf[pos]
        pos += 1
        n, et = h >> 4, h & 0x0F
        if n == 15:
            n, pos = varint(buf, pos)
        items = []
        for _ in range(n):
            if et in (1, 2):  # bools in lists are one byte each
                items.append(buf[pos] == 1)
                pos += 1
            else:
                v, pos = read_value(buf, pos, et)
                items.append(v)
        return items, pos
    if ftype == 11:
        n, pos = varint(buf, pos)
        if n:
            kv = buf[pos]
            pos += 1
            for _ in range(n):
                _, pos = read_value(buf, pos, kv >> 4)
                _, pos = read_value(buf, pos, kv & 0x0F)
        return None, pos
    if ftype == 12:
        return read_struct(buf, pos)
    raise ValueError(f"thrift type {ftype}")


def read_struct(buf, pos):
    fields = {}
    last = 0
    while True:
        h = buf[pos]
        pos += 1
        if h == 0:
            return fields, pos
        delta, ftype = h >> 4, h & 0x0F
        if delta:
            fid = last + delta
        else:
            v, pos = varint(buf, pos)
            fid = zigzag(v)
        last = fid
        fields[fid], pos = read_value(buf, pos, ftype)


def data_page_values(path):
    """The value bytes of the only data page of column 0 (v1, required)."""
    md = pq.ParquetFile(path).metadata
    col = md.row_group(0).column(0)
    start = col.data_page_offset
    if col.has_dictionary_page and col.dictionary_page_offset is not None:
        start = min(start, col.dictionary_page_offset)
    end = start + col.total_compressed_size
    buf = open(path, "rb").read()
    pos = start
    pages = []
    while pos < end:
        header, pos = read_struct(buf, pos)
        size = header[3]
        if header[1] == 0:  # DATA_PAGE
            pages.append(buf[pos:pos + size])
        pos += size
    assert len(pages) == 1, f"{path}: {len(pages)} data pages"
    return pages[0]


def column_chunks(buf):
    """(codec, start, total_compressed_size) of every column chunk."""
    if len(buf) < 12 or buf[-4:] != b"PAR1":
        return []
    flen = struct.unpack("<I", buf[-8:-4])[0]
    meta, _ = read_struct(buf, len(buf) - 8 - flen)
    out = []
    for rg in meta.get(4) or []:
        for cc in rg.get(1) or []:
            cm = cc.get(3)
            if not cm:
                continue
            start = cm[9]
            dict_off = cm.get(11)
            if dict_off and 0 < dict_off < start:
                start = dict_off
            out.append((cm[4], start, cm[7]))
    return out


def compressed_pages(path, limit=400):
    """(codec, compressed bytes, uncompressed size) of the file's pages."""
    buf = open(path, "rb").read()
    pages = []
    for codec, start, total in column_chunks(buf):
        if codec == 0:
            continue
        pos, end = start, start + total
        while pos < end and len(pages) < limit:
            header, pos = read_struct(buf, pos)
            usize, csize = header[2], header[3]
            body = buf[pos:pos + csize]
            pos += csize
            if header[1] == 3:  # DATA_PAGE_V2: levels are never compressed
                v2 = header[8]
                levels = v2.get(5, 0) + v2.get(6, 0)
                if not v2.get(7, True):
                    continue
                body, usize = body[levels:], usize - levels
            if header[1] in (0, 2, 3):
                pages.append((codec, bytes(body), usize))
    return pages


def corpus_codec_pages(corpora, out_dir):
    data_dir = os.path.join(corpora, "parquet-testing", "data")
    if not os.path.isdir(data_dir):
        return 0
    n = 0
    with open(os.path.join(out_dir, "codec_pages.bin"), "wb") as f:
        for name in sorted(os.listdir(data_dir)):
            path = os.path.join(data_dir, name)
            if not name.endswith(".parquet") or os.path.getsize(path) > 64 << 20:
                continue
            try:
                pages = compressed_pages(path)
            except (IndexError, KeyError, ValueError, TypeError, struct.error):
                continue  # files this minimal parser cannot walk (bad_data, encrypted)
            for codec, body, usize in pages:
                if codec == 3:  # LZO: not supported
                    continue
                f.write(struct.pack("<BII", codec, len(body), usize) + body)
                n += 1
    return n


CODEC_NAMES = {1: "snappy", 2: "gzip", 4: "brotli", 6: "zstd", 7: "lz4_raw"}
CORPUS_FILES = ["delta_binary_packed", "delta_byte_array", "delta_length_byte_array",
                "delta_encoding_required_column", "delta_encoding_optional_column",
                "byte_stream_split.zstd", "byte_stream_split_extended.gzip"]


def corpus_value_pages(corpora, out_dir, cases):
    """Value streams of parquet-testing files written by parquet-mr and Arrow
    (DELTA_*, BYTE_STREAM_SPLIT), for columns without nulls, with the values
    pyarrow reads from the same file as the expectation."""
    data_dir = os.path.join(corpora, "parquet-testing", "data")
    for fname in CORPUS_FILES:
        path = os.path.join(data_dir, fname + ".parquet")
        if not os.path.exists(path):
            continue
        pf = pq.ParquetFile(path)
        table = pf.read()
        buf = open(path, "rb").read()
        for ci, (codec, start, total) in enumerate(column_chunks(buf)):
            if pf.metadata.num_row_groups != 1 or (codec and codec not in CODEC_NAMES):
                break
            col = table.column(ci)
            if col.null_count:
                continue
            desc = pf.schema.column(ci)
            values = col.to_pylist()
            pos, end, row = start, start + total, 0
            while pos < end:
                header, pos = read_struct(buf, pos)
                body = buf[pos:pos + header[3]]
                pos += header[3]
                if header[1] == 0:
                    dph = header[5]
                    nv, enc = dph[1], dph[2]
                    if codec:
                        body = pa.decompress(body, header[2], codec=CODEC_NAMES[codec]).to_pybytes()
                    for level in (desc.max_repetition_level, desc.max_definition_level):
                        if level:  # v1 levels: u32 length + RLE
                            body = body[4 + struct.unpack_from("<I", body)[0]:]
                elif header[1] == 3:
                    v2 = header[8]
                    nv, enc = v2[1], v2[4]
                    body = body[v2.get(5, 0) + v2.get(6, 0):]
                    if codec and v2.get(7, True):
                        usize = header[2] - v2.get(5, 0) - v2.get(6, 0)
                        body = pa.decompress(body, usize, codec=CODEC_NAMES[codec]).to_pybytes()
                else:
                    continue
                page_values = values[row:row + nv]
                row += nv
                ptype = desc.physical_type
                kind = None
                if enc == 5 and ptype in ("INT32", "INT64"):
                    kind, expect = "delta_" + ptype.lower().replace("nt", ""), ints_of(page_values)
                elif enc in (6, 7):
                    kind = "dlba" if enc == 6 else "dba"
                    expect = u32_strings(page_values)
                elif enc == 9:
                    width = {"FLOAT": 4, "DOUBLE": 8, "INT32": 4, "INT64": 8}.get(
                        ptype, desc.length if ptype == "FIXED_LEN_BYTE_ARRAY" else 0)
                    fmt = {"FLOAT": "f", "DOUBLE": "d", "INT32": "i", "INT64": "q"}.get(ptype)
                    if pa.types.is_float16(col.type):
                        fmt = "e"
                    if not 1 <= width <= 9:
                        continue
                    if fmt:
                        expect = struct.pack(f"<{nv}{fmt}", *page_values)
                    elif pa.types.is_fixed_size_binary(col.type):
                        expect = b"".join(page_values)
                    elif pa.types.is_decimal(col.type):  # big-endian two's complement
                        expect = b"".join(int(v.scaleb(col.type.scale)).to_bytes(width, "big", signed=True)
                                          for v in page_values)
                    else:
                        continue
                    kind = f"bss{width}"
                if kind is None:
                    continue
                name = f"corpus_{fname.replace('.', '_')}_{ci}_{row}"
                with open(os.path.join(out_dir, name + ".page"), "wb") as f:
                    f.write(body)
                with open(os.path.join(out_dir, name + ".expect"), "wb") as f:
                    f.write(expect)
                cases.append(f"{name} {kind} {nv}")


def ints_of(values):
    return struct.pack(f"<{len(values)}q", *values)


def u32_strings(values):
    out = bytearray()
    for v in values:
        b = v.encode() if isinstance(v, str) else v
        out += struct.pack("<I", len(b)) + b
    return bytes(out)


def main():
    out_dir = sys.argv[1]
    os.makedirs(out_dir, exist_ok=True)
    rng = random.Random(20261130)
    cases = []

    def write(name, kind, arr, expect, **kw):
        path = os.path.join(out_dir, name + ".parquet")
        field = pa.field("x", arr.type, nullable=False)
        table = pa.Table.from_arrays([arr], schema=pa.schema([field]))
        kw.setdefault("use_dictionary", False)
        pq.write_table(table, path, compression="NONE", data_page_version="1.0",
                       data_page_size=1 << 26, write_statistics=False, **kw)
        with open(os.path.join(out_dir, name + ".page"), "wb") as f:
            f.write(data_page_values(path))
        with open(os.path.join(out_dir, name + ".expect"), "wb") as f:
            f.write(expect)
        os.remove(path)
        cases.append(f"{name} {kind} {len(arr)}")

    def ints(values):
        return struct.pack(f"<{len(values)}q", *values)

    i32 = [rng.randint(-2**31, 2**31 - 1) for _ in range(5000)]
    i32[10:20] = [2**31 - 1, -2**31] * 5
    write("delta_i32_random", "delta_i32", pa.array(i32, pa.int32()), ints(i32),
          column_encoding={"x": "DELTA_BINARY_PACKED"})
    mono = [1000 + 3 * i + rng.randint(0, 5) for i in range(7777)]
    write("delta_i32_sorted", "delta_i32", pa.array(mono, pa.int32()), ints(mono),
          column_encoding={"x": "DELTA_BINARY_PACKED"})
    i64 = [rng.randint(-2**63, 2**63 - 1) for _ in range(3000)]
    i64[:6] = [2**63 - 1, -2**63, 0, -1, 2**63 - 1, -2**63]
    write("delta_i64_random", "delta_i64", pa.array(i64, pa.int64()), ints(i64),
          column_encoding={"x": "DELTA_BINARY_PACKED"})
    ts = [1_700_000_000_000_000 + i * 1_000_003 for i in range(1000)]
    write("delta_i64_ts", "delta_i64", pa.array(ts, pa.int64()), ints(ts),
          column_encoding={"x": "DELTA_BINARY_PACKED"})
    write("delta_i64_one", "delta_i64", pa.array([42], pa.int64()), ints([42]),
          column_encoding={"x": "DELTA_BINARY_PACKED"})
    for n in (1, 127, 128, 129, 200):
        small = [rng.randint(-100, 100) for _ in range(n)]
        write(f"delta_i32_n{n}", "delta_i32", pa.array(small, pa.int32()), ints(small),
              column_encoding={"x": "DELTA_BINARY_PACKED"})

    words = ["", "a", "axis", "axle", "babble", "babyhood", "über", "x" * 300]
    strs = [rng.choice(words) + str(rng.randint(0, 50)) * rng.randint(0, 3) for _ in range(3000)]
    strs.sort()
    for enc, kind in (("DELTA_LENGTH_BYTE_ARRAY", "dlba"), ("DELTA_BYTE_ARRAY", "dba"),
                      ("PLAIN", "plain_ba")):
        write(f"{kind}_strings", kind, pa.array(strs, pa.string()), u32_strings(strs),
              column_encoding={"x": enc})
    bins = [bytes(rng.randrange(256) for _ in range(rng.randint(0, 40))) for _ in range(500)]
    write("dba_binary", "dba", pa.array(bins, pa.binary()), u32_strings(bins),
          column_encoding={"x": "DELTA_BYTE_ARRAY"})

    bools = [rng.random() < 0.3 if i % 1000 < 500 else True for i in range(10001)]
    write("rle_bool", "rle_bool", pa.array(bools, pa.bool_()), bytes(bools),
          column_encoding={"x": "RLE"})
    write("plain_bool", "plain_bool", pa.array(bools, pa.bool_()), bytes(bools),
          column_encoding={"x": "PLAIN"})

    for distinct, n in ((1, 1000), (2, 5000), (300, 10000), (20000, 20000)):
        vals = [rng.randrange(distinct) * 7919 for _ in range(n)]
        if distinct == 20000:
            vals = list(range(distinct))
            rng.shuffle(vals)
        order = {}
        for v in vals:
            order.setdefault(v, len(order))
        expect = struct.pack("<I", len(order)) + struct.pack(
            f"<{n}I", *(order[v] for v in vals))
        write(f"dict_{distinct}", "dict_idx", pa.array(vals, pa.int32()), expect,
              use_dictionary=True)

    f32 = [rng.uniform(-1e6, 1e6) for _ in range(999)]
    write("bss_float", "bss4", pa.array(f32, pa.float32()), struct.pack(f"<{len(f32)}f", *f32),
          column_encoding={"x": "BYTE_STREAM_SPLIT"})
    f64 = [rng.uniform(-1e300, 1e300) for _ in range(1001)]
    write("bss_double", "bss8", pa.array(f64, pa.float64()), struct.pack(f"<{len(f64)}d", *f64),
          column_encoding={"x": "BYTE_STREAM_SPLIT"})

    if len(sys.argv) > 2:
        corpus_value_pages(sys.argv[2], out_dir, cases)
        n = corpus_codec_pages(sys.argv[2], out_dir)
        if n:
            cases.append(f"codec_pages codec_pages {n}")

    with open(os.path.join(out_dir, "cases.txt"), "w") as f:
        f.write("\n".join(cases) + "\n")


if __name__ == "__main__":
    main()
