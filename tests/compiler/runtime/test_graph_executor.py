"""The whole model as one native module (compiler/graph/backend/build.py, codegen/graph_entry.py,
runtime/graph_executor.py): every kernel and `graph_run` in one loaded module, `graph_run`
calling the steps' kernels in order from native code, the slot table filled once, the
profile timing each kernel through its own packed function on the model's buffers."""
from __future__ import annotations

import re

import numpy as np
import pytest

from compiler import graph, runtime
from compiler.frontend import from_onnx
from onnx_models import input_and_expected, residual

rng = np.random.default_rng(3)


def test_one_module_holds_every_kernel_and_the_native_entry_that_calls_them_in_order():
    m = residual()
    x, want = input_and_expected(m)
    mod, params = from_onnx(m)
    lib = graph.build(mod, params=params)
    assert lib.lib.meta["entry"] == "graph_run"
    assert sorted(lib.kernels) == sorted({s["kernel"] for s in lib.plan["steps"]})
    source = lib.lib.get_source("ll")
    entry = source[source.index("define i32 @graph_run(") :]
    entry = entry[: entry.index("\n}\n")]
    called = re.findall(r"call i32 @(fused_\d+)\(", entry)
    assert called == [s["kernel"] for s in lib.plan["steps"]]
    for name in lib.kernels:  # not inlined into the entry: each is a function of its own
        assert re.search(rf"define [^@\n]*i32 @{name}\(", source)
    got, = lib.run(x=x)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


def test_kernels_compiled_on_several_threads_give_the_same_code_every_build_as_on_one():
    """compile_graph optimizes and emits each kernel's module on a thread of its own
    (its own LLVM context): the linked IR is the same from build to build, and a build
    for one core (one thread) has the same kernels and computes the same."""
    m = residual()
    x, want = input_and_expected(m)
    mod, params = from_onnx(m)
    texts = [graph.build(mod, target="llvm -num-cores=2", params=params).lib.get_source("ll")
             for _ in range(2)]
    assert texts[0] == texts[1]
    one = graph.build(mod, target="llvm -num-cores=1", params=params)
    assert sorted(one.kernels) == sorted(re.findall(r"define [^@\n]*i32 @(fused_\d+)\(",
                                                    texts[0]))
    got, = one.run(x=x)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


def test_a_kernel_shared_by_two_steps_is_compiled_once_and_the_profile_times_each_step():
    x = graph.var("x", shape=(1, 13, 7, 7))
    w = graph.const(rng.standard_normal((13, 13, 3, 3)).astype("float32"))
    y = graph.nn.relu(graph.nn.conv2d(x, w, padding=(1, 1)))
    y = graph.nn.relu(graph.nn.conv2d(y, w, padding=(1, 1)))
    fn = graph.Function([x], y)
    lib = graph.build(graph.IRModule.from_expr(fn))
    steps = lib.plan["steps"]
    assert len(steps) == 2 and steps[0]["kernel"] == steps[1]["kernel"]
    assert len(lib.kernels) == 1
    data = rng.standard_normal((1, 13, 7, 7)).astype("float32")
    got, = lib.run(x=data)
    from compiler.graph.ir.reference import evaluate
    np.testing.assert_allclose(got, evaluate(fn, data), rtol=1e-4, atol=1e-4)
    rows = lib.profile(repeat=2)
    assert [r["kernel"] for r in rows] == [s["kernel"] for s in steps]
    assert all(r["seconds"] > 0 for r in rows)
    assert set(rows[0]) >= {"template", "config", "fallback", "ops", "share"}
    np.testing.assert_array_equal(lib.run()[0], got)  # profiling left the buffers right


def test_export_writes_the_zip_form_and_refuses_a_name_ending_in_so(tmp_path):
    x = graph.var("x", shape=(7,))
    lib = graph.build(graph.IRModule.from_expr(graph.Function([x], graph.nn.relu(x))))
    with pytest.raises(ValueError, match=r"a file named \.so is a shared library"):
        lib.export(tmp_path / "model.so")
    lib.export(tmp_path / "model.zip")
    got, = runtime.load(tmp_path / "model.zip").run(x=np.arange(-3, 4, dtype="float32"))
    np.testing.assert_array_equal(got, [0, 0, 0, 0, 1, 2, 3])
