"""sluice: read and write tables (Arrow IPC, CSV, Avro, Parquet, ...) into Arrow
memory, pandas and Dask at memory speed.

    import sluice
    t = sluice.read("data.parquet", columns=["a", "b"])   # a sluice.Table
    df = t.to_pandas()                                     # no pyarrow needed
    pa_table = pyarrow.table(t)                            # zero copy
    for batch in sluice.scan("big.csv", ordered=False):    # as splits finish
        ...
    sluice.write(df, "out.arrow")
    df = sluice.read_pandas("big.csv")        # batches freed as they are copied
    t = sluice.Table.from_arrow(polars_df)   # any Arrow producer, zero copy

Tables, batches and schemas speak the Arrow PyCapsule protocol, so pyarrow,
polars and DuckDB take them without copies. Errors are sluice.Error
subclasses carrying the C library's message.
"""
import errno as _errno
import io as _io
import operator as _operator
import os as _os
import typing as _typing

from . import _sluice
from ._arrow import DataType, Field
from ._errors import (Error, FormatError, InvalidArgumentError, NotFoundError, OutOfMemoryError,
                      SourceError, UnsupportedError)
from . import _table
from ._table import Batch, Column, Schema, Table

# A forked child (multiprocessing's default on Linux) gets the module's
# buffer cache with its lock as another thread may have held it.
if hasattr(_os, "register_at_fork"):
    _os.register_at_fork(after_in_child=_sluice.after_fork)

__version__ = _sluice.version
__all__ = [
    "read", "read_pandas", "scan", "schema", "write", "Writer", "read_ipc", "stats", "reader_formats",
    "writer_formats", "release_unused",
    "Table", "Batch", "Column", "Schema", "Field", "DataType", "Scanner",
    "Error", "FormatError", "InvalidArgumentError", "NotFoundError", "OutOfMemoryError",
    "SourceError", "UnsupportedError",
]


# Aliases for annotations (as the stubs have them; usable at runtime, in
# def f(src: sluice.Sources) without `from __future__ import annotations`).
PathLike = _typing.Union[str, bytes, _os.PathLike[str]]
# A file's contents in memory, read in place: anything with the buffer
# protocol (bytes, bytearray, memoryview, numpy or pyarrow buffers), or a
# BytesIO.
try:
    from collections.abc import Buffer as _Buffer  # Python 3.12+
    InMemory = _typing.Union[_Buffer, _io.BytesIO]
except ImportError:
    InMemory = _typing.Union[bytes, bytearray, memoryview, _io.BytesIO]
# One location, or several read as one table in that order, or a file's
# contents, or a file object with a descriptor (a pipe, a subprocess's stdout).
Sources = _typing.Union[PathLike, _typing.Sequence[PathLike], InMemory, _typing.IO[bytes]]
# [(column, op, value)], all must hold, or a list of such lists, any of which
# may (pyarrow's disjunctive normal form), or "year>=2023,city=a|b".
PartitionFilters = _typing.Union[str, _typing.Sequence[_typing.Tuple[str, str, _typing.Any]],
                                 _typing.Sequence[_typing.Sequence[_typing.Tuple[str, str,
                                                                                 _typing.Any]]]]


def _csv_schema(schema):
    """CSV's schema= as {name: type} or a pyarrow.Schema: "name:type|name:type",
    a type being its name as pyarrow prints it ("timestamp[us, tz=UTC]") and a
    name's other characters than letters, digits, " _-." as %XX escapes (so
    that "a,b" or "x:y" cannot split the list)."""
    if isinstance(schema, str):
        return _commas_to_bars(schema)
    from urllib.parse import quote
    pairs = schema.items() if hasattr(schema, "items") else [(f.name, f.type) for f in schema]
    for name, type_ in pairs:
        if str(type_).startswith("dictionary<"):  # (pyarrow.csv's column_types takes one)
            raise InvalidArgumentError(_errno.ENOTSUP, "schema: column %r: dictionary types are "
                                       "not supported in a CSV schema (read the column as "
                                       "string, then dictionary-encode it)" % (name,))
    return "|".join("%s:%s" % (quote(str(name), safe=" _-."), type_) for name, type_ in pairs)


def _commas_to_bars(spec):
    """'a:int64,b:timestamp[us, tz=UTC]' -> 'a:int64|b:timestamp[us, tz=UTC]':
    the CLI's --schema spelling, whose commas outside a type's brackets
    separate columns (within the option text, "|" does)."""
    out, depth = [], 0
    for i, ch in enumerate(spec):
        if ch in "[(" and i > 0 and spec[i - 1].isalnum():
            depth += 1
        elif ch in "])" and depth > 0:
            depth -= 1
        elif ch == "," and depth == 0:
            ch = "|"
        out.append(ch)
    return "".join(out) if depth == 0 else spec.replace(",", "|")


# Options whose values are characters or text (CSV's reader and writer).
_TEXT_OPTIONS = ("delimiter", "sep", "delim", "quote", "escape", "comment", "line_terminator")


def _options_string(options):
    """{key: value} -> b"key=value,key=value" (booleans as true/false), in
    UTF-8 (a path in it, reader_schema=, need not be: its bytes are kept)."""
    parts = []
    for key, value in options.items():
        if value is None:
            continue
        if key in _TEXT_OPTIONS and not isinstance(value, (str, bool)):
            # (delimiter=5 was the delimiter "5"; pandas and pyarrow raise
            # TypeError)
            raise TypeError("option %s must be a str, not %s" % (key, type(value).__name__))
        if isinstance(value, bool):
            value = "true" if value else "false"
        elif key == "schema":
            value = _csv_schema(value)
        elif isinstance(value, (list, tuple)):  # null_values=["NA", "-"], as pyarrow takes it
            value = "|".join(str(v) for v in value)
        elif hasattr(value, "__fspath__"):
            value = _os.fsdecode(_os.fspath(value))
        parts.append("%s=%s" % (key, value))
    if not parts:
        return None
    text = ",".join(parts)
    # The C library must split the text back into these very options: a
    # comma in a value would end it and start another (null="NA,header=false"
    # setting header=false), an unclosed bracket would swallow the next.
    got = _split_options(text)
    for i, part in enumerate(parts):
        if i >= len(got) or got[i] != part:
            key, _, value = part.partition("=")
            raise InvalidArgumentError(_errno.EINVAL, "option %s: its value %r would be read as "
                                       "more or less than one option (a comma separates "
                                       "options)" % (key, value))
    # UTF-8 whatever the locale; a path's bytes that are not UTF-8 (os.fsdecode's
    # surrogates) go back as they were.
    return text.encode("utf-8", "surrogateescape")


def _option_comma(s):
    """The index of the first comma of `s` that separates options, or None
    (the C library's sl_option_comma: commas in a bracket right after a
    letter or digit, as in "timestamp[us, tz=UTC]", do not)."""
    depth = 0
    for i, ch in enumerate(s):
        if ch in "[(" and i > 0 and s[i - 1].isascii() and s[i - 1].isalnum():
            depth += 1
        elif ch in "])" and depth > 0:
            depth -= 1
        elif ch == "," and depth == 0:
            return i
    if depth > 0:  # a bracket never closed: its commas separate after all
        i = s.find(",")
        return i if i >= 0 else None
    return None


def _split_options(text):
    """The options of "key=value,..." as the C library splits them
    (sl_option_next: a lone comma right after '=' is the value)."""
    items, at = [], 0
    while True:
        while at < len(text) and text[at] == ",":
            at += 1
        if at >= len(text):
            return items
        rest = text[at:]
        end = _option_comma(rest)
        n = end if end is not None else len(rest)
        eq = rest.find("=", 0, n)
        if eq >= 0 and end == eq + 1 and (end + 1 == len(rest) or rest[end + 1] == ","):
            n += 1
        items.append(rest[:n])
        at += n


def _is_data(src):
    """Whether `src` is the bytes of a file rather than where one is: a
    buffer (bytearray, memoryview, a BytesIO, numpy's or pyarrow's), or
    bytes that no path could be (a NUL or a line feed, or longer than any
    path). Other bytes stay a path, as os.open takes them."""
    if isinstance(src, bytes):
        return b"\0" in src or b"\n" in src or len(src) > 4096
    if isinstance(src, _io.BytesIO):
        return True
    try:
        memoryview(src).release()
    except TypeError:
        return False
    return True


def _bytesio_rest(src):
    """A BytesIO's bytes from its position when the caller has read a part of
    it (a preamble skipped with readline()), as pyarrow's, pandas' and polars'
    CSV readers read on from there; all of them at position 0 or at the end
    (a buffer just written, as pd.read_parquet and pyarrow read it)."""
    buffer = src.getbuffer()
    at = src.tell()
    return buffer[at:] if 0 < at < len(buffer) else buffer


def _expand(path):
    """A local path's leading ~ (or ~user) expanded, as pyarrow, pandas and
    polars take it; a URL, "-" and other paths as they are (the CLI's shell
    expands it already)."""
    if isinstance(path, (str, bytes)) and path[:1] in ("~", b"~"):
        return _os.path.expanduser(path)
    return path


def _location(src):
    if _is_data(src):  # read in place (sluice_dataset_open_memory)
        return _bytesio_rest(src) if isinstance(src, _io.BytesIO) else src
    if isinstance(src, (str, bytes)) or hasattr(src, "__fspath__"):
        return _expand(_os.fsdecode(_os.fspath(src)))
    if isinstance(src, (list, tuple)):  # several locations read as one table
        if not src:
            raise ValueError("an empty list of locations")
        return [_location(s) for s in src]
    fileno = getattr(src, "fileno", None)
    if fileno is not None and _os.path.isdir("/dev/fd"):
        # A pipe or socket (e.g. a subprocess's stdout): read through its
        # descriptor (see _FileObjectReading for what Python holds of it).
        try:
            return "/dev/fd/%d" % fileno()
        except (OSError, ValueError):
            pass
    raise TypeError("sluice reads a path or URL (str or os.PathLike) or a file object with a "
                    "file descriptor, not %s" % type(src).__name__)


class _FileObjectReading:
    """How a file object with a descriptor is read: through /dev/fd/N, so
    that the library reads the descriptor itself. What Python has already
    taken from it must not be lost: a buffered reader's read-ahead (after a
    peek() or a readline(), up to its buffer size) is no longer in the
    descriptor, so those bytes and then the rest of the descriptor go to the
    library through a pipe of our own, fed by a thread (pyarrow and pandas
    read on from there too). A regular file is read whole, from its start,
    wherever the object's position is (a read from a position is refused
    rather than guessed at: Parquet and Arrow files are read by their
    footers)."""

    def __init__(self, src):
        self.location = _location(src)
        self._read_end = None
        raw = getattr(src, "buffer", src)  # a text stream (sys.stdin): its bytes
        peek = getattr(raw, "peek", None)
        if not isinstance(self.location, str) or not self.location.startswith("/dev/fd/"):
            return
        fd = int(self.location[len("/dev/fd/"):])
        import stat
        mode = _os.fstat(fd).st_mode
        if stat.S_ISREG(mode):  # (an unbuffered FileIO too: its position is its own)
            try:
                at = src.tell()
            except (OSError, ValueError):
                at = 0
            if at != 0:
                raise InvalidArgumentError(
                    _errno.EINVAL, "%s is at byte %d: sluice reads a file object from its "
                    "start (seek(0) first, or pass the rest as bytes: f.read())" % (
                        getattr(src, "name", type(src).__name__), at))
            return
        if peek is None:  # unbuffered: nothing taken from the descriptor but what was read
            return
        # Without waiting: only what is buffered, or what a read gets now.
        blocking = _os.get_blocking(fd)
        _os.set_blocking(fd, False)
        try:
            try:
                held = peek(1) or b""
            except BlockingIOError:
                held = b""
        finally:
            _os.set_blocking(fd, blocking)
        if not held:
            return
        raw.read(len(held))  # taken over: consumed from the object, as a read would
        read_end, write_end = _os.pipe()
        import threading
        threading.Thread(target=_relay, args=(held, fd, write_end), daemon=True,
                         name="sluice-relay").start()
        self._read_end = read_end
        self.location = "/dev/fd/%d" % read_end

    def opened(self):
        """The library has opened the location (or failed to): our end of
        the pipe is no longer needed (the library holds its own)."""
        if self._read_end is not None:
            _os.close(self._read_end)
            self._read_end = None


def _relay(held, fd, write_end):
    """Writes `held`, then the rest of descriptor `fd`, into `write_end`,
    until the source ends or the reader stops reading (EPIPE)."""
    try:
        view = memoryview(held)
        while view:
            view = view[_os.write(write_end, view):]
        splice = getattr(_os, "splice", None)  # Linux, Python 3.10+: no copy through Python
        while True:
            if splice is not None:
                n = splice(fd, write_end, 1 << 20)
            else:
                chunk = _os.read(fd, 1 << 20)
                n = len(chunk)
                view = memoryview(chunk)
                while view:
                    view = view[_os.write(write_end, view):]
            if n == 0:
                break
    except OSError:
        pass  # the reader closed its end, or the source failed: the reader sees it end
    finally:
        _os.close(write_end)


def _destination(dst):
    """Where a write goes (as _location tells it), as the bytes os.open
    takes: a path need not be UTF-8."""
    try:
        where = _location(dst)
    except (TypeError, ValueError):  # (its message is a reader's)
        where = None
    if not isinstance(where, (str, bytes)):
        raise TypeError("sluice writes to a path or URL (str or os.PathLike) or a writable "
                        "file object (io.BytesIO, an open file), not %s" % type(dst).__name__)
    return _os.fsencode(where)


def _open(src, format, columns, threads, ordered, limit, batch_rows, memory, format_options,
          hive_partitioning=True, union_by_name=False, filters=None, filter_values=None,
          settled=True):
    """The open dataset. `filter_values`, when given a list, receives
    (column, value) for every Python filter value (_check_filter_types's,
    again after a refine). `settled`: whether the caller reads with the
    types of the open (a scan, a dask partition), so that a value is
    checked against them here; False for the reads that refine (_refining),
    which check a value on a type inferred from a sample once the whole
    input is read, as that may widen it to a type the value fits."""
    if isinstance(columns, str):
        # (as pyarrow's read_table refuses it; pandas reads one column per
        # character)
        raise InvalidArgumentError(_errno.EINVAL, "columns must be a list of column names, "
                                   "not one name (columns=[%r])" % (columns,))
    if columns is not None:
        # (columns=5 was "'int' object is not iterable"; b"ab" the names 97, 98)
        try:
            if isinstance(columns, (bytes, bytearray)):
                raise TypeError
            columns = list(columns)
        except TypeError:
            raise TypeError("columns must be a list of column names (str) or None "
                            "(all columns), not %s" % type(columns).__name__) from None
        for name in columns:
            if not isinstance(name, (str, bytes)):
                raise TypeError("columns must be a list of column names (str), not of %s "
                                "(%r): columns are chosen by name, not position"
                                % (type(name).__name__, name))
    # Whole numbers, as Python's own APIs take them (1.5 rows was 1 row);
    # not a bool (limit=True was 1 row), and within the C types (threads an
    # int, the others int64: 2**70 was a bare OverflowError).
    counts = {"limit": limit, "threads": threads, "batch_rows": batch_rows, "memory": memory}
    for name, value in counts.items():
        if value is None:
            continue
        try:
            if isinstance(value, bool):
                raise TypeError
            counts[name] = _operator.index(value)
        except TypeError:
            raise TypeError("%s must be an integer or None, not %s"
                            % (name, type(value).__name__)) from None
        if counts[name] < 0:
            raise InvalidArgumentError(_errno.EINVAL, "%s must be >= 0 or None, not %r"
                                       % (name, value))
        most = 2**31 - 1 if name == "threads" else 2**63 - 1
        if counts[name] > most:
            raise InvalidArgumentError(_errno.EINVAL, "%s must be at most %d or None, not %r"
                                       % (name, most, value))
    limit, threads, batch_rows, memory = (counts["limit"], counts["threads"],
                                          counts["batch_rows"], counts["memory"])
    # (ordered="no" was true; 0 and 1 are taken as pyarrow's flags take
    # them, and None is the default)
    ordered = True if ordered is None else ordered
    hive_partitioning = True if hive_partitioning is None else hive_partitioning
    union_by_name = False if union_by_name is None else union_by_name
    for name, value in (("ordered", ordered), ("hive_partitioning", hive_partitioning),
                        ("union_by_name", union_by_name)):
        if isinstance(value, (str, bytes)) or not (
                isinstance(value, (bool, int)) or
                _numpy_kind(value) in ("b", "i", "u")):
            raise TypeError("%s must be True or False, not %s" % (name, type(value).__name__))
    format_options = dict(format_options)
    ca_bundle, insecure = _tls_settings(format_options)
    timeout = _timeout(format_options)
    s3 = _storage_options(format_options.pop("storage_options", None))
    schema_file = _reader_schema_file(format_options)
    if filter_values is None:
        filter_values = []
    reading = None
    try:
        try:
            filter_text = _filter_text(filters, filter_values)
            if not _is_data(src) and not isinstance(src, (str, bytes, list, tuple)) and \
                    not hasattr(src, "__fspath__"):
                reading = _FileObjectReading(src)
                location = reading.location
            else:
                location = _location(src)

            def opened(row_filter):
                no_rows = row_filter == _NO_ROWS
                return _sluice.open(
                    location, format=format,
                    columns=columns,
                    threads=int(threads or 0), ordered=bool(ordered),
                    limit=0 if no_rows else -1 if limit is None else int(limit),
                    batch_rows=int(batch_rows or 0),
                    memory=int(memory or 0), format_options=_options_string(format_options),
                    hive_partitioning=bool(hive_partitioning),
                    union_by_name=bool(union_by_name),
                    filter=None if no_rows else row_filter,
                    ca_bundle=ca_bundle, insecure=insecure, s3=s3, timeout=timeout)

            types = None
            if any(_is_timedelta(v) for _, v in filter_values):
                # A timedelta is written as a number in its column's unit,
                # which only the schema tells: one open without the filter
                # first (a stream cannot be opened twice).
                if not _reopenable(location):
                    raise InvalidArgumentError(
                        _errno.EINVAL, "filters: a timedelta value needs its column's unit, "
                        "which a stream (%s) cannot be opened twice to learn: give the "
                        "duration as an integer in the column's unit" % (location,))
                probe = opened(None)
                try:
                    _check_filter_types(probe, filter_values, settled)
                    types = _filter_types(probe)
                finally:
                    probe.close()
                filter_text = _filter_text(filters, [], types)
            try:
                dataset = opened(filter_text)
            except InvalidArgumentError:  # (a second open is after the except: no chained error)
                # The library parses the values as their columns' types
                # ("'b' is not an integer"): a value of another Python type
                # is told as the check after the open tells it. A value that
                # its column's type writes otherwise ('2024' on a date key, a
                # str on an int key) is written so.
                better, typed = _filter_type_error_of(location, opened, filter_values, filters,
                                                      settled)
                if better is not None:
                    raise better from None
                if typed is None or types is not None or typed == filter_text:
                    raise
                dataset = None
            if dataset is None:
                dataset = opened(typed)
            elif types is None and filter_values and _reopenable(location):
                # (the same, where the library took the untyped text but
                # compares it otherwise than pyarrow: '2024-01-02T00:00' on a
                # date key, which pyarrow, whose key is text, compares as text)
                try:
                    typed = _filter_text(filters, [], _filter_types(dataset))
                except BaseException:
                    dataset.close()
                    raise
                if typed != filter_text:
                    dataset.close()
                    dataset = opened(typed)
            try:
                _check_filter_types(dataset, filter_values, settled)
            except BaseException:
                dataset.close()
                raise
            return dataset
        except Error as e:
            if schema_file is not None:
                _name_reader_schema(e, schema_file)
            raise
    except InvalidArgumentError as e:
        hint = _keyword_hint(str(e), format_options)
        if hint is None:
            raise
        raise InvalidArgumentError(e.code, "%s; %s" % (e.message, hint)) from None
    except SourceError as e:
        # As open() tells FileNotFoundError (NotADirectoryError, ...) which
        # file: .filename, the one the C library could not open ("... PATH:
        # cannot open: ...": a missing reader_schema file, say), else the
        # source when named.
        if e.filename is None:
            name = _expand(_os.fspath(src)) if isinstance(src, (str, _os.PathLike)) else None
            at = e.message.find(": cannot open:")
            if isinstance(name, str) and e.message.startswith(name + ": cannot open:"):
                e.filename = name  # whole, though the path may hold ": "
            elif at >= 0:
                e.filename = e.message[:at].rsplit(": ", 1)[-1]
            elif isinstance(name, str):
                if e.message.startswith(name + ":") or ("'%s'" % name) in e.message:
                    e.filename = name
        raise
    finally:
        if schema_file is not None:
            _os.unlink(schema_file[0])
        if reading is not None:
            reading.opened()


# The keyword arguments of read/scan that a mistyped one may have meant (the
# unknown ones go to the format as its options).
_KEYWORDS = ("format", "columns", "threads", "ordered", "limit", "batch_rows", "memory",
             "hive_partitioning", "union_by_name", "filters", "storage_options", "ca_bundle",
             "insecure", "timeout")


def _keyword_hint(message, format_options):
    """'did you mean columns=?' when the format refused an option that is a
    misspelt keyword argument (colums=, thread=), else None."""
    import difflib
    for key in format_options:
        if "'%s" % key not in message or key in _KEYWORDS:
            continue
        close = difflib.get_close_matches(key, _KEYWORDS, n=1, cutoff=0.75)
        if close:
            return "%r is not a keyword argument; did you mean %s=?" % (key, close[0])
    return None


_AVRO_PRIMITIVES = ("null", "boolean", "int", "long", "float", "double", "bytes", "string")


def _reader_schema_file(options):
    """Avro's reader_schema= may be a path, the schema as JSON text, a
    dict/list (as fastavro takes it) or a primitive type's name ("long", when
    no file has that name): all but a path go through a temporary file (the
    option is read at open), whose path replaces them in `options`; returns
    (that path, to delete after the open, and what the user gave, to name in
    errors instead), or None."""
    value = options.get("reader_schema")
    if value is None or hasattr(value, "__fspath__"):
        return None
    import json
    if isinstance(value, str) and value in _AVRO_PRIMITIVES and not _os.path.exists(value):
        text, given = json.dumps(value), "reader schema (given as the type %r)" % value
    elif isinstance(value, str) and not value.lstrip().startswith(("{", "[", '"')):
        return None  # a path
    elif isinstance(value, str):
        text, given = value, "reader schema (given as JSON text)"
    else:
        text = json.dumps(value)
        given = "reader schema (given as a %s)" % type(value).__name__
    import tempfile
    fd, path = tempfile.mkstemp(suffix=".avsc", prefix="sluice-reader-schema-")
    with _os.fdopen(fd, "w") as f:
        f.write(text)
    options["reader_schema"] = path
    return path, given


def _name_reader_schema(e, schema_file):
    """An error that names the temporary reader schema file names what the
    user gave instead (the file is gone when they read it)."""
    path, given = schema_file
    if path not in e.message:
        return
    message = e.message.replace("reader schema " + path, given).replace(path, given)
    e.message = message
    e.args = (e.args[0], message) + e.args[2:]
    if isinstance(e, OSError):
        e.strerror = message
        if e.filename == path:
            e.filename = None


# storage_options keys, as pandas/s3fs, polars/object_store and pyarrow spell
# them, to the library's sluice_s3_options fields.
_S3_KEYS = {
    "access_key_id": ("aws_access_key_id", "access_key_id", "access_key", "key"),
    "secret_access_key": ("aws_secret_access_key", "secret_access_key", "secret_key", "secret"),
    "session_token": ("aws_session_token", "session_token", "token"),
    "region": ("aws_region", "region", "region_name"),
    "endpoint_url": ("aws_endpoint_url", "endpoint_url", "endpoint", "endpoint_override"),
    "profile": ("aws_profile", "profile"),
    "anonymous": ("anon", "anonymous", "skip_signature", "aws_skip_signature"),
    "addressing_style": ("addressing_style",),
    "part_size": ("part_size",),
}
_S3_ALIASES = {alias: field for field, aliases in _S3_KEYS.items() for alias in aliases}
_S3_VIRTUAL = ("virtual_hosted_style_request", "aws_virtual_hosted_style_request",
               "force_virtual_addressing")


def _bool_option(key, value):
    """A boolean storage option as polars/object_store read one: a bool, 0 /
    1, None (false), or text true/false, 1/0, yes/no, y/n, on/off in any
    case; anything else is an error (the string "False" is false, not a
    non-empty string)."""
    if value is None or isinstance(value, bool):
        return bool(value)
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    if isinstance(value, str):
        text = value.strip().lower()
        if text in ("true", "1", "yes", "y", "on"):
            return True
        if text in ("false", "0", "no", "n", "off"):
            return False
    raise ValueError("storage option %s=%r: expected a boolean (True/False, or true/false, "
                     "1/0, yes/no, on/off)" % (key, value))


def _size_option(key, value):
    """A size in bytes: an int, or text with the CLI's k/m/g suffixes
    (powers of 1024: '16M', '16m', '5242880')."""
    if isinstance(value, int) and not isinstance(value, bool) and value > 0:
        return value
    if isinstance(value, str):
        import re
        m = re.fullmatch(r"([0-9]+)([kKmMgG]?)", value.strip())
        if m and int(m.group(1)) > 0:
            return int(m.group(1)) << {"": 0, "k": 10, "m": 20, "g": 30}[m.group(2).lower()]
    raise ValueError("storage option %s=%r: expected a size in bytes > 0 (an int, or text with "
                     "a k, m or g suffix, e.g. '16M')" % (key, value))


def _storage_options(options):
    """storage_options={...} (s3:// settings over the environment's and the
    AWS files') as a dict of sluice_s3_options fields, or None. Booleans and
    sizes may be text, as in polars: anon='false', part_size='16M'."""
    if not options:
        return None
    out = {}
    for key, value in dict(options).items():
        if key in _S3_VIRTUAL:
            out["addressing_style"] = "virtual" if _bool_option(key, value) else "path"
            continue
        field = _S3_ALIASES.get(key)
        if field is None:
            raise ValueError("unknown storage option %r; known: %s" % (
                key, ", ".join(sorted(list(_S3_ALIASES) + list(_S3_VIRTUAL)))))
        if field == "anonymous":
            value = _bool_option(key, value)
        elif field == "part_size":
            value = _size_option(key, value) if value is not None else None
        elif value is not None:
            value = str(value)
        out[field] = value
    return out


def _tls_settings(options):
    """Takes ca_bundle= and insecure= out of the keyword options: not a
    format's, but how https://, s3:// and cql:// (tls=True) check certificates,
    as the CLI's --ca-bundle and --insecure."""
    ca_bundle = options.pop("ca_bundle", None)
    insecure = bool(options.pop("insecure", False))
    return (_os.fsencode(ca_bundle) if ca_bundle is not None else None), insecure


def _timeout(options):
    """Takes timeout= (seconds; None = the defaults) out of the keyword options:
    an http(s):// or s3:// request that cannot connect, or brings no byte, for
    this long fails and is retried, as the CLI's --timeout."""
    value = options.pop("timeout", None)
    if value is None:
        return 0.0
    seconds = float(value)
    if not seconds > 0:
        raise ValueError("timeout must be seconds > 0 or None, not %r" % (value,))
    return seconds


_FILTER_OPS = {"=": "=", "==": "=", "!=": "!=", "<": "<", "<=": "<=", ">": ">", ">=": ">="}


def _numpy_kind(value):
    """numpy's kind letter of a numpy scalar or array ("b", "i", "u", "f",
    "M", "m", ...), or "" for any other value."""
    return getattr(getattr(value, "dtype", None), "kind", "")


_NUMBER_KINDS = {"int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
                 "halffloat", "float", "double", "decimal"}
_TEXT_KINDS = {"string", "large_string", "string_view", "binary", "large_binary",
               "binary_view", "fixed_size_binary"}


def _filter_value_fits(value, dtype, key):
    """Whether a Python filter value may compare with a column of `dtype`
    (its values' type, for a dictionary): as pyarrow's filters take them
    (its compute kernels refuse the others), with an integer also on a
    duration or decimal column (the README's "another number"), and text
    on a partition key (`key`), as pyarrow takes it."""
    import datetime
    import decimal
    kind = dtype.kind
    numpy_kind = _numpy_kind(value)
    if kind == "null":
        return True  # (pyarrow compares any value with a null column: no row passes)
    if getattr(dtype, "extension", None) == "arrow.uuid":
        # pyarrow's filters compare no value with a uuid column (no kernel
        # for uuid.UUID, bytes or str); the text form takes a UUID's text.
        return False
    if isinstance(value, bool) or numpy_kind == "b":
        return kind == "bool"
    if isinstance(value, int) or numpy_kind in ("i", "u"):
        return kind in _NUMBER_KINDS or kind == "duration"
    if isinstance(value, (float, decimal.Decimal)) or numpy_kind == "f":
        return kind in _NUMBER_KINDS
    if isinstance(value, str) and key:
        return True  # (pyarrow takes text on a partition key: "2024", "2024-01-02")
    if isinstance(value, (str, bytes)):
        return kind in _TEXT_KINDS
    if isinstance(value, datetime.datetime) or numpy_kind == "M":
        if kind not in ("timestamp", "date32", "date64"):
            return False
        # A naive value on a column with a zone (or an aware one on a column
        # without) is refused, as pyarrow refuses to compare them: taken as
        # UTC, or as written, it chose rows by another clock.
        aware = isinstance(value, datetime.datetime) and value.utcoffset() is not None
        return kind != "timestamp" or aware == (dtype.tz is not None)
    if isinstance(value, datetime.date):
        return kind in ("timestamp", "date32", "date64")
    if isinstance(value, datetime.time):
        return kind in ("time32", "time64")
    if _is_timedelta(value):
        return kind == "duration"
    # Another type (uuid.UUID, Fraction, complex, ...) reached the library
    # as its text and compared as a string: pyarrow refuses them all.
    return False


def _is_timedelta(value):
    """datetime.timedelta, pd.Timedelta (a subclass) or np.timedelta64."""
    import datetime
    return isinstance(value, datetime.timedelta) or _numpy_kind(value) == "m"


# numpy's fixed timedelta64 units, as (seconds, per) fractions: seconds / per.
_SECONDS_PER = {"W": (604800, 1), "D": (86400, 1), "h": (3600, 1), "m": (60, 1), "s": (1, 1),
                "ms": (1, 10**3), "us": (1, 10**6), "ns": (1, 10**9), "ps": (1, 10**12),
                "fs": (1, 10**15), "as": (1, 10**18)}


def _duration_text(value, unit):
    """A timedelta as its exact number of `unit` (the column's: s, ms, us,
    ns), as the library reads a duration value: 1.5 s on a duration[s]
    column is "1.5", which compares by its exact value as pyarrow compares
    it (it casts the column to the value's finer unit)."""
    import datetime
    import decimal
    from fractions import Fraction
    if hasattr(value, "to_timedelta64"):  # pd.Timedelta: its nanoseconds
        value = value.to_timedelta64()
    if isinstance(value, datetime.timedelta):
        seconds = Fraction((value.days * 86400 + value.seconds) * 10**6 + value.microseconds,
                           10**6)
    else:
        import numpy as np
        if np.isnat(value):
            raise ValueError("filters compare with numbers, bools, dates, times or text, not "
                             "NaT (a null passes no condition)")
        base, count = np.datetime_data(value.dtype)
        if base not in _SECONDS_PER:  # (months and years have no fixed length)
            raise ValueError("filters: %r has no fixed length in seconds" % (value,))
        seconds = int(value.astype(np.int64)) * count * Fraction(*_SECONDS_PER[base])
    units = seconds * {"s": 1, "ms": 10**3, "us": 10**6, "ns": 10**9}[unit]
    if units.denominator == 1:
        return str(units.numerator)
    with decimal.localcontext() as context:  # (a power of ten divides it: exact)
        context.prec = 80
        return format(decimal.Decimal(units.numerator) / units.denominator, "f")


def _check_numpy_time_unit(value, key):
    """Refuses an np.datetime64 or np.timedelta64 in a unit pyarrow's
    filters refuse ("Unsupported datetime64 / timedelta64 time unit": W, D,
    h, m, M, Y, ps, fs, as, and one without a unit), as pyarrow refuses it."""
    import numpy as np
    base = np.datetime_data(value.dtype)[0]
    if base not in ("s", "ms", "us", "ns") and not (base == "generic" and np.isnat(value)):
        kind = "timedelta64" if _numpy_kind(value) == "m" else "datetime64"
        raise InvalidArgumentError(
            _errno.EINVAL, "filters: column %r: a value of type %s in unit %r (%r) "
            "does not compare with it, as pyarrow refuses it: give it in s, ms, us or ns "
            "(value.astype('%s[s]'))" % (key, kind, base, value, kind))


# The first date a partition key's text can spell (YYYY-MM-DD).
_FIRST_DATE = "0001-01-01"


def _date_key_bound(value):
    """For a str on a date-typed partition key that spells no date as
    YYYY-MM-DD ('2024', '2024-01', '2024-01-02T00:00'): the first date
    whose YYYY-MM-DD text sorts after it ("" if none does); else None.
    pyarrow types such a key as text and compares the value with that
    text (the library reads it as a date, refusing '2024')."""
    import datetime
    if not isinstance(value, str):
        return None
    try:
        if datetime.date.fromisoformat(value).isoformat() == value:
            return None
    except ValueError:
        pass
    # The text order of YYYY-MM-DD is the date order: bisect the days.
    lo, hi = 1, datetime.date.max.toordinal() + 1
    while lo < hi:
        mid = (lo + hi) // 2
        if datetime.date.fromordinal(mid).isoformat() > value:
            hi = mid
        else:
            lo = mid + 1
    return "" if lo > datetime.date.max.toordinal() else datetime.date.fromordinal(lo).isoformat()


def _date_key_condition(name, op, bound):
    """The condition on a date key that holds where its text compares with
    a value that no key spells as `op` does; `bound`: _date_key_bound's."""
    if op in ("=", "=="):
        return "%s<%s" % (name, _FIRST_DATE)  # no row
    if op == "!=":
        return "%s>=%s" % (name, _FIRST_DATE)  # every non-null row
    if op in (">", ">="):
        return "%s>=%s" % (name, bound) if bound else "%s<%s" % (name, _FIRST_DATE)
    return "%s<%s" % (name, bound) if bound else "%s>=%s" % (name, _FIRST_DATE)


_INT_RANGES = {"int8": 8, "int16": 16, "int32": 32, "int64": 64}


def _int_key_value(value, dtype):
    """For a str on an int-typed partition key: the int it spells as
    pyarrow's cast of a string to an int reads it (ASCII digits after an
    optional '-': '7', '07', '-0'; pyarrow's `in` compares so) within the
    key's type; else None: it equals no key ('7.0', '+7', ' 7', 'abc')."""
    import re
    if not re.fullmatch(r"-?[0-9]+", value):
        return None
    number = int(value)
    if dtype.kind in _INT_RANGES:
        bits = _INT_RANGES[dtype.kind]
        return number if -2**(bits - 1) <= number < 2**(bits - 1) else None
    return number if 0 <= number < 2**int(dtype.kind[4:]) else None


def _int_key_condition(name, op, dtype):
    """A condition on an int key that holds for no row (op `=`, `in`) or
    for every non-null one (`!=`, `not in`)."""
    least = -2**(_INT_RANGES[dtype.kind] - 1) if dtype.kind in _INT_RANGES else 0
    return "%s%s%d" % (name, "<" if op in ("=", "==", "in") else ">=", least)


def _with_index_columns(dataset, src, columns):
    """`columns` (a list) and the index columns that pandas recorded in the
    source's "pandas" metadata and `columns` leaves out, as pd.read_parquet
    and dd.read_parquet read them (pyarrow's use_pandas_metadata): the index
    comes back with a projection. None when nothing is to be added (no
    projection, no such metadata, a source that cannot be opened again)."""
    if columns is None or isinstance(columns, (str, bytes, bytearray)) or _is_data(src):
        return None
    if not isinstance(src, (list, tuple, str, bytes)) and not hasattr(src, "__fspath__"):
        return None  # (a file object: read once)
    import json
    full = Schema(dataset.full_schema())
    try:
        specs = json.loads(full.metadata.get("pandas") or "{}").get("index_columns") or []
    except (ValueError, TypeError, AttributeError):
        return None
    columns = list(columns)
    names = set(full.names)
    missing = [s for s in specs if isinstance(s, str) and s in names and s not in columns]
    if not missing or not _reopenable(_location(src)):
        return None
    return columns + missing


def _reopenable(location):
    """Whether a location can be opened again (not a stream read once)."""
    if isinstance(location, list):
        return all(_reopenable(one) for one in location)
    if not isinstance(location, str):
        return True  # (a buffer in memory)
    if location == "-" or location.startswith(("/dev/fd/", "/dev/stdin", "/proc/")):
        return False
    import os
    import stat
    try:  # (a named pipe or a device: a second open waits for another writer)
        mode = os.stat(location[7:] if location.startswith("file://") else location).st_mode
    except (OSError, ValueError):
        return True  # (a URL, a glob: the library opens it)
    return stat.S_ISREG(mode) or stat.S_ISDIR(mode)


def _filter_type_error_of(location, opened, pairs, filters, settled=True):
    """(the error _check_filter_types gives for `pairs`, the filter text
    typed by the columns (_filter_text's `types`)) on the schema of an open
    without the filter (`opened(None)`); (None, None) where no open without
    the filter is possible."""
    if not pairs or not _reopenable(location):
        return None, None
    try:
        probe = opened(None)
    except Error:
        return None, None
    try:
        error = _filter_type_error(probe, pairs, settled)
        if error is not None:
            return error, None
        try:
            return None, _filter_text(filters, [], _filter_types(probe))
        except InvalidArgumentError as e:  # (a str ordered with an int key)
            return e, None
    finally:
        probe.close()


def _filter_types(dataset):
    """{column: (its type, its values' for a dictionary; whether it is a
    partition key)}: what _filter_text writes a value by."""
    types = {}
    for f in Schema(dataset.full_schema()).fields:
        if f.name not in types:
            types[f.name] = (f.type.dictionary or f.type, dataset.is_partition_key(f.name))
    return types


def _check_filter_types(dataset, pairs, settled=True, whole=False):
    """Refuses a pyarrow-style filter value whose Python type is not the
    column's (an int on a string column was compared as its text, a str on
    an int column as the number it spells), as pyarrow refuses it, before
    anything is read, and once a read that refines has read the whole input.
    `pairs`: (column, value) for every value, as _filter_text collects them.
    Text filters are typed by the column, by design. With `settled` False,
    values on columns whose type is inferred from a sample and may still
    widen (dataset.type_inferred) are left for later: the whole input may
    widen the column to a type they fit ('hello' past a sample of ints).
    `whole`: the whole input was read, so an inferred type is final."""
    error = _filter_type_error(dataset, pairs, settled, whole)
    if error is not None:
        raise error


def _filter_type_error(dataset, pairs, settled=True, whole=False):
    """_check_filter_types's error, or None."""
    import datetime
    if not pairs:
        return None
    fields = {}
    for f in Schema(dataset.full_schema()).fields:
        fields.setdefault(f.name, f)
    for name, value in pairs:
        field = fields.get(name)
        if field is None:
            continue  # (the library named it)
        if not settled and dataset.type_inferred(name):
            continue
        dtype = field.type.dictionary or field.type
        key = isinstance(value, str) and dataset.is_partition_key(name)
        if not _filter_value_fits(value, dtype, key):
            zone = ""
            if dtype.kind == "timestamp" and isinstance(value, datetime.datetime):
                zone = " with a time zone" if value.utcoffset() is not None else \
                    " without a time zone"
            elif dtype.kind == "timestamp" and _numpy_kind(value) == "M":
                zone = " without a time zone"
            # (a CSV column's type may come from a sample that a later
            # value widens: say how to type it from the whole file)
            hint = "; a CSV column's type is inferred from a sample of the file unless " \
                "schema= gives it: infer_bytes='all' reads the whole file to infer it" \
                if dataset.format == "csv" else ""
            if getattr(dtype, "extension", None) == "arrow.uuid":
                import uuid
                from urllib.parse import quote
                hint = ", as pyarrow refuses any value on it; the text form takes a UUID's " \
                    "text: filters=\"%s=%s\"" % (quote(name, safe=""), value) \
                    if isinstance(value, uuid.UUID) else ", as pyarrow refuses any value on it"
            if whole and dataset.type_inferred(name):
                hint = "; the column's type was inferred from the data read (objects a " \
                    "filter on partition keys skipped are not read), which no value widened: " \
                    "schema= gives the type"
            return InvalidArgumentError(
                _errno.EINVAL, "filters: column %r has type %s; a value of type %s%s (%r) "
                "does not compare with it%s" % (name, field.type, type(value).__name__, zone,
                                                value, hint))
        if dtype.kind in ("halffloat", "float", "double") and _past_double(value):
            return InvalidArgumentError(
                _errno.EINVAL, "filters: column %r has type %s; the value %s is past the range "
                "of a double, as pyarrow refuses it" % (name, field.type, _short_repr(value)))
    return None


def _past_double(value):
    """Whether an int or a finite Decimal is past a double's range (its text
    parsed to an infinity, which compared with the column's inf rows)."""
    import decimal
    import math
    if isinstance(value, bool) or not isinstance(value, (int, decimal.Decimal)):
        return False
    if isinstance(value, decimal.Decimal) and not value.is_finite():
        return False
    try:
        return math.isinf(float(value))
    except OverflowError:
        return True


def _short_repr(value):
    """repr(value), its middle cut when long (10**400)."""
    text = repr(value)
    return text if len(text) <= 60 else "%s...%s (%d characters)" % (text[:24], text[-12:],
                                                                      len(text))


def _filter_value(v):
    """A filter value as the plain Python value it stands for: a pyarrow
    scalar's (pyarrow's filters take them), and a str, int or float
    subclass's own (an enum.Enum mixed with str gave str() "S.A", its
    member's name, and compared as that)."""
    if type(v).__module__.startswith("pyarrow") and hasattr(v, "as_py"):
        return v.as_py()
    if isinstance(v, (bytearray, memoryview)):
        return bytes(v)  # (as pyarrow takes them on a binary column)
    for base in (str, int, float):
        if isinstance(v, base) and type(v) is not base and not isinstance(v, bool):
            return base(v) if base is not str else str.__str__(v)
    return v


# _filter_text's answer for filters no row passes (a group with "in" and no
# values, in every group): the read asks for no rows (limit 0).
_NO_ROWS = "\0no rows"


def _filter_text(filters, pairs=None, types=None):
    """pyarrow-style filters, [("year", ">=", 2023), ("city", "in", ["Paris",
    "Rome"])] (all must hold), as the library's "year>=2023,city=Paris|Rome";
    or a list of such lists, any of which may hold (pyarrow's disjunctive
    normal form), groups joined by ';'; or such a string as it is. On
    partition keys they choose objects, on other columns rows. Appends
    (column, value) for every value to `pairs` (_check_filter_types's).
    `types`: _filter_types's, to write a value as its column's type takes
    it (a timedelta as a number of a duration's unit, an aware datetime on
    a date column as its UTC date-time, a str on a date partition key as
    pyarrow compares it with the key's text)."""
    if filters is None or isinstance(filters, str):
        return filters
    if not isinstance(filters, (list, tuple)):
        # (A pyarrow.compute.Expression, which pq.read_table also takes,
        # failed as "object is not iterable".)
        raise TypeError("filters: a list of (column, op, value) tuples, all of which must hold, "
                        "a list of such lists, any of which may, or the text form "
                        "('x>5,city=Paris|Rome'); not %s" % type(filters).__name__)
    filters = list(filters)
    # As pyarrow tells them: a list whose first item starts with a column
    # name is one group of conditions ([["x", ">", 2]] included), else a
    # list of groups.
    flat = bool(filters) and isinstance(filters[0], (list, tuple)) and bool(filters[0]) and \
        isinstance(filters[0][0], str)
    if filters and not flat and all(isinstance(g, list) or (isinstance(g, tuple) and g and
                                                            isinstance(g[0], (list, tuple)))
                                    for g in filters):
        if any(not g for g in filters):
            raise ValueError("filters: an empty group in %r" % (filters,))
        groups = [_filter_text(list(g), pairs, types) for g in filters]
        if any(g is None for g in groups):  # a group every row passes: so does the whole
            return None
        groups = [g for g in groups if g != _NO_ROWS]
        return ";".join(groups) if groups else _NO_ROWS
    import datetime
    from urllib.parse import quote

    def text(v, key):
        if v is None:
            raise ValueError("filters compare with numbers, bools, dates, times or text, not None "
                             "(a null passes no condition)")
        if isinstance(v, bool):
            return "true" if v else "false"
        if isinstance(v, bytes):
            return quote(v, safe="")
        if isinstance(v, float) or _numpy_kind(v) == "f":
            # The double's value, as pyarrow compares it: str() of a numpy
            # float32 is its own shortest form ('0.1', another double), and
            # one of 2**53 or more drops digits an integer column compares.
            # A whole number goes exact; any other in its shortest round-trip
            # form (no integer lies between that and the double).
            f = float(v)
            return str(int(f)) if f.is_integer() else repr(f)
        kind = types[key][0].kind if types is not None and key in types else None
        if _numpy_kind(v) in ("m", "M"):
            _check_numpy_time_unit(v, key)
        if _is_timedelta(v) and kind == "duration":
            return _duration_text(v, types[key][0].unit)
        if isinstance(v, datetime.datetime) and v.utcoffset() is not None and \
                v.utcoffset() % datetime.timedelta(minutes=1):
            # (the library takes an offset in whole minutes, as ISO 8601
            # spells it: one with seconds is written as UTC)
            try:
                v = v.astimezone(datetime.timezone.utc)
            except OverflowError:
                raise InvalidArgumentError(
                    _errno.EINVAL, "filters: column %r: %r is past the range of a datetime "
                    "in UTC" % (key, v)) from None
        return quote(v.isoformat() if hasattr(v, "isoformat") else str(v), safe="")

    parts = []
    no_rows = False  # an "in" with no values: no row passes the group (as in pyarrow)
    for item in filters:
        if not (isinstance(item, (tuple, list)) and len(item) == 3 and isinstance(item[0], str)):
            raise ValueError("filters: a list of (key, op, value) tuples, all of which must hold, "
                             "or a list of such lists, any of which may: %r" % (item,))
        key, op, value = item
        date_key = types is not None and key in types and types[key][1] and \
            types[key][0].kind in ("date32", "date64")
        int_key = types is not None and key in types and types[key][1] and \
            (types[key][0].kind in _INT_RANGES or types[key][0].kind.startswith("uint"))
        if op in ("in", "not in"):
            values = [_filter_value(v) for v in value]
            if not values:  # (pyarrow: "in" no row, "not in" every row, nulls too)
                no_rows = no_rows or op == "in"
                continue
            if pairs is not None:
                pairs.extend((key, v) for v in values)
            if date_key:
                # (text that is no key's date is no key's text either)
                values = [v for v in values if _date_key_bound(v) is None]
                if not values:  # no row is in, every non-null one not in
                    parts.append("%s%s%s" % (quote(key, safe=""), "<" if op == "in" else ">=",
                                             _FIRST_DATE))
                    continue
            if int_key:
                # (a str that spells no key's int equals no key)
                values = [_int_key_value(v, types[key][0]) if isinstance(v, str) else v
                          for v in values]
                values = [v for v in values if v is not None]
                if not values:
                    parts.append(_int_key_condition(quote(key, safe=""), op, types[key][0]))
                    continue
            parts.append("%s%s%s" % (quote(key, safe=""), "=" if op == "in" else "!=",
                                     "|".join(text(v, key) for v in values)))
        elif op in _FILTER_OPS:
            value = _filter_value(value)
            if pairs is not None:
                pairs.append((key, value))
            bound = _date_key_bound(value) if date_key else None
            if bound is not None:
                parts.append(_date_key_condition(quote(key, safe=""), op, bound))
                continue
            if int_key and isinstance(value, str):
                if op not in ("=", "==", "!="):
                    raise InvalidArgumentError(
                        _errno.EINVAL, "filters: partition key %r has type %s; a str (%r) "
                        "compares with it by =, !=, in and not in only, as its text order is "
                        "not the keys' number order: give an int"
                        % (key, types[key][0], value))
                value = _int_key_value(value, types[key][0])
                if value is None:
                    parts.append(_int_key_condition(quote(key, safe=""), op, types[key][0]))
                    continue
            parts.append("%s%s%s" % (quote(key, safe=""), _FILTER_OPS[op], text(value, key)))
        else:
            raise ValueError("filters: unknown operator %r (=, ==, !=, <, <=, >, >=, in, not in)"
                             % (op,))
    if no_rows:
        return _NO_ROWS
    return ",".join(parts) if parts else None


class Scanner:
    """Batches of a running scan, as they are ready (see sluice.scan).

    Iterating yields sluice.Batch objects; ``close()`` (or leaving a ``with``
    block, or dropping the scanner) stops the workers, frees what is in
    flight and closes the source. A scan that ends early says so: next()
    after close() raises ValueError (as a closed file's read does), also in
    a thread that was waiting for a batch when another one closed it, and
    after the scanner was handed to an Arrow consumer; StopIteration means
    every batch was taken. Ctrl-C while waiting stops the scan and raises
    KeyboardInterrupt.

    Implements ``__arrow_c_stream__``: ``pyarrow.RecordBatchReader.from_stream(s)``,
    ``polars.from_arrow``-style consumers and DuckDB take the batches not yet
    taken, as they are decoded, without copies; the scanner is then consumed.
    """

    __slots__ = ("_scanner", "_dataset", "schema", "_owns_dataset", "_closed_info")

    def __init__(self, dataset, **scan_options):
        self._dataset = dataset
        self._owns_dataset = False  # sluice.scan's: closed with the scanner
        self._closed_info = None    # (format, num_splits) once the dataset is closed
        self.schema = Schema(dataset.schema())
        # scan_options (first_split, num_splits, slow_split, ...) are for
        # sluice.dask and tests.
        self._scanner = dataset.scan(**scan_options)

    @property
    def format(self):
        return self._closed_info[0] if self._closed_info else self._dataset.format

    @property
    def num_splits(self):
        return self._closed_info[1] if self._closed_info else self._dataset.num_splits

    def __iter__(self):
        return self

    def __next__(self):
        return Batch(next(self._scanner), self.schema)

    def close(self):
        """Stops the scan: the workers stop, batches in flight are freed and
        the source is closed. Batches already taken stay valid. A second
        call does nothing; next() then raises ValueError, also in a thread
        waiting for a batch."""
        self._scanner.close()
        if self._owns_dataset and self._closed_info is None:
            # The source (mappings, a descriptor) is let go now, not when
            # the scanner object is dropped (the scanner was closed above,
            # unless a batch was being made: then the scan's thread lets go
            # of its hold as soon as that call returns).
            self._closed_info = (self._dataset.format, self._dataset.num_splits)
            self._dataset.close()

    def __arrow_c_stream__(self, requested_schema=None):
        return self._scanner.__arrow_c_stream__(requested_schema)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False


def scan(src, *, format=None, columns=None, threads=None, ordered=True, limit=None,
         batch_rows=None, memory=None, hive_partitioning=True, union_by_name=False,
         filters=None, _scan=None, **format_options):
    """Start reading `src` and return a Scanner yielding sluice.Batch objects
    as they are decoded. With ordered=False batches come as splits finish;
    each carries its (split, index) position, and a limit keeps the rows of
    the batches that came first, not the first rows. Arguments as for
    sluice.read."""
    ds = _open(src, format, columns, threads, ordered, limit, batch_rows, memory, format_options,
               hive_partitioning, union_by_name, filters)
    try:
        scanner = Scanner(ds, **(_scan or {}))
    except BaseException:
        ds.close()
        raise
    scanner._owns_dataset = True
    return scanner


def read(src, *, format=None, columns=None, threads=None, ordered=True, limit=None,
         batch_rows=None, memory=None, hive_partitioning=True, union_by_name=False,
         filters=None, _scan=None, _gather=True, **format_options):
    """Read a whole table.

    src: a path (a leading ``~`` is the home directory, as in pyarrow and
        pandas), ``"-"`` (standard input) or a URL (``s3://``, ``https://``,
        ``cql://user:password@host/keyspace.table`` for a Cassandra table);
        or a list of them, read as one table in that order (each may be a
        directory, an ``s3://`` prefix or a glob; ``\\`` escapes a glob
        character, so ``"s3://b/run\\[1\\].csv"`` is the one object
        ``run[1].csv``; names starting with "." or "_" are skipped unless
        the glob spells that character, ``"_x*.csv"``); or a file's
        contents in memory, read in place
        without a copy: a ``memoryview``, ``bytearray``, ``io.BytesIO``
        (all of it), numpy or pyarrow buffer, or ``bytes`` (bytes that could
        be a path, with no NUL or line feed, are one: wrap them in
        ``memoryview`` to read them as data). The buffer must not change
        while the table or its batches are alive.
    format: "arrow", "arrows", "csv", "avro", "parquet", ... (default: detected
        from the first bytes, then the name).
    columns: names of the columns to read, in the order wanted (default all).
    threads: decoding threads (default one per core).
    ordered: False lets splits finish in any order; the table is still put
        back into plan order (by each batch's (split, index)), without waiting
        for earlier splits while decoding.
    limit: stop after this many rows.
    batch_rows: preferred rows per batch for formats that choose it.
    memory: bytes of decoded batches allowed in flight (default 256 MiB;
        128 MiB when batches are placed by known split row counts, below).
        A Parquet row group larger than a quarter of it (at least 8 MiB
        decoded) is read page by page in batches of about that size (lists
        and maps too: a batch ends where a row does), not decoded whole.
    hive_partitioning: False keeps the ``key=value`` directories of a
        dataset (``sales/year=2024/``) from becoming columns, as they do by
        default.
    union_by_name: True reads objects whose columns differ (Parquet, Arrow
        IPC, Avro, CSV): their columns matched by name, in the order first
        met, rows null where their object lacks the column (DuckDB's
        union_by_name; one type per name, or types that join, as int32
        and int64; a column of type null, all None, takes the others' type;
        CSV types inferred file by file join as without it: int64 and
        float64 as float64, a date and a timestamp as the timestamp, other
        mixes as string).
    filters: ``[("year", ">=", 2023), ("city", "in", ["Paris", "Rome"])]``
        (as pyarrow's, all must hold; or a list of such lists, any of which
        may, as pyarrow's disjunctive normal form; or the CLI's text,
        ``"year>=2023,city=Paris|Rome"``): on partition keys they choose the
        objects (the others are never opened; in groups, an object no
        group's key conditions take), on other columns the rows (a null
        passes none, as in SQL: ``not in`` and ``!=`` drop rows whose value
        is null, as DuckDB and polars do, where pyarrow's ``not in`` keeps
        them; Parquet row groups whose statistics exclude every row,
        or whose Bloom filters or dictionaries hold none of an ``=`` /
        ``in`` condition's values, are not read).
    **format_options: format-specific options, e.g. for CSV
        ``delimiter=";", header=False``, ``max_row_bytes=`` (the longest
        row, or lenprefix message, read from a stream: compressed, a pipe,
        HTTP; default ``memory`` and at least 256 MiB; a longer one is an
        error naming its line or message and byte); and ``ca_bundle=``
        (a PEM file of trusted CAs) and ``insecure=True`` (no certificate
        checks) for https://, s3:// and cql:// with ``tls=True``, as the
        CLI's --ca-bundle and --insecure (cql:// also takes ``tls_cert=``
        and ``tls_key=``, a client certificate and its key as PEM files,
        for nodes that ask for one, and ``compression="lz4"`` for LZ4
        frames); ``timeout=`` (seconds: an
        http(s):// or s3:// request that cannot connect, or brings no byte,
        for this long fails and is retried; default 30 s to connect, 60 s
        without a byte; cql://: to connect and for each answer, default
        120 s), as the CLI's --timeout; ``storage_options={...}`` for
        s3://, over the AWS_* environment and ~/.aws files, keys as pandas,
        polars and pyarrow spell them: ``aws_access_key_id`` (``key``),
        ``aws_secret_access_key`` (``secret``), ``aws_session_token``
        (``token``), ``aws_region`` (``region``), ``endpoint_url``,
        ``profile``, ``anon=True`` (unsigned requests), ``addressing_style``
        (``"path"``/``"virtual"``, or ``force_virtual_addressing=True``);
        booleans may be text as in polars (``"false"``, ``"0"``, ``"no"``
        are false; other text than true/false, 1/0, yes/no, on/off is an
        error);
        for Avro, ``reader_schema=`` as a path, the schema's JSON text, a
        dict, or a primitive type's name such as ``"long"`` (as fastavro
        takes them; a file of that name is a path); errors name it as given;
        ``max_block_bytes=`` (the most a block may decompress to; default
        ``memory`` and at least 256 MiB; a larger one is an error naming it)
        and ``split_size=`` (bytes of file per split).
    Returns a sluice.Table, in plan order whatever ``ordered`` says.

    CSV column types are inferred from a sample; a value past it that does
    not fit its column's type widens the column (int64 -> float64 -> string,
    microseconds -> nanoseconds) and the input is read again, so the table
    has the types of the whole file (``infer_bytes="all"`` or ``schema=``
    avoid the second pass).

    When every column is flat fixed-width (numbers, bools, dates, times,
    timestamps, durations, decimals), the batches are copied into one column
    each as they arrive and freed at once: the table is a single batch, and
    ``to_pandas()`` wraps its columns without another copy. When the format
    knows each split's rows ahead (Parquet, Avro), splits are decoded in any
    order and each batch goes to its place; Parquet decodes its values
    straight into the final columns (no copy at all). Other tables keep the
    decoded batches as they are.
    """
    # The first `limit` rows in plan order: unordered, the limit would keep
    # whichever splits finished first.
    if limit is not None:
        ordered = True
    filter_values = []
    ds = _open(src, format, columns, threads, ordered, limit, batch_rows, memory, format_options,
               hive_partitioning, union_by_name, filters, filter_values, settled=False)
    return _refining(ds, lambda: _read(ds, ordered, limit, memory, _scan, _gather), filter_values)


def _refining(ds, read_once, filter_values):
    """read_once(), again for as long as each failure widened a column type
    inferred from a sample (a later CSV value that did not fit it: int64 ->
    float64 -> string), so that the table has the types of the whole input.
    Each round widens at least one column, so this ends. The filter values
    are checked on the types of the whole input (an int on a column now
    string would compare as text; a str on one that stayed int64 as the
    number it spells): those of other columns after each refine, those of
    columns still inferred once a read went through (the dataset was opened
    with settled=False)."""
    while True:
        try:
            result = read_once()
        except Error as e:
            if ds.refine():
                error = _filter_type_error(ds, filter_values, False)
                if error is not None:
                    raise error from None
                continue
            if isinstance(e, InvalidArgumentError):
                # (the library's error for a filter value that the whole
                # input left its inferred column's type refusing: told as
                # the open tells a value of another Python type)
                error = _filter_type_error(ds, filter_values, whole=True)
                if error is not None:
                    raise error from None
            raise
        error = _filter_type_error(ds, filter_values, whole=True)
        if error is not None:
            raise error
        return result


# Bytes in flight for a gathered read placed by split row counts when
# `memory` is not given: each batch is copied and freed as soon as it
# arrives, whatever split it is from, so half the scan's default (256 MiB)
# keeps two workers busy and the peak lower. (In plan order, batches of later
# splits wait for the head's: those reads keep the default.)
_GATHER_MEMORY = 128 << 20


def _read(ds, ordered, limit, memory, scan_options, gather_ok):
    from . import _gather as gather
    scan_options = dict(scan_options or {})
    raw_schema = ds.schema()
    if not gather_ok or gather.gatherable(raw_schema) is None:
        with Scanner(ds, **scan_options) as s:
            batches = list(s)
            if not ordered:
                batches.sort(key=lambda b: b.tag)
            return Table._made(s.schema, batches)
    planned = gather.placement_plan(ds, scan_options, limit)
    columns = gather.placed_columns(raw_schema, planned) if planned is not None else None
    if columns is None:
        planned = None
    scan_options["ordered"] = planned is None
    if not memory and planned is not None:
        scan_options.setdefault("memory", _GATHER_MEMORY)
    if planned is not None:
        # Readers that can (Parquet) decode straight into the columns; the
        # gather then finds those rows in place and does not copy them.
        scan_options["placement"] = columns
        scan_options["split_rows"] = [planned[split] for split in sorted(planned)]
    with Scanner(ds, **scan_options) as s:
        if planned is not None:
            raw, _ = gather.gather_placed(raw_schema, s._scanner, planned, columns)
            del columns
        else:
            known = [r for r in ds.split_rows() if r >= 0]
            hint = sum(known) if len(known) == ds.num_splits else 0
            if limit is not None:
                hint = min(hint, int(limit))
            # A lone batch is taken as it is: without a limit it is a whole
            # split's rows, or a filter's (whose windows keep half or more).
            raw, _ = gather.gather_in_order(raw_schema, s._scanner, hint, limit is None)
        return Table._made(s.schema, [Batch(raw, s.schema)] if raw is not None else [])


def read_pandas(src, *, format=None, columns=None, threads=None, ordered=True, limit=None,
                batch_rows=None, memory=None, hive_partitioning=True, union_by_name=False,
                filters=None, _scan=None, _refine=True, _dataset=None, **format_options):
    """``read(...).to_pandas()`` in bounded memory: the scan's batches are
    copied into the DataFrame's columns as they arrive and freed at once, so
    the peak is about the DataFrame's size plus the batches in flight
    (``memory``), not twice the data. Arguments as for sluice.read; the frame
    is in plan order whatever ``ordered`` says (False lets fixed-width tables
    decode their splits in any order, each into its place). Dtypes and
    index as Table.to_pandas gives them (a file pandas wrote gets back its
    index and the extension dtypes its "pandas" metadata records).
    """
    from ._gather import gatherable
    from ._pandas import batches_to_pandas
    if limit is not None:
        ordered = True
    _scan = dict(_scan or {})
    planned = _scan.pop("planned_splits", None)  # sluice.dask: the plan its graph was built on
    filter_values = []
    if _dataset is not None:  # sluice.dask: opened once for the tasks of a graph
        ds = _dataset
    else:
        ds = _open(src, format, columns, threads, ordered, limit, batch_rows, memory,
                   format_options, hive_partitioning, union_by_name, filters, filter_values,
                   settled=not _refine)
        try:
            with_index = _with_index_columns(ds, src, columns)
        except BaseException:
            ds.close()
            raise
        if with_index is not None:
            ds.close()
            filter_values = []
            ds = _open(src, format, with_index, threads, ordered, limit, batch_rows, memory,
                       format_options, hive_partitioning, union_by_name, filters,
                       filter_values, settled=not _refine)
    if planned is not None and ds.num_splits != planned:
        now = ds.num_splits
        if _dataset is None:
            ds.close()
        raise SourceError(0, "%s: %d splits now, %d when the dask graph was built: the source "
                          "changed (objects added, removed or rewritten)" % (src, now, planned))

    def read_once():
        if gatherable(ds.schema()) is not None:
            # Fixed-width columns: gathered in place, then wrapped without a copy.
            return _read(ds, ordered, limit, memory, _scan, True).to_pandas(self_destruct=True)
        # Batches go into the frame in the order they come: plan order.
        with Scanner(ds, **dict(_scan or {}, ordered=1)) as s:
            return batches_to_pandas(s.schema, s)
    # A dask partition keeps the types the graph was built with.
    return _refining(ds, read_once, filter_values) if _refine else read_once()


def schema(src, *, format=None, columns=None, hive_partitioning=True, union_by_name=False,
           filters=None, **format_options):
    """The schema of `src` (a sluice.Schema), without reading its data.
    Arguments as for sluice.read."""
    ds = _open(src, format, columns, None, True, None, None, None, format_options,
               hive_partitioning, union_by_name, filters)
    try:
        return Schema(ds.schema())
    finally:
        ds.close()


def stats(src, *, format=None, columns=None, threads=None, limit=None, hive_partitioning=True,
          union_by_name=False, filters=None, **format_options):
    """Per-column statistics ({name, type, count, null_count, min, max,
    source, min_exact, max_exact} dicts), computed in parallel over all
    splits, as ``sluice stats --json`` gives them: ``type`` as the schema
    spells it ("int64", "dictionary<values=string, indices=int8,
    ordered=0>"); ``source`` "metadata" when the figures came from stored
    statistics (a Parquet footer) without decoding, else "computed"; min and
    max are the actual extremes when their ``*_exact`` is True, else bounds:
    a string or binary extreme longer than 64 KiB gives its first 64 KiB as
    min and those bytes incremented as max (strings cut at a whole
    character), as Parquet truncates statistics; ``None`` for both when no
    such max exists (64 KiB of 0xFF bytes). ``limit``: the first rows only
    (always computed). Other arguments as for sluice.read."""
    filter_values = []
    ds = _open(src, format, columns, threads, True, limit, None, None, format_options,
               hive_partitioning, union_by_name, filters, filter_values, settled=False)
    try:
        try:
            out = ds.stats()
        except InvalidArgumentError:
            # (a value the whole input left its inferred column refusing)
            _check_filter_types(ds, filter_values, whole=True)
            raise
        fields = Schema(ds.schema()).fields
        # The library read a CSV again when a column widened (and read the
        # whole input): figures of a filter whose value does not fit its
        # column's type are dropped.
        _check_filter_types(ds, filter_values, whole=True)
    finally:
        ds.close()
    for s, f in zip(out, fields):  # one per column, in schema order
        s["type"] = str(f.type)
    return out


def read_ipc(src, *, restore_order=True, columns=None, threads=None):
    """Read an Arrow IPC stream (a path, ``"-"`` or a file object with a
    descriptor such as a subprocess's stdout), e.g. the output of
    ``sluice cat ... -t arrows --unordered``, whose batches carry their plan
    position in their custom metadata (``sluice:split``, ``sluice:batch``).
    With restore_order, batches are put back into plan order; batches without
    the tags follow the tagged ones, in their order in the stream. A list of
    streams is each stream put back in order, one after the other (their
    tags count from 0 each). A local Arrow IPC file (``-t arrow``, magic
    ARROW1) is read as one, as polars' read_ipc takes either."""
    if restore_order and isinstance(src, (list, tuple)):
        parts = [read_ipc(one, restore_order=True, columns=columns, threads=threads)
                 for one in src]
        if not parts:
            return read(src, format="arrows", columns=columns, threads=threads)
        first = parts[0].schema
        for one, part in zip(src, parts):
            if part.schema.names != first.names or part.schema.types != first.types:
                raise InvalidArgumentError(
                    f"read_ipc: {one!s} has the columns {part.schema}, {src[0]!s} has {first}: "
                    "streams put back in order one after the other need one schema")
        return Table(parts[0].schema, [b for part in parts for b in part._batches])
    t = read(src, format=_ipc_kind(src), columns=columns, threads=threads, _gather=False)
    if not restore_order:
        return t
    keyed = []
    for pos, b in enumerate(t._batches):
        meta = b.metadata
        try:
            key = (0, int(meta["sluice:split"]), int(meta["sluice:batch"]), pos)
        except (KeyError, ValueError, TypeError):
            key = (1, 0, 0, pos)
        keyed.append((key, b))
    keyed.sort(key=lambda kb: kb[0])
    return Table(t.schema, [b for _, b in keyed])


def _ipc_kind(src):
    """"arrow" for a local file that starts with the IPC file magic, else
    "arrows" (a stream: pipes, file objects, remote objects)."""
    if isinstance(src, (str, _os.PathLike)) and src != "-":
        try:
            with open(_expand(_os.fspath(src)), "rb") as f:
                if f.read(6) == b"ARROW1":
                    return "arrow"
        except OSError:
            pass  # not a local file: read() says what is wrong
    return "arrows"


def _check_names_carry(data, who):
    """The Arrow C interfaces carry names as NUL-terminated strings: a
    column name holding a NUL would arrive cut at it (two columns 'id\\0a'
    and 'id\\0b' written as 'id' and 'id', where pyarrow writes them
    whole). Refused where the producer shows its names (pyarrow, polars,
    pandas), top-level columns and their nested fields."""
    schema = getattr(data, "schema", None)
    names = getattr(schema, "names", None)  # pyarrow (polars: a method)
    if callable(names):
        try:
            names = names()
        except Exception:
            names = None
    if not isinstance(names, (list, tuple)):
        names = None
    if names is None and hasattr(data, "columns") and not callable(data.columns):
        names = list(data.columns)  # polars, pandas
    pending = list(names or [])
    try:
        import pyarrow
        if isinstance(schema, pyarrow.Schema):
            def fields(t):
                for i in range(getattr(t, "num_fields", 0)):
                    f = t.field(i)
                    yield f.name
                    yield from fields(f.type)
            pending += [n for f in schema for n in fields(f.type)]
    except ImportError:
        pass
    for name in pending:
        if isinstance(name, str) and "\0" in name:
            raise InvalidArgumentError(
                _errno.EINVAL, "%s: column or field name %r holds a NUL character, which the "
                "Arrow C interfaces cannot carry (the name would be cut at it)" % (who, name))


def _stream_capsule(data, index=None, who="sluice.write"):
    if not (hasattr(data, "__arrow_c_stream__") or hasattr(data, "__arrow_c_array__")
            or _is_pandas_frame(data)):
        # (before asking for its names: a polars LazyFrame would resolve its
        # schema, with a PerformanceWarning, only to be refused)
        raise TypeError("sluice.write takes an object with __arrow_c_stream__ (pyarrow, "
                        "polars, DuckDB, sluice tables) or a pandas DataFrame, not %s"
                        % type(data).__name__)
    _check_names_carry(data, who)
    # pandas DataFrames have __arrow_c_stream__ too, but only through pyarrow.
    if hasattr(data, "__arrow_c_stream__") and not _is_pandas_frame(data):
        return data.__arrow_c_stream__()
    if _is_pandas_frame(data):
        try:
            import pyarrow
        except ImportError:
            pyarrow = None
        if pyarrow is not None:
            try:
                return pyarrow.Table.from_pandas(data, preserve_index=index).__arrow_c_stream__()
            except (pyarrow.ArrowException, OverflowError, TypeError, ValueError) as e:
                # A sluice.Error, as the README promises, that names the
                # column (pyarrow names it only sometimes) and row.
                from ._pandas import pyarrow_conversion_error
                raise pyarrow_conversion_error(pyarrow, data, index, e) from e
        from ._pandas import dataframe_to_batch
        try:
            raw = dataframe_to_batch(data, index, _sluice.make_batch)
        except Error:
            raise
        except TypeError as e:  # (a dtype it cannot convert; as pyarrow's, a TypeError)
            raise UnsupportedError(_errno.ENOTSUP, _write_message(e)) from e
        except (OverflowError, ValueError) as e:
            raise InvalidArgumentError(_errno.EINVAL, _write_message(e)) from e
        return Batch(raw).__arrow_c_stream__()
    return Table._from_arrow(data, who).__arrow_c_stream__()  # (__arrow_c_array__)


def _write_message(e):
    text = str(e)
    return text if text.startswith("sluice.write") else "sluice.write: " + text


def _is_pandas_frame(data):
    """Whether `data` is a pandas DataFrame, a subclass too (pandas is not
    imported for this: without it, nothing is one)."""
    import sys
    pandas = sys.modules.get("pandas")
    frame = getattr(pandas, "DataFrame", None)
    return isinstance(frame, type) and isinstance(data, frame)


def write(data, dst, *, format=None, compression="default", index=None, fsync=True,
          partition_by=None, max_partitions=None, existing_data_behavior="error",
          max_rows_per_file=None, **options):
    """Write `data` to `dst` (a path, ``~`` the home directory as in pyarrow,
    or ``"-"``) atomically, or into a
    writable file object (``io.BytesIO``, an open file, any object with
    ``write()``; ``format=`` unless an open file's name tells it), or into a
    pipe's file object (a subprocess's stdin, ``sys.stdout`` on a pipe or a
    terminal), or into an
    existing Cassandra table (``"cql://[user[:password]@]host[:port]/ks.table"``:
    rows INSERTed by column name, not atomically; options ``consistency``,
    ``batch_rows``, ``in_flight``, ``nulls="unset"|"null"``).

    data: anything with ``__arrow_c_stream__`` (pyarrow Table/RecordBatchReader,
        polars DataFrame, DuckDB relation, sluice Table) or a pandas DataFrame (or subclass)
        (through pyarrow if installed, else sluice's own conversion of
        numeric, bool, datetime, string, categorical and nullable columns,
        laid out and described as pyarrow's Table.from_pandas does).
    format: output format (default from the extension of dst).
    compression: body compression where the format has it ("zstd", "lz4", ...);
        CSV and JSON Lines compress the whole file ("gzip", "zstd", "bz2",
        "xz", as pandas' to_csv(compression=...)), whatever the name's
        suffix.
        "default" (the default): the format's own (Parquet snappy, as
        pyarrow; the others none; a CSV or JSON Lines name's suffix,
        x.csv.gz, compresses it whole); "infer", pandas' to_csv default,
        is the same; None or "none": uncompressed, as pyarrow's
        write_table(compression=None).
    index: for a pandas DataFrame, as DataFrame.to_parquet's: None (default)
        keeps an index other than a RangeIndex as columns and a RangeIndex
        in the "pandas" metadata (with the column labels and dtypes, so
        that pandas, pyarrow and sluice restore them); True always keeps it
        as columns; False drops it. With or without pyarrow (the metadata's
        creator then says sluice).
    fsync: a local file is synced to disk before it is renamed into place
        (default), so that a crash leaves the old file or the whole new one;
        False skips that for scratch outputs (faster, not crash-safe).
    partition_by: column names (or one name): `dst` becomes a directory (or
        s3:// prefix) of Hive partitions, ``dst/year=2024/city=Paris/part-0.parquet``,
        as pyarrow's ``write_dataset(partitioning_flavor="hive")``, DuckDB's
        ``PARTITION_BY`` and polars' ``partition_by`` lay them out; the files
        leave these columns out and readers of Hive partitions give them back.
        Values must be integers, strings, dates or booleans; they are
        percent-escaped, a null is ``__HIVE_DEFAULT_PARTITION__``. No file
        appears unless all are written. The format comes from format= (or
        dst's extension).
    max_partitions: more distinct partitions than this raise
        InvalidArgumentError (default 1024, as pyarrow's).
    existing_data_behavior: with partition_by or max_rows_per_file, what
        may be in `dst` already, as pyarrow's write_dataset and DuckDB's COPY
        take it:
        "error" (default; a directory must be new or empty, an s3:// prefix
        hold no object, else SourceError); "overwrite_or_ignore" (the new
        files, part-0, part-1, ... of each partition written, replace files
        of those names; the rest stays: writing a table again gives the
        same files); "delete_matching" (each partition written replaces
        what its directory held, other partitions stay; without
        partition_by, what `dst` held, if any row is written); "append" (what is
        there stays, the new files are named past their directory's
        part-<n>, as DuckDB's APPEND: writing a table again adds its rows
        again). Locally a failure puts everything back; see the README for
        S3.
    max_rows_per_file: a file holds at most this many rows; the rows after
        go on in the next file (part-1, part-2, ...), as pyarrow's
        write_dataset(max_rows_per_file=). With partition_by, per partition;
        without it `dst` becomes a directory (or s3:// prefix) of
        ``part-<n>.<ext>`` files, as write_dataset without partitioning (the
        format from format=). Default: no limit (one file).
    **options: writer options, e.g. for CSV ``delimiter=";", header=False``
        (one given as None keeps its default, as pyarrow's
        csv.WriteOptions(quoting_style=None) does: no quoting is
        ``quote="none"``, not quote=None);
        and ``ca_bundle=`` (a PEM file of trusted CAs) and ``insecure=True``
        (no certificate checks) for s3:// over https and cql:// with
        ``tls=True``, as the CLI's --ca-bundle and --insecure (and
        ``tls_cert=``, ``tls_key=`` for cql:// as for sluice.read; for a
        cql:// table that may not exist yet, ``create=True,
        partition_key=["a"], clustering_key=["b"]``; ``compression="lz4"``
        sends cql:// batches as LZ4 frames); ``timeout=``
        as for sluice.read; and
        ``storage_options={...}`` for s3:// as for sluice.read (with
        ``part_size``, the multipart part size in bytes: an int or text
        with the CLI's k, m, g suffixes, ``"16M"``; at most ``"5g"``, S3's
        limit, else InvalidArgumentError before the write).

    Ctrl-C stops the write and undoes it (nothing new at dst, an old file
    kept) before KeyboardInterrupt is raised; one that comes while the
    finished output is being committed is raised after it. (A producer that
    blocks, a pipe say, is stopped by the producer's own Ctrl-C handling.)
    A batch that does not match the stream's schema, or holds a string
    that is not UTF-8, raises InvalidArgumentError (naming the column and
    row).

    A file object is written as pyarrow writes one: the bytes go at its
    current position through its ``write()`` (after what Python buffers for
    it; in append mode at the end), earlier contents stay and its position
    ends past them, so a later ``f.write`` follows; a text file takes them
    through its binary ``buffer``. The output is made whole in a scratch
    file first, so an error making it (a producer's, a value's) writes
    nothing into the object; an error while it is copied in (the disk full)
    can leave part of it there, as pyarrow leaves a partial write: the
    caller owns the file, sluice cannot put it back. A pipe's file object
    (a FIFO or a terminal) is flushed, then written through its descriptor
    as the output is made: an error leaves what went out so far.
    """
    kwargs = _write_kwargs(dst, format, compression, fsync, partition_by, max_partitions,
                           existing_data_behavior, max_rows_per_file, options)
    capsule = _stream_capsule(data, index, "sluice.write")
    try:
        try:
            _write_capsule(capsule, dst, kwargs)
        except InvalidArgumentError as e:
            # An Avro enum column met a value its symbols (the first batch's
            # dictionary) lack, as a Parquet categorical whose row groups
            # each have their own dictionary does: written again as strings
            # when the data can be exported again (a table; a reader cannot).
            if e.code != _errno.EDOM or "enums" in options or not _exportable_again(data):
                raise
            capsule = _stream_capsule(data, index, "sluice.write")
            import warnings
            warnings.warn("sluice.write: %s; written again with the column as strings "
                          "(enums=False)" % e.message, RuntimeWarning, stacklevel=2)
            kwargs = _write_kwargs(dst, format, compression, fsync, partition_by,
                                   max_partitions, existing_data_behavior, max_rows_per_file,
                                   dict(options, enums=False))
            _write_capsule(capsule, dst, kwargs)
    except TypeError as e:
        error = _table.not_a_table_error(e, data, "sluice.write")
        if error is None:
            raise
        raise error from None


def _exportable_again(data):
    """Whether `data` gives its whole contents each time it is exported (a
    table, a DataFrame), unlike a reader or stream, whose second export
    holds what the first left (nothing, or the rest)."""
    if isinstance(data, (Table, Batch)) or _is_pandas_frame(data):
        return True
    kind = type(data)
    return (kind.__module__, kind.__name__) in (
        ("pyarrow.lib", "Table"), ("pyarrow.lib", "RecordBatch"),
        ("polars.dataframe.frame", "DataFrame"))


def _write_capsule(capsule, dst, kwargs):
    if _is_file_object(dst):
        _write_into(capsule, dst, kwargs)
    else:
        _flush_stream(dst)
        try:
            _sluice.write(capsule, _destination(dst), **kwargs)
        except SourceError as e:
            _name_file(e, dst)
            raise


def _name_file(e, path):
    """Sets an OSError's .filename, as open() does, to `path` when the C
    message is about it ("PATH: cannot ...")."""
    if e.filename is None and isinstance(path, (str, _os.PathLike)):
        name = _expand(_os.fspath(path))
        if e.message.startswith(name + ":"):
            e.filename = name


def _write_kwargs(dst, format, compression, fsync, partition_by, max_partitions,
                  existing_data_behavior, max_rows_per_file, options):
    """sluice.write's keywords as _sluice.write takes them (and _Writer)."""
    options = dict(options)
    ca_bundle, insecure = _tls_settings(options)
    timeout = _timeout(options)
    s3 = _storage_options(options.pop("storage_options", None))
    name = getattr(dst, "name", None)
    if hasattr(dst, "fileno") and isinstance(name, str):
        # An open file (or a pipe's, written through /dev/fd/N): its own
        # name tells the format ("out.parquet" -> parquet), as a path's would.
        suffix = _os.path.splitext(name)[1].lstrip(".").lower()
        named = {"feather": "arrow", "pq": "parquet", "tsv": "csv"}.get(suffix, suffix)
        if format is None and named in writer_formats():
            format = named
        if suffix == "tsv" and format == "csv" and \
                not {"delimiter", "sep", "delim"} & options.keys():
            options["delimiter"] = "\t"  # as a path named .tsv is written (format='csv' too)
    if compression is None:  # as pyarrow and pandas take it: uncompressed
        compression = "none"
    elif compression in ("default", "infer"):  # ("infer": pandas' to_csv default)
        compression = None  # the format's default; a whole-file one from the name
    kwargs = dict(format=format, compression=compression, format_options=_options_string(options),
                  ca_bundle=ca_bundle, insecure=insecure, fsync=bool(fsync), s3=s3,
                  timeout=timeout)
    behaviors = {"error": 0, "overwrite_or_ignore": 1, "delete_matching": 2, "append": 3}
    behavior = behaviors.get(existing_data_behavior) if isinstance(existing_data_behavior,
                                                                   str) else None
    if behavior is None:
        raise InvalidArgumentError(_errno.EINVAL, "existing_data_behavior must be 'error', "
                                   "'overwrite_or_ignore', 'delete_matching' or 'append', not "
                                   f"{existing_data_behavior!r}")
    dataset = partition_by is not None or max_rows_per_file is not None
    if behavior != 0 and not dataset:
        raise InvalidArgumentError(_errno.EINVAL, "existing_data_behavior is for dataset "
                                   "output (partition_by or max_rows_per_file); a single file "
                                   "is always replaced whole")
    if max_partitions is not None and partition_by is None:
        raise InvalidArgumentError(_errno.EINVAL, "max_partitions limits a partitioned write: "
                                   "it needs partition_by")
    if max_rows_per_file is not None:
        if (isinstance(max_rows_per_file, bool) or not isinstance(max_rows_per_file, int)
                or not 0 < max_rows_per_file < 2**63):
            raise InvalidArgumentError(_errno.EINVAL, "max_rows_per_file must be a positive "
                                       f"int, not {max_rows_per_file!r}")
        kwargs.update(max_rows_per_file=max_rows_per_file)
    if partition_by is not None:
        keys = [partition_by] if isinstance(partition_by, str) else list(partition_by)
        if not keys or not all(isinstance(k, str) for k in keys):
            raise InvalidArgumentError(_errno.EINVAL, "partition_by wants column names (str)")
        kwargs.update(partition_by=keys, max_partitions=int(max_partitions or 0))
    if dataset:
        kwargs.update(existing_data_behavior=behavior)
        if _is_file_object(dst):
            raise InvalidArgumentError(_errno.EINVAL, "a dataset (partition_by, "
                                       "max_rows_per_file) goes to a directory or an s3:// "
                                       "prefix, not a file object")
    return kwargs


class Writer:
    """Writes a table handed over in pieces, as pyarrow's ParquetWriter and
    RecordBatchWriter do: ``w = sluice.Writer("out.parquet")``, then
    ``w.write(batch)`` as many times as needed, then ``w.close()``; or as a
    context manager (``with sluice.Writer(...) as w:``), which closes at the
    end and aborts on an exception.

    dst and the keywords are sluice.write's (format, compression, fsync,
    partition_by, max_partitions, existing_data_behavior, max_rows_per_file, writer options,
    storage_options, ...; not a file object, but a pipe's, as sluice.write
    takes it). schema: anything with
    ``__arrow_c_schema__`` (a pyarrow Schema); without it the first write's
    schema is taken, and every later write must have the same.

    write(data) takes what sluice.write takes: a pyarrow RecordBatch or
    Table, a polars or pandas DataFrame, a sluice Table or Batch, a DuckDB
    result. The batches are written on a thread of the writer's own while
    the caller makes the next ones. Nothing appears at `dst` before close()
    returns, as with sluice.write: abort() (or an error, or a Writer dropped
    without close) leaves nothing, and an existing file as it was. A write
    that fails raises its error from that write() or a later one, or from
    close(); a write() that fails after some of its rows were taken aborts
    the writer (later calls raise ValueError), while one refused before
    (columns that differ from the writer's: a pyarrow string column where
    the writer has large_string, as polars and pandas give; cast first)
    leaves it as it was. The names of a list's element and of a map's
    entries, key and value are not compared (list<item> after
    list<element> is taken, as pyarrow's ParquetWriter takes it): the
    output has the writer's. Calls from another thread while a write() runs
    raise RuntimeError. Ctrl-C during a write() or close() takes effect when
    it returns.
    """

    def __init__(self, dst, schema=None, *, format=None, compression="default", index=None,
                 fsync=True, partition_by=None, max_partitions=None,
                 existing_data_behavior="error", max_rows_per_file=None, **options):
        if _is_file_object(dst):
            raise InvalidArgumentError(_errno.EINVAL, "sluice.Writer writes to a path, a "
                                       "directory or an s3:// prefix, not a file object")
        kwargs = _write_kwargs(dst, format, compression, fsync, partition_by, max_partitions,
                               existing_data_behavior, max_rows_per_file, options)
        self._index = index
        self._dst = dst
        if schema is not None and not hasattr(schema, "__arrow_c_schema__"):
            raise TypeError("schema must be an Arrow schema (any object with "
                            "__arrow_c_schema__, e.g. pyarrow.Schema), not %s"
                            % type(schema).__name__)
        capsule = schema.__arrow_c_schema__() if schema is not None else None
        _flush_stream(dst)
        try:
            self._writer = _sluice._Writer(capsule, _destination(dst), **kwargs)
        except SourceError as e:
            _name_file(e, dst)
            raise

    def write(self, data):
        """Hands every row of `data` to the writer; returns once they are consumed (the
        memory of `data` may then be refilled for the next write, as with pyarrow's writers)."""
        try:
            self._writer.write(_stream_capsule(data, self._index, "Writer.write"))
        except SourceError as e:
            _name_file(e, self._dst)
            raise
        except TypeError as e:
            error = _table.not_a_table_error(e, data, "Writer.write")
            if error is None:
                raise
            raise error from None

    def close(self):
        """Writes the rest and commits: the output appears whole. Closing
        again after that does nothing (as a file's close); after abort() or
        a failed write or close it raises ValueError (nothing was written)."""
        try:
            self._writer.close()
        except SourceError as e:
            _name_file(e, self._dst)
            raise

    def abort(self):
        """Stops the write: nothing appears at dst."""
        self._writer.abort()

    @property
    def closed(self):
        return self._writer.closed

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        if exc_type is not None:
            self.abort()
        elif not self.closed:
            self.close()
        return False

    def __repr__(self):
        return "sluice.Writer(%r%s)" % (self._dst, ", closed" if self.closed else "")


def _stream_descriptor(dst):
    """The descriptor of a file object open on a pipe or a character device
    (a subprocess's stdin, sys.stdout on a terminal or a pipe), which the C
    library writes as it makes the output (through /dev/fd/N, as the CLI
    writes a shell redirect); else None. A regular file is not one: reopened
    there it would be truncated, its position and append mode lost."""
    import stat
    try:
        fd = dst.fileno()
        mode = _os.fstat(fd).st_mode
    except (AttributeError, OSError, ValueError, TypeError):
        return None
    if (stat.S_ISFIFO(mode) or stat.S_ISCHR(mode)) and _os.path.isdir("/dev/fd"):
        return fd
    return None


def _flush_stream(dst):
    """Before the C library writes into a pipe's descriptor, what Python
    still buffers for it goes first, so the bytes keep their order."""
    if _stream_descriptor(dst) is not None and hasattr(dst, "flush"):
        dst.flush()


def _is_file_object(dst):
    """A writable Python object written through its write() (io.BytesIO, an
    open regular file, a wrapper of a socket or a response): not a location
    (a path, or a pipe's descriptor)."""
    if isinstance(dst, (str, bytes)) or hasattr(dst, "__fspath__"):
        return False
    if not hasattr(dst, "write"):
        return False
    return _stream_descriptor(dst) is None


def _shown(dst):
    """A file object as an error names it: its name, or its type."""
    name = getattr(dst, "name", None)
    return name if isinstance(name, str) else "<%s>" % type(dst).__name__


def _check_written(dst, n, size):
    """What dst.write() of `size` bytes returned, checked as io.BufferedWriter
    checks a raw stream's: a number of bytes it took, 0 < n <= size (0, which
    io.BufferedWriter would retry forever, is an error too)."""
    if n is None:
        raise BlockingIOError(_errno.EAGAIN, "%s: write() returned None: the raw stream is "
                              "non-blocking and took no bytes (give a blocking one)"
                              % _shown(dst))
    try:
        k = _operator.index(n)
    except TypeError:
        k = None
    if k is None or not 0 < k <= size:
        raise SourceError(_errno.EIO, "%s: write() returned %s (%s) for %d bytes: it should "
                          "return how many it took, between 1 and %d"
                          % (_shown(dst), _short_repr(n), type(n).__name__, size, size))


def _write_into(capsule, dst, kwargs):
    """sluice.write into a file object: the output is made whole in a
    scratch file (so an error making it leaves `dst` untouched), then
    written into `dst` through its write(), 1 MiB at a time: at its current
    position (an open file's append mode, and the bytes Python buffers for
    it, respected as by any write), which ends past them. A text file
    (open(..., "w")) takes them through its binary buffer, after what its
    text layer holds."""
    if kwargs["format"] is None:
        raise InvalidArgumentError(_errno.EINVAL, "writing into a file object needs format= (it "
                                   "has no name to tell the format by)")
    if isinstance(dst, _io.TextIOBase):
        if not isinstance(getattr(dst, "buffer", None), _io.BufferedIOBase):
            raise TypeError("sluice.write writes bytes: a text file object without a binary "
                            "buffer cannot take them (open the file in binary mode, 'wb')")
        dst.flush()
        dst = dst.buffer
    import tempfile
    fd, path = tempfile.mkstemp(prefix="sluice-")
    try:
        _os.close(fd)
        try:
            _sluice.write(capsule, _os.fsencode(path), **dict(kwargs, fsync=False))
        except Error as e:  # the message names the file object, not the scratch file
            raise type(e)(e.code, e.message.replace(path, _shown(dst))) from None
        except Exception as e:  # the producer's own, the sluice error its cause: so there
            cause = e.__cause__
            if isinstance(cause, Error):
                e.__cause__ = type(cause)(cause.code, cause.message.replace(path, _shown(dst)))
            raise
        # A raw stream's write() returns None when it took nothing (it is
        # non-blocking and would block): an error, as io.BufferedWriter makes
        # it. Another object's None (a plain writer that returns nothing)
        # took it all, as pyarrow takes it.
        raw = isinstance(dst, _io.RawIOBase)
        with open(path, "rb") as f:
            while True:
                chunk = f.read(1 << 20)
                if not chunk:
                    break
                view = memoryview(chunk)
                while view:  # a raw writer may take part of it
                    n = dst.write(view)
                    if n is None and not raw:
                        break
                    _check_written(dst, n, len(view))
                    view = view[n:]
    finally:
        try:
            _os.unlink(path)
        except OSError:
            pass


def reader_formats():
    """Names of the formats sluice reads."""
    return _sluice.formats(False)


def writer_formats():
    """Names of the formats sluice writes."""
    return _sluice.formats(True)


def release_unused():
    """Frees the memory sluice keeps from tables (and batches) that were
    dropped, and returns how many bytes that was.

    Buffers of dropped tables are kept, up to an eighth of the memory the
    process may use (the machine's, or its container's limit) and at most
    2 GiB (or ``SLUICE_BUFFER_CACHE_BYTES``, read at import; below 1 MiB,
    0 included, nothing is kept past a read), so that the next read reuses
    pages the kernel has mapped already instead of faulting in and zeroing
    fresh ones, which is a third to half of the time of a load. Kept memory
    shows in the process's RSS until reused or released (pyarrow's
    ``default_memory_pool().release_unused()`` does the same for its pool).
    """
    return _sluice.release_unused()
