"""Bound inference: a Range for every IterVar of every stage (reference: InferBound).

Stages are visited consumers first. InferRootBound asks every consumer which region of
the stage's output it reads — Phase 1 sets the consumer's leaf loops to single points
(at and above the attach point) or their full ranges (below it), Phase 2 passes those
sets up to the consumer's root axes (PassUpDomain), Phase 3 evaluates the consumer's
indices into the stage's tensor, Phase 4 takes the union. PassDownDomain then gives the
split / fused / rebased loops their ranges.

Two places do better than the reference:
- PassUpDomain through a Fuse recovers a rectangle from a contiguous run of the fused
  loop (fuse-then-split no longer computes the whole tensor per iteration);
- a split that does not divide clamps the parent's set to its range, so the last outer
  iteration requests only the elements that exist.
"""
from __future__ import annotations

from math import gcd

from ..arith.int_set import IntervalSet, eval_set, intersect_range, union
from ..arith.simplify import (INF, Linear, const_bound, const_upper_bound, loop_bounds,
                              simplify)
from ..errors import ScheduleError
from ..ir import expr as E
from ..ir.functor import collect
from ..ir.range import Range
from ..lang.tensor import IterVar
from .graph import StageGraph
from .relations import Fuse, Rebase, Shift, Split
from .stage import SCOPE, Stage


class BoundContext:
    """Ranges found so far, with constant bounds of every variable for simplification."""

    def __init__(self, sch):
        self.graph = StageGraph(sch)
        self.rmap: dict[IterVar, Range] = {}
        self.size_vars = _size_vars(sch)
        self.bounds: dict[E.Var, tuple] = {v: (1, INF) for v in self.size_vars}

    def set_range(self, iv: IterVar, r: Range):
        r = Range(simplify(r.min, self.bounds), simplify(r.extent, self.bounds))
        self.rmap[iv] = r
        lo, hi = loop_bounds(r.min, r.extent, self.bounds)
        if iv.dom is not None:
            dlo, dhi = loop_bounds(iv.dom.min, iv.dom.extent, self.bounds)
            lo, hi = max(lo, dlo), min(hi, dhi)
        self.bounds[iv.var] = (lo, hi)

    def simplify(self, e: E.Expr) -> E.Expr:
        return simplify(e, self.bounds)


def _size_vars(sch) -> set:
    out = set()
    for st in sch.stages:
        for t in [st.tensor] + st.op.input_tensors():
            for d in t.shape:
                out |= set(collect(d, lambda n: isinstance(n, E.Var)))
    return out


def infer_bound(sch) -> dict[IterVar, Range]:
    """The Range of every IterVar of every (non-inlined) stage of `sch`."""
    return infer_bound_context(sch).rmap


def infer_bound_context(sch) -> BoundContext:
    """infer_bound, keeping the stage graph and variable bounds for schedule_ops."""
    ctx = BoundContext(sch)
    for st in ctx.graph.stages:
        _check_attachment(ctx, st)
    for st in reversed(ctx.graph.stages):
        _infer_root_bound(ctx, st)
        _pass_down_domain(ctx, st)
    return ctx


def _check_attachment(ctx: BoundContext, st: Stage):
    if st.attach_type != SCOPE:
        return
    if st.attach_ivar not in st.attach_stage.leaf_iter_vars:
        raise ScheduleError(
            f"stage {st.name} is computed at axis {st.attach_ivar.name} of stage "
            f"{st.attach_stage.name}, which is no longer one of its loops (it was fused "
            f"afterwards); compute_at one of {st.attach_stage.name}'s current loops: "
            f"{', '.join(iv.name for iv in st.attach_stage.leaf_iter_vars)}")
    for c in ctx.graph.consumers[st]:
        if c is not st.attach_stage and st.attach_ivar not in ctx.graph.attach_path(c):
            raise ScheduleError(
                f"stage {st.name} is computed inside loop {st.attach_ivar.name} of stage "
                f"{st.attach_stage.name}, but its consumer {c.name} runs outside that loop; "
                f"compute_at {c.name} inside it too, or attach {st.name} to {c.name}")


# ------------------------------------------------------------------ InferRootBound

def _infer_root_bound(ctx: BoundContext, st: Stage):
    consumers = ctx.graph.consumers[st]
    for iv in st.op.reduce_axis:
        ctx.set_range(iv, iv.dom)
    if st.is_output or not consumers:
        for iv in st.op.axis:
            ctx.set_range(iv, iv.dom)
        return
    requests: list[list[IntervalSet]] = [[] for _ in st.op.axis]
    for consumer in consumers:
        for dim, s in enumerate(_consumer_request(ctx, st, consumer)):
            requests[dim].extend(s)
    for dim, iv in enumerate(st.op.axis):
        region = intersect_range(union(requests[dim], ctx.bounds), iv.dom, ctx.bounds)
        ctx.set_range(iv, region.cover_range(iv.dom, ctx.bounds))


def _consumer_request(ctx: BoundContext, st: Stage, consumer: Stage) -> list[list[IntervalSet]]:
    """Phases 1-3: the regions of `st`'s output that `consumer` reads, per dimension."""
    rmap = ctx.rmap
    attached_here = st.attach_type == SCOPE and st.attach_stage is consumer
    attach_pos = consumer.leaf_iter_vars.index(st.attach_ivar) if attached_here else -1
    # Phase 1: leaves of the consumer.
    up: dict[IterVar, IntervalSet] = {}
    for pos, leaf in enumerate(consumer.leaf_iter_vars):
        r = rmap[leaf]
        if const_bound(r.extent, ctx.bounds) == (1, 1):
            up[leaf] = IntervalSet.point(r.min)
        elif pos <= attach_pos:
            up[leaf] = IntervalSet.point(leaf.var)
        else:
            up[leaf] = IntervalSet.from_range(r, ctx.bounds)
    # Phase 2: up to the consumer's roots.
    for rel in reversed(consumer.relations):
        _pass_up(ctx, rel, up)
    dom_map = {iv.var: up[iv] for iv in consumer.op.root_iter_vars}
    # Loops enclosing the consumer but inside st's attach point run while st's region
    # stays fixed: relax them to their ranges.
    relax = {}
    found = attached_here
    for iv in ctx.graph.attach_path(consumer):
        if iv is st.attach_ivar:
            found = True
        if not found:
            relax[iv.var] = IntervalSet.from_range(rmap[iv], ctx.bounds)
    # Phase 3: the consumer's reads of st.
    out: list[list[IntervalSet]] = [[] for _ in st.op.axis]
    for load in ctx.graph.loads(consumer, of=st):
        for dim, index in enumerate(load.indices):
            s = eval_set(index, dom_map, ctx.bounds)
            if relax:
                lo = None if s.min is None else eval_set(s.min, relax, ctx.bounds).min
                hi = None if s.max is None else eval_set(s.max, relax, ctx.bounds).max
                s = IntervalSet(lo, hi)
            out[dim].append(s)
    return out


def _pass_up(ctx: BoundContext, rel, up: dict):
    rmap = ctx.rmap
    match rel:
        case Split(parent=p, outer=o, inner=i):
            so, si = up[o], up[i]
            if so.matches(rmap[o], ctx.bounds) and si.matches(rmap[i], ctx.bounds):
                up[p] = IntervalSet.from_range(rmap[p], ctx.bounds)
                return
            s = eval_set(o.var * rmap[i].extent + i.var + rmap[p].min,
                         {o.var: so, i.var: si}, ctx.bounds)
            up[p] = intersect_range(s, rmap[p], ctx.bounds)
        case Fuse(outer=o, inner=i, fused=f):
            up[o], up[i] = _pass_up_fuse(ctx, rel, up[f])
        case Rebase(parent=p, rebased=r):
            s = up[r]
            pmin = rmap[p].min
            up[p] = IntervalSet(None if s.min is None else ctx.simplify(s.min + pmin),
                                None if s.max is None else ctx.simplify(s.max + pmin))
        case Shift(parent=p, shifted=t, amount=amount):
            s = up[t]
            up[p] = IntervalSet(None if s.min is None else ctx.simplify(s.min - amount),
                                None if s.max is None else ctx.simplify(s.max - amount))


def _pass_up_fuse(ctx: BoundContext, rel: Fuse, s: IntervalSet):
    """The (outer, inner) sets that cover the fused set `s`.

    A run [lo, hi] of the fused loop covers rows lo // n .. hi // n of the inner extent
    n. When the run provably stays inside one row, that is one row and a column range;
    otherwise it is the fewest whole rows that any run can touch, kept inside the
    outer range. Either way a rectangle, the smallest that works for every iteration.
    """
    rmap, b = ctx.rmap, ctx.bounds
    ro, ri = rmap[rel.outer], rmap[rel.inner]
    full = (IntervalSet.from_range(ro, b), IntervalSet.from_range(ri, b))
    if s.matches(rmap[rel.fused], b) or s.min is None or s.max is None:
        return full
    n = ri.extent
    if not isinstance(n, E.IntImm):
        return full
    n = n.value
    lo = ctx.simplify(s.min)
    if s.is_point():
        return (IntervalSet.point(ctx.simplify(lo // n + ro.min)),
                IntervalSet.point(ctx.simplify(lo % n + ri.min)))
    length = const_upper_bound(s.max - s.min + 1, b)
    if length is None:
        return full
    lin = Linear(lo.dtype).add(lo, 1)
    g = n
    for _, c in lin.items():
        g = gcd(g, c)
    base = lin.const % g
    if base + length <= g:
        col = ctx.simplify(lo % n)
        return (IntervalSet.point(ctx.simplify(lo // n + ro.min)),
                IntervalSet(ctx.simplify(col + ri.min),
                            ctx.simplify(col + (s.max - s.min) + ri.min)))
    rows = (n - g + base + length - 1) // n + 1
    outer_ub = const_upper_bound(ro.extent, b)
    if outer_ub is not None:
        rows = min(rows, outer_ub)
    first = ctx.simplify(E.Min(lo // n, ro.extent - rows) + ro.min)
    return IntervalSet(first, ctx.simplify(first + (rows - 1))), full[1]


# ------------------------------------------------------------------ PassDownDomain

def _pass_down_domain(ctx: BoundContext, st: Stage):
    rmap = ctx.rmap
    for rel in st.relations:
        match rel:
            case Split(parent=p, outer=o, inner=i, factor=factor, nparts=nparts):
                ext = rmap[p].extent
                if factor is not None:
                    ub = const_upper_bound(ext, ctx.bounds)
                    inner = factor if ub is None else max(1, min(factor, ub))
                    outer = (ext + (inner - 1)) // inner
                else:
                    outer, inner = E.const(nparts), (ext + (nparts - 1)) // nparts
                ctx.set_range(o, Range(E.const(0), E.convert(outer)))
                ctx.set_range(i, Range(E.const(0), E.convert(inner)))
            case Fuse(outer=o, inner=i, fused=f):
                ctx.set_range(f, Range(E.const(0), rmap[o].extent * rmap[i].extent))
            case Rebase(parent=p, rebased=r):
                ctx.set_range(r, Range(E.const(0), rmap[p].extent))
            case Shift(parent=p, shifted=t, amount=amount):
                ctx.set_range(t, Range(rmap[p].min + amount, rmap[p].extent))
