"""Object code from build_object() loads in another process and computes what build() does:
the tuner's build workers send exactly these bytes to the host that times them."""
from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

import compiler
from compiler.ops.gemm import packed_matmul

CHILD = """
import sys, numpy as np
from compiler.runtime import load_object
f = load_object(sys.stdin.buffer.read())
rng = np.random.default_rng(0)
a = rng.random((64, 48), dtype=np.float32); b = rng.random((48, 96), dtype=np.float32)
c = np.empty((64, 96), np.float32)
f(a, b, c)
print(float(np.abs(c - a @ b).max()))
"""


def test_object_code_runs_like_the_jit_build():
    s, args = packed_matmul(64, 96, 48)
    f = compiler.runtime.load_object(compiler.build_object(s, args))
    rng = np.random.default_rng(0)
    a, b = rng.random((64, 48), dtype=np.float32), rng.random((48, 96), dtype=np.float32)
    c = np.empty((64, 96), np.float32)
    f(a, b, c)  # the parallel loop runs on this process's native pool
    np.testing.assert_allclose(c, a @ b, rtol=1e-5)
    assert [p["name"] for p in f.meta["params"]] == ["A", "B", "C"]
    with pytest.raises(TypeError, match="dtype"):
        f(a.astype(np.float64), b, c)


def test_object_code_loads_in_a_fresh_process():
    s, args = packed_matmul(64, 96, 48)
    done = subprocess.run([sys.executable, "-c", CHILD], input=compiler.build_object(s, args),
                          capture_output=True, check=True)
    assert float(done.stdout) < 1e-4


def test_bytes_that_are_not_object_code_are_refused():
    with pytest.raises(ValueError, match="not an ELF object file"):
        compiler.runtime.load_object(b"not an object file")
    with pytest.raises(ValueError, match="not an ELF object file"):
        compiler.runtime.load_object(b"\x7fELF garbage")
    s, args = packed_matmul(64, 96, 48)
    data = compiler.build_object(s, args)
    with pytest.raises(ValueError, match="truncated or damaged"):
        compiler.runtime.load_object(data[: len(data) // 2])
