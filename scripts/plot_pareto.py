#!/usr/bin/python3
"""Plots `chunkflow tune` output: every simulated configuration's peak memory against step time,
coloured by policy (grey crosses: configurations whose peak memory does not fit the GPU, field
`fits`), the Pareto frontier as a line, the memory budget and the chosen configuration.

Usage: /usr/bin/python3 scripts/plot_pareto.py TUNE.json OUT.png [TITLE]

Reads tune.json (candidates[], frontier[], best, memory_budget_bytes). Exit code 2 on bad input.
"""
import sys

from _plotutil import fail, is_synthetic, load_json, plt, save

GIB = 1024.0**3


def main():
    if len(sys.argv) not in (3, 4):
        fail("usage: plot_pareto.py TUNE.json OUT.png [TITLE]")
    t = load_json(sys.argv[1])
    for key in ("candidates", "frontier", "best", "memory_budget_bytes"):
        if key not in t:
            fail(f"{sys.argv[1]}: /{key}: missing (chunkflow tune writes it)")
    fig, ax = plt.subplots(figsize=(8, 5.5))
    for i, policy in enumerate(sorted({c["policy"] for c in t["candidates"]})):
        sel = [c for c in t["candidates"] if c["policy"] == policy and c.get("fits", True)]
        ax.scatter([c["peak_memory_bytes"] / GIB for c in sel], [c["step_time_s"] * 1e3 for c in sel], s=14,
                   color=f"C{i}", alpha=0.6, label=policy)
    unfit = [c for c in t["candidates"] if not c.get("fits", True)]
    if unfit:
        ax.scatter([c["peak_memory_bytes"] / GIB for c in unfit], [c["step_time_s"] * 1e3 for c in unfit], s=24,
                   marker="x", color="0.6", label="does not fit the GPU")
    f = t["frontier"]
    ax.step([c["peak_memory_bytes"] / GIB for c in f], [c["step_time_s"] * 1e3 for c in f], where="post", color="k",
            lw=1.2, label="Pareto frontier")
    ax.axvline(t["memory_budget_bytes"] / GIB, color="C3", ls="--", label=f"budget {t['memory_budget_bytes'] / GIB:.1f} GiB")
    b = t["best"]
    desc = b["policy"] + (f", {b['chunk_bytes'] / 2**20:.0f} MiB" if b["policy"] == "chunkflow" else "") + \
        f", R={b['resident_fraction']:.2f}"
    ax.scatter([b["peak_memory_bytes"] / GIB], [b["step_time_s"] * 1e3], marker="*", s=250, color="gold", edgecolor="k",
               zorder=5, label=f"best: {desc}")
    ax.set_xlabel("peak GPU memory per GPU (GiB)")
    ax.set_ylabel("step time (ms)")
    scen = t.get("scenario", {})
    w, node = scen.get("workload", {}), scen.get("node", {})
    default = f"tune: {w.get('model', '?')} {w.get('height', '?')}x{w.get('width', '?')}x{w.get('frames', '?')}, " \
        f"Ulysses {w.get('ulysses_degree', '?')} on {node.get('id', '?')} (simulated" + \
        (", calibrated)" if scen.get("calibration_file") else ")")
    title = sys.argv[3] if len(sys.argv) == 4 else default
    if is_synthetic(title):
        title = "SYNTHETIC DATA: " + title
    ax.set_title(title, fontsize=10)
    ax.legend(fontsize=8)
    fig.tight_layout()
    save(fig, sys.argv[2])


if __name__ == "__main__":
    main()
