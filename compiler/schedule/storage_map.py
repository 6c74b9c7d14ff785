"""Tiramisu's store_in: a stage writes its values into a buffer of a given shape through
an index map (its layer III: where values live, decided apart from the order they are
computed in). The map is checked on every element of the stage's domain: each must land
inside the buffer. A map that puts two elements on one slot folds storage (as in
`c(i % 2, j % 2)`); whether the fold is legal depends on where the stage is computed,
so lowering checks it (storage_liveness.py). Lowering rewrites the stage's Realize to the
buffer's shape and every store and load of the stage's tensor through the map.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import ScheduleError
from ..ir import expr as E
from ..ir.expr import ProducerLoad
from ..ir.functor import substitute, transform
from ..ir.range import Range
from ..ir.stmt import ProducerStore, Realize

MAX_CHECKED = 1 << 24  # elements enumerated to check a map


@dataclass(frozen=True)
class StorageMap:
    """Where a stage's values live: a buffer of `shape`, the element at the stage's axes
    (i, j, ...) at `exprs` over their Vars. `fold` is None for a map that is one-to-one
    on the stage's domain, else two elements that share a slot and the slot."""
    shape: tuple
    exprs: tuple
    fold: tuple | None


def evaluate(e: E.Expr, env: dict, where: str):
    """The integer value of an index expression, with numpy arrays for the Vars in `env`."""
    match e:
        case E.IntImm(value=v):
            return v
        case E.Var():
            if e not in env:
                raise ScheduleError(f"{where}: the index map reads {e.name}, which is not "
                                    f"an axis of the stage")
            return env[e]
        case E.Cast(value=v):
            return evaluate(v, env, where)
        case E.BinaryOp(a=a, b=b) if type(e) in _INT_OPS:
            return _INT_OPS[type(e)](evaluate(a, env, where), evaluate(b, env, where))
    raise ScheduleError(f"{where}: an index map may add, multiply, floor-divide, take "
                        f"modulo, min and max of axes and integers, not {e}")


_INT_OPS = {E.Add: np.add, E.Sub: np.subtract, E.Mul: np.multiply,
            E.FloorDiv: np.floor_divide, E.FloorMod: np.mod, E.Min: np.minimum,
            E.Max: np.maximum}


def grid(mins, extents) -> np.ndarray:
    """Every point of the box [mins, mins + extents), one column each, row-major."""
    points = np.indices(extents, dtype=np.int64).reshape(len(extents), -1)
    return points + np.array(mins, dtype=np.int64).reshape(-1, 1)


def domain_points(ivs, where: str) -> np.ndarray:
    """Every point of the IterVars' (constant) domain, one column each, row-major."""
    extents = [getattr(iv.dom.extent, "value", None) for iv in ivs]
    mins = [getattr(iv.dom.min, "value", None) for iv in ivs]
    if any(not isinstance(x, int) for x in extents + mins):
        raise ScheduleError(f"{where} needs constant extents on the axes "
                            f"{', '.join(iv.name for iv in ivs)}")
    count = int(np.prod(extents, dtype=np.int64))
    if count > MAX_CHECKED:
        raise ScheduleError(f"{where}: {count} points are too many to check the map on")
    return grid(mins, extents)


def evaluate_at(exprs, variables, points: np.ndarray, where: str) -> list:
    """Each of `exprs` at each point (a column of `points`, one row per Var of
    `variables`): one int64 array per expression."""
    env = {v: points[k] for k, v in enumerate(variables)}
    return [np.broadcast_to(np.asarray(evaluate(x, env, where), dtype=np.int64),
                            points.shape[1:]) for x in exprs]


def flat_slots(coords: list, shape: tuple) -> np.ndarray:
    """One integer a slot: the coordinates raveled in the buffer's row-major order."""
    return np.ravel_multi_index(coords, shape) if coords[0].size else np.zeros(0, np.int64)


def storage_map(stage, shape, index_map) -> StorageMap:
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
    axes = stage.op.axis
    points = domain_points(axes, where)
    coords = evaluate_at(exprs, [iv.var for iv in axes], points, where)
    for dim, (c, size) in enumerate(zip(coords, shape)):
        bad = np.flatnonzero((c < 0) | (c >= size))
        if bad.size:
            k = bad[0]
            raise ScheduleError(f"{where} maps element {tuple(int(p) for p in points[:, k])} "
                                f"to {tuple(int(x[k]) for x in coords)}, outside the buffer "
                                f"of shape {shape} (dimension {dim})")
    flat = flat_slots(coords, shape)
    order = np.argsort(flat, kind="stable")
    same = np.flatnonzero(np.diff(flat[order]) == 0)
    fold = None
    if same.size:
        a, b = order[same[0]], order[same[0] + 1]
        fold = (tuple(int(p) for p in points[:, a]), tuple(int(p) for p in points[:, b]),
                tuple(int(x[a]) for x in coords))
    return StorageMap(shape, exprs, fold)


def apply_storage_maps(stmt, stages):
    """`stmt` with each mapped stage's buffer reshaped and its accesses mapped."""
    maps = {st.tensor: st for st in stages if st.storage is not None}
    if not maps:
        return stmt

    def index(st, indices):
        vmap = {iv.var: i for iv, i in zip(st.op.axis, indices)}
        return tuple(substitute(e, vmap) for e in st.storage.exprs)

    def post(n):
        if isinstance(n, Realize) and n.producer in maps:
            shape = maps[n.producer].storage.shape
            return Realize(n.producer, tuple(Range(E.const(0), E.const(s)) for s in shape),
                           n.body, n.scope)
        if isinstance(n, ProducerStore) and n.producer in maps:
            return ProducerStore(n.producer, index(maps[n.producer], n.indices), n.value)
        if isinstance(n, ProducerLoad) and n.producer in maps:
            return ProducerLoad(n.producer, index(maps[n.producer], n.indices))
        return None
    return transform(stmt, post)
