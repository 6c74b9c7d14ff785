"""The on-disk compile cache (compiler/disk_cache.py; keys made by graph/backend/build.py): a model
built again takes every kernel from disk and is the same model; what a kernel's code
follows from is in its key; a bad entry is a miss; the cache never fails a build."""
from __future__ import annotations

import importlib
import os
import subprocess
import sys
import textwrap
import warnings

import numpy as np
import pytest

from compiler import disk_cache, graph
from compiler.frontend import from_onnx
from compiler.ir.module import IRModule
from compiler.runtime import native
from compiler.transform.pass_infra import PassContext, PassInstrument
import onnx_models
from onnx_models import input_and_expected, residual

# the helpers' folder, for the processes started here (tests/conftest.py's HELPERS)
HELPERS = os.path.dirname(os.path.abspath(onnx_models.__file__))


@pytest.fixture
def cache(tmp_path, monkeypatch):
    """The cache on, in a folder of the test's own, which then holds kernels only (the
    native runtime was loaded before, without it)."""
    native.ensure_loaded()
    monkeypatch.delenv("AUTOSCHED_NO_CACHE", raising=False)
    monkeypatch.setenv("AUTOSCHED_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache"


def entries(folder) -> list:
    """The kernels (and the native runtime) in the cache `folder`: the templates' spaces
    (search_spaces/registry.py) and the models' entry functions (codegen/compile.py)
    kept there too are not counted."""
    if not folder.exists():
        return []
    files = sorted(p for p in folder.rglob("*") if p.is_file())
    return [p for p in files if not {"config_space", "graph_entry"} &
            set((disk_cache.load(p.name) or ({},))[0])]


def no_lowering(monkeypatch):
    """Make any lowering of a kernel fail: what a build then makes came from the cache."""
    def fail(*args, **kwargs):
        raise AssertionError("a kernel was lowered")
    monkeypatch.setattr(importlib.import_module("compiler.graph.backend.build"), "lower_function",
                        fail)


def scaled(c: float):
    x = graph.var("x", shape=(4, 9))
    return IRModule.from_expr(graph.Function([x], graph.multiply(
        graph.nn.relu(x), graph.const(np.array(c, "float32")))))


def test_a_model_built_again_takes_every_kernel_from_disk_and_is_the_same_model(
        cache, monkeypatch):
    """Its kernels and its entry function: built again, a model costs no lowering and
    no LLVM."""
    m = residual()
    x, want = input_and_expected(m)
    mod, params = from_onnx(m)
    first = graph.build(mod, params=params)
    assert len(entries(cache)) == len(first.kernels) > 1
    no_lowering(monkeypatch)

    def no_llvm(*args, **kwargs):
        raise AssertionError("LLVM compiled a module")
    monkeypatch.setattr(importlib.import_module("compiler.codegen.compile"), "_object_of",
                        no_llvm)
    again = graph.build(mod, params=params)
    assert again.plan == first.plan
    for fmt in ("ll", "ir"):
        assert again.lib.get_source(fmt) == first.lib.get_source(fmt)
    got, = again.run(x=x)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
    np.testing.assert_array_equal(got, first.run(x=x)[0])


def test_what_a_kernel_follows_from_is_in_its_key(cache, monkeypatch):
    """Another constant, another target, another pass config: another kernel, never
    the one on disk."""
    ones = np.ones((4, 9), "float32")
    graph.build(scaled(1.5000001))
    assert len(entries(cache)) == 1
    got, = graph.build(scaled(1.5000003)).run(x=ones)  # alike to six digits
    np.testing.assert_array_equal(got, np.float32(1.5000003))
    graph.build(scaled(1.5000001), target="llvm -mcpu=haswell -num-cores=1")
    with PassContext(config={"tir.UnrollLoop.auto_max_step": 4}):
        graph.build(scaled(1.5000001))
    assert len(entries(cache)) == 4
    no_lowering(monkeypatch)
    got, = graph.build(scaled(1.5000003)).run(x=ones)
    np.testing.assert_array_equal(got, np.float32(1.5000003))


def test_the_cache_is_off_under_no_cache_the_variable_and_pass_instruments(
        cache, monkeypatch):
    class Watch(PassInstrument):
        def __init__(self):
            self.passes = []

        def run_before_pass(self, mod, info):
            self.passes.append(info.name)
    with disk_cache.no_cache():
        graph.build(scaled(2.0))
    monkeypatch.setenv("AUTOSCHED_NO_CACHE", "1")
    graph.build(scaled(2.0))
    assert entries(cache) == []
    monkeypatch.delenv("AUTOSCHED_NO_CACHE")
    graph.build(scaled(2.0))
    watch = Watch()
    with PassContext(instruments=[watch]):
        graph.build(scaled(2.0))
    assert len(entries(cache)) == 1 and watch.passes  # the kernel was lowered anew


def test_a_damaged_entry_is_a_miss_and_an_unwritable_cache_a_warning(cache, tmp_path,
                                                                    monkeypatch):
    ones = np.ones((4, 9), "float32")
    graph.build(scaled(3.0))
    entry, = entries(cache)
    entry.write_bytes(entry.read_bytes()[:-7])  # cut short
    got, = graph.build(scaled(3.0)).run(x=ones)
    np.testing.assert_array_equal(got, np.float32(3.0))
    blocked = tmp_path / "file"
    blocked.write_text("not a folder")
    monkeypatch.setenv("AUTOSCHED_CACHE_DIR", str(blocked))
    monkeypatch.setattr(disk_cache, "_warned", [])
    with pytest.warns(RuntimeWarning, match="cannot be written"):
        got, = graph.build(scaled(4.0)).run(x=ones)
    np.testing.assert_array_equal(got, np.float32(4.0))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # once only
        graph.build(scaled(5.0))


def test_processes_building_one_model_at_once_share_the_cache_safely(cache):
    script = textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {HELPERS!r})
        import numpy as np
        from compiler import graph
        from compiler.frontend import from_onnx
        from onnx_models import residual
        mod, params = from_onnx(residual())
        out, = graph.build(mod, params=params).run(x=np.ones((1, 7, 13, 13), "float32"))
        print(float(out.sum()))
    """)
    env = {**os.environ, "AUTOSCHED_CACHE_DIR": str(cache)}
    env.pop("AUTOSCHED_NO_CACHE", None)
    runs = [subprocess.Popen([sys.executable, "-c", script], env=env, text=True,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE) for _ in range(2)]
    outs = [r.communicate(timeout=300) for r in runs]
    assert all(r.returncode == 0 for r in runs), [err for _, err in outs]
    again = subprocess.run([sys.executable, "-c", script], env=env, text=True,
                           capture_output=True, timeout=300)
    assert again.returncode == 0, again.stderr
    assert {out.strip() for out, _ in outs} == {again.stdout.strip()}
    assert not [p for p in cache.rglob(".tmp-*")]


def test_a_new_process_takes_the_native_runtime_from_the_cache(cache):
    """runtime.ll's object code is cached: a second process loads it without optimizing
    any LLVM module, and a parallel kernel runs on it."""
    script = textwrap.dedent("""
        import sys
        import numpy as np
        from compiler import build, te
        from compiler.runtime import native
        if sys.argv[1] == "again":  # nothing is to be compiled but the kernel below
            native.optimize = lambda *a: (_ for _ in ()).throw(AssertionError("compiled"))
        native.ensure_loaded()
        a = te.placeholder((1000,), name="a")
        b = te.compute((1000,), lambda i: a[i] * 2, name="b")
        s = te.create_schedule(b.op)
        s[b].parallel(b.op.axis[0])
        x, y = np.arange(1000, dtype="float32"), np.zeros(1000, "float32")
        build(s, [a, b])(x, y)
        print(bool(np.all(y == 2 * x)))
    """)
    env = {**os.environ, "AUTOSCHED_CACHE_DIR": str(cache)}
    env.pop("AUTOSCHED_NO_CACHE", None)
    for run in ("first", "again"):
        done = subprocess.run([sys.executable, "-c", script, run], env=env, text=True,
                              capture_output=True, timeout=300)
        assert done.returncode == 0 and done.stdout.strip() == "True", done.stderr
    assert len(entries(cache)) == 1
