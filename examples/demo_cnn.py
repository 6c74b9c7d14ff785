"""Write the demo's model: a small CNN as an ONNX file, random weights, no download.

    python examples/demo_cnn.py demo_cnn.onnx

Four convolution blocks on a 1x3x56x56 image (a 3x3 stem to 32 channels; a block with a
batch norm; a stride-2 block to 64 channels; a residual block), global average pool and a
classifier: the kinds of kernel a real CNN has (conv + bias + relu, conv + batch norm,
conv + residual add + relu, a dense), small enough to tune in a minute on 2 cores.
"""
from __future__ import annotations

import sys

import numpy as np
from onnx import TensorProto, helper, numpy_helper, save


def demo_cnn(seed: int = 0):
    """The demo's ONNX ModelProto: input "image" (1, 3, 56, 56), output "logits" (1, 10)."""
    rng = np.random.default_rng(seed)
    nodes, inits = [], []

    def init(name, array):
        inits.append(numpy_helper.from_array(np.asarray(array, "float32"), name))
        return name

    def conv(x, name, cin, cout, stride=1, bias=True):
        w = init(f"{name}.w", rng.standard_normal((cout, cin, 3, 3)) * (2 / (9 * cin)) ** .5)
        ins = [x, w, init(f"{name}.b", rng.standard_normal(cout) * .1)] if bias else [x, w]
        nodes.append(helper.make_node("Conv", ins, [name], pads=[1, 1, 1, 1],
                                      strides=[stride, stride]))
        return name

    def op(kind, ins, name, **attrs):
        nodes.append(helper.make_node(kind, ins, [name], **attrs))
        return name

    x = op("Relu", [conv("image", "stem", 3, 32)], "stem.relu")
    y = conv(x, "block1", 32, 32, bias=False)
    stats = [init(f"bn.{k}", rng.random(32) + .5 if k in ("scale", "var")
                  else rng.standard_normal(32) * .1) for k in ("scale", "bias", "mean", "var")]
    y = op("Relu", [op("BatchNormalization", [y, *stats], "block1.bn")], "block1.relu")
    y = op("Relu", [conv(y, "block2", 32, 64, stride=2)], "block2.relu")
    z = conv(op("Relu", [conv(y, "block3a", 64, 64)], "block3a.relu"), "block3b", 64, 64)
    y = op("Relu", [op("Add", [z, y], "block3.add")], "block3.relu")
    y = op("Flatten", [op("GlobalAveragePool", [y], "pool")], "flat", axis=1)
    op("Gemm", [y, init("fc.w", rng.standard_normal((10, 64)) * .1),
                init("fc.b", np.zeros(10))], "logits", transB=1)
    graph = helper.make_graph(
        nodes, "demo_cnn",
        [helper.make_tensor_value_info("image", TensorProto.FLOAT, [1, 3, 56, 56])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [1, 10])], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


if __name__ == "__main__":
    path = sys.argv[1] if len(sys.argv) > 1 else "demo_cnn.onnx"
    save(demo_cnn(), path)
    print(f"wrote {path}: a CNN of 5 convolutions and a classifier, input image 1x3x56x56")
