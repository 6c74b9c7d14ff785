"""Conformance of the shape, indexing and reduction ONNX ops (compiler/frontend/onnx_ops/
shape.py, reduce.py) against ONNX Runtime, each attribute variant a node of its own, in
the opsets where their inputs changed; and the shape subgraphs exporters emit (Shape ->
Gather -> Unsqueeze -> Concat -> Reshape) folded to constants at import."""
from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("onnxruntime")

from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from compiler.frontend import from_onnx  # noqa: E402
from compiler.graph.ir.expr import Call  # noqa: E402
from compiler.graph.ir.functor import post_order  # noqa: E402
from onnx_cases import In, check_against_ort, node, node_model  # noqa: E402

F = np.float32


def i64(*values):
    return np.array(values, "int64")


X3 = In(7, 13, 37)
BIG = 2 ** 62
CASES = {  # op type: (opset, nodes)
    "Reshape": (17, [node(X3, i64(7, -1)), node(X3, i64(0, 37, 13))]),
    "Flatten": (17, [node(X3, axis=2), node(X3, axis=0), node(X3)]),
    "Squeeze": (17, [node(In(7, 1, 13, 1), i64(1)), node(In(1, 13, 1))]),
    "Unsqueeze": (17, [node(In(7, 13), i64(0, -1)), node(In(13), i64(1))]),
    "Shape": (17, [node(X3), node(X3, start=1), node(X3, start=-2, end=-1)]),
    "Size": (17, [node(X3)]),
    "Slice": (17, [node(X3, i64(1, -10), i64(6, BIG), i64(0, 2), i64(2, 3)),
                   node(X3, i64(-1), i64(-BIG), i64(1), i64(-2)),
                   node(X3, i64(2, 0), i64(100, 3))]),
    "Split": (17, [node(In(7, 14), outputs=2, axis=1),
                   node(X3, i64(2, 5, 6), outputs=3, axis=1)]),
    "Gather": (17, [node(In(37, 13), In(2, 7, dtype="int64", low=-37, high=37)),
                    node(X3, i64(12, 0, -1), axis=1), node(X3, np.array(3), axis=2)]),
    "GatherElements": (17, [node(In(7, 13), In(5, 13, dtype="int64", low=-7, high=7)),
                            node(X3, In(7, 13, 2, dtype="int64", low=0, high=37), axis=2)]),
    "ScatterND": (17, [node(In(7, 13), np.array([[5], [1]], "int64"), In(2, 13)),
                       node(X3, np.array([[[0, 1], [6, -1]]], "int64"), In(1, 2, 37))]),
    "TopK": (17, [node(In(7, 37), i64(5), outputs=2),
                  node(In(7, 13), i64(3), outputs=2, axis=0, largest=0)]),
    "CumSum": (17, [node(In(7, 13), np.array(1)), node(In(37), np.array(0), exclusive=1),
                    node(In(2, 7, 13), np.array(-2), reverse=1),
                    node(In(7, 13, dtype="int64"), np.array(0), exclusive=1, reverse=1)]),
    "Expand": (17, [node(In(7, 1), i64(2, 7, 13)), node(In(13), i64(7, 1))]),
    "Tile": (17, [node(In(7, 13), i64(2, 3)), node(In(2, 7, 1), i64(1, 1, 37))]),
    "Concat": (17, [node(In(7, 13), In(7, 2), axis=1), node(In(2, 3), In(1, 3), axis=-2)]),
    "Transpose": (17, [node(X3, perm=[2, 0, 1]), node(In(7, 13))]),
    "Trilu": (17, [node(In(7, 13)), node(In(2, 13, 7), np.array(-2), upper=0),
                   node(In(37, 37), np.array(3))]),
    "DepthToSpace": (17, [node(In(1, 12, 7, 13), blocksize=2),
                          node(In(2, 18, 7, 5), blocksize=3, mode="CRD")]),
    "SpaceToDepth": (17, [node(In(1, 3, 14, 26), blocksize=2)]),
    "ReduceMean": (17, [node(X3, axes=[1]), node(X3, axes=[0, -1], keepdims=0),
                        node(X3)]),
    "ReduceSum": (17, [node(X3, i64(1)), node(X3, i64(-1), keepdims=0), node(X3),
                       node(X3, i64(), noop_with_empty_axes=1)]),
    "ReduceMax": (18, [node(X3, i64(1)), node(X3, i64(0, 2), keepdims=0)]),
    "ReduceMin": (18, [node(X3, i64(2)), node(X3)]),
    "ReduceL2": (17, [node(X3, axes=[2]), node(X3, axes=[0, 1], keepdims=0)]),
    "ReduceSumSquare": (17, [node(X3, axes=[1])]),
    "ArgMax": (17, [node(X3, axis=1), node(X3, axis=-1, keepdims=0),
                    node(In(7, 13, dtype="int64", low=0, high=3), axis=1,
                         select_last_index=1)]),
    "ArgMin": (17, [node(X3, axis=2), node(In(7, 13, dtype="int64", low=0, high=3),
                                           axis=0)]),
}


@pytest.mark.parametrize("op_type", CASES)
def test_the_op_matches_onnx_runtime(op_type):
    opset, nodes = CASES[op_type]
    check_against_ort(*node_model(op_type, nodes, opset))


def test_split_into_equal_parts_by_num_outputs_of_opset_18():
    check_against_ort(*node_model("Split", [node(In(7, 13), outputs=3, axis=1,
                                                 num_outputs=3)], 18))


def test_squeeze_and_unsqueeze_with_axes_as_attributes_in_opset_11():
    check_against_ort(*node_model("Squeeze", [node(In(7, 1, 13), axes=[1])], 11))
    check_against_ort(*node_model("Unsqueeze", [node(In(7, 13), axes=[0, 3])], 11))


def test_constant_in_every_attribute_form():
    forms = [{"value": numpy_helper.from_array(np.arange(6, dtype=F).reshape(2, 3))},
             {"value_float": 2.5}, {"value_floats": [1.0, 2.0]}, {"value_int": 7},
             {"value_ints": [3, 4, 5]}]
    nodes = [helper.make_node("Constant", [], [f"c{k}"], **f) for k, f in enumerate(forms)]
    outs = [helper.make_empty_tensor_value_info(f"c{k}") for k in range(len(forms))]
    model = helper.make_model(helper.make_graph(nodes, "c", [], outs),
                              opset_imports=[helper.make_opsetid("", 17)])
    check_against_ort(model, {})


def _chain_model():
    """x (2, 7, 13) reshaped to (2, 91) by the subgraph exporters emit for
    x.view(x.size(0), -1), then Range / ConstantOfShape / Expand built from its shape."""
    nodes = [
        helper.make_node("Shape", ["x"], ["s"]),
        helper.make_node("Gather", ["s", "zero"], ["n"], axis=0),
        helper.make_node("Unsqueeze", ["n", "axes0"], ["n1"]),
        helper.make_node("Concat", ["n1", "minus1"], ["newshape"], axis=0),
        helper.make_node("Reshape", ["x", "newshape"], ["flat"]),
        helper.make_node("Shape", ["flat"], ["s2"]),
        helper.make_node("Gather", ["s2", "one"], ["cols"], axis=0),
        helper.make_node("Cast", ["cols"], ["colsf"], to=TensorProto.FLOAT),
        helper.make_node("Range", ["zerof", "colsf", "onef"], ["r"]),
        helper.make_node("ConstantOfShape", ["s2"], ["ones"],
                         value=numpy_helper.from_array(np.array([1.0], F))),
        helper.make_node("Mul", ["r", "ones"], ["pos"]),
        helper.make_node("Add", ["flat", "pos"], ["y"]),
    ]
    inits = [numpy_helper.from_array(v, k) for k, v in {
        "zero": np.array(0, "int64"), "one": np.array(1, "int64"), "axes0": i64(0),
        "minus1": i64(-1), "zerof": np.array(0.0, F), "onef": np.array(1.0, F)}.items()]
    g = helper.make_graph(nodes, "chain", [helper.make_tensor_value_info(
        "x", TensorProto.FLOAT, [2, 7, 13])], [helper.make_empty_tensor_value_info("y")],
        inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


def test_a_shape_subgraph_folds_to_constants_at_import_and_the_model_matches():
    model = _chain_model()
    mod, _ = from_onnx(model)
    ops = [e.op.name for e in post_order(mod["main"].body) if isinstance(e, Call)]
    assert ops == ["reshape", "add"]  # everything else was computed at import
    feeds = {"x": np.random.default_rng(0).standard_normal((2, 7, 13)).astype(F)}
    check_against_ort(model, feeds)


def test_a_gather_of_a_computed_value_at_a_runtime_index_reads_the_whole_axis():
    """Bound inference cannot know an index read from data: the value gathered from is
    computed whole (a regression: its region was taken from the index's value before
    the index existed)."""
    from onnx import TensorProto, helper, numpy_helper
    nodes = [helper.make_node("Reshape", ["x", "shape"], ["r"]),
             helper.make_node("Add", ["r", "bias"], ["s"]),
             helper.make_node("Gather", ["s", "i"], ["y"], axis=1)]
    g = helper.make_graph(nodes, "g", [
        helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 37 * 13]),
        helper.make_tensor_value_info("i", TensorProto.INT64, [])],
        [helper.make_empty_tensor_value_info("y")],
        [numpy_helper.from_array(np.ones((37, 13), F), "bias"),
         numpy_helper.from_array(i64(1, 37, 13), "shape")])
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    for i in (0, 36, -5):
        feeds = {"x": np.random.default_rng(abs(i)).standard_normal((1, 37 * 13)).astype(F),
                 "i": np.array(i, "int64")}
        check_against_ort(model, feeds)


def test_topk_is_one_kernel_with_two_outputs_that_further_kernels_read():
    """TopK's values and indices are the two outputs of one fused function (one kernel,
    which ranks once); its values feed a kernel (Relu), its indices are an output and
    feed another (Cast), and a value used inside and outside a group (Exp's, read by
    TopK and by the model's Mul) is computed once."""
    nodes = [helper.make_node("Exp", ["x"], ["e"]),
             helper.make_node("TopK", ["e", "k"], ["v", "i"], axis=1),
             helper.make_node("Relu", ["v"], ["r"]),
             helper.make_node("Cast", ["i"], ["c"], to=TensorProto.FLOAT),
             helper.make_node("Mul", ["e", "e"], ["m"])]
    g = helper.make_graph(nodes, "topk", [helper.make_tensor_value_info(
        "x", TensorProto.FLOAT, [7, 37])], [helper.make_empty_tensor_value_info(n)
                                           for n in ("r", "i", "c", "m")],
        [numpy_helper.from_array(i64(5), "k")])
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    feeds = {"x": np.random.default_rng(1).standard_normal((7, 37)).astype(F)}
    lib = check_against_ort(model, feeds)
    topk, = [s for s in lib.plan["steps"] if "topk" in s["ops"]]
    assert topk["ops"] == ["topk"]
    assert [o["shape"] for o in [topk, *topk["more_outs"]]] == [[7, 5], [7, 5]]
    assert [o["dtype"] for o in [topk, *topk["more_outs"]]] == ["float32", "int64"]
    assert sum("exp" in s["ops"] for s in lib.plan["steps"]) == 1
