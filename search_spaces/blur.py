"""The `blur` template: the reference's two-stage blur (tiramisu-internals: `bx` averages
three neighbours along a row, `by` three of bx's along a column) on one channel, with
Tiramisu's commands as knobs.

Knobs:
- `placement`, where bx is computed:
  - "root": in full, before by (what TVM's primitives give at the top level);
  - "compute_at": at by's column block, a (rows + 2) x block region per tile, the two
    halo rows computed twice;
  - "after": in loops shared with by (`by.after(bx, yo)`): by's row tiles are shifted
    one tile (two at one row a tile) behind bx's, so that every row by reads is written
    by then; no value is computed twice;
  - "after_fold": the same, with bx stored in a ring of the rows still live
    (`store_in((rows, W), lambda i, j: (i % rows, j))`), which the liveness check proves
    legal, instead of the whole image.
- `tile_y`: rows of by per tile (and of bx per shared iteration);
- `tile_x`: columns in three parts: blocks (run in parallel), then vectors within a
  block, then the vector width (`vectorize(axis, width)`): a quarter, half, one or two
  of the target's vector registers (vector_widths);
- `unroll_x`: the vectors of a block unrolled by this factor (`unroll(axis, factor)`);
  the factors kept are those whose unrolled vectors fit the registers by the register
  rule (compiler/ops/register_tile.py) at the widest width;
- `parallel`: whether the outer loop runs on all cores.

`blur(H, W, tiramisu=False)` offers only "root" and "compute_at", the blur as TVM's
primitives schedule it (benchmarks/blur.py compares the two spaces).
"""
from __future__ import annotations

from compiler import Target, ops, te

from .registry import template

PLACEMENTS = ("root", "compute_at", "after", "after_fold")
UNROLL_FACTORS = (1, 2, 4)


def vector_widths() -> tuple[int, ...]:
    """The vector widths of the entered target's space (the template's): a quarter, half,
    one and two vector registers of float32 lanes (4, 8, 16, 32 with AVX-512; 2, 4, 8,
    16 with AVX2)."""
    lanes = Target.resolve().vector_lanes
    return tuple(w for w in (lanes // 4, lanes // 2, lanes, 2 * lanes) if w >= 1)


def blur_reference(inputs, H, W, tiramisu=True):
    """numpy: bx = mean of a[:, j..j+2], by = mean of bx[i..i+2, :]."""
    (a,) = inputs
    x = (a[:, :-2] + a[:, 1:-1] + a[:, 2:]) / 3
    return ((x[:-2] + x[1:-1] + x[2:]) / 3).astype("float32")


def live_rows(rows: int) -> int:
    """Rows of bx that are live at once when by runs one tile of `rows` behind bx (two
    tiles behind for tiles of one row): the tiles by reads and the one bx writes."""
    return 3 if rows == 1 else 2 * rows


@template("blur", reference=blur_reference, probes=[(13, 37), (9, 11, False)])
def blur(cfg, H: int, W: int, tiramisu: bool = True):
    """The two-stage blur of an (H + 2) x (W + 2) image; returns the schedule and
    [A, by]."""
    A = te.placeholder((H + 2, W + 2), name="A")
    bx = te.compute((H + 2, W), lambda i, j: (A[i, j] + A[i, j + 1] + A[i, j + 2]) / 3,
                    name="bx")
    by = te.compute((H, W), lambda i, j: (bx[i, j] + bx[i + 1, j] + bx[i + 2, j]) / 3,
                    name="by")
    cfg.define_knob("placement", list(PLACEMENTS if tiramisu else PLACEMENTS[:2]))
    cfg.define_split("tile_y", H, num_outputs=2, policy="power2",
                     filter=lambda e: e.size[-1] <= 32)
    widths = vector_widths()
    cfg.define_split("tile_x", W, num_outputs=3, policy="power2",
                     filter=lambda e: e.size[-1] in widths)
    cfg.define_knob("unroll_x", [u for u in UNROLL_FACTORS if ops.fits(u, max(widths))])
    cfg.define_knob("parallel", [1, 0])
    s = te.create_schedule(by.op)
    placement = cfg["placement"].val
    rows, width = cfg["tile_y"].size[-1], cfg["tile_x"].size[-1]
    yo, yi = s[by].split(by.op.axis[0], factor=rows)
    xb, xo, xi = cfg["tile_x"].apply(s, by, by.op.axis[1])
    if placement.startswith("after"):
        # Both stages run (column block, row tile, row, vector, lane); they share the
        # first two loops.
        s[by].reorder(xb, yo, yi, xo, xi)
        byo, byi = s[bx].split(bx.op.axis[0], factor=rows)
        bxb, bxo, bxi = cfg["tile_x"].apply(s, bx, bx.op.axis[1])
        s[bx].reorder(bxb, byo, byi, bxo, bxi)
        _vector_loops(cfg, s, bx, bxo, bxi)
        s[by].shift(yo, 2 if rows == 1 else 1)
        if placement == "after_fold" and live_rows(rows) < H + 2:
            ring = live_rows(rows)
            s[bx].store_in((ring, W), lambda i, j: (i % ring, j))
        s[by].after(bx, byo)
        outer = xb
    else:
        s[by].reorder(yo, xb, yi, xo, xi)
        i, j = bx.op.axis
        bxo, _ = s[bx].vectorize(j, width=width)
        if cfg["unroll_x"].val > 1:
            s[bx].unroll(bxo, factor=cfg["unroll_x"].val)
        if placement == "compute_at":
            s[bx].compute_at(s[by], xb)
        elif cfg["parallel"].val:
            s[bx].parallel(i)
        outer = yo
    _vector_loops(cfg, s, by, xo, xi)
    if cfg["parallel"].val:
        s[by].parallel(outer)
    return s, [A, by]


def _vector_loops(cfg, s, stage, xo, xi):
    """The lanes vectorized, the vectors of a block unrolled by the `unroll_x` factor."""
    s[stage].vectorize(xi)
    if cfg["unroll_x"].val > 1:
        s[stage].unroll(xo, factor=cfg["unroll_x"].val)
