"""compiler.build end to end: schedules compiled to native code through LLVM, called on
numpy arrays and compared with numpy.

Covers elementwise and broadcast operators, every dtype, reductions, tiled and packed
matmul, conv2d with a padding stage, stencils with a halo, caches, symbolic sizes,
non-divisible splits (loop partition and vectorized tails), parallel loops of every
extent, compute_at at every level, and the runtime Module's argument checks.
"""
from __future__ import annotations

import os
import platform
import subprocess
import sys
import threading

import numpy as np
import pytest

import compiler
from compiler import te
from compiler.transform import VectorizeWarning
from build_check import check_build, randn, unwritten
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


# --------------------------------------------------------------------------- dtypes


@pytest.mark.parametrize("dtype", ["int8", "int32", "int64"])
def test_int_arithmetic(dtype):
    n = 23
    A = te.placeholder((n,), name="A", dtype=dtype)
    B = te.placeholder((n,), name="B", dtype=dtype)
    C = te.compute((n,), lambda i: A[i] * B[i] - A[i] + 3, name="C")
    Mx = te.compute((n,), lambda i: te.max(A[i], B[i]) - te.min(A[i], B[i]), name="Mx")
    Ab = te.compute((n,), lambda i: te.abs(A[i]), name="Ab")
    s = te.create_schedule([C.op, Mx.op, Ab.op])
    xo, xi = s[C].split(C.op.axis[0], factor=8)
    s[C].vectorize(xi)
    rng = np.random.default_rng(7)
    a = rng.integers(-10, 11, n).astype(dtype)
    b = rng.integers(-10, 11, n).astype(dtype)
    check_build(s, [A, B, C, Mx, Ab], [a, b],
                [a * b - a + 3, np.maximum(a, b) - np.minimum(a, b), np.abs(a)])


def test_int64_values_beyond_32_bits():
    A = te.placeholder((5,), name="A", dtype="int64")
    C = te.compute((5,), lambda i: A[i] * 3 + (A[i] // 7), name="C")
    s = te.create_schedule(C.op)
    a = np.array([2 ** 40, -(2 ** 40) - 3, 2 ** 33 + 1, -1, 0], dtype="int64")
    check_build(s, [A, C], [a], [a * 3 + a // 7])


@pytest.mark.parametrize("dtype", ["int8", "int32", "int64"])
@pytest.mark.parametrize("vectorize", [False, True])
def test_floordiv_floormod_negative(dtype, vectorize):
    n = 24
    A = te.placeholder((n,), name="A", dtype=dtype)
    B = te.placeholder((n,), name="B", dtype=dtype)
    D = te.compute((n,), lambda i: te.floordiv(A[i], B[i]), name="D")
    M = te.compute((n,), lambda i: te.floormod(A[i], B[i]), name="M")
    Dc = te.compute((n,), lambda i: A[i] // 3 + A[i] // -4, name="Dc")
    Mc = te.compute((n,), lambda i: A[i] % 3 + A[i] % -4, name="Mc")
    outs = [D, M, Dc, Mc]
    s = te.create_schedule([o.op for o in outs])
    if vectorize:
        for o in outs:
            xo, xi = s[o].split(o.op.axis[0], factor=8)
            s[o].vectorize(xi)
    rng = np.random.default_rng(8)
    a = rng.integers(-50, 51, n).astype(dtype)
    a[:4] = [-9, -8, 9, 0]
    b = rng.choice([-7, -4, -3, -2, -1, 1, 2, 3, 5], n).astype(dtype)
    check_build(s, [A, B, *outs], [a, b], [a // b, a % b, a // 3 + a // -4, a % 3 + a % -4])


@pytest.mark.parametrize("dtype", ["int8", "int32", "int64"])
def test_truncdiv_truncmod_negative(dtype):
    n = 24
    A = te.placeholder((n,), name="A", dtype=dtype)
    B = te.placeholder((n,), name="B", dtype=dtype)
    D = te.compute((n,), lambda i: te.truncdiv(A[i], B[i]), name="D")
    M = te.compute((n,), lambda i: te.truncmod(A[i], B[i]), name="M")
    Dc = te.compute((n,), lambda i: te.truncdiv(A[i], -3), name="Dc")
    Mc = te.compute((n,), lambda i: te.truncmod(A[i], -3), name="Mc")
    outs = [D, M, Dc, Mc]
    s = te.create_schedule([o.op for o in outs])
    rng = np.random.default_rng(9)
    a = rng.integers(-100, 101, n).astype(dtype)
    b = rng.choice([-7, -4, -3, -2, -1, 1, 2, 3, 5], n).astype(dtype)
    q = np.fix(a / b).astype(dtype)
    qc = np.fix(a / -3).astype(dtype)
    check_build(s, [A, B, *outs], [a, b], [q, a - q * b, qc, a - qc * -3])


def test_index_floordiv_floormod_negative_offsets():
    # C[i] = A[(i - 5) floordiv 4 + 2, (i - 5) floormod 4]: the index arithmetic itself
    # meets negative operands, which truncating division would get wrong
    A = te.placeholder((5, 4), name="A")
    C = te.compute((13,), lambda i: A[(i - 5) // 4 + 2, (i - 5) % 4], name="C")
    s = te.create_schedule(C.op)
    xo, xi = s[C].split(C.op.axis[0], factor=4)
    a = randn(10, 5, 4)
    idx = np.arange(13) - 5
    check_build(s, [A, C], [a], [a[idx // 4 + 2, idx % 4]], rtol=0, atol=0)


@pytest.mark.parametrize("vectorize", [False, True])
def test_float64_arithmetic_and_sum(vectorize):
    n, m = 9, 33
    A = te.placeholder((n, m), name="A", dtype="float64")
    B = te.placeholder((m,), name="B", dtype="float64")
    C = te.compute((n, m), lambda i, j: A[i, j] * B[j] - A[i, j] / 3.0, name="C")
    k = te.reduce_axis((0, m), name="k")
    S = te.compute((n,), lambda i: te.sum(A[i, k] * B[k], axis=k), name="S")
    s = te.create_schedule([C.op, S.op])
    if vectorize:
        jo, ji = s[C].split(C.op.axis[1], factor=4)
        s[C].vectorize(ji)
    a, b = randn(11, n, m, dtype="float64"), randn(12, m, dtype="float64")
    check_build(s, [A, B, C, S], [a, b], [a * b - a / 3.0, a @ b], rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("vectorize", [False, True])
def test_bool_outputs_from_comparisons(vectorize):
    n = 21
    A = te.placeholder((n,), name="A")
    B = te.placeholder((n,), name="B")
    I = te.placeholder((n,), name="I", dtype="int32")
    Lt = te.compute((n,), lambda i: A[i] < B[i], name="Lt")
    Ge = te.compute((n,), lambda i: A[i] >= B[i], name="Ge")
    Eq = te.compute((n,), lambda i: I[i] == 2, name="Eq")
    Both = te.compute((n,), lambda i: (A[i] > 0.0) & (I[i] != 0), name="Both")
    Neither = te.compute((n,), lambda i: ~((A[i] > 0.0) | (I[i] < 0)), name="Neither")
    outs = [Lt, Ge, Eq, Both, Neither]
    s = te.create_schedule([o.op for o in outs])
    if vectorize:
        for o in outs:
            xo, xi = s[o].split(o.op.axis[0], factor=8)
            s[o].vectorize(xi)
    a, b = randn(13, n), randn(14, n)
    b[:3] = a[:3]  # equal elements: < and >= both decided on them
    i = np.random.default_rng(15).integers(-2, 4, n).astype("int32")
    check_build(s, [A, B, I, *outs], [a, b, i],
                [a < b, a >= b, i == 2, (a > 0) & (i != 0), ~((a > 0) | (i < 0))])


def test_bool_input_read_back():
    A = te.placeholder((10,), name="A", dtype="bool")
    B = te.placeholder((10,), name="B", dtype="int32")
    C = te.compute((10,), lambda i: te.if_then_else(A[i], B[i], -B[i]), name="C")
    N = te.compute((10,), lambda i: A[i].astype("int32") + 1, name="N")
    s = te.create_schedule([C.op, N.op])
    a = np.array([1, 0, 1, 1, 0, 0, 1, 0, 1, 0], dtype=bool)
    b = np.arange(10, dtype="int32")
    check_build(s, [A, B, C, N], [a, b], [np.where(a, b, -b), a.astype("int32") + 1])


def test_int32_literal_out_of_range_is_rejected():
    # accepted, it would wrap: A[i] + 3000000000 would compute A[i] - 1294967296
    A = te.placeholder((3,), name="A", dtype="int32")
    with pytest.raises((TypeError, ValueError)):
        te.compute((3,), lambda i: A[i] + 3000000000, name="C")


@pytest.mark.parametrize("schedule", ["plain", "split_vectorize", "parallel"])
def test_int64_size_var(schedule):
    # int32 loop variables meet an int64 extent in every one of these loops
    n = te.var("n", "int64")
    A = te.placeholder((n,), name="A")
    C = te.compute((n,), lambda i: A[i] * 2, name="C")
    s = te.create_schedule(C.op)
    if schedule == "split_vectorize":
        xo, xi = s[C].split(C.op.axis[0], factor=4)
        s[C].vectorize(xi)
    elif schedule == "parallel":
        s[C].parallel(C.op.axis[0])
    f = compiler.build(s, [A, C])
    for size in (1, 13):
        a = randn(48, size)
        c = unwritten(a)
        f(a, c)
        np.testing.assert_array_equal(c, a * 2)


@pytest.mark.parametrize("dtype", ["int8", "int32", "int64"])
def test_cast_float_to_int_truncates(dtype):
    A = te.placeholder((10,), name="A")
    C = te.compute((10,), lambda i: A[i].astype(dtype), name="C")
    s = te.create_schedule(C.op)
    a = np.array([-2.7, -1.5, -0.9, -0.2, 0.0, 0.2, 0.9, 1.5, 2.7, 99.99], "float32")
    check_build(s, [A, C], [a], [np.trunc(a).astype(dtype)])


def test_casts_between_float_int_and_bool():
    A = te.placeholder((6,), name="A", dtype="float64")
    I = te.placeholder((6,), name="I", dtype="int8")
    F32 = te.compute((6,), lambda i: A[i].astype("float32"), name="F32")
    Wide = te.compute((6,), lambda i: I[i].astype("int64") * 1000000000, name="Wide")
    Fl = te.compute((6,), lambda i: I[i].astype("float64") / 4.0, name="Fl")
    Nz = te.compute((6,), lambda i: A[i].astype("bool"), name="Nz")
    outs = [F32, Wide, Fl, Nz]
    s = te.create_schedule([o.op for o in outs])
    a = np.array([-1.25, 0.0, 3.5, 1e-30, -0.0, 7.0])
    i = np.array([-128, -1, 0, 1, 5, 127], dtype="int8")
    check_build(s, [A, I, *outs], [a, i],
                [a.astype("float32"), i.astype("int64") * 1000000000, i / 4.0,
                 a.astype(bool)], rtol=0, atol=0)


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


# --------------------------------------------------------------------------- symbolic sizes


def test_symbolic_size_called_on_several_sizes():
    n = te.var("n")
    A = te.placeholder((n,), name="A")
    B = te.compute((n,), lambda i: A[i] * 2 + 1, name="B")
    s = te.create_schedule(B.op)
    xo, xi = s[B].split(B.op.axis[0], factor=8)
    s[B].vectorize(xi)
    s[B].parallel(xo)
    f = compiler.build(s, [A, B])
    for size in (1, 7, 13, 1000, 8):
        a = randn(size, size)
        b = unwritten(a)
        f(a, b)
        np.testing.assert_allclose(b, a * 2 + 1, rtol=1e-6, err_msg=f"n={size}")


def test_symbolic_2d_reduction_and_compute_at():
    n, m = te.var("n"), te.var("m")
    A = te.placeholder((n, m), name="A")
    B = te.compute((n, m), lambda i, j: A[i, j] * 3, name="B")
    r = te.reduce_axis((0, m), name="r")
    S = te.compute((n,), lambda i: te.sum(B[i, r], axis=r), name="S")
    s = te.create_schedule(S.op)
    io, ii = s[S].split(S.op.axis[0], factor=4)
    s[B].compute_at(s[S], io)
    s[S].parallel(io)
    f = compiler.build(s, [A, S])
    for rows, cols in ((1, 1), (7, 13), (13, 7), (1000, 3), (2, 1000)):
        a = randn(rows, rows, cols)
        out = unwritten(np.zeros(rows, "float32"))
        f(a, out)
        np.testing.assert_allclose(out, (a.astype("float64") * 3).sum(axis=1), rtol=1e-4,
                                   atol=1e-4, err_msg=f"{rows}x{cols}")


def test_symbolic_size_mismatch_names_the_argument():
    n = te.var("n")
    A = te.placeholder((n,), name="A")
    B = te.compute((n,), lambda i: A[i] + 1, name="B")
    s = te.create_schedule(B.op)
    f = compiler.build(s, [A, B])
    with pytest.raises(ValueError, match=r"\(B\)"):
        f(np.zeros(7, "float32"), np.zeros(8, "float32"))
    with pytest.raises(ValueError, match="symbolic size n"):
        f(np.zeros(0, "float32"), np.zeros(0, "float32"))


def test_symbolic_compute_at_nparts_tail_allocation():
    # past the end of a non-dividing nparts split, B's region is empty (with n = 1, the
    # iteration i.outer = 63 would otherwise allocate 1 - 63 elements)
    n = te.var("n")
    A = te.placeholder((n,), name="A")
    B = te.compute((n,), lambda i: A[i] + 1, name="B")
    C = te.compute((n,), lambda i: B[i] * 2, name="C")
    s = te.create_schedule(C.op)
    xo, xi = s[C].split(C.op.axis[0], nparts=64)
    s[B].compute_at(s[C], xo)
    f = compiler.build(s, [A, C])
    for size in (1, 65):
        a = randn(size, size)
        c = unwritten(a)
        f(a, c)
        np.testing.assert_allclose(c, (a + 1) * 2, rtol=1e-6, err_msg=f"n={size}")


def test_symbolic_compute_at_unrolled_loop():
    # B's size depends on the unrolled loop variable: each copy allocates by its value
    n = te.var("n")
    A = te.placeholder((n,), name="A")
    B = te.compute((n,), lambda i: A[i] + 1, name="B")
    C = te.compute((n,), lambda i: B[i] * 2, name="C")
    s = te.create_schedule(C.op)
    xo, xi = s[C].split(C.op.axis[0], nparts=4)
    s[B].compute_at(s[C], xo)
    s[C].unroll(xo)
    f = compiler.build(s, [A, C])
    a = randn(54, 13)
    c = unwritten(a)
    f(a, c)
    np.testing.assert_allclose(c, (a + 1) * 2, rtol=1e-6)


def test_symbolic_shape_expression_is_checked():
    # a too short A would be read out of bounds
    n = te.var("n")
    A = te.placeholder((n + 2,), name="A")
    B = te.compute((n,), lambda i: A[i] + A[i + 2], name="B")
    f = compiler.build(te.create_schedule(B.op), [A, B])
    with pytest.raises(ValueError, match=r"\(A\)"):
        f(np.zeros(3, "float32"), np.zeros(7, "float32"))


def test_shape_expression_with_floordiv():
    # B's length n // 2 is checked against the n bound from A, also when it is 0
    n = te.var("n")
    A = te.placeholder((n,), name="A")
    B = te.compute((n // 2,), lambda i: A[2 * i] + A[2 * i + 1], name="B")
    s = te.create_schedule(B.op)
    xo, xi = s[B].split(B.op.axis[0], factor=4)
    s[B].vectorize(xi)
    f = compiler.build(s, [A, B])
    for size in (1, 2, 7, 1000):
        a = randn(55, size)
        b = np.full(size // 2, np.nan, "float32")
        f(a, b)
        np.testing.assert_allclose(b, a[0:size - 1:2] + a[1::2], rtol=1e-6, err_msg=f"n={size}")
    with pytest.raises(ValueError, match=r"\(B\).*\(3,\)"):
        f(randn(56, 7), np.zeros(4, "float32"))


def test_size_var_only_inside_shape_expressions_is_a_build_error():
    # no call could bind m from an array's shape
    m = te.var("m")
    X = te.placeholder((m * 2,), name="X")
    Y = te.compute((m * 2,), lambda i: X[i] * 2, name="Y")
    with pytest.raises(compiler.BuildError, match="symbolic size m"):
        compiler.build(te.create_schedule(Y.op), [X, Y])


def test_distinct_size_vars_with_the_same_name():
    # size vars are distinct objects, as in TVM; their names may coincide
    n1, n2 = te.var("n"), te.var("n")
    A = te.placeholder((n1,), name="A")
    B = te.placeholder((n2,), name="B")
    C = te.compute((n1,), lambda i: A[i] * 2, name="C")
    D = te.compute((n2,), lambda i: B[i] * 3, name="D")
    f = compiler.build(te.create_schedule([C.op, D.op]), [A, B, C, D])
    a, b = randn(50, 3), randn(51, 5)
    c, d = unwritten(a), unwritten(b)
    f(a, b, c, d)
    np.testing.assert_array_equal(c, a * 2)
    np.testing.assert_array_equal(d, b * 3)


# --------------------------------------------------------------------------- splits, tails, fuse


@pytest.mark.parametrize("extent", [7, 13, 1000])
@pytest.mark.parametrize("factor", [3, 4, 16])
def test_non_divisible_split_vectorized_tail(extent, factor):
    A = te.placeholder((extent,), name="A")
    B = te.compute((extent,), lambda i: te.sqrt(te.abs(A[i])) + A[i], name="B")
    s = te.create_schedule(B.op)
    xo, xi = s[B].split(B.op.axis[0], factor=factor)
    s[B].vectorize(xi)
    a = randn(extent, extent)
    check_build(s, [A, B], [a], [np.sqrt(np.abs(a)) + a], rtol=1e-6)


@pytest.mark.parametrize("extent", [7, 13, 1000])
@pytest.mark.parametrize("nparts", [3, 4, 16])
def test_non_divisible_nparts_split_parallel(extent, nparts):
    A = te.placeholder((extent,), name="A")
    B = te.compute((extent,), lambda i: A[i] - 2, name="B")
    s = te.create_schedule(B.op)
    xo, xi = s[B].split(B.op.axis[0], nparts=nparts)
    s[B].parallel(xo)
    if extent < 100:
        s[B].unroll(xi)
    else:
        s[B].vectorize(xi)
    a = randn(extent, extent)
    check_build(s, [A, B], [a], [a - 2], rtol=0, atol=0)


@pytest.mark.parametrize("factor", [3, 4, 16])
def test_two_level_non_divisible_split_2d(factor):
    A = te.placeholder((13, 7), name="A")
    B = te.compute((13, 7), lambda i, j: A[i, j] * (i + j).astype("float32"), name="B")
    s = te.create_schedule(B.op)
    io, ii = s[B].split(B.op.axis[0], factor=factor)
    iio, iii = s[B].split(ii, factor=2)
    jo, ji = s[B].split(B.op.axis[1], factor=factor)
    s[B].reorder(io, jo, iio, iii, ji)
    s[B].vectorize(ji)
    s[B].unroll(iii)
    a = randn(33, 13, 7)
    idx = np.add.outer(np.arange(13), np.arange(7))
    check_build(s, [A, B], [a], [a * idx], rtol=1e-6)


@pytest.mark.parametrize("factor", [3, 5, 16])
def test_fuse_then_split_vectorize(factor):
    A = te.placeholder((7, 13), name="A")
    Row = te.placeholder((13,), name="Row")
    B = te.compute((7, 13), lambda i, j: A[i, j] + Row[j] * i.astype("float32"), name="B")
    s = te.create_schedule(B.op)
    fused = s[B].fuse(*B.op.axis)
    fo, fi = s[B].split(fused, factor=factor)
    s[B].vectorize(fi)
    s[B].parallel(fo)
    a, r = randn(34, 7, 13), randn(35, 13)
    check_build(s, [A, Row, B], [a, r], [a + r[None, :] * np.arange(7)[:, None]], rtol=1e-6)


def test_fuse_reduction_axes():
    A = te.placeholder((6, 5, 7), name="A")
    r1 = te.reduce_axis((0, 5), name="r1")
    r2 = te.reduce_axis((0, 7), name="r2")
    S = te.compute((6,), lambda i: te.sum(A[i, r1, r2], axis=[r1, r2]), name="S")
    s = te.create_schedule(S.op)
    fr = s[S].fuse(r1, r2)
    fo, fi = s[S].split(fr, factor=4)
    s[S].unroll(fi)
    a = randn(36, 6, 5, 7)
    check_build(s, [A, S], [a], [a.sum(axis=(1, 2))], rtol=1e-5, atol=1e-5)


# --------------------------------------------------------------------------- parallel


@pytest.mark.parametrize("extent", [1, 2, 3, 1000])
@pytest.mark.parametrize("cores", [None, 1, 2, 4])
def test_parallel_extent_vs_cores(extent, cores):
    A = te.placeholder((extent, 3), name="A")
    B = te.compute((extent, 3), lambda i, j: A[i, j] * 2 + i.astype("float32"), name="B")
    s = te.create_schedule(B.op)
    s[B].parallel(B.op.axis[0])
    target = "llvm" if cores is None else f"llvm -num-cores={cores}"
    a = randn(extent, extent, 3)
    check_build(s, [A, B], [a], [a * 2 + np.arange(extent)[:, None]], rtol=1e-6,
                target=target)


@pytest.mark.parametrize("extent", [1, 3, 1000])
def test_parallel_and_vectorize_same_stage(extent):
    A = te.placeholder((extent, 20), name="A")
    B = te.placeholder((20,), name="B")
    C = te.compute((extent, 20), lambda i, j: te.max(A[i, j] * B[j], 0.0), name="C")
    s = te.create_schedule(C.op)
    jo, ji = s[C].split(C.op.axis[1], factor=8)
    s[C].parallel(C.op.axis[0])
    s[C].vectorize(ji)
    a, b = randn(37, extent, 20), randn(38, 20)
    check_build(s, [A, B, C], [a, b], [np.maximum(a * b, 0)], rtol=1e-6)


def test_parallel_reduction_with_local_accumulator():
    # each parallel task has its own accumulator (cache_write), computed at the task loop
    A = te.placeholder((9, 50), name="A")
    r = te.reduce_axis((0, 50), name="r")
    S = te.compute((9,), lambda i: te.sum(A[i, r] * A[i, r], axis=r), name="S")
    s = te.create_schedule(S.op)
    SL = s.cache_write(S, "local")
    s[S].parallel(S.op.axis[0])
    s[SL].compute_at(s[S], S.op.axis[0])
    a = randn(39, 9, 50)
    check_build(s, [A, S], [a], [(a.astype("float64") ** 2).sum(axis=1)], rtol=1e-5)


def test_nested_parallel_loops_and_parallel_producer():
    A = te.placeholder((5, 6), name="A")
    B = te.compute((5, 6), lambda i, j: A[i, j] + 1, name="B")
    C = te.compute((5, 6), lambda i, j: B[i, j] * 2, name="C")
    s = te.create_schedule(C.op)
    s[C].parallel(C.op.axis[0])
    s[C].parallel(C.op.axis[1])
    s[B].parallel(B.op.axis[1])
    a = randn(40, 5, 6)
    check_build(s, [A, C], [a], [(a + 1) * 2], rtol=1e-6)


def test_parallel_loop_inside_outer_reduction_loop():
    # the reduction loop outermost: every one of its iterations launches the parallel
    # loop, and the init of C must still happen once, before all of them
    A, B, C, k = matmul(11, 20, 13)
    s = te.create_schedule(C.op)
    ko, ki = s[C].split(k, factor=5)
    i, j = C.op.axis
    s[C].reorder(ko, i, ki, j)
    s[C].parallel(i)
    s[C].vectorize(j)
    a, b = randn(52, 11, 13), randn(53, 13, 20)
    check_build(s, [A, B, C], [a, b], [a.astype("float64") @ b], rtol=1e-4, atol=1e-5)


def test_one_module_called_from_several_threads():
    A = te.placeholder((64, 96), name="A")
    B = te.compute((64, 96), lambda i, j: A[i, j] * 2 + 1, name="B")
    s = te.create_schedule(B.op)
    jo, ji = s[B].split(B.op.axis[1], factor=16)
    s[B].vectorize(ji)
    s[B].parallel(B.op.axis[0])
    f = compiler.build(s, [A, B])
    wrong = []

    def work(seed):
        for it in range(30):
            a = randn(seed * 100 + it, 64, 96)
            b = unwritten(a)
            f(a, b)
            if not np.array_equal(b, a * 2 + 1):
                wrong.append((seed, it))

    threads = [threading.Thread(target=work, args=(t,)) for t in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert not any(t.is_alive() for t in threads), "a call never returned"
    assert not wrong


# --------------------------------------------------------------------------- compute_at


def two_level_tiled_stencil(n, m):
    """C[i, j] = B[i, j] + B[i + 1, j + 1], B = A * 2, C split twice in each axis."""
    A = te.placeholder((n + 1, m + 1), name="A")
    B = te.compute((n + 1, m + 1), lambda i, j: A[i, j] * 2, name="B")
    C = te.compute((n, m), lambda i, j: B[i, j] + B[i + 1, j + 1], name="C")
    s = te.create_schedule(C.op)
    io, ii = s[C].split(C.op.axis[0], factor=6)
    iio, iii = s[C].split(ii, factor=4)
    jo, ji = s[C].split(C.op.axis[1], factor=8)
    jio, jii = s[C].split(ji, factor=4)
    s[C].reorder(io, jo, iio, jio, iii, jii)
    return A, B, C, s


@pytest.mark.parametrize("level", range(6))
@pytest.mark.parametrize("annotate", [False, True])
def test_compute_at_every_level_of_two_level_tiling(level, annotate):
    # 12 = 2 * 6 with 6 split by 4 (inner tail), 17 split by 8 (outer tail) then by 4
    n, m = 12, 17
    A, B, C, s = two_level_tiled_stencil(n, m)
    leaves = list(s[C].leaf_iter_vars)
    s[B].compute_at(s[C], leaves[level])
    if annotate:
        s[C].parallel(leaves[0])
        s[C].vectorize(leaves[-1])
        s[B].vectorize(s[B].op.axis[1])
    a = randn(41, n + 1, m + 1)
    b = a * 2
    check_build(s, [A, C], [a], [b[:-1, :-1] + b[1:, 1:]], rtol=1e-6,
                note=f"B at {leaves[level].name}")


def test_compute_at_chain_of_three():
    A = te.placeholder((11, 9), name="A")
    B = te.compute((11, 9), lambda i, j: A[i, j] + 1, name="B")
    C = te.compute((11, 9), lambda i, j: B[i, j] * 3, name="C")
    D = te.compute((10, 9), lambda i, j: C[i, j] - C[i + 1, j], name="D")
    s = te.create_schedule(D.op)
    io, ii = s[D].split(D.op.axis[0], factor=4)
    s[C].compute_at(s[D], io)
    s[B].compute_at(s[C], s[C].op.axis[0])
    a = randn(42, 11, 9)
    c = (a + 1) * 3
    check_build(s, [A, D], [a], [c[:-1] - c[1:]], rtol=1e-5, atol=1e-5)


def test_intermediate_also_an_output():
    A = te.placeholder((8, 5), name="A")
    B = te.compute((8, 5), lambda i, j: A[i, j] * 2, name="B")
    C = te.compute((8, 5), lambda i, j: B[i, j] + 1, name="C")
    s = te.create_schedule([B.op, C.op])
    a = randn(43, 8, 5)
    check_build(s, [A, B, C], [a], [a * 2, a * 2 + 1], rtol=1e-6)


# --------------------------------------------------------------------------- vectorize fallback


def test_vectorize_symbolic_extent_warns_and_stays_correct():
    n = te.var("n")
    A = te.placeholder((n,), name="A")
    B = te.compute((n,), lambda i: A[i] + 1, name="B")
    s = te.create_schedule(B.op)
    s[B].vectorize(B.op.axis[0])
    with pytest.warns(VectorizeWarning, match="not a constant"):
        f = compiler.build(s, [A, B])
    for size in (1, 13):
        a = randn(size, size)
        b = unwritten(a)
        f(a, b)
        np.testing.assert_allclose(b, a + 1, rtol=1e-6)


def test_vectorize_padding_read_warns_and_stays_correct():
    A = te.placeholder((10,), name="A")
    P = te.compute((12,), lambda i: te.if_then_else(te.all(i >= 1, i < 11), A[i - 1], 0.0),
                   name="P")
    s = te.create_schedule(P.op)
    s[P].vectorize(P.op.axis[0])
    a = randn(44, 10)
    with pytest.warns(VectorizeWarning, match="guarded read"):
        check_build(s, [A, P], [a], [np.pad(a, 1)], rtol=0, atol=0)


GUARDED_PAD_SCRIPT = """
import ctypes, mmap
import numpy as np, compiler
from compiler import te

# X sits between two inaccessible pages: any read outside it faults
H, C = 100, 16
nbytes, page = H * C * 4, mmap.PAGESIZE
body = -(-nbytes // page) * page
libc = ctypes.CDLL(None)
libc.mmap.restype = ctypes.c_void_p
libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int,
                      ctypes.c_int, ctypes.c_long]
libc.mprotect.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
base = libc.mmap(None, body + 2 * page, 0, mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS, -1, 0)
assert libc.mprotect(base + page, body, mmap.PROT_READ | mmap.PROT_WRITE) == 0
start = base + page + body - nbytes
x = np.frombuffer((ctypes.c_char * nbytes).from_address(start), "float32").reshape(H, C)
x[:] = 1

X = te.placeholder((H, C), name="X")
P = te.compute((H + 2, C), lambda y, c: te.if_then_else(te.all(y >= 1, y < H + 1),
                                                        X[y - 1, c], 0.0), name="P")
s = te.create_schedule(P.op)
s[P].vectorize(P.op.axis[1])
f = compiler.build(s, [X, P], target="llvm -mcpu=x86-64")
p = np.full((H + 2, C), np.nan, "float32")
f(x, p)
assert np.array_equal(p, np.pad(x, ((1, 1), (0, 0))))
print("ok")
"""


@pytest.mark.skipif(platform.machine() != "x86_64", reason="builds for -mcpu=x86-64")
def test_vectorized_padding_uniform_guard_stays_in_bounds():
    # the row condition is the same for every lane; loading X[ramp] before the select
    # would read rows -1 and H of X, which faults without AVX-512 masked loads
    repo = os.path.dirname(os.path.dirname(os.path.abspath(compiler.__file__)))
    env = {**os.environ, "PYTHONPATH": repo}
    done = subprocess.run([sys.executable, "-c", GUARDED_PAD_SCRIPT], capture_output=True,
                          text=True, timeout=120, env=env)
    assert done.returncode == 0 and "ok" in done.stdout, \
        f"exit code {done.returncode}\n{done.stderr[-2000:]}"


def test_vectorize_outer_loop_with_inner_loop():
    A = te.placeholder((8, 5), name="A")
    B = te.compute((8, 5), lambda i, j: A[i, j] * 2 - 1, name="B")
    s = te.create_schedule(B.op)
    s[B].vectorize(B.op.axis[0])
    a = randn(45, 8, 5)
    check_build(s, [A, B], [a], [a * 2 - 1], rtol=1e-6)


# --------------------------------------------------------------------------- argument checks


@pytest.fixture(scope="module")
def add_module():
    A = te.placeholder((4, 6), name="A")
    B = te.placeholder((4, 6), name="B")
    C = te.compute((4, 6), lambda i, j: A[i, j] + B[i, j], name="C")
    s = te.create_schedule(C.op)
    return compiler.build(s, [A, B, C])


def arrays():
    return np.ones((4, 6), "float32"), np.ones((4, 6), "float32"), np.zeros((4, 6), "float32")


def test_args_wrong_count(add_module):
    a, b, c = arrays()
    with pytest.raises(TypeError, match=r"A, B, C.*got 2"):
        add_module(a, b)
    with pytest.raises(TypeError, match="got 4"):
        add_module(a, b, c, c)


def test_args_wrong_dtype(add_module):
    a, b, c = arrays()
    with pytest.raises(TypeError, match=r"\(C\).*float64"):
        add_module(a, b, c.astype("float64"))
    with pytest.raises(TypeError, match=r"\(A\).*int32"):
        add_module(a.astype("int32"), b, c)


def test_args_wrong_shape(add_module):
    a, b, c = arrays()
    with pytest.raises(ValueError, match=r"\(C\).*\(4, 5\)"):
        add_module(a, b, np.zeros((4, 5), "float32"))
    with pytest.raises(ValueError, match=r"\(B\).*dimensions"):
        add_module(a, b.reshape(-1), c)


def test_args_non_contiguous(add_module):
    a, b, c = arrays()
    with pytest.raises(ValueError, match=r"\(C\).*C-contiguous"):
        add_module(a, b, np.zeros((6, 4), "float32").T)
    with pytest.raises(ValueError, match=r"\(A\).*C-contiguous"):
        add_module(np.ones((4, 12), "float32")[:, ::2], b, c)


def test_args_read_only_output(add_module):
    a, b, c = arrays()
    c.setflags(write=False)
    with pytest.raises(ValueError, match=r"\(C\).*read-only"):
        add_module(a, b, c)
    assert not c.any()


def test_args_read_only_input_is_fine(add_module):
    a, b, c = arrays()
    a.setflags(write=False)
    add_module(a, b, c)
    np.testing.assert_array_equal(c, 2)


def test_args_not_an_array(add_module):
    a, b, c = arrays()
    with pytest.raises(TypeError, match=r"\(B\).*list"):
        add_module(a, b.tolist(), c)
