#!/usr/bin/env python3
"""Draws every head of every layer of a language model (`lm attention --json FILE`) as heatmaps.

    scripts/plot_attention.py ATTENTION.json [--out docs/images/attention_lm.png]

One panel per (layer, head), layers top to bottom: row i is the query at position i, column j
the key at position j, a cell's darkness the weight α_ij (each row sums to 1; above the diagonal
is the future, always 0). Both axes are labelled with what each position holds (the model shifts
its input right: position 0 is the start token). Needs Debian's python3-matplotlib.
"""
import argparse
import json
import sys


def label(piece):
    return {" ": "␣", "\n": "↵"}.get(piece, piece)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("attention")
    parser.add_argument("--out", default="docs/images/attention_lm.png")
    args = parser.parse_args()
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    a = json.load(open(args.attention, encoding="utf-8"))
    tokens, layers = [label(t) for t in a["tokens"]], a["layers"]
    L = len(tokens)
    if not layers or any(len(row) != L for layer in layers for head in layer for row in head):
        sys.exit(f"plot_attention: {args.attention}: every head must be {L} rows of {L}")
    n_layers, n_heads = len(layers), len(layers[0])
    size = 0.11 * L + 0.8
    fig, axes = plt.subplots(n_layers, n_heads, figsize=(size * n_heads, size * n_layers), squeeze=False)
    for l, layer in enumerate(layers):
        for h, head in enumerate(layer):
            ax = axes[l][h]
            image = ax.imshow(head, cmap="Greys", vmin=0, vmax=1)
            ax.set_title(f"layer {l + 1}, head {h + 1}", fontsize=9)
            ax.set_xticks(range(L), tokens, fontsize=7, family="monospace")
            ax.set_yticks(range(L), tokens, fontsize=7, family="monospace")
            ax.tick_params(length=0)
    fig.suptitle(f"attention weights on {a['text']!r} (rows: queries, columns: keys)", fontsize=10)
    fig.tight_layout(rect=(0, 0, 0.95, 0.97))
    bar = fig.add_axes((0.96, 0.3, 0.012, 0.4))   # one scale for every panel: a weight from 0 to 1
    fig.colorbar(image, cax=bar)
    bar.set_title("α", fontsize=9)
    fig.savefig(args.out, dpi=80)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
