"""Small versions of the model families people bring, written with onnx.helper (odd
sizes: 7, 13, 37), imported, built at opt level 3 and held to ONNX Runtime (max
relative error 1e-4): a BERT-style encoder layer on token ids, a ViT-style pre-norm
layer with a class token, an EfficientNet MBConv block with squeeze-excite and SiLU, and
a YOLO-style neck block (SiLU convolutions, Split, SPP max pools, nearest Resize,
Concat). The U-Net block is tests/compiler/frontend/test_onnx_vision_ops.py's."""
from __future__ import annotations

import pytest

pytest.importorskip("onnxruntime")

from onnx import TensorProto, helper  # noqa: E402

from onnx_cases import check_against_ort  # noqa: E402
from onnx_graph import Graph, attention_layer, rng  # noqa: E402


def test_a_bert_style_encoder_layer_on_token_ids_matches_onnx_runtime():
    seq, hidden, heads, vocab = 13, 37 * 2, 2, 37
    g = Graph()
    emb = g.op("Gather", g.weight(vocab, hidden), "ids")
    pos = g.op("Gather", g.weight(seq, hidden), g.op("Range", g.const(0, "int64"),
                                                     g.const(seq, "int64"),
                                                     g.const(1, "int64")))
    x = g.op("LayerNormalization", g.op("Add", emb, pos), g.weight(hidden), g.weight(hidden))
    y = attention_layer(g, x, seq, hidden, heads, pre_norm=False)
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
    x = attention_layer(g, x, 50, hidden, heads, pre_norm=True)
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
