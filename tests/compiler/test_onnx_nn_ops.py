"""Conformance of the network ONNX ops (compiler/frontend/onnx_ops/nn.py) against ONNX
Runtime, each attribute variant a node of its own: the normalizations, Gemm, MatMul of
every rank (a constant weight becomes a dense, equal batch axes a batch_matmul), the
two-operand Einsum forms of a transformer, Softmax and LogSoftmax on any axis."""
from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("onnxruntime")

from compiler.frontend import from_onnx  # noqa: E402
from compiler.graph.expr import Call  # noqa: E402
from compiler.graph.functor import post_order  # noqa: E402
from onnx_cases import In, check_against_ort, node, node_model  # noqa: E402

rng = np.random.default_rng(5)


def w(*shape):
    return rng.standard_normal(shape).astype("float32")


CASES = {  # op type: (opset, nodes)
    "LayerNormalization": (17, [node(In(2, 7, 37), w(37), w(37)),
                                node(In(2, 7, 13), w(7, 13), axis=-2, epsilon=1e-3),
                                node(In(7, 13), w(13), w(1))]),
    "InstanceNormalization": (17, [node(In(2, 13, 7, 5), w(13), w(13)),
                                   node(In(1, 7, 37), w(7), w(7), epsilon=1e-3)]),
    "GroupNormalization": (18, [node(In(2, 12, 7, 5), w(3), w(3), num_groups=3)]),
    "Gemm": (17, [node(In(7, 13), w(37, 13), w(37), transB=1),
                  node(In(13, 7), w(13, 37), w(1, 37), transA=1, alpha=0.5, beta=2.0),
                  node(In(7, 13), In(13, 5))]),
    "MatMul": (17, [node(In(7, 13), w(13, 37)), node(In(2, 7, 13), w(13, 37)),
                    node(In(2, 3, 7, 13), In(2, 3, 13, 5)), node(In(3, 7, 13), In(3, 13, 5)),
                    node(In(2, 1, 7, 13), In(3, 13, 5)), node(In(13), In(2, 13, 7)),
                    node(In(7, 13), In(13)), node(In(7, 13), In(13, 5))]),
    "Einsum": (17, [node(In(2, 3, 7, 5), In(2, 3, 13, 5), equation="bhid,bhjd->bhij"),
                    node(In(2, 3, 7, 13), In(2, 3, 13, 5), equation="bhij,bhjd->bhid"),
                    node(In(2, 7, 13), w(13, 5), equation="bij,jk->bik"),
                    node(In(7, 13), In(5, 13), equation="ik,jk->ij"),
                    node(In(2, 7, 3, 5), In(2, 13, 3, 5), equation="bqhd,bkhd->bhqk")]),
    "Softmax": (17, [node(In(2, 7, 13)), node(In(2, 7, 13), axis=1), node(In(7, 37), axis=0)]),
    "LogSoftmax": (17, [node(In(2, 7, 13)), node(In(2, 7, 13), axis=0)]),
}


@pytest.mark.parametrize("op_type", CASES)
def test_the_op_matches_onnx_runtime(op_type):
    opset, nodes = CASES[op_type]
    check_against_ort(*node_model(op_type, nodes, opset))


def test_group_norm_of_opset_21_scales_each_channel():
    check_against_ort(*node_model("GroupNormalization", [
        node(In(2, 12, 7, 5), w(12), w(12), num_groups=4, epsilon=1e-3)], 21))


@pytest.mark.parametrize("op_type", ["Softmax", "LogSoftmax"])
def test_softmax_before_opset_13_flattens_the_axes_from_its_axis_on(op_type):
    check_against_ort(*node_model(op_type, [node(In(2, 7, 13)), node(In(2, 7, 13), axis=2),
                                            node(In(2, 7, 3, 5), axis=1)], 11))


def test_a_3d_activation_times_a_constant_weight_is_a_dense_and_4d_attention_a_batch_matmul():
    model, _ = node_model("MatMul", [node(In(2, 7, 13), w(13, 37)),
                                     node(In(2, 3, 7, 13), In(2, 3, 13, 5))])
    mod, _ = from_onnx(model)
    ops = {e.op.name for e in post_order(mod["main"].body) if isinstance(e, Call)}
    assert {"nn.dense", "nn.batch_matmul"} <= ops and "matmul" not in ops
