"""loop_partition (compiler/transform/loop_partition.py): the guards of splits that do not
divide leave the main loop, and every partitioned function computes what it did before
(checked with the IR interpreter on seeded random inputs)."""
from __future__ import annotations

import dataclasses
import math
import random

import numpy as np
import pytest

from compiler import lower, te
from compiler.ir import expr as E
from compiler.ir.expr import Load
from compiler.ir.functor import collect
from compiler.ir.interpreter import run
from compiler.ir.stmt import (PARALLEL, SERIAL, VECTORIZED, Allocate, Buffer, For, IfThenElse,
                              LetStmt, PrimFunc, SeqStmt, Store)
from compiler.transform.loop_partition import loop_partition
from lower_check import Log, random_annotate, random_reorder, random_split
from pass_check import assert_same_results, chain, nan, run_copy, vec


def ifs(stmt) -> list:
    return collect(stmt, lambda n: isinstance(n, IfThenElse))


def scale(n, factor):
    """B = A * 2 over n elements, split by `factor`."""
    A = te.placeholder((n,), name="A")
    B = te.compute((n,), lambda i: A[i] * 2, name="B")
    s = te.create_schedule(B.op)
    s[B].split(B.op.axis[0], factor=factor)
    return s, A, B


def test_split_tail_becomes_its_own_loop():
    s, A, B = scale(20, 16)
    f = lower(s, [A, B])
    body = loop_partition(f.body)
    assert str(body) == "\n".join([
        "for (i.inner, 0, 16) {",
        "  B[i.inner] = (A[i.inner]*2.0f)",
        "}",
        "for (i.inner, 0, 4) {",
        "  B[(i.inner + 16)] = (A[(i.inner + 16)]*2.0f)",
        "}"])
    assert_same_results(f, body, [vec(20), nan(20)])


def test_min_extents_of_attached_producer_become_constants():
    f = chain(1000, 16)
    assert "min(16, (1000 - (i.outer*16)))" in str(f)
    body = loop_partition(f.body)
    main, *tail = body.seq
    assert isinstance(main, For) and str(main.extent) == "62"
    assert not ifs(body) and "min(" not in str(body)
    assert "for (i, 0, 16)" in str(main) and "for (i, 0, 8)" in str(SeqStmt(tuple(tail)))
    a = vec(1000)
    out = run_copy(dataclasses.replace(f, body=body), [a, nan(1000)])[1]
    np.testing.assert_array_equal(out, a * 2 + 1)


def test_symbolic_size_gets_symbolic_pieces():
    n = te.var("n")
    s, A, B = scale(n, 16)
    f = lower(s, [A, B])
    body = loop_partition(f.body, {n: (1, math.inf)})
    assert str(body) == "\n".join([
        "for (i.outer, 0, floordiv(n, 16)) {",
        "  for (i.inner, 0, 16) {",
        "    B[((i.outer*16) + i.inner)] = (A[((i.outer*16) + i.inner)]*2.0f)",
        "  }",
        "}",
        "for (i.outer, floordiv(n, 16), (floordiv((n + 15), 16) - floordiv(n, 16))) {",
        "  for (i.inner, 0, max(0, min((n - (i.outer*16)), 16))) {",
        "    B[((i.outer*16) + i.inner)] = (A[((i.outer*16) + i.inner)]*2.0f)",
        "  }",
        "}"])
    assert not ifs(body.seq[0])
    unbounded = loop_partition(f.body)
    for size in (1, 5, 15, 16, 17, 32, 45):
        for b in (body, unbounded):
            assert_same_results(f, b, [vec(size), nan(size)], f"n={size}")


def test_two_dimensional_tile_has_no_guard_left():
    A = te.placeholder((13, 7), name="A")
    B = te.compute((13, 7), lambda i, j: A[i, j] * 2, name="B")
    s = te.create_schedule(B.op)
    s[B].tile(B.op.axis[0], B.op.axis[1], 4, 3)
    f = lower(s, [A, B])
    body = loop_partition(f.body)
    assert not ifs(body)
    assert [str(x.extent) if isinstance(x, For) else "-" for x in body.seq] == ["3", "2", "-"]
    assert str(body.seq[-1]) == "B[90] = (A[90]*2.0f)"
    assert_same_results(f, body, [vec(13, 7), nan(13, 7)])


A_BUF = Buffer("A", "int32", (E.const(16),))
i, j = E.Var("i"), E.Var("j")


def store(value, index=i):
    return Store(A_BUF, index, E.const(value) if isinstance(value, int) else value)


def loop(var, extent, body, kind=SERIAL, lo=0):
    return For(var, E.const(lo), E.const(extent), kind, body)


def run_int(body, n=16):
    out = np.zeros(n, dtype="int32")
    run(PrimFunc("f", (A_BUF,), body), out)
    return out


@pytest.mark.parametrize("cond, text", [
    (i < 3, "for (i, 0, 3) {\n  A[i] = 1\n}\nfor (i, 3, 7) {\n  A[i] = 2\n}"),
    (i <= 3, "for (i, 0, 4) {\n  A[i] = 1\n}\nfor (i, 4, 6) {\n  A[i] = 2\n}"),
    (i > 3, "for (i, 0, 4) {\n  A[i] = 2\n}\nfor (i, 4, 6) {\n  A[i] = 1\n}"),
    (i >= 3, "for (i, 0, 3) {\n  A[i] = 2\n}\nfor (i, 3, 7) {\n  A[i] = 1\n}"),
    ((i >= 2) & (i < 7), "for (i, 0, 2) {\n  A[i] = 2\n}\nfor (i, 2, 5) {\n  A[i] = 1\n}\n"
                         "for (i, 7, 3) {\n  A[i] = 2\n}"),
])
def test_comparisons_and_else_branch(cond, text):
    body = loop(i, 10, IfThenElse(cond, store(1), store(2)))
    got = loop_partition(body)
    assert str(got) == text
    np.testing.assert_array_equal(run_int(got), run_int(body))


def test_negative_coefficient_gives_triangular_loop():
    # for i the guard holds nowhere and fails nowhere for every j: no gain, i stays whole
    body = loop(i, 4, loop(j, 8, IfThenElse(i < j, store(1, i * 4 + j % 4))))
    got = loop_partition(body)
    assert str(got) == "for (i, 0, 4) {\n  for (j, (i + 1), (7 - i)) {\n" \
                       "    A[((i*4) + floormod(j, 4))] = 1\n  }\n}"
    np.testing.assert_array_equal(run_int(got), run_int(body))


def test_kinds_and_pragmas_stay_on_every_piece():
    body = For(i, E.const(0), E.const(10), SERIAL,
               IfThenElse(i < 6, store(1), store(2)), (("auto_unroll_max_step", 16),))
    got = loop_partition(body)
    assert [x.kind for x in got.seq] == [SERIAL, SERIAL]
    assert all(x.pragmas == (("auto_unroll_max_step", 16),) for x in got.seq)
    single = loop(j, 4, IfThenElse(j < 3, store(1, j)), VECTORIZED)
    assert str(loop_partition(single)) == "vectorized (j, 0, 3) {\n  A[j] = 1\n}"


def test_a_parallel_loop_is_partitioned_inside_only():
    """Its pieces would run one after another: two column blocks with a tail in the
    second, on two cores, would run serially. Its body's loops are partitioned instead."""
    buf = Buffer("A", "int32", (E.const(64),))
    body = For(i, E.const(0), E.const(2), PARALLEL,
               loop(j, 32, IfThenElse(i * 32 + j < 50, Store(buf, i * 32 + j, i + j))))
    got = loop_partition(body)
    assert str(got) == "\n".join([
        "parallel (i, 0, 2) {",
        "  for (j, 0, min((50 - (i*32)), 32)) {",
        "    A[((i*32) + j)] = (i + j)",
        "  }",
        "}"])
    outs = [np.zeros(64, "int32") for _ in range(2)]
    for stmt, out in zip((body, got), outs):
        run(PrimFunc("f", (buf,), stmt), out)
    np.testing.assert_array_equal(outs[1], outs[0])
    assert outs[0][49] == 1 + 17 and not outs[0][50:].any()


@pytest.mark.parametrize("body", [
    loop(i, 8, IfThenElse(E.EQ(E.FloorMod(i, E.const(2)), E.const(0)), store(1))),
    loop(i, 8, IfThenElse(Load(A_BUF, i) < 3, store(1))),
    loop(i, 8, LetStmt(j, i * 2, IfThenElse(j < 5, store(1)))),
])
def test_guards_that_cannot_be_solved_are_kept(body):
    assert str(loop_partition(body)) == str(body)


def test_single_iteration_piece_allocates_by_its_own_size():
    T = Buffer("T", "int32", (i + 1,))
    body = loop(i, 5, Allocate(T, SeqStmt((
        loop(j, i + 1, Store(T, j, j)),
        IfThenElse(i < 4, store(Load(T, i)), store(Load(T, E.const(0)) + 100))))))
    got = loop_partition(body)
    assert str(got) == "\n".join([
        "for (i, 0, 4) {",
        "  allocate T[int32 * (i + 1)]",
        "  for (j, 0, (i + 1)) {",
        "    T[j] = j",
        "  }",
        "  A[i] = T[i]",
        "}",
        "allocate T[int32 * 5]",
        "for (j, 0, 5) {",
        "  T[j] = j",
        "}",
        "A[4] = (T[0] + 100)"])
    np.testing.assert_array_equal(run_int(got), run_int(body))


def test_guard_never_true_removes_the_loop():
    assert str(loop_partition(loop(i, 8, IfThenElse(i < 0, store(1))))) == "0"


@pytest.mark.parametrize("n", [7, 13, 20, 1000])
@pytest.mark.parametrize("factor", [3, 4, 16])
def test_nondividing_splits_keep_results(n, factor):
    s, A, B = scale(n, factor)
    f = lower(s, [A, B])
    body = loop_partition(f.body)
    assert not ifs(body)
    main = body.seq[0] if isinstance(body, SeqStmt) else body
    assert not ifs(main)
    a = vec(n, seed=n * factor)
    out = run_copy(dataclasses.replace(f, body=body), [a, nan(n)])[1]
    np.testing.assert_array_equal(out, a * 2)
    g = chain(n, factor)
    assert_same_results(g, loop_partition(g.body), [a, nan(n)])


@pytest.mark.parametrize("factor", [3, 4, 16])
def test_symbolic_split_with_attached_producer(factor):
    n = te.var("n")
    f = chain(n, factor)
    body = loop_partition(f.body, {n: (1, math.inf)})
    assert not ifs(body.seq[0])
    for size in (1, 2, factor, factor + 1, 3 * factor - 1, 50):
        a = vec(size, seed=size)
        assert_same_results(f, body, [a, nan(size)], f"n={size}")


@pytest.mark.parametrize("seed", range(30))
def test_random_schedules_keep_results(seed):
    """Random splits, reorders, annotations and attach points of C = (A * 2) + B[k]
    summed over k, against the unpartitioned function and numpy."""
    rng = random.Random(9000 + seed)
    log = Log(seed)
    n, m, kk = rng.randint(1, 9), rng.randint(1, 9), rng.randint(1, 6)
    log(f"shape {n}x{m}, k={kk}")
    A = te.placeholder((n, m), name="A")
    Bv = te.placeholder((m, kk), name="Bv")
    P = te.compute((n, m), lambda x, y: A[x, y] * 2, name="P")
    k = te.reduce_axis((0, kk), name="k")
    C = te.compute((n, m), lambda x, y: te.sum(P[x, y] + Bv[y, k], axis=k), name="C")
    s = te.create_schedule(C.op)
    random_split(rng, s, C, log)
    random_reorder(rng, s, C, log)
    if rng.random() < 0.7:
        ax = rng.choice(s[C].leaf_iter_vars)
        log(f"P.compute_at(C, {ax.name})")
        s[P].compute_at(s[C], ax)
        random_split(rng, s, P, log, max_splits=1)
    random_annotate(rng, s, C, log)
    f = lower(s, [A, Bv, C])
    body = loop_partition(f.body)
    a, b = vec(n, m, seed=seed), vec(m, kk, seed=seed + 1)
    assert_same_results(f, body, [a, b, nan(n, m)], str(log))
    got = run_copy(dataclasses.replace(f, body=body), [a, b, nan(n, m)])[2]
    np.testing.assert_allclose(got, kk * a * 2 + b.sum(axis=1), rtol=1e-5, atol=1e-5,
                               err_msg=str(log))
