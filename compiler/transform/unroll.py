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

from ..arith.bind import bind_simplified
from ..arith.simplify import simplify
from ..ir import expr as E
from ..ir.expr import Load
from ..ir.functor import children, free_vars, map_children, substitute, transform
from ..ir.stmt import SERIAL, UNROLLED, Allocate, Buffer, Evaluate, For, Stmt, Store, seq
from .hoist_invariants import hoist_invariants
from .remove_no_op import is_no_op, is_self_assignment, no_op


def unroll_loop(stmt: Stmt, auto_max_step: int = 0, explicit_unroll: bool = True) -> Stmt:
    """`stmt` with its unrollable loops expanded, innermost first.

    auto_max_step: serial loops of constant extent whose step count (extent x leaf
        statements of the body) is at most this are unrolled too; 0 (default) turns
        automatic unrolling off.
    explicit_unroll: False leaves every loop as it is, UNROLLED ones included, for a
        flow that lets LLVM unroll from codegen's hints; True (default) expands them.

    UNROLLED loops of symbolic extent stay loops (codegen hints LLVM); parallel and
    vectorized loops are never unrolled. A loop of extent 0 becomes `no_op()`.

    Which loops unroll is decided bottom-up, on the statements alone (a loop's extent
    and the steps of its body after its own inner loops were unrolled); then one walk
    down expands them, carrying the values of the enclosing unrolled loops' variables,
    so that each expression of a copy is substituted and simplified once, with all of
    them, rather than once per enclosing unrolled loop. Before that walk, the index
    arithmetic that no unrolled loop reaches is bound once ahead of each unrolled
    region (hoist_invariants.py), so that the copies carry only what changes.
    """
    if not explicit_unroll:
        return stmt
    plan = _Plan(auto_max_step)
    plan.steps(stmt)
    if not plan.extents:
        return stmt
    stmt = hoist_invariants(stmt, plan.extents)
    plan = _Plan(auto_max_step)  # the same loops, rebuilt
    plan.steps(stmt)
    return _Expand(plan.extents).stmt(stmt, {})


class _Plan:
    """Which loops unroll: `extents` {id(For): its constant extent}."""

    def __init__(self, auto_max_step: int):
        self.auto_max_step = auto_max_step
        self.extents: dict[int, int] = {}

    def steps(self, s: Stmt) -> int | None:
        """Leaf statements of `s` once its unrolling loops are expanded; None when a loop
        is left in it (deciding every loop inside on the way)."""
        if isinstance(s, (Store, Evaluate)):
            return 1
        counts = [self.steps(c) for c in children(s) if isinstance(c, Stmt)]
        inner = None if any(c is None for c in counts) else sum(counts)
        if isinstance(s, For):
            if s.kind in (SERIAL, UNROLLED):
                extent = simplify(s.extent)
                if isinstance(extent, E.IntImm) and (s.kind == UNROLLED or (
                        self.auto_max_step > 0 and inner is not None
                        and extent.value * inner <= self.auto_max_step)):
                    self.extents[id(s)] = extent.value
                    if extent.value == 0:
                        return 1  # no_op(), one leaf
                    return None if inner is None else extent.value * inner
            return None
        return inner


class _Expand:
    """The walk down that expands the planned loops (unroll_loop's docstring)."""

    def __init__(self, extents: dict[int, int]):
        self.extents = extents
        self._free: dict[int, tuple] = {}  # id(expr) -> (expr, its free vars)
        self._holds: dict[int, bool] = {}  # id(stmt) -> whether a planned loop is in it
        self._memo: dict = {}  # bind_simplified's, for this expansion

    def free(self, e: E.Expr) -> set:
        hit = self._free.get(id(e))
        if hit is None or hit[0] is not e:
            hit = self._free[id(e)] = (e, free_vars(e))
        return hit[1]

    def holds(self, s: Stmt) -> bool:
        if id(s) not in self._holds:
            self._holds[id(s)] = id(s) in self.extents or any(
                self.holds(c) for c in children(s) if isinstance(c, Stmt))
        return self._holds[id(s)]

    def expr(self, e: E.Expr, env: dict) -> E.Expr:
        used = {v: env[v] for v in self.free(e) if v in env}
        return bind_simplified(e, used, self._memo) if used else e

    def stmt(self, s: Stmt, env: dict) -> Stmt:
        if not env and not self.holds(s):
            return s
        if id(s) in self.extents:
            copies = []
            for k in range(self.extents[id(s)]):
                value = self.expr(simplify(s.min + k), env)
                copy = self.stmt(s.body, {**env, s.loop_var: value})
                if not is_no_op(copy):
                    copies.append(copy)
            return seq(*copies) if copies else no_op()
        if isinstance(s, Allocate):
            shape = tuple(self.expr(d, env) for d in s.buffer.shape)
            if any(a is not b for a, b in zip(shape, s.buffer.shape)):
                # the body expanded first: rebuffering rebuilds the loops in it, which
                # the plan knows by identity
                new = dataclasses.replace(s.buffer, shape=shape)
                return Allocate(new, _rebuffer(self.stmt(s.body, env), s.buffer, new))
        out = self.node(s, env)
        if isinstance(out, Store) and out is not s and is_self_assignment(out, simplified=True):
            return no_op()  # a Winograd transform's zero term, A[i] = A[i] + -0.0
        return out

    def node(self, n, env: dict):
        """`n`'s children expanded (statements) or substituted (expressions, and the
        expressions inside other nodes: ranges)."""
        return map_children(n, lambda c: self.stmt(c, env) if isinstance(c, Stmt) else
                            self.expr(c, env) if isinstance(c, E.Expr) else self.node(c, env))


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
