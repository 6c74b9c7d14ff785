"""compiler.ops reductions (sum, max, min, mean) over every kind of `axis`, with and
without keepdims, built with the default schedule and compared with numpy."""
from __future__ import annotations

import numpy as np
import pytest

from compiler import ops, te
from build_check import check_build, randn

pytestmark = pytest.mark.filterwarnings("error::compiler.transform.VectorizeWarning")

REDUCERS = {"sum": np.sum, "max": np.max, "min": np.min, "mean": np.mean}


@pytest.mark.parametrize("shape,axis,keepdims", [
    ((7, 13, 1000), None, False),
    ((7, 13, 1000), 1, False),
    ((7, 13, 1000), -1, True),
    ((7, 13, 1000), (0, 2), False),
    ((1000, 13), 0, True),
    ((13,), 0, False),
])
def test_reductions(shape, axis, keepdims):
    x = te.placeholder(shape, name="x")
    outs = [getattr(ops, name)(x, axis=axis, keepdims=keepdims) for name in REDUCERS]
    a = randn(7, *shape) - 4  # all far from 0: a max or min starting from 0 is caught
    want = [np.asarray(f(a.astype("float64"), axis=axis, keepdims=keepdims))
            for f in REDUCERS.values()]
    assert all(len(o.shape) == w.ndim for o, w in zip(outs, want))
    check_build(ops.default_schedule(outs), [x, *outs], [a], want, rtol=1e-5, atol=1e-4)


def test_integer_sum_max_and_float_mean():
    x = te.placeholder((13, 7), name="x", dtype="int32")
    outs = [ops.sum(x, axis=1), ops.max(x, axis=0), ops.mean(x, axis=(0, 1))]
    assert [o.dtype for o in outs] == ["int32", "int32", "float32"]
    a = np.random.default_rng(8).integers(-100, 100, (13, 7)).astype("int32")
    check_build(ops.default_schedule(outs), [x, *outs], [a],
                [a.sum(axis=1), a.max(axis=0), np.asarray(a.mean(), "float32")], rtol=1e-6)


def test_symbolic_rows():
    n = te.var("n")
    x = te.placeholder((n, 13), name="x")
    y = ops.mean(x, axis=0)
    a = randn(9, 37, 13)
    check_build(ops.default_schedule(y), [x, y], [a], [a.mean(axis=0)], rtol=1e-5)


def test_axis_errors():
    x = te.placeholder((4, 5), name="x")
    with pytest.raises(ValueError, match=r"sum: axis 2 is not an axis of shape \(4, 5\)"):
        ops.sum(x, axis=2)
    with pytest.raises(ValueError, match=r"max: axis \(1, -1\) repeats a dimension"):
        ops.max(x, axis=(1, -1))
    with pytest.raises(ValueError, match=r"mean: axis=\(\) reduces no dimension"):
        ops.mean(x, axis=())
    with pytest.raises(ValueError, match=r"min: axis 1.5 is not an axis"):
        ops.min(x, axis=1.5)
