#!/usr/bin/env bash
# Smoke test of examples/inspect: each model prints its tree, a weight table ending in
# `total parameters: N` with the hand-computed N, and a trace with the stack around each layer.
set -euo pipefail
inspect=$1
small=(--vocab-size 16 --d-model 8 --d-ff 16 --n-layers 1 --n-heads 2 --max-len 32)

# TransformerLM: emb 16·8 + pe 32·8 + block (2·16 + 4·72 + 144 + 136) + ln 16 + dense 8·16+16
out=$("$inspect" TransformerLM "${small[@]}" --trace)
grep -qx 'total parameters: 1144' <<<"$out" || { echo "TransformerLM: wrong total"; exit 1; }
grep -qE '^  Embedding_16_8 +\(i32\[2,8\]\) +-> \(f32\[2,8,8\]\)$' <<<"$out" \
  || { echo "TransformerLM: no trace of the embedding"; exit 1; }

out=$("$inspect" TransformerEncoder "${small[@]}" --n-classes 3 --trace)
grep -q '^  Select\[0\]_in2 .*(f32\[2,8,8\], bool\[2,1,1,8\]) *-> (f32\[2,8,8\])$' <<<"$out" \
  || { echo "TransformerEncoder: the mask is not seen leaving the stack"; exit 1; }

for mode in train predict; do
  out=$("$inspect" Transformer "${small[@]}" --mode "$mode" --trace)
  grep -q '^total parameters: ' <<<"$out" || { echo "Transformer ($mode): no total"; exit 1; }
done
grep -q '^  Cache_in2_out2\[$' <<<"$out" || { echo "Transformer predict: encoder not cached"; exit 1; }

# Trax's recurrent models: emb 16·8, an LSTMCell (8+8)·32 + 32 = 544 per layer, a GRUCell 408, dense 8·16+16
total() { "$inspect" "$@" | sed -n 's/^total parameters: //p'; }
[ "$(total RNNLM "${small[@]}")" = 816 ] || { echo "RNNLM: wrong total"; exit 1; }
[ "$(total GRULM "${small[@]}")" = 680 ] || { echo "GRULM: wrong total"; exit 1; }
# two embeddings, three LSTMs, additive score 8·8 + 8·8 + 8, Luong's Dense 16·8 + 8, the output dense
[ "$(total LSTMSeq2SeqAttn "${small[@]}" --score additive)" = 2304 ] || { echo "LSTMSeq2SeqAttn: wrong total"; exit 1; }
out=$("$inspect" LSTMSeq2SeqAttn "${small[@]}" --mode predict --trace)
grep -q '^  LSTM_8 ' <<<"$out" || { echo "LSTMSeq2SeqAttn predict: no trace"; exit 1; }

# Kim's CNN: embeddings 1000·32, Conv1d (3 + 4 + 5)·32·10 + 3·10, Dense 30·2 + 2
[ "$(total SentenceCNN --vocab-size 1000 --n-classes 2 --d-model 32 --n-filters 10)" = 35932 ] || { echo "SentenceCNN: wrong total"; exit 1; }
# The image models (tests/models/test_image_models.cpp counts them layer by layer)
[ "$(total MLP --widths 512,512)" = 669706 ] || { echo "MLP: wrong total"; exit 1; }
[ "$(total WideResnet --n-blocks 1)" = 100698 ] || { echo "WideResnet: wrong total"; exit 1; }
[ "$(total ConvNet)" = 96746 ] || { echo "ConvNet: wrong total"; exit 1; }
out=$("$inspect" ConvNet --filters 16 --n-blocks 1 --trace)
grep -q '^  MaxPool ' <<<"$out" || { echo "ConvNet: no trace"; exit 1; }
out=$("$inspect" WideResnet --n-blocks 1 --trace)
grep -q '^  AvgPool ' <<<"$out" || { echo "WideResnet: no trace"; exit 1; }

if "$inspect" Nonsense >/dev/null 2>&1; then echo "an unknown model was accepted"; exit 1; fi
echo "inspect ok"
