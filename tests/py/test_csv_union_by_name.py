"""CSV datasets read with --union-by-name, against DuckDB's
read_csv([...], union_by_name=true) over the same files (values and types):

- files with added, dropped and reordered columns; a column int64 in one
  file and float64 in another (float64), a date in one and text in another
  (string), a date and a timestamp (timestamp); on 1 and 2 threads;
- a value past the inference sample (infer_bytes= small) that refines its
  column in one file: every file then parses the column as the wider type;
- hive partitions, a projection (-c) and a --filter on a column only some
  files have, header=false files (f0, f1, ... match by position), and two
  columns of one name in a file (an error).
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

pa = pytest.importorskip("pyarrow")
ipc = pytest.importorskip("pyarrow.ipc")
duckdb = pytest.importorskip("duckdb")

# DuckDB's types as the Arrow types sluice infers for the same text.
DUCK_TYPES = {"BIGINT": pa.int64(), "DOUBLE": pa.float64(), "VARCHAR": pa.string(),
              "DATE": pa.date32(), "TIMESTAMP": pa.timestamp("us"), "BOOLEAN": pa.bool_()}


def sluice_read(sluice, location, *args, threads: int = 2) -> pa.Table:
    """`sluice convert` to an Arrow file (a convert reads again after a
    refine, where `cat` to standard output cannot)."""
    out = Path(str(location).rstrip("/") + f".{threads}.out.arrow")
    sluice.run("--threads", threads, "convert", location, out, "--union-by-name", "-q", *args)
    with ipc.open_file(out) as f:
        return f.read_all()


def duck_read(files, *, columns="*", where="", hive=False, header=True,
              sample_size=None) -> tuple:
    """(column names, Arrow types, rows) of DuckDB's union_by_name read."""
    names = [str(p) for p in files]
    opts = "union_by_name=true" + (", hive_partitioning=true" if hive else "") + \
        ("" if header else ", header=false") + \
        ("" if sample_size is None else f", sample_size={sample_size}")
    rel = duckdb.sql(f"select {columns} from read_csv({names!r}, {opts}) {where}")
    return rel.columns, [DUCK_TYPES[str(t)] for t in rel.types], rel.fetchall()


def rows_of(table: pa.Table) -> list:
    return [tuple(r.values()) for r in table.to_pylist()]


def write(d: Path, files: dict) -> list:
    d.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (d / name).write_text(text)
    return [d / name for name in sorted(files)]


MIXED = {
    # a, b, d; then c and a (b and d dropped, c added); then d, b, a
    # reordered; then a, d again with d as text.
    "f0.csv": "a,b,d\n1,x,2024-01-01\n2,y,2024-01-02\n",
    "f1.csv": "c,a\n1.5,3\n2.5,4\n",
    "f2.csv": "d,b,a\n2024-01-03 10:00:00,z,5.5\n",
    "f3.csv": "a,d\n6,hello\n",
}


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("which", [["f0.csv", "f1.csv", "f2.csv"],
                                   ["f0.csv", "f1.csv", "f2.csv", "f3.csv"],
                                   ["f0.csv", "f3.csv"], ["f3.csv", "f1.csv", "f0.csv"]],
                         ids=["date+timestamp", "date+text", "int-only", "text-first"])
def test_added_dropped_reordered_and_joined_types(sluice, tmp_path, which, threads):
    """Columns are every file's, in the order first met; a name's type is
    the join of what each file inferred (int64+float64 -> float64, date +
    timestamp -> timestamp, date + text -> string), as DuckDB gives them.
    Before, union_by_name refused CSV ("matched by position")."""
    files = write(tmp_path / "d", {f"{i}-{k}": MIXED[k] for i, k in enumerate(which)})
    got = sluice_read(sluice, tmp_path / "d", threads=threads)
    names, types, rows = duck_read(files)  # (a directory reads in name order)
    assert got.column_names == names
    assert [f.type for f in got.schema] == types
    assert rows_of(got) == rows


def test_a_schema_names_columns_some_files_lack(sluice, tmp_path):
    """--schema types a column wherever a file has it; a file without it
    reads nulls there, as DuckDB's types= and pyarrow's column_types take a
    name a file lacks (it was an error: "schema names column 'a', which the
    header lacks"). Without union_by_name a missing name stays an error."""
    files = write(tmp_path / "s", {"0.csv": "a,b\n1,x\n", "1.csv": "b,a,c\ny,2.5,3\n",
                                   "2.csv": "c\n4\n"})
    for schema, duck_types in (("a:string", "{'a': 'VARCHAR'}"), ("c:int64", "{'c': 'BIGINT'}")):
        got = sluice_read(sluice, tmp_path / "s", "--schema", schema)
        rel = duckdb.sql(f"select * from read_csv({[str(p) for p in files]!r}, "
                         f"union_by_name=true, types={duck_types})")
        assert got.column_names == rel.columns
        assert [f.type for f in got.schema] == [DUCK_TYPES[str(t)] for t in rel.types]
        assert rows_of(got) == rel.fetchall()
    proc = sluice.expect_error("cat", files[0], files[1], "--schema", "c:int64")
    assert b"schema names column 'c', which the header lacks" in proc.stderr


@pytest.mark.parametrize("gz", [False, True])
def test_a_late_value_refines_every_file(sluice, tmp_path, gz):
    """A value past the sample (infer_bytes=1000) that int64 cannot hold: the
    file's column widens to float64, and so does every other file's column
    of that name (each parses it as float64 itself), as DuckDB, whose
    sample holds these files whole, types them; the second reading keeps
    the columns matched by name. Compressed files too (each but the first
    drops its sample until its turn, and is inflated again)."""
    d = tmp_path / "late"
    files = write(d, {
        "a.csv": "id,v\n" + "".join(f"{i},{i}\n" for i in range(5000)) + "5000,1.5\n",
        "b.csv": "v,w,id\n" + "".join(f"{i},x,{i}\n" for i in range(3)),
        "c.csv": "w,id\n" + "".join(f"y,{i}\n" for i in range(3000)) + "z,3.25\n",
    })
    if gz:
        for i, p in enumerate(files):
            files[i] = p.with_suffix(".csv.gz")
            files[i].write_bytes(gzip.compress(p.read_bytes()))
            p.unlink()
    names, types, rows = duck_read(files, sample_size=-1)
    assert types[:2] == [pa.float64(), pa.float64()]  # (DuckDB's sample: the whole files)
    for threads in (1, 2):
        got = sluice_read(sluice, d, "-O", "infer_bytes=1000", threads=threads)
        assert got.column_names == names
        assert [f.type for f in got.schema] == types
        assert rows_of(got) == rows
    # Read with the whole files as the sample: the same.
    assert rows_of(sluice_read(sluice, d, "-O", "infer_bytes=all")) == rows
    # `sluice stats` reads again too.
    res = sluice.run("stats", d, "--union-by-name", "--json", "-O", "infer_bytes=1000")
    got = {c["name"]: c for c in json.loads(res.stdout)}
    want = duckdb.sql(f"select count(v), min(v), max(v), count(id), max(id) from "
                      f"read_csv({[str(p) for p in files]!r}, union_by_name=true)").fetchall()[0]
    assert got["v"]["type"] == got["id"]["type"] == "double"
    assert (got["v"]["count"] - got["v"]["nulls"], float(got["v"]["min"]),
            float(got["v"]["max"]), got["id"]["count"] - got["id"]["nulls"],
            float(got["id"]["max"])) == want


def test_a_refine_to_text_in_a_file_where_another_has_dates(sluice, tmp_path):
    """A date column that a late value in one file turns into text: the
    other file's dates read as their text then (DuckDB: VARCHAR)."""
    d = tmp_path / "dates"
    files = write(d, {
        "a.csv": "day,n\n" + "".join(f"2024-01-{1 + i % 28:02d},{i}\n" for i in range(3000)) +
                 "soon,3000\n",
        "b.csv": "n,day\n1,2023-05-06\n2,\n",
    })
    names, types, rows = duck_read(files)
    got = sluice_read(sluice, d, "-O", "infer_bytes=2000")
    assert got.column_names == names
    assert [f.type for f in got.schema] == types == [pa.string(), pa.int64()]
    assert rows_of(got) == rows


@pytest.mark.parametrize("late", [False, True])
def test_hive_partitions(sluice, tmp_path, late):
    """k=1/ and k=2/ hold files of other columns; a key that some files
    have as a column gives the others' rows the directory's value; with a
    late value that refines a column of one file (the files matched by
    name again on the second reading)."""
    root = tmp_path / "hv"
    many = "".join(f"{i},{i}\n" for i in range(100, 3000)) + ("3000,oops\n" if late else "")
    write(root / "k=1", {"a.csv": "id,x\n1,0.5\n2,1.5\n"})
    write(root / "k=2", {"b.csv": "x,id,s\n3,3,p\n"})
    write(root / "k=3", {"c.csv": "id,k\n4,3\n"})
    write(root / "k=4", {"d.csv": "id,x\n" + many})
    got = sluice_read(sluice, root, "-O", "infer_bytes=2000")
    files = sorted(root.glob("*/*.csv"))
    names, types, rows = duck_read(files, hive=True)
    assert got.column_names == names == ["id", "x", "s", "k"]
    # (DuckDB types k, a directory's number, as int64; sluice as int32)
    assert [f.type for f in got.schema][:3] == types[:3]
    assert types[1] == (pa.string() if late else pa.float64())
    assert rows_of(got) == rows


@pytest.mark.parametrize("late", [False, True])
def test_a_partition_key_that_a_column_of_other_type_names(sluice, tmp_path, late):
    """A key that names a column some files lack must have that column's
    type (the lacking files' rows take the directory's value). Here k's
    column turns to text, at open or by a late value that refines it (the
    files matched by name again): a clear error naming both types, and no
    output (DuckDB lets the directory's value win in every file instead)."""
    root = tmp_path / "hk"
    rows = "".join(f"{i},{i % 5}\n" for i in range(3000))
    (a,) = write(root / "k=1", {"a.csv": "id,k\n" + ("" if late else "1,x\n") + rows + "9,oops\n"})
    if late:  # compressed: no stretch past the head is sampled, so the refine finds it
        a.with_suffix(".csv.gz").write_bytes(gzip.compress(a.read_bytes()))
        a.unlink()
    write(root / "k=2", {"b.csv": "id\n7\n"})
    out = tmp_path / "hk.arrow"
    proc = sluice.expect_error("convert", root, out, "--union-by-name", "-q",
                               "-O", "infer_bytes=2000")
    assert "partition key 'k' (type int64) is a column of type string in some objects only" \
        in proc.stderr.decode()
    assert not out.exists()


@pytest.mark.parametrize("threads", [1, 2])
def test_projection_and_filter_on_a_column_some_files_lack(sluice, tmp_path, threads):
    d = tmp_path / "pf"
    files = write(d, {
        "a.csv": "id,score\n" + "".join(f"{i},{i / 4}\n" for i in range(200)),
        "b.csv": "id,name\n" + "".join(f"{i},n{i}\n" for i in range(200, 300)),
        "c.csv": "name,score,id\n" + "".join(f"m{i},{i},{i}\n" for i in range(300, 350)),
    })
    got = sluice_read(sluice, d, "-c", "score,id", threads=threads)
    names, types, rows = duck_read(files, columns="score, id")
    assert got.column_names == names and [f.type for f in got.schema] == types
    assert rows_of(got) == rows
    got = sluice_read(sluice, d, "-c", "name", threads=threads)
    assert rows_of(got) == duck_read(files, columns="name")[2]
    got = sluice_read(sluice, d, "--filter", "score>40", threads=threads)
    assert rows_of(got) == duck_read(files, where="where score > 40")[2]
    got = sluice_read(sluice, d, "--filter", "name=m301|n250", "-c", "id", threads=threads)
    assert rows_of(got) == duck_read(files, columns="id",
                                     where="where name in ('m301', 'n250')")[2]


def test_empty_columns_and_files_of_a_header_alone(sluice, tmp_path):
    """A column empty in one file's sample takes the type of the files that
    have values there; a file of a header alone adds its columns (its
    types say nothing: it takes the others', string where none has rows)."""
    d = tmp_path / "e"
    files = write(d, {"a.csv": "x,n\n1,\n2,\n", "b.csv": "n,y,x\n", "c.csv": "y,z,n\n,,2.5\n",
                      "d.csv": "w\n"})
    got = sluice_read(sluice, d)
    names, types, rows = duck_read(files)
    assert got.column_names == names == ["x", "n", "y", "z", "w"]
    assert [f.type for f in got.schema] == types
    assert rows_of(got) == rows


def test_no_header_and_repeated_names(sluice, tmp_path):
    """header=false files have columns f0, f1, ...: by name is by position
    (the file with more columns adds f2). Two columns of one name in a file
    stay an error."""
    d = tmp_path / "nh"
    write(d, {"a.csv": "1,x\n2,y\n", "b.csv": "3.5,z,7\n"})
    got = sluice_read(sluice, d, "-O", "header=false")
    assert got.column_names == ["f0", "f1", "f2"]
    _, types, rows = duck_read(sorted(d.glob("*.csv")), header=False)
    assert [f.type for f in got.schema] == types
    assert rows_of(got) == rows
    dup = tmp_path / "dup"
    write(dup, {"a.csv": "a,b\n1,2\n", "b.csv": "a,b,a\n3,4,5\n"})
    err = sluice.expect_error("cat", dup, "--union-by-name").stderr.decode()
    assert "b.csv: two columns are named 'a'" in err
