"""ResNet-18 as an ONNX file written with onnx.helper (random weights, no download, no
PyTorch): the stem (7x7 conv, batch norm, relu, max pool), four stages of two basic
blocks (conv-bn-relu, conv-bn, + shortcut, relu; a 1x1 stride-2 conv-bn shortcut where the
channels change) and the head (global average pool, flatten, Gemm). The layer structure is
torchvision's; `size` shrinks the image so that tests build and run it in seconds."""
from __future__ import annotations

import numpy as np
from onnx import TensorProto, helper, numpy_helper

STAGES = ((64, 1), (128, 2), (256, 2), (512, 2))


class _Builder:
    def __init__(self, seed: int):
        self.rng = np.random.default_rng(seed)
        self.nodes, self.inits, self.count = [], [], 0

    def name(self, prefix: str) -> str:
        self.count += 1
        return f"{prefix}{self.count}"

    def init(self, array) -> str:
        name = self.name("w")
        self.inits.append(numpy_helper.from_array(array.astype("float32"), name))
        return name

    def conv_bn(self, x: str, cin: int, cout: int, k: int, stride: int, relu: bool) -> str:
        w = self.init(self.rng.standard_normal((cout, cin, k, k)) * (2.0 / (cin * k * k)) ** 0.5)
        c = self.name("conv")
        self.nodes.append(helper.make_node("Conv", [x, w], [c], strides=[stride, stride],
                                           pads=[k // 2] * 4))
        r = self.rng
        bn = [self.init(r.random(cout) + .5), self.init(r.standard_normal(cout) * .1),
              self.init(r.standard_normal(cout) * .1), self.init(r.random(cout) + .5)]
        n = self.name("bn")
        self.nodes.append(helper.make_node("BatchNormalization", [c, *bn], [n], epsilon=1e-5))
        return self.relu(n) if relu else n

    def relu(self, x: str) -> str:
        r = self.name("relu")
        self.nodes.append(helper.make_node("Relu", [x], [r]))
        return r

    def basic_block(self, x: str, cin: int, cout: int, stride: int) -> str:
        y = self.conv_bn(x, cin, cout, 3, stride, relu=True)
        y = self.conv_bn(y, cout, cout, 3, 1, relu=False)
        shortcut = x if stride == 1 and cin == cout else self.conv_bn(x, cin, cout, 1, stride,
                                                                      relu=False)
        s = self.name("add")
        self.nodes.append(helper.make_node("Add", [y, shortcut], [s]))
        return self.relu(s)


def resnet18(size: int = 64, classes: int = 1000, seed: int = 0):
    """The ONNX ModelProto of ResNet-18 for a (1, 3, size, size) input named "input"."""
    b = _Builder(seed)
    x = b.conv_bn("input", 3, 64, 7, 2, relu=True)
    pool = b.name("pool")
    b.nodes.append(helper.make_node("MaxPool", [x], [pool], kernel_shape=[3, 3],
                                    strides=[2, 2], pads=[1, 1, 1, 1]))
    x, cin = pool, 64
    for cout, stride in STAGES:
        x = b.basic_block(x, cin, cout, stride)
        x = b.basic_block(x, cout, cout, 1)
        cin = cout
    b.nodes.append(helper.make_node("GlobalAveragePool", [x], ["gap"]))
    b.nodes.append(helper.make_node("Flatten", ["gap"], ["flat"], axis=1))
    fc = b.init(b.rng.standard_normal((classes, 512)) * 0.05)
    bias = b.init(b.rng.standard_normal(classes) * 0.05)
    b.nodes.append(helper.make_node("Gemm", ["flat", fc, bias], ["output"], transB=1))
    graph = helper.make_graph(
        b.nodes, "resnet18",
        [helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, 3, size, size])],
        [helper.make_tensor_value_info("output", TensorProto.FLOAT, [1, classes])], b.inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
