"""Shape helpers shared by the operators (compiler/ops/shape.py): get_const_tuple, and
the constant shape that windowed operators require."""
import numpy as np
import pytest

from compiler import ops, te


def test_get_const_tuple_gives_python_ints():
    A = te.placeholder((7, 5), name="A")
    dims = ops.get_const_tuple(A.shape)
    assert dims == (7, 5) and all(type(d) is int for d in dims)
    assert np.zeros(dims).shape == (7, 5)
    assert ops.get_const_tuple((3, te.const(4, "int64"))) == (3, 4)
    assert ops.get_const_tuple(()) == ()


def test_get_const_tuple_names_the_symbolic_dimension():
    n = te.var("n")
    A = te.placeholder((4, n, 2), name="A")
    with pytest.raises(TypeError, match=r"get_const_tuple: dimension 1 of the shape "
                                        r"\(4, n, 2\) is n, not a constant"):
        ops.get_const_tuple(A.shape)
    with pytest.raises(TypeError, match=r"dimension 0 of the shape \(\(n \+ 1\),\)"):
        ops.get_const_tuple((n + 1,))
    with pytest.raises(TypeError, match="dimension 0 of the shape"):
        ops.get_const_tuple((te.const(2.0),))


def test_windowed_operators_need_a_constant_shape():
    n = te.var("n")
    x = te.placeholder((1, 3, n, 8), name="x")
    with pytest.raises(ops.OpError, match=r"max_pool2d: data must have a constant shape, "
                                          r"got \(1, 3, n, 8\)"):
        ops.max_pool2d(x, 2)
