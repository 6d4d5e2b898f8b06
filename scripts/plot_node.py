#!/usr/bin/python3
"""Draws a node's topology from `chunkflow node show ID --json`: vertices in rows by kind (host
memory, CPU sockets, host bridges, PCIe switches, GPUs, NVSwitch), links coloured by kind (PCIe,
NVLink, memory, inter-socket) and labelled with their per-direction capacity in GB/s.

Usage: /usr/bin/python3 scripts/plot_node.py NODE.json OUT.png

Exit code 2 on bad input.
"""
import sys

from _plotutil import fail, load_json, plt, save

ROWS = ["host_memory", "cpu", "host_bridge", "pcie_switch", "nic", "gpu", "nvswitch"]
COLOURS = {"pcie": "tab:blue", "nvlink": "tab:green", "memory": "tab:purple", "inter_socket": "tab:red"}


def main():
    if len(sys.argv) != 3:
        fail("usage: plot_node.py NODE.json OUT.png")
    node = load_json(sys.argv[1])
    try:
        vertices = node["vertices"]
        links = node["links"]
        title = f"{node['id']}: {node['gpu']['count']} x {node['gpu']['id']}"
    except (KeyError, TypeError) as e:
        fail(f"{sys.argv[1]}: not the output of chunkflow node show --json ({e})")
    by_row = {}
    for v in vertices:
        by_row.setdefault(v["kind"], []).append(v["name"])
    pos = {}
    for r, kind in enumerate(k for k in ROWS if k in by_row):
        names = by_row[kind]
        for i, name in enumerate(names):
            pos[name] = ((i + 1) / (len(names) + 1), -r)
    fig, ax = plt.subplots(figsize=(max(8, 1.1 * len(by_row.get("gpu", []))), 1.4 * len(by_row) + 1))
    for l in links:
        if l["a"] not in pos or l["b"] not in pos:
            fail(f"{sys.argv[1]}: link {l['name']} names an unknown vertex")
        (x1, y1), (x2, y2) = pos[l["a"]], pos[l["b"]]
        colour = COLOURS.get(l["kind"], "black")
        ax.plot([x1, x2], [y1, y2], color=colour, lw=1.5, alpha=0.7, zorder=1)
        rate = l["a_to_b_bytes_per_s"] / 1e9
        ax.text((x1 + x2) / 2, (y1 + y2) / 2, f"{rate:.0f}", fontsize=7, color=colour, ha="center", va="center",
                bbox=dict(facecolor="white", edgecolor="none", pad=0.5), zorder=2)
    for name, (x, y) in pos.items():
        ax.text(x, y, name, ha="center", va="center", fontsize=8, zorder=3,
                bbox=dict(boxstyle="round", facecolor="lightyellow", edgecolor="grey"))
    for kind, colour in COLOURS.items():
        ax.plot([], [], color=colour, label=kind)
    ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=8, title="link (GB/s per direction)")
    ax.set_title(title)
    ax.set_axis_off()
    save(fig, sys.argv[2])


if __name__ == "__main__":
    main()
