"""Whether a folding store_in is legal: Tiramisu's `c(i % 2, j % 2)` puts several
elements of a stage on one slot of its buffer, which is right only if no value is
overwritten while it may still be read. That depends on where the stage is computed:

- at a loop of its consumer (compute_at): the stage's region is computed afresh in every
  iteration of the loops around it and read only there, so the map must be one-to-one on
  each iteration's region (the one bound inference gives, clipped to the domain);
- in loops it shares with its readers (after / before): an element is written in one
  iteration of the shared loops and read in that or later ones. Every element gets the
  time it is written and the time it is last read, in the order the shared loops run
  (the loops' values, then which body runs first); two elements on one slot must not be
  live at once, nor be written in different iterations of a parallel shared loop (the
  threads would race on the slot);
- in full, before its readers run: every value is live until then, so no fold is legal.

The checks enumerate the elements and the readers' iterations (storage_map.MAX_CHECKED
each at most). They err on the side of refusing: every combination of the outer loops'
values counts as an iteration, and a reader that does not share loops with the stage
counts as reading every element last.
"""
from __future__ import annotations

import numpy as np

from ..errors import ScheduleError
from ..ir.functor import free_vars
from ..ir.stmt import PARALLEL
from .loop_sharing import SharedLoop, StageItem, shared_depth
from .relations import pass_down_index
from .stage import INLINE, SCOPE, Stage
from .storage_map import MAX_CHECKED, domain_points, evaluate_at, flat_slots, grid


def check_folds(ctx, items: list):
    """Raise ScheduleError for a folding store_in that would overwrite a live value."""
    for st in ctx.graph.stages:
        if st.storage is None or st.storage.fold is None or st.attach_type == INLINE:
            continue
        if st.attach_type == SCOPE:
            _check_per_iteration(ctx, st)
            continue
        group = next((it for it in items if isinstance(it, SharedLoop) and st in it.members),
                     None)
        outside = [r for r in _readers(ctx, st) if group is None or r not in group.members]
        if outside:
            a, b, slot = st.storage.fold
            raise ScheduleError(
                f"stage {st.name}: store_in folds elements {a} and {b} onto one slot {slot} "
                f"({_differ(st, a, b)}), but stage {outside[0].name} reads {st.name} after "
                f"all of it is computed, so {a} would be overwritten before it is read; fold "
                f"a stage computed at its reader (compute_at) or sharing loops with it (after)")
        if group is not None:
            _check_shared(ctx, st, group)


def _readers(ctx, st: Stage) -> list[Stage]:
    return [r for r in ctx.graph.stages
            if r is not st and r.attach_type != INLINE and ctx.graph.loads(r, of=st)]


def _differ(st: Stage, a: tuple, b: tuple) -> str:
    names = [iv.name for iv, x, y in zip(st.op.axis, a, b) if x != y]
    return f"they differ on axis {', '.join(names)}"


def _fold_error(st: Stage, where: str, points, coords, a: int, b: int) -> ScheduleError:
    pa = tuple(int(p) for p in points[:, a])
    pb = tuple(int(p) for p in points[:, b])
    slot = tuple(int(c[a]) for c in coords)
    return ScheduleError(f"stage {st.name}: store_in folds elements {pa} and {pb} onto one "
                         f"slot {slot} ({_differ(st, pa, pb)}), but {where}; fold over more "
                         f"elements, or compute {st.name} elsewhere")


# ------------------------------------------------------------------ compute_at

def _check_per_iteration(ctx, st: Stage):
    """The map is one-to-one on the region computed in each iteration of the attach loops."""
    where = f"stage {st.name}: store_in"
    axes = st.op.axis
    region = [ctx.rmap[iv] for iv in axes]
    outer = sorted(set().union(*(free_vars(r.min) | free_vars(r.extent) for r in region)),
                   key=lambda v: v.name)
    ranges = [ctx.bounds.get(v, (None, None)) for v in outer]
    if any(not isinstance(x, int) for lo_hi in ranges for x in lo_hi):
        raise ScheduleError(f"{where}: the region of {st.name} depends on loops of unknown "
                            f"extent ({', '.join(v.name for v in outer)}); a folding map "
                            f"needs constant ones")
    sizes = [hi - lo + 1 for lo, hi in ranges]
    if int(np.prod(sizes, dtype=np.int64)) > MAX_CHECKED:
        raise ScheduleError(f"{where}: too many iterations of the loops around {st.name} to "
                            f"check the folding map on")
    # no outer loops: one region, the same in every iteration
    loops = grid([lo for lo, _ in ranges], sizes) if outer else np.zeros((0, 1), np.int64)
    bounds = evaluate_at([r.min for r in region] + [r.extent for r in region], outer, loops,
                         where)
    iters = np.unique(np.stack(bounds), axis=1)  # one column per distinct region
    starts, extents = iters[:len(axes)], iters[len(axes):]
    box = [int(e.max()) for e in extents]
    if iters.shape[1] * int(np.prod(box)) > MAX_CHECKED:
        raise ScheduleError(f"{where}: too many elements in the regions of {st.name} to check "
                            f"the folding map on")
    offsets = grid([0] * len(axes), box)[:, None, :]
    points = starts[:, :, None] + offsets                   # axis, iteration, box point
    valid = (offsets < extents[:, :, None]).all(axis=0)
    for k, iv in enumerate(axes):
        lo, ext = iv.dom.min.value, iv.dom.extent.value
        valid &= (points[k] >= lo) & (points[k] < lo + ext)
    points = np.where(valid[None], points, np.array([iv.dom.min.value for iv in axes])
                      .reshape(-1, 1, 1)).reshape(len(axes), -1)
    coords = evaluate_at(st.storage.exprs, [iv.var for iv in axes], points, where)
    slots = flat_slots(coords, st.storage.shape).reshape(valid.shape)
    slots = np.where(valid, slots, -1 - np.arange(valid.size).reshape(valid.shape))
    ordered = np.sort(slots, axis=1)
    dup = np.argwhere(ordered[:, 1:] == ordered[:, :-1])
    if dup.size:
        it, k = dup[0]
        a, b = np.flatnonzero(slots[it] == ordered[it, k])[:2] + it * valid.shape[1]
        loop = st.attach_ivar.name
        raise _fold_error(st, f"both are computed, and live, in one iteration of loop {loop} "
                          f"of stage {st.attach_stage.name}, where {st.name} is computed at",
                          points, coords, a, b)


# ------------------------------------------------------------------ after / before

def _own_level(node, st: Stage) -> int:
    """How many loops `st` shares (the level its own loops start at)."""
    for child in node.children:
        if isinstance(child, StageItem) and child.stage is st:
            return child.level
        if isinstance(child, SharedLoop) and st in child.members:
            return _own_level(child, st)
    raise AssertionError(f"{st.name} is not in the shared loops")


def _leaf_values(ctx, st: Stage, ivs, points, levels: int, where: str) -> list:
    """The values of `st`'s first `levels` loops at each point of its root IterVars."""
    value = pass_down_index(st, {iv: iv.var for iv in st.op.root_iter_vars}, ctx.rmap)
    return evaluate_at([value[leaf] for leaf in st.leaf_iter_vars[:levels]],
                       [iv.var for iv in ivs], points, where)


def _check_shared(ctx, st: Stage, group: SharedLoop):
    """No element is overwritten before its last read in the shared loops (module doc)."""
    where = f"stage {st.name}: store_in"
    axes = st.op.axis
    depth = _own_level(group, st)
    points = domain_points(axes, where)
    written = _leaf_values(ctx, st, axes, points, depth, where) + \
        [np.zeros(points.shape[1], np.int64)]
    mins = np.array([iv.dom.min.value for iv in axes]).reshape(-1, 1)
    dims = tuple(iv.dom.extent.value for iv in axes)
    reads = []  # (time tuple, element ids)
    for r in _readers(ctx, st):
        shared, st_first = shared_depth(group, st, r)
        rivs = r.op.root_iter_vars
        rpoints = domain_points(rivs, f"stage {st.name}: store_in, its reader {r.name},")
        time = _leaf_values(ctx, r, rivs, rpoints, shared, where)
        time += [None] * (depth + 1 - shared)  # then after (before) every write there
        for load in ctx.graph.loads(r, of=st):
            elem = np.stack(evaluate_at(load.indices, [iv.var for iv in rivs], rpoints,
                                        where)) - mins
            inside = ((elem >= 0) & (elem < np.array(dims).reshape(-1, 1))).all(axis=0)
            ids = np.ravel_multi_index(np.where(inside, elem, 0), dims)
            reads.append(([t if t is None else t[inside] for t in time], ids[inside],
                          st_first))
    # Times as one integer: the shared loops' values in mixed radix, then the phase.
    lows = [int(w.min(initial=0)) for w in written]
    highs = [int(w.max(initial=0)) for w in written]
    for time, _, _ in reads:
        for k, t in enumerate(time):
            if t is not None and t.size:
                lows[k], highs[k] = min(lows[k], int(t.min())), max(highs[k], int(t.max()))
    radix = [h - lo + 3 for lo, h in zip(lows, highs)]  # one below and one above the range
    if np.prod([float(x) for x in radix]) > 2.0 ** 62:
        raise ScheduleError(f"{where}: the shared loops of {st.name} are too long to check "
                            f"the folding map on")

    def encode(time, first):
        key = 0
        for t, lo, base in zip(time, lows, radix):
            digit = (base - 1 if first else 0) if t is None else t - lo + 1
            key = key * base + digit
        return key
    write = encode(written, True) * np.ones(points.shape[1], np.int64)
    last = write.copy()
    for time, ids, st_first in reads:
        np.maximum.at(last, ids, encode(time, st_first) * np.ones(ids.size, np.int64))
    coords = evaluate_at(st.storage.exprs, [iv.var for iv in axes], points, where)
    slots = flat_slots(coords, st.storage.shape)
    order = np.lexsort((write, slots))
    s, w, lr = slots[order], write[order], last[order]
    same = s[1:] == s[:-1]
    clash = same & ((lr[:-1] > w[1:]) | ((w[:-1] == w[1:]) & (lr[1:] > w[1:])))
    shared = ", ".join(iv.name for iv in st.leaf_iter_vars[:depth])
    others = ", ".join(m.name for m in group.members if m is not st)
    if clash.any():
        k = int(np.flatnonzero(clash)[0])
        raise _fold_error(st, f"in the loops {st.name} shares with {others} ({shared}) one of "
                          f"them is still read after the other is written", points, coords,
                          order[k], order[k + 1])
    starts = np.flatnonzero(np.r_[True, s[1:] != s[:-1]]) if s.size else s
    for level in _parallel_levels(group, st, depth):
        v = written[level][order]
        differs = np.minimum.reduceat(v, starts) != np.maximum.reduceat(v, starts)
        if differs.any():
            first = starts[np.flatnonzero(differs)[0]]
            other = first + np.flatnonzero(v[first:] != v[first])[0]
            loop = st.leaf_iter_vars[level].name
            raise _fold_error(st, f"they are written in different iterations of the parallel "
                              f"loop {loop} that {st.name} shares with {others}: the threads "
                              f"would race on the slot", points, coords, order[first],
                              order[other])


def _parallel_levels(group: SharedLoop, st: Stage, depth: int) -> list[int]:
    """The shared loops of `st` that run in parallel (annotated so on any stage sharing
    them)."""
    out = []
    for level in range(depth):
        for m in group.members:
            if (m is st or shared_depth(group, st, m)[0] > level) and \
                    m.iter_var_attrs.get(m.leaf_iter_vars[level]) == PARALLEL:
                out.append(level)
                break
    return out
