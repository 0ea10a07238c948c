"""What the benchmarks that time calls themselves (filters.py,
nested_fields.py, partitioned_write.py; bench/run.py's cells use
harness.py) share: the timing loop, the machine record and the result
files (<stem>.json and a bar chart per panel, sluice's bars in blue)."""
from __future__ import annotations

import json
import os
import platform
import subprocess
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def timed(fn, repeat: int):
    """One warm-up call of fn, then `repeat` timed ones: (the times sorted,
    the last call's result)."""
    fn()
    times, result = [], None
    for _ in range(repeat):
        t0 = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - t0)
    times.sort()
    return times, result


def machine() -> dict:
    """Kernel, cores, Python, the peers' versions and the sluice commit."""
    import importlib.metadata as md
    commit = subprocess.run(["git", "-C", HERE, "rev-parse", "HEAD"], capture_output=True,
                            text=True).stdout.strip()
    return {"kernel": platform.release(), "cores": os.cpu_count(),
            "python": platform.python_version(),
            "versions": {p: md.version(p) for p in ("pyarrow", "polars", "duckdb")},
            "sluice_commit": commit}


def save(out: str, name: str, doc: dict, panels, figsize, suptitle: str = None) -> str:
    """Writes <out>/<doc's date>-<name>.json and, where matplotlib is, .png:
    one horizontal bar chart of median seconds per (title, result rows) of
    `panels`. Returns the stem."""
    os.makedirs(out, exist_ok=True)
    stem = os.path.join(out, f"{doc['date']}-{name}")
    with open(stem + ".json", "w") as f:
        json.dump(doc, f, indent=1)
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        fig, axes = plt.subplots(1, len(panels), figsize=figsize)
        for ax, (title, rows) in zip(axes, panels):
            ax.barh([r["tool"] for r in rows], [r["median_s"] for r in rows],
                    color=["#1f77b4" if r["tool"].startswith("sluice") else "#999999"
                           for r in rows])
            ax.set_title(title, fontsize=9)
            ax.set_xlabel("seconds (median)")
            ax.invert_yaxis()
        if suptitle is not None:
            fig.suptitle(suptitle, fontsize=10)
        fig.tight_layout()
        fig.savefig(stem + ".png", dpi=100)
    except ImportError:
        pass
    print(f"wrote {stem}.json")
    return stem
