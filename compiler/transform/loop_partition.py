"""LoopPartition: split loops so that their main part runs without the guards of splits
that do not divide (reference: tir.transform.LoopPartition).

`for io in [0, 2): for ii in [0, 16): if (io*16 + ii < 20) S` tests the guard 32 times
though it can fail only when io = 1. For each loop, outermost first, the guards in its
body are split into conjuncts; one that is linear in the loop variable is solved, with
the inner loop variables relaxed over their ranges, for the prefix of the loop's range
where it surely holds and the suffix where it surely fails (the other way round for a
negative coefficient). The loop becomes up to three loops over those ranges: the
conjunct replaced by true, kept, replaced by false. Each piece is partitioned again, on
its other conjuncts and then in its inner loops; a piece of extent 1 loses its loop, so
the tail above ends as `for ii in [0, 4): S` with io = 1 folded in.

Loop variables are assumed bound once along any path (as schedule_ops emits them); the
pieces of one loop share its variable, in sibling loops.
"""
from __future__ import annotations

import math

from ..arith.int_set import IntervalSet, eval_set
from ..arith.simplify import Linear, const_bound, loop_bounds, node_count, simplify, skey
from ..ir import expr as E
from ..ir.functor import children, collect, free_vars, map_children, transform
from ..ir.stmt import PARALLEL, For, IfThenElse, LetStmt, Stmt, seq
from .remove_no_op import is_no_op, no_op, remove_no_op
from .simplify import simplify_stmt
from .unroll import bind

# Solved boundaries (and relaxed ranges) larger than this, and guards, clamped boundaries
# and loop ranges twice as large, are not worth their cost: the simplifier's work on
# nested symbolic min / max grows exponentially with their depth.
_MAX_NODES = 12


def loop_partition(stmt: Stmt, bounds: dict | None = None) -> Stmt:
    """`stmt` with every loop partitioned on the guards in its body, then simplified
    with the pieces' ranges and cleaned by remove_no_op (guards decided there go).

    bounds: known inclusive ranges of the free (size) variables, e.g. `{n: (1, math.inf)}`,
        what lower() assumes of te.var sizes; they let piece boundaries drop min / max.
        Without them (default) symbolic loops are still partitioned correctly, less neatly.

    Only conjuncts `x < y` / `x <= y` (and so `>` / `>=`) over integers whose variables
    are loop variables or size variables are considered; loads, lets and calls are not.
    """
    bounds = dict(bounds or {})
    bound_here = {n.loop_var if isinstance(n, For) else n.var
                  for n in collect(stmt, lambda n: isinstance(n, (For, LetStmt, E.Let)))}
    sizes = frozenset(free_vars(stmt) - bound_here)
    return remove_no_op(simplify_stmt(_Partitioner(sizes).visit(stmt, bounds), bounds))


class _Partitioner:
    def __init__(self, sizes: frozenset):
        self.sizes = sizes

    def visit(self, s: Stmt, bounds: dict) -> Stmt:
        if isinstance(s, For):
            return self.loop(s, bounds, frozenset())
        return map_children(s, lambda c: self.visit(c, bounds) if isinstance(c, Stmt) else c)

    def loop(self, f: For, bounds: dict, tried: frozenset) -> Stmt:
        """Partition `f` on the first conjunct (not in `tried`) that gains a piece free of
        it; when none does, partition inside its body. A parallel loop is partitioned
        inside only: its pieces would run one after another, the tail on one thread while
        the others wait (two column blocks on two cores would run serially)."""
        guards = {} if f.kind == PARALLEL else self.guards(f, bounds, tried)
        for key, (first, b1, b2) in guards.items():
            lo, hi = f.min, simplify(f.min + f.extent, bounds)
            p1 = _clamp(b1, lo, hi, bounds)
            p2 = p1 if _le(b2, b1, bounds) else _clamp(b2, p1, hi, bounds)
            if max(node_count(p1), node_count(p2)) > 2 * _MAX_NODES:
                continue
            ranges = [(lo, p1, first), (p1, p2, None), (p2, hi, not first)]
            if all(_le(end, start, bounds) for start, end, value in ranges if value is not None):
                continue
            pieces = [self.piece(f, start, end, key, value, bounds, tried | {key})
                      for start, end, value in ranges if not _le(end, start, bounds)]
            pieces = [p for p in pieces if p is not None]
            return seq(*pieces) if pieces else no_op()
        inner = {**bounds, f.loop_var: loop_bounds(f.min, f.extent, bounds)}
        return For(f.loop_var, f.min, f.extent, f.kind, self.visit(f.body, inner), f.pragmas)

    def piece(self, f: For, start, end, key, value, bounds, tried) -> Stmt | None:
        """`f` over [start, end) with the conjunct `key` replaced by `value` (None: kept)."""
        body = f.body if value is None else remove_no_op(_eliminate(f.body, key, value))
        if is_no_op(body):
            return None
        extent = simplify(end - start, bounds)
        if isinstance(extent, E.IntImm) and extent.value == 1 and not f.pragmas:
            return self.visit(remove_no_op(bind(body, f.loop_var, start)), bounds)
        return self.loop(For(f.loop_var, start, extent, f.kind, body, f.pragmas), bounds, tried)

    def guards(self, f: For, bounds: dict, tried: frozenset) -> dict:
        """Conjunct key -> (value on the first piece, end of the first piece, start of the
        last piece), for the conjuncts (not in `tried`) of the guards in `f`'s body that
        can be solved for f's variable at every place they occur."""
        if node_count(f.min) + node_count(f.extent) > 2 * _MAX_NODES:
            return {}
        v = f.loop_var
        inner = {**bounds, v: loop_bounds(f.min, f.extent, bounds)}
        allowed = self.sizes | bounds.keys() | {v}
        found = {}
        for conj, dom, conj_bounds, names in _occurrences(f.body, v, allowed, {}, inner):
            key = skey(conj)
            sol = _solve(conj, v, dom, conj_bounds, names, bounds)
            old = found.get(key, sol)
            found[key] = None if old is None or sol is None else (
                old[0], simplify(E.Min(old[1], sol[1]), bounds),
                simplify(E.Max(old[2], sol[2]), bounds))
        return {k: sol for k, sol in found.items() if sol is not None and k not in tried}


def _occurrences(s: Stmt, v: E.Var, allowed, dom: dict, bounds: dict):
    """(conjunct, relaxed ranges of the inner loop variables, their constant bounds,
    variables in scope) for each conjunct mentioning `v` of each guard in `s`."""
    match s:
        case For(loop_var=u, min=m, extent=e, body=body):
            if any(v in free_vars(n.condition)
                   for n in collect(body, lambda n: isinstance(n, IfThenElse))):
                relaxed = {**dom, u: _relax(m, e, v, dom, bounds)}
                yield from _occurrences(body, v, allowed | {u}, relaxed,
                                        {**bounds, u: loop_bounds(m, e, bounds)})
            return
        case IfThenElse(condition=cond):
            for conj in _conjuncts(cond):
                if v in free_vars(conj):
                    yield conj, dom, bounds, allowed
    for c in children(s):
        if isinstance(c, Stmt):
            yield from _occurrences(c, v, allowed, dom, bounds)


def _conjuncts(cond: E.Expr) -> list:
    match cond:
        case E.And(a=a, b=b):
            return _conjuncts(a) + _conjuncts(b)
    return [cond]


def _relax(m: E.Expr, e: E.Expr, v: E.Var, dom: dict, bounds: dict) -> IntervalSet:
    """The values of an inner loop variable over [m, m + e) as bounds free of `v`:
    symbolic in the outer variables where small, else the constant bounds (over v's
    range) that `bounds` has for it."""
    small = node_count(m) + node_count(e) <= 2 * _MAX_NODES
    ends = []
    for expr, k in ((m, 0), (m + e - 1, 1)):
        s = eval_set(expr, dom, bounds) if small else IntervalSet.everything()
        x = s.max if k else s.min
        if x is None or v in free_vars(x) or node_count(x) > _MAX_NODES:
            c = loop_bounds(m, e, bounds)[k]
            x = None if math.isinf(c) else E.const(int(c))
        ends.append(x)
    return IntervalSet(*ends)


def _solve(conj, v, dom, conj_bounds, names, bounds):
    """For `conj` as `a*v + r < 0` with r in [r_min, r_max] over the inner loops:
    (value on the first piece, end of the first piece, start of the last piece); None
    when it is not such a comparison over the variables in scope `names`."""
    if not free_vars(conj) <= names or node_count(conj) > 2 * _MAX_NODES:
        return None
    match simplify(conj, conj_bounds):
        case E.LT(a=x, b=y) if E.is_int(x.dtype):
            diff = x - y
        case E.LE(a=x, b=y) if E.is_int(x.dtype):
            diff = x - y - 1
        case _:
            return None
    lin, rest, a = Linear(diff.dtype).add(simplify(diff), 1), Linear(diff.dtype), 0
    for term, c in lin.items():
        if term is v:
            a = c
        elif v in free_vars(term):
            return None
        else:
            rest.add(term, c)
    rest.const = lin.const
    r = eval_set(rest.to_expr(), dom, bounds)
    if a == 0 or r.min is None or r.max is None or \
            (free_vars(r.min) | free_vars(r.max)) & (dom.keys() | {v}):
        return None
    if a > 0:  # holds for v < ceil(-r_max / a), fails from ceil(-r_min / a)
        b1, b2 = (-r.max + a - 1) // a, (-r.min + a - 1) // a
    else:  # fails for v <= floor(r_min / -a), holds from floor(r_max / -a) + 1
        b1, b2 = r.min // -a + 1, r.max // -a + 1
    b1, b2 = simplify(b1, bounds), simplify(b2, bounds)
    return None if max(node_count(b1), node_count(b2)) > _MAX_NODES else (a > 0, b1, b2)


def _eliminate(body: Stmt, key: tuple, value: bool) -> Stmt:
    """`body` with the guard conjunct `key` replaced by the constant `value`."""
    def replace(c: E.Expr) -> E.Expr:
        match c:
            case E.And(a=a, b=b):
                return E.And(replace(a), replace(b))
        return E.const(value, "bool") if skey(c) == key else c

    def post(n):
        if isinstance(n, IfThenElse) and key in map(skey, _conjuncts(n.condition)):
            return IfThenElse(simplify(replace(n.condition)), n.then_case, n.else_case)
        return None

    return transform(body, post, pre=lambda n: n if isinstance(n, E.Expr) else None)


def _le(a: E.Expr, b: E.Expr, bounds: dict) -> bool:
    """Whether a <= b surely; floordiv by one constant is monotone, which the constant
    bounds of `b - a` do not see."""
    match a, b:
        case E.FloorDiv(a=x, b=E.IntImm(value=c)), E.FloorDiv(a=y, b=E.IntImm(value=d)) \
                if c == d and c > 0:
            return _le(x, y, bounds)
    return const_bound(simplify(b - a, bounds), bounds)[0] >= 0


def _clamp(x: E.Expr, lo: E.Expr, hi: E.Expr, bounds: dict) -> E.Expr:
    """`max(lo, min(x, hi))`, leaving out what the bounds decide."""
    if _le(x, lo, bounds):
        return lo
    if _le(hi, x, bounds):
        return hi
    out = x if _le(x, hi, bounds) else E.Min(x, hi)
    return simplify(out if _le(lo, x, bounds) else E.Max(lo, out), bounds)
