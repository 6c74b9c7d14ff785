"""Pattern kinds of compiler.ops: their order, and the three ways to read an operator's
kind (by name, on the function, on the tensor it produced)."""
from __future__ import annotations

import pytest

from compiler import ops, te
from compiler.ops import OpPattern

x4 = te.placeholder((1, 2, 6, 6), name="x4")
w4 = te.placeholder((3, 2, 3, 3), name="w4")
m2 = te.placeholder((6, 6), name="m2")
m3 = te.placeholder((2, 6, 6), name="m3")
v = te.placeholder((2,), name="v")

KINDS = {
    "relu": (lambda: ops.relu(m2), OpPattern.ELEMWISE),
    "clip": (lambda: ops.clip(m2, 0, 1), OpPattern.ELEMWISE),
    "exp": (lambda: ops.exp(m2), OpPattern.ELEMWISE),
    "add": (lambda: ops.add(m2, 1.0), OpPattern.BROADCAST),
    "bias_add": (lambda: ops.bias_add(x4, v), OpPattern.BROADCAST),
    "pad": (lambda: ops.pad(m2, (1, 1)), OpPattern.INJECTIVE),
    "sum": (lambda: ops.sum(m2, axis=0), OpPattern.COMM_REDUCE),
    "mean": (lambda: ops.mean(m2), OpPattern.COMM_REDUCE),
    "matmul": (lambda: ops.matmul(m2, m2), OpPattern.OUT_ELEMWISE_FUSABLE),
    "dense": (lambda: ops.dense(m2, m2, te.placeholder((6,))), OpPattern.OUT_ELEMWISE_FUSABLE),
    "batch_matmul": (lambda: ops.batch_matmul(m3, m3), OpPattern.OUT_ELEMWISE_FUSABLE),
    "conv2d_nchw": (lambda: ops.conv2d_nchw(x4, w4, padding=1), OpPattern.OUT_ELEMWISE_FUSABLE),
    "max_pool2d": (lambda: ops.max_pool2d(x4, 2), OpPattern.OUT_ELEMWISE_FUSABLE),
    "avg_pool2d": (lambda: ops.avg_pool2d(x4, 3, 1, 1), OpPattern.OUT_ELEMWISE_FUSABLE),
    "softmax": (lambda: ops.softmax(m2), OpPattern.OPAQUE),
}


def test_kinds_are_ordered_for_fusion():
    # A fuser asks "kind <= INJECTIVE?"; the values are TVM's OpPatternKind.
    assert [k.value for k in OpPattern] == [0, 1, 2, 3, 4, 8]
    assert (OpPattern.ELEMWISE < OpPattern.BROADCAST < OpPattern.INJECTIVE
            < OpPattern.COMM_REDUCE < OpPattern.OUT_ELEMWISE_FUSABLE < OpPattern.OPAQUE)


@pytest.mark.parametrize("name", KINDS)
def test_kind_by_name_on_function_and_on_output(name):
    make, kind = KINDS[name]
    out = make()
    assert ops.pattern_of(name) is kind
    assert getattr(ops, name).pattern is kind
    assert ops.pattern_kind(out) is kind
    assert out.op.tag == name


def test_inner_stages_keep_their_own_kinds():
    y = ops.softmax(m2)
    divide_in = y.op.input_tensors()
    kinds = {t.op.name: ops.pattern_kind(t) for t in divide_in}
    assert kinds == {"exp": OpPattern.ELEMWISE, "sum": OpPattern.COMM_REDUCE}
    conv = ops.conv2d_nchw(x4, w4, padding=1)
    (pad,) = [t for t in conv.op.input_tensors() if t is not w4]
    assert pad.op.tag == "pad" and ops.pattern_kind(pad) is OpPattern.INJECTIVE


def test_unknown_kinds():
    plain = te.compute((6,), lambda i: m2[i, i] * 2, name="plain")
    assert ops.pattern_kind(plain) is OpPattern.OPAQUE
    with pytest.raises(ValueError, match="m2 is an input"):
        ops.pattern_kind(m2)
    with pytest.raises(KeyError, match="no operator named 'conv3d'"):
        ops.pattern_of("conv3d")


def test_registering_a_name_twice():
    with pytest.raises(ValueError, match="operator relu is registered twice"):
        @ops.register_pattern(OpPattern.ELEMWISE)
        def relu(x):
            return x
