"""compiler.build end to end: loops the vectorizer leaves scalar (with a
VectorizeWarning, results still right) and the runtime Module's argument checks."""
from __future__ import annotations

import os
import platform
import subprocess
import sys

import numpy as np
import pytest

import compiler
from compiler import te
from compiler.transform import VectorizeWarning
from build_check import check_build, randn, unwritten

pytestmark = pytest.mark.filterwarnings("ignore::compiler.transform.VectorizeWarning")


# --------------------------------------------------------------------------- vectorize fallback


def test_vectorize_symbolic_extent_warns_and_stays_correct():
    n = te.var("n")
    A = te.placeholder((n,), name="A")
    B = te.compute((n,), lambda i: A[i] + 1, name="B")
    s = te.create_schedule(B.op)
    s[B].vectorize(B.op.axis[0])
    with pytest.warns(VectorizeWarning, match="not a constant"):
        f = compiler.build(s, [A, B])
    for size in (1, 13):
        a = randn(size, size)
        b = unwritten(a)
        f(a, b)
        np.testing.assert_allclose(b, a + 1, rtol=1e-6)


def test_vectorize_padding_read_warns_and_stays_correct():
    A = te.placeholder((10,), name="A")
    P = te.compute((12,), lambda i: te.if_then_else(te.all(i >= 1, i < 11), A[i - 1], 0.0),
                   name="P")
    s = te.create_schedule(P.op)
    s[P].vectorize(P.op.axis[0])
    a = randn(44, 10)
    with pytest.warns(VectorizeWarning, match="guarded read"):
        check_build(s, [A, P], [a], [np.pad(a, 1)], rtol=0, atol=0)


GUARDED_PAD_SCRIPT = """
import ctypes, mmap
import numpy as np, compiler
from compiler import te

# X sits between two inaccessible pages: any read outside it faults
H, C = 100, 16
nbytes, page = H * C * 4, mmap.PAGESIZE
body = -(-nbytes // page) * page
libc = ctypes.CDLL(None)
libc.mmap.restype = ctypes.c_void_p
libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int,
                      ctypes.c_int, ctypes.c_long]
libc.mprotect.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
base = libc.mmap(None, body + 2 * page, 0, mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS, -1, 0)
assert libc.mprotect(base + page, body, mmap.PROT_READ | mmap.PROT_WRITE) == 0
start = base + page + body - nbytes
x = np.frombuffer((ctypes.c_char * nbytes).from_address(start), "float32").reshape(H, C)
x[:] = 1

X = te.placeholder((H, C), name="X")
P = te.compute((H + 2, C), lambda y, c: te.if_then_else(te.all(y >= 1, y < H + 1),
                                                        X[y - 1, c], 0.0), name="P")
s = te.create_schedule(P.op)
s[P].vectorize(P.op.axis[1])
f = compiler.build(s, [X, P], target="llvm -mcpu=x86-64")
p = np.full((H + 2, C), np.nan, "float32")
f(x, p)
assert np.array_equal(p, np.pad(x, ((1, 1), (0, 0))))
print("ok")
"""


@pytest.mark.skipif(platform.machine() != "x86_64", reason="builds for -mcpu=x86-64")
def test_vectorized_padding_uniform_guard_stays_in_bounds():
    # the row condition is the same for every lane; loading X[ramp] before the select
    # would read rows -1 and H of X, which faults without AVX-512 masked loads
    repo = os.path.dirname(os.path.dirname(os.path.abspath(compiler.__file__)))
    env = {**os.environ, "PYTHONPATH": repo}
    done = subprocess.run([sys.executable, "-c", GUARDED_PAD_SCRIPT], capture_output=True,
                          text=True, timeout=120, env=env)
    assert done.returncode == 0 and "ok" in done.stdout, \
        f"exit code {done.returncode}\n{done.stderr[-2000:]}"


def test_vectorize_outer_loop_with_inner_loop():
    A = te.placeholder((8, 5), name="A")
    B = te.compute((8, 5), lambda i, j: A[i, j] * 2 - 1, name="B")
    s = te.create_schedule(B.op)
    s[B].vectorize(B.op.axis[0])
    a = randn(45, 8, 5)
    check_build(s, [A, B], [a], [a * 2 - 1], rtol=1e-6)


# --------------------------------------------------------------------------- argument checks


@pytest.fixture(scope="module")
def add_module():
    A = te.placeholder((4, 6), name="A")
    B = te.placeholder((4, 6), name="B")
    C = te.compute((4, 6), lambda i, j: A[i, j] + B[i, j], name="C")
    s = te.create_schedule(C.op)
    return compiler.build(s, [A, B, C])


def arrays():
    return np.ones((4, 6), "float32"), np.ones((4, 6), "float32"), np.zeros((4, 6), "float32")


def test_args_wrong_count(add_module):
    a, b, c = arrays()
    with pytest.raises(TypeError, match=r"A, B, C.*got 2"):
        add_module(a, b)
    with pytest.raises(TypeError, match="got 4"):
        add_module(a, b, c, c)


def test_args_wrong_dtype(add_module):
    a, b, c = arrays()
    with pytest.raises(TypeError, match=r"\(C\).*float64"):
        add_module(a, b, c.astype("float64"))
    with pytest.raises(TypeError, match=r"\(A\).*int32"):
        add_module(a.astype("int32"), b, c)


def test_args_wrong_shape(add_module):
    a, b, c = arrays()
    with pytest.raises(ValueError, match=r"\(C\).*\(4, 5\)"):
        add_module(a, b, np.zeros((4, 5), "float32"))
    with pytest.raises(ValueError, match=r"\(B\).*dimensions"):
        add_module(a, b.reshape(-1), c)


def test_args_non_contiguous(add_module):
    a, b, c = arrays()
    with pytest.raises(ValueError, match=r"\(C\).*C-contiguous"):
        add_module(a, b, np.zeros((6, 4), "float32").T)
    with pytest.raises(ValueError, match=r"\(A\).*C-contiguous"):
        add_module(np.ones((4, 12), "float32")[:, ::2], b, c)


def test_args_read_only_output(add_module):
    a, b, c = arrays()
    c.setflags(write=False)
    with pytest.raises(ValueError, match=r"\(C\).*read-only"):
        add_module(a, b, c)
    assert not c.any()


def test_args_read_only_input_is_fine(add_module):
    a, b, c = arrays()
    a.setflags(write=False)
    add_module(a, b, c)
    np.testing.assert_array_equal(c, 2)


def test_args_not_an_array(add_module):
    a, b, c = arrays()
    with pytest.raises(TypeError, match=r"\(B\).*list"):
        add_module(a, b.tolist(), c)
