#!/usr/bin/python3
"""Plots `chunkflow validate` output: predicted against measured step time per run, with y = x and
±5 % bands; held-out runs as dots, runs used for fitting as crosses (excluded from the errors).

Usage: /usr/bin/python3 scripts/plot_validation.py VALIDATE.json OUT.png [TITLE]

Reads the JSON of `chunkflow validate --json` / `--out` (runs[].measured_step_time_s,
predicted_step_time_s, used_for_fitting, policy; mean_abs_error, max_abs_error). Runs whose
provenance says "synthetic" are labelled SYNTHETIC. Exit code 2 on bad input.
"""
import sys

import numpy as np

from _plotutil import fail, is_synthetic, load_json, plt, save


def main():
    if len(sys.argv) not in (3, 4):
        fail("usage: plot_validation.py VALIDATE.json OUT.png [TITLE]")
    v = load_json(sys.argv[1])
    runs = v.get("runs")
    if not isinstance(runs, list) or not runs:
        fail(f"{sys.argv[1]}: /runs: expected a non-empty array (chunkflow validate --json)")
    fig, ax = plt.subplots(figsize=(6.5, 6))
    hi = max(max(r["measured_step_time_s"], r["predicted_step_time_s"]) for r in runs) * 1e3 * 1.08
    xs = np.linspace(0, hi, 50)
    ax.plot(xs, xs, color="k", lw=1, label="y = x")
    ax.fill_between(xs, 0.95 * xs, 1.05 * xs, color="C2", alpha=0.15, label="±5 %")
    for i, policy in enumerate(sorted({r["policy"] for r in runs})):
        for fit, marker in ((False, "o"), (True, "x")):
            sel = [r for r in runs if r["policy"] == policy and r["used_for_fitting"] == fit]
            if sel:
                ax.scatter([r["measured_step_time_s"] * 1e3 for r in sel], [r["predicted_step_time_s"] * 1e3 for r in sel],
                           color=f"C{i}", marker=marker, s=30,
                           label=f"{policy}" + (" (used for fitting, excluded)" if fit else " (held out)"))
    ax.set_xlim(0, hi)
    ax.set_ylim(0, hi)
    ax.set_xlabel("measured step time (ms)")
    ax.set_ylabel("predicted step time (ms)")
    ax.legend(fontsize=7, loc="upper left")
    title = sys.argv[3] if len(sys.argv) == 4 else "prediction against measurement"
    title += f"\nheld out {v.get('held_out_runs', '?')}: mean |err| {100 * v['mean_abs_error']:.2f} %, " \
             f"max |err| {100 * v['max_abs_error']:.2f} %"
    if is_synthetic(runs, v.get("measured_dir"), title):
        title = "SYNTHETIC DATA (not a measurement)\n" + title
    ax.set_title(title, fontsize=10, color="C3" if title.startswith("SYNTHETIC") else "k")
    fig.tight_layout()
    save(fig, sys.argv[2])


if __name__ == "__main__":
    main()
