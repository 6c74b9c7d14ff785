"""Randomised schedules compiled with compiler.build and run natively, against numpy.

Each test draws its schedule from a fixed seed (random.Random(seed)): random tile and
split factors (often not dividing the extent), random reorders, vectorize on the
innermost loop, parallel on the outermost, unroll somewhere in between, and a producer
computed at a random loop of its consumer. The failure message carries the seed, the
schedule steps and the lowered loop IR, so a failure is reproducible.
"""
from __future__ import annotations

import random

import numpy as np
import pytest

import compiler
from compiler import te
from lower_check import Log, mats, matmul, rand_factor, random_reorder, random_split
from build_check import check_build

pytestmark = pytest.mark.filterwarnings("ignore::compiler.transform.VectorizeWarning")

RTOL = 1e-4
MAX_UNROLL = 6
MATMUL_SHAPES = [(7, 13, 5), (13, 7, 7), (17, 9, 13), (1, 5, 3), (32, 24, 16), (33, 17, 29)]
ODD_SHAPES = [(7, 13), (13, 7), (1, 9), (9, 1), (17, 33), (5, 5)]


def random_build_annotate(rng, s, stage, log):
    """vectorize the innermost loop, parallel the outermost, unroll one loop in between
    (each by chance; only data-parallel loops are vectorized or parallel). Only loops of
    at most MAX_UNROLL iterations are unrolled, which keeps LLVM's time in check."""
    st = s[stage]
    leaves = st.leaf_iter_vars
    inner, outer = leaves[-1], leaves[0]
    if inner.iter_type == "data_par" and rng.random() < 0.6:
        log(f"vectorize({inner.name})")
        st.vectorize(inner)
    if outer is not inner and outer.iter_type == "data_par" and rng.random() < 0.6:
        log(f"parallel({outer.name})")
        st.parallel(outer)
    ranges = compiler.infer_bound(s)
    middle = [iv for iv in leaves[1:-1]
              if getattr(ranges[iv].extent, "value", MAX_UNROLL + 1) <= MAX_UNROLL]
    if middle and rng.random() < 0.5:
        leaf = rng.choice(middle)
        log(f"unroll({leaf.name})")
        st.unroll(leaf)


def random_attach(rng, s, producer, consumer, log):
    """compute_at a random loop of `consumer` (sometimes inline or root instead)."""
    where = rng.choice(["at", "at", "at", "inline", "root"])
    if where == "inline" and not s[producer].op.reduce_axis:
        log(f"{producer.name}.compute_inline()")
        s[producer].compute_inline()
        return
    if where == "root":
        log(f"{producer.name} at root")
        return
    ax = rng.choice(s[consumer].leaf_iter_vars)
    log(f"{producer.name}.compute_at({consumer.name}, {ax.name})")
    s[producer].compute_at(s[consumer], ax)


# --------------------------------------------------------------------------- matmul


@pytest.mark.parametrize("seed", range(14))
def test_matmul_random_schedule(seed):
    rng = random.Random(seed)
    log = Log(seed)
    M, N, K = MATMUL_SHAPES[seed % len(MATMUL_SHAPES)]
    log(f"shape M={M} N={N} K={K}")
    A, B, C, k = matmul(M, N, K)
    s = te.create_schedule(C.op)
    CL = None
    if rng.random() < 0.4:
        log("cache_write(C, local)")
        CL = s.cache_write(C, "local")
    i, j = C.op.axis
    if rng.random() < 0.7:
        fx, fy = rand_factor(rng, M), rand_factor(rng, N)
        log(f"tile(i, j, {fx}, {fy})")
        s[C].tile(i, j, fx, fy)
    work = CL if CL is not None else C
    if rng.random() < 0.7:
        fk = rand_factor(rng, K)
        log(f"split(k, factor={fk})")
        s[work].split(s[work].op.reduce_axis[0], factor=fk)
    random_reorder(rng, s, work, log)
    if CL is not None:
        random_attach(rng, s, CL, C, log)
        random_build_annotate(rng, s, CL, log)
    random_build_annotate(rng, s, C, log)
    a, b = mats(np.random.default_rng(seed), (M, K), (K, N))
    check_build(s, [A, B, C], [a, b], [a.astype("float64") @ b], rtol=RTOL, atol=1e-4,
                note=str(log))


# --------------------------------------------------------------------------- elementwise chains


@pytest.mark.parametrize("seed", range(12))
def test_broadcast_chain_random_attach(seed):
    """B = A * Row[j] + Col[i], C = max(B, 0) - B * 0.5: C tiled, reordered and
    annotated at random; B computed at a random loop of C (or inline, or root)."""
    rng = random.Random(1000 + seed)
    log = Log(seed)
    n, m = ODD_SHAPES[seed % len(ODD_SHAPES)]
    log(f"shape {n}x{m}")
    A = te.placeholder((n, m), name="A")
    Row = te.placeholder((m,), name="Row")
    Col = te.placeholder((n,), name="Col")
    B = te.compute((n, m), lambda i, j: A[i, j] * Row[j] + Col[i], name="B")
    C = te.compute((n, m), lambda i, j: te.max(B[i, j], 0.0) - B[i, j] * 0.5, name="C")
    s = te.create_schedule(C.op)
    if rng.random() < 0.5:
        fx, fy = rand_factor(rng, n), rand_factor(rng, m)
        log(f"tile(C, {fx}, {fy})")
        s[C].tile(*C.op.axis, fx, fy)
    else:
        random_split(rng, s, C, log, max_splits=2)
    random_reorder(rng, s, C, log)
    random_attach(rng, s, B, C, log)
    if s[B].attach_type != "inline":
        random_split(rng, s, B, log, max_splits=1)
        random_build_annotate(rng, s, B, log)
    random_build_annotate(rng, s, C, log)
    a, r, c = mats(np.random.default_rng(seed), (n, m), (m,), (n,))
    b = a * r[None, :] + c[:, None]
    check_build(s, [A, Row, Col, C], [a, r, c], [np.maximum(b, 0) - b * 0.5], rtol=1e-5,
                atol=1e-5, note=str(log))


@pytest.mark.parametrize("seed", range(6))
def test_stencil_random_attach(seed):
    """C[i, j] = B[i, j] + B[i + 1, j + 2] with B = A * 3 - 1: the region of B computed
    per iteration of the attach loop carries a halo."""
    rng = random.Random(2000 + seed)
    log = Log(seed)
    n, m = ODD_SHAPES[seed % len(ODD_SHAPES)]
    log(f"shape {n}x{m}")
    A = te.placeholder((n + 1, m + 2), name="A")
    B = te.compute((n + 1, m + 2), lambda i, j: A[i, j] * 3 - 1, name="B")
    C = te.compute((n, m), lambda i, j: B[i, j] + B[i + 1, j + 2], name="C")
    s = te.create_schedule(C.op)
    random_split(rng, s, C, log, max_splits=2)
    random_reorder(rng, s, C, log)
    ax = rng.choice(s[C].leaf_iter_vars)
    log(f"B.compute_at(C, {ax.name})")
    s[B].compute_at(s[C], ax)
    random_build_annotate(rng, s, B, log)
    random_build_annotate(rng, s, C, log)
    a, = mats(np.random.default_rng(seed), (n + 1, m + 2))
    b = a * 3 - 1
    check_build(s, [A, C], [a], [b[:-1, :-2] + b[1:, 2:]], rtol=1e-5, atol=1e-5,
                note=str(log))


@pytest.mark.parametrize("seed", range(8))
def test_long_1d_random_split(seed):
    """Length 1000 (and 7, 13): one or two splits by factors that rarely divide it,
    vectorized and parallel, with a producer at a random loop."""
    rng = random.Random(3000 + seed)
    log = Log(seed)
    n = [1000, 7, 13, 1000][seed % 4]
    log(f"n={n}")
    A = te.placeholder((n,), name="A")
    B = te.compute((n,), lambda i: te.exp(A[i] * 0.5), name="B")
    C = te.compute((n,), lambda i: B[i] * A[i] + 1.0, name="C")
    s = te.create_schedule(C.op)
    f1 = rng.choice([3, 4, 16, rng.randint(1, 40)])
    log(f"split(i, factor={f1})")
    xo, xi = s[C].split(C.op.axis[0], factor=f1)
    if rng.random() < 0.5:
        f2 = rng.choice([2, 3, 7])
        log(f"split(i.outer, factor={f2})")
        s[C].split(xo, factor=f2)
    random_attach(rng, s, B, C, log)
    random_build_annotate(rng, s, C, log)
    a, = mats(np.random.default_rng(seed), (n,))
    check_build(s, [A, C], [a], [np.exp(a.astype("float64") * 0.5) * a + 1], rtol=1e-5,
                atol=1e-5, note=str(log))


@pytest.mark.parametrize("seed", range(4))
def test_symbolic_size_random_split(seed):
    """The 1-D chain over a symbolic n: one module, called on several sizes."""
    rng = random.Random(4000 + seed)
    log = Log(seed)
    n = te.var("n")
    A = te.placeholder((n,), name="A")
    B = te.compute((n,), lambda i: A[i] * A[i] - 0.5, name="B")
    C = te.compute((n,), lambda i: B[i] + A[i] * 3.0, name="C")
    s = te.create_schedule(C.op)
    random_split(rng, s, C, log, max_splits=2)
    random_attach(rng, s, B, C, log)
    random_build_annotate(rng, s, C, log)
    f = compiler.build(s, [A, C])
    for size in (1, 7, 13, 1000):
        a, = mats(np.random.default_rng(size), (size,))
        c = np.full(size, np.nan, "float32")
        f(a, c)
        np.testing.assert_allclose(c, a * a - 0.5 + a * 3.0, rtol=1e-5, atol=1e-5,
                                   err_msg=f"{log}; n={size}")
