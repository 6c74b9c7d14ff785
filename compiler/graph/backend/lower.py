"""A fused Primitive function lowered to one kernel: the te compute of each op, which the
op registered (compiler/graph/op/), and the schedule of the kernel.

The build (build.py) calls `lower_function` once per fused function; its parameters
become placeholders, its body one te compute per op. When the function has one anchor
op (conv2d, dense: a pattern above BROADCAST) reading the parameters, and after it
only elementwise and broadcast ops, the chooser's choice among the anchor's candidates
(chooser.py: a template with the config the entered choosers give, or the op's own
compute and default schedule) computes the anchor and schedules the kernel, its tail
inlined. A kernel whose anchor reads another op's result gets the op's own default (for
a convolution, compiler.ops' packed or NCHW convolution schedule with its tail), and a
kernel without an anchor gets compiler.ops' default schedule.
"""
from __future__ import annotations

from ... import ops, te
from ...errors import BuildError
from ...ops.pattern import OpPattern
from ..ir.expr import Call, Constant, Expr, Function, TupleGetItem, Var
from ..strategy.chooser import Choice, choose_implementation
from ..ir.functor import post_order
from ..strategy import NO_TEMPLATE, op_default
from ..ir.ty import TensorType, TupleType


_CHOOSE = object()


def lower_function(func: Function, name: str, choice=_CHOOSE):
    """Lower a typed Primitive function to one kernel: `(schedule, tensors, info)`, where
    `tensors` are [placeholders of the parameters..., output(s)] (a function returning a
    tuple has one output per field: compiler.ops' default schedule computes them
    together, their common stages once) and `info` says how the anchor was scheduled
    (kernel_info). `choice`: choice_of(func), when known already."""
    for p in func.params:
        if 0 in tuple(p.ty.shape):
            raise BuildError(f"{name}: its input {p.name} of shape {tuple(p.ty.shape)} has no "
                             f"elements; zero-size values are not supported")
    placeholders = [te.placeholder(p.ty.shape, dtype=p.ty.dtype, name=f"{name}_{p.name}")
                    for p in func.params]
    env = {id(p): t for p, t in zip(func.params, placeholders)}
    anchor = _anchor(func)
    if choice is _CHOOSE:
        choice = choice_of(func, anchor)

    def visit(expr: Expr):
        if id(expr) in env:
            return env[id(expr)]
        if isinstance(expr, Constant):
            value = expr.data
            if value.size != 1:
                raise BuildError(f"{name}: a constant of shape {value.shape} inside a fused "
                                 f"function (only scalars are inlined)")
            out = te.compute(value.shape, lambda *i: te.const(value.item(),
                                                              str(value.dtype)), name="scalar")
        elif isinstance(expr, Call):
            op = expr.op
            if not callable(op.compute):
                raise BuildError(f"{name}: op {op.name} has no compute"
                                 + (f" ({op.compute})" if op.compute else ""))
            args = [visit(a) for a in expr.args]
            if expr is anchor:
                out = choice.candidate.compute(choice.config, args)
            else:
                try:
                    out = op.compute(args, expr.attrs, expr.ty)
                except (ValueError, TypeError) as err:  # a shape or dtype it cannot compute
                    raise BuildError(f"{name}: {op.name}: {err}") from None
        elif isinstance(expr, TupleGetItem):
            out = visit(expr.tuple_value)[expr.index]
        elif hasattr(expr, "fields"):
            out = tuple(visit(f) for f in expr.fields)
        elif isinstance(expr, Var):
            raise BuildError(f"{name}: free variable %{expr.name}")
        else:
            raise BuildError(f"{name}: cannot lower a {type(expr).__name__}")
        env[id(expr)] = out
        return out

    out = visit(func.body)
    if isinstance(out, tuple):  # several outputs (topk's values and indices): one kernel
        outs = list(out)
        if not all(isinstance(t, te.Tensor) for t in outs):
            raise BuildError(f"{name}: a fused function's outputs must be tensors")
        return ops.default_schedule(outs), [*placeholders, *outs], kernel_info(func, choice)
    tensors = [*placeholders, out]
    if choice is not None:
        return choice.candidate.schedule(choice.config, out, env[id(anchor)]), tensors, \
            kernel_info(func, choice)
    return ops.default_schedule(out), tensors, kernel_info(func, choice)


def kernel_info(func: Function, choice: Choice | None) -> dict:
    """How the anchor of the kernel of `func` is scheduled, as lower_function reports it:
    the choice's info (chooser.Choice.info), or strategy.NO_TEMPLATE (every value None)
    when no template schedules it (no anchor, or several outputs: compiler.ops' default
    schedule)."""
    if choice is None or isinstance(func.body.ty, TupleType):
        return dict(NO_TEMPLATE)
    return choice.info()


def choice_of(func: Function, anchor: Call | None = None) -> Choice | None:
    """The chooser's choice for the kernel of the fused function `func` (its anchor's
    candidates: the op's own default only, when the kernel is no template's), or None
    for a kernel without an anchor (compiler.ops' default schedule); nothing is
    lowered. `anchor`: _anchor(func) when known already."""
    anchor = anchor or _anchor(func)
    if anchor is None:
        return None
    if not _template_kernel(func, anchor):
        return Choice(op_default(anchor), None)
    return choose_implementation(anchor)


def _anchor(func: Function) -> Call | None:
    """The fused function's one op whose pattern is above BROADCAST (its anchor: a
    conv2d, a dense, a reduction) when every other op is elementwise or broadcast, else
    None."""
    calls = [e for e in post_order(func.body) if isinstance(e, Call)]
    heavy = [c for c in calls if c.op.pattern > OpPattern.BROADCAST]
    if len(heavy) != 1 or heavy[0].op.pattern < OpPattern.COMM_REDUCE:
        return None
    return heavy[0]


def _template_kernel(func: Function, anchor: Call | None) -> bool:
    """Whether a strategy may schedule the kernel of `func` around `anchor`: the anchor
    reads the function's parameters (so its inputs are placeholders, as a template's
    are) and the tail after it keeps its shape (the template tiles the output as the
    anchor's)."""
    if anchor is None or not isinstance(func.body.ty, TensorType):
        return False
    params = {id(p) for p in func.params}
    return all(id(a) in params for a in anchor.args) and \
        tuple(func.body.ty.shape) == tuple(anchor.ty.shape)
