"""ops.default_schedule: which stages it inlines, which loops it runs in parallel or
vectorizes, and that its schedules build and compute the right values for symbolic
sizes, every dtype, other targets and hand-written computes among the operators."""
from __future__ import annotations

import numpy as np
import pytest

import compiler
from compiler import ops, te
from compiler.ir.stmt import PARALLEL, VECTORIZED
from compiler.target import Target
from build_check import check_build, randn, unwritten

pytestmark = pytest.mark.filterwarnings("error::compiler.transform.VectorizeWarning")


def attach(s):
    return {st.name: st.attach_type for st in s.stages}


def annotations(s, tensor):
    return sorted(s[tensor].iter_var_attrs.values())


def test_parallel_only_when_the_work_pays_for_it():
    small, large = te.placeholder((13, 7), name="small"), te.placeholder((64, 1000), name="large")
    r, e = ops.relu(small), ops.exp(large)
    s = ops.default_schedule([r, e])
    assert annotations(s, r) == [VECTORIZED]
    assert annotations(s, e) == [PARALLEL, VECTORIZED]


def test_value_read_twice_or_reused_by_a_larger_reader_is_computed_once():
    x, v = te.placeholder((13, 7), name="x"), te.placeholder((7,), name="v")
    e = ops.exp(x)  # read by two stages
    r = ops.relu(v)  # read once per row of x
    twice = ops.multiply(e, 2.0)
    thrice = ops.add(twice, e)
    y = ops.add(thrice, r)
    s = ops.default_schedule(y)
    assert [s[t].attach_type for t in (e, r, twice, thrice, y)] == \
        ["root", "root", "inline", "inline", "root"]
    a, b = randn(1, 13, 7), randn(2, 7)
    check_build(s, [x, v, y], [a, b], [np.exp(a) * 3 + np.maximum(b, 0)], rtol=1e-5)


def test_padded_innermost_axis_stays_scalar():
    # vectorizing would put the padding condition on each lane: the vectorizer would
    # refuse (a warning, an error here); padding outer axes only keeps the vector loop
    x = te.placeholder((5, 13), name="x")
    inner, outer = ops.pad(x, (0, 2)), ops.pad(x, (2, 0), (1, 0))
    s = ops.default_schedule([inner, outer])
    assert VECTORIZED not in annotations(s, inner)
    assert VECTORIZED in annotations(s, outer)
    a = randn(3, 5, 13)
    check_build(s, [x, inner, outer], [a],
                [np.pad(a, ((0, 0), (2, 2))), np.pad(a, ((2, 1), (0, 0)))], rtol=0, atol=0)


def test_hand_written_compute_among_operators():
    # a plain te.compute is OPAQUE: never inlined, scheduled like any other stage
    x = te.placeholder((7, 13), name="x")
    t = te.compute((13, 7), lambda i, j: x[j, i] * 2, name="transpose2")
    y = ops.softmax(ops.relu(t))
    s = ops.default_schedule(y)
    assert attach(s)["transpose2"] == "root" and attach(s)["relu"] == "root"
    a = randn(4, 7, 13)
    r = np.maximum(a.T * 2, 0).astype("float64")
    e = np.exp(r - r.max(axis=1, keepdims=True))
    check_build(s, [x, y], [a], [e / e.sum(axis=1, keepdims=True)], rtol=1e-5)


def test_symbolic_sizes():
    n = te.var("n")
    x, row = te.placeholder((n, 13), name="x"), te.placeholder((13,), name="row")
    y = ops.sum(ops.multiply(ops.relu(x), row), axis=1)
    s = ops.default_schedule(y)
    assert attach(s) == {"relu": "inline", "multiply": "inline", "sum": "root"}
    f = compiler.build(s, [x, row, y])
    for rows in (1, 7, 1000):
        a, b = randn(rows, rows, 13), randn(5, 13)
        out = unwritten(np.zeros(rows, "float32"))
        f(a, b, out)
        np.testing.assert_allclose(out, (np.maximum(a, 0) * b).sum(axis=1), rtol=1e-5,
                                   atol=1e-5, err_msg=f"n={rows}")


@pytest.mark.parametrize("dtype", ["int8", "int64", "float64"])
def test_dtypes(dtype):
    # the vector width follows the dtype (64 int8 lanes with AVX-512)
    x, y = te.placeholder((3, 200), name="x", dtype=dtype), te.placeholder((200,), name="y",
                                                                           dtype=dtype)
    outs = [ops.add(x, y), ops.max(x, axis=0)]
    a = np.random.default_rng(6).integers(-50, 50, (3, 200)).astype(dtype)
    b = np.random.default_rng(7).integers(-50, 50, 200).astype(dtype)
    check_build(ops.default_schedule(outs), [x, y, *outs], [a, b], [a + b, a.max(axis=0)])


def test_target_sets_the_vector_width():
    x = te.placeholder((1000,), name="x")
    y = ops.relu(x)
    s = ops.default_schedule(y, target=Target("llvm -mcpu=x86-64 -num-cores=1"))
    assert s[y].relations[0].factor == 4  # 128-bit vectors of float32
    a = randn(8, 1000)
    check_build(s, [x, y], [a], [np.maximum(a, 0)], rtol=0, atol=0)
