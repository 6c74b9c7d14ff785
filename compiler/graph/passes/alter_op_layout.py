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
implementation). The blocks a packed convolution computes in are the target's
(op/layout.py channel_blocks: its float32 lanes untuned); each pair of blocks is a
workload of its own (tuner.extract_tasks(blocks=True)), and when the log times some,
the layout planner (layout_plan.py, run by the AlterOpLayout pass first) chooses every
convolution's blocks for the whole graph, transforms included: its choices reach the
rules as `ctx.planned()`.

Every value is known to be in NCHW or in a packed layout; a tuple's fields each have
their own, and a TupleGetItem of a tuple has its field's. Values go through a
layout_transform where a reader needs another layout (once, however many read it), and
a value that leaves the function (its result, or a field of a result tuple) is always
in NCHW, the layout and shape the model declares.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ...ops.pattern import OpPattern
from ..ir.expr import Call, Constant, Expr, Function, Tuple, TupleGetItem, Var
from ..ir.functor import ExprMutator
from ..ir.infer_type import infer_type
from ..ir.op import Op, get_op_attr, register_op_attr
from ..ir.op.layout import BLOCKS_ATTR, is_packed, layout_transform, packed
from ..strategy.chooser import choose_implementation
from ..strategy import candidates
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
    """What the layout planner (layout_plan.py) chose for one call: the (input block,
    output block) it computes in (None: NCHW, unaltered), and the layout its result is
    to be in (its layout class's: a transform follows where that is not the block it
    writes). `winograd`: whether a convolution in those blocks runs by Winograd (None:
    as the chooser decides, LayoutContext.alter_chosen; block_forms' variants force it either
    way)."""
    blocks: tuple[int, int] | None
    layout: str
    winograd: bool | None = None


class LayoutContext(ExprMutator):
    """The pass, and what a layout rule sees of it (see op/layout_rules.py): the layout of
    each rewritten value, the NCHW type it had, and the transforms between layouts.

    choose: whether `alter_chosen(..., keep=True)` asks the chooser whether to keep the
        call as it stands (False: an altered form, as a probe of what the rule would
        make of a call wants).
    plan: {id(call of the function rewritten): Planned}, the layout planner's choices
        (layout_plan.plan_layouts); a call without one gets its rule's own choice."""

    def __init__(self, choose: bool = True, plan: dict[int, Planned] | None = None):
        super().__init__()
        self.choose = choose
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

    def planned(self) -> Planned | None:
        """The plan's choice for the call being rewritten (rewrite_call's: the original
        call, whose arguments the rewritten one replaces), None without one."""
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
        return self.alter_chosen(call, [fn], keep=False)

    def alter_chosen(self, call: Call, fns: list[Callable], keep: bool) -> Expr | None:
        """`call` altered (as by alter) by the one of the alterations `fns` whose form the
        chooser takes, in one question over the typed forms they give `call` and, with
        `keep` (and `choose`), `call` itself, ordered so (implementation_forms' order:
        the altered forms first); None where it takes `call` as it stands. An
        alteration that gives an earlier one's form, or none, counts as that earlier one
        (or as the call). When the chooser takes an op's own default, which every form
        has, the last alteration that alters. Each alteration runs once: the form
        applied is the one the chooser was asked about (a dense's weights are packed
        once)."""
        nchw = [self.convert(a, "NCHW") for a in call.args]
        types = [self.nchw_type(a) for a in call.args]
        news = [fn(dict(call.attrs), nchw, types, call.ty) for fn in fns]
        if len(news) == 1 and not (keep and self.choose):  # nothing to choose between
            return self._applied(call, news[0])
        chosen = _chosen_form(call, nchw, types, news, keep and self.choose)
        return None if chosen is None else self._applied(call, news[chosen])

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


class _Substitute(ExprMutator):
    """A rewrite that puts the expressions of `mapping` (by id) in place of others."""

    def __init__(self, mapping: dict):
        super().__init__()
        self.mapping = mapping

    def visit(self, expr: Expr) -> Expr:
        found = self.mapping.get(id(expr))
        return found if found is not None else super().visit(expr)

    def stops(self, expr: Expr) -> bool:
        return id(expr) in self.mapping


def _probe(call: Call, data_layout: str, planned: Planned | None = None) -> Call | None:
    """The form the op's layout rule (or the planner's `planned` choice) gives the typed
    `call` on its own, typed, on vars of its arguments' types (a constant weight stays,
    as the dense's alteration packs it), its data coming in `data_layout`; None when it
    alters nothing."""
    args = [a if isinstance(a, Constant) else Var(f"arg{i}", a.ty)
            for i, a in enumerate(call.args)]
    params = [a for a in args if isinstance(a, Var)]
    ctx = LayoutContext(choose=False)
    data = args[0]
    if is_packed(data_layout):  # the data as a producer packed it
        data = ctx.mark(ctx._typed(layout_transform(args[0], "NCHW", data_layout),
                                   args[0].ty), data_layout)
    probe = Call(call.op, (data, *args[1:]), call.attrs, call.ty)
    if planned is not None:
        ctx.plan = {id(probe): planned}
    new = ctx.visit(probe)
    if not isinstance(new, Call) or new.op is call.op and new.attrs == call.attrs:
        return None
    return infer_type(Function(params, new)).body


def block_forms(call: Call, variants: bool = False) -> list[tuple[tuple[int, int], Call]]:
    """((input block, output block), typed form) for each pair of blocks the op of the
    typed `call` offers it (its BLOCKS_ATTR: a convolution's NCHW[x]c forms, the untuned
    pair first), its data coming in the input block; [] for an op without blocks. The
    form of a pair is the one the chooser prefers (a convolution by Winograd or
    directly); `variants`: each pair's every form instead (the Winograd one first),
    which tuning makes tasks of."""
    blocks_of = get_op_attr(call.op.name, BLOCKS_ATTR)
    pairs = blocks_of(call, None) if blocks_of is not None else []
    out = []
    for pair in pairs:
        forms = []
        for winograd in ((True, False) if variants else (None,)):
            form = _probe(call, packed(pair[0]), Planned(pair, packed(pair[1]), winograd))
            if all(form.op is not f.op or form.attrs != f.attrs for f in forms):
                forms.append(form)
        out.extend((pair, form) for form in forms)
    return out


def altered_forms(call: Call, data_layout: str = "NCHW") -> list[Call]:
    """The form the op's layout rule gives the typed `call` on its own, its data coming
    in `data_layout` (a dense's nn.contrib_dense_pack, a convolution in NCHW[x]c on
    transformed operands), then the forms in the op's other blocks (block_forms); []
    when it alters nothing."""
    first = _probe(call, data_layout)
    if first is None:
        return []
    return [first, *(form for _, form in block_forms(call, variants=True)
                     if form.attrs != first.attrs)]


def implementation_forms(call: Call, data_layout: str = "NCHW") -> list[Call]:
    """The forms the build may run the typed `call` in, in its order of preference (the
    altered one first: the default; then its other blocks): what every decision among a
    call's implementations puts to the chooser (AlterOpLayout, the layout planner, the
    cblas codegen, `autosched log best`), so that they order them alike."""
    return [*altered_forms(call, data_layout), call]


def _implementation(new: Call) -> Call:
    """The call of an alteration's result that implements the op: the result itself, or
    the call under the slices and reshapes around it (a dense_pack on padded rows,
    sliced back)."""
    while isinstance(new.op, Op) and new.op.pattern <= OpPattern.INJECTIVE and new.args \
            and isinstance(new.args[0], Call):
        new = new.args[0]
    return new


def _chosen_form(call: Call, nchw: list, types: list, news: list, keep: bool) -> int | None:
    """The index in `news` (alterations of `call` on its NCHW operands `nchw` of types
    `types`) of the form whose candidate the chooser takes, None for `call` as it stands
    (see LayoutContext.alter_chosen). Nothing is applied; the forms are typed on vars of
    the operands' types."""
    forms, index = [], []
    for i, new in enumerate(news):
        if isinstance(new, Call) and all(new.attrs != f.attrs for f in forms):
            forms.append(new)
            index.append(i)
    if not forms:
        return None
    if keep:
        forms.append(Call(call.op, tuple(nchw), call.attrs))
    typed = _typed_forms(nchw, types, [_implementation(f) for f in forms])
    chosen = choose_implementation(typed, applies=False).candidate
    if chosen.workload is None:
        return index[-1]
    for i, form in enumerate(typed):
        if chosen.workload in {c.workload for c in candidates(form)}:
            return index[i] if i < len(index) else None
    return index[-1]


def _typed_forms(nchw: list, types: list, news: list[Call]) -> list[Call]:
    """The calls `news` (made on the NCHW operands `nchw` of types `types`) typed on vars
    of those types in their place (constants stay); a form computing in a packed layout
    gets its data through a layout_transform, as the pass will give it."""
    mapping = {id(a): a if isinstance(a, Constant) else Var(f"arg{i}", t)
               for i, (a, t) in enumerate(zip(nchw, types))}
    params = [v for v in mapping.values() if isinstance(v, Var)]
    forms = []
    for new in news:
        form = _Substitute(mapping).visit(new)
        layout = form.attrs.get("data_layout", "NCHW")
        if is_packed(layout):
            form = Call(form.op, (layout_transform(form.args[0], "NCHW", layout),
                                  *form.args[1:]), form.attrs)
        forms.append(infer_type(Function(params, form)).body)
    return forms


def alter_op_layout(func: Function, plan: dict[int, Planned] | None = None) -> Function:
    """`func` (typed) with the layouts its ops' rules ask for (and the layout planner's
    `plan` chose: layout_plan.plan_layouts) and the transforms between them, typed
    again; its result (every field of a result tuple) in NCHW."""
    ctx = LayoutContext(plan=plan)
    body = ctx.convert(ctx.visit(func.body), "NCHW")
    return infer_type(Function(func.params, body, None, func.attrs))
