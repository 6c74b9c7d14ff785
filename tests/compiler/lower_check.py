"""Helpers shared by the randomised lowering tests: seeded schedule moves, a log of
the moves taken, and `check`, which lowers, runs the IR interpreter and compares with
numpy (the failure message carries the seed, the moves and the lowered IR)."""
from __future__ import annotations

import numpy as np

import compiler
from compiler import te
from compiler.ir.interpreter import run

RTOL = 1e-4


class Log:
    """The schedule steps taken, for the failure message."""

    def __init__(self, seed):
        self.steps = [f"seed={seed}"]

    def __call__(self, text):
        self.steps.append(text)

    def __str__(self):
        return "; ".join(self.steps)


def check(s, args, inputs, expected, log, rtol=RTOL, atol=1e-5):
    """Lower `s` over `args`, run it on `inputs` + zeroed outputs, compare with `expected`.

    `expected` is one array per output argument (the args after the inputs).
    """
    func = compiler.lower(s, args)
    outs = [np.full(e.shape, np.nan if e.dtype.kind == "f" else -12345, dtype=e.dtype)
            for e in expected]
    try:
        run(func, *inputs, *outs)
    except Exception as err:  # pragma: no cover - makes the failure readable
        raise AssertionError(f"{log}\n{func}\nrun failed: {err!r}") from err
    for got, want in zip(outs, expected):
        np.testing.assert_allclose(got, want, rtol=rtol, atol=atol,
                                   err_msg=f"{log}\n{func}")
    return func


def rand_factor(rng, extent):
    """A split factor: often one that does not divide `extent`, sometimes 1 or > extent."""
    return rng.choice([1, 2, 3, 4, 5, extent, extent + 1, rng.randint(1, extent + 2)])


def random_split(rng, s, stage, log, max_splits=3):
    """Split random leaf loops of `stage` a few times (factor or nparts)."""
    st = s[stage]
    for _ in range(rng.randint(0, max_splits)):
        leaf = rng.choice(st.leaf_iter_vars)
        if rng.random() < 0.75:
            f = rng.randint(1, 9)
            log(f"split({leaf.name}, factor={f})")
            st.split(leaf, factor=f)
        else:
            p = rng.randint(1, 5)
            log(f"split({leaf.name}, nparts={p})")
            st.split(leaf, nparts=p)


def random_reorder(rng, s, stage, log):
    st = s[stage]
    leaves = list(st.leaf_iter_vars)
    rng.shuffle(leaves)
    log(f"reorder({', '.join(iv.name for iv in leaves)})")
    st.reorder(*leaves)
    assert st.leaf_iter_vars == leaves


def random_annotate(rng, s, stage, log):
    """vectorize / parallel on data-parallel leaves, unroll on any; no semantic change."""
    st = s[stage]
    for leaf in list(st.leaf_iter_vars):
        r = rng.random()
        if r < 0.15:
            log(f"unroll({leaf.name})")
            st.unroll(leaf)
        elif r < 0.3 and leaf.iter_type == "data_par":
            log(f"vectorize({leaf.name})")
            st.vectorize(leaf)
        elif r < 0.4 and leaf.iter_type == "data_par":
            log(f"parallel({leaf.name})")
            st.parallel(leaf)
        elif r < 0.45:
            log(f"pragma({leaf.name})")
            st.pragma(leaf, "auto_unroll_max_step", 16)


def random_fuse(rng, s, stage, log):
    """Fuse one random run of adjacent leaves of the same kind."""
    st = s[stage]
    leaves = st.leaf_iter_vars
    starts = [p for p in range(len(leaves) - 1)
              if leaves[p].iter_type == leaves[p + 1].iter_type]
    if not starts:
        return None
    p = rng.choice(starts)
    n = 2
    while p + n < len(leaves) and leaves[p + n].iter_type == leaves[p].iter_type \
            and rng.random() < 0.4:
        n += 1
    run_ = leaves[p:p + n]
    log(f"fuse({', '.join(iv.name for iv in run_)})")
    return st.fuse(*run_)


def mats(rng_np, *shapes, dtype="float32"):
    return [rng_np.standard_normal(sh).astype(dtype) for sh in shapes]


def matmul(M=8, N=6, K=5):
    A = te.placeholder((M, K), name="A")
    B = te.placeholder((K, N), name="B")
    k = te.reduce_axis((0, K), name="k")
    C = te.compute((M, N), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    return A, B, C, k


MATMUL_SHAPES = [(7, 13, 5), (13, 7, 7), (7, 7, 13), (4, 6, 8), (1, 5, 3), (2, 3, 1000),
                 (1000, 1, 2), (3, 1000, 2)]
