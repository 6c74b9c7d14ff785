"""The runtime Module: timing in native code, export, and load in a fresh process."""
import os
import subprocess
import sys
import textwrap

import llvmlite.binding as llvm
import numpy as np
import pytest

import compiler
from compiler import runtime, te
from compiler.codegen.llvm import CodeGenLLVM
from compiler.errors import ModuleFormatError

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(compiler.__file__)))  # the repository


def _saxpy():
    n = te.var("n")
    X = te.placeholder((n,), name="X")
    Y = te.placeholder((n,), name="Y")
    Z = te.compute((n,), lambda i: X[i] * 3.0 + Y[i], name="Z")
    s = te.create_schedule(Z.op)
    outer, inner = s[Z].split(Z.op.axis[0], factor=16)
    s[Z].vectorize(inner)
    s[Z].parallel(outer)
    return compiler.build(s, [X, Y, Z], name="saxpy")


LOAD_AND_RUN = textwrap.dedent("""
    import sys
    import numpy as np
    from compiler import runtime
    f = runtime.load(sys.argv[1])
    for n in (1, 7, 1000):
        x = np.arange(n, dtype="float32"); y = np.ones(n, "float32"); z = np.zeros(n, "float32")
        f(x, y, z)
        assert np.array_equal(z, x * 3 + 1), (n, z)
    print(f.entry_name, f.time_evaluator(number=5, repeat=2)(x, y, z).mean > 0)
""")


def _run_fresh(path):
    out = subprocess.run([sys.executable, "-c", LOAD_AND_RUN, str(path)], cwd=ROOT,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return out.stdout.strip()


def test_export_shared_library_and_load_in_a_new_process(tmp_path):
    import shutil
    if not (shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")):
        pytest.skip("no C compiler to link a shared library")
    path = tmp_path / "saxpy.so"
    assert _saxpy().export(path) == "so"
    assert _run_fresh(path) == "saxpy True"


def test_export_bitcode_without_a_c_compiler(tmp_path, monkeypatch):
    f = _saxpy()
    monkeypatch.setenv("PATH", "")
    path = tmp_path / "saxpy.bc"
    assert f.export(path) == "bc"
    monkeypatch.undo()
    assert _run_fresh(path) == "saxpy True"


def test_load_rejects_other_files(tmp_path):
    bogus = tmp_path / "notes.txt"
    bogus.write_text("hello")
    with pytest.raises(ValueError, match="notes.txt is neither a shared library nor LLVM bitcode"):
        runtime.load(bogus)


def test_time_evaluator():
    f = _saxpy()
    x, y, z = (np.ones(4096, "float32") for _ in range(3))
    r = f.time_evaluator(number=20, repeat=3)(x, y, z)
    assert len(r.results) == 3 and all(t > 0 for t in r.results)
    assert r.min <= r.median <= r.max and r.mean > 0
    slow = f.time_evaluator(number=1, repeat=1, min_repeat_ms=30)(x, y, z)
    assert slow.results[0] < 0.03  # seconds per call, not per repeat
    with pytest.raises(ValueError, match="repeat must be an integer >= 1"):
        f.time_evaluator(repeat=0)


def test_symbolic_sizes_bind_from_the_arrays():
    f = _saxpy()
    with pytest.raises(ValueError,
                       match=r"argument 1 \(Y\) of saxpy has shape \(5,\), expected \(4,\)"):
        f(np.ones(4, "float32"), np.ones(5, "float32"), np.ones(4, "float32"))


def _shifted_sums():
    """B[i] = A[i] + A[i + 2] and C[j] = A[2j]: argument shapes (n + 2,), (n,) and
    (n // 2 + 1,), two of them expressions of the size n."""
    n = te.var("n")
    A = te.placeholder((n + 2,), name="A")
    B = te.compute((n,), lambda i: A[i] + A[i + 2], name="B")
    C = te.compute((n // 2 + 1,), lambda j: A[j * 2], name="C")
    return compiler.build(te.create_schedule([B.op, C.op]), [A, B, C], name="shifted")


LOAD_AND_CHECK_SHAPES = textwrap.dedent("""
    import sys
    import numpy as np
    from compiler import runtime
    f = runtime.load(sys.argv[1])
    for n in (1, 6, 9):
        a = np.arange(n + 2, dtype="float32")
        b, c = np.zeros(n, "float32"), np.zeros(n // 2 + 1, "float32")
        f(a, b, c)
        assert np.array_equal(b, a[:n] + a[2:]) and np.array_equal(c, a[::2][:n // 2 + 1])
    try:
        f(np.zeros(8, "float32"), np.zeros(5, "float32"), np.zeros(3, "float32"))
    except ValueError as err:
        print(err)
""")


@pytest.mark.parametrize("kind", ["so", "bc"])
def test_shape_expressions_survive_export_and_load_in_a_new_process(tmp_path, monkeypatch,
                                                                      kind):
    f = _shifted_sums()
    if kind == "bc":
        monkeypatch.setenv("PATH", "")  # no C compiler to link with: export writes bitcode
    path = tmp_path / "shifted.module"
    assert f.export(path) == kind
    monkeypatch.undo()
    out = subprocess.run([sys.executable, "-c", LOAD_AND_CHECK_SHAPES, str(path)], cwd=ROOT,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "argument 0 (A) of shifted has shape (8,), expected (7,)"


def test_load_rejects_metadata_that_is_not_data(tmp_path):
    """A file whose metadata carries code where a shape belongs is refused at load, and
    the code is never run."""
    marker = tmp_path / "ran"
    meta = {"entry": "evil", "target": "llvm", "size_vars": ["n"],
            "params": [{"name": "X", "dtype": "float32", "written": True,
                        "shape": ["n", {"expr": f"__import__('os').system('touch {marker}')"}]}]}
    cg = CodeGenLLVM(compiler.Target("llvm"), name="evil")
    cg.add_metadata(meta)
    path = tmp_path / "evil.bc"
    path.write_bytes(llvm.parse_assembly(str(cg.module)).as_bitcode())
    with pytest.raises(ModuleFormatError, match=r"dimension 1 of argument X of evil has the "
                                                r"shape expression \"__import__\('os'\)"):
        runtime.load(path)
    assert not marker.exists()
