// ctrax/core/layer/plan.hpp — the execution plan: neighbouring layers run as one fused step.
//
// Trax never runs its layers one op at a time: `jit` hands the traced layer tree to XLA, which
// fuses it. ctrax does the same by rule. The tree stays Trax's — printed, named, checkpointed and
// reporting errors exactly as before — and a Serial, walking its layers, asks each one whether it
// runs together with its neighbours (Layer::fuses_with, a pattern over the layers' kinds and
// options): a rule may take the layer just before it and any number after it. If one does, that
// run of layers executes as one step (Layer::forward_fused), which computes exactly what the
// layers compute one after the other: the same values and the same gradients, in fewer passes
// over memory. The plan is derived from the tree, so every model gets it, users' own included.
//
//   rule                               what runs                      what it saves
//   BatchNorm, Relu                    batch_norm(…, relu = true)     a pass over the activations
//                                                                     forward and one backward;
//                                                                     one tensor less
//   Relu, Dropout (the Dropout drops)  relu_dropout(…)                the same: the feed-forward
//                                                                     block's Dense → Relu → Dropout
//   Dense (with a bias), Relu, Dropout linear_relu_dropout(…): the    that pass too, and two of its
//   (the Dropout drops)                ReLU and the mask on each      tensors (the pre-activation,
//                                      stripe of rows as it is made   the mask)
//   Dense, Relu, [Dropouts that pass   linear_relu_linear(…): the     the layers' calls; decoding,
//   through], Dense (both with a       tree's three ops; one row      one of two team jobs and the
//   bias: the feed-forward block)      unrecorded, one team job       ReLU's pass and tensor
//   Branch([…, SplitIntoHeads] × 3),   each branch's projection, then the three head splits and
//   DotProductCausalAttention,         attention_heads over q, k, v   the merge: four copies of an
//   MergeHeads (CausalAttention)       as (B, L, H·d); decoding: k, v activation forward, four back;
//                                      into the KV cache in place,    decoding, the cache's writes
//                                      Dense projections as one job   and two of three team jobs
//   Select, Parallel in one Serial     the Select's picks straight    the two layers' calls and a
//   (every Branch, so every Residual)  to the Parallel's branches; a  None branch's: per decoded
//                                      None branch hands its input    token and block, six calls
//                                      on without a call              of the layer walk
//
// The last is the Serial's own step (serial.cpp), not a layer's rule: the branches still run as
// layers, each with its own plan, and an error in one gets the tree's path, which the step marks
// as the Parallel and the Branch would.
// A fused step declines inputs it does not take (then the layers run one by one, and bad
// input gets the tree's own error, naming the layer that refused it), and the plan stands aside
// while a model initialises, infers shapes, or runs under a Trace (which shows every layer).
//
// THE SWITCH. model->set_execution_plan(false) — or CTRAX_PLAN=0 in the environment, read once,
// for every layer built after — runs the tree layer by layer, op by op: for learning what each
// layer does, and for debugging. Tests hold the two equal on every model (test_plan.cpp). The
// switch also turns off decoding's program, which runs a token of one row as one team job
// (core/decode/internal/token_program.hpp, each layer's lower_token).
//
//   std::cout << plan_to_string(*model);   // the tree with its fused steps marked:
//
//   Serial[
//     Conv
//     BatchNorm + Relu   (one step)
//     ...
#pragma once

#include <string>

#include "core/layer/layer.hpp"

namespace ctrax {

// The default for layers built from now on: CTRAX_PLAN's setting (plan_setting), on when unset.
bool plan_by_default();
// What a CTRAX_PLAN value means: "1" or "" on, "0" off; anything else is an error naming the
// variable, the value and what it takes (never a silent default: "off" must not mean on).
bool plan_setting(const char* value);

// The tree as to_string prints it (the layers that run, in order), each fused step on one line:
// its layers joined by " + ", then "(one step)".
std::string plan_to_string(const Layer& layer);

}  // namespace ctrax
