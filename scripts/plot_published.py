#!/usr/bin/python3
"""Plots `chunkflow validate --published` output: predicted against published time per record on
log-log axes, with y = x and ±10 % bands; colour by GPU, marker by model; records used for fitting
drawn hollow. Peak-memory and bandwidth records are left out (other units).

Usage: /usr/bin/python3 scripts/plot_published.py PUBLISHED.json OUT.png

Reads records[].{id, gpu, model, unit, published, predicted, used_for_fitting} and time_all /
time_held_out. Exit code 2 on bad input.
"""
import sys

import numpy as np

from _plotutil import fail, load_json, plt, save

MARKERS = ["o", "s", "^", "D", "v", "P", "X", "*"]


def main():
    if len(sys.argv) != 3:
        fail("usage: plot_published.py PUBLISHED.json OUT.png")
    v = load_json(sys.argv[1])
    recs = v.get("records")
    if not isinstance(recs, list) or not recs:
        fail(f"{sys.argv[1]}: /records: expected a non-empty array (chunkflow validate --published --json)")
    recs = [r for r in recs if r.get("unit") == "s"]
    if not recs:
        fail(f"{sys.argv[1]}: /records: no time records")
    gpus = sorted({r["gpu"] for r in recs})
    models = sorted({r["model"] for r in recs})
    fig, ax = plt.subplots(figsize=(7.5, 7))
    lo = min(min(r["published"], r["predicted"]) for r in recs) / 1.5
    hi = max(max(r["published"], r["predicted"]) for r in recs) * 1.5
    xs = np.geomspace(lo, hi, 100)
    ax.plot(xs, xs, color="k", lw=1, label="y = x")
    ax.fill_between(xs, 0.9 * xs, 1.1 * xs, color="0.5", alpha=0.2, label="±10 %")
    for r in recs:
        c = f"C{gpus.index(r['gpu']) % 10}"
        m = MARKERS[models.index(r["model"]) % len(MARKERS)]
        ax.scatter([r["published"]], [r["predicted"]], marker=m, s=40,
                   facecolors="none" if r.get("used_for_fitting") else c, edgecolors=c)
    # Legends: colour = GPU, marker = model.
    for g in gpus:
        ax.scatter([], [], color=f"C{gpus.index(g) % 10}", marker="o", label=g)
    for mdl in models:
        ax.scatter([], [], color="0.3", marker=MARKERS[models.index(mdl) % len(MARKERS)], label=mdl)
    if any(r.get("used_for_fitting") for r in recs):
        ax.scatter([], [], facecolors="none", edgecolors="0.3", marker="o", label="used for fitting")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(lo, hi)
    ax.set_ylim(lo, hi)
    ax.set_xlabel("published (s)")
    ax.set_ylabel("predicted (s)")
    stats = v.get("time_held_out") or v.get("time_all") or {}
    title = "published records: predicted vs published"
    if stats:
        title += (f"\n{stats.get('records', 0)} held-out time records: mean |error| "
                  f"{100 * stats.get('mean_abs_error', 0):.1f} %, max {100 * stats.get('max_abs_error', 0):.1f} %")
    ax.set_title(title, fontsize=10)
    ax.legend(fontsize=7, loc="upper left")
    ax.grid(True, which="both", alpha=0.3)
    save(fig, sys.argv[2])


if __name__ == "__main__":
    main()
