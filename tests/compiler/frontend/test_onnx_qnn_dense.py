"""MatMulInteger of constant int8 weights (zero point 0) imports as qnn.dense and runs
on the int8 kernels, exactly equal to ONNX Runtime: uint8 and int8 data, 2-D and 3-D,
a constant zero point and one DynamicQuantizeLinear computes at run time (a dynamically
quantized BERT's projections), K and N that pack and that do not; weights with a zero
point stay on the generic path and still agree."""
from __future__ import annotations

import numpy as np
import pytest

ort = pytest.importorskip("onnxruntime")

from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from compiler import graph  # noqa: E402
from compiler.frontend import from_onnx  # noqa: E402


def _i(name, value, dtype):
    return numpy_helper.from_array(np.asarray(value, dtype), name)


def _run(model, feeds):
    want = ort.InferenceSession(model.SerializeToString(),
                                providers=["CPUExecutionProvider"]).run(None, feeds)[0]
    mod, params = from_onnx(model)
    return str(mod), graph.build(mod, params=params).run(**feeds)[0], want


@pytest.mark.parametrize("dtype,shape,n,zero", [
    ("uint8", (13, 64), 32, 7), ("int8", (2, 7, 36), 48, -3), ("uint8", (5, 30), 13, 0)])
def test_matmul_integer(dtype, shape, n, zero):
    rng = np.random.default_rng(n)
    k = shape[-1]
    elem = TensorProto.UINT8 if dtype == "uint8" else TensorProto.INT8
    inits = [_i("b", rng.integers(-128, 128, (k, n)), np.int8), _i("az", zero, dtype),
             _i("bz", 0, np.int8)]
    node = helper.make_node("MatMulInteger", ["a", "b", "az", "bz"], ["y"])
    g = helper.make_graph([node], "g", [helper.make_tensor_value_info("a", elem, shape)],
                          [helper.make_tensor_value_info("y", TensorProto.INT32, None)], inits)
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    low = 0 if dtype == "uint8" else -128
    text, got, want = _run(model, {"a": rng.integers(low, low + 256, shape).astype(dtype)})
    assert "qnn.dense" in text
    np.testing.assert_array_equal(got, want)


def test_dynamic_quantization_of_a_projection():
    """DynamicQuantizeLinear -> MatMulInteger (its zero point a run-time value) -> the
    float rescale, as quantize_dynamic writes a linear layer."""
    rng = np.random.default_rng(0)
    k, n = 64, 48
    w = rng.integers(-127, 128, (k, n)).astype(np.int8)
    inits = [_i("w", w, np.int8), _i("wz", 0, np.int8), _i("ws", 0.01, np.float32)]
    nodes = [helper.make_node("DynamicQuantizeLinear", ["x"], ["xq", "xs", "xz"]),
             helper.make_node("MatMulInteger", ["xq", "w", "xz", "wz"], ["acc"]),
             helper.make_node("Cast", ["acc"], ["accf"], to=TensorProto.FLOAT),
             helper.make_node("Mul", ["xs", "ws"], ["s"]),
             helper.make_node("Mul", ["accf", "s"], ["y"])]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info(
        "x", TensorProto.FLOAT, [1, 13, k])], [helper.make_tensor_value_info(
            "y", TensorProto.FLOAT, None)], inits)
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    x = rng.standard_normal((1, 13, k)).astype(np.float32)
    text, got, want = _run(model, {"x": x})
    assert "qnn.dense" in text
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_weights_with_a_zero_point_stay_generic():
    rng = np.random.default_rng(1)
    inits = [_i("b", rng.integers(-128, 128, (32, 16)), np.int8), _i("az", 3, np.uint8),
             _i("bz", 5, np.int8)]
    node = helper.make_node("MatMulInteger", ["a", "b", "az", "bz"], ["y"])
    g = helper.make_graph([node], "g", [helper.make_tensor_value_info(
        "a", TensorProto.UINT8, [7, 32])], [helper.make_tensor_value_info(
            "y", TensorProto.INT32, None)], inits)
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    text, got, want = _run(model, {"a": rng.integers(0, 256, (7, 32)).astype(np.uint8)})
    assert "qnn.dense" not in text
    np.testing.assert_array_equal(got, want)
