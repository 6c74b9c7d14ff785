"""The packed convolution templates as strategies of a graph build at opt_level 3: the
NCHW[x]c convolutions AlterOpLayout makes are scheduled by conv2d_nchwc and
depthwise_conv2d_nchwc with the dispatch context's config (the fallback untuned, any
point of the space inside a context that answers their workload), and the kernels, tail
included, still compute the model."""
from __future__ import annotations

import numpy as np
import pytest

import search_spaces
from compiler import graph
from compiler.graph.reference import evaluate
from compiler.transform.pass_infra import PassContext

rng = np.random.default_rng(11)


def _const(*shape):
    return graph.const((rng.standard_normal(shape) * 0.3).astype("float32"))


def block_fn():
    """A MobileNet-like block on 16 channels: pointwise, depthwise, pointwise + residual."""
    x = graph.var("x", shape=(1, 16, 13, 13))
    y = graph.clip(graph.nn.bias_add(graph.nn.conv2d(x, _const(32, 16, 1, 1)), _const(32)),
                   0.0, 6.0)
    y = graph.clip(graph.nn.conv2d(y, _const(32, 1, 3, 3), strides=2, padding=1, groups=32),
                   0.0, 6.0)
    y = graph.nn.conv2d(y, _const(16, 32, 1, 1))
    return graph.Function([x], graph.nn.relu(graph.add(y, graph.nn.max_pool2d(
        x, pool_size=3, strides=2, padding=1))))


PACKED = {"conv2d_nchwc": (1, 16, 13, 13, 32, 1, 1, 1, 0, 16, 16),
          "depthwise_conv2d_nchwc": (1, 32, 13, 13, 3, 3, 2, 1, 16)}


class AnswerFor(search_spaces.DispatchContext):
    """Answers one workload with one config, and nothing else (the fallback then)."""

    def __init__(self, name, args, config):
        self.workload, self.config = (name, search_spaces.get_template(name).bind(args)), config

    def query(self, workload):
        return self.config if workload == self.workload else None


def build(fn):
    with PassContext(opt_level=3):
        return graph.build(graph.IRModule.from_expr(fn))


def test_packed_convolutions_get_their_templates_fallback_untuned():
    fn = block_fn()
    lib = build(fn)
    infos = [s["info"] for s in lib.plan["steps"] if s["ops"][0] == "nn.conv2d"]
    assert [i["template"] for i in infos] == ["conv2d_nchwc", "depthwise_conv2d_nchwc",
                                             "conv2d_nchwc"]
    assert all(i["fallback"] is True for i in infos)
    assert infos[0]["workload"] == f"conv2d_nchwc{PACKED['conv2d_nchwc']!r}"
    data = rng.standard_normal((1, 16, 13, 13)).astype("float32")
    np.testing.assert_allclose(lib.run(x=data)[0], evaluate(fn, data), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("name", PACKED)
def test_any_config_of_a_packed_template_computes_the_kernel_and_its_tail(name):
    fn = block_fn()
    data = rng.standard_normal((1, 16, 13, 13)).astype("float32")
    want = evaluate(fn, data)
    space = search_spaces.space(name, *PACKED[name])
    for config in space.sample(3, seed=len(name)):
        with AnswerFor(name, PACKED[name], config):
            lib = build(fn)
        chosen = [s["info"] for s in lib.plan["steps"] if s["info"]["template"] == name][0]
        assert chosen["config"] == f"#{config.index}" and chosen["fallback"] is False
        np.testing.assert_allclose(lib.run(x=data)[0], want, rtol=1e-4, atol=1e-4,
                                   err_msg=str(config))
