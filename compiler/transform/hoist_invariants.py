"""Index arithmetic that an unrolled region does not change, bound once ahead of it for
the passes that follow the unroll, and put back where it is used before code generation.

UnrollLoop (unroll.py) makes one copy of a loop body per iteration and binds the loop
variables of each copy, rebuilding and simplifying every node above a bound variable.
In a tiled kernel most of an index is the part that no unrolled loop reaches: a
Winograd transform's load `data[floormod(p, 4)*50176 + floordiv(floordiv(p, 4), 14)
*3584 + floormod(floordiv(p, 4), 14)*64 + ra*896 + col*16]` carries the tile's base in
every one of its 216 copies, rebuilt and simplified in each, and simplified again
after the unroll. Bound once, `let idx2 = floormod(p, 4)*50176 + ...` ahead of the
region, each copy is `data[idx2 + 896]` (hoist_invariants, which unroll_loop calls
before expanding). Measured on ResNet-18's F(4x4) Winograd kernel (Zen 5): UnrollLoop
0.30 -> 0.22 s, the Simplify after it 0.23 -> 0.10 s.

The lets do not reach code generation: InlineInvariants (inline_invariants) substitutes
them back after RemoveNoOp, which gives exactly the loop IR of before (a copy's index is
`base + constant`, the simplifier's own order), so the generated code, and the
templates' fingerprints (search_spaces/fingerprint.py), stay what they were. Kept, the
lets changed LLVM's decisions: a depthwise kernel's index sums, computed once before
its unrolled row instead of inside each guarded load, made its 3 x 3 window loops small
enough for LLVM to unroll whole, which spilled 56 vectors and ran 1.24-1.36x slower.
What the lets would have saved code generation, it gets by emitting a subexpression
shared by the copies once per block (codegen/llvm.py, CodeGenLLVM.expr).

A region is an unrolled loop with no unrolled loop around it that is not separated from
it by a loop that stays (a parallel loop inside an unrolled row loop starts regions of
its own, in its body). Within a region, a scalar int32 / int64 expression is invariant
when none of its variables is an unrolled loop's (of this region or one around it: what
the unroll binds to constants stays in the copies, where it folds) or a let's inside the
region. Of a sum, the invariant terms are bound together and the rest stays (`base +
ra*896 + col*16`); an invariant expression that is not a sum is bound whole (`1 <=
idx0` for a padding test); a variable, or a variable times a constant, is left where it
is. Bound values contain no load, call or let, and no division or remainder by anything
but a nonzero constant: a let is evaluated whether or not the branch that uses it runs,
so it must not trap. Loop bounds and buffer shapes are left as they are (the unroll plan
reads extents as constants). Simplify gives a let variable the bounds of its value
(transform/simplify.py), so that a condition the loops' bounds decided is still decided.
"""
from __future__ import annotations

import dataclasses

from ..ir import expr as E
from ..ir.expr import Load
from ..ir.functor import children, collect, free_vars, map_children, substitute
from ..ir.node import node
from ..ir.stmt import Allocate, For, LetStmt, Stmt

_INDEX_DTYPES = ("int32", "int64")
_DIVISIONS = (E.Div, E.FloorDiv, E.FloorMod, E.TruncDiv, E.TruncMod)


@node
class InvariantVar(E.Var):
    """The variable of a let that hoist_invariants made (inline_invariants undoes it)."""


def hoist_invariants(stmt: Stmt, unrolled: dict[int, int]) -> Stmt:
    """`stmt` with each region of the loops in `unrolled` (ids of the For nodes that
    UnrollLoop will expand) preceded by lets of its invariant index arithmetic (see the
    module docstring). Nodes are rebuilt, so the caller plans the unroll again."""
    return _Walk(unrolled, stmt).stmt(stmt)


def inline_invariants(stmt: Stmt) -> Stmt:
    """`stmt` with the lets of hoist_invariants substituted where they are used."""
    def inline(n, env: dict):
        if isinstance(n, LetStmt) and isinstance(n.var, InvariantVar):
            return inline(n.body, {**env, n.var: substitute(n.value, env)})
        if isinstance(n, E.Expr):
            return substitute(n, env)
        if not isinstance(n, Stmt):
            return n
        return map_children(n, lambda c: inline(c, env))

    return inline(stmt, {})


class _Walk:
    """Down to the regions: a loop that unrolls, met outside any region, is one."""

    def __init__(self, unrolled: dict[int, int], stmt: Stmt):
        self.unrolled = unrolled
        self.count = 0  # lets made so far, for their names
        self.constants = {n.loop_var for n in collect(
            stmt, lambda n: isinstance(n, For) and id(n) in unrolled)}

    def stmt(self, s: Stmt) -> Stmt:
        if isinstance(s, For) and id(s) in self.unrolled:
            return _Region(self, s).hoisted()
        if not any(isinstance(c, Stmt) for c in children(s)):
            return s
        return map_children(s, lambda c: self.stmt(c) if isinstance(c, Stmt) else c)


class _Region:
    """One region: the variables its copies bind, and the lets made for it."""

    def __init__(self, walk: _Walk, root: For):
        self.walk, self.root = walk, root
        self.inside: set = set(walk.constants)
        self._lets_inside(root)
        self.lets: dict[str, tuple[E.Var, E.Expr]] = {}  # by the value's text
        self._memo: dict[int, tuple] = {}  # id(expr) -> (expr, hoisted)
        self._facts: dict[int, tuple] = {}  # id(expr) -> (expr, free vars, bindable)

    def _lets_inside(self, s: Stmt) -> None:
        if isinstance(s, For) and id(s) not in self.walk.unrolled:
            return  # a loop that stays: its body is regions of its own
        if isinstance(s, LetStmt):
            self.inside.add(s.var)
        for c in children(s):
            if isinstance(c, Stmt):
                self._lets_inside(c)
            elif isinstance(c, E.Expr):
                self.inside.update(n.var for n in collect(c, lambda n: isinstance(n, E.Let)))

    def hoisted(self) -> Stmt:
        out = self.stmt(self.root)
        for var, value in reversed(list(self.lets.values())):
            out = LetStmt(var, value, out)
        return out

    def stmt(self, s: Stmt) -> Stmt:
        if isinstance(s, For):
            if id(s) not in self.walk.unrolled:
                return self.walk.stmt(s)
            return dataclasses.replace(s, body=self.stmt(s.body))  # its bounds stay
        if isinstance(s, Allocate):
            return dataclasses.replace(s, body=self.stmt(s.body))  # its shape stays
        return map_children(s, lambda c: self.stmt(c) if isinstance(c, Stmt) else
                            self.expr(c) if isinstance(c, E.Expr) else c)

    def expr(self, e: E.Expr) -> E.Expr:
        hit = self._memo.get(id(e))
        if hit is None or hit[0] is not e:
            hit = self._memo[id(e)] = (e, self._hoist(e))
        return hit[1]

    def _hoist(self, e: E.Expr) -> E.Expr:
        if isinstance(e, (E.Var, E.IntImm, E.FloatImm)):
            return e
        if e.dtype in _INDEX_DTYPES:
            if self._invariant(e):
                return e if _cheap(e) else self._let(e)
            if isinstance(e, (E.Add, E.Sub)):
                terms = _terms(e, 1, [])
                bound = [(sign, t) for sign, t in terms if self._invariant(t)]
                if len(bound) > 1 or (bound and not _cheap(bound[0][1])):
                    rest = [(sign, self.expr(t)) for sign, t in terms
                            if not self._invariant(t)]
                    return _sum([(1, self._let(_sum(bound)))] + rest)
        return map_children(e, lambda c: self.expr(c) if isinstance(c, E.Expr) else c)

    def _invariant(self, e: E.Expr) -> bool:
        """Whether `e` may be bound ahead of the region: not a constant, none of its
        variables bound by it, nothing that reads memory or may trap (module
        docstring)."""
        if isinstance(e, (E.IntImm, E.FloatImm)):
            return False
        hit = self._facts.get(id(e))
        if hit is None or hit[0] is not e:
            hit = self._facts[id(e)] = (e, free_vars(e), not collect(e, _unbindable))
        return hit[2] and not (hit[1] & self.inside)

    def _let(self, value: E.Expr) -> E.Var:
        key = str(value)
        hit = self.lets.get(key)
        if hit is None:
            hit = self.lets[key] = (InvariantVar(f"idx{self.walk.count}", value.dtype), value)
            self.walk.count += 1
        return hit[0]


def _cheap(e: E.Expr) -> bool:
    """A variable, or one times a constant: as cheap to repeat as to bind."""
    if isinstance(e, E.Mul):
        e = e.a if isinstance(e.b, E.IntImm) else e.b if isinstance(e.a, E.IntImm) else e
    return isinstance(e, E.Var)


def _unbindable(n) -> bool:
    """A node a let must not evaluate ahead of its use (module docstring)."""
    if isinstance(n, (Load, E.ProducerLoad, E.Call, E.Let)):
        return True
    return isinstance(n, _DIVISIONS) and not (isinstance(n.b, E.IntImm) and n.b.value != 0)


def _terms(e: E.Expr, sign: int, out: list) -> list:
    """The terms of a sum of Adds and Subs, each with its sign."""
    if isinstance(e, E.Add):
        _terms(e.a, sign, out)
        _terms(e.b, sign, out)
    elif isinstance(e, E.Sub):
        _terms(e.a, sign, out)
        _terms(e.b, -sign, out)
    else:
        out.append((sign, e))
    return out


def _sum(terms: list) -> E.Expr:
    """The sum of signed terms, a positive one first where there is one."""
    terms = sorted(terms, key=lambda t: t[0] < 0)
    sign, out = terms[0]
    if sign < 0:
        out = E.Sub(E.IntImm(0, out.dtype), out)
    for sign, t in terms[1:]:
        out = E.Add(out, t) if sign > 0 else E.Sub(out, t)
    return out


__all__ = ["InvariantVar", "hoist_invariants", "inline_invariants"]
