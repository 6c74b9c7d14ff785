"""schedule_ops: schedule + bounds -> loop IR (reference: ScheduleOps, MakeLoopNest).

Each stage becomes a loop nest over its leaf IterVars, with the ranges bound inference
gave them. A stage attached with compute_at is placed, inside a Realize of the region
it computes, at the top of its attach loop's body. A reduction gets an init nest over
its data-parallel loops before the first reduction loop and an update nest after it.
A split that may not divide its parent gets a guard `if (parent < extent)`.
"""
from __future__ import annotations

from ..arith.simplify import const_bound, loop_bounds, simplify
from ..ir import expr as E
from ..ir.expr import ProducerLoad
from ..ir.functor import free_vars, substitute
from ..ir.reduce import Reduce
from ..ir.stmt import SERIAL, For, IfThenElse, ProducerStore, Realize, Stmt, seq
from ..te.tensor import REDUCE, IterVar
from .bound import BoundContext
from .relations import Fuse, Rebase, Shift, Split
from .stage import ROOT, SCOPE, Stage


def schedule_ops(ctx: BoundContext, params: set) -> Stmt:
    """The loop IR of the whole schedule. Stages in `params` (function arguments) get no
    Realize: their buffers come from the caller."""
    graph = ctx.graph
    attached: dict[IterVar, list[Stage]] = {}
    for st in graph.stages:
        if st.attach_type == SCOPE:
            attached.setdefault(st.attach_ivar, []).append(st)
    builder = _Builder(ctx, attached, params)
    roots = [st for st in graph.stages if st.attach_type == ROOT]
    body = seq(*[builder.stage_nest(st) for st in roots])
    for st in reversed(roots):
        if st not in params:
            body = Realize(st.tensor, tuple(ctx.rmap[iv] for iv in st.op.axis), body, st.scope)
    return body


class _Builder:
    def __init__(self, ctx: BoundContext, attached: dict, params: set):
        self.ctx, self.attached, self.params = ctx, attached, params

    def stage_nest(self, st: Stage) -> Stmt:
        rmap, bounds = self.ctx.rmap, dict(self.ctx.bounds)
        value: dict[IterVar, E.Expr] = {}
        loops = []  # (leaf, For-or-None)
        for leaf in st.leaf_iter_vars:
            r = rmap[leaf]
            if const_bound(r.extent, bounds) == (1, 1):
                value[leaf] = r.min
                loops.append((leaf, None))
            else:
                value[leaf] = leaf.var
                bounds[leaf.var] = loop_bounds(r.min, r.extent, bounds)
                loops.append((leaf, r))
        guards = self._pass_up_index(st, value, bounds)
        index = tuple(value[iv] for iv in st.op.axis)
        body = self.ctx.graph.body[st]
        vmap = {iv.var: value[iv] for iv in st.op.root_iter_vars}
        if not isinstance(body, Reduce):
            store = ProducerStore(st.tensor, index, simplify(substitute(body, vmap), bounds))
            return self._nest(st, loops, _guarded(guards, store))
        # A reduction: init before the first reduction loop, update from there on.
        first = next((k for k, (leaf, _) in enumerate(loops)
                      if leaf.iter_type == REDUCE), len(loops))
        reduce_vars = {leaf.var for leaf, _ in loops[first:] if leaf.iter_type == REDUCE}
        init_guards = [g for g in guards if not (free_vars(g) & reduce_vars)]
        init = ProducerStore(st.tensor, index, body.combiner.identity)
        source = simplify(substitute(body.source, vmap), bounds)
        update = ProducerStore(st.tensor, index, body.combiner.combine(
            ProducerLoad(st.tensor, index), source))
        if body.condition is not None:
            guards = guards + [simplify(substitute(body.condition, vmap), bounds)]
        init_loops = [(leaf, r) for leaf, r in loops[first:] if leaf.iter_type != REDUCE]
        inner = seq(self._nest(st, init_loops, _guarded(init_guards, init), attach=False),
                    self._nest(st, loops[first:], _guarded(guards, update)))
        return self._nest(st, loops[:first], inner)

    def _nest(self, st: Stage, loops: list, body: Stmt, attach: bool = True) -> Stmt:
        """Wrap `body` in `loops` (outermost first), inserting attached stages."""
        for leaf, r in reversed(loops):
            if attach:
                for child in reversed(self.attached.get(leaf, [])):
                    region = tuple(self.ctx.rmap[iv] for iv in child.op.axis)
                    inner = seq(self.stage_nest(child), body)
                    body = inner if child in self.params else \
                        Realize(child.tensor, region, inner, child.scope)
            if r is not None:
                kind = st.iter_var_attrs.get(leaf, SERIAL)
                pragmas = tuple(st.pragmas.get(leaf, ()))
                loop_var = leaf.var
                if not (isinstance(r.min, E.IntImm) and r.min.value == 0):
                    # Loops run from 0, as in the reference's MakeLoopNest: the leaf's
                    # value is the loop index plus the region's start.
                    loop_var = E.Var(leaf.var.name)
                    body = substitute(body, {leaf.var: r.min + loop_var})
                body = For(loop_var, E.const(0), r.extent, kind, body, pragmas)
        return body

    def _pass_up_index(self, st: Stage, value: dict, bounds: dict) -> list[E.Expr]:
        """Root values from leaf values (PassUpIndex), and the guards that keep a split
        which does not divide inside its parent."""
        rmap, guards = self.ctx.rmap, []
        for rel in reversed(st.relations):
            match rel:
                case Split(parent=p, outer=o, inner=i):
                    pr = rmap[p]
                    value[p] = simplify(value[o] * rmap[i].extent + value[i] + pr.min, bounds)
                    cond = simplify(value[p] < pr.min + pr.extent, bounds)
                    if not (isinstance(cond, E.IntImm) and cond.value):
                        guards.append(cond)
                case Fuse(outer=o, inner=i, fused=f):
                    n = rmap[i].extent
                    value[o] = simplify(value[f] // n + rmap[o].min, bounds)
                    value[i] = simplify(value[f] % n + rmap[i].min, bounds)
                case Rebase(parent=p, rebased=r):
                    value[p] = simplify(value[r] + rmap[p].min, bounds)
                case Shift(parent=p, shifted=t, amount=amount):
                    value[p] = simplify(value[t] - amount, bounds)
        return guards


def _guarded(conds: list[E.Expr], body: Stmt) -> Stmt:
    if not conds:
        return body
    cond = conds[0]
    for c in conds[1:]:
        cond = E.And(cond, c)
    return IfThenElse(cond, body)
