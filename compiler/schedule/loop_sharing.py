"""Loops shared through Stage.after / before (Tiramisu's sched_graph and after_low_level):
which top-level stages share which loops, in what order, and the check that the order
reads no value before it is written.

The shared loops form a tree. A `SharedLoop` at level l is loop l of every stage in
`members`; its `children` run in order in its body: shared loops one level down, and
`StageItem`s, a stage's own loops from `level` on. `C.after(B, axis)` (axis at B's level
k - 1) puts C into the shared loops containing B down to level k - 1 and its own loops
just after B's item there (`before`: just before); links are applied parents first, in
the order they were made, so that two stages after the same one keep their call order.

One loop serves every member: it runs over the union of their ranges (each stage's
leaf in its own coordinates; `shift` moves one), and schedule_ops guards each stage to
its own range. Legality is checked per read of one member by another (dependence
distances, as Tiramisu's users would reason about them): at the first shared level
where the reader's iteration can differ from the writer's, it must be later; if it can
be the same at every shared level, the writer's body must come first. Distances are
bounded by intervals (with and without what the guards of splits that do not divide
say), so the check errs on the side of refusing.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ..arith.simplify import INF, const_bound, loop_bounds, simplify
from ..errors import ScheduleError
from ..ir.functor import substitute
from ..ir.stmt import PARALLEL
from ..lang.tensor import REDUCE
from .relations import pass_down_index, pass_up_index
from .stage import ROOT, SCOPE, Stage


@dataclass(eq=False)
class StageItem:
    stage: Stage
    level: int               # the stage's own loops start here
    anchor: tuple = ()       # (stage, order) of the link that placed it


@dataclass(eq=False)
class SharedLoop:
    level: int
    members: list
    children: list = field(default_factory=list)
    anchor: tuple = ()


def _holds(item, st: Stage) -> bool:
    return item.stage is st if isinstance(item, StageItem) else st in item.members


def top_level_items(graph, roots: list[Stage]) -> list:
    """The top-level stages in order, those that share loops grouped into one SharedLoop
    each; raises ScheduleError for links that cannot be honoured or are not legal."""
    linked = [st for st in roots if st.loop_link]
    for st in linked:
        _check_link(st)
    items = [StageItem(st, 0) for st in roots if not st.loop_link]
    pending = sorted(linked, key=lambda st: st.loop_link[3])
    placed = {it.stage for it in items}
    while pending:
        st = next(s for s in pending if s.loop_link[0] in placed)
        pending.remove(st)
        other, axis, order, _ = st.loop_link
        _insert(items, st, other, other.leaf_iter_vars.index(axis) + 1, order, 0)
        placed.add(st)
    order = {st: k for k, st in enumerate(graph.stages)}

    def members(item):
        return [item.stage] if isinstance(item, StageItem) else item.members
    items.sort(key=lambda it: max(order[m] for m in members(it)))
    for k, item in enumerate(items):
        if isinstance(item, SharedLoop):
            _check_readers(graph, items[:k], item)
    return items


def _check_link(st: Stage):
    other, axis, order, _ = st.loop_link
    if other.attach_type != ROOT:
        raise ScheduleError(f"stage {st.name} runs {order} stage {other.name}, which is "
                            f"computed inside another stage (compute_at / compute_inline); "
                            f"shared loops are top-level loops")
    if axis not in other.leaf_iter_vars:
        raise ScheduleError(f"stage {st.name} runs {order} stage {other.name} at axis "
                            f"{axis.name}, which is no longer one of its loops (split or "
                            f"fused afterwards); name one of {other.name}'s current loops: "
                            f"{', '.join(iv.name for iv in other.leaf_iter_vars)}")
    k = other.leaf_iter_vars.index(axis) + 1
    if len(st.leaf_iter_vars) < k:
        raise ScheduleError(f"stage {st.name} has {len(st.leaf_iter_vars)} loops; running "
                            f"{order} stage {other.name} at axis {axis.name} shares {k}")
    for s in (st, other):
        for iv in s.leaf_iter_vars[:k]:
            if iv.iter_type == REDUCE:
                raise ScheduleError(f"stage {st.name} runs {order} stage {other.name} at "
                                    f"axis {axis.name}: the shared loop {iv.name} of stage "
                                    f"{s.name} is a reduction; share data-parallel loops only")


def _insert(items: list, st: Stage, other: Stage, k: int, order: str, level: int):
    pos = next(n for n, it in enumerate(items) if _holds(it, other))
    if level == k:
        if order == "after":
            pos += 1
            while pos < len(items) and items[pos].anchor[:2] == (other, "after"):
                pos += 1
        items.insert(pos, StageItem(st, k, (other, order)))
        return
    item = items[pos]
    if isinstance(item, StageItem):
        item = items[pos] = SharedLoop(level, [other], [StageItem(other, level + 1)],
                                       item.anchor)
    item.members.append(st)
    _insert(item.children, st, other, k, order, level + 1)


def computed_inside(graph, st: Stage) -> list[Stage]:
    """The stages computed at loops of `st` (compute_at), and at theirs, and so on."""
    inside = [x for x in graph.stages if x.attach_type == SCOPE and x.attach_stage is st]
    return inside + [y for x in inside for y in computed_inside(graph, x)]


def _check_readers(graph, before: list, group: SharedLoop):
    """No stage that runs before the group (nor one computed inside it) reads one of its
    members."""
    for item in before:
        readers = [item.stage] if isinstance(item, StageItem) else item.members
        for r in readers + [x for st in readers for x in computed_inside(graph, st)]:
            for m in group.members:
                if graph.loads(r, of=m):
                    others = ", ".join(x.name for x in group.members if x is not m)
                    raise ScheduleError(
                        f"stage {r.name} reads stage {m.name}, but runs before it: "
                        f"{m.name} shares loops with {others}, which run after "
                        f"{r.name}; share loops with {r.name} too")


# ------------------------------------------------------------------ legality

def check_dependences(ctx, group: SharedLoop):
    """Every read of a member by another member happens after the write (module doc). A
    stage computed inside a member (compute_at) may not read another member: its reads
    are not checked, so they are refused."""
    graph = ctx.graph
    for consumer in group.members:
        for inner in computed_inside(graph, consumer):
            for producer in group.members:
                if producer is not consumer and graph.loads(inner, of=producer):
                    raise ScheduleError(
                        f"stage {inner.name} is computed inside stage {consumer.name} "
                        f"(compute_at) and reads stage {producer.name}, which shares loops "
                        f"with {consumer.name}: its reads cannot be checked against the "
                        f"shared loops; compute {inner.name} at the root, or inline it")
        for producer in group.members:
            if producer is consumer or not graph.loads(consumer, of=producer):
                continue
            path, producer_first = shared_path(group, producer, consumer)
            for load in graph.loads(consumer, of=producer):
                _check_read(ctx, producer, consumer, load, path, producer_first)


def shared_path(node: SharedLoop, a: Stage, b: Stage) -> tuple[list, bool]:
    """The SharedLoops that `a` and `b` both run in, outermost first, and whether `a`'s
    body runs first inside them."""
    path = []
    while True:
        path.append(node)
        ia = next(n for n, it in enumerate(node.children) if _holds(it, a))
        ib = next(n for n, it in enumerate(node.children) if _holds(it, b))
        if ia != ib:
            return path, ia < ib
        node = node.children[ia]


def shared_depth(node: SharedLoop, a: Stage, b: Stage) -> tuple[int, bool]:
    """How many loops `a` and `b` share, and whether `a`'s body runs first inside them."""
    path, a_first = shared_path(node, a, b)
    return len(path), a_first


def _check_read(ctx, producer: Stage, consumer: Stage, load, path: list, producer_first):
    """The read is legal if either bound of the distances proves it: the one from the
    consumer's loop ranges, or the one that also knows a split's guard holds (a split
    that does not divide, as `split(nparts=2)` of 4094 columns: the column then stays
    below 4094, so the block it falls in is the consumer's own). Each is a superset of the
    iterations that run, so either proof is sound."""
    try:
        _check_read_bounded(ctx, producer, consumer, load, path, producer_first, False)
    except ScheduleError:
        try:
            _check_read_bounded(ctx, producer, consumer, load, path, producer_first, True)
        except ScheduleError:
            pass
        else:
            return
        raise


def _check_read_bounded(ctx, producer, consumer, load, path, producer_first, relax):
    rmap = ctx.rmap
    bounds = dict(ctx.bounds)
    value = {}
    for leaf in consumer.leaf_iter_vars:
        value[leaf] = leaf.var
        bounds[leaf.var] = loop_bounds(rmap[leaf].min, rmap[leaf].extent, bounds)
    pass_up_index(consumer, value, rmap, bounds, relax=relax)
    vmap = {iv.var: value[iv] for iv in consumer.op.root_iter_vars}
    index = [substitute(i, vmap) for i in load.indices]
    written = pass_down_index(producer, dict(zip(producer.op.axis, index)), rmap)
    depth = len(path)
    for level, node in enumerate(path):
        leaf = consumer.leaf_iter_vars[level]
        lo, hi = const_bound(simplify(leaf.var - written[producer.leaf_iter_vars[level]],
                                      bounds), bounds)
        shared = producer.leaf_iter_vars[level]
        if lo == -INF or lo < 0:
            raise ScheduleError(
                f"stage {consumer.name} shares loops with stage {producer.name} down to "
                f"axis {producer.leaf_iter_vars[depth - 1].name}, but at loop "
                f"{shared.name} it would read values of {producer.name} before "
                f"{producer.name} writes them (a dependence violated); shift "
                f"{consumer.name}'s loop later, or share fewer loops")
        # The shared loop runs as any stage in it asks (schedule_ops), a third one too.
        kinds = {m.iter_var_attrs.get(m.leaf_iter_vars[level]) for m in node.members}
        if hi > 0 and PARALLEL in kinds:
            raise ScheduleError(
                f"stage {consumer.name} reads values that stage {producer.name} writes in "
                f"earlier iterations of the shared parallel loop {shared.name}: the "
                f"threads would race; do not parallelize it, or share fewer loops")
        if lo > 0:
            return
    if not producer_first:
        raise ScheduleError(
            f"stage {consumer.name} runs before stage {producer.name} in their shared loops "
            f"down to axis {producer.leaf_iter_vars[depth - 1].name}, but reads values "
            f"{producer.name} writes in the same iteration (a dependence violated); run "
            f"{consumer.name} after {producer.name}")
