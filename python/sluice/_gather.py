"""A whole read assembled into one batch (one chunk per column) as the scan's
batches arrive, each copied into its place in the final columns and released
at once: the peak is the table plus what is in flight, and to_pandas then
wraps the columns without copying.

When every split's row count is known ahead (Parquet row groups, Avro block
counts), the scan runs unordered and each batch goes to its split's row
offset plus the rows of the split's earlier batches, so no split waits for
another. Otherwise the scan runs in plan order and batches go one after the
other (the columns grow in place when the count was not known).

Only tables whose columns are all flat fixed-width (numbers, bools,
temporals, decimals, fixed-size binary) are gathered (_sluice._Gather);
others keep their batches.
"""
import itertools
from . import _sluice


def gatherable(raw_schema):
    """A _Gather for the schema with no rows yet, or None if a column is not
    flat fixed-width."""
    try:
        return _sluice._Gather(raw_schema, 0)
    except TypeError:
        return None


def placement_plan(dataset, scan_options, limit):
    """{split: planned rows} for the splits the scan reads, when every count
    is known and the read has no limit; else None."""
    if limit is not None:
        return None
    rows = dataset.split_rows()
    first = int(scan_options.get("first_split", 0))
    count = scan_options.get("num_splits", -1)
    count = len(rows) - first if count is None or count < 0 else int(count)
    chosen = rows[first:first + count]
    if not chosen or any(r < 0 for r in chosen):
        return None
    return {first + i: r for i, r in enumerate(chosen)}


def gather_in_order(raw_schema, scanner, capacity, lone_ok=False):
    """Batches in plan order, one after the other. Returns (the _Batch, rows);
    the _Batch is None when the scan gave no batch. With `lone_ok`, a scan of
    a single batch gives that batch itself, not a copy (the caller knows it
    holds no more memory than its rows need)."""
    batches = iter(scanner)
    first = next(batches, None)
    if first is None:
        return None, 0
    second = next(batches, None)
    if second is None and lone_ok:
        return first, first.num_rows
    try:
        g = _sluice._Gather(raw_schema, max(0, capacity))
    except MemoryError:  # the hint (from the file) was too big: grow as rows come
        g = _sluice._Gather(raw_schema, 0)
    head = [first] if second is None else [first, second]
    del first, second
    at = 0
    for raw in itertools.chain(_drain(head), batches):
        g.add(raw, at)
        at += raw.num_rows
        del raw
    return g.finish(at), at


def _drain(items):
    """The items of a list, each dropped from it as it is handed out."""
    while items:
        yield items.pop(0)


def placed_columns(raw_schema, planned):
    """The _Gather for gather_placed (room for every planned row), or None
    when that much cannot be mapped (the counts come from the file)."""
    try:
        return _sluice._Gather(raw_schema, sum(planned.values()))
    except MemoryError:
        return None


def gather_placed(raw_schema, scanner, planned, g=None):
    """Batches in any order, each copied to where its (split, index) puts it
    given the planned rows per split. A split that delivers more or fewer
    rows than planned is put right at the end with one more copy (the
    planned counts are exact for the formats that give them, so this is a
    safety net). Returns (the _Batch or None, rows)."""
    order = sorted(planned)
    starts = {}
    total = 0
    for split in order:
        starts[split] = total
        total += planned[split]
    if g is None:
        g = _sluice._Gather(raw_schema, total)
    filled = dict.fromkeys(order, 0)      # rows of the split copied so far
    next_index = dict.fromkeys(order, 0)  # the split's next batch to copy
    early = {}                            # (split, index) -> batch ahead of its turn
    extra = {}                            # split -> batches past its planned rows
    seen = False

    def place(split, raw):
        n = raw.num_rows
        if split in extra or filled[split] + n > planned[split]:
            extra.setdefault(split, []).append(raw)
        else:
            g.add(raw, starts[split] + filled[split])
            filled[split] += n
        next_index[split] += 1

    for raw in scanner:
        seen = True
        split, index = raw.split, raw.index
        if split not in planned:
            raise RuntimeError("sluice: a batch of split %d, which the scan did not plan" % split)
        if index != next_index[split]:
            early[(split, index)] = raw
            continue
        place(split, raw)
        while (split, next_index[split]) in early:
            place(split, early.pop((split, next_index[split])))
        del raw
    if not seen:
        return None, 0
    for (split, _), raw in sorted(early.items(), key=lambda kv: kv[0]):
        extra.setdefault(split, []).append(raw)  # a gap in the indices: keep the order
    if not extra and all(filled[s] == planned[s] for s in order):
        return g.finish(total), total
    first = g.finish(total)
    rows = sum(filled.values()) + sum(b.num_rows for bs in extra.values() for b in bs)
    fixed = _sluice._Gather(raw_schema, rows)
    at = 0
    for split in order:
        fixed.add(first, at, starts[split], filled[split])
        at += filled[split]
        for raw in extra.get(split, ()):
            fixed.add(raw, at)
            at += raw.num_rows
    return fixed.finish(at), at
