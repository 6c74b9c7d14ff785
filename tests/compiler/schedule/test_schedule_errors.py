"""Misuse of schedule primitives: split, reorder, fuse, stale or foreign axes,
annotations.

Every bad input must raise a user-facing error of a documented type (ScheduleError,
LowerError, ValueError, TypeError, IndexError) whose message names the user's objects:
the stage, the axis, the tensor. A KeyError / AttributeError / bare list.index
ValueError escaping from the internals is a bug.
"""
from __future__ import annotations


import numpy as np
import pytest

import compiler
from compiler import ScheduleError, te
from compiler.ir.interpreter import run

from lower_check import matmul
from schedule_error_check import chain, names, raises_named


def test_raises_named_helper_is_strict():
    # The helper itself must be able to fail: "axis i" must not match "axis i.outer"
    # only through a prefix, and every word must be present.
    with pytest.raises(AssertionError):
        with raises_named(ValueError, "C", "k"):
            raise ValueError("stage C: axis j")
    with pytest.raises(AssertionError):
        with raises_named(ValueError, "i"):
            raise ValueError("stage C: axis i2")
    with raises_named(ValueError, "C", "i.outer"):
        raise ValueError("stage C: axis i.outer")


# --------------------------------------------------------------------------- split


@pytest.mark.parametrize("factor", [0, -2])
def test_split_factor_not_positive(factor):
    A, B, C, k = matmul()
    s = te.create_schedule(C.op)
    i, j = C.op.axis
    before = names(s[C])
    with pytest.raises(ScheduleError, match=rf"stage C\b.*axis j\b.*factor.*{factor}"):
        s[C].split(j, factor=factor)
    assert names(s[C]) == before, "a failed split must leave the stage unchanged"


@pytest.mark.parametrize("nparts", [0, -1])
def test_split_nparts_not_positive(nparts):
    A, B, C, k = matmul()
    s = te.create_schedule(C.op)
    i, _ = C.op.axis
    with pytest.raises(ScheduleError, match=rf"stage C\b.*axis i\b.*nparts.*{nparts}"):
        s[C].split(i, nparts=nparts)
    assert names(s[C]) == ["i", "j", "k"]


def test_split_non_integer_factor():
    A, B, C, k = matmul()
    s = te.create_schedule(C.op)
    with pytest.raises(ScheduleError, match=r"stage C\b.*axis i\b.*integer"):
        s[C].split(C.op.axis[0], factor=2.5)


def test_split_factor_and_nparts_both_given():
    A, B, C, k = matmul()
    s = te.create_schedule(C.op)
    with pytest.raises(ScheduleError, match=r"stage C\b.*axis i\b.*factor.*nparts"):
        s[C].split(C.op.axis[0], factor=2, nparts=2)
    assert names(s[C]) == ["i", "j", "k"]


def test_split_neither_factor_nor_nparts():
    A, B, C, k = matmul()
    s = te.create_schedule(C.op)
    with pytest.raises(ScheduleError, match=r"stage C\b.*axis k\b.*factor.*nparts"):
        s[C].split(k)
    assert names(s[C]) == ["i", "j", "k"]


# --------------------------------------------------------------------------- foreign / stale axes


def test_split_axis_of_another_stage():
    A, B, C = chain()
    s = te.create_schedule(C.op)
    with raises_named(ScheduleError, "C", "i", "B"):
        s[C].split(B.op.axis[0], factor=2)
    with pytest.raises(ScheduleError, match=r"stage C\b.*axis i\b.*belongs to stage B\b"):
        s[C].split(B.op.axis[0], factor=2)


@pytest.mark.parametrize("primitive", ["vectorize", "unroll", "parallel", "fuse", "reorder"])
def test_annotation_with_axis_of_another_stage(primitive):
    A, B, C = chain()
    s = te.create_schedule(C.op)
    with pytest.raises(ScheduleError, match=r"stage C\b.*axis j\b.*belongs to stage B\b"):
        getattr(s[C], primitive)(B.op.axis[1])


def test_pragma_with_axis_of_another_stage():
    A, B, C = chain()
    s = te.create_schedule(C.op)
    with pytest.raises(ScheduleError, match=r"stage C\b.*axis j\b.*stage B\b"):
        s[C].pragma(B.op.axis[1], "auto_unroll_max_step", 16)


def test_axis_of_a_split_stage_given_to_another_stage():
    # a derived (split) axis of B, not just a root axis, must also be traced to B
    A, B, C = chain()
    s = te.create_schedule(C.op)
    bo, bi = s[B].split(B.op.axis[0], factor=2)
    with pytest.raises(ScheduleError, match=r"stage C\b.*axis i\.inner\b.*stage B\b"):
        s[C].vectorize(bi)


def test_axis_of_no_stage():
    A, B, C = chain()
    s = te.create_schedule(C.op)
    stray = te.reduce_axis((0, 4), name="stray")
    with pytest.raises(ScheduleError, match=r"stage C\b.*axis stray\b"):
        s[C].split(stray, factor=2)


def test_non_itervar_axis():
    A, B, C = chain()
    s = te.create_schedule(C.op)
    with pytest.raises(ScheduleError, match=r"stage C\b.*split"):
        s[C].split("i", factor=2)
    with pytest.raises(ScheduleError, match=r"stage C\b.*vectorize"):
        s[C].vectorize(te.var("i"))


@pytest.mark.parametrize("primitive", ["split", "vectorize", "unroll", "parallel", "fuse"])
def test_axis_already_split(primitive):
    A, B, C, k = matmul()
    s = te.create_schedule(C.op)
    i, j = C.op.axis
    s[C].split(i, factor=4)
    call = {"split": lambda: s[C].split(i, factor=2)}.get(
        primitive, lambda: getattr(s[C], primitive)(i))
    with pytest.raises(ScheduleError, match=r"stage C\b.*axis i\b.*already split"):
        call()
    # the message lists the current loops so the user can pick one
    with pytest.raises(ScheduleError, match=r"i\.outer, i\.inner, j, k"):
        call()


def test_axis_already_fused():
    A, B, C = chain()
    s = te.create_schedule(C.op)
    i, j = C.op.axis
    s[C].fuse(i, j)
    with pytest.raises(ScheduleError, match=r"stage C\b.*axis j\b.*already"):
        s[C].split(j, factor=2)


# --------------------------------------------------------------------------- reorder


def test_reorder_duplicate_axis():
    A, B, C, k = matmul()
    s = te.create_schedule(C.op)
    i, j = C.op.axis
    with pytest.raises(ScheduleError, match=r"stage C\b.*reorder.*axis j\b.*twice"):
        s[C].reorder(j, i, j)
    assert names(s[C]) == ["i", "j", "k"]


def test_reorder_non_leaf_axis():
    A, B, C, k = matmul()
    s = te.create_schedule(C.op)
    i, j = C.op.axis
    jo, ji = s[C].split(j, factor=2)
    with pytest.raises(ScheduleError, match=r"stage C\b.*axis j\b.*already split"):
        s[C].reorder(k, j)
    assert names(s[C]) == ["i", "j.outer", "j.inner", "k"]


# --------------------------------------------------------------------------- fuse


def test_fuse_non_adjacent():
    A = te.placeholder((2, 3, 4), name="A")
    C = te.compute((2, 3, 4), lambda x, y, z: A[x, y, z] + 1, name="C")
    s = te.create_schedule(C.op)
    x, y, z = C.op.axis
    with pytest.raises(ScheduleError, match=r"stage C\b.*adjacent.*x, z"):
        s[C].fuse(x, z)
    assert names(s[C]) == ["x", "y", "z"]


def test_fuse_out_of_order():
    A = te.placeholder((2, 3), name="A")
    C = te.compute((2, 3), lambda x, y: A[x, y] + 1, name="C")
    s = te.create_schedule(C.op)
    x, y = C.op.axis
    with pytest.raises(ScheduleError, match=r"stage C\b.*outermost first.*y, x"):
        s[C].fuse(y, x)
    assert names(s[C]) == ["x", "y"]


def test_fuse_reduction_with_data_parallel():
    A, B, C, k = matmul()
    s = te.create_schedule(C.op)
    i, j = C.op.axis
    with raises_named(ScheduleError, "C", "j", "k"):
        s[C].fuse(j, k)
    with pytest.raises(ScheduleError, match=r"stage C\b.*reduction.*data-parallel"):
        s[C].fuse(j, k)
    assert names(s[C]) == ["i", "j", "k"]


def test_fuse_no_axes():
    A, B, C = chain()
    s = te.create_schedule(C.op)
    with pytest.raises(ScheduleError, match=r"stage C\b"):
        s[C].fuse()


# --------------------------------------------------------------------------- annotations


@pytest.mark.parametrize("primitive", ["vectorize", "parallel"])
def test_annotate_reduction_axis_rejected(primitive):
    A, B, C, k = matmul()
    s = te.create_schedule(C.op)
    with pytest.raises(ScheduleError, match=rf"stage C\b.*{primitive}.*axis k\b"):
        getattr(s[C], primitive)(k)
    assert s[C].iter_var_attrs == {}


@pytest.mark.parametrize("primitive", ["vectorize", "parallel"])
def test_annotate_split_reduction_axis_rejected(primitive):
    A, B, C, k = matmul()
    s = te.create_schedule(C.op)
    ko, ki = s[C].split(k, factor=2)
    with pytest.raises(ScheduleError, match=rf"stage C\b.*{primitive}.*axis k\.inner\b"):
        getattr(s[C], primitive)(ki)


def test_unroll_reduction_axis_allowed():
    A, B, C, k = matmul(M=3, N=4, K=5)
    s = te.create_schedule(C.op)
    ko, ki = s[C].split(k, factor=2)
    s[C].unroll(ki)
    s[C].unroll(ko)
    func = compiler.lower(s, [A, B, C])
    assert "k.inner" in str(func)
    rng = np.random.default_rng(0)
    a = rng.standard_normal((3, 5)).astype("float32")
    b = rng.standard_normal((5, 4)).astype("float32")
    c = np.zeros((3, 4), "float32")
    run(func, a, b, c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-4, atol=1e-5)
