"""AlterOpLayout: ops whose registered alter function asks for another data layout get
it, and the layouts are reconciled around them (Relay's AlterOpLayout, for the NCHW ->
NCHW[x]c case of the reference's worked example).

    @register_alter_op_layout("nn.conv2d")
    def alter_conv2d(attrs, inputs, tinfos, out_type):
        new_attrs = dict(attrs, data_layout="NCHW16c")
        return graph.nn.conv2d(*inputs, **new_attrs)

Every value is known to be in NCHW (a 4-D tensor) or in a packed NCHW[x]c layout. A
conv2d altered to NCHW[x]c takes its data through a layout_transform (unless it is
packed already: two packed convolutions meet with no transform between them) and
gives a packed result. An elementwise or broadcast op with a packed operand computes
in the packed layout: its 4-D operands of the same shape are transformed to it (a
value is transformed once, however many ops read it). Any other op, and the function's
result, get their packed operands transformed back to NCHW.
"""
from __future__ import annotations

from collections.abc import Callable

from ..ops.pattern import OpPattern
from . import tensor_ops
from .expr import Call, Expr, Function, Tuple, TupleGetItem
from .functor import ExprMutator
from .infer_type import infer_type
from .op import Op

_ALTER: dict[str, Callable] = {}


def register_alter_op_layout(op_name: str, fn: Callable | None = None):
    """Register `fn(attrs, inputs, tinfos, out_type) -> Expr or None` (None: leave the
    call as it is) for `op_name`; usable as a decorator."""
    def register(f):
        _ALTER[op_name] = f
        return f
    return register if fn is None else register(fn)


def _packed(layout: str) -> bool:
    return layout != "NCHW"


class _Alter(ExprMutator):
    def __init__(self):
        super().__init__()
        self.layout: dict[int, str] = {}       # id(new expr) -> its layout
        self.transformed: dict[tuple, Expr] = {}

    def _convert(self, expr: Expr, layout: str) -> Expr:
        have = self.layout.get(id(expr), "NCHW")
        if have == layout:
            return expr
        key = (id(expr), layout)
        if key not in self.transformed:
            out = tensor_ops.layout_transform(expr, have, layout)
            self.layout[id(out)] = layout
            self.transformed[key] = out
        return self.transformed[key]

    def rewrite_call(self, call: Call):
        if not isinstance(call.op, Op):
            return call
        alter = _ALTER.get(call.op.name)
        if alter is not None:
            original = [self._convert(a, "NCHW") for a in call.args]
            new = alter(dict(call.attrs), original, [a.ty for a in call.args], call.ty)
            if isinstance(new, Call) and new.attrs.get("data_layout", "NCHW") != "NCHW":
                layout = new.attrs["data_layout"]
                data = self._convert(call.args[0], layout)
                out = Call(new.op, (data, *new.args[1:]), new.attrs)
                self.layout[id(out)] = layout
                return out
        packed = {self.layout[id(a)] for a in call.args if _packed(self.layout.get(id(a),
                                                                                    "NCHW"))}
        if packed and call.op.pattern <= OpPattern.BROADCAST and len(packed) == 1:
            layout = packed.pop()
            shape = next(a.ty for a in call.args if a.ty is not None).shape \
                if call.ty is None else call.ty.shape
            args = [self._convert(a, layout) if _packed(self.layout.get(id(a), "NCHW")) or
                    (a.ty is not None and a.ty.shape == shape) else a for a in call.args]
            out = Call(call.op, args, call.attrs)
            self.layout[id(out)] = layout
            return out
        args = [self._convert(a, "NCHW") for a in call.args]
        return Call(call.op, args, call.attrs, call.ty)  # its layout and type unchanged


def alter_op_layout(func: Function) -> Function:
    """`func` (typed) with the registered layouts and the transforms between them, typed
    again."""
    mutator = _Alter()
    body = mutator.visit(func.body)
    if isinstance(body, Tuple):
        body = Tuple([mutator._convert(f, "NCHW") for f in body.fields])
    elif not isinstance(body, TupleGetItem):
        body = mutator._convert(body, "NCHW")
    return infer_type(Function(func.params, body, None, func.attrs))
