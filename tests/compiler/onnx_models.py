"""The small ONNX models (onnx.helper) that tests all over the suite build and run:
a residual block, a depthwise + pointwise block with Clip, an MLP with Gemm and Softmax,
pads and a concat, on odd channel counts (7, 13, 37); `input_and_expected` gives a
random input and ONNX Runtime's output for it. frontend/test_onnx_frontend.py holds the
importer to them; `rng` is the one generator their weights and inputs come from."""
from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

from onnx import TensorProto, helper, numpy_helper  # noqa: E402

rng = np.random.default_rng(7)


def weight(name, *shape, scale=0.3):
    return numpy_helper.from_array((rng.standard_normal(shape) * scale).astype("float32"),
                                   name)


def model(nodes, inputs, outputs, inits, opset=17):
    g = helper.make_graph(nodes, "m", inputs, outputs, inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    return m


def tensor(name, shape):
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)


def residual(c: int = 7, size: int = 13):
    nodes = [
        helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1]),
        helper.make_node("BatchNormalization", ["c1", "g", "beta", "mu", "var"], ["n1"],
                         epsilon=1e-5),
        helper.make_node("Relu", ["n1"], ["r1"]),
        helper.make_node("Conv", ["r1", "w2"], ["c2"], pads=[1, 1, 1, 1]),
        helper.make_node("Add", ["c2", "x"], ["s"]),
        helper.make_node("Relu", ["s"], ["r2"]),
        helper.make_node("Conv", ["r2", "w3"], ["down"], strides=[2, 2], pads=[0, 0, 0, 0]),
        helper.make_node("MaxPool", ["down"], ["y"], kernel_shape=[3, 3], strides=[2, 2],
                         pads=[1, 1, 1, 1]),
    ]
    inits = [weight("w1", c, c, 3, 3), weight("b1", c), weight("w2", c, c, 3, 3),
             weight("w3", 13, c, 1, 1),
             numpy_helper.from_array(rng.random(c).astype("float32") + 0.5, "g"),
             weight("beta", c), weight("mu", c),
             numpy_helper.from_array(rng.random(c).astype("float32") + 0.5, "var")]
    return model(nodes, [tensor("x", [1, c, size, size])], [tensor("y", None)], inits)


def mobile_block(c: int = 13):
    nodes = [
        helper.make_node("Conv", ["x", "dw"], ["d"], group=c, pads=[1, 1, 1, 1],
                         strides=[2, 2]),
        helper.make_node("Clip", ["d", "lo", "hi"], ["d6"]),
        helper.make_node("Conv", ["d6", "pw", "pb"], ["p"]),
        helper.make_node("Sigmoid", ["p"], ["sg"]),
        helper.make_node("Mul", ["p", "sg"], ["silu"]),
        helper.make_node("GlobalAveragePool", ["silu"], ["gap"]),
        helper.make_node("Flatten", ["gap"], ["y"], axis=1),
    ]
    inits = [weight("dw", c, 1, 3, 3), weight("pw", 37, c, 1, 1), weight("pb", 37),
             numpy_helper.from_array(np.array(0.0, "float32"), "lo"),
             numpy_helper.from_array(np.array(6.0, "float32"), "hi")]
    return model(nodes, [tensor("x", [1, c, 37, 37])], [tensor("y", None)], inits)


def mlp():
    nodes = [
        helper.make_node("Gemm", ["x", "w1", "b1"], ["h"], transB=1),
        helper.make_node("Tanh", ["h"], ["t"]),
        helper.make_node("MatMul", ["t", "w2"], ["m"]),
        helper.make_node("Sub", ["m", "b2"], ["s"]),
        helper.make_node("Div", ["s", "two"], ["d"]),
        helper.make_node("Softmax", ["d"], ["y"], axis=-1),
    ]
    inits = [weight("w1", 37, 13), weight("b1", 37), weight("w2", 37, 7), weight("b2", 7),
             numpy_helper.from_array(np.array([2.0], "float32"), "two")]
    return model(nodes, [tensor("x", [5, 13])], [tensor("y", None)], inits)


def pads_and_concat():
    nodes = [
        helper.make_node("Pad", ["x", "pads"], ["p"], mode="constant"),
        helper.make_node("AveragePool", ["p"], ["a"], kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Exp", ["a"], ["e"]),
        helper.make_node("Concat", ["a", "e"], ["c"], axis=1),
        helper.make_node("Transpose", ["c"], ["t"], perm=[0, 2, 3, 1]),
        helper.make_node("Reshape", ["t", "shape"], ["y"]),
    ]
    inits = [numpy_helper.from_array(np.array([0, 0, 1, 0, 0, 0, 0, 1], "int64"), "pads"),
             numpy_helper.from_array(np.array([1, -1], "int64"), "shape")]
    return model(nodes, [tensor("x", [1, 7, 7, 7])], [tensor("y", None)], inits)


def input_and_expected(m):
    """A random input `x` of model `m` and ONNX Runtime's output for it."""
    x = rng.standard_normal([d.dim_value for d in m.graph.input[0].type.tensor_type.shape.dim]
                            ).astype("float32")
    want, = ort.InferenceSession(m.SerializeToString(),
                                 providers=["CPUExecutionProvider"]).run(None, {"x": x})
    return x, want


MODELS = {"residual": residual, "mobile_block": mobile_block, "mlp": mlp,
          "pads_and_concat": pads_and_concat}
