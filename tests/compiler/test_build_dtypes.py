"""compiler.build end to end for every dtype: integer arithmetic (floordiv / floormod
with negatives, truncdiv / truncmod), float64, bool results, casts, reduction
identities at the limits of each dtype; compared with numpy."""
from __future__ import annotations


import numpy as np
import pytest

import compiler
from compiler import te
from build_check import check_build, randn, unwritten

pytestmark = pytest.mark.filterwarnings("ignore::compiler.transform.VectorizeWarning")


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
