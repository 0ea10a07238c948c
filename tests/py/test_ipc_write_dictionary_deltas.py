"""Arrow IPC output of dictionaries that grow from batch to batch.

A stream (.arrows) replaces a changed dictionary by default (polars reads no
deltas; pyarrow's own default, emit_dictionary_deltas=False, replaces too),
so a dictionary that grows by one value per batch is sent whole every time:
O(batches x values). `-W dictionary_deltas=true` sends only the new values
when the old dictionary is a prefix of the new one, as pyarrow's
emit_dictionary_deltas=True does and as a file (.arrow) always does. The
messages are checked with pyarrow's MessageReader (the DictionaryBatch's
isDelta flag), against the flags pyarrow's writer sets for the same batches.
"""

from __future__ import annotations

import polars as pl
import pyarrow as pa
import pyarrow.ipc as ipc
import pytest

from ipc_messages import dictionary_messages

D = pa.DictionaryArray.from_arrays
BATCHES = 120


def write_pyarrow(path, batches, deltas: bool, file: bool = False) -> None:
    options = ipc.IpcWriteOptions(emit_dictionary_deltas=deltas)
    new = ipc.new_file if file else ipc.new_stream
    with new(path, batches[0].schema, options=options) as w:
        for b in batches:
            w.write_batch(b)


def _read(path) -> pa.Table:
    if str(path).endswith(".arrows"):
        return ipc.open_stream(path).read_all()
    return ipc.open_file(path).read_all()


def growing_batches(kind: str) -> list[pa.RecordBatch]:
    """BATCHES batches whose dictionary gains one value each (its indexes
    point at the new value, an old one and a null)."""
    strings = [f"value-{k}-" + "x" * (k % 13) for k in range(BATCHES)]
    ints = [None if k == 3 else k * 7 - 100 for k in range(BATCHES)]  # a null among the values
    batches = []
    for b in range(BATCHES):
        idx = pa.array([b, b // 2, None], pa.int32())
        if kind == "string":
            cols = {"d": D(idx, pa.array(strings[:b + 1]))}
        elif kind == "int":
            cols = {"d": D(idx.cast(pa.int16()), pa.array(ints[:b + 1], pa.int64()))}
        elif kind == "struct":  # a dictionary nested in a struct column
            cols = {"s": pa.StructArray.from_arrays(
                [D(idx, pa.array(strings[:b + 1])), pa.array([b, -b, 0], pa.int64())],
                ["d", "x"])}
        else:  # "list": nested in a list column
            cols = {"l": pa.ListArray.from_arrays(pa.array([0, 2, 2, 3], pa.int32()),
                                                  D(idx, pa.array(strings[:b + 1])))}
        cols["i"] = pa.array([b, b, b], pa.int64())
        batches.append(pa.record_batch(cols))
    return batches


@pytest.mark.parametrize("kind", ("string", "int", "struct", "list"))
def test_growing_dictionary_sent_as_deltas_when_asked(sluice, tmp_path, kind):
    batches = growing_batches(kind)
    src = tmp_path / "in.arrows"
    write_pyarrow(src, batches, deltas=True)  # pyarrow's smallest: its deltas
    want = pa.Table.from_batches(batches).to_pylist()
    default, deltas, file = tmp_path / "out.arrows", tmp_path / "d.arrows", tmp_path / "out.arrow"
    sluice.run("convert", src, default)
    sluice.run("convert", src, deltas, "-W", "dictionary_deltas=true")
    sluice.run("convert", src, file)
    for path in (default, deltas, file):
        got = _read(path)
        got.validate(full=True)
        assert got.to_pylist() == want, path.name

    # the messages pyarrow's writer sends for these batches, with and
    # without deltas: a delta for each batch, or a replacement
    write_pyarrow(tmp_path / "pa.arrows", batches, deltas=False)
    write_pyarrow(tmp_path / "pa.arrow", batches, deltas=True, file=True)
    flags = dictionary_messages(src)
    assert len(flags) == BATCHES and sum(d for _, d in flags) == BATCHES - 1
    assert dictionary_messages(deltas) == flags
    assert dictionary_messages(default) == dictionary_messages(tmp_path / "pa.arrows")
    assert dictionary_messages(file) == dictionary_messages(tmp_path / "pa.arrow")

    # with deltas, the output grows with the values, not batches x values
    size = src.stat().st_size
    assert deltas.stat().st_size < 2 * size
    assert file.stat().st_size < 2 * size
    assert default.stat().st_size > 2 * deltas.stat().st_size  # each dictionary whole

    # polars reads no deltas: it reads the default output
    assert pl.read_ipc_stream(default).to_dicts() == want
    # compressed deltas
    sluice.run("convert", src, tmp_path / "z.arrows", "-W", "dictionary_deltas=true",
               "--compression", "zstd")
    assert _read(tmp_path / "z.arrows").to_pylist() == want
    assert dictionary_messages(tmp_path / "z.arrows") == flags


def _changing(values_per_batch, value_type=None) -> list[pa.RecordBatch]:
    out = []
    for values in values_per_batch:
        n = len(values)
        idx = pa.array([n - 1, 0, None], pa.int32())
        out.append(pa.record_batch({"d": D(idx, pa.array(values, value_type))}))
    return out


# Each is one batch's dictionary: grown by appending (a delta), the same
# (nothing sent), or changed otherwise (a replacement), in ways only the
# bytes tell: a value changed, null -> value, a value split in two
# ("bc" -> "b", "c": the same data bytes, other offsets), shrunk.
CHANGING = {
    "string": (
        [["a", "b"], ["a", "b", "c"], ["a", "b", "c"], ["a", "x", "c", "d"],
         ["a", "x", "c", "d", "e"], ["a", "bc"], ["a", "b", "c"], ["a", "b", "c", "d", ""],
         ["b"], ["b", None], ["b", None, "z"], ["b", "q", "z"], ["b", "q", "z", "w"]],
        pa.string()),
    "int": (
        [[1, None], [1, None, 3], [1, 2, 3], [1, 2, 3, 4], [1, 2, 3, 4], [1, 2, 3, 5],
         [1, 2, 3, 5] + list(range(20)), [9], [9, 8]],
        pa.int64()),
    "shrinking": (  # a large dictionary replaced by small ones, which grow
        [[f"v{k}" for k in range(3000)], ["a"], ["a", "b"], ["a", "b"], ["a", "b", "c"],
         [f"v{k}" for k in range(3000)], [f"v{k}" for k in range(3001)], ["v0"]],
        pa.string()),
    "bool": (  # values in a bitmap: a change inside its last byte
        [[True] * 9, [True] * 9 + [False], [True] * 8 + [False, False],
         [True] * 8 + [False, False, True], [None] * 3, [None] * 3 + [True]],
        pa.bool_()),
}


@pytest.mark.parametrize("kind", sorted(CHANGING))
def test_dictionary_changed_not_by_appending_is_replaced(sluice, tmp_path, kind):
    """Only an old dictionary that is a prefix of the new one becomes a
    delta: the same decisions pyarrow's writer makes (emit_dictionary_deltas)
    for the same batches, and the values read back are the batches'."""
    values, value_type = CHANGING[kind]
    batches = _changing(values, value_type)
    src, out = tmp_path / "in.arrows", tmp_path / "out.arrows"
    write_pyarrow(src, batches, deltas=True)
    flags = dictionary_messages(src)
    assert any(d for _, d in flags) and any(not d for _, d in flags[1:]), flags
    sluice.run("convert", src, out, "-W", "dictionary_deltas=true")
    assert dictionary_messages(out) == flags
    assert _read(out).to_pylist() == pa.Table.from_batches(batches).to_pylist()
    # without the option: every change a replacement
    sluice.run("convert", src, tmp_path / "default.arrows")
    assert not any(d for _, d in dictionary_messages(tmp_path / "default.arrows"))


def test_file_refuses_a_dictionary_changed_not_by_appending(sluice, tmp_path):
    """A file cannot replace a dictionary: an int dictionary (not grown
    across batches as string ones are) that changes other than by appending
    is an error, as in pyarrow's file writer, and nothing is written; one
    that only grows becomes deltas."""
    values, value_type = CHANGING["int"]
    src = tmp_path / "in.arrows"
    grown = _changing([[1, None], [1, None, 3], [1, None, 3, 4]], value_type)
    write_pyarrow(src, grown, deltas=True)
    sluice.run("convert", src, tmp_path / "ok.arrow")
    assert dictionary_messages(tmp_path / "ok.arrow") == [(0, False), (0, True), (0, True)]
    changed = _changing(values[:3], value_type)  # [1, null, 3] -> [1, 2, 3]
    write_pyarrow(src, changed, deltas=True)
    with pytest.raises(pa.ArrowInvalid):
        write_pyarrow(tmp_path / "pa.arrow", changed, deltas=True, file=True)
    err = sluice.expect_error("convert", src, tmp_path / "bad.arrow").stderr.decode()
    assert "column 'd': the dictionary changed between batches" in err, err
    assert not (tmp_path / "bad.arrow").exists()


def test_dictionary_deltas_option_is_checked(sluice, tmp_path):
    """dictionary_deltas takes true or false; false in a file, whose only
    way to change a dictionary is a delta, makes a grown one an error (as
    pyarrow's file writer without emit_dictionary_deltas)."""
    batches = _changing([["a"], ["a", "b"]])
    src = tmp_path / "in.arrows"
    write_pyarrow(src, batches, deltas=True)
    err = sluice.expect_error("convert", src, tmp_path / "x.arrows", "-W",
                              "dictionary_deltas=yes").stderr.decode()
    assert "dictionary_deltas='yes': expected true or false" in err, err
    sluice.run("convert", src, tmp_path / "f.arrows", "-W", "dictionary_deltas=false")
    assert dictionary_messages(tmp_path / "f.arrows") == [(0, False), (0, False)]
    sluice.run("convert", src, tmp_path / "t.arrow", "-W", "dictionary_deltas=true")
    assert dictionary_messages(tmp_path / "t.arrow") == [(0, False), (0, True)]
    with pytest.raises(pa.ArrowInvalid):
        write_pyarrow(tmp_path / "pa.arrow", batches, deltas=False, file=True)
    err = sluice.expect_error("convert", src, tmp_path / "no.arrow", "-W",
                              "dictionary_deltas=false").stderr.decode()
    assert "dictionary_deltas=false" in err, err
    assert not (tmp_path / "no.arrow").exists()
    # the same dictionary in every batch needs no delta
    same = _changing([["a", "b"], ["a", "b"]])
    write_pyarrow(src, same, deltas=True)
    sluice.run("convert", src, tmp_path / "same.arrow", "-W", "dictionary_deltas=false")
    assert dictionary_messages(tmp_path / "same.arrow") == [(0, False)]


def _outer(inner_values, outer_idx, n_outer):
    """dictionary<list<dictionary<string>>>: the outer dictionary's lists
    hold one index each into the inner dictionary."""
    inner = D(pa.array(list(range(n_outer)), pa.int32()), pa.array(inner_values))
    lists = pa.ListArray.from_arrays(pa.array(list(range(n_outer + 1)), pa.int32()), inner)
    return D(pa.array(outer_idx, pa.int32()), lists)


@pytest.mark.parametrize("case", ("inner_grows", "both_grow", "inner_replaced"))
def test_nested_dictionaries_with_deltas(sluice, tmp_path, case):
    """A dictionary whose values hold a dictionary: with deltas the inner
    one grows by a delta, and the outer one is replaced when it changes (or
    when the inner one is replaced), as pyarrow's writer does: pyarrow reads
    no delta of such a dictionary. pyarrow reads every output back."""
    first = _outer(["a", "b"], [1, 0], 2)
    second = {"inner_grows": _outer(["a", "b", "c"], [1, 0], 2),
              "both_grow": _outer(["a", "b", "c"], [2, 0], 3),
              "inner_replaced": _outer(["x", "b", "c"], [2, 0], 3)}[case]
    t = pa.table({"nd": pa.chunked_array([first, second])})
    src, out = tmp_path / "in.arrows", tmp_path / "out.arrows"
    write_pyarrow(src, t.to_batches(), deltas=True)
    sluice.run("convert", src, out, "-W", "dictionary_deltas=true")
    assert _read(out).to_pylist() == t.to_pylist()
    got, pa_flags = dictionary_messages(out), dictionary_messages(src)
    if case == "inner_grows":
        # pyarrow sends the unchanged outer one again; its indexes into the
        # inner one still hold, so sluice does not
        assert pa_flags[3:] == [(0, False)] and got == pa_flags[:3]
    else:
        assert got == pa_flags


def _struct_outer(inner_values, outer_idx, n_outer):
    """dictionary<struct<k: dictionary<string>, x: int64>>."""
    inner = D(pa.array(list(range(n_outer)), pa.int32()), pa.array(inner_values))
    st = pa.StructArray.from_arrays([inner, pa.array(range(n_outer), pa.int64())], ["k", "x"])
    return D(pa.array(outer_idx, pa.int32()), st)


@pytest.mark.parametrize("kind", ("list", "struct"))
@pytest.mark.parametrize("case", ("inner_grows", "outer_grows", "both_grow"))
def test_file_never_writes_a_delta_of_a_dictionary_holding_a_dictionary(sluice, tmp_path,
                                                                       kind, case):
    """pyarrow reads no delta of a dictionary whose values hold a dictionary
    ("unresolved nested dictionary"), and its file writer refuses all of
    these inputs. A .arrow file that sluice writes pyarrow reads with the
    input's values (the inner dictionary grown by a delta, the outer one
    unchanged); an outer one that changed is an error naming the column and
    why, with or without dictionary_deltas, and nothing is written (it
    wrote deltas pyarrow could not read)."""
    make = _outer if kind == "list" else _struct_outer
    first = make(["a", "b"] + (["c"] if case == "outer_grows" else []), [1, 0], 2)
    second = make(["a", "b", "c"], [1, 0] if case == "inner_grows" else [2, 0],
                  2 if case == "inner_grows" else 3)
    t = pa.table({"nd": pa.chunked_array([first, second])})
    src = tmp_path / "in.arrows"
    write_pyarrow(src, t.to_batches(), deltas=True)
    with pytest.raises(pa.ArrowInvalid):
        write_pyarrow(tmp_path / "pa.arrow", t.to_batches(), deltas=True, file=True)
    for opts in ((), ("-W", "dictionary_deltas=true")):
        out = tmp_path / "out.arrow"
        if case == "inner_grows":
            sluice.run("convert", src, out, *opts)
            got = _read(out)
            got.validate(full=True)
            assert got.to_pylist() == t.to_pylist()
            assert dictionary_messages(out) == [(1, False), (0, False), (1, True)]
            continue
        err = sluice.expect_error("convert", src, out, *opts).stderr.decode()
        assert "column 'nd': the dictionary changed between batches, and its values hold a " \
               "dictionary" in err and "pyarrow reads no delta" in err, err
        assert not out.exists()


def test_file_grows_a_dictionary_nested_in_a_list(sluice, tmp_path):
    """list<dictionary<string>> whose batches bring their own dictionaries
    (Parquet list<string> row groups read with dictionary=true, a chunk
    fallen back to plain pages among them, or a stream of separately
    encoded batches): a .arrow file grows one dictionary for the list's
    values, as for a top-level column, and writes deltas. pyarrow's file
    writer refuses such batches; it reads sluice's file with the input's
    values. A list dictionary with null values is still refused."""
    import pyarrow.parquet as pq
    words = ["red", "green", "blue", "cyan", "", "magenta", "teal", "olive"]
    rows = [None if i % 13 == 0 else
            [words[i // 100 + (i + k) % 3] for k in range(i % 4)] +
            ([None] if i % 7 == 0 else []) for i in range(600)]
    table = pa.table({"l": pa.array(rows, pa.list_(pa.string())), "i": range(600)})
    for name, kw in (("rg", {}), ("plain", {"dictionary_pagesize_limit": 8})):
        pq.write_table(table, tmp_path / f"{name}.parquet", row_group_size=97, **kw)
        out = tmp_path / f"{name}.arrow"
        sluice.run("convert", tmp_path / f"{name}.parquet", out, "-O", "dictionary=true")
        with ipc.open_file(out) as f:
            got = f.read_all()
            assert f.stats.num_dictionary_deltas > 0, name
        got.validate(full=True)
        assert pa.types.is_dictionary(got.schema.field("l").type.value_type), name
        assert got.to_pylist() == table.to_pylist(), name

    # separately encoded batches, int8 indices, in list, large list and
    # fixed-size list columns (sliced: the values have an offset)
    def lists(kind, idx, vals):
        d = D(pa.array(idx, pa.int8()), pa.array(vals))
        if kind == "fixed":
            return pa.FixedSizeListArray.from_arrays(d, 2)
        offsets = pa.array(range(0, len(idx) + 1, 2), pa.int32())
        if kind == "large":
            return pa.LargeListArray.from_arrays(offsets.cast(pa.int64()), d)
        return pa.ListArray.from_arrays(offsets, d)

    for kind in ("list", "large", "fixed"):
        batches = [pa.record_batch({"l": lists(kind, idx, vals)[k:]}) for k, (idx, vals) in
                   enumerate((([0, 1, 1, None], ["a", "b"]), ([1, 0, 2, 2, 0, 1], ["z", "a", "b"]),
                              ([0, 0], ["a"]), ([3, 1, None, 0], ["q", "b", "", "x"])))]
        src, out = tmp_path / f"{kind}.arrows", tmp_path / f"{kind}.arrow"
        write_pyarrow(src, batches, deltas=True)
        with pytest.raises(pa.ArrowInvalid):
            write_pyarrow(tmp_path / "pa.arrow", batches, deltas=True, file=True)
        sluice.run("convert", src, out)
        got = _read(out)
        got.validate(full=True)
        assert got.to_pylist() == pa.Table.from_batches(batches).to_pylist(), kind
        assert [d for _, d in dictionary_messages(out)] == [False, True, True], kind
        # without deltas a file cannot grow it
        err = sluice.expect_error("convert", src, tmp_path / "no.arrow", "-W",
                                  "dictionary_deltas=false").stderr.decode()
        assert "column 'l': the dictionary changed" in err, err

    nulls = [pa.record_batch({"l": pa.ListArray.from_arrays(
        pa.array([0, 2], pa.int32()), D(pa.array([0, 1], pa.int32()), pa.array(vals)))})
        for vals in (["a", None], ["b", None])]
    write_pyarrow(src, nulls, deltas=True)
    err = sluice.expect_error("convert", src, tmp_path / "bad.arrow").stderr.decode()
    assert "whose dictionaries hold no null values (one of this column's does)" in err, err
    assert not (tmp_path / "bad.arrow").exists()
    # the null in an earlier batch's dictionary only: the reason still named
    nulls = [pa.record_batch({"l": pa.ListArray.from_arrays(
        pa.array([0, 1], pa.int32()), D(pa.array([0], pa.int32()), pa.array(vals)))})
        for vals in (["x", None], ["y"])]
    write_pyarrow(src, nulls, deltas=True)
    err = sluice.expect_error("convert", src, tmp_path / "bad.arrow").stderr.decode()
    assert "whose dictionaries hold no null values (one of this column's does)" in err, err
    assert not (tmp_path / "bad.arrow").exists()


@pytest.mark.parametrize("index", [pa.int64(), pa.uint64(), pa.int8(), pa.uint8()])
@pytest.mark.parametrize("in_list", [False, True])
def test_file_grows_a_dictionary_of_any_index_width(sluice, tmp_path, index, in_list):
    """Fresh dictionaries per batch under 8-bit and 64-bit indices, top-level
    or a list's values (the 64-bit bound was a shift by 63, undefined): the
    file pyarrow reads holds the stream's values."""
    def column(idx, vals):
        d = D(pa.array(idx, index), pa.array(vals))
        if not in_list:
            return d
        return pa.ListArray.from_arrays(pa.array(range(0, len(idx) + 1), pa.int32()), d)
    batches = [pa.record_batch({"c": column(idx, vals)}) for idx, vals in
               (([0, 1, 0], ["x", "y"]), ([1, 0], ["z", "x"]), ([0], ["w"]))]
    src, out = tmp_path / "w.arrows", tmp_path / "w.arrow"
    write_pyarrow(src, batches, deltas=True)
    sluice.run("convert", src, out)
    got = _read(out)
    got.validate(full=True)
    assert got.to_pylist() == pa.Table.from_batches(batches).to_pylist()
