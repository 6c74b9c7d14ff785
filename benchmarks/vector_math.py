"""Kernels made of exp / sigmoid / tanh (codegen/fast_math.py) against numpy: softmax over
(1, 1000) and (64, 1024), SiLU x * sigmoid(x) and tanh over (1, 64, 56, 56), each a
graph built at opt_level 3 on `--cores` cores (default 1: numpy's ufuncs use one).

Each round times --calls single calls of ours (natively: time_evaluator) and of numpy's
float32 ufuncs, in alternating order after a short pause, and keeps each side's median
call: on a shared host a long timed block counts other processes' time slices, a
median call mostly does not, for both sides alike. The figures are medians over
--rounds rounds; the ratio is the median of the per-round ratios numpy / ours (above 1:
ours is faster). numpy is the control that makes two runs
comparable: to measure a change, run this file from a checkout of the code before it,
then from the one after, under the same conditions, and compare the ratios:

    git archive BASE | tar -x -C /tmp/before && cp benchmarks/vector_math.py /tmp/before/benchmarks/
    .venv/bin/python /tmp/before/benchmarks/vector_math.py      # the code of BASE
    .venv/bin/python benchmarks/vector_math.py [--rounds 15] [--cores 1] [--calls 20]
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
import warnings

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

import compiler  # noqa: E402
from compiler import graph  # noqa: E402
from compiler.transform.pass_infra import PassContext  # noqa: E402


def np_softmax(x, out):
    np.subtract(x, x.max(axis=-1, keepdims=True), out=out)
    np.exp(out, out=out)
    out /= out.sum(axis=-1, keepdims=True)


def np_silu(x, out):
    np.negative(x, out=out)
    np.exp(out, out=out)
    out += 1
    np.divide(x, out, out=out)


CASES = {  # label: (input shape, the graph of x, numpy writing its output)
    "softmax (1, 1000)": ((1, 1000), graph.nn.softmax, np_softmax),
    "softmax (64, 1024)": ((64, 1024), graph.nn.softmax, np_softmax),
    "silu (1, 64, 56, 56)": ((1, 64, 56, 56), lambda x: graph.multiply(x, graph.sigmoid(x)),
                             np_silu),
    "tanh (1, 64, 56, 56)": ((1, 64, 56, 56), graph.tanh, lambda x, out: np.tanh(x, out=out)),
}


def built(shape, body, target: str):
    """The graph `body(x)` for an input x of `shape`, built at opt_level 3 for `target`."""
    x = graph.var("x", shape=shape)
    mod = graph.IRModule.from_expr(graph.Function([x], body(x)))
    with warnings.catch_warnings(), PassContext(opt_level=3):
        warnings.simplefilter("ignore")
        return graph.build(mod, target=target)


def numpy_seconds(fn, x, out, calls: int) -> float:
    """Median seconds of `fn(x, out)` over `calls` calls, after one."""
    fn(x, out)
    times = []
    for _ in range(calls):
        t = time.perf_counter()
        fn(x, out)
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def measure(label: str, target: str, rounds: int, calls: int) -> tuple[float, float, float]:
    """(our median seconds, numpy's, the median ratio numpy / ours) of the case `label`,
    after checking that both compute the same."""
    shape, body, np_fn = CASES[label]
    x = (np.random.default_rng(0).standard_normal(shape) * 4).astype("float32")
    out = np.empty_like(x)
    lib = built(shape, body, target)
    lib.set_input("x", x)
    lib.run()
    np_fn(x, out)
    np.testing.assert_allclose(lib.get_output(0), out, rtol=1e-5, atol=1e-6, err_msg=label)
    timer = lib.time_evaluator(number=1, repeat=calls)
    ours, theirs = [], []
    for r in range(rounds):
        for side in (("ours", "numpy") if r % 2 == 0 else ("numpy", "ours")):
            time.sleep(0.05)  # the pool's workers spin for a while after a launch
            if side == "ours":
                ours.append(timer().median)
            else:
                theirs.append(numpy_seconds(np_fn, x, out, calls))
    ratios = [t / o for t, o in zip(theirs, ours)]
    return statistics.median(ours), statistics.median(theirs), statistics.median(ratios)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=15)
    p.add_argument("--cores", type=int, default=1)
    p.add_argument("--calls", type=int, default=20, help="calls per round, each side")
    opt = p.parse_args()
    target = f"llvm -num-cores={opt.cores}"
    print(f"compiler from {os.path.dirname(compiler.__file__)}; target {target}; "
          f"{opt.rounds} rounds")
    print(f"{'kernel':<22} {'ours us':>10} {'numpy us':>10} {'numpy/ours':>11}")
    for label in CASES:
        ours, theirs, ratio = measure(label, target, opt.rounds, opt.calls)
        print(f"{label:<22} {ours * 1e6:>10.1f} {theirs * 1e6:>10.1f} {ratio:>11.2f}")


if __name__ == "__main__":
    main()
