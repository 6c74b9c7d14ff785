"""lower(): the compile flow from a schedule to loop IR (DESIGN.md, "The two flows")."""
from __future__ import annotations

from .arith.simplify import simplify_stmt
from .errors import LowerError
from .ir.functor import collect
from .ir.stmt import Buffer, PrimFunc
from .schedule.bound import infer_bound_context
from .schedule.schedule import Schedule
from .schedule.schedule_ops import schedule_ops
from .te.expr import Var
from .te.tensor import PlaceholderOp, Tensor
from .transform.storage_flatten import storage_flatten


def _arg_buffers(sch: Schedule, args) -> dict:
    """Buffers for the argument tensors, keyed by the tensor the loop IR uses."""
    out = {}
    for pos, t in enumerate(args):
        if not isinstance(t, Tensor):
            raise LowerError(f"argument {pos} of lower() is {t!r}, not a tensor")
        key = t if isinstance(t.op, PlaceholderOp) else sch[t].tensor
        if key in out:
            raise LowerError(f"tensor {t.name} appears twice in the arguments")
        out[key] = Buffer(t.name, t.dtype, tuple(t.shape))
    for op in sch.outputs:
        if sch[op].tensor not in out:
            raise LowerError(f"output {op.name} of the schedule is missing from the arguments")
    return out


def lower(sch: Schedule, args, name: str = "main") -> PrimFunc:
    """Lower a schedule to a PrimFunc over `args` (inputs and outputs, in call order).

    Runs normalize, infer_bound, schedule_ops, storage flattening and simplification;
    `str()` of the result prints the loop nest.
    """
    sch.normalize()
    buffers = _arg_buffers(sch, args)
    ctx = infer_bound_context(sch)
    params = {st for st in ctx.graph.stages if st.tensor in buffers}
    body = schedule_ops(ctx, params)
    body = storage_flatten(body, buffers, ctx.bounds)
    body = simplify_stmt(body, {v: ctx.bounds[v] for v in ctx.size_vars})
    size_vars = []
    for buf in buffers.values():
        for d in buf.shape:
            for v in collect(d, lambda n: isinstance(n, Var)):
                if v not in size_vars:
                    size_vars.append(v)
    return PrimFunc(name, tuple(buffers.values()), body, tuple(size_vars))
