"""compiler.ops matmul (every transpose), dense and batch_matmul built with the default
schedule and compared with numpy; mismatched shapes name the operator and both shapes."""
from __future__ import annotations

import pytest

from compiler import ops, te
from build_check import check_build, randn

pytestmark = pytest.mark.filterwarnings("error::compiler.transform.VectorizeWarning")


@pytest.mark.parametrize("transpose_a", [False, True])
@pytest.mark.parametrize("transpose_b", [False, True])
def test_matmul_transposes(transpose_a, transpose_b):
    M, N, K = 13, 37, 7
    sa, sb = (K, M) if transpose_a else (M, K), (N, K) if transpose_b else (K, N)
    a_t, b_t = te.placeholder(sa, name="a"), te.placeholder(sb, name="b")
    y = ops.matmul(a_t, b_t, transpose_a=transpose_a, transpose_b=transpose_b)
    a, b = randn(11, *sa), randn(12, *sb)
    want = (a.T if transpose_a else a).astype("float64") @ (b.T if transpose_b else b)
    check_build(ops.default_schedule(y), [a_t, b_t, y], [a, b], [want], rtol=1e-5, atol=1e-5)


def test_matmul_long_reduction():
    a_t, b_t = te.placeholder((7, 1000), name="a"), te.placeholder((1000, 64), name="b")
    y = ops.matmul(a_t, b_t)
    a, b = randn(13, 7, 1000), randn(14, 1000, 64)
    check_build(ops.default_schedule(y), [a_t, b_t, y], [a, b], [a.astype("float64") @ b],
                rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("with_bias", [False, True])
def test_dense(with_bias):
    x_t, w_t, b_t = (te.placeholder((13, 29), name="x"), te.placeholder((17, 29), name="w"),
                     te.placeholder((17,), name="bias"))
    y = ops.dense(x_t, w_t, b_t if with_bias else None)
    x, w, b = randn(15, 13, 29), randn(16, 17, 29), randn(17, 17)
    want = x.astype("float64") @ w.T + (b if with_bias else 0)
    args = [x_t, w_t, b_t] if with_bias else [x_t, w_t]
    inputs = [x, w, b] if with_bias else [x, w]
    check_build(ops.default_schedule(y), [*args, y], inputs, [want], rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("sa,sb,ta,tb", [
    ((3, 7, 13), (3, 13, 5), False, False),
    ((1, 13, 7), (4, 5, 13), True, True),
    ((2, 7, 13), (1, 13, 17), False, False),
])
def test_batch_matmul(sa, sb, ta, tb):
    a_t, b_t = te.placeholder(sa, name="a"), te.placeholder(sb, name="b")
    y = ops.batch_matmul(a_t, b_t, transpose_a=ta, transpose_b=tb)
    a, b = randn(18, *sa), randn(19, *sb)
    a64 = a.astype("float64")
    want = (a64.transpose(0, 2, 1) if ta else a64) @ (b.transpose(0, 2, 1) if tb else b)
    check_build(ops.default_schedule(y), [a_t, b_t, y], [a, b], [want], rtol=1e-5, atol=1e-5)


def test_shape_errors():
    a, b = te.placeholder((4, 5), name="a"), te.placeholder((6, 3), name="b")
    with pytest.raises(ValueError, match=r"matmul: a of shape \(4, 5\) and b of shape "
                                         r"\(6, 3\) have different reduction lengths 5 and 6"):
        ops.matmul(a, b)
    with pytest.raises(ValueError, match=r"matmul: a of shape \(4, 5\) \(transposed\) and b "
                                         r".*lengths 4 and 6"):
        ops.matmul(a, b, transpose_a=True)
    with pytest.raises(ValueError, match=r"matmul: b must have 2 dimensions, got shape "
                                         r"\(2, 5, 3\)"):
        ops.matmul(a, te.placeholder((2, 5, 3)))
    with pytest.raises(ValueError, match=r"dense: data of shape \(4, 5\) and weight of shape "
                                         r"\(6, 3\) \(transposed\) .*lengths 5 and 3"):
        ops.dense(a, b)
    with pytest.raises(ValueError, match=r"dense: bias of shape \(4,\) does not fit weight of "
                                         r"shape \(6, 5\) \(it needs shape \(6,\)\)"):
        ops.dense(a, te.placeholder((6, 5)), te.placeholder((4,)))
    with pytest.raises(ValueError, match=r"batch_matmul: .*batch sizes 2 and 3"):
        ops.batch_matmul(te.placeholder((2, 4, 5)), te.placeholder((3, 5, 6)))
