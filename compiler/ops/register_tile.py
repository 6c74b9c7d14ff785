"""The register tile of a kernel, and the rule that bounds it by the target's vector
registers.

A register tile is `rows x columns` outputs accumulated in vector registers for a whole
reduction: the columns are vectorized, the rows are unrolled (a GEMM's rows of A, a
convolution's output channels or columns). A row takes `vectors(columns, lanes)`
registers: ceil(columns / lanes) when the columns are part of one vector or a power of
two count of whole vectors, else as many as the pieces `vector_width` cuts the row into
(LLVM widens other counts into shuffles through the stack, several times slower: 40
floats on AVX-512 are vectorized as 5 vectors of 8; 29, which have no such pieces, as
one loop that LLVM widens to 32, 2 vectors). One step of the reduction keeps
every accumulator, loads the vectors of the operand that varies along the columns (a
row of B) and broadcasts one element of the other (of A) into a register, so the tile
fits the register file when

    rows * vectors + vectors + 1 <= registers                       (the register rule)

(`registers`: Target.vector_registers, 16 with AVX2, 32 with AVX-512). A tile past it
makes LLVM spill accumulators to the stack on every step: the 16 x 16 float tile of a
GEMM is 16 zmm on AVX-512 but 32 ymm on AVX2.

Every template bounds its tiles by `fits`, and `register_tile` picks the tile that the
default schedules and the templates' fallbacks use: measured on Zen 5 (matmul 1024^3
and 960^3, one core), tiles of half the register file in accumulators are the fastest
(4 x 4 zmm at 1.9x the 16 x 1 zmm tile; AVX2 code: 4 x 2 ymm, as 8 x 1, ahead of 2 x 4
and of the spilling 16 x 2), and tiles nearer the rule's edge spill all the same
(12 x 1 ymm).
"""
from __future__ import annotations

from ..target import Target


def vectors(columns: int, lanes: int) -> int:
    """Vector registers that one row of `columns` floats takes, vectorized by
    `vector_width` (see the module docstring)."""
    return -(-columns // min(vector_width(columns, lanes), lanes))


def fits(rows: int, columns: int, target=None) -> bool:
    """Whether a `rows x columns` register tile obeys the register rule (module
    docstring) on `target` (compiler.Target.resolve: default the entered one, else the
    host)."""
    t = Target.resolve(target)
    v = vectors(columns, t.vector_lanes)
    return rows * v + v + 1 <= t.vector_registers


def max_rows(columns: int, target=None) -> int:
    """The most rows a register tile of `columns` may have on `target` (at least 1: a
    single row of too many columns is the caller's to split)."""
    t = Target.resolve(target)
    v = vectors(columns, t.vector_lanes)
    return max(1, (t.vector_registers - 1 - v) // v)


def register_tile(row_options, column_options, target=None) -> tuple[int, int]:
    """The `(rows, columns)` tile, one of `row_options` by one of `column_options`, that a
    kernel without tuning uses on `target` (default: the entered one, else the host):
    among tiles that fit the rule with at most half the registers in accumulators and
    rows LLVM vectorizes cleanly (not a loop of more than a vector that vector_width
    cannot cut into pieces: 125 floats), the one that computes the most outputs per
    step, then loads the fewest registers per step (rows + vectors: a square tile), then
    has the fewer vectors. (1, the smallest column) when none qualifies."""
    t = Target.resolve(target)
    lanes, budget = t.vector_lanes, t.vector_registers // 2
    tiles = [(r, c) for r in row_options for c in column_options
             if fits(r, c, t) and r * vectors(c, lanes) <= budget
             and (c <= lanes or c % lanes == 0 or vector_width(c, lanes) < c)]
    if not tiles:
        return 1, min(column_options)
    return max(tiles, key=lambda rc: (rc[0] * rc[1], -(rc[0] + vectors(rc[1], lanes)),
                                      -vectors(rc[1], lanes)))


def vector_width(columns: int, lanes: int) -> int:
    """The width to vectorize a loop of `columns` floats by: all of it when it is part of
    one vector or a power-of-two count of whole vectors, else the largest power of two
    that divides it, at most `lanes`, unless that is under a quarter of a vector (the
    rest of the loop unrolled): 40 floats on AVX-512 are 5 vectors of 8, not one
    <40 x float>, which LLVM widens into shuffles through the stack; 48 are 3 of 16; 29
    stay one loop of 29 lanes, which LLVM widens to 32 (2 vectors)."""
    whole = columns // lanes
    if columns <= lanes or (columns % lanes == 0 and whole & (whole - 1) == 0):
        return columns
    piece = min(columns & -columns, lanes)
    return piece if 4 * piece >= lanes else columns


def vectorize_columns(stage, axis, columns: int, target=None) -> None:
    """Vectorize the loop `axis` of `stage`, `columns` long, in pieces of vector_width
    on `target` (default: the entered one, else the host), the pieces unrolled."""
    width = vector_width(columns, Target.resolve(target).vector_lanes)
    if width == columns:
        stage.vectorize(axis)
    else:
        stage.unroll(stage.vectorize(axis, width)[0])
