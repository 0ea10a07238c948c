"""sluice.dask: a table as a dask.dataframe whose partitions are groups of
splits, each read by sluice inside the worker that computes it.

    import sluice.dask
    ddf = sluice.dask.read("big.csv", splits_per_partition=4)
    ddf.groupby("city").temp_c.mean().compute()

Only the schema and the number of splits are read here; the workers open the
source themselves, so it must be reachable from them (a shared path or a URL).
"""
import math
import os

from . import _open, read_pandas
from ._table import Schema, Table


class _ReadSplits:
    """The task of one partition: splits [first, first + count) as pandas.
    A plain class so that it pickles to worker processes."""

    def __init__(self, src, options, planned_splits):
        self.src = src
        self.options = options
        self.planned_splits = planned_splits

    def __call__(self, split_range):
        first, count = split_range
        # A source that no longer plans the graph's splits (a file added to a
        # glob) is an error: its split numbers would name other rows.
        scan = {"first_split": first, "num_splits": count, "planned_splits": self.planned_splits}
        return read_pandas(self.src, _scan=scan, _refine=False, **self.options)


def _absolute(src):
    """Local paths made absolute here: a worker's working directory is not
    the caller's."""
    if isinstance(src, (list, tuple)):
        return [_absolute(s) for s in src]
    if hasattr(src, "__fspath__"):
        src = os.fspath(src)
    if isinstance(src, bytes) and b"://" not in src:
        return os.path.abspath(src)
    if isinstance(src, str) and "://" not in src and src != "-":
        return os.path.abspath(src)
    if isinstance(src, str) and src.startswith("file://") and not src.startswith("file:///"):
        return "file://" + os.path.abspath(src[len("file://"):])
    return src


def _split_ranges(n, splits_per_partition, npartitions):
    if n == 0:
        return [(0, 0)]
    if splits_per_partition is None:
        parts = npartitions or min(n, os.cpu_count() or 1)
        splits_per_partition = math.ceil(n / max(1, parts))
    size = max(1, int(splits_per_partition))
    return [(first, min(size, n - first)) for first in range(0, n, size)]


def read(src, *, format=None, columns=None, splits_per_partition=None, npartitions=None,
         threads=None, batch_rows=None, memory=None, **format_options):
    """A dask.dataframe.DataFrame of `src`, one partition per group of splits.

    splits_per_partition: splits each partition reads (default: the splits
        spread over about one partition per core, or over `npartitions`).
    threads: decoding threads inside each task (default one per core).
    Other arguments as for sluice.read. Partitions are in plan order; each
    has its own RangeIndex (divisions are unknown). Columns whose dtype
    depends on nulls (int64 / Int64, ...) take the nullable dtype in the
    partitions that have nulls; computing concatenates them as pandas does.
    """
    import dask.dataframe as dd

    ds = _open(src, format, columns, None, True, None, None, None, format_options)
    try:
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
                   memory=memory)
    src = _absolute(src)
    ranges = _split_ranges(n, splits_per_partition, npartitions)
    # The dtypes are to_pandas's (strings already a string dtype); dask's
    # conversion of object columns to strings would decode binary as text.
    import dask
    with dask.config.set({"dataframe.convert-string": False}):
        return dd.from_map(_ReadSplits(src, options, n), ranges, meta=meta,
                           enforce_metadata=False, label="sluice-read")
