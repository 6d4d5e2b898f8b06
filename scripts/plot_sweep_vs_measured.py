#!/usr/bin/python3
"""Plots a chunk-size sweep from simulation (chunkflow sweep's CSV) with measured points overlaid:
step time against chunk size for chunkflow, one line per resident fraction; measured runs as
large markers in the same colour (matched by resident fraction), layerwise and no-offload as
horizontal references.

Usage: /usr/bin/python3 scripts/plot_sweep_vs_measured.py SWEEP.csv VALIDATE.json OUT.png [TITLE]

VALIDATE.json is `chunkflow validate --json` output over the measured runs of the same scenario
(runs[].policy, chunk_mib, resident_fraction, measured_step_time_s). Measured runs whose
provenance says "synthetic" are labelled SYNTHETIC. Exit code 2 on bad input.
"""
import csv
import sys

from _plotutil import fail, is_synthetic, load_json, plt, save


def main():
    if len(sys.argv) not in (4, 5):
        fail("usage: plot_sweep_vs_measured.py SWEEP.csv VALIDATE.json OUT.png [TITLE]")
    try:
        with open(sys.argv[1], newline="") as f:
            rows = list(csv.DictReader(f))
    except OSError as e:
        fail(f"{sys.argv[1]}: {e}")
    if not rows or "chunk_mib" not in rows[0]:
        fail(f"{sys.argv[1]}: expected the CSV of chunkflow sweep")
    v = load_json(sys.argv[2])
    runs = v.get("runs", [])
    fig, ax = plt.subplots(figsize=(8, 5.5))
    fractions = sorted({(float(r["resident_fraction"]), r["resident_fraction_auto"] == "1") for r in rows
                        if r["policy"] == "chunkflow"})
    color_of = {}
    for i, (frac, auto) in enumerate(fractions):
        sel = sorted((float(r["chunk_mib"]), float(r["step_time_s"]) * 1e3) for r in rows
                     if r["policy"] == "chunkflow" and float(r["resident_fraction"]) == frac
                     and (r["resident_fraction_auto"] == "1") == auto)
        color_of[round(frac, 6)] = f"C{i % 10}"
        ax.plot([s[0] for s in sel], [s[1] for s in sel], color=f"C{i % 10}", marker=".",
                label=f"simulated, R={frac:.2f}" + (" (auto)" if auto else ""))
    for r in rows:
        if r["policy"] in ("no-offload",):
            ax.axhline(float(r["step_time_s"]) * 1e3, color="k", ls=":", lw=1, label="simulated no-offload")
    measured = [r for r in runs if r.get("policy") == "chunkflow" and r.get("chunk_mib", 0) > 0]
    for r in measured:
        try:
            frac = round(float(r.get("resident_fraction", "nan")), 6)
        except ValueError:
            frac = None
        ax.scatter([r["chunk_mib"]], [r["measured_step_time_s"] * 1e3], s=90, marker="D", edgecolor="k",
                   color=color_of.get(frac, "0.3"), zorder=5)
    if measured:
        ax.scatter([], [], s=90, marker="D", edgecolor="k", color="0.7", label="measured (colour = R)")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("chunk size (MiB)")
    ax.set_ylabel("step time (ms)")
    title = sys.argv[4] if len(sys.argv) == 5 else "chunk-size sweep: simulation with measured points"
    if is_synthetic(runs, title):
        title = "SYNTHETIC DATA (measured points are not measurements): " + title
    ax.set_title(title, fontsize=9, color="C3" if title.startswith("SYNTHETIC") else "k")
    handles, labels = ax.get_legend_handles_labels()
    seen = {}
    for h, l in zip(handles, labels):
        seen.setdefault(l, h)
    ax.legend(seen.values(), seen.keys(), fontsize=7)
    fig.tight_layout()
    save(fig, sys.argv[3])


if __name__ == "__main__":
    main()
