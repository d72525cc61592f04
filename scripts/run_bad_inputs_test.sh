#!/usr/bin/env bash
# The catalogue of bad inputs: every case runs one command that must fail with a clear message
# (a pattern that names what was wrong), a non-zero exit status and never a signal or a hang.
#   run_bad_inputs_test.sh BUILD_DIR        (meson runs it as the `bad_inputs` test)
# Each case is one line of `bad`: a name, the pattern expected in the output, then the command.
# Everything it needs it makes in a temporary directory (tiny text, TSV and parallel files, tiny
# trained models); nothing is read from ../shared/data.
set -uo pipefail
build=$(cd "${1:-build}" && pwd)
run_sh=$(cd "$(dirname "$0")/.." && pwd)/bench/run.sh
lm=$build/examples/lm
sentiment=$build/examples/sentiment
translate=$build/examples/translate
bench=$build/bench/bench_train
engine=$build/bench/bench_engine
chatbot=$build/examples/chatbot
inspect=$build/examples/inspect
image=$build/examples/image
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp"
export OPENBLAS_NUM_THREADS=1
tiny=(--d-model 16 --d-ff 32 --n-layers 1 --n-heads 2 --batch-size 4 --threads 1)

passed=0
failed=0
bad() {  # bad NAME PATTERN COMMAND...
  local name=$1 pattern=$2
  shift 2
  timeout 120 "$@" >"$tmp/out" 2>&1
  local status=$?
  local why=""
  if [ "$status" -eq 0 ]; then why="exit status 0"
  elif [ "$status" -eq 124 ]; then why="hung (killed after 120 s)"
  elif [ "$status" -ge 128 ]; then why="ended by signal $((status - 128))"
  elif grep -qE "ERROR: (Address|Leak)Sanitizer|runtime error:" "$tmp/out"; then why="a sanitizer report"
  elif ! grep -qF -- "$pattern" "$tmp/out"; then why="message lacks '$pattern'"
  fi
  if [ -z "$why" ]; then
    passed=$((passed + 1))
  else
    failed=$((failed + 1))
    echo "FAIL $name: $why"
    sed 's/^/    /' "$tmp/out" | tail -5
  fi
}
must() { "$@" >"$tmp/setup.log" 2>&1 || { cat "$tmp/setup.log"; echo "setup failed: $*"; exit 1; }; }

# Rewrites a checkpoint with a Python edit of its header `h`, metadata `m`, config `c` (a dict)
# or data bytes `data`, then recomputes the data checksum and drops the header checksum, as an
# older ctrax wrote it — so the edit itself, not a checksum, is what the reader must catch.
edit_checkpoint() {  # edit_checkpoint FILE PYTHON
  python3 - "$1" "$2" <<'PY'
import json, struct, sys, zlib
path, edit = sys.argv[1], sys.argv[2]
b = open(path, 'rb').read()
n = struct.unpack('<Q', b[:8])[0]
h = json.loads(b[8:8 + n]); data = bytearray(b[8 + n:])
m = h['__metadata__']; m.pop('header_crc32', None)
c = json.loads(m['config'])
weights = sorted((v['data_offsets'][0], k) for k, v in h.items()
                 if k != '__metadata__' and not k.startswith(('opt', 'state/')))
exec(edit)
if c is not None: m['config'] = json.dumps(c)
m['crc32'] = str(zlib.crc32(bytes(data)))
t = json.dumps(h, separators=(',', ':')).encode()
t += b' ' * ((8 - len(t) % 8) % 8)
open(path, 'wb').write(struct.pack('<Q', len(t)) + t + bytes(data))
PY
}

# --- fixtures -------------------------------------------------------------------------------
python3 - <<'PY'
import gzip, random
random.seed(1)
words = "the a film movie good bad great awful plot actor scene loved hated boring moving".split()
text = "\n".join(" ".join(random.choice(words) for _ in range(12)) for _ in range(400)) + "\n"
open("text.txt", "w").write(text)
gz = gzip.compress(text.encode())
open("text.txt.gz", "wb").write(gz)
open("cut.txt.gz", "wb").write(gz[: len(gz) // 2])
rows = [f"{i % 2}\t" + " ".join(random.choice(words) for _ in range(10)) for i in range(200)]
import os
os.makedirs("imdb", exist_ok=True)
open("imdb/train.tsv", "w").write("\n".join(rows) + "\n")
open("imdb/test.tsv", "w").write("\n".join(rows[:20]) + "\n")
for name, body in {"label2": rows[:5] + ["2\tthree classes?"], "notab": rows[:5] + ["no tab here"],
                   "blank": rows[:5] + [""] + rows[5:9], "word": rows[:3] + ["positive\tnice"]}.items():
    os.makedirs(name, exist_ok=True)
    open(f"{name}/train.tsv", "w").write("\n".join(body) + "\n")
    open(f"{name}/test.tsv", "w").write("\n".join(body) + "\n")
open("badquote.csv", "w").write('Q,A,label\r\n"never closed,answer,0\r\n')
os.makedirs("cutgz", exist_ok=True)
g = gzip.compress(("\n".join(rows) + "\n").encode())
open("cutgz/train.tsv.gz", "wb").write(g[: len(g) // 2])
os.makedirs("m30k", exist_ok=True)
en = [" ".join(random.choice(words) for _ in range(6)) for _ in range(120)]
for split in ["train", "val", "test_2016_flickr"]:
    open(f"m30k/{split}.en", "w").write("\n".join(en) + "\n")
    open(f"m30k/{split}.de", "w").write("\n".join(reversed(en)) + "\n")
os.makedirs("m30k_uneven", exist_ok=True)
open("m30k_uneven/train.en", "w").write("\n".join(en) + "\n")
open("m30k_uneven/train.de", "w").write("\n".join(en[:-3]) + "\n")
open("long_lines.txt", "w").write(("x" * 100001 + "\n") * 10)   # the first 90% (training): 9 whole lines
qa = ["Q,A,label"] + [f"{' '.join(random.choice(words) for _ in range(4))},{' '.join(random.choice(words) for _ in range(4))},{i % 3}"
                      for i in range(120)]
open("qa.csv", "w").write("\n".join(qa) + "\n")
open("qa_stray.csv", "w").write("\n".join(qa[:5] + ['"a quoted question" and more,answer,0'] + qa[5:20]) + "\n")
open("qa_inner.csv", "w").write("\n".join(qa[:7] + ['say "hi",answer,1'] + qa[7:20]) + "\n")
os.makedirs("hugelabel", exist_ok=True)
open("hugelabel/train.tsv", "w").write("\n".join(rows[:8] + ["999999999\ta stray label"] + rows[8:30]) + "\n")
os.makedirs("manychars", exist_ok=True)   # 400 distinct Hangul syllables: more than a vocabulary of 60 holds
hangul = "".join(chr(0xAC00 + i) for i in range(400))
open("manychars/train.tsv", "w").write("\n".join(f"{i % 2}\t{hangul[i:i + 40]} {hangul[i * 7 % 360:i * 7 % 360 + 40]}"
                                                for i in range(360)) + "\n")
open("manychars/test.tsv", "w").write("0\tx\n1\ty\n")
os.makedirs("corpus", exist_ok=True)
open("corpus/a.txt", "w").write(text)
open("changing.txt", "w").write(text)
PY
: >empty.txt
mkdir -p emptydir
must "$lm" train --data text.txt --out lmrun --steps 2 --eval-every 2 --max-len 16 "${tiny[@]}"
must "$sentiment" train --data imdb --out srun --vocab-size 60 --steps 2 --eval-every 2 --max-len 32 "${tiny[@]}"
must "$translate" train --data m30k --out trun --vocab-size 60 --steps 2 --eval-every 2 --max-len 16 "${tiny[@]}"
must "$chatbot" train --data qa.csv --out crun --vocab-size 60 --steps 2 --eval-every 2 --max-len 16 --held-out 0.1 "${tiny[@]}"
must "$sentiment" train --data qa.csv --out srun2 --vocab-size 60 --steps 2 --eval-every 2 --max-len 32 "${tiny[@]}"
must "$lm" train --data changing.txt --out lmchange --steps 2 --eval-every 2 --max-len 16 "${tiny[@]}"
must "$lm" train --data corpus --out lmcorpus --steps 2 --eval-every 2 --max-len 16 "${tiny[@]}"
fresh() { rm -rf "$1"; cp -r lmrun "$1"; rm -f "$1/.lock"; }   # a copy of the lm run to corrupt

# --- lm train: flags ------------------------------------------------------------------------
T=("$lm" train --out new --data text.txt)
bad lr-nan            "--lr: expected a number above 0 and at most 10, got nan" "${T[@]}" --lr nan
bad lr-inf            "--lr: expected a number above 0" "${T[@]}" --lr inf
bad lr-negative       "--lr: expected a number above 0" "${T[@]}" --lr -1
bad lr-huge           "--lr: expected a number above 0 and at most 10, got 1e30" "${T[@]}" --lr 1e30
bad lr-text           "--lr: expected a number" "${T[@]}" --lr fast
bad max-len-0         "--max-len: expected a number from 2 to 1048576, got 0" "${T[@]}" --max-len 0
bad max-len-1         "--max-len: expected a number from 2" "${T[@]}" --max-len 1
bad threads-huge      "--threads: expected a number from 0 to 256, got 100000" "${T[@]}" --threads 100000
bad threads-negative  "--threads: expected a number from 0 to 256" "${T[@]}" --threads -1
bad batch-size-0      "--batch-size: expected a number from 1" "${T[@]}" --batch-size 0
bad batch-size-huge   "--batch-size: expected a number from 1 to 1048576, got 1e30" "${T[@]}" --batch-size 1e30
bad steps-0           "--steps: expected a number from 1" "${T[@]}" --steps 0
bad eval-batches-negative "--eval-batches: expected a number from 0 to 1000000000000, got -1" "${T[@]}" --eval-batches -1
bad steps-overflow    "--steps: expected a number from 1 to 1000000000000, got 99999999999999999999999" "${T[@]}" --steps 99999999999999999999999
bad steps-text        "--steps" "${T[@]}" --steps many
bad dropout-1         "--dropout: expected a number from 0 to 0.99, got 1" "${T[@]}" --dropout 1
bad dropout-nan       "--dropout: expected a number from 0 to 0.99, got nan" "${T[@]}" --dropout nan
bad d-model-0         "--d-model: expected a number from 1" "${T[@]}" --d-model 0
bad d-model-huge      "--d-model: expected a number from 1 to 65536, got 1e400" "${T[@]}" --d-model 1e400
bad model-too-large   "the model's weights and buffers need" "${T[@]}" --d-model 65536 --n-layers 1000 --steps 1
bad step-too-large    "Loop: a training step of task 0 needs about" "${T[@]}" --d-model 16 --d-ff 1048576 --n-layers 1 \
  --batch-size 128 --max-len 128 --steps 1
bad d-ff-0            "--d-ff: expected a number from 1" "${T[@]}" --d-ff 0
bad n-heads-0         "--n-heads: expected a number from 1" "${T[@]}" --n-heads 0
bad n-heads-divide    "not a multiple of the requested number of attention heads (3)" "${T[@]}" --d-model 16 --n-heads 3 --max-len 16 --batch-size 2 --steps 1
bad n-layers-0        "--n-layers: expected a number from 1" "${T[@]}" --n-layers 0
bad warmup-negative   "--warmup: expected a number from 0" "${T[@]}" --warmup -5
bad ema-1             "--ema: expected a number from 0 to 0.99999, got 1" "${T[@]}" --ema 1
bad schedule-unknown  "--schedule: linear not in {cosine,rsqrt,noam}" "${T[@]}" --schedule linear
bad optimizer-unknown "--optimizer: lion not in {adam,adafactor,momentum,rmsprop,sm3,sgd}" "${T[@]}" --optimizer lion
bad eval-every-0      "--eval-every: expected a number from 1" "${T[@]}" --eval-every 0
bad minutes-negative  "--minutes: expected a number from 0" "${T[@]}" --minutes -1
bad seed-negative     "--seed: expected a number from 0" "${T[@]}" --seed -1
bad tokenizer-unknown "--tokenizer: bpe not in {char,sentencepiece}" "${T[@]}" --tokenizer bpe
bad vocab-size-0      "--vocab-size: expected a number from 8" "${T[@]}" --vocab-size 0
bad unknown-flag      "The following arguments were not expected: blue --colour" "${T[@]}" --colour blue
bad no-subcommand     "A subcommand is required" "$lm"

# --- lm train: data -------------------------------------------------------------------------
L=("$lm" train --out new "${tiny[@]}" --max-len 16 --steps 1)
bad data-missing      "nowhere.txt: no such file or directory" "${L[@]}" --data nowhere.txt
bad data-empty        "empty.txt: too little text: 0 training and 0 validation tokens" "${L[@]}" --data empty.txt
bad data-empty-dir    "emptydir: no text in this directory" "${L[@]}" --data emptydir
bad data-truncated-gz "cut.txt.gz: truncated or corrupted compressed file" "${L[@]}" --data cut.txt.gz
# 100 GB of text (a sparse file: no disk taken) — read whole, it ended after 80 s in std::bad_alloc.
truncate -s 100G huge.txt
bad data-too-large    "huge.txt: 107.4 GB of text, more than one reading may hold here" "${L[@]}" --data huge.txt
mkdir -p hugedir && truncate -s 100G hugedir/a.txt
bad data-dir-too-large "hugedir: 107.4 GB of text, more than one reading may hold here" "${L[@]}" --data hugedir
bad data-long-lines   "longer than 100000 bytes, its limit" "$lm" train --out new_sp --data long_lines.txt --tokenizer sentencepiece

# --- lm train: resuming ---------------------------------------------------------------------
R=("$lm" train --out lmrun --steps 4)
bad resume-seed       "--seed 9 (the run's: 0)" "${R[@]}" --seed 9
bad resume-batch-size "--batch-size 8 (the run's: 4)" "${R[@]}" --batch-size 8
bad resume-model      "--d-model 32 (the run's: 16)" "${R[@]}" --d-model 32
bad resume-optimizer  "--optimizer sm3 (the run's: adam)" "${R[@]}" --optimizer sm3
bad resume-data       "--data $tmp/text.txt.gz (the run's: $tmp/text.txt)" "${R[@]}" --data text.txt.gz
bad resume-tokenizer  "--tokenizer sentencepiece (the run's: char)" "${R[@]}" --tokenizer sentencepiece

fresh c1; python3 -c "
import sys; p='c1/model.safetensors'; b=bytearray(open(p,'rb').read()); b[-7]^=0x10; open(p,'wb').write(b)"
bad checkpoint-flipped-data   "corrupted: data checksum" "$lm" train --out c1 --steps 4
fresh c2; python3 -c "
p='c2/model.safetensors'; b=open(p,'rb').read(); i=b.index(b'\"step\":\"2\"'); open(p,'wb').write(b[:i+8]+b'7'+b[i+9:])"
bad checkpoint-header-digit   "corrupted: header checksum" "$lm" train --out c2 --steps 4
fresh c3; head -c 300 lmrun/model.safetensors >c3/model.safetensors
bad checkpoint-truncated      "not a safetensors file, or truncated" "$lm" train --out c3 --steps 4
fresh c4; echo "not a checkpoint" >c4/model.safetensors
bad checkpoint-text           "c4/model.safetensors: not a safetensors file" "$lm" sample --out c4
fresh c5; edit_checkpoint c5/model.safetensors "c['max_len'] = 0"
bad checkpoint-max-len-0      "config's \"max_len\": expected a number from 2" "$lm" sample --out c5
fresh c5big; edit_checkpoint c5big/model.safetensors "c['n_layers'] = 1000; c['d_model'] = 65536"
bad checkpoint-huge-model     "the model's weights and buffers need 68747.1 GB, more than this machine's memory" \
  "$lm" sample --out c5big
fresh c6; edit_checkpoint c6/model.safetensors "m['step'] = 'x12'"
bad checkpoint-step-text      "corrupted checkpoint metadata: step is 'x12'" "$lm" train --out c6 --steps 4
fresh c7; edit_checkpoint c7/model.safetensors "m['format_version'] = '9'"
bad checkpoint-newer          "checkpoint format version 9 is newer than this ctrax reads (1)" "$lm" sample --out c7
fresh c8; edit_checkpoint c8/model.safetensors "
k = weights[0][1]; h[k]['shape'] = [-258, 32]"
bad checkpoint-negative-shape "has a negative extent -258 in its shape" "$lm" sample --out c8
fresh c9; edit_checkpoint c9/model.safetensors "
k = weights[0][1]; h[k]['shape'] = [4611686018427387904, 4]"
bad checkpoint-huge-shape     "too large to exist" "$lm" sample --out c9
fresh c9f; edit_checkpoint c9f/model.safetensors "
k = weights[0][1]; h[k]['shape'] = [h[k]['shape'][0] + 0.5] + h[k]['shape'][1:]"
bad checkpoint-fraction-shape "is not a whole number" "$lm" sample --out c9f
fresh c10; edit_checkpoint c10/model.safetensors "
a, b = weights[0][1], weights[1][1]; h[b]['data_offsets'] = h[a]['data_offsets']; h[b]['shape'] = h[a]['shape']"
bad checkpoint-overlap        "it overlaps the tensor before it" "$lm" sample --out c10
fresh c11; edit_checkpoint c11/model.safetensors "
import struct; o = h[weights[0][1]]['data_offsets'][0]; data[o:o + 4] = struct.pack('<f', float('nan'))"
rm -f c11/best.safetensors
bad checkpoint-nan-weights    "holds NaN or infinite values" "$lm" sample --out c11
fresh c12; edit_checkpoint c12/model.safetensors "h[weights[0][1]]['dtype'] = 'F16'"
bad checkpoint-bad-dtype      "has dtype F16, which ctrax does not read" "$lm" sample --out c12
fresh c13; edit_checkpoint c13/model.safetensors "m['config'] = '{not json'; c = None"
bad checkpoint-config-not-json "its config is not JSON" "$lm" sample --out c13
fresh c14; edit_checkpoint c14/model.safetensors "c['d_model'] = 'wide'"
bad checkpoint-config-type    "config's \"d_model\" is \"wide\", expected a number" "$lm" sample --out c14
fresh c15; edit_checkpoint c15/model.safetensors "c['decoder_layers'] = 1000"
bad checkpoint-decoder-layers "config's \"decoder_layers\": expected -1 or a number from 0 to 64, got 1000" "$lm" sample --out c15
fresh c16; edit_checkpoint c16/model.safetensors "c['n_encoder_layers'] = 0"
bad checkpoint-stack-layers   "config's \"n_encoder_layers\": expected a number from 1 to 1000, got 0" "$lm" sample --out c16
fresh c17; edit_checkpoint c17/model.safetensors "c['planned_steps'] = -5"
bad checkpoint-planned-steps  "config's \"planned_steps\": expected a number from 1 to 1000000000000, got -5" "$lm" train --out c17

# --- lm sample ------------------------------------------------------------------------------
S=("$lm" sample --out lmrun)
bad sample-no-model       "nowhere: no model.safetensors here; train a model first" "$lm" sample --out nowhere
bad sample-temperature    "--temperature: expected a number from 0 to 100, got nan" "${S[@]}" --temperature nan
bad sample-temp-negative  "--temperature: expected a number from 0" "${S[@]}" --temperature -1
bad sample-length-0       "--length: expected a number from 1" "${S[@]}" --length 0
bad sample-length-huge    "--length: expected a number from 1 to 10000000, got 100000000000" "${S[@]}" --length 100000000000
bad sample-top-k          "--top-k: expected a number from 0" "${S[@]}" --top-k -1
bad sample-top-p-0        "--top-p: expected a number above 0 and at most 1, got 0" "${S[@]}" --top-p 0
bad sample-top-p-big      "--top-p: expected a number above 0 and at most 1, got 1.5" "${S[@]}" --top-p 1.5
bad sample-n-samples      "--n-samples: expected a number from 1" "${S[@]}" --n-samples 0

# --- sentiment ------------------------------------------------------------------------------
ST=("$sentiment" train --out snew "${tiny[@]}" --max-len 32 --steps 1 --vocab-size 60)
bad sentiment-no-data     "nowhere: no such file or directory" "${ST[@]}" --data nowhere
bad sentiment-csv-quote   "badquote.csv:2: a quoted field is never closed" "${ST[@]}" --data badquote.csv
bad sentiment-no-tab      "notab/train.tsv:6: expected \`label<TAB>text\`, got \`no tab here\` (no TAB)" "${ST[@]}" --data notab
bad sentiment-blank-line  "blank/train.tsv:6: expected \`label<TAB>text\`" "${ST[@]}" --data blank
bad sentiment-word-label  "word/train.tsv:4: expected a non-negative integer label before the TAB, got \`positive\`" "${ST[@]}" --data word
bad sentiment-cut-gz      "cutgz/train.tsv.gz: truncated or corrupted compressed file" "${ST[@]}" --data cutgz
bad sentiment-head        "--head 1000 exceeds --max-len 32" "${ST[@]}" --data imdb --head 1000
bad sentiment-vocab       "--vocab-size: expected a number from 8" "${ST[@]}" --data imdb --vocab-size 3
# A vocabulary smaller than the text's characters: SentencePiece's own words named its own flag
# (--character_coverage), which no ctrax program has.
bad sentiment-vocab-chars "SentencePiece: a vocabulary of 60 pieces is too small for this text: a piece for each of its distinct characters and the word mark ▁, with the pad, EOS and unknown pieces, makes" \
  "${ST[@]}" --data manychars
bad sentiment-limit       "--limit: expected a number from 0" "${ST[@]}" --data imdb --limit -1
bad sentiment-too-few     "5 training reviews are too few" "${ST[@]}" --data imdb --limit 5
bad sentiment-sample      "--sample: expected a number from 0" "${ST[@]}" --data imdb --sample -1
bad sentiment-sample-few  "5 training reviews are too few" "${ST[@]}" --data imdb --sample 5
bad sentiment-sample-limit "--limit excludes --sample" "${ST[@]}" --data imdb --sample 10 --limit 10
# --teacher: a trained classifier of the same classes labels the texts --sample left out.
bad teacher-missing       "nowhere: no model.safetensors here" "${ST[@]}" --data imdb --sample 10 --teacher nowhere
bad teacher-lm-run        "lmrun/model.safetensors was trained by \`lm\`; this is \`sentiment\`" "${ST[@]}" --data imdb --sample 10 --teacher lmrun
bad teacher-classes       "--teacher srun2: its classifier has 3 classes; imdb has 2" "${ST[@]}" --data imdb --sample 10 --teacher srun2
bad teacher-no-sample     "--teacher labels the training texts --sample leaves out: give --sample N" "${ST[@]}" --data imdb --teacher srun
bad teacher-confidence    "--teacher-confidence: expected a number from 0 to 1, got 1.5" "${ST[@]}" --data imdb --sample 10 --teacher srun --teacher-confidence 1.5
bad mask-tokens-scratch   "--mask-tokens hides tokens behind the pretraining's <mask> piece: give --init-from RUN" "${ST[@]}" --data imdb --mask-tokens 0.1
bad layer-decay-scratch   "--layer-decay slows a pretrained body's blocks under a new head: give --init-from RUN" "${ST[@]}" --data imdb --layer-decay 0.8
bad layer-decay-range     "--layer-decay: expected a number from 0.01 to 1, got 0" "${ST[@]}" --data imdb --layer-decay 0
bad mask-tokens-range     "--mask-tokens: expected a number from 0 to 0.9, got 1" "${ST[@]}" --data imdb --mask-tokens 1
bad teacher-confidence-alone "--teacher-confidence: applies with --teacher only" "${ST[@]}" --data imdb --sample 10 --teacher-confidence 0.5
bad sentiment-eval-batch  "--batch-size: expected a number from 1" "$sentiment" eval --out srun --data imdb --batch-size 0
bad sentiment-eval-label  "label2/test.tsv:6: expected a label from 0 to 1, got 2" "$sentiment" eval --out srun --data label2
rm -rf sflag; cp -r srun sflag; rm -f sflag/.lock
edit_checkpoint sflag/model.safetensors "c['flags']['--limit'] = '12abc'"
bad sentiment-eval-stored-flag "sflag/model.safetensors: the stored flag --limit is \"12abc\", expected a whole number" \
  "$sentiment" eval --out sflag --data imdb --json sflag/eval.json
bad sentiment-predict-empty "predict: the text is empty" "$sentiment" predict --out srun ""
bad sentiment-no-model    "nowhere: no model.safetensors here" "$sentiment" predict --out nowhere "Fine."
cp -r srun snospm; rm -f snospm/spm.model snospm/.lock
bad sentiment-no-spm      "snospm/spm.model: no such SentencePiece model" "$sentiment" predict --out snospm "Fine."
cp -r srun sbadspm; rm -f sbadspm/.lock; echo "garbage" >sbadspm/spm.model
bad sentiment-bad-spm     "sbadspm/spm.model" "$sentiment" predict --out sbadspm "Fine."
# --init-from: a pretrained run's body; the body's settings and vocabulary are that run's.
SI=("$sentiment" train --out sinit --data imdb --steps 1 --batch-size 4 --threads 1)
bad init-from-missing     "nowhere: no model.safetensors here" "${SI[@]}" --init-from nowhere
bad init-from-lm-run      "lmrun/model.safetensors was trained by \`lm\`; this is \`pretrain\`" "${SI[@]}" --init-from lmrun
bad init-from-vocab       "--vocab-size: with --init-from the body's settings and vocabulary are the pretrained run's" "${SI[@]}" --vocab-size 60 --init-from srun
bad init-from-cnn-decay   "--model cnn takes the body's embedding alone: give --model transformer" "$sentiment" train --out snew2 --data imdb --model cnn --init-from srun --layer-decay 0.8
bad init-from-d-model     "--d-model: with --init-from" "$sentiment" train --out snew3 --data imdb --d-model 32 --init-from srun
bad chatbot-init-lm-run   "lmrun/model.safetensors was trained by \`lm\`; this is \`pretrain\`" "$chatbot" train --data qa.csv --out cinit --steps 1 --threads 1 --init-from lmrun
bad chatbot-init-d-model  "--d-model: with --init-from the body's settings and vocabulary are the pretrained run's" "$chatbot" train --data qa.csv --out cinit2 --d-model 32 --init-from lmrun
bad chatbot-init-lstm     "--init-from: a pretrained Transformer encoder fine-tunes a --model transformer, not lstm" "$chatbot" train --data qa.csv --out cinit3 --model lstm --init-from lmrun
bad pretrain-no-data      "nowhere" "$build/examples/pretrain" train --out pnew --data nowhere --steps 1
bad pretrain-empty        "empty.txt: no text to learn from" "$build/examples/pretrain" train --out pnew2 --data empty.txt --steps 1
bad pretrain-too-few      "pieces of text are too few for batches of 100000" "$build/examples/pretrain" train --out pnew3 --data changing.txt --steps 1 --vocab-size 60 --max-len 16 --d-model 16 --d-ff 32 --n-layers 1 --n-heads 2 --threads 1 --batch-size 100000
bad pretrain-piece-len    "--piece-len 32 is longer than --max-len 16" "$build/examples/pretrain" train --out pnew4 --data changing.txt --steps 1 --vocab-size 60 --max-len 16 --piece-len 32 --d-model 16 --d-ff 32 --n-layers 1 --n-heads 2 --threads 1
PT=("$build/examples/pretrain" train --data changing.txt --vocab-size 60 --max-len 16 --d-model 16 --d-ff 32 --n-layers 1 --n-heads 2 --threads 1 --batch-size 4)
bad pretrain-objective    "--objective: bert not in {mlm,electra}" "${PT[@]}" --out pnew5 --steps 1 --objective bert
bad pretrain-gen-size     "--generator-size: expected a number from 0.01 to 1, got 2" "${PT[@]}" --out pnew6 --steps 1 --objective electra --generator-size 2
must "${PT[@]}" --out pmlm --steps 1
bad pretrain-objective-resume "--objective electra (the run's: mlm)" "${PT[@]}" --out pmlm --steps 2 --objective electra
bad pretrain-init-sizes     "--d-model: with --init-from the body's settings and vocabulary are the pretrained run's" "${PT[@]}" --out pinit1 --steps 1 --init-from pmlm
bad pretrain-init-electra   "continued pretraining goes on with a masked LM (--objective mlm) from a masked LM's run; this one is electra" "$build/examples/pretrain" train --data changing.txt --threads 1 --out pinit2 --steps 1 --objective electra --init-from pmlm
bad pretrain-init-missing   "nowhere: no model.safetensors here" "$build/examples/pretrain" train --data changing.txt --threads 1 --out pinit3 --steps 1 --init-from nowhere
bad pretrain-init-lm-run    "lmrun/model.safetensors was trained by \`lm\`; this is \`pretrain\`" "$build/examples/pretrain" train --data changing.txt --threads 1 --out pinit4 --steps 1 --init-from lmrun

# --- translate ------------------------------------------------------------------------------
bad translate-empty       "TEXT 2 of 2 is empty: give a sentence to translate" "$translate" translate --out trun "A dog." "  "
bad translate-beams-0     "--beams: expected a number from 1" "$translate" translate --out trun --beams 0 "A dog."
bad translate-penalty-nan "--length-penalty: expected a number from 0 to 10, got nan" "$translate" translate --out trun --length-penalty nan "A dog."
bad translate-uneven      "parallel files differ in length: m30k_uneven/train.en has 120 lines, m30k_uneven/train.de has 117" "$translate" train --data m30k_uneven --out tnew "${tiny[@]}"
bad translate-no-data     "nowhere: no such file or directory" "$translate" train --data nowhere --out tnew
bad translate-bleu-split  "m30k: no nosuch.en or nosuch.en.gz" "$translate" bleu --out trun --data m30k --split nosuch
bad translate-score-alone "--score: applies to --model lstm only (here: --model transformer)" "$translate" train --data m30k --out tnew --score dot "${tiny[@]}"
bad translate-decoder-layers-alone "--decoder-layers: applies to --model lstm only (here: --model transformer)" "$translate" train --data m30k --out tnew --decoder-layers 0 "${tiny[@]}"
bad translate-decoder-layers-range "--decoder-layers: Value 65 not in range 0 to 64" "$translate" train --data m30k --out tnew --model lstm --decoder-layers 65 "${tiny[@]}"
bad translate-no-model    "nowhere: no model.safetensors here" "$translate" translate --out nowhere "A dog."
bad bench-d-model-heads   "TransformerLM: Dimensionality of feature embedding (18) is not a multiple of the requested number of attention heads (4)" "$bench" --model lm --config M --generate 8 --d-model 18
bad bench-d-model-range   "--d-model: expected a number from 4 to 65536, got 2" "$bench" --d-model 2
bad bench-generate-encoder "--generate needs --model lm" "$bench" --model encoder --generate 8

# --- numbers are decimal, everywhere ---------------------------------------------------------
bad steps-exponent        "--steps: expected a whole number in decimal digits, got 1e1" "${T[@]}" --steps 1e1
bad steps-hex             "--steps: expected a number from 1 to 1000000000000, got 0x10" "${T[@]}" --steps 0x10
bad d-model-hex           "--d-model: expected a number from 1 to 65536, got 0x20" "${T[@]}" --d-model 0x20
bad lr-hex-float          "--lr: expected a number above 0 and at most 10, got 0x1p-3" "${T[@]}" --lr 0x1p-3
bad seed-exponent         "--seed: expected a whole number (0 or more) in decimal digits, got 1e3" "${T[@]}" --seed 1e3
bad sample-length-exponent "--length: expected a whole number in decimal digits, got 1e2" "${S[@]}" --length 1e2
bad threads-fraction      "--threads: expected a whole number in decimal digits, got 1.5" "${S[@]}" --threads 1.5
bad env-threads-text      "CTRAX_NUM_THREADS: expected a whole number from 1 to 1024 in decimal digits, got 'abc'" env CTRAX_NUM_THREADS=abc "${S[@]}"
bad env-threads-negative  "CTRAX_NUM_THREADS: expected a whole number from 1 to 1024 in decimal digits, got '-1'" env CTRAX_NUM_THREADS=-1 "${S[@]}"
bad env-threads-hex       "CTRAX_NUM_THREADS: expected a whole number from 1 to 1024 in decimal digits, got '0x4'" env CTRAX_NUM_THREADS=0x4 "${S[@]}"
bad env-threads-exponent  "CTRAX_NUM_THREADS: expected a whole number from 1 to 1024 in decimal digits, got '1e3'" env CTRAX_NUM_THREADS=1e3 "$lm" train --out new --data text.txt
bad env-plan-word         "CTRAX_PLAN: expected 1 (the execution plan on) or 0 (the tree op by op), got 'off'" env CTRAX_PLAN=off "${S[@]}"
bad env-threads-bench     "CTRAX_NUM_THREADS: expected a whole number from 1 to 1024" env CTRAX_NUM_THREADS=abc "$bench" --bandwidth --bandwidth-mb 1

# --- flags the chosen model or tokenizer does not read ----------------------------------------
bad rnnlm-positions       "--positions: applies to --model transformer only (here: --model rnnlm)" "${T[@]}" --model rnnlm --positions rotary
bad rnnlm-norm            "--norm: applies to --model transformer only (here: --model rnnlm)" "${T[@]}" --model rnnlm --norm post
bad rnnlm-n-heads         "--n-heads: applies to --model transformer only (here: --model rnnlm)" "${T[@]}" --model rnnlm --n-heads 7
bad grulm-dropout         "--dropout: applies to --model transformer or rnnlm only (here: --model grulm)" "${T[@]}" --model grulm --dropout 0.1
bad char-vocab-size       "--vocab-size: applies to --tokenizer sentencepiece only (here: --tokenizer char)" "${T[@]}" --tokenizer char --vocab-size 50
bad lstm-d-ff             "--d-ff: applies to --model transformer only (here: --model lstm)" "$translate" train --data m30k --out tnew --model lstm --d-ff 999
bad lstm-positions        "--positions: applies to --model transformer only (here: --model lstm)" "$translate" train --data m30k --out tnew --model lstm --positions learned

# --- bench_train: every flag in range, and only with its mode ------------------------------
bad bench-steps-negative  "--steps: expected a number from 1 to 1000000, got -1" "$bench" --steps -1
bad bench-steps-0         "--steps: expected a number from 1 to 1000000, got 0" "$bench" --steps 0
bad bench-warmup-negative "--warmup: expected a number from 0 to 1000000, got -5" "$bench" --warmup -5
bad bench-threads-negative "--threads: expected a number from 0 to 256, got -3" "$bench" --threads -3
bad bench-generate-negative "--generate: expected a number from 1 to 1000000, got -4" "$bench" --generate -4
bad bench-gen-batch-0     "--gen-batch: expected a number from 1 to 4096, got 0" "$bench" --generate 8 --gen-batch 0
bad bench-beams-0         "--beams: expected a number from 1 to 256, got 0" "$bench" --generate 8 --beams 0
bad bench-gen-batch-alone "--gen-batch requires --generate" "$bench" --gen-batch 2
bad bench-vocab-1         "--vocab: expected a number from 2 to 10000000, got 1" "$bench" --model mlm --vocab 1
bad bench-wrn-seq         "--model wideresnet takes --n-blocks and --widen-factor, not --generate, --layers, --d-model, --vocab, --seq or --batch" "$bench" --model wideresnet --seq 64
bad bench-bandwidth-nan   "--bandwidth-mb: expected a number from 1 to 65536, got nan" "$bench" --bandwidth --bandwidth-mb nan
bad bench-alternate-decode "--alternate-plan times training steps: not with --generate or --model wideresnet" "$bench" --generate 8 --alternate-plan
bad bench-alternate-wrn   "--alternate-plan times training steps: not with --generate or --model wideresnet" "$bench" --model wideresnet --alternate-plan
bad bench-engine-reps     "--reps: expected a number from 1 to 1000000, got x" "$engine" --reps x
# bench/run.sh's settings, checked before anything is built or installed (a stand-in for the
# reference's scripts: none of them runs); the AVX2 check only where this build's kernel is not AVX2's.
mkdir -p fake_shared/bench && touch fake_shared/bench/pytorch_lm.py
bad run-sh-isa            "run.sh: CTRAX_BENCH_ISA is native or avx2, got avx3" env CTRAX_BENCH_ISA=avx3 "$run_sh" S lm 1
bad run-sh-build          "run.sh: CTRAX_BUILD=$tmp/no_build is not a meson build directory" \
    env CTRAX_SHARED="$tmp/fake_shared" CTRAX_BUILD="$tmp/no_build" "$run_sh" S lm 1
if ! "$bench" --machine-state --json 2>/dev/null | grep -qF '"kernels": "AVX2"'; then
  bad run-sh-avx2-build   "run.sh: CTRAX_BENCH_ISA=avx2 needs an AVX2 build" \
      env CTRAX_SHARED="$tmp/fake_shared" CTRAX_BUILD="$build" CTRAX_BENCH_ISA=avx2 "$run_sh" S lm 1
fi

# --- a run is bound to its data --------------------------------------------------------------
echo "one more line" >>changing.txt
bad data-changed          "changing.txt: the data changed since this run began" "$lm" train --out lmchange --steps 4
echo "another file" >corpus/b.txt
bad data-new-file         "new file: b.txt" "$lm" train --out lmcorpus --steps 4
bad data-is-out           "overlap: a run would read its own directory" "$lm" train --data lmrun --out lmrun --steps 4
bad data-contains-out     "overlap: a run would read its own directory" "$lm" train --data corpus --out corpus/run
printf 'notes\n' > notes.txt
bad out-is-file           "notes.txt: not a directory (a regular file), expected the run's directory" \
  "$lm" train --data text.txt --out notes.txt --steps 2
bad out-under-file        "notes.txt/run: cannot make the run's directory: Not a directory" \
  "$lm" train --data text.txt --out notes.txt/run --steps 2
# A symbolic link to itself: the standard library's error ("filesystem error: status: …"), said as ours.
ln -sfn loop loop
bad data-symlink-loop     "loop: Too many levels of symbolic links" "$lm" train --data loop --out looprun --steps 2
bad out-symlink-loop      "loop: Too many levels of symbolic links" "$lm" train --data text.txt --out loop --steps 2
bad data-dev-zero \
  "/dev/zero: not a regular file (a character device), expected a file or a directory of files" \
  "$lm" train --data /dev/zero --out zrun
mkfifo fifo.txt
bad data-fifo             "fifo.txt: not a regular file (a named pipe), expected a file or a directory of files" \
  "$lm" train --data fifo.txt --out frun
# A checkpoint of 100 GB (a sparse file whose header lists a 100 GB tensor): read whole, it ended
# after minutes in std::bad_alloc or a kill.
fresh bigck
edit_checkpoint bigck/model.safetensors "h['zz'] = {'dtype': 'F32', 'shape': [25 * 10**9], 'data_offsets': [len(data), len(data) + 10**11]}"
truncate -s +100000000000 bigck/model.safetensors
bad checkpoint-too-large  "bigck/model.safetensors: 100.0 GB of tensors to load (100.0 GB on disk), and loading takes twice that" \
  "$lm" train --out bigck --steps 4
# The run's metrics file a pipe: reading it (a resume) or appending to it (a new run) waited forever.
fresh mfifo; rm -f mfifo/metrics.jsonl; mkfifo mfifo/metrics.jsonl
bad metrics-fifo-resume   "mfifo/metrics.jsonl: not a regular file (a named pipe), expected the run's metrics" \
  "$lm" train --data text.txt --out mfifo --steps 4
mkdir -p mfifo2 && mkfifo mfifo2/metrics.jsonl
bad metrics-fifo-new      "mfifo2/metrics.jsonl: not a regular file (a named pipe), expected a file to append to" \
  "$lm" train --data text.txt --out mfifo2 --steps 2 --max-len 16 "${tiny[@]}"

# --- tokenizer, model and program bound to each other --------------------------------------
cp -r srun sswap; rm -f sswap/.lock; cp srun2/spm.model sswap/spm.model
bad spm-swapped           "sswap/spm.model is not the vocabulary sswap/model.safetensors was trained with" "$sentiment" predict --out sswap "Fine."
bad spm-swapped-resume    "sswap/spm.model is not the vocabulary" "$sentiment" train --out sswap --data imdb --steps 4
bad task-translate-as-chatbot "trun/model.safetensors was trained by \`translate\`; this is \`chatbot\`" "$chatbot" ask --out trun "hello"
bad task-chatbot-as-translate "crun/model.safetensors was trained by \`chatbot\`; this is \`translate\`" "$translate" translate --out crun "hello"
bad task-lm-as-sentiment  "lmrun/model.safetensors was trained by \`lm\`; this is \`sentiment\`" "$sentiment" predict --out lmrun "Fine."
bad task-resume-other     "lmrun/run.json holds a \`lm\` run; this is \`sentiment\`" "$sentiment" train --out lmrun --data imdb

# --- endless inputs, and files that are not files -------------------------------------------
fresh z1; rm -f z1/model.safetensors z1/best.safetensors; ln -s /dev/zero z1/model.safetensors
bad checkpoint-dev-zero   "z1/model.safetensors: not a regular file (a character device), expected a checkpoint" \
  "$lm" sample --out z1
fresh z2; rm -f z2/model.safetensors z2/best.safetensors; mkdir z2/model.safetensors
bad checkpoint-directory  "z2/model.safetensors: not a regular file (a directory), expected a checkpoint" \
  "$lm" sample --out z2
cp -r srun z3; rm -f z3/.lock z3/spm.model; mkdir z3/spm.model
bad spm-directory         "z3/spm.model: not a regular file (a directory), expected a SentencePiece model" \
  "$sentiment" predict --out z3 "Fine."
bad chat-dev-zero         "standard input, line 1: longer than 65536 bytes" sh -c "exec \"$chatbot\" chat --out crun </dev/zero"

# --- CSV strictly, and messages that name the cause ------------------------------------------
bad csv-stray-quote       "qa_stray.csv:6: expected a comma or a line end after the quoted field" "${ST[@]}" --data qa_stray.csv
bad csv-quote-inside      "qa_inner.csv:8: a quote inside an unquoted field" "${ST[@]}" --data qa_inner.csv
bad tsv-huge-label        "hugelabel/train.tsv:9: expected a label from 0 to 9999, got 999999999" "${ST[@]}" --data hugelabel
bad lm-eval-length        "--length 64 exceeds the model's --max-len 16" "$lm" eval --out lmrun --data text.txt --length 64
bad chatbot-held-out-tiny "--held-out 1e-09 holds out 0 of the 120 pairs" "$chatbot" train --data qa.csv --out cnew --held-out 0.000000001 "${tiny[@]}"
bad inspect-vocab-0       "--vocab-size: expected a number from 2 to 1000000, got 0" "$inspect" TransformerLM --vocab-size 0
bad inspect-classes-negative "--n-classes: expected a number from 2 to 1000000, got -1" "$inspect" TransformerEncoder --n-classes -1

# --- the image program: IDX files (core/data/idx.hpp) and its flags --------------------------
python3 - <<'PY'
import os, struct
def idx(path, dims, values, cut=0, kind=0x08):
    b = bytes([0, 0, kind, len(dims)]) + b"".join(struct.pack(">I", d) for d in dims) + bytes(values)
    open(path, "wb").write(b[:len(b) - cut])
def fashion(d, n=10, rows=4, labels=None, images_kind=0x08, images_cut=0, n_labels=None):
    os.makedirs(d, exist_ok=True)
    idx(f"{d}/train-images-idx3-ubyte", [n, rows, rows], [7] * (n * rows * rows), images_cut, images_kind)
    labels = labels if labels is not None else [i % 10 for i in range(n if n_labels is None else n_labels)]
    idx(f"{d}/train-labels-idx1-ubyte", [len(labels)], labels)
fashion("fm_few")
fashion("fm_magic", images_kind=0x0D)
fashion("fm_cut", images_cut=7)
fashion("fm_label", labels=[1, 2, 3, 4, 5, 6, 7, 8, 9, 12])
fashion("fm_count", n_labels=9)
os.makedirs("fm_empty", exist_ok=True)
PY
bad image-no-files        "fm_empty: no train-" "$image" train --data fm_empty --out i1
bad image-wrong-magic     "fm_magic/train-images-idx3-ubyte: not an unsigned-byte IDX file of 3 dimensions: its magic number is 0x00000D03" "$image" train --data fm_magic --out i2
bad image-truncated       "fm_cut/train-images-idx3-ubyte: the header promises 160 values (10 × 4 × 4), the file holds 153: truncated" "$image" train --data fm_cut --out i3
bad image-label-range     "fm_label/train-labels-idx1-ubyte: item 9 has label 12, outside the 10 classes 0 … 9" "$image" train --data fm_label --out i4
bad image-count-mismatch  "holds 10 images but" "$image" train --data fm_count --out i5
bad image-too-few         "fm_few: 10 training images are too few" "$image" train --data fm_few --out i6
bad image-widths-with-wrn "--widths applies to --model mlp only (this run: --model wideresnet)" "$image" train --data fm_few --out i7 --model wideresnet --widths 8
bad image-blocks-with-mlp "--n-blocks applies to --model convnet or wideresnet only (this run: --model mlp)" "$image" train --data fm_few --out i8 --n-blocks 2
bad image-model-unknown   "--model: vgg not in {mlp,convnet,wideresnet}" "$image" train --data fm_few --out i9 --model vgg
bad image-filters-with-mlp "--filters applies to --model convnet only (this run: --model mlp)" "$image" train --data fm_few --out i13 --filters 8
bad image-filters-zero    "--filters: expected a number from 1 to 65536, got 0" "$image" train --data fm_few --out i14 --model convnet --filters 8,0
bad image-dropout-range   "--dropout: expected a number from 0 to 0.99, got 1" "$image" train --data fm_few --out i15 --model convnet --dropout 1
bad image-widths-zero     "--widths: expected a number from 1 to 1048576, got 0" "$image" train --data fm_few --out i10 --widths 64,0
bad image-widen-zero      "--widen-factor: expected a number from 1 to 16, got 0" "$image" train --data fm_few --out i11 --model wideresnet --widen-factor 0
bad image-eval-no-run     "i12" "$image" eval --out i12
bad image-eval-lm-run     "lmrun/model.safetensors was trained by \`lm\`; this is \`image\`" "$image" eval --out lmrun
bad sentiment-cnn-heads   "--n-heads: applies to --model transformer only (here: --model cnn)" "$sentiment" train --out snew --data imdb --model cnn --n-heads 4
bad sentiment-filters-transformer "--n-filters: applies to --model cnn only (here: --model transformer)" "${ST[@]}" --data imdb --n-filters 4
bad sentiment-filters-zero "--n-filters: Value 0 not in range 1 to 100000" "${ST[@]}" --data imdb --model cnn --n-filters 0

echo "$passed passed, $failed failed (bad-input catalogue)"
[ "$failed" -eq 0 ]
