"""A Scanner that ends early says so: next() after close() (in this thread or
one waiting for a batch) or after an export raises ValueError, as a closed
file's read does; StopIteration means every batch was taken. close() lets go
of the source at once."""
import os
import threading
import time

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv
import pytest

import sluice

ROWS = 200_000


@pytest.fixture(scope="module")
def big_csv(tmp_path_factory):
    path = tmp_path_factory.mktemp("scanner") / "x.csv"
    pacsv.write_csv(pa.table({"i": np.arange(ROWS), "s": ["s%d" % (i % 1000) for i in range(ROWS)]}),
                    path)
    return path


def test_next_after_close_or_export_raises(big_csv):
    sc = sluice.scan(big_csv, batch_rows=1000)
    assert next(sc).num_rows == 1000
    sc.close()
    with pytest.raises(ValueError, match="the scan was closed"):
        next(sc)  # it was a silent StopIteration
    with pytest.raises(ValueError, match="the scan was closed"):
        pa.RecordBatchReader.from_stream(sc)
    sc.close()  # closing again does nothing
    assert sc.format == "csv" and sc.num_splits >= 1  # still known

    sc = sluice.scan(big_csv)
    assert pa.RecordBatchReader.from_stream(sc).read_all().num_rows == ROWS
    with pytest.raises(ValueError, match="handed to an Arrow consumer"):
        next(sc)  # it yielded nothing, silently

    sc = sluice.scan(big_csv)
    assert sum(b.num_rows for b in sc) == ROWS
    for _ in range(2):  # the end, and again the end
        with pytest.raises(StopIteration):
            next(sc)
    with pytest.raises(ValueError, match="already consumed"):
        pa.RecordBatchReader.from_stream(sc)
    sc.close()
    with pytest.raises(StopIteration):  # it ended before it was closed
        next(sc)


def consume_in_thread(sc, per_batch=0.0):
    got, errors = [], []

    def run():
        try:
            for b in sc:
                got.append(b.num_rows)
                time.sleep(per_batch)
        except ValueError as e:
            errors.append(e)

    th = threading.Thread(target=run)
    th.start()
    return th, got, errors


def test_close_from_another_thread_is_not_a_normal_end(big_csv):
    # Between batches: the consumer's loop ended normally after part of the rows.
    sc = sluice.scan(big_csv, batch_rows=100, threads=1)
    th, got, errors = consume_in_thread(sc, per_batch=0.001)
    time.sleep(0.05)
    sc.close()
    th.join(30)
    assert 0 < sum(got) < ROWS
    assert len(errors) == 1 and "the scan was closed" in str(errors[0])
    # While the consumer waits for a batch that is slow to come.
    sc = sluice.scan(big_csv, _scan={"slow_split": 0, "slow_split_delay_us": 2_000_000})
    th, got, errors = consume_in_thread(sc)
    time.sleep(0.3)
    sc.close()
    th.join(30)
    assert got == [] and len(errors) == 1 and "the scan was closed" in str(errors[0])


def test_two_consumers_both_end_normally(big_csv):
    # The end taken by one thread is an end for the other too, not an error.
    for _ in range(3):
        sc = sluice.scan(big_csv, batch_rows=1000)
        runs = [consume_in_thread(sc) for _ in range(2)]
        for th, _, _ in runs:
            th.join(60)
        assert sum(sum(got) for _, got, _ in runs) == ROWS
        assert [errors for _, _, errors in runs] == [[], []]


def held(path):
    """Descriptors and mappings of `path` in this process."""
    n = 0
    for fd in os.listdir("/proc/self/fd"):
        try:
            n += os.readlink("/proc/self/fd/" + fd) == str(path)
        except OSError:
            pass
    with open("/proc/self/maps") as f:
        return n + sum(line.rstrip("\n").endswith(" " + str(path)) for line in f)


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="needs /proc")
def test_close_lets_go_of_the_source(big_csv, tmp_path):
    # The source stayed open for as long as the scanner object lived; then
    # the scan's thread let it go some time after close() had returned.
    # (A copy: a scan closed above while a split was slow to come lets go
    # of big_csv when that split is done.)
    path = tmp_path / "copy.csv"
    path.write_bytes(big_csv.read_bytes())
    with sluice.scan(path) as sc:
        next(sc)
        assert held(path) >= 1  # (mapped: no descriptor needs to stay open)
    assert held(path) == 0 and sc is not None


@pytest.mark.parametrize("fmt", ["parquet", "csv", "arrow"])
@pytest.mark.parametrize("ordered", [True, False])
def test_limit_through_the_stream_gives_batches_of_their_rows(tmp_path, fmt, ordered):
    """A scan's limit cut the last batch's length but not its columns: pyarrow's
    importer, which takes a batch's children as its columns, got 6 values in
    a 5-row table (wrong sums, to_pandas failed)."""
    import pyarrow.feather as feather
    import pyarrow.parquet as pq
    t = pa.table({"i": pa.array([1, 2, None, 4, 5, -6, 7, 8, 9]), "s": list("abcdefghi")})
    path = tmp_path / ("t." + fmt)
    if fmt == "parquet":
        pq.write_table(t, path, row_group_size=3)
    elif fmt == "csv":
        pacsv.write_csv(t, path)
    else:
        feather.write_feather(t, path, chunksize=3, compression="uncompressed")
    got = pa.RecordBatchReader.from_stream(
        sluice.scan(path, limit=5, ordered=ordered)).read_all()
    got.validate(full=True)
    want = t.slice(0, 5)
    if ordered:
        assert got.to_pydict() == want.to_pydict()
    assert got.num_rows == 5 and all(len(c) == 5 for c in got.columns)
