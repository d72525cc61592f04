#!/usr/bin/env python3
"""Draws an attention alignment (`translate align --json FILE`) as a heatmap.

    scripts/plot_alignment.py ALIGNMENT.json [--out docs/images/alignment.png]

Rows are the target pieces the decoder wrote (the last is EOS), columns the source pieces; a cell's
darkness is the weight α that target piece gave that source piece (each row sums to 1), as in the
figures of Bahdanau et al. (2015) and the attention notes. A Transformer's alignment has one map
per head of its last cross-attention ("heads"): their mean is drawn large, the heads beside it in
two rows, all on one colour scale.
Needs Debian's python3-matplotlib.
"""
import argparse
import json
import sys


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("alignment")
    parser.add_argument("--out", default="docs/images/alignment.png")
    args = parser.parse_args()
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    a = json.load(open(args.alignment, encoding="utf-8"))
    w, src, tgt = a["weights"], a["source"], a["target"]
    if not w or len(w) != len(tgt) or any(len(row) != len(src) for row in w):
        sys.exit(f"plot_alignment: {args.alignment}: weights must be {len(tgt)} rows of {len(src)}")
    heads = a.get("heads", [])
    cell = 0.38   # inches per row or column of the large map
    if heads:
        # The mean of the heads large, the heads in two rows beside it at half its size.
        cols = (len(heads) + 1) // 2
        fig = plt.figure(figsize=(cell * len(src) * (1 + cols / 2) + 2.6, cell * len(tgt) + 2.2),
                         layout="constrained")
        grid = fig.add_gridspec(2, 1 + cols, width_ratios=[2] + [1] * cols)
        panels = [(fig.add_subplot(grid[:, 0]), "mean of the heads", w, (True, True))]
        panels += [(fig.add_subplot(grid[h // cols, 1 + h % cols]), f"head {h + 1}", m,
                    (h // cols == 1 or h + cols >= len(heads), h % cols == 0))   # labels at the edges
                   for h, m in enumerate(heads)]
    else:
        fig = plt.figure(figsize=(cell * len(src) + 3.2, cell * len(tgt) + 2.2), layout="constrained")
        panels = [(fig.add_subplot(1, 1, 1), "", w, (True, True))]
    for i, (ax, title, m, (x_labels, y_labels)) in enumerate(panels):
        large = i == 0
        image = ax.imshow(m, cmap="Greys", vmin=0, vmax=1, aspect="auto")
        small = {} if large else {"fontsize": 7}
        ax.set_xticks(range(len(src)), src if x_labels else [], rotation=60, ha="right", **small)
        ax.set_yticks(range(len(tgt)), tgt if y_labels else [], **small)
        if large:
            ax.set_xlabel("source pieces")
            ax.set_ylabel("target pieces (the last is EOS)")
        ax.set_title(title, fontsize=10 if large else 8)
    fig.colorbar(image, ax=[p[0] for p in panels], shrink=0.6, label="attention weight α (each row sums to 1)")
    fig.suptitle(a.get("sentence", ""), fontsize=10)
    fig.savefig(args.out, dpi=110)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
