"""unroll_loop (compiler/transform/unroll.py): which loops are expanded, what the copies
look like, and that unrolled functions compute what they did before."""
from __future__ import annotations

import math
import random

import numpy as np
import pytest

from compiler import lower, te
from compiler.ir import expr as E
from compiler.ir.expr import Load
from compiler.ir.functor import collect
from compiler.ir.stmt import (PARALLEL, SERIAL, UNROLLED, VECTORIZED, Allocate, Buffer, For,
                              PrimFunc, SeqStmt, Store)
from compiler.transform.loop_partition import loop_partition
from compiler.transform.simplify import simplify_func_body, simplify_stmt
from compiler.transform.unroll import unroll_loop
from lower_check import Log, random_annotate, random_reorder, random_split
from pass_check import assert_same_results, chain, nan, vec

A_BUF = Buffer("A", "int32", (E.const(64),))
i, j = E.Var("i"), E.Var("j")


def loop(var, extent, body, kind=SERIAL, lo=0):
    return For(var, E.const(lo), E.const(extent) if isinstance(extent, int) else extent,
               kind, body)


def loops(stmt) -> list:
    return collect(stmt, lambda n: isinstance(n, For))


def test_unrolled_loop_becomes_copies_with_folded_indices():
    body = loop(i, 2, loop(j, 3, Store(A_BUF, i * 3 + j, j), UNROLLED))
    assert str(unroll_loop(body)) == "\n".join([
        "for (i, 0, 2) {",
        "  A[(i*3)] = 0",
        "  A[((i*3) + 1)] = 1",
        "  A[((i*3) + 2)] = 2",
        "}"])


def test_copies_start_at_the_loop_min():
    body = loop(i, 2, Store(A_BUF, i, i * 2), UNROLLED, lo=5)
    assert str(unroll_loop(body)) == "A[5] = 10\nA[6] = 12"


def test_symbolic_extent_stays_an_unrolled_loop():
    n = te.var("n")
    body = loop(i, n, Store(A_BUF, i, i), UNROLLED)
    assert unroll_loop(body) is body


@pytest.mark.parametrize("kind", [PARALLEL, VECTORIZED])
def test_parallel_and_vectorized_are_never_unrolled(kind):
    body = loop(i, 4, Store(A_BUF, i, i), kind)
    assert unroll_loop(body, auto_max_step=1000) is body


def test_explicit_unroll_off_keeps_every_loop():
    body = loop(i, 4, loop(j, 2, Store(A_BUF, i * 2 + j, j), UNROLLED))
    assert unroll_loop(body, auto_max_step=1000, explicit_unroll=False) is body


def test_extent_zero_is_a_no_op():
    assert str(unroll_loop(loop(i, 0, Store(A_BUF, i, i), UNROLLED))) == "0"


@pytest.mark.parametrize("max_step, unrolled", [(0, False), (5, False), (6, True), (64, True)])
def test_auto_unroll_counts_extent_times_leaf_statements(max_step, unrolled):
    # 2 x 3 stores = 6 steps: both loops go from 6 on; at 5 only the inner one (3 steps)
    body = loop(i, 2, loop(j, 3, Store(A_BUF, i * 3 + j, j)))
    got = unroll_loop(body, auto_max_step=max_step)
    assert (not loops(got)) == unrolled
    if unrolled:
        assert isinstance(got, SeqStmt) and len(got.seq) == 6


def test_auto_unroll_takes_inner_loops_first():
    body = loop(i, 8, loop(j, 3, Store(A_BUF, i * 3 + j, j)))
    got = unroll_loop(body, auto_max_step=4)
    assert isinstance(got, For) and got.loop_var is i and len(got.body.seq) == 3


def test_a_loop_left_inside_blocks_auto_unroll():
    body = loop(i, 2, loop(j, 2, Store(A_BUF, i * 2 + j, j), VECTORIZED))
    assert unroll_loop(body, auto_max_step=1000) is body
    n = te.var("n")
    symbolic = loop(i, 2, loop(j, n, Store(A_BUF, i * 2 + j, j)))
    assert unroll_loop(symbolic, auto_max_step=1000) is symbolic


def test_copies_of_an_allocate_keep_working():
    A = te.placeholder((6,), name="A")
    B = te.compute((6,), lambda x: A[x] * 2, name="B")
    C = te.compute((6,), lambda x: B[x] + 1, name="C")
    s = te.create_schedule(C.op)
    xo, _ = s[C].split(C.op.axis[0], factor=3)
    s[B].compute_at(s[C], xo)
    s[C].unroll(xo)
    f = lower(s, [A, C])
    body = unroll_loop(f.body)
    assert str(body).count("allocate B[float32 * 3]") == 2 and "unrolled" not in str(body)
    assert_same_results(f, body, [vec(6), nan(6)])


def test_copies_allocate_by_the_size_their_iteration_needs():
    # a buffer sized by the loop variable (symbolic regions do this): each copy gets a
    # buffer of its own size, so no copy reads a variable that is no longer bound
    T = Buffer("T", "int32", (i + 1,))
    body = loop(i, 3, Allocate(T, SeqStmt((loop(j, i + 1, Store(T, j, j * 2)),
                                           Store(A_BUF, i, Load(T, i))))), UNROLLED)
    got = unroll_loop(body)
    assert [str(a.buffer.elements) for a in collect(got, lambda n: isinstance(n, Allocate))] \
        == ["1", "2", "3"]
    func = PrimFunc("f", (A_BUF,), body)
    assert_same_results(func, got, [np.zeros(64, dtype="int32")])


def test_unrolled_attach_loop_with_symbolic_producer_region():
    n = te.var("n")
    A = te.placeholder((n,), name="A")
    B = te.compute((n,), lambda x: A[x] * 2, name="B")
    C = te.compute((n,), lambda x: B[x] + 1, name="C")
    s = te.create_schedule(C.op)
    xo, _ = s[C].split(C.op.axis[0], nparts=2)
    s[B].compute_at(s[C], xo)
    s[C].unroll(xo)
    f = lower(s, [A, C])
    assert "allocate B[float32 * min(min(floordiv((n + 1), 2), (n - (x.outer*" in str(f)
    body = unroll_loop(f.body)
    assert "x.outer" not in str(body)
    for size in range(1, 10):
        assert_same_results(f, body, [vec(size), nan(size)], f"n={size}")
        assert_same_results(f, unroll_loop(loop_partition(f.body, {n: (1, math.inf)})),
                            [vec(size), nan(size)], f"n={size}, partitioned")


@pytest.mark.parametrize("n", [7, 13, 20])
@pytest.mark.parametrize("factor", [3, 4, 16])
def test_unrolled_split_tails_keep_results(n, factor):
    f = chain(n, factor)
    for max_step in (0, 4, 16, 64):
        assert_same_results(f, unroll_loop(f.body, auto_max_step=max_step),
                            [vec(n), nan(n)], f"auto_max_step={max_step}")
        after_partition = unroll_loop(loop_partition(f.body), auto_max_step=max_step)
        assert_same_results(f, after_partition, [vec(n), nan(n)])


@pytest.mark.parametrize("seed", range(20))
def test_random_schedules_keep_results(seed):
    rng = random.Random(7000 + seed)
    log = Log(seed)
    n, m = rng.randint(1, 9), rng.randint(1, 9)
    A = te.placeholder((n, m), name="A")
    B = te.compute((n, m), lambda x, y: A[x, y] * 2, name="B")
    C = te.compute((n, m), lambda x, y: B[x, y] + 1, name="C")
    s = te.create_schedule(C.op)
    random_split(rng, s, C, log)
    random_reorder(rng, s, C, log)
    if rng.random() < 0.6:
        ax = rng.choice(s[C].leaf_iter_vars)
        log(f"B.compute_at(C, {ax.name})")
        s[B].compute_at(s[C], ax)
    random_annotate(rng, s, C, log)
    max_step = rng.choice([0, 2, 8, 32])
    log(f"auto_max_step={max_step}")
    f = lower(s, [A, C])
    body = unroll_loop(f.body, auto_max_step=max_step)
    assert not any(x.kind == UNROLLED for x in loops(body))
    assert_same_results(f, body, [vec(n, m, seed=seed), nan(n, m)], str(log))


def test_hand_built_function_runs_the_same():
    body = loop(i, 4, loop(j, 4, Store(A_BUF, i * 4 + j, i * 10 + j), UNROLLED), UNROLLED)
    func = PrimFunc("f", (A_BUF,), body)
    got = unroll_loop(body)
    assert len(got.seq) == 16
    assert_same_results(func, got, [np.zeros(64, dtype="int32")])


def test_an_unrolled_loop_inside_a_buffer_sized_by_an_outer_unrolled_loop_is_expanded_too():
    T = Buffer("T", "int32", (i + 2,))
    body = loop(i, 3, Allocate(T, SeqStmt((loop(j, 2, Store(T, j, j * 2 + i), UNROLLED),
                                           Store(A_BUF, i, Load(T, E.const(1)))))), UNROLLED)
    got = unroll_loop(body)
    assert not collect(got, lambda n: isinstance(n, For))
    assert [str(a.buffer.elements) for a in collect(got, lambda n: isinstance(n, Allocate))] \
        == ["2", "3", "4"]
    assert all(s.buffer is a.buffer for a in collect(got, lambda n: isinstance(n, Allocate))
               for s in collect(a.body, lambda n: isinstance(n, (Store, Load)))
               if s.buffer.name == "T")
    assert_same_results(PrimFunc("f", (A_BUF,), body), got, [np.zeros(64, dtype="int32")])


def test_a_copy_that_writes_back_what_it_reads_is_dropped():
    """A[i] = A[i] + select(i == 1, 5, 0): the copies for i = 0 and 2 are A[i] = A[i],
    which the unroller drops as it makes them (a Winograd transform's zero terms); the
    copy for i = 1 stays, and nothing is left of a loop whose copies all do nothing."""
    term = E.Select(E.EQ(i, E.const(1)), E.const(5), E.const(0))
    body = loop(i, 3, Store(A_BUF, i, Load(A_BUF, i) + term), UNROLLED)
    assert str(unroll_loop(body)) == "A[1] = (A[1] + 5)"
    assert str(unroll_loop(loop(i, 2, Store(A_BUF, i, Load(A_BUF, i) + 0), UNROLLED))) \
        == "0"


def test_the_simplify_after_an_unroll_still_decides_what_the_bounds_decide():
    # what UnrollLoop's copies are: simplified, but for what the loops' bounds decide
    k = E.Var("k")
    guarded = E.Select(E.LT(i, E.const(64)), Load(A_BUF, i), E.const(0))
    plain = E.Add(Load(A_BUF, i), E.const(3))
    body = SeqStmt((Store(A_BUF, i, guarded), Store(A_BUF, E.Add(i, E.const(1)), plain)))
    stmt = loop(i, 63, body)
    full, after = simplify_func_body(stmt), simplify_func_body(stmt, plain=True)
    assert str(after) == str(full) and "<" not in str(after)
    # k bounded to one value: k * 2 is a constant, which only the bounds tell
    doubled = Store(A_BUF, i, E.Mul(k, E.const(2)))
    assert str(simplify_stmt(doubled, {k: (5, 5)}, plain=True).value) == "10"
    # the store the bounds cannot change is the same object
    unit = loop(i, 63, Store(A_BUF, i, plain))
    assert simplify_func_body(unit, plain=True).body.value is plain
