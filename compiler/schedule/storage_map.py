"""Tiramisu's store_in: a stage writes its values into a buffer of a given shape through
an index map (its layer III: where values live, decided apart from the order they are
computed in). The map is checked on every element of the stage's domain: each must land
inside the buffer, and no two on one slot (folding storage, as in `c(i % 2, j % 2)`,
needs a liveness check that is not built yet, so a map that folds is refused). Lowering
rewrites the stage's Realize to the buffer's shape and every store and load of the
stage's tensor through the map.
"""
from __future__ import annotations

import numpy as np

from ..errors import ScheduleError
from ..ir import expr as E
from ..ir.expr import ProducerLoad
from ..ir.functor import substitute, transform
from ..ir.range import Range
from ..ir.stmt import ProducerStore, Realize

MAX_CHECKED = 1 << 24  # elements enumerated to check a map


def storage_map(stage, shape, index_map) -> tuple:
    """The map's index expressions over `stage`'s axes, checked (module doc)."""
    where = f"stage {stage.name}: store_in"
    if stage.is_output:
        raise ScheduleError(f"{where} of an output of the schedule: its buffer is the "
                            f"caller's; store_in a stage that feeds it")
    if isinstance(shape, int):
        shape = (shape,)
    shape = tuple(getattr(s, "value", s) for s in shape)
    if not shape or any(isinstance(s, bool) or not isinstance(s, int) or s <= 0
                        for s in shape):
        raise ScheduleError(f"{where} needs a shape of positive integers, got {shape!r}")
    axes = stage.op.axis
    mapped = index_map(*[iv.var for iv in axes])
    mapped = tuple(mapped) if isinstance(mapped, (tuple, list)) else (mapped,)
    if len(mapped) != len(shape):
        raise ScheduleError(f"{where}: the index map gives {len(mapped)} indices for a "
                            f"buffer of {len(shape)} dimensions {shape}")
    exprs = tuple(E.convert(m) for m in mapped)
    extents = [getattr(iv.dom.extent, "value", None) for iv in axes]
    if any(not isinstance(e, int) for e in extents):
        raise ScheduleError(f"{where} needs constant extents on the axes of {stage.name}")
    count = int(np.prod(extents, dtype=np.int64))
    if count > MAX_CHECKED:
        raise ScheduleError(f"{where}: {count} elements are too many to check the map on")
    points = np.indices(extents, dtype=np.int64).reshape(len(extents), -1)
    points += np.array([iv.dom.min.value for iv in axes], dtype=np.int64)[:, None]
    coords = index_map(*points)
    coords = coords if isinstance(coords, (tuple, list)) else (coords,)
    coords = [np.broadcast_to(np.asarray(c, dtype=np.int64), points.shape[1:]) for c in coords]
    for dim, (c, size) in enumerate(zip(coords, shape)):
        bad = np.flatnonzero((c < 0) | (c >= size))
        if bad.size:
            k = bad[0]
            raise ScheduleError(f"{where} maps element {tuple(int(p) for p in points[:, k])} "
                                f"to {tuple(int(x[k]) for x in coords)}, outside the buffer "
                                f"of shape {shape} (dimension {dim})")
    slots = np.ravel_multi_index(coords, shape) if count else np.zeros(0, np.int64)
    order = np.argsort(slots, kind="stable")
    same = np.flatnonzero(np.diff(slots[order]) == 0)
    if same.size:
        a, b = order[same[0]], order[same[0] + 1]
        raise ScheduleError(
            f"{where} maps elements {tuple(int(p) for p in points[:, a])} and "
            f"{tuple(int(p) for p in points[:, b])} to one slot "
            f"{tuple(int(x[a]) for x in coords)}: folding storage would overwrite a value "
            f"that may still be read (folding maps are not checked for liveness yet)")
    return shape, exprs


def apply_storage_maps(stmt, stages):
    """`stmt` with each mapped stage's buffer reshaped and its accesses mapped."""
    maps = {st.tensor: st for st in stages if st.storage is not None}
    if not maps:
        return stmt

    def index(st, indices):
        shape, exprs = st.storage
        vmap = {iv.var: i for iv, i in zip(st.op.axis, indices)}
        return tuple(substitute(e, vmap) for e in exprs)

    def post(n):
        if isinstance(n, Realize) and n.producer in maps:
            shape = maps[n.producer].storage[0]
            return Realize(n.producer, tuple(Range(E.const(0), E.const(s)) for s in shape),
                           n.body, n.scope)
        if isinstance(n, ProducerStore) and n.producer in maps:
            return ProducerStore(n.producer, index(maps[n.producer], n.indices), n.value)
        if isinstance(n, ProducerLoad) and n.producer in maps:
            return ProducerLoad(n.producer, index(maps[n.producer], n.indices))
        return None
    return transform(stmt, post)
