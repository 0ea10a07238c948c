#!/usr/bin/env python3
"""Turns a bench/results/*.json into a chart and a text table.

  python3 bench/report.py bench/results/2026-11-29-w1.json   # writes .png beside it, prints table

Chart: one panel per task; one horizontal bar per tool (median wall time of
the whole process), split into the tool's own timed work (dark), its checksum
pass (hatched) and the rest: interpreter start-up, imports, teardown (light).
Floors are dashed vertical lines. Each bar is labelled with its time, peak RSS
and, for peers, the ratio sluice / peer (below 1 = sluice faster).
"""
from __future__ import annotations

import json
import os
import sys

TASK_TITLES = {
    "w1": {
        "a": "(a) load w1.arrow into Arrow memory",
        "b": "(b) convert w1.arrow (IPC file) -> IPC stream file",
        "c": "(c) IPC stream through a pipe to a consumer; RSS = producer's",
        "a_parquet": "(a) load w1.parquet (pyarrow-written) into Arrow memory",
        "a_duckdb_parquet": "(a) load w1_duckdb.parquet (DuckDB-written) into Arrow memory",
        "a_categorical": "(a) load w1_cat.parquet (id + a pandas categorical) into Arrow memory",
        "a_csv": "(a) load w1.csv into Arrow memory",
        "a_avro": "(a) load w1.avro into Arrow memory",
        "w_parquet": "write w1.arrow as Parquet (snappy)",
        "w_csv": "write w1.arrow as CSV",
        # × df = peak RSS / DataFrame size; read: + what the read added over the imports
        **{f"pd_{k}": f"(b) w1.{k} into a pandas DataFrame (× df = peak RSS / df size)"
           for k in ("parquet", "avro", "csv", "arrow")},
        "c_parquet": "(c) w1.parquet as IPC stream through a pipe; RSS = producer's",
    },
    "w3": {
        "w3": "W3: w3.bin (16.5 MiB, u8-length-prefixed messages) from s3://, every message counted",
        "w3_16": "W3 variant: w3_16.bin (1 MiB of 16-byte messages) from s3://",
        "parquet_s3": "W1 w1.parquet from s3://, columns x1, x2 projected and decoded",
        "csv_s3": "W1 w1.csv from s3:// vs the local file (sluice stats, all columns)",
    },
    "w4": {
        "q1": "count(*), max(greatest(val2, val3)) over s1.parquet (snappy)",
        "q3": "count(*), max(data) over s3.parquet (snappy)",
    },
    "w2": {
        **{f"r_{c}": f"read w2_{c}.avro (fastavro-written, codec {c}) into memory" for c in
           ("null", "deflate", "snappy", "zstandard")},
        **{f"w_{c}": f"write w2.arrow as Avro, codec {c}" for c in
           ("null", "deflate", "snappy", "zstandard")},
    },
}
THROUGHPUT_TASKS = {"b", "w_parquet", "w_csv", "q1", "q3",
                    "r_null", "r_deflate", "r_snappy", "r_zstandard",
                    "w_null", "w_deflate", "w_snappy", "w_zstandard",
                    "w3", "w3_16", "csv_s3"}  # bars also say GB/s
COLORS = {"sluice": "#e8710a", "peer": "#1a73e8"}


def _fmt_s(x):
    return "-" if x is None else (f"{x * 1000:.0f} ms" if x < 1 else f"{x:.2f} s")


def _fmt_mib(mib):
    if mib < 1:
        return "<1 MiB"
    return f"{mib / 1024:.2f} GiB" if mib >= 1024 else f"{mib:.0f} MiB"


def _headline_ratio(doc, task, peer_name, key="wall"):
    """sluice / peer (or floor), for the first sluice cell of the task that has one."""
    for c in doc["cells"]:
        if c["task"] == task and c["role"] == "sluice" and c.get("ratios") \
                and peer_name in c["ratios"]:
            return c["ratios"][peer_name].get(key)
    return None


def best_peer_ratio(doc: dict, task: str):
    """(sluice cell, fastest peer cell, wall ratio) for the task's first sluice
    cell and the fastest peer in its group, or None."""
    cells = [c for c in doc["cells"] if c["task"] == task and c.get("median_wall_s")]
    for s in cells:
        if s["role"] != "sluice":
            continue
        peers = [p for p in cells if p["role"] == "peer" and p.get("group", "") == s.get("group", "")]
        if peers:
            best = min(peers, key=lambda p: p["median_wall_s"])
            return s, best, s["median_wall_s"] / best["median_wall_s"]
    return None


def chart(doc: dict, png: str) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch

    tasks = []
    for c in doc["cells"]:
        if c["task"] not in tasks:
            tasks.append(c["task"])
    bars_per_task = [sum(1 for c in doc["cells"] if c["task"] == t and c["role"] != "floor")
                     for t in tasks]
    height = 1.6 + sum(0.55 * n + 0.9 for n in bars_per_task)
    fig, axes = plt.subplots(len(tasks), 1, figsize=(13, height), squeeze=False,
                             gridspec_kw={"height_ratios": [max(n, 1) + 1.2 for n in bars_per_task]})
    titles = TASK_TITLES.get(doc["workload"], {})

    for ax, task in zip(axes[:, 0], tasks):
        cells = [c for c in doc["cells"] if c["task"] == task]
        bars = [c for c in cells if c["role"] != "floor"]
        floors = [c for c in cells if c["role"] == "floor" and c.get("value_s")]
        xmax = max([c.get("median_wall_s") or 0 for c in bars] +
                   [f["value_s"] for f in floors] + [1e-3])
        labels = []
        for i, c in enumerate(bars):
            y = len(bars) - 1 - i
            labels.append((y, c["name"]))
            if c.get("skipped") or c.get("median_wall_s") is None:
                ax.text(0.01 * xmax, y, "skipped: " + (c.get("skipped") or "no data")[:90],
                        va="center", fontsize=8, color="#777", style="italic")
                continue
            color = COLORS.get(c["role"], "#888")
            wall = c["median_wall_s"]
            load = c.get("median_load_s")
            verify = c.get("median_verify_s") or 0.0
            if load is not None and load <= wall:
                ax.barh(y, load, color=color, height=0.6)
                ax.barh(y, verify, left=load, color=color, alpha=0.45, hatch="///",
                        height=0.6, edgecolor="white")
                ax.barh(y, max(wall - load - verify, 0), left=load + verify, color=color,
                        alpha=0.2, height=0.6)
            else:
                ax.barh(y, wall, color=color, height=0.6)
            rss = c.get("peak_rss_mb")
            text = f"{_fmt_s(wall)}"
            if load is not None:
                text += f" (work {_fmt_s(load)})"
            if task in THROUGHPUT_TASKS and c.get("gbps"):
                text += f" · {c['gbps']:.2f} GB/s"
            if rss is not None:
                text += " · RSS " + _fmt_mib(rss)
                if c.get("peak_rss_anon_mb") is not None:
                    text += f" [anon {_fmt_mib(c['peak_rss_anon_mb'])}]"
                if c.get("rss_over_df") is not None:
                    text += f" = {c['rss_over_df']:.2f}× df"
                    if c.get("read_rss_over_df") is not None:
                        text += f" (read: +{c['read_rss_over_df']:.2f}× df)"
                stages = c.get("peak_rss_kb_per_stage") or []
                if len(stages) > 1:
                    text += " (consumer " + _fmt_mib(stages[-1] / 1024) + ")"
            if c["role"] == "peer":
                r = _headline_ratio(doc, task, c["name"])
                if r is not None:
                    text += f" · sluice/this ×{r:.2f}"
            res = (c.get("runs") or [{}])[0].get("result") or {}
            if "fetch_ratio" in res:  # bench/w3.py's bytes-fetched cell
                text += (f" · fetched {res['fetched_bytes'] / 2**20:.1f} MiB / needed "
                         f"{res['needed_bytes'] / 2**20:.1f} MiB = ×{res['fetch_ratio']:.3f}")
            if c.get("error"):
                text += "  ✗ " + c["error"][:60]
            ax.text(wall + 0.01 * xmax, y, text, va="center", fontsize=8)
        styles = ["--", ":", "-.", (0, (5, 1, 1, 1)), (0, (1, 3))]
        handles = []
        for j, f in enumerate(floors):
            label = f"floor: {f['name']} = {_fmt_s(f['value_s'])}"
            if task in THROUGHPUT_TASKS and f.get("gbps"):
                label += f" ({f['gbps']:.1f} GB/s)"
            h = ax.axvline(f["value_s"], color="#333", linestyle=styles[j % len(styles)],
                           linewidth=1.0, label=label)
            handles.append(h)
        if handles:
            ax.legend(handles=handles, loc="upper right", fontsize=7, framealpha=0.9)
        ax.set_yticks([y for y, _ in labels])
        ax.set_yticklabels([n for _, n in labels], fontsize=8.5)
        ax.set_xlim(0, xmax * 2.1)
        ax.set_ylim(-0.6, len(bars) - 0.4 + 0.35 * max(len(floors), 1))
        title = titles.get(task, task)
        head = best_peer_ratio(doc, task)
        if head:
            peer = head[1]["name"] if len(head[1]["name"]) <= 32 else head[1]["name"][:31] + "…"
            title += f"  —  sluice / fastest peer: ×{head[2]:.2f} (vs {peer})"
        ax.set_title(title, fontsize=10, loc="left")
        ax.set_xlabel("seconds (median wall time per process; lower is better)", fontsize=8)
        ax.grid(axis="x", alpha=0.3)

    d = doc["data"]
    rounds = doc["method"]["rounds"]
    title = (f"{doc['workload'].upper()} · {d['rows']:,} rows ({d['table_bytes'] / 1e9:.2f} GB) · "
             f"median of {rounds} · page cache warm · {doc['date']} · "
             f"{doc['machine'].get('cores')} cores")
    fig.suptitle(title, fontsize=11, x=0.01, y=0.995, ha="left")
    legend = [Patch(color=COLORS["sluice"], label="sluice: timed work"),
              Patch(color=COLORS["peer"], label="peer: timed work"),
              Patch(facecolor="#999", alpha=0.45, hatch="///", label="checksum pass"),
              Patch(facecolor="#999", alpha=0.2, label="start-up, imports, teardown")]
    top = 1 - 0.75 / height
    fig.legend(handles=legend, loc="upper left", bbox_to_anchor=(0.01, top + 0.3 / height),
               fontsize=7.5, ncol=4, frameon=False)
    bottom = 0.0
    if doc.get("notes"):
        import textwrap
        note = textwrap.fill("Note: " + " | ".join(doc["notes"]), 180)
        bottom = (0.2 + 0.14 * note.count("\n")) / height
        fig.text(0.01, 0.005, note, fontsize=7, color="#a00", va="bottom")
    fig.tight_layout(rect=(0, bottom, 1, top))
    fig.savefig(png, dpi=110)
    plt.close(fig)


def table(doc: dict) -> str:
    lines = []
    d = doc["data"]
    lines.append(f"{doc['workload']}: {d['rows']:,} rows, median of {doc['method']['rounds']}, "
                 "page cache warm")
    for n in doc.get("notes", []):
        lines.append(f"  note: {n}")
    task = None
    for c in doc["cells"]:
        if c["task"] != task:
            task = c["task"]
            lines.append("")
            lines.append(TASK_TITLES.get(doc["workload"], {}).get(task, task))
            lines.append(f"  {'cell':48} {'role':6} {'wall':>9} {'work':>9} {'GB/s':>6} "
                         f"{'RSS MiB':>8} {'anon MiB':>8} {'sluice/this':>11}")
        if c.get("skipped"):
            lines.append(f"  {c['name'][:48]:48} {c['role'][:6]:6} skipped: {c['skipped'][:90]}")
            continue
        r = _headline_ratio(doc, task, c["name"]) if c["role"] == "peer" else None
        if c["role"] == "floor":
            r = _headline_ratio(doc, task, c["name"], "wall_vs_floor")
        rss = c.get("peak_rss_mb")
        anon = "-" if c.get("peak_rss_anon_mb") is None else f"{c['peak_rss_anon_mb']:.0f}"
        lines.append(f"  {c['name'][:48]:48} {c['role'][:6]:6} {_fmt_s(c.get('median_wall_s')):>9} "
                     f"{_fmt_s(c.get('median_load_s')):>9} "
                     f"{'-' if c.get('gbps') is None else format(c['gbps'], '.2f'):>6} "
                     f"{'-' if rss is None else f'{rss:.0f}':>8} "
                     f"{anon:>8} "
                     f"{'-' if r is None else f'{r:.2f}':>11}"
                     + (f"  RSS/df {c['rss_over_df']:.2f}" if c.get("rss_over_df") else "")
                     + (f" (read +{c['read_rss_over_df']:.2f})"
                        if c.get("read_rss_over_df") is not None else "")
                     + (f"  ERROR {c['error'][:80]}" if c.get("error") else ""))
    lines.append("")
    for c in doc["cells"]:  # W3 bytes-fetched cells (bench/w3.py): the proxy's count
        res = (c.get("runs") or [{}])[0].get("result") or {}
        if "fetch_ratio" in res:
            lines.append(f"{c['task']}: bytes fetched {res['fetched_bytes']:,} in "
                         f"{res['requests']} requests / needed {res['needed_bytes']:,} (column "
                         f"chunks {res['column_chunk_bytes']:,} + footer {res['footer_bytes']:,})"
                         f" = {res['fetch_ratio']:.3f}")
    for task in dict.fromkeys(c["task"] for c in doc["cells"]):
        head = best_peer_ratio(doc, task)
        if head:
            lines.append(f"{task}: {head[0]['name']} / fastest peer ({head[1]['name']}) = "
                         f"{head[2]:.2f} on wall time")
            loads = [c for c in doc["cells"] if c["task"] == task and c["role"] == "peer"
                     and c.get("median_load_s") and c.get("group", "") == head[0].get("group", "")]
            if head[0].get("median_load_s") and loads:
                best = min(loads, key=lambda c: c["median_load_s"])
                lines.append(f"{' ' * len(task)}  on work (imports excluded): / {best['name']} = "
                             f"{head[0]['median_load_s'] / best['median_load_s']:.2f}")
    return "\n".join(lines)


def main(argv) -> int:
    if len(argv) != 1:
        print("usage: report.py RESULT.json", file=sys.stderr)
        return 2
    with open(argv[0]) as f:
        doc = json.load(f)
    png = os.path.splitext(argv[0])[0] + ".png"
    chart(doc, png)
    print(table(doc))
    print(f"\nwrote {png}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
