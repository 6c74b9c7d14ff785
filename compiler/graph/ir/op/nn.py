"""The graph level's neural-network ops (Relay's `relay.nn`) other than the convolution
(conv2d.py) and the pools (pool.py), whose constructors this namespace also holds: each
registered once with its type relation, pattern, attribute defaults, compute, numpy
reference, layout rule and samples, and its constructor."""
from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from .... import ops, te
from ....contiguous import contiguous
from ....target import Target
from ....ops.pattern import OpPattern
from ..expr import Call, Constant, Expr, TupleGetItem
from ..ty import TensorType, TupleType
from .conv2d import conv2d
from .layout import FORMS_ATTR, block_of, is_packed, keeps_layout, layout_transform
from .layout_rules import follow
from .norm import layer_norm
from .pool import avg_pool2d, global_avg_pool2d, max_pool2d
from .registry import GraphTypeError, call, needs_nchw, register_op, register_op_attr
from .relations import axis_of, identity_rel, same_dtype, tensor_args
from .tensor import add
from .transform import reshape, reshape_compute, strided_slice

__all__ = ["conv2d", "max_pool2d", "avg_pool2d", "global_avg_pool2d", "dense",
           "contrib_dense_pack", "matmul", "batch_matmul", "bias_add", "relu", "softmax",
           "batch_norm", "batch_flatten", "pad", "pack_dense_weight", "unpack_dense_weight",
           "log_softmax", "leaky_relu", "layer_norm"]


def _t(*shape):
    return TensorType(shape, "float32")


# ------------------------------------------------------------------ dense and matmul

DENSE_PANEL_MAX = 64
"""The widest panel the dense alteration packs (floats): a batch-1 dense (a matrix-vector
product) runs fastest on panels of several vectors, which give it as many independent
accumulators (1000 units: panels of 40, 2.5x faster than 8 at K = 512 and 1280 on
AVX-512, and faster than OpenBLAS's sgemv there), and wider ones measured no faster."""


def dense_panels(target=None) -> list[int]:
    """Panel widths the built-in dense alteration tries on `target` (compiler.Target.
    resolve: default the entered one, the build's): whole vectors of its lanes, widest
    first, up to DENSE_PANEL_MAX and to what one row of a register tile holds (the
    register rule, compiler/ops/register_tile.py); then, for units that no such panel
    divides, multiples of 8 floats (half an AVX-512 vector: 1000 units take 40)."""
    return list(_dense_panels(Target.resolve(target)))


@functools.cache
def _dense_panels(t: Target) -> tuple[int, ...]:
    """dense_panels of a resolved target, made once per target (every dense of a model
    asks, and each width is a register-rule question)."""
    widths = [w for w in range(DENSE_PANEL_MAX, 0, -1) if ops.fits(1, w, t)]
    return tuple([w for w in widths if w % t.vector_lanes == 0] +
                 [w for w in widths if w % 8 == 0 and w % t.vector_lanes])


def pack_dense_weight(weight: np.ndarray, block: int) -> np.ndarray:
    """A dense weight (N, K) in panels of `block` rows: (N / block, K, block), W[p * block
    + c, k] at [p, k, c] (nn.contrib_dense_pack's layout)."""
    n, k = weight.shape
    return contiguous(weight.reshape(n // block, block, k).transpose(0, 2, 1))


def unpack_dense_weight(packed: np.ndarray) -> np.ndarray:
    """The (N, K) weight of pack_dense_weight's result."""
    panels, k, block = packed.shape
    return packed.transpose(0, 2, 1).reshape(panels * block, k)


def _dense_rel(types, attrs):
    data, weight = tensor_args("nn.dense", types, 2)
    if weight.ndim != 2 or data.ndim < 1 or data.shape[-1] != weight.shape[1]:
        raise GraphTypeError(f"nn.dense: data {data.shape} and weight {weight.shape} do not "
                             f"match (weight is (units, {data.shape[-1] if data.ndim else '?'}))")
    return TensorType((*data.shape[:-1], weight.shape[0]), same_dtype("nn.dense", [data, weight]))


def _dense_compute(ins, at, ty):
    """compiler.ops.dense on 2-D data; data of another rank is one row per leading
    index."""
    data, weight = ins
    if len(data.shape) == 2:
        return ops.dense(data, weight)
    k = te.reduce_axis((0, ops.get_const_tuple(weight.shape)[1]), name="k")
    return te.compute(ty.shape, lambda *i: te.sum(data[(*i[:-1], k)] * weight[i[-1], k],
                                                  axis=k), name="dense")


PAD_ROWS_FROM = 64
"""The fewest rows a dense_pack is padded to a multiple of 8 from (alter_dense_pack):
a transformer's tokens. Below, the padding is a large share of the work (a batch-1
classifier's one row would be eight), and small models keep their workloads."""


@dataclass(frozen=True)
class DenseForm:
    """A dense altered into nn.contrib_dense_pack (a form, layout.FORMS_ATTR): its weights
    packed in panels of `block` rows, its data padded with zero rows to `rows` (its own
    count: no padding)."""
    block: int
    rows: int
    blocks = None    # it computes in no channel blocks
    default = True   # the op's own default schedule may run it


def dense_forms(call: Call, data_block: int | None = None) -> list[DenseForm]:
    """The form of the typed nn.dense `call` (its FORMS_ATTR; `data_block` plays no
    part): a constant weight (N, K) packed in panels of the first of dense_panels() that
    divides N, so that the kernel reads contiguous weights and packs nothing at run time
    (TOPI's dense_pack); none for a weight that is not a constant, data that is not 2-D
    float32, or N that no panel width divides (the dense template then packs). Rows
    whose count has no divisor that makes a good register tile (197: a ViT's tokens, a
    prime) are padded with zero rows to a multiple of 8 (a 1-row tile ran at a quarter
    of the speed), from PAD_ROWS_FROM rows on."""
    data, weight = (a.ty for a in call.args)
    if not isinstance(call.args[1], Constant) or data.ndim != 2 or data.dtype != "float32":
        return []
    block = next((b for b in dense_panels() if weight.shape[0] % b == 0), None)
    if block is None:
        return []
    rows = data.shape[0]
    padded = -(-rows // 8) * 8
    if rows < PAD_ROWS_FROM or _row_tile(padded, block) < 2 * _row_tile(rows, block):
        padded = rows
    return [DenseForm(block, padded)]


def alter_dense_pack(attrs, inputs, tinfos, out_type, form: DenseForm):
    """nn.dense altered into the form `form` (Relay's FTVMAlterOpLayout signature, the
    form decided: see dense_forms): its constant weight packed once, here, and
    nn.contrib_dense_pack reading it, on the data padded to the form's rows and the
    product sliced back where it pads."""
    packed = pack_dense_weight(inputs[1].data, form.block)
    packed.setflags(write=False)  # a copy of its own: the constant takes it, uncopied
    packed = Constant(packed)
    rows = tinfos[0].shape[0]
    if form.rows == rows:
        return contrib_dense_pack(inputs[0], packed)
    x = pad(inputs[0], ((0, form.rows - rows), (0, 0)))
    return strided_slice(contrib_dense_pack(x, packed), (0, 0), (rows, tinfos[1].shape[0]))


def _row_tile(rows: int, block: int) -> int:
    """The rows of the untuned register tile of a dense_pack of `rows` rows on panels
    of `block` (the register rule, among the divisors of `rows`)."""
    most = ops.max_rows(block)
    return ops.register_tile([r for r in ops.divisors(rows) if r <= most], [block])[0]


@dataclass(frozen=True)
class MatmulForm:
    """A matmul of 3-D operands padded to `rows` rows and `columns` columns, the product
    sliced back (a form, layout.FORMS_ATTR)."""
    rows: int
    columns: int
    blocks = None    # it computes in no channel blocks
    default = True   # the op's own default schedule may run it


def matmul_forms(call: Call, data_block: int | None = None) -> list[MatmulForm]:
    """The form of the typed matmul `call` (its FORMS_ATTR; `data_block` plays no part):
    for a float32 matmul of 3-D operands with one batch extent (attention's products,
    which the batch_matmul template schedules), rows or columns from PAD_ROWS_FROM on
    whose count has no divisor that makes a good register tile (197: a ViT's tokens, a
    prime) padded with zeros, the rows to a multiple of 8 and the columns to one of the
    target's lanes; none where neither pads. A ViT-B's scores, (12, 197, 64) x (12, 64,
    197), ran in 1 x 1 tiles at 15 GFLOPS."""
    a, b = (x.ty for x in call.args)
    if a.ndim != 3 or b.ndim != 3 or a.shape[0] != b.shape[0] or \
            a.dtype != "float32" or b.dtype != "float32":
        return []
    rows, columns = a.shape[1], b.shape[2]
    lanes = Target.resolve().vector_lanes
    form = MatmulForm(_padded(rows, 8, ops.max_rows(lanes)), _padded(columns, lanes, lanes))
    return [] if (form.rows, form.columns) == (rows, columns) else [form]


def alter_batched_matmul(attrs, inputs, tinfos, out_type, form: MatmulForm):
    """A matmul altered into the form `form` (Relay's FTVMAlterOpLayout signature, the
    form decided: see matmul_forms): its operands padded with zeros, the product sliced
    back."""
    (batch, rows, _), columns = tinfos[0].shape, tinfos[1].shape[2]
    x = pad(inputs[0], ((0, 0), (0, form.rows - rows), (0, 0))) if form.rows > rows \
        else inputs[0]
    y = pad(inputs[1], ((0, 0), (0, 0), (0, form.columns - columns))) \
        if form.columns > columns else inputs[1]
    return strided_slice(matmul(x, y), (0, 0, 0), (batch, rows, columns))


def _padded(n: int, multiple: int, tile: int) -> int:
    """`n` rounded up to `multiple` when it is at least PAD_ROWS_FROM and its largest
    divisor up to `tile` is below half of what the rounded count's is, else `n`."""
    up = -(-n // multiple) * multiple
    if n < PAD_ROWS_FROM or ops.largest_divisor(up, tile) < 2 * ops.largest_divisor(n, tile):
        return n
    return up


def _dense_pack_rel(types, attrs):
    data, weight = tensor_args("nn.contrib_dense_pack", types, 2)
    if weight.ndim != 3 or data.ndim != 2 or data.shape[1] != weight.shape[1]:
        raise GraphTypeError(f"nn.contrib_dense_pack: data {data.shape} and packed weight "
                             f"{weight.shape} do not match (data (M, K), weight (units / "
                             f"block, K, block))")
    return TensorType((data.shape[0], weight.shape[0] * weight.shape[2]),
                      same_dtype("nn.contrib_dense_pack", [data, weight]))


def _matmul_rel(types, attrs):
    a, b = tensor_args("matmul", types, 2)
    if a.ndim < 2 or b.ndim < 2 or a.shape[-1] != b.shape[-2]:
        raise GraphTypeError(f"matmul: shapes {a.shape} and {b.shape} do not multiply")
    try:
        batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    except ValueError:
        raise GraphTypeError(f"matmul: batch shapes of {a.shape} and {b.shape} do not "
                             f"broadcast") from None
    return TensorType((*batch, a.shape[-2], b.shape[-1]), same_dtype("matmul", [a, b]))


def _matmul_compute(ins, at, ty):
    """compiler.ops.matmul on 2-D operands; N-D ones multiply their last two axes, their
    batch axes broadcast as numpy's."""
    a, b = ins
    if len(a.shape) == 2 and len(b.shape) == 2:
        return ops.matmul(a, b)
    k = te.reduce_axis((0, ops.get_const_tuple(a.shape)[-1]), name="k")
    batch = len(ty.shape) - 2

    def lead(tensor, i):  # the operand's batch indices: aligned right, 1 broadcasts
        dims = ops.get_const_tuple(tensor.shape)[:-2]
        return tuple(0 if d == 1 else i[batch - len(dims) + n] for n, d in enumerate(dims))
    return te.compute(ty.shape, lambda *i: te.sum(
        a[(*lead(a, i), i[-2], k)] * b[(*lead(b, i), k, i[-1])], axis=k), name="matmul")


def _batch_matmul_rel(types, attrs):
    a, b = tensor_args("nn.batch_matmul", types, 2)
    if a.ndim != 3 or b.ndim != 3 or a.shape[0] != b.shape[0] or a.shape[2] != b.shape[2]:
        raise GraphTypeError(f"nn.batch_matmul: shapes {a.shape} and {b.shape} do not match "
                             f"(batch, M, K) x (batch, N, K)")
    return TensorType((a.shape[0], a.shape[1], b.shape[1]), same_dtype("nn.batch_matmul", [a, b]))


def _as_chosen(forms_of, alteration):
    """The layout rule that alters a call into the form the chooser takes among the call
    as it stands and its forms (`forms_of(call)`), by `alteration`
    (LayoutContext.alter_chosen)."""
    return lambda ctx, c: ctx.alter_chosen(c, forms_of(ctx.original()), alteration)


register_op("nn.dense", _dense_rel, OpPattern.OUT_ELEMWISE_FUSABLE, {}, 2,
            compute=_dense_compute, reference=lambda a, at: a[0] @ a[1].T,
            layout=_as_chosen(dense_forms, alter_dense_pack),
            samples=lambda: [([_t(7, 13), _t(37, 13)], {}), ([_t(2, 7, 13), _t(5, 13)], {}),
                             ([_t(13), _t(7, 13)], {})])
register_op("nn.contrib_dense_pack", _dense_pack_rel, OpPattern.OUT_ELEMWISE_FUSABLE, {}, 2,
            compute=lambda ins, at, ty: ops.dense_pack(ins[0], ins[1]),
            reference=lambda a, at: a[0] @ unpack_dense_weight(a[1]).T, layout=needs_nchw,
            samples=lambda: [([_t(7, 13), _t(5, 13, 8)], {}), ([_t(1, 37), _t(2, 37, 16)], {})])
register_op("matmul", _matmul_rel, OpPattern.OUT_ELEMWISE_FUSABLE, {}, 2,
            compute=_matmul_compute, reference=lambda a, at: np.matmul(a[0], a[1]),
            layout=_as_chosen(matmul_forms, alter_batched_matmul),
            samples=lambda: [([_t(7, 13), _t(13, 37)], {}),
                             ([_t(2, 7, 13), _t(13, 5)], {}),
                             ([_t(3, 1, 7, 13), _t(2, 13, 5)], {})])
register_op("nn.batch_matmul", _batch_matmul_rel, OpPattern.OUT_ELEMWISE_FUSABLE, {}, 2,
            compute=lambda ins, at, ty: ops.batch_matmul(ins[0], ins[1], transpose_b=True),
            reference=lambda a, at: a[0] @ a[1].transpose(0, 2, 1), layout=needs_nchw,
            samples=lambda: [([_t(3, 7, 13), _t(3, 37, 13)], {})])
register_op_attr("nn.dense", FORMS_ATTR, dense_forms)
register_op_attr("matmul", FORMS_ATTR, matmul_forms)


# ------------------------------------------------------------------ the others

def _bias_add_rel(types, attrs):
    data, bias = tensor_args("nn.bias_add", types, 2)
    axis = axis_of("nn.bias_add", attrs["axis"], data.ndim)
    if bias.shape != (data.shape[axis],):
        raise GraphTypeError(f"nn.bias_add: bias {bias.shape} does not match axis {axis} of "
                             f"{data.shape}")
    return data


def _bias_add_ref(args, attrs):
    data, bias = args
    shape = [1] * data.ndim
    shape[attrs["axis"] % data.ndim] = -1
    return data + bias.reshape(shape)


@keeps_layout
def _bias_add_layout(ctx, call: Call) -> Expr | None:
    """Packed data along the channels: an add of the bias as (1, C, 1, 1), packed."""
    data, bias = call.args
    layout, shape = ctx.layout_of(data), tuple(call.ty.shape)
    if not is_packed(layout) or len(shape) != 4 or call.attrs["axis"] % 4 != 1 or \
            shape[1] % block_of(layout):
        return None
    packed_bias = layout_transform(reshape(bias, (1, shape[1], 1, 1)), "NCHW", layout)
    return ctx.mark(add(ctx.convert(data, layout), packed_bias), layout)


def _batch_norm_rel(types, attrs):
    data, *params = tensor_args("nn.batch_norm", types, 5)
    axis = axis_of("nn.batch_norm", attrs["axis"], data.ndim)
    for p in params:
        if p.shape != (data.shape[axis],):
            raise GraphTypeError(f"nn.batch_norm: gamma, beta, mean and variance must be "
                                 f"({data.shape[axis]},), got {p.shape}")
    vector = TensorType((data.shape[axis],), data.dtype)
    return TupleType((data, vector, vector))


def _batch_norm_ref(args, attrs):
    data, gamma, beta, mean, var = args
    shape = [1] * data.ndim
    shape[attrs["axis"] % data.ndim] = -1
    scale = gamma / np.sqrt(var + attrs["epsilon"])
    return (data * scale.reshape(shape) + (beta - mean * scale).reshape(shape), mean, var)


def _softmax_ref(args, attrs):
    x, = args
    e = np.exp(x - x.max(axis=attrs["axis"], keepdims=True))
    return e / e.sum(axis=attrs["axis"], keepdims=True)


def _batch_flatten_rel(types, attrs):
    data, = tensor_args("nn.batch_flatten", types, 1)
    rest = 1
    for d in data.shape[1:]:
        rest *= d
    return TensorType((data.shape[0], rest), data.dtype)


def _pad_rel(types, attrs):
    data, = tensor_args("nn.pad", types, 1)
    width, mode = attrs["pad_width"], attrs["pad_mode"]
    if len(width) != data.ndim:
        raise GraphTypeError(f"nn.pad: pad_width {width} needs one (before, after) per axis "
                             f"of {data.shape}")
    if mode not in ops.PAD_MODES:
        raise GraphTypeError(f"nn.pad: pad_mode {mode!r} is not one of "
                             f"{', '.join(ops.PAD_MODES)}")
    if mode == "reflect" and any(max(w) >= d for d, w in zip(data.shape, width) if any(w)):
        raise GraphTypeError(f"nn.pad: reflect padding {width} must be smaller than each "
                             f"padded axis of {data.shape}")
    return TensorType([d + a + b for d, (a, b) in zip(data.shape, width)], data.dtype)


def _pad_ref(args, attrs):
    if attrs["pad_mode"] == "constant":
        return np.pad(args[0], attrs["pad_width"], constant_values=attrs["pad_value"])
    return np.pad(args[0], attrs["pad_width"], mode=attrs["pad_mode"])


register_op("nn.bias_add", _bias_add_rel, OpPattern.BROADCAST, {"axis": 1}, 2,
            compute=lambda ins, at, ty: ops.bias_add(ins[0], ins[1], at["axis"]),
            reference=_bias_add_ref, layout=_bias_add_layout,
            samples=lambda: [([_t(7, 13), _t(13)], {"axis": 1}),
                             ([_t(1, 16, 7, 13), _t(16)], {"axis": 1}),
                             ([_t(2, 7, 13, 5), _t(5)], {"axis": -1})])
register_op("nn.relu", identity_rel("nn.relu"), OpPattern.ELEMWISE, {}, 1,
            compute=lambda ins, at, ty: ops.relu(ins[0]),
            reference=lambda a, at: np.maximum(a[0], 0), layout=follow)
register_op("nn.softmax", identity_rel("nn.softmax"), OpPattern.OPAQUE, {"axis": -1}, 1,
            compute=lambda ins, at, ty: ops.softmax(ins[0], at["axis"]),
            reference=_softmax_ref, layout=needs_nchw)
register_op("nn.log_softmax", identity_rel("nn.log_softmax"), OpPattern.OPAQUE,
            {"axis": -1}, 1, compute=lambda ins, at, ty: ops.log_softmax(ins[0], at["axis"]),
            reference=lambda a, at: np.log(_softmax_ref(a, at)), layout=needs_nchw,
            samples=lambda: [([_t(7, 37)], {"axis": -1}), ([_t(2, 13, 7)], {"axis": 1})])
register_op("nn.leaky_relu", identity_rel("nn.leaky_relu"), OpPattern.ELEMWISE,
            {"alpha": 0.01}, 1,
            compute=lambda ins, at, ty: te.compute(ty.shape, lambda *i: te.select(
                ins[0][i] > 0, ins[0][i], ins[0][i] * at["alpha"]), name="leaky_relu"),
            reference=lambda a, at: np.where(a[0] > 0, a[0], a[0] * at["alpha"]),
            layout=follow)
register_op("nn.batch_norm", _batch_norm_rel, OpPattern.OPAQUE,
            {"axis": 1, "epsilon": 1e-5}, 5,
            compute="SimplifyInference rewrites it into a multiply and an add",
            reference=_batch_norm_ref, layout=needs_nchw,
            samples=lambda: [([_t(2, 7, 13), *[_t(7)] * 4], {"axis": 1, "epsilon": 1e-5})])
register_op("nn.batch_flatten", _batch_flatten_rel, OpPattern.INJECTIVE, {}, 1,
            compute=reshape_compute,
            reference=lambda a, at: a[0].reshape(a[0].shape[0], -1), layout=needs_nchw)
register_op("nn.pad", _pad_rel, OpPattern.INJECTIVE,
            {"pad_width": (), "pad_value": 0.0, "pad_mode": "constant"}, 1,
            compute=lambda ins, at, ty: ops.pad(ins[0], [a for a, _ in at["pad_width"]],
                                                [b for _, b in at["pad_width"]],
                                                at["pad_value"], at["pad_mode"]),
            reference=_pad_ref, layout=needs_nchw,
            samples=lambda: [([_t(7, 13)], {"pad_width": ((1, 2), (0, 3)), "pad_value": 0.5}),
                             ([_t(1, 3, 13, 7)], {"pad_width": ((0, 0), (0, 0), (1, 1),
                                                                (2, 0)), "pad_value": 0.0}),
                             *[([_t(2, 3, 13, 7)], {"pad_width": ((0, 0), (1, 0), (2, 3),
                                                                  (6, 1)), "pad_mode": mode})
                               for mode in ("edge", "reflect")]])


def dense(data: Expr, weight: Expr) -> Call:
    return call("nn.dense", [data, weight])


def contrib_dense_pack(data: Expr, packed_weight: Expr) -> Call:
    """nn.dense with its weight (N, K) packed (N / block, K, block) (AlterOpLayout)."""
    return call("nn.contrib_dense_pack", [data, packed_weight])


def matmul(a: Expr, b: Expr) -> Call:
    return call("matmul", [a, b])


def batch_matmul(a: Expr, b: Expr) -> Call:
    return call("nn.batch_matmul", [a, b])


def bias_add(data: Expr, bias: Expr, axis: int = 1) -> Call:
    return call("nn.bias_add", [data, bias], axis=int(axis))


def relu(data: Expr) -> Call:
    return call("nn.relu", [data])


def softmax(data: Expr, axis: int = -1) -> Call:
    return call("nn.softmax", [data], axis=int(axis))


def log_softmax(data: Expr, axis: int = -1) -> Call:
    return call("nn.log_softmax", [data], axis=int(axis))


def leaky_relu(data: Expr, alpha: float = 0.01) -> Call:
    return call("nn.leaky_relu", [data], alpha=float(alpha))


def batch_norm(data, gamma, beta, moving_mean, moving_var, axis: int = 1,
               epsilon: float = 1e-5) -> TupleGetItem:
    """The normalized data: field 0 of Relay's batch_norm tuple."""
    return TupleGetItem(call("nn.batch_norm", [data, gamma, beta, moving_mean, moving_var],
                             axis=int(axis), epsilon=float(epsilon)), 0)


def batch_flatten(data: Expr) -> Call:
    return call("nn.batch_flatten", [data])


def pad(data: Expr, pad_width, pad_value: float = 0.0, pad_mode: str = "constant") -> Call:
    """`data` padded by pad_width ((before, after) per axis) with `pad_value`, or its edge
    or reflection (pad_mode "edge", "reflect": compiler.ops.pad)."""
    return call("nn.pad", [data], pad_width=tuple((int(a), int(b)) for a, b in pad_width),
                pad_value=float(pad_value), pad_mode=str(pad_mode))
