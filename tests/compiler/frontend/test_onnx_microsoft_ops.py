"""The com.microsoft operators of ONNX Runtime's QOperator files (QLinearAdd, QLinearMul,
QLinearSigmoid, QLinearLeakyRelu, QLinearGlobalAveragePool, QLinearConcat, QGemm; and
MatMulIntegerToFloat and DynamicQuantizeMatMul of dynamic quantization) import
by domain and op type and agree with ONNX Runtime within one quantization step (it runs
them on its own integer kernels, we on float ones between dequantize and quantize); a
com.microsoft op we lack and an unknown domain are refused by name."""
from __future__ import annotations

import numpy as np
import pytest

ort = pytest.importorskip("onnxruntime")

from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from compiler import graph  # noqa: E402
from compiler.errors import FrontendError  # noqa: E402
from compiler.frontend import from_onnx  # noqa: E402

MS = "com.microsoft"


def _i(name, value, dtype):
    return numpy_helper.from_array(np.asarray(value, dtype), name)


def _model(nodes, inputs, output_type, inits):
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info(n, t, s)
                                       for n, t, s in inputs],
                          [helper.make_tensor_value_info("y", output_type, None)], inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17),
                                               helper.make_opsetid(MS, 1)])


def _agree(model, feeds, step):
    want = ort.InferenceSession(model.SerializeToString(),
                                providers=["CPUExecutionProvider"]).run(None, feeds)[0]
    mod, params = from_onnx(model)
    got = graph.build(mod, params=params).run(**feeds)[0]
    assert got.dtype == want.dtype and got.shape == want.shape
    steps = np.abs(got.astype(np.float64) - want.astype(np.float64)) / step
    assert steps.max() <= 1 + 1e-6, f"{steps.max()} steps apart"
    return got


QUANT = [_i("as", 0.05, np.float32), _i("az", 120, np.uint8), _i("bs", 0.03, np.float32),
         _i("bz", 130, np.uint8), _i("cs", 0.07, np.float32), _i("cz", 125, np.uint8)]


def _u8(rng, shape):
    return rng.integers(0, 256, shape).astype(np.uint8)


@pytest.mark.parametrize("op", ["QLinearAdd", "QLinearMul"])
def test_binary(op):
    rng = np.random.default_rng(0)
    node = helper.make_node(op, ["a", "as", "az", "b", "bs", "bz", "cs", "cz"], ["y"],
                            domain=MS)
    model = _model([node], [("a", TensorProto.UINT8, [1, 16, 7, 13]),
                            ("b", TensorProto.UINT8, [1, 16, 1, 13])], TensorProto.UINT8, QUANT)
    _agree(model, {"a": _u8(rng, (1, 16, 7, 13)), "b": _u8(rng, (1, 16, 1, 13))}, 1)


@pytest.mark.parametrize("op,attrs", [("QLinearSigmoid", {}),
                                      ("QLinearLeakyRelu", {"alpha": 0.2}),
                                      ("QLinearGlobalAveragePool", {"channels_last": 0})])
def test_unary(op, attrs):
    rng = np.random.default_rng(1)
    node = helper.make_node(op, ["a", "as", "az", "cs", "cz"], ["y"], domain=MS, **attrs)
    model = _model([node], [("a", TensorProto.UINT8, [1, 37, 7, 7])], TensorProto.UINT8, QUANT)
    _agree(model, {"a": _u8(rng, (1, 37, 7, 7))}, 1)


def test_concat():
    rng = np.random.default_rng(2)
    node = helper.make_node("QLinearConcat", ["cs", "cz", "a", "as", "az", "b", "bs", "bz"],
                            ["y"], domain=MS, axis=1)
    model = _model([node], [("a", TensorProto.UINT8, [1, 3, 7, 7]),
                            ("b", TensorProto.UINT8, [1, 5, 7, 7])], TensorProto.UINT8, QUANT)
    _agree(model, {"a": _u8(rng, (1, 3, 7, 7)), "b": _u8(rng, (1, 5, 7, 7))}, 1)


@pytest.mark.parametrize("quantized_output", [True, False])
def test_qgemm(quantized_output):
    rng = np.random.default_rng(3)
    n, k = 13, 37
    inits = [_i("as", 0.05, np.float32), _i("az", 120, np.uint8),
             _i("b", rng.integers(-127, 128, (n, k)), np.int8),
             _i("bs", rng.uniform(0.001, 0.01, n), np.float32), _i("bz", np.zeros(n), np.int8),
             _i("c", rng.integers(-1000, 1000, n), np.int32)]
    inputs = ["a", "as", "az", "b", "bs", "bz", "c"]
    if quantized_output:
        inits += [_i("ys", 0.2, np.float32), _i("yz", 100, np.uint8)]
        inputs += ["ys", "yz"]
    node = helper.make_node("QGemm", inputs, ["y"], domain=MS, transB=1, alpha=1.0)
    out = TensorProto.UINT8 if quantized_output else TensorProto.FLOAT
    model = _model([node], [("a", TensorProto.UINT8, [2, k])], out, inits)
    got = _agree(model, {"a": _u8(rng, (2, k))}, 1 if quantized_output else 1e-4)
    assert got.shape == (2, n)


def test_a_microsoft_op_we_lack_and_an_unknown_domain_are_refused_by_name():
    node = helper.make_node("QLinearSoftmax", ["a", "as", "az", "cs", "cz"], ["y"], domain=MS)
    model = _model([node], [("a", TensorProto.UINT8, [1, 8])], TensorProto.UINT8, QUANT)
    with pytest.raises(FrontendError, match="op type QLinearSoftmax of domain com.microsoft "
                                            "is not supported; the supported ones are "
                                            "DynamicQuantizeMatMul, MatMulIntegerToFloat, "
                                            "QGemm"):
        from_onnx(model)
    node = helper.make_node("Foo", ["a"], ["y"], domain="org.example")
    model = _model([node], [("a", TensorProto.UINT8, [1, 8])], TensorProto.UINT8, [])
    with pytest.raises(FrontendError, match="domain 'org.example' is not supported "
                                            r"\(supported: ONNX's default domain, com.microsoft"):
        from_onnx(model)


@pytest.mark.parametrize("weights,per_column,bias", [
    ("int8", False, True), ("int8", True, False), ("uint8", True, True)])
def test_matmul_integer_to_float_and_dynamic_quantize_matmul(weights, per_column, bias):
    """The float results of the two dynamic-quantization operators agree with ONNX
    Runtime to float32 rounding: int8 weights of zero point 0 (on qnn.dense) and uint8
    ones with a zero point per column (the int32 matmul), a bias or none."""
    rng = np.random.default_rng(11)
    b = rng.integers(-128, 128, (40, 37)) if weights == "int8" else \
        rng.integers(0, 256, (40, 37))
    scale = rng.uniform(0.001, 0.01, 37) if per_column else np.array(0.004)
    zero = np.zeros(scale.shape) if weights == "int8" else rng.integers(100, 150, scale.shape)
    inits = [_i("b", b, weights), _i("bs", scale, np.float32), _i("bz", zero, weights),
             _i("as", 0.02, np.float32), _i("az", 7, np.uint8)]
    tail = ["bias"] if bias else []
    if bias:
        inits.append(_i("bias", rng.standard_normal(37), np.float32))
    a8 = rng.integers(0, 256, (2, 7, 40)).astype(np.uint8)
    a = rng.standard_normal((2, 7, 40)).astype(np.float32)
    for op, inputs, feeds, kind in [
            ("MatMulIntegerToFloat", ["a", "b", "as", "bs", "az", "bz", *tail], {"a": a8},
             TensorProto.UINT8),
            ("DynamicQuantizeMatMul", ["a", "b", "bs", "bz", *tail], {"a": a},
             TensorProto.FLOAT)]:
        node = helper.make_node(op, inputs, ["y"], domain=MS)
        model = _model([node], [("a", kind, [2, 7, 40])], TensorProto.FLOAT, inits)
        want = ort.InferenceSession(model.SerializeToString(),
                                    providers=["CPUExecutionProvider"]).run(None, feeds)[0]
        mod, params = from_onnx(model)
        if weights == "int8":
            assert "qnn.dense" in str(mod)
        got = graph.build(mod, params=params).run(**feeds)[0]
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5 * np.abs(want).max(),
                                   err_msg=op)
