"""compiler/codegen/fast_math.py: float32 exp, log, tanh, sigmoid and erf computed in
vector registers, against numpy in float64, over the whole float range: in scalar code,
in a loop split by 16 and vectorized (its remainder of 13 is one 13-lane vector), and
in 13-lane vectors throughout; their vectorized machine code calls no libm function.

The tolerance: the float64 reference rounded to float32 (so that what overflows float32
is inf), rtol 1e-6, plus an atol of the least denormal (2^-149), which counts only where
the result is denormal (there float32 itself has less than 1e-6 of relative precision).

The largest relative error over every normal float32 result, from a sweep of all 2^32
inputs through the 16-lane kernels (AVX-512 with FMA): exp 7.7e-8, log 9.7e-8, tanh
1.5e-7, sigmoid 1.8e-7, erf 1.8e-7 (1.3 to 3 ulp); denormal results within 0.96 of the
least denormal. The tests below sample the range and hold every function to 1e-6.
"""
from __future__ import annotations

import math
import re

import numpy as np
import pytest

import compiler
from compiler import te


RTOL, ATOL = 1e-6, 2.0 ** -149

_erf64 = np.vectorize(math.erf, otypes=["float64"])
REFERENCE = {
    "exp": np.exp,
    "log": np.log,
    "tanh": np.tanh,
    "sigmoid": lambda a: 1.0 / (1.0 + np.exp(-a)),
    "erf": _erf64,
}
NAMES = list(REFERENCE)

SPECIAL = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 2.0 ** -149, -2.0 ** -149,
                    2.0 ** -126, 1e-30, -1e-30, 3.4028235e38, -3.4028235e38, 88.72283,
                    88.72284, 89.0, -87.33655, -103.27893, -103.97208, -104.0, 0.625,
                    -0.625, 0.75, -0.75, 0.6931472, 1.4142135, 0.70710677, 3.92, 4.0, 9.1,
                    -9.1, 20.0, -20.0], dtype="float32")


def inputs(seed: int = 0, n: int = 40000) -> np.ndarray:
    """The special values, then seeded random floats of every magnitude (log-uniform
    from the least denormal to the largest float, both signs), ordinary ones (within
    +-20, where the functions bend) and random bit patterns (NaN payloads among them)."""
    rng = np.random.default_rng(seed)
    sign = rng.choice([-1.0, 1.0], n)
    wide = (sign * 10.0 ** rng.uniform(-45, 38.5, n)).astype("float32")
    near = rng.uniform(-20, 20, n).astype("float32")
    bits = rng.integers(0, 2 ** 32, n // 4, dtype=np.uint64).astype(np.uint32).view("float32")
    return np.concatenate([SPECIAL, wide, near, bits])


def kernel(name: str, n: int, vector: int | None, rows: int = 1, dtype: str = "float32"):
    """te.NAME over `rows` x `n` of `dtype`: scalar (vector None), or the inner axis split by
    `vector` and vectorized (the remainder, n % vector, one shorter vector), or with
    `vector` == n the whole inner axis one vector of n lanes."""
    A = te.placeholder((rows, n), name="A", dtype=dtype)
    B = te.compute((rows, n), lambda i, j: getattr(te, name)(A[i, j]), name="B")
    s = te.create_schedule(B.op)
    if vector == n:
        s[B].vectorize(B.op.axis[1])
    elif vector:
        _, inner = s[B].split(B.op.axis[1], factor=vector)
        s[B].vectorize(inner)
    return compiler.build(s, [A, B], name=f"fast_{name}")


def run(f, x: np.ndarray, shape) -> np.ndarray:
    a = x.reshape(shape)
    out = np.empty_like(a)
    f(a, out)
    return out.ravel()


def reference(name: str, x: np.ndarray) -> np.ndarray:
    """The float64 reference of float32 `x`."""
    with np.errstate(all="ignore"):
        return REFERENCE[name](x.astype("float64"))


def check(name: str, x: np.ndarray, y: np.ndarray) -> float:
    """Assert `y` is within the tolerance of the reference; return the largest relative
    error over the normal float32 results."""
    want = reference(name, x)
    with np.errstate(over="ignore"):
        want32 = want.astype("float32")
    np.testing.assert_allclose(y, want32, rtol=RTOL, atol=ATOL, err_msg=name)
    normal = np.isfinite(want32) & (np.abs(want32) >= 2.0 ** -126)
    return float(np.max(np.abs(y[normal] - want[normal]) / np.abs(want[normal])))


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("vector", [None, 16], ids=["scalar", "split16"])
def test_matches_numpy_over_the_float_range(name, vector):
    x = inputs()
    x = np.concatenate([x, np.ones((13 - x.size) % 16, "float32")])  # a remainder of 13
    assert x.size % 16 == 13
    worst = check(name, x, run(kernel(name, x.size, vector), x, (1, x.size)))
    assert worst < RTOL, (name, worst)


@pytest.mark.parametrize("name", NAMES)
def test_thirteen_lane_vectors(name):
    x = inputs(seed=1, n=13 * 600)
    x = x[: x.size - x.size % 13]
    check(name, x, run(kernel(name, 13, 13, rows=x.size // 13), x, (x.size // 13, 13)))


@pytest.mark.parametrize("name", ["tanh", "erf"])
def test_odd_functions_keep_the_sign_of_zero(name):
    f = kernel(name, 16, 16)
    y = run(f, np.array([-0.0, 0.0] * 8, "float32"), (1, 16))
    assert list(np.signbit(y[:2])) == [True, False]


EXACT = {  # (input, output) where numpy's float32 answer is exact or a limit
    "exp": [(0.0, 1.0), (-0.0, 1.0), (np.inf, np.inf), (-np.inf, 0.0), (100.0, np.inf),
            (-200.0, 0.0)],
    "log": [(1.0, 0.0), (0.0, -np.inf), (-0.0, -np.inf), (np.inf, np.inf), (-1.0, np.nan),
            (-np.inf, np.nan), (-2.0 ** -149, np.nan)],
    "tanh": [(0.0, 0.0), (np.inf, 1.0), (-np.inf, -1.0), (10.0, 1.0), (-10.0, -1.0),
             (2.0 ** -149, 2.0 ** -149)],
    "sigmoid": [(0.0, 0.5), (-0.0, 0.5), (np.inf, 1.0), (-np.inf, 0.0), (20.0, 1.0),
                (-200.0, 0.0)],
    "erf": [(0.0, 0.0), (np.inf, 1.0), (-np.inf, -1.0), (4.0, 1.0), (-5.0, -1.0)],
}


@pytest.mark.parametrize("name", NAMES)
def test_exact_points_limits_and_nan(name):
    x, want = np.array([*EXACT[name], (np.nan, np.nan)], "float32").T
    x, want = np.resize(x, 16), np.resize(want, 16)
    np.testing.assert_array_equal(run(kernel(name, 16, 16), x, (1, 16)), want)


LIBM = {"exp", "expf", "log", "logf", "tanh", "tanhf", "erf", "erff"}


def libm_calls(asm: str) -> set[str]:
    """The libm functions that the assembly `asm` names (a call, or the address loaded
    for an indirect call, as the JIT's large code model does)."""
    return {w.lstrip("$") for w in re.findall(r"[$\w.]+", asm)} & LIBM


@pytest.mark.parametrize("name", NAMES)
def test_vectorized_kernel_calls_no_libm(name):
    asm = kernel(name, 64, 16).get_source("asm")
    assert libm_calls(asm) == set(), name


@pytest.mark.parametrize("name", NAMES)
def test_float64_keeps_libm_and_its_precision(name):
    # float64 is not ours to approximate in float32 precision: it stays with the C
    # library, one call per lane, which the asm check above would see.
    x = inputs(seed=2, n=2000).astype("float64")
    x = x[: x.size - x.size % 8]
    f = kernel(name, x.size, 8, dtype="float64")
    np.testing.assert_allclose(run(f, x, (1, x.size)), reference(name, x), rtol=1e-12,
                               atol=1e-300, err_msg=name)
    assert libm_calls(f.get_source("asm")) == {"exp" if name == "sigmoid" else name}
