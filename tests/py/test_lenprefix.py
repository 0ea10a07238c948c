"""lenprefix reader: streams of length-prefixed messages, generated here for
every prefix kind, are read by sluice (into Arrow IPC) and compared message by
message with an independent Python reference parser of the same bytes.
Truncated streams must fail naming the offset of the broken message; reading
from a pipe must give the same rows as reading the file.
"""

from __future__ import annotations

import random
import struct
import subprocess
from pathlib import Path

import pyarrow as pa
import pyarrow.ipc as ipc
import pytest

from conftest import MEASURES_RSS, check_clean_failure, uvarint

FIXED = {  # kind -> (struct format, max length)
    "u8": ("<B", 0xFF),
    "u16le": ("<H", 0xFFFF),
    "u16be": (">H", 0xFFFF),
    "u32le": ("<I", 0xFFFFFFFF),
    "u32be": (">I", 0xFFFFFFFF),
    "u64le": ("<Q", 2**64 - 1),
    "u64be": (">Q", 2**64 - 1),
}
KINDS = ["varint", *FIXED]


def encode(kind: str, messages: list[bytes]) -> bytes:
    parts = []
    for m in messages:
        if kind == "varint":
            parts.append(uvarint(len(m)))
        else:
            parts.append(struct.pack(FIXED[kind][0], len(m)))
        parts.append(m)
    return b"".join(parts)


def reference_parse(kind: str, data: bytes) -> list[bytes]:
    """The reference reader: independent of the encoder above (it decodes
    byte by byte rather than with struct)."""
    out, pos = [], 0
    while pos < len(data):
        if kind == "varint":
            n, shift = 0, 0
            while True:
                b = data[pos]
                pos += 1
                n |= (b & 0x7F) << shift
                shift += 7
                if not b & 0x80:
                    break
        else:
            width = int(kind[1:].rstrip("lebe")) // 8
            raw = data[pos:pos + width]
            pos += width
            n = int.from_bytes(raw, "big" if kind.endswith("be") else "little")
        out.append(data[pos:pos + n])
        pos += n
    return out


def messages_for(kind: str, rng: random.Random, count: int) -> list[bytes]:
    limit = 200 if kind == "u8" else 3000
    msgs = [rng.randbytes(rng.choice([0, 1, 5, 20, 40, limit // 2, limit])) for _ in range(count)]
    msgs[0] = b""  # an empty message first
    return msgs


def read_messages(sluice, path: Path, kind: str | None, tmp: Path, via_flag=False,
                  extra=()) -> list[bytes]:
    out = tmp / "out.arrows"
    args = ["convert", path, out, "-t", "arrows", *extra]
    if kind is not None:
        args += ["--length-prefix", kind] if via_flag else ["-O", f"length_prefix={kind}"]
    if path.suffix != ".lenprefix":
        args += ["-f", "lenprefix"]
    sluice.run(*args)
    table = ipc.open_stream(out.read_bytes()).read_all()
    assert table.schema.names == ["message"]
    assert table.schema.field("message").type in (pa.binary(), pa.large_binary())
    return [v.as_py() for v in table.column("message")]


def read_pipe(sluice, data: bytes, kind: str, tmp: Path) -> list[bytes]:
    """The messages of `data` fed through a pipe: reads then end anywhere,
    so prefixes and messages cross them."""
    out = tmp / "pipe.arrows"
    proc = subprocess.run([sluice.binary, "convert", "-", str(out), "-t", "arrows", "-f",
                           "lenprefix", "-O", f"length_prefix={kind}"], input=data,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120)
    assert proc.returncode == 0, proc.stderr.decode()
    table = ipc.open_stream(out.read_bytes()).read_all()
    return [v.as_py() for v in table.column("message")]


@pytest.mark.parametrize("kind", KINDS)
def test_every_prefix_kind(sluice, tmp_path, kind):
    rng = random.Random(hash(kind) & 0xFFFF)
    msgs = messages_for(kind, rng, 3000)
    data = encode(kind, msgs)
    path = tmp_path / "data.lenprefix"
    path.write_bytes(data)
    expected = reference_parse(kind, data)
    assert expected == msgs
    got = read_messages(sluice, path, kind, tmp_path)
    assert got == expected
    assert read_pipe(sluice, data, kind, tmp_path) == expected


def test_default_is_varint_and_cli_flag(sluice, tmp_path):
    msgs = [b"a" * n for n in range(0, 300, 7)]  # lengths above 127 need 2 varint bytes
    path = tmp_path / "data.lenprefix"
    path.write_bytes(encode("varint", msgs))
    assert read_messages(sluice, path, None, tmp_path) == msgs
    assert read_messages(sluice, path, "varint", tmp_path, via_flag=True) == msgs


def test_w3_like_many_tiny_messages_batches(sluice, tmp_path):
    """~700k messages with 1-byte lengths (like W3): several batches, every
    message in order, also when batches are small."""
    rng = random.Random(3)
    msgs = [rng.randbytes(rng.randrange(0, 48)) for _ in range(700_000)]
    data = encode("u8", msgs)
    path = tmp_path / "w3.bin"
    path.write_bytes(data)
    expected = reference_parse("u8", data)
    assert read_messages(sluice, path, "u8", tmp_path) == expected
    out = tmp_path / "small.arrows"
    sluice.run("convert", path, out, "-t", "arrows", "-f", "lenprefix", "-O", "length_prefix=u8")
    reader = ipc.open_stream(out.read_bytes())
    batches = list(reader)
    assert len(batches) > 1
    assert sum(b.num_rows for b in batches) == len(msgs)


def test_batches_outgrowing_the_last_one(sluice, tmp_path):
    """A batch's data buffer is sized from the previous batch: messages that
    grow from batch to batch (and shrink again) still arrive whole and in
    order, from a file and through a pipe."""
    rng = random.Random(5)
    msgs = [rng.randbytes(rng.randrange(0, 4 + i // 2000)) for i in range(400_000)]
    msgs += [rng.randbytes(rng.randrange(0, 8)) for _ in range(100_000)]
    data = encode("u8", msgs)
    path = tmp_path / "growing.bin"
    path.write_bytes(data)
    assert read_messages(sluice, path, "u8", tmp_path) == msgs
    assert read_pipe(sluice, data, "u8", tmp_path) == msgs


def test_large_message_own_batch(sluice, tmp_path):
    msgs = [b"x", bytes(range(256)) * (40 * 1024), b"", b"tail"]  # a 10 MiB message
    path = tmp_path / "big.lenprefix"
    path.write_bytes(encode("u32le", msgs))
    assert read_messages(sluice, path, "u32le", tmp_path) == msgs


def test_pipe_matches_file(sluice, tmp_path):
    rng = random.Random(5)
    msgs = [rng.randbytes(rng.randrange(0, 5000)) for _ in range(2000)]
    data = encode("u16be", msgs)
    assert read_pipe(sluice, data, "u16be", tmp_path) == reference_parse("u16be", data)


def truncation_cases():
    msgs = [b"hello", b"", b"world!!"]
    for kind in KINDS:
        data = encode(kind, msgs)
        last = len(data) - len(encode(kind, msgs[-1:]))  # offset of the last message
        # Cut inside the last message's body, and (when it has >1 byte) its prefix.
        yield kind, data[:-3], last
        width = 1 if kind in ("varint", "u8") else int(kind[1:3]) // 8
        if width > 1:
            yield kind, data[:last + 1], last


@pytest.mark.parametrize("kind,data,offset", list(truncation_cases()))
@pytest.mark.parametrize("via_pipe", [False, True])
def test_truncated_final_message_names_offset(sluice, tmp_path, kind, data, offset, via_pipe):
    path = tmp_path / "cut.lenprefix"
    path.write_bytes(data)
    args = ["convert", "-" if via_pipe else str(path), str(tmp_path / "o.arrows"), "-t", "arrows",
            "-f", "lenprefix", "-O", f"length_prefix={kind}"]
    proc = subprocess.run([sluice.binary, *args], input=data if via_pipe else None,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60)
    check_clean_failure(proc)
    err = proc.stderr.decode()
    assert f"offset {offset}" in err and "truncated" in err, err


def test_truncated_varint_prefix(sluice, tmp_path):
    path = tmp_path / "v.lenprefix"
    path.write_bytes(encode("varint", [b"ab"]) + b"\x80\x80")
    proc = sluice.expect_error("convert", path, tmp_path / "o.arrows", "-t", "arrows")
    assert "offset 3" in proc.stderr.decode() and "varint" in proc.stderr.decode()


def test_oversized_varint_prefix(sluice, tmp_path):
    path = tmp_path / "v.lenprefix"
    path.write_bytes(b"\xff" * 10 + b"\x01")
    proc = sluice.expect_error("convert", path, tmp_path / "o.arrows", "-t", "arrows")
    assert "offset 0" in proc.stderr.decode()


def test_huge_length_on_pipe_fails_cleanly(sluice, tmp_path):
    """A bogus 2^40 length read from a pipe (size unknown) is an error, not
    an attempt to allocate a terabyte."""
    data = struct.pack("<Q", 1 << 40) + b"abc"
    proc = subprocess.run([sluice.binary, "convert", "-", str(tmp_path / "o.arrows"), "-t",
                           "arrows", "-f", "lenprefix", "-O", "length_prefix=u64le"], input=data,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60)
    check_clean_failure(proc)
    assert "offset 0" in proc.stderr.decode()


def test_option_given_twice(sluice, tmp_path):
    """-O length_prefix= and --length-prefix (or -O twice) that differ are an
    error naming both values, as the writers' options given both ways: one
    silently won (the later). The same value twice reads."""
    path = tmp_path / "x.ldr"
    path.write_bytes(b"\x00\x01a")
    for args in (["-O", "length_prefix=u16le", "--length-prefix", "u16be"],
                 ["-O", "length_prefix=u16le", "-O", "length_prefix=u16be"]):
        err = sluice.expect_error("cat", path, "-f", "lenprefix", *args).stderr.decode()
        assert "option length_prefix given twice with different values ('u16le' and 'u16be'" \
            in err, err
    got = ipc.open_stream(sluice.run("cat", path, "-f", "lenprefix", "-t", "arrows", "-O",
                                     "length_prefix=u16be", "--length-prefix", "u16be").stdout)
    assert got.read_all().column("message").to_pylist() == [b"a"]


def test_bad_option(sluice, tmp_path):
    path = tmp_path / "x.lenprefix"
    path.write_bytes(b"\x01a")
    proc = sluice.expect_error("convert", path, tmp_path / "o.arrows", "-t", "arrows", "-O",
                               "length_prefix=u24")
    assert "length_prefix" in proc.stderr.decode()
    proc = sluice.expect_error("convert", path, tmp_path / "o.arrows", "-t", "arrows", "-O",
                               "prefix=u8")
    assert "unknown lenprefix option" in proc.stderr.decode()


def test_empty_stream(sluice, tmp_path):
    path = tmp_path / "empty.lenprefix"
    path.write_bytes(b"")
    assert read_messages(sluice, path, "u32le", tmp_path) == []


@pytest.mark.skipif(not MEASURES_RSS,
                    reason="holds a 2 GiB message: too much for the sanitizer build")
def test_message_that_does_not_fit_beside_the_batch_starts_the_next(sluice, tmp_path):
    """Binary offsets are 32-bit: a message that fits alone (under 2 GiB) but
    not beside the batch's bytes ends the batch and starts the next one. It
    used to fail ('no room for a N-byte message'). The big message is a
    sparse hole of the file: zeros that take no disk."""
    big = 2**31 - 100
    path = tmp_path / "huge.lenprefix"
    with open(path, "wb") as f:
        f.write(struct.pack("<I", 200) + b"a" * 200 + struct.pack("<I", big))
        f.seek(4 + 200 + 4 + big)
        f.write(struct.pack("<I", 3) + b"xyz")
    reader = subprocess.Popen([sluice.binary, "-q", "cat", str(path), "-O", "length_prefix=u32le",
                               "-O", "max_row_bytes=2g", "-t", "arrows"], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE)
    import pyarrow.compute as pc
    lengths, heads = [], []
    for batch in ipc.open_stream(reader.stdout):
        column = batch.column(0)
        lengths.append(pc.binary_length(column).to_pylist())
        heads.append([column[i].as_py()[:3] for i in range(len(column))])
        del batch, column
    assert reader.wait(timeout=120) == 0, reader.stderr.read().decode()
    assert sum(lengths, []) == [200, big, 3]
    assert lengths[1] == [big]  # the big one alone in its batch
    assert sum(heads, []) == [b"aaa", b"\0\0\0", b"xyz"]


@pytest.mark.parametrize("how", ["file", "pipe", "gz"])
@pytest.mark.parametrize("limit", [1000, 3_000_000])
def test_max_row_bytes_bounds_a_message(sluice, tmp_path, how, limit):
    """max_row_bytes=N: a message of N bytes reads; one of N + 1 is an error
    naming the object, the message's number and the offset of its prefix,
    and the option, before any room is made for it. 1000 bytes: among
    small messages of one chunk (the fast path); 3 MB: across chunks."""
    import gzip
    for size in (limit, limit + 1):
        msgs = [b"a" * 10, b"b" * 300, b"c" * size, b"d" * 5]
        data = encode("varint", msgs)
        path = tmp_path / ("m.ldr.gz" if how == "gz" else "m.ldr")
        path.write_bytes(gzip.compress(data) if how == "gz" else data)
        cmd = [sluice.binary, "-q", "convert", "-" if how == "pipe" else path,
               tmp_path / "o.arrows", "-t", "arrows", "-f", "lenprefix", "-O",
               f"max_row_bytes={limit}"]
        proc = subprocess.run(cmd, input=data if how == "pipe" else None, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, timeout=120)
        if size == limit:
            assert proc.returncode == 0, proc.stderr.decode()
            table = ipc.open_stream((tmp_path / "o.arrows").read_bytes()).read_all()
            assert [v.as_py() for v in table.column("message")] == msgs
        else:
            check_clean_failure(proc)
            name = "<stdin>" if how == "pipe" else path.name
            offset = len(encode("varint", msgs[:2]))
            assert f"{name}: message 3 (offset {offset}): {size} bytes, longer than {limit} (the " \
                   "lenprefix option max_row_bytes" in proc.stderr.decode(), proc.stderr.decode()


def test_a_message_bomb_stops_before_its_room_is_made(sluice, tmp_path):
    """A .ldr.gz of 0.3 MB whose one message declares (and holds) 300 MB of
    zeros: with the default max_row_bytes (the memory budget, at least 256
    MiB) the declared length is an error at once, in little memory. Before,
    the reader made room for the message as its bytes arrived, and held all
    300 MB."""
    import json
    import sys
    import zlib
    path = tmp_path / "bomb.ldr.gz"
    c = zlib.compressobj(9, zlib.DEFLATED, 31)
    with open(path, "wb") as f:
        f.write(c.compress(uvarint(300_000_000)))
        for _ in range(300):
            f.write(c.compress(bytes(1_000_000)))
        f.write(c.flush())
    assert path.stat().st_size < 1 << 20
    probe = ("import json, resource, subprocess, sys\n"
             "p = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)\n"
             "print(json.dumps([p.returncode, p.stderr.decode(errors='replace'),\n"
             "                  resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss]))\n")
    proc = subprocess.run([sys.executable, "-c", probe, sluice.binary, "-q", "stats", str(path)],
                          stdout=subprocess.PIPE, check=True, timeout=120)
    rc, err, peak_kb = json.loads(proc.stdout)
    assert rc == 1, err
    assert "bomb.ldr.gz: message 1 (offset 0): 300000000 bytes, longer than 268435456" in err, err
    if MEASURES_RSS:
        assert peak_kb < 60 << 10, peak_kb


def _compress(codec: str, data: bytes) -> bytes:
    import bz2
    import gzip
    import lzma
    if codec == "gz":
        return gzip.compress(data)
    if codec == "zst":
        zstandard = pytest.importorskip("zstandard")
        return zstandard.ZstdCompressor().compress(data)
    if codec == "xz":
        return lzma.compress(data)
    return bz2.compress(data)


@pytest.mark.parametrize("named", [False, True])
@pytest.mark.parametrize("codec", ["gz", "zst", "xz", "bz2"])
def test_compressed_stream_is_inflated(sluice, tmp_path, codec, named):
    """x.ldr.gz (.zst, .xz, .bz2) is found to be lenprefix through its
    compression suffix and read inflated, as x.csv.gz is: the messages are
    those Python's decompressor and the reference parser find. Before, the
    compressed bytes were read as framing (gzip's 0x1f a 31-byte message)."""
    rng = random.Random(7)
    msgs = messages_for("varint", rng, 2000)
    path = tmp_path / f"m.ldr.{codec}"
    path.write_bytes(_compress(codec, encode("varint", msgs)))
    out = tmp_path / "o.arrows"
    sluice.run("convert", path, out, "-t", "arrows", *(["-f", "lenprefix"] if named else []))
    got = [v.as_py() for v in ipc.open_stream(out.read_bytes()).read_all().column("message")]
    assert got == reference_parse("varint", encode("varint", msgs)) == msgs


@pytest.mark.parametrize("codec,name", [("gz", "gzip"), ("zst", "zstd"), ("xz", "xz"),
                                        ("bz2", "bzip2")])
def test_compression_option_names_a_piped_stream_s_compression(sluice, tmp_path, codec, name):
    """A pipe has no name to tell that it is compressed (its first bytes
    cannot: 0x1f starts a 31-byte message as well as gzip), so it was read
    as framing; `-O compression=` says what it is (as pandas' and polars'
    `compression=`), checked against the first bytes; `none` reads a .gz
    name's bytes as they are."""
    rng = random.Random(11)
    msgs = messages_for("u32le", rng, 500)
    packed = tmp_path / "m.bin"
    packed.write_bytes(_compress(codec, encode("u32le", msgs)))
    out = tmp_path / "o.arrows"
    with open(packed, "rb") as stdin:
        subprocess.run([str(sluice.binary), "convert", "-q", "-f", "lenprefix", "-O",
                        f"length_prefix=u32le,compression={name}", "-", str(out), "-t", "arrows"],
                       stdin=stdin, check=True)
    got = [v.as_py() for v in ipc.open_stream(out.read_bytes()).read_all().column("message")]
    assert got == msgs
    # Without the option its framing fails: the error says what the input
    # starts as, and the option that reads it (it said only "truncated").
    with open(packed, "rb") as stdin:
        proc = subprocess.run([str(sluice.binary), "cat", "-f", "lenprefix", "-O",
                               "length_prefix=u32le", "-", "-t", "csv"], stdin=stdin,
                              capture_output=True, timeout=60)
    err = proc.stderr.decode()
    assert proc.returncode == 1 and f"(the input starts as {name} data does: " \
        f"compression={name} reads it inflated" in err, err
    plain = tmp_path / "plain.ldr.gz"
    plain.write_bytes(encode("u32le", msgs))
    err = sluice.expect_error("cat", "-f", "lenprefix", "-O",
                              f"length_prefix=u32le,compression={name}", plain).stderr.decode()
    assert f"plain.ldr.gz: compression={name}, but the input does not start as {name} data " \
           "does" in err, err
    raw = tmp_path / "raw.ldr.gz"
    raw.write_bytes(encode("u32le", [packed.read_bytes()]))
    sluice.run("convert", "-q", "-O", "length_prefix=u32le,compression=none", raw, out,
               "-t", "arrows")
    got = [v.as_py() for v in ipc.open_stream(out.read_bytes()).read_all().column("message")]
    assert got == [packed.read_bytes()]
    err = sluice.expect_error("cat", "-O", "compression=lz4", raw).stderr.decode()
    assert "compression='lz4': expected one of infer (from the name), none, gzip" in err, err


def test_plain_bytes_under_a_compressed_name_read_as_they_are(sluice, tmp_path):
    """A server may undo its Content-Encoding: plain bytes named x.ldr.gz
    are read as they are."""
    path = tmp_path / "plain.ldr.gz"
    path.write_bytes(encode("varint", [b"abc", b"d"]))
    out = tmp_path / "o.arrows"
    sluice.run("convert", path, out, "-t", "arrows")
    got = [v.as_py() for v in ipc.open_stream(out.read_bytes()).read_all().column("message")]
    assert got == [b"abc", b"d"]


@pytest.mark.parametrize("name", ["x.parquet.gz", "x.arrow.gz", "x.avro.gz", "x.parquet.zst"])
def test_compressed_object_of_a_reader_that_does_not_inflate(sluice, tmp_path, name):
    """Only CSV and lenprefix inflate: a compressed Parquet, Arrow or Avro
    file is refused by name and compression, not with a message about the
    format's magic bytes."""
    import pyarrow.feather as feather
    import pyarrow.parquet as pq
    table = pa.table({"a": [1, 2]})
    plain = tmp_path / "plain"
    if ".parquet" in name:
        pq.write_table(table, plain)
    elif ".arrow" in name:
        feather.write_feather(table, plain)
    else:
        fastavro = pytest.importorskip("fastavro")
        with open(plain, "wb") as f:
            fastavro.writer(f, {"type": "record", "name": "r",
                                "fields": [{"name": "a", "type": "long"}]}, [{"a": 1}, {"a": 2}])
    (tmp_path / name).write_bytes(_compress(name.rsplit(".", 1)[1], plain.read_bytes()))
    proc = sluice.expect_error("cat", tmp_path / name, "-q")
    err = proc.stderr.decode()
    fmt = name.split(".")[1]
    assert f"{name}: compressed {fmt} input" in err and "decompress it first" in err, err


def test_compressed_object_after_the_first_in_a_glob(sluice, tmp_path):
    """Every object of a glob is checked, not only the first, whose bytes
    chose the format: a compressed Parquet file after a plain one is refused
    as compressed, not with "no PAR1 magic" (pyarrow.dataset and DuckDB
    refuse it too, with a magic-bytes message)."""
    import pyarrow.parquet as pq
    pq.write_table(pa.table({"a": [1, 2]}), tmp_path / "a.parquet")
    pq.write_table(pa.table({"a": [3]}), tmp_path / "plain")
    (tmp_path / "b.parquet.gz").write_bytes(_compress("gz", (tmp_path / "plain").read_bytes()))
    proc = sluice.expect_error("cat", str(tmp_path / "*.parquet*"), "-q")
    err = proc.stderr.decode()
    assert "b.parquet.gz: compressed parquet input (gzip)" in err and "decompress it first" in err, err
