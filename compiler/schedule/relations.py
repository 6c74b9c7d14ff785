"""Relations between a stage's IterVars, as in the reference: Split, Fuse, Rebase, and
Tiramisu's Shift.

Each relation records how child loops recover the parent's value; bound inference
passes ranges down through them (PassDownDomain) and sets up through them (PassUpDomain).
"""
from __future__ import annotations

from dataclasses import dataclass

from ..te.tensor import IterVar


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
