"""The graph level's IR (compiler/graph): nodes, the op registry's type relations, the
text form of the reference's example (pass-infra-and-operator-fusion, 0x01) before and
after InferType, and type errors that name the op and the shapes."""
from __future__ import annotations

import numpy as np
import pytest

from compiler import graph
from compiler.graph import GraphTypeError, TensorType, TupleType
from compiler.ir.module import IRModule
from compiler.transform.pass_infra import PassContext, Sequential
from graph_example import T, example


def test_the_example_prints_in_the_reference_text_form():
    assert str(IRModule.from_expr(example())) == "\n".join([
        "def @main(%x: Tensor[(1, 64, 56, 56), float32], "
        "%weight: Tensor[(64, 64, 3, 3), float32]) {",
        "  %0 = nn.conv2d(%x, %weight, padding=[0, 0, 0, 0]);",
        "  %1 = add(meta[relay.Constant][0], meta[relay.Constant][0]);",
        "  %2 = multiply(%1, 2f);",
        "  %3 = add(%0, %2);",
        "  %4 = add(%3, meta[relay.Constant][0]);",
        "  %5 = add(%3, meta[relay.Constant][0]);",
        "  add(%4, %5)",
        "}"])


def test_infer_type_types_every_node_and_the_text_shows_them():
    mod = graph.passes.InferType()(IRModule.from_expr(example()))
    text = str(mod).splitlines()
    assert text[0].endswith(f") -> {T} {{")
    assert text[1] == f"  %0 = nn.conv2d(%x, %weight, padding=[0, 0, 0, 0]) /* ty={T} */;"
    assert text[4] == f"  %3 = add(%0, %2) /* ty={T} */;"
    assert text[5] == (f"  %4 = add(%3, meta[relay.Constant][0] /* ty={T} */) "
                       f"/* ty={T} */;")
    assert text[-2] == f"  add(%4, %5) /* ty={T} */"
    assert mod["main"].ret_type == TensorType((1, 64, 54, 54))


def test_infer_type_keeps_a_shared_node_shared():
    x = graph.var("x", shape=(4,))
    a = graph.exp(x)
    fn = graph.passes.InferType()(IRModule.from_expr(
        graph.Function([x], graph.add(a, a))))["main"]
    assert fn.body.args[0] is fn.body.args[1] and fn.body.args[0].ty == TensorType((4,))


def test_infer_type_again_reuses_what_did_not_change_and_types_what_did():
    x = graph.var("x", shape=(4, 6))
    fn = graph.passes.InferType()(IRModule.from_expr(
        graph.Function([x], graph.add(graph.exp(x), graph.exp(x)))))["main"]
    assert graph.passes.InferType()(IRModule.from_expr(fn))["main"] is fn
    # a pass replaces one operand by a node of another shape, carrying a stale type
    left, right = fn.body.args
    wider = graph.Call(right.op, (graph.var("y", shape=(3, 4, 6)),), right.attrs, right.ty)
    body = graph.Call(fn.body.op, (left, wider), fn.body.attrs, fn.body.ty)
    again = graph.passes.InferType()(IRModule.from_expr(
        graph.Function([x, wider.args[0]], body)))["main"]
    assert again.body.args[0] is left  # unchanged, not rebuilt
    assert again.body.args[1].ty == again.body.ty == TensorType((3, 4, 6))


@pytest.mark.parametrize("make, shape", [
    (lambda x: graph.nn.conv2d(x, graph.var("w", shape=(13, 7, 3, 3)), strides=2,
                               padding=1), (1, 13, 19, 19)),
    (lambda x: graph.nn.conv2d(x, graph.var("w", shape=(7, 1, 3, 3)), groups=7, padding=1),
     (1, 7, 37, 37)),
    (lambda x: graph.nn.conv2d(x, graph.var("w", shape=(5, 7, 3, 3)), dilation=2),
     (1, 5, 33, 33)),
    (lambda x: graph.nn.max_pool2d(x, 3, 2, 1), (1, 7, 19, 19)),
    (lambda x: graph.nn.avg_pool2d(x, 2, 2), (1, 7, 18, 18)),
    (lambda x: graph.nn.global_avg_pool2d(x), (1, 7, 1, 1)),
    (lambda x: graph.nn.batch_flatten(x), (1, 7 * 37 * 37)),
    (lambda x: graph.reshape(x, (0, -1)), (1, 7 * 37 * 37)),
    (lambda x: graph.transpose(x, (0, 2, 3, 1)), (1, 37, 37, 7)),
    (lambda x: graph.nn.pad(x, ((0, 0), (0, 0), (1, 2), (3, 4))), (1, 7, 40, 44)),
    (lambda x: graph.mean(x, axis=(2, 3), keepdims=True), (1, 7, 1, 1)),
    (lambda x: graph.sum(x, axis=1), (1, 37, 37)),
    (lambda x: graph.concatenate([x, x], axis=1), (1, 14, 37, 37)),
    (lambda x: graph.nn.bias_add(x, graph.var("b", shape=(7,))), (1, 7, 37, 37)),
    (lambda x: graph.clip(graph.nn.relu(x), 0, 6), (1, 7, 37, 37)),
    (lambda x: graph.nn.softmax(graph.sigmoid(graph.tanh(x)), axis=1), (1, 7, 37, 37)),
    (lambda x: graph.matmul(x, graph.var("m", shape=(37, 13))), (1, 7, 37, 13)),
])
def test_type_relations_on_odd_shapes(make, shape):
    x = graph.var("x", shape=(1, 7, 37, 37))
    fn = graph.passes.InferType()(IRModule.from_expr(graph.Function([x], make(x))))["main"]
    assert fn.ret_type == TensorType(shape)


def test_dense_batch_matmul_batch_norm_and_layout_transform():
    x = graph.var("x", shape=(3, 37))
    dense = graph.nn.dense(x, graph.var("w", shape=(13, 37)))
    a, b = graph.var("a", shape=(2, 7, 5)), graph.var("b", shape=(2, 13, 5))
    data = graph.var("d", shape=(1, 32, 7, 7))
    vec = [graph.var(n, shape=(32,)) for n in "gbmv"]
    norm = graph.nn.batch_norm(data, *vec)
    packed = graph.layout_transform(data, "NCHW", "NCHW16c")
    fn = graph.Function([x, a, b, data], graph.Tuple(
        [dense, graph.nn.batch_matmul(a, b), norm, packed,
         graph.layout_transform(packed, "NCHW16c", "NCHW")]))
    typed = graph.passes.InferType()(IRModule.from_expr(fn))["main"]
    assert typed.ret_type == TupleType((
        TensorType((3, 13)), TensorType((2, 7, 13)), TensorType((1, 32, 7, 7)),
        TensorType((1, 2, 7, 7, 16)), TensorType((1, 32, 7, 7))))
    assert typed.body.fields[2].tuple_value.ty == TupleType(
        (TensorType((1, 32, 7, 7)), TensorType((32,)), TensorType((32,))))


@pytest.mark.parametrize("make, words", [
    (lambda x: graph.add(x, graph.var("y", shape=(3, 5))),
     r"add: shapes \(1, 7, 37, 37\) and \(3, 5\) do not broadcast"),
    (lambda x: graph.nn.conv2d(x, graph.var("w", shape=(8, 3, 3, 3))),
     r"nn.conv2d: data \(1, 7, 37, 37\) and weight \(8, 3, 3, 3\) do not match"),
    (lambda x: graph.nn.conv2d(x, graph.var("w", shape=(8, 7, 39, 39))),
     r"nn.conv2d: a window of 39"),
    (lambda x: graph.reshape(x, (5, -1)), r"reshape: cannot reshape \(1, 7, 37, 37\)"),
    (lambda x: graph.nn.bias_add(x, graph.var("b", shape=(8,))),
     r"nn.bias_add: bias \(8,\) does not match axis 1"),
    (lambda x: graph.add(x, graph.var("i", shape=(1,), dtype="int32")),
     r"add: arguments of different dtypes"),
    (lambda x: graph.layout_transform(x, "NCHW", "NCHW16c"),
     r"layout_transform: 7 channels do not split into blocks of 16"),
])
def test_a_type_error_names_the_op_and_the_shapes(make, words):
    x = graph.var("x", shape=(1, 7, 37, 37))
    mod = IRModule.from_expr(graph.Function([x], make(x)))
    with pytest.raises(GraphTypeError, match=words):
        graph.passes.InferType()(mod)


def test_an_unknown_attribute_or_op_is_named():
    x = graph.var("x", shape=(1, 3, 8, 8))
    with pytest.raises(TypeError, match="nn.relu: unknown attribute.*alpha"):
        graph.op.call("nn.relu", [x], alpha=0.1)
    with pytest.raises(KeyError, match="no graph op 'nn.gelu'"):
        graph.get_op("nn.gelu")


def test_graph_functions_and_prim_funcs_share_a_module_and_the_pass_infrastructure():
    from compiler.ir.module import BaseFunc
    fn = example()
    assert isinstance(fn, BaseFunc)
    seen = []
    with PassContext(opt_level=3):
        mod = Sequential([graph.passes.InferType()])(IRModule.from_expr(fn))
    seen.append(mod["main"].ret_type)
    assert seen == [TensorType((1, 64, 54, 54))]
    assert set(mod.functions) == {"main"} and "main" in mod


def test_the_ops_the_issue_names_are_registered_with_a_pattern():
    from compiler.ops.pattern import OpPattern
    names = {"nn.conv2d", "nn.dense", "nn.batch_matmul", "matmul", "nn.bias_add", "add",
             "subtract", "multiply", "divide", "nn.relu", "clip", "sigmoid", "tanh", "exp",
             "nn.batch_norm", "nn.max_pool2d", "nn.avg_pool2d", "nn.global_avg_pool2d",
             "nn.softmax", "reshape", "nn.batch_flatten", "transpose", "concatenate",
             "nn.pad", "mean", "sum", "layout_transform"}
    assert names <= set(graph.registered_ops())
    assert graph.get_op("nn.conv2d").pattern == OpPattern.OUT_ELEMWISE_FUSABLE
    assert graph.get_op("add").pattern == OpPattern.BROADCAST
    assert graph.get_op("nn.softmax").pattern == OpPattern.OPAQUE


def test_a_prim_func_pass_leaves_graph_functions_alone():
    from compiler import te
    from compiler.build import lower
    from compiler.transform.pass_infra import prim_func_pass
    a = te.placeholder((4,), name="A")
    b = te.compute((4,), lambda i: a[i] + 1.0, name="B")
    prim = lower(te.create_schedule(b.op), [a, b], name="plus_one")
    mod = IRModule.from_expr(example()).with_function(prim)
    touched = []
    out = prim_func_pass(lambda f, m, c: touched.append(f.name) or f)(mod)
    assert touched == ["plus_one"] and out["main"] is mod["main"]
    text = str(out)
    assert text.startswith("def @main(") and "plus_one" in text


def test_constants_and_attributes_that_differ_never_print_alike():
    """The text is a function's identity (the build compiles one kernel per distinct
    text): 1.5000001 and 1.5000003 are two float32 values that read 1.5 in six digits."""
    x = graph.var("x", shape=(2,))
    texts = [str(graph.multiply(x, graph.const(np.array(v, "float32"))))
             for v in (1.5000001, 1.5000003, 1.5)]
    assert len(set(texts)) == 3 and texts[2].endswith("multiply(%x, 1.5f)")
    alphas = [str(graph.nn.leaky_relu(x, alpha=a)) for a in (0.1, 0.1000001)]
    assert alphas[0].endswith("alpha=0.1f)") and alphas[0] != alphas[1]


def test_kernels_with_constants_alike_to_six_digits_are_two_kernels_and_compute_their_own():
    x, y = graph.var("x", shape=(4, 8)), graph.var("y", shape=(4, 8))
    outs = [graph.multiply(graph.nn.relu(v), graph.const(np.array(c, "float32")))
            for v, c in ((x, 1.0000001), (y, 1.5000001), (y, 1.5000003))]
    lib = graph.build(IRModule.from_expr(graph.Function([x, y], graph.Tuple(outs))))
    ones = np.ones((4, 8), "float32")
    got = lib.run(x=ones, y=ones)
    assert len(lib.kernels) == 3
    for g, c in zip(got, (1.0000001, 1.5000001, 1.5000003)):
        np.testing.assert_array_equal(g, np.full((4, 8), np.float32(c)))


def test_a_constant_owns_its_data_and_takes_a_frozen_array_without_a_copy():
    """The graph owns its constants: a writeable array (or a view) is copied and frozen,
    so writing the caller's array changes nothing; an array of its own that no one may
    write (a folded value) is taken as it is."""
    data = np.arange(6, dtype="float32")
    c = graph.Constant(data)
    data[0] = 100
    assert c.data[0] == 0 and not c.data.flags.writeable
    view = np.arange(6, dtype="float32")[::2]
    view.setflags(write=False)
    assert graph.Constant(view).data is not view  # a view: its base may still change
    frozen = np.ones(4, "float32")
    frozen.setflags(write=False)
    assert graph.Constant(frozen).data is frozen


def test_a_constant_takes_a_view_no_one_can_write_and_copies_one_that_may_change():
    """A read-only view is taken as it is only when everything under it is read-only
    too, down to a read-only owner or a bytes object (an ONNX initializer's raw data):
    a model's weights are not copied at each fold. A read-only view of a bytearray or of
    a writeable array may still change, so it is copied."""
    frozen = np.arange(12, dtype="float32").reshape(3, 4).copy()
    frozen.setflags(write=False)
    assert graph.Constant(frozen.T).data.base is frozen  # a folded transpose: no copy
    raw = np.arange(6, dtype="float32").tobytes()
    weights = np.frombuffer(raw, "float32").reshape(2, 3)
    assert graph.Constant(weights).data is weights
    assert graph.Constant(weights.T[::2]).data.base is not None
    mutable = np.frombuffer(bytearray(raw), "float32")
    mutable.setflags(write=False)
    assert graph.Constant(mutable).data is not mutable
    assert np.shares_memory(graph.Constant(mutable).data, mutable) is False


def test_folding_a_weights_transpose_keeps_a_view_and_the_build_stays_right():
    """FoldConstant folds transpose(W) of a read-only weight to a view of W (no copy),
    and the model built on it computes with the transposed values (the executor makes
    its constants contiguous)."""
    w = np.arange(12, dtype="float32").reshape(4, 3) / 7
    w.setflags(write=False)
    x = graph.var("x", shape=(2, 4))
    mod = IRModule.from_expr(graph.Function(
        [x], graph.nn.dense(x, graph.transpose(graph.Constant(w), (1, 0)))))
    weight = graph.passes.FoldConstant()(graph.passes.InferType()(mod))["main"].body.args[1]
    assert isinstance(weight, graph.Constant) and weight.data.base is w
    np.testing.assert_array_equal(weight.data, w.T)
    data = np.random.default_rng(0).standard_normal((2, 4)).astype("float32")
    [got] = graph.build(mod, target="llvm").run(x=data)
    np.testing.assert_allclose(got, data @ w, rtol=1e-6, atol=1e-6)
