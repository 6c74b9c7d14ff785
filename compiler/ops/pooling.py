"""2-D max and average pooling, NCHW or packed NCHW[x]c (N, C/x, H, W, x: the window
runs over axes 2 and 3 either way), pattern OUT_ELEMWISE_FUSABLE.

`kernel` and `stride` are an int or a (height, width) pair, `stride` defaulting to the
kernel (windows side by side); `padding` an int, a (height, width) pair or (top, left,
bottom, right), each side smaller than the kernel so that no window is all padding.

Average pooling divides by the number of input elements in each window, padding
excluded, by default (`count_include_pad=False`): a border window averages the data it
covers instead of being pulled toward zero. `count_include_pad=True` divides by the
kernel area everywhere (PyTorch's and TOPI's default). Its result is float32 for
integer data; max pooling keeps the dtype.
"""
from __future__ import annotations

from .. import te
from ..ir.expr import is_float
from .pad import pad_hw
from .pattern import PATTERN_ATTR, OpPattern, register_pattern
from .shape import OpError, Window2D, check_tensor, shape_str, static_shape, window2d


def _window(op: str, data, kernel, stride, padding) -> Window2D:
    check_tensor(op, "data", data)
    if data.ndim not in (4, 5):
        raise OpError(f"{op}: data must be NCHW (4 dimensions) or NCHW[x]c (5), got shape "
                      f"{shape_str(data.shape)}")
    _, _, h, w = static_shape(op, "data", data)[:4]
    args = (f"data of shape {shape_str(data.shape)}, kernel={kernel!r}, stride={stride!r}, "
            f"padding={padding!r}")
    win = window2d(op, args, (h, w), kernel, kernel if stride is None else stride, padding)
    if any(p >= k for p, k in zip(win.padding, win.kernel * 2)):
        raise OpError(f"{op}: padding (top, left, bottom, right) = {win.padding} must be "
                      f"smaller than the kernel {win.kernel} on every side, or a window could "
                      f"hold only padding ({args})")
    return win


def _over_rank(data, f):
    """A compute function of the output index for `data`'s rank: `f(b, c, y, x, v)` with
    `v` the packed layout's inner index as a tuple (empty for NCHW)."""
    if data.ndim == 5:
        return lambda b, c, y, x, v: f(b, c, y, x, (v,))
    return lambda b, c, y, x: f(b, c, y, x, ())


@register_pattern(OpPattern.OUT_ELEMWISE_FUSABLE)
def max_pool2d(data, kernel, stride=None, padding=0):
    """Maximum over each window of data (N, C, H, W): (N, C, OH, OW); packed data
    (N, C/x, H, W, x) gives (N, C/x, OH, OW, x)."""
    win = _window("max_pool2d", data, kernel, stride, padding)
    # Padding with max's identity (-inf, or the dtype's minimum) never wins a window.
    src = pad_hw(data, win.padding, (2, 3), te.min_value(data.dtype))
    (sh, sw), (kh, kw) = win.stride, win.kernel
    ry = te.reduce_axis((0, kh), name="ry")
    rx = te.reduce_axis((0, kw), name="rx")
    return te.compute(data.shape[:2] + win.out + data.shape[4:], _over_rank(
        data, lambda b, c, y, x, v: te.max(src[(b, c, y * sh + ry, x * sw + rx, *v)],
                                           axis=[ry, rx])), name="max_pool2d")


@register_pattern(OpPattern.OUT_ELEMWISE_FUSABLE)
def avg_pool2d(data, kernel, stride=None, padding=0, count_include_pad: bool = False):
    """Mean over each window of data (N, C, H, W): (N, C, OH, OW) (packed data as
    max_pool2d); see the module docstring for what a border window divides by."""
    win = _window("avg_pool2d", data, kernel, stride, padding)
    src = pad_hw(data, win.padding, (2, 3))
    (sh, sw), (kh, kw) = win.stride, win.kernel
    top, left = win.padding[:2]
    h, w = data.shape[2:4]
    dtype = data.dtype if is_float(data.dtype) else "float32"
    ry = te.reduce_axis((0, kh), name="ry")
    rx = te.reduce_axis((0, kw), name="rx")
    total = te.compute(
        data.shape[:2] + win.out + data.shape[4:], _over_rank(
            data, lambda b, c, y, x, v: te.sum(
                src[(b, c, y * sh + ry, x * sw + rx, *v)].astype(dtype), axis=[ry, rx])),
        name="avg_pool2d.sum", attrs={PATTERN_ATTR: OpPattern.COMM_REDUCE})
    if count_include_pad or not any(win.padding):
        return te.compute(total.shape, lambda *i: total[i] * te.const(1.0 / (kh * kw), dtype),
                          name="avg_pool2d")

    def count(y, x):
        # The window's rows [y * sh - top, + kh) and columns, clipped to the data.
        rows = te.min(y * sh - top + kh, h) - te.max(y * sh - top, 0)
        cols = te.min(x * sw - left + kw, w) - te.max(x * sw - left, 0)
        return (rows * cols).astype(dtype)

    return te.compute(total.shape, _over_rank(
        data, lambda b, c, y, x, v: total[(b, c, y, x, *v)] / count(y, x)), name="avg_pool2d")
