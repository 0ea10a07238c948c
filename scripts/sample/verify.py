#!/usr/bin/env python3
"""Checks that an Arrow IPC file or stream written by sluice holds the same
table as the original (schema and values), using pyarrow as the reader.

Usage: python3 scripts/sample/verify.py ORIGINAL OUTPUT
"""

import sys

import pyarrow.ipc as ipc


def read(path):
    with open(path, "rb") as fh:
        magic = fh.read(6)
    reader = ipc.open_file(path) if magic == b"ARROW1" else ipc.open_stream(path)
    return reader.read_all()


def main() -> int:
    original, output = read(sys.argv[1]), read(sys.argv[2])
    if not original.schema.equals(output.schema, check_metadata=True):
        print(f"schema differs:\n{original.schema}\n---\n{output.schema}", file=sys.stderr)
        return 1
    if not original.equals(output):
        print("values differ", file=sys.stderr)
        return 1
    print(f"verified {sys.argv[2]}: {output.num_rows} rows, {output.num_columns} columns, same as {sys.argv[1]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
