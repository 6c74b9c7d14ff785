"""remove_no_op (compiler/transform/remove_no_op.py): each kind of statement that does
nothing goes, everything with an effect stays, and `Evaluate(0)` stands for nothing."""
from __future__ import annotations

import random

import numpy as np
import pytest

from compiler import lower, te
from compiler.ir import expr as E
from compiler.ir.expr import Load
from compiler.ir.stmt import (SERIAL, Allocate, Buffer, Evaluate, For, IfThenElse, LetStmt,
                              PrimFunc, SeqStmt, Store)
from compiler.transform.remove_no_op import is_no_op, no_op, remove_no_op
from lower_check import Log, random_reorder, random_split
from pass_check import assert_same_results, nan, vec

A = Buffer("A", "int32", (E.const(16),))
T = Buffer("T", "int32", (E.const(4),))
i, x = E.Var("i"), E.Var("x")
S = Buffer("S", "int32", (x,))


def put(value, index=0):
    return Store(A, E.const(index) if isinstance(index, int) else index,
                 E.const(value) if isinstance(value, int) else value)


def loop(extent, body):
    return For(i, E.const(0), E.const(extent) if isinstance(extent, int) else extent,
               SERIAL, body)


TRUE, FALSE = E.const(True), E.const(False)


@pytest.mark.parametrize("stmt", [
    no_op(),
    Evaluate(E.const(2.5)),
    loop(0, put(1, i)),
    loop(-3, put(1, i)),
    loop(4, Evaluate(E.const(7))),
    IfThenElse(FALSE, put(1)),
    IfThenElse(i < 3, Evaluate(E.const(0)), Evaluate(E.const(1))),
    SeqStmt((no_op(), SeqStmt((Evaluate(E.const(3)),)))),
    put(Load(A, E.const(3)), 3),
    loop(4, put(Load(A, i * 2 - i), i)),
    Allocate(T, loop(4, IfThenElse(FALSE, Store(T, i, E.const(1))))),
    Allocate(T, loop(4, Store(T, i, i * 2))),  # written, never read
    LetStmt(x, i * 2, no_op()),
])
def test_statements_without_effect_become_evaluate_zero(stmt):
    got = remove_no_op(stmt)
    assert is_no_op(got) and str(got) == "0"


@pytest.mark.parametrize("stmt, text", [
    (IfThenElse(TRUE, put(1), put(2)), "A[0] = 1"),
    (IfThenElse(FALSE, put(1), put(2)), "A[0] = 2"),
    (IfThenElse(i < 3, no_op(), put(2)), "if (!(i < 3)) {\n  A[0] = 2\n}"),
    (IfThenElse(i < 3, put(1), Evaluate(E.const(0))), "if ((i < 3)) {\n  A[0] = 1\n}"),
    (SeqStmt((put(1), no_op(), SeqStmt((put(2), loop(0, put(3)))), put(4))),
     "A[0] = 1\nA[0] = 2\nA[0] = 4"),
    (Allocate(T, put(5)), "A[0] = 5"),
    (Allocate(T, SeqStmt((Store(T, E.const(0), E.const(1)), put(5)))), "A[0] = 5"),
    (LetStmt(x, i + 1, put(5)), "A[0] = 5"),
    (loop(4, IfThenElse(TRUE, put(1, i))), "for (i, 0, 4) {\n  A[i] = 1\n}"),
])
def test_statements_with_effect_keep_only_what_matters(stmt, text):
    assert str(remove_no_op(stmt)) == text


@pytest.mark.parametrize("stmt", [
    put(Load(A, E.const(3)), 4),  # another element
    put(Load(T, E.const(3)), 3),  # another buffer
    Allocate(T, SeqStmt((Store(T, E.const(0), E.const(1)), put(Load(T, E.const(0)))))),
    LetStmt(x, i + 1, put(x)),
    LetStmt(x, i + 1, Allocate(S, SeqStmt((Store(S, E.const(0), E.const(1)),
                                           put(Load(S, E.const(0))))))),  # x sizes S
    loop(te.var("n"), put(1, i)),  # a symbolic extent may be positive
    IfThenElse(i < 3, put(1), put(2)),
])
def test_statements_with_effect_stay_the_same(stmt):
    assert str(remove_no_op(stmt)) == str(stmt)


def test_left_in_place_when_nothing_changes():
    stmt = loop(4, SeqStmt((put(1, i), put(2, i + 4))))
    assert remove_no_op(stmt) is stmt


@pytest.mark.parametrize("seed", range(12))
def test_random_no_ops_added_to_lowered_functions_go_again(seed):
    """A lowered function with no-ops spliced into random places prints as before
    after remove_no_op, and runs the same."""
    rng = random.Random(5000 + seed)
    log = Log(seed)
    n = rng.randint(1, 12)
    Ap = te.placeholder((n,), name="A")
    B = te.compute((n,), lambda k: Ap[k] * 3, name="B")
    s = te.create_schedule(B.op)
    random_split(rng, s, B, log)
    random_reorder(rng, s, B, log)
    f = lower(s, [Ap, B])
    junk = [no_op(), Evaluate(E.const(1.5)), loop(0, put(1, i)), IfThenElse(FALSE, put(1)),
            Allocate(T, no_op()), LetStmt(x, E.const(1), no_op())]

    def splice(stmt):
        match stmt:
            case For(body=body):
                return For(stmt.loop_var, stmt.min, stmt.extent, stmt.kind,
                           SeqStmt((rng.choice(junk), splice(body), rng.choice(junk))))
            case IfThenElse(condition=c, then_case=t):
                return IfThenElse(c, splice(t), rng.choice([None, no_op()]))
        return stmt

    noisy = SeqStmt((rng.choice(junk), splice(f.body)))
    got = remove_no_op(noisy)
    assert str(got) == str(f.body), log
    assert_same_results(f, got, [vec(n), nan(n)], str(log))


def test_hand_built_function_with_self_copy_runs_the_same():
    body = SeqStmt((loop(8, put(Load(A, i), i)), loop(8, put(Load(A, i) + 1, i + 8))))
    func = PrimFunc("f", (A,), body)
    got = remove_no_op(body)
    assert str(got) == "for (i, 0, 8) {\n  A[(i + 8)] = (A[i] + 1)\n}"
    assert_same_results(func, got, [np.arange(16, dtype="int32")])
