"""`sluice cat --unordered -t arrows` tags every record batch message with its
position (custom metadata sluice:split / sluice:batch): pyarrow still reads
the stream, and sorting the batches by their tags gives back the table in
its original order."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.ipc as ipc
import pytest


def _table(rows: int) -> pa.Table:
    rng = np.random.default_rng(7)
    return pa.table({"id": np.arange(rows, dtype=np.int64),
                     "x": rng.random(rows),
                     "s": pa.array([f"r{i}" for i in range(rows)])})


def _read_tagged(data: bytes):
    reader = ipc.open_stream(pa.BufferReader(data))
    out = []
    while True:
        try:
            batch, meta = reader.read_next_batch_with_custom_metadata()
        except StopIteration:
            break
        out.append((batch, meta))
    return reader.schema, out


@pytest.mark.parametrize("threads", [1, 2, 4])
def test_unordered_stream_tags_restore_order(sluice, tmp_path, threads):
    table = _table(50_000)
    src = tmp_path / "multi.arrow"
    with ipc.new_file(src, table.schema) as w:
        for batch in table.to_batches(max_chunksize=3_000):  # 17 batches = 17 splits
            w.write_batch(batch)
    proc = sluice.run("cat", "--unordered", "--threads", threads, "-t", "arrows", src)
    schema, tagged = _read_tagged(proc.stdout)
    assert schema == table.schema
    assert len(tagged) == 17
    positions = []
    for batch, meta in tagged:
        assert meta is not None, "every batch carries its position"
        positions.append((int(meta[b"sluice:split"]), int(meta[b"sluice:batch"])))
    # One split per record batch of the file: the tags name them all, once.
    assert sorted(positions) == [(i, 0) for i in range(17)]
    restored = [b for _, b in sorted(zip(positions, (b for b, _ in tagged)),
                                     key=lambda pair: pair[0])]
    assert pa.Table.from_batches(restored, schema=table.schema).equals(table)


def test_ordered_stream_has_no_tags(sluice, tmp_path):
    table = _table(10_000)
    src = tmp_path / "multi.arrow"
    with ipc.new_file(src, table.schema) as w:
        for batch in table.to_batches(max_chunksize=4_000):
            w.write_batch(batch)
    proc = sluice.run("cat", "-t", "arrows", src)
    _, tagged = _read_tagged(proc.stdout)
    assert [m for _, m in tagged] == [None] * 3
    assert pa.Table.from_batches([b for b, _ in tagged]).equals(table)


@pytest.mark.parametrize("src_kind", ["file", "stream"])
def test_convert_keeps_each_batchs_custom_metadata(sluice, tmp_path, src_kind):
    """A record batch's custom metadata goes through `convert` and `cat -t`
    to the output IPC file or stream, as pyarrow reads it back; with
    --unordered the position tags are added to it."""
    table = _table(9_000)
    src = tmp_path / f"meta.{'arrow' if src_kind == 'file' else 'arrows'}"
    opener = ipc.new_file if src_kind == "file" else ipc.new_stream
    metas = [{"part": str(i), "note": "x" * i} for i in range(3)]
    with opener(src, table.schema) as w:
        for batch, meta in zip(table.to_batches(max_chunksize=3_000), metas):
            w.write_batch(batch, custom_metadata=meta)
    want = [{k.encode(): v.encode() for k, v in m.items()} for m in metas]
    for out_name in ("out.arrows", "out.arrow"):
        out = tmp_path / out_name
        sluice.run("convert", src, out)
        if out_name.endswith(".arrows"):
            _, tagged = _read_tagged(out.read_bytes())
            got = [dict(m) for _, m in tagged]
        else:
            reader = ipc.open_file(out)
            got = [dict(reader.get_batch_with_custom_metadata(i)[1])
                   for i in range(reader.num_record_batches)]
        assert got == want, out_name
    proc = sluice.run("cat", "--unordered", "-t", "arrows", src)
    _, tagged = _read_tagged(proc.stdout)
    placed = []
    for batch, meta in tagged:
        meta = dict(meta)
        position = (int(meta.pop(b"sluice:split")), int(meta.pop(b"sluice:batch")))
        placed.append((position, meta))
    assert [m for _, m in sorted(placed, key=lambda pm: pm[0])] == want


def test_tags_of_an_earlier_run_are_not_passed_on(sluice, tmp_path):
    """A stream tagged by one unordered run and read again: an ordered run
    leaves its tags out (it passed them on, so that a reader restoring order
    mixed two joined streams' rows), and an unordered run replaces them (a
    second pair of keys was added: pyarrow's metadata[b'sluice:split'] gave
    the stale first). The batches' other keys stay."""
    table = _table(6)
    src = tmp_path / "p.arrows"
    with ipc.new_stream(src, table.schema) as w:
        for i, batch in enumerate(table.to_batches(max_chunksize=2)):
            w.write_batch(batch, custom_metadata={"part": str(i)})
    tagged = tmp_path / "u.arrows"
    tagged.write_bytes(sluice.run("cat", "--unordered", "-t", "arrows", src).stdout)
    _, ordered = _read_tagged(sluice.run("cat", "-t", "arrows", tagged).stdout)
    assert [dict(m) for _, m in ordered] == [{b"part": str(i).encode()} for i in range(3)]
    _, again = _read_tagged(sluice.run("cat", "--unordered", "-t", "arrows", tagged, tagged).stdout)
    seen = set()
    for batch, meta in again:
        keys = meta.keys()
        assert sorted(keys) == [b"part", b"sluice:batch", b"sluice:split"], keys
        seen.add((int(meta[b"sluice:split"]), int(meta[b"sluice:batch"])))
    assert len(seen) == len(again)  # this run's positions: one per batch
