"""sluice.dask: a table as a dask.dataframe whose partitions are groups of
splits, each read by sluice inside the worker that computes it.

    import sluice.dask
    ddf = sluice.dask.read("big.csv", splits_per_partition=4)
    ddf.groupby("city").temp_c.mean().compute()

Only the schema and the number of splits are read here; the workers open the
source themselves, so it must be reachable from them (a shared path or a URL).
"""
import io
import math
import os
import threading
import time
import uuid

from . import _bytesio_rest, _is_data, _open, _with_index_columns, read_pandas
from ._table import Schema, Table
from ._errors import SourceError


class _OpenDatasets:
    """The datasets a worker process has opened for a graph's tasks, so
    that its tasks open and plan the source once, not once each: opening a
    directory of 1,200 Parquet files reads 1,200 footers, and a graph of 600
    partitions did it 600 times (42 s against sluice.read's 0.1). Keyed by
    the graph (a token made when it was built: another read of the same
    source plans it afresh); a dataset not used for IDLE_S seconds, or past
    the last MAX_OPEN, is closed at the next task. So the tasks of a graph
    computed again within IDLE_S read the objects as that first open found
    them, as dd.read_parquet's tasks read the files its graph listed; after
    that, a source that plans other splits is an error. Datasets are safe
    to scan from several threads at once."""

    IDLE_S = 30.0
    MAX_OPEN = 8

    def __init__(self):
        self._lock = threading.Lock()
        self._open = {}  # token -> _Kept

    class _Kept:
        __slots__ = ("lock", "dataset", "used")

        def __init__(self, now):
            self.lock = threading.Lock()  # held while the first task opens it
            self.dataset = None
            self.used = now

    def clear(self):
        """Closes every dataset kept (the next tasks open their source again)."""
        with self._lock:
            kept = list(self._open.values())
            self._open.clear()
        for k in kept:
            with k.lock:
                if k.dataset is not None:
                    k.dataset.close()

    def get(self, token, open_dataset):
        now = time.monotonic()
        with self._lock:
            kept = self._open.get(token)
            if kept is None:
                kept = self._open[token] = self._Kept(now)
            kept.used = now
            gone = [k for k in self._open if now - self._open[k].used > self.IDLE_S]
            while len(self._open) - len(gone) > self.MAX_OPEN:
                gone.append(min((k for k in self._open if k not in gone and k != token),
                                key=lambda k: self._open[k].used))
            gone = [self._open.pop(k) for k in gone]
        for k in gone:  # (tasks that still scan them keep their scanners)
            with k.lock:
                if k.dataset is not None:
                    k.dataset.close()
        with kept.lock:  # the graph's other tasks wait for the first one's open
            if kept.dataset is None:
                kept.dataset = open_dataset()
            return kept.dataset


def _close_open_datasets():
    """Closes the datasets this process keeps for graphs' tasks (for tests,
    and to let go of the sources at once: client.run(_close_open_datasets))."""
    _OPEN_DATASETS.clear()


_OPEN_DATASETS = _OpenDatasets()


class _ReadSplits:
    """The task of one partition: splits [first, first + count) as pandas.
    A plain class so that it pickles to worker processes."""

    def __init__(self, src, options, planned_splits, meta_dtypes, columns):
        self.src = src
        self.options = options
        self.planned_splits = planned_splits
        self.meta_dtypes = meta_dtypes
        self.columns = columns  # [(name, type)] the graph was built with
        self.token = uuid.uuid4().hex  # this graph's: its tasks share one open dataset

    def _open(self):
        o = dict(self.options)
        return _open(self.src, o.pop("format"), o.pop("columns"), o.pop("threads"), True, None,
                     o.pop("batch_rows"), o.pop("memory"), o,
                     o.pop("hive_partitioning"), o.pop("union_by_name"), o.pop("filters"),
                     settled=True)

    def __call__(self, split_range):
        first, count = split_range
        # A source that no longer plans the graph's splits (a file added to a
        # glob) is an error: its split numbers would name other rows.
        scan = {"first_split": first, "num_splits": count, "planned_splits": self.planned_splits}
        dataset = _OPEN_DATASETS.get(self.token, self._open)
        # A source rewritten with other columns (reordered, dropped, of
        # another type) would give frames that contradict the graph's meta.
        now = _columns_of(Schema(dataset.schema()))
        if now != self.columns:
            raise SourceError(0, "%s: columns %s now, %s when the dask graph was built: the "
                              "source changed" % (self.src, _shown(now), _shown(self.columns)))
        frame = read_pandas(self.src, _scan=scan, _refine=False, _dataset=dataset,
                            **self.options)
        return _numpy_where_meta_is(frame, self.meta_dtypes)


def _columns_of(schema):
    return [(f.name, str(f.type)) for f in schema.fields]


def _shown(columns):
    return "(%s)" % ", ".join("%s: %s" % c for c in columns)


def _numpy_where_meta_is(frame, meta_dtypes):
    """A partition's columns that came out nullable (Int64, Float64,
    boolean: it has nulls) where the graph's meta has the numpy dtype (the
    schema's, without nulls) are numpy again, as pyarrow's to_pandas and
    dd.read_parquet give them: floats with NaN, integers with nulls as
    float64, booleans with nulls as object. dask's describe, quantile and
    .values fail on a mix of the two kinds. Floats keep the meta's width
    (float32, float16), as dd.read_parquet gives them."""
    import numpy as np
    import pandas as pd
    for name, want in meta_dtypes.items():
        if name not in frame.columns or not isinstance(want, np.dtype):
            continue
        col = frame[name]
        if isinstance(col, pd.DataFrame):  # repeated column names: leave them
            continue
        if want.kind not in "iufb":
            continue
        if not isinstance(col.dtype, pd.api.extensions.ExtensionDtype):
            # float16 with nulls is float32 (pandas has no nullable float16)
            if want.kind == "f" and col.dtype.kind == "f" and col.dtype != want:
                frame[name] = col.to_numpy(dtype=want)
            continue
        if not col.hasnans:
            frame[name] = col.to_numpy(dtype=want)
        elif want.kind == "b":
            frame[name] = col.astype(object).where(col.notna(), None)
        else:  # floats keep their width (Float32 -> float32), integers become float64
            frame[name] = col.to_numpy(dtype=want if want.kind == "f" else np.float64,
                                       na_value=np.nan)
    return frame


def _absolute(src):
    """Local paths made absolute here: a worker's working directory is not
    the caller's. A file's contents (bytes, a buffer) go to the workers as
    bytes."""
    if isinstance(src, (list, tuple)):
        return [_absolute(s) for s in src]
    if _is_data(src):
        return bytes(_bytesio_rest(src) if isinstance(src, io.BytesIO) else memoryview(src))
    if hasattr(src, "__fspath__"):
        src = os.fspath(src)
    if isinstance(src, bytes) and b"://" not in src:
        return os.path.abspath(os.path.expanduser(src))
    if isinstance(src, str) and "://" not in src and src != "-":
        return os.path.abspath(os.path.expanduser(src))  # (~ as sluice.read takes it)
    if isinstance(src, str) and src.startswith("file://") and not src.startswith("file:///"):
        return "file://" + os.path.abspath(src[len("file://"):])
    return src


def _split_ranges(n, splits_per_partition, npartitions):
    """(first split, count) per partition: `splits_per_partition` each, or
    the splits spread evenly over `npartitions` (at most one per split)."""
    if n == 0:
        return [(0, 0)]
    if splits_per_partition is not None:
        size = int(splits_per_partition)
        return [(first, min(size, n - first)) for first in range(0, n, size)]
    parts = min(n, npartitions or os.cpu_count() or 1)
    bounds = [n * i // parts for i in range(parts + 1)]
    return [(bounds[i], bounds[i + 1] - bounds[i]) for i in range(parts)]


def read(src, *, format=None, columns=None, splits_per_partition=None, npartitions=None,
         threads=None, batch_rows=None, memory=None, hive_partitioning=True, union_by_name=False,
         filters=None, **format_options):
    """A dask.dataframe.DataFrame of `src`, one partition per group of splits.

    splits_per_partition: splits each partition reads (default: the splits
        spread over about one partition per core, or over `npartitions`).
    threads: decoding threads inside each task (default one per core).
    Other arguments as for sluice.read. Partitions are in plan order; each
    has its own RangeIndex (divisions are unknown). Numeric and boolean
    columns keep their numpy dtypes in every partition, as dd.read_parquet
    gives them (sluice.read_pandas makes a column with nulls nullable,
    Int64 / Float64 / boolean, which dask cannot mix with numpy ones in
    describe, quantile or .values): floats with NaN, integers with nulls as
    float64, booleans with nulls as object.
    """
    import dask.dataframe as dd

    for name in ("limit", "ordered"):  # whole-table options: no partition has them
        if name in format_options:
            raise TypeError(f"sluice.dask.read() takes no {name}= (partitions are read "
                            "independently, in plan order): use .head() or .partitions[]")
    for name, value in (("splits_per_partition", splits_per_partition),
                        ("npartitions", npartitions)):
        if value is not None and (isinstance(value, bool) or not isinstance(value, int)
                                  or value < 1):
            raise ValueError(f"sluice.dask.read(): {name} must be a positive integer, "
                             f"not {value!r}")
    if columns is not None and not isinstance(columns, (str, bytes, bytearray)):
        try:  # once: the graph and every partition open with these names
            columns = list(columns)
        except TypeError:
            pass  # _open says what columns= takes
    ds = _open(src, format, columns, None, True, None, None, None, format_options,
               hive_partitioning, union_by_name, filters)
    try:
        with_index = _with_index_columns(ds, src, columns)
        if with_index is not None:  # (the pandas index, as dd.read_parquet keeps it)
            ds.close()
            columns = with_index
            ds = _open(src, format, columns, None, True, None, None, None, format_options,
                       hive_partitioning, union_by_name, filters)
        schema = Schema(ds.schema())
        n = ds.num_splits
    finally:
        ds.close()
    # Categories are each partition's own (its dictionaries): unknown to the
    # graph, as dd.read_parquet marks them, not the empty set.
    from dask.dataframe.utils import clear_known_categories
    meta = clear_known_categories(Table(schema, []).to_pandas())
    options = dict(format_options)
    options.update(format=format, columns=columns, threads=threads, batch_rows=batch_rows,
                   memory=memory, hive_partitioning=hive_partitioning,
                   union_by_name=union_by_name, filters=filters)
    src = _absolute(src)
    ranges = _split_ranges(n, splits_per_partition, npartitions)
    # The dtypes are to_pandas's (strings already a string dtype); dask's
    # conversion of object columns to strings would decode binary as text.
    import dask
    with dask.config.set({"dataframe.convert-string": False}):
        meta_dtypes = {name: dtype for name, dtype in meta.dtypes.items()}
        return dd.from_map(_ReadSplits(src, options, n, meta_dtypes, _columns_of(schema)),
                           ranges, meta=meta,
                           enforce_metadata=False, label="sluice-read")
