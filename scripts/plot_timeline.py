#!/usr/bin/python3
"""Plots a predicted and a measured timeline of the same StepPlan as a Gantt chart: per rank, the
lanes compute / h2d / comm of the prediction above those of the measurement, ops coloured by kind
and aligned by op id (a faint line joins the start of each compute op in both).

Usage: /usr/bin/python3 scripts/plot_timeline.py PREDICTED.json MEASURED.json OUT.png [--step S] [--title T]

PREDICTED and MEASURED are Chrome traces written by write_chrome_trace (chunkflow simulate --trace,
chunkflow-hw run --trace). --step S draws only the ops of denoising step S (default: the last
step, the one `chunkflow compare` summarizes). Traces whose context says "synthetic" are labelled
SYNTHETIC. Exit code 2 on bad input.
"""
import sys

from _plotutil import fail, is_synthetic, load_json, plt, save

LANES = ["compute", "h2d", "comm"]
COLORS = {"compute": "C0", "h2d": "C1", "collective": "C2"}


def read_ops(path):
    t = load_json(path)
    if "traceEvents" not in t:
        fail(f"{path}: /traceEvents: missing (not a Chrome trace)")
    ops = {}
    for e in t["traceEvents"]:
        if e.get("ph") != "X" or e.get("cat") not in COLORS:
            continue
        a = e.get("args", {})
        start = a.get("start_s", e["ts"] * 1e-6)
        end = a.get("end_s", (e["ts"] + e["dur"]) * 1e-6)
        ops[a.get("op_id", len(ops))] = {"name": e["name"], "kind": e["cat"], "rank": e["pid"], "lane": e["tid"],
                                          "start": start, "end": end, "step": a.get("step", 0)}
    if not ops:
        fail(f"{path}: no op events")
    return t, ops


def main():
    args = sys.argv[1:]
    step, title = None, None
    if "--step" in args:
        i = args.index("--step")
        step = int(args[i + 1])
        del args[i:i + 2]
    if "--title" in args:
        i = args.index("--title")
        title = args[i + 1]
        del args[i:i + 2]
    if len(args) != 3:
        fail("usage: plot_timeline.py PREDICTED.json MEASURED.json OUT.png [--step S] [--title T]")
    pt, pred = read_ops(args[0])
    mt, meas = read_ops(args[1])
    if step is None:
        step = max(o["step"] for o in meas.values())
    pred = {k: o for k, o in pred.items() if o["step"] == step}
    meas = {k: o for k, o in meas.items() if o["step"] == step}
    # Both from the step's first start, so the two rows share an origin.
    t0p = min(o["start"] for o in pred.values())
    t0m = min(o["start"] for o in meas.values())
    ranks = sorted({o["rank"] for o in pred.values()} | {o["rank"] for o in meas.values()})
    rows = []  # (label, source, rank, lane)
    for r in ranks:
        for src in ("predicted", "measured"):
            for lane in range(len(LANES)):
                rows.append((f"rank {r} {src[:4]}. {LANES[lane]}", src, r, lane))
    y_of = {(src, r, lane): len(rows) - 1 - i for i, (_, src, r, lane) in enumerate(rows)}
    fig, ax = plt.subplots(figsize=(14, 0.45 * len(rows) + 2))
    for src, ops, t0 in (("predicted", pred, t0p), ("measured", meas, t0m)):
        for o in ops.values():
            y = y_of[(src, o["rank"], o["lane"])]
            ax.barh(y, (o["end"] - o["start"]) * 1e3, left=(o["start"] - t0) * 1e3, height=0.8,
                    color=COLORS[o["kind"]], alpha=0.85 if src == "predicted" else 0.6, edgecolor="k", linewidth=0.2)
    for k, o in pred.items():  # op-id alignment of compute ops
        m = meas.get(k)
        if m is None or o["kind"] != "compute":
            continue
        ax.plot([(o["start"] - t0p) * 1e3, (m["start"] - t0m) * 1e3],
                [y_of[("predicted", o["rank"], o["lane"])] - 0.4, y_of[("measured", m["rank"], m["lane"])] + 0.4],
                color="0.5", lw=0.3, alpha=0.5)
    ax.set_yticks(range(len(rows)))
    ax.set_yticklabels([r[0] for r in reversed(rows)], fontsize=8)
    ax.set_xlabel(f"time from the start of step {step} (ms)")
    from matplotlib.patches import Patch
    ax.legend(handles=[Patch(color=c, label=k) for k, c in COLORS.items()], loc="upper right", fontsize=8)
    head = title or "predicted (upper rows) against measured (lower rows), aligned by op id"
    if is_synthetic(pt.get("context"), mt.get("context"), title):
        head = "SYNTHETIC DATA (not a measurement): " + head
    ax.set_title(head, color="C3" if head.startswith("SYNTHETIC") else "k")
    fig.tight_layout()
    save(fig, args[2])


if __name__ == "__main__":
    main()
