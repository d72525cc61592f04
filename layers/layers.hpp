// ctrax/layers/layers.hpp — the layer library and the combinators in one include.
//
//   namespace tl = ctrax::layers;
//   auto model = tl::Serial(tl::Embedding(256, 64), tl::CausalAttention(64, {.n_heads = 4}), tl::Dense(256));
#pragma once

#include "core/layer/combinators.hpp"
#include "layers/activations.hpp"
#include "layers/attention.hpp"
#include "layers/attention_weights.hpp"
#include "layers/batch_norm.hpp"
#include "layers/causal_attention.hpp"
#include "layers/conv_gru.hpp"
#include "layers/convolution.hpp"
#include "layers/dense.hpp"
#include "layers/dropout.hpp"
#include "layers/elementwise.hpp"
#include "layers/embedding.hpp"
#include "layers/filter_response_norm.hpp"
#include "layers/heads.hpp"
#include "layers/layer_norm.hpp"
#include "layers/locally_connected.hpp"
#include "layers/masks.hpp"
#include "layers/metrics.hpp"
#include "layers/pooling.hpp"
#include "layers/positional_encoding.hpp"
#include "layers/reductions.hpp"
#include "layers/rnn.hpp"
#include "layers/rotary.hpp"
#include "layers/score_attention.hpp"
#include "layers/shift_right.hpp"
#include "layers/sru.hpp"
#include "layers/weights_layer.hpp"
