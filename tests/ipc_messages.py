"""Reading the DictionaryBatch messages of Arrow IPC output with pyarrow's
MessageReader: the id and isDelta flag of each (pyarrow's Message does not
expose the flag, so it is read from the message's flatbuffer)."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.ipc as ipc


def _u16(b: bytes, at: int) -> int:
    return int.from_bytes(b[at:at + 2], "little")


def _u32(b: bytes, at: int) -> int:
    return int.from_bytes(b[at:at + 4], "little")


def _field(b: bytes, table: int, index: int) -> int | None:
    """Where field `index` of the flatbuffer table at `table` is, or None."""
    vtable = table - int.from_bytes(b[table:table + 4], "little", signed=True)
    at = 4 + 2 * index
    if at >= _u16(b, vtable):
        return None
    off = _u16(b, vtable + at)
    return table + off if off else None


def dictionary_messages(path) -> list[tuple[int, bool]]:
    """(id, isDelta) of every DictionaryBatch message of an IPC stream or file,
    in order, read with pyarrow's MessageReader."""
    data = open(path, "rb").read()
    if data[:6] == b"ARROW1":
        data = data[8:]  # the file's stream of messages follows its magic
    out = []
    for msg in ipc.MessageReader.open_stream(pa.BufferReader(data)):
        if msg.type != "dictionary":
            continue
        b = msg.metadata.to_pybytes()
        header = _field(b, _u32(b, 0), 2)  # Message.header: a DictionaryBatch
        header += _u32(b, header)
        id_at, delta_at = _field(b, header, 0), _field(b, header, 2)
        out.append((int.from_bytes(b[id_at:id_at + 8], "little") if id_at else 0,
                    bool(b[delta_at]) if delta_at else False))
    return out
