"""Misuse of the tensor-expression language (compiler/te): each raises TypeError,
ValueError or IndexError naming the tensor, axis or dtype involved."""
from __future__ import annotations

import re

import pytest

from compiler import te


def raises_named(exc_type, *words):
    """pytest.raises(exc_type) whose message contains every word as a whole token."""
    pattern = "".join(rf"(?=.*(?<![\w.]){re.escape(w)}(?![\w]))" for w in words)
    return pytest.raises(exc_type, match=re.compile(pattern, re.S))


@pytest.mark.parametrize("indices", [1, 3])
def test_index_with_wrong_number_of_indices(indices):
    A = te.placeholder((4, 5), name="Amat")
    with pytest.raises((IndexError, ValueError, TypeError), match=r"\bAmat\b.*2.*" + str(indices)):
        te.compute((4,), lambda i: A[(i,) * indices], name="C")


def test_index_with_float_index():
    A = te.placeholder((4,), name="Avec")
    with pytest.raises((IndexError, TypeError), match=r"\bAvec\b"):
        te.compute((4,), lambda i: A[i.astype("float32")], name="C")


def test_reduce_axis_outside_reduction():
    A = te.placeholder((4, 5), name="A")
    rk = te.reduce_axis((0, 5), name="rk")
    with pytest.raises(ValueError, match=r"\bC\b.*reduce_axis rk\b"):
        te.compute((4,), lambda i: A[i, rk], name="C")


def test_reduce_axis_outside_reduction_next_to_one():
    # rk is reduced over, but rj is used outside its reduction (in the body, not the sum)
    A = te.placeholder((4, 5), name="A")
    rk = te.reduce_axis((0, 5), name="rk")
    rj = te.reduce_axis((0, 4), name="rj")
    with pytest.raises(ValueError, match=r"reduce_axis rj\b"):
        te.compute((4,), lambda i: te.sum(A[rj, rk], axis=rk), name="C")


def test_reduction_nested_in_expression():
    A = te.placeholder((4, 5), name="A")
    k = te.reduce_axis((0, 5), name="k")
    with pytest.raises(ValueError, match=r"\bC\b.*reduction"):
        te.compute((4,), lambda i: te.sum(A[i, k], axis=k) + 1, name="C")


def test_expr_truth_value():
    n = te.var("n")
    with pytest.raises(ValueError, match="bool"):
        if n < 3:
            pass
    A = te.placeholder((4,), name="A")
    with pytest.raises(ValueError, match="if_then_else"):
        te.compute((4,), lambda i: A[i] if A[i] > 0 else -A[i], name="C")


def test_expr_python_and_or():
    n = te.var("n")
    with pytest.raises(ValueError):
        _ = (n < 3) and (n > 1)


def test_int_true_division():
    n = te.var("n")
    with pytest.raises(TypeError, match=r"//|floordiv"):
        _ = n / 2
    with pytest.raises(TypeError):
        _ = 7 / n
    A = te.placeholder((4,), name="A", dtype="int32")
    with pytest.raises(TypeError):
        te.compute((4,), lambda i: A[i] / A[i], name="C")


def test_int_true_division_allowed_after_astype():
    n = te.var("n")
    e = n.astype("float32") / 2
    assert e.dtype == "float32"


@pytest.mark.parametrize("dtype", ["float8_e4m3fn", "complex64", "fp32"])
def test_unsupported_dtype_placeholder(dtype):
    with pytest.raises(TypeError, match=re.escape(dtype)):
        te.placeholder((4,), name="A", dtype=dtype)


def test_unsupported_dtype_astype():
    with pytest.raises(TypeError, match="int4"):
        te.var("n").astype("int4")


@pytest.mark.parametrize("shape", [(0, 3), (4, -1)])
def test_non_positive_shape(shape):
    with pytest.raises(ValueError, match=r"\bXs\b"):
        te.placeholder(shape, name="Xs")


def test_floormod_of_floats():
    A = te.placeholder((4,), name="A")
    with pytest.raises(TypeError, match="FloorMod|integer"):
        _ = A[0] % 2
