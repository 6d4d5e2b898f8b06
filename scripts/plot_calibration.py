#!/usr/bin/python3
"""Plots every fit of a `chunkflow calibrate` file: measured points and the fitted curve, one panel
per fit, with R^2 and the max relative residual in the panel title.

Usage: /usr/bin/python3 scripts/plot_calibration.py CALIBRATION.json OUT.png [TITLE]

Reads only the calibration JSON (fits[].points hold x, measured and fitted; parameters the curve).
Panels: transfers and the collective as time against bytes (log-log, the alpha + bytes/beta curve);
couplings as time against bytes; compute slowdowns as concurrent against alone time with
y = (1+s) x; GEMM as efficiency against tokens m per weight shape (the interpolated table);
attention as time against FLOPs. Data whose provenance says "synthetic" is labelled SYNTHETIC.
Exit code 2 on bad input.
"""
import sys

import numpy as np

from _plotutil import fail, is_synthetic, load_json, plt, save


def transfer_curve(p, x):
    a, b = p["alpha_s"], p["beta_bytes_per_s"]
    y = a + x / b
    if "break_bytes" in p:
        small = x < p["break_bytes"]
        # An infinite small-copy rate (a constant time below the break) is written as null in JSON.
        small_beta = p["small_beta_bytes_per_s"]
        y[small] = p["small_alpha_s"] + (0.0 if small_beta is None else x[small] / small_beta)
    return y


def panel(ax, fit, tables):
    pts = fit.get("points", [])
    if not pts:
        ax.set_visible(False)
        return
    x = np.array([q["x"] for q in pts], dtype=float)
    y = np.array([q["measured"] for q in pts], dtype=float)
    yf = np.array([q["fitted"] for q in pts], dtype=float)
    name, p = fit["name"], fit.get("parameters", {})
    r2 = fit.get("r_squared")
    quality = f"R²={r2:.5f}" if r2 is not None else "R²=n/a"
    ax.set_title(f"{name}\n{quality}, max rel. residual {100 * fit['max_relative_residual']:.2f} %", fontsize=9)
    if name == "gemm":
        shapes = sorted({(q["k"], q["n"]) for q in pts})
        for i, (k, n) in enumerate(shapes):
            sel = [q for q in pts if (q["k"], q["n"]) == (k, n)]
            ax.scatter([q["m"] for q in sel], [q["efficiency"] for q in sel], s=14, color=f"C{i % 10}")
            t = next((t for t in tables if t["k"] == k and t["n"] == n), None)
            if t:
                ax.plot(t["m"], t["efficiency"], lw=1, color=f"C{i % 10}", label=f"k×n {int(k)}×{int(n)} (table)")
        ax.axhline(p["eta_comp"], color="k", ls="--", lw=1, label=f"η_comp {p['eta_comp']:.3f}")
        ax.set_xlabel("tokens m")
        ax.set_ylabel("efficiency (achieved / peak)")
        ax.legend(fontsize=6, ncol=2)
        return
    if name == "gemm_table_leave_one_out":
        ax.scatter(x, y, s=14, label="measured")
        ax.scatter(x, yf, s=14, marker="x", label="interpolated from neighbours")
        ax.set_xlabel("tokens m")
        ax.set_ylabel("efficiency")
        ax.legend(fontsize=7)
        return
    ax.scatter(x, y, s=14, label="measured", zorder=3)
    if name in ("h2d", "d2h", "collective"):
        xs = np.geomspace(x.min(), x.max(), 200)
        ax.plot(xs, transfer_curve(p, xs), color="C1", label="fit")
        ax.set_xscale("log")
        ax.set_yscale("log")
        beta = p["beta_bytes_per_s"] / 1e9
        ax.text(0.97, 0.05, f"α={p['alpha_s'] * 1e6:.2f} µs, β={beta:.2f} GB/s", transform=ax.transAxes, fontsize=7, ha="right")
    elif name.startswith("compute_slowdown"):
        xs = np.linspace(0, x.max(), 50)
        s = p["slowdown"]
        ax.plot(xs, (1 + s) * xs, color="C1", label=f"(1+{s:.3f})·alone")
        ax.plot(xs, xs, color="0.6", ls=":", label="y = x")
        ax.set_xlabel("alone time (s)")
    elif name == "attention":
        xs = np.linspace(0, x.max(), 50)
        order = np.argsort(x)
        ax.plot(x[order], yf[order], color="C1", label=f"η_attn {p['eta_attn']:.3f}")
    else:
        order = np.argsort(x)
        ax.plot(x[order], yf[order], color="C1", label="fit")
        if name.endswith("_coupling"):
            ax.set_xscale("log")
            ax.set_yscale("log")
            ax.text(0.97, 0.05, f"retained fraction {p['retained_fraction']:.3f}", transform=ax.transAxes, fontsize=7, ha="right")
    if not name.startswith("compute_slowdown"):
        ax.set_xlabel(fit.get("x_name", "x"))
    ax.set_ylabel(fit.get("y_name", "y"))
    ax.legend(fontsize=7)


def main():
    if len(sys.argv) not in (3, 4):
        fail("usage: plot_calibration.py CALIBRATION.json OUT.png [TITLE]")
    cal = load_json(sys.argv[1])
    fits = cal.get("fits")
    if not isinstance(fits, list) or not fits:
        fail(f"{sys.argv[1]}: /fits: expected a non-empty array (a file written by chunkflow calibrate)")
    cols = 3
    rows = (len(fits) + cols - 1) // cols
    fig, axes = plt.subplots(rows, cols, figsize=(5 * cols, 3.8 * rows), squeeze=False)
    for ax, fit in zip(axes.flat, fits):
        panel(ax, fit, cal.get("gemm_tables", []))
    for ax in list(axes.flat)[len(fits):]:
        ax.set_visible(False)
    title = sys.argv[3] if len(sys.argv) == 4 else f"calibration of {cal.get('node_id', '?')}"
    if is_synthetic(cal.get("sources")):
        title = "SYNTHETIC DATA (not a measurement): " + title
    fig.suptitle(title, fontsize=12, color="C3" if "SYNTHETIC" in title else "k")
    fig.tight_layout()
    save(fig, sys.argv[2])


if __name__ == "__main__":
    main()
