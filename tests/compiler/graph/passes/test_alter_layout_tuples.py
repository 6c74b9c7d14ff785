"""Layouts where values meet in a tuple (AlterOpLayout at opt level 3): a packed value
that goes into a Concat, into a tuple read back by TupleGetItem, or out of the model
as one of several outputs reaches its reader, and the model's outputs, in the layout
and shape the model declares. Each op that can carry a packed value there is checked:
Add, Relu, Clip, the pools, Concat (Split is not a graph op yet)."""
from __future__ import annotations

import numpy as np
import pytest
from onnx import helper

from compiler import graph
from compiler.frontend import from_onnx
from compiler.graph.ir.reference import evaluate
from compiler.transform.pass_infra import PassContext
from onnx_models import input_and_expected, model, tensor, weight

rng = np.random.default_rng(11)


def _packed(x, channels=16):
    """A convolution of `x` (which AlterOpLayout packs in blocks of 16 or 8)."""
    w = graph.const(rng.standard_normal((channels, x.ty.shape[1], 1, 1)).astype("float32"))
    return graph.nn.conv2d(x, w)


CARRIERS = {
    "add": lambda y, x: graph.add(y, _packed(x)),
    "relu": lambda y, x: graph.nn.relu(y),
    "clip": lambda y, x: graph.clip(y, -0.5, 0.5),
    "max_pool2d": lambda y, x: graph.nn.max_pool2d(y, (3, 3), (1, 1), (1, 1)),
    "avg_pool2d": lambda y, x: graph.nn.avg_pool2d(y, (3, 3), (1, 1), (1, 1)),
    "concatenate": lambda y, x: graph.concatenate([y, _packed(x, 8)], axis=1),
}


def _build_and_check(fn, n_outputs=1):
    x = rng.standard_normal(fn.params[0].ty.shape).astype("float32")
    with PassContext(opt_level=3):
        lib = graph.build(graph.IRModule.from_expr(fn))
    got = lib.run(x=x)
    want = evaluate(fn, x)
    want = list(want) if isinstance(want, tuple) else [want]
    assert len(got) == len(want) == n_outputs
    for g, w in zip(got, want):
        assert g.shape == w.shape  # the shape the model declares, never a packed one
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-4)
    return lib


@pytest.mark.parametrize("carrier", CARRIERS)
def test_a_packed_value_concatenated_with_another_reaches_the_output_in_nchw(carrier):
    x = graph.var("x", shape=(1, 16, 7, 7))
    y = CARRIERS[carrier](_packed(x), x)
    out = graph.concatenate([y, _packed(x, 16)], axis=1)
    _build_and_check(graph.Function([x], out))


@pytest.mark.parametrize("carrier", CARRIERS)
def test_a_packed_value_read_back_from_a_tuple_is_the_functions_result_in_nchw(carrier):
    x = graph.var("x", shape=(1, 16, 7, 7))
    y = CARRIERS[carrier](_packed(x), x)
    pair = graph.Tuple((_packed(x, 8), y))
    _build_and_check(graph.Function([x], graph.TupleGetItem(pair, 1)))


@pytest.mark.parametrize("carrier", CARRIERS)
def test_packed_values_in_a_result_tuple_are_each_in_nchw(carrier):
    x = graph.var("x", shape=(1, 16, 7, 7))
    y = CARRIERS[carrier](_packed(x), x)
    _build_and_check(graph.Function([x], graph.Tuple((y, _packed(x, 8)))), n_outputs=2)


def test_an_inner_concat_hands_its_consumer_the_layout_it_needs():
    x = graph.var("x", shape=(1, 16, 9, 9))
    cat = graph.concatenate([graph.nn.relu(_packed(x)), _packed(x, 8)], axis=1)
    out = graph.nn.softmax(graph.nn.conv2d(cat, graph.const(
        rng.standard_normal((8, 24, 3, 3)).astype("float32")), padding=1), axis=1)
    _build_and_check(graph.Function([x], out))


def test_packed_values_of_the_same_block_concatenate_without_leaving_the_layout():
    x = graph.var("x", shape=(1, 16, 7, 7))
    cat = graph.concatenate([graph.nn.relu(_packed(x)), _packed(x, 32)], axis=1)
    lib = _build_and_check(graph.Function([x], cat))
    concat, = [s for s in lib.plan["steps"] if "concatenate" in s["ops"]]
    assert concat["ops"] == ["concatenate", "layout_transform"]  # one transform, at the end


def _depthwise_block_ending_in_concat():
    """The issue's model: a pointwise and a depthwise convolution whose outputs, and an
    inner Concat's, are concatenated as the model's output."""
    c = 16
    nodes = [
        helper.make_node("Conv", ["x", "pw"], ["p"]),
        helper.make_node("Relu", ["p"], ["pr"]),
        helper.make_node("Conv", ["pr", "dw"], ["d"], group=2 * c, pads=[1, 1, 1, 1]),
        helper.make_node("Concat", ["d", "pr"], ["inner"], axis=1),
        helper.make_node("Conv", ["inner", "w2"], ["q"], pads=[1, 1, 1, 1]),
        helper.make_node("Concat", ["q", "x"], ["y"], axis=1),
    ]
    inits = [weight("pw", 2 * c, c, 1, 1), weight("dw", 2 * c, 1, 3, 3),
             weight("w2", 32, 4 * c, 3, 3)]
    return model(nodes, [tensor("x", [1, c, 7, 7])], [tensor("y", None)], inits)


def test_an_onnx_depthwise_block_ending_in_concat_matches_onnx_runtime_in_its_shape():
    m = _depthwise_block_ending_in_concat()
    x, want = input_and_expected(m)
    mod, params = from_onnx(m)
    with PassContext(opt_level=3):
        lib = graph.build(mod, params=params)
    got, = lib.run(x=x)
    assert got.shape == want.shape == (1, 48, 7, 7)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


def test_a_packed_concat_along_axis_minus_3_is_along_the_channels():
    x = graph.var("x", shape=(1, 16, 5, 5))
    cat = graph.concatenate([_packed(x), graph.nn.relu(_packed(x))], axis=-3)
    _build_and_check(graph.Function([x], cat))


@pytest.mark.parametrize("case", ["field of a field", "relu of a field of a field",
                                  "a field that is a tuple"])
def test_packed_values_in_nested_tuples_leave_in_nchw(case):
    x = graph.var("x", shape=(1, 16, 5, 5))
    nested = graph.Tuple([graph.Tuple([_packed(x), x]), x])
    body = {"field of a field": graph.TupleGetItem(graph.TupleGetItem(nested, 0), 0),
            "relu of a field of a field": graph.nn.relu(
                graph.TupleGetItem(graph.TupleGetItem(nested, 0), 0)),
            "a field that is a tuple": graph.TupleGetItem(nested, 0)}[case]
    _build_and_check(graph.Function([x], body), n_outputs=2 if case.startswith("a field") else 1)
