"""Conformance of the network ONNX ops (compiler/frontend/onnx_ops/nn.py) against ONNX
Runtime, each attribute variant a node of its own: the normalizations, Gemm, MatMul of
every rank (a constant weight becomes a dense, equal batch axes a batch_matmul), Einsum
(a transformer's two-operand forms, ellipses, diagonals, sums, three operands), Softmax
and LogSoftmax on any axis."""
from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("onnxruntime")

from compiler.frontend import from_onnx  # noqa: E402
from compiler.graph.ir.expr import Call  # noqa: E402
from compiler.graph.ir.functor import post_order  # noqa: E402
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
                    node(In(2, 7, 3, 5), In(2, 13, 3, 5), equation="bqhd,bkhd->bhqk"),
                    # ellipses (broadcast), implicit outputs, diagonals, sums, three operands
                    node(In(2, 7, 13), In(1, 13, 5), equation="...ij,...jk->...ik"),
                    node(In(7, 13), In(13, 5), equation="ij,jk"),
                    node(In(3, 7, 7), equation="...ii->...i"),
                    node(In(7, 13), equation="ij->j"),
                    node(In(7, 13), In(13, 5), In(5, 3), equation="ij,jk,kl->li")]),
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
    model, feeds = node_model("MatMul", [node(In(2, 7, 13), w(13, 37)),
                                         node(In(2, 3, 7, 13), In(2, 3, 13, 5))])
    mod, _ = from_onnx(model)
    ops = {e.op.name for e in post_order(mod["main"].body) if isinstance(e, Call)}
    assert {"nn.dense", "matmul"} <= ops
    lib = check_against_ort(model, feeds)
    templates = {s["info"]["template"] for s in lib.plan["steps"]}
    assert {"dense", "batch_matmul"} <= templates


def _decomposed_layer_norm(gamma_shape=(37,)):
    """LayerNorm as pre-opset-17 exporters write it: ReduceMean, Sub, Pow, ReduceMean,
    Add, Sqrt, Div, Mul, Add."""
    from onnx import TensorProto, helper, numpy_helper
    nodes = [helper.make_node("ReduceMean", ["x"], ["mu"], axes=[-1]),
             helper.make_node("Sub", ["x", "mu"], ["d"]),
             helper.make_node("Pow", ["d", "two"], ["sq"]),
             helper.make_node("ReduceMean", ["sq"], ["var"], axes=[-1]),
             helper.make_node("Add", ["var", "eps"], ["ve"]),
             helper.make_node("Sqrt", ["ve"], ["sd"]),
             helper.make_node("Div", ["d", "sd"], ["n"]),
             helper.make_node("Mul", ["n", "gamma"], ["s"]),
             helper.make_node("Add", ["s", "beta"], ["y"])]
    inits = [numpy_helper.from_array(v, k) for k, v in {
        "two": np.array(2.0, "float32"), "eps": np.array(1e-5, "float32"),
        "gamma": w(*gamma_shape), "beta": w(37)}.items()]
    g = helper.make_graph(nodes, "ln", [helper.make_tensor_value_info(
        "x", TensorProto.FLOAT, [2, 7, 37])], [helper.make_empty_tensor_value_info("y")],
        inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])


def test_a_layer_norm_written_as_nine_ops_is_one_kernel_and_matches_onnx_runtime():
    model = _decomposed_layer_norm()
    feeds = {"x": (rng.standard_normal((2, 7, 37)) * 3 + 1).astype("float32")}
    lib = check_against_ort(model, feeds)
    assert [s["ops"] for s in lib.plan["steps"]] == [["nn.layer_norm"]]


@pytest.mark.parametrize("op_type, extra, attrs", [
    ("Split", [], {"axis": 1, "outputs": 2}),
    ("InstanceNormalization", ["scale", "bias"], {}),
    ("GroupNormalization", ["scale4", "bias4"], {"num_groups": 4}),
    ("LayerNormalization", ["scale_w", "bias_w"], {"axis": -1}),
    ("Softmax", [], {"axis": 1}),
])
def test_a_packed_convolution_output_reaching_the_op_leaves_the_model_in_its_shape(
        op_type, extra, attrs):
    """At opt level 3 the 16-channel convolution computes in NCHW[x]c; the op after it
    takes its value, and the model's outputs come back in the shape ONNX declares."""
    from onnx import TensorProto, helper, numpy_helper
    n_out = attrs.pop("outputs", 1)
    outs = [f"y{k}" for k in range(n_out)]
    nodes = [helper.make_node("Conv", ["x", "wc"], ["c"]),
             helper.make_node(op_type, ["c", *extra], outs, **attrs)]
    inits = [numpy_helper.from_array(v, k) for k, v in {
        "wc": w(16, 7, 1, 1), "scale": w(16), "bias": w(16), "scale4": w(16),
        "bias4": w(16), "scale_w": w(13), "bias_w": w(13)}.items()]
    inits = [t for t in inits if t.name in ["wc", *extra]]
    g = helper.make_graph(nodes, "packed", [helper.make_tensor_value_info(
        "x", TensorProto.FLOAT, [1, 7, 9, 13])],
        [helper.make_empty_tensor_value_info(o) for o in outs], inits)
    model = helper.make_model(g, opset_imports=[helper.make_opsetid(
        "", 21 if op_type == "GroupNormalization" else 17)])
    feeds = {"x": rng.standard_normal((1, 7, 9, 13)).astype("float32")}
    check_against_ort(model, feeds)


def test_training_dropout_draws_the_references_mask_from_its_seed_at_any_fed_ratio():
    """Training Dropout keeps x / (1 - ratio) where numpy's generator, seeded with the
    seed attribute, draws at least the ratio (ONNX's reference); the ratio and the
    training mode may come at run time, and training off (or a constant ratio of 0) is
    the identity."""
    from compiler import graph
    from compiler.transform.pass_infra import PassContext
    from onnx import TensorProto, helper
    g = helper.make_graph(
        [helper.make_node("Dropout", ["x", "r", "t"], ["y", "mask"], seed=7)], "dropout",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [7, 13]),
         helper.make_tensor_value_info("r", TensorProto.FLOAT, []),
         helper.make_tensor_value_info("t", TensorProto.BOOL, [])],
        [helper.make_empty_tensor_value_info(o) for o in ("y", "mask")])
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    mod, params = from_onnx(model)
    with PassContext(opt_level=3):
        lib = graph.build(mod, params=params)
    x = w(7, 13)
    draws = np.random.RandomState(7).uniform(0, 1.0, (7, 13))
    for ratio in (0.0, 0.3, 0.75):
        r = np.array(ratio, "float32")
        y, mask = lib.run(x=x, r=r, t=np.array(True))
        np.testing.assert_array_equal(mask, draws >= r)
        np.testing.assert_allclose(y, mask * x * (1 / (1 - r)), rtol=1e-6)
        assert 0 < mask.sum() < mask.size or ratio == 0.0
        y, mask = lib.run(x=x, r=r, t=np.array(False))
        np.testing.assert_array_equal(y, x)
        assert mask.all()
    # training with a ratio of 0 keeps everything: no seed needed
    check_against_ort(*node_model("Dropout", [node(In(7, 13), np.array(0.0, "float32"),
                                                   np.array(True), outputs=2)], 17))


@pytest.mark.parametrize("op_type, nodes, opset, message", [
    ("ScatterND", [node(In(7, 13), np.array([[1]], "int64"), In(1, 13), reduction="sum")], 18,
     r"reduction='sum' is not supported"),
    ("Gelu", [node(In(7), approximate="fast")], 20, r"approximate='fast' is not supported"),
    ("Cast", [node(In(7), to=17)], 19, r"to=float8e4m3fn is not supported"),
    # an attribute its converter never reads, at a value other than its default
    ("MaxPool", [node(In(1, 1, 4, 4), kernel_shape=[2, 2], storage_order=1)], 17,
     r"attribute storage_order=1 is not supported"),
    ("Dropout", [node(In(7), np.array(0.5, "float32"), np.array(True))], 17,
     r"training_mode may be true and the node has no seed attribute"),
    ("Einsum", [node(In(2, 7, 13), In(2, 13, 5), equation="bij,bjk,bkl->bil")], 17,
     r"equation='bij,bjk,bkl->bil' does not fit its 2 operands"),
    ("LayerNormalization", [node(In(7, 13), w(13), outputs=2, stash_type=10)], 17,
     r"stash_type=10 is not supported"),
])
def test_an_unsupported_attribute_is_one_error_naming_the_node_and_the_attribute(
        op_type, nodes, opset, message):
    from compiler.errors import FrontendError
    model, _ = node_model(op_type, nodes, opset)
    with pytest.raises(FrontendError, match=rf"node {op_type}0 \({op_type}\): {message}"):
        from_onnx(model)


def test_a_value_read_inside_a_fused_group_and_outside_it_builds_and_matches():
    """Split's halves, an activation that is both a model output and an operand of the
    next ops, a layer norm feeding two branches: every value has one producing kernel."""
    from onnx import TensorProto, helper, numpy_helper
    nodes = [helper.make_node("MatMul", ["x", "w"], ["h"]),
             helper.make_node("Gelu", ["h"], ["g"]),
             helper.make_node("Split", ["g", "halves"], ["a", "b"], axis=-1),
             helper.make_node("Mul", ["a", "b"], ["ab"]),
             helper.make_node("Slice", ["g", "zero", "half", "last"], ["g2"]),
             helper.make_node("Add", ["ab", "g2"], ["y"])]
    inits = [numpy_helper.from_array(v, k) for k, v in {
        "w": w(13, 74), "halves": np.array([37, 37], "int64"), "zero": np.array([0], "int64"),
        "half": np.array([37], "int64"), "last": np.array([-1], "int64")}.items()]
    g = helper.make_graph(nodes, "branches", [helper.make_tensor_value_info(
        "x", TensorProto.FLOAT, [2, 7, 13])], [helper.make_empty_tensor_value_info(o)
                                              for o in ("y", "g", "a")], inits)
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 20)])
    check_against_ort(model, {"x": rng.standard_normal((2, 7, 13)).astype("float32")})


def test_a_dense_of_a_prime_number_of_rows_runs_on_padded_rows_and_matches():
    """67 rows have no divisor for a register tile: the dense runs on 72 zero-padded
    rows (AVX-512's rule: 6 rows of a 64-column panel), sliced back to 67."""
    from compiler import Target, graph
    from compiler.transform.pass_infra import PassContext
    model, feeds = node_model("MatMul", [node(In(67, 13), w(13, 64))])
    check_against_ort(model, feeds)  # on the host's target, whatever its rule says
    mod, params = from_onnx(model)
    with Target("llvm -mcpu=skylake-avx512"), PassContext(opt_level=3):
        fn = graph.optimize(mod, params)
    assert _kernel_ops(fn) == ["nn.pad", "nn.contrib_dense_pack", "strided_slice"]
    # few rows stay as they are: for a batch-1 classifier eight would be 8 times the work
    mod, params = from_onnx(node_model("MatMul", [node(In(37, 13), w(13, 64))])[0])
    with Target("llvm -mcpu=skylake-avx512"), PassContext(opt_level=3):
        assert _kernel_ops(graph.optimize(mod, params)) == ["nn.contrib_dense_pack"]


@pytest.mark.parametrize("target", ["llvm -mcpu=haswell", "llvm -mcpu=skylake-avx512"])
def test_attentions_products_of_a_prime_number_of_tokens_run_padded_and_match(target):
    """67 tokens: the scores (2, 67, 13) x (2, 13, 67) run on rows padded to 72 and
    columns to the target's lanes (72 with 8, 80 with 16), the weighted sum (2, 67, 67)
    x (2, 67, 13) on padded rows, each sliced back (a ViT-B's 197 tokens ran in 1 x 1
    tiles); 37 tokens stay as they are."""
    from onnx import TensorProto, helper
    from compiler import Target, graph
    from compiler.transform.pass_infra import PassContext

    def attention(tokens):
        nodes = [helper.make_node("Transpose", ["k"], ["kt"], perm=[0, 2, 1]),
                 helper.make_node("MatMul", ["q", "kt"], ["s"]),
                 helper.make_node("Softmax", ["s"], ["p"], axis=-1),
                 helper.make_node("MatMul", ["p", "k"], ["y"])]
        spec = [helper.make_tensor_value_info(n, TensorProto.FLOAT, [2, tokens, 13])
                for n in ("q", "k")]
        g = helper.make_graph(nodes, "attention", spec,
                              [helper.make_empty_tensor_value_info("y")])
        return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    model = attention(67)
    feeds = {n: rng.standard_normal((2, 67, 13)).astype("float32") for n in ("q", "k")}
    with Target(target):
        lanes = Target.resolve().vector_lanes
        if target.endswith("haswell"):  # runs on any x86 host
            check_against_ort(model, feeds)
        with PassContext(opt_level=3):
            fn = graph.optimize(*from_onnx(model))
            shapes = [tuple(c.ty.shape) for c in post_order(fn.body) if isinstance(c, Call)
                      for c in post_order(c.op.body)
                      if isinstance(c, Call) and c.op.name == "matmul"]
            assert shapes == [(2, 72, -(-67 // lanes) * lanes), (2, 72, 13)]
            fn = graph.optimize(*from_onnx(attention(37)))
            assert "nn.pad" not in _kernel_ops(fn)


def _kernel_ops(fn) -> list[str]:
    kernels = [e.op for e in post_order(fn.body) if isinstance(e, Call)]
    return [c.op.name for k in kernels for c in post_order(k.body) if isinstance(c, Call)]
