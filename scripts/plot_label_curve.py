#!/usr/bin/env python3
"""Draws test accuracy against the number of labelled examples, from scratch and fine-tuned
(`sentiment eval --json FILE` of each run).

    scripts/plot_label_curve.py EVAL.json[=CURVE]... [--all 25000] [--out docs/images/imdb_labels.png]

Each JSON says how many training examples its run used (`train_sample` or `train_limit`; 0 is
the whole split, drawn at --all), whether it started from a pretrained run (`init_from`) and
whether a teacher labelled the texts its sample left out (`teacher`) and whether its training
reviews were noised (`mask_tokens`); the runs are split into curves by that, and each point is
labelled with its accuracy. `EVAL.json=CURVE` puts that run on a curve of its own, named CURVE (e.g.
the runs fine-tuned from another pretrained body). Needs Debian's python3-matplotlib.
"""
import argparse
import json
import sys


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("evals", nargs="+")
    parser.add_argument("--all", type=int, default=25000, help="the training split's size (train_limit 0)")
    parser.add_argument("--title", default="IMDB: test accuracy against labelled reviews")
    parser.add_argument("--out", default="docs/images/imdb_labels.png")
    args = parser.parse_args()
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    curves = {"from scratch": [], "fine-tuned from the masked LM": [],
              "fine-tuned, training reviews noised": [], "fine-tuned, then self-trained": []}
    for arg in args.evals:
        path, _, named = arg.partition("=")
        r = json.load(open(path, encoding="utf-8"))
        if "accuracy" not in r or "train_limit" not in r:
            sys.exit(f"plot_label_curve: {path}: not a `sentiment eval --json` file (no accuracy or train_limit)")
        labels = r.get("train_sample") or r["train_limit"] or args.all
        key = (named if named else
               "fine-tuned, then self-trained" if r.get("teacher") else
               "fine-tuned, training reviews noised" if r.get("init_from") and r.get("mask_tokens") else
               "fine-tuned from the masked LM" if r.get("init_from") else "from scratch")
        curves.setdefault(key, []).append((labels, 100 * r["accuracy"]))
    fig, ax = plt.subplots(figsize=(6.4, 4.2), layout="constrained")
    # Each curve labels its points on its own side, so points at one count do not cover each other.
    looks = [("o--", (0, -13)), ("s-", (-26, 5)), ("D-.", (26, -4)), ("^:", (0, 7)), ("v-", (30, -13)),
             ("h--", (22, 8))]
    for i, (name, points) in enumerate(curves.items()):
        style, offset = looks[i % len(looks)]
        if not points:
            continue
        points.sort()
        xs, ys = [p[0] for p in points], [p[1] for p in points]
        ax.plot(xs, ys, style, label=name)
        for x, y in points:
            ax.annotate(f"{y:.2f}%", (x, y), textcoords="offset points", xytext=offset, ha="center", fontsize=8)
    ax.set_xscale("log")
    counts = sorted({x for points in curves.values() for x, _ in points})
    ax.set_xticks(counts, [f"{x:,}" for x in counts])
    ax.minorticks_off()
    ax.margins(x=0.12, y=0.12)
    ax.set_xlabel("labelled training reviews (held-out tenth included)")
    ax.set_ylabel("test accuracy (%)")
    ax.set_title(args.title, fontsize=10)
    ax.grid(alpha=0.3)
    ax.legend()
    fig.savefig(args.out, dpi=110)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
