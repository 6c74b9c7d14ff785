"""The graph level's shape and indexing ops (Relay's `relay.reshape`, `transpose`,
`concatenate`, `strided_slice`, `take`, `broadcast_to`, `tile`, `trilu`): each
registered once with its type relation, pattern, compute, numpy reference, layout rule
and samples, and its constructor."""
from __future__ import annotations

import math

import numpy as np

from .... import ops, te
from ....ops.pattern import OpPattern
from ....ops.shape import broadcast_index
from ..expr import Call, Expr, Tuple
from ..ty import TensorType, TupleType
from .layout import block_of, is_packed, keeps_layout
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


# ------------------------------------------------------------------ slicing and indexing

def slice_ranges(shape, begin, end, strides) -> list[tuple[int, int, int]]:
    """(start, step, count) of each axis of a strided slice of `shape` (numpy's rules:
    negative bounds count from the end, bounds clamp to the axis)."""
    found = []
    for d, b, e, s in zip(shape, begin, end, strides):
        start, stop, step = slice(b, e, s).indices(d)
        found.append((start, step, len(range(start, stop, step))))
    return found


def _strided_slice_rel(types, attrs):
    t, = tensor_args("strided_slice", types, 1)
    begin, end, strides = attrs["begin"], attrs["end"], attrs["strides"]
    if not len(begin) == len(end) == len(strides) == t.ndim:
        raise GraphTypeError(f"strided_slice: begin {begin}, end {end} and strides "
                             f"{strides} need one value per axis of {t.shape}")
    if 0 in strides:
        raise GraphTypeError(f"strided_slice: a stride of 0 in {strides}")
    return TensorType([n for _, _, n in slice_ranges(t.shape, begin, end, strides)], t.dtype)


def _strided_slice_compute(ins, at, ty):
    x, = ins
    ranges = slice_ranges(ops.get_const_tuple(x.shape), at["begin"], at["end"],
                          at["strides"])
    return te.compute(ty.shape, lambda *i: x[tuple(start + step * v for v, (start, step, _)
                                                   in zip(i, ranges))], name="strided_slice")


def _strided_slice_ref(args, attrs):
    x, = args
    return x[tuple(slice(b, e, s) for b, e, s in zip(attrs["begin"], attrs["end"],
                                                      attrs["strides"]))]


@keeps_layout
def _strided_slice_layout(ctx, call: Call) -> Expr | None:
    """A 4-D slice of packed data whose channel range is whole blocks (a Split of a
    C2f block's channels) and whose steps are positive slices the blocks as they are
    (axis 1 of NCHW[x]c counts blocks); any other is sliced in NCHW."""
    data = call.args[0]
    layout = ctx.layout_of(data)
    if not is_packed(layout) or len(call.ty.shape) != 4:
        return None
    block = block_of(layout)
    ranges = slice_ranges(ctx.nchw_type(data).shape, call.attrs["begin"], call.attrs["end"],
                          call.attrs["strides"])
    (c0, c_step, count) = ranges[1]
    if any(step < 1 for _, step, _ in ranges) or c_step != 1 or c0 % block or count % block:
        return None
    begin = [start for start, _, _ in ranges]
    end = [start + step * (n - 1) + 1 for start, step, n in ranges]
    begin[1], end[1] = c0 // block, (c0 + count) // block
    attrs = {"begin": (*begin, 0), "end": (*end, block),
             "strides": (*[step for _, step, _ in ranges], 1)}
    return ctx.mark(Call(call.op, (data,), attrs), layout)


def _strided_slice_samples():
    t = TensorType((7, 13, 37), "float32")
    big = 2 ** 62
    image = TensorType((1, 16, 7, 13), "float32")  # packed in the registry's test
    return [([t], {"begin": (0, 2, 1), "end": (7, 11, 37), "strides": (1, 3, 2)}),
            ([t], {"begin": (-1, 12, 0), "end": (-big, 0, big), "strides": (-1, -2, 5)}),
            ([image], {"begin": (0, 8, 0, 0), "end": (1, 16, 7, 13), "strides": (1, 1, 1, 1)}),
            ([image], {"begin": (0, 0, 1, 0), "end": (1, 16, 7, 13), "strides": (1, 1, 2, 3)})]


def _take_rel(types, attrs):
    data, indices = tensor_args("take", types, 2)
    axis = axis_of("take", attrs["axis"], data.ndim)
    if not indices.dtype.startswith("int"):
        raise GraphTypeError(f"take: indices must be integers, got {indices}")
    return TensorType((*data.shape[:axis], *indices.shape, *data.shape[axis + 1:]), data.dtype)


def _take_compute(ins, at, ty):
    """data[..., indices[j], ...] along `axis`; a negative index counts from the end
    (ONNX's Gather), and an index out of range is clamped (no read outside data)."""
    data, indices = ins
    axis = at["axis"] % len(data.shape)
    n = ops.get_const_tuple(data.shape)[axis]
    k = len(indices.shape)

    def value(*i):
        raw = indices[i[axis:axis + k]].astype("int32")
        j = te.select(raw < 0, raw + n, raw)
        j = te.min(te.max(j, te.const(0, "int32")), te.const(n - 1, "int32"))
        return data[(*i[:axis], j, *i[axis + k:])]
    return te.compute(ty.shape, value, name="take")


def _take_samples():
    def idx(*shape):
        return TensorType(shape, "int64")
    return [([TensorType((37, 13), "float32"), idx(2, 7)], {"axis": 0}),
            ([TensorType((7, 13, 3), "float32"), idx(5)], {"axis": 1}),
            ([TensorType((7, 13), "float32"), idx()], {"axis": -1})]


def _broadcast_to_rel(types, attrs):
    t, = tensor_args("broadcast_to", types, 1)
    try:
        shape = np.broadcast_shapes(t.shape, tuple(attrs["shape"]))
    except ValueError:
        raise GraphTypeError(f"broadcast_to: {t.shape} does not broadcast to "
                             f"{attrs['shape']}") from None
    return TensorType(shape, t.dtype)


def _broadcast_to_compute(ins, at, ty):
    x, = ins
    return te.compute(ty.shape, lambda *i: x[broadcast_index(x.shape, i)],
                      name="broadcast_to")


def _tile_rel(types, attrs):
    t, = tensor_args("tile", types, 1)
    reps = attrs["reps"]
    if len(reps) != t.ndim or any(r < 0 for r in reps):
        raise GraphTypeError(f"tile: reps {reps} need one count >= 0 per axis of {t.shape}")
    return TensorType([d * r for d, r in zip(t.shape, reps)], t.dtype)


def _tile_compute(ins, at, ty):
    x, = ins
    shape = ops.get_const_tuple(x.shape)
    return te.compute(ty.shape, lambda *i: x[tuple(te.floormod(v, d) if r > 1 else v
                                                   for v, d, r in zip(i, shape, at["reps"]))],
                      name="tile")


def _trilu_compute(ins, at, ty):
    x, = ins
    k = at["k"]

    def value(*i):
        keep = i[-1] - i[-2] >= k if at["upper"] else i[-1] - i[-2] <= k
        return te.select(keep, x[i], te.const(0, x.dtype))
    return te.compute(ty.shape, value, name="trilu")


def _trilu_samples():
    return [([TensorType((7, 13), "float32")], {"k": 0, "upper": True}),
            ([TensorType((2, 13, 7), "float32")], {"k": -2, "upper": False}),
            ([TensorType((37, 37), "float32")], {"k": 3, "upper": True})]


def _trilu_rel(types, attrs):
    t, = tensor_args("trilu", types, 1)
    if t.ndim < 2:
        raise GraphTypeError(f"trilu: needs at least 2 dimensions, got {t.shape}")
    return t


register_op("strided_slice", _strided_slice_rel, OpPattern.INJECTIVE,
            {"begin": (), "end": (), "strides": ()}, 1, compute=_strided_slice_compute,
            reference=_strided_slice_ref, layout=_strided_slice_layout,
            samples=_strided_slice_samples)
register_op("take", _take_rel, OpPattern.INJECTIVE, {"axis": 0}, 2, compute=_take_compute,
            reference=lambda a, at: np.take(a[0], np.where(a[1] < 0, a[1] + a[0].shape[
                at["axis"]], a[1]), axis=at["axis"]), layout=needs_nchw, samples=_take_samples)
register_op("broadcast_to", _broadcast_to_rel, OpPattern.BROADCAST, {"shape": ()}, 1,
            compute=_broadcast_to_compute,
            reference=lambda a, at: np.broadcast_to(a[0], np.broadcast_shapes(
                a[0].shape, at["shape"])).copy(), layout=needs_nchw,
            samples=lambda: [([TensorType((7, 1), "float32")], {"shape": (2, 7, 13)}),
                             ([TensorType((13,), "float32")], {"shape": (1,)})])
register_op("tile", _tile_rel, OpPattern.INJECTIVE, {"reps": ()}, 1, compute=_tile_compute,
            reference=lambda a, at: np.tile(a[0], at["reps"]), layout=needs_nchw,
            samples=lambda: [([TensorType((7, 13), "float32")], {"reps": (2, 3)}),
                             ([TensorType((2, 7, 1), "float32")], {"reps": (1, 1, 37)})])
register_op("trilu", _trilu_rel, OpPattern.ELEMWISE, {"k": 0, "upper": True}, 1,
            compute=_trilu_compute,
            reference=lambda a, at: (np.triu if at["upper"] else np.tril)(a[0], at["k"]),
            layout=needs_nchw, samples=_trilu_samples)


def reshape(x: Expr, newshape) -> Call:
    return call("reshape", [x], newshape=tuple(int(d) for d in newshape))


def transpose(x: Expr, axes=None) -> Call:
    return call("transpose", [x], axes=None if axes is None else tuple(axes))


def concatenate(fields, axis: int = 0) -> Call:
    return call("concatenate", [Tuple(tuple(fields))], axis=int(axis))


def strided_slice(x: Expr, begin, end, strides=None) -> Call:
    """x[begin:end:strides] on every axis (numpy's rules for negative and large bounds)."""
    strides = strides or [1] * len(begin)
    return call("strided_slice", [x], begin=tuple(int(b) for b in begin),
                end=tuple(int(e) for e in end), strides=tuple(int(s) for s in strides))


def take(data: Expr, indices: Expr, axis: int = 0) -> Call:
    return call("take", [data, indices], axis=int(axis))


def broadcast_to(x: Expr, shape) -> Call:
    return call("broadcast_to", [x], shape=tuple(int(d) for d in shape))


def tile(x: Expr, reps) -> Call:
    return call("tile", [x], reps=tuple(int(r) for r in reps))


def trilu(x: Expr, k: int = 0, upper: bool = True) -> Call:
    return call("trilu", [x], k=int(k), upper=bool(upper))
