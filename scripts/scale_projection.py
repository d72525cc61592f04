#!/usr/bin/env python3
"""Projects data-parallel scaling from a measured step time (docs/12_scale.md).

Weak scaling: every node trains the configuration's own batch, so a step's compute stays T (measured on
one node), and the step adds one ring all-reduce of the gradients, not overlapped with the backward pass:

    t_allreduce = 2(K-1)/K * bytes / bandwidth  +  buckets * 2(K-1) * latency

(each of K processes sends and receives 2(K-1)/K of the bytes; every 4 MB bucket is one all-reduce of
2(K-1) ring steps, each paying the link's latency). Efficiency T / (T + t_allreduce); speed-up K times it.

    scripts/scale_projection.py --config M 0.618 13.4 --config L 1.822 109.8
"""
import argparse
import math

LINKS = [("10 Gbit/s Ethernet (TCP, 50 us)", 10e9 / 8, 50e-6), ("100 Gbit/s (RDMA, 5 us)", 100e9 / 8, 5e-6)]


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--config", nargs=3, action="append", metavar=("NAME", "STEP_S", "GRAD_MB"), required=True,
                   help="a configuration: its measured step time on one node (s) and its gradient size (MB)")
    p.add_argument("--nodes", type=int, nargs="+", default=[2, 8, 32])
    p.add_argument("--bucket-mb", type=float, default=4 * 1.048576, help="all-reduce bucket size (ctrax: 4 MiB)")
    a = p.parse_args()
    print("| config | link | " + " | ".join(f"{k} nodes: all-reduce, efficiency, speed-up" for k in a.nodes) + " |")
    print("|---|---|" + "---|" * len(a.nodes))
    for name, step_s, grad_mb in a.config:
        T, nbytes = float(step_s), float(grad_mb) * 1e6
        buckets = math.ceil(nbytes / (a.bucket_mb * 1e6))
        for link, bandwidth, latency in LINKS:
            cells = []
            for k in a.nodes:
                t = 2 * (k - 1) / k * nbytes / bandwidth + buckets * 2 * (k - 1) * latency
                eff = T / (T + t)
                cells.append(f"{t * 1e3:.1f} ms, {eff * 100:.1f}%, {k * eff:.1f}x")
            print(f"| {name} ({grad_mb} MB, {T:.2f} s/step) | {link} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
