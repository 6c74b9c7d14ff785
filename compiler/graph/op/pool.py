"""The pools (Relay's `nn.max_pool2d`, `nn.avg_pool2d`, `nn.global_avg_pool2d`),
registered once with their type relations, computes, numpy references, layout rule (a
window over H and W computes in whatever layout its data is in: NCHW, or NCHW[x]c as
its `layout` attr says) and samples; and their constructors."""
from __future__ import annotations

import numpy as np

from ... import ops
from ...ops.pattern import OpPattern
from ..expr import Call, Expr
from ..ty import TensorType
from .layout import transform_array
from .layout_rules import window as window_rule
from .registry import GraphTypeError, call, register_op
from .relations import padding4, pair, tensor_args, window


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
        n, c, h, w = _data(name, data, attrs).shape[:4]
        (kh, kw), (sh, sw) = attrs["pool_size"], attrs["strides"]
        top, left, bottom, right = attrs["padding"]
        return TensorType((n, c, window(name, h, kh, sh, top, bottom),
                           window(name, w, kw, sw, left, right), *data.shape[4:]), data.dtype)
    return rel


def _global_rel(types, attrs):
    data, = tensor_args("nn.global_avg_pool2d", types, 1)
    _data("nn.global_avg_pool2d", data, attrs)
    return TensorType((*data.shape[:2], 1, 1, *data.shape[4:]), data.dtype)


def _compute(kind):
    def compute(ins, at, ty):
        if kind == "max":
            return ops.max_pool2d(ins[0], at["pool_size"], at["strides"], at["padding"])
        return ops.avg_pool2d(ins[0], at["pool_size"], at["strides"], at["padding"],
                              at["count_include_pad"])
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
        (kh, kw), (sh, sw) = attrs["pool_size"], attrs["strides"]
        top, left, bottom, right = attrs["padding"]
        fill = -np.inf if kind == "max" else 0.0
        padded = np.pad(data.astype(np.float64), ((0, 0), (0, 0), (top, bottom),
                                                  (left, right)), constant_values=fill)
        ones = np.pad(np.ones(data.shape[2:]), ((top, bottom), (left, right)))
        oh, ow = (padded.shape[2] - kh) // sh + 1, (padded.shape[3] - kw) // sw + 1
        windows = [padded[:, :, y:y + sh * (oh - 1) + 1:sh, x:x + sw * (ow - 1) + 1:sw]
                   for y in range(kh) for x in range(kw)]
        if kind == "max":
            return np.max(windows, axis=0)
        total = np.sum(windows, axis=0)
        if attrs["count_include_pad"]:
            return total / (kh * kw)
        counts = sum(ones[y:y + sh * (oh - 1) + 1:sh, x:x + sw * (ow - 1) + 1:sw]
                     for y in range(kh) for x in range(kw))
        return total / counts
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
                 ([TensorType((1, 16, 13, 7), "float32")], base)]
        if kind == "avg":
            found.append(([TensorType((1, 3, 13, 7), "float32")],
                          {**base, "count_include_pad": True}))
        return found
    return samples


def _global_samples():
    return [([TensorType((1, 3, 13, 7), "float32")], {"layout": "NCHW"}),
            ([TensorType((1, 16, 7, 13), "float32")], {"layout": "NCHW"}),
            ([TensorType((2, 2, 7, 13, 8), "float32")], {"layout": "NCHW8c"})]


_WINDOW = {"pool_size": (1, 1), "strides": (1, 1), "padding": (0, 0, 0, 0),
           "layout": "NCHW"}
register_op("nn.max_pool2d", _pool2d_rel("nn.max_pool2d"), OpPattern.OUT_ELEMWISE_FUSABLE,
            _WINDOW, 1, compute=_compute("max"), reference=_pool2d_ref("max"),
            layout=window_rule, samples=_samples("max"))
register_op("nn.avg_pool2d", _pool2d_rel("nn.avg_pool2d"), OpPattern.OUT_ELEMWISE_FUSABLE,
            {**_WINDOW, "count_include_pad": False}, 1, compute=_compute("avg"),
            reference=_pool2d_ref("avg"), layout=window_rule, samples=_samples("avg"))
register_op("nn.global_avg_pool2d", _global_rel, OpPattern.OUT_ELEMWISE_FUSABLE,
            {"layout": "NCHW"}, 1,
            compute=lambda ins, at, ty: ops.mean(ins[0], axis=(2, 3), keepdims=True),
            reference=lambda a, at: a[0].mean(axis=(2, 3), keepdims=True),
            layout=window_rule, samples=_global_samples)


def max_pool2d(data: Expr, pool_size=(1, 1), strides=(1, 1), padding=(0, 0)) -> Call:
    return call("nn.max_pool2d", [data], pool_size=pair(pool_size, "pool_size"),
                strides=pair(strides, "strides"), padding=padding4(padding))


def avg_pool2d(data: Expr, pool_size=(1, 1), strides=(1, 1), padding=(0, 0),
               count_include_pad: bool = False) -> Call:
    return call("nn.avg_pool2d", [data], pool_size=pair(pool_size, "pool_size"),
                strides=pair(strides, "strides"), padding=padding4(padding),
                count_include_pad=bool(count_include_pad))


def global_avg_pool2d(data: Expr) -> Call:
    return call("nn.global_avg_pool2d", [data])
