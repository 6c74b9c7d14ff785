"""Bring Your Own Codegen, built and run (compiler/graph/backend/build.py with `external`,
contrib/ccompiler.py, contrib/cblas.py, contrib/c_source_module.py,
contrib/cblas_module.py): the reference's C source for its example; every op the C
codegen claims, on odd shapes and seeded random attributes, against numpy; OpenBLAS's
gemms and a region of two with a buffer between; a function with two outputs; imported
models with cblas and ccompiler parts against ONNX Runtime; export, then load in a fresh
process, the same outputs; and bad input: a claimed op the codegen cannot compile, no C
compiler, no OpenBLAS, an unknown codegen."""
from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from compiler import graph
from compiler.contrib.ccompiler import ccompiler as ccompiler_codegen
from compiler.errors import BuildError
from compiler.frontend import from_onnx
from compiler.graph.backend.external import register_external
from compiler.graph.ir.op import register_op_attr
from compiler.graph.ir.reference import evaluate
from onnx_models import MODELS, input_and_expected

rng = np.random.default_rng(19)


def check(fn, external, *inputs, rtol=1e-4, atol=1e-4):
    """Build `fn` with `external`, run it on `inputs`, compare with numpy; the built
    executor."""
    mod = graph.IRModule.from_expr(fn)
    lib = graph.build(mod, external=external)
    got = lib.run(**{p.name: v for p, v in zip(fn.params, inputs)})
    want = evaluate(graph.passes.InferType()(mod)["main"], *inputs)
    want = list(want) if isinstance(want, tuple) else [want]
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=rtol, atol=atol)
    return lib


def data(*shape):
    return rng.standard_normal(shape).astype("float32")


def externals_of(lib) -> list[str]:
    return [s["kernel"] for s in lib.plan["steps"] if "external" in s]


def test_the_reference_example_prints_its_c_and_runs():
    x = [graph.var(f"gcc_input{i}", shape=(10, 10)) for i in range(4)]
    out = graph.multiply(graph.subtract(graph.add(x[0], x[1]), x[2]), x[3])
    lib = check(graph.Function(x, graph.nn.softmax(out)), ["ccompiler"],
                *[data(10, 10) for _ in range(4)])
    c = lib.get_source("c")
    # the node functions, numbered as the reference's visitor numbers them
    assert "CSOURCE_BINARY_OP_2D(ccompiler_0_0, *, 10, 10);\n" \
           "CSOURCE_BINARY_OP_2D(ccompiler_0_1, -, 10, 10);\n" \
           "CSOURCE_BINARY_OP_2D(ccompiler_0_2, +, 10, 10);" in c
    # the subgraph function: a buffer per intermediate value, the calls in order
    assert "  float* buf_0 = (float*)malloc(4 * 100);\n" \
           "  float* buf_1 = (float*)malloc(4 * 100);\n" in c
    assert "  ccompiler_0_2(ccompiler_0_i0, ccompiler_0_i1, buf_0);\n" \
           "  ccompiler_0_1(buf_0, ccompiler_0_i2, buf_1);\n" \
           "  ccompiler_0_0(buf_1, ccompiler_0_i3, out0);\n" in c
    # the wrapper with our calling convention, and its packed form
    assert "int ccompiler_0(float* ccompiler_0_i0, float* ccompiler_0_i1, " \
           "float* ccompiler_0_i2, float* ccompiler_0_i3, float* out0) {" in c
    assert "int ccompiler_0_packed(int64_t* args) {" in c
    assert externals_of(lib) == ["ccompiler_0"]
    rows = lib.profile(repeat=1)
    assert [(r["kernel"], r.get("external")) for r in rows] == [
        ("ccompiler_0", "ccompiler"), ("fused_0", None)]


def random_window(seed: int):
    """A conv2d or pool on odd shapes with random strides, padding, dilation, groups."""
    r = np.random.default_rng(seed)
    c = int(r.choice([3, 6, 7]))
    size = int(r.choice([7, 13, 15]))
    x = graph.var("x", shape=(int(r.integers(1, 3)), c, size, size))
    kind = ["conv", "max", "avg", "gap"][seed % 4]
    pad = tuple(int(p) for p in r.integers(0, 2, 4))
    if kind == "conv":
        groups = int(r.choice([g for g in (1, c) if c % g == 0]))
        o = groups * int(r.integers(1, 3))
        k = int(r.choice([1, 3]))
        w = graph.const(data(o, c // groups, k, k))
        y = graph.nn.conv2d(x, w, strides=(int(r.integers(1, 3)),) * 2, padding=pad,
                            dilation=(int(r.integers(1, 3)),) * 2, groups=groups)
    elif kind == "gap":
        y = graph.nn.global_avg_pool2d(x)
    else:
        pool = graph.nn.max_pool2d if kind == "max" else graph.nn.avg_pool2d
        extra = {} if kind == "max" else {"count_include_pad": bool(r.integers(0, 2))}
        y = pool(x, pool_size=(3, 3), strides=(int(r.integers(1, 3)),) * 2,
                 padding=(1, 1, 1, 1), **extra)
    return graph.Function([x], graph.nn.relu(y)), [data(*x.ty.shape)]


@pytest.mark.parametrize("seed", range(8))
def test_c_convolutions_and_pools_on_odd_shapes_match_numpy(seed):
    fn, inputs = random_window(seed)
    lib = check(fn, ["ccompiler"], *inputs)
    assert externals_of(lib) == ["ccompiler_0"]  # the whole graph is the C function's


def test_c_elementwise_broadcast_and_shape_ops_match_numpy():
    a, b = graph.var("a", shape=(7, 13)), graph.var("b", shape=(13,))
    c = graph.var("c", shape=(7, 1))
    def op(name, *args, **attrs):
        return graph.op.call(name, args, **attrs)
    y = op("divide", op("maximum", op("add", a, b), c),
           op("add", op("exp", op("negative", op("sigmoid", a))), graph.const(2.0)))
    y = op("minimum", op("subtract", op("tanh", y), c), op("sqrt", op("exp", a)))
    y = op("clip", y, a_min=-0.5, a_max=0.7)
    y = graph.nn.bias_add(graph.nn.relu(op("multiply", y, b)), graph.const(data(13)))
    y = op("reshape", y, newshape=(13, 7))
    lib = check(graph.Function([a, b, c], y), ["ccompiler"], data(7, 13), data(13),
                data(7, 1))
    assert externals_of(lib) == ["ccompiler_0"]


@pytest.mark.parametrize("external", [["ccompiler"], ["cblas"]])
def test_gemms_in_c_and_in_openblas_match_numpy(external):
    x, y = graph.var("x", shape=(7, 37)), graph.var("y", shape=(3, 7, 13))
    h = graph.nn.dense(graph.nn.dense(x, graph.const(data(13, 37))),
                       graph.const(data(5, 13)))  # one region: a buffer between
    m = graph.matmul(h, graph.const(data(5, 1000)))
    bm = graph.nn.batch_matmul(y, graph.const(data(3, 5, 13)))
    bmm = graph.matmul(graph.reshape(bm, (21, 5)), graph.const(data(5, 7)))
    fn = graph.Function([x, y], graph.Tuple([graph.nn.softmax(m), graph.nn.softmax(bmm)]))
    lib = check(fn, external, data(7, 37), data(3, 7, 13), rtol=1e-3, atol=1e-3)
    ops = [s["ops"] for s in lib.plan["steps"] if "external" in s]
    assert ops == [["nn.dense", "nn.dense", "matmul"], *(  # C takes the reshape too
        [["nn.batch_matmul", "reshape", "matmul"]] if external == ["ccompiler"] else
        [["nn.batch_matmul"], ["matmul"]])]


@pytest.mark.parametrize("external", [["ccompiler"], ["cblas"]])
@pytest.mark.parametrize("shape", [(2, 3, 8), (8,)])
def test_a_dense_on_data_of_another_rank_is_one_gemm_over_its_rows(external, shape):
    x = graph.var("x", shape=shape)
    lib = check(graph.Function([x], graph.nn.dense(x, graph.const(data(13, 8)))),
                external, data(*shape))
    assert externals_of(lib) == [f"{external[0]}_0"]


def test_a_scalar_op_is_not_claimed_by_the_c_codegen():
    a, b = graph.var("a", shape=()), graph.var("b", shape=())
    lib = check(graph.Function([a, b], graph.add(a, b)), ["ccompiler"], data(), data())
    assert externals_of(lib) == []


def test_one_row_goes_through_openblas_gemv():
    x = graph.var("x", shape=(1, 37))
    d = graph.nn.dense(x, graph.const(data(13, 37)))
    m = graph.matmul(x, graph.const(data(37, 1000)))
    lib = check(graph.Function([x], graph.Tuple([graph.nn.softmax(d), graph.nn.softmax(m)])),
                ["cblas"], data(1, 37))
    assert "scipy_cblas_sgemv" in lib.externals["cblas_0"].get_source("ll")


def test_a_1x1_convolution_goes_to_openblas_and_a_3x3_one_does_not():
    x = graph.var("x", shape=(2, 13, 7, 7))
    y = graph.nn.conv2d(x, graph.const(data(37, 13, 1, 1)))
    y = graph.nn.conv2d(graph.nn.relu(y), graph.const(data(7, 37, 3, 3)), padding=(1, 1))
    y = graph.nn.conv2d(y, graph.const(data(13, 7, 1, 1)), strides=(2, 2))  # strided: no
    lib = check(graph.Function([x], graph.nn.relu(y)), ["cblas"], data(2, 13, 7, 7))
    assert [s["ops"] for s in lib.plan["steps"] if "external" in s] == [["nn.conv2d"]]


def test_a_region_with_two_outputs_writes_both():
    register_external("two_out_c", ccompiler_codegen)
    for op in ("negative", "nn.relu", "add"):
        register_op_attr(op, "target.two_out_c", lambda call: True)
    d = graph.var("data", shape=(7, 13))
    o1 = graph.op.call("negative", [d])
    x = graph.tanh(o1)
    fn = graph.Function([d], graph.subtract(graph.add(graph.nn.relu(o1), x), x))
    lib = check(fn, ["two_out_c"], data(7, 13))
    first = lib.plan["steps"][0]
    assert first["kernel"] == "two_out_c_0" and len(first["more_outs"]) == 1


@pytest.mark.parametrize("name", ["residual", "mobile_block", "mlp"])
@pytest.mark.parametrize("external", [["cblas", "ccompiler"], ["cblas"]])
def test_imported_models_with_external_parts_match_onnx_runtime(name, external):
    m = MODELS[name]()
    x, want = input_and_expected(m)
    mod, params = from_onnx(m)
    lib = graph.build(mod, params=params, external=external)
    got, = lib.run(x=x)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
    kinds = {s.get("external") for s in lib.plan["steps"]}
    if "ccompiler" in external:
        assert "c" in kinds
    if name == "mlp":
        assert "cblas" in kinds


FRESH = """
import sys, numpy as np
from compiler import runtime
lib = runtime.load(sys.argv[1])
out, = lib.run(x=np.load(sys.argv[2]))
np.save(sys.argv[3], out)
print(sorted(lib.externals))
"""


def test_export_then_load_in_a_fresh_process_gives_the_same_outputs(tmp_path):
    m = MODELS["mlp"]()
    x, _ = input_and_expected(m)
    mod, params = from_onnx(m)
    lib = graph.build(mod, params=params, external=["cblas", "ccompiler"])
    want, = lib.run(x=x)
    lib.export(tmp_path / "mlp.zip")
    np.save(tmp_path / "x.npy", x)
    done = subprocess.run([sys.executable, "-c", FRESH, str(tmp_path / "mlp.zip"),
                           str(tmp_path / "x.npy"), str(tmp_path / "out.npy")],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == str(sorted(lib.externals))
    assert {m.type_key for m in lib.externals.values()} == {"c", "cblas"}
    np.testing.assert_array_equal(np.load(tmp_path / "out.npy"), want)


def test_an_op_a_codegen_claims_but_cannot_compile_is_an_error_naming_the_function():
    register_external("greedy_c", ccompiler_codegen)
    register_op_attr("nn.softmax", "target.greedy_c", lambda call: True)
    x = graph.var("x", shape=(7, 13))
    mod = graph.IRModule.from_expr(graph.Function([x], graph.nn.softmax(x)))
    with pytest.raises(BuildError, match=r"greedy_c_0: the ccompiler codegen cannot compile "
                                         r"nn.softmax on Tensor\[\(7, 13\), float32\]"):
        graph.build(mod, external=["greedy_c"])


def test_no_c_compiler_is_a_build_error_naming_the_function(monkeypatch):
    monkeypatch.delenv("CC", raising=False)
    monkeypatch.setenv("PATH", "/nonexistent")
    x = graph.var("x", shape=(7, 13))
    mod = graph.IRModule.from_expr(graph.Function([x], graph.nn.relu(x)))
    with pytest.raises(BuildError, match="ccompiler_0: the ccompiler codegen needs a C "
                                         "compiler"):
        graph.build(mod, external=["ccompiler"])


def test_no_openblas_is_a_build_error_naming_the_function(monkeypatch):
    monkeypatch.setitem(sys.modules, "scipy_openblas32", None)  # as if not installed
    x = graph.var("x", shape=(7, 13))
    mod = graph.IRModule.from_expr(graph.Function(
        [x], graph.nn.dense(x, graph.const(data(5, 13)))))
    with pytest.raises(BuildError, match="cblas_0: the cblas codegen calls OpenBLAS from "
                                         "the scipy-openblas32 package, which is not "
                                         "installed"):
        graph.build(mod, external=["cblas"])


def test_an_unknown_codegen_is_a_build_error_naming_it():
    x = graph.var("x", shape=(7, 13))
    mod = graph.IRModule.from_expr(graph.Function([x], graph.nn.relu(x)))
    with pytest.raises(BuildError, match="no external codegen 'dnnl'; the registered ones "
                                         "are .*ccompiler"):
        graph.build(mod, external=["dnnl"])


def test_the_c_is_compiled_for_the_build_target(tmp_path, monkeypatch):
    """-march follows the target's CPU (an artifact built for another CPU must not use the
    build host's instructions); the host's target compiles with -march=native."""
    from compiler.contrib.c_source_module import c_compiler
    log, wrapper = tmp_path / "cc.log", tmp_path / "cc-logged"
    wrapper.write_text(f'#!/bin/sh\necho "$@" >> {log}\nexec {c_compiler()} "$@"\n')
    wrapper.chmod(0o755)
    monkeypatch.setenv("CC", str(wrapper))
    x = graph.var("x", shape=(7, 13))
    fn = graph.Function([x], graph.nn.relu(graph.add(x, x)))
    a = data(7, 13)
    for target, flag in (("llvm -mcpu=x86-64-v2", "-march=x86-64-v2"),
                         ("llvm", "-march=native")):
        lib = graph.build(graph.IRModule.from_expr(fn), target=target, external=["ccompiler"])
        assert externals_of(lib) == ["ccompiler_0"]
        np.testing.assert_allclose(lib.run(x=a)[0], np.maximum(a + a, 0))
        assert log.read_text().splitlines()[-1].split().count(flag) == 1


def test_march_follows_the_target_and_falls_back_to_its_x86_level():
    from compiler import Target
    from compiler.contrib.c_source_module import march_options
    assert march_options() == [["-march=native"]]
    with Target("llvm"):
        assert march_options() == [["-march=native"]]
    with Target("llvm -mcpu=znver5 -mattr=+avx2,+sse4.2"):
        assert march_options() == [["-march=znver5"], ["-march=x86-64-v3"]]
    with Target("llvm -mcpu=generic"):
        assert march_options() == [["-march=x86-64"]]
    # a CPU LLVM knows and the C compiler may not: built either way
    x = graph.var("x", shape=(7, 13))
    fn = graph.Function([x], graph.nn.relu(x))
    lib = graph.build(graph.IRModule.from_expr(fn), target="llvm -mcpu=znver5",
                      external=["ccompiler"])
    a = data(7, 13)
    np.testing.assert_allclose(lib.run(x=a)[0], np.maximum(a, 0))


def test_a_deep_region_builds_at_a_low_recursion_limit():
    """The partitioning and the C codegen walk a region on work lists, and the build runs
    on the caller's thread: a chain of 80 elementwise ops, all the C codegen's (which
    recursed once per op before), builds at a recursion limit of 120 and matches numpy
    (longer chains cost the C compiler seconds, not us)."""
    x = graph.var("x", shape=(3, 7))
    y = x
    for _ in range(40):
        y = graph.add(graph.multiply(y, graph.const(np.full((3, 7), 0.5, "float32"))),
                      graph.const(np.ones((3, 7), "float32")))
    fn = graph.Function([x], y)
    data = np.random.default_rng(0).standard_normal((3, 7)).astype("float32")
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(120)
    try:
        lib = graph.build(graph.IRModule.from_expr(fn), external=["ccompiler"])
    finally:
        sys.setrecursionlimit(limit)
    assert any(s.get("external") == "ccompiler" or "ccompiler" in str(s)
               for s in lib.plan["steps"])
    np.testing.assert_allclose(lib.run(x=data)[0], evaluate(fn, data), rtol=1e-5, atol=1e-5)
