"""The stage graph as lowering sees it: bodies with inlined stages substituted, who
consumes whom, and each stage's attach path (reference: CreateReadGraph, CreateAttachPath)."""
from __future__ import annotations

from ..ir.expr import Expr, ProducerLoad
from ..ir.functor import collect, substitute, transform
from .stage import INLINE, SCOPE, Stage


class StageGraph:
    """Effective bodies (inlining done, every load naming its stage's current tensor),
    consumers of each stage, and attach paths."""

    def __init__(self, sch):
        self.schedule = sch
        self.body: dict[Stage, Expr] = {}
        inlined: dict[Stage, Expr] = {}

        def rewrite(n):
            if not isinstance(n, ProducerLoad):
                return None
            st = sch.stage_map.get(n.producer.op)
            if st is None:
                return None
            if st.attach_type == INLINE:
                return substitute(inlined[st], {iv.var: i for iv, i in zip(st.op.axis, n.indices)})
            return n if n.producer is st.tensor else ProducerLoad(st.tensor, n.indices)

        for st in sch.stages:
            body = transform(st.op.body, rewrite)
            (inlined if st.attach_type == INLINE else self.body)[st] = body
        self.stages = [st for st in sch.stages if st.attach_type != INLINE]
        self.consumers: dict[Stage, list[Stage]] = {st: [] for st in self.stages}
        for st in self.stages:
            for p in self.producers(st):
                self.consumers[p].append(st)

    def loads(self, stage: Stage, of: Stage | None = None) -> list[ProducerLoad]:
        """The tensor reads in `stage`'s effective body (only those of `of`, if given)."""
        return collect(self.body[stage], lambda n: isinstance(n, ProducerLoad) and
                       (of is None or n.producer is of.tensor))

    def producers(self, stage: Stage) -> list[Stage]:
        out = []
        for load in self.loads(stage):
            st = self.schedule.stage_map.get(load.producer.op)
            if st is not None and st not in out:
                out.append(st)
        return out

    def attach_path(self, stage: Stage) -> list:
        """The loops that enclose `stage`, innermost first."""
        path = []
        while stage.attach_type == SCOPE:
            leaves = stage.attach_stage.leaf_iter_vars
            pos = leaves.index(stage.attach_ivar)
            path.extend(reversed(leaves[:pos + 1]))
            stage = stage.attach_stage
        return path
