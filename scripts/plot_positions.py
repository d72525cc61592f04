#!/usr/bin/env python3
"""Draws the positions chapter's figures from scripts/positions_experiments.sh's runs.

    scripts/plot_positions.py RUNS_DIR [--images docs/images]

Reads RUNS_DIR/extrapolation.tsv (positions, length, loss, accuracy) and the metrics.jsonl of
RUNS_DIR/norm-{pre,post}-warmup{100,0}; writes positions_extrapolation.png (validation loss by
evaluation length, one line per kind of position) and norms_warmup.png (training and validation
loss curves of the four norm/warm-up runs), and prints both as Markdown tables. Needs Debian's
python3-matplotlib.
"""
import argparse
import json
import math
import os
import sys


def read_metrics(run):
    curves = {}
    path = os.path.join(run, "metrics.jsonl")
    if not os.path.exists(path):
        return curves
    with open(path) as f:
        for line in f:
            if line.strip():
                r = json.loads(line)
                v = r["value"]
                curves.setdefault((r["split"], r["name"]), []).append((r["step"], v if v is not None else math.nan))
    return curves


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs")
    parser.add_argument("--images", default="docs/images")
    args = parser.parse_args()
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = []
    with open(os.path.join(args.runs, "extrapolation.tsv")) as f:
        next(f)
        for line in f:
            p, n, loss, acc = line.rstrip("\n").split("\t")
            rows.append((p, int(n), float(loss) if loss != "error" else math.nan, acc))
    kinds = list(dict.fromkeys(r[0] for r in rows))
    lengths = sorted({r[1] for r in rows})
    print("| positions | " + " | ".join(f"loss at {n}" for n in lengths) + " |")
    print("|---|" + "---|" * len(lengths))
    fig, ax = plt.subplots(figsize=(6, 4))
    for k in kinds:
        losses = [next((r[2] for r in rows if r[0] == k and r[1] == n), math.nan) for n in lengths]
        print(f"| {k} | " + " | ".join("—" if math.isnan(x) else f"{x:.3f}" for x in losses) + " |")
        ax.plot(lengths, losses, marker="o", label=k)
    ax.set_xscale("log", base=2)
    ax.set_xticks(lengths, [str(n) for n in lengths])
    ax.set_xlabel("evaluation window (tokens); trained on 128")
    ax.set_ylabel("validation loss (nats per character)")
    ax.set_title("Tiny Shakespeare: positions beyond the training length")
    ax.legend()
    fig.tight_layout()
    fig.savefig(os.path.join(args.images, "positions_extrapolation.png"), dpi=110)

    fig, axes = plt.subplots(1, 2, figsize=(10, 4), sharey=True)
    print("\n| run | final train loss | best validation loss | at step |")
    print("|---|---|---|---|")
    for norm in ("pre", "post"):
        for warmup in ("100", "0"):
            run = os.path.join(args.runs, f"norm-{norm}-warmup{warmup}")
            m = read_metrics(run)
            label = f"{norm}-norm, warm-up {warmup}"
            train = m.get(("train", "loss"), [])
            val = m.get(("eval", "loss"), [])
            if not train:
                print(f"| {label} | (no run) | | |")
                continue
            style = "-" if warmup == "100" else "--"
            axes[0].plot(*zip(*train), style, label=label)
            axes[1].plot(*zip(*val), style, marker=".", label=label)
            best = min(val, key=lambda sv: sv[1] if not math.isnan(sv[1]) else math.inf)
            print(f"| {label} | {train[-1][1]:.3f} (step {train[-1][0]}) | {best[1]:.3f} | {best[0]} |")
    axes[0].set_title("training loss")
    axes[1].set_title("validation loss")
    for a in axes:
        a.set_xlabel("step")
        a.legend()
    axes[0].set_ylabel("loss (nats per character)")
    axes[0].set_ylim(top=4.0)
    fig.tight_layout()
    fig.savefig(os.path.join(args.images, "norms_warmup.png"), dpi=110)


if __name__ == "__main__":
    sys.exit(main())
