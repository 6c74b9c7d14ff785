"""Quantized convolutions on the int8 kernels: QLinearConv, and a QDQ Conv fused into
one (frontend/qdq_fusion.py), import as qnn.conv2d, build with the CPU's int8 dot
product and agree with ONNX Runtime exactly (the same int32 sums, requantized as its
MLAS kernels do), for uint8 and int8 data, odd channel counts (an image's 3 and 7,
padded to words of 4; 13 output channels, which stay unpacked), strides, padding and
1x1 / 7x7 windows; groups that do not fuse stay as they are and still agree."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

ort = pytest.importorskip("onnxruntime")

from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from compiler import graph  # noqa: E402
from compiler.frontend import from_onnx  # noqa: E402
from compiler.frontend.qdq_fusion import QuantizedInFloatWarning, fuse_qdq  # noqa: E402
from compiler.target import Target  # noqa: E402

ONNX_TYPE = {"uint8": TensorProto.UINT8, "int8": TensorProto.INT8}


def _init(name, value, dtype=None):
    return numpy_helper.from_array(np.asarray(value, dtype), name)


def _qlinear_conv(dtype, c, o, hw, k, stride, pad, seed):
    rng = np.random.default_rng(seed)
    low = 0 if dtype == "uint8" else -128
    inits = [_init("xs", 0.02, np.float32), _init("xz", low + 7, dtype),
             _init("w", rng.integers(-128, 128, (o, c, k, k)), np.int8),
             _init("ws", rng.uniform(0.001, 0.01, o), np.float32),
             _init("wz", np.zeros(o), np.int8), _init("ys", 0.5, np.float32),
             _init("yz", low + 3, dtype), _init("b", rng.integers(-2000, 2000, o), np.int32)]
    node = helper.make_node("QLinearConv", ["x", "xs", "xz", "w", "ws", "wz", "ys", "yz", "b"],
                            ["y"], pads=[pad] * 4, strides=[stride, stride])
    g = helper.make_graph([node], "g", [helper.make_tensor_value_info(
        "x", ONNX_TYPE[dtype], [1, c, hw, hw])], [helper.make_tensor_value_info(
            "y", ONNX_TYPE[dtype], None)], inits)
    x = rng.integers(low, low + 256, (1, c, hw, hw)).astype(dtype)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), x


def _run_both(model, x, target="llvm"):
    want = ort.InferenceSession(model.SerializeToString(),
                                providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    mod, params = from_onnx(model)
    lib = graph.build(mod, target=target, params=params)
    return lib, lib.run(x=x)[0], want


@pytest.mark.parametrize("dtype,c,o,hw,k,stride,pad", [
    ("uint8", 16, 32, 14, 3, 1, 1), ("int8", 32, 16, 13, 3, 2, 1),
    ("uint8", 3, 16, 37, 7, 2, 3), ("int8", 64, 48, 7, 1, 1, 0), ("uint8", 7, 13, 13, 3, 1, 1)])
def test_qlinear_conv_is_exact_against_onnx_runtime(dtype, c, o, hw, k, stride, pad):
    model, x = _qlinear_conv(dtype, c, o, hw, k, stride, pad, seed=c + o)
    mod, _ = from_onnx(model)
    assert "qnn.conv2d" in str(mod)
    lib, got, want = _run_both(model, x)
    np.testing.assert_array_equal(got, want)
    kind = Target("llvm").int8_dot
    if o % 16 == 0 and kind in ("avx512vnni", "avx512bw", "avx2"):
        asm = lib.lib.get_source("asm")
        assert ("vpdpbusd" if kind == "avx512vnni" else "vpmaddubsw") in asm


def test_qlinear_conv_for_haswell_where_this_host_runs_it():
    if Target("llvm").vector_bits < 256 or not Target("llvm").has_fma:
        pytest.skip("this host does not run AVX2 code")
    model, x = _qlinear_conv("int8", 32, 16, 13, 3, 1, 1, seed=5)
    lib, got, want = _run_both(model, x, target="llvm -mcpu=haswell")
    np.testing.assert_array_equal(got, want)
    assert "vpmaddubsw" in lib.lib.get_source("asm")


def _qdq_conv(float_bias: bool = False, conv_is_output: bool = False, seed=0):
    """x -> QuantizeLinear -> DequantizeLinear -> Conv(DequantizeLinear(w), bias) ->
    QuantizeLinear -> DequantizeLinear -> y, per-channel int8 weights, uint8 data."""
    rng = np.random.default_rng(seed)
    o, c = 16, 8
    ws = rng.uniform(0.001, 0.01, o).astype(np.float32)
    inits = [_init("xs", 0.02, np.float32), _init("xz", 128, np.uint8),
             _init("wq", rng.integers(-127, 128, (o, c, 3, 3)), np.int8), _init("ws", ws),
             _init("wz", np.zeros(o), np.int8), _init("ys", 0.05, np.float32),
             _init("yz", 10, np.uint8)]
    nodes = [helper.make_node("QuantizeLinear", ["x", "xs", "xz"], ["xq"]),
             helper.make_node("DequantizeLinear", ["xq", "xs", "xz"], ["xd"]),
             helper.make_node("DequantizeLinear", ["wq", "ws", "wz"], ["wd"], axis=0)]
    if float_bias:
        inits.append(_init("b", rng.standard_normal(o), np.float32))
    else:
        inits += [_init("bq", rng.integers(-500, 500, o), np.int32),
                  _init("bs", (np.float32(0.02) * ws).astype(np.float32)),
                  _init("bz", np.zeros(o), np.int32)]
        nodes.append(helper.make_node("DequantizeLinear", ["bq", "bs", "bz"], ["b"], axis=0))
    nodes += [helper.make_node("Conv", ["xd", "wd", "b"], ["c"], pads=[1, 1, 1, 1]),
              helper.make_node("QuantizeLinear", ["c", "ys", "yz"], ["cq"]),
              helper.make_node("DequantizeLinear", ["cq", "ys", "yz"], ["y"])]
    outputs = [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)]
    if conv_is_output:
        outputs.append(helper.make_tensor_value_info("c", TensorProto.FLOAT, None))
    g = helper.make_graph(nodes, "qdq", [helper.make_tensor_value_info(
        "x", TensorProto.FLOAT, [1, c, 13, 13])], outputs, inits)
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    return model, rng.standard_normal((1, c, 13, 13)).astype(np.float32)


def _fused_ops(model):
    arrays = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    return [n.op_type for n in fuse_qdq(model.graph.node, arrays,
                                        {o.name for o in model.graph.output})]


def test_a_qdq_conv_fuses_into_qlinear_conv_and_agrees():
    model, x = _qdq_conv()
    assert _fused_ops(model) == ["QuantizeLinear", "QLinearConv", "DequantizeLinear"]
    _, got, want = _run_both(model, x)
    steps = np.abs(got.astype(np.float64) - want) / 0.05
    assert steps.max() <= 1e-6  # ONNX Runtime fuses the group the same way


@pytest.mark.parametrize("case", ["float_bias", "conv_is_output"])
def test_a_group_that_is_no_qlinear_conv_stays(case):
    model, x = _qdq_conv(**{case: True})
    assert "QLinearConv" not in _fused_ops(model)
    _, got, want = _run_both(model, x)
    steps = np.abs(got.astype(np.float64) - want) / 0.05
    assert steps.max() <= 1 + 1e-6


@pytest.mark.parametrize("group,c,weight_type", [(4, 32, "int8"), (1, 64, "uint8")])
def test_convolutions_that_are_no_qnn_conv_are_exact(group, c, weight_type):
    """A grouped QLinearConv (4 groups of 8 channels, 72 terms an output: summed in
    float32, exactly) and a ConvInteger of uint8 weights over 64 channels (576 terms: in
    int32)."""
    rng = np.random.default_rng(group + c)
    o, low = c, 0
    w = rng.integers(-128, 128, (o, c // group, 3, 3)) if weight_type == "int8" else \
        rng.integers(0, 256, (o, c // group, 3, 3))
    inits = [_init("w", w, weight_type), _init("xz", 9, np.uint8),
             _init("wz", 0 if weight_type == "int8" else 100, weight_type)]
    if group == 1:
        node = helper.make_node("ConvInteger", ["x", "w", "xz", "wz"], ["y"], pads=[1] * 4)
        out = TensorProto.INT32
    else:
        inits += [_init("xs", 0.02, np.float32), _init("ws", 0.004, np.float32),
                  _init("ys", 0.3, np.float32), _init("yz", 5, np.uint8)]
        node = helper.make_node("QLinearConv", ["x", "xs", "xz", "w", "ws", "wz", "ys", "yz"],
                                ["y"], pads=[1] * 4, group=group)
        out = TensorProto.UINT8
    g = helper.make_graph([node], "g", [helper.make_tensor_value_info(
        "x", TensorProto.UINT8, [1, c, 13, 13])], [helper.make_tensor_value_info(
            "y", out, None)], inits)
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    x = rng.integers(low, 256, (1, c, 13, 13)).astype(np.uint8)
    how = "float32" if group > 1 else "int32"
    with pytest.warns(QuantizedInFloatWarning, match=f"group {group}, in {how}"):
        _, got, want = _run_both(model, x)  # the import names it
    np.testing.assert_array_equal(got, want)


def _depthwise(dtype, c, hw, k, stride, pad, seed):
    """A depthwise QLinearConv (group = channels), per-channel weight scales, a bias."""
    model, x = _qlinear_conv(dtype, c, c, hw, k, stride, pad, seed)
    rng = np.random.default_rng(seed)
    w = [i for i in model.graph.initializer if i.name == "w"][0]
    w.CopyFrom(_init("w", rng.integers(-128, 128, (c, 1, k, k)), np.int8))
    model.graph.node[0].attribute.append(helper.make_attribute("group", c))
    return model, x


@pytest.mark.parametrize("dtype,c,hw,k,stride,pad", [
    ("uint8", 32, 13, 3, 1, 1), ("int8", 48, 37, 3, 2, 1), ("uint8", 16, 7, 5, 1, 2),
    ("int8", 7, 13, 3, 1, 1)])
def test_a_depthwise_qlinear_conv_is_exact_on_its_int8_kernel(dtype, c, hw, k, stride, pad):
    """A depthwise QLinearConv is a qnn.conv2d of one group per channel: packed where its
    channels fill the target's blocks (7 stay NCHW), its bytes read as they are and
    summed exactly in float32; no warning, and equal to ONNX Runtime."""
    model, x = _depthwise(dtype, c, hw, k, stride, pad, seed=c + k)
    with warnings.catch_warnings():
        warnings.simplefilter("error", QuantizedInFloatWarning)
        lib, got, want = _run_both(model, x)
    np.testing.assert_array_equal(got, want)
    templates = [(s.get("info") or {}).get("template") for s in lib.plan["steps"]
                 if "qnn.conv2d" in s["ops"]]
    assert templates == (["depthwise_conv2d_nchwc_int8"] if c % 16 == 0 else [None])


def test_a_depthwise_qlinear_conv_for_haswell_where_this_host_runs_it():
    if Target("llvm").vector_bits < 256 or not Target("llvm").has_fma:
        pytest.skip("this host does not run AVX2 code")
    model, x = _depthwise("int8", 24, 13, 3, 2, 1, seed=3)
    _, got, want = _run_both(model, x, target="llvm -mcpu=haswell")
    np.testing.assert_array_equal(got, want)


def _qdq_max_pool(dtype, same_scale):
    """x -> QuantizeLinear -> DequantizeLinear -> MaxPool (3x3 stride 2, padded, ceil
    mode) -> QuantizeLinear (the same scale and zero point, or another scale) ->
    DequantizeLinear -> y."""
    low = 0 if dtype == "uint8" else -128
    inits = [_init("s", 0.05, np.float32), _init("z", low + 100, dtype),
             _init("ys", 0.05 if same_scale else 0.07, np.float32)]
    nodes = [helper.make_node("QuantizeLinear", ["x", "s", "z"], ["xq"]),
             helper.make_node("DequantizeLinear", ["xq", "s", "z"], ["xd"]),
             helper.make_node("MaxPool", ["xd"], ["p"], kernel_shape=[3, 3], strides=[2, 2],
                              pads=[1, 1, 1, 1], ceil_mode=1),
             helper.make_node("QuantizeLinear", ["p", "ys", "z"], ["pq"]),
             helper.make_node("DequantizeLinear", ["pq", "ys", "z"], ["y"])]
    g = helper.make_graph(nodes, "qdq_pool", [helper.make_tensor_value_info(
        "x", TensorProto.FLOAT, [1, 16, 13, 13])], [helper.make_tensor_value_info(
            "y", TensorProto.FLOAT, None)], inits)
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    return model, np.random.default_rng(3).standard_normal((1, 16, 13, 13)).astype(np.float32)


@pytest.mark.parametrize("dtype", ["uint8", "int8"])
@pytest.mark.parametrize("same_scale", [True, False])
def test_a_max_pool_between_the_same_quantization_pools_the_quantized_values(dtype,
                                                                             same_scale):
    model, x = _qdq_max_pool(dtype, same_scale)
    fused = _fused_ops(model)
    assert (fused == ["QuantizeLinear", "MaxPool", "DequantizeLinear"]) == same_scale
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        _, got, want = _run_both(model, x)
    named = [str(w.message) for w in said if w.category is QuantizedInFloatWarning]
    assert bool(named) != same_scale  # the pool in float32 is named
    assert same_scale or 'MaxPool "' in named[0]
    np.testing.assert_array_equal(got, want)  # max and the round trip are exact


def test_a_residual_sum_of_two_quantized_convolutions_keeps_both_in_8_bits():
    """Two QLinearConvs of one input, each dequantized into an Add that is quantized:
    the Add fuses into one convolution's kernel and the other convolution's result
    reaches it as uint8, not as the float of its DequantizeLinear
    (graph/passes/fuse_ops.py); the sum agrees with ONNX Runtime within one step."""
    rng = np.random.default_rng(7)
    inits = [_init("xs", 0.02, np.float32), _init("xz", 7, np.uint8),
             _init("ys", 0.1, np.float32), _init("yz", 128, np.uint8),
             _init("ss", 0.15, np.float32), _init("sz", 100, np.uint8)]
    nodes = []
    for name, k in (("a", 3), ("b", 1)):
        inits += [_init(f"w{name}", rng.integers(-128, 128, (32, 16, k, k)), np.int8),
                  _init(f"w{name}s", rng.uniform(0.001, 0.01, 32), np.float32),
                  _init(f"w{name}z", np.zeros(32), np.int8)]
        nodes += [helper.make_node("QLinearConv", ["x", "xs", "xz", f"w{name}", f"w{name}s",
                                                   f"w{name}z", "ys", "yz"], [f"{name}q"],
                                   pads=[k // 2] * 4),
                  helper.make_node("DequantizeLinear", [f"{name}q", "ys", "yz"], [f"{name}d"])]
    nodes += [helper.make_node("Add", ["ad", "bd"], ["s"]),
              helper.make_node("QuantizeLinear", ["s", "ss", "sz"], ["y"])]
    g = helper.make_graph(nodes, "residual", [helper.make_tensor_value_info(
        "x", TensorProto.UINT8, [1, 16, 14, 14])], [helper.make_tensor_value_info(
            "y", TensorProto.UINT8, None)], inits)
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    x = rng.integers(0, 256, (1, 16, 14, 14)).astype(np.uint8)
    lib, got, want = _run_both(model, x)
    convs = [s for s in lib.plan["steps"] if "qnn.conv2d" in s["ops"]]
    assert len(convs) == 2 and [s["dtype"] for s in convs] == ["uint8", "uint8"]
    assert sum("subtract" in s["ops"] for s in convs) == 1  # the sum of the dequantized
    assert np.abs(got.astype(int) - want.astype(int)).max() <= 1
