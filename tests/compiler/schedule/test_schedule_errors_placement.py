"""Misuse of where stages are computed and looked up: compute_at, compute_inline,
schedule lookup and caches, lower(), and internal errors that must not escape.

Every bad input must raise a user-facing error of a documented type (ScheduleError,
LowerError, ValueError, TypeError, IndexError) whose message names the user's objects:
the stage, the axis, the tensor. A KeyError / AttributeError / bare list.index
ValueError escaping from the internals is a bug.
"""
from __future__ import annotations

import re

import numpy as np
import pytest

import compiler
from compiler import LowerError, ScheduleError, te
from compiler.ir.interpreter import run

from lower_check import matmul
from schedule_error_check import chain, raises_named


# --------------------------------------------------------------------------- compute_at


def test_compute_at_non_consumer():
    A, B, C = chain()
    D = te.compute((6, 4), lambda i, j: A[i, j] - 1, name="D")
    s = te.create_schedule([C.op, D.op])
    with pytest.raises(ScheduleError, match=r"stage B\b.*stage D\b.*does not consume B\b"):
        s[B].compute_at(s[D], D.op.axis[0])
    assert s[B].attach_type == "root"


def test_compute_at_onto_itself():
    A, B, C = chain()
    s = te.create_schedule(C.op)
    with pytest.raises(ScheduleError, match=r"stage B\b.*itself"):
        s[B].compute_at(s[B], B.op.axis[0])


def test_compute_at_cycle():
    # A -> B -> C -> D: put C inside D, then D inside C.
    A, B, C = chain()
    D = te.compute((6, 4), lambda i, j: C[i, j] * 3, name="D")
    s = te.create_schedule(D.op)
    s[C].compute_at(s[D], D.op.axis[0])
    with raises_named(ScheduleError, "D", "C"):
        s[D].compute_at(s[C], C.op.axis[0])
    # the first attachment is untouched and still lowers correctly
    assert s[D].attach_type == "root"
    a = np.arange(24, dtype="float32").reshape(6, 4)
    d = np.zeros((6, 4), "float32")
    run(compiler.lower(s, [A, D]), a, d)
    np.testing.assert_allclose(d, (a * 2 + 1) * 3, rtol=1e-4)


def test_compute_at_cycle_through_inner_stage():
    # B at C, C at D; then D at B would loop D -> B -> C -> D.
    A, B, C = chain()
    D = te.compute((6, 4), lambda i, j: C[i, j] * 3, name="D")
    s = te.create_schedule(D.op)
    s[C].compute_at(s[D], D.op.axis[0])
    s[B].compute_at(s[C], C.op.axis[1])
    with raises_named(ScheduleError, "D", "B"):
        s[D].compute_at(s[B], B.op.axis[0])


def test_compute_at_axis_of_other_stage():
    A, B, C = chain()
    s = te.create_schedule(C.op)
    with pytest.raises(ScheduleError,
                       match=r"stage B\b.*axis i\b.*not a current loop of stage C\b"):
        s[B].compute_at(s[C], B.op.axis[0])
    assert s[B].attach_type == "root"


def test_compute_at_axis_already_split():
    A, B, C = chain()
    s = te.create_schedule(C.op)
    i, j = C.op.axis
    s[C].split(i, factor=2)
    with pytest.raises(ScheduleError, match=r"stage B\b.*axis i\b.*stage C\b.*i\.outer"):
        s[B].compute_at(s[C], i)


def test_compute_at_non_itervar_axis():
    A, B, C = chain()
    s = te.create_schedule(C.op)
    with pytest.raises(ScheduleError, match=r"stage B\b.*stage C\b"):
        s[B].compute_at(s[C], 0)


def test_compute_at_placeholder_target():
    A, B, C = chain()
    s = te.create_schedule(C.op)
    with raises_named(ScheduleError, "A", "B"):
        s[B].compute_at(A, B.op.axis[0])


def _lower_or_schedule_error(s, args, inputs, want, *words):
    """Either lower() refuses with a ScheduleError naming `words`, or the schedule
    lowers and computes the right result. Anything else (an internal error, a wrong
    result) fails."""
    try:
        func = compiler.lower(s, args)
    except ScheduleError as err:
        for w in words:
            assert re.search(rf"(?<![\w.]){re.escape(w)}(?!\w)", str(err)), (w, str(err))
        return
    out = np.full(want.shape, np.nan, "float32")
    run(func, *inputs, out)
    np.testing.assert_allclose(out, want, rtol=1e-4)


def test_attach_axis_split_after_compute_at():
    # compute_at loop i of C, then split i: the attach point is no longer a loop. lower()
    # must either follow the split or say so with a ScheduleError naming the stages and
    # the axis -- not crash inside bound inference.
    A, B, C = chain()
    s = te.create_schedule(C.op)
    i, j = C.op.axis
    s[B].compute_at(s[C], i)
    s[C].split(i, factor=4)  # 6 % 4 != 0
    a = np.arange(24, dtype="float32").reshape(6, 4)
    _lower_or_schedule_error(s, [A, C], [a], a * 2 + 1, "B", "C", "i")


def test_attach_axis_fused_after_compute_at():
    A, B, C = chain()
    s = te.create_schedule(C.op)
    i, j = C.op.axis
    s[B].compute_at(s[C], j)
    s[C].fuse(i, j)
    a = np.arange(24, dtype="float32").reshape(6, 4)
    _lower_or_schedule_error(s, [A, C], [a], a * 2 + 1, "B", "C", "j")


def test_consumer_outside_attach_loop():
    # B is read by C and D, but attached inside C only: D would read an undefined B.
    A, B, C = chain()
    D = te.compute((6, 4), lambda i, j: B[i, j] - 1, name="D")
    s = te.create_schedule([C.op, D.op])
    s[B].compute_at(s[C], C.op.axis[0])
    with raises_named(ScheduleError, "B", "C", "D"):
        compiler.lower(s, [A, C, D])


# --------------------------------------------------------------------------- compute_inline


def test_compute_inline_reduction():
    A, B, C, k = matmul()
    D = te.compute(C.shape, lambda i, j: C[i, j] + 1, name="D")
    s = te.create_schedule(D.op)
    with pytest.raises(ScheduleError, match=r"stage C\b.*inline.*reduction"):
        s[C].compute_inline()
    assert s[C].attach_type == "root"


def test_compute_inline_output():
    A, B, C = chain()
    s = te.create_schedule(C.op)
    with pytest.raises(ScheduleError, match=r"stage C\b.*inline.*output"):
        s[C].compute_inline()
    assert s[C].attach_type == "root"


# ----------------------------------------------------------------------- schedule lookup and caches


def test_schedule_lookup_of_placeholder():
    A, B, C = chain()
    s = te.create_schedule(C.op)
    with raises_named(ScheduleError, "A"):
        s[A]
    with pytest.raises(ScheduleError, match=r"\bA\b.*placeholder"):
        s[A.op]


def test_schedule_lookup_of_foreign_tensor():
    A, B, C = chain()
    s = te.create_schedule(B.op)  # C is not in this schedule
    with pytest.raises(ScheduleError, match=r"\bC\b.*not part of this schedule"):
        s[C]


def test_cache_read_reader_does_not_read():
    A, B, C = chain()
    s = te.create_schedule(C.op)
    n_stages = len(s.stages)
    with pytest.raises(ScheduleError, match=r"cache_read of A\b.*stage C\b.*does not read A\b"):
        s.cache_read(A, "local", [C])
    assert len(s.stages) == n_stages, "a failed cache_read must not add a stage"


def test_cache_read_reader_is_placeholder():
    A, B, C = chain()
    s = te.create_schedule(C.op)
    with raises_named(ScheduleError, "A"):
        s.cache_read(B, "local", [A])


def test_cache_write_after_split():
    A, B, C, k = matmul()
    s = te.create_schedule(C.op)
    s[C].split(C.op.axis[0], factor=2)
    with pytest.raises(ScheduleError, match=r"cache_write of C\b.*before split.*stage C\b"):
        s.cache_write(C, "local")
    assert len(s.stages) == 1


def test_cache_write_after_annotation():
    A, B, C = chain()
    s = te.create_schedule(C.op)
    s[C].vectorize(C.op.axis[1])
    with pytest.raises(ScheduleError, match=r"cache_write of C\b"):
        s.cache_write(C, "local")


def test_cache_write_of_placeholder():
    A, B, C = chain()
    s = te.create_schedule(C.op)
    with raises_named(ScheduleError, "A"):
        s.cache_write(A, "local")


# --------------------------------------------------------------------------- lower()


def test_lower_output_missing_from_args():
    A, B, C, k = matmul()
    s = te.create_schedule(C.op)
    with pytest.raises(LowerError, match=r"output C\b.*missing"):
        compiler.lower(s, [A, B])


def test_lower_output_missing_after_cache_write():
    A, B, C, k = matmul()
    s = te.create_schedule(C.op)
    s.cache_write(C, "local")
    with pytest.raises(LowerError, match=r"\bC\b"):
        compiler.lower(s, [A, B])


def test_lower_input_missing_from_args():
    A, B, C, k = matmul()
    s = te.create_schedule(C.op)
    with pytest.raises(LowerError, match=r"\bB\b"):
        compiler.lower(s, [A, C])


def test_lower_duplicate_and_non_tensor_args():
    A, B, C, k = matmul()
    s = te.create_schedule(C.op)
    with pytest.raises(LowerError, match=r"\bA\b.*twice"):
        compiler.lower(s, [A, A, B, C])
    with pytest.raises(LowerError, match=r"argument 1\b"):
        compiler.lower(s, [A, "B", C])


def test_lower_error_is_a_value_error():
    assert issubclass(LowerError, ValueError)
    assert issubclass(ScheduleError, ValueError)


# ------------------------------------------------------------------------ no internal errors escape

def _misuses():
    """(name, thunk) for every misuse above, compact, to check the exception family."""
    def split_zero():
        A, B, C, k = matmul(); s = te.create_schedule(C.op)
        s[C].split(C.op.axis[0], factor=0)

    def foreign_axis():
        A, B, C = chain(); s = te.create_schedule(C.op)
        s[C].vectorize(B.op.axis[0])

    def stale_axis():
        A, B, C = chain(); s = te.create_schedule(C.op)
        i = C.op.axis[0]; s[C].split(i, factor=2); s[C].unroll(i)

    def reorder_dup():
        A, B, C = chain(); s = te.create_schedule(C.op)
        s[C].reorder(C.op.axis[0], C.op.axis[0])

    def fuse_gap():
        A, B, C, k = matmul(); s = te.create_schedule(C.op)
        s[C].fuse(C.op.axis[0], k)

    def at_self():
        A, B, C = chain(); s = te.create_schedule(C.op)
        s[C].compute_at(s[C], C.op.axis[0])

    def at_cycle():
        A, B, C = chain(); s = te.create_schedule(C.op)
        s[B].compute_at(s[C], C.op.axis[0]); s[C].compute_at(s[B], B.op.axis[0])

    def at_foreign_axis():
        A, B, C = chain(); s = te.create_schedule(C.op)
        s[B].compute_at(s[C], B.op.axis[1])

    def inline_reduce():
        A, B, C, k = matmul()
        D = te.compute(C.shape, lambda i, j: C[i, j], name="D")
        s = te.create_schedule(D.op); s[C].compute_inline()

    def vectorize_reduce():
        A, B, C, k = matmul(); s = te.create_schedule(C.op); s[C].vectorize(k)

    def bad_index():
        A = te.placeholder((3, 3), name="A"); A[1]

    def reduce_outside():
        A = te.placeholder((3,), name="A"); r = te.reduce_axis((0, 3), name="r")
        te.compute((3,), lambda i: A[r])

    def lookup_placeholder():
        A, B, C = chain(); te.create_schedule(C.op)[A]

    def cache_read_bad():
        A, B, C = chain(); te.create_schedule(C.op).cache_read(A, "local", [C])

    def cache_write_split():
        A, B, C = chain(); s = te.create_schedule(C.op)
        s[C].split(C.op.axis[0], factor=2); s.cache_write(C, "local")

    def lower_missing():
        A, B, C = chain(); compiler.lower(te.create_schedule(C.op), [A])

    def attach_fused():
        A, B, C = chain(); s = te.create_schedule(C.op)
        s[B].compute_at(s[C], C.op.axis[0]); s[C].fuse(*C.op.axis)
        compiler.lower(s, [A, C])
        raise ValueError("lowered: covered by test_attach_axis_fused_after_compute_at")

    cases = [pytest.param(f.__name__, f, id=f.__name__)
             for f in (split_zero, foreign_axis, stale_axis, reorder_dup, fuse_gap, at_self,
                       at_cycle, at_foreign_axis, inline_reduce, vectorize_reduce, bad_index,
                       reduce_outside, lookup_placeholder, cache_read_bad, cache_write_split,
                       lower_missing, attach_fused)]
    return cases


@pytest.mark.parametrize("name,thunk", _misuses())
def test_no_internal_error_escapes(name, thunk):
    with pytest.raises(Exception) as info:
        thunk()
    err = info.value
    assert not isinstance(err, (KeyError, AttributeError, AssertionError, RecursionError)), \
        f"{name}: internal {type(err).__name__} escaped: {err}"
    assert isinstance(err, (ScheduleError, LowerError, ValueError, TypeError, IndexError)), \
        f"{name}: unexpected {type(err).__name__}: {err}"
    # list.index's "x is not in list" is an internal ValueError, not a user message
    assert "is not in list" not in str(err), f"{name}: internal ValueError escaped: {err}"
