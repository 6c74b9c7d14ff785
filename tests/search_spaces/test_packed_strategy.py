"""The packed convolution templates as strategies of a graph build at opt_level 3: the
NCHW[x]c convolutions AlterOpLayout makes (input and output blocks alike or not, an RGB
image as one block of 3) are scheduled by conv2d_nchwc and depthwise_conv2d_nchwc with
the dispatch context's config (the fallback untuned, any point of the space inside a
context that answers their workload), the kernels, tail included, still compute the
model, and the profile says which template ran; a window the templates cannot say is
left to compiler.ops' packed schedule."""
from __future__ import annotations

import numpy as np
import pytest

import search_spaces
from compiler import graph
from compiler.graph.ir.op.layout import channel_blocks
from compiler.graph.ir.reference import evaluate
from compiler.ops.conv2d_winograd import winograd_tile_size
from compiler.transform.pass_infra import PassContext

rng = np.random.default_rng(11)


def block(channels: int) -> int:
    """The untuned block of `channels` on the target the models are built for (the host:
    they run): its float32 lanes where they divide, 16 on AVX-512 and 8 on AVX2, else
    half of them (24 channels: 8 on either)."""
    return channel_blocks(channels)[0]


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


PACKED = {"conv2d_nchwc": (1, 16, 13, 13, 32, 1, 1, 1, 0, block(16), block(32)),
          "depthwise_conv2d_nchwc": (1, 32, 13, 13, 3, 3, 2, 1, block(32))}


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


def image_fn(dilation=1):
    """An RGB image through three convolutions whose blocks change: 3 -> 16 (one block
    of 3 in, 16 out: OIHW3i16o), 16 -> 24 (OIHW16i8o), 24 -> 40 (OIHW8i8o) on AVX-512;
    on AVX2 the 16 channels take blocks of 8 (OIHW3i8o, OIHW8i8o, OIHW8i8o)."""
    x = graph.var("x", shape=(1, 3, 37, 37))
    y = graph.nn.relu(graph.nn.bias_add(
        graph.nn.conv2d(x, _const(16, 3, 7, 7), strides=2, padding=3), _const(16)))
    y = graph.nn.relu(graph.nn.conv2d(y, _const(24, 16, 3, 3), padding=dilation,
                                      dilation=dilation))
    y = graph.nn.conv2d(y, _const(40, 24, 5, 5), strides=2, padding=2)
    return graph.Function([x], graph.multiply(y, graph.const(np.float32(0.5))))


IMAGE = [("conv2d_nchwc", (1, 3, 37, 37, 16, 7, 7, 2, 3, 3, block(16))),  # one block of 3
         ("conv2d_winograd_nchwc", (1, 16, 19, 19, 24, 1, block(16), block(24),  # by Winograd
                                    winograd_tile_size((3, 3), (1, 1), (1, 1), (19, 19),
                                                       (16, 24)))),
         ("conv2d_nchwc", (1, 24, 19, 19, 40, 5, 5, 2, 2, block(24), block(40)))]


def test_blocks_that_change_between_convolutions_are_the_templates_arguments():
    fn = image_fn()
    lib = build(fn)
    infos = [s["info"] for s in lib.plan["steps"] if s["ops"][0] == "nn.conv2d"]
    assert [i["workload"] for i in infos] == [f"{name}{a!r}" for name, a in IMAGE]
    data = rng.standard_normal((1, 3, 37, 37)).astype("float32")
    want = evaluate(fn, data)
    np.testing.assert_allclose(lib.run(x=data)[0], want, rtol=1e-4, atol=1e-4)
    rows = [r for r in lib.profile(repeat=1) if r["ops"][0] == "nn.conv2d"]
    assert [(r["template"], r["fallback"]) for r in rows] == [(n, True) for n, _ in IMAGE]
    for name, args in IMAGE:
        config = search_spaces.space(name, *args).sample(1, seed=sum(args))[0]
        with AnswerFor(name, args, config):
            lib = build(fn)
        chosen = [s["info"] for s in lib.plan["steps"] if s["info"]["template"]]
        assert [i["fallback"] for i in chosen] == [a != (name, args) for a in IMAGE]
        np.testing.assert_allclose(lib.run(x=data)[0], want, rtol=1e-4, atol=1e-4,
                                   err_msg=str(config))


def test_a_one_layer_model_runs_every_config_that_apply_config_gives():
    x = graph.var("x", shape=(1, 8, 13, 13))
    fn = graph.Function([x], graph.clip(graph.nn.conv2d(x, _const(16, 8, 3, 3), padding=1),
                                        0.0, 6.0))
    data = rng.standard_normal((1, 8, 13, 13)).astype("float32")
    want = evaluate(fn, data)
    args = (1, 8, 13, 13, 16, 3, 3, 1, 1, block(8), block(16))
    for config in search_spaces.space("conv2d_nchwc", *args).sample(4, seed=5):
        with search_spaces.ApplyConfig(config):
            lib = build(fn)
        (info,) = [s["info"] for s in lib.plan["steps"] if s["info"]["template"]]
        assert (info["workload"], info["config"]) == (f"conv2d_nchwc{args!r}",
                                                      f"#{config.index}")
        np.testing.assert_allclose(lib.run(x=data)[0], want, rtol=1e-4, atol=1e-4,
                                   err_msg=str(config))


def test_a_packed_window_the_templates_cannot_say_is_left_to_compiler_ops():
    fn = image_fn(dilation=2)
    lib = build(fn)
    convs = [s for s in lib.plan["steps"] if s["ops"][0] == "nn.conv2d"]
    assert len(convs[1]["shape"]) == 5  # packed, yet dilated
    assert [s["info"]["template"] for s in convs] == ["conv2d_nchwc", None, "conv2d_nchwc"]
    data = rng.standard_normal((1, 3, 37, 37)).astype("float32")
    np.testing.assert_allclose(lib.run(x=data)[0], evaluate(fn, data), rtol=1e-4, atol=1e-4)
