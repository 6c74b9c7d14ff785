"""qnn.conv2d and qnn.dense: the integer cores of quantized convolutions and matmuls.

qnn.conv2d, the integer core of a quantized convolution (Relay's qnn.conv2d): uint8
data less its zero point convolved with int8 weights, summed exactly in int32,

    qnn.conv2d(x, w)[n, o, y, x] = sum over c, ky, kx of (x[...] - input_zero_point) * w[...]

with the requantize epilogue (bias, scales, output zero point, saturation) as the
elementwise ops after it, which FuseOps puts in its kernel. The ONNX importer makes it
of QLinearConv, and of a QDQ Conv after fusing its DequantizeLinear / QuantizeLinear
nodes into one (frontend/qdq_fusion.py); signed 8-bit data arrives shifted by 128 to
uint8 (and its zero point with it), as the CPUs' int8 dot product multiplies unsigned
bytes by signed ones.

Layouts: NCHW data with OIHW int8 weights (groups 1) computes as an int32 convolution
(compiler.ops.conv2d_nchw of the operands widened), any channel count; its layout rule
packs a convolution with constant weights whose channels divide into blocks of a
multiple of 4 (the target's channel blocks: its float32 lanes, 16 on AVX-512, 8 on
AVX2) into NCHW[x]c uint8 data, weights as int32 words of four input channels,
(O/y, C/x, KH, KW, x/4, y) (kernel_layout "OIHW[x]i[y]o4i"), and a third operand, the
zero point's term zero_point * sum(w) per output channel, (O/y, y): the packed
compute is compiler.ops.conv2d_nchwc_int8 (vpdpbusd where the CPU has VNNI) less it.

A depthwise qnn.conv2d (groups = channels, one filter each: weights (C, 1, KH, KW), at
most DEPTHWISE_EXACT_TERMS taps) sums its window in float32, exactly (every partial sum
an integer below 2^24): NCHW, the operands widened to float32 by depthwise_conv2d_nchw;
packed in the target's channel blocks (those of its data where they fit), uint8
NCHW[x]c data by int8 weights (C/x, 1, KH, KW, 1, x) (kernel_layout "OIHW1i[x]o"),
less the zero point's term (C/x, x): compiler.ops' depthwise_conv2d_nchwc_int8, both
widened in the product. Either way the result is the int32 sums.

qnn.dense(x, w)[m, n] = sum over k of x[m, k] * w[n, k], uint8 data (M, K) by int8
weights (N, K) (nn.dense's layout), the raw int32 sums: a zero point of the data, which
dynamic quantization computes at run time, is the caller's term (zero point times the
column sums of the weights). Unpacked, an int32 reduction of the widened operands; its
layout rule packs constant weights with K a multiple of 4 and N of the target's lanes
into (N/y, K/4, y) words (kernel_layout "NK[y]n4k"), computed by compiler.ops.dense_int8.
"""
from __future__ import annotations

import functools

import numpy as np

from .... import te
from ....ops.conv2d import conv2d_nchw
from ....ops.conv2d_nchwc import schedule_conv2d_nchwc
from ....ops.conv2d_nchwc_int8 import (DEPTHWISE_EXACT_TERMS, conv2d_nchwc_int8,
                                       depthwise_conv2d_nchwc_int8,
                                       schedule_conv2d_nchwc_int8)
from ....ops.conv2d_schedule import schedule_conv2d_nchw
from ....ops.depthwise_conv2d import depthwise_conv2d_nchw
from ....ops.dense_int8 import dense_int8, schedule_dense_int8
from ....ops.pattern import OpPattern
from ....ops.tail import find_anchor
from ..expr import Call, Constant, Expr
from ..ty import TensorType
from .layout import (block_of, channel_blocks, is_packed, packed, smallest_block,
                     transform_array)
from .registry import GraphTypeError, call, default_schedule, register_op
from .relations import padding4, pair, tensor_args, window

NAME = "qnn.conv2d"
DENSE = "qnn.dense"


def _out_hw(h, w, kh, kw, attrs):
    (sh, sw), (dh, dw) = attrs["strides"], attrs["dilation"]
    top, left, bottom, right = attrs["padding"]
    return (window(NAME, h, kh, sh, top, bottom, dh), window(NAME, w, kw, sw, left, right, dw))


def _check_attrs(attrs):
    if not 0 <= attrs["input_zero_point"] < 256:
        raise GraphTypeError(f"{NAME}: input_zero_point {attrs['input_zero_point']} is not "
                             f"a uint8 value")


def _depthwise_rel(types, attrs):
    """A depthwise call's type: NCHW (C, 1, KH, KW) int8 weights, or packed ones
    (C/x, 1, KH, KW, 1, x) with their int32 term (C/x, x)."""
    packed_form = attrs["data_layout"] != "NCHW"
    data, weight, *term = tensor_args(NAME, types, 3 if packed_form else 2)
    if not packed_form:
        fits = (data.dtype, weight.dtype) == ("uint8", "int8") and data.ndim == 4 and \
            weight.ndim == 4 and attrs["groups"] == data.shape[1] == weight.shape[0] and \
            weight.shape[1] == 1
    else:
        x = block_of(attrs["data_layout"])
        fits = data.dtype == "uint8" and data.ndim == 5 and data.shape[4] == x and \
            (weight.dtype, term[0].dtype) == ("int8", "int32") and weight.ndim == 6 and \
            weight.shape[:2] == (data.shape[1], 1) and weight.shape[4:] == (1, x) and \
            term[0].shape == (data.shape[1], x) and attrs["groups"] == data.shape[1] * x
    if not fits:
        raise GraphTypeError(f"{NAME}: a depthwise call of groups={attrs['groups']} takes "
                             f"uint8 data and one filter per channel, not {data} and "
                             f"{weight} ({attrs['data_layout']})")
    kh, kw = weight.shape[2:4]
    if kh * kw > DEPTHWISE_EXACT_TERMS:
        raise GraphTypeError(f"{NAME}: a depthwise window of {kh}x{kw} is more taps than "
                             f"float32 sums exactly ({DEPTHWISE_EXACT_TERMS})")
    return TensorType((*data.shape[:2], *_out_hw(*data.shape[2:4], kh, kw, attrs),
                       *data.shape[4:]), "int32")


def _rel(types, attrs):
    _check_attrs(attrs)
    if attrs["groups"] != 1:
        return _depthwise_rel(types, attrs)
    if attrs["data_layout"] == "NCHW":
        data, weight = tensor_args(NAME, types, 2)
        if (data.dtype, weight.dtype) != ("uint8", "int8") or data.ndim != 4 or \
                weight.ndim != 4 or data.shape[1] != weight.shape[1]:
            raise GraphTypeError(f"{NAME}: takes uint8 NCHW data and int8 OIHW weights of its "
                                 f"channels, not {data} and {weight}")
        n, _, h, w = data.shape
        o, _, kh, kw = weight.shape
        return TensorType((n, o, *_out_hw(h, w, kh, kw, attrs)), "int32")
    data, weight, term = tensor_args(NAME, types, 3)
    x = block_of(attrs["data_layout"])
    if data.dtype != "uint8" or data.ndim != 5 or data.shape[4] != x or x % 4 or \
            weight.dtype != "int32" or weight.ndim != 6 or \
            weight.shape[1] != data.shape[1] or 4 * weight.shape[4] != x or \
            term.dtype != "int32" or term.shape != (weight.shape[0], weight.shape[5]):
        raise GraphTypeError(f"{NAME}: packed data {data} ({attrs['data_layout']}), weight "
                             f"words {weight} and zero-point term {term} do not fit")
    n, _, h, w, _ = data.shape
    ob, _, kh, kw, _, y = weight.shape
    return TensorType((n, ob, *_out_hw(h, w, kh, kw, attrs), y), "int32")


def _compute(ins, at, ty):
    common = dict(stride=at["strides"], padding=at["padding"], dilation=at["dilation"])
    zero = at["input_zero_point"]
    if at["groups"] != 1:
        return _depthwise_compute(ins, at, common)
    if at["data_layout"] == "NCHW":
        data, weight = ins
        x = te.compute(data.shape, lambda *i: te.cast(data[i], "int32") - zero,
                       name="qnn_data")
        w = te.compute(weight.shape, lambda *i: te.cast(weight[i], "int32"), name="qnn_weight")
        return conv2d_nchw(x, w, **common)
    data, words, term = ins
    return less_term(conv2d_nchwc_int8(data, words, zero_point=zero, **common), term)


def less_term(sums: te.Tensor, term: te.Tensor) -> te.Tensor:
    """A packed call's result, the anchor of its kernel: the raw sums (N, O/y, OH, OW, y)
    as int32 (a depthwise one's are float32 integers) less the zero point's term
    (O/y, y)."""
    def raw(*i):
        return sums[i] if sums.dtype == "int32" else te.cast(sums[i], "int32")
    return te.compute(sums.shape, lambda b, o, y, x, c: raw(b, o, y, x, c) - term[o, c],
                      name="qnn_conv2d")


def _depthwise_compute(ins, at, common):
    zero = at["input_zero_point"]
    if at["data_layout"] == "NCHW":
        data, weight = ins
        x = te.compute(data.shape, lambda *i: te.cast(data[i], "float32") - float(zero),
                       name="qnn_data")
        w = te.compute(weight.shape, lambda *i: te.cast(weight[i], "float32"),
                       name="qnn_weight")
        conv = depthwise_conv2d_nchw(x, w, **common)
        return te.compute(conv.shape, lambda *i: te.cast(conv[i], "int32"), name="qnn_conv2d")
    data, weight, term = ins
    return less_term(depthwise_conv2d_nchwc_int8(data, weight, zero_point=zero, **common),
                     term)


def int_conv(x: np.ndarray, w: np.ndarray, attrs, pad_value: int) -> np.ndarray:
    """The int64 convolution of NCHW `x` padded with `pad_value` by OIHW `w` (of all
    its channels, or of one each: depthwise)."""
    (sh, sw), (dh, dw) = attrs["strides"], attrs["dilation"]
    top, left, bottom, right = attrs["padding"]
    x = np.pad(x.astype(np.int64), ((0, 0), (0, 0), (top, bottom), (left, right)),
               constant_values=pad_value)
    o, per_group, kh, kw = w.shape
    oh, ow = (x.shape[2] - dh * (kh - 1) - 1) // sh + 1, (x.shape[3] - dw * (kw - 1) - 1) // sw + 1
    out = np.zeros((x.shape[0], o, oh, ow), np.int64)
    for ky in range(kh):
        for kx in range(kw):
            win = x[:, :, ky * dh:ky * dh + sh * (oh - 1) + 1:sh,
                    kx * dw:kx * dw + sw * (ow - 1) + 1:sw]
            taps = w[:, :, ky, kx].astype(np.int64)
            if per_group == x.shape[1]:
                out += np.einsum("nchw,oc->nohw", win, taps)
            else:  # depthwise: one filter per channel
                out += win * taps.reshape(1, o, 1, 1)
    return out


def _reference(args, attrs):
    zero = attrs["input_zero_point"]
    if attrs["data_layout"] == "NCHW":
        data, weight = args
        return int_conv(data.astype(np.int64) - zero, weight, attrs, 0).astype(np.int32)
    data, words, term = args
    nchw = transform_array(data, attrs["data_layout"], "NCHW")
    weight = unpack_depthwise(words) if attrs["groups"] != 1 else unpack_words(words)
    raw = int_conv(nchw, weight, attrs, zero)
    out = (raw - term.reshape(1, -1, 1, 1)).astype(np.int32)
    return transform_array(out, "NCHW", attrs.get("out_layout") or attrs["data_layout"])


def pack_words(weight: np.ndarray, block: int, out_block: int) -> np.ndarray:
    """int8 OIHW weights as (O/y, C/x, KH, KW, x/4, y) int32 words of four input channels
    each (byte k, the lowest first, channel 4j + k of the block)."""
    o, c, kh, kw = weight.shape
    k = weight.astype(np.int8).reshape(o // out_block, out_block, c // block, block // 4, 4,
                                       kh, kw)
    k = np.ascontiguousarray(k.transpose(0, 2, 5, 6, 3, 1, 4))
    return k.view(np.int32).reshape(k.shape[:-1])


def unpack_words(words: np.ndarray) -> np.ndarray:
    """pack_words' int8 OIHW weights again."""
    ob, cb, kh, kw, xw, y = words.shape
    k = np.ascontiguousarray(words).view(np.int8).reshape(ob, cb, kh, kw, xw, y, 4)
    return k.transpose(0, 5, 1, 4, 6, 2, 3).reshape(ob * y, cb * xw * 4, kh, kw)


def pack_depthwise(weight: np.ndarray, block: int) -> np.ndarray:
    """int8 (C, 1, KH, KW) depthwise weights packed (C/x, 1, KH, KW, 1, x)."""
    c, _, kh, kw = weight.shape
    k = weight.astype(np.int8).reshape(c // block, block, 1, kh, kw, 1)
    return np.ascontiguousarray(k.transpose(0, 2, 3, 4, 5, 1))


def unpack_depthwise(weight: np.ndarray) -> np.ndarray:
    """pack_depthwise's int8 (C, 1, KH, KW) weights again."""
    cb, _, kh, kw, _, x = weight.shape
    return weight[:, 0, :, :, 0, :].transpose(0, 3, 1, 2).reshape(cb * x, 1, kh, kw)


def _alter(attrs, inputs, tinfos, out_type, blocks):
    """The packed form in `blocks` (x, y): the weights as words, the zero point's term
    (a depthwise call's: int8 weights, one block)."""
    x, y = blocks
    weight = inputs[1].data
    term = attrs["input_zero_point"] * weight.astype(np.int64).sum(axis=(1, 2, 3))
    if attrs["groups"] != 1:
        return qnn_conv2d(inputs[0], Constant(pack_depthwise(weight, x)),
                          Constant(term.astype(np.int32).reshape(-1, x)), attrs["strides"],
                          attrs["padding"], attrs["dilation"], attrs["input_zero_point"],
                          packed(x), f"OIHW1i{x}o", groups=attrs["groups"])
    return qnn_conv2d(inputs[0], Constant(pack_words(weight, x, y)),
                      Constant(term.astype(np.int32).reshape(-1, y)), attrs["strides"],
                      attrs["padding"], attrs["dilation"], attrs["input_zero_point"], packed(x),
                      f"OIHW{x}i{y}o4i", packed(y) if y != x else "")


def _layout(ctx, call: Call) -> Expr | None:
    """Packed where the weights are constant and the channels divide into blocks of a
    multiple of 4: the input block that of its data's layout where it fits, else the
    target's default, else (fewer channels than a vector: an image's, padded to 4 on
    import) one block of all; the output block the target's default. Else NCHW."""
    if call.attrs["data_layout"] != "NCHW" or not isinstance(call.args[1], Constant):
        return None
    data, weight = (a.ty for a in ctx.original().args)
    channels, out_channels = data.shape[1], weight.shape[0]
    have = ctx.layout_of(call.args[0])
    if call.attrs["groups"] != 1:  # depthwise: one block in and out
        blocks = channel_blocks(channels)
        if is_packed(have) and channels % block_of(have) == 0:
            blocks = [block_of(have)]
        return ctx.alter(call, functools.partial(_alter, blocks=(blocks[0],) * 2)) \
            if blocks else None
    ins = [b for b in channel_blocks(channels) if b % 4 == 0]
    if not ins and channels % 4 == 0 and channels < smallest_block() * 2:
        ins = [channels]  # an image's few channels (padded to 4): one block of all
    if is_packed(have) and channels % block_of(have) == 0 and block_of(have) % 4 == 0:
        ins = [block_of(have)]
    outs = channel_blocks(out_channels)
    if not ins or not outs:
        return None
    return ctx.alter(call, functools.partial(_alter, blocks=(ins[0], outs[0])))


def _schedule(out, anchor, call: Call):
    """The packed int8 convolution's schedule (a depthwise one's: the packed float32
    depthwise schedule), else the NCHW one with the widened operands inlined."""
    depthwise = call.attrs["groups"] != 1
    if call.attrs["data_layout"] != "NCHW":
        if depthwise:
            return schedule_conv2d_nchwc(out, find_anchor(out, "depthwise_conv2d_nchwc_int8"))
        return schedule_conv2d_nchwc_int8(out, find_anchor(out, "conv2d_nchwc_int8"))
    conv = find_anchor(out, "depthwise_conv2d_nchw" if depthwise else "conv2d_nchw")
    s = schedule_conv2d_nchw(out, conv)
    for t in s.stages:
        if t.op.name in ("qnn_data", "qnn_weight"):
            t.compute_inline()
    return s


def _samples():
    base = {"strides": (1, 1), "padding": (0, 0, 0, 0), "dilation": (1, 1), "groups": 1,
            "data_layout": "NCHW", "kernel_layout": "OIHW", "out_layout": "",
            "input_zero_point": 3}

    def t(dtype, *shape):
        return TensorType(shape, dtype)
    return [([t("uint8", 1, 3, 13, 7), t("int8", 5, 3, 3, 3)],
             {**base, "padding": (1, 1, 1, 1), "strides": (2, 2)}),
            ([t("uint8", 2, 16, 7, 13), t("int8", 8, 16, 3, 1)],
             {**base, "dilation": (2, 1), "input_zero_point": 200}),
            ([t("uint8", 1, 2, 7, 13, 8), t("int32", 1, 2, 3, 3, 2, 16), t("int32", 1, 16)],
             {**base, "data_layout": "NCHW8c", "kernel_layout": "OIHW8i16o4i",
              "out_layout": "NCHW16c", "padding": (1, 0, 1, 2)}),
            ([t("uint8", 1, 7, 13, 9), t("int8", 7, 1, 3, 3)],
             {**base, "groups": 7, "padding": (1, 1, 1, 1), "strides": (2, 2)}),
            ([t("uint8", 1, 2, 9, 13, 8), t("int8", 2, 1, 3, 3, 1, 8), t("int32", 2, 8)],
             {**base, "groups": 16, "data_layout": "NCHW8c", "kernel_layout": "OIHW1i8o",
              "padding": (1, 1, 0, 2), "input_zero_point": 131})]


register_op(NAME, _rel, OpPattern.OUT_ELEMWISE_FUSABLE,
            {"strides": (1, 1), "padding": None, "dilation": (1, 1), "groups": 1,
             "data_layout": "NCHW", "kernel_layout": "OIHW", "out_layout": "",
             "input_zero_point": 0}, None,
            compute=_compute, reference=_reference, layout=_layout, schedule=_schedule,
            samples=_samples)


def qnn_conv2d(data: Expr, weight: Expr, term: Expr | None = None, strides=(1, 1),
               padding=(0, 0), dilation=(1, 1), input_zero_point: int = 0,
               data_layout: str = "NCHW", kernel_layout: str = "OIHW",
               out_layout: str = "", groups: int = 1) -> Call:
    """qnn.conv2d of uint8 `data` and int8 `weight` (packed: int32 words, or a depthwise
    call's int8 weights, with the zero point's `term`); out_layout "" is
    data_layout's."""
    args = [data, weight] if term is None else [data, weight, term]
    return call(NAME, args, strides=pair(strides, "strides"), padding=padding4(padding),
                dilation=pair(dilation, "dilation"), groups=int(groups),
                input_zero_point=int(input_zero_point), data_layout=data_layout,
                kernel_layout=kernel_layout, out_layout=out_layout)


def _dense_rel(types, attrs):
    data, weight = tensor_args(DENSE, types, 2)
    if attrs["kernel_layout"] == "NK":
        if (data.dtype, weight.dtype) != ("uint8", "int8") or data.ndim != 2 or \
                weight.ndim != 2 or data.shape[1] != weight.shape[1]:
            raise GraphTypeError(f"{DENSE}: takes uint8 (M, K) data and int8 (N, K) weights, "
                                 f"not {data} and {weight}")
        return TensorType((data.shape[0], weight.shape[0]), "int32")
    if data.dtype != "uint8" or data.ndim != 2 or weight.dtype != "int32" or \
            weight.ndim != 3 or 4 * weight.shape[1] != data.shape[1]:
        raise GraphTypeError(f"{DENSE}: data {data} and weight words {weight} "
                             f"({attrs['kernel_layout']}) do not fit")
    return TensorType((data.shape[0], weight.shape[0] * weight.shape[2]), "int32")


def _dense_compute(ins, at, ty):
    data, weight = ins
    if at["kernel_layout"] != "NK":
        return dense_int8(data, weight)
    k = te.reduce_axis((0, int(data.shape[1])), name="k")
    return te.compute(tuple(ty.shape), lambda i, j: te.sum(
        te.cast(data[i, k], "int32") * te.cast(weight[j, k], "int32"), axis=k),
        name="qnn_dense")


def dense_words(weight: np.ndarray, block: int) -> np.ndarray:
    """int8 (N, K) weights as (N/y, K/4, y) int32 words of four k each."""
    n, k = weight.shape
    w = weight.astype(np.int8).reshape(n // block, block, k // 4, 4).transpose(0, 2, 1, 3)
    return np.ascontiguousarray(w).view(np.int32).reshape(n // block, k // 4, block)


def _dense_reference(args, attrs):
    data, weight = args
    if attrs["kernel_layout"] != "NK":
        nb, kw, y = weight.shape
        weight = np.ascontiguousarray(weight).view(np.int8).reshape(nb, kw, y, 4) \
            .transpose(0, 2, 1, 3).reshape(nb * y, kw * 4)
    return (data.astype(np.int64) @ weight.astype(np.int64).T).astype(np.int32)


def _dense_layout(ctx, call: Call) -> Expr | None:
    """Packed where the weights are constant, K a multiple of 4 and N of the target's
    channel block (channel_blocks of N: its float32 lanes)."""
    weight = call.args[1]
    if call.attrs["kernel_layout"] != "NK" or not isinstance(weight, Constant):
        return None
    n, k = weight.data.shape
    blocks = channel_blocks(n)
    if k % 4 or not blocks:
        return None
    block = min(blocks)

    def alter(attrs, inputs, tinfos, out_type):
        return qnn_dense(inputs[0], Constant(dense_words(inputs[1].data, block)),
                         f"NK{block}n4k")
    return ctx.alter(call, alter)


def _dense_schedule(out, anchor, call: Call):
    if call.attrs["kernel_layout"] != "NK":
        return schedule_dense_int8(out, find_anchor(out, "dense_int8"))
    return default_schedule(out, anchor, call)


def _dense_samples():
    def t(dtype, *shape):
        return TensorType(shape, dtype)
    return [([t("uint8", 7, 36), t("int8", 13, 36)], {"kernel_layout": "NK"}),
            ([t("uint8", 13, 100), t("int32", 3, 25, 16)], {"kernel_layout": "NK16n4k"})]


register_op(DENSE, _dense_rel, OpPattern.OUT_ELEMWISE_FUSABLE, {"kernel_layout": "NK"}, 2,
            compute=_dense_compute, reference=_dense_reference, layout=_dense_layout,
            schedule=_dense_schedule, samples=_dense_samples)


def qnn_dense(data: Expr, weight: Expr, kernel_layout: str = "NK") -> Call:
    """qnn.dense of uint8 `data` (M, K) and int8 `weight` (N, K), or its packed words."""
    return call(DENSE, [data, weight], kernel_layout=kernel_layout)
