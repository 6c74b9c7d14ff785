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

What a call may be altered into are its forms (its op's FORMS_ATTR, op/layout.py: a
convolution's pairs of blocks, by Winograd or directly; a dense's packed weights), and
which one it runs as, or whether it stays as it is, is one question to the chooser
(chooser.py choose_implementation) over the candidates of the call and of its forms,
each candidate carrying its form: by default the first form's (packed); under
records.ApplyHistoryBest the one whose record is nearer the build's target or, in the
same tier, faster, or the only one logged (TVM's select_implementation under AutoTVM
takes the fastest logged implementation). Each form's workload is a tuning task of its
own (tuner.extract_tasks(alternatives=True, blocks=True)). Untuned, a convolution's
forms are those of the target's blocks for the block its data arrives in
(op/layout.py channel_blocks: its float32 lanes); when the log times some, the layout
planner (layout_plan.py, run by the AlterOpLayout pass first) decides every
convolution's form for the whole graph, transforms included: its decisions reach the
rules as `ctx.planned()`, and the rules apply them without asking again.

Every value is known to be in NCHW or in a packed layout; a tuple's fields each have
their own, and a TupleGetItem of a tuple has its field's. Values go through a
layout_transform where a reader needs another layout (once, however many read it), and
a value that leaves the function (its result, or a field of a result tuple) is always
in NCHW, the layout and shape the model declares.
"""
from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass

from ..ir.expr import Call, Expr, Function, Tuple, TupleGetItem
from ..ir.functor import ExprMutator
from ..ir.infer_type import infer_type
from ..ir.op import Op, get_op_attr, register_op_attr
from ..ir.op.layout import is_packed, layout_transform
from ..strategy.chooser import choose_implementation
from ..ir.ty import TupleType

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


@dataclass(frozen=True)
class Planned:
    """What the layout planner (layout_plan.py) decided for one call: the form it runs as
    (one of its op's FORMS_ATTR; None: as it stands, in NCHW), and the layout its result
    is to be in (its layout class's: a transform follows where that is not the layout it
    writes)."""
    form: object | None
    layout: str


class LayoutContext(ExprMutator):
    """The pass, and what a layout rule sees of it (see op/layout_rules.py): the layout of
    each rewritten value, the NCHW type it had, and the transforms between layouts.

    plan: {id(call of the function rewritten): Planned}, the layout planner's decisions
        (layout_plan.plan_layouts); a call without one gets its rule's own."""

    def __init__(self, plan: dict[int, Planned] | None = None):
        super().__init__()
        self.plan = plan or {}
        self._layout: dict[int, str] = {}       # id(new expr) -> its layout
        self._transformed: dict[tuple, Expr] = {}
        self._nchw_type: dict[int, object] = {}  # id(new expr) -> the type it had in NCHW
        self._visiting: list[Expr] = []          # the original expressions being rewritten

    def visit(self, expr: Expr) -> Expr:
        out = super().visit(expr)
        self._nchw_type.setdefault(id(out), expr.ty)
        return out

    def _visit(self, expr: Expr) -> Expr:
        self._visiting.append(expr)
        try:
            return super()._visit(expr)
        finally:
            self._visiting.pop()

    def original(self) -> Call:
        """The call being rewritten as the function had it (rewrite_call's call has its
        arguments rewritten, in their new layouts): typed, its operands in NCHW."""
        return self._visiting[-1]

    def planned(self) -> Planned | None:
        """The plan's decision for the call being rewritten, None without one."""
        return self.plan.get(id(self._visiting[-1])) if self._visiting else None

    def layout_of(self, expr: Expr) -> str:
        """The layout `expr` is in; a field read out of a tuple (through any chain of
        TupleGetItem) is in its field's ("NCHW" for a tuple itself: its fields have
        their own)."""
        return self._layout.get(id(_field(expr)), "NCHW")

    def nchw_type(self, expr: Expr):
        """The type `expr` has in NCHW (the type of the value it replaces)."""
        return self._nchw_type.get(id(expr), expr.ty)

    def mark(self, expr: Expr, layout: str) -> Expr:
        """Say that the new `expr` is in `layout`; returns it."""
        self._layout[id(expr)] = layout
        return expr

    def convert(self, expr: Expr, layout: str) -> Expr:
        """`expr` in `layout`: itself, or a layout_transform of it (one per value and
        layout); a tuple's fields each converted (a tuple that is no Tuple literal is
        rebuilt from its converted fields when one of them changes)."""
        ty = self.nchw_type(expr)
        if isinstance(expr, Tuple) or isinstance(ty, TupleType):
            items = expr.fields if isinstance(expr, Tuple) else \
                [self._typed(TupleGetItem(expr, i), f) for i, f in enumerate(ty.fields)]
            fields = tuple(self.convert(f, layout) for f in items)
            if all(a is b for a, b in zip(fields, items)):
                return expr
            return self._typed(Tuple(fields), ty)
        have = self.layout_of(expr)
        if have == layout:
            return expr
        if is_packed(have) and is_packed(layout):  # another block: through NCHW
            return self.convert(self.convert(expr, "NCHW"), layout)
        key = (id(expr), layout)
        if key not in self._transformed:
            out = self.mark(layout_transform(expr, have, layout), layout)
            self._transformed[key] = self._typed(out, ty)
        return self._transformed[key]

    def _typed(self, expr: Expr, nchw_type) -> Expr:
        self._nchw_type[id(expr)] = nchw_type
        return expr

    def alter(self, call: Call, fn: Callable) -> Expr | None:
        """`fn(attrs, inputs, tinfos, out_type)` (Relay's alteration signature) applied to
        `call` on its NCHW operands: a call that computes in a packed data layout gets its
        data converted into it and its result marked with its out_layout; another
        expression is returned as it is; None keeps the call."""
        nchw = [self.convert(a, "NCHW") for a in call.args]
        types = [self.nchw_type(a) for a in call.args]
        return self._applied(call, fn(dict(call.attrs), nchw, types, call.ty))

    def alter_chosen(self, call: Call, forms: list, fn: Callable) -> Expr | None:
        """`call` altered (as by alter, by `fn(..., form=form)`) into the one of `forms`
        (of its original call, op/layout.py FORMS_ATTR) that the chooser takes, in one
        question over the candidates of the call as it stands and of each form (chooser.
        choose_implementation); None where it takes the call as it stands, or there is
        no form."""
        if not forms:
            return None
        form = choose_implementation(self.original(), forms, applies=False).candidate.form
        return None if form is None else self.alter(call, functools.partial(fn, form=form))

    def _applied(self, call: Call, new: Expr | None) -> Expr | None:
        """The alteration `new` of `call` in place: its data converted into the packed
        layout it computes in, its result marked with its out_layout."""
        if isinstance(new, Call) and is_packed(new.attrs.get("data_layout", "NCHW")):
            layout = new.attrs["data_layout"]
            out = Call(new.op, (self.convert(call.args[0], layout), *new.args[1:]), new.attrs)
            return self.mark(out, new.attrs.get("out_layout") or layout)
        return new

    def rewrite_call(self, call: Call) -> Expr:
        out = self._rewrite(call)
        planned = self.planned()
        if planned is None or self.layout_of(out) == planned.layout:
            return out
        return self.convert(self._typed(out, call.ty), planned.layout)

    def _rewrite(self, call: Call) -> Expr:
        if isinstance(call.op, Op):
            user = get_op_attr(call.op.name, ALTER_ATTR)
            new = self.alter(call, user) if user is not None else call.op.layout(self, call)
            if new is not None:
                return new
        args = tuple(self.convert(a, "NCHW") for a in call.args)  # NCHW operands
        same = all(a is b for a, b in zip(args, call.args))
        return call if same else Call(call.op, args, call.attrs, call.ty)


def _field(expr: Expr) -> Expr:
    """The expression a chain of TupleGetItem of Tuple literals reads, else `expr`."""
    while isinstance(expr, TupleGetItem):
        inner = _field(expr.tuple_value)
        if not isinstance(inner, Tuple):
            return expr
        expr = inner.fields[expr.index]
    return expr


def alter_op_layout(func: Function, plan: dict[int, Planned] | None = None) -> Function:
    """`func` (typed) with the layouts its ops' rules ask for (and the layout planner's
    `plan` chose: layout_plan.plan_layouts) and the transforms between them, typed
    again; its result (every field of a result tuple) in NCHW."""
    ctx = LayoutContext(plan=plan)
    body = ctx.convert(ctx.visit(func.body), "NCHW")
    return infer_type(Function(func.params, body, None, func.attrs))
