"""The pools (Relay's `nn.max_pool2d`, `nn.avg_pool2d`, `nn.global_avg_pool2d`,
`nn.global_max_pool2d`), registered once with their type relations, computes, numpy
references, layout rule (a window over H and W computes in whatever layout its data is
in: NCHW, or NCHW[x]c as its `layout` attr says) and samples; and their constructors.
The windowed pools take Relay's `dilation` and `ceil_mode` (compiler.ops.pooling: the
windows ceil_mode adds start inside the data or the leading padding)."""
from __future__ import annotations

import numpy as np

from .... import ops
from ....ops.pattern import OpPattern
from ..expr import Call, Expr
from ..ty import TensorType
from .layout import transform_array
from .layout_rules import window as window_rule
from .registry import GraphTypeError, call, register_op
from .relations import padding4, pair, tensor_args


def _data(name, data, attrs):
    """A pool's data: NCHW, or NCHW[x]c (N, C/x, H, W, x) as its `layout` says."""
    layout = attrs["layout"]
    packed = layout != "NCHW"
    if data.ndim != (5 if packed else 4) or packed and f"NCHW{data.shape[-1]}c" != layout:
        raise GraphTypeError(f"{name}: data {data.shape} is not {layout}")
    return data


def _pool2d_rel(name):
    def rel(types, attrs):
        data, = tensor_args(name, types, 1)
        n, c = _data(name, data, attrs).shape[:2]
        out = [_extent(name, data.shape[2 + ax], attrs, ax) for ax in range(2)]
        return TensorType((n, c, *out, *data.shape[4:]), data.dtype)
    return rel


def _extent(name, size, attrs, ax):
    """The output extent of axis `ax` (0: H, 1: W) of a pool of `attrs` over `size`."""
    kernel, stride, dilation = (attrs[k][ax] for k in ("pool_size", "strides", "dilation"))
    before, after = attrs["padding"][ax], attrs["padding"][ax + 2]
    extent = ops.pooled_extent(size, kernel, stride, before, after, dilation,
                               attrs["ceil_mode"])
    if extent < 1:
        raise GraphTypeError(f"{name}: a window of {kernel} (dilation {dilation}) does not "
                             f"fit in {size} with padding {before}, {after}")
    return extent


def _global_rel(name):
    def rel(types, attrs):
        data, = tensor_args(name, types, 1)
        _data(name, data, attrs)
        return TensorType((*data.shape[:2], 1, 1, *data.shape[4:]), data.dtype)
    return rel


def _compute(kind):
    def compute(ins, at, ty):
        window = (at["pool_size"], at["strides"], at["padding"])
        if kind == "max":
            return ops.max_pool2d(ins[0], *window, dilation=at["dilation"],
                                  ceil_mode=at["ceil_mode"])
        return ops.avg_pool2d(ins[0], *window, count_include_pad=at["count_include_pad"],
                              dilation=at["dilation"], ceil_mode=at["ceil_mode"])
    return compute


def _packed(reference):
    """`reference` of NCHW data made to take NCHW[x]c too: unpack, pool, pack."""
    def packed(args, attrs):
        layout = attrs.get("layout", "NCHW")
        if layout == "NCHW":
            return reference(args[0], attrs)
        out = reference(transform_array(args[0], layout, "NCHW"), attrs)
        return transform_array(out, "NCHW", layout)
    return packed


def _pool2d_ref(kind):
    def reference(data, attrs):
        (kh, kw), (sh, sw), (dh, dw) = (attrs[k] for k in ("pool_size", "strides",
                                                          "dilation"))
        top, left, bottom, right = attrs["padding"]
        h, w = data.shape[2:]
        oh, ow = (_extent(f"nn.{kind}_pool2d", data.shape[2 + ax], attrs, ax)
                  for ax in range(2))
        # Padded so that every window fits: what lies beyond the declared padding (the
        # windows ceil_mode adds) counts as neither data nor padding.
        extra_h = max(0, (oh - 1) * sh + dh * (kh - 1) + 1 - (h + top + bottom))
        extra_w = max(0, (ow - 1) * sw + dw * (kw - 1) + 1 - (w + left + right))
        fill = -np.inf if kind == "max" else 0.0
        padded = np.pad(data.astype(np.float64), ((0, 0), (0, 0), (top, bottom + extra_h),
                                                  (left, right + extra_w)),
                        constant_values=fill)

        def taps(a):
            return [a[..., y * dh:y * dh + sh * (oh - 1) + 1:sh,
                      x * dw:x * dw + sw * (ow - 1) + 1:sw]
                    for y in range(kh) for x in range(kw)]
        if kind == "max":
            return np.max(taps(padded), axis=0)
        inside = np.ones((h + top + bottom, w + left + right)) if attrs["count_include_pad"] \
            else np.pad(np.ones((h, w)), ((top, bottom), (left, right)))
        inside = np.pad(inside, ((0, extra_h), (0, extra_w)))
        return np.sum(taps(padded), axis=0) / np.sum(taps(inside), axis=0)
    return _packed(reference)


def _samples(kind):
    def samples():
        base = {"pool_size": (3, 3), "strides": (2, 2), "padding": (1, 1, 1, 1),
                "layout": "NCHW"}
        if kind == "avg":
            base["count_include_pad"] = False
        found = [([TensorType((1, 3, 13, 7), "float32")], base),
                 ([TensorType((2, 1, 7, 37), "float32")],
                  {**base, "pool_size": (2, 3), "strides": (1, 2), "padding": (0, 1, 1, 0)}),
                 ([TensorType((1, 2, 13, 7, 8), "float32")], {**base, "layout": "NCHW8c"}),
                 ([TensorType((1, 16, 13, 7), "float32")], base),
                 ([TensorType((1, 3, 13, 7), "float32")],  # 7 and 4 windows, not 6 and 3
                  {**base, "padding": (1, 0, 0, 1), "ceil_mode": True}),
                 ([TensorType((2, 3, 13, 37), "float32")],
                  {**base, "pool_size": (2, 3), "strides": (3, 2), "dilation": (2, 3),
                   "padding": (1, 2, 1, 0), "ceil_mode": True}),
                 ([TensorType((1, 2, 13, 7, 8), "float32")],
                  {**base, "layout": "NCHW8c", "dilation": (2, 1), "ceil_mode": True})]
        if kind == "avg":  # the same windows, the padding they cover counted too
            found += [(types, {**attrs, "count_include_pad": True})
                      for types, attrs in [found[0], *found[-3:]]]
        return found
    return samples


def _global_samples():
    return [([TensorType((1, 3, 13, 7), "float32")], {"layout": "NCHW"}),
            ([TensorType((1, 16, 7, 13), "float32")], {"layout": "NCHW"}),
            ([TensorType((2, 2, 7, 13, 8), "float32")], {"layout": "NCHW8c"})]


_WINDOW = {"pool_size": (1, 1), "strides": (1, 1), "padding": (0, 0, 0, 0),
           "dilation": (1, 1), "ceil_mode": False, "layout": "NCHW"}
register_op("nn.max_pool2d", _pool2d_rel("nn.max_pool2d"), OpPattern.OUT_ELEMWISE_FUSABLE,
            _WINDOW, 1, compute=_compute("max"), reference=_pool2d_ref("max"),
            layout=window_rule, samples=_samples("max"))
register_op("nn.avg_pool2d", _pool2d_rel("nn.avg_pool2d"), OpPattern.OUT_ELEMWISE_FUSABLE,
            {**_WINDOW, "count_include_pad": False}, 1, compute=_compute("avg"),
            reference=_pool2d_ref("avg"), layout=window_rule, samples=_samples("avg"))
register_op("nn.global_avg_pool2d", _global_rel("nn.global_avg_pool2d"),
            OpPattern.OUT_ELEMWISE_FUSABLE, {"layout": "NCHW"}, 1,
            compute=lambda ins, at, ty: ops.mean(ins[0], axis=(2, 3), keepdims=True),
            reference=lambda a, at: a[0].mean(axis=(2, 3), keepdims=True),
            layout=window_rule, samples=_global_samples)
register_op("nn.global_max_pool2d", _global_rel("nn.global_max_pool2d"),
            OpPattern.OUT_ELEMWISE_FUSABLE, {"layout": "NCHW"}, 1,
            compute=lambda ins, at, ty: ops.max(ins[0], axis=(2, 3), keepdims=True),
            reference=lambda a, at: a[0].max(axis=(2, 3), keepdims=True),
            layout=window_rule, samples=_global_samples)


def max_pool2d(data: Expr, pool_size=(1, 1), strides=(1, 1), padding=(0, 0),
               dilation=(1, 1), ceil_mode: bool = False) -> Call:
    return call("nn.max_pool2d", [data], pool_size=pair(pool_size, "pool_size"),
                strides=pair(strides, "strides"), padding=padding4(padding),
                dilation=pair(dilation, "dilation"), ceil_mode=bool(ceil_mode))


def avg_pool2d(data: Expr, pool_size=(1, 1), strides=(1, 1), padding=(0, 0),
               count_include_pad: bool = False, dilation=(1, 1),
               ceil_mode: bool = False) -> Call:
    return call("nn.avg_pool2d", [data], pool_size=pair(pool_size, "pool_size"),
                strides=pair(strides, "strides"), padding=padding4(padding),
                count_include_pad=bool(count_include_pad), dilation=pair(dilation, "dilation"),
                ceil_mode=bool(ceil_mode))


def global_avg_pool2d(data: Expr) -> Call:
    return call("nn.global_avg_pool2d", [data])


def global_max_pool2d(data: Expr) -> Call:
    return call("nn.global_max_pool2d", [data])
