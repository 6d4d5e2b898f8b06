#!/usr/bin/python3
"""Plots a `chunkflow sweep` CSV: step time and peak memory against chunk size and resident
fraction, one series per policy (and per resident fraction for chunkflow).

Usage: /usr/bin/python3 scripts/plot_sweep.py SWEEP.csv OUT.png

Reads only the CSV that `chunkflow sweep` writes (columns policy, chunk_mib, resident_fraction,
resident_fraction_auto, step_time_s, peak_memory_bytes, and fits when present: configurations
whose peak memory does not fit the GPU are drawn over in grey crosses). Writes OUT.png through a temporary file
so a failure leaves no partial image. Exit code 2 on bad input.
"""
import csv
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

GIB = 1024.0**3
REQUIRED = ["policy", "chunk_mib", "resident_fraction", "resident_fraction_auto", "step_time_s", "peak_memory_bytes"]


def read_rows(path):
    with open(path, newline="") as f:
        reader = csv.DictReader(f)
        missing = [c for c in REQUIRED if c not in (reader.fieldnames or [])]
        if missing:
            raise ValueError(f"{path}: missing columns {', '.join(missing)}")
        rows = []
        for i, r in enumerate(reader, start=2):
            try:
                rows.append({
                    "policy": r["policy"],
                    "chunk_mib": float(r["chunk_mib"]),
                    "resident": float(r["resident_fraction"]),
                    "auto": r["resident_fraction_auto"] == "1",
                    "step_ms": float(r["step_time_s"]) * 1e3,
                    "peak_gib": float(r["peak_memory_bytes"]) / GIB,
                    "scenario": r.get("scenario", ""),
                    "fits": r.get("fits", "1") != "0",
                })
            except ValueError as e:
                raise ValueError(f"{path}: line {i}: {e}") from None
    if not rows:
        raise ValueError(f"{path}: no rows")
    return rows


def main(argv):
    if len(argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    src, out = argv[1], argv[2]
    try:
        rows = read_rows(src)
    except (OSError, ValueError) as e:
        print(f"plot_sweep.py: error: {e}", file=sys.stderr)
        return 2

    fig, axes = plt.subplots(2, 2, figsize=(13, 8.5))
    (ax_t_c, ax_m_c), (ax_t_r, ax_m_r) = axes
    base = [r for r in rows if r["policy"] == "no-offload"]
    chunk = sorted([r for r in rows if r["policy"] == "chunkflow"], key=lambda r: r["chunk_mib"])
    layer = sorted([r for r in rows if r["policy"] == "layerwise"], key=lambda r: r["resident"])

    # Top row: against chunk size, one line per resident fraction (chunkflow); references as lines.
    series = {}
    for r in chunk:
        key = "auto" if r["auto"] else f"{r['resident']:.2f}"
        series.setdefault(key, []).append(r)
    cmap = plt.get_cmap("viridis")
    keys = sorted(series, key=lambda k: (k != "auto", k))
    for i, key in enumerate(keys):
        pts = series[key]
        label = (f"chunkflow R=auto ({pts[0]['resident']:.2f})" if key == "auto" else f"chunkflow R={key}")
        style = dict(marker="o", color="tab:red" if key == "auto" else cmap(i / max(1, len(keys))),
                     lw=2.2 if key == "auto" else 1.2)
        ax_t_c.plot([p["chunk_mib"] for p in pts], [p["step_ms"] for p in pts], label=label, **style)
        ax_m_c.plot([p["chunk_mib"] for p in pts], [p["peak_gib"] for p in pts], label=label, **style)
    for ax, key in ((ax_t_c, "step_ms"), (ax_m_c, "peak_gib")):
        if base:
            ax.axhline(base[0][key], color="black", ls="--", lw=1, label="no-offload")
        lw0 = [r for r in layer if r["resident"] == 0.0]
        if lw0:
            ax.axhline(lw0[0][key], color="tab:orange", ls=":", lw=1.5, label="layerwise R=0")
        if chunk:
            ax.set_xscale("log", base=2)
        ax.set_xlabel("chunk size (MiB)")
        ax.grid(True, alpha=0.3)
    ax_t_c.set_ylabel("step time (ms)")
    ax_m_c.set_ylabel("peak memory per GPU (GiB)")
    ax_t_c.set_title("step time against chunk size")
    ax_m_c.set_title("peak memory against chunk size")
    ax_t_c.legend(fontsize=7, ncol=2)

    # Bottom row: against resident fraction; chunkflow at its best chunk size per fraction.
    def best_by_fraction(rs):
        best = {}
        for r in rs:
            if r["auto"]:
                continue
            k = r["resident"]
            if k not in best or r["step_ms"] < best[k]["step_ms"]:
                best[k] = r
        return [best[k] for k in sorted(best)]

    for name, pts, color in (("layerwise", layer, "tab:orange"), ("chunkflow (best chunk)", best_by_fraction(chunk), "tab:blue")):
        if not pts:
            continue
        ax_t_r.plot([p["resident"] for p in pts], [p["step_ms"] for p in pts], marker="o", color=color, label=name)
        ax_m_r.plot([p["resident"] for p in pts], [p["peak_gib"] for p in pts], marker="o", color=color, label=name)
    for ax, key in ((ax_t_r, "step_ms"), (ax_m_r, "peak_gib")):
        if base:
            ax.axhline(base[0][key], color="black", ls="--", lw=1, label="no-offload")
        ax.set_xlabel("resident fraction")
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=8)
    # Configurations that do not fit the GPU: grey crosses over their points, and a grey
    # no-offload line when no-offload itself does not fit.
    unfit = [r for r in rows if not r["fits"]]
    for ax, key in ((ax_t_c, "step_ms"), (ax_m_c, "peak_gib")):
        pts = [r for r in unfit if r["policy"] == "chunkflow"]
        if pts:
            ax.scatter([p["chunk_mib"] for p in pts], [p[key] for p in pts], marker="x", s=60, color="0.55", zorder=4,
                       label="does not fit the GPU")
    for ax, key in ((ax_t_r, "step_ms"), (ax_m_r, "peak_gib")):
        pts = [r for r in unfit if r["policy"] != "no-offload" and not r["auto"]]
        if pts:
            ax.scatter([p["resident"] for p in pts], [p[key] for p in pts], marker="x", s=60, color="0.55", zorder=4,
                       label="does not fit the GPU")
    if base and not base[0]["fits"]:
        for ax in (ax_t_c, ax_m_c, ax_t_r, ax_m_r):
            for line in ax.get_lines():
                if line.get_label() == "no-offload":
                    line.set_color("0.6")
                    line.set_label("no-offload (does not fit the GPU)")
    ax_t_r.legend(fontsize=8)
    ax_m_r.legend(fontsize=8)
    ax_t_c.legend(fontsize=7, ncol=2)
    ax_t_r.set_ylabel("step time (ms)")
    ax_m_r.set_ylabel("peak memory per GPU (GiB)")
    ax_t_r.set_title("step time against resident fraction")
    ax_m_r.set_title("peak memory against resident fraction")

    scenario = rows[0]["scenario"]
    fig.suptitle(f"ChunkFlow sweep (simulated): {scenario}", fontsize=12)
    fig.tight_layout()
    tmp = f"{out}.tmp.{os.getpid()}.png"
    try:
        fig.savefig(tmp, dpi=110)
        os.replace(tmp, out)
    except OSError as e:
        print(f"plot_sweep.py: error: {out}: {e}", file=sys.stderr)
        return 1
    finally:  # no partial image, whatever stopped the write (an error, SIGINT)
        if os.path.exists(tmp):
            os.remove(tmp)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
