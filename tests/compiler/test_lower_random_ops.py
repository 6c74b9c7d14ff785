"""Randomised operations under random schedules: reductions (max, min, custom, where=,
non-zero start), symbolic sizes, conv2d with padding, intrinsics and dtypes; lowered,
run through the IR interpreter and compared with numpy."""
from __future__ import annotations

import math
import random

import numpy as np
import pytest

import compiler
from compiler import te
from compiler.ir.interpreter import run
from lower_check import RTOL, Log, check, mats, random_annotate, random_reorder, random_split


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


def test_log_and_erf():
    log = Log("fixed")
    A = te.placeholder((6,), name="A")
    L = te.compute((6,), lambda i: te.log(A[i]) + te.erf(A[i] - 1.5), name="L")
    s = te.create_schedule(L.op)
    a = np.array([0.01, 0.5, 1.0, 2.0, 3.5, 100.0], "float32")
    a64 = a.astype("float64")
    want = np.log(a64) + np.array([math.erf(v - 1.5) for v in a64])
    check(s, [A, L], [a], [want], log)


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
