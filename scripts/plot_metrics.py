#!/usr/bin/env python3
"""Draws the training curves of ctrax runs: scripts/plot_metrics.py RUN[=LABEL]... [--metrics a,b] [--out FILE.png]

Reads each RUN's metrics.jsonl (RUN a run's --out directory, or such a file itself; one {"step",
"split", "name", "value"} record per line, written by the training Loop) and draws one panel per
metric, titled in words, its curves on training batches and on held-out data together. Learning
rate, speed and norms get their own panels; --metrics keeps only the named ones, --from-step
the later steps. Given several
runs, each panel shows every run's curves, named by LABEL (default: the run's name), and the last
held-out value of each in the legend — how docs/11 compares float32 and bfloat16 products on one
run. Needs Debian's python3-matplotlib (apt-get install -y python3-matplotlib); nothing else.
"""
import argparse
import collections
import json
import os
import sys

# What a reader sees instead of the Loop's metric names (a name not listed is shown as it is).
TITLES = {
    "loss": "cross-entropy loss (nats)",
    "accuracy": "accuracy (share predicted right)",
    "learning_rate": "learning rate",
    "steps_per_second": "training speed (steps per second)",
    "gradients_l2": "gradient norm (L2, all weights)",
    "weights_l2": "weight norm (L2, all weights)",
}
SPLITS = {"train": "training batches", "eval": "held-out data"}


def read(path):
    """name -> split -> [(step, value)] of one metrics.jsonl."""
    curves = collections.OrderedDict()
    try:
        with open(path) as f:
            for number, line in enumerate(f, 1):
                if not line.strip():
                    continue
                try:
                    r = json.loads(line)
                    curves.setdefault(r["name"], {}).setdefault(r["split"], []).append(
                        (r["step"], r["value"]))
                except (ValueError, KeyError) as e:
                    sys.exit(f"{path}:{number}: not a metrics record ({e})")
    except OSError as e:
        sys.exit(f"plot_metrics: cannot read {path}: {e.strerror}")
    if not curves:
        sys.exit(f"plot_metrics: {path} has no records yet")
    return curves


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs="+", metavar="RUN[=LABEL]",
                        help="the --out directory of a training run, or its metrics.jsonl")
    parser.add_argument("--metrics", help="comma-separated metric names to draw (default: all)")
    parser.add_argument("--from-step", type=int, default=0,
                        help="draw from this step on (the first steps' large values hide later differences)")
    parser.add_argument("--out", help="PNG to write (default: RUN/metrics.png of the first run)")
    args = parser.parse_args()
    runs = []   # (label, curves)
    for spec in args.runs:
        where, _, label = spec.partition("=")
        path = os.path.join(where, "metrics.jsonl") if os.path.isdir(where) else where
        runs.append((label or os.path.basename(os.path.normpath(where)), read(path)))
    wanted = args.metrics.split(",") if args.metrics else None
    names = [n for n in runs[0][1] if wanted is None or n in wanted]
    for label, curves in runs[1:]:
        names += [n for n in curves if n not in names and (wanted is None or n in wanted)]
    if not names:
        sys.exit(f"plot_metrics: none of {args.metrics} in {args.runs[0]}")
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        # Debian's python3-matplotlib belongs to /usr/bin/python3; another python3 may come first
        # on PATH (pyenv, a venv). Retry with the system one before giving up.
        system = "/usr/bin/python3"
        if os.path.exists(system) and os.path.realpath(sys.executable) != os.path.realpath(system):
            os.execv(system, [system] + sys.argv)
        sys.exit("plot_metrics: needs matplotlib: apt-get install -y python3-matplotlib")

    cols = min(3, len(names))
    rows = (len(names) + cols - 1) // cols
    fig, axes = plt.subplots(rows, cols, figsize=(5 * cols, 3.5 * rows), squeeze=False)
    for ax, name in zip(axes.flat, names):
        splits = set()
        for index, (label, curves) in enumerate(runs):
            for split, points in sorted(curves.get(name, {}).items()):
                points = sorted(p for p in points if p[0] >= args.from_step)
                if not points:
                    continue
                splits.add(split)
                text = SPLITS.get(split, split)
                if len(runs) > 1:
                    text = f"{label}, {text}" + (f" (last {points[-1][1]:.3f})" if split == "eval" else "")
                style = {}   # several runs: a colour per run, solid held-out, dashed training
                if len(runs) > 1:
                    style = dict(color=f"C{index}", linestyle="-" if split == "eval" else "--")
                ax.plot([p[0] for p in points], [p[1] for p in points], marker=".", label=text, **style)
        title = TITLES.get(name, name)
        if len(splits) > 1 or len(runs) > 1:
            ax.legend()
        elif "eval" in splits:
            title += ", held-out data"
        ax.set_title(title)
        ax.set_xlabel("step")
        ax.grid(alpha=0.3)
    for ax in list(axes.flat)[len(names):]:
        ax.axis("off")
    fig.tight_layout()
    first = args.runs[0].partition("=")[0]
    out = args.out or os.path.join(first if os.path.isdir(first) else os.path.dirname(first), "metrics.png")
    fig.savefig(out, dpi=100)
    print(out)


if __name__ == "__main__":
    main()
