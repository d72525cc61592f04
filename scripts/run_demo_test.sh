#!/usr/bin/env bash
# Smoke test of the README's main command: the demo must build a model, print its tree, run it
# forward and backward, and exit 0.
set -euo pipefail
out=$("$1" --seed 3)
grep -q '^Serial\[$' <<<"$out" || { echo "demo did not print the model tree"; exit 1; }
grep -q 'forward: y = Tensor' <<<"$out" || { echo "demo did not run forward"; exit 1; }
grep -q '|grad| =' <<<"$out" || { echo "demo did not print gradients"; exit 1; }
echo "demo ok"
