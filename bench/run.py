#!/usr/bin/env python3
"""The benchmark runner: sluice and its peers side by side, one run, ratios.

  python3 bench/run.py --workload w1                 full size (2^25 rows), tasks a,b,c
  python3 bench/run.py --workload w1 --quick         2^20 rows, repeat 3: a smoke test
  python3 bench/run.py --workload w1 --rows 4000000 --repeat 5 --tasks a,b

How it measures (see bench/README.md for the details and the caveats):
- Every measurement is one fresh child process (a pipeline: one per stage),
  each run under `/usr/bin/time -o FILE`, which reports that process's own
  peak RSS, CPU time and page faults. Wall time is taken around start-to-reap,
  so it includes interpreter start-up and imports for the Python peers; each
  tool also reports `load_s`, the timed work alone.
- Page cache warm: every input file is read once before timing, and every
  cell runs once as a warm-up that is not counted. Then `--repeat` rounds; in
  each round every cell runs once, in an order rotated by one per round
  (sluice and peers interleaved). The median over rounds is reported.
- Correctness first: each result (rows, sum(id), sum of every float column) is
  checked against the generator's reference in <data>/w1.meta.json. A mismatch
  is recorded on the cell and makes the runner exit non-zero.
- Floors: memcpy of the output size (1 thread and all cores), `cat file >
  /dev/null`, and for the pipe task `cat w1.arrows | consumer`.

Workloads plug in as a module (bench/w1.py) with cells(ctx) -> [Cell],
ensure_data(rows, dir), META, DEFAULT_TASKS, FULL_ROWS, QUICK_ROWS, registered
in WORKLOADS below; the measuring is in bench/harness.py. A cell is one tool
doing one task: a command (or a pipeline of commands), a role (sluice / peer /
floor) and how to read and check its result.
"""
from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import w1  # noqa: E402
import w2  # noqa: E402
import w3  # noqa: E402
import w4  # noqa: E402
from harness import (HERE, ROOT, Context, build_tool_count, fs_of, loadavg, log,  # noqa: E402
                     machine_info, measure, sluice_info, summarize, warm_cache)

# A workload: its cells, its data, its default tasks and sizes.
WORKLOADS = {"w1": w1, "w2": w2, "w3": w3, "w4": w4}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description="sluice benchmark runner (see bench/README.md)")
    ap.add_argument("--workload", default="w1", choices=sorted(WORKLOADS))
    ap.add_argument("--rows", type=int, default=None, help="rows (default 2^25; --quick 2^20)")
    ap.add_argument("--repeat", type=int, default=None, help="measured rounds (default 3)")
    ap.add_argument("--warmup", type=int, default=1, help="warm-up rounds, not counted (default 1)")
    ap.add_argument("--tasks", default=None,
                    help="comma list of task ids (default a,b,c; also a_parquet, "
                         "a_duckdb_parquet, a_categorical, a_csv, a_avro, w_parquet, w_csv, pd_parquet, pd_avro, "
                         "pd_csv, pd_arrow, c_parquet, s_parquet; w4: q1, q3, q1_csv, q3_csv, load_cql, q1_cql, "
                         "q3_cql)")
    ap.add_argument("--quick", action="store_true", help="2^20 rows, repeat 3, scratch output")
    ap.add_argument("--data", default=None, help="data directory (default bench/data[/rowsN])")
    ap.add_argument("--sluice", default=os.path.join(ROOT, "build", "sluice"), help="sluice CLI")
    ap.add_argument("--bin", default=os.path.join(HERE, "bin"), help="built bench/ C programs")
    ap.add_argument("--python", default=os.environ.get("SLUICE_BENCH_PYTHON", sys.executable),
                    help="interpreter with the sluice package installed, for the sluice Python "
                         "cells (default $SLUICE_BENCH_PYTHON, else this one)")
    ap.add_argument("--tmp", default=None, help="output dir for convert (default <data>/tmp)")
    ap.add_argument("--out", default=None, help="result JSON path (default bench/results/...)")
    ap.add_argument("--note", action="append", default=[], help="free-text note for the JSON")
    ap.add_argument("--no-chart", action="store_true")
    ap.add_argument("--heavy", action="store_true",
                    help="also run cells that need a lot of memory (fastavro at full size)")
    args = ap.parse_args(argv)

    wl = WORKLOADS[args.workload]
    rows = args.rows or (wl.QUICK_ROWS if args.quick else wl.FULL_ROWS)
    repeat = args.repeat or 3
    data = wl.ensure_data(rows, args.data)
    with open(os.path.join(data, wl.META)) as f:
        meta = json.load(f)
    tmp = args.tmp or os.path.join(data, "tmp")
    os.makedirs(tmp, exist_ok=True)
    tasks = set((args.tasks or wl.DEFAULT_TASKS).split(","))
    ctx = Context(args.workload, data, meta, args.bin, args.sluice, tmp, os.cpu_count() or 1,
                  heavy=args.heavy, python=args.python, tasks=frozenset(tasks))
    cells = [c for c in wl.cells(ctx) if c.task in tasks]

    for c in cells:
        if c.skip:
            log(f"SKIP [{c.task}] {c.name}: {c.skip}")
    inputs = sorted({a for c in cells for st in c.stages for a in st
                     if a.startswith(data) and os.path.isfile(a)})
    t_warm = time.perf_counter()
    warm_cache(inputs)
    log(f"page cache warmed: {', '.join(os.path.basename(p) for p in inputs)} "
        f"({time.perf_counter() - t_warm:.1f}s)")

    started = dt.datetime.now(dt.timezone.utc)
    builds_before, la_before = build_tool_count(), loadavg()
    measured = measure(cells, meta, args.warmup, repeat)
    builds_after, la_after = build_tool_count(), loadavg()
    summary = summarize(cells, measured)

    all_runs = [r for c in cells for r in measured["runs"][id(c)]]
    max_builds = max([r["build_procs"] for r in all_runs] + [builds_before, builds_after])
    notes = list(args.note)
    if max_builds > 0:
        notes.append(f"machine shared with concurrent builds: up to {max_builds} compiler/build "
                     "processes were running during measurements; timings are noisy, ratios "
                     "less so; rerun on a quiet machine for the record")
    if rows != wl.FULL_ROWS:
        notes.append(f"reduced size: {rows:,} rows instead of {wl.FULL_ROWS:,}")
    notes += ctx.notes  # what the workload's set-up found (a server's start and load)
    doc = {
        "workload": args.workload,
        "date": started.strftime("%Y-%m-%d"),
        "started_utc": started.isoformat(timespec="seconds"),
        "finished_utc": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "machine": machine_info(),
        "data": {"dir": os.path.relpath(data, ROOT), "filesystem": fs_of(data),
                 "rows": meta["rows"], "table_bytes": meta.get("table_bytes"),
                 "files": {k: v["bytes"] for k, v in meta.get("files", {}).items()},
                 "reference": meta.get("answers") or {"sum_id": meta.get("sum_id"),
                                                      "sum_x": meta.get("sum_x")}},
        "method": {
            "page_cache": "warm: every input read once before timing, and every cell ran "
                          f"{args.warmup} warm-up round(s) not counted",
            "rounds": repeat, "order": "interleaved; each round rotates the cell order by one",
            "process": "one fresh child process per measurement (one per pipeline stage); "
                       "peak RSS = that process's max RSS as reported by `/usr/bin/time -o` "
                       "(GNU time forks a small process and execs the tool in it)",
            "rss_split": "peak_rss_anon_mb / peak_rss_file_mb: RssAnon(+RssShmem) and RssFile "
                         "of the (first) stage sampled from /proc every 10 ms: allocated memory "
                         "vs mapped file pages; sampled, so approximate",
            "wall_s": "start to reap of all stages; includes interpreter start-up, imports, "
                      "the checksum pass and teardown",
            "load_s": "the timed work as the tool reports it (imports and checksum excluded); "
                      "for memcpy the in-process median",
            "checks": getattr(wl, "CHECKS", None) or
                      "rows, sum(id) exact, sum of each float64 column within 1e-8 relative, "
                      "against the generator's reference; convert outputs re-read with pyarrow",
            "convert_output": f"files in {os.path.relpath(tmp, ROOT)} ({fs_of(tmp)}), "
                              "page cache only: no fsync, deleted after each run",
            "threads": "every tool uses its defaults (all cores) unless the name says otherwise",
        },
        "sluice": sluice_info(ctx),
        "load": {"before": la_before, "after": la_after, "max_build_procs": max_builds},
        "notes": notes,
        "cells": summary,
    }
    failures = [c for c in summary if c.get("error")]

    full = rows == wl.FULL_ROWS and not args.quick
    results_dir = os.path.join(HERE, "results") if full else os.path.join(HERE, "results", "scratch")
    os.makedirs(results_dir, exist_ok=True)
    stem = f"{doc['date']}-{args.workload}" + ("" if full else f"-{rows}rows")
    if tasks != set(wl.DEFAULT_TASKS.split(",")):
        stem += "-" + "+".join(sorted(tasks))  # a subset or extra tasks: its own file
    out = args.out
    if out is None:
        # A second run of the same tasks on the same day gets its own name
        # (-b, -c, ...): results that the README cites are never overwritten.
        out = os.path.join(results_dir, stem + ".json")
        for suffix in "bcdefghijklmnopqrstuvwxyz":
            if not os.path.exists(out):
                break
            out = os.path.join(results_dir, f"{stem}-{suffix}.json")
    with open(out, "w") as f:
        json.dump(doc, f, indent=1)
    log(f"wrote {out}")
    if not args.no_chart:
        try:
            sys.path.insert(0, HERE)
            import report
            png = os.path.splitext(out)[0] + ".png"
            report.chart(doc, png)
            log(f"wrote {png}")
        except ImportError as e:
            log(f"no chart: {e}")
    sys.path.insert(0, HERE)
    try:
        import report
        print(report.table(doc))
    except ImportError:
        pass
    if failures:
        for c in failures:
            log(f"FAILED [{c['task']}] {c['name']}: {c['error'][:300]}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
