"""compiler.ops binary operators with numpy broadcasting, and bias_add, built with the
default schedule and compared with numpy; shape errors name the operator and shapes."""
from __future__ import annotations

import numpy as np
import pytest

from compiler import ops, te
from build_check import check_build, randn

pytestmark = pytest.mark.filterwarnings("error::compiler.transform.VectorizeWarning")


@pytest.mark.parametrize("sa,sb", [
    ((13, 7), (13, 7)),
    ((3, 1000), (1000,)),
    ((13, 1), (1, 7)),
    ((2, 1, 13), (7, 1)),
    ((1,), (5, 17)),
])
def test_binary_broadcast(sa, sb):
    a_t, b_t = te.placeholder(sa, name="a"), te.placeholder(sb, name="b")
    outs = [ops.add(a_t, b_t), ops.subtract(a_t, b_t), ops.multiply(a_t, b_t),
            ops.divide(a_t, b_t)]
    a, b = randn(1, *sa), randn(2, *sb) + 3  # b away from 0 for the division
    want = [a + b, a - b, a * b, a / b]
    assert all(tuple(int(d.value) for d in o.shape) == w.shape for o, w in zip(outs, want))
    check_build(ops.default_schedule(outs), [a_t, b_t, *outs], [a, b], want, rtol=1e-6)


def test_python_scalars_on_either_side():
    x = te.placeholder((7, 13), name="x")
    outs = [ops.add(x, 2.5), ops.subtract(1.0, x), ops.multiply(3, x), ops.divide(x, 4.0),
            ops.divide(2.0, ops.add(x, 5.0))]
    a = randn(3, 7, 13)
    check_build(ops.default_schedule(outs), [x, *outs], [a],
                [a + 2.5, 1 - a, 3 * a, a / 4, 2 / (a + 5)], rtol=1e-6)


def test_integer_tensors_and_mixed_dtypes():
    i = te.placeholder((13,), name="i", dtype="int32")
    f = te.placeholder((13,), name="f")
    outs = [ops.add(i, 3), ops.multiply(i, f)]
    assert [o.dtype for o in outs] == ["int32", "float32"]
    ia = np.arange(-6, 7, dtype="int32")
    fa = randn(4, 13)
    check_build(ops.default_schedule(outs), [i, f, *outs], [ia, fa], [ia + 3, ia * fa],
                rtol=1e-6)


@pytest.mark.parametrize("shape,axis", [((2, 5, 7, 3), 1), ((13, 7), -1), ((7, 4), 0)])
def test_bias_add(shape, axis):
    x = te.placeholder(shape, name="x")
    bias = te.placeholder((shape[axis],), name="bias")
    y = ops.bias_add(x, bias, axis=axis)
    a, b = randn(5, *shape), randn(6, shape[axis])
    view = [1] * len(shape)
    view[axis] = shape[axis]
    check_build(ops.default_schedule(y), [x, bias, y], [a, b], [a + b.reshape(view)], rtol=1e-6)


def test_shapes_that_do_not_broadcast():
    a, b = te.placeholder((4, 3), name="a"), te.placeholder((4,), name="b")
    with pytest.raises(ValueError, match=r"add: shapes \(4, 3\) and \(4,\) do not broadcast"):
        ops.add(a, b)
    with pytest.raises(ops.OpError, match=r"multiply.*\(2, 5, 1\) and \(3, 1, 1\)"):
        ops.multiply(te.placeholder((2, 5, 1)), te.placeholder((3, 1, 1)))


def test_bad_operands():
    x = te.placeholder((4,), name="x")
    with pytest.raises(TypeError, match="add: needs at least one tensor"):
        ops.add(1.0, 2.0)
    with pytest.raises(TypeError, match="subtract: rhs must be a tensor or a Python number"):
        ops.subtract(x, "1")
    with pytest.raises(TypeError, match="divide|'/'"):
        ops.divide(te.placeholder((4,), dtype="int32"), 2)


def test_bias_add_errors():
    x = te.placeholder((2, 5, 7), name="x")
    with pytest.raises(ValueError, match=r"bias_add: bias of shape \(7,\).*axis 1.*\(2, 5, 7\)"):
        ops.bias_add(x, te.placeholder((7,), name="b"))
    with pytest.raises(ValueError, match=r"bias_add: bias of shape \(5, 1\)"):
        ops.bias_add(x, te.placeholder((5, 1), name="b"))
    with pytest.raises(ValueError, match=r"bias_add: axis 3 is not an axis of shape \(2, 5, 7\)"):
        ops.bias_add(x, te.placeholder((5,), name="b"), axis=3)
