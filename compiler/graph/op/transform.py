"""The graph level's shape ops (Relay's `relay.reshape`, `transpose`, `concatenate`):
each registered once with its type relation, pattern, compute, numpy reference, layout
rule and samples, and its constructor."""
from __future__ import annotations

import math

import numpy as np

from ... import ops, te
from ...ops.pattern import OpPattern
from ..expr import Call, Expr, Tuple
from ..ty import TensorType, TupleType
from .layout import block_of, keeps_layout
from .registry import GraphTypeError, call, needs_nchw, register_op
from .relations import axis_of, same_dtype, tensor_args


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


def reshape_compute(ins, at, ty):
    """The row-major reshape of ins[0] into ty's shape (reshape, nn.batch_flatten)."""
    x, = ins
    src = ops.get_const_tuple(x.shape)
    strides = [math.prod(ty.shape[i + 1:]) for i in range(len(ty.shape))]
    src_strides = [math.prod(src[i + 1:]) for i in range(len(src))]

    def index(*i):
        flat = sum(a * s for a, s in zip(i, strides))
        return x[tuple(te.floormod(te.floordiv(flat, s), d) if k else te.floordiv(flat, s)
                       for k, (s, d) in enumerate(zip(src_strides, src)))]
    return te.compute(ty.shape, index, name="reshape")


def _reshape_ref(args, attrs):
    x, = args
    shape = [x.shape[i] if d == 0 else d for i, d in enumerate(attrs["newshape"])]
    return x.reshape(shape)


def _reshape_samples():
    t = TensorType((7, 13, 2), "float32")
    return [([t], {"newshape": (13, 14)}), ([t], {"newshape": (0, -1)}),
            ([TensorType((37,), "float32")], {"newshape": (1, 37, 1)})]


def _transpose_rel(types, attrs):
    t, = tensor_args("transpose", types, 1)
    axes = attrs["axes"] or tuple(reversed(range(t.ndim)))
    if sorted(axis_of("transpose", a, t.ndim) for a in axes) != list(range(t.ndim)):
        raise GraphTypeError(f"transpose: axes {axes} are no permutation of {t.ndim} axes")
    return TensorType([t.shape[a] for a in axes], t.dtype)


def _transpose_compute(ins, at, ty):
    x, = ins
    axes = at["axes"] or tuple(reversed(range(len(ty.shape))))
    inverse = [axes.index(k) for k in range(len(axes))]
    return te.compute(ty.shape, lambda *i: x[tuple(i[j] for j in inverse)], name="transpose")


def _transpose_samples():
    return [([TensorType((7, 13, 37), "float32")], {"axes": (2, 0, 1)}),
            ([TensorType((7, 13), "float32")], {}),
            ([TensorType((2, 7, 13, 3), "float32")], {"axes": (0, 2, 3, 1)})]


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
    shape[axis] = sum(f.shape[axis] for f in fields)
    return TensorType(shape, same_dtype("concatenate", fields))


def _concatenate_compute(ins, at, ty):
    fields = list(ins[0])
    axis = at["axis"] % len(ty.shape)
    starts = [0]
    for f in fields:
        starts.append(starts[-1] + ops.get_const_tuple(f.shape)[axis])

    def value(*i):
        out = None
        for f, start, end in reversed(list(zip(fields, starts, starts[1:]))):
            j = tuple(v - start if k == axis else v for k, v in enumerate(i))
            out = f[j] if out is None else te.if_then_else(i[axis] < end, f[j], out)
        return out
    return te.compute(ty.shape, value, name="concatenate")


@keeps_layout
def _concatenate_layout(ctx, call: Call) -> Expr | None:
    """Along the channels of 4-D values that all come packed in one layout whose block
    divides each one's channels, the packed blocks concatenate as they are (axis 1 of
    NCHW[x]c counts blocks); anything else is concatenated in NCHW."""
    fields = call.args[0].fields if isinstance(call.args[0], Tuple) else None
    if fields is None or len(call.ty.shape) != 4 or call.attrs["axis"] % 4 != 1:
        return None
    layouts = {ctx.layout_of(f) for f in fields}
    if len(layouts) != 1 or layouts == {"NCHW"}:
        return None
    layout = layouts.pop()
    if any(ctx.nchw_type(f).shape[1] % block_of(layout) for f in fields):
        return None
    return ctx.mark(Call(call.op, call.args, {**call.attrs, "axis": 1}), layout)


def _concatenate_samples():
    def tup(*shapes):
        return TupleType(tuple(TensorType(s, "float32") for s in shapes))
    return [([tup((7,), (13,))], {"axis": 0}),
            ([tup((7, 13), (7, 37), (7, 1))], {"axis": 1}),
            ([tup((2, 7, 13), (2, 7, 13))], {"axis": -1}),
            ([tup((1, 8, 7, 13), (1, 16, 7, 13))], {"axis": 1}),
            ([tup((1, 16, 7, 13), (1, 16, 7, 13))], {"axis": 1}),
            ([tup((1, 2, 3, 7, 8), (1, 2, 3, 7, 8))], {"axis": 3})]


register_op("reshape", _reshape_rel, OpPattern.INJECTIVE, {"newshape": ()}, 1,
            compute=reshape_compute, reference=_reshape_ref, layout=needs_nchw,
            samples=_reshape_samples)
register_op("transpose", _transpose_rel, OpPattern.INJECTIVE, {"axes": None}, 1,
            compute=_transpose_compute,
            reference=lambda a, at: np.transpose(a[0], at["axes"]), layout=needs_nchw,
            samples=_transpose_samples)
register_op("concatenate", _concatenate_rel, OpPattern.INJECTIVE, {"axis": 0}, 1,
            compute=_concatenate_compute,
            reference=lambda a, at: np.concatenate(a[0], axis=at["axis"]),
            layout=_concatenate_layout, samples=_concatenate_samples)


def reshape(x: Expr, newshape) -> Call:
    return call("reshape", [x], newshape=tuple(int(d) for d in newshape))


def transpose(x: Expr, axes=None) -> Call:
    return call("transpose", [x], axes=None if axes is None else tuple(axes))


def concatenate(fields, axis: int = 0) -> Call:
    return call("concatenate", [Tuple(tuple(fields))], axis=int(axis))
