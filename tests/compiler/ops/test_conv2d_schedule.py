"""ops.schedule_conv2d_nchw, the schedule a graph build gives a kernel whose anchor is an
NCHW conv2d with an elementwise tail: correct on odd shapes (7, 13, 37 channels, widths
with no divisor near the vector width), strides, padding and dilation, with and without
a tail, against the numpy reference."""
from __future__ import annotations

import numpy as np
import pytest

from compiler import graph
from compiler.graph.ir.reference import evaluate
from compiler.transform.pass_infra import PassContext

rng = np.random.default_rng(3)


@pytest.mark.parametrize("c, k, size, kernel, stride, pad, dilation, tail", [
    (7, 13, 37, 3, 2, 1, 1, "bias_relu_add"),
    (13, 7, 13, 1, 1, 0, 1, "bias_relu"),
    (3, 37, 7, 3, 1, 1, 1, "none"),
    (16, 32, 14, 3, 2, 1, 2, "clip"),
    (5, 8, 23, 5, 1, 2, 1, "bias_relu_add"),
])
def test_a_conv2d_kernel_with_its_tail_matches_numpy(c, k, size, kernel, stride, pad,
                                                      dilation, tail):
    x = graph.var("x", shape=(1, c, size, size))
    w = graph.const(rng.standard_normal((k, c, kernel, kernel)).astype("float32"))
    y = graph.nn.conv2d(x, w, strides=stride, padding=pad, dilation=dilation)
    if tail.startswith("bias"):
        y = graph.nn.relu(graph.nn.bias_add(y, graph.const(rng.standard_normal(k)
                                                           .astype("float32"))))
    if tail.endswith("add"):
        y = graph.add(y, graph.const(rng.standard_normal((1, k, 1, 1)).astype("float32")))
    if tail == "clip":
        y = graph.clip(y, 0.0, 6.0)
    fn = graph.Function([x], y)
    with PassContext(opt_level=2):  # the NCHW kernel (the build's default packs it)
        lib = graph.build(graph.IRModule.from_expr(fn))
    data = rng.standard_normal((1, c, size, size)).astype("float32")
    got, = lib.run(x=data)
    np.testing.assert_allclose(got, evaluate(fn, data), rtol=1e-4, atol=1e-4)
    assert len(lib.plan["steps"]) == 1  # the conv and its tail: one kernel


def test_outside_any_pass_context_the_build_packs_convolutions():
    """graph.build's own default is opt_level 3 (autosched compile's): a user who never
    enters a PassContext gets the packed kernels, not the NCHW ones."""
    x = graph.var("x", shape=(1, 16, 14, 14))
    w = graph.const(rng.standard_normal((32, 16, 3, 3)).astype("float32"))
    fn = graph.Function([x], graph.nn.relu(graph.nn.conv2d(x, w, padding=1)))
    lib = graph.build(graph.IRModule.from_expr(fn))
    assert any("conv2d_winograd_nchwc" in str(step["info"].get("workload"))
               for step in lib.plan["steps"])
    data = rng.standard_normal((1, 16, 14, 14)).astype("float32")
    np.testing.assert_allclose(lib.run(x=data)[0], evaluate(fn, data), rtol=1e-4, atol=1e-4)
    with PassContext(opt_level=2):
        assert graph.build_context().opt_level == 2
    assert graph.build_context().opt_level == 3


def test_a_build_inside_a_pass_context_does_not_enter_it_again():
    """The build's scope reuses the entered context: its instruments are entered once."""
    from compiler.transform.pass_infra import PassInstrument

    class Counter(PassInstrument):
        entered = 0

        def enter_pass_ctx(self):
            Counter.entered += 1

    x = graph.var("x", shape=(1, 16, 7, 7))
    w = graph.const(rng.standard_normal((16, 16, 3, 3)).astype("float32"))
    fn = graph.Function([x], graph.nn.conv2d(x, w, padding=1))
    with PassContext(opt_level=3, instruments=[Counter()]):
        graph.build(graph.IRModule.from_expr(fn))
    assert Counter.entered == 1
