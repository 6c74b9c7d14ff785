"""The int8 packed convolution templates (TVM's conv2d_NCHWc_int8 and its depthwise
one): compiler.ops' conv2d_nchwc_int8, uint8 data (N, C/ic, H, W, ic) by int8 weight
words (K/oc, C/ic, R, S, ic/4, oc), the raw int32 sums (N, K/oc, OH, OW, oc), and
depthwise_conv2d_nchwc_int8, uint8 data (N, C/b, H, W, b) by int8 weights
(C/b, 1, R, S, 1, b), the raw sums in float32 (exact), each with the float32 packed
convolutions' knobs and their one schedule (conv2d_nchwc.py: register_tile, tile_ic,
reduction_order, rows_outer, fuse_parallel, unroll_kw, pad_stage; a depthwise one has
no tile_ic or reduction_order), whose fallback is the untuned kernel's default_choices.

- `conv2d_nchwc_int8(N, C, H, W, K, R, S, stride, padding, ic_block, oc_block,
  zero_point)`;
- `depthwise_conv2d_nchwc_int8(N, C, H, W, R, S, stride, padding, block, zero_point)`.

They serve qnn.conv2d's packed form (graph/ir/op/qnn.py), of one group and of one per
channel: a graph kernel's anchor is the sums less the zero point's term, and the
schedule finds the sums under it.
"""
from __future__ import annotations

import numpy as np

from compiler import graph, te
from compiler.graph.ir.op.qnn import (int_conv, less_term, pack_depthwise, qnn_conv2d,
                                      unpack_depthwise, unpack_words)
from compiler.ops.conv2d_nchwc import schedule_packed
from compiler.ops.conv2d_nchwc_int8 import conv2d_nchwc_int8 as int8_conv
from compiler.ops.conv2d_nchwc_int8 import depthwise_conv2d_nchwc_int8 as int8_depthwise
from compiler.ops.tail import find_anchor

from .binding import Binding, conv_window
from .conv2d import output_size
from .conv2d_nchwc import _define_knobs, choices_of, pack_out, unpack_data
from .registry import template


def conv2d_nchwc_int8_reference(inputs, N, C, H, W, K, R, S, stride, padding, ic_block,
                                oc_block, zero_point):
    """numpy `conv2d_nchwc_int8`: the int64 convolution of the unpacked uint8 data padded
    with the zero point by the unpacked int8 weights, packed, as int32."""
    data, words = inputs
    attrs = {"strides": (stride, stride), "dilation": (1, 1), "padding": (padding,) * 4}
    out = int_conv(unpack_data(data), unpack_words(words), attrs, zero_point)
    return pack_out(out, oc_block).astype(np.int32)


def _workload(call) -> tuple | None:
    """A packed qnn.conv2d of one group whose window the arguments can say."""
    window = conv_window(call.attrs)
    if window is None or call.attrs["data_layout"] == "NCHW" or call.attrs["groups"] != 1:
        return None
    (N, CB, H, W, bi), (OB, _, R, S, _, bo) = call.args[0].ty.shape, call.args[1].ty.shape
    return (N, CB * bi, H, W, OB * bo, R, S, *window, bi, bo,
            call.attrs["input_zero_point"])


def _compute(args, cfg, ins):
    """The graph's anchor: the sums less the zero point's term (qnn.conv2d's)."""
    return less_term(int8_conv(ins[0], ins[1], args[7], args[8], 1, args[11]), ins[2])


def _schedule(args, cfg, s, anchor, out) -> None:
    schedule_packed(s, out, find_anchor(out, "conv2d_nchwc_int8"), choices_of(cfg, False))


def _call(N, C, H, W, K, R, S, stride, padding, ic_block, oc_block, zero_point):
    """The packed qnn.conv2d of the workload: uint8 NCHW[ic]c data, constant (zero)
    weight words and zero-point term, as its layout rule makes it (an NCHW call would
    be packed in the target's blocks, not necessarily the workload's)."""
    x = graph.var("data", shape=(N, C // ic_block, H, W, ic_block), dtype="uint8")
    words = graph.const(np.zeros((K // oc_block, C // ic_block, R, S, ic_block // 4,
                                  oc_block), "int32"))
    term = graph.const(np.zeros((K // oc_block, oc_block), "int32"))
    out = qnn_conv2d(x, words, term, strides=stride, padding=padding,
                     input_zero_point=zero_point, data_layout=f"NCHW{ic_block}c",
                     kernel_layout=f"OIHW{ic_block}i{oc_block}o4i",
                     out_layout=f"NCHW{oc_block}c" if oc_block != ic_block else "")
    return [x], out


@template("conv2d_nchwc_int8", reference=conv2d_nchwc_int8_reference,
          probes=[(1, 16, 9, 11, 16, 3, 3, 1, 1, 8, 8, 3),
                  (1, 8, 13, 13, 16, 1, 1, 2, 0, 8, 16, 0)],
          binding=Binding("qnn.conv2d", _workload, compute=_compute, schedule=_schedule,
                          call=_call, data_layout=lambda args: f"NCHW{args[9]}c"))
def conv2d_nchwc_int8(cfg, N: int, C: int, H: int, W: int, K: int, R: int, S: int,
                      stride: int = 1, padding: int = 0, ic_block: int = 16,
                      oc_block: int = 16, zero_point: int = 0):
    """int8 2-D convolution in NCHW[x]c; returns the schedule and [data, kernel, out]."""
    if C % ic_block or K % oc_block or ic_block % 4:
        raise ValueError(f"conv2d_nchwc_int8: {C} input channels in blocks of {ic_block} "
                         f"(a multiple of 4) and {K} output channels in blocks of {oc_block} "
                         f"do not divide")
    OH, OW = output_size("conv2d_nchwc_int8", H, W, R, S, stride, padding)
    data = te.placeholder((N, C // ic_block, H, W, ic_block), name="data", dtype="uint8")
    kernel = te.placeholder((K // oc_block, C // ic_block, R, S, ic_block // 4, oc_block),
                            name="kernel", dtype="int32")
    _define_knobs(cfg, (N, K // oc_block, OH, OW, oc_block), C // ic_block, window=None)
    out = int8_conv(data, kernel, stride, padding, 1, zero_point)
    s = te.create_schedule(out.op)
    schedule_packed(s, out, out, choices_of(cfg, False))
    return s, [data, kernel, out]


def depthwise_conv2d_nchwc_int8_reference(inputs, N, C, H, W, R, S, stride, padding, block,
                                          zero_point):
    """numpy `depthwise_conv2d_nchwc_int8`: the int64 depthwise convolution of the
    unpacked uint8 data padded with the zero point by the unpacked int8 weights, packed,
    as float32."""
    data, kernel = inputs
    attrs = {"strides": (stride, stride), "dilation": (1, 1), "padding": (padding,) * 4}
    out = int_conv(unpack_data(data), unpack_depthwise(kernel), attrs, zero_point)
    return pack_out(out, block).astype(np.float32)


def _depthwise_workload(call) -> tuple | None:
    """A packed depthwise qnn.conv2d whose window the arguments can say."""
    window = conv_window(call.attrs)
    if window is None or call.attrs["data_layout"] == "NCHW" or call.attrs["groups"] == 1:
        return None
    (N, CB, H, W, b), (_, _, R, S, _, _) = call.args[0].ty.shape, call.args[1].ty.shape
    return (N, CB * b, H, W, R, S, *window, b, call.attrs["input_zero_point"])


def _depthwise_compute(args, cfg, ins):
    """The graph's anchor: the sums as int32 less the zero point's term."""
    return less_term(int8_depthwise(ins[0], ins[1], args[6], args[7], 1, args[9]), ins[2])


def _depthwise_schedule(args, cfg, s, anchor, out) -> None:
    schedule_packed(s, out, find_anchor(out, "depthwise_conv2d_nchwc_int8"),
                    choices_of(cfg, True))


def _depthwise_call(N, C, H, W, R, S, stride, padding, block, zero_point):
    """The packed depthwise qnn.conv2d of the workload, as its layout rule makes it."""
    x = graph.var("data", shape=(N, C // block, H, W, block), dtype="uint8")
    weight = graph.const(pack_depthwise(np.zeros((C, 1, R, S), "int8"), block))
    term = graph.const(np.zeros((C // block, block), "int32"))
    out = qnn_conv2d(x, weight, term, strides=stride, padding=padding,
                     input_zero_point=zero_point, data_layout=f"NCHW{block}c",
                     kernel_layout=f"OIHW1i{block}o", groups=C)
    return [x], out


@template("depthwise_conv2d_nchwc_int8", reference=depthwise_conv2d_nchwc_int8_reference,
          probes=[(1, 16, 9, 11, 3, 3, 1, 1, 8, 3), (1, 16, 13, 13, 3, 3, 2, 1, 16, 200)],
          binding=Binding("qnn.conv2d", _depthwise_workload, compute=_depthwise_compute,
                          schedule=_depthwise_schedule, call=_depthwise_call,
                          data_layout=lambda args: f"NCHW{args[8]}c"))
def depthwise_conv2d_nchwc_int8(cfg, N: int, C: int, H: int, W: int, R: int, S: int,
                                stride: int = 1, padding: int = 0, block: int = 16,
                                zero_point: int = 0):
    """int8 depthwise convolution (multiplier 1) in NCHW[x]c; returns the schedule and
    [data, kernel, out]."""
    if C % block:
        raise ValueError(f"depthwise_conv2d_nchwc_int8: {C} channels do not split into "
                         f"blocks of {block}")
    OH, OW = output_size("depthwise_conv2d_nchwc_int8", H, W, R, S, stride, padding)
    data = te.placeholder((N, C // block, H, W, block), name="data", dtype="uint8")
    kernel = te.placeholder((C // block, 1, R, S, 1, block), name="kernel", dtype="int8")
    _define_knobs(cfg, (N, C // block, OH, OW, block), C // block, window=(R, S))
    out = int8_depthwise(data, kernel, stride, padding, 1, zero_point)
    s = te.create_schedule(out.op)
    schedule_packed(s, out, out, choices_of(cfg, True))
    return s, [data, kernel, out]
