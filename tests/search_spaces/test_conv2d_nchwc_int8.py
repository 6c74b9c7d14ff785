"""The int8 packed convolution templates (ordinary and depthwise): their fallback and
seeded random configs exact against their numpy references (odd shapes, strides, a
zero point), on the host and on haswell's code where this host runs it; and task
extraction finds them in a quantized model (QLinearConvs), where the build's chooser
takes them."""
from __future__ import annotations

import numpy as np
import pytest

import compiler
import search_spaces
from compiler.runtime.cpu_features import required_features
from compiler.target import Target

CASES = [(1, 16, 9, 11, 32, 3, 3, 1, 1, 8, 16, 3), (1, 8, 13, 13, 16, 1, 1, 2, 0, 8, 8, 0),
         (2, 32, 7, 7, 16, 3, 3, 2, 1, 16, 16, 200)]


def runs_here(target: str) -> bool:
    return set(required_features(Target(target))) <= set(required_features(Target("llvm")))


@pytest.mark.parametrize("target", ["llvm", "llvm -mcpu=haswell"])
@pytest.mark.parametrize("args", CASES, ids=[str(a) for a in CASES])
def test_fallback_and_random_configs_are_exact(args, target):
    if not runs_here(target):
        pytest.skip(f"this host lacks features of {target}")
    tmpl = search_spaces.get_template("conv2d_nchwc_int8")
    space = search_spaces.space("conv2d_nchwc_int8", *args, target=target)
    rng = np.random.default_rng(sum(args))
    for config in [space.fallback(), *space.sample(3, seed=7)]:
        s, tensors = search_spaces.instantiate("conv2d_nchwc_int8", *args, config=config,
                                               target=target)
        f = compiler.build(s, tensors, target=target)
        data = rng.integers(0, 256, [int(d) for d in tensors[0].shape]).astype(np.uint8)
        words = rng.integers(-2**31, 2**31, [int(d) for d in tensors[1].shape],
                             dtype=np.int64).astype(np.int32)
        out = np.zeros([int(d) for d in tensors[2].shape], np.int32)
        f(data, words, out)
        want = tmpl.reference([data, words], *args)
        np.testing.assert_array_equal(out, want, err_msg=str(config))


DEPTHWISE = [(1, 16, 9, 11, 3, 3, 1, 1, 8, 3), (1, 32, 13, 13, 3, 3, 2, 1, 16, 200),
             (2, 16, 7, 37, 5, 5, 1, 2, 16, 0)]


@pytest.mark.parametrize("target", ["llvm", "llvm -mcpu=haswell"])
@pytest.mark.parametrize("args", DEPTHWISE, ids=[str(a) for a in DEPTHWISE])
def test_depthwise_fallback_and_random_configs_are_exact(args, target):
    """The depthwise int8 template sums in float32: exact for every byte and weight."""
    if not runs_here(target):
        pytest.skip(f"this host lacks features of {target}")
    tmpl = search_spaces.get_template("depthwise_conv2d_nchwc_int8")
    space = search_spaces.space("depthwise_conv2d_nchwc_int8", *args, target=target)
    rng = np.random.default_rng(sum(args))
    for config in [space.fallback(), *space.sample(3, seed=7)]:
        s, tensors = search_spaces.instantiate("depthwise_conv2d_nchwc_int8", *args,
                                               config=config, target=target)
        f = compiler.build(s, tensors, target=target)
        data = rng.integers(0, 256, [int(d) for d in tensors[0].shape]).astype(np.uint8)
        weights = rng.integers(-128, 128, [int(d) for d in tensors[1].shape]).astype(np.int8)
        out = np.zeros([int(d) for d in tensors[2].shape], np.float32)
        f(data, weights, out)
        np.testing.assert_array_equal(out, tmpl.reference([data, weights], *args),
                                      err_msg=str(config))


def test_task_extraction_finds_the_int8_convolutions():
    onnx = pytest.importorskip("onnx")
    import tuner
    from compiler.frontend import from_onnx
    from onnx import TensorProto, helper, numpy_helper
    rng = np.random.default_rng(0)

    def init(name, value, dtype):
        return numpy_helper.from_array(np.asarray(value, dtype), name)
    inits = [init("xs", 0.02, np.float32), init("xz", 7, np.uint8),
             init("w", rng.integers(-128, 128, (32, 16, 3, 3)), np.int8),
             init("dw", rng.integers(-128, 128, (32, 1, 3, 3)), np.int8),
             init("ws", 0.004, np.float32), init("wz", 0, np.int8),
             init("ys", 0.5, np.float32), init("yz", 3, np.uint8)]
    nodes = [helper.make_node("QLinearConv", ["x", "xs", "xz", "w", "ws", "wz", "ys", "yz"],
                              ["c"], pads=[1] * 4),
             helper.make_node("QLinearConv", ["c", "ys", "yz", "dw", "ws", "wz", "ys", "yz"],
                              ["y"], pads=[1] * 4, strides=[2, 2], group=32)]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info(
        "x", TensorProto.UINT8, [1, 16, 14, 14])], [helper.make_tensor_value_info(
            "y", TensorProto.UINT8, None)], inits)
    mod, params = from_onnx(helper.make_model(g, opset_imports=[onnx.helper.make_opsetid(
        "", 17)]))
    tasks, weights = tuner.extract_tasks(mod, params, target="llvm")
    lanes = Target("llvm").vector_lanes
    assert [(t.name, t.args) for t in tasks] == \
        [("conv2d_nchwc_int8", (1, 16, 14, 14, 32, 3, 3, 1, 1, 16, lanes, 7)),
         ("depthwise_conv2d_nchwc_int8", (1, 32, 14, 14, 3, 3, 2, 1, lanes, 3))]
    assert weights == [1, 1] and [t.unit for t in tasks] == ["GOPS", "GOPS"]
