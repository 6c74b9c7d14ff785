"""A tuned convolution with and without its fused tail (issue 18): the packed conv2d_nchwc
template built alone with the log's best config, against the graph kernel conv2d + bias +
relu + residual add that a ResNet block fuses around the same anchor and config (the
record serves the workload whatever the tail). Both are timed in native code in
alternating rounds; the ratio says what the tail costs (the target: within 5%).

    python benchmarks/fused_epilogue.py --db models.db [--layer 1,64,56,56,64,3,3,1,1,16,16]
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import warnings

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import compiler  # noqa: E402
import records  # noqa: E402
import search_spaces  # noqa: E402
from compiler import graph  # noqa: E402
from compiler.ops import get_const_tuple  # noqa: E402
from compiler.transform.pass_infra import PassContext  # noqa: E402


def fused_model(N, C, H, W, K, R, S, stride, padding):
    """relu(conv2d(x) + bias + residual): ResNet's second conv of a block."""
    rng = np.random.default_rng(0)
    x = graph.var("x", shape=(N, C, H, W))
    oh = (H + 2 * padding - R) // stride + 1
    ow = (W + 2 * padding - S) // stride + 1
    residual = graph.var("residual", shape=(N, K, oh, ow))
    conv = graph.nn.conv2d(x, graph.const(rng.standard_normal((K, C, R, S)).astype("f4")),
                           strides=stride, padding=padding)
    bias = graph.const(rng.standard_normal((K, 1, 1)).astype("float32"))
    body = graph.nn.relu(graph.add(graph.add(conv, bias), residual))
    return graph.IRModule.from_expr(graph.Function([x, residual], body))


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--db", required=True)
    p.add_argument("--layer", default="1,64,56,56,64,3,3,1,1,16,16",
                   help="conv2d_nchwc's arguments: N,C,H,W,K,R,S,stride,padding,ic,oc")
    p.add_argument("--rounds", type=int, default=9)
    opt = p.parse_args()
    args = tuple(int(v) for v in opt.layer.split(","))
    with records.ApplyHistoryBest(opt.db):
        s, tensors = search_spaces.instantiate("conv2d_nchwc", *args)
        cfg = search_spaces.dispatch(("conv2d_nchwc",
                                      search_spaces.get_template("conv2d_nchwc").bind(args)))
        bare = compiler.build(s, tensors)
        with PassContext(opt_level=3), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            lib = graph.build(fused_model(*args[:9]))
    step = next(st for st in lib.plan["steps"] if "nn.conv2d" in st["ops"])
    bound = search_spaces.get_template("conv2d_nchwc").bind(args)
    if step["info"]["workload"] != f"conv2d_nchwc{bound!r}":  # else the ratio means nothing
        sys.exit(f"the fused kernel's anchor is {step['info']['workload']}, not "
                 f"conv2d_nchwc{bound!r}: --layer must name the packing the build chooses")
    kind = "fallback" if cfg.is_fallback else "logged"
    print(f"conv2d_nchwc{args}: config #{cfg.index} ({kind}); fused kernel "
          f"{'+'.join(step['ops'])}, its config {step['info']['config']}")
    rng = np.random.default_rng(1)
    buffers = [rng.standard_normal(get_const_tuple(t.shape)).astype("float32") for t in tensors]
    timer = bare.time_evaluator(number=1, repeat=1, min_repeat_ms=50)
    lib.set_input("x", rng.standard_normal(lib.plan["inputs"][0]["shape"]).astype("float32"))
    lib.set_input("residual", rng.standard_normal(lib.plan["inputs"][1]["shape"]).astype("f4"))
    index = lib.plan["steps"].index(step)
    times = {"bare": [], "fused": []}
    for r in range(opt.rounds):
        for k in (("bare", "fused") if r % 2 == 0 else ("fused", "bare")):
            times[k].append(timer(*buffers).median if k == "bare"
                            else lib.profile(repeat=3)[index]["seconds"])
    ratios = [f / b for f, b in zip(times["fused"], times["bare"])]
    print(f"bare {statistics.median(times['bare']) * 1e6:.1f} us, fused "
          f"{statistics.median(times['fused']) * 1e6:.1f} us; fused / bare: median "
          f"{statistics.median(ratios):.3f} over {opt.rounds} rounds")


if __name__ == "__main__":
    main()
