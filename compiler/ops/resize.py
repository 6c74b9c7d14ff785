"""2-D resizing of images (TOPI's image.resize2d), pattern INJECTIVE: data NCHW
(N, C, H, W), or packed NCHW[x]c (N, C/x, H, W, x), resized on H and W.

Each output row y (and column) reads the input at a source coordinate, ONNX's Resize
rules (`source_coordinate`), computed in the precision and order ONNX Runtime computes
it (float32; half_pixel_symmetric in float64), so that a nearest-neighbour pick on a tie
(an exact .5, or an integer for floor and ceil) rounds as ONNX Runtime's does:

    half_pixel            (y + 0.5) / scale - 0.5
    pytorch_half_pixel    the same, 0 when the output axis has one element
    half_pixel_symmetric  the same, shifted to keep the centre when floor(size * scale)
                          cut the output
    align_corners         y * (in - 1) / (out - 1), 0 when out is 1
    asymmetric            y / scale

`scale` is out / in in float32 unless the caller gives the scales the output was sized
from (ONNX's `scales` input: out = floor(in * scale)). The coordinate is clamped to
[0, in - 1]; "nearest_neighbor" rounds it by `rounding_method` (round_prefer_floor,
round_prefer_ceil, floor, ceil), "linear" interpolates between its two neighbours.
"""
from __future__ import annotations

import numpy as np

from .. import te
from ..ir.expr import is_float
from .pattern import OpPattern, register_pattern
from .pooling import nchw_or_packed
from .shape import OpError, check_tensor, get_const_tuple, shape_str

METHODS = ("nearest_neighbor", "linear")
COORDINATE_MODES = ("half_pixel", "pytorch_half_pixel", "half_pixel_symmetric",
                    "align_corners", "asymmetric")
ROUNDING_METHODS = ("round_prefer_floor", "round_prefer_ceil", "floor", "ceil")


def resize_scale(size: int, out: int, scale: float | None = None) -> np.float32:
    """The scale of an axis resized from `size` to `out`: `scale` when given (the one the
    output was sized from), else out / size, in float32."""
    return np.float32(scale) if scale else np.float32(out) / np.float32(size)


def source_coordinate(y, const, mode: str, size: int, out: int, scale: np.float32):
    """The float32 source coordinate of output element `y` (a float32 value: a te
    expression, or a numpy float32 array) of an axis resized from `size` to `out`
    elements; `const(value, dtype="float32")` makes a constant of the same kind."""
    half = const(0.5)
    match mode:
        case "half_pixel":
            return (y + half) / const(scale) - half
        case "pytorch_half_pixel":
            return (y + half) / const(scale) - half if out > 1 else y * const(0.0)
        case "half_pixel_symmetric":
            adjustment = np.float32(out) / (scale * np.float32(size))
            offset = np.float32(size) / np.float32(2) * (np.float32(1) - adjustment)
            f64 = "float64"
            at = const(offset, f64) + (y.astype(f64) + const(0.5, f64)) / \
                const(scale, f64) - const(0.5, f64)
            return at.astype("float32")
        case "align_corners":
            if out == 1:
                return y * const(0.0)
            return y * const(size - 1) / const(out - 1)
        case "asymmetric":
            return y / const(scale)
    raise OpError(f"resize2d: coordinate_transformation_mode {mode!r} is not one of "
                  f"{', '.join(COORDINATE_MODES)}")


def _check(data, size, method, mode, rounding):
    check_tensor("resize2d", "data", data)
    if data.ndim not in (4, 5):
        raise OpError(f"resize2d: data must be NCHW (4 dimensions) or NCHW[x]c (5), got "
                      f"shape {shape_str(data.shape)}")
    for what, value, known in (("method", method, METHODS),
                               ("coordinate_transformation_mode", mode, COORDINATE_MODES),
                               ("rounding_method", rounding, ROUNDING_METHODS)):
        if value not in known:
            raise OpError(f"resize2d: {what} {value!r} is not one of {', '.join(known)}")
    if method == "linear" and not is_float(data.dtype):
        raise OpError(f"resize2d: linear interpolation of {data.dtype} data (float only)")
    if len(size) != 2 or not all(isinstance(s, int) and s >= 1 for s in size):
        raise OpError(f"resize2d: size must be two ints >= 1, got {size!r}")


@register_pattern(OpPattern.INJECTIVE)
def resize2d(data, size, scales=(), method: str = "nearest_neighbor",
             coordinate_transformation_mode: str = "half_pixel",
             rounding_method: str = "round_prefer_floor"):
    """`data` resized to `size` (out_h, out_w) on its H and W axes (the module docstring);
    `scales` the (h, w) scales the size came from, or () for size / input."""
    _check(data, size, method, coordinate_transformation_mode, rounding_method)
    shape = get_const_tuple(data.shape)
    axes = [_Axis(shape[2 + k], size[k], resize_scale(shape[2 + k], size[k],
                                                      scales[k] if scales else None),
                  coordinate_transformation_mode) for k in range(2)]
    out_shape = (*shape[:2], *size, *shape[4:])
    if method == "nearest_neighbor":
        return te.compute(out_shape, nchw_or_packed(data, lambda b, c, y, x, v: data[
            (b, c, axes[0].nearest(y, rounding_method), axes[1].nearest(x, rounding_method),
             *v)]), name="resize2d")

    def linear(b, c, y, x, v):
        (y0, y1, wy), (x0, x1, wx) = axes[0].linear(y), axes[1].linear(x)

        def row(r):
            left, right = data[(b, c, r, x0, *v)], data[(b, c, r, x1, *v)]
            return left + (right - left) * wx.astype(data.dtype)
        top = row(y0)
        return top + (row(y1) - top) * wy.astype(data.dtype)
    return te.compute(out_shape, nchw_or_packed(data, linear), name="resize2d")


class _Axis:
    """One resized axis: where its output elements read the input."""

    def __init__(self, size: int, out: int, scale: np.float32, mode: str):
        self.size, self.out, self.scale, self.mode = size, out, scale, mode

    def _clamped(self, y):
        f32 = "float32"
        # floor() of the row as a float (itself) keeps the coordinate a float32 computation
        # of the kernel: where the row is a constant (an axis of one element), the index
        # simplifier would fold it as Python floats, in double precision, and round a tie
        # otherwise than float32 does.
        at = source_coordinate(te.floor(y.astype(f32)),
                               lambda v, dtype=f32: te.const(float(v), dtype),
                               self.mode, self.size, self.out, self.scale)
        return te.max(te.min(at, te.const(float(self.size - 1), f32)), te.const(0.0, f32))

    def nearest(self, y, rounding: str):
        at = self._clamped(y)
        low = at.astype("int32")  # truncation: the floor of a coordinate >= 0
        frac = at - low.astype("float32")
        half = te.const(0.5, "float32")
        up = {"round_prefer_floor": frac > half, "round_prefer_ceil": frac >= half,
              "ceil": frac > te.const(0.0, "float32")}.get(rounding)
        if up is None:
            return low
        return te.min(low + te.select(up, 1, 0), self.size - 1)

    def linear(self, y):
        """(the lower neighbour, the upper one, the upper one's weight)."""
        at = self._clamped(y)
        low = at.astype("int32")
        return low, te.min(low + 1, self.size - 1), at - low.astype("float32")
