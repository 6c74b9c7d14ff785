"""Bring Your Own Codegen's graph passes: AnnotateTarget, MergeCompilerRegions and
PartitionGraph (compiler/graph/passes/annotate_target.py, merge_compiler_regions.py,
partition_graph.py) on the reference's example (external-codegen, part 1: the subgraph
add -> subtract -> multiply of four (10, 10) inputs that goes to "ccompiler") and on
TVM's diamond, where merging every supported op would make a cycle; the text forms;
the numbers of every partitioned graph against the unpartitioned one (numpy); bad
input."""
from __future__ import annotations

import numpy as np
import pytest

from compiler import graph
from compiler.graph import passes as T
from compiler.graph.passes.annotation import read_regions
from compiler.graph.ir.expr import Call, GlobalVar, Tuple, TupleGetItem
from compiler.graph.ir.functor import post_order
from compiler.graph.ir.op import GraphTypeError, register_op_attr
from compiler.graph.ir.reference import evaluate
from compiler.transform.pass_infra import Sequential

rng = np.random.default_rng(0)

# a target for these tests: it takes negative, nn.relu and add, not tanh nor subtract
for _op in ("negative", "nn.relu", "add"):
    register_op_attr(_op, "target.test_target", lambda call: True)


def typed(fn) -> graph.IRModule:
    return T.InferType()(graph.IRModule.from_expr(fn))


def reference_example():
    """The reference's subgraph, its inputs named as there, and a softmax after it that
    ccompiler does not take."""
    x = [graph.var(f"gcc_input{i}", shape=(10, 10)) for i in range(4)]
    out = graph.multiply(graph.subtract(graph.add(x[0], x[1]), x[2]), x[3])
    return typed(graph.Function(x, graph.nn.softmax(out))), x


def regions_of(fn):
    """Each region's target and ops, in order."""
    regions, _ = read_regions(fn.body)
    return [(r.target, [n.op.name for n in r.nodes]) for r in regions]


def same_numbers(before, after, shapes):
    inputs = [rng.standard_normal(s).astype("float32") for s in shapes]
    want = evaluate(before["main"], *inputs)
    got = evaluate(after["main"], *inputs, module=after)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_annotate_target_gives_each_op_its_own_region_for_the_first_codegen_that_takes_it():
    mod, _ = reference_example()
    annotated = T.AnnotateTarget(["ccompiler"])(mod)
    assert regions_of(annotated["main"]) == [
        ("ccompiler", ["add"]), ("ccompiler", ["subtract"]), ("ccompiler", ["multiply"]),
        ("default", ["nn.softmax"])]
    text = str(annotated)
    assert 'annotation.compiler_begin(%gcc_input0, compiler="ccompiler")' in text
    assert 'nn.softmax(%' in text and 'compiler="default"' in text
    same_numbers(mod, annotated, [(10, 10)] * 4)


def test_the_reference_example_merges_into_one_ccompiler_function_in_the_text_form():
    mod, _ = reference_example()
    out = Sequential([T.AnnotateTarget(["ccompiler"]), T.MergeCompilerRegions(),
                      T.PartitionGraph()])(mod)
    ty = "Tensor[(10, 10), float32]"
    params = ", ".join(f"%ccompiler_0_i{i}: {ty}" for i in range(4))
    assert str(out) == "\n".join([
        f"def @main(%gcc_input0: {ty}, %gcc_input1: {ty}, %gcc_input2: {ty}, "
        f"%gcc_input3: {ty}) -> {ty} {{",
        f"  %0 = @ccompiler_0(%gcc_input0, %gcc_input1, %gcc_input2, %gcc_input3) "
        f"/* ty={ty} */;",
        f"  nn.softmax(%0) /* ty={ty} */",
        "}",
        "",
        f'def @ccompiler_0({params}, Compiler="ccompiler", global_symbol="ccompiler_0", '
        f"Primitive=1, Inline=1) -> {ty} {{",
        f"  %0 = add(%ccompiler_0_i0, %ccompiler_0_i1) /* ty={ty} */;",
        f"  %1 = subtract(%0, %ccompiler_0_i2) /* ty={ty} */;",
        f"  multiply(%1, %ccompiler_0_i3) /* ty={ty} */",
        "}"])
    same_numbers(mod, out, [(10, 10)] * 4)


def test_without_merging_every_supported_op_becomes_a_function_of_its_own():
    mod, _ = reference_example()
    out = Sequential([T.AnnotateTarget("ccompiler"), T.PartitionGraph()])(mod)
    assert list(out.functions) == ["main", "ccompiler_0", "ccompiler_1", "ccompiler_2"]
    calls = [e.op.name for e in post_order(out["main"].body)
             if isinstance(e, Call) and isinstance(e.op, GlobalVar)]
    assert calls == ["ccompiler_0", "ccompiler_1", "ccompiler_2"]
    for name in calls:
        assert dict(out[name].attrs) == {"Compiler": "ccompiler", "global_symbol": name,
                                         "Primitive": 1, "Inline": 1}
    same_numbers(mod, out, [(10, 10)] * 4)


def diamond():
    """TVM's diamond: O1 feeds O2 and X; O3 = O2 + X; O4 = O3 - X. O1, O2, O3 are the
    target's, X (tanh) and O4 (subtract) are not."""
    data = graph.var("data", shape=(10, 10))
    o1 = graph.op.call("negative", [data])
    o2 = graph.nn.relu(o1)
    x = graph.tanh(o1)
    o3 = graph.add(o2, x)
    return typed(graph.Function([data], graph.subtract(o3, x)))


def test_the_diamond_merges_o1_and_o2_but_not_o3_which_would_make_a_cycle_through_x():
    mod = diamond()
    merged = Sequential([T.AnnotateTarget(["test_target"]), T.MergeCompilerRegions()])(mod)
    assert regions_of(merged["main"]) == [
        ("test_target", ["negative", "nn.relu"]), ("default", ["tanh"]),
        ("test_target", ["add"]), ("default", ["subtract"])]
    out = T.PartitionGraph()(merged)
    first = out["test_target_0"]
    assert isinstance(first.body, Tuple)  # O1 leaves for X, O2 for O3: two outputs
    assert [f.op.name for f in first.body.fields] == ["negative", "nn.relu"]
    reads = [e for e in post_order(out["main"].body) if isinstance(e, TupleGetItem)]
    assert sorted(e.index for e in reads) == [0, 1]
    assert [e.op.name for e in post_order(out["main"].body)
            if isinstance(e, Call) and not isinstance(e.op, GlobalVar)] == ["tanh", "subtract"]
    same_numbers(mod, out, [(10, 10)])


def test_a_merge_made_later_still_bars_a_region_that_would_close_a_cycle():
    """k feeds x feeds me, and f feeds z feeds w. Once f has merged into me, w reads
    me's region through z, and me reads k through x: merging k into w would make the
    cycle {k, w} -> x -> {f, me} -> z -> {k, w}."""
    a = graph.var("a", shape=(5, 7))
    k = graph.op.call("negative", [a])
    x = graph.tanh(k)
    f = graph.nn.relu(a)
    z = graph.tanh(f)
    w = graph.add(z, k)
    me = graph.add(f, x)
    mod = typed(graph.Function([a], graph.subtract(graph.subtract(z, me), w)))
    merged = Sequential([T.AnnotateTarget("test_target"), T.MergeCompilerRegions()])(mod)
    ours = [ops for target, ops in regions_of(merged["main"]) if target == "test_target"]
    assert sorted(ours) == [["add"], ["negative"], ["nn.relu", "add"]]
    same_numbers(mod, T.PartitionGraph()(merged), [(5, 7)])


def test_a_region_read_through_a_tuple_is_not_merged_across_it():
    a = graph.var("a", shape=(4, 6))
    r1 = graph.nn.relu(a)
    cat = graph.concatenate([r1, a], axis=0)  # no codegen takes it: a node of no region
    r2 = graph.add(graph.op.call("negative", [cat]),
                   graph.concatenate([r1, r1], axis=0))
    mod = typed(graph.Function([a], r2))
    out = Sequential([T.AnnotateTarget("test_target"), T.MergeCompilerRegions(),
                      T.PartitionGraph()])(mod)
    targets = [n for n in out.functions if n != "main"]
    assert targets == ["test_target_0", "test_target_1"]
    same_numbers(mod, out, [(4, 6)])


def test_the_passes_are_ordinary_passes_and_the_build_passes_leave_external_functions_alone():
    mod, _ = reference_example()
    out = Sequential([T.AnnotateTarget(["ccompiler"]), T.MergeCompilerRegions(),
                      T.PartitionGraph(), T.FuseOps()])(mod)
    assert "Primitive=1" in out["main"].script("main")  # the softmax fused alone
    assert "fn (" not in out["ccompiler_0"].script("ccompiler_0")  # not fused inside
    same_numbers(mod, out, [(10, 10)] * 4)


def test_a_check_function_sees_the_typed_call():
    register_op_attr("multiply", "target.only_2d",
                     lambda call: all(len(a.ty.shape) == 2 for a in call.args))
    a, b = graph.var("a", shape=(3, 5)), graph.var("b", shape=(2, 3, 5))
    mod = typed(graph.Function([a, b], graph.multiply(graph.multiply(a, a), b)))
    annotated = T.AnnotateTarget(["only_2d"])(mod)
    assert regions_of(annotated["main"]) == [("only_2d", ["multiply"]),
                                             ("default", ["multiply"])]


def test_bad_input_is_an_error_naming_the_op_or_the_target():
    mod, _ = reference_example()
    annotated = T.AnnotateTarget(["ccompiler"])(mod)
    with pytest.raises(GraphTypeError, match="annotated already"):
        T.AnnotateTarget(["ccompiler"])(annotated)
    with pytest.raises(KeyError, match="no graph op 'nn.frobnicate'"):
        register_op_attr("nn.frobnicate", "target.x", lambda call: True)

    def broken(call):
        raise ValueError("no shapes here")
    register_op_attr("subtract", "target.broken", broken)
    with pytest.raises(GraphTypeError, match="subtract: the check of target.broken failed"):
        T.AnnotateTarget(["broken"])(mod)
