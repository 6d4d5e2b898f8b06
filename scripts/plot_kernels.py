#!/usr/bin/python3
"""Plots `chunkflow validate --kernels` output: predicted against measured time per timed kernel on
log-log axes, y = x with ±20 % bands, one colour per kind and pricing (GEMM, attention FA3 / FA2,
elementwise by access class); points outside their tolerance are ringed in red.

Usage: /usr/bin/python3 scripts/plot_kernels.py KERNELS_CHECK.json OUT.png [TITLE]

Reads the JSON of `chunkflow validate --kernels FILE --json` / `--out` (points[].kind, priced_as,
measured_s, predicted_s, within; gpu_name, node). Exit code 2 on bad input.
"""
import sys

import numpy as np

from _plotutil import fail, load_json, plt, save


def main():
    if len(sys.argv) not in (3, 4):
        fail("usage: plot_kernels.py KERNELS_CHECK.json OUT.png [TITLE]")
    k = load_json(sys.argv[1])
    points = k.get("points") if isinstance(k, dict) else None
    if not isinstance(points, list) or not points:
        fail(f"{sys.argv[1]}: /points: expected a non-empty array (chunkflow validate --kernels --json)")
    try:
        us = [(p["measured_s"] * 1e6, p["predicted_s"] * 1e6) for p in points]
        groups = sorted({p["kind"] if p["kind"] == "gemm" else f"{p['kind']} {p['priced_as']}" for p in points})
    except (KeyError, TypeError) as e:
        fail(f"{sys.argv[1]}: /points: each point needs kind, priced_as, measured_s, predicted_s ({e})")
    fig, ax = plt.subplots(figsize=(6.5, 6))
    lo = min(min(m, p) for m, p in us) / 1.5
    hi = max(max(m, p) for m, p in us) * 1.5
    xs = np.geomspace(lo, hi, 50)
    ax.plot(xs, xs, color="k", lw=1, label="y = x")
    ax.fill_between(xs, xs / 1.2, 1.2 * xs, color="C2", alpha=0.15, label="±20 %")
    for i, g in enumerate(groups):
        sel = [p for p in points if (p["kind"] if p["kind"] == "gemm" else f"{p['kind']} {p['priced_as']}") == g]
        ax.scatter([p["measured_s"] * 1e6 for p in sel], [p["predicted_s"] * 1e6 for p in sel], color=f"C{i}", s=18,
                   label=f"{g} ({len(sel)})")
    outside = [p for p in points if not p.get("within", True)]
    if outside:
        ax.scatter([p["measured_s"] * 1e6 for p in outside], [p["predicted_s"] * 1e6 for p in outside], s=80,
                   facecolors="none", edgecolors="red", label=f"outside tolerance ({len(outside)})")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(lo, hi)
    ax.set_ylim(lo, hi)
    ax.set_xlabel("measured time per call (µs)")
    ax.set_ylabel("predicted time per call (µs)")
    ax.legend(fontsize=7, loc="upper left")
    title = sys.argv[3] if len(sys.argv) == 4 else \
        f"kernels on {k.get('gpu_name') or 'an unnamed GPU'}, priced on {k.get('node', '?')}"
    within = sum(1 for p in points if p.get("within", True))
    ax.set_title(f"{title}\n{within} of {len(points)} within tolerance", fontsize=10)
    save(fig, sys.argv[2])


if __name__ == "__main__":
    main()
