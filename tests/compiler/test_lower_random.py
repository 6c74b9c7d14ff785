"""Randomised schedules (split, fuse, reorder, annotations, compute_at, caches),
lowered and run through the IR interpreter, against numpy.

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
from lower_check import (MATMUL_SHAPES, RTOL, Log, check, mats, matmul, rand_factor,
                         random_annotate, random_fuse, random_reorder, random_split)


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


# -------------------------------------------------------------------------- elementwise + broadcast


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


# -------------------------------------------------------------------- longer chains, symbolic tiles


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
