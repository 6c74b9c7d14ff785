"""The graph level's tensor ops (Relay's `relay.add`, `relay.reshape`, ...): each one
registered with its type relation, pattern kind and attribute defaults, and its
constructor, which makes the Call."""
from __future__ import annotations

import math

import numpy as np

from ..ops.pattern import OpPattern
from .expr import Call, Constant, Expr, Tuple, Var
from .op import GraphTypeError, get_op, register_op
from .relations import (axis_of, broadcast_rel, identity_rel, kernel_blocks, reduce_rel,
                        same_dtype, tensor_args)
from .ty import TensorType, TupleType


def call(name: str, args, **attrs) -> Call:
    """A call of the registered op `name`, its attrs completed from the op's defaults; an
    attribute the op does not have is a TypeError naming both."""
    op = get_op(name)
    unknown = set(attrs) - set(op.defaults)
    if unknown:
        raise TypeError(f"{name}: unknown attribute(s) {', '.join(sorted(unknown))}; it has "
                        f"{', '.join(op.defaults) or 'none'}")
    return Call(op, tuple(args), {**op.defaults, **attrs})


def var(name: str, type_annotation=None, shape=None, dtype: str = "float32") -> Var:
    """A parameter: `var("x", shape=(1, 3, 224, 224))` or `var("x", TensorType(...))`."""
    if type_annotation is None:
        if shape is None:
            raise TypeError(f"var {name!r}: give a shape or a type")
        type_annotation = TensorType(shape, dtype)
    return Var(name, type_annotation)


def const(value, dtype: str | None = None) -> Constant:
    """A constant from a numpy array or a Python scalar (float32 for a float, int32 for
    an int, unless `dtype` says)."""
    if dtype is None and not isinstance(value, np.ndarray):
        dtype = "float32" if isinstance(value, float) else \
            "int32" if isinstance(value, int) else None
    return Constant(np.asarray(value, dtype=dtype))


for _name in ("add", "subtract", "multiply", "divide", "maximum", "minimum"):
    register_op(_name, broadcast_rel(_name), OpPattern.BROADCAST, num_inputs=2)
for _name in ("sigmoid", "tanh", "exp", "sqrt", "negative"):
    register_op(_name, identity_rel(_name), OpPattern.ELEMWISE, num_inputs=1)
register_op("clip", identity_rel("clip"), OpPattern.ELEMWISE, {"a_min": 0.0, "a_max": 0.0}, 1)


def add(a: Expr, b: Expr) -> Call:
    return call("add", [a, b])


def subtract(a: Expr, b: Expr) -> Call:
    return call("subtract", [a, b])


def multiply(a: Expr, b: Expr) -> Call:
    return call("multiply", [a, b])


def divide(a: Expr, b: Expr) -> Call:
    return call("divide", [a, b])


def sigmoid(x: Expr) -> Call:
    return call("sigmoid", [x])


def tanh(x: Expr) -> Call:
    return call("tanh", [x])


def exp(x: Expr) -> Call:
    return call("exp", [x])


def clip(x: Expr, a_min: float, a_max: float) -> Call:
    return call("clip", [x], a_min=float(a_min), a_max=float(a_max))


# ---------------------------------------------------------------------- shape ops

def _reshape_rel(types, attrs):
    t, = tensor_args("reshape", types, 1)
    newshape = list(attrs["newshape"])
    size = math.prod(t.shape)
    for i, d in enumerate(newshape):
        if d == 0:  # ONNX / Relay: copy this extent of the input
            newshape[i] = t.shape[i]
    if newshape.count(-1) > 1:
        raise GraphTypeError(f"reshape: more than one -1 in {attrs['newshape']}")
    if -1 in newshape:
        known = math.prod(d for d in newshape if d != -1)
        newshape[newshape.index(-1)] = size // known if known and size % known == 0 else -2
    if math.prod(newshape) != size or any(d < 0 for d in newshape):
        raise GraphTypeError(f"reshape: cannot reshape {t.shape} into {attrs['newshape']}")
    return TensorType(newshape, t.dtype)


def _transpose_rel(types, attrs):
    t, = tensor_args("transpose", types, 1)
    axes = attrs["axes"] or tuple(reversed(range(t.ndim)))
    if sorted(axis_of("transpose", a, t.ndim) for a in axes) != list(range(t.ndim)):
        raise GraphTypeError(f"transpose: axes {axes} are no permutation of {t.ndim} axes")
    return TensorType([t.shape[a] for a in axes], t.dtype)


def _concatenate_rel(types, attrs):
    t, = types
    if not isinstance(t, TupleType) or not t.fields:
        raise GraphTypeError(f"concatenate: takes a tuple of tensors, got {t}")
    fields = tensor_args("concatenate", t.fields)
    axis = axis_of("concatenate", attrs["axis"], fields[0].ndim)
    for f in fields[1:]:
        if f.ndim != fields[0].ndim or any(a != b for i, (a, b) in
                                           enumerate(zip(f.shape, fields[0].shape))
                                           if i != axis):
            raise GraphTypeError(f"concatenate: shapes {[x.shape for x in fields]} differ "
                                 f"off axis {axis}")
    shape = list(fields[0].shape)
    shape[axis] = int(np.sum([f.shape[axis] for f in fields]))  # `sum` is the op here
    return TensorType(shape, same_dtype("concatenate", fields))


def _matmul_rel(name):
    def rel(types, attrs):
        a, b = tensor_args(name, types, 2)
        if a.ndim < 2 or b.ndim < 2 or a.shape[-1] != b.shape[-2]:
            raise GraphTypeError(f"{name}: shapes {a.shape} and {b.shape} do not multiply")
        try:
            batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
        except ValueError:
            raise GraphTypeError(f"{name}: batch shapes of {a.shape} and {b.shape} do not "
                                 f"broadcast") from None
        return TensorType((*batch, a.shape[-2], b.shape[-1]), same_dtype(name, [a, b]))
    return rel


def _layout_transform_rel(types, attrs):
    """NCHW <-> NCHW[x]c (the channels split into blocks of x, innermost), and OIHW ->
    OIHW[x]i[y]o (a conv2d's weights packed for NCHW[x]c data: (O/y, I/x, KH, KW, x, y))."""
    t, = tensor_args("layout_transform", types, 1)
    src, dst = attrs["src_layout"], attrs["dst_layout"]
    if src == "OIHW" and dst.startswith("OIHW"):
        blocks = kernel_blocks(dst)
        o, i, kh, kw = t.shape
        if blocks is None or i % blocks[0] or o % blocks[1]:
            raise GraphTypeError(f"layout_transform: weights {t.shape} do not pack as {dst}")
        bi, bo = blocks
        return TensorType((o // bo, i // bi, kh, kw, bi, bo), t.dtype)
    if src == "NCHW" and dst.startswith("NCHW") and dst.endswith("c"):
        block = int(dst[4:-1])
        n, c, h, w = t.shape
        if c % block:
            raise GraphTypeError(f"layout_transform: {c} channels do not split into "
                                 f"blocks of {block}")
        return TensorType((n, c // block, h, w, block), t.dtype)
    if dst == "NCHW" and src.startswith("NCHW") and src.endswith("c"):
        n, co, h, w, block = t.shape
        return TensorType((n, co * block, h, w), t.dtype)
    raise GraphTypeError(f"layout_transform: {src} -> {dst} is not supported (NCHW <-> "
                         f"NCHW[x]c, OIHW -> OIHW[x]i[y]o)")


register_op("reshape", _reshape_rel, OpPattern.INJECTIVE, {"newshape": ()}, 1)
register_op("transpose", _transpose_rel, OpPattern.INJECTIVE, {"axes": None}, 1)
register_op("concatenate", _concatenate_rel, OpPattern.INJECTIVE, {"axis": 0}, 1)
register_op("matmul", _matmul_rel("matmul"), OpPattern.OUT_ELEMWISE_FUSABLE, {}, 2)
register_op("layout_transform", _layout_transform_rel, OpPattern.INJECTIVE,
            {"src_layout": "", "dst_layout": ""}, 1)
register_op("mean", reduce_rel("mean"), OpPattern.COMM_REDUCE,
            {"axis": None, "keepdims": False}, 1)
register_op("sum", reduce_rel("sum"), OpPattern.COMM_REDUCE,
            {"axis": None, "keepdims": False}, 1)


def reshape(x: Expr, newshape) -> Call:
    return call("reshape", [x], newshape=tuple(int(d) for d in newshape))


def transpose(x: Expr, axes=None) -> Call:
    return call("transpose", [x], axes=None if axes is None else tuple(axes))


def concatenate(fields, axis: int = 0) -> Call:
    return call("concatenate", [Tuple(tuple(fields))], axis=int(axis))


def matmul(a: Expr, b: Expr) -> Call:
    return call("matmul", [a, b])


def layout_transform(x: Expr, src_layout: str, dst_layout: str) -> Call:
    return call("layout_transform", [x], src_layout=src_layout, dst_layout=dst_layout)


def _axes(axis):
    return None if axis is None else (int(axis),) if isinstance(axis, int) else tuple(axis)


def mean(x: Expr, axis=None, keepdims: bool = False) -> Call:
    return call("mean", [x], axis=_axes(axis), keepdims=bool(keepdims))


def sum(x: Expr, axis=None, keepdims: bool = False) -> Call:  # noqa: A001 - Relay's name
    return call("sum", [x], axis=_axes(axis), keepdims=bool(keepdims))
