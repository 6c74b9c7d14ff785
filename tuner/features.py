"""Features of configs for a cost model (AutoTVM's xgboost_cost_model features).

Two kinds, each a float32 matrix with one row per config and a length that depends on
the task only, never on the config (variable-length rows broke AutoTVM's model):

- "knob": the config's knob values, numerically encoded (`knob_features`);
- "itervar": the loop nest the config produces, read from its schedule
  (`itervar_features`): per statement and per loop, the extent, depth and annotation,
  and for each buffer the statement touches, the bytes touched below that loop, the
  stride of the access along that loop and the reuse.

Itervar features come from the schedule, not from `compiler.lower`: lowering a matmul
candidate costs 15-30 ms and bound inference alone 7 ms, too slow for the thousands of
candidates of a simulated-annealing round. Instead the loop extents are passed down the
stages' Split / Fuse relations in plain integers, the region an attached stage computes
comes from its consumer's loops below the attach point, and accesses are linearised by
evaluating their index expressions at unit steps of the root axes. The loops and their
extents are those `lower` makes (loops of extent 1 are dropped, as schedule_ops does);
the access figures are linear estimates, exact for the affine indexing of the built-in
templates.

Row layout of itervar features: MAX_STATEMENTS statement slots, the statements (one per
stage that is not inlined) ordered by iteration count, largest first, padded with
zeros. Each slot is [log2(iterations + 1), loop count, is_reduction] followed by
MAX_LOOPS loop slots, innermost loop first, each [log2(extent + 1), depth,
is_vectorized, is_unrolled, is_parallel] and then, per buffer slot, [log2(bytes touched
below the loop + 1), log2(|stride along the loop| + 1), log2(reuse + 1)]. Buffer slots
are the task's argument tensors sorted by name, then EXTRA_BUFFERS slots for the
statement's other buffers (caches, packed copies) sorted by name.
"""
from __future__ import annotations

import math
import weakref

import numpy as np

from compiler.ir import expr as E
from compiler.ir.stmt import PARALLEL, UNROLLED, VECTORIZED
from compiler.lang.tensor import REDUCE
from compiler.schedule.graph import StageGraph
from compiler.schedule.relations import Fuse, Rebase, Shift, Split
from compiler.schedule.stage import SCOPE
from search_spaces import (AnnotateSpace, InstantiationError, OtherOptionSpace, ReorderSpace,
                           SplitSpace)

MAX_STATEMENTS = 3   # statement slots per row
MAX_LOOPS = 8        # loop slots per statement, innermost first
EXTRA_BUFFERS = 2    # buffer slots for buffers that are not task arguments
LOOP_FIELDS = 5      # log2 extent, depth, vectorized, unrolled, parallel
BUFFER_FIELDS = 3    # log2 bytes touched, log2 |stride|, log2 reuse
STATEMENT_FIELDS = 3  # log2 iterations, loop count, is_reduction
KINDS = ("itervar", "knob")


# ------------------------------------------------------------------ knob features

_ANNOTATION_CODES = {"none": 0.0, "unroll": 1.0, "vec": 2.0}
_knob_tables: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _is_number(v) -> bool:
    return isinstance(v, (int, float))


def _knob_table(knob) -> np.ndarray:
    """One row per value of `knob`: the numeric encoding of that value."""
    if isinstance(knob, SplitSpace):
        rows = []
        for e in knob.entities:
            inner = math.prod(e.size[1:])
            outer = e.size[0] if e.size[0] > 0 else -(-knob.extent // inner)
            rows.append([math.log2(v) for v in (outer, *e.size[1:])])
        return np.array(rows, dtype=np.float64)
    index = np.arange(len(knob), dtype=np.float64)[:, None]
    if isinstance(knob, ReorderSpace):
        return np.hstack([index, [e.perm for e in knob.entities]])
    if isinstance(knob, AnnotateSpace):
        return np.hstack([index, [[_ANNOTATION_CODES[a] for a in e.anns]
                                  for e in knob.entities]])
    if isinstance(knob, OtherOptionSpace) and all(_is_number(e.val) and e.val is not None
                                                  for e in knob.entities):
        return np.hstack([index, [[float(e.val)] for e in knob.entities]])
    return index


def _knob_tables_of(space) -> list[np.ndarray]:
    """The per-knob tables of `space`, made once per space."""
    if space not in _knob_tables:
        _knob_tables[space] = [_knob_table(k) for k in space.space_map.values()]
    return _knob_tables[space]


def knob_features(configs) -> np.ndarray:
    """Knob features of `configs` (ConfigEntity objects of one space), shape
    [len(configs), d] float32; d depends on the space only.

    Per knob, in definition order: a split gives log2 of each loop's extent (the -1
    outer part replaced by the outer extent it leaves); a reorder its value's index and
    the permutation; an annotate its value's index and a code per axis (0 none, 1
    unroll, 2 vec); a plain knob its value's index, and the value when all its values
    are numbers.
    """
    configs = list(configs)
    if not configs:
        return np.zeros((0, 0), dtype=np.float32)
    space = configs[0].space
    tables = _knob_tables_of(space)
    positions = np.array([c.knob_indices for c in configs], dtype=np.int64)
    return np.hstack([t[positions[:, k]] for k, t in enumerate(tables)]).astype(np.float32)


# ------------------------------------------------------------------ itervar features

_layouts: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _buffer_names(task) -> tuple[str, ...]:
    """The task's argument tensor names, sorted, found once per task."""
    if task not in _layouts:
        inputs, outputs = task.tensors()
        _layouts[task] = tuple(sorted(t.name for t in inputs + outputs))
    return _layouts[task]


def itervar_length(task) -> int:
    """The length of an itervar feature row of `task`."""
    buffers = len(_buffer_names(task)) + EXTRA_BUFFERS
    loop = LOOP_FIELDS + BUFFER_FIELDS * buffers
    return MAX_STATEMENTS * (STATEMENT_FIELDS + MAX_LOOPS * loop)


def itervar_features(task, configs) -> np.ndarray:
    """Loop-nest features of `configs` (configs of `task`'s space), shape
    [len(configs), itervar_length(task)] float32; see the module docstring for the
    layout. A config whose template raises InstantiationError gets a row of zeros."""
    names = _buffer_names(task)
    out = np.zeros((len(configs), itervar_length(task)), dtype=np.float32)
    for row, config in enumerate(configs):
        try:
            s, _ = task.instantiate(config)
        except InstantiationError:
            continue
        out[row] = _schedule_row(s, names)
    return out


def features(task, configs, kind: str = "itervar") -> np.ndarray:
    """Features of `configs` for a cost model: kind "itervar" (default;
    itervar_features) or "knob" (knob_features, which reads only the configs' space)."""
    if kind == "itervar":
        return itervar_features(task, configs)
    if kind == "knob":
        return knob_features(configs)
    raise ValueError(f"unknown feature kind {kind!r}; kinds: {', '.join(KINDS)}")


def _value(e, env: dict) -> int:
    """Integer value of index expression `e` with the Vars of `env` set (others 0)."""
    match e:
        case E.IntImm(value=v):
            return v
        case E.Var():
            return env.get(e, 0)
        case E.Add(a=a, b=b):
            return _value(a, env) + _value(b, env)
        case E.Sub(a=a, b=b):
            return _value(a, env) - _value(b, env)
        case E.Mul(a=a, b=b):
            return _value(a, env) * _value(b, env)
        case E.FloorDiv(a=a, b=b) | E.TruncDiv(a=a, b=b):
            d = _value(b, env)
            return _value(a, env) // d if d else 0
        case E.FloorMod(a=a, b=b) | E.TruncMod(a=a, b=b):
            d = _value(b, env)
            return _value(a, env) % d if d else 0
        case E.Min(a=a, b=b):
            return min(_value(a, env), _value(b, env))
        case E.Max(a=a, b=b):
            return max(_value(a, env), _value(b, env))
        case E.Cast(value=v):
            return _value(v, env)
        case E.Select(true_value=t):
            return _value(t, env)
    return 0


def _linear(indices, roots) -> np.ndarray:
    """[len(indices), len(roots)]: how far each index moves per unit step of each root
    axis, from the origin (the local slope where an index is not affine)."""
    origin = [_value(i, {}) for i in indices]
    out = np.zeros((len(indices), len(roots)))
    for r, iv in enumerate(roots):
        env = {iv.var: 1}
        for d, i in enumerate(indices):
            out[d, r] = _value(i, env) - origin[d]
    return out


def _const(e, default: int = 1) -> int:
    return e.value if isinstance(e, E.IntImm) else default


class _Nest:
    """Integer extents and root-space directions of every loop of a schedule."""

    def __init__(self, s):
        self.graph = StageGraph(s)
        self.extent: dict = {}       # IterVar -> int
        self.parts: dict = {}        # IterVar -> [(extent, direction over roots)]
        for st in reversed(self.graph.stages):  # consumers first
            self._stage(st)

    def _stage(self, st):
        roots = st.op.root_iter_vars
        for r, iv in enumerate(roots):
            ext = _const(iv.dom.extent)
            if iv.iter_type != REDUCE and st.attach_type == SCOPE:
                ext = min(ext, self._request(st, r))
            self.extent[iv] = ext
            direction = np.zeros(len(roots))
            direction[r] = 1.0
            self.parts[iv] = [(ext, direction)]
        for rel in st.relations:
            match rel:
                case Split(parent=p, outer=o, inner=i, factor=factor, nparts=nparts):
                    ext = self.extent[p]
                    inner = min(factor, ext) if factor else -(-ext // nparts)
                    inner = max(inner, 1)
                    self.extent[o], self.extent[i] = -(-ext // inner), inner
                    direction = self.parts[p][-1][1]
                    self.parts[o] = [(self.extent[o], direction * inner)]
                    self.parts[i] = [(inner, direction)]
                case Fuse(outer=o, inner=i, fused=f):
                    self.extent[f] = self.extent[o] * self.extent[i]
                    self.parts[f] = self.parts[o] + self.parts[i]
                case Rebase(parent=p, rebased=r) | Shift(parent=p, shifted=r):
                    self.extent[r], self.parts[r] = self.extent[p], self.parts[p]

    def _request(self, st, dim: int) -> int:
        """Length along axis `dim` of the region of `st` that one iteration of its
        attach loop needs: the span of the consumer's reads over the loops below it."""
        parent = st.attach_stage
        pos = parent.leaf_iter_vars.index(st.attach_ivar)
        span = 1.0
        for load in self.graph.loads(parent, of=st):
            slope = _linear(load.indices[dim:dim + 1], parent.op.root_iter_vars)[0]
            reach = sum(abs(slope @ d) * (ext - 1)
                        for iv in parent.leaf_iter_vars[pos + 1:]
                        for ext, d in self.parts[iv])
            span = max(span, reach + 1)
        return int(span)

    def loops(self, st) -> list:
        """The loops around `st`'s statement, outermost first, each (IterVar, owning
        stage, [(extent, direction over st's root axes)]), loops of extent 1 left out."""
        own = [(iv, st, self.parts[iv]) for iv in st.leaf_iter_vars]
        if st.attach_type == SCOPE:
            parent = st.attach_stage
            pos = parent.leaf_iter_vars.index(st.attach_ivar)
            # Parent loops move st's region as the parent's reads of st move.
            to_st = np.zeros((len(st.op.root_iter_vars), len(parent.op.root_iter_vars)))
            for load in self.graph.loads(parent, of=st)[:1]:
                to_st[:len(st.op.axis)] = _linear(load.indices, parent.op.root_iter_vars)
            outer = [loop for loop in self.loops(parent) if loop[0] in
                     set(parent.leaf_iter_vars[:pos + 1]) or loop[1] is not parent]
            own = [(iv, owner, [(ext, to_st @ d) for ext, d in parts])
                   for iv, owner, parts in outer] + own
        return [loop for loop in own if self.extent[loop[0]] > 1]


def _accesses(nest: _Nest, st) -> list:
    """(buffer name, bytes per element, shape, slopes over st's root axes) of the store
    and of every read of `st`'s statement, the store first."""
    roots = st.op.root_iter_vars
    store = np.zeros((len(st.op.axis), len(roots)))
    store[:, :len(st.op.axis)] = np.eye(len(st.op.axis))
    out = [(st.tensor.name, st.tensor.dtype, st.tensor.shape, store)]
    for load in nest.graph.loads(st):
        t = load.producer
        out.append((t.name, t.dtype, t.shape, _linear(load.indices, roots)))
    # A stage's buffer holds the region bound inference gives it (a cache holds a tile).
    region = {other.tensor.name: [nest.extent[iv] for iv in other.op.axis]
              for other in nest.graph.stages}
    return [(name, E.bits(dtype) // 8 * E.lanes(dtype),
             np.array(region.get(name) or [_const(d) for d in shape]), slopes)
            for name, dtype, shape, slopes in out]


def _statement(nest: _Nest, st, names: tuple) -> tuple[float, np.ndarray]:
    """(iterations, feature slot) of the statement of stage `st`."""
    loops = nest.loops(st)
    n_buffers = len(names) + EXTRA_BUFFERS
    loop_len = LOOP_FIELDS + BUFFER_FIELDS * n_buffers
    slot = np.zeros(STATEMENT_FIELDS + MAX_LOOPS * loop_len)
    extents = np.array([nest.extent[iv] for iv, _, _ in loops], dtype=np.float64)
    below = np.cumprod(extents[::-1])[::-1] if loops else extents  # iterations below each loop
    iterations = float(below[0]) if loops else 1.0
    slot[:STATEMENT_FIELDS] = [np.log2(iterations + 1), len(loops), bool(st.op.reduce_axis)]
    if not loops:
        return iterations, slot
    # Parts of every loop, outermost first; `first[l]` is loop l's first part.
    part_ext = np.array([ext for _, _, parts in loops for ext, _ in parts], dtype=np.float64)
    part_dir = np.array([d for _, _, parts in loops for _, d in parts])
    counts = [len(parts) for _, _, parts in loops]
    first = np.cumsum([0] + counts[:-1])
    last = first + np.array(counts) - 1
    table = np.zeros((len(loops), loop_len))
    table[:, 0] = np.log2(extents + 1)
    table[:, 1] = np.arange(len(loops))
    for row, (iv, owner, _) in enumerate(loops):
        kind = owner.iter_var_attrs.get(iv)
        table[row, 2:5] = [kind == VECTORIZED, kind == UNROLLED, kind == PARALLEL]
    accesses = _accesses(nest, st)
    others = sorted({a[0] for a in accesses} - set(names))[:EXTRA_BUFFERS]
    slots = {name: k for k, name in enumerate(list(names) + others)}
    seen = set()
    for name, nbytes, shape, slopes in accesses:
        if name in seen or name not in slots:
            continue
        seen.add(name)
        moves = part_dir @ slopes.T                    # [parts, dims]
        reach = np.abs(moves) * (part_ext - 1)[:, None]
        span = np.minimum(np.cumsum(reach[::-1], axis=0)[::-1][first] + 1, shape)
        elements = np.prod(span, axis=1)
        flat = np.cumprod(np.concatenate([shape[1:], [1]])[::-1])[::-1]
        stride = moves[last] @ flat
        col = LOOP_FIELDS + BUFFER_FIELDS * slots[name]
        table[:, col] = np.log2(elements * nbytes + 1)
        table[:, col + 1] = np.log2(np.abs(stride) + 1)
        table[:, col + 2] = np.log2(below / elements + 1)
    inner_first = table[::-1][:MAX_LOOPS]
    slot[STATEMENT_FIELDS:STATEMENT_FIELDS + inner_first.size] = inner_first.ravel()
    return iterations, slot


def _schedule_row(s, names: tuple) -> np.ndarray:
    """The itervar feature row of schedule `s`."""
    nest = _Nest(s)
    statements = [_statement(nest, st, names) for st in nest.graph.stages]
    order = sorted(range(len(statements)), key=lambda k: -statements[k][0])
    return np.concatenate([statements[k][1] for k in order[:MAX_STATEMENTS]] +
                          [np.zeros_like(statements[0][1])] *
                          max(0, MAX_STATEMENTS - len(statements)))
