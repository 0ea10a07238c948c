#!/usr/bin/env python3
"""Writes scripts/sample/sample.arrow, the small bundled sample that
scripts/setup.sh runs sluice on. The file is committed; this script is how it
was made (pyarrow, seeded, so re-running it gives the same table).

Usage: python3 scripts/sample/make_sample.py [OUT]   (default: beside this script)
"""

import datetime as dt
import random
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.ipc as ipc

ROWS = 1000
BATCH = 400  # three record batches: 400, 400, 200


def make_table() -> pa.Table:
    rng = random.Random(20261129)
    cities = ["Lisbon", "Oslo", "Lagos", "Quito", "Hanoi", "Perth", "Zürich"]
    t0 = dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc)
    ids = list(range(ROWS))
    city = [rng.choice(cities) for _ in ids]
    temp = [None if rng.random() < 0.05 else round(rng.uniform(-20.0, 40.0), 2) for _ in ids]
    rain = [rng.random() < 0.3 for _ in ids]
    when = [t0 + dt.timedelta(minutes=17 * i) for i in ids]
    note = [None if rng.random() < 0.5 else f"reading {i} from {c}" for i, c in zip(ids, city)]
    schema = pa.schema(
        [
            pa.field("id", pa.int64(), nullable=False),
            pa.field("city", pa.dictionary(pa.int8(), pa.utf8())),
            pa.field("temp_c", pa.float64()),
            pa.field("rain", pa.bool_()),
            pa.field("observed_at", pa.timestamp("us", tz="UTC")),
            pa.field("note", pa.utf8()),
        ],
        metadata={"source": "sluice scripts/sample/make_sample.py"},
    )
    return pa.table(
        {
            "id": pa.array(ids, pa.int64()),
            "city": pa.array(city, pa.utf8()).dictionary_encode().cast(schema.field("city").type),
            "temp_c": pa.array(temp, pa.float64()),
            "rain": pa.array(rain, pa.bool_()),
            "observed_at": pa.array(when, pa.timestamp("us", tz="UTC")),
            "note": pa.array(note, pa.utf8()),
        },
        schema=schema,
    )


def main() -> None:
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).resolve().parent / "sample.arrow"
    table = make_table()
    with ipc.new_file(out, table.schema) as writer:
        for batch in table.to_batches(max_chunksize=BATCH):
            writer.write_batch(batch)
    print(f"wrote {out} ({out.stat().st_size} bytes, {table.num_rows} rows)")


if __name__ == "__main__":
    main()
