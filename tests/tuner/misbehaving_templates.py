"""A test-only template whose configs misbehave on purpose, one way per value of its
`behaviour` knob: each candidate of a measured batch can be made to build and run
correctly, be rejected by the template, segfault, hang, compute a wrong answer, or take
an hour to build."""
from __future__ import annotations

import time

from compiler import te
from search_spaces import InstantiationError, template

BEHAVIOURS = ["ok", "invalid", "crash", "hang", "wrong", "slow_build"]


def _double(inputs, n):
    return inputs[0] * 2


@template("test_misbehave", reference=_double)
def misbehave(cfg, n: int):
    """B = 2 * A, unless the behaviour knob says otherwise."""
    cfg.define_knob("behaviour", BEHAVIOURS)
    behaviour = cfg["behaviour"].val
    if behaviour == "invalid":
        raise InstantiationError("behaviour=invalid: the template rejects this config")
    if behaviour == "slow_build":
        time.sleep(3600)
    A = te.placeholder((n,), name="A")
    if behaviour == "crash":  # reads a terabyte past A: unmapped memory
        far = te.const(1 << 40, "int64")
        B = te.compute((n,), lambda i: A[i.astype("int64") + far] * 2, name="B")
    elif behaviour == "hang":  # 2^60 iterations of a loop that loads: never finishes
        k1 = te.reduce_axis((0, 1 << 30), name="k1")
        k2 = te.reduce_axis((0, 1 << 30), name="k2")
        B = te.compute((n,), lambda i: te.sum(A[(k1 + k2 + i) % n], axis=[k1, k2]), name="B")
    elif behaviour == "wrong":
        B = te.compute((n,), lambda i: A[i] * 3, name="B")
    else:
        B = te.compute((n,), lambda i: A[i] * 2, name="B")
    return te.create_schedule(B.op), [A, B]


@template("test_plain_reference")
def plain_reference(cfg, n: int):
    """B = exp(A) + 1 with a split knob, and no numpy reference: the runner checks it
    against the same compute built with a default schedule."""
    cfg.define_split("tile", n, num_outputs=2)
    A = te.placeholder((n,), name="A")
    B = te.compute((n,), lambda i: te.exp(A[i]) + 1, name="B")
    s = te.create_schedule(B.op)
    cfg["tile"].apply(s, B, B.op.axis[0])
    return s, [A, B]
