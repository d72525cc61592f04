#!/usr/bin/env python3
"""Draws the docs' diagrams from `build/examples/diagrams FILE.json`: masks, the sinusoid, schedules.

    scripts/plot_diagrams.py DIAGRAMS.json [--images docs/images]

Writes masks.png (the PyTorch note's batch: padding mask, look-ahead mask, their combination for
two rows, and the cross-attention mask), sinusoid.png (PositionalEncoding's table as a heatmap and
four of its columns as curves) and schedules.png (the learning rate of the examples' schedules at
every step). Every number comes from the JSON, which ctrax's own layers and schedules computed.
Needs Debian's python3-matplotlib.
"""
import argparse
import json
import os


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("diagrams")
    parser.add_argument("--images", default="docs/images")
    args = parser.parse_args()
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    d = json.load(open(args.diagrams, encoding="utf-8"))
    m = d["masks"]

    # Masks: white = may attend (true), black = masked (false).
    panels = [("padding mask (B, L):\nrow b, key j", m["padding"], "key j", "sequence b"),
              ("look-ahead mask (L, L)", m["causal"], "key j", "query i"),
              ("combined, sequence 1\n(5 tokens)", m["combined"][1], "key j", "query i"),
              ("combined, sequence 3\n(4 tokens)", m["combined"][3], "key j", "query i"),
              ("cross-attention, sequence 0\n(12 target × 10 source)", m["cross"][0], "source key j", "target query i")]
    fig, axes = plt.subplots(1, len(panels), figsize=(3.0 * len(panels), 3.4))
    for ax, (title, grid, xl, yl) in zip(axes, panels):
        ax.imshow(grid, cmap="gray", vmin=0, vmax=1)
        ax.set_title(title, fontsize=9)
        ax.set_xlabel(xl, fontsize=8)
        ax.set_ylabel(yl, fontsize=8)
        ax.set_xticks(range(len(grid[0])))
        ax.set_yticks(range(len(grid)))
        ax.tick_params(labelsize=6)
    fig.suptitle("masks of the PyTorch note's batch (white: may attend; black: masked)", fontsize=10)
    fig.tight_layout()
    out = os.path.join(args.images, "masks.png")
    fig.savefig(out, dpi=100)
    print(f"wrote {out}")

    # The sinusoid table.
    table = d["sinusoid"]["table"]
    fig, (a, b) = plt.subplots(1, 2, figsize=(11, 3.8))
    im = a.imshow(table, cmap="RdBu", vmin=-1, vmax=1, aspect="auto")
    a.set_xlabel("feature (2k: sin, 2k+1: cos)")
    a.set_ylabel("position")
    a.set_title(f"PositionalEncoding, d_model {d['sinusoid']['d_model']}", fontsize=10)
    fig.colorbar(im, ax=a)
    # Features 2k and 2k+1 are one pair: the sin and cos of one frequency ω_k.
    for col in (0, 1, 20, 60):
        b.plot([row[col] for row in table], label=f"feature {col}: {'sin' if col % 2 == 0 else 'cos'}, pair {col // 2}")
    b.set_xlabel("position")
    b.set_title("a pair's sin and cos share a frequency; later pairs are slower", fontsize=10)
    b.legend(fontsize=8)
    fig.tight_layout()
    out = os.path.join(args.images, "sinusoid.png")
    fig.savefig(out, dpi=100)
    print(f"wrote {out}")

    # The schedules.
    # Schedules over the same steps share a panel (lm's two), each other one has its own.
    schedules = d["schedules"]
    panels = []
    for s in schedules:
        same = [p for p in panels if len(p[0]["lr"]) == len(s["lr"])]
        if same:
            same[0].append(s)
        else:
            panels.append([s])
    fig, axes = plt.subplots(1, len(panels), figsize=(6 * len(panels), 4.6), squeeze=False)
    for ax, group in zip(axes[0], panels):
        for s in group:
            ax.plot(range(1, len(s["lr"]) + 1), s["lr"], label=f"{s['name']} — {s['used_by']}")
        ax.set_xlabel("step", fontsize=11)
        ax.set_ylabel("learning rate", fontsize=11)
        ax.ticklabel_format(axis="y", style="sci", scilimits=(0, 0))
        ax.legend(fontsize=9, loc="upper center", bbox_to_anchor=(0.5, -0.18))   # below: the curves stay clear
    fig.tight_layout()
    out = os.path.join(args.images, "schedules.png")
    fig.savefig(out, dpi=100)
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
