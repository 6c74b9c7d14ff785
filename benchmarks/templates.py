"""The template spaces contain fast points: matmul 1024^3 and a ResNet conv2d layer.

Prints, in one run: the untuned fallback config, a hand-picked point and the best of a
seeded random sample of the space (screened with one timing each, then timed again),
each timed in alternating rounds with numpy (matmul; also the ratio to numpy with
OPENBLAS_CORETYPE=SKYLAKEX, in a subprocess) or PyTorch's conv2d (when installed).
On this machine OpenBLAS's default already picks its AVX-512 kernels; the ratio to its AVX2
kernels (OPENBLAS_CORETYPE=HASWELL, what the default is on CPUs it does not recognise as
AVX-512 ones) is printed too.

    .venv/bin/python benchmarks/templates.py [--samples 40]
"""
from __future__ import annotations

import argparse
import os
import sys
import warnings

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import search_spaces  # noqa: E402
from benchmarks_common import build, numpy_matmul_seconds, side_by_side  # noqa: E402

HAND_MATMUL = {"tile_x": [-1, 1, 8], "tile_y": [-1, 32], "tile_k": [-1, 4], "pack_b": 1,
               "panels_outer": 1, "unroll_k": 0, "fuse_parallel": 2}


def seconds(name, args, cfg, arrays) -> float:
    timer = build(name, args, cfg).time_evaluator(number=1, repeat=5, min_repeat_ms=50)
    return timer(*arrays).median


def best_of(name, args, configs, arrays) -> tuple[float, object]:
    """Screening: the config of `configs` with the least median time (one timing each)."""
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
    screened, best_cfg = best_of("matmul", args, space.sample(samples, seed=0), arrays)
    configs = {"fallback": space.fallback(), "hand-picked": hand,
               f"best of {samples} sampled": best_cfg}
    numpy_s, figures = side_by_side("matmul", args, configs, arrays,
                                    lambda: np.matmul(a, b, out=c))
    # OPENBLAS_CORETYPE is read once, when OpenBLAS loads: other kernels need other
    # processes. Their speed relative to the default, measured back to back in fresh
    # processes, scales our in-process ratio to the default.
    default = numpy_matmul_seconds(n, 15, None)
    skx = numpy_matmul_seconds(n, 15, "SKYLAKEX") / default
    avx2 = numpy_matmul_seconds(n, 15, "HASWELL") / default
    print(f"matmul {n}^3 float32: space of {len(space)} points; numpy (default) "
          f"{gf(numpy_s):.1f} GFLOPS; in fresh processes SKYLAKEX runs at {1 / skx:.2f}x and "
          f"HASWELL (AVX2) at {1 / avx2:.2f}x the default's speed")
    for label, (sec, ratio) in figures.items():
        print(f"  {label:22s} {gf(sec):7.1f} GFLOPS  ratio to numpy {ratio:.2f}, "
              f"to numpy SKYLAKEX {ratio * skx:.2f}, to numpy HASWELL {ratio * avx2:.2f}")
    print(f"  best sampled config: {best_cfg} (screening timed it at {gf(screened):.1f} GFLOPS)")


def conv2d(samples: int) -> None:
    args = (1, 64, 56, 56, 64, 3, 3, 1, 1)
    space = search_spaces.space("conv2d_nchw", *args)
    d = np.random.rand(1, 64, 56, 56).astype("float32")
    w = np.random.rand(64, 64, 3, 3).astype("float32")
    out = np.empty((1, 64, 56, 56), "float32")
    flop = 2 * 64 * 56 * 56 * 64 * 9
    gf = lambda sec: flop / sec / 1e9  # noqa: E731
    screened, best_cfg = best_of("conv2d_nchw", args, space.sample(samples, seed=0), (d, w, out))
    print(f"conv2d (1,64,56,56) x (64,64,3,3) pad 1: space of {len(space)} points")
    configs = {"fallback": space.fallback(), f"best of {samples} sampled": best_cfg}
    try:
        import torch
    except ImportError:
        print("  PyTorch is not installed: no PyTorch figure (pip install torch to compare)")
        for label, cfg in configs.items():
            print(f"  {label:22s} {gf(seconds('conv2d_nchw', args, cfg, (d, w, out))):7.1f} GFLOPS")
    else:
        td, tw = torch.from_numpy(d), torch.from_numpy(w)
        torch_s, figures = side_by_side(
            "conv2d_nchw", args, configs, (d, w, out),
            lambda: torch.nn.functional.conv2d(td, tw, padding=1))
        print(f"  PyTorch conv2d         {gf(torch_s):7.1f} GFLOPS")
        for label, (sec, ratio) in figures.items():
            print(f"  {label:22s} {gf(sec):7.1f} GFLOPS  ratio to PyTorch {ratio:.2f}")
    print(f"  best sampled config: {best_cfg} (screening timed it at {gf(screened):.1f} GFLOPS)")


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--samples", type=int, default=40)
    opt = p.parse_args()
    warnings.simplefilter("ignore")
    matmul(opt.samples)
    conv2d(opt.samples)


if __name__ == "__main__":
    main()
