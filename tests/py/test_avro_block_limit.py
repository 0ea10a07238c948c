"""Avro blocks are decoded whole: max_block_bytes (by default the memory
budget, at least 256 MiB) bounds what a block may take in memory, its
decompressed bytes and the bytes copied from a pipe. A block past it is an
error naming the object, the block, its byte and the option, found as soon
as the bytes pass the limit (a 3 GiB block of zeros in a 98 KB zstandard
file took 4.2 GB before). Files are written here by hand (header, one block
of the codec's bytes), so that the decompressed size is known exactly; the
rows read are compared with fastavro's reading of the same file."""

from __future__ import annotations

import bz2
import json
import lzma
import subprocess
import zlib
from pathlib import Path

import pyarrow.ipc as ipc
import pytest

from conftest import MEASURES_RSS, check_clean_failure, uvarint

fastavro = pytest.importorskip("fastavro")
zstandard = pytest.importorskip("zstandard")
cramjam = pytest.importorskip("cramjam")

SCHEMA = {"type": "record", "name": "R", "fields": [{"name": "a", "type": "int"}]}
SYNC = bytes(range(7, 23))
DEFAULT_LIMIT = 256 << 20
MiB = 1 << 20


def zigzag(n: int) -> bytes:
    return uvarint((n << 1) ^ (n >> 63))


def read_long(data: bytes, at: int) -> tuple:
    shift = n = 0
    while True:
        b = data[at]
        at += 1
        n |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            return (n >> 1) ^ -(n & 1), at


def container(codec: str, blocks) -> tuple:
    """An object container file of SCHEMA: (its bytes, the byte offset of
    each block). `blocks`: (object count, the block's codec bytes)."""
    meta = {b"avro.schema": json.dumps(SCHEMA).encode(), b"avro.codec": codec.encode()}
    out = bytearray(b"Obj\x01" + zigzag(len(meta)))
    for k, v in meta.items():
        out += zigzag(len(k)) + k + zigzag(len(v)) + v
    out += zigzag(0) + SYNC
    offsets = []
    for count, data in blocks:
        offsets.append(len(out))
        out += zigzag(count) + zigzag(len(data)) + data + SYNC
    return bytes(out), offsets


def compressor(codec: str):
    """A streaming compressor (compress(chunk) -> bytes, flush() -> bytes) of
    the codec's block bytes."""
    if codec == "deflate":
        return zlib.compressobj(9, zlib.DEFLATED, -15)
    if codec == "bzip2":
        return bz2.BZ2Compressor(9)
    if codec == "xz":
        return lzma.LZMACompressor(format=lzma.FORMAT_XZ, preset=0)
    if codec == "lzma":  # avro-c's: a raw LZMA2 stream
        return lzma.LZMACompressor(format=lzma.FORMAT_RAW,
                                   filters=[{"id": lzma.FILTER_LZMA2, "preset": 0}])
    raise ValueError(codec)


def compress(codec: str, data: bytes) -> bytes:
    if codec == "snappy":
        return bytes(cramjam.snappy.compress_raw(data)) + zlib.crc32(data).to_bytes(4, "big")
    if codec == "zstandard":  # one frame that declares its size, as writers write them
        return zstandard.ZstdCompressor().compress(data)
    if codec == "zstandard-stream":  # no size in the frame: decoded as a stream
        return zstandard.ZstdCompressor(write_content_size=False).compress(data)
    c = compressor(codec)
    return c.compress(data) + c.flush()


def avro_codec(codec: str) -> str:
    return "zstandard" if codec.startswith("zstandard") else codec


def sluice_convert(sluice, src, out: Path, *options, stdin=None, preexec_fn=None):
    cmd = [sluice.binary, "-q", *options, "convert", "-" if stdin is not None else src, out,
           "-t", "arrows"]
    if stdin is not None:
        cmd += ["-f", "avro"]
    return subprocess.run([str(c) for c in cmd], input=stdin, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, preexec_fn=preexec_fn, timeout=300)


def same_as_fastavro(path: Path, out: Path) -> None:
    table = ipc.open_stream(out.read_bytes()).read_all()
    with open(path, "rb") as f:
        rows = list(fastavro.reader(f))
    assert table.num_rows == len(rows)
    for name in table.column_names:
        assert table.column(name).to_pylist() == [r[name] for r in rows], name


CODECS = ["deflate", "snappy", "zstandard", "zstandard-stream", "bzip2", "xz", "lzma"]


@pytest.mark.parametrize("codec", CODECS)
def test_a_block_of_exactly_the_limit_reads(sluice, tmp_path, codec):
    """max_block_bytes=N: a block that decompresses to N bytes reads (as
    fastavro reads it; avro-c's lzma, which fastavro lacks, as written); with
    N - 1 it is an error naming the object, the block, the byte where its
    header starts, its compressed size, the limit and the option. Snappy and
    zstandard frames that declare their size are refused by the declaration,
    before any decoding."""
    values = [(i * 7919) % 100_000 - 50_000 for i in range(40_000)]
    raw = b"".join(zigzag(v) for v in values)
    data = compress(codec, raw)
    path = tmp_path / f"{codec}.avro"
    content, offsets = container(avro_codec(codec), [(len(values), data)])
    path.write_bytes(content)
    out = tmp_path / "o.arrows"
    proc = sluice_convert(sluice, path, out, "-O", f"max_block_bytes={len(raw)}")
    assert proc.returncode == 0, proc.stderr.decode()
    table = ipc.open_stream(out.read_bytes()).read_all()
    if codec == "lzma":
        assert table.column("a").to_pylist() == values
    else:
        same_as_fastavro(path, out)
    out.unlink()
    proc = sluice_convert(sluice, path, out, "-O", f"max_block_bytes={len(raw) - 1}")
    check_clean_failure(proc)
    err = proc.stderr.decode()
    name = avro_codec(codec)
    if codec in ("snappy", "zstandard"):
        why = f"{name} data declare {len(raw)} decompressed bytes"
    else:
        why = f"{name} data decompress to more than {len(raw) - 1} bytes"
    assert f"{path.name}: block 0 at byte {offsets[0]}: its {len(data)} bytes of {why}" in err, err
    assert "max_block_bytes" in err and "raise it" in err, err
    assert not out.exists()


def bomb(codec: str, total: int) -> bytes:
    """A block's codec bytes that inflate to `total` zero bytes (`total`
    objects of int 0), made in a few seconds at most."""
    chunk = bytes(MiB)
    assert total % MiB == 0
    if codec == "deflate":
        # After a full flush deflate starts afresh: every MiB compresses to
        # the same bytes.
        c = zlib.compressobj(9, zlib.DEFLATED, -15)
        piece = c.compress(chunk) + c.flush(zlib.Z_FULL_FLUSH)
        return piece * (total // MiB) + c.flush()
    if codec.startswith("zstandard"):
        sized = codec == "zstandard"
        c = zstandard.ZstdCompressor(level=1, write_content_size=sized).compressobj(
            size=total if sized else -1)
        return b"".join(c.compress(chunk) for _ in range(total // MiB)) + c.flush()
    c = compressor(codec)
    return b"".join(c.compress(chunk) for _ in range(total // MiB)) + c.flush()


def _limit_address_space(limit: int):
    def apply():
        import resource
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    return apply if MEASURES_RSS else None


@pytest.mark.parametrize("codec", ["deflate", "zstandard", "zstandard-stream", "bzip2", "xz",
                                   "lzma"])
def test_a_block_bomb_stops_at_the_default_limit(sluice, tmp_path, codec):
    """A block of a few KB that inflates to 320 MiB of zeros (a forged count
    of int 0 objects), read with a 16 MiB budget: the default limit (the
    budget, at least 256 MiB) stops it as its output passes 256 MiB, within
    a 640 MiB address space. Before, the block was decompressed whole (its
    buffer doubling to 512 MiB: out of memory here; a 3 GiB block took 4.2
    GB)."""
    total = 320 * MiB
    data = bomb(codec, total)
    assert len(data) < 4 * MiB
    path = tmp_path / f"bomb_{codec}.avro"
    content, offsets = container(avro_codec(codec), [(total, data)])
    path.write_bytes(content)
    out = tmp_path / "o.arrows"
    proc = sluice_convert(sluice, path, out, "--budget", "16M", "--threads", "2",
                          preexec_fn=_limit_address_space(640 * MiB))
    check_clean_failure(proc)
    err = proc.stderr.decode()
    name = avro_codec(codec)
    if codec == "zstandard":
        why = f"{name} data declare {total} decompressed bytes (the frame header), more than " \
              f"{DEFAULT_LIMIT}"
    else:
        why = f"{name} data decompress to more than {DEFAULT_LIMIT} bytes"
    assert f"{path.name}: block 0 at byte {offsets[0]}: its {len(data)} bytes of {why} (the " \
           "Avro option max_block_bytes, by default the memory budget and at least 256 MiB: " \
           "raise it" in err, err
    assert not out.exists()


def test_a_piped_block_is_bounded_by_its_declared_size(sluice, tmp_path):
    """From a pipe a block is gathered in memory: one that declares more
    bytes than max_block_bytes is an error before they are read. A local
    file's uncompressed blocks are mapped, not copied, so the same file
    reads (as fastavro reads it)."""
    path = tmp_path / "big_block.avro"
    rows = [{"a": i} for i in range(700_000)]  # about 2 MB in one block
    with open(path, "wb") as f:
        fastavro.writer(f, SCHEMA, rows, codec="null", sync_interval=1 << 30)
    data = path.read_bytes()
    out = tmp_path / "o.arrows"
    proc = sluice_convert(sluice, None, out, "-O", "max_block_bytes=1m", stdin=data)
    check_clean_failure(proc)
    err = proc.stderr.decode()
    start = data.index(data[-16:]) + 16  # the first block's header
    count, at = read_long(data, start)
    size, _ = read_long(data, at)
    assert count == len(rows)
    assert f"<stdin>: block 0 at byte {start}: {size} bytes declared, more than 1048576 (the " \
           "Avro option max_block_bytes" in err, err
    proc = sluice_convert(sluice, path, out, "-O", "max_block_bytes=1m")
    assert proc.returncode == 0, proc.stderr.decode()
    same_as_fastavro(path, out)


@pytest.mark.parametrize("codec", ["null", "deflate", "snappy", "zstandard", "bzip2", "xz"])
def test_an_ordinary_large_block_reads_as_fastavro_reads_it(sluice, tmp_path, codec):
    """A block of about 4 MB (fastavro's sync_interval set high), read with
    the default limit and a small budget, is what fastavro reads."""
    schema = {"type": "record", "name": "R", "fields": [
        {"name": "a", "type": "long"}, {"name": "x", "type": "double"},
        {"name": "s", "type": "string"}]}
    rows = [{"a": i * 1_000_003, "x": i / 7, "s": f"row {i} " + "abc" * (i % 5)}
            for i in range(150_000)]
    path = tmp_path / f"{codec}.avro"
    with open(path, "wb") as f:
        fastavro.writer(f, schema, rows, codec=codec, sync_interval=1 << 30)
    out = tmp_path / "o.arrows"
    proc = sluice_convert(sluice, path, out, "--budget", "16M")
    assert proc.returncode == 0, proc.stderr.decode()
    same_as_fastavro(path, out)


def test_bad_max_block_bytes(sluice, tmp_path):
    path = tmp_path / "a.avro"
    with open(path, "wb") as f:
        fastavro.writer(f, SCHEMA, [{"a": 1}])
    for bad in ("0", "x", "17g"):
        proc = sluice_convert(sluice, path, tmp_path / "o.arrows", "-O", f"max_block_bytes={bad}")
        check_clean_failure(proc)
        assert f"Avro option max_block_bytes='{bad}': expected a size from 1 byte to 16g" in \
            proc.stderr.decode(), proc.stderr.decode()


def test_a_bzip2_block_of_several_streams_reads_whole(sluice, tmp_path):
    """A bzip2 block that is several bzip2 streams one after the other (as
    `bz2.compress(a) + bz2.compress(b)`, or pbzip2, writes them) is all of
    them, as fastavro (Python's bz2) reads it; it was cut off after the first
    stream. Trailing bytes that are no bzip2 stream are still an error (Python's
    bz2 drops them, and with them a second stream whose header is damaged:
    rows lost without a word)."""
    values = b"".join(zigzag(i) for i in range(1000))
    half = len(b"".join(zigzag(i) for i in range(500)))
    streams = bz2.compress(values[:half]) + bz2.compress(values[half:])
    data, _ = container("bzip2", [(1000, streams)])
    path = tmp_path / "multi.avro"
    path.write_bytes(data)
    out = tmp_path / "o.arrows"
    proc = sluice_convert(sluice, path, out)
    assert proc.returncode == 0, proc.stderr.decode()
    same_as_fastavro(path, out)
    assert ipc.open_stream(out.read_bytes()).read_all().num_rows == 1000

    data, _ = container("bzip2", [(1000, streams + b"junk")])
    path.write_bytes(data)
    proc = sluice_convert(sluice, path, out)
    check_clean_failure(proc)
    assert "bzip2: corrupt data" in proc.stderr.decode(), proc.stderr.decode()


def test_a_boolean_byte_other_than_0_or_1_is_an_error(sluice, tmp_path):
    """The spec writes a boolean as one byte, 0 or 1. Another byte is refused
    with the object and byte (fastavro reads 2 as true, Java as false: the
    readers disagree, so no answer would be right)."""
    schema = {"type": "record", "name": "R", "fields": [{"name": "b", "type": "boolean"}]}
    meta = {b"avro.schema": json.dumps(schema).encode(), b"avro.codec": b"null"}
    head = bytearray(b"Obj\x01" + zigzag(len(meta)))
    for k, v in meta.items():
        head += zigzag(len(k)) + k + zigzag(len(v)) + v
    head += zigzag(0) + SYNC
    path = tmp_path / "b.avro"
    out = tmp_path / "o.arrows"
    path.write_bytes(bytes(head) + zigzag(3) + zigzag(3) + b"\x01\x00\x01" + SYNC)
    proc = sluice_convert(sluice, path, out)
    assert proc.returncode == 0, proc.stderr.decode()
    same_as_fastavro(path, out)
    path.write_bytes(bytes(head) + zigzag(3) + zigzag(3) + b"\x01\x00\x02" + SYNC)
    proc = sluice_convert(sluice, path, out)
    check_clean_failure(proc)
    err = proc.stderr.decode()
    assert "object 2: field 'b': invalid boolean byte 0x02 (a boolean is 0 or 1)" in err, err
