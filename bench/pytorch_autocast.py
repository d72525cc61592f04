#!/usr/bin/python3
"""Runs one of the PyTorch reference scripts (../shared/bench/pytorch_{lm,encoder}.py) with its
training step under CPU autocast to bfloat16: the reference for ctrax's --bf16 (bench/run.sh ... bf16).

  /usr/bin/python3 bench/pytorch_autocast.py ../shared/bench/pytorch_lm.py --vocab 256 ... --threads 1 --blas-threads 2

torch.autocast('cpu', dtype=torch.bfloat16) runs the products (linear, matmul: the attention's too) in
bfloat16 through oneDNN and keeps the weights and Adam in float32 — PyTorch's mixed precision on a CPU,
as ctrax's --bf16 is ctrax's. The script runs unchanged inside the context: forward, loss, backward (each
op's backward runs in the dtypes its forward chose) and the optimizer step (not an autocast op). Its
JSON line gets "autocast": "bfloat16".

The thread variables are set here, from the script's own --threads and --blas-threads, before torch is
imported, as the script itself does (torch reads them when it loads).
"""
import json
import os
import runpy
import sys


def flag(name, default=None):
    args = sys.argv[2:]
    return args[args.index(name) + 1] if name in args else default


if len(sys.argv) < 2 or not os.path.isfile(sys.argv[1]):
    sys.exit('usage: pytorch_autocast.py SCRIPT [the script\'s flags]')
threads = flag('--threads', '1')
os.environ['OPENBLAS_NUM_THREADS'] = flag('--blas-threads', threads)
os.environ['OMP_NUM_THREADS'] = threads
import torch  # noqa: E402

script = sys.argv[1]
sys.argv = sys.argv[1:]
real_print = print


def tagged_print(*a, **k):   # the script's JSON line says what ran
    if len(a) == 1 and isinstance(a[0], str) and a[0].startswith('JSON '):
        r = json.loads(a[0][5:])
        r['autocast'] = 'bfloat16'
        a = ('JSON ' + json.dumps(r),)
    real_print(*a, **k)


with torch.autocast('cpu', dtype=torch.bfloat16):
    runpy.run_path(script, init_globals={'print': tagged_print}, run_name='__main__')
