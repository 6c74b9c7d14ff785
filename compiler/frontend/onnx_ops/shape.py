"""Converters of ONNX's shape and indexing ops. With static input shapes, Shape and Size
are constants, and so is everything computed from them and from other constants
(Context.fold): the shape subgraphs exporters emit arrive at Reshape, Expand, Slice or
Tile as known values. Ops whose output shape depends on an input's values (Range,
ConstantOfShape, a Reshape's shape) need those inputs known at import."""
from __future__ import annotations

import numpy as np

from ... import graph
from ...graph.ir.expr import Constant
from ...graph.ir.op import indexing, tensor, transform
from .common import axis, text


def _flatten(ctx, args, attrs, node):
    shape = ctx.shape(args[0])
    at = attrs.get("axis", 1)
    if not -len(shape) <= at <= len(shape):  # (axis r: every axis in the rows)
        raise ValueError(f"axis {at} is out of range for {len(shape)} dimensions")
    at = at + len(shape) if at < 0 else at
    if at == 1 and len(shape) > 1:
        return graph.nn.batch_flatten(args[0])
    return graph.reshape(args[0], (int(np.prod(shape[:at])), -1))


def _reshape(ctx, args, attrs, node):
    newshape = [int(d) for d in ctx.value(args[1], "shape")]
    if attrs.get("allowzero", 0) and 0 in newshape:
        raise ValueError("allowzero=1 with a 0 in the shape is not supported")
    return graph.reshape(args[0], newshape)


def _axes_of(ctx, args, attrs, what="axes"):
    """Axes from the attribute (older opsets) or the second input (opset 13)."""
    if len(args) > 1 and args[1] is not None:
        return [int(a) for a in ctx.value(args[1], what).reshape(-1)]
    return list(attrs.get(what, []))


def _squeeze(ctx, args, attrs, node):
    shape = ctx.shape(args[0])
    axes = [axis(a, len(shape)) for a in _axes_of(ctx, args, attrs)] or \
        [i for i, d in enumerate(shape) if d == 1]
    for a in axes:
        if shape[a] != 1:
            raise ValueError(f"cannot squeeze axis {a} of shape {shape}: its extent is "
                             f"{shape[a]}, not 1")
    return graph.reshape(args[0], [d for i, d in enumerate(shape) if i not in axes])


def _unsqueeze(ctx, args, attrs, node):
    shape = list(ctx.shape(args[0]))
    axes = _axes_of(ctx, args, attrs)
    ndim = len(shape) + len(axes)
    for a in sorted(axis(a, ndim) for a in axes):
        shape.insert(a, 1)
    return graph.reshape(args[0], shape)


def _shape(ctx, args, attrs, node):
    shape = ctx.shape(args[0])
    start, end = attrs.get("start", 0), attrs.get("end", len(shape))
    return Constant(np.array(shape[start:end], "int64"))


def _slice(ctx, args, attrs, node):
    shape = ctx.shape(args[0])
    if ctx.opset < 10:
        starts, ends = attrs["starts"], attrs["ends"]
        axes, steps = attrs.get("axes", range(len(starts))), [1] * len(starts)
    else:
        starts = ctx.value(args[1], "starts").reshape(-1)
        ends = ctx.value(args[2], "ends").reshape(-1)
        axes = ctx.optional(args, 3, "axes", np.arange(len(starts))).reshape(-1)
        steps = ctx.optional(args, 4, "steps", np.ones(len(starts), "int64")).reshape(-1)
    begin, end, strides = [0] * len(shape), list(shape), [1] * len(shape)
    for a, b, e, s in zip(axes, starts, ends, steps):
        a = axis(int(a), len(shape))
        begin[a], end[a], strides[a] = int(b), int(e), int(s)
    return transform.strided_slice(args[0], begin, end, strides)


def _split(ctx, args, attrs, node):
    shape = ctx.shape(args[0])
    at = axis(attrs.get("axis", 0), len(shape))
    n = len(node.output)
    if len(args) > 1 and args[1] is not None:
        sizes = [int(s) for s in ctx.value(args[1], "split")]
    elif "split" in attrs:
        sizes = list(attrs["split"])
    else:  # equal parts (opset 18: num_outputs; the last part may be smaller)
        n = attrs.get("num_outputs", n)
        part = -(-shape[at] // n)
        sizes = [min(part, shape[at] - part * i) for i in range(n)]
    if sum(sizes) != shape[at]:
        raise ValueError(f"split sizes {sizes} do not add up to axis {at}'s extent "
                         f"{shape[at]}")
    outs, start = [], 0
    for size in sizes:
        begin, end = [0] * len(shape), list(shape)
        begin[at], end[at] = start, start + size
        outs.append(transform.strided_slice(args[0], begin, end))
        start += size
    return tuple(outs)


def _gather(ctx, args, attrs, node):
    """take; a known scalar index or run of consecutive ones (x[:, 0], a ViT's class
    token) is a slice instead: no data-dependent read, and it vectorizes."""
    data, indices = args
    shape = ctx.shape(data)
    at = axis(attrs.get("axis", 0), len(shape))
    if ctx.known(indices):
        found = ctx.value(indices, "indices")
        flat = np.where(found < 0, found + shape[at], found).reshape(-1)
        if found.ndim <= 1 and flat.size and np.all(np.diff(flat) == 1) and \
                0 <= flat[0] and flat[-1] < shape[at]:
            begin, end = [0] * len(shape), list(shape)
            begin[at], end[at] = int(flat[0]), int(flat[-1]) + 1
            out = transform.strided_slice(data, begin, end)
            if found.ndim == 0:
                out = graph.reshape(out, shape[:at] + shape[at + 1:])
            return out
    return transform.take(data, indices, at)


def _expand(ctx, args, attrs, node):
    shape = [int(d) for d in ctx.value(args[1], "shape")]
    return transform.broadcast_to(args[0], shape)


def _tile(ctx, args, attrs, node):
    return transform.tile(args[0], [int(r) for r in ctx.value(args[1], "repeats")])


def _constant(ctx, args, attrs, node):
    from onnx import numpy_helper
    if "value" in attrs:
        return Constant(numpy_helper.to_array(attrs["value"]))
    forms = {"value_float": "float32", "value_floats": "float32", "value_int": "int64",
             "value_ints": "int64"}
    for name, dtype in forms.items():
        if name in attrs:
            return Constant(np.array(attrs[name], dtype))
    raise ValueError(f"a Constant with {', '.join(attrs) or 'no value'} is not supported "
                     f"(value, value_float(s), value_int(s))")


def _constant_of_shape(ctx, args, attrs, node):
    from onnx import numpy_helper
    shape = [int(d) for d in ctx.value(args[0], "shape")]
    value = numpy_helper.to_array(attrs["value"]).reshape(-1) if "value" in attrs else \
        np.zeros(1, "float32")
    return Constant(np.full(shape, value[0], value.dtype))


def _range(ctx, args, attrs, node):
    start, limit, delta = (ctx.value(a, w) for a, w in zip(args, ("start", "limit", "delta")))
    return Constant(np.arange(start, limit, delta).astype(start.dtype))


def _trilu(ctx, args, attrs, node):
    """Trilu; a k fed at run time compares it with a constant of column - row indices."""
    x, upper = args[0], bool(attrs.get("upper", 1))
    if len(args) < 2 or args[1] is None or ctx.known(args[1]):
        return transform.trilu(x, int(ctx.optional(args, 1, "k", 0)), upper)
    rows, cols = ctx.shape(x)[-2:]
    offset = Constant(np.arange(cols)[None, :] - np.arange(rows)[:, None])
    k = graph.reshape(args[1], ())
    keep = tensor.greater_equal(offset, k) if upper else tensor.less_equal(offset, k)
    return tensor.where(keep, x, Constant(np.zeros((), ctx.dtype(x))))


def _depth_to_space(ctx, args, attrs, node):
    n, c, h, w = ctx.shape(args[0])
    b = attrs["blocksize"]
    if text(attrs.get("mode", "DCR")) == "DCR":
        x = graph.reshape(args[0], (n, b, b, c // (b * b), h, w))
        x = graph.transpose(x, (0, 3, 4, 1, 5, 2))
    else:  # CRD
        x = graph.reshape(args[0], (n, c // (b * b), b, b, h, w))
        x = graph.transpose(x, (0, 1, 4, 2, 5, 3))
    return graph.reshape(x, (n, c // (b * b), h * b, w * b))


def _space_to_depth(ctx, args, attrs, node):
    n, c, h, w = ctx.shape(args[0])
    b = attrs["blocksize"]
    mode = text(attrs.get("mode", "DCR"))  # (opset 28 adds CRD)
    if mode not in ("DCR", "CRD"):
        raise ValueError(f"mode={mode!r} is not supported (DCR, CRD)")
    x = graph.reshape(args[0], (n, c, h // b, b, w // b, b))
    x = graph.transpose(x, (0, 3, 5, 1, 2, 4) if mode == "DCR" else (0, 1, 3, 5, 2, 4))
    return graph.reshape(x, (n, c * b * b, h // b, w // b))


def _topk(ctx, args, attrs, node):
    k = int(ctx.value(args[1], "K").reshape(-1)[0]) if len(args) > 1 else attrs["k"]
    at = axis(attrs.get("axis", -1), len(ctx.shape(args[0])))
    ascend = not attrs.get("largest", 1)
    both = indexing.topk(args[0], k, at, "both", ascend)
    return graph.TupleGetItem(both, 0), graph.TupleGetItem(both, 1)


def _scatter_nd(ctx, args, attrs, node):
    reduction = text(attrs.get("reduction", "none"))
    if reduction not in ("none", "add", "mul", "max", "min"):
        raise ValueError(f"reduction={reduction!r} is not supported (none, add, mul, max, "
                         f"min)")
    return indexing.scatter_nd(*args, reduction)


def _cumsum(ctx, args, attrs, node):
    at = axis(int(ctx.value(args[1], "axis").reshape(-1)[0]), len(ctx.shape(args[0])))
    return indexing.cumsum(args[0], at, bool(attrs.get("exclusive", 0)),
                           bool(attrs.get("reverse", 0)))


CONVERTERS = {
    "Flatten": _flatten,
    "Reshape": _reshape,
    "Squeeze": _squeeze,
    "Unsqueeze": _unsqueeze,
    "Shape": _shape,
    "Size": lambda c, a, at, n: Constant(np.array(int(np.prod(c.shape(a[0]))), "int64")),
    "Slice": _slice,
    "Split": _split,
    "Gather": _gather,
    "GatherElements": lambda c, a, at, n: indexing.gather(
        a[0], a[1], axis(at.get("axis", 0), len(c.shape(a[0])))),
    "ScatterND": _scatter_nd,
    "TopK": _topk,
    "CumSum": _cumsum,
    "Expand": _expand,
    "Tile": _tile,
    "Concat": lambda c, a, at, n: graph.concatenate(a, axis=at["axis"]),
    "Transpose": lambda c, a, at, n: graph.transpose(a[0], at.get("perm")),
    "Constant": _constant,
    "ConstantOfShape": _constant_of_shape,
    "Range": _range,
    "Trilu": _trilu,
    "DepthToSpace": _depth_to_space,
    "SpaceToDepth": _space_to_depth,
}
