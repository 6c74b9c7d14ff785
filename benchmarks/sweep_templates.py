"""Every point of every template space builds and computes the right answer: a long
seeded sweep (outside CI) over all templates on small and odd shapes, against numpy.

    .venv/bin/python benchmarks/sweep_templates.py [--configs 2000] [--seed 0]
"""
from __future__ import annotations

import argparse
import os
import sys
import time
import warnings

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import compiler  # noqa: E402
import search_spaces  # noqa: E402


def _conv(d, w, stride, pad, depthwise=False):
    _, _, H, W = d.shape
    R, S = w.shape[2:]
    dp = np.pad(d.astype("float64"), ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    OH, OW = (H + 2 * pad - R) // stride + 1, (W + 2 * pad - S) // stride + 1
    out = np.zeros((d.shape[0], d.shape[1] if depthwise else w.shape[0], OH, OW))
    for ry in range(R):
        for rx in range(S):
            patch = dp[:, :, ry:ry + stride * OH:stride, rx:rx + stride * OW:stride]
            if depthwise:
                out += patch * w[None, :, 0, ry, rx, None, None]
            else:
                out += np.einsum("nchw,kc->nkhw", patch, w[:, :, ry, rx])
    return out


WORKLOADS = {
    "matmul": ([(37, 29, 13), (64, 48, 32), (7, 13, 100), (16, 128, 9)],
               lambda a, b: a @ b),
    "dense_bias_relu": ([(37, 29, 13), (8, 64, 32), (7, 13, 100)],
                        lambda x, w, b: np.maximum(x @ w.T + b, 0)),
    "batch_matmul": ([(3, 13, 20, 9), (2, 16, 32, 8), (1, 7, 13, 5)], lambda a, b: a @ b),
    "conv2d_nchw": ([(1, 3, 9, 9, 4, 3, 3, 1, 1), (2, 5, 7, 13, 6, 3, 2, 2, 1),
                     (1, 8, 13, 7, 16, 1, 1, 1, 0)],
                    lambda d, w, *, args: _conv(d, w, args[7], args[8])),
    "conv2d_nchw_packed": ([(1, 3, 9, 9, 4, 3, 3, 1, 1), (2, 6, 7, 13, 8, 3, 2, 2, 1),
                            (1, 8, 13, 7, 16, 1, 1, 1, 0)],
                           lambda d, w, *, args: _conv(d, w, args[7], args[8])),
    "depthwise_conv2d_nchw": ([(1, 6, 9, 9, 3, 3, 1, 1), (2, 5, 13, 7, 3, 2, 2, 1)],
                              lambda d, w, *, args: _conv(d, w, args[6], args[7], True)),
}


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--configs", type=int, default=2000)
    p.add_argument("--seed", type=int, default=0)
    opt = p.parse_args()
    warnings.simplefilter("ignore")
    cases = [(name, args) for name, (shapes, _) in WORKLOADS.items() for args in shapes]
    per_case = -(-opt.configs // len(cases))
    rng = np.random.default_rng(opt.seed)
    checked, wrong, failed, start = 0, [], [], time.perf_counter()
    for name, args in cases:
        ref = WORKLOADS[name][1]
        space = search_spaces.space(name, *args)
        for cfg in space.sample(per_case, seed=opt.seed):
            try:
                s, tensors = search_spaces.instantiate(name, *args, config=cfg)
                f = compiler.build(s, tensors)
            except Exception as err:  # noqa: BLE001 - every failure is reported below
                failed.append((name, args, cfg, repr(err)))
                continue
            ins = [rng.uniform(-1, 1, [d.value for d in t.shape]).astype("float32")
                   for t in tensors[:-1]]
            out = np.full([d.value for d in tensors[-1].shape], np.nan, "float32")
            f(*ins, out)
            extra = {"args": args} if "conv" in name else {}
            expected = ref(*[x.astype("float64") for x in ins], **extra)
            checked += 1
            if not np.allclose(out, expected, rtol=1e-4, atol=1e-4):
                wrong.append((name, args, cfg))
        print(f"{name}{args}: space {len(space)}, {per_case} configs", flush=True)
    print(f"checked {checked} configs over {len(cases)} workloads of {len(WORKLOADS)} templates "
          f"in {time.perf_counter() - start:.0f} s: {len(wrong)} wrong, "
          f"{len(failed)} failed to build")
    for item in wrong[:10] + failed[:10]:
        print("  ", item)
    sys.exit(1 if wrong or failed else 0)


if __name__ == "__main__":
    main()
