"""2-D max and average pooling, NCHW or packed NCHW[x]c (N, C/x, H, W, x: the window
runs over axes 2 and 3 either way), pattern OUT_ELEMWISE_FUSABLE.

`kernel`, `stride` and `dilation` are an int or a (height, width) pair, `stride`
defaulting to the kernel (windows side by side); `padding` an int, a (height, width) pair
or (top, left, bottom, right), each side smaller than the kernel so that no window is all
padding. A dilated window takes every `dilation`-th element (ONNX's `dilations`).

`ceil_mode=True` rounds the number of windows up instead of down (ONNX's, PyTorch's):
one more window on an axis whose padded extent the windows do not tile, as long as it
starts inside the data or the leading padding (pooled_extent); the part of it beyond the
trailing padding is neither data nor padding, and never counts.

Average pooling divides by the number of input elements in each window, padding
excluded, by default (`count_include_pad=False`): a border window averages the data it
covers instead of being pulled toward zero. `count_include_pad=True` divides by the
number of the window's elements inside the padded data (the kernel area everywhere but
the windows ceil_mode adds: PyTorch's and TOPI's default). Its result is float32 for
integer data; max pooling keeps the dtype.
"""
from __future__ import annotations

from .. import te
from ..ir.expr import is_float
from .pad import pad_hw
from .pattern import PATTERN_ATTR, OpPattern, register_pattern
from .shape import OpError, Window2D, check_tensor, shape_str, static_shape, window2d


def pooled_extent(size: int, kernel: int, stride: int, before: int, after: int,
                  dilation: int = 1, ceil_mode: bool = False) -> int:
    """The number of windows along an axis of `size` padded by `before` and `after`
    (below 1 when none fits); with `ceil_mode`, rounded up but without a last window that
    would start in the trailing padding (ONNX's rule)."""
    room = size + before + after - dilation * (kernel - 1) - 1
    if room < 0:
        return 0
    if not ceil_mode:
        return room // stride + 1
    out = -(-room // stride) + 1
    return out - 1 if (out - 1) * stride >= size + before else out


def _window(op: str, data, kernel, stride, padding, dilation,
            ceil_mode: bool) -> tuple[Window2D, tuple[int, int]]:
    """The window, and the (bottom, right) padding that ceil_mode's last windows add."""
    check_tensor(op, "data", data)
    if data.ndim not in (4, 5):
        raise OpError(f"{op}: data must be NCHW (4 dimensions) or NCHW[x]c (5), got shape "
                      f"{shape_str(data.shape)}")
    size = static_shape(op, "data", data)[2:4]
    args = (f"data of shape {shape_str(data.shape)}, kernel={kernel!r}, stride={stride!r}, "
            f"padding={padding!r}, dilation={dilation!r}")
    win = window2d(op, args, size, kernel, kernel if stride is None else stride, padding,
                   dilation)
    if any(p >= k for p, k in zip(win.padding, win.kernel * 2)):
        raise OpError(f"{op}: padding (top, left, bottom, right) = {win.padding} must be "
                      f"smaller than the kernel {win.kernel} on every side, or a window could "
                      f"hold only padding ({args})")
    if not ceil_mode:
        return win, (0, 0)
    out, extra = [], []
    for ax in range(2):
        k, s, d = win.kernel[ax], win.stride[ax], win.dilation[ax]
        before, after = win.padding[ax], win.padding[ax + 2]
        n = pooled_extent(size[ax], k, s, before, after, d, True)
        out.append(n)
        extra.append(max(0, (n - 1) * s + d * (k - 1) + 1 - (size[ax] + before + after)))
    return Window2D(win.kernel, win.stride, win.dilation, win.padding, tuple(out)), \
        tuple(extra)


def nchw_or_packed(data, f):
    """A compute function of the output index for `data`'s rank, NCHW or NCHW[x]c:
    `f(b, c, y, x, v)` with `v` the packed layout's inner index as a tuple (empty for
    NCHW); the image operators (pools, resize2d) compute through it."""
    if data.ndim == 5:
        return lambda b, c, y, x, v: f(b, c, y, x, (v,))
    return lambda b, c, y, x: f(b, c, y, x, ())


def _padded(data, win: Window2D, extra: tuple[int, int], value=0.0):
    top, left, bottom, right = win.padding
    return pad_hw(data, (top, left, bottom + extra[0], right + extra[1]), (2, 3), value)


def _taps(kernel: tuple[int, int]):
    return te.reduce_axis((0, kernel[0]), name="ry"), te.reduce_axis((0, kernel[1]), name="rx")


@register_pattern(OpPattern.OUT_ELEMWISE_FUSABLE)
def max_pool2d(data, kernel, stride=None, padding=0, dilation=1, ceil_mode: bool = False):
    """Maximum over each window of data (N, C, H, W): (N, C, OH, OW); packed data
    (N, C/x, H, W, x) gives (N, C/x, OH, OW, x)."""
    win, extra = _window("max_pool2d", data, kernel, stride, padding, dilation, ceil_mode)
    # Padding with max's identity (-inf, or the dtype's minimum) never wins a window.
    src = _padded(data, win, extra, te.min_value(data.dtype))
    (sh, sw), (dh, dw) = win.stride, win.dilation
    ry, rx = _taps(win.kernel)
    return te.compute(data.shape[:2] + win.out + data.shape[4:], nchw_or_packed(
        data, lambda b, c, y, x, v: te.max(src[(b, c, y * sh + ry * dh, x * sw + rx * dw, *v)],
                                           axis=[ry, rx])), name="max_pool2d")


def _inside(start, kernel: int, dilation: int, lo: int, hi: int):
    """How many of a window's taps start + t * dilation (t < kernel) fall in [lo, hi)."""
    if dilation == 1:
        return te.min(start + kernel, hi) - te.max(start, lo)
    first = te.max(te.floordiv(lo - start + dilation - 1, dilation), 0)
    last = te.min(te.floordiv(hi - 1 - start, dilation), kernel - 1)
    return last - first + 1


@register_pattern(OpPattern.OUT_ELEMWISE_FUSABLE)
def avg_pool2d(data, kernel, stride=None, padding=0, count_include_pad: bool = False,
               dilation=1, ceil_mode: bool = False):
    """Mean over each window of data (N, C, H, W): (N, C, OH, OW) (packed data as
    max_pool2d); see the module docstring for what a border window divides by."""
    win, extra = _window("avg_pool2d", data, kernel, stride, padding, dilation, ceil_mode)
    src = _padded(data, win, extra)
    (sh, sw), (dh, dw), (kh, kw) = win.stride, win.dilation, win.kernel
    top, left, bottom, right = win.padding
    h, w = data.shape[2:4]
    dtype = data.dtype if is_float(data.dtype) else "float32"
    ry, rx = _taps(win.kernel)
    total = te.compute(
        data.shape[:2] + win.out + data.shape[4:], nchw_or_packed(
            data, lambda b, c, y, x, v: te.sum(
                src[(b, c, y * sh + ry * dh, x * sw + rx * dw, *v)].astype(dtype),
                axis=[ry, rx])),
        name="avg_pool2d.sum", attrs={PATTERN_ATTR: OpPattern.COMM_REDUCE})
    if not any(extra) and (count_include_pad or not any(win.padding)):
        return te.compute(total.shape, lambda *i: total[i] * te.const(1.0 / (kh * kw), dtype),
                          name="avg_pool2d")
    # The window's taps inside the data, or inside the padded data (count_include_pad).
    lo_y, hi_y = (-top, h + bottom) if count_include_pad else (0, h)
    lo_x, hi_x = (-left, w + right) if count_include_pad else (0, w)

    def count(y, x):
        rows = _inside(y * sh - top, kh, dh, lo_y, hi_y)
        cols = _inside(x * sw - left, kw, dw, lo_x, hi_x)
        return (rows * cols).astype(dtype)

    return te.compute(total.shape, nchw_or_packed(
        data, lambda b, c, y, x, v: total[(b, c, y, x, *v)] / count(y, x)), name="avg_pool2d")
