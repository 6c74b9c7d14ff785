"""The `conv2d_nchw` template: out[n, f, y, x] = sum over (c, ry, rx) of
pad(data)[n, c, y*stride + ry, x*stride + rx] * kernel[f, c, ry, rx].

Knobs: tiles of the output channels (`tile_f`, the inner part unrolled in the register
tile), of the output rows (`tile_y`) and of the output columns (`tile_x`, the inner part
is the vector width), the split of the input channels (`tile_c`), whether the kernel
window's loops run outside or inside the channel blocks, whether its columns are unrolled, whether the padded input is a separate stage or inlined
into the convolution, and how many outer loops are fused and run in parallel. The local
accumulator is computed at the column-tile loop.
"""
from __future__ import annotations

from compiler import te

from .registry import template


def output_size(op: str, H: int, W: int, R: int, S: int, stride: int, padding: int):
    """(OH, OW) of a convolution; a clear error when nothing is left."""
    OH = (H + 2 * padding - R) // stride + 1
    OW = (W + 2 * padding - S) // stride + 1
    if OH < 1 or OW < 1:
        raise ValueError(f"{op}: a {R}x{S} kernel with stride {stride} and padding "
                         f"{padding} leaves no output of a {H}x{W} input")
    return OH, OW


def padded_input(data, p: int):
    """`data` with `p` zeros around its two last axes (read lazily: no out-of-bounds)."""
    _, _, H, W = (d.value for d in data.shape)
    return te.compute(
        (data.shape[0], data.shape[1], H + 2 * p, W + 2 * p),
        lambda n, c, y, x: te.if_then_else(te.all(y >= p, y < H + p, x >= p, x < W + p),
                                           data[n, c, y - p, x - p], 0.0),
        name="pad")


@template("conv2d_nchw")
def conv2d_nchw(cfg, N: int, C: int, H: int, W: int, K: int, R: int, S: int,
                stride: int = 1, padding: int = 0):
    """2-D convolution with zero padding; returns the schedule and [data, kernel, out]."""
    OH, OW = output_size("conv2d_nchw", H, W, R, S, stride, padding)
    data = te.placeholder((N, C, H, W), name="data")
    kernel = te.placeholder((K, C, R, S), name="kernel")
    cfg.define_split("tile_f", K, num_outputs=2, filter=lambda e: e.size[-1] <= 8)
    cfg.define_split("tile_y", OH, num_outputs=2, filter=lambda e: e.size[-1] <= 8)
    cfg.define_split("tile_x", OW, num_outputs=2, filter=lambda e: e.size[-1] <= 64)
    cfg.define_split("tile_c", C, num_outputs=2, filter=lambda e: e.size[-1] <= 16)
    cfg.define_knob("window_outer", [0, 1])
    cfg.define_knob("unroll_kw", [1, 0])
    cfg.define_knob("pad_stage", [1, 0])
    cfg.define_knob("fuse_parallel", [2, 1])

    padded = padded_input(data, padding)
    rc = te.reduce_axis((0, C), name="rc")
    ry = te.reduce_axis((0, R), name="ry")
    rx = te.reduce_axis((0, S), name="rx")
    out = te.compute(
        (N, K, OH, OW),
        lambda n, f, y, x: te.sum(padded[n, rc, y * stride + ry, x * stride + rx]
                                  * kernel[f, rc, ry, rx], axis=[rc, ry, rx]),
        name="out")

    s = te.create_schedule(out.op)
    if cfg["pad_stage"].val:
        n, c, y, x = s[padded].op.axis
        s[padded].parallel(s[padded].fuse(n, c))
        s[padded].vectorize(x)
    else:
        s[padded].compute_inline()
    OL = s.cache_write(out, "local")
    n, f, y, x = s[out].op.axis
    fo, fi = cfg["tile_f"].apply(s, out, f)
    yo, yi = cfg["tile_y"].apply(s, out, y)
    xo, xi = cfg["tile_x"].apply(s, out, x)
    s[out].reorder(n, fo, yo, xo, yi, fi, xi)
    par = s[out].fuse(n, fo) if cfg["fuse_parallel"].val == 2 else n
    s[out].parallel(par)
    s[out].unroll(fi)
    s[out].vectorize(xi)
    s[OL].compute_at(s[out], yi)

    on, of, oy, ox = s[OL].op.axis
    rc, ry, rx = s[OL].op.reduce_axis
    rco, rci = cfg["tile_c"].apply(s, OL, rc)
    reduction = [ry, rx, rco, rci] if cfg["window_outer"].val else [rco, ry, rx, rci]
    s[OL].reorder(*reduction, on, oy, of, ox)
    s[OL].unroll(of)
    s[OL].vectorize(ox)
    if cfg["unroll_kw"].val:
        s[OL].unroll(rx)
    return s, [data, kernel, out]
