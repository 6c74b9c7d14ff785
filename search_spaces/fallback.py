"""What a knob is set to when nothing was tuned: small heuristics over the shape.

AutoTVM's fallback takes the first value of every knob, which for a split is no tiling
at all. Ours aims at tiles a CPU likes: the innermost part of a split as long as one
vector register of the target the space is built for (so it can be vectorized: 16
float32 lanes with AVX-512, 8 with AVX2), the parts above it a few iterations (a small
register or cache block). Knobs turn these wishes into one of their own values
(`nearest_split`), so a fallback is always a point of the space; a template that knows
better passes `fallback=` to its define_* call (the register tiles of
compiler/ops/register_tile.py).
"""
from __future__ import annotations

import math

from compiler import Target

MIDDLE_TILE = 4
"""The extent we aim at for each part between the outermost and the innermost."""


def vector_lanes() -> int:
    """float32 lanes of the target a space is built for (compiler.Target.resolve: the
    entered one, which the registry enters while a template runs, else the host): the
    innermost tile the fallbacks aim at."""
    return Target.resolve().vector_lanes


def fallback_split(extent: int, num_outputs: int, inner: int | None = None,
                   middle: int = MIDDLE_TILE) -> tuple[int, ...]:
    """The sizes a split of `extent` into `num_outputs` parts would like, AutoTVM style:
    `(-1, m, ..., m, inner)` where -1 is the remainder.

    inner: the wished innermost size (default None: vector_lanes(), one vector register).
    middle: the wished size of each part between (default MIDDLE_TILE, 4).
    Each wish is capped by what the parts inside it leave of `extent`, so a short axis
    asks for itself rather than for a tile longer than the loop.
    """
    inner = vector_lanes() if inner is None else inner
    sizes, left = [], extent
    for wish in [inner] + [middle] * (num_outputs - 2):
        size = max(1, min(wish, left))
        sizes.append(size)
        left = max(1, left // size)
    return (-1, *reversed(sizes))


def nearest_split(sizes: list[tuple[int, ...]], wish: tuple[int, ...]) -> int:
    """Position in `sizes` of the split closest to `wish`: the smallest sum over the
    parts (all but the remainder) of |log2(size / wished size)|, the first one on ties."""
    def distance(size):
        return sum(abs(math.log2(s / w)) for s, w in zip(size[1:], wish[1:]))
    return min(range(len(sizes)), key=lambda i: distance(sizes[i]))


def fallback_reorder(num_axes: int) -> tuple[int, ...]:
    """The identity order: loops stay as the template wrote them."""
    return tuple(range(num_axes))


def fallback_annotate(options: tuple[tuple[str, ...], ...]) -> tuple[str, ...]:
    """"vec" on the innermost axis when that axis may be vectorized, "none" elsewhere:
    unrolling without knowing the loop lengths risks code growth for nothing."""
    anns = ["none"] * len(options)
    if options and "vec" in options[-1]:
        anns[-1] = "vec"
    return tuple(anns)
