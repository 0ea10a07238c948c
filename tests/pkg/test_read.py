"""sluice.read / scan / schema over each format, against what pyarrow (or
fastavro) reads from the same file; options: columns, limit, batch_rows,
threads, format options."""
import os
import re

import fastavro
import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq
import pytest

import sluice
from pkg_helpers import corpora_dir, has_format


@pytest.fixture(scope="module")
def csv_file(data_dir):
    t = pa.table({"id": pa.array(range(20_000), pa.int64()),
                  "x": pa.array([i * 0.25 for i in range(20_000)], pa.float64()),
                  "name": pa.array(["n%d" % (i % 97) for i in range(20_000)])})
    path = data_dir / "plain.csv"
    pacsv.write_csv(t, str(path))
    return t, path


def test_csv_matches_pyarrow(csv_file):
    _, path = csv_file
    got = pa.table(sluice.read(path))
    want = pacsv.read_csv(str(path))
    assert got.equals(want)


def test_csv_schema_as_dict_or_pyarrow_schema(data_dir):
    """schema= takes {name: type} (pyarrow types or their names) or a
    pyarrow.Schema, as pyarrow's column_types does; values equal pyarrow's."""
    path = data_dir / "typed.csv"
    path.write_text("id,t,x\n1,2024-01-02T03:04:05Z,1.5\n2,1970-01-01 00:00:01Z,\n")
    schema = pa.schema([("id", pa.int16()), ("t", pa.timestamp("ms", "UTC")), ("x", pa.float32())])
    want = pacsv.read_csv(str(path), convert_options=pacsv.ConvertOptions(
        column_types={f.name: f.type for f in schema}))
    assert want.schema == schema
    for given in (schema, {f.name: f.type for f in schema},
                  {"id": "int16", "t": "timestamp[ms, tz=UTC]", "x": "float32"},
                  "id:int16|t:timestamp[ms,UTC]|x:float32",
                  "id:int16,t:timestamp[ms, tz=UTC],x:float32"):  # the CLI's --schema spelling
        assert pa.table(sluice.read(path, schema=given)).equals(want), given


def test_csv_schema_errors_name_the_column(data_dir):
    """A dictionary type (which pyarrow.csv's column_types takes) is refused
    with an error that says so, not that its text would split into several
    options; a column named twice is an error, not the first entry's type."""
    path = data_dir / "dict.csv"
    path.write_text("a,b\n1,x\n")
    with pytest.raises(sluice.InvalidArgumentError,
                       match="column 'a': dictionary types are not supported in a CSV schema"):
        sluice.read(path, schema={"a": pa.dictionary(pa.int32(), pa.string())})
    with pytest.raises(sluice.Error, match="schema names column 'a' twice"):
        sluice.read(path, schema="a:int8,a:string")
    with pytest.raises(sluice.Error, match="schema names column 'a' twice"):
        sluice.read(path, schema=pa.schema([("a", pa.int8()), ("a", pa.string())]))


def test_csv_schema_names_with_separators(data_dir):
    """Names holding the schema list's separators (, | :), a percent sign or
    non-ASCII letters are typed as pyarrow's column_types types them: Python
    escapes them (%XX), and so may the option text."""
    path = data_dir / "odd_names.csv"
    path.write_text('"a,b",c|d,e:f,g%2C,é\n1,2,3,4,5\n')
    types = {"a,b": pa.int16(), "c|d": pa.string(), "e:f": pa.float64(), "g%2C": pa.string(),
             "é": pa.int8()}
    want = pacsv.read_csv(str(path), convert_options=pacsv.ConvertOptions(column_types=types))
    assert pa.table(sluice.read(path, schema=types)).equals(want)
    escaped = "a%2Cb:int16|c%7Cd:string|e%3Af:float64|g%252C:string|%C3%A9:int8"
    assert pa.table(sluice.read(path, schema=escaped)).equals(want)


def test_csv_schema_types_a_column_named_empty(data_dir):
    """A header field that is empty names a column "" (sluice writes such
    headers too): schema= types it as pyarrow's column_types={"": ...} does;
    it read as "expected name:type"."""
    path = data_dir / "empty_name.csv"
    path.write_text(",b,c\n1,2,x\n,3,y\n")
    types = {"": pa.string(), "b": pa.int64()}
    want = pacsv.read_csv(str(path), convert_options=pacsv.ConvertOptions(column_types=types,
                                                               strings_can_be_null=True))
    assert want.schema.field(0).type == pa.string()
    for given in (types, pa.schema(list(types.items())), ":string|b:int64", ":string,b:int64",
                  "b:int64|:string"):
        assert pa.table(sluice.read(path, schema=given)).equals(want), given
    # sluice's own output under its own schema
    out = data_dir / "empty_name_back.csv"
    sluice.write(want, out)
    back = pa.table(sluice.read(out, schema=want.schema))
    assert back.equals(pacsv.read_csv(str(out), convert_options=pacsv.ConvertOptions(
        column_types=types, strings_can_be_null=True)))
    # still one entry per name, and an entry still needs its colon
    with pytest.raises(sluice.Error, match="schema names column '' twice"):
        sluice.read(path, schema=":string|:int64")
    with pytest.raises(sluice.Error, match="expected name:type"):
        sluice.read(path, schema="string|b:int64")


def test_csv_null_values_as_a_list(data_dir):
    """null_values=[...] as pyarrow's ConvertOptions and polars take it."""
    path = data_dir / "nulls.csv"
    path.write_text("a,b\n1,x\n-,NA\n3,\n")
    got = pa.table(sluice.read(path, null_values=["-", "NA"]))
    want = pacsv.read_csv(str(path), convert_options=pacsv.ConvertOptions(
        null_values=["-", "NA"], strings_can_be_null=True))
    assert got.column("a").to_pylist() == want.column("a").to_pylist() == [1, None, 3]
    assert got.column("b").to_pylist() == ["x", None, ""]


def test_unions_and_intervals_to_python(data_dir):
    """Dense and sparse unions (Avro's ["null", "int", "string"] reads as
    one) and month_day_nano intervals (Avro's duration) give the values
    pyarrow's to_pylist gives, sliced batches included; repr shows them."""
    dense = pa.UnionArray.from_dense(pa.array([0, 1, 0, 1, 1], pa.int8()),
                                     pa.array([0, 0, 1, 1, 2], pa.int32()),
                                     [pa.array([1, None]), pa.array(["a", "b", None])])
    sparse = pa.UnionArray.from_sparse(pa.array([1, 0, 1, 0, 0], pa.int8()),
                                       [pa.array([5, 6, 7, 8, 9]), pa.array(["x", "y", "z", "w", "v"])])
    mdn = pa.array([pa.MonthDayNano([1, 2, 3]), None, pa.MonthDayNano([-1, 0, 5]),
                    pa.MonthDayNano([0, 0, 0]), pa.MonthDayNano([2**31 - 1, -2**31, 2**63 - 1])])
    table = pa.table({"d": dense, "s": sparse, "m": mdn})
    table = pa.Table.from_batches([table.slice(0, 2).to_batches()[0], table.slice(2).to_batches()[0]])
    path = data_dir / "unions.arrows"
    with pa.ipc.new_stream(path, table.schema) as w:
        w.write_table(table)
    got = sluice.read(path)
    assert got.to_pylist() == table.to_pylist()
    assert "'b'" in repr(got)


def test_nanoseconds_to_python_as_pyarrow(data_dir):
    """Nanosecond timestamps (zoned or not) and durations come out as
    pandas Timestamp / Timedelta, as pyarrow's to_pylist gives them
    (datetime cut the nanoseconds off)."""
    t = pa.table({"ts": pa.array([1_000_000_001, None], pa.timestamp("ns")),
                  "tz": pa.array([1, 2], pa.timestamp("ns", "Europe/Paris")),
                  "d": pa.array([1001, -5], pa.duration("ns"))})
    path = data_dir / "ns.arrows"
    with pa.ipc.new_stream(path, t.schema) as w:
        w.write_table(t)
    got = sluice.read(path).to_pylist()
    assert got == t.to_pylist()
    assert got[0]["ts"].nanosecond == 1 and got[0]["d"].nanoseconds == 1


def test_csv_format_options(data_dir):
    path = data_dir / "semi.txt"
    path.write_text("1;a\n2;b\n3;\n")
    t = sluice.read(path, format="csv", delimiter=";", header=False)
    want = pacsv.read_csv(str(path), read_options=pacsv.ReadOptions(autogenerate_column_names=True),
                          parse_options=pacsv.ParseOptions(delimiter=";"))
    assert t.num_rows == 3 and t.num_columns == 2
    assert pa.table(t).column(0).to_pylist() == want.column(0).to_pylist()


def test_csv_max_row_bytes_keyword(tmp_path):
    """max_row_bytes= as a keyword, on a .csv.gz (a stream) and on bytes
    from a pipe-like file object: a row of that many bytes (its line feed
    included) reads, one more byte is a ValueError (pyarrow raises
    ArrowInvalid, a ValueError, for a row past its block_size) naming the
    line, the byte and the option. The default follows memory= but not
    below 256 MiB: a budget of 1 MiB still reads the 1.5 MB row, as it did
    before the option."""
    import gzip
    limit = 1_500_000
    head = b"a,b\n" + b"".join(b"%d,x\n" % i for i in range(200_000))
    for size in (limit, limit + 1):
        data = head + b"1," + b"y" * (size - 3) + b"\n" + b"2,z\n"
        path = tmp_path / "long.csv.gz"
        path.write_bytes(gzip.compress(data, 1))
        if size == limit:
            t = pa.table(sluice.read(path, max_row_bytes=limit))
            assert t.num_rows == 200_002 and len(t.column("b")[200_000].as_py()) == size - 3
            assert pa.table(sluice.read(path, memory=1 << 20)).equals(t)
        else:
            with pytest.raises(ValueError, match=rf"long\.csv\.gz: line 200002 \(byte {len(head)}\): "
                                                 rf"a row longer than {limit} bytes \(the CSV "
                                                 "option max_row_bytes") as e:
                sluice.read(path, max_row_bytes=limit)
            assert isinstance(e.value, sluice.Error)


def _late_value_csv(path, rows=50_000):
    """Column a looks int64 in the sampled head (quotes keep the stretches
    further on out of the sample); row rows // 2 holds 0.5, row 3 * rows // 4
    of column b text."""
    lines = ["a,b,s"]
    for i in range(rows):
        a = "0.5" if i == rows // 2 else str(i)
        b = "n/a" if i == 3 * rows // 4 else str(i % 10)
        lines.append(f'{a},{b},"s{i % 5}"')
    path.write_text("\n".join(lines) + "\n")


def test_csv_late_values_widen_inferred_types(tmp_path):
    """read, read_pandas and stats read the input again when a value past
    the sample does not fit the inferred type, with the wider types: what
    pyarrow reads when told them. A scan that already yielded batches
    cannot: it fails naming the value."""
    path = tmp_path / "late.csv"
    _late_value_csv(path)
    options = {"infer_bytes": "1k"}
    assert pa.schema(sluice.schema(path, **options)).types == [pa.int64(), pa.int64(), pa.string()]
    want = pacsv.read_csv(str(path), convert_options=pacsv.ConvertOptions(
        column_types={"a": pa.float64(), "b": pa.string()}))
    got = pa.table(sluice.read(path, **options))
    assert got.schema == want.schema
    assert got.equals(want)
    assert pa.table(sluice.read(path, threads=1, ordered=False, **options)).equals(want)
    frame = sluice.read_pandas(path, **options)
    assert frame["a"].tolist() == want.column("a").to_pylist()
    assert frame["b"].tolist() == want.column("b").to_pylist()
    stats = {c["name"]: c for c in sluice.stats(path, **options)}
    assert stats["b"]["max"] == "n/a" and stats["a"]["count"] == 50_000
    # the types the figures are of (they were the sample's: int64, max 'n/a')
    assert [(c["name"], c["type"]) for c in stats.values()] == \
        [(f.name, str(f.type)) for f in want.schema]
    # a filter compares as the wider type (it compared through the freed one)
    got = pa.table(sluice.read(path, filters=[("a", "<", 1.0)], **options))
    assert got.column("a").to_pylist() == [0.0, 0.5]
    with pytest.raises(sluice.FormatError, match="'0.5' as int64"):
        for _ in sluice.scan(path, **options):
            pass


def test_csv_late_bools_and_date_times_as_in_the_sample(tmp_path):
    """The type of a column does not depend on where a value sits: a 1 after
    true/false is a bool wherever it is (pyarrow's reading), and a date-time
    after dates makes timestamps, as a sample holding both does."""
    path = tmp_path / "late.csv"
    rows = ["%d,%s,%s" % (i, "true" if i % 2 else "false", "2024-01-%02d" % (1 + i % 28))
            for i in range(50_000)]
    rows[40_000] = "40000,1,2024-03-01 10:30:00"
    path.write_text("k,flag,day\n" + "\n".join(rows) + "\n")
    want = pacsv.read_csv(str(path))
    assert want.schema.field("flag").type == pa.bool_()
    for infer in ("1k", "all"):
        got = pa.table(sluice.read(path, infer_bytes=infer))
        assert got.schema.field("flag").type == pa.bool_(), infer
        assert got.column("flag").to_pylist() == want.column("flag").to_pylist()
        assert got.schema.field("day").type == pa.timestamp("us"), infer
        assert got.column("day").to_pylist() == want.column("day").to_pylist()
    # Only 0 and 1: int64, as pyarrow infers; a true/false past the sample
    # makes the column bool, as a sample holding it does.
    path.write_text("x\n0\n1\n1\n")
    assert pa.table(sluice.read(path)).schema == pacsv.read_csv(str(path)).schema
    path.write_text("x\n" + "\n".join("true" if i == 40_000 else str(i % 2)
                                       for i in range(50_000)) + "\n")
    for infer in ("1k", "all"):
        got = pa.table(sluice.read(path, infer_bytes=infer))
        assert got.schema.field("x").type == pa.bool_(), infer
        assert got.column("x").to_pylist()[39_998:40_001] == [False, True, True], infer


def test_avro_matches_fastavro(data_dir):
    schema = {"type": "record", "name": "r", "fields": [
        {"name": "a", "type": "long"}, {"name": "s", "type": ["null", "string"]},
        {"name": "d", "type": "double"}]}
    records = [{"a": i, "s": None if i % 5 == 0 else "v%d" % i, "d": i / 3} for i in range(5000)]
    path = data_dir / "r.avro"
    with open(path, "wb") as f:
        fastavro.writer(f, schema, records, codec="deflate", sync_interval=4000)
    with open(path, "rb") as f:
        want = list(fastavro.reader(f))
    t = sluice.read(path)
    assert t.to_pylist() == want
    assert t.to_pandas()["s"].tolist()[:3] == [want[0]["s"] or t.to_pandas()["s"][0], "v1", "v2"]


def test_avro_file_inside_avro_with_the_same_sync_marker(data_dir):
    """A row holds, in a bytes field, a 3 MB Avro file written with the
    outer file's sync marker and schema, whose blocks hold up as blocks past
    the 1 MiB a marker search checks: sluice.read gives fastavro's rows with
    1 and 2 threads, in order and as they come (placed by the split row
    counts, which agree with what the splits decode). It was an error
    ("cannot be read in byte-range splits"), with 1 thread too."""
    import io
    schema = {"type": "record", "name": "R", "fields": [
        {"name": "i", "type": "long"}, {"name": "b", "type": "bytes"}]}
    sync = bytes(range(16))
    inner = io.BytesIO()
    fastavro.writer(inner, schema, ({"i": -j, "b": bytes([j % 251]) * 900} for j in range(3500)),
                    sync_marker=sync, sync_interval=16000)
    path = data_dir / "embedded.avro"
    with open(path, "wb") as f:
        fastavro.writer(f, schema, ({"i": i, "b": inner.getvalue() if i == 40 else b"y" * 20000}
                                    for i in range(100)), sync_marker=sync, sync_interval=16000)
    with open(path, "rb") as f:
        want = list(fastavro.reader(f))
    rows = sluice._sluice.open(str(path), threads=2).split_rows()
    assert len(rows) >= 4 and sum(rows) == len(want), rows
    for threads in (1, 2):
        for ordered in (True, False):
            got = sluice.read(path, threads=threads, ordered=ordered).to_pylist()
            if not ordered:
                got.sort(key=lambda r: r["i"])
            assert got == want, (threads, ordered)


@pytest.mark.skipif(not has_format("parquet"), reason="this build reads no parquet")
def test_parquet_matches_pyarrow(data_dir):
    t = pa.table({"a": pa.array(range(10_000), pa.int64()),
                  "s": pa.array([None if i % 3 == 0 else "s%d" % i for i in range(10_000)])})
    path = data_dir / "t.parquet"
    pq.write_table(t, str(path), row_group_size=3000)
    assert pa.table(sluice.read(path)).equals(pq.read_table(str(path)))


@pytest.mark.skipif(not has_format("parquet"), reason="this build reads no parquet")
def test_parquet_int96_timestamp_unit(tmp_path):
    """int96_timestamp_unit= (pyarrow's coerce_int96_timestamp_unit) reads
    INT96 dates int64 nanoseconds cannot hold; without it they are an error
    naming the row and the keyword, not dates wrapped into others."""
    import datetime as dt
    vals = [dt.datetime(2020, 1, 1), None, dt.datetime(1, 1, 1), dt.datetime(9999, 12, 31)]
    path = tmp_path / "int96.parquet"
    pq.write_table(pa.table({"t": pa.array(vals, pa.timestamp("us"))}), str(path),
                   use_deprecated_int96_timestamps=True)
    for unit in ("s", "ms", "us"):
        got = pa.table(sluice.read(path, int96_timestamp_unit=unit))
        assert got.equals(pq.read_table(str(path), coerce_int96_timestamp_unit=unit)), unit
        assert got.column("t").to_pylist() == vals
    with pytest.raises(sluice.InvalidArgumentError,
                       match=r"column t: row 2: .*Python: int96_timestamp_unit=\"us\""):
        sluice.read(path)
    with pytest.raises(sluice.InvalidArgumentError, match="int96_timestamp_unit wants"):
        sluice.read(path, int96_timestamp_unit="days")


def test_columns_projection_in_order(typed):
    expected, path = typed
    t = sluice.read(path, columns=["str", "i8"])
    assert t.schema.names == ["str", "i8"]
    assert pa.table(t).equals(expected.select(["str", "i8"]))
    assert sluice.schema(path, columns=["f64"]).names == ["f64"]


def test_schema_without_reading(typed):
    expected, path = typed
    s = sluice.schema(path)
    assert pa.schema(s) == expected.schema
    assert s.names == expected.column_names
    assert [str(f.type) for f in s] == [str(f.type) for f in expected.schema]
    assert s.field("i64").nullable and not sluice.schema(path).field("i64").type.is_dictionary


def test_scan_yields_tagged_batches(typed):
    expected, path = typed
    batches = list(sluice.scan(path))
    assert [b.num_rows for b in batches] == [300, 300, 300, 100]
    assert all(b.num_columns == expected.num_columns for b in batches)
    assert sorted(b.tag for b in batches) == [b.tag for b in batches]
    assert pa.Table.from_batches([pa.record_batch(b) for b in batches]).equals(expected)


def test_scan_close_early(csv_file):
    _, path = csv_file
    with sluice.scan(path, batch_rows=1000) as s:
        first = next(s)
    assert first.num_rows > 0
    with pytest.raises(ValueError, match="the scan was closed"):  # not a normal end
        next(s)


def test_threads_and_batch_rows(csv_file):
    expected, path = csv_file
    t = sluice.read(path, threads=1, batch_rows=1000)
    assert pa.table(t).column("id").to_pylist() == expected.column("id").to_pylist()
    assert max(b.num_rows for b in t.batches) <= 1000


def test_limit(csv_file):
    _, path = csv_file
    for ordered in (True, False):
        t = sluice.read(path, limit=12_345, ordered=ordered)
        assert t.num_rows == 12_345
        assert t.column("id").to_pylist() == list(range(12_345))


def test_pathlike_and_str(typed):
    _, path = typed
    assert sluice.read(str(path)).num_rows == sluice.read(path).num_rows


def test_paths_need_not_be_utf8(tmp_path):
    """A path is the bytes os.open takes: bytes, or str with os.fsdecode's
    surrogates, for reading and for writing."""
    t = pa.table({"a": [1, 2, 3]})
    path = os.fsencode(tmp_path) + b"/caf\xe9.parquet"
    sluice.write(t, path)
    with open(path, "rb") as f:
        assert pq.read_table(f).equals(t)
    assert sluice.read(path).to_pydict() == t.to_pydict()
    assert sluice.read(os.fsdecode(path)).to_pydict() == t.to_pydict()
    assert sluice.read([os.fsdecode(path), path]).num_rows == 6
    # Paths among the options too: an Avro reader schema's file.
    import json
    avro = tmp_path / "a.avro"
    with open(avro, "wb") as f:
        fastavro.writer(f, {"type": "record", "name": "r", "fields": [{"name": "a", "type": "int"}]},
                        [{"a": 1}])
    schema = os.fsencode(tmp_path) + b"/r\xe9.avsc"
    with open(schema, "w") as f:
        json.dump({"type": "record", "name": "r", "fields": [{"name": "a", "type": "long"}]}, f)
    got = pa.table(sluice.read(avro, reader_schema=os.fsdecode(schema)))
    assert got.schema.field("a").type == pa.int64() and got.column("a").to_pylist() == [1]


def test_nul_characters_are_refused_not_cut(tmp_path):
    """C would read a string only to its NUL: "x\\0.csv" would open "x"."""
    pq.write_table(pa.table({"a": [1]}), tmp_path / "x")
    with pytest.raises(ValueError, match="NUL"):
        sluice.read(str(tmp_path / "x") + "\0.csv")
    with pytest.raises(ValueError, match="NUL"):
        sluice.read(tmp_path / "x", format="parquet", columns=["a\0b"])
    with pytest.raises(ValueError, match="NUL"):
        sluice.write(pa.table({"k": [1], "v": [2]}), tmp_path / "ds", format="parquet",
                     partition_by=["k\0z"])
    with pytest.raises(ValueError):
        sluice.write(pa.table({"a": [1]}), str(tmp_path / "y") + "\0.parquet")
    with pytest.raises(ValueError, match="NUL"):
        sluice.read("s3://bucket/key", storage_options={"region": "us\0east"})
    assert sorted(os.listdir(tmp_path)) == ["x"]


def test_ipc_corpus_files_match_pyarrow():
    root = corpora_dir() / "arrow-testing" / "data" / "arrow-ipc-stream" / "integration"
    files = sorted(root.glob("*/generated_primitive*.arrow_file")) if root.is_dir() else []
    if not files:
        pytest.skip("no IPC corpus files")
    for path in files[:6]:
        want = pa.ipc.open_file(str(path)).read_all()
        got = pa.table(sluice.read(path))
        assert got.equals(want), path


class _RangeHandler(__import__("http.server").server.BaseHTTPRequestHandler):
    """GET and HEAD of files under the server's `root`, with byte ranges."""

    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def _serve(self, body):
        data = (self.server.root / self.path.lstrip("/")).read_bytes()
        start, end, status = 0, len(data) - 1, 200
        rng = self.headers.get("Range")
        if rng:
            a, b = rng.split("=", 1)[1].split("-")
            start, end, status = int(a), min(int(b), len(data) - 1) if b else len(data) - 1, 206
        self.send_response(status)
        self.send_header("Content-Length", str(end + 1 - start))
        self.send_header("Accept-Ranges", "bytes")
        if status == 206:
            self.send_header("Content-Range", f"bytes {start}-{end}/{len(data)}")
        self.end_headers()
        if body:
            self.wfile.write(data[start:end + 1])

    def do_HEAD(self):
        self._serve(False)

    def do_GET(self):
        self._serve(True)


def test_remote_csv_split_ranges(tmp_path):
    """A remote CSV splits by byte range, so a scan of some splits only (as a
    Dask partition does) reads them without the splits before it having run:
    the parts, read alone and in any order, make up the whole table."""
    import http.server
    import threading
    lines = ["id,text"] + [f'{i},"q{i},\n{i}"' if i % 4 == 0 else f"{i},p{i}"
                           for i in range(60_000)]
    (tmp_path / "r.csv").write_text("\n".join(lines) + "\n")
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _RangeHandler)
    srv.root = tmp_path
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{srv.server_address[1]}/r.csv"
        whole = pa.table(sluice.read(tmp_path / "r.csv", split_size="64k"))
        n = sluice.scan(url, split_size="64k").num_splits
        assert n >= 6
        parts = {f: pa.table(sluice.read(url, split_size="64k",
                                         _scan={"first_split": f, "num_splits": 2}))
                 for f in reversed(range(0, n, 2))}
        got = pa.concat_tables([parts[f] for f in sorted(parts)])
        assert got.equals(whole)
    finally:
        srv.shutdown()
        srv.server_close()


def test_stats_long_values_are_bounds(tmp_path):
    """sluice.stats: a string or binary extreme longer than 64 KiB comes back
    as a bound (min_exact / max_exact False) that still holds pyarrow's min
    and max, as valid text; short values stay exact and equal pyarrow's."""
    import pyarrow.compute as pc
    cap, big = 64 << 10, 3 << 20
    t = pa.table({"s": pa.array(["k", "\u00e9" * (big // 2), "a" * big, "b"]),
                  "b": pa.array([b"\x10", b"\x00" * big, b"\x7f" * big, b"\x20"]),
                  "w": pa.array(["%03d" % k + "x" * 97 for k in range(4)])})
    pq.write_table(t, tmp_path / "t.parquet", row_group_size=2)
    for c in sluice.stats(tmp_path / "t.parquet"):
        mm = pc.min_max(t.column(c["name"])).as_py()
        if c["name"] == "w":
            assert (c["min"], c["max"], c["min_exact"], c["max_exact"]) == \
                (mm["min"], mm["max"], True, True), c
            continue
        lo, hi = c["min"], c["max"]
        if c["name"] == "b":
            lo, hi = bytes.fromhex(lo), bytes.fromhex(hi)
        assert lo <= mm["min"] and hi >= mm["max"], c["name"]
        assert len(lo) <= cap and len(hi) <= cap, c["name"]
        assert c["min_exact"] is False and c["max_exact"] is False, c["name"]
    s = {c["name"]: c for c in sluice.stats(tmp_path / "t.parquet")}["s"]
    assert (s["min"], s["max"]) == ("a" * cap, "\u00e9" * (cap // 2 - 1) + "\u00ea")


def test_stats_match_pyarrow(tmp_path):
    """sluice.stats: count, null_count, min and max per column equal pyarrow's
    figures, from a scan (CSV) and from a Parquet footer; a string holding
    U+0000 keeps its whole value."""
    import pyarrow.compute as pc
    t = pa.table({"i": pa.array([None if k % 9 == 0 else k * 7 % 1000 - 300 for k in range(5000)],
                                pa.int64()),
                  "s": pa.array(["a\x00%d" % (k % 31) for k in range(5000)]),
                  "d": pa.array([k / 8 for k in range(5000)])})
    pq.write_table(t, tmp_path / "t.parquet", row_group_size=900)
    pacsv.write_csv(t.select(["i", "d"]), str(tmp_path / "t.csv"))
    for path, table in ((tmp_path / "t.parquet", t), (tmp_path / "t.csv", t.select(["i", "d"]))):
        got = sluice.stats(path)
        assert [c["name"] for c in got] == table.column_names
        for c in got:
            column = table.column(c["name"])
            mm = pc.min_max(column).as_py()
            assert (c["count"], c["null_count"]) == (len(column), column.null_count), c
            assert c["type"] == str(column.type), c  # as pyarrow spells it
            if pa.types.is_string(column.type):
                assert (c["min"], c["max"]) == (mm["min"], mm["max"]), c
            else:
                assert (float(c["min"]), float(c["max"])) == (mm["min"], mm["max"]), c
            assert c["min_exact"] is True and c["max_exact"] is True, c
        # The Parquet footer answers (but for d, whose min 0 may hide a -0.0,
        # so a footer's zero bound is not exact); a CSV is scanned; a limit is
        # always a scan of that many rows (as `sluice stats --json` says it).
        want = {"i": "metadata", "s": "metadata", "d": "computed"} if path.suffix == ".parquet" \
            else {n: "computed" for n in table.column_names}
        assert {c["name"]: c["source"] for c in got} == want
        first = sluice.stats(path, limit=10)
        assert {c["source"] for c in first} == {"computed"}
        assert [c["count"] for c in first] == [10] * table.num_columns
        assert first[0]["max"] == str(pc.max(table.column("i").slice(0, 10)).as_py())
    with pytest.raises(ValueError, match="limit"):
        sluice.stats(tmp_path / "t.csv", limit=-1)


def test_list_of_locations(tmp_path):
    """A list reads as one table, in the order given (each item may name many
    objects), as polars.read_parquet([...]) and DuckDB read_parquet([...])."""
    import duckdb
    import polars as pl
    parts = []
    for i in range(4):
        t = pa.table({"id": pa.array(range(10 * i, 10 * i + 3 + i), pa.int64()),
                      "s": pa.array([f"r{i}-{j}" for j in range(3 + i)])})
        sub = tmp_path / ("dir" if i >= 2 else ".") / f"p{i}.parquet"
        sub.parent.mkdir(exist_ok=True)
        pq.write_table(t, sub)
        parts.append(sub)
    order = [parts[1], tmp_path / "dir", str(parts[0])]
    got = pa.table(sluice.read(order))
    want = pl.read_parquet([str(parts[1]), str(parts[2]), str(parts[3]), str(parts[0])])
    assert got.to_pydict() == want.to_dict(as_series=False)
    duck = duckdb.sql(f"select * from read_parquet({[str(p) for p in (parts[1], parts[2], parts[3], parts[0])]})")
    assert sorted(zip(*got.to_pydict().values())) == sorted(duck.fetchall())
    assert list(sluice.schema(order).names) == ["id", "s"]
    assert sluice.read(order, columns=["s"], limit=4).to_pydict() == {"s": want["s"][:4].to_list()}
    other = tmp_path / "other.parquet"
    pq.write_table(pa.table({"id": pa.array([1], pa.int32())}), other)
    with pytest.raises(sluice.Error, match="other.parquet"):
        sluice.read([parts[0], other])
    with pytest.raises(ValueError):
        sluice.read([])
    with pytest.raises(sluice.Error, match="standard input"):
        sluice.read([parts[0], "-"])


def test_partitioned_dataset_and_filters(tmp_path):
    """key=value directories are columns; filters=[...] (pyarrow's form, on
    partition keys) reads only the objects that pass, as pyarrow does."""
    import datetime
    n = 600
    t = pa.table({"id": pa.array(range(n), pa.int64()),
                  "year": pa.array([2020 + i % 3 for i in range(n)], pa.int64()),
                  "day": pa.array([datetime.date(2024, 1, 1 + i % 4) for i in range(n)]),
                  "kind": pa.array([["a b", "c,d", "e"][i % 3] for i in range(n)])})
    root = tmp_path / "ds"
    pq.write_to_dataset(t, root, partition_cols=["year", "day", "kind"])
    full = sluice.read(root)
    assert full.schema.names == ["id", "year", "day", "kind"]
    assert sorted(pa.table(full).to_pylist(), key=lambda r: r["id"]) == t.to_pylist()
    for filters in ([("year", ">=", 2021)], [("kind", "in", ["a b", "c,d"]), ("year", "!=", 2022)],
                    [("day", "<", datetime.date(2024, 1, 3))], [("day", "=", "2024-01-02")],
                    [("year", "==", 1999)]):
        got = pa.table(sluice.read(root, filters=filters))
        # pyarrow reads `day` as text: give it the date as text (same order)
        want = pq.read_table(root, filters=[(k, o, v.isoformat() if hasattr(v, "isoformat")
                                             else v) for k, o, v in filters])
        assert sorted(got.column("id").to_pylist()) == sorted(want.column("id").to_pylist()), filters
        assert got.schema.names == ["id", "year", "day", "kind"]
    want = sum(1 for r in t.to_pylist() if r["year"] in (2020, 2021) and r["kind"] != "e")
    assert sluice.read(root, filters="year=2020|2021,kind!=e").num_rows == want
    assert sluice.read(root, filters=[("year", "=", 1999)]).num_rows == 0
    for bad in ([[("year", "=", 2020)], []], [("year", "~", 1)], [("year", "=", True)]):
        with pytest.raises(ValueError):
            sluice.read(root, filters=bad)
    # One group in pyarrow's OR-of-ANDs form is the flat list.
    assert sluice.read(root, filters=[[("year", "=", 2020)]]).num_rows == \
        sluice.read(root, filters=[("year", "=", 2020)]).num_rows > 0
    # A column of the objects filters rows, beside partition keys that choose objects.
    got = pa.table(sluice.read(root, filters=[("id", "<", 50), ("year", "=", 2021)]))
    assert sorted(got.column("id").to_pylist()) == [i for i in range(50) if i % 3 == 1]


def test_batch_rows_cuts_parquet_row_groups(tmp_path):
    """batch_rows= bounds the rows of every Parquet batch, row groups of
    1,000 rows included (it was ignored below 1 Mi rows, though the message
    for a batch past 2 GiB tells users to lower it)."""
    want = pa.table({"a": list(range(20_000)), "s": [str(i) for i in range(20_000)]})
    pq.write_table(want, tmp_path / "rg.parquet", row_group_size=1_000)
    batches = list(sluice.scan(tmp_path / "rg.parquet", batch_rows=300))
    assert len(batches) == 20 * 4 and max(b.num_rows for b in batches) == 300
    assert pa.table(sluice.read(tmp_path / "rg.parquet", batch_rows=300)).equals(want)
    assert len(list(sluice.scan(tmp_path / "rg.parquet"))) == 20  # whole row groups


def test_avro_reader_schema_as_dict_text_or_path(tmp_path):
    """reader_schema= takes a path, the schema's JSON text, or a dict (as
    fastavro's reader_schema): the same resolved table each way, and no
    temporary file left behind."""
    import glob
    import json
    import tempfile
    writer = {"type": "record", "name": "r", "fields": [{"name": "a", "type": "int"}]}
    with open(tmp_path / "w.avro", "wb") as f:
        fastavro.writer(f, writer, [{"a": 1}, {"a": 2}])
    reader = {"type": "record", "name": "r", "fields": [
        {"name": "a", "type": "long"}, {"name": "b", "type": "string", "default": "z"}]}
    (tmp_path / "r.avsc").write_text(json.dumps(reader))
    want = {"a": [1, 2], "b": ["z", "z"]}
    before = set(glob.glob(tempfile.gettempdir() + "/sluice-reader-schema-*"))
    for given in (reader, json.dumps(reader), str(tmp_path / "r.avsc"), tmp_path / "r.avsc"):
        t = sluice.read(tmp_path / "w.avro", reader_schema=given)
        assert t.to_pydict() == want and str(t.schema.field("a").type) == "int64"
    assert set(glob.glob(tempfile.gettempdir() + "/sluice-reader-schema-*")) == before


def test_avro_reader_schema_errors_name_what_was_given(tmp_path, monkeypatch):
    """An error in a reader schema given as a dict or JSON text names it so,
    not the temporary file it went through (gone when the error is read); a
    primitive type's name is a schema, as fastavro takes it, unless a file
    has that name; a map default whose key holds a NUL character, which
    sluice cannot read, says so (it said "not valid JSON")."""
    import json
    with open(tmp_path / "w.avro", "wb") as f:
        fastavro.writer(f, {"type": "record", "name": "r", "fields": [{"name": "a", "type": "int"}]},
                        [{"a": 1}])
    bad = {"type": "record", "name": "r", "fields": [{"name": "a", "type": "foo"}]}
    for given, says in ((bad, "(given as a dict)"), (json.dumps(bad), "(given as JSON text)")):
        with pytest.raises(sluice.FormatError) as e:
            sluice.read(tmp_path / "w.avro", reader_schema=given)
        assert "reader schema %s: invalid Avro schema: unknown type: foo" % says in str(e.value)
        assert "sluice-reader-schema-" not in str(e.value) and e.value.message == str(e.value)
    with open(tmp_path / "l.avro", "wb") as f:
        fastavro.writer(f, "long", [1, 2, 3])
    with open(tmp_path / "l.avro", "rb") as f:
        assert list(fastavro.reader(f, reader_schema="long")) == [1, 2, 3]
    assert sluice.read(tmp_path / "l.avro", reader_schema="long").to_pydict() == {"value": [1, 2, 3]}
    assert sluice.read(tmp_path / "l.avro", reader_schema="double").to_pydict() == \
        {"value": [1.0, 2.0, 3.0]}
    with pytest.raises(sluice.FormatError, match="cannot read the writer's long as int"):
        sluice.read(tmp_path / "l.avro", reader_schema="int")
    monkeypatch.chdir(tmp_path)  # a file named "long" is a path
    (tmp_path / "long").write_text(json.dumps("double"))
    assert sluice.read(tmp_path / "l.avro", reader_schema="long").to_pydict() == \
        {"value": [1.0, 2.0, 3.0]}
    nul = {"type": "record", "name": "r", "fields": [
        {"name": "a", "type": "int"},
        {"name": "m", "type": {"type": "map", "values": "int"}, "default": {"a\u0000b": 1}}]}
    with pytest.raises(sluice.Error) as e:
        sluice.read(tmp_path / "w.avro", reader_schema=nul)
    assert "object key holding a NUL character" in str(e.value)
    assert "map default" in str(e.value) and "(given as a dict)" in str(e.value)


def test_float16_values_and_repr(tmp_path):
    # memoryview.cast takes no half floats: to_pylist, to_pydict and repr
    # go through struct (pyarrow gives the same Python floats).
    import numpy as np
    t = pa.table({"h": pa.array(np.array([1.5, -0.0, 65504, np.nan, 0.1], "f2")),
                  "i": pa.array(range(5), pa.int8())})
    with pa.ipc.new_file(tmp_path / "f16.arrow", t.schema) as w:
        w.write_table(t.slice(1))  # an offset, too
    got = sluice.read(tmp_path / "f16.arrow")
    want = t.slice(1).column("h").to_pylist()
    assert str(got.column("h").to_pylist()) == str(want)  # NaN compares by text
    assert str(got.to_pydict()["h"]) == str(want)
    assert "halffloat" in repr(got)


def test_type_names_and_batch_rows_as_pyarrow_gives_them(typed):
    # str(DataType) spells every type as pyarrow does (map<string, int64>
    # too); a Batch gives its rows as a Table does.
    expected, path = typed
    t = sluice.read(path)
    for f in t.schema.fields:
        assert str(f.type) == str(expected.schema.field(f.name).type), f.name
    m = pa.table({"m": pa.array([[("a", 1)], None], pa.map_(pa.string(), pa.int64())), "x": [1, 2]})
    with pa.ipc.new_file(path.parent / "map.arrow", m.schema) as w:
        w.write_table(m)
    got = sluice.read(path.parent / "map.arrow")
    assert str(got.schema.field("m").type) == "map<string, int64>"
    assert got.batches[0].to_pylist() == m.to_pylist()


def test_option_values_are_utf8_whatever_the_locale(tmp_path):
    """Option values reach C as UTF-8 under any locale (they went in the
    locale's encoding: ASCII failed, Latin-1 would not match the data)."""
    import subprocess
    import sys
    path = tmp_path / "u.csv"
    path.write_text("\u00e9,b\n1,x\n2,\u00f1\n", encoding="utf-8")
    code = ("import sluice; print(ascii(sluice.read(%r, null_values=['\\u00f1']).to_pydict()))"
            % str(path))
    env = dict(os.environ, LC_ALL="C", PYTHONCOERCECLOCALE="0", PYTHONUTF8="0")
    run = subprocess.run([sys.executable, "-X", "utf8=0", "-c", code], capture_output=True,
                         text=True, env=env)
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == ascii({"\u00e9": [1, 2], "b": ["x", None]})


def test_zones_outside_the_arrow_spec_are_refused_as_pyarrow_does():
    """A zone that is neither an IANA name nor +HH:MM is an error in
    to_pandas and to_pylist, as in pyarrow (it was taken for UTC, and +0530 for
    +05:00, shifting every value); the spec's forms convert as pyarrow's do."""
    for tz in ["+0530", "Z", "utc", "Bogus/Zone", "+05"]:
        t = sluice.Table.from_arrow(pa.table({"t": pa.array([0], pa.timestamp("s", tz))}))
        with pytest.raises(ValueError):
            pa.table({"t": pa.array([0], pa.timestamp("s", tz))}).to_pandas()
        with pytest.raises(ValueError, match=re.escape(repr(tz))):
            t.to_pandas()
        with pytest.raises(ValueError, match=re.escape(repr(tz))):
            t.to_pydict()
    for tz in ["+05:30", "-03:00", "UTC", "Europe/Paris"]:
        peer = pa.table({"t": pa.array([0, 1_700_000_000], pa.timestamp("s", tz))})
        t = sluice.Table.from_arrow(peer)
        assert t.to_pandas()["t"].tolist() == peer.to_pandas()["t"].tolist()
        assert t.to_pydict() == peer.to_pydict()


def test_time_nanoseconds_and_interval_pickling():
    """time64[ns] with nanoseconds is an error in to_pandas as in pyarrow's
    (datetime.time would cut them off); month_day_nano values pickle (dask
    ships them)."""
    import pickle
    peer = pa.table({"t": pa.array([None, 1001], pa.time64("ns"))})
    with pytest.raises(ValueError):
        peer.to_pandas()
    with pytest.raises(ValueError, match="1001"):
        sluice.Table.from_arrow(peer).to_pandas()
    whole = pa.table({"t": pa.array([5_000, None], pa.time64("ns"))})
    assert sluice.Table.from_arrow(whole).to_pandas()["t"].tolist() == \
        whole.to_pandas()["t"].tolist()
    mdn = pa.table({"m": pa.array([pa.MonthDayNano([1, -2, 3])])})
    value = sluice.Table.from_arrow(mdn).to_pydict()["m"][0]
    again = pickle.loads(pickle.dumps(value))
    assert again == value and type(again) is type(value) and again.nanoseconds == 3


def test_objects_of_joinable_types_to_pandas(tmp_path):
    """A directory of an int32/string file (pyarrow's) and an int64/
    large_string one (polars') reads as int64 and string into pandas too,
    through read().to_pandas() and read_pandas() (which may decode splits
    straight into the final columns: the cast object's must not be), with
    pyarrow's values for each file."""
    import numpy as np
    d = tmp_path / "mixed"
    d.mkdir()
    n = 100_000
    a = pa.table({"i": pa.array(np.arange(n), pa.int32()), "s": ["x"] * n})
    b = pa.table({"i": pa.array(np.arange(n) + 10**10, pa.int64()),
                  "s": pa.array(["y"] * n, pa.large_string())})
    pq.write_table(a, d / "0.parquet")
    pq.write_table(b, d / "1.parquet")
    want = np.concatenate([np.arange(n), np.arange(n) + 10**10])
    for df in (sluice.read(d).to_pandas(), sluice.read_pandas(d)):
        assert df["i"].dtype == np.int64
        assert np.array_equal(df["i"].to_numpy(), want)
        assert df["s"].tolist() == ["x"] * n + ["y"] * n


def test_wide_avro_reads_into_place(tmp_path):
    """An Avro file of 8,192 columns read whole (splits decode straight into
    the final columns) equals fastavro's rows: the split freed its column
    table with the size its builder had after release (one entry), which at
    64 KiB and more corrupted the heap and aborted Python."""
    n_cols = 8192
    schema = {"type": "record", "name": "wide",
              "fields": [{"name": f"c{i}", "type": "long"} for i in range(n_cols)]}
    rows = [{f"c{i}": r * n_cols + i for i in range(n_cols)} for r in range(3)]
    path = tmp_path / "wide.avro"
    with open(path, "wb") as f:
        fastavro.writer(f, fastavro.parse_schema(schema), rows)
    for table in (sluice.read(path), sluice.read(path, threads=1)):
        got = table.to_pydict()
        assert len(got) == n_cols
        assert all(got[f"c{i}"] == [r[f"c{i}"] for r in rows] for i in range(0, n_cols, 97))
    df = sluice.read_pandas(path)
    assert df.shape == (3, n_cols) and df["c8191"].tolist() == [r["c8191"] for r in rows]


def _csv_lines(n):
    return "id,name\n" + "".join(f"{i},x{i % 7}".ljust(15) + "\n" for i in range(n))


@pytest.mark.parametrize("how", ["peek", "readline", "read", "nothing"])
def test_pipe_object_keeps_what_python_has_buffered(tmp_path, how):
    """A subprocess's stdout that Python has looked into (peek) or read a
    line of holds up to its buffer size of the stream in Python's buffer,
    no longer in the descriptor: sluice reads those bytes first and then
    the rest, as pyarrow.csv.read_csv does from the object. The header and
    255 rows were lost without an error (745 rows named f0, f1)."""
    import subprocess
    import time
    path = tmp_path / "lines.csv"
    path.write_text(_csv_lines(1000))
    want = pacsv.read_csv(path)
    proc = subprocess.Popen(["cat", str(path)], stdout=subprocess.PIPE)
    try:
        time.sleep(0.1)  # (the stream is all in the pipe: Python buffers 8 KiB of it)
        header = True
        if how == "peek":
            assert len(proc.stdout.peek(1)) > 1
        elif how == "readline":
            assert proc.stdout.readline() == b"id,name\n"
            header = False
        elif how == "read":
            assert proc.stdout.read(8) == b"id,name\n"
            header = False
        got = pa.table(sluice.read(proc.stdout, format="csv", header=header))
    finally:
        proc.stdout.close()
        proc.wait()
    assert got.schema.names == (["id", "name"] if header else ["f0", "f1"])
    assert got.column(0).to_pylist() == want.column("id").to_pylist()
    assert got.column(1).to_pylist() == want.column("name").to_pylist()


def test_pipe_object_read_in_part_stops_its_relay(tmp_path):
    """A scan of a peeked stream that stops early (a limit) ends the thread
    that feeds it the rest: no hang, no thread left behind."""
    import subprocess
    import threading
    import time
    path = tmp_path / "big.csv"
    path.write_text(_csv_lines(400_000))  # 6 MB: more than a pipe holds
    proc = subprocess.Popen(["cat", str(path)], stdout=subprocess.PIPE)
    try:
        proc.stdout.peek(1)
        got = sluice.read(proc.stdout, format="csv", limit=10)
        assert pa.table(got).column("id").to_pylist() == list(range(10))
    finally:
        proc.stdout.close()
        proc.wait()
    for _ in range(100):
        if not any(t.name == "sluice-relay" for t in threading.enumerate()):
            break
        time.sleep(0.05)
    assert not any(t.name == "sluice-relay" for t in threading.enumerate())


def test_regular_file_object_not_at_its_start_is_refused(tmp_path):
    """An open regular file is read whole from its start; one whose
    position is past it is an error saying so (it was read from the start
    as if the position did not matter)."""
    path = tmp_path / "t.csv"
    path.write_text(_csv_lines(20))
    with open(path, "rb") as f:
        assert sluice.read(f).num_rows == 20
        f.readline()
        with pytest.raises(sluice.InvalidArgumentError, match="is at byte 8: sluice reads a file "
                           "object from its start"):
            sluice.read(f)
        f.seek(0)
        assert sluice.read(f).num_rows == 20
    with open(path, "rb", buffering=0) as f:  # unbuffered: its own position
        f.read(8)
        with pytest.raises(sluice.InvalidArgumentError, match="is at byte 8"):
            sluice.read(f)
