"""Tiramisu's scheduling commands on a Stage (compiler/schedule/stage.py, the reference
tiramisu-internals): shift, interchange, unroll / vectorize with a factor, and after /
before (loops shared between stages, compiler/schedule/loop_sharing.py). Each is built to
native code on odd shapes and non-divisible factors, and compared with numpy; bad
arguments are ScheduleErrors naming the stage and the axis. store_in has its own file
(test_store_in.py)."""
from __future__ import annotations

import random

import pytest

import compiler
from compiler import te
from compiler.errors import ScheduleError
from compiler.ir.stmt import UNROLLED, VECTORIZED
from compiler.schedule.bound import infer_bound
from compiler.schedule.relations import Shift
from blur_check import blur, blur_numpy, blur_x, blur_x_numpy
from build_check import check_build, randn

pytestmark = pytest.mark.filterwarnings("ignore::compiler.transform.VectorizeWarning")


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
    # Loops print from 0 (as MakeLoopNest makes them); the body sees the shifted value.
    assert f"for (i.shifted, 0, {H})" in str(compiler.lower(s, [A, B]))
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
    text = str(compiler.lower(s, [A, B]))
    assert text.index("for (j.outer, 0, 5)") < text.index("for (i, 0, 13)") < \
        text.index("for (j.inner, 0, 8)")
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
    if factor == 3:  # the reference's bx.unroll(c, 3)
        text = str(compiler.lower(s, [A, B]))
        assert "unrolled (i.inner, 0, 3)" in text and "vectorized (j.inner, 0, 3)" in text
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
    with pytest.raises(ScheduleError, match=r"stage R: cannot shift the reduction axis k"):
        sr[R].shift(k, 2)
    fused = s[B].fuse(i, j)
    with pytest.raises(ScheduleError, match=r"stage bx: cannot shift the fused axis "
                                            r"i\.j\.fused; shift one of the loops before"):
        s[B].shift(fused, 1)


# --------------------------------------------------------------------------- after / before


@pytest.mark.parametrize("H, W", [(7, 13), (37, 1000), (1, 7)])
@pytest.mark.parametrize("depth", [1, 2])
def test_after_with_a_shift_fuses_the_blur_into_one_loop_nest(H, W, depth):
    A, bx, by = blur(H, W)
    s = te.create_schedule(by.op)
    s[by].shift(by.op.axis[0], 2)  # by's row r runs when bx has written rows up to r + 2
    s[by].after(bx, bx.op.axis[depth - 1])
    text = str(compiler.lower(s, [A, by]))
    assert text.count("for (i, 0,") == 1  # one shared row loop
    assert text.count("for (j, 0,") == (1 if depth == 2 else 2)
    a = randn(H * W, H + 2, W + 2)
    check_build(s, [A, by], [a], [blur_numpy(a)])


def test_a_shared_loop_split_alike_and_annotated_on_one_stage():
    H, W = 13, 37
    A, bx, by = blur(H, W)
    s = te.create_schedule(by.op)
    byo, byi = s[by].split(by.op.axis[0], factor=4)
    bxo, bxi = s[bx].split(bx.op.axis[0], factor=4)
    # Share the outer row loop, by one tile behind: at tile t bx writes rows 4t .. 4t + 3
    # and by computes rows 4t - 4 .. 4t - 1, which read bx up to row 4t + 1.
    s[by].shift(byo, 1)
    s[by].after(bx, bxo)
    s[by].vectorize(by.op.axis[1], width=8)
    a = randn(3, H + 2, W + 2)
    check_build(s, [A, by], [a], [blur_numpy(a)])


def test_unrelated_stages_share_loops_in_call_order():
    A = te.placeholder((7, 13), name="A")
    B = te.compute((7, 13), lambda i, j: A[i, j] + 1, name="B")
    C = te.compute((7, 13), lambda i, j: A[i, j] * 2, name="C")
    D = te.compute((7, 13), lambda i, j: A[i, j] - 3, name="D")
    s = te.create_schedule([B.op, C.op, D.op])
    s[C].after(B, B.op.axis[1])
    s[D].before(B, B.op.axis[0])
    text = str(compiler.lower(s, [A, B, C, D]))
    assert text.count("for (i, 0, 7)") == 1 and text.count("for (j, 0, 13)") == 2
    assert text.index("D[") < text.index("B[") < text.index("C[")
    a = randn(0, 7, 13)
    check_build(s, [A, B, C, D], [a], [a + 1, a * 2, a - 3])


def test_a_violated_dependence_names_both_stages_and_the_axis():
    A, bx, by = blur(7, 13)
    s = te.create_schedule(by.op)
    s[by].after(bx, bx.op.axis[0])  # by's row i reads bx rows i + 1, i + 2: not yet written
    with pytest.raises(ScheduleError, match=r"stage by shares loops with stage bx down to "
                                            r"axis i, but at loop i it would read values of "
                                            r"bx before bx writes them"):
        compiler.lower(s, [A, by])
    s = te.create_schedule(by.op)
    i = s[by].shift(by.op.axis[0], 2)
    s[bx].after(by, i)  # the shift is right, but bx's body runs second
    with pytest.raises(ScheduleError, match=r"stage by runs before stage bx in their shared "
                                            r"loops down to axis i, but reads values bx writes in "
                                            r"the same iteration"):
        compiler.lower(s, [A, by])
    s = te.create_schedule(by.op)
    i = s[by].shift(by.op.axis[0], 2)
    s[by].after(bx, bx.op.axis[0])
    s[bx].parallel(bx.op.axis[0])
    with pytest.raises(ScheduleError, match=r"stage by reads values that stage bx writes "
                                            r"in earlier iterations of the shared parallel "
                                            r"loop i"):
        compiler.lower(s, [A, by])


def test_bad_links_name_the_stages():
    A, bx, by = blur(7, 13)
    s = te.create_schedule(by.op)
    with pytest.raises(ScheduleError, match=r"stage by: after axis j is not a current loop "
                                            r"of stage bx"):
        s[by].after(bx, by.op.axis[1])
    s[by].after(bx, bx.op.axis[0])
    with pytest.raises(ScheduleError, match=r"stage bx: before stage by would make a cycle"):
        s[bx].before(by, by.op.axis[0])
    s[bx].split(bx.op.axis[0], factor=2)
    with pytest.raises(ScheduleError, match=r"stage by runs after stage bx at axis i, which "
                                            r"is no longer one of its loops"):
        compiler.lower(s, [A, by])
    s = te.create_schedule(by.op)
    s[by].after(bx, bx.op.axis[0])
    s[bx].compute_at(s[by], by.op.axis[0])
    with pytest.raises(ScheduleError, match=r"stage by runs after stage bx, which is "
                                            r"computed inside another stage"):
        compiler.lower(s, [A, by])
    # Loops that do not match: too few of them, or a reduction among the shared ones.
    A, bx, by = blur(7, 13)
    C = te.compute((9,), lambda i: A[i, 0] * 2, name="C")
    k = te.reduce_axis((0, 13), name="k")
    R = te.compute((9,), lambda i: te.sum(bx[i, k], axis=k), name="R")
    s = te.create_schedule([by.op, C.op, R.op])
    s[C].after(bx, bx.op.axis[1])
    with pytest.raises(ScheduleError, match=r"stage C has 1 loops; running after stage bx at "
                                            r"axis j shares 2"):
        compiler.lower(s, [A, by, C, R])
    s = te.create_schedule([by.op, C.op, R.op])
    s[R].reorder(k, R.op.axis[0])
    s[R].after(bx, bx.op.axis[0])
    with pytest.raises(ScheduleError, match=r"stage R runs after stage bx at axis i: the "
                                            r"shared loop k of stage R is a reduction"):
        compiler.lower(s, [A, by, C, R])


def test_a_stage_computed_at_a_shared_loop_is_allocated_around_its_reader():
    H, W = 6, 5
    A = te.placeholder((H + 2, W), name="A")
    bx = te.compute((H + 2, W), lambda i, j: A[i, j] * 2, name="bx")
    D = te.compute((H, W), lambda i, j: A[i, j] * 3, name="D")
    by = te.compute((H, W), lambda i, j: bx[i, j] + D[i, j], name="by")
    s = te.create_schedule(by.op)
    s[D].compute_at(s[by], by.op.axis[0])
    s[by].after(bx, bx.op.axis[0])
    a = randn(8, H + 2, W)
    check_build(s, [A, by], [a], [a[:H] * 5])


def test_a_stage_computed_inside_a_member_may_not_read_another_member():
    H, W = 6, 5
    A = te.placeholder((H + 2, W), name="A")
    bx = te.compute((H + 2, W), lambda i, j: A[i, j] * 2, name="bx")
    D = te.compute((H, W), lambda i, j: bx[i + 2, j], name="D")
    by = te.compute((H, W), lambda i, j: D[i, j] + 1, name="by")
    s = te.create_schedule(by.op)
    s[D].compute_at(s[by], by.op.axis[1])
    s[by].after(bx, bx.op.axis[0])  # D would read row i + 2 of bx before it is written
    with pytest.raises(ScheduleError, match=r"stage D is computed inside stage by "
                                            r"\(compute_at\) and reads stage bx, which shares "
                                            r"loops with by"):
        compiler.lower(s, [A, by])


def test_a_third_stage_making_the_shared_loop_parallel_is_a_race():
    A, bx, by = blur(40, 8)
    C = te.compute((42, 8), lambda i, j: A[i, j] * 3, name="C")
    s = te.create_schedule([by.op, C.op])
    s[by].shift(by.op.axis[0], 2)
    s[by].after(bx, bx.op.axis[0])
    s[C].after(bx, bx.op.axis[0])
    s[C].parallel(C.op.axis[0])
    with pytest.raises(ScheduleError, match=r"stage by reads values that stage bx writes in "
                                            r"earlier iterations of the shared parallel loop i"):
        compiler.lower(s, [A, by, C])


@pytest.mark.parametrize("H, W, parts, width", [(5, 14, 2, 4), (13, 111, 3, 8)])
def test_after_knows_a_split_that_does_not_divide_stays_in_its_block(H, W, parts, width):
    """Columns in `parts` blocks (exact), vectors of `width` in a block (a tail): the
    guard of the vector split keeps a column in its block, so by's block reads bx's own."""
    A, bx, by = blur(H, W)
    s = te.create_schedule(by.op)
    loops = {}
    for st in (bx, by):
        xb, xr = s[st].split(st.op.axis[1], nparts=parts)
        xo, xi = s[st].split(xr, factor=width)
        s[st].reorder(xb, st.op.axis[0], xo, xi)
        loops[st] = xb
    s[by].shift(by.op.axis[0], 2)
    s[by].after(bx, bx.op.axis[0])
    s[by].parallel(loops[by])
    a = randn(W, H + 2, W + 2)
    check_build(s, [A, by], [a], [blur_numpy(a)])


# --------------------------------------------------------------------------- random schedules


def _random_blur_schedule(rng, H, W):
    """A random schedule of the blur mixing the new commands (shift, interchange, after,
    store_in, unroll / vectorize by a factor) with split, compute_at and parallel; returns
    it, its tensors, and whether its fold (if any) overwrites live values."""
    A, bx, by = blur(H, W)
    s = te.create_schedule(by.op)
    placement = rng.choice(["root", "compute_at", "after"])
    width = rng.choice([1, 3, 4, 8, 16])
    overwrites = False
    if placement == "root":
        i, j = bx.op.axis
        jo, ji = s[bx].vectorize(j, width=width)
        if rng.random() < 0.5:
            s[bx].interchange(i, jo)
        s[by].shift(by.op.axis[0], rng.randint(-3, 3))  # alone: no change
        s[by].parallel(s[by].leaf_iter_vars[0])
        if rng.random() < 0.5:
            s[bx].store_in((W, H + 2), lambda i, j: (j, i))
    elif placement == "compute_at":
        rows = rng.choice([1, 2, 5])
        yo, yi = s[by].split(by.op.axis[0], factor=rows)
        at = rng.choice([yo, yi])
        s[bx].compute_at(s[by], at)
        s[by].unroll(by.op.axis[1], factor=rng.choice([2, 4]))
        s[bx].vectorize(bx.op.axis[1], width=width)
        live = min(rows if at is yo else 1, H) + 2
        ring = rng.choice([live - 1, live, live + 1])
        s[bx].store_in((ring, W), lambda i, j: (i % ring, j))
        overwrites = ring < live
    else:
        depth = rng.choice([1, 2])
        if depth == 2:
            s[bx].split(bx.op.axis[1], factor=width)
            s[by].split(by.op.axis[1], factor=width)
        s[by].shift(by.op.axis[0], 2)
        s[by].after(bx, s[bx].leaf_iter_vars[depth - 1])
        s[by].vectorize(s[by].leaf_iter_vars[-1], width=rng.choice([4, 8]))
        ring = rng.choice([2, 3, 4])
        s[bx].store_in((ring, W), lambda i, j: (i % ring, j))
        overwrites = ring < 3 and H + 2 > 2
    return s, [A, by], overwrites


@pytest.mark.parametrize("seed", range(24))
def test_seeded_random_schedules_of_new_and_old_commands_match_numpy(seed):
    rng = random.Random(seed)
    H, W = rng.choice([(7, 13), (13, 37), (37, 7), (1, 13)])
    s, args, overwrites = _random_blur_schedule(rng, H, W)
    if overwrites:
        with pytest.raises(ScheduleError, match=r"stage bx: store_in folds elements"):
            compiler.lower(s, args)
        return
    a = randn(seed, H + 2, W + 2)
    check_build(s, args, [a], [blur_numpy(a)], note=f"seed {seed}")
