"""QuantizeLinear and DequantizeLinear (compiler/frontend/onnx_ops/quantize.py) against
ONNX Runtime, per tensor and per axis, every integer type they convert, odd shapes
(7, 13, 37), values that saturate; ties, NaN and infinities against the formula the
converter follows; and the refusals by name (blocked quantization, unsupported types,
scales of the wrong shape)."""
from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("onnxruntime")

from onnx_cases import In, check_against_ort, node, node_model  # noqa: E402

from compiler import graph  # noqa: E402
from compiler.errors import FrontendError  # noqa: E402
from compiler.frontend import from_onnx  # noqa: E402

F = np.float32
X = In(7, 13, 37)  # standard normal: by a scale of 0.02, up to about +-250, saturating
SCALES13 = np.linspace(0.005, 0.05, 13).astype(F)

QUANTIZE = [
    node(X, np.array(0.02, F), np.array(128, np.uint8)),
    node(X, np.array(0.02, F), np.array(-3, np.int8)),
    node(X, np.array(0.01, F)),  # no zero point: uint8, zero 0
    node(X, SCALES13, np.arange(13, dtype=np.int8) - 6, axis=1),
    node(X, np.linspace(0.01, 0.03, 37).astype(F), np.full(37, 7, np.uint8), axis=-1),
    node(X, np.array([0.0004], F), np.array([-100], np.int16)),  # a vector of one
    node(X, np.array(0.0001, F), np.array(30000, np.uint16)),
    node(X, In(13, positive=True), In(13, dtype="uint8", low=0, high=256), axis=1),
]
DEQUANTIZE = [
    node(In(7, 13, 37, dtype="uint8", low=0, high=256), np.array(0.02, F),
         np.array(128, np.uint8)),
    node(In(7, 13, 37, dtype="int8", low=-128, high=128), SCALES13,
         np.arange(13, dtype=np.int8) - 6, axis=1),
    node(In(7, 13, 37, dtype="int8", low=-128, high=128), np.array(0.5, F)),
    node(In(37, 13, dtype="int32", low=-(2 ** 30), high=2 ** 30), np.array(1e-6, F)),
    node(In(37, 13, dtype="int16", low=-32768, high=32768),
         np.linspace(1e-4, 1e-3, 37).astype(F), np.arange(37, dtype=np.int16), axis=0),
    node(In(7, 37, dtype="uint16", low=0, high=65536), np.array(0.001, F),
         np.array(40000, np.uint16)),
]


@pytest.mark.parametrize("k", range(len(QUANTIZE)))
def test_quantize_linear_matches_onnx_runtime(k):
    check_against_ort(*node_model("QuantizeLinear", [QUANTIZE[k]], opset=21))


@pytest.mark.parametrize("k", range(len(DEQUANTIZE)))
def test_dequantize_linear_matches_onnx_runtime(k):
    check_against_ort(*node_model("DequantizeLinear", [DEQUANTIZE[k]], opset=21))


def test_float16_quantize_and_dequantize_match_onnx_runtime():
    q = node(In(7, 37, dtype="float16"), np.array(0.03, np.float16), np.array(-5, np.int8))
    check_against_ort(*node_model("QuantizeLinear", [q], opset=19))
    d = node(In(7, 37, dtype="int8", low=-128, high=128), np.array(0.03, np.float16),
             np.array(-5, np.int8))
    check_against_ort(*node_model("DequantizeLinear", [d], opset=19))


def _built(model):
    mod, params = from_onnx(model)
    return graph.build(mod, params=params)


def _formula(x, scale, zero, low, high):
    """ONNX's formula, a NaN saturating to the least value (the module docstring)."""
    y = np.rint(x / scale).astype(np.float64) + zero
    return np.where(np.isnan(y), low, np.clip(y, low, high))


@pytest.mark.parametrize("dtype,zero", [("uint8", 3), ("int8", -2), ("int16", 11)])
def test_ties_round_to_even_and_nan_and_infinities_saturate(dtype, zero):
    scale = F(0.5)
    ties = np.arange(-300, 300, dtype=F) * F(0.5) + F(0.25)  # x / 0.5 = k + 0.5
    x = np.concatenate([ties, np.array([np.nan, np.inf, -np.inf, 1e30, -1e30], F)])
    model, _ = node_model("QuantizeLinear", [node(In(x.size), np.array(scale),
                                                  np.array(zero, dtype))], opset=21)
    got = _built(model).run(in0_0=x)[0]
    info = np.iinfo(dtype)
    want = _formula(x, scale, zero, info.min, info.max).astype(dtype)
    assert got.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(got, want)
    assert got[-5] == info.min and got[-4] == info.max and got[-3] == info.min


def test_round_matches_onnx_runtime_on_ties():
    model, _ = node_model("Round", [node(In(41))], opset=17)
    check_against_ort(model, {"in0_0": (np.arange(-20, 21, dtype=F) + F(0.5))})


@pytest.mark.parametrize("op_type,args,attrs,message", [
    ("QuantizeLinear", (X, np.full((7, 2), 0.1, F), np.zeros((7, 2), np.uint8)),
     {"axis": 0, "block_size": 7}, "blocked quantization"),
    ("DequantizeLinear", (In(7, 13, dtype="int8"), np.full((7, 2), 0.1, F)),
     {"axis": 1, "block_size": 7}, "blocked quantization"),
    ("QuantizeLinear", (X, np.array(0.1, F), np.array(0, np.int32)), {},
     "quantizing to int32 is not supported"),
    ("QuantizeLinear", (X, SCALES13[:7]), {"axis": 1}, "y_scale of shape"),
    ("DequantizeLinear", (In(7, 13, dtype="int8"), np.array(0.1, F), np.array(0, np.uint8)),
     {}, "x_zero_point's type uint8 differs from x's int8"),
])
def test_refused_by_name(op_type, args, attrs, message):
    model, _ = node_model(op_type, [node(*args, **attrs)], opset=21)
    with pytest.raises(FrontendError, match=message):
        _built(model)


def test_int32_dequantize_with_a_zero_point_rounds_once():
    """int32 less its zero point in float64, as numpy promotes (the module docstring)."""
    x = np.array([2 ** 30 + 1, -(2 ** 31), 2 ** 31 - 1, 16777217, -3, 0], np.int32)
    zero, scale = np.array(-7, np.int32), np.array(0.37, F)
    model, _ = node_model("DequantizeLinear", [node(In(x.size, dtype="int32"), scale, zero)],
                          opset=21)
    got = _built(model).run(in0_0=x)[0]
    want = ((x.astype(F) - zero) * scale).astype(F)
    assert got.dtype == np.float32
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("values", ["normal", "positive", "negative", "zeros"])
def test_dynamic_quantize_linear_matches_onnx_runtime(values):
    model, feeds = node_model("DynamicQuantizeLinear", [node(In(7, 13, 37), outputs=3)],
                              opset=11)
    x = feeds["in0_0"]
    feeds["in0_0"] = {"normal": x, "positive": np.abs(x) + F(0.5), "negative": -np.abs(x),
                      "zeros": np.zeros_like(x)}[values]
    lib = check_against_ort(model, feeds)
    _, scale, zero = lib.run(**feeds)
    assert scale.dtype == np.float32 and zero.dtype == np.uint8 and zero.shape == ()


def test_int32_input_quantizes_in_float64():
    """QuantizeLinear takes int32 (from opset 10): x / y_scale in float64, as numpy
    promotes int32 with float32, then ONNX's formula."""
    x = np.array([2 ** 30 + 1, -(2 ** 31), 16777217, 93, -94, 0, 1000], np.int32)
    scale, zero = F(0.37), np.array(-9, np.int16)
    model, _ = node_model("QuantizeLinear", [node(In(x.size, dtype="int32"),
                                                  np.array(scale), zero)], opset=21)
    got = _built(model).run(in0_0=x)[0]
    want = _formula(x / scale, 1.0, -9, -32768, 32767).astype(np.int16)
    np.testing.assert_array_equal(got, want)


U8 = dict(dtype="uint8", low=0, high=256)
S8 = dict(dtype="int8", low=-128, high=128)
MATMUL_INTEGER = [
    node(In(7, 13, **U8), In(13, 37, **U8), np.array(128, np.uint8), np.array(3, np.uint8)),
    node(In(7, 13, **S8), In(13, 37, **S8)),
    node(In(2, 7, 13, **U8), In(2, 13, 37, **S8), np.array(7, np.uint8),
         np.array(-2, np.int8)),
    node(In(7, 1000, **U8), np.random.default_rng(2).integers(-128, 128, (1000, 13))
         .astype(np.int8), np.array(5, np.uint8), np.arange(13, dtype=np.int8) - 6),
]


@pytest.mark.parametrize("k", range(len(MATMUL_INTEGER)))
def test_matmul_integer_matches_onnx_runtime(k):
    check_against_ort(*node_model("MatMulInteger", [MATMUL_INTEGER[k]], opset=10))


@pytest.mark.parametrize("dtype", ["uint8", "int8"])
def test_qlinear_matmul_follows_onnx_and_onnx_runtime(dtype):
    rng = np.random.default_rng(5)
    info = np.iinfo(dtype)
    a = rng.integers(info.min, info.max + 1, (7, 37)).astype(dtype)
    b = rng.integers(info.min, info.max + 1, (37, 13)).astype(dtype)
    consts = [np.array(0.02, F), np.array(3, dtype), np.array(0.015, F), np.array(-2, dtype)
              if dtype == "int8" else np.array(140, dtype), np.array(0.4, F),
              np.array(9, dtype)]
    model, _ = node_model("QLinearMatMul", [node(
        In(7, 37, dtype=dtype), consts[0], consts[1], In(37, 13, dtype=dtype), consts[2],
        consts[3], consts[4], consts[5])], opset=10)
    got = _built(model).run(in0_0=a, in0_3=b)[0]
    product = (a.astype(np.int32) - consts[1]) @ (b.astype(np.int32) - consts[3])
    want = np.clip(np.rint(product * (consts[0] * consts[2] / consts[4]) + consts[5]),
                   info.min, info.max).astype(dtype)
    np.testing.assert_array_equal(got, want)  # ONNX's reference formula
    import onnxruntime as ort
    theirs = ort.InferenceSession(model.SerializeToString(),
                                  providers=["CPUExecutionProvider"]).run(
        None, {"in0_0": a, "in0_3": b})[0]
    assert np.abs(got.astype(int) - theirs).max() <= 1  # ORT requantizes in float32
    assert len(np.unique(got)) > 20  # not saturated throughout


@pytest.mark.parametrize("op_type,args,message", [
    ("MatMulInteger", (In(7, 13, **U8), In(13, 37, **U8), np.arange(7, dtype=np.uint8)),
     "a_zero_point of shape"),
    ("MatMulInteger", (In(7, 13, dtype="int32"), In(13, 37, **U8)), "a of int32"),
    ("QLinearMatMul", (In(7, 13, **U8), np.full(7, 0.1, F), np.array(0, np.uint8),
                       In(13, 37, **U8), np.array(0.1, F), np.array(0, np.uint8),
                       np.array(0.1, F), np.array(0, np.uint8)), "a_scale of shape"),
])
def test_integer_matmuls_refuse_by_name(op_type, args, message):
    model, _ = node_model(op_type, [node(*args)], opset=10)
    with pytest.raises(FrontendError, match=message):
        _built(model)


def _reference(model, feeds):
    from onnx.reference import ReferenceEvaluator
    return ReferenceEvaluator(model).run(None, feeds)


W16 = np.random.default_rng(7).integers(0, 256, (16, 3, 3, 3)).astype(np.uint8)
CONV_INTEGER = [
    node(In(1, 3, 13, 13, **U8), W16, np.array(100, np.uint8), np.array(120, np.uint8),
         pads=[1, 1, 1, 1]),
    node(In(2, 3, 13, 7, **U8), W16, None, np.arange(16, dtype=np.uint8) + 100,
         strides=[2, 2], pads=[0, 1, 2, 1]),
    node(In(1, 4, 13, 13, **U8), np.random.default_rng(8).integers(0, 256, (8, 2, 3, 3))
         .astype(np.uint8), np.array(3, np.uint8), group=2, dilations=[2, 2]),
]


@pytest.mark.parametrize("k", range(len(CONV_INTEGER)))
def test_conv_integer_matches_onnx_and_onnx_runtime(k):
    model, feeds = node_model("ConvInteger", [CONV_INTEGER[k]], opset=10)
    got = _built(model).run(**feeds)[0]
    want = _reference(model, feeds)[0]
    assert got.dtype == np.int32
    np.testing.assert_array_equal(got, want)
    if k == 0:  # ONNX Runtime's kernel takes scalar zero points only
        check_against_ort(model, feeds)


@pytest.mark.parametrize("activations", ["uint8", "int8"])
def test_qlinear_conv_follows_onnx_and_onnx_runtime(activations):
    rng = np.random.default_rng(9)
    info = np.iinfo(activations)
    w = rng.integers(-128, 128, (16, 8, 3, 3)).astype(np.int8)
    zero = np.array(130 if activations == "uint8" else -3, activations)
    args = (In(1, 8, 13, 13, dtype=activations, low=info.min, high=info.max + 1),
            np.array(0.05, F), zero, w, np.linspace(0.002, 0.01, 16).astype(F),
            np.zeros(16, np.int8), np.array(0.8, F), np.array(7, activations),
            rng.integers(-2000, 2000, 16).astype(np.int32))
    model, feeds = node_model("QLinearConv", [node(*args, pads=[1, 1, 1, 1],
                                                   strides=[2, 1])], opset=10)
    got = _built(model).run(**feeds)[0]
    np.testing.assert_array_equal(got, _reference(model, feeds)[0])
    import onnxruntime as ort
    theirs = ort.InferenceSession(model.SerializeToString(),
                                  providers=["CPUExecutionProvider"]).run(None, feeds)[0]
    assert np.abs(got.astype(int) - theirs).max() <= 1  # ORT requantizes in float32
    assert len(np.unique(got)) > 20


@pytest.mark.parametrize("dtype", ["uint8", "int8"])
def test_qlinear_matmul_of_constant_int8_weights_runs_on_the_int8_dense(dtype):
    """Constant int8 b of zero point 0 (what ONNX Runtime's quantizer writes): the
    product is a qnn.dense, the same integers; batched a, a zero point, 37 columns."""
    rng = np.random.default_rng(6)
    info = np.iinfo(dtype)
    a = rng.integers(info.min, info.max + 1, (2, 7, 40)).astype(dtype)
    b = rng.integers(-128, 128, (40, 37)).astype(np.int8)
    consts = [np.array(0.02, F), np.array(5, dtype), None, None,
              np.array(0.015, F), np.array(0, np.int8), np.array(0.3, F), np.array(9, dtype)]
    model, _ = node_model("QLinearMatMul", [node(
        In(2, 7, 40, dtype=dtype), consts[0], consts[1], b, consts[4], consts[5], consts[6],
        consts[7])], opset=10)
    assert "qnn.dense" in str(from_onnx(model)[0])
    got = _built(model).run(in0_0=a)[0]
    product = (a.astype(np.int32) - consts[1]) @ b.astype(np.int32)
    want = np.clip(np.rint(product * (consts[0] * consts[4] / consts[6]) + consts[7]),
                   info.min, info.max).astype(dtype)
    np.testing.assert_array_equal(got, want)  # ONNX's reference formula
    assert len(np.unique(got)) > 20
