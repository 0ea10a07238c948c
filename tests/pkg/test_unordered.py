"""Unordered delivery: batches come as splits finish, each tagged with its
(split, index); read() puts them back into plan order. Checked exactly against
pyarrow reading the same data, for many splits x many batches, one split, and
zero rows; and an IPC stream written by `sluice cat --unordered` read back in
order with read_ipc."""
import subprocess

import pyarrow as pa
import pyarrow.csv as pacsv
import pytest

import sluice
from pkg_helpers import write_ipc_file, write_ipc_stream


@pytest.fixture(scope="module")
def big_csv(data_dir):
    n = 400_000
    t = pa.table({"id": pa.array(range(n), pa.int64()),
                  "s": pa.array(["v%d" % (i % 1013) for i in range(n)])})
    path = data_dir / "big.csv"
    pacsv.write_csv(t, str(path))
    return path


def test_many_splits_restored(big_csv):
    want = pacsv.read_csv(str(big_csv))
    s = sluice.scan(big_csv, ordered=False, threads=2, batch_rows=4096)
    assert s.num_splits > 1
    batches = list(s)
    tags = [b.tag for b in batches]
    assert len(set(tags)) == len(tags)
    assert len({t[0] for t in tags}) == s.num_splits
    t = sluice.read(big_csv, ordered=False, threads=2, batch_rows=4096)
    assert [b.tag for b in t.batches] == sorted(tags)
    assert pa.table(t).equals(want)
    ordered = sluice.read(big_csv, ordered=True, threads=2, batch_rows=4096)
    assert pa.table(ordered).equals(pa.table(t))
    # read_pandas takes ordered too; its frame is in plan order either way.
    frame = sluice.read_pandas(big_csv, ordered=False, threads=2, batch_rows=4096)
    assert frame["id"].tolist() == want.column("id").to_pylist()


def test_limit_keeps_the_first_rows(big_csv):
    """read(ordered=False, limit=N) is the first N rows, as with
    ordered=True (the table is in plan order either way), not the rows of
    whichever splits finished first; a delayed first split shows it."""
    want = pacsv.read_csv(str(big_csv)).slice(0, 5)
    for _ in range(3):
        t = sluice.read(big_csv, ordered=False, limit=5, threads=2, batch_rows=4096,
                        _scan={"slow_split": 0, "slow_split_delay_us": 200_000})
        assert pa.table(t).equals(want)


def test_single_split(typed, data_dir):
    expected, _ = typed
    path = write_ipc_stream(expected, data_dir / "one_split.arrows", max_chunksize=100)
    t = sluice.read(path, ordered=False)
    assert pa.table(t).equals(expected)
    assert [b.tag for b in t.batches] == sorted(b.tag for b in t.batches)


def test_zero_rows(data_dir):
    schema = pa.schema([("a", pa.int32()), ("b", pa.string())])
    path = write_ipc_file(schema.empty_table(), data_dir / "zero.arrow")
    t = sluice.read(path, ordered=False)
    assert t.num_rows == 0 and pa.schema(t) == schema
    csv = data_dir / "header_only.csv"
    csv.write_text("a,b\n")
    t = sluice.read(csv, ordered=False)
    assert t.num_rows == 0 and t.schema.names == ["a", "b"]


def _cli_has_unordered_tags(sluice_bin):
    out = subprocess.run([sluice_bin, "cat", "--help"], capture_output=True, text=True)
    return "sluice:split" in out.stdout + out.stderr


def test_read_ipc_restores_order(sluice_bin, big_csv, data_dir):
    if not _cli_has_unordered_tags(sluice_bin):
        pytest.skip("this CLI does not tag unordered IPC output")
    out = data_dir / "unordered.arrows"
    with open(out, "wb") as f:
        subprocess.run([sluice_bin, "cat", str(big_csv), "-t", "arrows", "--unordered"],
                       stdout=f, check=True)
    want = pacsv.read_csv(str(big_csv))
    raw = sluice.read_ipc(out, restore_order=False)
    assert all("sluice:split" in b.metadata for b in raw.batches)
    # pyarrow still reads the stream, in whatever order it was written.
    assert pa.ipc.open_stream(str(out)).read_all().num_rows == want.num_rows
    t = sluice.read_ipc(out)
    assert pa.table(t).equals(want)
    # An IPC file (-t arrow) of tagged batches reads too, as polars' read_ipc
    # takes either (it was read as a stream: 'truncated message metadata').
    as_file = data_dir / "unordered.arrow"
    subprocess.run([sluice_bin, "cat", str(big_csv), "-t", "arrow", "--unordered", "-o",
                    str(as_file)], check=True)
    assert pa.table(sluice.read_ipc(as_file)).equals(want)


def test_delayed_first_split_restored(big_csv):
    # The scan engine's test hook holds split 0 back: its batches arrive
    # after later splits' and the table must still come out in plan order.
    want = pacsv.read_csv(str(big_csv))
    delayed = {"slow_split": 0, "slow_split_delay_us": 300_000}
    s = sluice.scan(big_csv, ordered=False, threads=2, batch_rows=4096, _scan=delayed)
    arrival = [b.tag for b in s]
    assert sorted(arrival) == sorted(set(arrival)) and {t[0] for t in arrival} == set(
        range(s.num_splits))
    t = sluice.read(big_csv, ordered=False, threads=2, batch_rows=4096, _scan=delayed)
    assert [b.tag for b in t.batches] == sorted(arrival)
    assert pa.table(t).equals(want)
    # Ordered delivery under the same delay gives the same table.
    o = sluice.read(big_csv, ordered=True, threads=2, batch_rows=4096, _scan=delayed)
    assert pa.table(o).equals(want)


def test_split_ranges_cover_the_table(big_csv):
    want = pacsv.read_csv(str(big_csv))
    n = sluice.scan(big_csv).num_splits
    parts = []
    for first in range(0, n, 2):
        t = sluice.read(big_csv, _scan={"first_split": first, "num_splits": min(2, n - first)})
        assert {b.split for b in t.batches} <= {first, first + 1}
        parts.append(pa.table(t))
    assert pa.concat_tables(parts).equals(want)
    with pytest.raises(sluice.InvalidArgumentError, match="out of range"):
        sluice.read(big_csv, _scan={"first_split": n + 1})


def test_read_ipc_from_a_pipe(sluice_bin, big_csv):
    if not _cli_has_unordered_tags(sluice_bin):
        pytest.skip("this CLI does not tag unordered IPC output")
    want = pacsv.read_csv(str(big_csv))
    proc = subprocess.Popen([sluice_bin, "cat", str(big_csv), "-t", "arrows", "--unordered"],
                            stdout=subprocess.PIPE)
    try:
        t = sluice.read_ipc(proc.stdout)
    finally:
        proc.stdout.close()
        assert proc.wait() == 0
    assert pa.table(t).equals(want)


def test_read_ipc_of_several_tagged_streams(sluice_bin, tmp_path):
    """read_ipc of a list of tagged streams puts each back in order, one
    after the other: each stream's tags count from split 0, and sorting all
    batches by their tags interleaved the streams' rows."""
    if not _cli_has_unordered_tags(sluice_bin):
        pytest.skip("this CLI does not tag unordered IPC output")
    outs = []
    for name, base in (("p1", 0), ("p2", 1000)):
        t = pa.table({"id": list(range(base, base + 6))})
        src = tmp_path / f"{name}.arrows"
        with pa.ipc.new_stream(src, t.schema) as w:
            w.write_table(t, max_chunksize=2)
        out = tmp_path / f"u{name}.arrows"
        with open(out, "wb") as f:
            subprocess.run([sluice_bin, "cat", str(src), "-t", "arrows", "--unordered"],
                           stdout=f, check=True)
        outs.append(out)
    want = list(range(6)) + list(range(1000, 1006))
    assert pa.table(sluice.read_ipc(outs)).column("id").to_pylist() == want
    assert pa.table(sluice.read_ipc(outs, restore_order=False)).num_rows == 12
    # streams of other schemas: the error names them
    other = tmp_path / "other.arrows"
    t = pa.table({"name": ["x"]})
    with pa.ipc.new_stream(other, t.schema) as w:
        w.write_table(t)
    with pytest.raises(sluice.InvalidArgumentError, match="other.arrows has the columns"):
        sluice.read_ipc([outs[0], other])
