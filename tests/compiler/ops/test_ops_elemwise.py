"""compiler.ops elementwise operators (relu, sigmoid, tanh, exp, clip) built with the
default schedule and compared with numpy; argument errors."""
from __future__ import annotations

import numpy as np
import pytest

from compiler import ops, te
from build_check import check_build, randn

# The default schedule vectorizes only where it can: a refused loop is a bug here.
pytestmark = pytest.mark.filterwarnings("error::compiler.transform.VectorizeWarning")


@pytest.mark.parametrize("shape", [(1000,), (13, 7), (2, 3, 17)])
def test_unary_float(shape):
    x = te.placeholder(shape, name="x")
    outs = [ops.relu(x), ops.sigmoid(x), ops.tanh(x), ops.exp(x), ops.clip(x, -0.5, 1.25)]
    a = randn(1, *shape) * 3
    a64 = a.astype("float64")
    want = [np.maximum(a, 0), 1 / (1 + np.exp(-a64)), np.tanh(a64), np.exp(a64),
            np.clip(a, -0.5, 1.25)]
    check_build(ops.default_schedule(outs), [x, *outs], [a], want, rtol=1e-5, atol=1e-6)


def test_relu_clip_keep_integer_dtype_and_exp_is_float32():
    x = te.placeholder((7, 13), name="x", dtype="int32")
    outs = [ops.relu(x), ops.clip(x, -3, 4), ops.exp(x)]
    assert [o.dtype for o in outs] == ["int32", "int32", "float32"]
    a = np.random.default_rng(2).integers(-9, 10, (7, 13)).astype("int32")
    check_build(ops.default_schedule(outs), [x, *outs], [a],
                [np.maximum(a, 0), np.clip(a, -3, 4), np.exp(a).astype("float32")], rtol=1e-6)


def test_chain_of_operators_is_one_loop_nest():
    # every inner stage is inlined into the output: one loop nest, no temporaries
    x = te.placeholder((13, 7), name="x")
    y = ops.clip(ops.relu(ops.tanh(x)), 0.1, 0.5)
    s = ops.default_schedule(y)
    assert [st.attach_type for st in s.stages] == ["inline", "inline", "root"]
    a = randn(3, 13, 7)
    check_build(s, [x, y], [a], [np.clip(np.maximum(np.tanh(a), 0), 0.1, 0.5)], rtol=1e-6)


def test_clip_bounds_out_of_order():
    x = te.placeholder((4,), name="x")
    with pytest.raises(ValueError, match=r"clip.*a_min=2.*a_max=1"):
        ops.clip(x, 2, 1)


def test_non_tensor_argument():
    with pytest.raises(TypeError, match=r"relu: x must be a tensor"):
        ops.relu(np.zeros(3))
