#!/usr/bin/env python3
"""Generate the W3 data set (see /work/shared/BENCHMARKS.md, "W3"): streams of
length-prefixed messages, each a 1-byte length L followed by L random bytes.

  w3.bin      16.5 MiB at most: L uniform in 8..40 (about 692,000 messages)
  w3_16.bin   1 MiB exactly: 65,536 messages of 16 bytes (length byte 0x0f + 15 bytes)
  w3.meta.json  the reference: per file its bytes, message count and payload bytes

Seeded (numpy PCG64): the lengths and the payload bytes come from two streams
of the same seed, so the files do not depend on how they are written. numpy
writes the files; sluice plays no part.
"""
from __future__ import annotations

import argparse
import json
import os

import numpy as np

MAIN_BYTES = 16 * 2**20 + 2**19     # 16.5 MiB
SMALL_BYTES = 2**20                 # 1 MiB
SMALL_LEN = 15                      # 0x0f + 15 bytes = 16-byte messages


def frame(lengths: np.ndarray, payload_rng: np.random.Generator) -> bytes:
    """Length byte + payload for each length, payload bytes random."""
    sizes = lengths.astype(np.int64) + 1
    total = int(sizes.sum())
    out = np.frombuffer(payload_rng.bytes(total), dtype=np.uint8).copy()
    starts = np.concatenate(([0], np.cumsum(sizes)[:-1]))
    out[starts] = lengths.astype(np.uint8)
    return out.tobytes()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default=os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                  "data"))
    ap.add_argument("--seed", type=int, default=3)
    ap.add_argument("--force", action="store_true", help="rewrite existing files")
    args = ap.parse_args(argv)
    os.makedirs(args.out, exist_ok=True)
    meta_path = os.path.join(args.out, "w3.meta.json")
    if os.path.exists(meta_path) and not args.force:
        print(f"{meta_path} exists (use --force to rewrite)")
        return 0

    files = {}
    # w3.bin: draw more lengths than can fit, keep the longest prefix that fits.
    len_rng = np.random.Generator(np.random.PCG64([args.seed, 0]))
    lengths = len_rng.integers(8, 41, size=MAIN_BYTES // 9 + 1, dtype=np.int64)
    n = int(np.searchsorted(np.cumsum(lengths + 1), MAIN_BYTES, side="right"))
    lengths = lengths[:n]
    blob = frame(lengths, np.random.Generator(np.random.PCG64([args.seed, 1])))
    files["w3.bin"] = {"bytes": len(blob), "messages": n, "payload_bytes": int(lengths.sum()),
                       "length_prefix": "u8", "lengths": "uniform 8..40"}
    with open(os.path.join(args.out, "w3.bin"), "wb") as f:
        f.write(blob)

    # w3_16.bin: 1 MiB of 16-byte messages.
    n16 = SMALL_BYTES // (SMALL_LEN + 1)
    blob = frame(np.full(n16, SMALL_LEN, dtype=np.int64),
                 np.random.Generator(np.random.PCG64([args.seed, 2])))
    files["w3_16.bin"] = {"bytes": len(blob), "messages": n16, "payload_bytes": n16 * SMALL_LEN,
                          "length_prefix": "u8", "lengths": "all 15"}
    with open(os.path.join(args.out, "w3_16.bin"), "wb") as f:
        f.write(blob)

    meta = {"workload": "w3", "seed": args.seed, "files": files,
            "rows": files["w3.bin"]["messages"], "table_bytes": files["w3.bin"]["bytes"]}
    with open(meta_path, "w") as f:
        json.dump(meta, f, indent=1)
    for name, v in files.items():
        print(f"{name}: {v['bytes']:,} bytes, {v['messages']:,} messages, "
              f"{v['payload_bytes']:,} payload bytes")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
