"""Models quantized by ONNX Runtime's own tool (quantize_static, QDQ format, per-channel
int8 weights; int8 and uint8 activations) import, build and agree with ONNX Runtime's
int8 run of the same file within one step of the output's scale (issue 45's measure:
ours runs the quantized operators between their QuantizeLinear / DequantizeLinear in
float32, ONNX Runtime accumulates in int32, so a value that lands near a rounding tie
may fall one step apart)."""
from __future__ import annotations

import numpy as np
import pytest

ort = pytest.importorskip("onnxruntime")
quantization = pytest.importorskip("onnxruntime.quantization")

import onnx  # noqa: E402
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from compiler import graph  # noqa: E402
from compiler.frontend import from_onnx  # noqa: E402

SHAPE = (1, 3, 13, 13)


def _small_cnn(path) -> None:
    """Conv-ReLU, a residual Conv-Add-ReLU, global average pool, Gemm: random weights."""
    rng = np.random.default_rng(45)

    def w(name, *shape):
        return numpy_helper.from_array((rng.standard_normal(shape) * 0.3).astype(np.float32),
                                       name)
    nodes = [
        helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c1"], ["r1"]),
        helper.make_node("Conv", ["r1", "w2", "b2"], ["c2"], pads=[1, 1, 1, 1]),
        helper.make_node("Add", ["c2", "r1"], ["a2"]),
        helper.make_node("Relu", ["a2"], ["r2"]),
        helper.make_node("GlobalAveragePool", ["r2"], ["p"]),
        helper.make_node("Flatten", ["p"], ["f"]),
        helper.make_node("Gemm", ["f", "w3", "b3"], ["y"], transB=1),
    ]
    g = helper.make_graph(
        nodes, "small_cnn", [helper.make_tensor_value_info("x", TensorProto.FLOAT, SHAPE)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, (1, 7))],
        [w("w1", 16, 3, 3, 3), w("b1", 16), w("w2", 16, 16, 3, 3), w("b2", 16),
         w("w3", 7, 16), w("b3", 7)])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), path)


class _Calibration(quantization.CalibrationDataReader):
    def __init__(self):
        self.rng, self.left = np.random.default_rng(0), 4

    def get_next(self):
        self.left -= 1
        return {"x": self.rng.standard_normal(SHAPE).astype(np.float32)} \
            if self.left >= 0 else None


@pytest.mark.parametrize("activations", ["QInt8", "QUInt8"])
def test_a_qdq_model_agrees_with_onnx_runtime_within_one_step(tmp_path, activations):
    source, quantized = tmp_path / "cnn.onnx", tmp_path / "cnn_qdq.onnx"
    _small_cnn(source)
    quantization.quantize_static(
        str(source), str(quantized), _Calibration(),
        quant_format=quantization.QuantFormat.QDQ, per_channel=True,
        activation_type=getattr(quantization.QuantType, activations),
        weight_type=quantization.QuantType.QInt8)
    model = onnx.load(quantized)
    ops = [n.op_type for n in model.graph.node]
    assert ops.count("QuantizeLinear") >= 4 and ops.count("DequantizeLinear") >= 4
    last = next(n for n in model.graph.node if "y" in n.output)
    assert last.op_type == "DequantizeLinear"
    scale = float(numpy_helper.to_array(
        next(i for i in model.graph.initializer if i.name == last.input[1])))

    x = np.random.default_rng(1).standard_normal(SHAPE).astype(np.float32)
    want = ort.InferenceSession(str(quantized), providers=["CPUExecutionProvider"]) \
        .run(None, {"x": x})[0]
    mod, params = from_onnx(str(quantized))
    got = graph.build(mod, params=params).run(x=x)[0]
    assert got.shape == want.shape and got.dtype == np.float32
    steps = np.rint(np.abs(got.astype(np.float64) - want) / scale)
    assert steps.max() <= 1, f"{int(steps.max())} steps apart"
    assert np.abs(want).max() > 10 * scale  # not a constant output
