"""The graph passes (compiler/graph/passes/) on the reference's worked examples
(pass-infra-and-operator-fusion, 0x01 and 0x03): FoldConstant, EliminateCommonSubexpr
at opt_level 3 only, FuseOps at fuse_opt_level 0 and by default, each fusion rule on a
small graph, max_depth, a pass's required InferType; every rewrite keeps the numbers
(the numpy reference evaluator)."""
from __future__ import annotations

import numpy as np
import pytest

from compiler import graph
from compiler.graph.ir.expr import Call, Function
from compiler.graph.ir.functor import post_order
from compiler.graph.ir.reference import evaluate
from compiler.ir.module import IRModule
from compiler.transform.pass_infra import PassContext, Sequential
from graph_example import T, example

rng = np.random.default_rng(0)


def fused_functions(mod) -> list[Function]:
    """The Primitive functions the main function calls, in calling order."""
    found = []
    for e in post_order(mod["main"].body):
        if isinstance(e, Call) and isinstance(e.op, Function) and e.op not in found:
            found.append(e.op)
    return found


def ops_of(fn: Function) -> list[str]:
    """The ops a function calls, each node once, in post-order."""
    return [e.op.name for e in post_order(fn.body) if isinstance(e, Call)]


def same_numbers(before, after, *inputs):
    want = evaluate(before["main"], *inputs)
    got = evaluate(after["main"], *inputs)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_fold_constant_folds_the_constant_subgraph_as_in_the_reference():
    mod = IRModule.from_expr(example())
    folded = graph.passes.FoldConstant()(mod)
    assert str(folded).splitlines()[1:] == [
        f"  %0 = nn.conv2d(%x, %weight, padding=[0, 0, 0, 0]) /* ty={T} */;",
        f"  %1 = add(%0, meta[relay.Constant][0] /* ty={T} */) /* ty={T} */;",
        f"  %2 = add(%1, meta[relay.Constant][1] /* ty={T} */) /* ty={T} */;",
        f"  %3 = add(%1, meta[relay.Constant][1] /* ty={T} */) /* ty={T} */;",
        f"  add(%2, %3) /* ty={T} */",
        "}"]


def test_eliminate_common_subexpr_runs_at_opt_level_3_only():
    folded = graph.passes.FoldConstant()(IRModule.from_expr(example()))
    cse = graph.passes.EliminateCommonSubexpr()
    assert str(cse(folded)) == str(folded)  # the default opt_level is 2
    with PassContext(opt_level=3):
        merged = cse(folded)
    assert str(merged).splitlines()[-2] == f"  add(%2, %2) /* ty={T} */"


def test_fuse_opt_level_0_gives_one_primitive_function_per_op():
    mod = graph.passes.FoldConstant()(IRModule.from_expr(example()))
    fused = graph.passes.FuseOps(fuse_opt_level=0)(mod)
    fns = fused_functions(fused)
    assert [ops_of(f) for f in fns] == [["nn.conv2d"], ["add"], ["add"], ["add"], ["add"]]
    assert all(f.attrs["Primitive"] == 1 for f in fns)
    text = str(fused).splitlines()
    assert text[1].startswith("  %0 = fn (%p0: Tensor[(1, 64, 56, 56), float32], "
                              "%p1: Tensor[(64, 64, 3, 3), float32], Primitive=1) -> ")
    assert text[4] == f"  %1 = %0(%x, %weight) /* ty={T} */;"


@pytest.mark.parametrize("opt_level, disabled, adds", [
    (2, [], 4), (3, [], 3), (3, ["EliminateCommonSubexpr"], 4)])
def test_the_sequential_of_the_reference(opt_level, disabled, adds):
    seq = Sequential([graph.passes.FoldConstant(), graph.passes.EliminateCommonSubexpr(),
                      graph.passes.FuseOps()])
    mod = IRModule.from_expr(example(rng.random((1, 64, 54, 54), "float32")))
    with PassContext(opt_level=opt_level, disabled_pass=disabled):
        fused = seq(mod)
    fn, = fused_functions(fused)
    assert ops_of(fn) == ["nn.conv2d", *["add"] * adds]
    assert [p.name for p in fn.params] == ["p0", "p1", "p2", "p3"]
    x = rng.random((1, 64, 56, 56), "float32")
    w = rng.random((64, 64, 3, 3), "float32") - 0.5
    same_numbers(mod, fused, x, w)


def residual_block():
    x = graph.var("x", shape=(1, 7, 13, 13))
    w = graph.const(rng.random((7, 7, 3, 3), "float32") - 0.5)
    b = graph.const(rng.random(7, "float32"))
    y = graph.nn.relu(graph.nn.bias_add(graph.nn.conv2d(x, w, padding=1), b))
    return graph.Function([x], graph.add(y, x)), [rng.random((1, 7, 13, 13), "float32")]


def fuse(fn, **config):
    mod = IRModule.from_expr(fn)
    with PassContext(opt_level=2, config=config):
        return mod, graph.passes.FuseOps()(mod)


def test_conv2d_bias_relu_and_the_residual_add_fuse_into_one_kernel():
    fn, inputs = residual_block()
    mod, fused = fuse(fn)
    f, = fused_functions(fused)
    assert ops_of(f) == ["nn.conv2d", "nn.bias_add", "nn.relu", "add"]
    same_numbers(mod, fused, *inputs)


def test_a_diamond_of_elementwise_ops_is_one_group():
    x = graph.var("x", shape=(37,))
    a = graph.nn.relu(x)
    fn = graph.Function([x], graph.add(graph.exp(a), graph.sigmoid(a)))
    mod, fused = fuse(fn)
    f, = fused_functions(fused)
    assert sorted(ops_of(f)) == ["add", "exp", "nn.relu", "sigmoid"]
    same_numbers(mod, fused, rng.random(37, "float32"))


def test_a_diamond_of_injective_ops_is_one_group():
    x = graph.var("x", shape=(4, 6))
    t = graph.transpose(x)
    fn = graph.Function([x], graph.add(graph.reshape(t, (6, 4)), graph.nn.relu(t)))
    mod, fused = fuse(fn)
    f, = fused_functions(fused)
    assert sorted(ops_of(f)) == ["add", "nn.relu", "reshape", "transpose"]
    same_numbers(mod, fused, rng.random((4, 6), "float32"))


def test_elementwise_ops_fuse_into_the_reduction_after_them():
    x = graph.var("x", shape=(7, 13))
    fn = graph.Function([x], graph.sum(graph.exp(graph.nn.relu(x)), axis=1))
    mod, fused = fuse(fn)
    f, = fused_functions(fused)
    assert ops_of(f) == ["nn.relu", "exp", "sum"]
    same_numbers(mod, fused, rng.random((7, 13), "float32"))


def test_an_opaque_op_stops_fusion():
    x = graph.var("x", shape=(3, 7))
    fn = graph.Function([x], graph.nn.relu(graph.nn.softmax(graph.nn.relu(x))))
    mod, fused = fuse(fn)
    assert [ops_of(f) for f in fused_functions(fused)] == [["nn.relu"], ["nn.softmax"],
                                                           ["nn.relu"]]
    same_numbers(mod, fused, rng.random((3, 7), "float32"))


def test_max_depth_bounds_the_size_of_a_group():
    x = graph.var("x", shape=(5,))
    y = x
    for _ in range(10):
        y = graph.nn.relu(y)
    mod, fused = fuse(graph.Function([x], y), **{"relay.FuseOps.max_depth": 4})
    sizes = [len(ops_of(f)) for f in fused_functions(fused)]
    assert sum(sizes) == 10 and max(sizes) <= 4
    assert [len(ops_of(f)) for f in fused_functions(fuse(graph.Function([x], y))[1])] == [10]


def test_batch_norm_stays_opaque_and_its_field_is_read_outside():
    x = graph.var("x", shape=(1, 4, 5, 5))
    vec = [graph.const(rng.random(4, "float32") + 0.5) for _ in range(4)]
    fn = graph.Function([x], graph.nn.relu(graph.nn.batch_norm(x, *vec)))
    mod, fused = fuse(fn)
    assert [ops_of(f) for f in fused_functions(fused)] == [["nn.batch_norm"], ["nn.relu"]]
    same_numbers(mod, fused, rng.random((1, 4, 5, 5), "float32"))


def test_a_pass_that_requires_infer_type_gets_it_first():
    mod = IRModule.from_expr(example())
    assert mod["main"].ret_type is None
    assert graph.passes.FuseOps()(mod)["main"].ret_type is not None


def test_simplify_inference_unfolds_batch_norm_into_a_multiply_and_an_add():
    x = graph.var("x", shape=(1, 4, 5, 5))
    vec = [graph.const(rng.random(4, "float32") + 0.5) for _ in range(4)]
    fn = graph.Function([x], graph.nn.relu(graph.nn.batch_norm(x, *vec)))
    mod = IRModule.from_expr(fn)
    simple = Sequential([graph.passes.SimplifyInference(),
                         graph.passes.FoldConstant()])(mod)
    fused = graph.passes.FuseOps()(simple)
    f, = fused_functions(fused)
    assert ops_of(f) == ["multiply", "add", "nn.relu"]  # one kernel, the statistics folded
    same_numbers(mod, fused, rng.random((1, 4, 5, 5), "float32"))


def test_fold_scale_axis_folds_a_batch_norm_into_the_convolution_weights():
    x = graph.var("x", shape=(1, 7, 9, 9))
    w = graph.const(rng.random((5, 7, 3, 3), "float32") - 0.5)
    b = graph.const(rng.random(5, "float32"))
    vec = [graph.const(rng.random(5, "float32") + 0.5) for _ in range(4)]
    conv = graph.nn.bias_add(graph.nn.conv2d(x, w, padding=1), b)
    fn = graph.Function([x], graph.nn.relu(graph.nn.batch_norm(conv, *vec)))
    mod = IRModule.from_expr(fn)
    seq = Sequential([graph.passes.SimplifyInference(), graph.passes.FoldConstant(),
                      graph.passes.FoldScaleAxis(), graph.passes.FoldConstant(),
                      graph.passes.FuseOps()])
    with PassContext(opt_level=3):
        folded = seq(mod)
    f, = fused_functions(folded)
    assert ops_of(f) == ["nn.conv2d", "nn.bias_add", "add", "nn.relu"]  # no multiply
    same_numbers(mod, folded, rng.random((1, 7, 9, 9), "float32"))
    with PassContext(opt_level=2):  # FoldScaleAxis is an opt_level 3 pass
        kept = seq(mod)
    assert "multiply" in ops_of(fused_functions(kept)[0])


def test_fold_scale_axis_folds_every_convolution_of_a_chain_and_still_sees_shared_ones():
    """A fold rewrites the convolution after it (its input is new): that one is folded
    too, while one read twice is left alone however far downstream it is."""
    x = graph.var("x", shape=(1, 4, 6, 6))

    def conv_bn(data):
        w = graph.const(rng.random((4, 4, 3, 3), "float32") - 0.5)
        vec = [graph.const(rng.random(4, "float32") + 0.5) for _ in range(4)]
        return graph.nn.batch_norm(graph.nn.conv2d(data, w, padding=1), *vec)

    y = conv_bn(conv_bn(conv_bn(x)))
    w = graph.const(rng.random((4, 4, 1, 1), "float32"))
    shared = graph.nn.conv2d(y, w)
    body = graph.add(graph.multiply(shared, graph.const(rng.random((4, 1, 1), "float32"))),
                     shared)
    mod = IRModule.from_expr(graph.Function([x], body))
    seq = Sequential([graph.passes.SimplifyInference(), graph.passes.FoldConstant(),
                      graph.passes.FoldScaleAxis(), graph.passes.FoldConstant(),
                      graph.passes.FuseOps()])
    with PassContext(opt_level=3):
        folded = seq(mod)
    kernels = [ops_of(f) for f in fused_functions(folded)]
    assert kernels[:3] == [["nn.conv2d", "add"]] * 3  # all three batch norms' scales folded
    assert "multiply" in kernels[3]  # the shared convolution keeps its multiply
    same_numbers(mod, folded, rng.random((1, 4, 6, 6), "float32"))


def test_fold_scale_axis_leaves_a_shared_convolution_or_a_spatial_scale_alone():
    x = graph.var("x", shape=(1, 3, 4, 4))
    w = graph.const(rng.random((2, 3, 1, 1), "float32"))
    conv = graph.nn.conv2d(x, w)
    shared = graph.add(graph.multiply(conv, graph.const(rng.random((2, 1, 1), "float32"))),
                       conv)
    spatial = graph.multiply(graph.nn.conv2d(x, w),
                             graph.const(rng.random((1, 4, 4), "float32")))
    for body in (shared, spatial):
        mod = IRModule.from_expr(graph.Function([x], body))
        with PassContext(opt_level=3):
            out = graph.passes.FoldScaleAxis()(mod)
        assert "multiply" in str(out)
        same_numbers(mod, out, rng.random((1, 3, 4, 4), "float32"))


def test_alter_op_layout_rewrites_the_conv2d_layout_as_in_the_reference():
    from compiler.graph.passes import alter_op_layout as alter

    @alter.register_alter_op_layout("nn.conv2d")
    def alter_conv2d(attrs, inputs, tinfos, out_type):
        data, weight = inputs
        new_attrs = dict(attrs)
        new_attrs["data_layout"] = "NCHW16c"
        return graph.nn.conv2d(data, weight, **new_attrs)

    try:
        mod = IRModule.from_expr(example(rng.random((1, 64, 54, 54), "float32")))
        with PassContext(opt_level=3):
            altered = graph.passes.AlterOpLayout()(mod)
    finally:
        graph.op.reset_op_attr("nn.conv2d", alter.ALTER_ATTR)
    text = str(altered)
    packed = "Tensor[(1, 4, 54, 54, 16), float32]"
    assert ('nn.conv2d(%0, %weight, padding=[0, 0, 0, 0], data_layout="NCHW16c") '
            f"/* ty={packed} */") in text
    assert text.count("layout_transform(") == 4  # x, the folded-to-be term, c, the result
    assert text.count(f"add(%5, %6) /* ty={packed} */") == 2  # c transformed once, shared
    assert text.splitlines()[-2] == ('  layout_transform(%9, src_layout="NCHW16c", '
                                     f'dst_layout="NCHW") /* ty={T} */')
    x = rng.random((1, 64, 56, 56), "float32")
    same_numbers(mod, altered, x, rng.random((64, 64, 3, 3), "float32") - 0.5)


def test_two_packed_convolutions_meet_without_a_layout_transform():
    from compiler.graph.passes import alter_op_layout as alter
    alter.register_alter_op_layout(
        "nn.conv2d", lambda attrs, inputs, tinfos, out: graph.nn.conv2d(
            *inputs, **dict(attrs, data_layout="NCHW16c")))
    try:
        x = graph.var("x", shape=(1, 32, 9, 9))
        w1 = graph.const(rng.random((32, 32, 3, 3), "float32") - 0.5)
        w2 = graph.const(rng.random((16, 32, 1, 1), "float32") - 0.5)
        y = graph.nn.conv2d(graph.nn.relu(graph.nn.conv2d(x, w1, padding=1)), w2)
        mod = IRModule.from_expr(graph.Function([x], y))
        with PassContext(opt_level=3):
            altered = graph.passes.AlterOpLayout()(mod)
    finally:
        graph.op.reset_op_attr("nn.conv2d", alter.ALTER_ATTR)
    assert str(altered).count("layout_transform(") == 2  # into the first, out of the last
    same_numbers(mod, altered, rng.random((1, 32, 9, 9), "float32"))


def test_dead_code_elimination_drops_the_tuple_fields_nothing_selects():
    x = graph.var("x", shape=(2, 7))
    live, dead = graph.nn.relu(x), graph.exp(graph.sigmoid(x))
    fn = graph.Function([x], graph.add(graph.TupleGetItem(graph.Tuple([live, dead]), 0), x))
    mod = IRModule.from_expr(fn)
    after = graph.passes.DeadCodeElimination()(mod)
    assert [e.op.name for e in post_order(after["main"].body) if isinstance(e, Call)] == \
        ["nn.relu", "add"]
    assert "Tuple" not in str(after) and "sigmoid" not in str(after)
    same_numbers(mod, after, rng.random((2, 7), "float32"))
    assert str(graph.passes.DeadCodeElimination()(after)) == str(after)


def test_a_group_too_deep_to_lower_is_a_build_error_naming_the_kernel():
    """Groups past the default max_depth, under a low recursion limit: a BuildError that
    names the kernel and the pass config, not a RecursionError from deep inside."""
    import sys

    from compiler.errors import BuildError

    x = graph.var("x", shape=(2, 3))
    y = x
    for _ in range(300):
        y = graph.nn.relu(graph.add(y, graph.const(np.float32(1.0))))
    limit = sys.getrecursionlimit()
    with PassContext(opt_level=3, config={"relay.FuseOps.max_depth": 1000}):
        sys.setrecursionlimit(400)
        try:
            with pytest.raises(BuildError, match=r"kernel .*relay\.FuseOps\.max_depth, now 1000"):
                graph.build(graph.IRModule.from_expr(graph.Function([x], y)))
        finally:
            sys.setrecursionlimit(limit)
