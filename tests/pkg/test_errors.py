"""Failures raise the sluice.Error subclass for the C library's error code,
with its message, and also the built-in exception that fits."""
import re
import time

import pyarrow as pa
import pytest

import sluice
from servers import silent_server


def test_missing_file(tmp_path):
    path = tmp_path / "missing.arrow"
    with pytest.raises(sluice.NotFoundError) as e:
        sluice.read(path)
    assert isinstance(e.value, FileNotFoundError) and isinstance(e.value, sluice.SourceError)
    assert str(path) in str(e.value) and e.value.code == 2 and e.value.message == str(e.value)
    # As open() raises it: errno and filename set.
    for call in (sluice.read, sluice.schema, lambda p: next(iter(sluice.scan(p)))):
        with pytest.raises(FileNotFoundError) as e:
            call(path)
        assert e.value.errno == 2 and e.value.filename == str(path), call
    # Another file missing: that one is named, not the source.
    import pyarrow as pa
    present = tmp_path / "present.avro"
    sluice.write(pa.table({"x": [1]}), present)
    with pytest.raises(FileNotFoundError) as e:
        sluice.read(present, reader_schema=str(tmp_path / "missing.avsc"))
    assert e.value.filename == str(tmp_path / "missing.avsc")
    with pytest.raises(FileNotFoundError) as e:
        sluice.read(str(tmp_path / "*.nothing"))
    assert e.value.filename == str(tmp_path / "*.nothing")
    # A path holding ": " is named whole (it was cut at its last ": ").
    odd = tmp_path / "a: b" / "missing.csv"
    odd.parent.mkdir()
    with pytest.raises(FileNotFoundError) as e:
        sluice.read(odd)
    assert e.value.filename == str(odd)


def test_truncated_and_malformed(tmp_path, typed):
    _, path = typed
    data = path.read_bytes()
    truncated = tmp_path / "truncated.arrow"
    truncated.write_bytes(data[: len(data) // 2])
    with pytest.raises(sluice.FormatError) as e:
        sluice.read(truncated)
    assert str(truncated) in str(e.value) and isinstance(e.value, ValueError)
    garbage = tmp_path / "garbage.arrow"
    garbage.write_bytes(b"ARROW1\0\0" + b"\xff" * 100 + b"ARROW1")
    with pytest.raises(sluice.FormatError):
        sluice.read(garbage)


def test_corrupt_parquet_is_a_format_error(tmp_path):
    """Bad Parquet bytes (footer, pages, checksums) are FormatError, as other
    formats' are; InvalidArgumentError stays for options."""
    import pyarrow.parquet as pq
    good = tmp_path / "good.parquet"
    pq.write_table(pa.table({"a": list(range(1000))}), good, compression="snappy")
    data = good.read_bytes()
    cases = {"truncated.parquet": data[: len(data) - 20] + b"PAR1",
             "no_magic.parquet": data[:-4] + b"XXXX",
             "bad_page.parquet": data[:4] + b"\xff" * 64 + data[68:]}
    for name, body in cases.items():
        (tmp_path / name).write_bytes(body)
        with pytest.raises(sluice.FormatError):
            sluice.read(tmp_path / name, format="parquet")
    with pytest.raises(sluice.InvalidArgumentError, match="verify_checksums"):
        sluice.read(good, verify_checksums="maybe")


def test_undetectable_format(tmp_path):
    path = tmp_path / "noise.bin"
    path.write_bytes(bytes(range(256)))
    with pytest.raises(sluice.InvalidArgumentError, match="cannot tell the format"):
        sluice.schema(path)


def test_bad_arguments(typed):
    _, path = typed
    with pytest.raises(sluice.InvalidArgumentError, match="unknown format 'nope'"):
        sluice.read(path, format="nope")
    with pytest.raises(sluice.InvalidArgumentError, match="no column 'zzz'"):
        sluice.read(path, columns=["zzz"])
    with pytest.raises(ValueError):
        sluice.read(path, threads=-1)
    for limit in (-1, -2):  # (-1 is not "no limit": None is)
        with pytest.raises(ValueError, match="limit"):
            sluice.read(path, limit=limit)
    with pytest.raises(TypeError):
        sluice.read(12)
    # A misspelt keyword goes to the format as an option, which refuses it:
    # the message says which keyword was meant.
    with pytest.raises(sluice.InvalidArgumentError, match="did you mean columns=") as e:
        sluice.read(path, colums=["i64"])
    assert e.value.code == 22
    with pytest.raises(sluice.InvalidArgumentError) as e:
        sluice.read(path, zzz=1)
    assert "did you mean" not in str(e.value)


def test_a_directory_is_a_source_error(tmp_path):
    with pytest.raises(sluice.SourceError):
        sluice.read(tmp_path)


def test_write_errors(tmp_path):
    t = pa.table({"a": [1, 2]})
    with pytest.raises(sluice.NotFoundError):
        sluice.write(t, tmp_path / "no" / "such" / "dir.arrow")
    with pytest.raises(sluice.InvalidArgumentError, match="output format"):
        sluice.write(t, tmp_path / "x.unknownext")
    with pytest.raises(sluice.InvalidArgumentError, match="delimiter"):
        sluice.write(t, tmp_path / "x.csv", delimiter="toolong")
    assert list(tmp_path.iterdir()) == []
    with pytest.raises(TypeError):
        sluice.write(object(), tmp_path / "x.arrow")


def test_os_errors_keep_errno_and_filename(tmp_path):
    """An OS error keeps its errno and names the file (.filename), as
    pyarrow's and open()'s OSError do: ENOTDIR, ENAMETOOLONG, EROFS came back
    as EIO (errno 5) with no filename. EACCES/EPERM, EISDIR and ENOTDIR are
    also PermissionError, IsADirectoryError and NotADirectoryError, as open()
    raises them; all stay SourceErrors."""
    import errno
    import pyarrow.parquet as pq
    t = pa.table({"a": [1]})
    file = tmp_path / "x.csv"
    file.write_bytes(b"a\n1\n")
    cases = [(file / "out.parquet", errno.ENOTDIR, NotADirectoryError),
             (tmp_path / ("a" * 300 + ".parquet"), errno.ENAMETOOLONG, OSError),
             (tmp_path, errno.EISDIR, IsADirectoryError)]
    for dst, code, builtin in cases:
        with pytest.raises(builtin) as peer:
            pq.write_table(t, dst)
        assert peer.value.errno == code
        with pytest.raises(sluice.SourceError) as e:
            sluice.write(t, dst, format="parquet")
        assert isinstance(e.value, builtin) and e.value.errno == code == e.value.code, e.value
        assert e.value.filename == str(dst)
        with pytest.raises(builtin) as e:
            with sluice.Writer(dst, t.schema, format="parquet") as w:
                w.write(t)
        assert e.value.errno == code and e.value.filename == str(dst)
    with pytest.raises(NotADirectoryError) as e:  # pyarrow: the same
        sluice.read(file / "foo.csv")
    assert e.value.errno == errno.ENOTDIR and e.value.filename == str(file / "foo.csv")
    for code, builtin in ((errno.EACCES, PermissionError), (errno.EPERM, PermissionError),
                          (errno.EROFS, OSError), (errno.EXDEV, OSError)):
        e = sluice._errors.from_code(code, "f: cannot replace the existing file: no")
        assert isinstance(e, sluice.SourceError) and isinstance(e, builtin) and e.errno == code
    import pickle
    e = pickle.loads(pickle.dumps(sluice._errors.from_code(errno.EACCES, "f: no")))
    assert isinstance(e, PermissionError) and e.code == errno.EACCES


def test_a_read_only_file_system_is_erofs(tmp_path):
    """EROFS, not EIO: e.errno == errno.EROFS, as pyarrow's OSError."""
    import errno
    import os
    import subprocess
    mnt = tmp_path / "ro"
    mnt.mkdir()
    if os.geteuid() != 0 or subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m,ro", "tmpfs",
                                            str(mnt)], capture_output=True).returncode != 0:
        pytest.skip("needs root to mount a read-only tmpfs")
    try:
        with pytest.raises(sluice.SourceError) as e:
            sluice.write(pa.table({"a": [1]}), mnt / "x.parquet")
        assert e.value.errno == errno.EROFS and e.value.filename == str(mnt / "x.parquet")
    finally:
        subprocess.run(["umount", str(mnt)], check=True)


@pytest.mark.parametrize("name,options,says", [
    ("x.parquet", {"compression": "nope"}, "unknown Parquet compression 'nope'"),
    ("x.avro", {"codec": "nope"}, r"unsupported Avro codec 'nope' \(known: null, deflate"),
    ("x.avro", {"compression": "lz4"}, "unsupported Avro codec 'lz4'"),
    ("x.csv", {"codec": "gzip"}, "unknown CSV write option 'codec'"),
    ("x.arrow", {"level": "3"}, "unknown Arrow IPC write option 'level'"),
])
def test_write_option_errors_name_the_file(tmp_path, name, options, says):
    """A mistaken write option is an InvalidArgumentError (not a format or
    support error, as the same codec name met in a file's header is) whose
    message starts with the file being written; nothing is left behind."""
    dst = tmp_path / name
    with pytest.raises(sluice.InvalidArgumentError) as e:
        sluice.write(pa.table({"a": [1, 2]}), dst, **options)
    assert str(e.value).startswith(f"{dst}: ")
    assert re.search(says, str(e.value))
    assert list(tmp_path.iterdir()) == []


def test_errors_pickle():
    import pickle
    e = pickle.loads(pickle.dumps(sluice.FormatError(84, "f: offset 3: bad")))
    assert type(e) is sluice.FormatError and e.code == 84 and str(e) == "f: offset 3: bad"


def test_errors_keep_filename_and_notes_when_pickled_or_copied(tmp_path):
    """dask and multiprocessing pickle an exception back to the caller: the
    filename (and notes) came back None; the builtin FileNotFoundError keeps
    them."""
    import copy
    import pickle
    path = str(tmp_path / "missing.parquet")
    with pytest.raises(sluice.NotFoundError) as info:
        sluice.read(path)
    e = info.value
    e.add_note("while loading the nightly batch")
    builtin = FileNotFoundError(2, "No such file", path)
    builtin.add_note("while loading the nightly batch")
    for clone in (pickle.loads(pickle.dumps(e)), copy.copy(e), copy.deepcopy(e)):
        assert type(clone) is sluice.NotFoundError
        assert (clone.code, clone.errno, clone.message, str(clone)) == (e.code, e.errno, e.message,
                                                                       str(e))
        assert clone.filename == e.filename == path
        assert clone.__notes__ == e.__notes__ == ["while loading the nightly batch"]
    peer = pickle.loads(pickle.dumps(builtin))
    assert (peer.filename, peer.__notes__) == (path, ["while loading the nightly batch"])
    e2 = pickle.loads(pickle.dumps(sluice.SourceError(5, "m", "a", None, "b")))
    assert (e2.filename, e2.filename2) == ("a", "b")


def test_oserror_construction_form():
    """NotFoundError is a FileNotFoundError: OSError(errno, strerror,
    filename) makes one, as for the builtin (it raised TypeError)."""
    e = sluice.NotFoundError(2, "No such file", "missing.parquet")
    b = FileNotFoundError(2, "No such file", "missing.parquet")
    assert (e.errno, e.strerror, e.filename, e.args) == (b.errno, b.strerror, b.filename, b.args)
    assert e.code == 2 and e.message == "No such file"
    assert sluice.SourceError(5, "m", "a", None, "b").filename2 == "b"
    # Not an OSError kind: no filename to take.
    with pytest.raises(TypeError):
        sluice.FormatError(84, "bad", "f.csv")


def test_errors_made_by_hand():
    """sluice.FormatError("msg") is as other exceptions: str() is the message."""
    e = sluice.FormatError("bad input")
    assert str(e) == "bad input" and e.message == "bad input" and e.code == 0
    assert isinstance(e, ValueError)


def test_timeout_of_a_silent_server():
    """timeout= bounds each attempt at a server that accepts and never
    answers (the CLI's --timeout): a SourceError that says so, in seconds,
    not minutes. A timeout that is not positive is a ValueError."""
    with silent_server() as (port, _):
        url = "http://127.0.0.1:%d/t.parquet" % port
        start = time.monotonic()
        with pytest.raises(sluice.SourceError) as e:
            sluice.read(url, timeout=0.5)
        assert "timed out" in str(e.value).lower() and time.monotonic() - start < 60
        with pytest.raises(ValueError, match="timeout"):
            sluice.read(url, timeout=0)


def test_password_in_an_http_url_is_not_in_messages(tmp_path):
    """A password in an http(s) URL (libcurl sends it as Basic
    authentication) is shown as *** in exceptions, as a cql:// one is; it
    was in every message."""
    import functools
    import http.server
    import threading
    (tmp_path / "bad.parquet").write_bytes(b"PAR1garbagegarbagePAR1")
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(tmp_path))
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    srv.RequestHandlerClass.log_message = lambda *a: None
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    base = "http://alice:s3cr3tpw@127.0.0.1:%d" % srv.server_address[1]
    try:
        for name, kind in (("bad.parquet", sluice.FormatError), ("missing.csv", sluice.SourceError)):
            with pytest.raises(kind) as e:
                sluice.read(f"{base}/{name}")
            assert "s3cr3tpw" not in str(e.value) and "alice:***@127.0.0.1" in str(e.value), e.value
    finally:
        srv.shutdown()
        srv.server_close()


def test_messages_quoting_bytes_that_are_not_utf8(tmp_path):
    """A codec name of bytes that are not UTF-8 is an UnsupportedError whose
    message shows them as \\xNN (it was a UnicodeDecodeError, which
    `except sluice.Error` did not catch)."""
    import fastavro
    path = tmp_path / "odd_codec.avro"
    with open(path, "wb") as f:
        fastavro.writer(f, {"type": "record", "name": "r", "fields": [{"name": "a", "type": "int"}]},
                        [{"a": 1}])
    data = path.read_bytes()
    at = data.index(b"avro.codec") + len(b"avro.codec")
    at = data.index(b"null", at)
    path.write_bytes(data[:at] + b"\xb1ul\\" + data[at + 4:])
    with pytest.raises(sluice.UnsupportedError, match=r"unsupported Avro codec '\\xb1ul\\\\'"):
        sluice.read(path)


def test_counts_must_be_whole_numbers(tmp_path):
    """limit=1.5 was read as 1 row; threads=-1 raised a bare ValueError.
    Counts are whole numbers (TypeError otherwise, as Python's APIs say) and
    not negative (InvalidArgumentError, a ValueError)."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    path = tmp_path / "t.parquet"
    pq.write_table(pa.table({"a": [1, 2, 3]}), path)
    with pytest.raises(TypeError, match="limit must be an integer"):
        sluice.read(path, limit=1.5)
    for name in ("threads", "batch_rows", "memory", "limit"):
        with pytest.raises(sluice.InvalidArgumentError, match=f"{name} must be >= 0"):
            sluice.read(path, **{name: -1})
    import numpy as np
    assert sluice.read(path, limit=np.int64(2)).num_rows == 2


def test_argument_errors_say_what_is_wrong(tmp_path):
    """write(t, 5) said sluice "reads a path"; threads=2**70 was a bare
    OverflowError ("Python int too large to convert to C long"); limit=True
    was read as 1 row; from_arrow of a chunked array spoke of "Arrow type
    'l'"."""
    import pyarrow.parquet as pq
    t = pa.table({"a": [1, 2, 3]})
    for dst in (5, None, [1]):
        with pytest.raises(TypeError, match="sluice writes to a path or URL .* or a writable "
                                            "file object") as e:
            sluice.write(t, dst)
        assert "reads" not in str(e.value)
    with pytest.raises(TypeError, match="sluice writes to"):
        sluice.Writer(5)
    path = tmp_path / "t.parquet"
    pq.write_table(t, path)
    for name in ("threads", "limit", "batch_rows", "memory"):
        with pytest.raises(sluice.InvalidArgumentError, match=f"^{name} must be at most "):
            sluice.read(path, **{name: 2**70})
        # bool is not a count (it was taken as 1).
        with pytest.raises(TypeError, match=f"{name} must be an integer or None, not bool"):
            sluice.read(path, **{name: True})
    with pytest.raises(sluice.InvalidArgumentError, match="threads must be at most 2147483647"):
        sluice.scan(path, threads=2**31)
    assert sluice.read(path, limit=2**63 - 1).num_rows == 3
    with pytest.raises(TypeError, match=r"not ChunkedArray \(of int64\): make a table of it"):
        sluice.Table.from_arrow(pa.chunked_array([[1, 2]]))
    with pytest.raises(TypeError, match=r"not Int64Array \(of int64\)"):
        sluice.Table.from_arrow(pa.array([1, 2]))


def test_columns_must_be_names(tmp_path):
    """columns=5 was "'int' object is not iterable" (pyarrow's read_table
    raises ValueError "Expected a list or a dict for 'columns'"); a
    TypeError now names columns and what it takes, in read, scan, schema,
    stats and read_pandas alike. A tuple, a generator of names still choose
    columns, as pyarrow takes them; one name (a str) is a ValueError, as
    pyarrow raises it (it was taken as [name])."""
    import pyarrow.parquet as pq
    path = tmp_path / "t.parquet"
    pq.write_table(pa.table({"a": [1, 2], "b": ["x", "y"]}), path)
    with pytest.raises(ValueError, match="columns"):
        pq.read_table(path, columns=5)
    for how in (sluice.read, sluice.scan, sluice.schema, sluice.stats, sluice.read_pandas):
        for bad in (5, 1.5, b"ab", object()):
            with pytest.raises(TypeError, match=r"^columns must be a list of column names "
                                                r"\(str\) or None \(all columns\), "
                                                r"not " + type(bad).__name__):
                how(path, columns=bad)
        with pytest.raises(TypeError, match=r"^columns must be a list of column names \(str\), "
                                            r"not of int \(0\): columns are chosen by name"):
            how(path, columns=[0])
        with pytest.raises(ValueError, match=r"columns"):
            pq.read_table(path, columns="b")
        with pytest.raises(sluice.InvalidArgumentError,
                           match=r"^columns must be a list of column names, not one name "
                                 r"\(columns=\['b'\]\)"):
            how(path, columns="b")
    for ok in (["b"], ("b",), (n for n in ["b"])):
        assert sluice.read(path, columns=ok).column_names == \
            pq.read_table(path, columns=["b"]).column_names


def test_flags_and_text_options_must_have_their_type(tmp_path):
    """ordered="no" was true (bool() of any non-empty str), as were
    hive_partitioning and union_by_name; delimiter=5 was the delimiter "5"
    (pandas' read_csv and pyarrow's ParseOptions raise TypeError): now
    TypeErrors that name the argument."""
    import io
    import pandas as pd
    import pyarrow.csv as pacsv
    path = tmp_path / "t.csv"
    path.write_text("a5b\n152\n")
    with pytest.raises(TypeError):
        pd.read_csv(io.StringIO(path.read_text()), delimiter=5)
    with pytest.raises(TypeError):
        pacsv.ParseOptions(delimiter=5)
    for key in ("delimiter", "sep", "quote", "escape", "comment"):
        with pytest.raises(TypeError, match="^option %s must be a str, not int" % key):
            sluice.read(path, **{key: 5})
    with pytest.raises(TypeError, match="^option delimiter must be a str, not bytes"):
        sluice.read(path, delimiter=b";")
    with pytest.raises(TypeError, match="^option delimiter must be a str, not int"):
        sluice.write(pa.table({"a": [1]}), tmp_path / "o.csv", delimiter=5)
    assert not (tmp_path / "o.csv").exists()
    for name in ("ordered", "hive_partitioning", "union_by_name"):
        for bad in ("no", b"yes", 1.5, [True]):
            with pytest.raises(TypeError, match="^%s must be True or False, not %s"
                               % (name, type(bad).__name__)):
                sluice.read(path, **{name: bad})
        # as pyarrow's flags take them (read_table(use_threads=0) works):
        # 0 and 1, and None for the default
        for ok in (0, 1, None):
            assert sluice.read(path, delimiter="5", **{name: ok}).column_names == ["a", "b"]
    pq = pytest.importorskip("pyarrow.parquet")
    pq.write_table(pa.table({"a": [1]}), tmp_path / "t.parquet")
    assert pq.read_table(tmp_path / "t.parquet", use_threads=0).num_rows == 1
    np = pytest.importorskip("numpy")
    assert sluice.read(path, ordered=np.False_, delimiter="5").column_names == ["a", "b"]


@pytest.mark.parametrize("raised", [RuntimeError, MemoryError, ValueError])
def test_a_producer_s_exception_reaches_the_caller_as_itself(tmp_path, raised):
    """A builtin exception raised by the data's producer (a generator behind
    pyarrow's reader) is raised as that class, as pyarrow's writers re-raise
    it, with the sluice error naming the file as its cause (it became an
    InvalidArgumentError, so `except RuntimeError` missed it); the write is
    undone."""
    schema = pa.schema([("a", pa.int64())])

    def batches():
        yield pa.record_batch([pa.array([1])], schema=schema)
        raise raised("boom at batch 2")

    dst = tmp_path / "x.parquet"
    with pytest.raises(raised, match="^boom at batch 2$") as e:
        sluice.write(pa.RecordBatchReader.from_batches(schema, batches()), dst)
    assert isinstance(e.value.__cause__, sluice.Error), e.value.__cause__
    assert str(dst) in str(e.value.__cause__)
    assert not dst.exists()
    with pytest.raises(raised, match="^boom at batch 2$"):
        with sluice.Writer(tmp_path / "y.arrow", schema=schema) as w:
            w.write(pa.RecordBatchReader.from_batches(schema, batches()))
    assert not (tmp_path / "y.arrow").exists()


def test_a_producer_s_own_exception_class_stays_a_sluice_error(tmp_path):
    """A class of the user's own cannot be found by its name in the text
    pyarrow passes on: a sluice error that quotes it."""
    class Mine(Exception):
        pass
    schema = pa.schema([("a", pa.int64())])

    def batches():
        yield pa.record_batch([pa.array([1])], schema=schema)
        raise Mine("boom")

    with pytest.raises(sluice.Error, match="Mine: boom"):
        sluice.write(pa.RecordBatchReader.from_batches(schema, batches()), tmp_path / "x.csv")
