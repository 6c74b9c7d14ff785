"""A model as one shared library with a C API (runtime/export_library.py, model_api.h):
built from an ONNX model (a residual block, then a depthwise block, odd sizes, two
outputs), used from C programs compiled here with the system compiler and run in fresh
processes, from a fresh Python with ctypes alone, from two threads at once, with every
kind of bad call; two libraries in one program; a CPU the library was not built for;
external functions linked in or refused. Every output is checked against ONNX Runtime."""
from __future__ import annotations

import ctypes
import os
import re
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

from onnx import helper  # noqa: E402
from onnx_models import mlp, model, tensor, weight  # noqa: E402

from compiler import graph, runtime  # noqa: E402
from compiler.errors import BuildError  # noqa: E402
from compiler.frontend import from_onnx  # noqa: E402
from compiler.runtime.cpu_features import required_features  # noqa: E402
from compiler.runtime.elf_info import read_elf  # noqa: E402
from compiler.runtime.export_library import api_functions, c_compiler  # noqa: E402
from compiler.target import Target  # noqa: E402

CC = c_compiler()
pytestmark = pytest.mark.skipif(CC is None, reason="no C compiler (cc, gcc or clang, or "
                                                   "$CC) to link a model library with")
README = Path(__file__).resolve().parents[3] / "README.md"


def residual_then_depthwise(c: int = 7, size: int = 13):
    """x -> conv-relu-conv + x -> relu (output 1) -> depthwise 3x3 stride 2 -> clip ->
    pointwise to 37 -> global average pool -> flatten (output 0: the "logits")."""
    nodes = [
        helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c1"], ["r1"]),
        helper.make_node("Conv", ["r1", "w2"], ["c2"], pads=[1, 1, 1, 1]),
        helper.make_node("Add", ["c2", "x"], ["s"]),
        helper.make_node("Relu", ["s"], ["res"]),
        helper.make_node("Conv", ["res", "dw"], ["d"], group=c, pads=[1, 1, 1, 1],
                         strides=[2, 2]),
        helper.make_node("Clip", ["d", "lo", "hi"], ["d6"]),
        helper.make_node("Conv", ["d6", "pw", "pb"], ["p"]),
        helper.make_node("GlobalAveragePool", ["p"], ["gap"]),
        helper.make_node("Flatten", ["gap"], ["logits"], axis=1),
    ]
    inits = [weight("w1", c, c, 3, 3), weight("b1", c), weight("w2", c, c, 3, 3),
             weight("dw", c, 1, 3, 3), weight("pw", 37, c, 1, 1), weight("pb", 37),
             onnx.numpy_helper.from_array(np.array(0.0, "float32"), "lo"),
             onnx.numpy_helper.from_array(np.array(6.0, "float32"), "hi")]
    return model(nodes, [tensor("x", [1, c, size, size])],
                 [tensor("logits", None), tensor("res", None)], inits)


def _build(tmp: Path, onnx_model, name: str, target="llvm", external=None):
    """The model library `name`.so (and `name`.h) of an ONNX model, its input, ONNX
    Runtime's outputs on it, and the ONNX file."""
    path = tmp / f"{name}.onnx"
    onnx.save(onnx_model, path)
    mod, params = from_onnx(path)
    lib = graph.build(mod, target=target, params=params, external=external)
    lib.export_library(tmp / f"{name}.so", header=tmp / f"{name}.h")
    spec = lib.plan["inputs"][0]
    x = np.random.default_rng(3).standard_normal(spec["shape"]).astype("float32")
    expected = ort.InferenceSession(str(path)).run(None, {spec["name"]: x})
    return tmp / f"{name}.so", x, expected, path


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    return _build(tmp_path_factory.mktemp("library"), residual_then_depthwise(), "block")[:3]


def _compile_c(source: str, tmp: Path, name: str, *args) -> Path:
    (tmp / f"{name}.c").write_text(source)
    done = subprocess.run([CC, "-O1", "-o", tmp / name, tmp / f"{name}.c", *map(str, args)],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return tmp / name


RUN_C = r"""
#include <stdio.h>
#include <stdlib.h>
#include "block.h"
/* main INPUT OUT0 OUT1: the model on INPUT's bytes, each output's bytes to its file */
int main(int argc, char **argv) {
  autosched_model *m;
  if (argc != 4 || autosched_create(&m)) { puts(autosched_last_error(NULL)); return 1; }
  size_t n = autosched_input_bytes(0);
  void *x = malloc(n);
  FILE *f = fopen(argv[1], "rb");
  if (fread(x, 1, n, f) != n) return 2;
  fclose(f);
  if (autosched_set_input_by_name(m, "x", x, n) || autosched_run(m)) {
    puts(autosched_last_error(m)); return 3; }
  for (int k = 0; k < autosched_num_outputs(); k++) {
    size_t bytes = autosched_output_bytes(k);
    void *y = malloc(bytes);
    if (autosched_get_output(m, k, y, bytes)) { puts(autosched_last_error(m)); return 4; }
    f = fopen(argv[2 + k], "wb");
    fwrite(y, 1, bytes, f);
    fclose(f);
    free(y);
  }
  autosched_destroy(m);
  puts("ok");
  return 0;
}
"""


def test_a_c_program_runs_the_model_in_a_fresh_process(built, tmp_path):
    path, x, expected = built
    (tmp_path / "block.h").write_text((path.parent / "block.h").read_text())
    main = _compile_c(RUN_C, tmp_path, "main", path)
    x.tofile(tmp_path / "x.bin")
    done = subprocess.run([main, tmp_path / "x.bin", tmp_path / "y0.bin", tmp_path / "y1.bin"],
                          capture_output=True, text=True)
    assert done.returncode == 0 and done.stdout == "ok\n", done.stdout + done.stderr
    for k, want in enumerate(expected):
        got = np.fromfile(tmp_path / f"y{k}.bin", np.float32).reshape(want.shape)
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


def test_the_readme_program_prints_the_top_class(built, tmp_path):
    """README's "Deploying a compiled model" program, compiled as it says, on this model."""
    path, x, expected = built
    text = README.read_text().split("## Deploying a compiled model", 1)[1]
    source = re.search(r"```c\n(.*?)```", text, re.S).group(1)
    command = re.search(r"^\s+(cc main\.c .*)$", text, re.M).group(1)
    assert command.startswith("cc main.c ./model.so -o main")
    for name in ("model.so", "model.h"):
        os.symlink(path.parent / name.replace("model", "block"), tmp_path / name)
    main = _compile_c(source, tmp_path, "main", tmp_path / "model.so")
    x.tofile(tmp_path / "image.raw")
    done = subprocess.run([main, "image.raw"], capture_output=True, text=True, cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.split()[:2] == ["class", str(int(np.argmax(expected[0])))], done.stdout


def test_the_library_needs_the_c_runtime_alone_and_exports_the_api_alone(built):
    path, _, _ = built
    needed = read_elf(path).needed
    assert needed and all(re.fullmatch(r"lib(c|m|pthread)\.so\.\d+", n) for n in needed), needed
    lib = ctypes.CDLL(str(path))
    assert all(hasattr(lib, f) for f in api_functions())
    for hidden in ("graph_run", "autosched_parallel_for_dynamic", "autosched_pool_busy",
                   "autosched_weights", "autosched_module_meta", "fused_nn_conv2d_0"):
        assert not hasattr(lib, hidden), hidden


FRESH = """
import ctypes, os, sys
import numpy as np
lib = ctypes.CDLL(sys.argv[1])
P = ctypes.c_void_p
lib.autosched_create.argtypes = [ctypes.POINTER(P)]
for f in ("run", "destroy"):
    getattr(lib, "autosched_" + f).argtypes = [P]
lib.autosched_set_input.argtypes = lib.autosched_get_output.argtypes = \\
    [P, ctypes.c_int, P, ctypes.c_size_t]
lib.autosched_set_num_threads.argtypes = [P, ctypes.c_int]
lib.autosched_output_bytes.restype = ctypes.c_size_t
m = P()
assert lib.autosched_create(ctypes.byref(m)) == 0
x = np.load(sys.argv[2])
threads = lambda: len(os.listdir("/proc/self/task"))
before = threads()
outs = []
for n in (1, 0):  # one thread first: the pool makes no worker; then the built count
    assert lib.autosched_set_num_threads(m, n) == 0
    assert lib.autosched_set_input(m, 0, x.ctypes.data, x.nbytes) == 0
    assert lib.autosched_run(m) == 0
    if n == 1:
        assert threads() == before, "a worker thread with one thread set"
    for k in range(2):
        y = np.empty(lib.autosched_output_bytes(k) // 4, np.float32)
        assert lib.autosched_get_output(m, k, y.ctypes.data, y.nbytes) == 0
        outs.append(y)
lib.autosched_destroy(m)
assert not [k for k in sys.modules if k.split(".")[0] in ("compiler", "tuner")]
np.savez(sys.argv[3], *outs)
print("workers", threads() - before)
"""


def test_a_fresh_python_with_ctypes_alone_gets_the_same_outputs(built, tmp_path):
    path, x, expected = built
    np.save(tmp_path / "x.npy", x)
    (tmp_path / "fresh.py").write_text(FRESH)
    done = subprocess.run([sys.executable, tmp_path / "fresh.py", path, tmp_path / "x.npy",
                           tmp_path / "y.npz"], capture_output=True, text=True, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    if len(os.sched_getaffinity(0)) > 1:
        assert done.stdout.split() == ["workers", "1"], done.stdout  # the built count: 2
    with np.load(tmp_path / "y.npz") as y:
        for run in (0, 2):
            for k, want in enumerate(expected):
                np.testing.assert_allclose(y[f"arr_{run + k}"].reshape(want.shape), want,
                                           rtol=1e-4, atol=1e-4)


def test_runtime_load_opens_it_through_the_c_api(built):
    path, x, expected = built
    lib = runtime.load(path)
    assert isinstance(lib, runtime.ModelLibrary)
    assert lib.input_names == ["x"] and [o["name"] for o in lib.outputs] == ["logits", "res"]
    assert [o["shape"] for o in lib.outputs] == [list(e.shape) for e in expected]
    for got, want in zip(lib.run(x=x), expected):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
    assert lib.time_evaluator(number=3, repeat=2)().median > 0
    with pytest.raises(ValueError, match="cannot be profiled kernel by kernel"):
        lib.profile()


def test_two_instances_run_at_once_on_two_threads(built, tmp_path):
    path, x, _ = built
    session = ort.InferenceSession(str(path.with_suffix(".onnx")))
    lib = runtime.load(path)
    inputs = [x, np.random.default_rng(11).standard_normal(x.shape).astype("float32")]
    barrier, errors = threading.Barrier(2), []

    def work(k: int) -> None:
        try:
            want = session.run(None, {"x": inputs[k]})
            barrier.wait()
            for _ in range(20):
                for got, expected in zip(lib.run(x=inputs[k]), want):
                    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-4)
        except Exception as err:  # noqa: BLE001 - reported below
            errors.append(err)
    threads = [threading.Thread(target=work, args=(k,)) for k in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors


def test_many_model_libraries_load_into_one_process(built, tmp_path):
    """Twenty copies (twenty libraries to the loader) in this process, ONNX Runtime's
    libraries among them: a library takes none of the process's static TLS reserve."""
    path, x, expected = built
    for k in range(20):
        copy = tmp_path / f"copy{k}.so"
        copy.write_bytes(path.read_bytes())
        got = runtime.load(copy).run(x=x)[0]
        np.testing.assert_allclose(got, expected[0], rtol=1e-4, atol=1e-4)


def _api(path) -> ctypes.CDLL:
    lib = ctypes.CDLL(str(path))
    P = ctypes.c_void_p
    lib.autosched_create.argtypes = [ctypes.POINTER(P)]
    lib.autosched_last_error.restype = ctypes.c_char_p
    lib.autosched_last_error.argtypes = [P]
    for f in ("set_input", "bind_input", "get_output"):
        getattr(lib, f"autosched_{f}").argtypes = [P, ctypes.c_int, P, ctypes.c_size_t]
    lib.autosched_set_input_by_name.argtypes = [P, ctypes.c_char_p, P, ctypes.c_size_t]
    lib.autosched_run.argtypes = lib.autosched_destroy.argtypes = [P]
    lib.autosched_output_data.restype = P
    lib.autosched_output_data.argtypes = [P, ctypes.c_int]
    lib.autosched_set_num_threads.argtypes = [P, ctypes.c_int]
    return lib


def test_bad_calls_return_an_error_code_and_a_message(built):
    path, x, expected = built
    lib, m = _api(path), ctypes.c_void_p()
    assert lib.autosched_create(ctypes.byref(m)) == 0
    error = lambda: lib.autosched_last_error(m).decode()  # noqa: E731
    data, n = x.ctypes.data, x.nbytes
    assert lib.autosched_run(m) == 5 and "input x has no value" in error()
    assert lib.autosched_get_output(m, 0, data, n) == 5 and "has not run yet" in error()
    assert lib.autosched_set_input_by_name(m, b"image", data, n) == 2
    assert "no input named 'image'; the inputs are x" in error()
    assert lib.autosched_set_input(m, 0, data, n - 4) == 4
    assert f"input x takes {n} bytes (float32), got {n - 4}" in error()
    assert lib.autosched_set_input(m, 0, None, n) == 1 and "data of input x is NULL" in error()
    assert lib.autosched_set_input_by_name(m, None, data, n) == 1 and "name is NULL" in error()
    assert lib.autosched_set_input(m, 3, data, n) == 3 and "input index 3 out of range" in error()
    assert lib.autosched_bind_input(m, 0, data + 1, n) == 9 and "not aligned" in error()
    assert lib.autosched_set_num_threads(m, -2) == 9 and "-2 threads" in error()
    for call in (lib.autosched_run, lib.autosched_destroy):
        call(None)  # a null instance: an error code (run), nothing (destroy); no crash
    assert lib.autosched_run(None) == 1
    assert lib.autosched_last_error(None) == b"autosched_run: model is NULL"
    assert lib.autosched_create(None) == 1
    assert lib.autosched_output_data(m, 0) is None and "has not run yet" in error()
    # bound in place: the run reads the caller's array as it is at the run
    assert lib.autosched_bind_input(m, 0, data, n) == 0 and lib.autosched_run(m) == 0
    assert lib.autosched_output_data(m, 7) is None and "output index 7 out of range" in error()
    out = np.empty_like(expected[0])
    assert lib.autosched_get_output(m, 0, out.ctypes.data, out.nbytes * 2) == 4
    assert lib.autosched_get_output(m, 0, out.ctypes.data, out.nbytes) == 0
    np.testing.assert_allclose(out, expected[0], rtol=1e-4, atol=1e-4)
    lib.autosched_destroy(m)


TWO_C = r"""
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>
typedef int (*create_fn)(void **);
typedef int (*io_fn)(void *, int, const void *, size_t);
typedef int (*run_fn)(void *);
/* main LIB X OUT ...: for each library, run it on X's bytes, write output 0 to OUT */
static int run(const char *path, const char *xfile, const char *out, int flags) {
  void *h = dlopen(path, flags);
  if (!h) { puts(dlerror()); return 1; }
  create_fn create = (create_fn)dlsym(h, "autosched_create");
  io_fn set = (io_fn)dlsym(h, "autosched_set_input"), get = (io_fn)dlsym(h, "autosched_get_output");
  run_fn go = (run_fn)dlsym(h, "autosched_run"), destroy = (run_fn)dlsym(h, "autosched_destroy");
  size_t (*in_bytes)(int) = (size_t (*)(int))dlsym(h, "autosched_input_bytes");
  size_t (*out_bytes)(int) = (size_t (*)(int))dlsym(h, "autosched_output_bytes");
  static char x[1 << 20], y[1 << 20];
  FILE *f = fopen(xfile, "rb");
  size_t n = fread(x, 1, sizeof x, f);
  fclose(f);
  void *m;
  if (n != in_bytes(0) || create(&m) || set(m, 0, x, n) || go(m) ||
      get(m, 0, y, out_bytes(0))) { puts("failed"); return 1; }
  destroy(m);
  f = fopen(out, "wb");
  fwrite(y, 1, out_bytes(0), f);
  fclose(f);
  return 0;
}
int main(int argc, char **argv) {
  /* RTLD_GLOBAL: a symbol that were not hidden would bind to the first library's */
  for (int i = 1; i + 2 < argc; i += 3)
    if (run(argv[i], argv[i + 1], argv[i + 2], RTLD_NOW | RTLD_GLOBAL)) return 1;
  /* closing: the library stays (-z nodelete) and runs again */
  void *h = dlopen(argv[1], RTLD_NOW | RTLD_NOLOAD);
  dlclose(h);
  dlclose(h);
  if (!dlopen(argv[1], RTLD_NOW | RTLD_NOLOAD)) { puts("unloaded"); return 1; }
  if (run(argv[1], argv[2], argv[3], RTLD_NOW)) return 1;
  puts("ok");
  return 0;
}
"""


def test_two_model_libraries_in_one_c_program(built, tmp_path):
    block, x, expected = built
    other, x2, expected2, _ = _build(tmp_path, mlp(), "mlp")
    x.tofile(tmp_path / "x.bin")
    x2.tofile(tmp_path / "x2.bin")
    main = _compile_c(TWO_C, tmp_path, "two", "-ldl")
    done = subprocess.run([main, block, tmp_path / "x.bin", tmp_path / "y.bin",
                           other, tmp_path / "x2.bin", tmp_path / "y2.bin"],
                          capture_output=True, text=True)
    assert done.returncode == 0 and done.stdout == "ok\n", done.stdout + done.stderr
    for name, want in (("y.bin", expected[0]), ("y2.bin", expected2[0])):
        got = np.fromfile(tmp_path / name, np.float32).reshape(want.shape)
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


COUNT_C = r"""
#include <stdio.h>
#include <stdlib.h>
#include "conv.h"
/* glibc's own allocator under our counting one: the library's calls bind to these */
extern void *__libc_malloc(size_t), *__libc_calloc(size_t, size_t);
extern void *__libc_memalign(size_t, size_t), *__libc_realloc(void *, size_t);
static long calls;
static int counting;
#define COUNT() if (counting) __atomic_fetch_add(&calls, 1, __ATOMIC_RELAXED)
void *malloc(size_t n) { COUNT(); return __libc_malloc(n); }
void *calloc(size_t k, size_t n) { COUNT(); return __libc_calloc(k, n); }
void *realloc(void *p, size_t n) { COUNT(); return __libc_realloc(p, n); }
void *aligned_alloc(size_t a, size_t n) { COUNT(); return __libc_memalign(a, n); }
int posix_memalign(void **p, size_t a, size_t n) { COUNT(); *p = __libc_memalign(a, n);
  return *p ? 0 : 12; }
int main(void) {
  autosched_model *m;
  static float x[1 << 20];
  if (autosched_create(&m) || autosched_set_input(m, 0, x, autosched_input_bytes(0)) ||
      autosched_run(m)) return 1;
  counting = 1;  /* the first run filled the workspace: the next ones allocate nothing */
  for (int k = 0; k < 5; k++) if (autosched_run(m)) return 2;
  counting = 0;
  printf("%ld\n", calls);
  autosched_destroy(m);
  return 0;
}
"""


def test_runs_after_the_first_allocate_nothing(tmp_path):
    """A kernel's scratch buffers too big for the stack (the padded input of this 3x3
    convolution) come from the library's workspace, kept from one run to the next."""
    x = graph.var("x", shape=(1, 16, 61, 61))
    w = graph.const(np.random.default_rng(0).standard_normal((16, 16, 3, 3)).astype("float32"))
    mod = graph.IRModule.from_expr(graph.Function([x], graph.nn.relu(graph.nn.conv2d(
        x, w, padding=(1, 1)))))
    lib = graph.build(mod)
    assert "@aligned_alloc" in lib.lib.get_source(), "no kernel of this model allocates"
    lib.export_library(tmp_path / "conv.so", header=tmp_path / "conv.h")
    main = _compile_c(COUNT_C, tmp_path, "count", "-rdynamic", tmp_path / "conv.so")
    done = subprocess.run([main], capture_output=True, text=True)
    assert done.returncode == 0 and done.stdout == "0\n", done.stdout + done.stderr


def _foreign_target() -> tuple[str, list[str]]:
    """A target whose features this host lacks, and those features."""
    host = set(required_features(Target("llvm")))
    for spec in ("llvm -mcpu=sapphirerapids", "llvm -mcpu=znver5", "llvm -mcpu=tigerlake"):
        missing = sorted(set(required_features(Target(spec))) - host)
        if missing:
            return spec, missing
    pytest.skip("this host has every feature of the targets tried")


def test_a_cpu_without_the_features_built_for_gets_an_error_naming_them(tmp_path):
    spec, missing = _foreign_target()
    x = graph.var("x", shape=(7, 37))
    mod = graph.IRModule.from_expr(graph.Function([x], graph.nn.relu(graph.exp(x))))
    graph.build(mod, target=spec).export_library(tmp_path / "foreign.so")
    lib, m = _api(tmp_path / "foreign.so"), ctypes.c_void_p()
    assert lib.autosched_create(ctypes.byref(m)) == 7 and not m.value
    message = lib.autosched_last_error(None).decode()
    assert "this CPU lacks" in message and spec.split()[1] in message
    assert all(re.search(rf"\b{re.escape(f)}\b", message) for f in missing), message
    with pytest.raises(ValueError, match="this CPU lacks"):
        runtime.load(tmp_path / "foreign.so")


@pytest.mark.parametrize("mcpu", ["haswell", "skylake-avx512"])
def test_a_library_for_another_x86_cpu_runs_here_or_names_what_this_cpu_lacks(mcpu, tmp_path):
    spec = f"llvm -mcpu={mcpu}"
    path, x, expected, _ = _build(tmp_path, residual_then_depthwise(), "m", target=spec)
    if set(required_features(Target(spec))) <= set(required_features(Target("llvm"))):
        for got, want in zip(runtime.load(path).run(x=x), expected):
            np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
    else:
        with pytest.raises(ValueError, match=f"this CPU lacks .* \\(target {spec} "):
            runtime.load(path)


def test_c_from_the_ccompiler_codegen_is_linked_in_and_cblas_refused(tmp_path):
    onnx.save(mlp(), tmp_path / "m.onnx")
    mod, params = from_onnx(tmp_path / "m.onnx")
    x = np.random.default_rng(3).standard_normal((5, 13)).astype("float32")
    want, = ort.InferenceSession(str(tmp_path / "m.onnx")).run(None, {"x": x})
    lib = graph.build(mod, params=params, external=["ccompiler"])
    assert lib.plan["externals"] and set(lib.plan["externals"].values()) == {"c"}
    lib.export_library(tmp_path / "c.so")
    assert all(re.fullmatch(r"lib(c|m|pthread)\.so\.\d+", n)
               for n in read_elf(tmp_path / "c.so").needed)
    got, = runtime.load(tmp_path / "c.so").run(x=x)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
    pytest.importorskip("scipy_openblas32")
    lib = graph.build(mod, params=params, external=["cblas"])
    with pytest.raises(BuildError, match=r"external function \w+ \(cblas\) calls OpenBLAS"):
        lib.export_library(tmp_path / "blas.so")


def test_the_header_lists_the_inputs_and_outputs(built):
    path, _, expected = built
    header = (path.parent / "block.h").read_text()
    assert " *   0: x  float32[1, 7, 13, 13]" in header
    assert f" *   0: logits  float32[{', '.join(map(str, expected[0].shape))}]" in header
    assert f" *   1: res  float32[{', '.join(map(str, expected[1].shape))}]" in header
    assert "int autosched_run(autosched_model *model);" in header


def test_without_a_c_compiler_export_library_says_so(monkeypatch):
    x = graph.var("x", shape=(7,))
    lib = graph.build(graph.IRModule.from_expr(graph.Function([x], graph.nn.relu(x))))
    monkeypatch.delenv("CC", raising=False)
    monkeypatch.setenv("PATH", "/nonexistent")
    with pytest.raises(BuildError, match="linked by a C compiler"):
        lib.export_library("never.so")


def test_api_functions_are_the_headers_declarations():
    names = api_functions()
    assert len(names) == len(set(names)) == 25
    assert {"autosched_create", "autosched_run", "autosched_set_num_threads"} <= set(names)
