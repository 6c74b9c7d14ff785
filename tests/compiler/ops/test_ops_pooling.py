"""compiler.ops max_pool2d and avg_pool2d (padding excluded from or included in the
average; dilated windows; ceil_mode's extra windows) built with the default schedule and
compared with numpy; bad windows name the operator and the shapes."""
from __future__ import annotations

import numpy as np
import pytest

from compiler import ops, te
from build_check import check_build, randn

pytestmark = pytest.mark.filterwarnings("error::compiler.transform.VectorizeWarning")


def pool_ref(x, kernel, stride, padding, kind):
    """Max, average over the data in the window ("avg"), or over the whole window
    ("avg_pad"), by brute force over output positions."""
    (kh, kw), (sh, sw), (top, left, bottom, right) = kernel, stride, padding
    n, c, h, w = x.shape
    oh, ow = (h + top + bottom - kh) // sh + 1, (w + left + right - kw) // sw + 1
    out = np.empty((n, c, oh, ow))
    for y in range(oh):
        for x_ in range(ow):
            y0, x0 = y * sh - top, x_ * sw - left
            win = x[:, :, max(y0, 0):y0 + kh, max(x0, 0):x0 + kw].astype("float64")
            out[:, :, y, x_] = (win.max(axis=(2, 3)) if kind == "max" else
                                win.mean(axis=(2, 3)) if kind == "avg" else
                                win.sum(axis=(2, 3)) / (kh * kw))
    return out


def dilated_ref(x, kernel, stride, padding, dilation, ceil_mode, kind):
    """Pools by brute force over output positions and taps, the number of windows by
    ONNX's rule (ceil_mode: rounded up, but the last window starts inside the data or
    the leading padding); "avg_pad" counts the taps inside the padded data."""
    n, c, h, w = x.shape
    out = []
    for ax, size in enumerate((h, w)):
        room = size + padding[ax] + padding[ax + 2] - dilation[ax] * (kernel[ax] - 1) - 1
        count = (-(-room // stride[ax]) if ceil_mode else room // stride[ax]) + 1
        if ceil_mode and (count - 1) * stride[ax] >= size + padding[ax]:
            count -= 1
        out.append(count)
    result = np.empty((n, c, *out))
    for oy in range(out[0]):
        for ox in range(out[1]):
            vals, inside = [], 0
            for ty in range(kernel[0]):
                for tx in range(kernel[1]):
                    y = oy * stride[0] - padding[0] + ty * dilation[0]
                    x_ = ox * stride[1] - padding[1] + tx * dilation[1]
                    if 0 <= y < h and 0 <= x_ < w:
                        vals.append(x[:, :, y, x_].astype("float64"))
                    inside += (-padding[0] <= y < h + padding[2] and
                               -padding[1] <= x_ < w + padding[3])
            result[:, :, oy, ox] = (np.max(vals, axis=0) if kind == "max" else
                                    np.sum(vals, axis=0) / (len(vals) if kind == "avg"
                                                            else inside))
    return result


@pytest.mark.parametrize("shape,kernel,stride,padding,dilation,ceil_mode", [
    ((1, 3, 13, 7), (3, 3), (2, 2), (1, 0, 0, 1), (1, 1), True),
    ((2, 2, 13, 37), (2, 3), (3, 2), (1, 2, 1, 0), (2, 3), True),
    ((1, 2, 7, 13), (3, 2), (1, 2), (2, 1, 0, 1), (3, 2), False),
    ((1, 1, 6, 6), (3, 3), (2, 2), (0, 0, 0, 0), (1, 1), True),
])
def test_dilated_and_ceil_mode_pools(shape, kernel, stride, padding, dilation, ceil_mode):
    d = te.placeholder(shape, name="d")
    window = dict(kernel=kernel, stride=stride, padding=padding, dilation=dilation,
                  ceil_mode=ceil_mode)
    outs = [ops.max_pool2d(d, **window), ops.avg_pool2d(d, **window),
            ops.avg_pool2d(d, **window, count_include_pad=True)]
    x = randn(2, *shape) - 5
    want = [dilated_ref(x, kernel, stride, padding, dilation, ceil_mode, kind)
            for kind in ("max", "avg", "avg_pad")]
    assert [tuple(int(v) for v in o.shape) for o in outs] == [w.shape for w in want]
    check_build(ops.default_schedule(outs), [d, *outs], [x], want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("shape,kernel,stride,padding,pads", [
    ((1, 3, 13, 17), 2, None, 0, (0, 0, 0, 0)),
    ((2, 2, 13, 7), 3, 2, 1, (1, 1, 1, 1)),
    ((1, 2, 9, 1000), (3, 2), (1, 3), (2, 1, 0, 1), (2, 1, 0, 1)),
])
def test_pools(shape, kernel, stride, padding, pads):
    d = te.placeholder(shape, name="d")
    outs = [ops.max_pool2d(d, kernel, stride, padding), ops.avg_pool2d(d, kernel, stride, padding),
            ops.avg_pool2d(d, kernel, stride, padding, count_include_pad=True)]
    k = kernel if isinstance(kernel, tuple) else (kernel, kernel)
    st = k if stride is None else stride if isinstance(stride, tuple) else (stride, stride)
    x = randn(1, *shape) - 5  # all negative: padding must not win a max
    want = [pool_ref(x, k, st, pads, kind) for kind in ("max", "avg", "avg_pad")]
    check_build(ops.default_schedule(outs), [d, *outs], [x], want, rtol=1e-5, atol=1e-5)


def test_integer_pools():
    d = te.placeholder((1, 2, 7, 9), name="d", dtype="int32")
    outs = [ops.max_pool2d(d, 3, 2, 1), ops.avg_pool2d(d, 3, 2, 1)]
    assert [o.dtype for o in outs] == ["int32", "float32"]
    x = np.random.default_rng(3).integers(-50, -1, (1, 2, 7, 9)).astype("int32")
    want = [pool_ref(x, (3, 3), (2, 2), (1, 1, 1, 1), kind) for kind in ("max", "avg")]
    check_build(ops.default_schedule(outs), [d, *outs], [x], want, rtol=1e-6)


@pytest.mark.parametrize("op", [ops.max_pool2d, ops.avg_pool2d])
def test_errors(op):
    name = op.__name__
    d = te.placeholder((1, 3, 5, 5), name="d")
    with pytest.raises(ValueError, match=rf"{name}: the output would be empty.*data of shape "
                                         rf"\(1, 3, 5, 5\), kernel=6"):
        op(d, 6)
    with pytest.raises(ValueError, match=rf"{name}: padding .* = \(1, 3, 1, 3\) must be smaller "
                                         rf"than the kernel \(3, 3\)"):
        op(d, 3, padding=(1, 3))
    with pytest.raises(ValueError, match=rf"{name}: kernel size must be an int or a pair"):
        op(d, (2, 2, 2))
    with pytest.raises(ValueError,
                       match=rf"{name}: data must be NCHW \(4 dimensions\) or NCHW\[x\]c \(5\)"):
        op(te.placeholder((5, 5)), 2)
