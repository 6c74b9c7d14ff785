"""layout_transform, the op that moves a value between layouts: NCHW <-> NCHW[x]c (the
channels split into blocks of x, innermost) and OIHW -> OIHW[x]i[y]o (a conv2d's weights
packed for NCHW[x]c data: (O/y, I/x, KH, KW, x, y)); the names of layouts that the
layout rules share; and the channel blocks a target's vectors take."""
from __future__ import annotations

from .... import te
from ....target import Target
from ....transform.pass_infra import PassContext, register_pass_config
from ....ops.pattern import OpPattern
from ..expr import Call, Expr
from ..ty import TensorType
from .registry import GraphTypeError, call, get_op_attr, needs_nchw, register_op
from .relations import kernel_blocks, tensor_args


def is_packed(layout: str) -> bool:
    """Whether a data layout is NCHW[x]c (every value is NCHW or that)."""
    return layout != "NCHW"


def block_of(layout: str) -> int:
    """x of NCHW[x]c."""
    return int(layout[4:-1])


def packed(block: int) -> str:
    """NCHW[block]c."""
    return f"NCHW{block}c"


def layout_change(attrs: dict) -> str | None:
    """"NCHW16c -> NCHW8c": the layouts a call with these attrs (a convolution's
    data_layout and out_layout) reads and writes, for the command line; None for one in
    NCHW."""
    data = attrs.get("data_layout", "NCHW")
    if not is_packed(data):
        return None
    return f"{data} -> {attrs.get('out_layout') or data}"


def keeps_layout(rule):
    """Mark a layout rule under which the op's result is in the one packed layout of its
    operands (follow, the pools' window, concatenate, bias_add): the layout planner
    (layout_plan.py) gives such an op's operands and result one layout."""
    rule.keeps_layout = True
    return rule


FORMS_ATTR = "layout_forms"
"""The op attribute that lists a call's forms, the alterations AlterOpLayout may make of
it: `fn(call, data_block) -> [form, ...]` for a typed call in NCHW (`data_block`: the
block its data arrives packed in, None for NCHW), in the op's order of preference (the
untuned first). A form is a frozen value: the op's layout rule applies it, and the
strategies give the candidates the call would have altered into it
(strategy.Candidate.form), so that one question to the chooser, over the call's
candidates and its forms', decides how the call runs (chooser.choose_implementation).
Every form has `blocks`: the (input block, output block) a convolution's computes in,
which the layout planner (layout_plan.py) chooses among, None for one in no blocks (a
dense's packed weights); and `default`: whether the op's own default schedule may run it
(strategy.op_default). nn.conv2d, nn.dense and matmul register one; [] when a call has
none."""



def forms_of(call: Call, data_block: int | None = None) -> list:
    """The forms of the typed `call` (its op's FORMS_ATTR) for data arriving in blocks of
    `data_block` (None: NCHW); [] for an op without any."""
    fn = get_op_attr(call.op.name, FORMS_ATTR) if hasattr(call.op, "name") else None
    return fn(call, data_block) if fn is not None else []


VECTORS_PER_BLOCK = (1, 2, 4)
"""A block is one, two or four float32 vectors of the target: the packed convolution's
register tile holds one block of output channels per column, beside the block's weight
vectors and the broadcast input (compiler.ops.register_tile.RegisterTile), so four
vectors leave room for 2 columns of accumulators in AVX2's 16 registers (6 in AVX-512's
32): 8 independent multiply-adds, enough to cover the FMA latency; eight would leave
none on AVX2 (2 on AVX-512)."""

CHANNEL_BLOCK = "relay.AlterOpLayout.channel_block"
"""Pass config: a channel block to use wherever it divides the channels instead of the
target's (0, the default: the target's)."""
register_pass_config(CHANNEL_BLOCK, int, 0)


def channel_blocks(channels: int, target=None) -> list[int]:
    """The blocks `channels` may be packed in on `target` (default: the entered one,
    else the host), the untuned default first: the target's float32 lanes and their
    multiples of VECTORS_PER_BLOCK that divide `channels` (16, 32, 64 with AVX-512; 8,
    16, 32 with AVX2); when the lanes do not divide, half of them if that divides (24
    channels in blocks of 8 on AVX-512: a block under half a vector would idle most
    lanes, where the NCHW kernel vectorizes along the width instead); else []. The pass
    config CHANNEL_BLOCK, where it divides `channels`, is the only block (to compare
    a target's own blocks with another's)."""
    forced = PassContext.current().get_config(CHANNEL_BLOCK)
    if forced and channels % forced == 0:
        return [forced]
    lanes = Target.resolve(target).vector_lanes
    found = [lanes * m for m in VECTORS_PER_BLOCK if channels % (lanes * m) == 0]
    if not found and lanes % 2 == 0 and channels % (lanes // 2) == 0:
        found = [lanes // 2]
    return found


def smallest_block(target=None) -> int:
    """The narrowest block channel_blocks gives on `target`: fewer channels than this
    (an image's 3) pack as one block of all of them."""
    return max(1, Target.resolve(target).vector_lanes // 2)


def _rel(types, attrs):
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


def _compute(ins, at, ty):
    x, = ins
    if at["src_layout"] == "OIHW":  # (O/y, I/x, KH, KW, x, y)
        bi, bo = ty.shape[4], ty.shape[5]
        return te.compute(ty.shape, lambda a, b, y, w, ci, co: x[a * bo + co, b * bi + ci, y, w],
                          name="layout_transform")
    if at["src_layout"] == "NCHW":
        block = ty.shape[4]
        return te.compute(ty.shape, lambda n, c, h, w, b: x[n, c * block + b, h, w],
                          name="layout_transform")
    block = x.shape[4]
    return te.compute(ty.shape, lambda n, c, h, w: x[n, c // block, h, w, c % block],
                      name="layout_transform")


def transform_array(x, src: str, dst: str):
    """A numpy array moved from layout `src` to `dst` (layout_transform's reference)."""
    if src == "OIHW":  # -> OIHW[x]i[y]o: (O/y, I/x, KH, KW, x, y)
        bi, bo = (int(b) for b in dst[4:-1].split("i"))
        o, i, kh, kw = x.shape
        return x.reshape(o // bo, bo, i // bi, bi, kh, kw).transpose(0, 2, 4, 5, 3, 1)
    if src == "NCHW":
        block = int(dst[4:-1])
        n, c, h, w = x.shape
        return x.reshape(n, c // block, block, h, w).transpose(0, 1, 3, 4, 2)
    n, co, h, w, block = x.shape
    return x.transpose(0, 1, 4, 2, 3).reshape(n, co * block, h, w)


def _samples():
    return [([TensorType((1, 16, 7, 13), "float32")],
             {"src_layout": "NCHW", "dst_layout": "NCHW8c"}),
            ([TensorType((2, 3, 13, 7, 8), "float32")],
             {"src_layout": "NCHW8c", "dst_layout": "NCHW"}),
            ([TensorType((32, 16, 3, 7), "float32")],
             {"src_layout": "OIHW", "dst_layout": "OIHW8i16o"})]


register_op("layout_transform", _rel, OpPattern.INJECTIVE,
            {"src_layout": "", "dst_layout": ""}, 1, compute=_compute,
            reference=lambda a, at: transform_array(a[0], at["src_layout"], at["dst_layout"]),
            layout=needs_nchw, samples=_samples)


def layout_transform(x: Expr, src_layout: str, dst_layout: str) -> Call:
    return call("layout_transform", [x], src_layout=src_layout, dst_layout=dst_layout)
