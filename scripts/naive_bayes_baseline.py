#!/usr/bin/env python3
"""A baseline that only counts words: naive Bayes over the words and word pairs present in each
review (binarised counts, add-one smoothing), trained on the first N labelled reviews of a
dataset's training split and scored on its whole test split. What a classifier that learned from
N labels should beat (docs/10_real_data.md, "Pretraining and fine-tuning").

    python3 scripts/naive_bayes_baseline.py ../shared/data/imdb 2000

Standard library only; the files are `label<TAB>text` lines, .tsv.gz.
"""
import collections
import gzip
import math
import os
import re
import sys


def load(path, limit=None):
    rows = []
    with gzip.open(path, "rt", encoding="utf-8") as f:
        for i, line in enumerate(f):
            if limit and i >= limit:
                break
            label, text = line.rstrip("\n").split("\t", 1)
            rows.append((int(label), text))
    return rows


def features(text):
    words = re.findall(r"[a-z']+|[!?]", text.lower().replace("<br />", " "))
    return set(words) | {a + " " + b for a, b in zip(words, words[1:])}


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    data, n = sys.argv[1], int(sys.argv[2])
    train = load(os.path.join(data, "train.tsv.gz"), n)
    test = load(os.path.join(data, "test.tsv.gz"))
    counts = [collections.Counter(), collections.Counter()]
    for label, text in train:
        counts[label].update(features(text))
    vocabulary = set(counts[0]) | set(counts[1])
    totals = [sum(c.values()) + len(vocabulary) for c in counts]
    log_ratio = {f: math.log((counts[1][f] + 1) / totals[1]) - math.log((counts[0][f] + 1) / totals[0])
                 for f in vocabulary}
    correct = sum((sum(log_ratio.get(f, 0.0) for f in features(text)) > 0) == (label == 1) for label, text in test)
    print(f"naive Bayes on words and word pairs, {len(train)} training reviews: "
          f"test accuracy {correct / len(test):.4f} ({correct} of {len(test)})")


if __name__ == "__main__":
    main()
