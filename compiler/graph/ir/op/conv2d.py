"""nn.conv2d, registered once with everything the compiler needs of it: its type relation
(NCHW with OIHW weights, or packed NCHW[x]c with OIHW or OIHW[x]i[y]o weights), its
compute (compiler.ops' convolutions), its numpy reference, its layout rule (the built-in
alteration into NCHW[x]c), its default schedule and its samples; and its constructor.

Layouts: `data_layout="NCHW16c"` (set by AlterOpLayout) is the packed layout with 16
channels innermost, `kernel_layout="OIHW16i16o"` the packed weights (O/16, I/16, KH, KW,
16, 16) that go with it; the output is NCHW16c as well unless `out_layout` names another
block (a 3-channel image convolves as NCHW3c with OIHW3i16o weights into NCHW16c). The
blocks are the target's (layout.channel_blocks: its float32 lanes, 16 on AVX-512, 8 on
AVX2, and their multiples), and conv2d_blocks says which pairs a call may take.

A 3x3, stride 1 convolution may instead run by Winograd's F(m x m, 3 x 3)
(compiler/ops/conv2d_winograd.py): `kernel_layout="winograd4_16o"` names its weights
transformed once when the model is built, (m + 2, m + 2, O/16, I, 16), into which
AlterOpLayout turns a constant weight (alter_conv2d_nchwc, of a Winograd form); the data
and output are packed as for the direct form.

A convolution's forms (layout.FORMS_ATTR) are Conv2dForm values: a pair of blocks, and
Winograd's m or 0 for the direct packed form. One question to the chooser, over the
candidates of the call and of its forms, decides which it runs as (LayoutContext.
alter_chosen), or the layout planner decides it for the whole graph (layout_plan.py);
either way alter_conv2d_nchwc applies the form decided, and lowering schedules the call
it made.
"""
from __future__ import annotations

import functools
import re
from dataclasses import dataclass

import numpy as np

from .... import ops, te
from ....ops.conv2d_nchwc import conv2d_nchwc, depthwise_conv2d_nchwc, schedule_conv2d_nchwc
from ....ops.conv2d_schedule import schedule_conv2d_nchw
from ....ops.conv2d_winograd import (conv2d_winograd_nchwc, schedule_conv2d_winograd_nchwc,
                                    winograd_conv2d_reference, winograd_tile_size,
                                    winograd_weight_transform)
from ....ops.pattern import OpPattern
from ..expr import Call, Constant, Expr
from ..ty import TensorType
from .layout import (FORMS_ATTR, block_of, channel_blocks, is_packed, layout_transform,
                     packed, smallest_block, transform_array)
from .registry import GraphTypeError, call, register_op, register_op_attr
from .relations import kernel_blocks, padding4, pair, same_dtype, tensor_args, window


def winograd_layout(m: int, block: int) -> str:
    """The kernel layout of weights transformed for F(m x m, 3 x 3) in output blocks of
    `block` channels: (m + 2, m + 2, O/block, I, block)."""
    return f"winograd{m}_{block}o"


def winograd_of(kernel_layout: str) -> tuple[int, int] | None:
    """(m, block) of a winograd_layout, None for any other kernel layout."""
    found = re.fullmatch(r"winograd(\d+)_(\d+)o", kernel_layout)
    return None if found is None else (int(found[1]), int(found[2]))


def _winograd_rel(data, weight, attrs, m: int, out_block: int):
    """Packed data (N, C/x, H, W, x), weights (m + 2, m + 2, O/y, C, y): 3x3, stride 1."""
    n, cb, h, w, block = data.shape
    alpha = m + 2
    if weight.ndim != 5 or weight.shape[:2] != (alpha, alpha) or \
            weight.shape[3] != cb * block or weight.shape[4] != out_block or \
            attrs["groups"] != 1 or tuple(attrs["strides"]) != (1, 1) or \
            tuple(attrs["dilation"]) != (1, 1):
        raise GraphTypeError(f"nn.conv2d: weight {weight.shape} is not "
                             f"{attrs['kernel_layout']} ({alpha}, {alpha}, O/{out_block}, "
                             f"{cb * block}, {out_block}) of a 3x3, stride 1, groups 1 "
                             f"convolution of data {data.shape}")
    top, left, bottom, right = attrs["padding"]
    return TensorType((n, weight.shape[2], window("nn.conv2d", h, 3, 1, top, bottom, 1),
                       window("nn.conv2d", w, 3, 1, left, right, 1), out_block),
                      same_dtype("nn.conv2d", [data, weight]))


def _packed_rel(data, weight, attrs):
    """data NCHW[x]c (N, C/x, H, W, x); weight OIHW, or packed: OIHW[x]i[y]o (groups 1)
    or OIHW1i[x]o (depthwise, groups C): out NCHW[y]c (N, O/y, OH, OW, y), y = x unless
    out_layout says otherwise."""
    n, cb, h, w, block = data.shape
    channels, groups = cb * block, attrs["groups"]
    out_layout = attrs["out_layout"] or attrs["data_layout"]
    out_block = int(out_layout[4:-1])
    wino = winograd_of(attrs["kernel_layout"])
    if wino is not None:
        return _winograd_rel(data, weight, attrs, wino[0], out_block)
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
    return TensorType((n, o // out_block, window("nn.conv2d", h, kh, sh, top, bottom, dh),
                       window("nn.conv2d", w, kw, sw, left, right, dw), out_block),
                      same_dtype("nn.conv2d", [data, weight]))


def _rel(types, attrs):
    data, weight = tensor_args("nn.conv2d", types, 2)
    layout = attrs["data_layout"]
    if layout != "NCHW":
        if not (layout.startswith("NCHW") and layout.endswith("c") and data.ndim == 5
                and layout[4:-1].isdigit() and int(layout[4:-1]) == data.shape[4]):
            raise GraphTypeError(f"nn.conv2d: data_layout {layout} does not fit data "
                                 f"{data.shape} (NCHW, or NCHW[x]c with x innermost)")
        return _packed_rel(data, weight, attrs)
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
    return TensorType((n, o, window("nn.conv2d", h, kh, sh, top, bottom, dh),
                       window("nn.conv2d", w, kw, sw, left, right, dw)),
                      same_dtype("nn.conv2d", [data, weight]))


def _shape(tensor) -> tuple:
    return ops.get_const_tuple(tensor.shape)


def _packed_compute(data, weight, at, ty, common):
    """NCHW[x]c data: compiler.ops' packed convolutions. Weights the build did not pack
    (an OIHW weight that is a parameter) are packed inside the kernel."""
    wino = winograd_of(at["kernel_layout"])
    if wino is not None:
        return conv2d_winograd_nchwc(data, weight, wino[0], tuple(at["padding"]))
    depthwise = at["groups"] != 1
    if len(_shape(weight)) == 4:
        bi = 1 if depthwise else _shape(data)[4]
        bo = ty.shape[4]
        w = weight
        weight = te.compute((_shape(w)[0] // bo, _shape(w)[1] // bi, *_shape(w)[2:], bi, bo),
                            lambda a, b, y, x, ci, co: w[a * bo + co, b * bi + ci, y, x],
                            name="packed_weight")
    if depthwise:
        return depthwise_conv2d_nchwc(data, weight, **common)
    return conv2d_nchwc(data, weight, **common)


def _compute(ins, at, ty):
    data, weight = ins
    groups = at["groups"]
    common = dict(stride=at["strides"], padding=at["padding"], dilation=at["dilation"])
    if at["data_layout"] != "NCHW":
        return _packed_compute(data, weight, at, ty, common)
    if groups == 1:
        return ops.conv2d_nchw(data, weight, **common)
    if groups == _shape(data)[1] and _shape(weight)[1] == 1:
        # OIHW (C * M, 1, KH, KW) is depthwise's (C, M, KH, KW) read in another order
        mult = ty.shape[1] // groups
        kernel = te.compute((groups, mult, *_shape(weight)[2:]),
                            lambda c, m, y, x: weight[c * mult + m, 0, y, x],
                            name="depthwise_kernel")
        return ops.depthwise_conv2d_nchw(data, kernel, **common)
    return ops.group_conv2d_nchw(data, weight, groups=groups, **common)


def _reference(args, attrs):
    data, weight = args
    wino = winograd_of(attrs["kernel_layout"])
    if wino is not None:  # the Winograd formula in numpy, on the unpacked data
        nchw = transform_array(data, attrs["data_layout"], "NCHW")
        out = winograd_conv2d_reference(nchw, weight, wino[0], tuple(attrs["padding"]))
        return transform_array(out, "NCHW", attrs.get("out_layout") or attrs["data_layout"])
    if weight.ndim == 6:  # OIHW[x]i[y]o: unpack to OIHW
        ob, ib, kh, kw, bi, bo = weight.shape
        weight = weight.transpose(0, 5, 1, 4, 2, 3).reshape(ob * bo, ib * bi, kh, kw)
    if attrs["data_layout"] != "NCHW":  # NCHW[x]c: unpack, convolve, pack
        nchw = transform_array(data, attrs["data_layout"], "NCHW")
        out = _reference([nchw, weight], {**attrs, "data_layout": "NCHW"})
        return transform_array(out, "NCHW", attrs.get("out_layout") or attrs["data_layout"])
    (sh, sw), (dh, dw), groups = attrs["strides"], attrs["dilation"], attrs["groups"]
    top, left, bottom, right = attrs["padding"]
    data = np.pad(data, ((0, 0), (0, 0), (top, bottom), (left, right)))
    n, c, h, w = data.shape
    o, cg, kh, kw = weight.shape
    oh, ow = (h - dh * (kh - 1) - 1) // sh + 1, (w - dw * (kw - 1) - 1) // sw + 1
    out = np.zeros((n, o, oh, ow), np.float64)
    og = o // groups
    for ky in range(kh):
        for kx in range(kw):
            win = data[:, :, ky * dh:ky * dh + sh * (oh - 1) + 1:sh,
                       kx * dw:kx * dw + sw * (ow - 1) + 1:sw]
            for g in range(groups):
                out[:, g * og:(g + 1) * og] += np.einsum(
                    "nchw,oc->nohw", win[:, g * cg:(g + 1) * cg],
                    weight[g * og:(g + 1) * og, :, ky, kx], optimize=True)
    return out


def conv2d_blocks(attrs, tinfos, data_block: int | None = None) -> list[tuple[int, int]]:
    """The (input block, output block) pairs a convolution of `attrs` on data and weights
    of the NCHW types `tinfos` may compute in as NCHW[x]c, the untuned pair first; []
    for one that does not pack (grouped, or channels no block divides). The blocks are
    the target's (layout.channel_blocks). Untuned, the input block is `data_block`, the
    block its data comes packed in, when that divides its channels (no transform
    between two packed convolutions), else the target's default, else (an RGB image)
    all its channels as one block; the output block is the default of its output
    channels. A depthwise convolution (channel multiplier 1) has one block for both, so
    a MobileNet block stays packed from one pointwise convolution through the depthwise
    one to the next."""
    data, weight = tinfos
    if attrs["data_layout"] != "NCHW" or attrs.get("kernel_layout", "OIHW") != "OIHW" or \
            len(data.shape) != 4:
        return []
    channels, out_channels, weight_in = data.shape[1], weight.shape[0], weight.shape[1]
    depthwise = attrs["groups"] == channels == out_channels and weight_in == 1
    if attrs["groups"] != 1 and not depthwise:
        return []
    blocks = channel_blocks(channels)
    if not blocks and not depthwise and channels < smallest_block():
        blocks = [channels]  # an image's few channels: one block of all of them
    if data_block is not None and channels % data_block == 0:
        blocks = [data_block, *(b for b in blocks if b != data_block)]
    if depthwise:
        return [(b, b) for b in blocks]
    outs = channel_blocks(out_channels)
    return [(b, o) for b in blocks for o in outs]


@dataclass(frozen=True)
class Conv2dForm:
    """A convolution altered into NCHW[x]c (a form, layout.FORMS_ATTR): the (input block,
    output block) it computes in, and `winograd`: the tile size m of Winograd's F(m x m,
    3 x 3) it runs by, 0 for the direct packed convolution."""
    blocks: tuple[int, int]
    winograd: int = 0

    @property
    def default(self) -> bool:
        """Whether the op's own default schedule may run it: not a Winograd form, which
        without a template of its own gives way to the direct form (its numbers differ
        from the direct convolution's by rounding, for no measured gain)."""
        return not self.winograd


def conv2d_forms(call: Call, data_block: int | None = None) -> list[Conv2dForm]:
    """The forms of the typed NCHW convolution `call` (its FORMS_ATTR): for each pair of
    conv2d_blocks (the untuned pair for data packed in `data_block` first), by Winograd
    where winograd_tile_size says it may run so (float32 data, constant weights, not
    depthwise), then directly; [] for a call that does not pack."""
    data, weight = (a.ty for a in call.args)
    pairs = conv2d_blocks(call.attrs, [data, weight], data_block)
    m = bool(pairs) and call.attrs["groups"] == 1 and data.dtype == "float32" and \
        isinstance(call.args[1], Constant) and \
        winograd_tile_size(weight.shape[2:], call.attrs["strides"], call.attrs["dilation"],
                           call.ty.shape[2:], (data.shape[1], weight.shape[0]))
    return [form for pair in pairs
            for form in ((Conv2dForm(pair, m), Conv2dForm(pair)) if m else (Conv2dForm(pair),))]


def alter_conv2d_nchwc(attrs, inputs, tinfos, out_type, form: Conv2dForm):
    """nn.conv2d altered into the form `form` (Relay's FTVMAlterOpLayout signature, the
    form decided: see conv2d_forms). An ordinary convolution (groups 1, NCHW) computes in
    NCHW[x]c with its weights packed OIHW[x]i[y]o, the layout in which its kernel
    (compiler.ops.conv2d_nchwc) runs near the FMA peak; a depthwise one with weights
    OIHW1i[x]o; (x, y) is the form's blocks. The weights' layout_transform is of
    constants, so FoldConstant folds it when the model is built and no weight is
    repacked at run time. A Winograd form's constant weights are transformed here
    (winograd_weight_transform), as the dense's alteration packs its weights."""
    block, out_block = form.blocks
    depthwise = attrs["groups"] != 1
    if form.winograd:
        u = _transformed(inputs[1].data, form.winograd, out_block)
        return conv2d(inputs[0], Constant(u), attrs["strides"], attrs["padding"],
                      attrs["dilation"], 1, packed(block),
                      winograd_layout(form.winograd, out_block),
                      packed(out_block) if out_block != block else "")
    kernel_layout = f"OIHW{1 if depthwise else block}i{out_block}o"
    packed_weight = layout_transform(inputs[1], "OIHW", kernel_layout)
    return conv2d(inputs[0], packed_weight, attrs["strides"], attrs["padding"],
                  attrs["dilation"], attrs["groups"], packed(block), kernel_layout,
                  packed(out_block) if out_block != block else "")


_TRANSFORMED: dict[tuple, tuple] = {}
"""(id(weights), m, block) -> (weights, U): the Winograd transforms made lately, kept with
the weights (so that their id is not reused), so that the forms a decision considers and
the one it applies share one transform."""


def _transformed(weight: np.ndarray, m: int, block: int) -> np.ndarray:
    """winograd_weight_transform of a constant's (read-only) weights, read-only, made once
    per weights, m and block among the last 64 asked for."""
    key = (id(weight), m, block)
    found = _TRANSFORMED.get(key)
    if found is None or found[0] is not weight:
        u = winograd_weight_transform(weight, m, block)
        u.setflags(write=False)
        if len(_TRANSFORMED) >= 64:
            _TRANSFORMED.pop(next(iter(_TRANSFORMED)))
        found = _TRANSFORMED[key] = (weight, u)
    return found[1]


def _layout(ctx, call: Call) -> Expr | None:
    """The form the layout planner decided for this call (None: NCHW), else the one the
    chooser takes in one question among the call as it stands and its forms in the
    untuned blocks for the block its data comes packed in (ctx.alter_chosen)."""
    planned = ctx.planned()
    if planned is not None:
        return None if planned.form is None else \
            ctx.alter(call, functools.partial(alter_conv2d_nchwc, form=planned.form))
    have = ctx.layout_of(call.args[0])
    forms = conv2d_forms(ctx.original(), block_of(have) if is_packed(have) else None)
    untuned = [f for f in forms if f.blocks == forms[0].blocks]
    return ctx.alter_chosen(call, untuned, alter_conv2d_nchwc)


def _schedule(out, anchor, call: Call):
    """compiler.ops' schedule of a convolution kernel with its elementwise tail: the
    packed one, the NCHW one (groups 1, or depthwise), else the default
    schedule."""
    if winograd_of(call.attrs["kernel_layout"]) is not None:
        return schedule_conv2d_winograd_nchwc(out, anchor)
    if call.attrs["data_layout"] != "NCHW":
        return schedule_conv2d_nchwc(out, anchor)
    if call.attrs["groups"] == 1 or anchor.op.name == "depthwise_conv2d_nchw":
        return schedule_conv2d_nchw(out, anchor)
    return ops.default_schedule(out)


def _samples():
    def t(*shape):
        return TensorType(shape, "float32")
    base = {"strides": (1, 1), "padding": (0, 0, 0, 0), "dilation": (1, 1), "groups": 1,
            "data_layout": "NCHW", "kernel_layout": "OIHW", "out_layout": ""}
    return [([t(1, 3, 13, 7), t(5, 3, 3, 3)], {**base, "padding": (1, 1, 1, 1),
                                               "strides": (2, 2)}),
            ([t(1, 16, 7, 13), t(8, 16, 3, 3)], {**base, "padding": (1, 1, 1, 1)}),
            ([t(2, 8, 7, 13), t(8, 1, 3, 3)], {**base, "groups": 8, "dilation": (2, 1)}),
            ([t(1, 6, 13, 7), t(9, 2, 3, 1)], {**base, "groups": 3}),
            ([t(1, 2, 7, 13, 8), t(16, 16, 3, 3)], {**base, "data_layout": "NCHW8c",
                                                    "padding": (1, 0, 1, 2)}),
            ([t(1, 2, 13, 7, 8), t(1, 2, 1, 1, 8, 16)],
             {**base, "data_layout": "NCHW8c", "kernel_layout": "OIHW8i16o",
              "out_layout": "NCHW16c"}),
            ([t(1, 2, 7, 13, 8), t(2, 1, 3, 3, 1, 8)],
             {**base, "data_layout": "NCHW8c", "kernel_layout": "OIHW1i8o", "groups": 16,
              "padding": (1, 1, 1, 1)}),
            ([t(1, 2, 13, 7, 8), t(4, 4, 3, 16, 8)],
             {**base, "data_layout": "NCHW8c", "kernel_layout": "winograd2_8o",
              "padding": (1, 0, 1, 2)}),
            ([t(2, 1, 7, 13, 16), t(6, 6, 2, 16, 8)],
             {**base, "data_layout": "NCHW16c", "kernel_layout": "winograd4_8o",
              "out_layout": "NCHW8c", "padding": (1, 1, 1, 1)})]


register_op("nn.conv2d", _rel, OpPattern.OUT_ELEMWISE_FUSABLE,
            {"strides": (1, 1), "padding": None, "dilation": (1, 1), "groups": 1,
             "data_layout": "NCHW", "kernel_layout": "OIHW", "out_layout": ""}, 2,
            compute=_compute, reference=_reference, layout=_layout, schedule=_schedule,
            samples=_samples)
register_op_attr("nn.conv2d", FORMS_ATTR, conv2d_forms)


def conv2d(data: Expr, weight: Expr, strides=(1, 1), padding=(0, 0), dilation=(1, 1),
           groups: int = 1, data_layout: str = "NCHW", kernel_layout: str = "OIHW",
           out_layout: str = "") -> Call:
    """out_layout "" is data_layout's (Relay's convention)."""
    return call("nn.conv2d", [data, weight], strides=pair(strides, "strides"),
                padding=padding4(padding), dilation=pair(dilation, "dilation"),
                groups=int(groups), data_layout=data_layout, kernel_layout=kernel_layout,
                out_layout=out_layout)
