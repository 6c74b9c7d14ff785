"""The register tile of a kernel, the rule that bounds it by the target's vector
registers, and every kernel's tiles under it: the one home of register bounds (the GEMM
templates' rows and columns, the NCHW convolution's channels by a vector of columns, the
packed convolution's rows x columns x channel blocks, Winograd's bgemm tile), and the
tile each kernel uses untuned (its schedule's default choices and its template's
fallback, which are one).

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

from dataclasses import dataclass

from ..target import Target
from .shape import largest_divisor


@dataclass(frozen=True)
class RegisterTile:
    """A register tile: `rows` x `cols` output positions of `blocks` channel blocks, each
    block `vectors` vector registers wide; it holds rows * cols * blocks * vectors
    accumulators. `weights`: the weight vectors of a block that stay in registers while
    the tile is computed (one for a GEMM or an ordinary convolution, whose operand
    changes with every step of the reduction; the whole window for a depthwise one,
    whose few weights the compiler keeps for the whole row). `operands`: the other
    registers a step needs (one broadcast value; a depthwise step's input vector and,
    its padding read in place, the border's zero and mask). The register rule is
    `registers <= Target.vector_registers`; a GEMM's `rows x columns` tile is
    RegisterTile(rows, 1, 1, vectors(columns)), whose registers are the rule's
    rows * vectors + vectors + 1."""
    rows: int
    cols: int
    blocks: int
    vectors: int
    weights: int = 1
    operands: int = 1

    @property
    def accumulators(self) -> int:
        """Vector registers the tile's partial sums occupy."""
        return self.rows * self.cols * self.blocks * self.vectors

    @property
    def registers(self) -> int:
        """Registers the kernel needs: the accumulators, the weight vectors it holds for
        every block, and its other operands."""
        return self.accumulators + self.blocks * self.vectors * self.weights + self.operands


def vectors(columns: int, lanes: int) -> int:
    """Vector registers that one row of `columns` floats takes, vectorized by
    `vector_width` (see the module docstring)."""
    return -(-columns // min(vector_width(columns, lanes), lanes))


def fits(rows: int, columns: int, target=None) -> bool:
    """Whether a `rows x columns` register tile obeys the register rule (module
    docstring) on `target` (compiler.Target.resolve: default the entered one, else the
    host)."""
    t = Target.resolve(target)
    return RegisterTile(rows, 1, 1, vectors(columns, t.vector_lanes)).registers \
        <= t.vector_registers


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


# The GEMM templates' tiles (search_spaces/matmul.py, conv2d_packed.py): rows and columns
# are two knobs, and a space is the product of its knobs, so the space bounds each by
# itself: rows up to `RegisterBounds.rows`, and the columns that fit beside that many rows
# (`fits(bounds.rows, columns)`); every tile inside obeys the rule. The bound is the one
# that leaves the most tiles of whole vectors (16 rows would leave only tall tiles of one
# vector, 1 row only flat ones), and the fallback (register_tile) is the best tile within.


@dataclass(frozen=True)
class RegisterBounds:
    """The most rows of a space's register tiles, and its fallback tile `(rows,
    columns)`."""
    rows: int
    fallback: tuple[int, int]


def register_bounds(row_options, column_options, target=None) -> RegisterBounds:
    """The bounds (see above) of register tiles whose rows are among `row_options` and
    whose columns are among `column_options` (the sizes the knobs may take, e.g. the
    divisors of the axes), on `target` (default: the entered one, else the host)."""
    t = Target.resolve(target)
    whole = [c for c in column_options if c >= min(t.vector_lanes, max(column_options))]

    def tiles(r: int) -> int:
        return sum(x <= r for x in row_options) * sum(fits(r, c, t) for c in whole)
    fitting = [r for r in row_options if fits(r, min(column_options), t)]
    rows = max(fitting or [min(row_options)], key=lambda r: (tiles(r), r))
    fallback = register_tile([r for r in row_options if r <= rows],
                             [c for c in column_options if fits(rows, c, t)], t)
    return RegisterBounds(rows, fallback)


# The NCHW convolutions' tiles (conv2d_schedule.py): output channels (unrolled) by one
# vector of output columns, accumulated over the input channels and the window.

MAX_CHANNELS = 8
"""The most output channels of an NCHW convolution's register tile: measured on
ResNet-18's layers."""


def conv2d_nchw_tile(channels: int, width: int, target=None) -> tuple[int, int]:
    """`(output channels, columns)` of the untuned register tile of an NCHW convolution
    with `channels` output channels and rows `width` wide, on `target` (default: the
    entered one, else the host): columns by the largest divisor of the width up to the
    vector width, channels by the largest divisor up to MAX_CHANNELS that fits beside
    them."""
    t = Target.resolve(target)
    columns = largest_divisor(width, t.vector_lanes)
    return largest_divisor(channels, min(MAX_CHANNELS, max_rows(columns, t))), columns


def conv2d_nchw_bounds(target=None) -> tuple[int, int, int]:
    """`(channels, rows, columns)`: the most output channels, rows and columns of an
    NCHW convolution's register tile on `target` (the knobs' bounds): the columns one
    vector, as conv2d_nchw_tile's; the channels MAX_CHANNELS as far as they fit; the
    rows, which the tile holds when its accumulator is computed at the column tile, as
    many as fit beside them: channels * rows by one vector obeys the register rule."""
    lanes = Target.resolve(target).vector_lanes
    channels = min(MAX_CHANNELS, max_rows(lanes, target))
    return channels, max(1, max_rows(lanes, target) // channels), lanes


# The packed convolutions' tiles (conv2d_nchwc.py): rows x columns output positions of
# channel blocks, every block one or more vectors.

MAX_TILE_ROWS = 4
"""Output rows a packed convolution's register tile may span (unrolled, like its
columns)."""

WEIGHT_VECTORS = 2
"""Weight vectors an untuned ordinary convolution's tile multiplies each broadcast input
by (its blocks x vectors per block): one broadcast then feeds two FMAs, and the weights
come from two streams. Measured on a Zen 5 (AVX-512, ResNet-18's 3x3 layers, 2 cores):
tiles of two 16-channel blocks ran at 480-510 GFLOPS, of four blocks (fewer broadcasts
per FMA, four weight streams) at 300-470, of one block at about 370; AVX2 code (8-channel
blocks) on the same CPU: two blocks 12 accumulators 240-256 GFLOPS, four blocks 196-226.
Where the output's blocks allow one or three (24 or 144 channels in blocks of 8 or 16,
MobileNetV2's), three won: 1x7x3 / 1x8x3 ran at 250 / 480 GFLOPS where 1x28x1 ran at 210 /
440 (its 1x1 layers at 56x56, 2 cores)."""


def register_tiles(target: Target, out_shape, window: tuple | None = None) -> list[RegisterTile]:
    """Every register tile of a packed convolution with output (N, K/y, OH, OW, y) that
    fits `target`'s vector registers: up to MAX_TILE_ROWS rows, any number of columns
    (those that do not divide OH or OW leave a smaller tile at the edge), channel blocks
    dividing K/y. `window` (KH, KW) for a depthwise convolution: one block per tile (the
    blocks share no input), its window's weights held. When nothing fits (a depthwise
    window of wide blocks on few registers), the one-position tile."""
    _, out_blocks, oh, ow, block = (int(d) for d in out_shape)
    vectors = -(-block // target.vector_lanes)
    weights = 1 if window is None else window[0] * window[1]
    blocks = [1] if window else [b for b in range(1, out_blocks + 1) if out_blocks % b == 0]
    operands = 1 if window is None else 3
    rows = range(1, min(oh, MAX_TILE_ROWS) + 1)
    # registers grow with the columns: each rows x blocks pair has a widest tile that
    # fits (asked per convolution of a model, over 56 or 112 columns)
    room = {(r, b): (target.vector_registers - b * vectors * weights - operands)
            // (r * b * vectors) for r in rows for b in blocks}
    tiles = [RegisterTile(r, c, b, vectors, weights, operands)
             for r in rows for c in range(1, ow + 1) for b in blocks if c <= room[r, b]]
    return tiles or [RegisterTile(1, 1, blocks[0], vectors, weights, operands)]


def default_register_tile(target: Target, out_shape, window: tuple | None = None,
                          pad_stage: bool = True) -> RegisterTile:
    """The tile an untuned packed convolution uses: rows that divide the output's (edge
    tiles on rows and columns both spill; a depthwise convolution's columns divide too),
    weight vectors nearest WEIGHT_VECTORS (a depthwise convolution has its one block),
    then the most accumulators that do useful work (a column tile that does not divide
    the width computes its last tile in part), the fewest wasted columns, the fewest
    rows. Of two weight-vector counts equally near WEIGHT_VECTORS, the larger (see there).

    A depthwise convolution whose padding is read in place (not `pad_stage`) takes one
    row of fewer accumulators than half the registers: with the border's tests the
    compiler spilled tiles of several rows (2x8 on AVX-512: 56 vector moves to the
    stack) and a row of 16 columns, and ran them 1.2-1.9x slower than one row of 14
    (MobileNetV2's layers, AVX-512, 2 cores)."""
    _, _, oh, ow, _ = (int(d) for d in out_shape)
    tiles = register_tiles(target, out_shape, window)
    if window is not None and not pad_stage:
        tiles = [t for t in tiles if t.rows == 1
                 and 2 * t.accumulators < target.vector_registers] or tiles[:1]
    whole = [t for t in tiles if oh % t.rows == 0 and (window is None or ow % t.cols == 0)]

    def cost(t: RegisterTile) -> tuple:
        used = ow / (-(-ow // t.cols) * t.cols)
        return (abs(t.blocks * t.vectors - WEIGHT_VECTORS), -t.blocks * t.vectors,
                -round(t.accumulators * used, 6), -used, t.rows)
    return min(whole or tiles, key=cost)


# Winograd's tiles (conv2d_winograd.py): the bgemm's rows of input tiles by output-channel
# blocks, and the output transform's rows of a tile at once.


def winograd_tiles(target: Target, out_channel_blocks: int, block: int) -> list[tuple]:
    """Every bgemm register tile (rows of input tiles, output-channel blocks) that fits
    `target`'s vector registers: RegisterTile(rows, 1, blocks, vectors), rows up to 8 and
    blocks dividing the output's."""
    vectors = -(-block // target.vector_lanes)
    return [(r, b) for r in range(1, 9) for b in range(1, out_channel_blocks + 1)
            if out_channel_blocks % b == 0
            and RegisterTile(r, 1, b, vectors).registers <= target.vector_registers] \
        or [(1, 1)]


def default_winograd_tile(target: Target, out_channel_blocks: int, block: int) -> tuple:
    """The bgemm tile an untuned kernel uses: two weight vectors per broadcast where the
    blocks allow (WEIGHT_VECTORS), then the most rows whose accumulators take at most
    half the registers. Measured on Zen 5 (AVX-512, ResNet's 64-channel 56x56 layer, 2
    cores): 8 rows of 2 blocks of 16 (16 accumulators) ran the whole kernel in 185-200
    us, 6 or 7 rows within 5% of it, 4 rows 10% slower."""
    vectors = -(-block // target.vector_lanes)
    tiles = winograd_tiles(target, out_channel_blocks, block)
    half = [t for t in tiles if t[0] * t[1] * vectors <= target.vector_registers // 2] or tiles
    return min(half, key=lambda t: (abs(t[1] * vectors - WEIGHT_VECTORS), -t[1],
                                    -t[0] * t[1]))


def default_tile_rows(target: Target, m: int, block: int) -> int:
    """The rows of an m x m output tile the untuned Winograd output transform computes at
    once: the whole tile where twice its accumulators fit the registers (m * m vectors:
    16 zmm on AVX-512 for m = 4), else one row (m vectors). A row at a time runs the
    transform as m parallel loops, one per row, about 10% slower on AVX-512."""
    vectors = -(-block // target.vector_lanes)
    return m if 2 * m * m * vectors <= target.vector_registers else 1
