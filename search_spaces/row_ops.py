"""The templates of the row-wise kernels: softmax and log_softmax over the last axis, and
layer norm over the trailing axes from `axis` on. Each is compiler.ops' compute (two
reductions in sequence and an elementwise tail, pattern OPAQUE: a kernel of its own);
what the template decides is where its stages run.

compiler.ops' default schedule computes every stage over all rows before the next
begins: five passes over memory for a softmax, each its own parallel loop. Here the
output's rows run in blocks on the threads, and every other stage that is not inlined
(the reductions, softmax's exp, read twice) is computed inside the block, so a row is
read from memory once and its passes run in L1 (TVM's x86 schedule_softmax does the
same at the outer axes). On Zen 5, 2 cores: a layer norm of 128 x 768 rows 14.0 -> 6.1
us, a softmax of 12 x 128 x 128 40.6 -> 22.8 us (blocks of 8 rows, interleaved; the
fallback takes blocks of 4: fewer registers live on AVX2).

Knobs:
- `tile_rows`: the rows of a block: a factor (at most MAX_ROWS) of the last axis before
  `axis`, whose blocks run in one loop with the axes before it;
- `compute_at`: "block" (the stages over the block's rows) or "row" (over one row at a
  time, the block's rows in sequence);
- `interleave`: at "block", whether a two-stage reduction's partial stage runs its
  rows inside its reduction loop, unrolled: one vector accumulator per row, so the
  rows' dependent adds overlap (one row alone waits on its accumulator every step);
- `parallel`: whether the blocks run on the threads (untuned: where the kernel does
  compiler.ops' PARALLEL_MIN_WORK).
"""
from __future__ import annotations

import numpy as np

from compiler import Target, graph, ops, te
from compiler.ops.schedule import PARALLEL_MIN_WORK
from compiler.ops.shape import static

from .binding import Binding, float32
from .registry import template

MAX_ROWS = 64
FALLBACK_ROWS = 4


def define_row_knobs(cfg, shape, axis: int) -> None:
    """The knobs of a row kernel over a `shape` tensor whose rows are its axes before
    `axis` (the module docstring)."""
    rows = shape[axis - 1]
    cfg.define_split("tile_rows", rows, num_outputs=2, policy="factors",
                     filter=lambda e: e.size[-1] <= MAX_ROWS,
                     fallback=(-1, ops.largest_divisor(rows, FALLBACK_ROWS)))
    cfg.define_knob("compute_at", ["block", "row"])
    cfg.define_knob("interleave", [1, 0])
    big = int(np.prod(shape, dtype=np.int64)) >= PARALLEL_MIN_WORK
    cfg.define_knob("parallel", [1, 0], fallback=1 if big else 0)


def schedule_rows(cfg, s, out, axis: int) -> None:
    """Schedule the kernel whose output `out` is computed row by row over the axes
    before `axis`, by `cfg` (the module docstring). Every other stage is inlined when it
    reduces nothing and one stage reads it, else computed inside the output's block."""
    lanes = Target.resolve().vector_lanes
    readers = {st: [] for st in s.stages}
    for st in s.stages:
        for producer in s.reads(st):
            readers[producer].append(st)
    inside = []
    for st in s.stages:
        if st.op is out.op or not isinstance(st.op, te.ComputeOp):
            continue
        if not st.op.reduce_axis and len(readers[st]) == 1:
            st.compute_inline()
        else:
            inside.append(st)
    so = s[out]
    block, row = cfg["tile_rows"].apply(s, out, so.op.axis[axis - 1])
    if axis > 1:
        # Fused with the row axes before it, the block's loop stays one point of each of
        # them, so bound inference gives the stages inside exactly the block's rows (a
        # block of fused rows crossing from one outer index to the next would be relaxed
        # to every row of both).
        block = so.fuse(*so.op.axis[:axis - 1], block)
    _vectorize_last(so, list(so.op.axis[axis:]), lanes)
    if cfg["parallel"].val:
        so.parallel(block)
    at_block = cfg["compute_at"].val == "block"
    for st in inside:
        st.compute_at(so, block if at_block else row)
        data = list(st.op.axis)
        vec = _vectorize_last(st, data, lanes)
        if at_block and cfg["interleave"].val and st.op.reduce_axis and vec is not None \
                and len(data) > 1:
            rows = st.fuse(*data[:-1]) if len(data) > 2 else data[0]
            st.reorder(*st.op.reduce_axis, rows, vec)
            st.unroll(rows)


def _vectorize_last(st, data: list, lanes: int):
    """Vectorize the last of the stage's data loops `data` in vectors of `lanes` (the
    whole loop when it is at most that long; a split's tail is left to LoopPartition);
    the vector loop, or None when the loop is a single element or unknown."""
    extent = static(data[-1].dom.extent) if data else None
    if extent is None or extent < 2:
        return None
    vec = data[-1]
    if extent > lanes:
        _, vec = st.split(data[-1], factor=lanes)
    st.vectorize(vec)
    return vec


def softmax_reference(inputs, shape):
    """numpy softmax over the last axis."""
    x = inputs[0].astype("float64")
    e = np.exp(x - x.max(-1, keepdims=True))
    return (e / e.sum(-1, keepdims=True)).astype("float32")


def log_softmax_reference(inputs, shape):
    """numpy log_softmax over the last axis."""
    x = inputs[0].astype("float64")
    shifted = x - x.max(-1, keepdims=True)
    return (shifted - np.log(np.exp(shifted).sum(-1, keepdims=True))).astype("float32")


def layer_norm_reference(inputs, shape, axis, epsilon):
    """numpy layer norm over the axes from `axis` on."""
    x, gamma, beta = (a.astype("float64") for a in inputs)
    axes = tuple(range(axis, x.ndim))
    mu = x.mean(axis=axes, keepdims=True)
    var = ((x - mu) ** 2).mean(axis=axes, keepdims=True)
    return ((x - mu) / np.sqrt(var + epsilon) * gamma + beta).astype("float32")


def _softmax_kernel(cfg, shape, compute):
    x = te.placeholder(tuple(shape), name="x")
    define_row_knobs(cfg, shape, len(shape) - 1)
    out = compute(x, -1)
    s = te.create_schedule(out.op)
    schedule_rows(cfg, s, out, len(shape) - 1)
    return s, [x, out]


def _softmax_workload(call) -> tuple | None:
    """A float32 softmax (or log_softmax) over the last axis of two axes or more."""
    data = call.args[0].ty
    if data.ndim < 2 or call.attrs["axis"] % data.ndim != data.ndim - 1 or \
            not float32(call):
        return None
    return (tuple(data.shape),)


def _softmax_call(op):
    def call(shape):
        x = graph.var("data", shape=shape)
        return [x], op(x)
    return call


def _schedule_last(args, cfg, s, anchor, out) -> None:
    schedule_rows(cfg, s, out, len(args[0]) - 1)


@template("softmax", reference=softmax_reference, probes=[((7, 37),)],
          binding=Binding("nn.softmax", _softmax_workload,
                          compute=lambda args, cfg, ins: ops.softmax(ins[0], -1),
                          schedule=_schedule_last, call=_softmax_call(graph.nn.softmax)))
def softmax(cfg, shape: tuple):
    """softmax over the last axis of a float32 `shape` tensor (two axes at least);
    returns the schedule and [x, y]."""
    return _softmax_kernel(cfg, shape, ops.softmax)


@template("log_softmax", reference=log_softmax_reference, probes=[((7, 37),)],
          binding=Binding("nn.log_softmax", _softmax_workload,
                          compute=lambda args, cfg, ins: ops.log_softmax(ins[0], -1),
                          schedule=_schedule_last, call=_softmax_call(graph.nn.log_softmax)))
def log_softmax(cfg, shape: tuple):
    """log_softmax over the last axis of a float32 `shape` tensor (two axes at least);
    returns the schedule and [x, y]."""
    return _softmax_kernel(cfg, shape, ops.log_softmax)


def _layer_norm_workload(call) -> tuple | None:
    """A float32 nn.layer_norm with rows (its axis not the first)."""
    data = call.args[0].ty
    axis = call.attrs["axis"] % data.ndim
    if axis == 0 or not float32(call):
        return None
    return (tuple(data.shape), axis, call.attrs["epsilon"])


def _layer_norm_call(shape, axis, epsilon):
    x = graph.var("data", shape=shape)
    gamma, beta = (graph.const(np.zeros(shape[axis:], "float32")) for _ in range(2))
    return [x], graph.nn.layer_norm(x, gamma, beta, axis, epsilon)


@template("layer_norm", reference=layer_norm_reference, probes=[((7, 37), -1, 1e-5)],
          binding=Binding("nn.layer_norm", _layer_norm_workload,
                          compute=lambda args, cfg, ins: ops.layer_norm(*ins, *args[1:]),
                          schedule=lambda args, cfg, s, anchor, out: schedule_rows(
                              cfg, s, out, args[1]),
                          call=_layer_norm_call))
def layer_norm(cfg, shape: tuple, axis: int, epsilon: float):
    """Layer norm of a float32 `shape` tensor over its axes from `axis` on (1 at least);
    returns the schedule and [x, gamma, beta, y]."""
    x = te.placeholder(tuple(shape), name="x")
    gamma = te.placeholder(tuple(shape[axis:]), name="gamma")
    beta = te.placeholder(tuple(shape[axis:]), name="beta")
    define_row_knobs(cfg, shape, axis)
    out = ops.layer_norm(x, gamma, beta, axis, epsilon)
    s = te.create_schedule(out.op)
    schedule_rows(cfg, s, out, axis)
    return s, [x, gamma, beta, out]
