"""Tiramisu's scheduling commands on a Stage (compiler/schedule/stage.py, the reference
tiramisu-internals): shift, interchange, and unroll / vectorize with a factor. Each is
built to native code on odd shapes and non-divisible factors, and compared with numpy;
bad arguments are ScheduleErrors naming the stage and the axis."""
from __future__ import annotations

import pytest

from compiler import te
from compiler.errors import ScheduleError
from compiler.ir.stmt import UNROLLED, VECTORIZED
from compiler.schedule.bound import infer_bound
from compiler.schedule.relations import Shift
from build_check import check_build, randn

pytestmark = pytest.mark.filterwarnings("ignore::compiler.transform.VectorizeWarning")


def blur_x(H, W):
    """The reference's bx on one channel: the mean of three neighbours along j."""
    A = te.placeholder((H, W + 2), name="A")
    B = te.compute((H, W), lambda i, j: (A[i, j] + A[i, j + 1] + A[i, j + 2]) / 3, name="bx")
    return A, B


def blur_x_numpy(a):
    return (a[:, :-2] + a[:, 1:-1] + a[:, 2:]) / 3


@pytest.mark.parametrize("amount", [10, -3, 0])
@pytest.mark.parametrize("H, W", [(7, 13), (37, 1000)])
def test_shift_moves_the_loop_and_keeps_the_result(H, W, amount):
    A, B = blur_x(H, W)
    s = te.create_schedule(B.op)
    i = s[B].shift(B.op.axis[0], amount)
    assert s[B].leaf_iter_vars[0] is i
    assert isinstance(s[B].relations[-1], Shift) and s[B].relations[-1].amount == amount
    r = infer_bound(s)[i]
    assert (r.min.value, r.extent.value) == (amount, H)  # the loop runs from amount
    a = randn(H, H, W + 2)
    check_build(s, [A, B], [a], [blur_x_numpy(a)])


def test_a_shifted_loop_can_be_split_and_a_stage_computed_inside_it():
    H, W = 13, 37
    A, B = blur_x(H, W)
    C = te.compute((H, W), lambda i, j: B[i, j] * 2, name="C")
    s = te.create_schedule(C.op)
    i = s[C].shift(C.op.axis[0], 5)
    io, ii = s[C].split(i, factor=4)
    s[B].compute_at(s[C], ii)
    a = randn(1, H, W + 2)
    check_build(s, [A, C], [a], [blur_x_numpy(a) * 2])


def test_interchange_swaps_two_loops():
    H, W = 13, 37
    A, B = blur_x(H, W)
    s = te.create_schedule(B.op)
    i, j = B.op.axis
    jo, ji = s[B].split(j, factor=8)
    s[B].interchange(i, jo)
    assert s[B].leaf_iter_vars == [jo, i, ji]
    a = randn(2, H, W + 2)
    check_build(s, [A, B], [a], [blur_x_numpy(a)])


@pytest.mark.parametrize("factor", [1, 3, 4, 16, 1000])
def test_unroll_and_vectorize_with_a_factor_split_first(factor):
    H, W = 7, 37
    A, B = blur_x(H, W)
    s = te.create_schedule(B.op)
    i, j = B.op.axis
    jo, ji = s[B].vectorize(j, width=factor)
    io, ii = s[B].unroll(i, factor=factor)
    assert s[B].iter_var_attrs == {ji: VECTORIZED, ii: UNROLLED}
    assert s[B].leaf_iter_vars == [io, ii, jo, ji]
    assert s[B].unroll(io) is None and s[B].iter_var_attrs[io] == UNROLLED
    a = randn(factor, H, W + 2)
    check_build(s, [A, B], [a], [blur_x_numpy(a)])


def test_bad_arguments_name_the_stage_and_the_axis():
    A, B = blur_x(7, 13)
    C = te.compute((7,), lambda i: A[i, 0], name="C")
    s = te.create_schedule([B.op, C.op])
    i, j = B.op.axis
    with pytest.raises(ScheduleError, match=r"stage bx: shift of axis i needs an integer "
                                            r"amount, got 1\.5"):
        s[B].shift(i, 1.5)
    with pytest.raises(ScheduleError, match=r"stage bx: interchange of axis i with itself"):
        s[B].interchange(i, i)
    with pytest.raises(ScheduleError, match=r"stage bx: axis i given to interchange is not "
                                            r"an axis of this stage; it belongs to stage C"):
        s[B].interchange(C.op.axis[0], j)
    with pytest.raises(ScheduleError, match=r"stage bx: unroll of axis j needs a positive "
                                            r"integer factor, got 0"):
        s[B].unroll(j, factor=0)
    with pytest.raises(ScheduleError, match=r"stage bx: vectorize of axis j needs a "
                                            r"positive integer width, got 'x'"):
        s[B].vectorize(j, width="x")
    k = te.reduce_axis((0, 13), name="k")
    R = te.compute((7,), lambda i: te.sum(A[i, k], axis=k), name="R")
    sr = te.create_schedule(R.op)
    with pytest.raises(ScheduleError, match=r"stage R: cannot vectorize the reduction axis k"):
        sr[R].vectorize(k, width=4)
    assert sr[R].relations == []  # refused before splitting anything
