"""RemoveNoOp: drop the statements that have no effect (reference: tir.transform.RemoveNoOp).

Loop partitioning and unrolling leave empty loops, branches on constant conditions and
unused allocations behind; removing them keeps the IR that codegen sees small.

"Nothing" is spelled `Evaluate(0)` (`no_op()`), as in TVM: a For body or an IfThenElse
branch must be a statement, so a pass that empties one needs a statement that does
nothing rather than None. `is_no_op` recognises it (and any Evaluate of a constant).
"""
from __future__ import annotations

from ..arith.simplify import const_bound, equal, skey
from ..ir import expr as E
from ..ir.expr import Load
from ..ir.functor import collect_stmts, exists, free_vars, transform
from ..ir.stmt import Allocate, Evaluate, For, IfThenElse, LetStmt, SeqStmt, Stmt, Store, seq


def no_op() -> Evaluate:
    """The statement that does nothing: `Evaluate(0)`."""
    return Evaluate(E.const(0))


def is_no_op(s: Stmt) -> bool:
    """Whether `s` is an Evaluate of a constant, the form remove_no_op leaves for nothing."""
    return isinstance(s, Evaluate) and isinstance(s.value, (E.IntImm, E.FloatImm))


def is_self_assignment(s: Store, simplified: bool = False) -> bool:
    """Whether the store writes back what it reads from the same place, `A[i] = A[i]`:
    the indices compared after simplification, or as they are where the caller knows
    them `simplified` already (an unrolled copy's: the unroller asks of every store)."""
    value = s.value
    if not (isinstance(value, Load) and value.buffer is s.buffer):
        return False
    return skey(s.index) == skey(value.index) if simplified else equal(s.index, value.index)


def remove_no_op(stmt: Stmt) -> Stmt:
    """`stmt` without its statements that have no effect; `no_op()` when nothing is left.

    Removed, bottom-up: loops of constant extent <= 0 or with an empty body; branches on a
    constant condition (the taken one stays) and empty branches; Evaluate of a constant;
    no-op members of a SeqStmt (which is flattened); self-assignments `A[i] = A[i]`;
    Allocates whose buffer the body never reads, with the stores to it (a producer left
    without its consumer by loop partitioning); LetStmts whose variable is unused.
    Expressions have no side effects in this IR, so dropping the ones that go with a
    removed statement (a let's value, a branch's condition) is safe. A statement with
    nothing to remove comes back as the same object.
    """
    out = transform(stmt, _remove, pre=lambda n: n if isinstance(n, E.Expr) else None)
    return no_op() if is_no_op(out) else out


def _remove(s) -> Stmt | None:
    """The replacement of one statement whose children were already cleaned, or None."""
    match s:
        case For(extent=ext, body=body) if is_no_op(body) or const_bound(ext)[1] <= 0:
            return no_op()
        case IfThenElse(condition=E.IntImm(value=v), then_case=then, else_case=other):
            return then if v else (other if other is not None else no_op())
        case IfThenElse(condition=cond, then_case=then, else_case=other):
            other = None if other is None or is_no_op(other) else other
            if is_no_op(then):
                return no_op() if other is None else IfThenElse(E.Not(cond), other)
            return None if other is s.else_case else IfThenElse(cond, then, other)
        case SeqStmt(seq=items):
            kept = [x for x in items if not is_no_op(x)]
            if len(kept) == len(items) and not any(isinstance(x, SeqStmt) for x in items):
                return None
            return seq(*kept) if kept else no_op()
        case Store() if is_self_assignment(s):
            return no_op()
        case Allocate(buffer=buf, body=body) if not exists(
                body, lambda n: isinstance(n, Load) and n.buffer is buf):
            return remove_no_op(_without_stores(body, buf))
        case LetStmt(var=var, body=body) if not _reads(body, var):
            return body
    return None


def _reads(body: Stmt, var: E.Var) -> bool:
    """Whether `body` reads `var`: in an expression, or in the size of a buffer it
    allocates (a Buffer is not an IR node, so free_vars does not look there)."""
    return exists(body, lambda n: n is var) or any(
        var in free_vars(d) for a in collect_stmts(body, lambda n: isinstance(n, Allocate))
        for d in a.buffer.shape)


def _without_stores(body: Stmt, buf) -> Stmt:
    """`body` with its stores to `buf` replaced by no_op()."""
    return transform(body, lambda n: no_op() if isinstance(n, Store) and n.buffer is buf
                     else None, pre=lambda n: n if isinstance(n, E.Expr) else None)
