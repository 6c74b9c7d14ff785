"""from_onnx (compiler/frontend/onnx.py) on models built with onnx.helper: residual
blocks, depthwise + pointwise blocks with Clip, an MLP with Gemm and Softmax, odd channel
counts (7, 13, 37) and stride 2; each imported graph, evaluated op by op in numpy
(compiler/graph/ir/reference.py) and after FoldConstant and FuseOps, matches ONNX Runtime
within 1e-4; and every kind of bad model is one FrontendError naming what is wrong."""
from __future__ import annotations

import sys

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from compiler import graph  # noqa: E402
from compiler.errors import FrontendError  # noqa: E402
from compiler.frontend import bind_params, from_onnx  # noqa: E402
from compiler.graph.ir.reference import evaluate  # noqa: E402
from compiler.transform.pass_infra import PassContext, Sequential  # noqa: E402
from onnx_models import (MODELS, input_and_expected, mlp, mobile_block, model,  # noqa: E402
                         residual, rng, tensor, weight)


@pytest.mark.parametrize("name", MODELS)
def test_an_imported_model_matches_onnx_runtime(name):
    m = MODELS[name]()
    x, want = input_and_expected(m)
    mod, params = from_onnx(m)
    # the weights are parameters; integer initializers (shapes, pads) are constants
    assert set(params) == {t.name for t in m.graph.initializer
                           if t.data_type == TensorProto.FLOAT}
    np.testing.assert_allclose(evaluate(mod["main"], x, *params.values()), want,
                               rtol=1e-4, atol=1e-4)
    bound = graph.IRModule.from_expr(bind_params(mod["main"], params))
    with PassContext(opt_level=3):
        fused = Sequential([graph.passes.FoldConstant(),
                            graph.passes.FuseOps()])(bound)
    np.testing.assert_allclose(evaluate(fused["main"], x), want, rtol=1e-4, atol=1e-4)


def test_a_model_file_and_a_static_shape_for_a_dynamic_input(tmp_path):
    m = mlp()
    m.graph.input[0].type.tensor_type.shape.dim[0].dim_param = "batch"
    path = tmp_path / "mlp.onnx"
    onnx.save(m, path)
    with pytest.raises(FrontendError, match=r"input x has a dynamic dimension \(batch\).*"
                                            r"shape=\{'x': \(1, 13\)\} or --shape x:1,13"):
        from_onnx(path)
    mod, _ = from_onnx(str(path), shape={"x": (3, 13)})
    assert mod["main"].params[0].ty == graph.TensorType((3, 13))


def test_bad_models_are_one_error_naming_what_is_wrong(tmp_path):
    bad = model([helper.make_node("NonZero", ["x"], ["y"], name="nz")], [tensor("x", [2])],
                [tensor("y", None)], [], opset=20)
    with pytest.raises(FrontendError, match=r"node nz \(NonZero\): op type NonZero is not "
                                            r"supported; the supported ones are .*Conv"):
        from_onnx(bad)
    old = model([helper.make_node("Relu", ["x"], ["y"])], [tensor("x", [2])],
                [tensor("y", None)], [], opset=29)
    with pytest.raises(FrontendError, match=r"opset 29 of the default domain is not supported "
                                            r"\(supported: 1 to 28\)"):
        from_onnx(old)
    (tmp_path / "junk.onnx").write_bytes(b"\x00not a model")
    with pytest.raises(FrontendError, match="junk.onnx: not a readable ONNX model"):
        from_onnx(tmp_path / "junk.onnx")
    with pytest.raises(FrontendError, match="nothere.onnx: no such file"):
        from_onnx(tmp_path / "nothere.onnx")
    same = model([helper.make_node("MaxPool", ["x"], ["y"], kernel_shape=[2, 2],
                                   auto_pad="SAME", name="pool")],
                 [tensor("x", [1, 1, 5, 5])], [tensor("y", None)], [])
    with pytest.raises(FrontendError, match=r"node pool \(MaxPool\): auto_pad='SAME' "
                                            r"is not supported"):
        from_onnx(same)
    with pytest.raises(FrontendError, match="shape= names y, which are not inputs"):
        from_onnx(mlp(), shape={"y": (1,)})


def test_what_the_importer_does_not_compute_is_refused_by_name():
    """An element type the build does not compile, a model of another domain only, an
    output a converter does not compute that the graph uses, an attribute no converter
    reads: each one FrontendError naming it (each was a crash or a silent answer)."""
    relu = helper.make_node("Relu", ["x"], ["y"])
    small = model([relu], [helper.make_tensor_value_info("x", TensorProto.FLOAT8E4M3FN, [2])],
                  [tensor("y", None)], [])
    with pytest.raises(FrontendError, match=r"input x has element type float8e4m3fn, which is "
                                            r"not supported \(supported: float32"):
        from_onnx(small)
    ml = helper.make_model(helper.make_graph([relu], "g", [tensor("x", [2])],
                                             [tensor("y", None)]),
                           opset_imports=[helper.make_opsetid("ai.onnx.ml", 3)])
    with pytest.raises(FrontendError, match=r"imports no opset of ONNX's default domain "
                                            r"\(its opsets: ai.onnx.ml 3\)"):
        from_onnx(ml)
    mean = model([helper.make_node("LayerNormalization", ["x", "s"], ["y", "m"], name="ln"),
                  helper.make_node("Relu", ["y"], ["r"], name="relu")],
                 [tensor("x", [2, 3]), tensor("s", [3])], [tensor("r", None)], [])
    assert from_onnx(mean)  # its unused Mean output is computed: no question asked
    stats = model([helper.make_node("BatchNormalization", ["x", "s", "b", "m", "v"],
                                    ["y", "mean"], name="bn")],
                  [tensor("x", [1, 2, 3, 3])] + [tensor(k, [2]) for k in "sbmv"],
                  [tensor("y", None), tensor("mean", None)], [], opset=9)
    with pytest.raises(FrontendError, match=r"node bn \(BatchNormalization\): its output 1 "
                                            r"\('mean'\) is not supported, and graph output "
                                            r"'mean' uses it"):
        from_onnx(stats)  # (opset 9's training statistics: inference computes none)
    dropout = model([helper.make_node("Dropout", ["x"], ["y"], seed=3, name="drop")],
                    [tensor("x", [2, 3])], [tensor("y", None)], [], opset=28)
    assert from_onnx(dropout)  # opset 28; its seed only matters in training (read)
    legacy = model([helper.make_node("Add", ["x", "b"], ["y"], name="add", broadcast=1,
                                     axis=1)],
                   [tensor("x", [2, 3, 3]), tensor("b", [3])], [tensor("y", None)], [],
                   opset=6)  # opset 6 aligned b at axis 1, numpy at the end: refused
    with pytest.raises(FrontendError, match=r"node add \(Add\): attribute (broadcast=1|axis=1) "
                                            r"is not supported"):
        from_onnx(legacy)
    odd = model([helper.make_node("Relu", ["x"], ["y"], name="relu", alpha=0.5)],
                [tensor("x", [2])], [tensor("y", None)], [])
    with pytest.raises(FrontendError, match=r"node relu \(Relu\): attribute alpha=0.5 is "
                                            r"not supported"):
        from_onnx(odd)


@pytest.mark.parametrize("name, kernels", [("residual", 4), ("mobile_block", 4), ("mlp", 3),
                                           ("pads_and_concat", 3)])
def test_a_model_built_to_native_kernels_matches_onnx_runtime(name, kernels):
    m = MODELS[name]()
    x, want = input_and_expected(m)
    mod, params = from_onnx(m)
    with PassContext(opt_level=2):  # the kernels as the ONNX graph has them: no folding
        lib = graph.build(mod, params=params)
    got, = lib.run(x=x)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
    # residual: conv + bias + batch norm + relu; conv + residual add + relu; the stride-2
    # conv; the pool: one kernel each
    assert len(lib.plan["steps"]) == kernels
    assert lib.get_output(0) is got
    rows = lib.profile(repeat=2)
    assert len(rows) == kernels and abs(sum(r["share"] for r in rows) - 1) < 1e-9
    if name == "residual":
        assert [r["ops"] for r in rows][:2] == [
            ["nn.conv2d", "nn.bias_add", "multiply", "add", "nn.relu"],
            ["nn.conv2d", "add", "nn.relu"]]


def test_an_exported_model_runs_in_a_fresh_process_with_the_same_outputs(tmp_path):
    import subprocess
    import sys
    m = mobile_block()
    mod, params = from_onnx(m)
    lib = graph.build(mod, params=params)
    x = rng.standard_normal((1, 13, 37, 37)).astype("float32")
    want, = lib.run(x=x)
    lib.export(tmp_path / "model.zip")
    np.save(tmp_path / "x.npy", x)
    script = ("import sys, numpy as np; from compiler import runtime; "
              "lib = runtime.load(sys.argv[1]); "
              "np.save(sys.argv[3], lib.run(x=np.load(sys.argv[2]))[0])")
    done = subprocess.run([sys.executable, "-c", script, str(tmp_path / "model.zip"),
                           str(tmp_path / "x.npy"), str(tmp_path / "y.npy")],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    np.testing.assert_array_equal(np.load(tmp_path / "y.npy"), want)
    with pytest.raises(ValueError, match=r"input x: shape \(1, 3\), the model takes"):
        lib.set_input("x", np.zeros((1, 3), "float32"))
    with pytest.raises(KeyError, match="no input 'y'; the inputs are x"):
        lib.set_input("y", x)


def test_intermediate_values_share_storage_when_their_lifetimes_do_not_overlap():
    from compiler.graph.backend.build import plan_storage
    steps = [{"args": [i], "out": i + 1, "shape": [4, 4], "dtype": "float32"}
             for i in range(4)]
    sizes = plan_storage(steps, outputs=[4])
    assert sizes == [64, 64] and [s["storage"] for s in steps] == [0, 1, 0, 1]
    mod, params = from_onnx(residual())
    lib = graph.build(mod, params=params)
    every = sum(int(np.prod(s["shape"])) * 4 for s in lib.plan["steps"])
    assert 0 < lib.peak_bytes < every
    x = rng.standard_normal((1, 7, 13, 13)).astype("float32")
    first, = lib.run(x=x)
    second, = lib.run(x=x * 2)
    assert not np.array_equal(first, second)  # the outputs are copies, not reused storage
    timed = lib.time_evaluator(number=1, repeat=3, min_repeat_ms=5)()
    assert len(timed.results) == 3 and timed.median > 0


def test_max_and_min_of_several_inputs_match_onnx_runtime():
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]),
             helper.make_node("Max", ["x", "c", "b"], ["hi"]),
             helper.make_node("Min", ["hi", "c"], ["y"])]
    m = model(nodes, [tensor("x", [1, 8, 7, 13])], [tensor("y", None)],
              [weight("w", 8, 8, 3, 3), weight("b", 8, 1, 1)])
    x, want = input_and_expected(m)
    mod, params = from_onnx(m)
    with PassContext(opt_level=3):
        got, = graph.build(mod, params=params).run(x=x)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


def test_a_model_thousands_of_ops_deep_imports_builds_and_matches_onnx_runtime():
    """A chain of 4000 ops (a 24-layer transformer is some thousands deep): the import
    costs each node what its converter built, and a build without external codegens
    walks it on work lists (the mutators, FuseOps, the planner; the printer too), and a
    kernel's lowering recurses only as deep as its group (FuseOps' MAX_DEPTH), so the
    build runs on the caller's thread under a recursion limit well below Python's
    default (500 here)."""
    limit = sys.getrecursionlimit()
    nodes, prev = [], "x"
    for i in range(2000):
        nodes += [helper.make_node("Mul", [prev, "half"], [f"m{i}"]),
                  helper.make_node("Add", [f"m{i}", "one"], [f"a{i}"])]
        prev = f"a{i}"
    nodes.append(helper.make_node("Identity", [prev], ["y"]))
    inits = [numpy_helper.from_array(np.array(0.5, "float32"), "half"),
             numpy_helper.from_array(np.array(1.0, "float32"), "one")]
    m = model(nodes, [tensor("x", [1, 7, 13])], [tensor("y", None)], inits)
    x = rng.standard_normal((1, 7, 13)).astype("float32")
    want, = ort.InferenceSession(m.SerializeToString(),
                                 providers=["CPUExecutionProvider"]).run(None, {"x": x})
    sys.setrecursionlimit(500)
    try:
        mod, params = from_onnx(m)
        text = str(mod["main"])
        lib = graph.build(mod, params=params)
    finally:
        sys.setrecursionlimit(limit)
    assert text.count("multiply(") == text.count("add(") == 2000
    got, = lib.run(x=x)
    np.testing.assert_allclose(got, want, rtol=1e-5)


def test_a_file_is_read_as_onnx_load_reads_it_external_data_and_text_formats_included(tmp_path):
    """from_onnx(path) parses a binary file from a memory map of it: the same graph and
    weights as onnx.load's, weights kept in a separate file (external data, beside the
    model) loaded too; a text format goes through onnx.load; an empty file is a
    FrontendError naming it."""
    m = mlp()
    want_mod, want_params = from_onnx(m)
    onnx.save_model(m, tmp_path / "plain.onnx")
    onnx.save_model(m, tmp_path / "split.onnx", save_as_external_data=True,
                    all_tensors_to_one_file=True, location="split.weights", size_threshold=0)
    onnx.save_model(m, tmp_path / "text.onnxtxt", format="onnxtxt")
    assert (tmp_path / "split.weights").stat().st_size > 0
    for name in ("plain.onnx", "split.onnx", "text.onnxtxt"):
        mod, params = from_onnx(tmp_path / name)
        assert str(mod) == str(want_mod), name
        assert params.keys() == want_params.keys(), name
        for k, v in want_params.items():
            np.testing.assert_array_equal(params[k], v, err_msg=f"{name}: {k}")
    (tmp_path / "empty.onnx").write_bytes(b"")
    with pytest.raises(FrontendError, match="empty.onnx"):
        from_onnx(tmp_path / "empty.onnx")
