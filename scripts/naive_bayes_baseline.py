#!/usr/bin/env python3
"""A baseline that only counts words: naive Bayes over the words and word pairs present in each
review (binarised counts, add-one smoothing), trained on N labelled reviews of a dataset's
training split — the first N, or with --seed S N drawn at random (as `sentiment train --sample N`
draws them; Python's draw, not the same reviews) — and scored on its whole test split. What a
classifier that learned from N labels should beat (docs/10_real_data.md, "Pretraining and
fine-tuning").

    python3 scripts/naive_bayes_baseline.py ../shared/data/imdb 2000 [--seed S]

Standard library only; the files are `label<TAB>text` lines, .tsv.gz.
"""
import collections
import gzip
import math
import os
import random
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
    args = sys.argv[1:]
    seed = None
    if len(args) == 4 and args[2] == "--seed":
        seed = int(args[3])
        args = args[:2]
    if len(args) != 2:
        sys.exit(__doc__)
    data, n = args[0], int(args[1])
    if seed is None:
        train = load(os.path.join(data, "train.tsv.gz"), n)
    else:
        everything = load(os.path.join(data, "train.tsv.gz"))
        train = random.Random(seed).sample(everything, min(n, len(everything)))
    test = load(os.path.join(data, "test.tsv.gz"))
    counts = [collections.Counter(), collections.Counter()]
    for label, text in train:
        counts[label].update(features(text))
    vocabulary = set(counts[0]) | set(counts[1])
    totals = [sum(c.values()) + len(vocabulary) for c in counts]
    log_ratio = {f: math.log((counts[1][f] + 1) / totals[1]) - math.log((counts[0][f] + 1) / totals[0])
                 for f in vocabulary}
    correct = sum((sum(log_ratio.get(f, 0.0) for f in features(text)) > 0) == (label == 1) for label, text in test)
    drawn = "the first" if seed is None else f"at random (seed {seed})"
    print(f"naive Bayes on words and word pairs, {len(train)} training reviews {drawn}: "
          f"test accuracy {correct / len(test):.4f} ({correct} of {len(test)})")


if __name__ == "__main__":
    main()
