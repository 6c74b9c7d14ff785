"""Conformance of the elementwise ONNX ops (compiler/frontend/onnx_ops/math.py) against
ONNX Runtime, each attribute variant a node of its own: arithmetic, math functions,
activations, comparisons, logic, Where, Cast; odd shapes (7, 13, 37) and broadcasting."""
from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("onnxruntime")

from onnx_cases import In, check_against_ort, node, node_model  # noqa: E402

F = np.float32
X, Y = In(7, 13), In(13)

CASES = {
    "Add": [node(X, Y), node(In(2, 7, 1), In(7, 37))],
    "Sub": [node(X, Y)],
    "Mul": [node(X, np.array(1.5, F))],
    "Div": [node(X, In(7, 1))],
    "Pow": [node(X, np.array(2.0, F)), node(In(7, 13), np.array(3.0, F)),
            node(In(37, positive=True), np.array(0.5, F)),
            node(In(7, 13, positive=True), In(13))],
    "Max": [node(X, Y, In(7, 1))],
    "Min": [node(X, Y)],
    "Sum": [node(X, Y, In(1, 13))],
    "Mean": [node(X, Y, In(7, 13))],
    "Sqrt": [node(In(7, 13, positive=True))], "Log": [node(In(7, 13, positive=True))],
    "Neg": [node(X)], "Abs": [node(X)], "Exp": [node(X)], "Erf": [node(In(37, 13))],
    "Sin": [node(X)], "Cos": [node(X)], "Floor": [node(X)], "Ceil": [node(X)],
    "Reciprocal": [node(X)], "Sigmoid": [node(X)], "Tanh": [node(X)], "Relu": [node(X)],
    "Clip": [node(X, np.array(-0.5, F), np.array(0.7, F)), node(X, None, np.array(0.2, F))],
    "LeakyRelu": [node(X), node(X, alpha=0.3)],
    "PRelu": [node(In(1, 13, 7, 3), (np.arange(13, dtype=F) / 13).reshape(13, 1, 1)),
              node(X, np.full((13,), 0.25, F))],
    "Softplus": [node(In(7, 37))],
    "Elu": [node(X), node(X, alpha=0.5)],
    "Selu": [node(X), node(X, alpha=1.5, gamma=1.1)],
    "Celu": [node(X), node(X, alpha=2.0)],
    "HardSigmoid": [node(X), node(X, alpha=0.3, beta=0.4)],
    "HardSwish": [node(In(7, 37))],
    "Mish": [node(X)],
    "Equal": [node(In(7, 13, dtype="int64"), In(13, dtype="int64"))],
    "Less": [node(X, Y)], "Greater": [node(X, In(7, 1))],
    "LessOrEqual": [node(In(7, 13, dtype="int64"), In(7, 13, dtype="int64"))],
    "GreaterOrEqual": [node(X, Y)],
    "Not": [node(In(7, 13, dtype="bool"))],
    "And": [node(In(7, 13, dtype="bool"), In(13, dtype="bool"))],
    "Or": [node(In(7, 13, dtype="bool"), In(7, 1, dtype="bool"))],
    "Where": [node(In(7, 13, dtype="bool"), X, Y),
              node(In(2, 1, 13, dtype="bool"), In(7, 1), np.array(-1e9, F))],
    "Cast": [node(X, to=7), node(In(7, 13, dtype="int64"), to=1), node(X, to=9),
             node(In(13, dtype="bool"), to=1)],
}

OPSETS = {"Mish": 18}


@pytest.mark.parametrize("op_type", CASES)
def test_the_op_matches_onnx_runtime(op_type):
    check_against_ort(*node_model(op_type, CASES[op_type], OPSETS.get(op_type, 17)))


@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_gelu_of_opset_20_matches_onnx_runtime(approximate):
    model, feeds = node_model("Gelu", [node(In(7, 37), approximate=approximate)], opset=20)
    check_against_ort(model, feeds)
