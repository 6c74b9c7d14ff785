"""Small versions of the model families people bring, written with onnx.helper (odd
sizes: 7, 13, 37), imported, built at opt level 3 and held to ONNX Runtime (max
relative error 1e-4): a BERT-style encoder layer on token ids, a ViT-style pre-norm
layer with a class token, an EfficientNet MBConv block with squeeze-excite and SiLU, and
a YOLO-style neck block (SiLU convolutions, Split, SPP max pools, nearest Resize,
Concat). The U-Net block is tests/compiler/test_onnx_vision_ops.py's."""
from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("onnxruntime")

from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from onnx_cases import check_against_ort  # noqa: E402

rng = np.random.default_rng(31)


class Graph:
    """A model under construction: nodes, initializers, fresh names."""

    def __init__(self):
        self.nodes, self.inits, self.n = [], [], 0

    def const(self, value, dtype="float32"):
        self.n += 1
        name = f"c{self.n}"
        self.inits.append(numpy_helper.from_array(np.asarray(value, dtype), name))
        return name

    def weight(self, *shape, scale=0.3):
        return self.const(rng.standard_normal(shape) * scale)

    def op(self, op_type, *inputs, outputs=1, **attrs):
        self.n += 1
        names = [f"v{self.n}_{k}" for k in range(outputs)]
        self.nodes.append(helper.make_node(op_type, list(inputs), names, **attrs))
        return names[0] if outputs == 1 else names

    def model(self, inputs, outputs, opset=17):
        g = helper.make_graph(self.nodes, "family", inputs,
                              [helper.make_empty_tensor_value_info(o) for o in outputs],
                              self.inits)
        return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])


def _attention_layer(g, x, seq, hidden, heads, pre_norm):
    """One encoder layer as PyTorch exports it: MatMul + bias projections, heads split
    by Reshape / Transpose, Softmax(QK^T / sqrt(d)) V, Gelu MLP, LayerNorm, residuals."""
    d = hidden // heads

    def linear(v, n_in, n_out):
        return g.op("Add", g.op("MatMul", v, g.weight(n_in, n_out)), g.weight(n_out))

    def heads_of(v):
        split = g.op("Reshape", v, g.const([1, seq, heads, d], "int64"))
        return g.op("Transpose", split, perm=[0, 2, 1, 3])

    def norm(v):
        return g.op("LayerNormalization", v, g.weight(hidden), g.weight(hidden))
    h = norm(x) if pre_norm else x
    q, k, v = (heads_of(linear(h, hidden, hidden)) for _ in range(3))
    kt = g.op("Transpose", k, perm=[0, 1, 3, 2])
    scores = g.op("Div", g.op("MatMul", q, kt), g.const(np.sqrt(d)))
    ctx = g.op("MatMul", g.op("Softmax", scores, axis=-1), v)
    merged = g.op("Reshape", g.op("Transpose", ctx, perm=[0, 2, 1, 3]),
                  g.const([1, seq, hidden], "int64"))
    x = g.op("Add", x, linear(merged, hidden, hidden))
    x = x if pre_norm else norm(x)
    h = norm(x) if pre_norm else x
    mlp = linear(g.op("Gelu", linear(h, hidden, 4 * hidden)), 4 * hidden, hidden)
    x = g.op("Add", x, mlp)
    return x if pre_norm else norm(x)


def test_a_bert_style_encoder_layer_on_token_ids_matches_onnx_runtime():
    seq, hidden, heads, vocab = 13, 37 * 2, 2, 37
    g = Graph()
    emb = g.op("Gather", g.weight(vocab, hidden), "ids")
    pos = g.op("Gather", g.weight(seq, hidden), g.op("Range", g.const(0, "int64"),
                                                     g.const(seq, "int64"),
                                                     g.const(1, "int64")))
    x = g.op("LayerNormalization", g.op("Add", emb, pos), g.weight(hidden), g.weight(hidden))
    y = _attention_layer(g, x, seq, hidden, heads, pre_norm=False)
    model = g.model([helper.make_tensor_value_info("ids", TensorProto.INT64, [1, seq])],
                    [y], opset=20)
    ids = rng.integers(0, vocab, (1, seq)).astype("int64")
    check_against_ort(model, {"ids": ids})


def test_a_vit_style_pre_norm_layer_with_a_class_token_matches_onnx_runtime():
    hidden, heads, patch = 26, 2, 4
    g = Graph()
    patches = g.op("Conv", "image", g.weight(hidden, 3, patch, patch), strides=[patch, patch])
    tokens = g.op("Transpose", g.op("Reshape", patches, g.const([1, hidden, -1], "int64")),
                  perm=[0, 2, 1])  # 7 x 7 image patches of a 28 x 28 image: 49 tokens
    x = g.op("Concat", g.weight(1, 1, hidden), tokens, axis=1)
    x = g.op("Add", x, g.weight(1, 50, hidden))
    x = _attention_layer(g, x, 50, hidden, heads, pre_norm=True)
    cls = g.op("Gather", x, g.const(0, "int64"), axis=1)
    logits = g.op("Gemm", cls, g.weight(7, hidden), g.weight(7), transB=1)
    model = g.model([helper.make_tensor_value_info("image", TensorProto.FLOAT,
                                                   [1, 3, 28, 28])], [logits], opset=20)
    check_against_ort(model, {"image": rng.standard_normal((1, 3, 28, 28)).astype("float32")})


def _silu(g, v):
    return g.op("Mul", v, g.op("Sigmoid", v))


def _conv_bn_silu(g, v, cin, cout, k, stride=1, groups=1):
    c = g.op("Conv", v, g.weight(cout, cin // groups, k, k), strides=[stride, stride],
             pads=[k // 2] * 4, group=groups)
    bn = g.op("BatchNormalization", c, g.const(rng.random(cout) + 0.5), g.weight(cout),
              g.weight(cout), g.const(rng.random(cout) + 0.5))
    return _silu(g, bn)


def test_an_efficientnet_mbconv_block_with_squeeze_excite_matches_onnx_runtime():
    cin, mid, cout = 16, 96, 16
    g = Graph()
    e = _conv_bn_silu(g, "x", cin, mid, 1)
    d = _conv_bn_silu(g, e, mid, mid, 5, groups=mid)
    s = g.op("ReduceMean", d, axes=[2, 3], keepdims=1)
    s = _silu(g, g.op("Conv", s, g.weight(4, mid, 1, 1), g.weight(4)))
    s = g.op("Sigmoid", g.op("Conv", s, g.weight(mid, 4, 1, 1), g.weight(mid)))
    p = g.op("Conv", g.op("Mul", d, s), g.weight(cout, mid, 1, 1))
    y = g.op("Add", "x", p)
    model = g.model([helper.make_tensor_value_info("x", TensorProto.FLOAT,
                                                   [1, cin, 13, 13])], [y])
    check_against_ort(model, {"x": rng.standard_normal((1, cin, 13, 13)).astype("float32")})


def test_a_yolo_style_neck_block_matches_onnx_runtime():
    c = 16
    g = Graph()
    x = _conv_bn_silu(g, "x", 3, c, 3, stride=2)  # 37 -> 19
    a, b = g.op("Split", _conv_bn_silu(g, x, c, c, 1), g.const([8, 8], "int64"), axis=1,
                outputs=2)
    b2 = _conv_bn_silu(g, _conv_bn_silu(g, b, 8, 8, 3), 8, 8, 3)
    x = _conv_bn_silu(g, g.op("Concat", a, b, b2, axis=1), 24, c, 1)
    p1 = g.op("MaxPool", x, kernel_shape=[5, 5], pads=[2, 2, 2, 2])
    p2 = g.op("MaxPool", p1, kernel_shape=[5, 5], pads=[2, 2, 2, 2])
    spp = _conv_bn_silu(g, g.op("Concat", x, p1, p2, axis=1), 3 * c, c, 1)
    up = g.op("Resize", spp, "", g.const([1.0, 1.0, 2.0, 2.0]), mode="nearest")
    small = g.op("LeakyRelu", _conv_bn_silu(g, up, c, c, 3), alpha=0.1)
    model = g.model([helper.make_tensor_value_info("x", TensorProto.FLOAT,
                                                   [1, 3, 37, 37])], [small, spp])
    check_against_ort(model, {"x": rng.standard_normal((1, 3, 37, 37)).astype("float32")})
