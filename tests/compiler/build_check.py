"""Helpers for tests that build native code and compare it with numpy."""
from __future__ import annotations

import numpy as np

import compiler
from lower_check import mats


def unwritten(want: np.ndarray, dtype=None) -> np.ndarray:
    """An output array of `dtype` (default: want's) that differs from `want` everywhere,
    so an element the kernel never writes fails the comparison."""
    dtype = np.dtype(dtype or want.dtype)
    if dtype.kind == "f":
        return np.full(want.shape, np.nan, dtype=dtype)
    want = want.astype(dtype)
    if dtype == np.bool_:
        return ~want
    return want - np.ones((), dtype=dtype)  # wraps at the minimum, still differs


def check_build(s, args, inputs, expected, rtol=1e-5, atol=1e-6, note="", target="llvm"):
    """Build `s` over `args`, call it on `inputs` + fresh outputs, compare with `expected`
    (one array per output argument, the args after the inputs). Returns the Module."""
    f = compiler.build(s, args, target=target)
    outs = [unwritten(np.asarray(e), t.dtype) for e, t in zip(expected, args[len(inputs):])]
    f(*inputs, *outs)
    try:
        for got, want in zip(outs, expected):
            if got.dtype.kind == "f":
                np.testing.assert_allclose(got, want, rtol=rtol, atol=atol)
            else:
                np.testing.assert_array_equal(got, want)
    except AssertionError as err:
        raise AssertionError(f"{note}\n{compiler.lower(s, args)}\n{err}") from None
    return f


def elementwise(exprs: dict, n: int, vectorize: bool):
    """(schedule, outputs): one (n,) te.compute per `exprs` entry ({name: f(i)}), all in
    one schedule; with `vectorize`, each split by 8 and its inner loop vectorized (with a
    tail when 8 does not divide n)."""
    from compiler import te
    outs = [te.compute((n,), f, name=name) for name, f in exprs.items()]
    s = te.create_schedule([o.op for o in outs])
    if vectorize:
        for o in outs:
            _, inner = s[o].split(o.op.axis[0], factor=8)
            s[o].vectorize(inner)
    return s, outs


def randn(seed, *shape, dtype="float32"):
    """Standard normal data of `shape`, reproducible from `seed`."""
    return mats(np.random.default_rng(seed), shape, dtype=dtype)[0]


def run_graph(dtype: str, outputs, a, b):
    """A graph function of x (7, 13) and y (13,) of `dtype` whose outputs are
    `outputs(x, y)`, built and run on `a`, `b`: (its outputs, the results, the graph
    reference's results)."""
    from compiler import graph
    from compiler.graph.ir.reference import evaluate
    x = graph.var("x", shape=(7, 13), dtype=dtype)
    y = graph.var("y", shape=(13,), dtype=dtype)
    outs = outputs(x, y)
    fn = graph.Function([x, y], graph.Tuple(outs))
    got = graph.build(graph.IRModule.from_expr(fn)).run(x=a, y=b)
    with np.errstate(over="ignore"):
        want = evaluate(fn, a, b)
    return outs, got, want


def as_f64(x) -> np.ndarray:
    """`x` in float64 (a bfloat16 array too), to compare values of any float type."""
    return np.asarray(x).astype("float64")
