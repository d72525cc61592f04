#!/usr/bin/env python3
"""Draws an image classifier's test results (`image eval --json FILE`): the confusion matrix and
the accuracy of each class.

    scripts/plot_confusion.py CONFUSION.json [--out docs/images/fashion_confusion.png]

Row i of the matrix counts the test images of class i by the class the model gave them, so the
diagonal is what it got right; each cell is shaded by its share of its row (the colour bar) and
shows its count. Needs Debian's python3-matplotlib.
"""
import argparse
import json
import sys


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("confusion")
    parser.add_argument("--out", default="docs/images/fashion_confusion.png")
    args = parser.parse_args()
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    r = json.load(open(args.confusion, encoding="utf-8"))
    m, classes = r["confusion"], r["classes"]
    if len(m) != len(classes) or any(len(row) != len(classes) for row in m):
        sys.exit(f"plot_confusion: {args.confusion}: the confusion matrix must be {len(classes)} × {len(classes)}")
    shares = [[c / max(sum(row), 1) for c in row] for row in m]
    fig, (ax, bars) = plt.subplots(1, 2, figsize=(12.5, 5.6), gridspec_kw={"width_ratios": [1.35, 1]},
                                   layout="constrained")
    image = ax.imshow(shares, cmap="Blues", vmin=0, vmax=1)
    for i, row in enumerate(m):
        for j, count in enumerate(row):
            if count:
                ax.text(j, i, str(count), ha="center", va="center", fontsize=7,
                        color="white" if shares[i][j] > 0.5 else "black")
    ax.set_xticks(range(len(classes)), classes, rotation=45, ha="right", fontsize=8)
    ax.set_yticks(range(len(classes)), classes, fontsize=8)
    ax.set_xlabel("the model's answer")
    ax.set_ylabel("the true class")
    ax.set_title(f"{r['model']}: test accuracy {100 * r['accuracy']:.2f}%", fontsize=10)
    fig.colorbar(image, ax=ax, shrink=0.8, label="share of the class's test images")
    order = sorted(range(len(classes)), key=lambda k: r["per_class"][k])
    bars.barh([classes[k] for k in order], [100 * r["per_class"][k] for k in order], color="#4878a8")
    for y, k in enumerate(order):
        bars.text(100 * r["per_class"][k] - 1, y, f"{100 * r['per_class'][k]:.1f}%", ha="right", va="center",
                  color="white", fontsize=8)
    bars.invert_yaxis()   # the hardest class on top
    bars.set_xlim(0, 100)
    bars.set_xlabel("test accuracy of the class (%)")
    bars.set_title("per class, hardest first", fontsize=10)
    fig.savefig(args.out, dpi=100)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
