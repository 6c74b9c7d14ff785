"""The Schedule: one Stage per compute operation, in producer-before-consumer order.

`s[tensor]` is that tensor's Stage. cache_read / cache_write add stages and re-point the
readers; the stage keeps answering to the tensor the user holds.
"""
from __future__ import annotations

from ..errors import ScheduleError
from ..ir.expr import ProducerLoad, Var
from ..ir.functor import substitute, transform
from ..ir.range import Range
from ..lang.tensor import ComputeOp, IterVar, Operation, PlaceholderOp, Tensor, compute
from .relations import Rebase
from .stage import Stage


def _ops_in_order(outputs: list[Operation]) -> list[ComputeOp]:
    order, seen = [], set()

    def visit(op):
        if op in seen:
            return
        seen.add(op)
        for t in op.input_tensors():
            visit(t.op)
        if isinstance(op, ComputeOp):
            order.append(op)

    for op in outputs:
        visit(op)
    return order


class Schedule:
    """How a set of output operations is computed. Index it with a tensor to get a Stage."""

    def __init__(self, outputs: list[Operation]):
        self.outputs = list(outputs)
        self.stages: list[Stage] = []
        self.stage_map: dict[Operation, Stage] = {}
        self.sequence = 0  # orders after / before calls
        for op in _ops_in_order(self.outputs):
            self._add_stage(Stage(op, self), len(self.stages))
        for op in self.outputs:
            self.stage_map[op].is_output = True

    def _add_stage(self, stage: Stage, pos: int):
        self.stages.insert(pos, stage)
        self.stage_map[stage.op] = stage

    def __getitem__(self, key) -> Stage:
        return self.stage_for(key, "schedule lookup")

    def stage_for(self, key, what: str) -> Stage:
        """The Stage of `key` (a Stage, a Tensor or an Operation); a ScheduleError that
        starts with `what` when it has none here (a placeholder, another schedule's op)."""
        if isinstance(key, Stage):
            return key
        op = key.op if isinstance(key, Tensor) else key
        if isinstance(op, PlaceholderOp):
            raise ScheduleError(f"{what}: {op.name} is a placeholder (an input); it has no "
                                f"stage to schedule")
        if op not in self.stage_map:
            name = getattr(op, "name", repr(op))
            raise ScheduleError(f"{what}: {name} is not part of this schedule")
        return self.stage_map[op]

    def next_sequence(self) -> int:
        self.sequence += 1
        return self.sequence

    def owner_of(self, iv: IterVar) -> Stage | None:
        """The stage that has `iv` among its IterVars, if any."""
        for st in self.stages:
            if iv in st.all_iter_vars or iv in st.op.root_iter_vars:
                return st
        return None

    def reads(self, stage: Stage) -> list[Stage]:
        """The stages whose outputs `stage` reads directly."""
        out = []
        for t in stage.op.input_tensors():
            st = self.stage_map.get(t.op)
            if st is not None and st not in out:
                out.append(st)
        return out

    def reads_from(self, consumer: Stage, producer: Stage) -> bool:
        """Whether `consumer` reads `producer`'s output, directly or through other stages."""
        todo, seen = [consumer], set()
        while todo:
            st = todo.pop()
            for p in self.reads(st):
                if p is producer:
                    return True
                if p not in seen:
                    seen.add(p)
                    todo.append(p)
        return False

    # ------------------------------------------------------------------ caches

    def cache_read(self, tensor: Tensor, scope: str, readers) -> Tensor:
        """A copy of `tensor` in `scope` that `readers` read instead; returns the copy,
        whose stage is `s[copy]` (place it with compute_at)."""
        if not isinstance(readers, (list, tuple)):
            readers = [readers]
        reader_stages = [self.stage_for(r, f"cache_read of {tensor.name}") for r in readers]
        for st in reader_stages:
            if tensor not in st.op.input_tensors():
                raise ScheduleError(f"cache_read of {tensor.name}: stage {st.name} does not "
                                    f"read {tensor.name}")
        cache = compute(tensor.shape, lambda *i: tensor[i], name=f"{tensor.name}.{scope}")
        for st in reader_stages:
            body = transform(st.op.body, lambda n: ProducerLoad(cache, n.indices)
                             if isinstance(n, ProducerLoad) and n.producer is tensor else None)
            self._replace_op(st, ComputeOp(st.op.name, st.op.tag, st.op.attrs, st.op.axis, body))
        first = min(self.stages.index(st) for st in reader_stages)
        stage = Stage(cache.op, self)
        stage.scope = scope
        self._add_stage(stage, first)
        return cache

    def cache_write(self, tensor: Tensor, scope: str) -> Tensor:
        """Compute `tensor` into a cache in `scope` first, then copy it out; returns the
        cache, whose stage does the original (reduction) work."""
        stage = self.stage_for(tensor, f"cache_write of {tensor.name}")
        if stage.relations or stage.iter_var_attrs:
            raise ScheduleError(f"cache_write of {tensor.name}: call it before splitting, "
                                f"fusing or annotating stage {stage.name}")
        op = stage.op
        new_axis = [IterVar(Range(iv.dom.min, iv.dom.extent), Var(f"{iv.name}.c"), iv.iter_type)
                    for iv in op.axis]
        body = substitute(op.body, {iv.var: n.var for iv, n in zip(op.axis, new_axis)})
        cache_op = ComputeOp(f"{op.name}.{scope}", op.tag, op.attrs, new_axis, body)
        cache = cache_op.output(0)
        copy = ComputeOp(op.name, op.tag, op.attrs, op.axis, cache[tuple(iv.var for iv in op.axis)])
        self._replace_op(stage, copy)
        stage.reset_iter_vars()
        cache_stage = Stage(cache_op, self)
        cache_stage.scope = scope
        self._add_stage(cache_stage, self.stages.index(stage))
        return cache

    def _replace_op(self, stage: Stage, op: ComputeOp):
        """Give `stage` a new op; the old op (and the tensor the user holds) still maps here."""
        stage.op = op
        self.stage_map[op] = stage
        if stage.is_output:
            self.outputs = [op if o is stage.origin_op or self.stage_map.get(o) is stage else o
                            for o in self.outputs]

    # ------------------------------------------------------------------ normalize

    def normalize(self) -> Schedule:
        """Rebase loops whose domain does not start at 0 (e.g. reduce_axis((1, 5))), so
        every loop made from a static domain starts at 0."""
        for st in self.stages:
            for iv in list(st.leaf_iter_vars):
                if iv.dom is not None and not (getattr(iv.dom.min, "value", None) == 0):
                    rebased = IterVar(None, Var(iv.name), iv.iter_type)
                    st.relations.append(Rebase(iv, rebased))
                    pos = st.leaf_iter_vars.index(iv)
                    st.leaf_iter_vars[pos] = rebased
                    st.all_iter_vars.append(rebased)
                    for table in (st.iter_var_attrs, st.pragmas):
                        if iv in table:
                            table[rebased] = table.pop(iv)
                    for other in self.stages:
                        if other.attach_ivar is iv:
                            other.attach_ivar = rebased
        return self


def create_schedule(ops) -> Schedule:
    """A default schedule for `ops` (one operation or a list): every stage at the root,
    loops in the order of the compute's axes."""
    if not isinstance(ops, (list, tuple)):
        ops = [ops]
    ops = [o.op if isinstance(o, Tensor) else o for o in ops]
    for o in ops:
        if not isinstance(o, Operation):
            raise TypeError(f"create_schedule needs operations (tensor.op), got {o!r}")
    return Schedule(ops)


__all__ = ["Schedule", "create_schedule"]
