#!/usr/bin/env bash
# Smoke tests of the real-data examples at tiny sizes: train a few steps, resume, use the model,
# and fail clearly on bad input. Usage: run_example_test.sh lm|sentiment|translate|chatbot|image EXECUTABLE
# Datasets come from ../shared/data beside the project root; when it is absent the dataset part
# is skipped with a message (the lm example still runs on the fortunes corpus).
set -euo pipefail
which=$1
exe=$2
root=$(cd "$(dirname "$0")/.." && pwd)
data=${CTRAX_DATA:-$root/../shared/data}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
tiny=(--d-model 16 --d-ff 32 --n-layers 1 --n-heads 2 --batch-size 4 --threads 1)

fail() { echo "FAIL ($which): $*"; exit 1; }
expect() {  # expect PATTERN OUTPUT-FILE
  grep -q -- "$1" "$2" || { cat "$2"; fail "expected '$1' in the output"; }
}
have_data() {
  if [ -e "$data/$1" ]; then return 0; fi
  echo "SKIP ($which): $data/$1 not found; dataset part of the smoke test skipped"
  return 1
}

# --help documents every shared flag with its default (the image program has no Transformer flags).
"$exe" train --help >"$tmp/help"
flags=(--batch-size --steps --lr --seed --threads --out)
[ "$which" = image ] && flags+=(--model --widths --n-blocks --widen-factor) || flags+=(--d-model --d-ff --n-layers --n-heads --max-len --dropout)
for flag in "${flags[@]}"; do
  expect "$flag [A-Z].*=" "$tmp/help"   # CLI11 shows the default as --flag TYPE=value
done
expect "--data" "$tmp/help"

case "$which" in
lm)
  if [ -d /usr/share/games/fortunes ]; then
    "$exe" train --out "$tmp/fortunes" --steps 2 --eval-every 2 --max-len 16 "${tiny[@]}" >"$tmp/log" 2>&1 || { cat "$tmp/log"; fail "train on fortunes"; }
    expect "/usr/share/games/fortunes:" "$tmp/log"
    expect "validation loss" "$tmp/log"
    # --eval-batches N: each evaluation reads the split's first N batches; N past the split's end is
    # all of it (the same loss as the run above), one batch another loss.
    eval_loss() { grep '"split":"eval","name":"loss"' "$1/metrics.jsonl"; }
    "$exe" train --out "$tmp/eval1" --steps 2 --eval-every 2 --max-len 16 --eval-batches 1 "${tiny[@]}" >"$tmp/log" 2>&1 || { cat "$tmp/log"; fail "train --eval-batches 1"; }
    expect "each evaluation reads the validation split's first 1 of its" "$tmp/log"
    "$exe" train --out "$tmp/eval_all" --steps 2 --eval-every 2 --max-len 16 --eval-batches 1000000000 "${tiny[@]}" >"$tmp/log" 2>&1 || { cat "$tmp/log"; fail "train --eval-batches 1e9"; }
    [ -n "$(eval_loss "$tmp/fortunes")" ] && [ "$(eval_loss "$tmp/eval_all")" = "$(eval_loss "$tmp/fortunes")" ] || fail "--eval-batches past the split's end is not the whole split"
    [ "$(eval_loss "$tmp/eval1")" != "$(eval_loss "$tmp/fortunes")" ] || fail "--eval-batches 1 reported the whole split's loss"
    # A resume is the same run: 2 steps, then a resume to 4 that leaves the flags out (they come
    # from the checkpoint: seed, batch size, data order), equals 4 steps straight, bit for bit.
    # (rsqrt: lm's default cosine schedule is drawn over --steps, so raising --steps re-draws it.)
    "$exe" train --out "$tmp/straight" --steps 4 --eval-every 2 --max-len 16 --seed 3 --schedule rsqrt "${tiny[@]}" >"$tmp/log" 2>&1 || { cat "$tmp/log"; fail "straight run"; }
    "$exe" train --out "$tmp/halves" --steps 2 --eval-every 2 --max-len 16 --seed 3 --schedule rsqrt "${tiny[@]}" >"$tmp/log" 2>&1 || { cat "$tmp/log"; fail "first half"; }
    "$exe" train --out "$tmp/halves" --steps 4 --threads 1 >"$tmp/log" 2>&1 || { cat "$tmp/log"; fail "second half"; }
    expect "every flag not given comes from" "$tmp/log"
    [ "$(grep '"step":4' "$tmp/straight/metrics.jsonl" | grep -v steps_per_second)" = \
      "$(grep '"step":4' "$tmp/halves/metrics.jsonl" | grep -v steps_per_second)" ] || fail "a resumed run differs from the straight one"
    # Re-running a finished run says so and reports its last validation loss (from metrics.jsonl).
    "$exe" train --out "$tmp/halves" --steps 4 >"$tmp/log" 2>&1 || { cat "$tmp/log"; fail "re-running a finished run"; }
    expect "already trained 4 of 4 steps" "$tmp/log"
    expect "validation loss" "$tmp/log"
    # A run-defining flag given with another value is refused, every difference listed.
    "$exe" train --out "$tmp/halves" --steps 6 --seed 4 --batch-size 8 >"$tmp/log" 2>&1 && fail "a resume with another seed was accepted"
    expect "  --batch-size 8 (the run's: 4)" "$tmp/log"
    expect "  --seed 4 (the run's: 3)" "$tmp/log"
    # Trax's other optimizers: SM3's slots (per row and column) saved, resumed by the run's own
    # --optimizer when none is given, and another one refused.
    "$exe" train --out "$tmp/sm3" --steps 2 --eval-every 2 --max-len 16 --optimizer sm3 --lr 0.01 "${tiny[@]}" \
      >"$tmp/log" 2>&1 \
      || { cat "$tmp/log"; fail "train --optimizer sm3"; }
    "$exe" train --out "$tmp/sm3" --steps 4 >"$tmp/log" 2>&1 || { cat "$tmp/log"; fail "resume of an SM3 run"; }
    expect "Ran 2 train steps" "$tmp/log"
    "$exe" train --out "$tmp/sm3" --steps 6 --optimizer adam >"$tmp/log" 2>&1 \
      && fail "a resume with another --optimizer was accepted"
    expect "  --optimizer adam (the run's: sm3)" "$tmp/log"
    # The paper's Transformer and each position kind train and sample; sample rebuilds the model
    # from the checkpoint's config (a predict-mode model with rotary or linear-bias attention).
    for positions in learned rotary linear-bias; do
      "$exe" train --out "$tmp/$positions" --steps 2 --eval-every 2 --max-len 16 --positions "$positions" --norm post \
        --scale-embeddings --schedule noam --lr 1 --warmup 1 "${tiny[@]}" >"$tmp/log" 2>&1 || { cat "$tmp/log"; fail "train --positions $positions"; }
      "$exe" sample --out "$tmp/$positions" --prompt "Th" --length 12 --threads 1 >"$tmp/sample" 2>&1 || { cat "$tmp/sample"; fail "sample --positions $positions"; }
      [ "$(wc -c <"$tmp/sample")" -ge 3 ] || fail "sample --positions $positions printed nothing"
    done
    # Trax's recurrent language models train, evaluate and sample (beyond --max-len: the state carries on).
    for model in rnnlm grulm; do
      "$exe" train --out "$tmp/$model" --model "$model" --steps 2 --eval-every 2 --max-len 16 --d-model 16 --n-layers 1 \
        --batch-size 4 --threads 1 >"$tmp/log" 2>&1 \
        || { cat "$tmp/log"; fail "train --model $model"; }
      "$exe" sample --out "$tmp/$model" --prompt "Th" --length 24 --threads 1 >"$tmp/sample" 2>&1 || { cat "$tmp/sample"; fail "sample --model $model"; }
      [ "$(wc -c <"$tmp/sample")" -ge 3 ] || fail "sample --model $model printed nothing"
    done
    # A --minutes budget with no --steps plans the schedule from the first stretch's time, plans it
    # again from the second's (the first carried the start-up), stores the plan in the checkpoint,
    # and a resume continues to it. (Six seconds: the first stretch, with the start-up, takes about
    # one on a loaded 2-core machine, so the first plan leaves room for a second stretch.)
    "$exe" train --out "$tmp/budget" --minutes 0.1 --eval-every 5 --max-len 16 "${tiny[@]}" >"$tmp/log" 2>&1 || { cat "$tmp/log"; fail "train with a budget"; }
    expect "budget: 5 steps took .* minutes hold [0-9][0-9]* steps: the schedule is planned for" "$tmp/log"
    expect "budget: the next 5 steps took .* minutes (the first .*, with the start-up): the schedule is planned for" "$tmp/log"
    planned=$(sed -n 's/.*the schedule is planned for \([0-9]*\).*/\1/p' "$tmp/log" | tail -1)
    # At this size a stretch takes milliseconds and varies: the budget may end a stretch short.
    grep -Eq "trained $planned steps in this run \(steps 1 to $planned,|at step [0-9]+ of $planned " "$tmp/log" || { cat "$tmp/log"; fail "ran to a plan other than $planned"; }
    "$exe" train --out "$tmp/budget" --minutes 0.05 >"$tmp/log" 2>&1 || { cat "$tmp/log"; fail "resume of a budgeted run"; }
    grep -Eq "already trained $planned of $planned steps|trained [0-9]+ steps in this run \(steps [0-9]+ to $planned,|at step [0-9]+ of $planned " "$tmp/log" || { cat "$tmp/log"; fail "the resume did not continue to the stored plan $planned"; }
    # A budget smaller than one stretch still trains one (nothing to judge by before it) and ends on
    # a checkpoint; each rerun trains one more; the bare rerun keeps --eval-every; the last line
    # counts this run's steps, not the run's.
    "$exe" train --out "$tmp/tiny_budget" --minutes 0.000000001 --steps 9 --eval-every 3 --max-len 16 "${tiny[@]}" >"$tmp/log" 2>&1 || { cat "$tmp/log"; fail "train with a budget below one stretch"; }
    expect "time limit: stopped after .* at step 3 of 9" "$tmp/log"
    "$exe" train --out "$tmp/tiny_budget" --minutes 0.000000001 >"$tmp/log" 2>&1 || { cat "$tmp/log"; fail "rerun with a budget below one stretch"; }
    expect "time limit: stopped after .* at step 6 of 9" "$tmp/log"
    "$exe" train --out "$tmp/tiny_budget" >"$tmp/log" 2>&1 || { cat "$tmp/log"; fail "bare resume"; }
    expect "trained 3 steps in this run (steps 7 to 9," "$tmp/log"
    # Every head's attention on a text (here through rotary positions): a line per head, and maps
    # whose rows sum to 1 with nothing above the diagonal.
    "$exe" attention --out "$tmp/rotary" --threads 1 --json "$tmp/att.json" "The cat" >"$tmp/log" 2>&1 || { cat "$tmp/log"; fail "attention"; }
    grep -q "tokens long" "$tmp/log" && fail "attention: a short text called too long"
    "$exe" attention --out "$tmp/rotary" --threads 1 "$(printf 'The cat sat. %.0s' $(seq 4))" >"$tmp/log" 2>"$tmp/err" \
      || { cat "$tmp/log" "$tmp/err"; fail "attention on a long text"; }
    expect "^lm: TEXT is 52 tokens long; the model reads its first 16 (the run's --max-len)" "$tmp/err"
    expect "layer 1 head 1: reads .* positions back on average" "$tmp/log"
    /usr/bin/python3 - "$tmp/att.json" <<'PY' || fail "attention: maps that are not causal rows summing to one"
import json, sys
a = json.load(open(sys.argv[1]))
L = len(a["tokens"])
assert L == 7 and a["tokens"][0] == "<s>" and a["tokens"][1] == "T", a["tokens"]
for layer in a["layers"]:
    for head in layer:
        assert len(head) == L and all(abs(sum(r) - 1) < 1e-5 for r in head)
        assert all(head[i][j] == 0 for i in range(L) for j in range(i + 1, L))
PY
    "$exe" attention --out "$tmp/rnnlm" "The cat" >"$tmp/log" 2>&1 && fail "attention on an RNN language model"
    expect "attention needs a Transformer model; this one is rnnlm" "$tmp/log"
  else
    echo "SKIP (lm): /usr/share/games/fortunes not found (apt-get install fortunes)"
  fi
  if have_data tinyshakespeare/input.txt; then
    run=$tmp/shakespeare
    "$exe" train --data "$data/tinyshakespeare/input.txt" --out "$run" --steps 2 --eval-every 1 --max-len 32 "${tiny[@]}" >"$tmp/log" 2>&1 || { cat "$tmp/log"; fail "train"; }
    expect "Step      2: eval      loss" "$tmp/log"
    # Each evaluation that beats the earlier ones is kept as best.safetensors.
    expect "best so far: eval loss" "$tmp/log"
    [ -f "$run/best.safetensors" ] || fail "no best.safetensors after training"
    # The same --out resumes: only steps 3..4 run.
    "$exe" train --data "$data/tinyshakespeare/input.txt" --out "$run" --steps 4 --eval-every 2 "${tiny[@]}" >"$tmp/log" 2>&1 || { cat "$tmp/log"; fail "resume"; }
    expect "resuming" "$tmp/log"
    expect "Ran 2 train steps" "$tmp/log"
    grep -q "Step      1:" "$tmp/log" && fail "a resumed run started again from step 1"
    "$exe" sample --out "$run" --prompt "ROMEO:" --length 40 --threads 1 >"$tmp/sample" || fail "sample"
    expect "^ROMEO:" "$tmp/sample"
    [ "$(wc -c <"$tmp/sample")" -ge 20 ] || fail "sample too short"
    # Longer than the context (32): the sample slides.
    "$exe" sample --out "$run" --length 70 --temperature 0 --threads 1 >"$tmp/long" || fail "long sample"
    # A nucleus too small for a second token is greedy, whatever the temperature (--top-p reaches the sampler).
    "$exe" sample --out "$run" --length 30 --temperature 0 --threads 1 >"$tmp/greedy" || fail "greedy sample"
    "$exe" sample --out "$run" --length 30 --temperature 1.5 --top-p 1e-9 --threads 1 >"$tmp/nucleus" || fail "--top-p sample"
    cmp -s "$tmp/greedy" "$tmp/nucleus" || fail "--top-p 1e-9 did not sample greedily"
  fi
  "$exe" sample --out "$tmp/none" >"$tmp/log" 2>&1 && fail "sample without a model succeeded"
  expect "no model.safetensors here" "$tmp/log"
  ;;
sentiment)
  "$exe" train --data "$tmp/nowhere" --out "$tmp/x" >"$tmp/log" 2>&1 && fail "train on a missing directory succeeded"
  expect "nowhere: no such file or directory" "$tmp/log"
  if have_data imdb; then
    run=$tmp/imdb
    "$exe" train --data "$data/imdb" --out "$run" --limit 200 --vocab-size 300 --steps 3 --eval-every 3 --max-len 64 \
      "${tiny[@]}" >"$tmp/log" 2>"$tmp/err" || { cat "$tmp/log" "$tmp/err"; fail "train"; }
    expect "eval  accuracy" "$tmp/log"
    # SentencePiece's trainer logs its command line unless told not to before it starts.
    grep -q "LOG(INFO)" "$tmp/err" && { cat "$tmp/err"; fail "SentencePiece's training logged to stderr"; }
    # The checkpoint holds weight averages (--ema 0.999 by default): a resume that asks for none
    # is refused; one that leaves --ema (and the other flags) out continues the run.
    "$exe" train --data "$data/imdb" --out "$run" --limit 200 --steps 4 --eval-every 1 --ema 0 "${tiny[@]}" >"$tmp/log" 2>&1 && fail "a resume with another --ema was accepted"
    expect "  --ema 0 (the run's: 0.999)" "$tmp/log"
    "$exe" train --data "$data/imdb" --out "$run" --steps 4 --eval-every 1 >"$tmp/log" 2>&1 || { cat "$tmp/log"; fail "resume"; }
    expect "Ran 1 train steps" "$tmp/log"
    "$exe" eval --data "$data/imdb" --out "$run" --limit 40 --threads 1 >"$tmp/log" 2>"$tmp/err" || fail "eval"
    grep -q $'\r' "$tmp/err" && fail "eval wrote terminal progress (carriage returns) into a log"
    expect "test accuracy .* of 40 texts" "$tmp/log"
    # A review with no text is an input like any other: classified, and counted.
    mkdir -p "$tmp/with_empty"
    printf '1\t\n0\tA dull film.\n1\tGreat fun.\n' >"$tmp/with_empty/test.tsv"
    "$exe" eval --data "$tmp/with_empty" --out "$run" --threads 1 >"$tmp/log" 2>&1 || { cat "$tmp/log"; fail "eval with an empty review"; }
    expect "1 of the 3 reviews have no text" "$tmp/log"
    expect "test accuracy .* of 3 texts" "$tmp/log"
    "$exe" predict --out "$run" --threads 1 "A wonderful film." >"$tmp/log" || fail "predict"
    grep -Eq "^(positive|negative) \(0\.[5-9][0-9]*|1\.000\)" "$tmp/log" || { cat "$tmp/log"; fail "predict output"; }
    # Pretrain a masked LM on the reviews' text (labels unused), then fine-tune a classifier from it:
    # the body loads by name, the head is new, and the run records where its body came from.
    pretrain=$(dirname "$exe")/pretrain
    # A TSV's text column: 400 reviews (zcat ends on SIGPIPE when head has its lines: not a failure).
    (zcat "$data/imdb/train.tsv.gz" || true) | head -400 >"$tmp/unlabelled.tsv"
    "$pretrain" train --data "$tmp/unlabelled.tsv" --out "$tmp/mlm" --vocab-size 300 --steps 3 --eval-every 3 --max-len 64 \
      --piece-len 32 --d-model 16 --d-ff 32 --n-layers 1 --n-heads 2 --batch-size 8 --threads 1 >"$tmp/log" 2>&1 || { cat "$tmp/log"; fail "pretrain"; }
    expect "pieces of at most 32 tokens" "$tmp/log"
    expect "(<mask> = 3)" "$tmp/log"
    expect "held-out masked-token accuracy" "$tmp/log"
    # Continued pretraining (BERT's last phase on longer pieces): the whole masked LM and the
    # vocabulary from the run, this run's pieces and schedule; then a resume.
    "$pretrain" train --data "$tmp/unlabelled.tsv" --out "$tmp/mlm_long" --init-from "$tmp/mlm" --piece-len 64 --steps 2 \
      --eval-every 2 --batch-size 4 --threads 1 >"$tmp/log" 2>&1 || { cat "$tmp/log"; fail "continued pretraining"; }
    expect "pieces of at most 64 tokens" "$tmp/log"
    expect "loaded 22 weights" "$tmp/log"   # the body's 20 and the guess's Dense
    expect "newly initialised 0: none" "$tmp/log"
    cmp -s "$tmp/mlm/spm.model" "$tmp/mlm_long/spm.model" || fail "the continued run's vocabulary is not the pretrained one"
    "$pretrain" train --data "$tmp/unlabelled.tsv" --out "$tmp/mlm_long" --steps 3 --eval-every 1 --threads 1 >"$tmp/log" 2>&1 ||
      { cat "$tmp/log"; fail "continued pretraining, resumed"; }
    expect "Ran 1 train steps" "$tmp/log"
    # --sample: 200 reviews drawn at random from all 25,000 (a few-labels experiment), not the first.
    "$exe" train --data "$data/imdb" --out "$tmp/ft" --init-from "$tmp/mlm" --sample 200 --steps 3 --eval-every 3 \
      --batch-size 4 --threads 1 >"$tmp/log" 2>&1 || { cat "$tmp/log"; fail "fine-tune"; }
    expect "180 training texts in 2 classes" "$tmp/log"
    expect "loaded 20 weights" "$tmp/log"   # the embedding, the position table, the block, the final norm
    expect "newly initialised 2:" "$tmp/log"
    expect "unused in the file 2:" "$tmp/log"
    cmp -s "$tmp/mlm/spm.model" "$tmp/ft/spm.model" || fail "the fine-tuned run's vocabulary is not the pretrained one"
    "$exe" train --data "$data/imdb" --out "$tmp/ft" --steps 4 --eval-every 1 >"$tmp/log" 2>&1 || { cat "$tmp/log"; fail "fine-tune resume"; }
    expect "Ran 1 train steps" "$tmp/log"
    "$exe" eval --data "$data/imdb" --out "$tmp/ft" --limit 20 --threads 1 --json "$tmp/ft.json" >"$tmp/log" 2>&1 ||
      fail "eval of the fine-tuned run"
    expect "test accuracy .* of 20 texts" "$tmp/log"
    # What plot_label_curve.py reads: the labels the run learned from and the run it started from.
    expect '"train_sample": 200' "$tmp/ft.json"
    expect "\"init_from\": \"$tmp/mlm/" "$tmp/ft.json"
    expect '"n": 20' "$tmp/ft.json"
    # Kim's CNN-non-static: a CNN takes the body's embedding table alone (its width and vocabulary),
    # its own --n-filters; a resume and an eval read its settings from the run.
    "$exe" train --data "$data/imdb" --out "$tmp/ft_cnn" --model cnn --init-from "$tmp/mlm" --n-filters 6 --sample 200 \
      --steps 3 --eval-every 3 --batch-size 4 --threads 1 >"$tmp/log" 2>&1 || { cat "$tmp/log"; fail "fine-tune a CNN"; }
    expect "loaded 1 weights:" "$tmp/log"
    expect "Serial/Embedding_300_16\[0\]/table" "$tmp/log"
    expect "newly initialised 8:" "$tmp/log"   # three filters' w and b, the Dense's
    expect "unused in the file 21:" "$tmp/log"
    expect "trainable weights: 6008$" "$tmp/log"   # 300·16 + (3 + 4 + 5)·16·6 + 6·3 + (18·2 + 2)
    "$exe" train --data "$data/imdb" --out "$tmp/ft_cnn" --steps 4 --eval-every 1 >"$tmp/log" 2>&1 || { cat "$tmp/log"; fail "CNN fine-tune resume"; }
    expect "Ran 1 train steps" "$tmp/log"
    "$exe" eval --data "$data/imdb" --out "$tmp/ft_cnn" --limit 20 --threads 1 >"$tmp/log" 2>&1 || fail "eval of the fine-tuned CNN"
    expect "test accuracy .* of 20 texts" "$tmp/log"
    # --mask-tokens: the training reviews hidden as pretraining hid them, drawn afresh for each batch
    # from the seed and the batch's index: 4 steps straight give the weights of 2, a resume and 2,
    # and other weights than the same run without the noise.
    noised=(--data "$data/imdb" --init-from "$tmp/mlm" --sample 200 --eval-every 2 --batch-size 4 --threads 1)
    "$exe" train --out "$tmp/noise4" "${noised[@]}" --mask-tokens 0.3 --steps 4 >"$tmp/log" 2>&1 || { cat "$tmp/log"; fail "--mask-tokens"; }
    "$exe" train --out "$tmp/noise2" "${noised[@]}" --mask-tokens 0.3 --steps 2 >"$tmp/log" 2>&1 || { cat "$tmp/log"; fail "--mask-tokens, 2 steps"; }
    "$exe" train --out "$tmp/noise2" --data "$data/imdb" --steps 4 >"$tmp/log" 2>&1 || { cat "$tmp/log"; fail "--mask-tokens, resumed"; }
    "$exe" train --out "$tmp/plain4" "${noised[@]}" --steps 4 >"$tmp/log" 2>&1 || { cat "$tmp/log"; fail "the same run without noise"; }
    for run in noise4 noise2 plain4; do   # the accuracy and loss (to 4 decimals), not the time
      "$exe" eval --data "$data/imdb" --out "$tmp/$run" --limit 40 --threads 1 >"$tmp/log" 2>&1 || { cat "$tmp/log"; fail "eval of $run"; }
      grep -o "test accuracy .*, loss [0-9.]*" "$tmp/log" >"$tmp/$run.eval" || { cat "$tmp/log"; fail "eval of $run printed no loss"; }
    done
    cmp -s "$tmp/noise4.eval" "$tmp/noise2.eval" || { cat "$tmp/noise4.eval" "$tmp/noise2.eval"; fail "--mask-tokens: a resume is not the same run"; }
    cmp -s "$tmp/noise4.eval" "$tmp/plain4.eval" && fail "--mask-tokens 0.3 trained the weights it trains without noise"
    # --layer-decay: each block learns at 0.5 times the rate of the one above it; a resume takes
    # the run's decay (and recomputes the same rates), and the weights differ from the same run's
    # at one rate.
    "$exe" train --out "$tmp/decay4" "${noised[@]}" --layer-decay 0.5 --steps 4 >"$tmp/log" 2>&1 || { cat "$tmp/log"; fail "--layer-decay"; }
    expect "layer-wise rates: the head at --lr, each block below it at 0.5 times the rate above (1 block), the embedding at 0.25 times --lr" "$tmp/log"
    "$exe" train --out "$tmp/decay2" "${noised[@]}" --layer-decay 0.5 --steps 2 >"$tmp/log" 2>&1 || { cat "$tmp/log"; fail "--layer-decay, 2 steps"; }
    "$exe" train --out "$tmp/decay2" --data "$data/imdb" --steps 4 >"$tmp/log" 2>&1 || { cat "$tmp/log"; fail "--layer-decay, resumed"; }
    expect "layer-wise rates" "$tmp/log"
    for run in decay4 decay2; do
      "$exe" eval --data "$data/imdb" --out "$tmp/$run" --limit 40 --threads 1 >"$tmp/log" 2>&1 || { cat "$tmp/log"; fail "eval of $run"; }
      grep -o "test accuracy .*, loss [0-9.]*" "$tmp/log" >"$tmp/$run.eval" || { cat "$tmp/log"; fail "eval of $run printed no loss"; }
    done
    cmp -s "$tmp/decay4.eval" "$tmp/decay2.eval" || { cat "$tmp/decay4.eval" "$tmp/decay2.eval"; fail "--layer-decay: a resume is not the same run"; }
    cmp -s "$tmp/decay4.eval" "$tmp/plain4.eval" && fail "--layer-decay 0.5 trained the weights it trains at one rate"
    # Self-training: the fine-tuned run labels the 24,800 reviews --sample left out (every one at
    # --teacher-confidence 0), and they train beside the 180; a resume labels them again, from the
    # same weights — changed weights are refused, since their labels would not be the run's.
    cp -r "$tmp/ft" "$tmp/teacher"
    "$exe" train --data "$data/imdb" --out "$tmp/student" --init-from "$tmp/mlm" --sample 200 --teacher "$tmp/teacher" \
      --teacher-confidence 0 --steps 2 --eval-every 2 --batch-size 4 --threads 1 >"$tmp/log" 2>&1 || { cat "$tmp/log"; fail "self-training"; }
    expect "labelled 24800 of the 24800 texts left out of the sample" "$tmp/log"
    expect "24980 training texts in 2 classes" "$tmp/log"
    expect "20 held out" "$tmp/log"   # labelled ones, a tenth of the 200
    expect "self-training: this run keeps its last weights" "$tmp/log"
    [ -e "$tmp/student/best.safetensors" ] && fail "a self-training student kept the held-out's best checkpoint"
    "$exe" train --data "$data/imdb" --out "$tmp/student" --steps 3 --eval-every 1 --teacher-confidence 0 >"$tmp/log" 2>&1 ||
      { cat "$tmp/log"; fail "self-training resume (its --teacher from the run)"; }
    expect "Ran 1 train steps" "$tmp/log"
    "$exe" eval --data "$data/imdb" --out "$tmp/student" --limit 20 --threads 1 --json "$tmp/student.json" >"$tmp/log" 2>&1 ||
      fail "eval of the self-trained run"
    expect "\"teacher\": \"$tmp/teacher/" "$tmp/student.json"
    expect "\"weights\": \"$tmp/student/model.safetensors\"" "$tmp/student.json"   # its last weights
    "$exe" train --data "$data/imdb" --out "$tmp/teacher" --steps 6 --eval-every 1 >"$tmp/log" 2>&1 || { cat "$tmp/log"; fail "teacher trained on"; }
    "$exe" train --data "$data/imdb" --out "$tmp/student" --steps 4 --eval-every 1 >"$tmp/log" 2>&1 && fail "a resume from a changed teacher was accepted"
    expect "changed since this run began" "$tmp/log"
    # ELECTRA: a generator a quarter as wide fills the hidden positions, the encoder tells original
    # from replaced; fine-tuning takes the encoder's body from under its prefix, drops the rest.
    "$pretrain" train --data "$tmp/unlabelled.tsv" --out "$tmp/electra" --objective electra --vocab-size 300 --steps 3 \
      --eval-every 3 --max-len 64 --piece-len 32 --d-model 16 --d-ff 32 --n-layers 1 --n-heads 2 --batch-size 8 --threads 1 \
      >"$tmp/log" 2>&1 || { cat "$tmp/log"; fail "pretrain --objective electra"; }
    expect "eval  replaced_accuracy" "$tmp/log"
    expect "the discriminator told" "$tmp/log"
    "$exe" train --data "$data/imdb" --out "$tmp/ft_electra" --init-from "$tmp/electra" --limit 200 --steps 3 \
      --eval-every 3 --batch-size 4 --threads 1 >"$tmp/log" 2>&1 || { cat "$tmp/log"; fail "fine-tune from ELECTRA"; }
    expect "loaded 20 weights" "$tmp/log"
    expect "newly initialised 2:" "$tmp/log"
    expect "unused in the file 24:" "$tmp/log"   # the generator (a masked LM: 22) and the detector's Dense(1)
    # A CNN takes the embedding from under the discriminator's prefix too.
    "$exe" train --data "$data/imdb" --out "$tmp/ft_electra_cnn" --init-from "$tmp/electra" --model cnn --n-filters 6 \
      --limit 200 --steps 1 --batch-size 4 --threads 1 >"$tmp/log" 2>&1 || { cat "$tmp/log"; fail "a CNN from ELECTRA"; }
    expect "loaded 1 weights:" "$tmp/log"
    expect "unused in the file 43:" "$tmp/log"   # all the file's 44 weights but the embedding table
  fi
  ;;
translate)
  if have_data multi30k; then
    run=$tmp/multi30k
    "$exe" train --data "$data/multi30k" --out "$run" --limit 200 --vocab-size 300 --steps 3 --eval-every 3 --max-len 48 "${tiny[@]}" >"$tmp/log" 2>&1 || { cat "$tmp/log"; fail "train"; }
    expect "eval  accuracy" "$tmp/log"
    "$exe" translate --out "$run" --threads 1 "A dog runs." >"$tmp/log" || fail "translate"
    "$exe" translate --out "$run" --threads 1 --beams 2 "A dog runs." >"$tmp/log" || fail "translate with beams"
    # A source longer than the run's --max-len (48) is read up to there, and the run says so.
    long=$(printf 'A dog runs across the green field. %.0s' $(seq 20))
    "$exe" translate --out "$run" --threads 1 "A dog runs." "$long" >"$tmp/log" 2>"$tmp/err" \
      || fail "translate a long text"
    expect "TEXT 2 of 2 is [0-9]* tokens long; the model reads its first 48 (the run's --max-len)" "$tmp/err"
    grep -q "TEXT 1 of 2" "$tmp/err" && fail "translate: a short text called too long"
    [ "$(wc -l <"$tmp/log")" -eq 2 ] || fail "translate a long text: expected two lines"
    "$exe" bleu --data "$data/multi30k" --out "$run" --limit 8 --threads 1 >"$tmp/log" 2>"$tmp/err" || fail "bleu"
    # (this vocabulary of 300 pieces cuts some sentences into more than 48)
    expect "[1-7] of the 8 test_2016_flickr sentences are longer than the 48 tokens the model reads" "$tmp/err"
    expect "greedy): BLEU = " "$tmp/log"
    expect "beam 4): BLEU = " "$tmp/log"
    # Trax's LSTMSeq2SeqAttn with the notes' additive score: train, translate greedily and with beams.
    "$exe" train --data "$data/multi30k" --out "$tmp/lstm" --model lstm --score additive --limit 200 --vocab-size 300 \
      --steps 3 --eval-every 3 --max-len 48 --d-model 16 --n-layers 1 --n-heads 2 --batch-size 4 --threads 1 >"$tmp/log" 2>&1 || { cat "$tmp/log"; fail "train --model lstm"; }
    expect "eval  accuracy" "$tmp/log"
    "$exe" translate --out "$tmp/lstm" --threads 1 --beams 2 "A dog runs." "Two men." >"$tmp/log" || fail "translate (lstm)"
    [ "$(wc -l <"$tmp/log")" -eq 2 ] || fail "translate (lstm): expected two lines"
    "$exe" align --out "$tmp/lstm" --threads 1 --json "$tmp/align.json" "A dog runs." >"$tmp/log" || fail "align"
    expect "alignment written to" "$tmp/log"
    /usr/bin/python3 - "$tmp/align.json" <<'PY' || fail "align: rows of weights that do not sum to one"
import json, sys
a = json.load(open(sys.argv[1]))
assert a["target"] and len(a["weights"]) == len(a["target"])   # an untrained model may never write EOS
assert all(len(r) == len(a["source"]) and abs(sum(r) - 1) < 1e-4 for r in a["weights"])
PY
    # The Transformer's alignment is its last cross-attention, one map per head and their mean.
    "$exe" align --out "$run" --threads 1 --json "$tmp/align_t.json" "A dog runs." >"$tmp/log" 2>&1 || { cat "$tmp/log"; fail "align on the Transformer"; }
    /usr/bin/python3 - "$tmp/align_t.json" <<'PY' || fail "align (Transformer): heads whose rows do not sum to one"
import json, sys
a = json.load(open(sys.argv[1]))
assert a["heads"] and all(len(h) == len(a["target"]) for h in a["heads"])
assert all(len(r) == len(a["source"]) and abs(sum(r) - 1) < 1e-4 for h in a["heads"] + [a["weights"]] for r in h)
PY
    "$exe" train --data "$data/multi30k" --out "$tmp/lstm" --model transformer >"$tmp/log" 2>&1 && fail "resume with another --model"
    expect "model" "$tmp/log"
  fi
  "$exe" train --data "$tmp/nowhere" --out "$tmp/x" >"$tmp/log" 2>&1 && fail "train on a missing directory succeeded"
  expect "nowhere: no such file or directory" "$tmp/log"
  ;;
chatbot)
  if have_data chatbot_ko/ChatbotData.csv.gz; then
    run=$tmp/chatbot
    "$exe" train --data "$data/chatbot_ko/ChatbotData.csv.gz" --out "$run" --vocab-size 1500 --steps 3 --eval-every 3 \
      --warmup 2 "${tiny[@]}" >"$tmp/log" 2>&1 || { cat "$tmp/log"; fail "train"; }
    expect "11232 training pairs, 591 held out" "$tmp/log"   # all 11,823 pairs read, 5% held out
    expect "eval  accuracy" "$tmp/log"
    "$exe" ask --out "$run" --threads 1 "영화 볼래?" "고마워" >"$tmp/log" || fail "ask"
    [ "$(wc -l <"$tmp/log")" -eq 2 ] || fail "ask: expected one answer line per question"
    "$exe" ask --out "$run" --threads 1 --beams 2 "영화 볼래?" >"$tmp/log" || fail "ask with beams"
    # chat in a pipe: one answer line per question line, an empty question included.
    printf '오늘 너무 힘들어\n\n고마워\n' | "$exe" chat --out "$run" --threads 1 >"$tmp/log" 2>"$tmp/err" || fail "chat"
    [ "$(wc -l <"$tmp/log")" -eq 3 ] || { cat "$tmp/log"; fail "chat: expected 3 answer lines"; }
    [ -s "$tmp/err" ] && { cat "$tmp/err"; fail "chat printed a prompt into a pipe"; }
    # A question longer than the run's --max-len (40) is read up to there, and chat says which line.
    long=$(printf '오늘 영화 볼래? %.0s' $(seq 30))
    printf '고마워\n%s\n' "$long" | "$exe" chat --out "$run" --threads 1 >"$tmp/log" 2>"$tmp/err" \
      || fail "chat, a long line"
    expect "^chatbot: line 2 is [0-9]* tokens long; the model reads its first 40 (the run's --max-len)" "$tmp/err"
    [ "$(wc -l <"$tmp/err")" -eq 1 ] || { cat "$tmp/err"; fail "chat, a long line: expected one note"; }
    # chat on a terminal (script(1) gives it a pseudo-terminal): the prompt, then an answer per question.
    if command -v script >/dev/null; then
      printf '영화 볼래?\n고마워\n' | script -qec "$exe chat --out $run --threads 1" /dev/null >"$tmp/log" 2>&1 \
        || { cat "$tmp/log"; fail "chat on a terminal"; }
      expect "one question per line; Ctrl-D ends" "$tmp/log"
      [ "$(grep -c '^> .' "$tmp/log")" -eq 2 ] || { cat -A "$tmp/log"; fail "chat on a terminal: expected 2 prompted answers"; }
    fi
    # The classifier reads the same CSV: the questions' topic labels, three classes.
    sentiment=$(dirname "$exe")/sentiment
    # --max-len 20, no multiple of 16: eval pads its batches to 20 at most, not past the position table.
    "$sentiment" train --data "$data/chatbot_ko/ChatbotData.csv.gz" --out "$tmp/topic" --vocab-size 1500 --steps 3 \
      --eval-every 3 --max-len 20 "${tiny[@]}" >"$tmp/log" 2>&1 || { cat "$tmp/log"; fail "sentiment train on the CSV"; }
    expect "9641 training texts in 3 classes" "$tmp/log"   # 90% of the 11,823 pairs, less 1,000 held out
    "$sentiment" eval --data "$data/chatbot_ko/ChatbotData.csv.gz" --out "$tmp/topic" --threads 1 >"$tmp/log" 2>&1 || fail "sentiment eval on the CSV"
    expect "test accuracy .* of 1182 texts" "$tmp/log"
    "$sentiment" predict --out "$tmp/topic" --threads 1 "헤어졌어" >"$tmp/log" || fail "sentiment predict, 3 classes"
    grep -Eq "^class [012] \(" "$tmp/log" || { cat "$tmp/log"; fail "predict output with 3 classes"; }
    # The encoder from a masked LM pretrained with the chatbot's own settings (the paper's post-norm,
    # scaled embeddings): every weight of its body lands in the encoder, its guess goes unused.
    # --max-len 20 is no multiple of 16: batches pad to 20, not past the position table.
    pretrain=$(dirname "$exe")/pretrain
    (zcat "$data/chatbot_ko/ChatbotData.csv.gz" || true) | head -400 | cut -d, -f1 >"$tmp/questions.txt"
    "$pretrain" train --data "$tmp/questions.txt" --out "$tmp/ko_mlm" --vocab-size 1000 --steps 3 --eval-every 3 \
      --max-len 20 --norm post --scale-embeddings "${tiny[@]}" >"$tmp/log" 2>&1 || { cat "$tmp/log"; fail "pretrain (post-norm)"; }
    "$exe" train --data "$data/chatbot_ko/ChatbotData.csv.gz" --out "$tmp/chat_ft" --init-from "$tmp/ko_mlm" --steps 3 \
      --eval-every 3 --warmup 2 --batch-size 4 --threads 1 >"$tmp/log" 2>&1 || { cat "$tmp/log"; fail "chatbot fine-tune"; }
    expect "loaded 18 weights" "$tmp/log"   # the embedding, the position table, the block: 2 Add & Norms, 6 Denses
    expect "unused in the file 2:" "$tmp/log"
    "$pretrain" train --data "$tmp/questions.txt" --out "$tmp/ko_electra" --objective electra --vocab-size 1000 --steps 2 \
      --eval-every 2 --max-len 20 --norm post --scale-embeddings "${tiny[@]}" >"$tmp/log" 2>&1 || { cat "$tmp/log"; fail "pretrain --objective electra (post-norm)"; }
    "$exe" train --data "$data/chatbot_ko/ChatbotData.csv.gz" --out "$tmp/chat_electra" --init-from "$tmp/ko_electra" \
      --steps 1 --eval-every 1 --warmup 1 --batch-size 4 --threads 1 >"$tmp/log" 2>&1 || { cat "$tmp/log"; fail "chatbot fine-tune from ELECTRA"; }
    expect "loaded 18 weights" "$tmp/log"
    cmp -s "$tmp/ko_mlm/spm.model" "$tmp/chat_ft/spm.model" || fail "the chatbot's vocabulary is not the pretrained one"
    "$exe" train --data "$data/chatbot_ko/ChatbotData.csv.gz" --out "$tmp/chat_ft" --steps 4 --eval-every 1 >"$tmp/log" 2>&1 ||
      { cat "$tmp/log"; fail "chatbot fine-tune resume"; }
    expect "Ran 1 train steps" "$tmp/log"
    # The checkpoint's configuration keeps the record (a header of JSON text at the file's start).
    # Not `head | grep -q` under pipefail: grep may stop reading at the match, and head's next write
    # then dies of SIGPIPE, failing a pipeline whose grep succeeded.
    grep -aq "init_from\\\\\":\\\\\"$tmp/ko_mlm/" < <(head -c 65536 "$tmp/chat_ft/model.safetensors") ||
      fail "the fine-tuned chatbot's checkpoint does not record its pretrained run"
    "$exe" ask --out "$tmp/chat_ft" --threads 1 "영화 볼래?" >"$tmp/log" || fail "ask the fine-tuned chatbot"
    "$exe" ask --out "$run" "" >"$tmp/log" 2>&1 && fail "an empty question was accepted"
    expect "QUESTION 1 of 1 is empty" "$tmp/log"
  else
    echo "SKIP (chatbot): $data/chatbot_ko/ChatbotData.csv.gz not found"
  fi
  "$exe" train --data "$tmp/nowhere.csv" --out "$tmp/x" >"$tmp/log" 2>&1 && fail "train on a missing file succeeded"
  expect "nowhere.csv" "$tmp/log"
  ;;
image)
  "$exe" train --data "$tmp/nowhere" --out "$tmp/x" >"$tmp/log" 2>&1 && fail "train on a missing directory succeeded"
  expect "nowhere: no such file or directory" "$tmp/log"
  "$exe" train --out "$tmp/x" --n-blocks 2 >"$tmp/log" 2>&1 && fail "--n-blocks with --model mlp was accepted"
  expect "n-blocks applies to --model convnet or wideresnet only" "$tmp/log"
  fashion=/usr/share/datasets/fashion-mnist
  if [ -d "$fashion" ]; then
    run=$tmp/fashion
    "$exe" train --out "$run" --widths 32 --steps 40 --eval-every 20 --batch-size 32 --threads 1 >"$tmp/log" 2>&1 || { cat "$tmp/log"; fail "train"; }
    expect "55000 training images (5000 held out)" "$tmp/log"
    expect "eval  accuracy" "$tmp/log"
    "$exe" train --out "$run" --steps 42 >"$tmp/log" 2>&1 || { cat "$tmp/log"; fail "resume"; }
    expect "Ran 2 train steps" "$tmp/log"
    "$exe" eval --out "$run" --json "$tmp/c.json" --threads 1 >"$tmp/log" 2>&1 || { cat "$tmp/log"; fail "eval"; }
    expect "Ankle boot" "$tmp/log"
    expect "test accuracy 0\.[4-9][0-9]* (.* of 10000 images)" "$tmp/log"
    python3 -c "import json; j = json.load(open('$tmp/c.json')); assert sum(map(sum, j['confusion'])) == 10000" || fail "confusion matrix"
    # WideResnet: a step with augmentation, then a resume.
    "$exe" train --out "$tmp/wrn" --model wideresnet --augment --steps 1 --eval-every 1 --batch-size 4 --threads 1 >"$tmp/log" 2>&1 || { cat "$tmp/log"; fail "wideresnet"; }
    expect "32×32 pixels; WideResnet, augmented" "$tmp/log"
    # ConvNet: its settings stored, so eval rebuilds the same model.
    "$exe" train --out "$tmp/cnn" --model convnet --filters 16 --n-blocks 1 --dropout 0.2 --steps 2 --eval-every 2 \
      --batch-size 4 --threads 1 >"$tmp/log" 2>&1 || { cat "$tmp/log"; fail "convnet"; }
    expect "28×28 pixels; ConvNet" "$tmp/log"
    "$exe" eval --out "$tmp/cnn" --threads 1 >"$tmp/log" 2>&1 || { cat "$tmp/log"; fail "convnet eval"; }
    expect "ConvNet from" "$tmp/log"
  else
    echo "SKIP (image): $fashion not found (apt-get install dataset-fashion-mnist); dataset part skipped"
  fi
  ;;
*) fail "unknown example $which" ;;
esac
echo "$which example ok"
