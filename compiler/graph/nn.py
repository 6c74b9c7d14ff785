"""The graph level's neural-network ops (Relay's `relay.nn`): each registered with its
type relation, pattern kind and attribute defaults, and its constructor.

Layouts are NCHW for data and OIHW for conv2d weights; `data_layout="NCHW16c"` (set by
AlterOpLayout) means the packed layout with 16 channels innermost, and
`kernel_layout="OIHW16i16o"` the packed weights (O/16, I/16, KH, KW, 16, 16) that go with
it (the output is NCHW16c as well, unless `out_layout` names another block: a 3-channel
image convolves as NCHW3c with OIHW3i16o weights into NCHW16c). Pools take a `layout`
too, NCHW or NCHW[x]c.
"""
from __future__ import annotations

from ..ops.pattern import OpPattern
from .expr import Call, Expr, TupleGetItem
from .op import GraphTypeError, register_op
from .relations import axis_of, identity_rel, kernel_blocks, same_dtype, tensor_args
from .tensor_ops import call
from .ty import TensorType, TupleType


def _pair(value, name: str) -> tuple:
    value = (value, value) if isinstance(value, int) else tuple(int(v) for v in value)
    if len(value) != 2:
        raise TypeError(f"{name} must be an int or two ints, got {value!r}")
    return value


def _padding(value) -> tuple:
    """(top, left, bottom, right) from an int, (h, w) or four values, as Relay's."""
    value = (value,) if isinstance(value, int) else tuple(int(v) for v in value)
    if len(value) == 1:
        return value * 4
    if len(value) == 2:
        return (value[0], value[1], value[0], value[1])
    if len(value) == 4:
        return value
    raise TypeError(f"padding must be 1, 2 or 4 ints, got {value!r}")


def _window(name, size, kernel, stride, pad_before, pad_after, dilation=1) -> int:
    extent = (size + pad_before + pad_after - dilation * (kernel - 1) - 1) // stride + 1
    if extent < 1:
        raise GraphTypeError(f"{name}: a window of {kernel} (dilation {dilation}) does not "
                             f"fit in {size} with padding {pad_before}, {pad_after}")
    return extent


def _packed_conv2d_rel(data, weight, attrs):
    """data NCHW[x]c (N, C/x, H, W, x); weight OIHW, or packed: OIHW[x]i[y]o (groups 1)
    or OIHW1i[x]o (depthwise, groups C): out NCHW[y]c (N, O/y, OH, OW, y), y = x unless
    out_layout says otherwise."""
    n, cb, h, w, block = data.shape
    channels, groups = cb * block, attrs["groups"]
    out_layout = attrs["out_layout"] or attrs["data_layout"]
    out_block = int(out_layout[4:-1])
    blocks = kernel_blocks(attrs["kernel_layout"])
    if blocks is not None:
        bi, bo = blocks
        if weight.ndim != 6 or bo != out_block or weight.shape[4:] != (bi, bo):
            raise GraphTypeError(f"nn.conv2d: weight {weight.shape} is not "
                                 f"{attrs['kernel_layout']} for data {data.shape}")
        ob, ib, kh, kw = weight.shape[:4]
        o, i = ob * bo, ib * bi
    else:
        o, i, kh, kw = weight.shape
    depthwise = groups == channels and i == 1 and o == channels and out_block == block
    if not (groups == 1 and i == channels or depthwise) or o % out_block:
        raise GraphTypeError(f"nn.conv2d: data {data.shape} ({attrs['data_layout']}) and "
                             f"weight {weight.shape} do not match for groups={groups}")
    (sh, sw), (dh, dw) = attrs["strides"], attrs["dilation"]
    top, left, bottom, right = attrs["padding"]
    return TensorType((n, o // out_block, _window("nn.conv2d", h, kh, sh, top, bottom, dh),
                       _window("nn.conv2d", w, kw, sw, left, right, dw), out_block),
                      same_dtype("nn.conv2d", [data, weight]))


def _conv2d_rel(types, attrs):
    data, weight = tensor_args("nn.conv2d", types, 2)
    layout = attrs["data_layout"]
    if layout != "NCHW":
        if not (layout.startswith("NCHW") and layout.endswith("c") and data.ndim == 5
                and layout[4:-1].isdigit() and int(layout[4:-1]) == data.shape[4]):
            raise GraphTypeError(f"nn.conv2d: data_layout {layout} does not fit data "
                                 f"{data.shape} (NCHW, or NCHW[x]c with x innermost)")
        return _packed_conv2d_rel(data, weight, attrs)
    if data.ndim != 4 or weight.ndim != 4:
        raise GraphTypeError(f"nn.conv2d: data {data.shape} and weight {weight.shape} must be "
                             f"NCHW and OIHW")
    n, c, h, w = data.shape
    o, i, kh, kw = weight.shape
    groups = attrs["groups"]
    if c % groups or o % groups or i * groups != c:
        raise GraphTypeError(f"nn.conv2d: data {data.shape} and weight {weight.shape} do not "
                             f"match for groups={groups} (weight needs {c // groups} input "
                             f"channels per group)")
    (sh, sw), (dh, dw) = attrs["strides"], attrs["dilation"]
    top, left, bottom, right = attrs["padding"]
    return TensorType((n, o, _window("nn.conv2d", h, kh, sh, top, bottom, dh),
                       _window("nn.conv2d", w, kw, sw, left, right, dw)),
                      same_dtype("nn.conv2d", [data, weight]))


def _dense_rel(types, attrs):
    data, weight = tensor_args("nn.dense", types, 2)
    if weight.ndim != 2 or data.ndim < 1 or data.shape[-1] != weight.shape[1]:
        raise GraphTypeError(f"nn.dense: data {data.shape} and weight {weight.shape} do not "
                             f"match (weight is (units, {data.shape[-1] if data.ndim else '?'}))")
    return TensorType((*data.shape[:-1], weight.shape[0]), same_dtype("nn.dense", [data, weight]))


def _dense_pack_rel(types, attrs):
    data, weight = tensor_args("nn.contrib_dense_pack", types, 2)
    if weight.ndim != 3 or data.ndim != 2 or data.shape[1] != weight.shape[1]:
        raise GraphTypeError(f"nn.contrib_dense_pack: data {data.shape} and packed weight "
                             f"{weight.shape} do not match (data (M, K), weight (units / "
                             f"block, K, block))")
    return TensorType((data.shape[0], weight.shape[0] * weight.shape[2]),
                      same_dtype("nn.contrib_dense_pack", [data, weight]))


def _batch_matmul_rel(types, attrs):
    a, b = tensor_args("nn.batch_matmul", types, 2)
    if a.ndim != 3 or b.ndim != 3 or a.shape[0] != b.shape[0] or a.shape[2] != b.shape[2]:
        raise GraphTypeError(f"nn.batch_matmul: shapes {a.shape} and {b.shape} do not match "
                             f"(batch, M, K) x (batch, N, K)")
    return TensorType((a.shape[0], a.shape[1], b.shape[1]), same_dtype("nn.batch_matmul", [a, b]))


def _bias_add_rel(types, attrs):
    data, bias = tensor_args("nn.bias_add", types, 2)
    axis = axis_of("nn.bias_add", attrs["axis"], data.ndim)
    if bias.shape != (data.shape[axis],):
        raise GraphTypeError(f"nn.bias_add: bias {bias.shape} does not match axis {axis} of "
                             f"{data.shape}")
    return data


def _batch_norm_rel(types, attrs):
    data, *params = tensor_args("nn.batch_norm", types, 5)
    axis = axis_of("nn.batch_norm", attrs["axis"], data.ndim)
    for p in params:
        if p.shape != (data.shape[axis],):
            raise GraphTypeError(f"nn.batch_norm: gamma, beta, mean and variance must be "
                                 f"({data.shape[axis]},), got {p.shape}")
    vector = TensorType((data.shape[axis],), data.dtype)
    return TupleType((data, vector, vector))


def _pool_data(name, data, attrs):
    """A pool's data: NCHW, or NCHW[x]c (N, C/x, H, W, x) as its `layout` says."""
    layout = attrs["layout"]
    packed = layout != "NCHW"
    if data.ndim != (5 if packed else 4) or packed and f"NCHW{data.shape[-1]}c" != layout:
        raise GraphTypeError(f"{name}: data {data.shape} is not {layout}")
    return data


def _pool2d_rel(name):
    def rel(types, attrs):
        data, = tensor_args(name, types, 1)
        n, c, h, w = _pool_data(name, data, attrs).shape[:4]
        (kh, kw), (sh, sw) = attrs["pool_size"], attrs["strides"]
        top, left, bottom, right = attrs["padding"]
        return TensorType((n, c, _window(name, h, kh, sh, top, bottom),
                           _window(name, w, kw, sw, left, right), *data.shape[4:]), data.dtype)
    return rel


def _global_pool_rel(types, attrs):
    data, = tensor_args("nn.global_avg_pool2d", types, 1)
    _pool_data("nn.global_avg_pool2d", data, attrs)
    return TensorType((*data.shape[:2], 1, 1, *data.shape[4:]), data.dtype)


def _batch_flatten_rel(types, attrs):
    data, = tensor_args("nn.batch_flatten", types, 1)
    rest = 1
    for d in data.shape[1:]:
        rest *= d
    return TensorType((data.shape[0], rest), data.dtype)


def _pad_rel(types, attrs):
    data, = tensor_args("nn.pad", types, 1)
    width = attrs["pad_width"]
    if len(width) != data.ndim:
        raise GraphTypeError(f"nn.pad: pad_width {width} needs one (before, after) per axis "
                             f"of {data.shape}")
    return TensorType([d + a + b for d, (a, b) in zip(data.shape, width)], data.dtype)


_WINDOW = {"pool_size": (1, 1), "strides": (1, 1), "padding": (0, 0, 0, 0),
           "layout": "NCHW"}
register_op("nn.conv2d", _conv2d_rel, OpPattern.OUT_ELEMWISE_FUSABLE,
            {"strides": (1, 1), "padding": None, "dilation": (1, 1), "groups": 1,
             "data_layout": "NCHW", "kernel_layout": "OIHW", "out_layout": ""}, 2)
register_op("nn.dense", _dense_rel, OpPattern.OUT_ELEMWISE_FUSABLE, {}, 2)
register_op("nn.contrib_dense_pack", _dense_pack_rel, OpPattern.OUT_ELEMWISE_FUSABLE, {}, 2)
register_op("nn.batch_matmul", _batch_matmul_rel, OpPattern.OUT_ELEMWISE_FUSABLE, {}, 2)
register_op("nn.bias_add", _bias_add_rel, OpPattern.BROADCAST, {"axis": 1}, 2)
register_op("nn.relu", identity_rel("nn.relu"), OpPattern.ELEMWISE, {}, 1)
register_op("nn.softmax", identity_rel("nn.softmax"), OpPattern.OPAQUE, {"axis": -1}, 1)
register_op("nn.batch_norm", _batch_norm_rel, OpPattern.OPAQUE,
            {"axis": 1, "epsilon": 1e-5}, 5)
register_op("nn.max_pool2d", _pool2d_rel("nn.max_pool2d"), OpPattern.OUT_ELEMWISE_FUSABLE,
            _WINDOW, 1)
register_op("nn.avg_pool2d", _pool2d_rel("nn.avg_pool2d"), OpPattern.OUT_ELEMWISE_FUSABLE,
            {**_WINDOW, "count_include_pad": False}, 1)
register_op("nn.global_avg_pool2d", _global_pool_rel, OpPattern.OUT_ELEMWISE_FUSABLE,
            {"layout": "NCHW"}, 1)
register_op("nn.batch_flatten", _batch_flatten_rel, OpPattern.INJECTIVE, {}, 1)
register_op("nn.pad", _pad_rel, OpPattern.INJECTIVE, {"pad_width": (), "pad_value": 0.0}, 1)


def conv2d(data: Expr, weight: Expr, strides=(1, 1), padding=(0, 0), dilation=(1, 1),
           groups: int = 1, data_layout: str = "NCHW", kernel_layout: str = "OIHW",
           out_layout: str = "") -> Call:
    """out_layout "" is data_layout's (Relay's convention)."""
    return call("nn.conv2d", [data, weight], strides=_pair(strides, "strides"),
                padding=_padding(padding), dilation=_pair(dilation, "dilation"),
                groups=int(groups), data_layout=data_layout, kernel_layout=kernel_layout,
                out_layout=out_layout)


def dense(data: Expr, weight: Expr) -> Call:
    return call("nn.dense", [data, weight])


def contrib_dense_pack(data: Expr, packed_weight: Expr) -> Call:
    """nn.dense with its weight (N, K) packed (N / block, K, block) (AlterOpLayout)."""
    return call("nn.contrib_dense_pack", [data, packed_weight])


def batch_matmul(a: Expr, b: Expr) -> Call:
    return call("nn.batch_matmul", [a, b])


def bias_add(data: Expr, bias: Expr, axis: int = 1) -> Call:
    return call("nn.bias_add", [data, bias], axis=int(axis))


def relu(data: Expr) -> Call:
    return call("nn.relu", [data])


def softmax(data: Expr, axis: int = -1) -> Call:
    return call("nn.softmax", [data], axis=int(axis))


def batch_norm(data, gamma, beta, moving_mean, moving_var, axis: int = 1,
               epsilon: float = 1e-5) -> TupleGetItem:
    """The normalized data: field 0 of Relay's batch_norm tuple."""
    return TupleGetItem(call("nn.batch_norm", [data, gamma, beta, moving_mean, moving_var],
                             axis=int(axis), epsilon=float(epsilon)), 0)


def max_pool2d(data: Expr, pool_size=(1, 1), strides=(1, 1), padding=(0, 0)) -> Call:
    return call("nn.max_pool2d", [data], pool_size=_pair(pool_size, "pool_size"),
                strides=_pair(strides, "strides"), padding=_padding(padding))


def avg_pool2d(data: Expr, pool_size=(1, 1), strides=(1, 1), padding=(0, 0),
               count_include_pad: bool = False) -> Call:
    return call("nn.avg_pool2d", [data], pool_size=_pair(pool_size, "pool_size"),
                strides=_pair(strides, "strides"), padding=_padding(padding),
                count_include_pad=bool(count_include_pad))


def global_avg_pool2d(data: Expr) -> Call:
    return call("nn.global_avg_pool2d", [data])


def batch_flatten(data: Expr) -> Call:
    return call("nn.batch_flatten", [data])


def pad(data: Expr, pad_width, pad_value: float = 0.0) -> Call:
    return call("nn.pad", [data], pad_width=tuple((int(a), int(b)) for a, b in pad_width),
                pad_value=float(pad_value))
