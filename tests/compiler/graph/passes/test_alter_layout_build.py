"""AlterOpLayout in the build (opt_level 3): convolutions whose channels split into
blocks compute in NCHW[x]c with weights packed once, at build time (their
layout_transform folded into the constants); two packed convolutions meet with no
transform between them; bias, scale and residual adds follow the packed layout; the
model still matches ONNX Runtime, on channel counts that pack by 16 and by 8 and ones
that do not pack (13). The models run, so they are built for the host, and the blocks
and panels expected are the host's (channel_blocks, the target's lanes and registers):
16 channels pack by 16 on AVX-512 and by 8 on AVX2."""
from __future__ import annotations

import numpy as np
import pytest

from compiler import Target, graph
from compiler.frontend import from_onnx
from compiler.graph.ir.op.layout import channel_blocks
from compiler.graph.ir.reference import evaluate
from compiler.transform.pass_infra import PassContext
from onnx_models import input_and_expected, residual

rng = np.random.default_rng(5)


def block(channels: int) -> int:
    """The untuned block of `channels` on the host, which the models are built for: its
    float32 lanes where they divide (16 on AVX-512, 8 on AVX2), else half of them (24
    channels: 8 on either)."""
    return channel_blocks(channels)[0]


def build3(mod, params=None):
    with PassContext(opt_level=3):
        return graph.build(mod, params=params)


@pytest.mark.parametrize("c, size", [(16, 13), (24, 7)])
def test_a_residual_block_runs_packed_and_matches_onnx_runtime(c, size):
    m = residual(c, size)
    x, want = input_and_expected(m)
    mod, params = from_onnx(m)
    lib = build3(mod, params)
    got, = lib.run(x=x)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
    ops = [s["ops"] for s in lib.plan["steps"]]
    # x into the packed layout; the two packed convs with their bias, batch norm's
    # shift (its scale is in the weights), residual add and relu; back to NCHW for the
    # 13-channel conv, which does not pack; the pool
    assert ops == [["layout_transform"], ["nn.conv2d", "add", "add", "nn.relu"],
                   ["nn.conv2d", "add", "nn.relu"], ["layout_transform"],
                   ["nn.conv2d"], ["nn.max_pool2d"]]
    packed = [s for s in lib.plan["steps"] if s["ops"][0] == "nn.conv2d"][:2]
    b = block(c)
    assert all(s["shape"] == [1, c // b, size, size, b] for s in packed)


def test_the_weights_are_packed_at_build_time_never_at_run_time():
    x = graph.var("x", shape=(1, 32, 9, 9))
    w1 = graph.var("w1", shape=(32, 32, 3, 3))
    w2 = graph.var("w2", shape=(16, 32, 1, 1))
    bias = graph.var("b", shape=(32,))
    y = graph.nn.relu(graph.nn.bias_add(graph.nn.conv2d(x, w1, padding=1), bias))
    y = graph.clip(graph.nn.conv2d(y, w2), 0.0, 6.0)
    fn = graph.Function([x, w1, w2, bias], y)
    params = {"w1": rng.standard_normal((32, 32, 3, 3)).astype("float32"),
              "w2": rng.standard_normal((16, 32, 1, 1)).astype("float32"),
              "b": rng.standard_normal(32).astype("float32")}
    lib = build3(graph.IRModule.from_expr(fn), params)
    ops = [s["ops"] for s in lib.plan["steps"]]
    assert ops == [["layout_transform"], ["nn.conv2d", "add", "nn.relu"],
                   ["nn.conv2d", "clip"], ["layout_transform"]]
    b32, b16 = block(32), block(16)  # 16 and 16 on AVX-512
    assert sorted(v.shape for v in lib.constants.values()) == sorted(
        [(1, 32 // b32, 1, 1, b32), (32 // b32, 32 // b32, 3, 3, b32, b32),
         (16 // b16, 32 // b32, 1, 1, b32, b16)])
    data = rng.standard_normal((1, 32, 9, 9)).astype("float32")
    got, = lib.run(x=data)
    want = evaluate(fn, data, params["w1"], params["w2"], params["b"])
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("c, k, size, kernel, stride, pad, dilation", [
    (8, 16, 37, 3, 2, 1, 1),
    (16, 8, 13, 1, 1, 0, 1),
    (16, 32, 7, 3, 1, 1, 2),
    (24, 40, 23, 5, 1, 2, 1),
])
def test_packed_convolutions_on_odd_shapes_match_numpy(c, k, size, kernel, stride, pad,
                                                        dilation):
    x = graph.var("x", shape=(1, c, size, size))
    w = graph.const(rng.standard_normal((k, c, kernel, kernel)).astype("float32"))
    y = graph.nn.conv2d(x, w, strides=stride, padding=pad, dilation=dilation)
    y = graph.add(y, graph.const(rng.standard_normal((k, 1, 1)).astype("float32")))
    y = graph.multiply(graph.nn.relu(y), graph.const(np.float32(0.5)))
    fn = graph.Function([x], y)
    lib = build3(graph.IRModule.from_expr(fn))
    assert any(len(s["shape"]) == 5 for s in lib.plan["steps"])  # it did pack
    data = rng.standard_normal((1, c, size, size)).astype("float32")
    got, = lib.run(x=data)
    np.testing.assert_allclose(got, evaluate(fn, data), rtol=1e-4, atol=1e-4)


def _const(*shape):
    return graph.const((rng.standard_normal(shape) * 0.3).astype("float32"))


def test_an_image_convolution_and_the_pools_stay_packed():
    x = graph.var("x", shape=(1, 3, 23, 23))
    y = graph.nn.relu(graph.nn.bias_add(
        graph.nn.conv2d(x, _const(16, 3, 7, 7), strides=2, padding=3), _const(16)))
    y = graph.nn.max_pool2d(y, pool_size=3, strides=2, padding=1)
    y = graph.nn.relu(graph.nn.conv2d(y, _const(16, 16, 3, 3), padding=1))
    y = graph.nn.avg_pool2d(y, pool_size=2, strides=1)
    y = graph.nn.batch_flatten(graph.nn.global_avg_pool2d(y))
    fn = graph.Function([x], graph.nn.dense(y, _const(10, 16)))
    lib = build3(graph.IRModule.from_expr(fn))
    ops = [s["ops"] for s in lib.plan["steps"]]
    # the image as NCHW3c, a 3-in-16-out block convolution, every pool packed, and one
    # transform back, before the flatten
    assert ops[0] == ["layout_transform"] and lib.plan["steps"][0]["shape"][-1] == 3
    assert ops[1:5] == [["nn.conv2d", "add", "nn.relu"], ["nn.max_pool2d"],
                        ["nn.conv2d", "nn.relu"], ["nn.avg_pool2d"]]
    assert all(s["shape"][-1] == block(16) for s in lib.plan["steps"][1:6])
    assert sum(o.count("layout_transform") for o in ops) == 2
    data = rng.standard_normal((1, 3, 23, 23)).astype("float32")
    got, = lib.run(x=data)
    np.testing.assert_allclose(got, evaluate(fn, data), rtol=1e-4, atol=1e-4)


def test_a_mobilenet_block_of_24_and_144_channels_needs_no_transform_inside():
    x = graph.var("x", shape=(1, 24, 13, 13))
    y = graph.clip(graph.nn.conv2d(x, _const(144, 24, 1, 1)), 0.0, 6.0)
    y = graph.clip(graph.nn.conv2d(y, _const(144, 1, 3, 3), padding=1, groups=144), 0.0, 6.0)
    y = graph.add(graph.nn.conv2d(y, _const(24, 144, 1, 1)), x)
    fn = graph.Function([x], y)
    lib = build3(graph.IRModule.from_expr(fn))
    steps = lib.plan["steps"]
    assert [s["ops"] for s in steps] == [
        ["layout_transform"], ["nn.conv2d", "clip"], ["nn.conv2d", "clip"],
        ["nn.conv2d", "add"], ["layout_transform"]]
    # 24 channels in blocks of 8, 144 in blocks of 16 on AVX-512 (8 on AVX2): each
    # convolution reads the block its producer wrote
    assert [s["shape"][-1] for s in steps[:4]] == [block(24), block(144), block(144),
                                                   block(24)]
    data = rng.standard_normal((1, 24, 13, 13)).astype("float32")
    got, = lib.run(x=data)
    np.testing.assert_allclose(got, evaluate(fn, data), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("opt_level", [2, 3])
def test_a_grouped_convolution_builds_and_stays_nchw(opt_level):
    x = graph.var("x", shape=(1, 12, 13, 13))
    y = graph.nn.relu(graph.nn.conv2d(x, _const(15, 4, 3, 3), strides=2, padding=1,
                                      groups=3))
    fn = graph.Function([x], y)
    with PassContext(opt_level=opt_level):
        lib = graph.build(graph.IRModule.from_expr(fn))
    assert [s["ops"] for s in lib.plan["steps"]] == [["nn.conv2d", "nn.relu"]]
    data = rng.standard_normal((1, 12, 13, 13)).astype("float32")
    got, = lib.run(x=data)
    np.testing.assert_allclose(got, evaluate(fn, data), rtol=1e-4, atol=1e-4)


def whole_vectors(units: int) -> int:
    """The widest panel of whole vectors of the host, at most 64 floats, that divides
    `units` and whose row of accumulators, with a vector of data and a broadcast, fits
    its registers: 64 on AVX-512 (4 + 4 + 1 of 32), 32 on AVX2 (64 would take 8 + 8 + 1
    of 16)."""
    t = Target.resolve()
    lanes = t.vector_lanes
    return max(w for w in range(lanes, 65, lanes)
               if units % w == 0 and 2 * (w // lanes) + 1 <= t.vector_registers)


@pytest.mark.parametrize("units, panel", [(1000, 40), (64, whole_vectors), (24, 24),
                                          (37, None)])
def test_a_dense_reads_its_weights_packed_in_panels_at_build_time(units, panel):
    """nn.dense with a constant weight becomes nn.contrib_dense_pack on the weight packed
    (units / panel, K, panel) when the build runs, scheduled by the dense_pack template;
    units no panel width divides (37) keep nn.dense and the dense template."""
    panel = panel(units) if callable(panel) else panel
    x = graph.var("x", shape=(3, 29))
    w = rng.standard_normal((units, 29)).astype("float32")
    b = rng.standard_normal(units).astype("float32")
    fn = graph.Function([x], graph.nn.relu(graph.nn.bias_add(
        graph.nn.dense(x, graph.const(w)), graph.const(b))))
    lib = build3(graph.IRModule.from_expr(fn))
    data = rng.standard_normal((3, 29)).astype("float32")
    got, = lib.run(x=data)
    np.testing.assert_allclose(got, np.maximum(data @ w.T + b, 0), rtol=1e-4, atol=1e-4)
    step, = lib.plan["steps"]
    if panel is None:
        assert step["ops"][0] == "nn.dense" and step["info"]["template"] == "dense"
        return
    assert step["ops"] == ["nn.contrib_dense_pack", "nn.bias_add", "nn.relu"]
    assert step["info"]["workload"] == f"dense_pack{(3, units, 29, panel)!r}"
    weight = next(v for v in lib.constants.values() if v.ndim == 3)
    assert weight.shape == (units // panel, 29, panel)
    p = weight.shape[0] - 1  # the last panel's third row: row p * panel + 2 of W
    np.testing.assert_array_equal(weight[p, :, 2], w[p * panel + 2])


@pytest.mark.parametrize("target", ["llvm", "llvm -mcpu=haswell"])
@pytest.mark.parametrize("c, size", [(32, 28), (24, 15)])
def test_a_residual_block_by_winograd_matches_onnx_runtime(c, size, target):
    """Its two 3x3 convolutions (14x14 and up) run by Winograd untuned, F(4x4) or F(2x2)
    as the target allows, with their batch norm, residual add and relu inlined; blocks of
    16 or 8 (24 channels); AVX2 code runs on an AVX-512 host too."""
    m = residual(c, size)
    x, want = input_and_expected(m)
    mod, params = from_onnx(m)
    with PassContext(opt_level=3):
        lib = graph.build(mod, params=params, target=target)
    got, = lib.run(x=x)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4 * float(np.abs(want).max()))
    templates = [s["info"]["template"] for s in lib.plan["steps"] if s["info"]["template"]]
    assert templates[:2] == ["conv2d_winograd_nchwc"] * 2


def test_the_winograd_weights_are_transformed_once_per_layer(monkeypatch):
    """The forms the decision weighs and the one AlterOpLayout applies share one
    transform of the weights; the model still matches the reference."""
    import compiler.graph.ir.op.conv2d as conv2d_op

    calls = []
    transform = conv2d_op.winograd_weight_transform
    monkeypatch.setattr(conv2d_op, "winograd_weight_transform",
                        lambda *a: calls.append(a[1:]) or transform(*a))
    x = graph.var("x", shape=(1, 16, 14, 14))
    w = graph.const(rng.standard_normal((32, 16, 3, 3)).astype("float32"))
    w2 = graph.const(rng.standard_normal((32, 32, 3, 3)).astype("float32"))
    y = graph.nn.conv2d(graph.nn.relu(graph.nn.conv2d(x, w, padding=1)), w2, padding=1)
    fn = graph.Function([x], y)
    with Target("llvm -mcpu=haswell"):
        lib = graph.build(graph.IRModule.from_expr(fn), "llvm -mcpu=haswell")
    assert len(calls) == 2  # one per layer, the forms weighed included
    data = rng.standard_normal((1, 16, 14, 14)).astype("float32")
    want = evaluate(fn, data)  # Winograd's float32 error grows with the values' scale
    np.testing.assert_allclose(lib.run(x=data)[0], want, rtol=1e-4,
                               atol=1e-5 * np.abs(want).max())
