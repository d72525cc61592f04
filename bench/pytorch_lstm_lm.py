#!/usr/bin/python3
"""An LSTM language model in plain PyTorch (nn.LSTM): the reference for ctrax's LSTM layers.

Model (the same work as `build/bench/bench_train --model lstm`):
  ShiftRight -> Embedding(V, d) -> nn.LSTM(d, d, num_layers=layers, batch_first=True) -> Linear(d, V);
  cross-entropy; Adam (lr 1e-3); random tokens; float32; no dropout.
One timed step = forward + loss + backward + Adam update. Written in the style of
../shared/bench/pytorch_lm.py (same flags, same output lines, same thread control: OPENBLAS_NUM_THREADS
and OMP_NUM_THREADS are set before torch is imported).

  /usr/bin/python3 bench/pytorch_lstm_lm.py --vocab 256 --d-model 256 --layers 2 --seq 128 --batch 16 --steps 8 \
      --threads 1 --blas-threads 2
"""
import argparse
import json
import os
import resource


def parse():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument('--vocab', type=int, default=256)
    p.add_argument('--d-model', type=int, default=128)
    p.add_argument('--layers', type=int, default=2)
    p.add_argument('--seq', type=int, default=128)
    p.add_argument('--batch', type=int, default=16)
    p.add_argument('--steps', type=int, default=20, help='timed training steps (after --warmup steps)')
    p.add_argument('--warmup', type=int, default=3)
    p.add_argument('--threads', type=int, default=1)
    p.add_argument('--blas-threads', type=int, default=None, help='OpenBLAS pool size (default: = --threads)')
    p.add_argument('--lr', type=float, default=1e-3)
    p.add_argument('--seed', type=int, default=0)
    p.add_argument('--tag', default='')
    p.add_argument('--json', action='store_true')
    return p.parse_args()


args = parse()
os.environ['OPENBLAS_NUM_THREADS'] = str(args.threads if args.blas_threads is None else args.blas_threads)
os.environ['OMP_NUM_THREADS'] = str(args.threads)
import time  # noqa: E402
import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402

torch.set_num_threads(args.threads)
try:
    torch.set_num_interop_threads(1)
except RuntimeError:
    pass


class LSTMLM(nn.Module):
    def __init__(self, vocab, d, layers):
        super().__init__()
        self.emb = nn.Embedding(vocab, d)
        self.lstm = nn.LSTM(d, d, num_layers=layers, batch_first=True)
        self.out = nn.Linear(d, vocab)

    def forward(self, tokens):  # tokens already shifted right
        h, _ = self.lstm(self.emb(tokens))
        return self.out(h)


def flops_per_step(a):
    """Matmul FLOPs of a step, forward + backward = 3x forward: each layer's 4 gates read [x_t, h_{t-1}]
    (2d inputs, 4d outputs) at every position, then the output layer."""
    d = a.d_model
    n_mm = a.layers * (2 * d * 4 * d) + d * a.vocab
    return 6 * n_mm * a.batch * a.seq


def rss_mb():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def main():
    torch.manual_seed(args.seed)
    model = LSTMLM(args.vocab, args.d_model, args.layers)
    model.train()
    opt = torch.optim.Adam(model.parameters(), lr=args.lr)
    g = torch.Generator().manual_seed(args.seed)
    data = torch.randint(1, args.vocab, (args.warmup + args.steps, args.batch, args.seq), generator=g)
    times, losses = [], []
    for i in range(args.warmup + args.steps):
        t0 = time.perf_counter()
        tgt = data[i]
        logits = model(F.pad(tgt[:, :-1], (1, 0), value=0))
        loss = F.cross_entropy(logits.reshape(-1, args.vocab), tgt.reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        losses.append(loss.item())
        if i >= args.warmup:
            times.append(time.perf_counter() - t0)
    times.sort()
    med = times[len(times) // 2]
    tok = args.batch * args.seq
    fl = flops_per_step(args)
    n_params = sum(p.numel() for p in model.parameters())
    print(f'train: {tok / med:.0f} tok/s | {med * 1e3:.1f} ms/step median ({len(times)} steps after {args.warmup} '
          f'warm-up) | {fl / 1e9:.2f} GFLOP/step -> {fl / med * 1e-9:.1f} GFLOP/s | params {n_params / 1e6:.2f}M | '
          f'peak RSS {rss_mb():.0f} MB | loss {losses[0]:.3f}->{losses[-1]:.3f} | threads={args.threads} (nn.LSTM)')
    if args.json:
        print('JSON ' + json.dumps(dict(tag=args.tag, script='pytorch_lstm_lm', ms_per_step_median=med * 1e3,
                                        tok_per_s=tok / med, gflops_achieved=fl / med * 1e-9, peak_rss_mb=rss_mb())))


if __name__ == '__main__':
    main()
