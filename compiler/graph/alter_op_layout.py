"""AlterOpLayout: ops whose layout rule asks for a packed data layout (NCHW[x]c) get it,
and the layouts are reconciled around them (Relay's AlterOpLayout, for the NCHW ->
NCHW[x]c case of the reference's worked example). The pass is a walker: what an op does
with packed operands is its layout rule (Op.layout, compiler/graph/op/), asked through a
LayoutContext; the pass never looks at an op's name.

    @register_alter_op_layout("nn.conv2d")
    def alter_conv2d(attrs, inputs, tinfos, out_type):
        new_attrs = dict(attrs, data_layout="NCHW16c")
        return graph.nn.conv2d(*inputs, **new_attrs)

A registered alteration (Relay's FTVMAlterOpLayout signature, an op attribute) replaces
the op's own rule. Built in: nn.conv2d computes in NCHW[x]c with its weights packed
(op/conv2d.py, alter_conv2d_nchwc), nn.dense on a constant weight becomes
nn.contrib_dense_pack (op/nn.py), elementwise and broadcast ops follow a packed operand
(op/layout_rules.py: follow), pools compute in their data's layout, concatenate joins
values packed alike along the channels, and every other op gets NCHW operands.

Packing a convolution is a choice between two implementations of the op, each a tuning
task of its own (tuner.extract_tasks(alternatives=True)), and the chooser makes it
(chooser.py): by default the packed one; under records.ApplyHistoryBest the one whose
record is nearer the build's target or, in the same tier, faster, or the only one
logged (TVM's select_implementation under AutoTVM takes the fastest logged
implementation).

Every value is known to be in NCHW or in a packed layout; a tuple's fields each have
their own, and a TupleGetItem of a tuple has its field's. Values go through a
layout_transform where a reader needs another layout (once, however many read it), and
a value that leaves the function (its result, or a field of a result tuple) is always
in NCHW, the layout and shape the model declares.
"""
from __future__ import annotations

from collections.abc import Callable

from .expr import Call, Constant, Expr, Function, Tuple, TupleGetItem, Var
from .functor import ExprMutator
from .infer_type import infer_type
from .op import Op, get_op_attr, register_op_attr
from .op.layout import is_packed, layout_transform
from .chooser import choose_implementation
from .strategy import candidates

ALTER_ATTR = "alter_op_layout"
"""The op attribute a registered alteration hangs on."""


def register_alter_op_layout(op_name: str, fn: Callable | None = None):
    """Register `fn(attrs, inputs, tinfos, out_type) -> Expr or None` (None: leave the
    call as it is) for `op_name`, in place of the op's own layout rule; usable as a
    decorator."""
    def register(f):
        register_op_attr(op_name, ALTER_ATTR, f)
        return f
    return register if fn is None else register(fn)


class LayoutContext(ExprMutator):
    """The pass, and what a layout rule sees of it (see op/layout_rules.py): the layout of
    each rewritten value, the NCHW type it had, and the transforms between layouts.

    choose: whether `alter(..., choose=True)` asks the logged records which
        implementation of the op to keep (False: the altered form, as a probe of what
        the rule would make of a call wants)."""

    def __init__(self, choose: bool = True):
        super().__init__()
        self.choose = choose
        self._layout: dict[int, str] = {}       # id(new expr) -> its layout
        self._transformed: dict[tuple, Expr] = {}
        self._nchw_type: dict[int, object] = {}  # id(new expr) -> the type it had in NCHW

    def visit(self, expr: Expr) -> Expr:
        out = super().visit(expr)
        self._nchw_type.setdefault(id(out), expr.ty)
        if isinstance(out, TupleGetItem) and isinstance(out.tuple_value, Tuple):
            self._layout.setdefault(id(out), self.layout_of(out.tuple_value.fields[out.index]))
        return out

    def layout_of(self, expr: Expr) -> str:
        """The layout `expr` is in ("NCHW" for a tuple: its fields have their own)."""
        return self._layout.get(id(expr), "NCHW")

    def nchw_type(self, expr: Expr):
        """The type `expr` has in NCHW (the type of the value it replaces)."""
        return self._nchw_type.get(id(expr), expr.ty)

    def mark(self, expr: Expr, layout: str) -> Expr:
        """Say that the new `expr` is in `layout`; returns it."""
        self._layout[id(expr)] = layout
        return expr

    def convert(self, expr: Expr, layout: str) -> Expr:
        """`expr` in `layout`: itself, or a layout_transform of it (one per value and
        layout); a tuple's fields each converted."""
        if isinstance(expr, Tuple):
            fields = tuple(self.convert(f, layout) for f in expr.fields)
            if all(a is b for a, b in zip(fields, expr.fields)):
                return expr
            out = Tuple(fields)
            self._nchw_type[id(out)] = self.nchw_type(expr)
            return out
        have = self.layout_of(expr)
        if have == layout:
            return expr
        if is_packed(have) and is_packed(layout):  # another block: through NCHW
            return self.convert(self.convert(expr, "NCHW"), layout)
        key = (id(expr), layout)
        if key not in self._transformed:
            out = self.mark(layout_transform(expr, have, layout), layout)
            self._nchw_type[id(out)] = self.nchw_type(expr)
            self._transformed[key] = out
        return self._transformed[key]

    def alter(self, call: Call, fn: Callable, choose: bool = False) -> Expr | None:
        """`fn(attrs, inputs, tinfos, out_type)` (Relay's alteration signature) applied to
        `call` on its NCHW operands: a call that computes in a packed data layout gets its
        data converted into it and its result marked with its out_layout; another
        expression is returned as it is; None keeps the call. `choose`: a packed form
        is kept only when the logged records do not say the NCHW implementation is
        faster (see the module docstring)."""
        nchw = [self.convert(a, "NCHW") for a in call.args]
        types = [self.nchw_type(a) for a in call.args]
        new = fn(dict(call.attrs), nchw, types, call.ty)
        if isinstance(new, Call) and is_packed(new.attrs.get("data_layout", "NCHW")):
            if choose and self.choose and _keeps_nchw(call, types, new):
                return None
            layout = new.attrs["data_layout"]
            out = Call(new.op, (self.convert(call.args[0], layout), *new.args[1:]), new.attrs)
            return self.mark(out, new.attrs.get("out_layout") or layout)
        return new

    def rewrite_call(self, call: Call) -> Expr:
        if isinstance(call.op, Op):
            user = get_op_attr(call.op.name, ALTER_ATTR)
            new = self.alter(call, user) if user is not None else call.op.layout(self, call)
            if new is not None:
                return new
        args = tuple(self.convert(a, "NCHW") for a in call.args)  # NCHW operands
        same = all(a is b for a, b in zip(args, call.args))
        return call if same else Call(call.op, args, call.attrs, call.ty)


def altered_forms(call: Call) -> list[Call]:
    """The form the op's layout rule gives the typed `call` on its own, typed, on vars of
    its arguments' types (a constant weight stays, as the dense's alteration packs it):
    a dense's nn.contrib_dense_pack, a convolution in NCHW[x]c on transformed operands;
    [] when it alters nothing. What a probe asks the log about besides `call` itself
    (the cblas codegen: is a tuned kernel of it faster than the library?)."""
    args = tuple(a if isinstance(a, Constant) else Var(f"arg{i}", a.ty)
                 for i, a in enumerate(call.args))
    new = LayoutContext(choose=False).rewrite_call(Call(call.op, args, call.attrs, call.ty))
    if not isinstance(new, Call) or new.op is call.op and new.attrs == call.attrs:
        return []
    params = [a for a in args if isinstance(a, Var)]
    return [infer_type(Function(params, new)).body]


def _keeps_nchw(call: Call, types: list, packed: Call) -> bool:
    """Whether the build keeps the convolution `call` in NCHW although its layout rule
    packs it (as `packed`): the two forms are implementations of one op (the
    conv2d_nchw and conv2d_nchwc templates, or the depthwise ones), each a task of its
    own, and the chooser picks among the candidates of both (chooser.choose_implementation,
    the packed form preferred on a tie: with no record, it is the default). Nothing is
    applied here: lowering asks again for the form that stays."""
    data, weight = Var("data", types[0]), Var("weight", types[1])
    nchw = infer_type(Function([data, weight], Call(call.op, (data, weight), call.attrs))).body
    layout, kernel_layout = packed.attrs["data_layout"], packed.attrs["kernel_layout"]
    packed_call = infer_type(Function([data, weight], Call(
        packed.op, (layout_transform(data, "NCHW", layout),
                    layout_transform(weight, "OIHW", kernel_layout)), packed.attrs))).body
    chosen = choose_implementation([packed_call, nchw]).candidate
    return chosen.workload is not None and \
        chosen.workload in {c.workload for c in candidates(nchw)}


def alter_op_layout(func: Function) -> Function:
    """`func` (typed) with the layouts its ops' rules ask for and the transforms between
    them, typed again; its result (every field of a result tuple) in NCHW."""
    ctx = LayoutContext()
    body = ctx.convert(ctx.visit(func.body), "NCHW")
    return infer_type(Function(func.params, body, None, func.attrs))
