"""How far a template's register tile may go: the rows its knobs allow, and the tile its
fallback uses, on the target the space is built for (compiler.Target.resolve: the
registry enters it while a template runs).

A template's register tile is `rows x columns` (a GEMM's unrolled rows by its vectorized
columns; a convolution's unrolled channels or output columns by its vector), and every
tile must obey the register rule of compiler/ops/register_tile.py:

    rows * vectors + vectors + 1 <= registers     (vectors: compiler.ops.vectors,
                                                   ceil(columns / lanes) for whole vectors)

Rows and columns are two knobs, and a space is the product of its knobs, so the space
bounds each by itself: rows up to `RegisterBounds.rows`, and the columns that fit beside
that many rows (`ops.fits(bounds.rows, columns)`); every tile inside obeys the rule. The
bound is the one that leaves the most tiles of whole vectors (16 rows would leave only
tall tiles of one vector, 1 row only flat ones), and the fallback (compiler.ops.
register_tile: the tile an untuned kernel uses) is the best tile within it.
"""
from __future__ import annotations

from dataclasses import dataclass

from compiler import Target, ops


@dataclass(frozen=True)
class RegisterBounds:
    """The most rows of a space's register tiles, and its fallback tile `(rows,
    columns)`."""
    rows: int
    fallback: tuple[int, int]


def register_bounds(row_options, column_options, target=None) -> RegisterBounds:
    """The bounds (module docstring) of register tiles whose rows are among `row_options`
    and whose columns are among `column_options` (the sizes the knobs may take, e.g. the
    divisors of the axes), on `target` (default: the entered one, else the host)."""
    t = Target.resolve(target)
    whole = [c for c in column_options if c >= min(t.vector_lanes, max(column_options))]

    def tiles(r: int) -> int:
        return sum(x <= r for x in row_options) * sum(ops.fits(r, c, t) for c in whole)
    fitting = [r for r in row_options if ops.fits(r, min(column_options), t)]
    rows = max(fitting or [min(row_options)], key=lambda r: (tiles(r), r))
    fallback = ops.register_tile([r for r in row_options if r <= rows],
                                 [c for c in column_options if ops.fits(rows, c, t)], t)
    return RegisterBounds(rows, fallback)
