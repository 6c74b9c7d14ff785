"""compiler.build end to end, the schedule side: symbolic sizes, non-divisible splits
(loop partition and vectorized tails), parallel loops of every extent, compute_at at
every level, loops left scalar by the vectorizer, and the runtime Module's argument
checks. Each is compared with numpy.
"""
from __future__ import annotations

import threading

import numpy as np
import pytest

import compiler
from compiler import te
from build_check import check_build, randn, unwritten
from lower_check import matmul

pytestmark = pytest.mark.filterwarnings("ignore::compiler.transform.VectorizeWarning")


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
