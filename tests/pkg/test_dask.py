"""sluice.dask.read on a dask.distributed LocalCluster with worker processes:
partitions are groups of splits read by sluice inside the workers; the result
equals the same data read in-process."""
import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq
import pytest

import sluice

dd = pytest.importorskip("dask.dataframe")
distributed = pytest.importorskip("distributed")
import sluice.dask  # noqa: E402


@pytest.fixture(scope="module")
def cluster():
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as c, distributed.Client(c) as client:
        yield client


@pytest.fixture(scope="module")
def csv_file(tmp_path_factory):
    n = 300_000
    t = pa.table({"id": pa.array(range(n), pa.int64()),
                  "x": pa.array([None if i % 13 == 0 else i * 0.5 for i in range(n)]),
                  "city": pa.array(["c%d" % (i % 31) for i in range(n)])})
    path = tmp_path_factory.mktemp("dask") / "d.csv"
    pacsv.write_csv(t, str(path))
    return path


def same(got, want):
    got = got.reset_index(drop=True)
    assert list(got.columns) == list(want.columns)
    for name in want.columns:
        # dask keeps its own string dtype; compare values.
        assert got[name].astype(object).where(got[name].notna(), None).tolist() == \
               want[name].astype(object).where(want[name].notna(), None).tolist(), name


def test_partitions_are_groups_of_splits(cluster, csv_file):
    n = sluice.scan(csv_file).num_splits
    assert n > 2
    ddf = sluice.dask.read(csv_file, splits_per_partition=2)
    assert ddf.npartitions == (n + 1) // 2
    want = sluice.read_pandas(csv_file)
    same(ddf.compute(), want)
    # Work done in the workers: an aggregate matches pandas in-process.
    got = ddf.groupby("city").x.sum().compute().sort_index()
    exp = want.groupby("city").x.sum().sort_index()
    assert got.round(6).tolist() == exp.round(6).tolist()


def test_columns_and_npartitions(cluster, csv_file):
    ddf = sluice.dask.read(csv_file, columns=["city", "id"], npartitions=3)
    assert list(ddf.columns) == ["city", "id"]
    same(ddf.compute(), sluice.read_pandas(csv_file, columns=["city", "id"]))
    # Any iterable of names, as sluice.read takes: a generator is read once,
    # for the schema, and the partitions used to get what it had left (none).
    ddf = sluice.dask.read(csv_file, columns=(name for name in ["city", "id"]), npartitions=3)
    assert list(ddf.columns) == ["city", "id"]
    same(ddf.compute(), sluice.read_pandas(csv_file, columns=["city", "id"]))


def test_ipc_file_and_empty_input(cluster, tmp_path):
    t = pa.table({"a": pa.array(range(10_000), pa.int32()), "b": pa.array(["v"] * 10_000)})
    path = tmp_path / "t.arrow"
    with pa.ipc.new_file(str(path), t.schema) as w:
        w.write_table(t, max_chunksize=1000)
    same(sluice.dask.read(path, splits_per_partition=3).compute(), t.to_pandas())
    empty = tmp_path / "empty.arrow"
    with pa.ipc.new_file(str(empty), t.schema) as w:
        pass
    got = sluice.dask.read(empty).compute()
    assert len(got) == 0 and list(got.columns) == ["a", "b"]


def test_hive_partitioned_directory(cluster, tmp_path):
    """A partitioned dataset: the partition columns come through the workers
    too, with the values written (pd.read_parquet cannot read this one back:
    pyarrow refuses null partitions in its categoricals)."""
    import pyarrow.parquet as pq
    n = 5000
    t = pa.table({"id": pa.array(range(n), pa.int64()),
                  "year": pa.array([2020 + i % 4 for i in range(n)], pa.int64()),
                  "kind": pa.array([["a b", "c", None][i % 3] for i in range(n)])})
    root = tmp_path / "ds"
    pq.write_to_dataset(t, root, partition_cols=["year", "kind"])
    want = t.to_pandas()
    local = sluice.read(root).to_pandas().sort_values("id").reset_index(drop=True)
    assert local["year"].dtype == "int64"
    same(local, want)
    remote = sluice.dask.read(root, splits_per_partition=2).compute()
    same(remote.sort_values("id"), want)
    assert list(sluice.read(root, hive_partitioning=False).to_pandas().columns) == ["id"]


def test_categorical_categories_are_unknown_to_the_graph(cluster, tmp_path):
    """Each partition's categories come from its own dictionaries: the graph
    says unknown (as dd.read_parquet), so get_dummies and friends ask for
    them instead of planning with none."""
    import dask.dataframe as dd
    import pandas as pd
    df = pd.DataFrame({"c": pd.Categorical(["lo", "mid", "hi"] * 400), "x": range(1200)})
    df.to_parquet(tmp_path / "cat.parquet", row_group_size=300)
    ddf = sluice.dask.read(tmp_path / "cat.parquet", splits_per_partition=1)
    assert not ddf.c.cat.known
    assert ddf.c.cat.known == dd.read_parquet(tmp_path / "cat.parquet").c.cat.known
    got = ddf.compute()
    assert sorted(got.c.cat.categories) == ["hi", "lo", "mid"]
    assert got.c.tolist() == df.c.tolist()


def test_row_filters_reach_the_workers(cluster, tmp_path):
    """filters= (on row-group statistics, rows and partition keys) in every
    partition's task: the splits the statistics exclude are not planned, and
    the workers' rows equal pyarrow's read with the same filters."""
    import pyarrow.parquet as pq
    n = 100_000
    t = pa.table({"i": pa.array(range(n), pa.int64()),
                  "s": pa.array(["k%d" % (i % 7) for i in range(n)]),
                  "part": pa.array([i % 2 for i in range(n)], pa.int64())})
    root = tmp_path / "ds"
    pq.write_to_dataset(t, root, partition_cols=["part"], row_group_size=10_000)
    filters = [("i", ">=", 35_000), ("s", "in", ["k1", "k2"]), ("part", "=", 1)]
    whole = sluice.dask.read(root, splits_per_partition=1)
    ddf = sluice.dask.read(root, filters=filters, splits_per_partition=1)
    # part=0's files are dropped, and so are row groups 0..2 of the other.
    assert ddf.npartitions < whole.npartitions / 2
    want = pq.read_table(root, filters=filters).to_pandas()
    want["part"] = want["part"].astype("int64")
    got = ddf.compute().sort_values("i")
    same(got[list(want.columns)], want.sort_values("i").reset_index(drop=True))


def test_binary_and_list_columns_stay_bytes_and_lists(cluster, tmp_path):
    """Object columns (binary, lists) are not dask's strings: bytes that are
    not UTF-8 come back as the bytes dd.read_parquet gives."""
    import pyarrow.parquet as pq
    t = pa.table({"b": pa.array([b"\xff\x00", b"ok", None] * 100),
                  "l": pa.array([[1], [2, 3], None] * 100),
                  "s": pa.array(["x", None, "y"] * 100)})
    pq.write_table(t, tmp_path / "bin.parquet", row_group_size=50)
    ddf = sluice.dask.read(tmp_path / "bin.parquet", splits_per_partition=2)
    assert str(ddf.dtypes["b"]) == str(dd.read_parquet(tmp_path / "bin.parquet").dtypes["b"])
    got = ddf.compute()
    assert got.b.tolist() == t.column("b").to_pylist()
    assert [None if v is None else list(v) for v in got.l] == t.column("l").to_pylist()
    assert got.s.astype(object).where(got.s.notna(), None).tolist() == t.column("s").to_pylist()


def test_source_changed_after_the_graph_is_an_error(cluster, tmp_path, monkeypatch):
    """A glob that gains a file between building the graph and computing it
    plans other splits: an error, where the tasks read shifted split numbers
    (rows lost silently). A relative path is made absolute when the graph is
    built, so a worker (or the caller) in another directory reads the same."""
    import pyarrow.parquet as pq
    for i in range(4):
        pq.write_table(pa.table({"k": pa.array(range(i * 100, i * 100 + 100))}),
                       tmp_path / f"b{i}.parquet", row_group_size=20)
    monkeypatch.chdir(tmp_path)
    ddf = sluice.dask.read("b*.parquet", splits_per_partition=1)
    monkeypatch.chdir("/")
    assert sorted(ddf.compute()["k"].tolist()) == list(range(400))
    # The scheduler forgets the first run's results before the second runs
    # the same keys (else it may hand them back without running a task).
    import time
    deadline = time.monotonic() + 30
    while cluster.run_on_scheduler(lambda dask_scheduler: len(dask_scheduler.tasks)) > 0:
        assert time.monotonic() < deadline, "the scheduler kept the first run's tasks"
        time.sleep(0.05)
    pq.write_table(pa.table({"k": [-1, -2]}), tmp_path / "b_added.parquet")
    # Computed again at once: the workers' tasks read the objects as they
    # opened them for this graph (once per worker, not once per task).
    assert sorted(ddf.compute()["k"].tolist()) == list(range(400))
    deadline = time.monotonic() + 30
    while cluster.run_on_scheduler(lambda dask_scheduler: len(dask_scheduler.tasks)) > 0:
        assert time.monotonic() < deadline, "the scheduler kept the second run's tasks"
        time.sleep(0.05)
    # Once they let go of it (30 s idle), the source is opened again.
    cluster.run(sluice.dask._close_open_datasets)
    with pytest.raises(sluice.SourceError, match="splits now"):
        ddf.compute()


@pytest.mark.parametrize("rewritten", [{"v": ["x", "y"], "k": [1, 2]},   # reordered
                                       {"k": ["1", "2"], "v": [1, 2]},     # another type
                                       {"k": [1, 2]}])                    # a column dropped
def test_a_source_rewritten_with_other_columns_is_an_error(tmp_path, rewritten):
    """The same number of splits but other columns since the graph was
    built: an error naming both (the frames contradicted the meta: columns
    swapped silently, or a raw ValueError from a type that changed)."""
    import sluice.dask

    path = tmp_path / "f.parquet"
    pq.write_table(pa.table({"k": [1, 2], "v": ["x", "y"]}), path)
    ddf = sluice.dask.read(path)
    pq.write_table(pa.table(rewritten), path)
    sluice.dask._close_open_datasets()
    with pytest.raises(sluice.SourceError, match=r"columns \(.*\) now, \(k: int64, v: string\) "
                       r"when the dask graph was built"):
        ddf.compute(scheduler="sync")


def test_tasks_of_a_graph_open_the_source_once(tmp_path, monkeypatch):
    """The tasks of a graph share the dataset their worker opened: a
    directory of files is opened (every footer read) once per worker and
    graph, not once per task (600 tasks over 1,200 files took 42 s), with
    threads reading it at once; another graph opens it afresh."""
    import pyarrow.dataset as pads
    import pyarrow.parquet as pq
    for i in range(40):
        pq.write_table(pa.table({"k": pa.array(range(i * 50, i * 50 + 50)),
                                 "s": pa.array(["s%d" % (j % 7) for j in range(50)])}),
                       tmp_path / f"p{i:02d}.parquet", row_group_size=25)
    opens = []
    real_open = sluice.dask._open
    monkeypatch.setattr(sluice.dask, "_open", lambda *a, **k: opens.append(1) or real_open(*a, **k))
    want = pads.dataset(tmp_path).to_table().to_pandas()
    for graph in range(2):
        ddf = sluice.dask.read(tmp_path, splits_per_partition=3)
        assert ddf.npartitions > 20
        got = ddf.compute(scheduler="threads", num_workers=4)
        same(got, want)
        assert len(opens) == 2 * (graph + 1), opens  # the graph's, then its tasks' one
    sluice.dask._close_open_datasets()


def test_partitions_with_nulls_keep_numpy_dtypes(cluster, tmp_path):
    """A float or integer column with nulls in some row groups came out
    Float64 / Int64 in those partitions beside float64 / int64 in the meta,
    and describe, quantile and .values failed (TypeError); now they come
    out as dd.read_parquet gives them, with its figures."""
    import pyarrow.parquet as pq
    path = tmp_path / "nulls.parquet"
    pq.write_table(pa.table({"f": [1.0, None, 3.0, 4.0, 5.0, 6.0],
                             "i": [1, None, 3, 4, 5, 6],
                             "b": [True, None, False, True, True, False]}), path,
                   row_group_size=2)
    got = sluice.dask.read(path, npartitions=3)
    want = dd.read_parquet(str(path))
    assert got.npartitions == 3
    assert dict(got.compute().dtypes) == dict(want.compute().dtypes)
    # (dask's quantiles are approximate, by partition: compared loosely)
    g, w = got.f.describe().compute().to_dict(), want.f.describe().compute().to_dict()
    assert {k: g[k] for k in ("count", "mean", "std", "min", "max")} == \
        {k: w[k] for k in ("count", "mean", "std", "min", "max")}
    assert 1 <= got.i.quantile(0.5).compute() <= 6
    assert got.f.values.sum().compute() == pytest.approx(want.f.values.sum().compute(),
                                                          nan_ok=True)
    same(got.compute(), want.compute())


def test_float32_and_float16_with_nulls_keep_their_width(cluster, tmp_path):
    """A partition whose float32 / float16 column has nulls came out float64
    / float32 beside the meta's float32 / float16 (and the other
    partitions'); now every partition has the meta's dtypes, as
    dd.read_parquet gives them."""
    import pyarrow.parquet as pq
    pq.write_table(pa.table({"f32": pa.array([1.5, None], pa.float32()),
                             "f16": pa.array([1.5, None], pa.float16())}), tmp_path / "a.parquet")
    pq.write_table(pa.table({"f32": pa.array([2.5, 3.5], pa.float32()),
                             "f16": pa.array([2.0, 1.0], pa.float16())}), tmp_path / "b.parquet")
    got = sluice.dask.read(str(tmp_path / "*.parquet"), splits_per_partition=1)
    want = dd.read_parquet(str(tmp_path / "*.parquet"))
    assert got.npartitions == want.npartitions == 2
    assert dict(got.dtypes) == dict(want.dtypes) == {"f32": "float32", "f16": "float16"}
    for i in range(2):
        part, peer = got.partitions[i].compute(), want.partitions[i].compute()
        assert dict(part.dtypes) == dict(peer.dtypes) == dict(want.dtypes), i
        assert part.isna().equals(peer.isna()) and part.fillna(0).equals(peer.fillna(0))
    assert dict(got.compute().dtypes) == dict(want.compute().dtypes)


def test_bytes_and_bad_arguments(cluster, tmp_path):
    """A file's contents as bytes are read as data (they were taken for a
    path: a column named after the working directory); whole-table options
    and partition counts below 1 are refused by name; npartitions spreads
    the splits over that many partitions (ceil(n / N) each left fewer)."""
    data = b"a,b\n1,2\n3,4\n"
    got = sluice.dask.read(data).compute()
    assert got.to_dict("list") == {"a": [1, 3], "b": [2, 4]}
    for bad in ({"limit": 10}, {"ordered": False}):
        with pytest.raises(TypeError, match=f"takes no {next(iter(bad))}="):
            sluice.dask.read(data, **bad)
    for bad in ({"npartitions": 0}, {"npartitions": -2}, {"splits_per_partition": 0}):
        with pytest.raises(ValueError, match="must be a positive integer"):
            sluice.dask.read(data, **bad)
    import pyarrow.parquet as pq
    path = tmp_path / "many.parquet"  # 20 row groups, 20 splits
    pq.write_table(pa.table({"id": list(range(20_000))}), path, row_group_size=1000)
    assert sluice.scan(path).num_splits == 20
    ddf = sluice.dask.read(path, npartitions=6)  # ceil(20 / 6) = 4 each made 5
    assert ddf.npartitions == 6
    assert ddf.compute()["id"].tolist() == list(range(20_000))


def test_repeated_column_names(cluster, tmp_path):
    """Two columns of one name (an IPC file pyarrow wrote): the partitions'
    dtype fixing skipped them only after asking a DataFrame for .dtype."""
    t = pa.Table.from_arrays([pa.array([1, None, 3]), pa.array([1.5, 2.5, None])],
                             names=["x", "x"])
    path = tmp_path / "twice.arrow"
    with pa.ipc.new_file(path, t.schema) as w:
        w.write_table(t)
    got = sluice.dask.read(path).compute()
    want = sluice.read_pandas(path)
    assert list(got.columns) == ["x", "x"]
    assert got.iloc[:, 1].tolist()[:2] == want.iloc[:, 1].tolist()[:2]
