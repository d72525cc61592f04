#!/usr/bin/env bash
# Every image in docs/images, regenerated from real runs of the examples:
#
#   scripts/figures.sh [RUNS_DIR]      (default runs/figures; the data from CTRAX_DATA, default ../shared/data)
#
# Trains what RUNS_DIR does not hold yet with the README's commands (a run directory with a
# model.safetensors is used as it is: delete it to train afresh), then draws:
#   masks.png, sinusoid.png, schedules.png   build/examples/diagrams → scripts/plot_diagrams.py
#   transformer*.png, attention_head.png, heads.png, shift_right.png, kv_cache.png, beam_step.png
#                          the same data → scripts/draw_concepts.py, English and Korean (images/ko/)
#   lm_shakespeare.png     the Shakespeare LM's curves (scripts/plot_metrics.py)        ~30 min to train
#   attention_lm.png       its heads on a line of the play (lm attention → plot_attention.py), and
#                          attention_lm.json, the same numbers for the site's attention explorer
#   alignment_lstm.png     the additive-attention LSTM's α on one sentence (translate align) ~15 min
#   alignment_transformer.png  the Transformer's last cross-attention, per head            ~60 min
#   positions_extrapolation.png, norms_warmup.png   scripts/positions_experiments.sh     ~75 min
#   imdb_labels_zen5.png   the IMDB runs' stored `sentiment eval --json` files (imdb_labels_zen5/,
#                          and _4blocks/ and _16k/ for the runs from two other bodies;
#                          their commands in docs/10_real_data.md: about five hours of runs, not redone here)
#   bf16_shakespeare.png   the Shakespeare LM in float32 and with --bf16, from their stored metrics.jsonl
#                          (bf16_shakespeare/; commands in docs/11_performance.md: ~25 minutes of runs)
# About three hours on 2 cores when nothing exists yet. Needs Debian's python3-matplotlib.
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-runs/figures}
data=${CTRAX_DATA:-../shared/data}
images=docs/images
py=/usr/bin/python3   # Debian's python3, with python3-matplotlib
[ -x "$py" ] || py=python3
for d in tinyshakespeare multi30k; do
  [ -d "$data/$d" ] || { echo "figures: $data/$d not found (set CTRAX_DATA to the datasets' folder)" >&2; exit 1; }
done
ninja -C build examples/lm examples/translate examples/diagrams >/dev/null
mkdir -p "$runs" "$images"

# Trains RUN with the rest of the arguments unless it holds a model already.
train() {
  local run=$1; shift
  if [ -f "$run/model.safetensors" ]; then echo "figures: using $run"; return; fi
  echo "figures: training $run: $*"
  "$@" --out "$run" | grep -E "eval +(loss|accuracy)|stopped|finished" || true
}

build/examples/diagrams "$runs/diagrams.json"
$py scripts/plot_diagrams.py "$runs/diagrams.json" --images "$images"
$py scripts/draw_concepts.py "$runs/diagrams.json" --images "$images"

train "$runs/shakespeare" build/examples/lm train --data "$data/tinyshakespeare/input.txt" --minutes 30
$py scripts/plot_metrics.py "$runs/shakespeare" --out "$images/lm_shakespeare.png"
build/examples/lm attention --out "$runs/shakespeare" "ROMEO:
But soft, what light" --json "$runs/attention_lm.json" | tee "$runs/attention_lm.txt"
cp "$runs/attention_lm.json" docs/images/attention_lm.json   # the site's attention explorer reads it
$py scripts/plot_attention.py "$runs/attention_lm.json" --out "$images/attention_lm.png"

sentence="A man in an orange hat starring at something."
train "$runs/lstm" build/examples/translate train --data "$data/multi30k" --model lstm --score additive --n-layers 2 \
  --decoder-layers 0 --scale-embeddings --minutes 15
build/examples/translate align --out "$runs/lstm" "$sentence" --json "$runs/alignment_lstm.json"
$py scripts/plot_alignment.py "$runs/alignment_lstm.json" --out "$images/alignment_lstm.png"

train "$runs/multi30k" build/examples/translate train --data "$data/multi30k" --minutes 60
build/examples/translate align --out "$runs/multi30k" "$sentence" --json "$runs/alignment_transformer.json"
$py scripts/plot_alignment.py "$runs/alignment_transformer.json" --out "$images/alignment_transformer.png"

if [ -f "$runs/positions/extrapolation.tsv" ]; then
  $py scripts/plot_positions.py "$runs/positions" --images "$images"
else
  CTRAX_DATA="$data" scripts/positions_experiments.sh "$runs/positions"
fi
other_bodies=()   # the runs fine-tuned from the 4-block and the 16,000-piece bodies: curves of their own
for f in "$images"/imdb_labels_zen5_4blocks/*.json; do other_bodies+=("$f=fine-tuned from 4 blocks (bfloat16)"); done
for f in "$images"/imdb_labels_zen5_16k/*.json; do other_bodies+=("$f=fine-tuned from 16,000 pieces (bfloat16)"); done
$py scripts/plot_label_curve.py "$images"/imdb_labels_zen5/*.json "${other_bodies[@]}" \
  --out "$images/imdb_labels_zen5.png" --title "IMDB: test accuracy against labelled reviews (AMD Zen 5 VM)"
cnn=()   # Kim's CNN from scratch and from the 16,000-piece body's embedding, beside that body's Transformer
for f in "$images"/imdb_labels_zen5_cnn/scratch_*.json; do cnn+=("$f=Kim's CNN from scratch"); done
for f in "$images"/imdb_labels_zen5_cnn/finetuned_*.json; do cnn+=("$f=Kim's CNN, embedding from the masked LM"); done
for f in "$images"/imdb_labels_zen5_16k/*.json; do cnn+=("$f=Transformer fine-tuned from the masked LM"); done
$py scripts/plot_label_curve.py "${cnn[@]}" --out "$images/imdb_labels_cnn.png" \
  --title "IMDB: Kim's CNN and the Transformer, 16,000 pieces (AMD Zen 5 VM)"
$py scripts/plot_metrics.py "$images/bf16_shakespeare/float32.jsonl=float32" \
  "$images/bf16_shakespeare/bfloat16.jsonl=bfloat16 products" --metrics loss,accuracy --from-step 250 --out "$images/bf16_shakespeare.png"
echo "figures: drawn into $images from $runs and the stored IMDB eval files and Shakespeare metrics"
