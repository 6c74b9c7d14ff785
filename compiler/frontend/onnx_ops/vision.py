"""Converters of ONNX's image ops: convolutions, pools, padding."""
from __future__ import annotations

from ... import graph
from .common import pads, text


def _conv(ctx, args, attrs, node):
    data, weight, bias = (args + [None])[:3]
    out = graph.nn.conv2d(data, weight, strides=attrs.get("strides", (1, 1)),
                          padding=pads(attrs), dilation=attrs.get("dilations", (1, 1)),
                          groups=attrs.get("group", 1))
    return out if bias is None else graph.nn.bias_add(out, bias)


def _pool(kind):
    def convert(ctx, args, attrs, node):
        if attrs.get("ceil_mode", 0):
            raise ValueError("ceil_mode=1 is not supported")
        common = {"pool_size": attrs["kernel_shape"], "strides": attrs.get("strides", (1, 1)),
                  "padding": pads(attrs)}
        if kind == "max":
            return graph.nn.max_pool2d(args[0], **common)
        return graph.nn.avg_pool2d(args[0], count_include_pad=bool(
            attrs.get("count_include_pad", 0)), **common)
    return convert


def _pad(ctx, args, attrs, node):
    mode = text(attrs.get("mode", "constant"))
    if mode != "constant":
        raise ValueError(f"mode={mode!r} is not supported (constant only)")
    if ctx.opset >= 11:
        widths = [int(p) for p in ctx.value(args[1], "pads")]
        value = float(ctx.optional(args, 2, "constant_value", 0.0))
    else:
        widths, value = list(attrs["pads"]), float(attrs.get("value", 0.0))
    n = len(widths) // 2
    return graph.nn.pad(args[0], list(zip(widths[:n], widths[n:])), value)


CONVERTERS = {
    "Conv": _conv,
    "MaxPool": _pool("max"),
    "AveragePool": _pool("avg"),
    "GlobalAveragePool": lambda c, a, at, n: graph.nn.global_avg_pool2d(a[0]),
    "Pad": _pad,
}
