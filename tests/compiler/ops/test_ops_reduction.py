"""compiler.ops reductions (sum, max, min, mean) over every kind of `axis`, with and
without keepdims, built with the default schedule and compared with numpy."""
from __future__ import annotations

import numpy as np
import pytest

from compiler import Target, ops, te
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
    ((7, 37), -1, False),      # rows of whole vectors and a tail (AVX-512 and AVX2)
    ((3, 5, 50), 2, True),
])
def test_reductions(shape, axis, keepdims):
    x = te.placeholder(shape, name="x")
    outs = [getattr(ops, name)(x, axis=axis, keepdims=keepdims) for name in REDUCERS]
    a = randn(7, *shape) - 4  # all far from 0: a max or min starting from 0 is caught
    want = [np.asarray(f(a.astype("float64"), axis=axis, keepdims=keepdims))
            for f in REDUCERS.values()]
    assert all(len(o.shape) == w.ndim for o, w in zip(outs, want))
    check_build(ops.default_schedule(outs), [x, *outs], [a], want, rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize("target", ["llvm -mcpu=haswell", "llvm -mcpu=skylake-avx512"])
def test_a_row_with_a_tail_is_reduced_in_vectors_then_its_partials_and_tail(target):
    """A last-axis reduction of 37 (two whole vectors of 16 lanes and 5 more; four of 8
    and 5) is two stages: the partial vector accumulators, then their lanes with the
    row's tail, whose reads stay inside the row."""
    with Target(target):
        lanes = Target.resolve().vector_lanes
        x = te.placeholder((7, 37), name="x")
        y = ops.sum(x, axis=-1)
    partial, = [t for t in y.op.input_tensors() if t.op.name == "sum.partial"]
    assert [d.value for d in partial.shape] == [7, lanes]
    assert y.op.reduce_axis[0].dom.extent.value == lanes + 37 % lanes


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
