#!/usr/bin/env python3
"""Draws an attention alignment (`translate align --json FILE`) as a heatmap.

    scripts/plot_alignment.py ALIGNMENT.json [--out docs/images/alignment.png]

Rows are the target pieces the decoder wrote (the last is EOS), columns the source pieces; a cell's
darkness is the weight α that target piece gave that source piece (each row sums to 1), as in the
figures of Bahdanau et al. (2015) and the attention notes. A Transformer's alignment has one map
per head of its last cross-attention ("heads"): they are drawn side by side after their mean.
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
    maps = [("mean of the heads" if a.get("heads") else "", w)]
    maps += [(f"head {h + 1}", m) for h, m in enumerate(a.get("heads", []))]
    width = 0.45 * len(src) + 2
    fig, axes = plt.subplots(1, len(maps), figsize=(width * len(maps), 0.4 * len(tgt) + 1.5), squeeze=False)
    for i, (title, m) in enumerate(maps):
        ax = axes[0][i]
        ax.imshow(m, cmap="Greys", vmin=0, vmax=1, aspect="auto")
        ax.set_xticks(range(len(src)), src, rotation=60, ha="right")
        ax.set_yticks(range(len(tgt)), tgt if i == 0 else [""] * len(tgt))
        ax.set_xlabel("source pieces")
        if i == 0:
            ax.set_ylabel("target pieces")
        ax.set_title(title, fontsize=9)
    fig.suptitle(a.get("sentence", ""), fontsize=9)
    fig.tight_layout()
    fig.savefig(args.out, dpi=110)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
