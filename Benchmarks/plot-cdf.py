#!/usr/bin/env python3
"""Draws the latency distribution of every prefs-bench row that has one, as a CDF against the
kernel floor of the same run.

    python3 Benchmarks/plot-cdf.py .build/prefs-bench.json Benchmarks/latency-cdf.png

prefs-bench --plot PATH runs it. Needs matplotlib (pip install matplotlib).
"""
import json
import sys

try:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
except ImportError:
    sys.exit("plot-cdf.py needs matplotlib: pip install matplotlib (or apt-get install python3-matplotlib)")

if len(sys.argv) != 3:
    sys.exit("usage: plot-cdf.py RESULTS.json OUTPUT.png")
with open(sys.argv[1]) as f:
    # The set → observer rows, their floors and peers (not the fsync pair, nor the scale rows).
    rows = [row for row in json.load(f) if row.get("cdf") and row.get("id", "").startswith(("3.", "5.libdconf", "5.full", "7.", "10."))]
if not rows:
    sys.exit(f"{sys.argv[1]} holds no latency distribution: run prefs-bench without --only, or with 3, 5 or 7")

fig, ax = plt.subplots(figsize=(10, 9), dpi=110)
for row in rows:
    points = row["cdf"]
    xs = [value / 1000 for value, _ in points]  # µs
    ys = [percentile for _, percentile in points]
    identity = row.get("id", "")
    floor = identity == "3.floor.kernel"  # the kernel floor: dashed black
    replace = ".floor." in identity and not floor  # the replace floors: dotted greys (dash-dot with a hop)
    ax.step(xs, ys, where="post", linewidth=2.5 if floor or replace else 1.5,
            color="black" if floor else ("darkgrey" if identity.startswith("7.") else "dimgrey") if replace else None,
            linestyle="--" if floor else ("-." if identity.endswith(".hop") or identity.endswith("held-nothing") else ":") if replace else "-", label=f'{row["group"]}: {row["name"]} (p50 {row["p50"]["value"]:g} {row["p50"]["unit"]})')
ax.set_xscale("log")
ax.set_xlabel("latency (µs, log scale)")
ax.set_ylabel("percentile")
ax.set_ylim(0, 100)
ax.grid(True, which="both", alpha=0.3)
ax.set_title("SharedPrefs: set in one process → observer in another, against the kernel floor")
ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(0, -0.12))
fig.tight_layout()
fig.savefig(sys.argv[2])
print(f"plot-cdf.py: wrote {sys.argv[2]}")
