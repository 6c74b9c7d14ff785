"""Helpers for IR-in / IR-out tests of the passes: run a function before and after a
transformation with the IR interpreter and compare."""
from __future__ import annotations

import dataclasses

import numpy as np

from compiler import lower, te
from compiler.ir.interpreter import run
from compiler.ir.stmt import PrimFunc


def run_copy(func: PrimFunc, arrays) -> list:
    """Run `func` on copies of `arrays`; the copies, written by it."""
    out = [a.copy() for a in arrays]
    run(func, *out)
    return out


def assert_same_results(func: PrimFunc, body, arrays, msg="") -> None:
    """`func` with `body` instead of its own writes the same outputs from the same inputs."""
    new = dataclasses.replace(func, body=body)
    for want, got in zip(run_copy(func, arrays), run_copy(new, arrays)):
        np.testing.assert_array_equal(got, want, err_msg=f"{msg}\n{func}\n{new}")


def chain(n, factor):
    """C = (A * 2) + 1 with the producer attached to C's outer loop."""
    A = te.placeholder((n,), name="A")
    B = te.compute((n,), lambda i: A[i] * 2, name="B")
    C = te.compute((n,), lambda i: B[i] + 1, name="C")
    s = te.create_schedule(C.op)
    xo, _ = s[C].split(C.op.axis[0], factor=factor)
    s[B].compute_at(s[C], xo)
    return lower(s, [A, C])


def vec(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype("float32")


def nan(*shape):
    return np.full(shape, np.nan, dtype="float32")
