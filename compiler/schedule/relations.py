"""Relations between a stage's IterVars, as in the reference: Split, Fuse, Rebase, and
Tiramisu's Shift.

Each relation records how child loops recover the parent's value; bound inference
passes ranges down through them (PassDownDomain) and sets up through them (PassUpDomain).
"""
from __future__ import annotations

from dataclasses import dataclass

from ..arith.simplify import loop_bounds, simplify
from ..ir import expr as E
from ..lang.tensor import IterVar


@dataclass(frozen=True, eq=False)
class Split:
    """parent = outer * inner_extent + inner + parent.min"""
    parent: IterVar
    outer: IterVar
    inner: IterVar
    factor: int | None
    nparts: int | None


@dataclass(frozen=True, eq=False)
class Fuse:
    """fused = (outer - outer.min) * inner_extent + (inner - inner.min)"""
    outer: IterVar
    inner: IterVar
    fused: IterVar


@dataclass(frozen=True, eq=False)
class Rebase:
    """parent = rebased + parent.min: a loop that starts at 0."""
    parent: IterVar
    rebased: IterVar


@dataclass(frozen=True, eq=False)
class Shift:
    """parent = shifted - amount: Tiramisu's shift. The loop runs from parent.min +
    amount; the body sees the parent's value. On its own it changes no result; it moves
    one stage's iterations against another's in loops they share (Stage.after)."""
    parent: IterVar
    shifted: IterVar
    amount: int


def pass_up_index(st, value: dict, rmap: dict, bounds: dict, relax: bool = False) -> list:
    """Root values from leaf values (the reference's PassUpIndex), filling `value`; the
    guards that keep a split which does not divide inside its parent.

    relax: for analysis, not code: a parent whose guard is needed gets a fresh variable
    bounded to its range (added to `bounds`) instead of its value, so that what is
    derived from it knows it stays in range (the guard holds wherever the body runs); its
    tie to the leaves below it is given up, so results are bounds, not values."""
    guards = []
    for rel in reversed(st.relations):
        match rel:
            case Split(parent=p, outer=o, inner=i):
                pr = rmap[p]
                value[p] = simplify(value[o] * rmap[i].extent + value[i] + pr.min, bounds)
                cond = simplify(value[p] < pr.min + pr.extent, bounds)
                if not (isinstance(cond, E.IntImm) and cond.value):
                    guards.append(cond)
                    if relax:
                        value[p] = E.Var(f"{p.name}.guarded")
                        bounds[value[p]] = loop_bounds(pr.min, pr.extent, bounds)
            case Fuse(outer=o, inner=i, fused=f):
                n = rmap[i].extent
                value[o] = simplify(value[f] // n + rmap[o].min, bounds)
                value[i] = simplify(value[f] % n + rmap[i].min, bounds)
            case Rebase(parent=p, rebased=r):
                value[p] = simplify(value[r] + rmap[p].min, bounds)
            case Shift(parent=p, shifted=t, amount=amount):
                value[p] = simplify(value[t] - amount, bounds)
    return guards


def pass_down_index(st, value: dict, rmap: dict) -> dict:
    """Leaf values from root values (PassDownIndex), filling `value`: the loop
    iteration at which the stage computes the element its roots name."""
    for rel in st.relations:
        match rel:
            case Split(parent=p, outer=o, inner=i):
                offset = value[p] - rmap[p].min
                value[o], value[i] = offset // rmap[i].extent, offset % rmap[i].extent
            case Fuse(outer=o, inner=i, fused=f):
                value[f] = (value[o] - rmap[o].min) * rmap[i].extent + value[i] - rmap[i].min
            case Rebase(parent=p, rebased=r):
                value[r] = value[p] - rmap[p].min
            case Shift(parent=p, shifted=t, amount=amount):
                value[t] = value[p] + amount
    return value
