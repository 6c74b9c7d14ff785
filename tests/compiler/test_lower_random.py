"""Randomised schedules, lowered and run through the IR interpreter, against numpy.

Each test draws schedules from a fixed seed (random.Random(seed)), so failures are
reproducible: the assertion message carries the seed, the schedule steps taken and the
lowered IR. Shapes are small because the interpreter is pure Python.
"""
from __future__ import annotations

import random

import numpy as np
import pytest

import compiler
from compiler import te
from compiler.ir.interpreter import run

RTOL = 1e-4

# --------------------------------------------------------------------------- helpers


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


def matmul(M, N, K):
    A = te.placeholder((M, K), name="A")
    B = te.placeholder((K, N), name="B")
    k = te.reduce_axis((0, K), name="k")
    C = te.compute((M, N), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    return A, B, C, k


MATMUL_SHAPES = [(7, 13, 5), (13, 7, 7), (7, 7, 13), (4, 6, 8), (1, 5, 3), (2, 3, 1000),
                 (1000, 1, 2), (3, 1000, 2)]


# --------------------------------------------------------------------------- matmul


@pytest.mark.parametrize("seed", range(24))
def test_matmul_random_schedule(seed):
    rng = random.Random(seed)
    log = Log(seed)
    M, N, K = MATMUL_SHAPES[seed % len(MATMUL_SHAPES)]
    log(f"shape M={M} N={N} K={K}")
    A, B, C, k = matmul(M, N, K)
    s = te.create_schedule(C.op)
    i, j = C.op.axis
    if rng.random() < 0.5:
        fx, fy = rand_factor(rng, M), rand_factor(rng, N)
        log(f"tile(i, j, {fx}, {fy})")
        s[C].tile(i, j, fx, fy)
    if rng.random() < 0.7:
        fk = rand_factor(rng, K)
        log(f"split(k, factor={fk})")
        s[C].split(k, factor=fk)
    random_split(rng, s, C, log, max_splits=2)
    random_reorder(rng, s, C, log)
    random_annotate(rng, s, C, log)
    a, b = mats(np.random.default_rng(seed), (M, K), (K, N))
    check(s, [A, B, C], [a, b], [a.astype("float64") @ b], log)


def test_matmul_long_reduction_nparts():
    # (2, 1000) x (1000, 3) with the reduction split into 7 parts (1000 % 7 != 0)
    log = Log("fixed")
    A, B, C, k = matmul(2, 3, 1000)
    s = te.create_schedule(C.op)
    ko, ki = s[C].split(k, nparts=7)
    s[C].reorder(ko, C.op.axis[0], ki, C.op.axis[1])
    a, b = mats(np.random.default_rng(1), (2, 1000), (1000, 3))
    func = check(s, [A, B, C], [a, b], [a.astype("float64") @ b], log)
    # the inner loop of a non-dividing nparts split must be guarded
    assert "if (" in str(func)


def test_matmul_reduce_outer_loop_init_once():
    # a reduction loop outermost: the init must still run only once per element
    log = Log("fixed")
    A, B, C, k = matmul(5, 3, 7)
    s = te.create_schedule(C.op)
    ko, ki = s[C].split(k, factor=3)
    i, j = C.op.axis
    s[C].reorder(ko, i, ki, j)
    a, b = mats(np.random.default_rng(2), (5, 7), (7, 3))
    check(s, [A, B, C], [a, b], [a.astype("float64") @ b], log)


# --------------------------------------------------------------------------- elementwise + broadcast


@pytest.mark.parametrize("seed", range(16))
def test_broadcast_add_random_split_fuse(seed):
    rng = random.Random(1000 + seed)
    log = Log(seed)
    n, m = rng.randint(1, 9), rng.randint(1, 9)
    log(f"shape {n}x{m}")
    A = te.placeholder((n, m), name="A")
    Bv = te.placeholder((m,), name="B")
    C = te.compute((n, m), lambda i, j: A[i, j] + Bv[j], name="C")
    s = te.create_schedule(C.op)
    for _ in range(rng.randint(1, 4)):
        if rng.random() < 0.5:
            random_split(rng, s, C, log, max_splits=1)
        elif rng.random() < 0.5:
            random_fuse(rng, s, C, log)
        else:
            random_reorder(rng, s, C, log)
    random_annotate(rng, s, C, log)
    a, b = mats(np.random.default_rng(seed), (n, m), (m,))
    check(s, [A, Bv, C], [a, b], [a + b[None, :]], log)


# --------------------------------------------------------------------------- producer / consumer


@pytest.mark.parametrize("seed", range(24))
def test_chain_random_attach(seed):
    """B = A * 2, C = B + 1: C randomly split/reordered, B at a random leaf of C,
    inlined or at root, and B's own loops split too."""
    rng = random.Random(2000 + seed)
    log = Log(seed)
    n, m = rng.randint(1, 8), rng.randint(1, 8)
    log(f"shape {n}x{m}")
    A = te.placeholder((n, m), name="A")
    B = te.compute((n, m), lambda i, j: A[i, j] * 2, name="B")
    C = te.compute((n, m), lambda i, j: B[i, j] + 1, name="C")
    s = te.create_schedule(C.op)
    random_split(rng, s, C, log)
    if rng.random() < 0.3:
        random_fuse(rng, s, C, log)
    random_reorder(rng, s, C, log)
    where = rng.choice(["at", "at", "at", "inline", "root"])
    if where == "at":
        ax = rng.choice(s[C].leaf_iter_vars)
        log(f"B.compute_at(C, {ax.name})")
        s[B].compute_at(s[C], ax)
        random_split(rng, s, B, log, max_splits=1)
    elif where == "inline":
        log("B.compute_inline()")
        s[B].compute_inline()
    else:
        log("B.compute_root()")
        s[B].compute_root()
        random_split(rng, s, B, log, max_splits=1)
    random_annotate(rng, s, C, log)
    a, = mats(np.random.default_rng(seed), (n, m))
    check(s, [A, C], [a], [a * 2 + 1], log)


@pytest.mark.parametrize("seed", range(16))
def test_stencil_random_attach(seed):
    """C[i, j] = B[i, j] + B[i + 1, j + 2]: the region B computes per iteration of
    the attach loop must cover a halo; B is smaller than its logical need would be if
    bound inference over-approximated past the tensor."""
    rng = random.Random(3000 + seed)
    log = Log(seed)
    n, m = rng.randint(1, 7), rng.randint(1, 7)
    log(f"shape {n}x{m}")
    A = te.placeholder((n + 1, m + 2), name="A")
    B = te.compute((n + 1, m + 2), lambda i, j: A[i, j] * 3 - 1, name="B")
    C = te.compute((n, m), lambda i, j: B[i, j] + B[i + 1, j + 2], name="C")
    s = te.create_schedule(C.op)
    random_split(rng, s, C, log)
    random_reorder(rng, s, C, log)
    ax = rng.choice(s[C].leaf_iter_vars)
    log(f"B.compute_at(C, {ax.name})")
    s[B].compute_at(s[C], ax)
    a, = mats(np.random.default_rng(seed), (n + 1, m + 2))
    b = a.astype("float64") * 3 - 1
    check(s, [A, C], [a], [b[:n, :m] + b[1:, 2:]], log)


def test_stencil_1d_nondividing_split_producer_at_outer():
    # minimal form of test_stencil_random_attach[0]; at commit 3877775 lower() hit a
    # RecursionError in arith/simplify.py: simplify(max(min(o*2 + 1, 2), min(o*2 + 2, 3)))
    log = Log("fixed")
    A = te.placeholder((4,), name="A")
    B = te.compute((4,), lambda i: A[i] * 3, name="B")
    C = te.compute((3,), lambda i: B[i] + B[i + 1], name="C")
    s = te.create_schedule(C.op)
    io, ii = s[C].split(C.op.axis[0], factor=2)
    s[B].compute_at(s[C], io)
    a = np.arange(4, dtype="float32")
    check(s, [A, C], [a], [a[:3] * 3 + a[1:] * 3], log)


@pytest.mark.parametrize("seed", range(20))
def test_fuse_then_split_with_producer_at_outer(seed):
    rng = random.Random(4000 + seed)
    log = Log(seed)
    n, m = rng.randint(4, 7), rng.randint(4, 7)
    factor = rng.randint(1, 9)
    log(f"shape {n}x{m}, factor {factor}")
    A = te.placeholder((n, m), name="A")
    B = te.compute((n, m), lambda i, j: A[i, j] * 2, name="B")
    C = te.compute((n, m), lambda i, j: B[i, j] + 1, name="C")
    s = te.create_schedule(C.op)
    i, j = C.op.axis
    f = s[C].fuse(i, j)
    fo, fi = s[C].split(f, factor=factor)
    s[B].compute_at(s[C], fo)
    if rng.random() < 0.5:
        log("vectorize(fi)")
        s[C].vectorize(fi)
    a, = mats(np.random.default_rng(seed), (n, m))
    check(s, [A, C], [a], [a * 2 + 1], log)


def test_fuse_then_split_producer_reads_transposed():
    # B is read transposed, so a run of C's fused loop needs a column block of B
    log = Log("fixed")
    n, m = 5, 6
    A = te.placeholder((m, n), name="A")
    B = te.compute((m, n), lambda i, j: A[i, j] + 3, name="B")
    C = te.compute((n, m), lambda i, j: B[j, i] * 2, name="C")
    s = te.create_schedule(C.op)
    f = s[C].fuse(*C.op.axis)
    fo, fi = s[C].split(f, factor=4)
    s[B].compute_at(s[C], fo)
    a, = mats(np.random.default_rng(3), (m, n))
    check(s, [A, C], [a], [((a + 3) * 2).T], log)


# --------------------------------------------------------------------------- caches


@pytest.mark.parametrize("seed", range(12))
def test_cache_write_matmul_random_attach(seed):
    rng = random.Random(5000 + seed)
    log = Log(seed)
    M, N, K = [(7, 13, 5), (13, 7, 3), (6, 8, 4), (5, 5, 9)][seed % 4]
    log(f"shape M={M} N={N} K={K}")
    A, B, C, k = matmul(M, N, K)
    s = te.create_schedule(C.op)
    CC = s.cache_write(C, "local")
    i, j = s[C].op.axis
    fx, fy = rand_factor(rng, M), rand_factor(rng, N)
    log(f"tile(i, j, {fx}, {fy})")
    xo, yo, xi, yi = s[C].tile(i, j, fx, fy)
    ax = rng.choice(s[C].leaf_iter_vars)
    log(f"CC.compute_at(C, {ax.name})")
    s[CC].compute_at(s[C], ax)
    if rng.random() < 0.5:
        kk = s[CC].op.reduce_axis[0]
        fk = rand_factor(rng, K)
        log(f"CC.split(k, {fk})")
        ko, ki = s[CC].split(kk, factor=fk)
        if rng.random() < 0.5:
            ci, cj = s[CC].op.axis
            log("CC.reorder(ko, ci, ki, cj)")
            s[CC].reorder(ko, ci, ki, cj)
    random_annotate(rng, s, C, log)
    a, b = mats(np.random.default_rng(seed), (M, K), (K, N))
    check(s, [A, B, C], [a, b], [a.astype("float64") @ b], log)


@pytest.mark.parametrize("seed", range(12))
def test_cache_read_matmul_random_attach(seed):
    rng = random.Random(6000 + seed)
    log = Log(seed)
    M, N, K = [(7, 5, 6), (6, 7, 5), (4, 9, 7)][seed % 3]
    log(f"shape M={M} N={N} K={K}")
    A, B, C, k = matmul(M, N, K)
    s = te.create_schedule(C.op)
    AA = s.cache_read(A, "local", [C])
    BB = s.cache_read(B, "local", [C]) if rng.random() < 0.5 else None
    if rng.random() < 0.6:
        fk = rand_factor(rng, K)
        log(f"split(k, {fk})")
        s[C].split(k, factor=fk)
    random_split(rng, s, C, log, max_splits=2)
    random_reorder(rng, s, C, log)
    for cache in [AA, BB]:
        if cache is None:
            continue
        ax = rng.choice(s[C].leaf_iter_vars)
        log(f"{cache.name}.compute_at(C, {ax.name})")
        s[cache].compute_at(s[C], ax)
    a, b = mats(np.random.default_rng(seed), (M, K), (K, N))
    check(s, [A, B, C], [a, b], [a.astype("float64") @ b], log)


def test_cache_read_and_write_together():
    log = Log("fixed")
    A, B, C, k = matmul(6, 7, 5)
    s = te.create_schedule(C.op)
    AA = s.cache_read(A, "local", [C])
    CC = s.cache_write(C, "local")
    xo, yo, xi, yi = s[C].tile(*s[C].op.axis, 4, 3)
    s[CC].compute_at(s[C], yo)
    ko, ki = s[CC].split(s[CC].op.reduce_axis[0], factor=2)
    s[AA].compute_at(s[CC], ko)
    a, b = mats(np.random.default_rng(4), (6, 5), (5, 7))
    check(s, [A, B, C], [a, b], [a.astype("float64") @ b], log)


# --------------------------------------------------------------------------- reductions


@pytest.mark.parametrize("seed", range(6))
def test_max_min_reductions(seed):
    rng = random.Random(7000 + seed)
    log = Log(seed)
    n, m = rng.randint(1, 7), rng.randint(1, 9)
    A = te.placeholder((n, m), name="A")
    r = te.reduce_axis((0, m), name="r")
    Mx = te.compute((n,), lambda i: te.max(A[i, r], axis=r), name="Mx")
    r2 = te.reduce_axis((0, m), name="r2")
    Mn = te.compute((n,), lambda i: te.min(A[i, r2], axis=r2), name="Mn")
    s = te.create_schedule([Mx.op, Mn.op])
    for T in (Mx, Mn):
        random_split(rng, s, T, log, max_splits=2)
        random_reorder(rng, s, T, log)
    a, = mats(np.random.default_rng(seed), (n, m))
    a -= 5  # all negative entries: a max that starts from 0 would be caught
    check(s, [A, Mx, Mn], [a], [a.max(axis=1), a.min(axis=1)], log)


@pytest.mark.parametrize("seed", range(6))
def test_int_max_min_reductions(seed):
    # int identities are finite, so this runs despite INTERP_INF; the data sits at the
    # extremes of int32 so a wrong identity (0, or an off-by-one limit) is caught
    rng = random.Random(7500 + seed)
    log = Log(seed)
    n, m = rng.randint(1, 5), rng.randint(1, 6)
    A = te.placeholder((n, m), name="A", dtype="int32")
    r = te.reduce_axis((0, m), name="r")
    Mx = te.compute((n,), lambda i: te.max(A[i, r], axis=r), name="Mx")
    r2 = te.reduce_axis((0, m), name="r2")
    Mn = te.compute((n,), lambda i: te.min(A[i, r2], axis=r2), name="Mn")
    s = te.create_schedule([Mx.op, Mn.op])
    for T in (Mx, Mn):
        random_split(rng, s, T, log, max_splits=2)
        random_reorder(rng, s, T, log)
    npr = np.random.default_rng(seed)
    a = npr.choice([-(2 ** 31), -(2 ** 31) + 1, -100, -1, 5, 2 ** 31 - 2, 2 ** 31 - 1],
                   (n, m)).astype("int32")
    a[0, 0] = -(2 ** 31)  # row 0 max must not be an identity leaking in when all are low
    check(s, [A, Mx, Mn], [a], [a.max(axis=1), a.min(axis=1)], log, rtol=0, atol=0)


@pytest.mark.parametrize("seed", range(6))
def test_custom_product_reducer(seed):
    rng = random.Random(8000 + seed)
    log = Log(seed)
    n, m = rng.randint(1, 6), rng.randint(1, 7)
    prod = te.comm_reducer(lambda x, y: x * y, lambda t: te.const(1, t), name="prod")
    A = te.placeholder((n, m), name="A")
    r = te.reduce_axis((0, m), name="r")
    P = te.compute((n,), lambda i: prod(A[i, r], axis=r), name="P")
    s = te.create_schedule(P.op)
    random_split(rng, s, P, log)
    random_reorder(rng, s, P, log)
    a = np.random.default_rng(seed).uniform(0.5, 1.5, (n, m)).astype("float32")
    check(s, [A, P], [a], [a.astype("float64").prod(axis=1)], log)


@pytest.mark.parametrize("seed", range(8))
def test_reduce_axis_nonzero_start(seed):
    rng = random.Random(9000 + seed)
    log = Log(seed)
    A = te.placeholder((4, 9), name="A")
    r = te.reduce_axis((2, 7), name="r")
    S = te.compute((4,), lambda i: te.sum(A[i, r], axis=r), name="S")
    s = te.create_schedule(S.op)
    if rng.random() < 0.7:
        f = rng.randint(1, 6)
        log(f"split(r, {f})")
        s[S].split(r, factor=f)
    random_split(rng, s, S, log, max_splits=1)
    random_reorder(rng, s, S, log)
    random_annotate(rng, s, S, log)
    a, = mats(np.random.default_rng(seed), (4, 9))
    check(s, [A, S], [a], [a[:, 2:7].astype("float64").sum(axis=1)], log)


def test_reduce_axis_nonzero_start_unsplit_unrolled():
    # normalize() rebases r; the unroll annotation must follow the rebased loop
    log = Log("fixed")
    A = te.placeholder((3, 9), name="A")
    r = te.reduce_axis((2, 7), name="r")
    S = te.compute((3,), lambda i: te.sum(A[i, r], axis=r), name="S")
    s = te.create_schedule(S.op)
    s[S].unroll(r)
    a, = mats(np.random.default_rng(5), (3, 9))
    func = check(s, [A, S], [a], [a[:, 2:7].astype("float64").sum(axis=1)], log)
    assert "unroll" in str(func).lower()


def test_multi_axis_reduction_with_where():
    log = Log("fixed")
    A = te.placeholder((3, 4, 5), name="A")
    r1 = te.reduce_axis((0, 4), name="r1")
    r2 = te.reduce_axis((1, 5), name="r2")
    S = te.compute((3,), lambda i: te.sum(A[i, r1, r2], axis=[r1, r2], where=r1 < r2),
                   name="S")
    s = te.create_schedule(S.op)
    s[S].split(r2, factor=3)
    a, = mats(np.random.default_rng(6), (3, 4, 5))
    mask = np.zeros((4, 5), bool)
    for x in range(4):
        for y in range(1, 5):
            mask[x, y] = x < y
    check(s, [A, S], [a], [(a * mask).astype("float64").sum(axis=(1, 2))], log)


# --------------------------------------------------------------------------- symbolic sizes


@pytest.mark.parametrize("n_value", [7, 13, 1, 4])
def test_symbolic_size_split(n_value):
    log = Log(f"n={n_value}")
    n = te.var("n")
    A = te.placeholder((n,), name="A")
    B = te.compute((n,), lambda i: A[i] * 2, name="B")
    s = te.create_schedule(B.op)
    s[B].split(B.op.axis[0], factor=4)
    func = compiler.lower(s, [A, B])
    assert any(v is n for v in func.size_vars)
    a = np.arange(n_value, dtype="float32") - 3
    b = np.full(n_value, np.nan, "float32")
    run(func, a, b)
    np.testing.assert_allclose(b, a * 2, rtol=RTOL, err_msg=f"{log}\n{func}")


@pytest.mark.parametrize("n_value", [7, 13])
def test_symbolic_size_chain_compute_at(n_value):
    log = Log(f"n={n_value}")
    n = te.var("n")
    A = te.placeholder((n,), name="A")
    B = te.compute((n,), lambda i: A[i] * 2, name="B")
    C = te.compute((n,), lambda i: B[i] + 1, name="C")
    s = te.create_schedule(C.op)
    xo, xi = s[C].split(C.op.axis[0], factor=4)
    s[B].compute_at(s[C], xo)
    func = compiler.lower(s, [A, C])
    a = np.arange(n_value, dtype="float32")
    c = np.full(n_value, np.nan, "float32")
    run(func, a, c)
    np.testing.assert_allclose(c, a * 2 + 1, rtol=RTOL, err_msg=f"{log}\n{func}")


# --------------------------------------------------------------------------- conv2d with padding


def conv2d_nchw(pad_mode, seed, split=True):
    rng = random.Random(10000 + seed)
    log = Log(seed)
    Nb, Ci, H, W = 1, 2, 7, 7
    Co, KH, KW, P = 3, 3, 3, 1
    X = te.placeholder((Nb, Ci, H, W), name="X")
    Wt = te.placeholder((Co, Ci, KH, KW), name="Wt")
    Xp = te.compute(
        (Nb, Ci, H + 2 * P, W + 2 * P),
        lambda n, c, y, x: te.if_then_else(
            te.all(y >= P, y < H + P, x >= P, x < W + P), X[n, c, y - P, x - P], 0.0),
        name="Xp")
    rc = te.reduce_axis((0, Ci), name="rc")
    ry = te.reduce_axis((0, KH), name="ry")
    rx = te.reduce_axis((0, KW), name="rx")
    Y = te.compute(
        (Nb, Co, H, W),
        lambda n, f, y, x: te.sum(Xp[n, rc, y + ry, x + rx] * Wt[f, rc, ry, rx],
                                  axis=[rc, ry, rx]),
        name="Y")
    s = te.create_schedule(Y.op)
    if split:
        random_split(rng, s, Y, log, max_splits=2)
        random_reorder(rng, s, Y, log)
    if pad_mode == "inline":
        log("Xp.compute_inline()")
        s[Xp].compute_inline()
    elif pad_mode == "at":
        ax = rng.choice(s[Y].leaf_iter_vars)
        log(f"Xp.compute_at(Y, {ax.name})")
        s[Xp].compute_at(s[Y], ax)
    else:
        log("Xp at root")
    npr = np.random.default_rng(seed)
    x, w = mats(npr, (Nb, Ci, H, W), (Co, Ci, KH, KW))
    xp = np.pad(x.astype("float64"), ((0, 0), (0, 0), (P, P), (P, P)))
    want = np.zeros((Nb, Co, H, W))
    for dy in range(KH):
        for dx in range(KW):
            want += np.einsum("ncyx,fc->nfyx", xp[:, :, dy:dy + H, dx:dx + W], w[:, :, dy, dx])
    check(s, [X, Wt, Y], [x, w], [want], log)


@pytest.mark.parametrize("pad_mode", ["inline", "root"])
def test_conv2d_padding_plain(pad_mode):
    conv2d_nchw(pad_mode, 0, split=False)


@pytest.mark.parametrize("seed", range(6))
def test_conv2d_padding_random(seed):
    conv2d_nchw(["inline", "root", "at"][seed % 3], seed)


# --------------------------------------------------------------------------- intrinsics and dtypes


@pytest.mark.parametrize("seed", range(4))
def test_math_intrinsics(seed):
    rng = random.Random(11000 + seed)
    log = Log(seed)
    n, m = rng.randint(1, 6), rng.randint(1, 6)
    A = te.placeholder((n, m), name="A")
    Bt = te.placeholder((n, m), name="Bt")
    E = te.compute((n, m), lambda i, j: te.exp(A[i, j]), name="E")
    Q = te.compute((n, m), lambda i, j: te.sqrt(te.abs(A[i, j]) + 0.5), name="Q")
    S = te.compute((n, m), lambda i, j: te.sigmoid(A[i, j]) + te.tanh(Bt[i, j]), name="S")
    X = te.compute((n, m), lambda i, j: te.max(A[i, j], Bt[i, j]) - te.min(A[i, j], 0.25),
                   name="X")
    outs = [E, Q, S, X]
    s = te.create_schedule([o.op for o in outs])
    for o in outs:
        random_split(rng, s, o, log, max_splits=1)
        random_annotate(rng, s, o, log)
    a, b = mats(np.random.default_rng(seed), (n, m), (n, m))
    a64, b64 = a.astype("float64"), b.astype("float64")
    want = [np.exp(a64), np.sqrt(np.abs(a64) + 0.5),
            1 / (1 + np.exp(-a64)) + np.tanh(b64),
            np.maximum(a64, b64) - np.minimum(a64, 0.25)]
    check(s, [A, Bt, *outs], [a, b], want, log)


def test_sigmoid_exp_extremes():
    log = Log("fixed")
    A = te.placeholder((4,), name="A")
    S = te.compute((4,), lambda i: te.sigmoid(A[i]), name="S")
    s = te.create_schedule(S.op)
    a = np.array([-1000.0, -30.0, 30.0, 1000.0], "float32")
    with np.errstate(over="ignore"):
        want = 1 / (1 + np.exp(-a.astype("float64")))
    check(s, [A, S], [a], [want], log)


def test_astype_round_trip():
    log = Log("fixed")
    A = te.placeholder((2, 5), name="A")
    I = te.compute((2, 5), lambda i, j: A[i, j].astype("int32"), name="I")
    F = te.compute((2, 5), lambda i, j: (I[i, j] * 3).astype("float32") / 2, name="F")
    s = te.create_schedule(F.op)
    s[I].compute_at(s[F], F.op.axis[0])
    a = np.array([[-2.7, -1.5, -0.2, 0.0, 0.9], [1.5, 2.5, 3.99, -3.99, 7.0]], "float32")
    ints = np.trunc(a).astype("int32")  # C-style conversion truncates toward zero
    check(s, [A, F], [a], [ints * 3 / 2.0], log)


def test_astype_int_to_float_and_bool():
    log = Log("fixed")
    A = te.placeholder((2, 5), name="A", dtype="int32")
    F = te.compute((2, 5), lambda i, j: A[i, j].astype("float32") / 4, name="F")
    P = te.compute((2, 5), lambda i, j: te.if_then_else(A[i, j] > 0, 1, 0), name="P")
    s = te.create_schedule([F.op, P.op])
    s[F].split(F.op.axis[1], factor=3)
    a = np.array([[-7, -1, 0, 1, 6], [9, 10, -11, 3, 2]], "int32")
    check(s, [A, F, P], [a], [a / 4.0, (a > 0).astype("int32")], log)


@pytest.mark.parametrize("seed", range(4))
def test_floordiv_floormod_int32(seed):
    rng = random.Random(12000 + seed)
    log = Log(seed)
    n = rng.randint(3, 9)
    A = te.placeholder((n,), name="A", dtype="int32")
    Bd = te.placeholder((n,), name="Bd", dtype="int32")
    D = te.compute((n,), lambda i: te.floordiv(A[i], Bd[i]), name="D")
    Md = te.compute((n,), lambda i: te.floormod(A[i], Bd[i]), name="Md")
    Td = te.compute((n,), lambda i: te.truncdiv(A[i], Bd[i]), name="Td")
    Tm = te.compute((n,), lambda i: te.truncmod(A[i], Bd[i]), name="Tm")
    K = te.compute((n,), lambda i: A[i] // 3 + A[i] % 3 + (i - 2) // 2 + (i - 2) % 2, name="K")
    outs = [D, Md, Td, Tm, K]
    s = te.create_schedule([o.op for o in outs])
    for o in outs:
        random_split(rng, s, o, log, max_splits=1)
    npr = np.random.default_rng(seed)
    a = npr.integers(-20, 21, n).astype("int32")
    b = npr.choice([-7, -3, -2, -1, 1, 2, 3, 5], n).astype("int32")
    idx = np.arange(n)
    trunc_q = (np.abs(a) // np.abs(b)) * np.sign(a) * np.sign(b)
    want = [a // b, a % b, trunc_q, a - trunc_q * b,
            a // 3 + a % 3 + (idx - 2) // 2 + (idx - 2) % 2]
    check(s, [A, Bd, *outs], [a, b], [w.astype("int32") for w in want], log, rtol=0, atol=0)


def test_index_arithmetic_floordiv_floormod_fused_layout():
    # C[i] = A[i // m, i % m]: a reshape written with index floordiv / floormod
    log = Log("fixed")
    n, m = 5, 3
    A = te.placeholder((n, m), name="A")
    C = te.compute((n * m,), lambda i: A[i // m, i % m] + 1, name="C")
    s = te.create_schedule(C.op)
    s[C].split(C.op.axis[0], factor=4)
    a, = mats(np.random.default_rng(7), (n, m))
    check(s, [A, C], [a], [a.reshape(-1) + 1], log)


# --------------------------------------------------------------------------- longer chains, symbolic tiles


@pytest.mark.parametrize("seed", range(16))
def test_three_stage_chain_random_placement(seed):
    """A -> B -> C -> D, where C reads B transposed and D reads C and A. Each of B and C
    is placed at random: at a leaf of its consumer (or of D), inlined, or at root."""
    rng = random.Random(13000 + seed)
    log = Log(seed)
    n = rng.randint(1, 6)
    m = rng.randint(1, 6)
    log(f"shape {n}x{m}")
    A = te.placeholder((n, m), name="A")
    B = te.compute((m, n), lambda i, j: A[j, i] * 2, name="B")
    C = te.compute((n, m), lambda i, j: B[j, i] - 1, name="C")
    D = te.compute((n, m), lambda i, j: C[i, j] * A[i, j], name="D")
    s = te.create_schedule(D.op)
    random_split(rng, s, D, log, max_splits=2)
    if rng.random() < 0.3:
        random_fuse(rng, s, D, log)
    random_reorder(rng, s, D, log)
    c_where = rng.choice(["at", "inline", "root"])
    if c_where == "at":
        ax = rng.choice(s[D].leaf_iter_vars)
        log(f"C.compute_at(D, {ax.name})")
        s[C].compute_at(s[D], ax)
        random_split(rng, s, C, log, max_splits=1)
    elif c_where == "inline":
        log("C.compute_inline()")
        s[C].compute_inline()
    b_where = rng.choice(["at_c", "at_d", "inline", "root"])
    if b_where == "at_c" and c_where != "inline":
        ax = rng.choice(s[C].leaf_iter_vars)
        log(f"B.compute_at(C, {ax.name})")
        s[B].compute_at(s[C], ax)
    elif b_where == "at_d" and c_where != "root":
        # B is read only through C, so B may sit in a loop of D that encloses C: any
        # loop when C is inlined into D, else C's attach loop or one outside it
        leaves = s[D].leaf_iter_vars
        limit = leaves.index(s[C].attach_ivar) if c_where == "at" else len(leaves) - 1
        ax = leaves[rng.randint(0, limit)]
        log(f"B.compute_at(D, {ax.name})")
        s[B].compute_at(s[D], ax)
    elif b_where == "inline":
        log("B.compute_inline()")
        s[B].compute_inline()
    a, = mats(np.random.default_rng(seed), (n, m))
    a64 = a.astype("float64")
    check(s, [A, D], [a], [(a64 * 2 - 1) * a64], log)


@pytest.mark.parametrize("seed", range(10))
def test_two_consumers_of_one_producer(seed):
    """B feeds two outputs C and D; B at root or inlined, C and D independently split."""
    rng = random.Random(14000 + seed)
    log = Log(seed)
    n, m = rng.randint(1, 6), rng.randint(1, 6)
    A = te.placeholder((n, m), name="A")
    B = te.compute((n, m), lambda i, j: A[i, j] + 1, name="B")
    C = te.compute((n, m), lambda i, j: B[i, j] * 2, name="C")
    D = te.compute((m, n), lambda i, j: B[j, i] * 3, name="D")
    s = te.create_schedule([C.op, D.op])
    for T in (C, D):
        random_split(rng, s, T, log, max_splits=2)
        random_reorder(rng, s, T, log)
    if rng.random() < 0.5:
        log("B.compute_inline()")
        s[B].compute_inline()
    a, = mats(np.random.default_rng(seed), (n, m))
    check(s, [A, C, D], [a], [(a + 1) * 2, ((a + 1) * 3).T], log)


@pytest.mark.parametrize("seed", range(8))
def test_symbolic_2d_tile_and_attach(seed):
    rng = random.Random(15000 + seed)
    log = Log(seed)
    n, m = te.var("n"), te.var("m")
    A = te.placeholder((n, m), name="A")
    B = te.compute((n, m), lambda i, j: A[i, j] * 2, name="B")
    C = te.compute((n, m), lambda i, j: B[i, j] + 1, name="C")
    s = te.create_schedule(C.op)
    fx, fy = rng.randint(1, 5), rng.randint(1, 5)
    log(f"tile(i, j, {fx}, {fy})")
    s[C].tile(*C.op.axis, fx, fy)
    ax = rng.choice(s[C].leaf_iter_vars)
    log(f"B.compute_at(C, {ax.name})")
    s[B].compute_at(s[C], ax)
    func = compiler.lower(s, [A, C])
    for nv, mv in [(rng.randint(1, 9), rng.randint(1, 9)), (7, 5)]:
        a, = mats(np.random.default_rng(seed), (nv, mv))
        c = np.full((nv, mv), np.nan, "float32")
        run(func, a, c)
        np.testing.assert_allclose(c, a * 2 + 1, rtol=RTOL, err_msg=f"{log} n={nv} m={mv}\n{func}")


@pytest.mark.parametrize("seed", range(8))
def test_fused_reduction_axes(seed):
    rng = random.Random(16000 + seed)
    log = Log(seed)
    n, p, q = rng.randint(1, 4), rng.randint(1, 5), rng.randint(1, 5)
    A = te.placeholder((n, p, q), name="A")
    r1 = te.reduce_axis((0, p), name="r1")
    r2 = te.reduce_axis((0, q), name="r2")
    S = te.compute((n,), lambda i: te.sum(A[i, r1, r2] * (r1 + 1), axis=[r1, r2]), name="S")
    s = te.create_schedule(S.op)
    f = s[S].fuse(r1, r2)
    fac = rng.randint(1, 7)
    log(f"fuse(r1, r2); split(fused, {fac})")
    fo, fi = s[S].split(f, factor=fac)
    random_reorder(rng, s, S, log)
    a, = mats(np.random.default_rng(seed), (n, p, q))
    w = np.arange(1, p + 1)[None, :, None]
    check(s, [A, S], [a], [(a.astype("float64") * w).sum(axis=(1, 2))], log)
