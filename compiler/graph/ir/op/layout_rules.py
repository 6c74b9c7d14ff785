"""The layout rules that many ops share (an op's `layout` part; registry.needs_nchw is
the third). A rule is `rule(ctx, call) -> Expr | None`: `call` has its operands rewritten
already (some may come packed, NCHW[x]c) and still its NCHW type; the rule returns the
call computed in a packed layout, marked with `ctx.mark`, or None for "in NCHW", and
AlterOpLayout then converts its packed operands back. `ctx` is the pass's view of the
layouts (alter_op_layout.LayoutContext: layout_of, nchw_type, convert, mark)."""
from __future__ import annotations

from ..expr import Call, Expr
from .layout import block_of, is_packed, keeps_layout, layout_transform
from .transform import reshape


@keeps_layout
def follow(ctx, call: Call) -> Expr | None:
    """Elementwise and broadcast ops: with one packed layout among the operands, the op
    computes in it when every other operand can follow (follow_operand)."""
    packed = {ctx.layout_of(a) for a in call.args} - {"NCHW"}
    if len(packed) != 1:
        return None
    layout = packed.pop()
    shape = tuple(call.ty.shape)
    if len(shape) != 4 or shape[1] % block_of(layout):
        return None
    followed = [follow_operand(ctx, a, layout, shape) for a in call.args]
    if any(a is None for a in followed):
        return None
    return ctx.mark(Call(call.op, tuple(followed), call.attrs), layout)


def follow_operand(ctx, arg: Expr, layout: str, shape: tuple) -> Expr | None:
    """`arg` of an op whose NCHW result has `shape`, made to broadcast in `layout`: one of
    the same shape is transformed (once, however many ops read it), a per-channel one
    ((C, 1, 1) or (1, C, 1, 1): a bias, a scale) reshaped and transformed, a scalar stays
    as it is; None when it cannot follow."""
    dims = tuple(ctx.nchw_type(arg).shape)
    if is_packed(ctx.layout_of(arg)) or dims == shape:
        return ctx.convert(arg, layout)
    if all(d == 1 for d in dims):
        return arg
    channels = shape[1]
    if len(dims) in (3, 4) and dims[-3] == channels and \
            all(d == 1 for i, d in enumerate(dims) if i != len(dims) - 3):
        return layout_transform(reshape(arg, (1, channels, 1, 1)), "NCHW", layout)
    return None


@keeps_layout
def window(ctx, call: Call) -> Expr | None:
    """Pools: a window over H and W computes in whatever layout its data is in (its
    `layout` attr says which)."""
    layout = ctx.layout_of(call.args[0])
    if not is_packed(layout):
        return None
    return ctx.mark(Call(call.op, call.args, {**call.attrs, "layout": layout}), layout)
