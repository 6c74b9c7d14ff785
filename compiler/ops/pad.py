"""Padding (TOPI's nn.pad and nn.mirror_pad), pattern INJECTIVE: the padding stage of
conv2d and pooling, kept separate so a schedule can inline it or compute it once.

`pad_mode` says what the border holds (Relay's names, ONNX's Pad modes): "constant"
(`pad_value`), "edge" (the nearest element of the data repeated) or "reflect" (the data
mirrored about its first and last element, which are not repeated: numpy's "reflect";
each width at most the axis' extent minus one)."""
from __future__ import annotations

from .. import te
from ..arith.simplify import simplify
from .pattern import OpPattern, register_pattern
from .shape import OpError, check_tensor, get_const_tuple, shape_str

PAD_MODES = ("constant", "edge", "reflect")


@register_pattern(OpPattern.INJECTIVE)
def pad(data, pad_before, pad_after=None, pad_value=0.0, pad_mode: str = "constant"):
    """`data` with `pad_before[i]` elements before axis i and `pad_after[i]` (default:
    pad_before) after it, one non-negative int per axis; the border is `pad_value`, or
    the data's edge or reflection as `pad_mode` says (the module docstring)."""
    check_tensor("pad", "data", data)
    pad_after = pad_before if pad_after is None else pad_after
    for what, pads in (("pad_before", pad_before), ("pad_after", pad_after)):
        if (not isinstance(pads, (tuple, list)) or len(pads) != data.ndim
                or not all(isinstance(p, int) and not isinstance(p, bool) and p >= 0
                           for p in pads)):
            raise OpError(f"pad: {what} must be {data.ndim} ints >= 0, one per axis of data "
                          f"of shape {shape_str(data.shape)}, got {pads!r}")
    if pad_mode not in PAD_MODES:
        raise OpError(f"pad: pad_mode {pad_mode!r} is not one of {', '.join(PAD_MODES)}")
    out_shape = tuple(simplify(d + b + a) for d, b, a in zip(data.shape, pad_before, pad_after))
    if pad_mode != "constant":
        return _border(data, pad_before, pad_after, pad_mode, out_shape)
    value = te.const(pad_value, data.dtype)

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


def _border(data, pad_before, pad_after, mode: str, out_shape):
    """Edge or reflect padding: every element reads the data, at an index folded into it."""
    try:
        shape = get_const_tuple(data.shape)
    except TypeError:
        raise OpError(f"pad: {mode} padding needs a constant shape, got "
                      f"{shape_str(data.shape)}") from None
    if mode == "reflect" and any(max(b, a) > d - 1 for d, b, a in
                                 zip(shape, pad_before, pad_after) if b or a):
        raise OpError(f"pad: reflect padding ({pad_before}, {pad_after}) must be at most the "
                      f"extent minus one on each axis of data of shape {shape_str(shape)}")

    def fold(i, d, b, a):
        if not b and not a:
            return i
        j = i - b
        if mode == "edge":
            return te.max(te.min(j, d - 1), 0)
        return te.select(j < 0, -j, te.select(j > d - 1, 2 * (d - 1) - j, j))

    return te.compute(out_shape, lambda *index: data[tuple(
        fold(i, d, b, a) for i, d, b, a in zip(index, shape, pad_before, pad_after))],
        name="pad")


def pad_hw(data, padding: tuple[int, int, int, int], hw_axes: tuple[int, int], pad_value=0.0):
    """`data` padded by (top, left, bottom, right) on its height and width axes; `data`
    itself when all are 0, so an unpadded window operator has no copy stage."""
    if not any(padding):
        return data
    before, after = [0] * data.ndim, [0] * data.ndim
    h, w = hw_axes
    before[h], before[w], after[h], after[w] = padding
    return pad(data, before, after, pad_value)
