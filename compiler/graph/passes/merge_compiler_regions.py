"""MergeCompilerRegions: neighbouring regions of one external target become one region,
unless that would make a cycle (TVM's MergeCompilerRegions).

Two regions of one target where one feeds the other may merge only when no path
between them leaves the target: if A (cblas) feeds X (default) which feeds B (cblas),
and A feeds B too, a merged A+B would both feed X and read it. So the regions are
visited in topological order (post-order of their ops), and each keeps its
*restrictions*: the regions it must not merge with. A region inherits the restrictions
of every region that feeds it and adds each feeding region of another target; then it
merges with every feeding region of its own target that is not among them. A region
read through a node of no region (a tuple, a call of a function) is barred too. The
DEFAULT regions are never merged: those ops stay the build's, one by one.
"""
from __future__ import annotations

from .annotation import DEFAULT, annotate, is_annotation, is_region_op, read_regions, strip
from ..ir.expr import Function
from ..ir.functor import operands


def merge_compiler_regions(func: Function) -> Function:
    """`func` (annotated) with its regions merged (see the module docstring)."""
    regions, region_of = read_regions(func.body)
    index = {id(r): k for k, r in enumerate(regions)}
    parent = list(range(len(regions)))

    def find(k: int) -> int:
        while parent[k] != k:
            parent[k] = parent[parent[k]]
            k = parent[k]
        return k

    restrictions: list[set] = [set() for _ in regions]

    def walk(e, feeders: set, foreign: set, through: bool) -> None:
        """Sort what `e` reads: the regions it reads directly (`feeders`), and those
        it reads through a node of no region (a tuple, a call of a function), which
        are barred like a region of another target (`foreign`). (On a stack of its own:
        a path through nodes of no region may be thousands of ops long.)"""
        todo = [(e, through)]
        while todo:
            e, through = todo.pop()
            if is_annotation(e):
                todo.append((e.args[0], through))
            elif is_region_op(e):
                r = find(index[id(region_of[id(e)])])
                (foreign if through else feeders).add(r)
                if through:
                    foreign.update(restrictions[r])
            else:
                todo.extend((o, True) for o in operands(e))

    def barred_of(me):
        """The regions `me` must not merge with: those it reads through a node outside
        it, and, transitively, whatever those read. Each set is gathered when its region
        is visited, so a merge made later (a feeder joining a region below it) shows only
        through the closure."""
        out, todo = set(), [me]
        while todo:
            for q in restrictions[todo.pop()]:
                q = find(q)
                if q != me and q not in out:
                    out.add(q)
                    todo.append(q)
        return out

    for region in regions:  # in post-order of their first op: feeders come first
        for node in region.nodes:
            me = find(index[id(region)])
            feeders, foreign = set(), set()
            for a in node.args:
                walk(a, feeders, foreign, False)
            feeders.discard(me)
            restrictions[me] |= foreign - {me}
            for f in feeders:
                restrictions[me] |= restrictions[f]
                if regions[f].target != regions[me].target:
                    restrictions[me].add(f)
            if regions[me].target == DEFAULT:
                continue
            for f in sorted(feeders):
                me = find(me)
                barred = barred_of(me)
                if regions[f].target != regions[me].target or f in barred:
                    continue
                parent[f] = me
                restrictions[me] |= restrictions[f]

    body, was = strip(func.body)
    key = {id(n): find(index[id(region_of[id(n)])]) for r in regions for n in r.nodes}

    def region_key(call):
        return key[was[id(call)]]

    def target_of(call):
        return regions[region_key(call)].target
    return Function(func.params, annotate(body, region_key, target_of), func.ret_type,
                    func.attrs)
