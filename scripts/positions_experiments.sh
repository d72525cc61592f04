#!/usr/bin/env bash
# The measurements of docs/05_positions.md and docs/06_the_block.md, from scratch:
#
#   scripts/positions_experiments.sh [RUNS_DIR]        (default runs/positions; ~75 min on 2 cores)
#
# 1. Extrapolation: TransformerLM on Tiny Shakespeare (the lm example's defaults: d_model 256,
#    4 layers, bytes), trained on windows of 128 in a model built for 512 positions, the same
#    number of steps for each kind of position; then the validation loss in windows of 128, 256
#    and 512 (`lm eval --length N`).
# 2. Pre-norm vs post-norm, with and without warm-up: the same model and task, in 300 steps.
# Then scripts/plot_positions.py draws the chapter's figures from the runs' metrics.jsonl and
# RUNS_DIR/extrapolation.tsv. Runs that exist are resumed (or skipped when finished).
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-runs/positions}
data=${CTRAX_DATA:-../shared/data}/tinyshakespeare/input.txt
[ -f "$data" ] || { echo "positions_experiments: $data not found (set CTRAX_DATA)" >&2; exit 1; }
ninja -C build examples/lm >/dev/null
mkdir -p "$runs"
lm=build/examples/lm
common=(--data "$data" --threads 2 --batch-size 32 --lr 2e-3 --schedule cosine --seed 1)

table="$runs/extrapolation.tsv"
echo -e "positions\tlength\tloss\taccuracy" >"$table.tmp"
for p in sinusoidal learned rotary linear-bias; do
  $lm train "${common[@]}" --out "$runs/extrapolate-$p" --positions "$p" --max-len 512 --train-len 128 \
    --steps 900 --warmup 100 --eval-every 150 | grep -E "Step .*eval|trained|already" || true
  for n in 128 256 512; do
    line=$($lm eval --out "$runs/extrapolate-$p" --data "$data" --length "$n" --threads 2 2>&1 | tail -1)
    echo "$p $n: $line"
    loss=$(sed -n 's/.*validation loss \([0-9.]*\), accuracy \([0-9.]*\).*/\1/p' <<<"$line")
    acc=$(sed -n 's/.*validation loss \([0-9.]*\), accuracy \([0-9.]*\).*/\2/p' <<<"$line")
    echo -e "$p\t$n\t${loss:-error}\t${acc:-error}" >>"$table.tmp"
  done
done
mv "$table.tmp" "$table"

for norm in pre post; do
  for warmup in 100 0; do
    $lm train "${common[@]}" --out "$runs/norm-$norm-warmup$warmup" --norm "$norm" --max-len 128 \
      --steps 300 --warmup "$warmup" --eval-every 30 | grep -E "Step .*eval|trained|already|diverged|NaN" || true
  done
done
/usr/bin/python3 scripts/plot_positions.py "$runs"
