"""The default schedule of a graph of operators: one rule set in place of TOPI's generic
per-operator schedules, correct for every shape, and fast enough not to embarrass.

Stage by stage:

1. A stage of pattern INJECTIVE or below that is not an output is inlined when exactly
   one stage reads it and that reader runs no more iterations than it has elements:
   each element is computed once either way, and inlining saves its round trip through
   memory; or when it is a padding whose border test leaves the innermost axis alone
   (a packed pool's: a compare per read is cheaper than a pass over memory). Otherwise
   it is computed once at the root: a padded input read by every NCHW conv2d window
   (its test is on W, the vector loop), or softmax's exp read by two stages, would cost
   more recomputed.
2. Every other stage runs at the root: its outer data-parallel loops fused into one
   parallel loop (when the stage does enough work to pay for starting threads), its
   reduction loops inside, and its innermost data-parallel loop innermost and
   vectorized, so a reduction accumulates a vector of outputs at once (matmul rows,
   conv2d output columns). That loop is vectorized only where the vectorizer can do it
   (affine load indices, no read guarded by a condition on the loop: padding along it);
   elsewhere it would fall back to a scalar loop with a warning. A loop left scalar stays
   a loop of its own inside the fused one.
"""
from __future__ import annotations

from ..arith.simplify import simplify
from ..ir import expr as E
from ..ir.expr import ProducerLoad
from ..ir.functor import children, collect
from ..ir.reduce import Reduce
from ..lang.tensor import Tensor
from ..schedule.graph import StageGraph
from ..schedule.schedule import Schedule, create_schedule
from ..schedule.stage import Stage
from ..target import Target
from .pattern import OpPattern, pattern_kind
from .shape import static

# Loop iterations below which starting the thread pool costs more than it saves.
PARALLEL_MIN_WORK = 1 << 15


def default_schedule(outs, target=None) -> Schedule:
    """A schedule computing `outs` (a tensor or a list of them) by the rules above;
    `target` (a Target or its string; default None: the entered one, as a graph build's,
    else the host) sets the vector width."""
    outs = [outs] if isinstance(outs, Tensor) else list(outs)
    s = create_schedule([t.op for t in outs])
    readers: dict[Stage, list[Stage]] = {st: [] for st in s.stages}
    for st in s.stages:
        for producer in s.reads(st):
            readers[producer].append(st)
    for st in s.stages:
        if _inlinable(st, readers[st]):
            st.compute_inline()
    graph = StageGraph(s)
    vector_bits = Target.resolve(target).vector_bits
    for st in graph.stages:
        _schedule_root(st, graph.body[st], vector_bits)
    return s


def _iterations(ivs) -> E.Expr | None:
    """How many iterations the loops `ivs` make, None if one was made by split (only
    bound inference sizes those)."""
    n = E.const(1)
    for iv in ivs:
        if iv.dom is None:
            return None
        n = simplify(n * iv.dom.extent)
    return n


def _inlinable(st: Stage, readers: list[Stage]) -> bool:
    if st.is_output or st.op.reduce_axis or len(readers) != 1:
        return False
    if pattern_kind(st.tensor) > OpPattern.INJECTIVE:
        return False
    extra = static(simplify(_iterations(readers[0].op.root_iter_vars) - _iterations(st.op.axis)))
    if extra is None:
        # Sizes the simplifier cannot compare: an injective reader reads each element once.
        return not readers[0].op.reduce_axis
    return extra <= 0 or _padding(st)


def _padding(st: Stage) -> bool:
    """Whether `st` is a padding (one load, or a constant where a border test fails)
    whose test does not involve its innermost axis: a load and a compare per read cost
    less than writing the padded copy and reading it back (a pass over memory), and the
    reader's vector loop stays lane-safe. ResNet's 3x3 max pool over the packed stem
    output, inside the model: 120 -> 62 us on Zen 5 (ONNX Runtime: 51). Padding along
    the innermost axis (a conv2d or pool in NCHW, along W) is still computed once:
    inlined, its test would leave that loop scalar."""
    body = st.op.body
    return (isinstance(body, E.Select) and isinstance(body.true_value, ProducerLoad)
            and isinstance(body.false_value, E.FloatImm | E.IntImm)
            and not _uses(body.condition, st.op.axis[-1].var))


def _schedule_root(st: Stage, body: E.Expr, vector_bits: int) -> None:
    """Rule 2 of the module docstring; `body` is the stage's body with inlining done."""
    data, reduce = list(st.op.axis), list(st.op.reduce_axis)
    if not data:
        return
    lanes = vector_bits // max(E.bits(st.tensor.dtype), 8)
    inner, extent = data[-1], static(data[-1].dom.extent)
    fuse, alone, vec = data, [], None  # loops fused into one; loops kept whole; vector loop
    if (extent is None or extent >= 2) and _lane_safe(body, inner.var):
        if extent is not None and extent <= lanes:
            fuse, vec = data[:-1], inner
        else:
            outer, vec = st.split(inner, factor=lanes)
            if extent is not None and extent % lanes == 0:
                fuse = data[:-1] + [outer]
            else:
                # The split leaves a tail. Fused, `outer` would hide it behind a floormod;
                # a loop of its own, LoopPartition peels it off the vectorized main part.
                fuse, alone = data[:-1], [outer]
    elif len(data) > 1:
        # Fused in, a scalar innermost loop would pay a div and a mod per element.
        fuse, alone = data[:-1], [inner]
    loops = [st.fuse(*fuse)] if fuse else []
    if reduce:
        st.reorder(*loops, *alone, *reduce, *([] if vec is None else [vec]))
    work = static(_iterations(st.op.root_iter_vars))
    if work is None or work >= PARALLEL_MIN_WORK:
        # The outermost loop that has more than one iteration runs on the threads.
        n = _iterations(fuse)
        if n is not None and static(n) == 1:
            loops = []
        if loops + alone:
            st.parallel((loops + alone)[0])
    if vec is not None:
        st.vectorize(vec)


def _lane_safe(e: E.Expr, v: E.Var) -> bool:
    """Whether the vectorizer can turn loop `v` of `e` into vector operations: every load
    index is affine in `v` (it becomes a ramp), and no read is guarded by a condition on
    `v` (padding), which would have to be decided lane by lane."""
    match e:
        case ProducerLoad(indices=indices):
            return all(_affine(i, v) for i in indices)
        case E.Select(condition=c) | Reduce(condition=c) if c is not None and _uses(c, v) \
                and collect(e, lambda x: isinstance(x, ProducerLoad)):
            return False
    return all(_lane_safe(c, v) for c in children(e))


def _uses(e: E.Expr, v: E.Var) -> bool:
    return bool(collect(e, lambda x: x is v))


def _affine(e: E.Expr, v: E.Var) -> bool:
    if e is v or not _uses(e, v):
        return True
    match e:
        case E.Add(a=a, b=b) | E.Sub(a=a, b=b):
            return _affine(a, v) and _affine(b, v)
        case E.Mul(a=a, b=b):
            return (isinstance(b, E.IntImm) and _affine(a, v)) or \
                   (isinstance(a, E.IntImm) and _affine(b, v))
    return False
