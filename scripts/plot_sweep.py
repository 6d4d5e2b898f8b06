#!/usr/bin/python3
"""Plots a `chunkflow sweep` CSV: step time and peak memory against chunk size and resident
fraction, one series per policy (and per resident fraction for chunkflow), and step time against
peak memory with the memory budgets of issue 8 (30, 50 and 70 % of no-offload's peak), each
policy's fastest configuration under each budget, and the lower bound of chunkflow's plans.

Usage: /usr/bin/python3 scripts/plot_sweep.py [--wait-for-go] SWEEP.csv OUT.png

--wait-for-go: `chunkflow sweep` starts this script before its sweep, so that importing matplotlib
(0.3-0.4 s) overlaps the sweep (sim/python_process.hpp). The script then ignores SIGINT until told
to draw (chunkflow handles a Ctrl-C during the sweep), imports, and reads one line from stdin: "go"
draws, anything else (end of file included: the sweep failed or was interrupted) exits 0 without
drawing; a missing matplotlib is reported (one line, exit 1) only on "go".

Reads only the CSV that `chunkflow sweep` writes (columns policy, chunk_mib, resident_fraction,
resident_fraction_auto, step_time_s, peak_memory_bytes; fits and bound_step_time_s when present: configurations
whose peak memory does not fit the GPU are drawn over in grey crosses). Writes OUT.png through a temporary file
so a failure leaves no partial image. Exit code 2 on bad input.
"""
import csv
import os
import signal
import sys

WAIT_FOR_GO = sys.argv[1:2] == ["--wait-for-go"]
if WAIT_FOR_GO:
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _terminated(signum, frame):
    raise SystemExit(128 + signum)  # unwinds through the finally that removes the temporary image


signal.signal(signal.SIGTERM, _terminated)

try:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FixedLocator, FuncFormatter, NullFormatter
    IMPORT_ERROR = None
except ImportError as e:
    plt, IMPORT_ERROR = None, e

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
                    "bound_ms": float(r["bound_step_time_s"]) * 1e3 if r.get("bound_step_time_s") else None,
                })
            except ValueError as e:
                raise ValueError(f"{path}: line {i}: {e}") from None
    if not rows:
        raise ValueError(f"{path}: no rows")
    return rows


BUDGET_FRACTIONS = (0.3, 0.5, 0.7)  # of no-offload's peak memory (issue 8 §3)
COLORS = {"no-offload": "black", "layerwise": "tab:orange", "layerwise-comm-aware": "tab:green", "chunkflow": "tab:blue"}


def plot_budgets(ax, rows):
    """Step time against peak memory: every configuration that fits the GPU, one colour per policy;
    dashed verticals at each budget (a fraction of no-offload's peak); per budget and policy the
    fastest configuration whose peak is within it (big markers, the issue's table read off the
    sweep); the lower bound of each chunkflow pick as a hollow marker (bound_step_time_s)."""
    fit = [r for r in rows if r["fits"]]
    base = [r for r in fit if r["policy"] == "no-offload"]
    for policy in sorted({r["policy"] for r in fit}, key=lambda p: list(COLORS).index(p) if p in COLORS else 9):
        pts = [r for r in fit if r["policy"] == policy]
        ax.scatter([p["peak_gib"] for p in pts], [p["step_ms"] for p in pts], s=14, alpha=0.45,
                   color=COLORS.get(policy, "tab:purple"), label=policy)
    if not base:
        ax.set_title("step time against peak memory (no no-offload row: no budgets)", y=1.0)
        return
    peak0 = base[0]["peak_gib"]
    marker = {"layerwise": "s", "layerwise-comm-aware": "^", "chunkflow": "D"}
    annotated = set()
    for frac in BUDGET_FRACTIONS:
        budget = frac * peak0
        ax.axvline(budget, color="0.4", ls="--", lw=1)
        ax.text(budget, 1.0, f" {frac:.0%} budget\n {budget:.1f} GiB", transform=ax.get_xaxis_transform(),
                va="top", fontsize=8, color="0.3")
        for policy in ("layerwise", "layerwise-comm-aware", "chunkflow"):
            under = [r for r in fit if r["policy"] == policy and r["peak_gib"] <= budget]
            if not under:
                continue
            # ties within 1e-6 relative go to the smaller peak, as `tune` breaks them
            fastest = min(r["step_ms"] for r in under)
            best = min((r for r in under if r["step_ms"] <= fastest * (1 + 1e-6)), key=lambda r: r["peak_gib"])
            ax.scatter([best["peak_gib"]], [best["step_ms"]], s=110 if policy == "layerwise" else 70, marker=marker[policy],
                       color=COLORS[policy], edgecolor="black", zorder=5)
            if policy == "chunkflow" and best["bound_ms"] and id(best) not in annotated:
                annotated.add(id(best))
                ax.scatter([best["peak_gib"]], [best["bound_ms"]], s=90, marker="D", facecolor="none",
                           edgecolor="tab:red", zorder=5)
                ax.annotate(f"{best['step_ms']:.0f} ms\n({best['step_ms'] / best['bound_ms']:.3f}x bound)",
                            (best["peak_gib"], best["step_ms"]), textcoords="offset points", xytext=(6, 6), fontsize=7)
    ax.scatter([], [], s=90, marker="D", facecolor="none", edgecolor="tab:red", label="bound of chunkflow's pick")
    for policy in ("layerwise", "layerwise-comm-aware", "chunkflow"):
        ax.scatter([], [], s=70, marker=marker[policy], color=COLORS[policy], edgecolor="black",
                   label=f"{policy}: fastest under a budget")
    ax.set_xlabel("peak memory per GPU (GiB)")
    ax.set_ylabel("step time (ms)")
    ax.set_title("step time against peak memory: the fastest plan of each policy under each budget", y=1.0)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8, loc="upper right")


def main(argv):
    if WAIT_FOR_GO:
        argv = argv[:1] + argv[2:]
    if len(argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    src, out = argv[1], argv[2]
    if IMPORT_ERROR is not None:
        if WAIT_FOR_GO and sys.stdin.readline().strip() != "go":
            return 0
        print(f"plot_sweep.py: error: matplotlib: {IMPORT_ERROR}", file=sys.stderr)
        return 1

    # The figure and its axes need no data: with --wait-for-go they are made while the sweep runs.
    fig = plt.figure(figsize=(13, 13))
    grid = fig.add_gridspec(3, 2, height_ratios=[1, 1, 1.15])
    ax_t_c, ax_m_c = fig.add_subplot(grid[0, 0]), fig.add_subplot(grid[0, 1])
    ax_t_r, ax_m_r = fig.add_subplot(grid[1, 0]), fig.add_subplot(grid[1, 1])
    ax_budget = fig.add_subplot(grid[2, :])
    if WAIT_FOR_GO:
        if sys.stdin.readline().strip() != "go":
            return 0
        signal.signal(signal.SIGINT, signal.default_int_handler)  # drawing now: a Ctrl-C stops it
    try:
        rows = read_rows(src)
    except (OSError, ValueError) as e:
        print(f"plot_sweep.py: error: {e}", file=sys.stderr)
        return 2
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
            # Plain numbers ("8", "256"), not matplotlib's log labels ("$2^{3}$"): mathtext's parser is
            # built on first use (≈ 9 % of the plot's instructions after the import, callgrind) and
            # MiB are read more easily as numbers. Ticks at the swept sizes while they fit.
            sizes = sorted({r["chunk_mib"] for r in chunk})
            if len(sizes) <= 12:
                ax.xaxis.set_major_locator(FixedLocator(sizes))
            ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
            ax.xaxis.set_minor_formatter(NullFormatter())
        ax.set_xlabel("chunk size (MiB)")
        ax.grid(True, alpha=0.3)
    ax_t_c.set_ylabel("step time (ms)")
    ax_m_c.set_ylabel("peak memory per GPU (GiB)")
    ax_t_c.set_title("step time against chunk size", y=1.0)
    ax_m_c.set_title("peak memory against chunk size", y=1.0)

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
    # The legends last, once each, with every labelled artist above (a second legend() replaces the
    # first, which would only have cost its making).
    ax_t_r.legend(fontsize=8)
    ax_m_r.legend(fontsize=8)
    ax_t_c.legend(fontsize=7, ncol=2)
    ax_t_r.set_ylabel("step time (ms)")
    ax_m_r.set_ylabel("peak memory per GPU (GiB)")
    ax_t_r.set_title("step time against resident fraction", y=1.0)
    ax_m_r.set_title("peak memory against resident fraction", y=1.0)

    plot_budgets(ax_budget, rows)

    scenario = rows[0]["scenario"]
    fig.suptitle(f"ChunkFlow sweep (simulated): {scenario}", fontsize=12)
    # Fixed margins for the fixed 13 x 13 in figure: tight_layout would cost a second text layout
    # of every tick label (≈ 0.15 s of a ≈ 0.75 s plot on this machine). The titles sit at y=1.0
    # (set_title above): with y left to matplotlib, every draw measures each axes' tick labels
    # again to lift its title over them (≈ 3 % of the plot's instructions after the import); their
    # ticks are below them, so the titles land at 1.0 either way (the main job's image is
    # byte-identical with and without). The PNG at zlib level 1 instead of Pillow's default 6:
    # ≈ 11 % of those instructions, for an image ≈ 8 % larger (the main job's: 224 → 242 kB).
    fig.subplots_adjust(left=0.065, right=0.985, bottom=0.04, top=0.94, hspace=0.3, wspace=0.18)
    tmp = f"{out}.tmp.{os.getpid()}.png"
    try:
        fig.savefig(tmp, dpi=110, pil_kwargs={"compress_level": 1})
        os.replace(tmp, out)
    except OSError as e:
        print(f"plot_sweep.py: error: {out}: {e}", file=sys.stderr)
        return 1
    finally:  # no partial image, whatever stopped the write (an error, SIGINT)
        if os.path.exists(tmp):
            os.remove(tmp)
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv))
    except KeyboardInterrupt:  # the temporary image is gone by now (main's finally)
        sys.exit(130)
