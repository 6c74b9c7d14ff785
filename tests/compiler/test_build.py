"""compiler.build end to end: schedules compiled to native code through LLVM, called on
numpy arrays and compared with numpy.

Covers elementwise and broadcast operators, every dtype, reductions, tiled and packed
matmul, conv2d with a padding stage, stencils with a halo and caches; the schedule side
(sizes, splits, parallel loops, compute_at, argument checks) is test_build_schedules.py.
"""
from __future__ import annotations


import numpy as np
import pytest

from compiler import te
from build_check import check_build, randn
from lower_check import matmul

pytestmark = pytest.mark.filterwarnings("ignore::compiler.transform.VectorizeWarning")


# --------------------------------------------------------------------------- elementwise


def test_add_2d():
    A = te.placeholder((13, 7), name="A")
    B = te.placeholder((13, 7), name="B")
    C = te.compute((13, 7), lambda i, j: A[i, j] + B[i, j], name="C")
    s = te.create_schedule(C.op)
    a, b = randn(0, 13, 7), randn(1, 13, 7)
    check_build(s, [A, B, C], [a, b], [a + b])


@pytest.mark.parametrize("vectorize", [False, True])
def test_mul_add_broadcast_row_and_col(vectorize):
    n, m = 7, 19
    A = te.placeholder((n, m), name="A")
    Row = te.placeholder((m,), name="Row")
    Col = te.placeholder((n, 1), name="Col")
    C = te.compute((n, m), lambda i, j: A[i, j] * Row[j] + Col[i, 0], name="C")
    s = te.create_schedule(C.op)
    if vectorize:
        jo, ji = s[C].split(C.op.axis[1], factor=8)
        s[C].vectorize(ji)
    a, r, c = randn(2, n, m), randn(3, m), randn(4, n, 1)
    check_build(s, [A, Row, Col, C], [a, r, c], [a * r[None, :] + c], rtol=1e-5)


def test_relu_float_zero():
    A = te.placeholder((1000,), name="A")
    R = te.compute((1000,), lambda i: te.max(A[i], te.const(0.0, "float32")), name="R")
    s = te.create_schedule(R.op)
    xo, xi = s[R].split(R.op.axis[0], factor=16)
    s[R].vectorize(xi)
    a = randn(5, 1000)
    check_build(s, [A, R], [a], [np.maximum(a, 0)], rtol=0, atol=0)


@pytest.mark.parametrize("vectorize", [False, True])
def test_exp_sigmoid_tanh(vectorize):
    n = 37
    A = te.placeholder((n,), name="A")
    E = te.compute((n,), lambda i: te.exp(A[i]), name="E")
    S = te.compute((n,), lambda i: te.sigmoid(A[i]), name="S")
    T = te.compute((n,), lambda i: te.tanh(A[i]), name="T")
    s = te.create_schedule([E.op, S.op, T.op])
    if vectorize:
        for X in (E, S, T):
            xo, xi = s[X].split(X.op.axis[0], factor=8)
            s[X].vectorize(xi)
    a = randn(6, n) * 4
    a64 = a.astype("float64")
    check_build(s, [A, E, S, T], [a],
                [np.exp(a64), 1 / (1 + np.exp(-a64)), np.tanh(a64)], rtol=1e-5, atol=1e-6)


def test_math_intrinsics_float64():
    n = 9
    A = te.placeholder((n,), name="A", dtype="float64")
    L = te.compute((n,), lambda i: te.log(te.abs(A[i]) + 1.0), name="L")
    Q = te.compute((n,), lambda i: te.sqrt(te.abs(A[i])), name="Q")
    F = te.compute((n,), lambda i: te.floor(A[i]) + te.ceil(A[i]), name="F")
    P = te.compute((n,), lambda i: te.power(te.abs(A[i]), 1.5), name="P")
    s = te.create_schedule([L.op, Q.op, F.op, P.op])
    a = np.array([-3.5, -2.0, -0.25, 0.0, 0.3, 1.0, 2.5, 7.75, 100.0])
    check_build(s, [A, L, Q, F, P], [a],
                [np.log(np.abs(a) + 1), np.sqrt(np.abs(a)), np.floor(a) + np.ceil(a),
                 np.abs(a) ** 1.5], rtol=1e-12, atol=0)


# --------------------------------------------------------------------------- reductions


def reduce_rows(A, n, m, reducer, name):
    """out[i] = reducer over r of A[i, r]."""
    r = te.reduce_axis((0, m), name=f"{name}.r")
    return te.compute((n,), lambda i: reducer(A[i, r], axis=r), name=name)


def reduce_outer_axes(A, reducer, name):
    """out[j] = reducer over (r1, r2) of A[r1, j, r2]."""
    d0, d1, d2 = A.shape
    r1 = te.reduce_axis((0, d0), name=f"{name}.r1")
    r2 = te.reduce_axis((0, d2), name=f"{name}.r2")
    return te.compute((d1,), lambda j: reducer(A[r1, j, r2], axis=[r1, r2]), name=name)


@pytest.mark.parametrize("split", [None, 3, 4, 16])
def test_sum_max_min_one_axis(split):
    n, m = 7, 13
    A = te.placeholder((n, m), name="A")
    outs = [reduce_rows(A, n, m, red, name)
            for name, red in (("S", te.sum), ("Mx", te.max), ("Mn", te.min))]
    s = te.create_schedule([o.op for o in outs])
    if split:
        for o in outs:
            ro, ri = s[o].split(o.op.reduce_axis[0], factor=split)
            s[o].unroll(ri)
    a = randn(16, n, m) - 5  # all negative: a max starting from 0 is caught
    check_build(s, [A, *outs], [a], [a.sum(axis=1), a.max(axis=1), a.min(axis=1)],
                rtol=1e-5, atol=1e-5)


def test_sum_max_min_two_axes():
    A = te.placeholder((5, 6, 7), name="A")
    outs = [reduce_outer_axes(A, red, name)
            for name, red in (("S", te.sum), ("Mx", te.max), ("Mn", te.min))]
    s = te.create_schedule([o.op for o in outs])
    S = outs[0]
    r1, r2 = S.op.reduce_axis
    s[S].reorder(r2, S.op.axis[0], r1)  # reduction loop outermost
    a = randn(17, 5, 6, 7) + 3  # all positive for min
    check_build(s, [A, *outs], [a],
                [a.sum(axis=(0, 2)), a.max(axis=(0, 2)), a.min(axis=(0, 2))],
                rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("dtype", ["float32", "float64", "int8", "int32", "int64"])
def test_max_min_reduction_identities(dtype):
    # rows made only of the dtype's extremes (and infinities for floats): an identity
    # that is finite, or one off, shows in the result
    A = te.placeholder((3, 4), name="A", dtype=dtype)
    Mx = reduce_rows(A, 3, 4, te.max, "Mx")
    Mn = reduce_rows(A, 3, 4, te.min, "Mn")
    s = te.create_schedule([Mx.op, Mn.op])
    xo, xi = s[Mx].split(Mx.op.reduce_axis[0], factor=3)
    s[Mx].unroll(xi)
    if np.dtype(dtype).kind == "f":
        lo, hi = -np.inf, np.inf
    else:
        lo, hi = np.iinfo(dtype).min, np.iinfo(dtype).max
    a = np.array([[lo] * 4, [hi] * 4, [lo, 0, hi, -1]], dtype=dtype)
    check_build(s, [A, Mx, Mn], [a], [a.max(axis=1), a.min(axis=1)], rtol=0, atol=0)


@pytest.mark.parametrize("factor", [None, 2, 3])
def test_reduce_axis_nonzero_start(factor):
    A = te.placeholder((4, 9), name="A")
    r = te.reduce_axis((2, 7), name="r")
    S = te.compute((4,), lambda i: te.sum(A[i, r], axis=r), name="S")
    s = te.create_schedule(S.op)
    if factor:
        ro, ri = s[S].split(r, factor=factor)
        s[S].unroll(ri)
    a = randn(18, 4, 9)
    check_build(s, [A, S], [a], [a[:, 2:7].sum(axis=1)], rtol=1e-5, atol=1e-6)


def test_sum_with_where_and_custom_reducer():
    A = te.placeholder((4, 6), name="A")
    r = te.reduce_axis((0, 6), name="r")
    S = te.compute((4,), lambda i: te.sum(A[i, r], axis=r, where=r > i), name="S")
    prod = te.comm_reducer(lambda x, y: x * y, lambda t: te.const(1, t), name="prod")
    r2 = te.reduce_axis((0, 6), name="r2")
    P = te.compute((4,), lambda i: prod(A[i, r2], axis=r2), name="P")
    s = te.create_schedule([S.op, P.op])
    a = np.random.default_rng(19).uniform(0.5, 1.5, (4, 6)).astype("float32")
    mask = np.arange(6)[None, :] > np.arange(4)[:, None]
    check_build(s, [A, S, P], [a], [(a * mask).sum(axis=1), a.prod(axis=1)], rtol=1e-5)


# --------------------------------------------------------------------------- matmul


@pytest.mark.parametrize("M,N,K", [(64, 64, 64), (37, 45, 29)])
def test_matmul_tiled_vectorized_parallel_unrolled(M, N, K):
    A, B, C, k = matmul(M, N, K)
    s = te.create_schedule(C.op)
    io, jo, ii, ji = s[C].tile(C.op.axis[0], C.op.axis[1], 8, 16)
    ko, ki = s[C].split(k, factor=4)
    s[C].reorder(io, jo, ko, ii, ki, ji)
    s[C].unroll(ki)
    s[C].vectorize(ji)
    s[C].parallel(io)
    a, b = randn(20, M, K), randn(21, K, N)
    check_build(s, [A, B, C], [a, b], [a.astype("float64") @ b], rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("M,N,K,bn", [(64, 64, 64, 32), (40, 48, 37, 16)])
def test_matmul_packed_b_cache_write(M, N, K, bn):
    # TVM's "How to optimize GEMM on CPU", final version: B packed into (N/bn, K, bn),
    # C accumulated in a local cache per tile, the outer tile loops fused and parallel
    A = te.placeholder((M, K), name="A")
    B = te.placeholder((K, N), name="B")
    packedB = te.compute((N // bn, K, bn), lambda x, y, z: B[y, x * bn + z], name="packedB")
    k = te.reduce_axis((0, K), name="k")
    C = te.compute((M, N), lambda i, j: te.sum(A[i, k] * packedB[j // bn, k, j % bn], axis=k),
                   name="C")
    s = te.create_schedule(C.op)
    CC = s.cache_write(C, "local")
    mo, no, mi, ni = s[C].tile(C.op.axis[0], C.op.axis[1], bn, bn)
    fused = s[C].fuse(mo, no)
    s[CC].compute_at(s[C], fused)
    mc, nc = s[CC].op.axis
    (kaxis,) = s[CC].op.reduce_axis
    ko, ki = s[CC].split(kaxis, factor=4)
    s[CC].reorder(ko, mc, ki, nc)
    s[CC].vectorize(nc)
    s[CC].unroll(ki)
    s[C].vectorize(ni)
    s[C].parallel(fused)
    x, y, z = s[packedB].op.axis
    s[packedB].vectorize(z)
    s[packedB].parallel(x)
    a, b = randn(22, M, K), randn(23, K, N)
    check_build(s, [A, B, C], [a, b], [a.astype("float64") @ b], rtol=1e-4, atol=1e-4)


def test_matmul_cache_read_local_at_inner_loop():
    M, N, K = 13, 24, 11
    A, B, C, k = matmul(M, N, K)
    s = te.create_schedule(C.op)
    AL = s.cache_read(A, "local", [C])
    BL = s.cache_read(B, "local", [C])
    io, jo, ii, ji = s[C].tile(C.op.axis[0], C.op.axis[1], 4, 8)
    ko, ki = s[C].split(k, factor=3)
    s[C].reorder(io, jo, ko, ii, ki, ji)
    s[AL].compute_at(s[C], ko)
    s[BL].compute_at(s[C], ii)
    s[C].vectorize(ji)
    a, b = randn(24, M, K), randn(25, K, N)
    check_build(s, [A, B, C], [a, b], [a.astype("float64") @ b], rtol=1e-4, atol=1e-5)


def test_elementwise_cache_read_local_innermost():
    A = te.placeholder((7, 13), name="A")
    C = te.compute((7, 13), lambda i, j: A[i, j] * A[i, j] + 1, name="C")
    s = te.create_schedule(C.op)
    AL = s.cache_read(A, "local", [C])
    jo, ji = s[C].split(C.op.axis[1], factor=4)
    s[AL].compute_at(s[C], ji)
    a = randn(26, 7, 13)
    check_build(s, [A, C], [a], [a * a + 1], rtol=1e-6)


def test_cache_read_global_at_nparts_split():
    A = te.placeholder((10, 9), name="A")
    Row = te.placeholder((9,), name="Row")
    C = te.compute((10, 9), lambda i, j: A[i, j] - Row[j], name="C")
    s = te.create_schedule(C.op)
    AG = s.cache_read(A, "global", [C])
    io, ii = s[C].split(C.op.axis[0], nparts=3)
    s[AG].compute_at(s[C], io)
    s[C].parallel(io)
    a, r = randn(46, 10, 9), randn(47, 9)
    check_build(s, [A, Row, C], [a, r], [a - r[None, :]], rtol=0, atol=0)


def test_int32_matmul_exact():
    A = te.placeholder((9, 10), name="A", dtype="int32")
    B = te.placeholder((10, 17), name="B", dtype="int32")
    k = te.reduce_axis((0, 10), name="k")
    C = te.compute((9, 17), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    s = te.create_schedule(C.op)
    jo, ji = s[C].split(C.op.axis[1], factor=8)
    s[C].reorder(C.op.axis[0], jo, k, ji)
    s[C].vectorize(ji)
    rng = np.random.default_rng(27)
    a = rng.integers(-1000, 1000, (9, 10)).astype("int32")
    b = rng.integers(-1000, 1000, (10, 17)).astype("int32")
    check_build(s, [A, B, C], [a, b], [a @ b])


# --------------------------------------------------------------------------- conv2d, stencils


def conv2d_nchw(Nb=1, Ci=3, H=9, W=9, Co=4, KS=3, P=1):
    X = te.placeholder((Nb, Ci, H, W), name="X")
    Wt = te.placeholder((Co, Ci, KS, KS), name="Wt")
    Xp = te.compute(
        (Nb, Ci, H + 2 * P, W + 2 * P),
        lambda n, c, y, x: te.if_then_else(
            te.all(y >= P, y < H + P, x >= P, x < W + P), X[n, c, y - P, x - P], 0.0),
        name="Xp")
    rc = te.reduce_axis((0, Ci), name="rc")
    ry = te.reduce_axis((0, KS), name="ry")
    rx = te.reduce_axis((0, KS), name="rx")
    Y = te.compute(
        (Nb, Co, H, W),
        lambda n, f, y, x: te.sum(Xp[n, rc, y + ry, x + rx] * Wt[f, rc, ry, rx],
                                  axis=[rc, ry, rx]),
        name="Y")
    x = randn(28, Nb, Ci, H, W)
    w = randn(29, Co, Ci, KS, KS)
    xp = np.pad(x.astype("float64"), ((0, 0), (0, 0), (P, P), (P, P)))
    want = np.zeros((Nb, Co, H, W))
    for dy in range(KS):
        for dx in range(KS):
            want += np.einsum("ncyx,fc->nfyx", xp[:, :, dy:dy + H, dx:dx + W], w[:, :, dy, dx])
    return X, Wt, Xp, Y, [x, w], want


@pytest.mark.parametrize("pad", ["inline", "at_y", "at_x_outer", "root"])
def test_conv2d_nchw_padding(pad):
    X, Wt, Xp, Y, inputs, want = conv2d_nchw()
    s = te.create_schedule(Y.op)
    n, f, y, x = Y.op.axis
    rc, ry, rx = Y.op.reduce_axis
    xo, xi = s[Y].split(x, factor=4)
    s[Y].reorder(n, f, y, xo, rc, ry, rx, xi)
    s[Y].vectorize(xi)
    s[Y].parallel(f)
    if pad == "inline":
        s[Xp].compute_inline()
    elif pad == "at_y":
        s[Xp].compute_at(s[Y], y)
    elif pad == "at_x_outer":
        s[Xp].compute_at(s[Y], xo)
    check_build(s, [X, Wt, Y], inputs, [want], rtol=1e-4, atol=1e-4, note=pad)


def test_depthwise_conv_with_halo_compute_at():
    C, H, W, KS = 3, 11, 10, 3
    A = te.placeholder((C, H + KS - 1, W + KS - 1), name="A")
    Wt = te.placeholder((C, KS, KS), name="Wt")
    B = te.compute((C, H + KS - 1, W + KS - 1), lambda c, y, x: A[c, y, x] * 2 - 1, name="B")
    ry = te.reduce_axis((0, KS), name="ry")
    rx = te.reduce_axis((0, KS), name="rx")
    D = te.compute((C, H, W), lambda c, y, x: te.sum(B[c, y + ry, x + rx] * Wt[c, ry, rx],
                                                     axis=[ry, rx]), name="D")
    s = te.create_schedule(D.op)
    c, y, x = D.op.axis
    yo, xo, yi, xi = s[D].tile(y, x, 4, 4)
    s[B].compute_at(s[D], xo)
    s[D].parallel(c)
    a, w = randn(30, C, H + KS - 1, W + KS - 1), randn(31, C, KS, KS)
    b = a.astype("float64") * 2 - 1
    want = np.zeros((C, H, W))
    for dy in range(KS):
        for dx in range(KS):
            want += b[:, dy:dy + H, dx:dx + W] * w[:, dy, dx][:, None, None]
    check_build(s, [A, Wt, D], [a, w], [want], rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("at", ["yo", "xo", "yi"])
def test_two_stage_blur_halo(at):
    # Halide's blur: Bx along x, By along y over Bx; Bx computed per tile of By needs a
    # 2-row halo
    H, W = 13, 22
    A = te.placeholder((H + 2, W + 2), name="A")
    Bx = te.compute((H + 2, W), lambda y, x: (A[y, x] + A[y, x + 1] + A[y, x + 2]) / 3.0,
                    name="Bx")
    By = te.compute((H, W), lambda y, x: (Bx[y, x] + Bx[y + 1, x] + Bx[y + 2, x]) / 3.0,
                    name="By")
    s = te.create_schedule(By.op)
    yo, xo, yi, xi = s[By].tile(By.op.axis[0], By.op.axis[1], 4, 8)
    s[By].vectorize(xi)
    s[Bx].compute_at(s[By], {"yo": yo, "xo": xo, "yi": yi}[at])
    s[Bx].vectorize(s[Bx].op.axis[1])
    a = randn(32, H + 2, W + 2).astype("float64")
    bx = (a[:, :-2] + a[:, 1:-1] + a[:, 2:]) / 3
    want = (bx[:-2] + bx[1:-1] + bx[2:]) / 3
    check_build(s, [A, By], [a.astype("float32")], [want], rtol=1e-5, atol=1e-5, note=at)
