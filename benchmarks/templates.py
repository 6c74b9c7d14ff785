"""The template spaces contain fast points: matmul 1024^3 and a ResNet conv2d layer.

Prints, in one run: the untuned fallback config, a hand-picked point and the best of a
seeded random sample of the space, each next to numpy (matmul; also the ratio to numpy
with OPENBLAS_CORETYPE=SKYLAKEX, in a subprocess) or PyTorch's conv2d (when installed).
On this machine OpenBLAS's default already picks its AVX-512 kernels; the ratio to its AVX2
kernels (OPENBLAS_CORETYPE=HASWELL, what the default is on CPUs it does not recognise as
AVX-512 ones) is printed too.

    .venv/bin/python benchmarks/templates.py [--samples 40]
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
import warnings

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import compiler  # noqa: E402
import search_spaces  # noqa: E402
from benchmarks_common import numpy_matmul_seconds  # noqa: E402

HAND_MATMUL = {"tile_x": [-1, 1, 8], "tile_y": [-1, 32], "tile_k": [-1, 4], "pack_b": 1,
               "panels_outer": 1, "unroll_k": 0, "fuse_parallel": 2}


def seconds(name, args, cfg, arrays) -> float:
    s, tensors = search_spaces.instantiate(name, *args, config=cfg)
    f = compiler.build(s, tensors)
    return f.time_evaluator(number=1, repeat=5, min_repeat_ms=50)(*arrays).median


def best_of(name, args, configs, arrays) -> tuple[float, object]:
    best = (float("inf"), None)
    for cfg in configs:
        best = min(best, (seconds(name, args, cfg, arrays), cfg), key=lambda x: x[0])
    return best


def matmul(samples: int) -> None:
    n = 1024
    args = (n, n, n)
    space = search_spaces.space("matmul", *args)
    a, b = np.random.rand(n, n).astype("float32"), np.random.rand(n, n).astype("float32")
    c = np.empty((n, n), "float32")
    arrays = (a, b, c)
    gf = lambda sec: 2 * n ** 3 / sec / 1e9  # noqa: E731
    hand = search_spaces.ConfigEntity.from_json(
        space, {"template_version": space.fallback().template_version, "knobs": HAND_MATMUL})
    time.sleep(0.3)
    fallback = seconds("matmul", args, space.fallback(), arrays)
    handpicked = seconds("matmul", args, hand, arrays)
    best, best_cfg = best_of("matmul", args, space.sample(samples, seed=0), arrays)
    base = []
    for _ in range(15):
        t = time.perf_counter()
        np.matmul(a, b, out=c)
        base.append(time.perf_counter() - t)
    numpy_s = statistics.median(base)
    skx = numpy_matmul_seconds(n, 15, "SKYLAKEX")
    avx2 = numpy_matmul_seconds(n, 15, "HASWELL")
    print(f"matmul {n}^3 float32: space of {len(space)} points; numpy {gf(numpy_s):.1f} GFLOPS, "
          f"numpy SKYLAKEX {gf(skx):.1f} GFLOPS, numpy HASWELL (AVX2) {gf(avx2):.1f} GFLOPS")
    for label, sec in (("fallback", fallback), ("hand-picked", handpicked),
                       (f"best of {samples} sampled", best)):
        print(f"  {label:22s} {gf(sec):7.1f} GFLOPS  ratio to numpy {numpy_s / sec:.2f}, "
              f"to numpy SKYLAKEX {skx / sec:.2f}, to numpy HASWELL {avx2 / sec:.2f}")
    print(f"  best sampled config: {best_cfg}")


def conv2d(samples: int) -> None:
    args = (1, 64, 56, 56, 64, 3, 3, 1, 1)
    space = search_spaces.space("conv2d_nchw", *args)
    d = np.random.rand(1, 64, 56, 56).astype("float32")
    w = np.random.rand(64, 64, 3, 3).astype("float32")
    out = np.empty((1, 64, 56, 56), "float32")
    flop = 2 * 64 * 56 * 56 * 64 * 9
    gf = lambda sec: flop / sec / 1e9  # noqa: E731
    fallback = seconds("conv2d_nchw", args, space.fallback(), (d, w, out))
    best, best_cfg = best_of("conv2d_nchw", args, space.sample(samples, seed=0), (d, w, out))
    print(f"conv2d (1,64,56,56) x (64,64,3,3) pad 1: space of {len(space)} points")
    try:
        import torch
    except ImportError:
        torch = None
        print("  PyTorch is not installed: no PyTorch figure (pip install torch to compare)")
    torch_s = None
    if torch is not None:
        td, tw = torch.from_numpy(d), torch.from_numpy(w)
        ts = []
        for _ in range(15):
            t = time.perf_counter()
            torch.nn.functional.conv2d(td, tw, padding=1)
            ts.append(time.perf_counter() - t)
        torch_s = statistics.median(ts)
        print(f"  PyTorch conv2d         {gf(torch_s):7.1f} GFLOPS")
    for label, sec in (("fallback", fallback), (f"best of {samples} sampled", best)):
        ratio = f"  ratio to PyTorch {torch_s / sec:.2f}" if torch_s else ""
        print(f"  {label:22s} {gf(sec):7.1f} GFLOPS{ratio}")
    print(f"  best sampled config: {best_cfg}")


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--samples", type=int, default=40)
    opt = p.parse_args()
    warnings.simplefilter("ignore")
    matmul(opt.samples)
    conv2d(opt.samples)


if __name__ == "__main__":
    main()
