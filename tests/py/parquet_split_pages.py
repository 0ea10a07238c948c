"""A Parquet file whose rows go on from one data page into the next, which
pyarrow, DuckDB and polars no longer write (their pages end with rows) but
parquet-mr and older Arrow did, and v1 pages allow: for the tests of lists
read page by page (test_parquet_read.py)."""

import struct

from conftest import uvarint


class _Compact:
    """Just enough of Thrift's compact protocol to write a footer and page
    headers: fields in increasing id order, i32 / i64 / binary / list / struct."""

    def __init__(self):
        self.out = bytearray()
        self.last = [0]

    def _field(self, fid, ftype):
        delta = fid - self.last[-1]
        assert 0 < delta <= 15
        self.out.append(delta << 4 | ftype)
        self.last[-1] = fid

    def int(self, fid, v, i64=False):
        self._field(fid, 6 if i64 else 5)
        self.out += uvarint((v << 1) ^ (v >> 63))

    def str(self, fid, s):
        self._field(fid, 8)
        b = s.encode()
        self.out += uvarint(len(b)) + b

    def begin(self, fid):
        self._field(fid, 12)
        self.last.append(0)

    def end(self):
        self.out.append(0)
        self.last.pop()

    def list(self, fid, etype, items, write):
        self._field(fid, 9)
        n = len(items)
        self.out.append((n << 4 | etype) if n < 15 else (0xF0 | etype))
        if n >= 15:
            self.out += uvarint(n)
        for it in items:
            if etype == 12:
                self.last.append(0)
                write(it)
                self.out.append(0)
                self.last.pop()
            else:
                write(it)


def _rle_levels(levels, width):
    """RLE / bit-packing hybrid as RLE runs, with v1's 4-byte length."""
    body = bytearray()
    i = 0
    while i < len(levels):
        j = i
        while j < len(levels) and levels[j] == levels[i]:
            j += 1
        body += uvarint((j - i) << 1) + bytes([levels[i]]) * ((width + 7) // 8)
        i = j
    return struct.pack("<I", len(body)) + bytes(body)


def write_list_pages_file(path, rows, page_entries):
    """One row group of an optional list<optional int64> column `l` in v1
    data pages (uncompressed, PLAIN) of `page_entries` level entries each,
    whatever the rows: a row's values go on from one page into the next,
    as parquet-mr and older Arrow wrote them."""
    rep, dfn, vals = [], [], []
    for r in rows:
        if r is None:
            rep.append(0), dfn.append(0)
        elif len(r) == 0:
            rep.append(0), dfn.append(1)
        else:
            for k, v in enumerate(r):
                rep.append(0 if k == 0 else 1)
                dfn.append(2 if v is None else 3)
                if v is not None:
                    vals.append(v)
    data = bytearray(b"PAR1")
    start = len(data)
    vi = 0
    for p in range(0, len(rep), page_entries):
        r, d = rep[p:p + page_entries], dfn[p:p + page_entries]
        nv = sum(1 for x in d if x == 3)
        body = _rle_levels(r, 1) + _rle_levels(d, 2) + struct.pack(f"<{nv}q", *vals[vi:vi + nv])
        vi += nv
        h = _Compact()
        h.int(1, 0)  # DATA_PAGE
        h.int(2, len(body))
        h.int(3, len(body))
        h.begin(5)
        h.int(1, len(r))
        h.int(2, 0)  # PLAIN
        h.int(3, 3)  # RLE
        h.int(4, 3)
        h.end()
        h.out.append(0)
        data += h.out + body
    size = len(data) - start
    m = _Compact()
    m.int(1, 1)
    schema = [("schema", None, None, 1, None), ("l", None, 1, 1, 3), ("list", None, 2, 1, None),
              ("element", 2, 1, None, None)]

    def element(e):
        name, typ, repetition, children, converted = e
        if typ is not None:
            m.int(1, typ)
        if repetition is not None:
            m.int(3, repetition)
        m.str(4, name)
        if children is not None:
            m.int(5, children)
        if converted is not None:
            m.int(6, converted)

    m.list(2, 12, schema, element)
    m.int(3, len(rows), i64=True)

    def row_group(_):
        def column(_):
            m.int(2, start, i64=True)
            m.begin(3)
            m.int(1, 2)  # INT64
            m.list(2, 5, [0, 3], lambda e: m.out.extend(uvarint(e << 1)))
            m.list(3, 8, ["l", "list", "element"],
                   lambda s: m.out.extend(uvarint(len(s)) + s.encode()))
            m.int(4, 0)
            m.int(5, len(rep), i64=True)
            m.int(6, size, i64=True)
            m.int(7, size, i64=True)
            m.int(9, start, i64=True)
            m.end()

        m.list(1, 12, [0], column)
        m.int(2, size, i64=True)
        m.int(3, len(rows), i64=True)

    m.list(4, 12, [0], row_group)
    m.out.append(0)
    data += m.out + struct.pack("<I", len(m.out)) + b"PAR1"
    with open(path, "wb") as f:
        f.write(bytes(data))


def write_null_run_file(path, rows_per_page, pages=1):
    """One row group of an optional INT64 column `a` whose `pages` v1 data
    pages each hold `rows_per_page` nulls as one RLE run of definition
    levels: a few bytes a page however many rows it says (2^31 - 1 at
    most), and no values."""
    run = uvarint(rows_per_page << 1) + b"\x00"
    body = struct.pack("<I", len(run)) + run
    data = bytearray(b"PAR1")
    start = len(data)
    for _ in range(pages):
        h = _Compact()
        h.int(1, 0)  # DATA_PAGE
        h.int(2, len(body))
        h.int(3, len(body))
        h.begin(5)
        h.int(1, rows_per_page)
        h.int(2, 0)  # PLAIN
        h.int(3, 3)  # RLE
        h.int(4, 3)
        h.end()
        h.out.append(0)
        data += h.out + body
    size = len(data) - start
    rows = rows_per_page * pages
    m = _Compact()
    m.int(1, 1)

    def element(e):
        name, typ, repetition, children = e
        if typ is not None:
            m.int(1, typ)
        if repetition is not None:
            m.int(3, repetition)
        m.str(4, name)
        if children is not None:
            m.int(5, children)

    m.list(2, 12, [("schema", None, None, 1), ("a", 2, 1, None)], element)
    m.int(3, rows, i64=True)

    def row_group(_):
        def column(_):
            m.int(2, start, i64=True)
            m.begin(3)
            m.int(1, 2)  # INT64
            m.list(2, 5, [0, 3], lambda e: m.out.extend(uvarint(e << 1)))
            m.list(3, 8, ["a"], lambda s: m.out.extend(uvarint(len(s)) + s.encode()))
            m.int(4, 0)
            m.int(5, rows, i64=True)
            m.int(6, size, i64=True)
            m.int(7, size, i64=True)
            m.int(9, start, i64=True)
            m.end()

        m.list(1, 12, [0], column)
        m.int(2, size, i64=True)
        m.int(3, rows, i64=True)

    m.list(4, 12, [0], row_group)
    m.out.append(0)
    data += m.out + struct.pack("<I", len(m.out)) + b"PAR1"
    with open(path, "wb") as f:
        f.write(bytes(data))
