"""VectorizeLoop and the Simplify pass, IR in / IR out: what a vectorized loop becomes,
and the reason given when it cannot be vectorized."""
import warnings

import pytest

from compiler import lower, te
from compiler.ir.expr import Load
from compiler.ir.functor import transform
from compiler.ir.stmt import SERIAL, VECTORIZED, For, Store
from compiler.transform.loop_partition import loop_partition
from compiler.transform.simplify import simplify_func_body
from compiler.transform.vectorize import VectorizeWarning, vectorize_loop


def _lowered(shape, fcompute, factor, inputs=1):
    ins = [te.placeholder(shape, name=n) for n in "AB"[:inputs]]
    if len(shape) == 1:
        C = te.compute(shape, lambda i: fcompute(*ins, i), name="C")
    else:
        C = te.compute(shape, lambda i, j: fcompute(*ins, i, j), name="C")
    s = te.create_schedule(C.op)
    _, inner = s[C].split(C.op.axis[-1], factor=factor)
    s[C].vectorize(inner)
    return lower(s, [*ins, C])


def _refusals(body):
    got = []
    out = vectorize_loop(body, report=lambda loop, why: got.append((loop.loop_var.name, why)))
    return out, got


def test_contiguous_loads_and_broadcast_constants():
    f = _lowered((4, 32), lambda A, B, i, j: A[i, j] * 2.0 + B[i, j], 16, inputs=2)
    out, refused = _refusals(f.body)
    assert refused == []
    assert str(out) == (
        "for (i, 0, 4) {\n"
        "  for (j.outer, 0, 2) {\n"
        "    C[ramp(((i*32) + (j.outer*16)), 1, 16)] = ((A[ramp(((i*32) + (j.outer*16)), 1, 16)]"
        "*x16(2.0f)) + B[ramp(((i*32) + (j.outer*16)), 1, 16)])\n"
        "  }\n"
        "}")


def test_scalar_operand_is_broadcast_and_strided_index_stays_a_ramp():
    A = te.placeholder((64,), name="A")
    B = te.placeholder((4,), name="B")
    C = te.compute((4, 16), lambda i, j: A[j * 4 + i] + B[i], name="C")
    s = te.create_schedule(C.op)
    s[C].vectorize(C.op.axis[1])
    out, refused = _refusals(lower(s, [A, B, C]).body)
    assert refused == []
    assert "A[ramp(i, 4, 16)]" in str(out) and "x16(B[i])" in str(out)


def test_reduction_along_the_vectorized_axis_is_refused():
    A = te.placeholder((16, 16), name="A")
    k = te.reduce_axis((0, 16), name="k")
    B = te.compute((16,), lambda i: te.sum(A[i, k], axis=k), name="B")
    s = te.create_schedule(B.op)
    f = lower(s, [A, B])
    # Mark the reduction loop vectorized by hand (schedules refuse it up front).
    body = transform(f.body, lambda n: For(n.loop_var, n.min, n.extent, VECTORIZED, n.body)
                     if isinstance(n, For) and n.loop_var.name == "k" else None)
    out, refused = _refusals(body)
    assert refused == [("k", "the store to B[i] does not move with k: a reduction along the "
                              "vectorized axis")]
    assert "ramp" not in str(out) and "for (k, 0, 16)" in str(out)


def test_loop_carried_dependence_is_refused():
    A = te.placeholder((17,), name="A")
    B = te.compute((16,), lambda i: A[i + 1] * 2.0, name="B")
    s = te.create_schedule(B.op)
    s[B].vectorize(B.op.axis[0])
    f = lower(s, [A, B])
    # B[i] = B[i - 1] * 2 style: the load of A[i + 1] becomes a load of B[i - 1].
    store = [n for n in [f.body.body] if isinstance(n, Store)][0]
    body = transform(f.body, lambda n: Load(store.buffer, n.index - 2)
                     if isinstance(n, Load) and n.buffer.name == "A" else None)
    _, refused = _refusals(body)
    assert refused == [("i", "B is written and read at different places in the loop")]


def test_per_lane_guarded_read_is_refused_and_warns():
    f = _lowered((16,), lambda A, i: te.if_then_else(i < 5, A[i], 0.0), 16)
    with pytest.warns(VectorizeWarning, match="loop i.inner is not vectorized: the guarded read"):
        vectorize_loop(f.body)


def test_variable_extent_is_refused_but_a_partition_tail_is_not_reported():
    n = te.var("n")
    A = te.placeholder((n,), name="A")
    C = te.compute((n,), lambda i: A[i] + 1.0, name="C")
    s = te.create_schedule(C.op)
    s[C].vectorize(C.op.axis[0])
    _, refused = _refusals(lower(s, [A, C]).body)
    assert refused == [("i", "its extent n is not a constant")]

    s = te.create_schedule(C.op)
    _, inner = s[C].split(C.op.axis[0], factor=16)
    s[C].vectorize(inner)
    body = loop_partition(lower(s, [A, C]).body)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = vectorize_loop(body)
    assert "ramp((i.outer*16), 1, 16)" in str(out)


def test_simplify_removes_unit_loops_and_folds_constants():
    A = te.placeholder((4,), name="A")
    B = te.compute((4,), lambda i: A[i] * 2.0, name="B")
    f = lower(te.create_schedule(B.op), [A, B])
    store = f.body.body
    j = te.var("j")
    value = Load(store.value.a.buffer, store.index + j * 1) * (te.const(2.0) + 1.0)
    body = For(f.body.loop_var, f.body.min, f.body.extent, SERIAL,
               For(j, te.const(0), te.const(1), SERIAL, Store(store.buffer, store.index, value)))
    assert "for (j, 0, 1)" in str(body)
    assert str(simplify_func_body(body)) == "for (i, 0, 4) {\n  B[i] = (A[i]*3.0f)\n}"
