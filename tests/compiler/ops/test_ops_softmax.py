"""compiler.ops.softmax against numpy, on inputs large enough to overflow a naive exp."""
from __future__ import annotations

import numpy as np
import pytest

from compiler import ops, te
from build_check import check_build, randn

pytestmark = pytest.mark.filterwarnings("error::compiler.transform.VectorizeWarning")


def softmax_ref(a, axis):
    e = np.exp(a - a.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


@pytest.mark.parametrize("shape,axis", [((13, 7), -1), ((7, 1000), -1), ((3, 13, 5), 1)])
def test_softmax(shape, axis):
    x = te.placeholder(shape, name="x")
    y = ops.softmax(x, axis=axis)
    a = randn(10, *shape).astype("float64") * 50  # exp(50 * 3) overflows float32
    want = softmax_ref(a, axis)
    check_build(ops.default_schedule(y), [x, y], [a.astype("float32")], [want],
                rtol=1e-4, atol=1e-6)


def test_softmax_stages():
    # exp is read by the sum and by the division: computed once, not inlined twice
    x = te.placeholder((4, 6), name="x")
    s = ops.default_schedule(ops.softmax(x))
    assert {st.name: st.attach_type for st in s.stages} == {
        "max": "root", "subtract": "inline", "exp": "root", "sum": "root", "divide": "root"}


def test_softmax_axis_error():
    with pytest.raises(ValueError, match=r"softmax: axis 2 is not an axis of shape \(4, 6\)"):
        ops.softmax(te.placeholder((4, 6), name="x"), axis=2)
