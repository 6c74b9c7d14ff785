"""Constant padding (TOPI's nn.pad), pattern INJECTIVE: the padding stage of conv2d and
pooling, kept separate so a schedule can inline it or compute it once."""
from __future__ import annotations

from .. import te
from ..arith.simplify import simplify
from .pattern import OpPattern, register_pattern
from .shape import OpError, check_tensor, shape_str


@register_pattern(OpPattern.INJECTIVE)
def pad(data, pad_before, pad_after=None, pad_value=0.0):
    """`data` with `pad_before[i]` elements of `pad_value` before axis i and
    `pad_after[i]` (default: pad_before) after it; one non-negative int per axis."""
    check_tensor("pad", "data", data)
    pad_after = pad_before if pad_after is None else pad_after
    for what, pads in (("pad_before", pad_before), ("pad_after", pad_after)):
        if (not isinstance(pads, (tuple, list)) or len(pads) != data.ndim
                or not all(isinstance(p, int) and not isinstance(p, bool) and p >= 0
                           for p in pads)):
            raise OpError(f"pad: {what} must be {data.ndim} ints >= 0, one per axis of data "
                          f"of shape {shape_str(data.shape)}, got {pads!r}")
    value = te.const(pad_value, data.dtype)
    out_shape = tuple(simplify(d + b + a) for d, b, a in zip(data.shape, pad_before, pad_after))

    def fcompute(*index):
        inside = []
        for i, d, b, a in zip(index, data.shape, pad_before, pad_after):
            if b:
                inside.append(i >= b)
            if a:
                inside.append(i < d + b)
        read = data[tuple(i - b for i, b in zip(index, pad_before))]
        return te.if_then_else(te.all(*inside), read, value) if inside else read

    return te.compute(out_shape, fcompute, name="pad")


def pad_hw(data, padding: tuple[int, int, int, int], hw_axes: tuple[int, int], pad_value=0.0):
    """`data` padded by (top, left, bottom, right) on its height and width axes; `data`
    itself when all are 0, so an unpadded window operator has no copy stage."""
    if not any(padding):
        return data
    before, after = [0] * data.ndim, [0] * data.ndim
    h, w = hw_axes
    before[h], before[w], after[h], after[w] = padding
    return pad(data, before, after, pad_value)
