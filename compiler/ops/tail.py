"""The elementwise tail of a fused kernel (TOPI's traverse_inline role): a graph kernel
computes an anchor op (conv2d, dense) and then the elementwise and broadcast ops the
fuser put after it (bias, relu, a residual add). Its schedule tiles the tail's last
stage as the anchor's output and inlines the stages between them, so the anchor's
accumulator is stored once, through the whole tail."""
from __future__ import annotations

from ..errors import ScheduleError
from ..lang.tensor import ComputeOp, Tensor
from ..schedule.schedule import Schedule


def find_anchor(out: Tensor, tag: str) -> Tensor:
    """The tensor whose operation is tagged `tag` (an operator's name, see
    pattern.register_pattern) that `out` is, or is computed from through other computes;
    a ScheduleError naming `out` and `tag` when there is none."""
    todo, seen = [out], set()
    while todo:
        t = todo.pop()
        if not isinstance(t.op, ComputeOp) or t.op in seen:
            continue
        if t.op.tag == tag:
            return t
        seen.add(t.op)
        todo.extend(t.op.input_tensors())
    raise ScheduleError(f"{out.name} is not computed from an operation tagged {tag!r}")


def inline_tail(s: Schedule, out: Tensor, anchor: Tensor) -> None:
    """Inline every compute stage that `out` reads on its way to `anchor` (not the
    stages `anchor` itself reads, nor `out`): the tail ops and the scalars they read."""
    todo, seen = list(out.op.input_tensors()), {out.op, anchor.op}
    while todo:
        t = todo.pop()
        if not isinstance(t.op, ComputeOp) or t.op in seen:
            continue
        seen.add(t.op)
        s[t].compute_inline()
        todo.extend(t.op.input_tensors())
