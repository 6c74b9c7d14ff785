"""The int8 packed convolution template (TVM's conv2d_NCHWc_int8): compiler.ops'
conv2d_nchwc_int8, uint8 data (N, C/ic, H, W, ic) by int8 weight words
(K/oc, C/ic, R, S, ic/4, oc), the raw int32 sums (N, K/oc, OH, OW, oc), with the float32
packed convolution's knobs and its one schedule (conv2d_nchwc.py: register_tile,
tile_ic, reduction_order, rows_outer, fuse_parallel, unroll_kw, pad_stage), whose
fallback is the untuned kernel's default_choices.

- `conv2d_nchwc_int8(N, C, H, W, K, R, S, stride, padding, ic_block, oc_block,
  zero_point)`.

It serves qnn.conv2d's packed form (graph/ir/op/qnn.py): a graph kernel's anchor is
the sums less the zero point's term, and the schedule finds the sums under it.
"""
from __future__ import annotations

import numpy as np

from compiler import graph, te
from compiler.graph.ir.op.qnn import int_conv, qnn_conv2d, unpack_words
from compiler.ops.conv2d_nchwc import schedule_packed
from compiler.ops.conv2d_nchwc_int8 import conv2d_nchwc_int8 as int8_conv
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
    """A packed qnn.conv2d whose window the arguments can say."""
    window = conv_window(call.attrs)
    if window is None or call.attrs["data_layout"] == "NCHW":
        return None
    (N, CB, H, W, bi), (OB, _, R, S, _, bo) = call.args[0].ty.shape, call.args[1].ty.shape
    return (N, CB * bi, H, W, OB * bo, R, S, *window, bi, bo,
            call.attrs["input_zero_point"])


def _compute(args, cfg, ins):
    """The graph's anchor: the sums less the zero point's term (qnn.conv2d's)."""
    conv = int8_conv(ins[0], ins[1], args[7], args[8], 1, args[11])
    term = ins[2]
    return te.compute(conv.shape, lambda b, o, y, x, c: conv[b, o, y, x, c] - term[o, c],
                      name="qnn_conv2d")


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
