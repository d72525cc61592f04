#!/usr/bin/env python3
"""Draws the training curves of a ctrax run: scripts/plot_metrics.py OUTPUT_DIR [--out FILE.png]

Reads OUTPUT_DIR/metrics.jsonl (one {"step", "split", "name", "value"} record per line, written
by the training Loop) and draws one panel per metric, titled in words, its curves on training
batches and on held-out data together. Learning rate, speed and norms get their own panels. Needs Debian's
python3-matplotlib (apt-get install -y python3-matplotlib); nothing else.
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


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("output_dir", help="the --out directory of a training run")
    parser.add_argument("--out", help="PNG to write (default: OUTPUT_DIR/metrics.png)")
    args = parser.parse_args()
    path = os.path.join(args.output_dir, "metrics.jsonl")
    curves = collections.OrderedDict()  # name -> split -> [(step, value)]
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

    names = list(curves)
    cols = min(3, len(names))
    rows = (len(names) + cols - 1) // cols
    fig, axes = plt.subplots(rows, cols, figsize=(5 * cols, 3.5 * rows), squeeze=False)
    for ax, name in zip(axes.flat, names):
        for split, points in sorted(curves[name].items()):
            points.sort()
            ax.plot([p[0] for p in points], [p[1] for p in points], marker=".", label=SPLITS.get(split, split))
        title = TITLES.get(name, name)
        if len(curves[name]) > 1:
            ax.legend()
        elif "eval" in curves[name]:
            title += ", held-out data"
        ax.set_title(title)
        ax.set_xlabel("step")
        ax.grid(alpha=0.3)
    for ax in list(axes.flat)[len(names):]:
        ax.axis("off")
    fig.tight_layout()
    out = args.out or os.path.join(args.output_dir, "metrics.png")
    fig.savefig(out, dpi=100)
    print(out)


if __name__ == "__main__":
    main()
