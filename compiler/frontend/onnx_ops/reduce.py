"""Converters of ONNX's reductions: ReduceMean / Sum / Max / Min / L2 / SumSquare
(axes as an attribute, or as an input from opset 13 for ReduceSum and 18 for the
others), ArgMax / ArgMin."""
from __future__ import annotations

from ... import graph
from ...graph.ir.op import reduce
from .common import axis


def _axes(ctx, args, attrs):
    """The reduced axes (None: all), from the attribute or the optional second input;
    noop_with_empty_axes=1 with no axes reduces nothing (None is returned as ())."""
    if len(args) > 1 and args[1] is not None:
        found = [int(a) for a in ctx.value(args[1], "axes").reshape(-1)]
    else:
        found = list(attrs.get("axes", []))
    ndim = len(ctx.shape(args[0]))
    if not found:
        return () if attrs.get("noop_with_empty_axes", 0) else None
    return tuple(axis(a, ndim, "axes entry") for a in found)


def _reduction(kind):
    def convert(ctx, args, attrs, node):
        axes = _axes(ctx, args, attrs)
        x = args[0]
        if axes == ():
            return x
        keep = bool(attrs.get("keepdims", 1))
        shape = ctx.shape(x)
        if kind == "mean" and len(shape) == 4 and axes == (2, 3):
            # a global average pool (squeeze-excite's): the pool op computes in the
            # packed layout of the convolution before it, where a mean needs NCHW
            pooled = graph.nn.global_avg_pool2d(x)
            return pooled if keep else graph.reshape(pooled, shape[:2])
        if kind in ("l2", "sum_square"):
            total = reduce.sum(graph.multiply(x, x), axes, keep)
            return graph.sqrt(total) if kind == "l2" else total
        return {"mean": reduce.mean, "sum": reduce.sum, "max": reduce.max,
                "min": reduce.min}[kind](x, axes, keep)
    return convert


def _arg(kind):
    def convert(ctx, args, attrs, node):
        f = reduce.argmax if kind == "max" else reduce.argmin
        return f(args[0], axis(attrs.get("axis", 0), len(ctx.shape(args[0]))),
                 bool(attrs.get("keepdims", 1)), bool(attrs.get("select_last_index", 0)))
    return convert


CONVERTERS = {
    "ReduceMean": _reduction("mean"),
    "ReduceSum": _reduction("sum"),
    "ReduceMax": _reduction("max"),
    "ReduceMin": _reduction("min"),
    "ReduceL2": _reduction("l2"),
    "ReduceSumSquare": _reduction("sum_square"),
    "ArgMax": _arg("max"),
    "ArgMin": _arg("min"),
}
