#!/usr/bin/env bash
# The main job, in one command: set up (packages, build) if needed, train a Transformer language
# model on the text of the `fortunes` package for a few minutes with a progress bar, and print
# a few samples of what it learned.
#
#   scripts/demo.sh                               # about 5 minutes of training, model in runs/fortunes
#   MINUTES=15 OUT=runs/fortunes15 scripts/demo.sh   # longer: the schedule is planned for the time given
#
# The minutes buy steps: the first 200 steps are timed and the cosine schedule is planned for as
# many as fit (core/train/run.hpp), so a faster machine trains longer and every run ends cooled
# down. Batches of 16 windows and a model of d_model 128: at this budget more, smaller steps learn
# more than fewer big ones (docs/appendix_a_runs.md has the runs that chose them). Ctrl-C stops at
# a checkpoint; running the same command again continues the same schedule.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
source scripts/blas_env.sh   # OpenBLAS kernels that fit this CPU, if it does not recognise it
out=${OUT:-runs/fortunes}
minutes=${MINUTES:-5}

echo
echo "== Training a Transformer language model on the fortunes corpus for up to $minutes minutes =="
echo "   (checkpoint and metrics in $out; run this again to continue where it stopped)"
build/examples/lm train --out "$out" --minutes "$minutes" --schedule cosine --lr 3e-3 --warmup 100 --eval-every 200 \
  --d-model 128 --d-ff 512 --n-layers 4 --n-heads 4 --max-len 128 --batch-size 16

echo
echo "== Three samples (temperature 0.8) =="
build/examples/lm sample --out "$out" --n-samples 3 --length 300 --temperature 0.8 --seed "$RANDOM"
echo
echo "More: build/examples/lm sample --out $out --prompt \"Q: \"    ·    README.md for the other examples"
