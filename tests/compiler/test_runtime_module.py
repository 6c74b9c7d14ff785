"""The runtime Module: timing in native code, export, and load in a fresh process."""
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import compiler
from compiler import runtime, te

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


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
    with pytest.raises(ValueError, match=r"argument 1 \(Y\) of saxpy has shape \(5,\), expected \(4,\)"):
        f(np.ones(4, "float32"), np.ones(5, "float32"), np.ones(4, "float32"))
