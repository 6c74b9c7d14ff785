"""UnrollLoop: replace a loop by one copy of its body per iteration (reference:
tir.transform.UnrollLoop).

A schedule's `unroll` marks a loop UNROLLED; with a constant extent it becomes a sequence
of body copies with the loop variable replaced by its value, so indices fold to
constants. `auto_max_step` also unrolls small serial loops, measured as TVM does: the
extent times the number of leaf statements (Store, Evaluate) in the body after its own
inner loops were unrolled. A loop still left in that body (parallel, vectorized,
symbolic or too big) makes the outer loop ineligible, like TVM's normal_loop_depth.
"""
from __future__ import annotations

import dataclasses

from ..arith.simplify import simplify
from ..ir import expr as E
from ..ir.expr import Load
from ..ir.functor import children, free_vars, substitute, transform
from ..ir.stmt import SERIAL, UNROLLED, Allocate, Buffer, Evaluate, For, Stmt, Store, seq
from .remove_no_op import no_op


def unroll_loop(stmt: Stmt, auto_max_step: int = 0, explicit_unroll: bool = True) -> Stmt:
    """`stmt` with its unrollable loops expanded, innermost first.

    auto_max_step: serial loops of constant extent whose step count (extent x leaf
        statements of the body) is at most this are unrolled too; 0 (default) turns
        automatic unrolling off.
    explicit_unroll: False leaves every loop as it is, UNROLLED ones included, for a
        flow that lets LLVM unroll from codegen's hints; True (default) expands them.

    UNROLLED loops of symbolic extent stay loops (codegen hints LLVM); parallel and
    vectorized loops are never unrolled. A loop of extent 0 becomes `no_op()`.
    """
    if not explicit_unroll:
        return stmt

    def post(n):
        match n:
            case For(kind=kind, extent=extent) if kind in (SERIAL, UNROLLED):
                extent = simplify(extent)
                if isinstance(extent, E.IntImm) and (
                        kind == UNROLLED or _small(n.body, extent.value, auto_max_step)):
                    return _unroll(n, extent.value)
        return None

    return transform(stmt, post, pre=lambda n: n if isinstance(n, E.Expr) else None)


def bind(stmt: Stmt, var: E.Var, value: E.Expr) -> Stmt:
    """`stmt` with `var` replaced by `value`, simplifying the expressions that change
    (only those: re-simplifying a whole body per copy costs more than the unrolling).

    The sizes of the buffers it allocates change too: a Buffer is not an IR node, so
    substitute() does not see its shape, and a copy of a loop body must not allocate by
    the size of a variable no longer bound.
    """
    def pre(n):
        match n:
            case E.Expr():
                return simplify(substitute(n, {var: value})) if var in free_vars(n) else n
            case Allocate(buffer=buf) if any(var in free_vars(d) for d in buf.shape):
                new = dataclasses.replace(buf, shape=tuple(pre(d) for d in buf.shape))
                return Allocate(new, bind(_rebuffer(n.body, buf, new), var, value))
        return None

    return transform(stmt, lambda n: None, pre=pre)


def _rebuffer(stmt: Stmt, old: Buffer, new: Buffer) -> Stmt:
    def post(n):
        if isinstance(n, (Load, Store)) and n.buffer is old:
            return dataclasses.replace(n, buffer=new)
        return None

    return transform(stmt, post)


def _unroll(loop: For, extent: int) -> Stmt:
    """The body once per iteration, the loop variable replaced by its value."""
    copies = [bind(loop.body, loop.loop_var, simplify(loop.min + k)) for k in range(extent)]
    return seq(*copies) if copies else no_op()


def _small(body: Stmt, extent: int, max_step: int) -> bool:
    """Whether `extent` runs of `body` take at most `max_step` steps (0: never)."""
    steps = _steps(body)
    return max_step > 0 and steps is not None and extent * steps <= max_step


def _steps(s: Stmt) -> int | None:
    """Leaf statements in `s`; None when a loop is left in it."""
    if isinstance(s, For):
        return None
    if isinstance(s, (Store, Evaluate)):
        return 1
    counts = [_steps(c) for c in children(s) if isinstance(c, Stmt)]
    return None if any(c is None for c in counts) else sum(counts)
