"""Converters of ONNX's image ops: convolutions (ConvTranspose as an ordinary convolution
on the dilated input), pools (ceil_mode, dilations, auto_pad), padding (constant, edge,
reflect) and resizing (Resize, Upsample), on 4-D NCHW data; the convolutions and pools
also on 3-D (N, C, L) data, as 2-D with a unit height."""
from __future__ import annotations

import numpy as np

from ... import graph
from ...graph.ir.expr import Constant
from ...graph.ir.op import image, pool, tensor, transform
from ...ops.resize import COORDINATE_MODES, ROUNDING_METHODS
from ...ir.dtype import is_float
from .common import Attributes, pads, same_split, text


def _kernel_shape(ctx, weight, attrs):
    """A convolution's kernel_shape attribute, which must be its weight's window."""
    given = attrs.get("kernel_shape")
    window = ctx.shape(weight)[2:]
    if given is not None and tuple(given) != tuple(window):
        raise ValueError(f"kernel_shape={list(given)} differs from the weight's window "
                         f"{list(window)}")


def _conv(ctx, args, attrs, node):
    data, weight, bias = (args + [None])[:3]
    _kernel_shape(ctx, weight, attrs)
    strides, dilation = attrs.get("strides", (1, 1)), attrs.get("dilations", (1, 1))
    padding = pads(attrs, _image(ctx, data)[2:], ctx.shape(weight)[2:], strides, dilation)
    out = graph.nn.conv2d(data, weight, strides=strides, padding=padding, dilation=dilation,
                          groups=attrs.get("group", 1))
    return out if bias is None else graph.nn.bias_add(out, bias)


_LIFTED = {"kernel_shape": 1, "strides": 1, "dilations": 1, "output_padding": 0,
           "output_shape": 1}
"""A 1-D window's attributes as 2-D ones: the value for the unit height in front."""


def _also_1d(convert, lifted: int):
    """`convert` (of 2-D NCHW windows) that also takes 1-D ones, (N, C, L): as 2-D with a
    unit height, the result reshaped back. `lifted`: how many leading inputs (data,
    weight) are windows to lift."""
    def wrapped(ctx, args, attrs, node):
        if len(ctx.shape(args[0])) != 3:
            return convert(ctx, args, attrs, node)
        args = [graph.reshape(a, (*ctx.shape(a)[:2], 1, ctx.shape(a)[2]))
                if k < lifted and a is not None else a for k, a in enumerate(args)]
        flat = Attributes({})
        for name, value in attrs.items():
            if name == "pads":
                value = [0, value[0], 0, value[1]]
            elif name in _LIFTED:
                value = [_LIFTED[name], *value]
            dict.__setitem__(flat, name, value)
        out = convert(ctx, args, flat, node)
        attrs.read |= flat.read
        outs = out if isinstance(out, tuple) else (out,)
        outs = tuple(graph.reshape(o, (*ctx.shape(o)[:2], ctx.shape(o)[3])) for o in outs)
        return outs if isinstance(out, tuple) else outs[0]
    return wrapped


def _image(ctx, expr, what: str = "input") -> tuple:
    """The shape of an NCHW image (a ValueError for any other rank)."""
    shape = ctx.shape(expr)
    if len(shape) != 4:
        raise ValueError(f"its {what} of shape {shape} is not supported (4-D NCHW only)")
    return shape


def _conv_transpose(ctx, args, attrs, node):
    """Y = ConvTranspose(X, W) as a convolution of W flipped on H and W, its in and out
    channels swapped in each group, over X dilated by the strides and padded by
    dilation * (kernel - 1) less the pads (plus output_padding at the end); pads beyond
    that crop the dilated input instead."""
    data, weight, bias = (args + [None])[:3]
    _image(ctx, data)
    _kernel_shape(ctx, weight, attrs)
    channels, per_group, kh, kw = _image(ctx, weight, "weight")
    group = attrs.get("group", 1)
    strides, dilation = attrs.get("strides", (1, 1)), attrs.get("dilations", (1, 1))
    (top, left, bottom, right), extra = _transpose_pads(ctx.shape(data)[2:], (kh, kw),
                                                        strides, dilation, attrs)
    w = graph.reshape(weight, (group, channels // group, per_group, kh, kw))
    w = graph.reshape(graph.transpose(w, (0, 2, 1, 3, 4)),
                      (group * per_group, channels // group, kh, kw))
    w = transform.strided_slice(w, (0, 0, kh - 1, kw - 1),
                                (group * per_group, channels // group, -kh - 1, -kw - 1),
                                (1, 1, -1, -1))
    x = data if tuple(strides) == (1, 1) else image.dilate(data, (1, 1, *strides))
    h, wd = ctx.shape(x)[2:]
    before = [dilation[0] * (kh - 1) - top, dilation[1] * (kw - 1) - left]
    after = [dilation[0] * (kh - 1) - bottom + extra[0],
             dilation[1] * (kw - 1) - right + extra[1]]
    if min(before + after) < 0:
        x = transform.strided_slice(x, (0, 0, max(0, -before[0]), max(0, -before[1])),
                                    ctx.shape(x)[:2] + (h - max(0, -after[0]),
                                                        wd - max(0, -after[1])))
    out = graph.nn.conv2d(x, w, padding=tuple(max(0, p) for p in before + after),
                          dilation=dilation, groups=group)
    return out if bias is None else graph.nn.bias_add(out, bias)


def _transpose_pads(size, kernel, strides, dilation, attrs) -> tuple:
    """ConvTranspose's ((top, left, bottom, right), output_padding): its pads, or those
    that give its output_shape (auto_pad SAME_UPPER / SAME_LOWER without one: the input's
    size times the stride), split as ONNX's rules say (the odd one at the start, but for
    SAME_UPPER, at the end); an output_shape beyond the full output grows
    output_padding."""
    extra = list(attrs.get("output_padding", (0, 0)))
    mode = text(attrs.get("auto_pad", "NOTSET"))
    same = mode in ("SAME_UPPER", "SAME_LOWER")
    if same and "output_shape" not in attrs:
        begin, end = zip(*(same_split(strides[ax] * (size[ax] - 1) + extra[ax] + dilation[ax]
                                      * (kernel[ax] - 1) + 1 - size[ax] * strides[ax], mode)
                           for ax in range(2)))
        return begin + end, extra
    given = (0, 0, 0, 0) if same else pads(attrs)  # (NOTSET or VALID)
    if "output_shape" not in attrs:
        return given, extra
    shape = list(attrs["output_shape"])
    if len(shape) != 2:
        raise ValueError(f"output_shape={shape} is not supported (two values, H and W)")
    found = [0, 0, 0, 0]
    for ax in range(2):
        full = strides[ax] * (size[ax] - 1) + extra[ax] + dilation[ax] * (kernel[ax] - 1) + 1
        total = full - shape[ax]
        if total < 0:
            extra[ax] -= total
            total = 0
        found[ax], found[ax + 2] = total - total // 2, total // 2
    return tuple(found), extra


def _pool(kind):
    def convert(ctx, args, attrs, node):
        kernel = list(attrs["kernel_shape"])
        if len(kernel) not in (2, 3):
            raise ValueError(f"kernel_shape={kernel} is not supported (1-D to 3-D pools)")
        rank = len(kernel)
        indices = len(node.output) > 1 and bool(node.output[1])
        if indices and (kind != "max" or rank != 2):
            raise ValueError("its Indices output is not supported (1-D and 2-D MaxPool only)")
        strides = list(attrs.get("strides", (1,) * rank))
        dilation = list(attrs.get("dilations", (1,) * rank))
        size = ctx.shape(args[0])[2:]
        if len(size) != rank:
            raise ValueError(f"kernel_shape={kernel} does not fit an input of shape "
                             f"{ctx.shape(args[0])}")
        padding = pads(attrs, size, kernel, strides, dilation)

        # the window's (kernel, stride, dilation, pad before, pad after) per axis, and a
        # unit one (a 3-D pool's second pass has H x W as one axis of a unit window)
        axes = [(kernel[a], strides[a], dilation[a], padding[a], padding[a + rank])
                for a in range(rank)] + [(1, 1, 1, 0, 0)]

        def pool(x, first, second):  # the 2-D pool over two of those axes
            k, s, dl, b, e = zip(axes[first], axes[second])
            common = {"pool_size": k, "strides": s, "dilation": dl, "padding": b + e,
                      "ceil_mode": bool(attrs.get("ceil_mode", 0))}
            if kind == "max":
                return graph.nn.max_pool2d(x, **common)
            return graph.nn.avg_pool2d(x, count_include_pad=bool(
                attrs.get("count_include_pad", 0)), **common)
        if rank == 2:
            out = pool(args[0], 0, 1)
            return (out, _window_argmax(ctx, args[0], out, axes, attrs.get("storage_order", 0))) \
                if indices else out
        return _pool_3d(ctx, args[0], pool)
    return convert


def _window_argmax(ctx, x, out, axes, column_major: int):
    """MaxPool's Indices: each output's flat index into x (N, C, H, W, with H and W
    swapped for storage_order=1) of its window's first element, in the window's scan
    order, that equals the max: a where over the window's offsets, the last first, each
    offset's elements a strided slice of x padded with the lowest value."""
    n, c, h, w = ctx.shape(x)
    oh, ow = ctx.shape(out)[2:]
    (kh, sh, dh, top, _), (kw, sw, dw, left, _) = axes[:2]
    dtype = ctx.dtype(x)
    low = -np.inf if is_float(dtype) else float(np.iinfo(dtype).min)
    padded = graph.nn.pad(x, [(0, 0), (0, 0),
                              (top, max(0, (oh - 1) * sh + (kh - 1) * dh + 1 - h - top)),
                              (left, max(0, (ow - 1) * sw + (kw - 1) * dw + 1 - w - left))],
                          low, "constant")
    base = Constant(np.arange(n * c, dtype="int64").reshape(n, c, 1, 1) * h * w)
    found = None
    for i in reversed(range(kh)):
        for j in reversed(range(kw)):
            rows = (np.arange(oh) * sh - top + i * dh)[:, None]
            cols = (np.arange(ow) * sw - left + j * dw)[None, :]
            spatial = cols * h + rows if column_major else rows * w + cols
            index = graph.add(base, Constant(spatial.astype("int64")))
            if found is None:  # (the window's last element: a max is somewhere in it)
                found = index
                continue
            value = transform.strided_slice(
                padded, (0, 0, i * dh, j * dw),
                (n, c, i * dh + (oh - 1) * sh + 1, j * dw + (ow - 1) * sw + 1), (1, 1, sh, sw))
            inside = (rows >= 0) & (rows < h) & (cols >= 0) & (cols < w)
            hit = tensor.logical_and(Constant(inside), tensor.equal(value, out))
            found = tensor.where(hit, index, found)
    return found


def _pool_3d(ctx, x, pool):
    """A 3-D pool as two 2-D ones, over H and W of each depth slice, then over D: a max,
    and an average (its count of valid elements is a product of the axes' counts), of a
    box is the same taken axis by axis, padding, dilation and ceil_mode included."""
    n, c, d, h, w = ctx.shape(x)
    planes = pool(graph.reshape(x, (n, c * d, h, w)), 1, 2)
    h2, w2 = ctx.shape(planes)[2:]
    depth = pool(graph.reshape(planes, (n, c, d, h2 * w2)), 0, 3)
    return graph.reshape(depth, (n, c, ctx.shape(depth)[2], h2, w2))


def _pad(ctx, args, attrs, node):
    mode = text(attrs.get("mode", "constant"))
    if mode not in ("constant", "edge", "reflect"):
        raise ValueError(f"mode={mode!r} is not supported (constant, edge, reflect)")
    shape = ctx.shape(args[0])
    fed = None  # a constant_value fed at run time
    if ctx.opset >= 11:
        widths = [int(p) for p in ctx.value(args[1], "pads").reshape(-1)]
        if len(args) > 2 and args[2] is not None and not ctx.known(args[2]):
            fed, value = args[2], 0.0
        else:
            value = ctx.optional(args, 2, "constant_value", np.zeros(1))
            value = float(np.asarray(value).reshape(-1)[0]) if np.size(value) else 0.0
        axes = ctx.optional(args, 3, "axes")
    else:
        widths, value, axes = list(attrs["pads"]), float(attrs.get("value", 0.0)), None
    n = len(widths) // 2
    if axes is not None:  # opset 18: pads for these axes only
        full = [0] * (2 * len(shape))
        for k, a in enumerate(int(a) % len(shape) for a in np.reshape(axes, -1)):
            full[a], full[a + len(shape)] = widths[k], widths[k + n]
        widths, n = full, len(shape)
    if n != len(shape):
        raise ValueError(f"pads={widths} has {n} pairs for an input of {len(shape)} "
                         f"dimensions")
    before, after = widths[:n], widths[n:]
    x = args[0]
    if min(widths) < 0:  # a negative pad crops
        x = transform.strided_slice(x, [max(0, -b) for b in before],
                                    [d - max(0, -a) for d, a in zip(shape, after)])
    widths = [(max(0, b), max(0, a)) for b, a in zip(before, after)]
    out = graph.nn.pad(x, widths, value, mode)
    if fed is None or mode != "constant":
        return out
    border = np.pad(np.zeros(ctx.shape(x), "bool"), widths, constant_values=True)
    return tensor.where(Constant(border), graph.reshape(fed, ()), out)


def _resize(ctx, args, attrs, node):
    """Resize: opset 10 as Upsample; opsets 11 to 19 by their attributes, each value
    this importer does not compute a ValueError naming it."""
    if ctx.opset < 11:
        return _upsample(ctx, args, attrs, node)
    for name, default, supported in (
            ("mode", "nearest", ("nearest", "linear")),
            ("coordinate_transformation_mode", "half_pixel", COORDINATE_MODES),
            ("nearest_mode", "round_prefer_floor", ROUNDING_METHODS),
            ("keep_aspect_ratio_policy", "stretch", ("stretch",))):
        value = text(attrs.get(name, default))
        if value not in supported:
            raise ValueError(f"{name}={value!r} is not supported ({', '.join(supported)})")
    for name in ("antialias", "exclude_outside"):
        if attrs.get(name, 0):
            raise ValueError(f"{name}={attrs[name]} is not supported (0 only)")
    shape = _image(ctx, args[0])
    scales = ctx.optional(args, 2, "scales")
    sizes = ctx.optional(args, 3, "sizes")
    scales = None if scales is None or scales.size == 0 else [float(s) for s in scales]
    sizes = None if sizes is None or sizes.size == 0 else [int(s) for s in sizes]
    if (scales is None) == (sizes is None):
        raise ValueError("it needs exactly one of the scales and sizes inputs")
    axes = [int(a) % 4 for a in attrs.get("axes", range(4))]
    given = scales if sizes is None else sizes
    if len(given) != len(axes):
        raise ValueError(f"{'scales' if sizes is None else 'sizes'}={given} has not one "
                         f"value per axis of {axes}")
    full = [1.0] * 4 if sizes is None else list(shape)
    for a, v in zip(axes, given):
        full[a] = v
    mode = text(attrs.get("mode", "nearest"))
    return _resize2d(args[0], shape, full if sizes is None else None,
                     None if sizes is None else full,
                     "nearest_neighbor" if mode == "nearest" else "linear",
                     text(attrs.get("coordinate_transformation_mode", "half_pixel")),
                     text(attrs.get("nearest_mode", "round_prefer_floor")))


def _resize2d(x, shape, scales, sizes, method, mode, rounding):
    """image.resize2d of NCHW `x` of `shape` by 4 `scales` (out = floor(in * scale), in
    float32 as ONNX Runtime) or to 4 `sizes`; N and C must keep their extent."""
    if sizes is None:
        sizes = [int(np.float32(s) * np.float32(d)) for s, d in zip(scales, shape)]
    if tuple(sizes[:2]) != tuple(shape[:2]):
        what = f"scales={scales}" if scales is not None else f"sizes={sizes}"
        raise ValueError(f"{what} resizes N or C, which is not supported (H and W only)")
    return image.resize2d(x, sizes[2:], () if scales is None else scales[2:], method, mode,
                          rounding)


def _upsample(ctx, args, attrs, node):
    """Upsample (opsets 7 to 9) and Resize-10: scales, asymmetric coordinates; nearest
    rounds down when up-sampling and up when down-sampling (ONNX Runtime's)."""
    mode = text(attrs.get("mode", "nearest"))
    if mode not in ("nearest", "linear"):
        raise ValueError(f"mode={mode!r} is not supported (nearest, linear)")
    shape = _image(ctx, args[0])
    scales = [float(s) for s in (attrs["scales"] if "scales" in attrs else
                                 ctx.value(args[1], "scales").reshape(-1))]
    down = {s < 1 for s in scales[2:]}
    if len(down) > 1:
        raise ValueError(f"scales={scales} up-samples one axis and down-samples the other, "
                         f"which is not supported with mode={mode!r}")
    return _resize2d(args[0], shape, scales, None,
                     "nearest_neighbor" if mode == "nearest" else "linear", "asymmetric",
                     "ceil" if down == {True} else "floor")


CONVERTERS = {
    "Conv": _also_1d(_conv, 2),
    "ConvTranspose": _also_1d(_conv_transpose, 2),
    "MaxPool": _also_1d(_pool("max"), 1),
    "AveragePool": _also_1d(_pool("avg"), 1),
    "GlobalAveragePool": lambda c, a, at, n: graph.nn.global_avg_pool2d(a[0]),
    "GlobalMaxPool": lambda c, a, at, n: pool.global_max_pool2d(a[0]),
    "Pad": _pad,
    "Resize": _resize,
    "Upsample": _upsample,
}
