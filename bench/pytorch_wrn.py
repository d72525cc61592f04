#!/usr/bin/python3
"""Trax's WideResnet in plain PyTorch (nn.Conv2d): the reference for ctrax's convolutions.

Model (the same work as `build/bench/bench_train --model wideresnet`, models/resnet.cpp, Trax's
trax/models/resnet.py): Conv(16, 3x3, SAME); three groups of n blocks with 16k, 32k, 64k channels
(strides 1, 2, 2), each block BatchNorm, ReLU, Conv 3x3, BatchNorm, ReLU, Conv 3x3, the group's first
block around a 3x3 shortcut convolution with the group's stride, the other n - 1 inside one residual;
BatchNorm, ReLU, AvgPool 8x8, Dense(10). Every convolution has a bias, as Trax's Conv. Random
32x32x1 images and labels, cross-entropy, Adam (lr 1e-3), float32, training mode.
One timed step = forward + loss + backward + Adam update. Flags, output lines and thread control
as ../shared/bench/pytorch_lm.py (OPENBLAS_NUM_THREADS and OMP_NUM_THREADS set before torch is
imported). --channels-last stores activations NHWC (as ctrax does), which some CPU builds run faster;
bench/run.sh runs both layouts and both thread settings and keeps PyTorch's best.

  /usr/bin/python3 bench/pytorch_wrn.py --n-blocks 1 --widen-factor 1 --batch 128 --threads 2
"""
import argparse
import json
import os
import resource


def parse():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument('--n-blocks', type=int, default=1, help='blocks per group: WRN-(6n+4)-k')
    p.add_argument('--widen-factor', type=int, default=1, help='k')
    p.add_argument('--batch', type=int, default=128)
    p.add_argument('--side', type=int, default=32)
    p.add_argument('--steps', type=int, default=10, help='timed training steps (after --warmup steps)')
    p.add_argument('--warmup', type=int, default=3)
    p.add_argument('--threads', type=int, default=1)
    p.add_argument('--blas-threads', type=int, default=None, help='OpenBLAS pool size (default: = --threads)')
    p.add_argument('--channels-last', action='store_true', help='NHWC activations (torch.channels_last)')
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


def conv3(c_in, c_out, stride=1):
    return nn.Conv2d(c_in, c_out, 3, stride=stride, padding=1)   # SAME for odd kernels at stride 1 and 2 on even sides


class Block(nn.Sequential):
    def __init__(self, c_in, c, stride):
        super().__init__(nn.BatchNorm2d(c_in), nn.ReLU(), conv3(c_in, c, stride), nn.BatchNorm2d(c), nn.ReLU(),
                         conv3(c, c))


class Group(nn.Module):
    def __init__(self, n, c_in, c, stride):
        super().__init__()
        self.first = Block(c_in, c, stride)
        self.shortcut = conv3(c_in, c, stride)
        self.rest = nn.Sequential(*[Block(c, c, 1) for _ in range(n - 1)])

    def forward(self, x):
        x = self.first(x) + self.shortcut(x)
        return x + self.rest(x) if len(self.rest) else x + x   # Trax's Residual of no layers doubles


class WideResnet(nn.Sequential):
    def __init__(self, n, k, classes=10):
        super().__init__(conv3(1, 16), Group(n, 16, 16 * k, 1), Group(n, 16 * k, 32 * k, 2),
                         Group(n, 32 * k, 64 * k, 2), nn.BatchNorm2d(64 * k), nn.ReLU(), nn.AvgPool2d(8),
                         nn.Flatten(), nn.Linear(64 * k, classes))


def conv_flops_per_step(a):
    """Convolution FLOPs of a training step, 3x the forward's (input and weight gradients):
    2 * H * W * 9 * C_in * C_out per 3x3 convolution per image."""
    s, k, n = a.side, a.widen_factor, a.n_blocks
    total = s * s * 9 * 1 * 16
    c_in = 16
    for c, stride in ((16 * k, 1), (32 * k, 2), (64 * k, 2)):
        s //= stride
        total += 2 * s * s * 9 * c_in * c + s * s * 9 * c * c + (n - 1) * 2 * s * s * 9 * c * c
        c_in = c
    return 6 * total * a.batch


def rss_mb():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def main():
    torch.manual_seed(args.seed)
    model = WideResnet(args.n_blocks, args.widen_factor)
    fmt = torch.channels_last if args.channels_last else torch.contiguous_format
    model = model.to(memory_format=fmt)
    model.train()
    opt = torch.optim.Adam(model.parameters(), lr=args.lr)
    g = torch.Generator().manual_seed(args.seed)
    n = args.warmup + args.steps
    images = torch.randn(n, args.batch, 1, args.side, args.side, generator=g)
    labels = torch.randint(0, 10, (n, args.batch), generator=g)
    times, losses = [], []
    for i in range(n):
        x = images[i].contiguous(memory_format=fmt)
        t0 = time.perf_counter()
        loss = F.cross_entropy(model(x), labels[i])
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        losses.append(loss.item())
        if i >= args.warmup:
            times.append(time.perf_counter() - t0)
    times.sort()
    med = times[len(times) // 2]
    fl = conv_flops_per_step(args)
    n_params = sum(p.numel() for p in model.parameters())
    layout = 'channels_last' if args.channels_last else 'NCHW'
    print(f'train: {args.batch / med:.0f} images/s | {med * 1e3:.1f} ms/step median ({len(times)} steps after '
          f'{args.warmup} warm-up) | convolutions {fl / 1e9:.2f} GFLOP/step -> {fl / med * 1e-9:.1f} GFLOP/s | '
          f'params {n_params / 1e6:.3f}M | peak RSS {rss_mb():.0f} MB | loss {losses[0]:.3f}->{losses[-1]:.3f} | '
          f'threads={args.threads} blas={os.environ["OPENBLAS_NUM_THREADS"]} ({layout}, mkldnn '
          f'{"on" if torch.backends.mkldnn.is_available() else "absent"})')
    if args.json:
        print('JSON ' + json.dumps(dict(tag=args.tag, script='pytorch_wrn', ms_per_step_median=med * 1e3,
                                        images_per_s=args.batch / med, gflops_achieved=fl / med * 1e-9,
                                        peak_rss_mb=rss_mb())))


if __name__ == '__main__':
    main()
