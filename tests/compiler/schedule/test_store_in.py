"""Tiramisu's store_in (compiler/schedule/storage_map.py): a stage's values stored through
an index map, transposed or folded; the folds the liveness check proves legal
(storage_liveness.py: per compute_at iteration, over the loops shared by after, never
for a stage computed in full before its reader) build and match numpy, and the others
are ScheduleErrors naming the stage, the elements and the axis."""
from __future__ import annotations

import pytest

import compiler
from compiler import te
from compiler.errors import ScheduleError
from blur_check import blur, blur_numpy
from build_check import check_build, randn

pytestmark = pytest.mark.filterwarnings("ignore::compiler.transform.VectorizeWarning")


@pytest.mark.parametrize("placement", ["root", "after", "compute_at"])
def test_store_in_a_transposed_buffer_keeps_the_result(placement):
    H, W = 13, 37
    A, bx, by = blur(H, W)
    s = te.create_schedule(by.op)
    s[bx].store_in((W, H + 2), lambda i, j: (j, i))
    if placement == "after":
        s[by].shift(by.op.axis[0], 2)
        s[by].after(bx, bx.op.axis[0])
    elif placement == "compute_at":
        s[bx].compute_at(s[by], by.op.axis[0])
    text = str(compiler.lower(s, [A, by]))
    assert f"allocate bx[float32 * {W * (H + 2)}]" in text
    assert "bx[((j*15) + i)]" in text or "bx[((j*15) + (i + " in text
    a = randn(5, H + 2, W + 2)
    check_build(s, [A, by], [a], [blur_numpy(a)])


def test_store_in_errors_name_the_stage_and_the_elements():
    A, bx, by = blur(7, 13)
    s = te.create_schedule(by.op)
    with pytest.raises(ScheduleError, match=r"stage bx: store_in maps element \(0, 9\) to "
                                            r"\(9, 0\), outside the buffer of shape "
                                            r"\(9, 13\) \(dimension 0\)"):
        s[bx].store_in((9, 13), lambda i, j: (j, i))
    with pytest.raises(ScheduleError, match=r"stage bx: store_in: the index map gives 1 "
                                            r"indices for a buffer of 2 dimensions"):
        s[bx].store_in((9, 13), lambda i, j: i * 13 + j)
    with pytest.raises(ScheduleError, match=r"stage by: store_in of an output"):
        s[by].store_in((13, 7), lambda i, j: (j, i))
    with pytest.raises(ScheduleError, match=r"stage bx: store_in needs a shape of positive "
                                            r"integers"):
        s[bx].store_in((0, 13), lambda i, j: (i, j))
    assert s[bx].storage is None


def test_store_in_of_a_stage_passed_as_an_argument_is_refused():
    A, bx, by = blur(7, 13)
    s = te.create_schedule(by.op)
    s[bx].store_in((13, 9), lambda i, j: (j, i))
    with pytest.raises(ScheduleError, match=r"stage bx: store_in of a stage passed as an "
                                            r"argument of the function"):
        compiler.lower(s, [A, bx, by])


# --------------------------------------------------------------------------- folding storage


def box_sum(H, W):
    """C(i, j) sums the 2x2 box of B at (i, j): computed at C's j, B's region is 2x2."""
    A = te.placeholder((H + 1, W + 1), name="A")
    B = te.compute((H + 1, W + 1), lambda i, j: A[i, j] * 2, name="B")
    C = te.compute((H, W), lambda i, j: B[i, j] + B[i + 1, j] + B[i, j + 1] + B[i + 1, j + 1],
                   name="C")
    return A, B, C


def box_sum_numpy(a):
    b = a * 2
    return b[:-1, :-1] + b[1:, :-1] + b[:-1, 1:] + b[1:, 1:]


@pytest.mark.parametrize("H, W", [(7, 13), (13, 37), (37, 7)])
def test_store_in_folds_a_compute_at_region_into_four_elements(H, W):
    """The reference's c(i % 2, j % 2): B computed per element of C lives in 2x2 slots."""
    A, B, C = box_sum(H, W)
    s = te.create_schedule(C.op)
    s[B].compute_at(s[C], C.op.axis[1])
    s[B].store_in((2, 2), lambda i, j: (i % 2, j % 2))
    text = str(compiler.lower(s, [A, C]))
    assert "allocate B[float32 * 4]" in text
    assert "B[((floormod(i, 2)*2) + floormod(j, 2))]" in text  # C reads through the map
    a = randn(H + W, H + 1, W + 1)
    check_build(s, [A, C], [a], [box_sum_numpy(a)])


def test_a_fold_smaller_than_the_compute_at_region_is_refused():
    A, B, C = box_sum(7, 13)
    s = te.create_schedule(C.op)
    s[B].compute_at(s[C], C.op.axis[1])
    s[B].store_in((1, 2), lambda i, j: (0, j % 2))
    with pytest.raises(ScheduleError, match=r"stage B: store_in folds elements \(\d+, \d+\) "
                                            r"and \(\d+, \d+\) onto one slot \(0, \d\) \(they "
                                            r"differ on axis i\), but both are computed, and "
                                            r"live, in one iteration of loop j of stage C"):
        compiler.lower(s, [A, C])
    # A whole row of C at a time: B's region is 2 x 14, so j % 2 folds live values.
    s = te.create_schedule(C.op)
    s[B].compute_at(s[C], C.op.axis[0])
    s[B].store_in((2, 2), lambda i, j: (i % 2, j % 2))
    with pytest.raises(ScheduleError, match=r"differ on axis j\), but both are computed"):
        compiler.lower(s, [A, C])


@pytest.mark.parametrize("H, W", [(7, 13), (37, 1000), (1, 7)])
def test_after_with_a_shift_folds_the_blur_into_three_rows(H, W):
    """bx's row i is read by by's rows i - 2 .. i, which run in the shared iterations i ..
    i + 2: three rows are live at once, so i % 3 is a legal fold and i % 2 is not."""
    A, bx, by = blur(H, W)
    s = te.create_schedule(by.op)
    s[by].shift(by.op.axis[0], 2)
    s[by].after(bx, bx.op.axis[0])
    s[bx].store_in((3, W), lambda i, j: (i % 3, j))
    text = str(compiler.lower(s, [A, by]))
    assert f"allocate bx[float32 * {3 * W}]" in text
    a = randn(H + W, H + 2, W + 2)
    check_build(s, [A, by], [a], [blur_numpy(a)])
    s[bx].store_in((2, W), lambda i, j: (i % 2, j))
    with pytest.raises(ScheduleError, match=r"stage bx: store_in folds elements \(0, 0\) and "
                                            r"\(2, 0\) onto one slot \(0, 0\) \(they differ "
                                            r"on axis i\), but in the loops bx shares with by "
                                            r"\(i\) one of them is still read after the other "
                                            r"is written"):
        compiler.lower(s, [A, by])


def test_a_fold_of_a_stage_computed_in_full_names_its_reader():
    A, bx, by = blur(7, 13)
    s = te.create_schedule(by.op)
    s[bx].store_in((3, 13), lambda i, j: (i % 3, j))
    with pytest.raises(ScheduleError, match=r"stage bx: store_in folds elements \(0, 0\) and "
                                            r"\(3, 0\) onto one slot \(0, 0\) \(they differ on "
                                            r"axis i\), but stage by reads bx after all of it is "
                                            r"computed"):
        compiler.lower(s, [A, by])


def test_a_fold_across_iterations_of_a_parallel_shared_loop_is_a_race():
    A, bx, by = blur(7, 16)
    s = te.create_schedule(by.op)
    jo, _ = s[bx].split(bx.op.axis[1], factor=8)
    s[bx].reorder(jo, bx.op.axis[0])
    jo2, _ = s[by].split(by.op.axis[1], factor=8)
    s[by].reorder(jo2, by.op.axis[0])
    s[by].shift(by.op.axis[0], 2)
    s[by].after(bx, s[bx].leaf_iter_vars[1])
    s[bx].parallel(jo)
    s[bx].store_in((3, 8), lambda i, j: (i % 3, j % 8))  # each column block on one ring
    with pytest.raises(ScheduleError, match=r"stage bx: store_in folds elements \(0, 0\) and "
                                            r"\(0, 8\) onto one slot \(0, 0\) \(they differ on "
                                            r"axis j\), but they are written in different "
                                            r"iterations of the parallel loop j.outer"):
        compiler.lower(s, [A, by])
    s[bx].store_in((3, 16), lambda i, j: (i % 3, j))
    a = randn(3, 9, 18)
    check_build(s, [A, by], [a], [blur_numpy(a)])
