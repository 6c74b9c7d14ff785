"""schedule_ops: schedule + bounds -> loop IR (reference: ScheduleOps, MakeLoopNest).

Each stage becomes a loop nest over its leaf IterVars, with the ranges bound inference
gave them. A stage attached with compute_at is placed, inside a Realize of the region
it computes, at the top of its attach loop's body. A reduction gets an init nest over
its data-parallel loops before the first reduction loop and an update nest after it.
A split that may not divide its parent gets a guard `if (parent < extent)`. Stages that
share loops (Stage.after / before) are emitted as one nest (loop_sharing.py). A stage
stored through a map (Stage.store_in) gets its buffer's shape and mapped accesses last,
once the folds the map makes are checked (storage_liveness.py).
"""
from __future__ import annotations

from ..arith.simplify import const_bound, loop_bounds, simplify
from ..errors import ScheduleError
from ..ir import expr as E
from ..ir.expr import ProducerLoad
from ..ir.functor import free_vars, substitute
from ..ir.reduce import Reduce
from ..ir.stmt import SERIAL, For, IfThenElse, ProducerStore, Realize, Stmt, seq
from ..lang.tensor import REDUCE, IterVar
from .bound import BoundContext
from .loop_sharing import SharedLoop, StageItem, check_dependences, top_level_items
from .relations import pass_up_index
from .storage_liveness import check_folds
from .storage_map import apply_storage_maps
from .stage import ROOT, SCOPE, Stage


def schedule_ops(ctx: BoundContext, params: set) -> Stmt:
    """The loop IR of the whole schedule. Stages in `params` (function arguments) get no
    Realize: their buffers come from the caller."""
    graph = ctx.graph
    for st in graph.stages:
        if st.storage is not None and st in params:
            raise ScheduleError(f"stage {st.name}: store_in of a stage passed as an argument "
                                f"of the function: its buffer is the caller's; store_in a "
                                f"stage that is not an argument")
    attached: dict[IterVar, list[Stage]] = {}
    for st in graph.stages:
        if st.attach_type == SCOPE:
            attached.setdefault(st.attach_ivar, []).append(st)
    builder = _Builder(ctx, attached, params)
    roots = [st for st in graph.stages if st.attach_type == ROOT]
    items = top_level_items(graph, roots)
    for item in items:
        if isinstance(item, SharedLoop):
            check_dependences(ctx, item)
    check_folds(ctx, items)
    body = seq(*[builder.emit(item, {}) for item in items])
    for st in reversed(roots):
        if st not in params:
            body = Realize(st.tensor, tuple(ctx.rmap[iv] for iv in st.op.axis), body, st.scope)
    return apply_storage_maps(body, graph.stages)


class _Builder:
    def __init__(self, ctx: BoundContext, attached: dict, params: set):
        self.ctx, self.attached, self.params = ctx, attached, params

    def emit(self, item, guards: dict) -> Stmt:
        """The statement of a top-level item (loop_sharing): a stage's nest, or a loop
        that several stages share; `guards` keep each stage inside its own range of the
        shared loops around it."""
        if isinstance(item, StageItem):
            return _guarded(guards.get(item.stage, []), self.stage_nest(item.stage, item.level))
        rmap, level = self.ctx.rmap, item.level
        leaves = {m: m.leaf_iter_vars[level] for m in item.members}
        ranges = [rmap[leaf] for leaf in leaves.values()]
        lo, hi = ranges[0].min, ranges[0].min + ranges[0].extent
        for r in ranges[1:]:
            lo, hi = E.Min(lo, r.min), E.Max(hi, r.min + r.extent)
        lo, extent = simplify(lo, self.ctx.bounds), simplify(hi - lo, self.ctx.bounds)
        u = E.Var(leaves[item.members[0]].name)
        bounds = dict(self.ctx.bounds)
        bounds[u] = loop_bounds(E.const(0), extent, bounds)
        inner = dict(guards)
        for m, leaf in leaves.items():
            conds = [simplify(lo + u >= rmap[leaf].min, bounds),
                     simplify(lo + u < rmap[leaf].min + rmap[leaf].extent, bounds)]
            inner[m] = guards.get(m, []) + [c for c in conds
                                            if not (isinstance(c, E.IntImm) and c.value)]
        body = seq(*[self.emit(child, inner) for child in item.children])
        for m, leaf in reversed(leaves.items()):
            for child in reversed(self.attached.get(leaf, [])):
                # computed first in the shared iteration, allocated around what reads it
                body = self._realized(child, _guarded(inner[m], self.stage_nest(child)), body)
        body = substitute(body, {leaf.var: lo + u for leaf in leaves.values()})
        kinds = {m.iter_var_attrs.get(leaf, SERIAL) for m, leaf in leaves.items()} - {SERIAL}
        if len(kinds) > 1:
            raise ScheduleError(
                f"stages {', '.join(m.name for m in item.members)} share loop "
                f"{leaves[item.members[0]].name} but annotate it differently "
                f"({', '.join(sorted(kinds))}); annotate it on one of them, or alike")
        pragmas = tuple(p for m, leaf in leaves.items() for p in m.pragmas.get(leaf, ()))
        return For(u, E.const(0), extent, kinds.pop() if kinds else SERIAL, body, pragmas)

    def _realized(self, child: Stage, nest: Stmt, rest: Stmt) -> Stmt:
        """`nest` (computing `child`) then `rest`, inside the Realize of child's region."""
        if child in self.params:
            return seq(nest, rest)
        region = tuple(self.ctx.rmap[iv] for iv in child.op.axis)
        return Realize(child.tensor, region, seq(nest, rest), child.scope)

    def stage_nest(self, st: Stage, start: int = 0) -> Stmt:
        """`st`'s loop nest from leaf `start` on; the leaves before it are loops it shares
        with other stages (loop_sharing), made by `emit`."""
        rmap, bounds = self.ctx.rmap, dict(self.ctx.bounds)
        value: dict[IterVar, E.Expr] = {}
        loops = []  # (leaf, For-or-None)
        for pos, leaf in enumerate(st.leaf_iter_vars):
            r = rmap[leaf]
            if pos < start:
                value[leaf] = leaf.var
                bounds[leaf.var] = loop_bounds(r.min, r.extent, bounds)
            elif const_bound(r.extent, bounds) == (1, 1):
                value[leaf] = r.min
                loops.append((leaf, None))
            else:
                value[leaf] = leaf.var
                bounds[leaf.var] = loop_bounds(r.min, r.extent, bounds)
                loops.append((leaf, r))
        guards = pass_up_index(st, value, rmap, bounds)
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
                    body = self._realized(child, self.stage_nest(child), body)
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


def _guarded(conds: list[E.Expr], body: Stmt) -> Stmt:
    if not conds:
        return body
    cond = conds[0]
    for c in conds[1:]:
        cond = E.And(cond, c)
    return IfThenElse(cond, body)
