"""A column asked for twice (columns=["a", "b", "a"], sluice cat -c a,b,a)
comes out twice, as pyarrow's Table.select gives it, from every reader, over
several splits and threads, whole splits or column parts, placed (gathered)
or not. The scan engine asks readers for each column once and makes the
repeat a view of the same decoded child; the test checks that through the
Arrow C stream (the repeat shares its buffers with the first)."""
import gzip
import subprocess

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv
import pyarrow.ipc as ipc
import pyarrow.parquet as pq
import pytest

import sluice

ROWS = 5000


def _table():
    n = ROWS
    return pa.table({
        "id": pa.array(range(n), pa.int64()),
        "x": pa.array([i * 0.5 if i % 11 else None for i in range(n)], pa.float64()),
        "s": pa.array([None if i % 7 == 3 else "s%d" % i for i in range(n)]),
        "d": pa.array(["k%d" % (i % 5) for i in range(n)]).dictionary_encode(),
        "l": pa.array([None if i % 9 == 4 else list(range(i % 4)) for i in range(n)],
                      pa.list_(pa.int64())),
        "st": pa.array([{"p": i, "q": "q%d" % i} for i in range(n)],
                       pa.struct([("p", pa.int32()), ("q", pa.string())])),
    })


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """{name: (path, format options, pyarrow's reading of the file)}."""
    d = tmp_path_factory.mktemp("repeat")
    t = _table()
    out = {}
    # No null strings: pyarrow reads an empty CSV field as "", sluice as null.
    flat = t.select(["id", "x"]).append_column("s", t["s"].fill_null("-"))
    csv_path = d / "t.csv"
    pacsv.write_csv(flat, csv_path)
    want_csv = pacsv.read_csv(csv_path)
    out["csv"] = (csv_path, {"split_size": "16k"}, want_csv)
    gz = d / "t.csv.gz"
    gz.write_bytes(gzip.compress(csv_path.read_bytes()))
    out["csv.gz"] = (gz, {}, want_csv)
    num = d / "num.csv"  # all numeric: the CSV reader's fused path
    pacsv.write_csv(t.select(["id"]).append_column("x", t["x"].fill_null(0.0)), num)
    out["csv-numeric"] = (num, {"split_size": "8k"}, pacsv.read_csv(num))
    pq_path = d / "t.parquet"
    pq.write_table(t, pq_path, row_group_size=1200)
    out["parquet"] = (pq_path, {}, pq.read_table(pq_path))
    one_rg = d / "one.parquet"  # one row group: column parts on several threads
    pq.write_table(t, one_rg)
    out["parquet-1rg"] = (one_rg, {}, pq.read_table(one_rg))
    arrow = d / "t.arrow"
    with ipc.new_file(arrow, t.schema) as w:
        for b in t.to_batches(max_chunksize=700):
            w.write_batch(b)
    out["arrow"] = (arrow, {}, ipc.open_file(arrow).read_all())
    arrows = d / "t.arrows"
    with ipc.new_stream(arrows, t.schema) as w:
        for b in t.to_batches(max_chunksize=700):
            w.write_batch(b)
    out["arrows"] = (arrows, {}, ipc.open_stream(arrows.read_bytes()).read_all())
    avro = d / "t.avro"
    sluice.write(t, str(avro))
    # pyarrow reads no Avro: the reference is sluice's reading of every column.
    out["avro"] = (avro, {}, pa.table(sluice.read(str(avro), threads=1)))
    return out


def _check(got, want, names):
    got = got if isinstance(got, pa.Table) else pa.table(got)
    assert got.column_names == names
    ref = want.select(names)
    for i, name in enumerate(names):
        g, w = got.column(i), ref.column(i)
        assert g.type == w.type, (name, g.type, w.type)
        assert g.to_pylist() == w.to_pylist(), name


def _names(want):
    """first, second, first again (and the last column repeated too)."""
    cols = want.column_names
    return [cols[0], cols[-1], cols[0], cols[1], cols[-1]]


def _shares(batch, i, j):
    """Whether columns i and j of a record batch are views of one buffer."""
    a, b = batch.column(i), batch.column(j)
    return [x.address if x else 0 for x in a.buffers()] == \
           [x.address if x else 0 for x in b.buffers()]


@pytest.mark.parametrize("name", ["csv", "csv.gz", "csv-numeric", "parquet", "parquet-1rg",
                                  "arrow", "arrows", "avro"])
@pytest.mark.parametrize("threads", [1, 4])
def test_package(files, name, threads):
    path, opts, want = files[name]
    names = _names(want)
    for ordered in (True, False):
        got = sluice.read(str(path), columns=names, threads=threads, ordered=ordered, **opts)
        _check(got, want, names)
        # A limit counts rows, not columns.
        got = sluice.read(str(path), columns=names, threads=threads, limit=1234, **opts)
        _check(got, want.slice(0, 1234), names)
    # Batch by batch (no gather): the repeat is the same decoded child.
    n = 0
    with sluice.scan(str(path), columns=names, threads=threads, **opts) as sc:
        for b in sc:
            rb = pa.record_batch(b) if not isinstance(b, pa.RecordBatch) else b
            assert rb.num_columns == len(names)
            assert _shares(rb, 0, 2) and _shares(rb, 1, 4)
            n += rb.num_rows
    assert n == want.num_rows
    assert sluice.schema(str(path), columns=names, **opts).names == names


def test_cli(sluice_bin, files):
    for name, (path, opts, want) in files.items():
        names = _names(want)
        for threads in ("1", "4"):
            for order in ("--ordered", "--unordered"):
                cmd = [sluice_bin, "--threads", threads, order]
                for k, v in opts.items():
                    cmd += ["-O", "%s=%s" % (k, v)]
                cmd += ["cat", str(path), "-c", ",".join(names), "-t", "arrows"]
                proc = subprocess.run(cmd, capture_output=True, timeout=120)
                assert proc.returncode == 0, (name, proc.stderr)
                got = ipc.open_stream(pa.BufferReader(proc.stdout)).read_all()
                if order == "--unordered":
                    # By the first column (unique), by index: names repeat.
                    got = got.take(pc.sort_indices(got.column(0)))
                    ref = want.take(pc.sort_indices(want.column(names[0])))
                else:
                    ref = want
                _check(got, ref, names)


def test_stats_twice(sluice_bin, files):
    path, _, want = files["parquet"]
    proc = subprocess.run([sluice_bin, "stats", str(path), "-c", "id,x,id"],
                          capture_output=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.decode().splitlines()
    assert sum(line.split()[0] == "id" for line in lines if line.split()) == 2, lines
    st = sluice.stats(str(path), columns=["id", "x", "id"])
    assert [s["name"] for s in st] == ["id", "x", "id"]
    alone = sluice.stats(str(path), columns=["id"])[0]
    assert st[0] == st[2] == alone


@pytest.mark.parametrize("name", ["csv", "csv.gz", "csv-numeric", "parquet", "arrow", "arrows",
                                  "avro"])
@pytest.mark.parametrize("limit", [None, 3000])
def test_stats_of_repeats(files, name, limit):
    """Stats of a repeated column (computed once, then copied) equal the
    figures of the column read by pyarrow, for every reader, whole or limited."""
    path, options, want = files[name]
    names = [want.column_names[0], want.column_names[1], want.column_names[0],
             want.column_names[1]]
    st = sluice.stats(str(path), columns=names, limit=limit, **options)
    assert [s["name"] for s in st] == names
    ref = want.slice(0, limit) if limit is not None else want
    for s in st:
        col = ref.column(s["name"])
        assert s["count"] == len(col) and s["null_count"] == col.null_count, (s, name)
        mm = pc.min_max(col)
        assert float(s["min"]) == mm["min"].as_py() and float(s["max"]) == mm["max"].as_py(), s
    assert st[0] == st[2] and st[1] == st[3]


def test_a_repeated_name_is_chosen_by_position(tmp_path):
    """column("a") of a table with two columns named a returned the first;
    pyarrow's Table.column raises KeyError. Positions still work, and so do
    whole-table conversions (as pyarrow's)."""
    t = pa.Table.from_arrays([pa.array([1, 2]), pa.array(["x", "y"])], names=["a", "a"])
    with pytest.raises(KeyError, match="exists 2 times"):
        t.column("a")
    path = tmp_path / "dup.csv"
    path.write_text("a,a,b\n1,x,2\n2,y,3\n")
    for s in (sluice.Table.from_arrow(t), sluice.read(str(path))):
        for choose in (lambda: s.column("a"), lambda: s["a"], lambda: s.schema.field("a"),
                       lambda: s.schema.index("a"), lambda: s.batches[0].column("a")):
            with pytest.raises(KeyError, match=r"column 'a' exists 2 times \(at positions 0, 1\)"):
                choose()
        assert s.column(0).to_pylist() == [1, 2] and s.column(1).to_pylist() == ["x", "y"]
        assert s.to_pydict()["a"] == pa.table(s).to_pydict()["a"]
    assert sluice.read(str(path)).column("b").to_pylist() == [2, 3]
