"""A call's forms are weighed without being built: the chooser compares the candidates
a template's binding gives the call altered into each form (Binding.altered), and
AlterOpLayout builds only the form it takes. So the two must agree: for every form of
every call here (convolutions of odd shapes, strides, depthwise, an image, Winograd's;
a dense whose rows pad; a batched matmul that pads), on an AVX-512 and an AVX2 target,
the workloads the strategies give the call in that form are those they give the call
the form's alteration makes."""
from __future__ import annotations

import numpy as np
import pytest

from compiler import Target, graph
from compiler.graph.ir.expr import Call
from compiler.graph.ir.op import Op
from compiler.graph.ir.op.conv2d import alter_conv2d_nchwc
from compiler.graph.ir.op.layout import forms_of, is_packed, layout_transform
from compiler.graph.ir.op.nn import alter_batched_matmul, alter_dense_pack
from compiler.graph.strategy import candidates
from compiler.ops.pattern import OpPattern

ALTERATIONS = {"nn.conv2d": alter_conv2d_nchwc, "nn.dense": alter_dense_pack,
               "matmul": alter_batched_matmul}
rng = np.random.default_rng(3)


def _typed(params, body) -> Call:
    fn = graph.Function(params, body)
    return graph.passes.InferType()(graph.IRModule.from_expr(fn))["main"].body


def _conv(n, c, size, k, r, stride=1, padding=0, groups=1):
    x = graph.var("x", shape=(n, c, size, size + 2))
    w = graph.const(rng.standard_normal((k, c // groups, r, r)).astype("float32"))
    return _typed([x], graph.nn.conv2d(x, w, stride, padding, groups=groups))


def _dense(rows, units, k):
    x = graph.var("x", shape=(rows, k))
    return _typed([x], graph.nn.dense(x, graph.const(np.zeros((units, k), "float32"))))


def _matmul(batch, rows, k, columns):
    a = graph.var("a", shape=(batch, rows, k))
    b = graph.var("b", shape=(batch, k, columns))
    return _typed([a, b], graph.matmul(a, b))


CALLS = {
    "conv 3x3 winograd": lambda: _conv(1, 32, 28, 64, 3, padding=1),
    "conv 3x3 small": lambda: _conv(1, 16, 13, 48, 3, padding=1),
    "conv 1x1 stride 2": lambda: _conv(2, 64, 13, 32, 1, stride=2),
    "conv image": lambda: _conv(1, 3, 37, 16, 7, stride=2, padding=3),
    "conv depthwise": lambda: _conv(1, 32, 13, 32, 3, stride=2, padding=1, groups=32),
    "conv half-vector blocks": lambda: _conv(1, 24, 7, 40, 3),
    "dense": lambda: _dense(7, 1000, 37),
    "dense padded rows": lambda: _dense(197, 64, 48),
    "batched matmul padded": lambda: _matmul(3, 197, 16, 197),
}


def _implementation(expr) -> Call:
    """The call under the pads and slices around an alteration's result."""
    while isinstance(expr.op, Op) and expr.op.pattern <= OpPattern.INJECTIVE and \
            isinstance(expr.args[0], Call):
        expr = expr.args[0]
    return expr


def _workloads(found) -> set:
    return {c.workload for c in found if c.workload is not None}


@pytest.mark.parametrize("target", ["llvm -mcpu=skylake-avx512", "llvm -mcpu=haswell"])
@pytest.mark.parametrize("name", CALLS)
def test_the_workloads_of_a_form_are_those_of_the_call_its_alteration_makes(target, name):
    with Target(target):
        call = CALLS[name]()
        forms = forms_of(call)
        assert forms, f"{name}: no form"
        for form in forms:
            args = [a for a in call.args]
            new = ALTERATIONS[call.op.name](dict(call.attrs), args, [a.ty for a in args],
                                            call.ty, form=form)
            layout = new.attrs.get("data_layout", "NCHW")
            if is_packed(layout):  # its data packed, as AlterOpLayout converts it
                new = Call(new.op, (layout_transform(args[0], "NCHW", layout),
                                    *new.args[1:]), new.attrs)
            params = [a for a in args if isinstance(a, graph.Var)]
            altered = _implementation(_typed(params, new))
            want = _workloads(candidates(altered))
            assert want, f"{name} {form}: no template takes the altered call"
            assert _workloads(candidates(call, form=form)) == want, (name, form)


def test_a_call_that_does_not_pack_has_no_form():
    """13 input and 37 output channels (no block divides them), a dense on a weight that
    is no constant, a 2-D matmul: no form, so no candidate of one."""
    x, w = graph.var("x", shape=(7, 13)), graph.var("w", shape=(5, 13))
    for call in (_conv(1, 13, 7, 37, 3), _typed([x, w], graph.nn.dense(x, w)),
                 _typed([x, w], graph.matmul(x, graph.transpose(w, (1, 0))))):
        assert forms_of(call) == [], call.op.name
