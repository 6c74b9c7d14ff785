"""The layout planner: the form every convolution of a model runs as (NCHW, or packed in
an (input block, output block) pair, by Winograd or directly), decided for the whole
graph from the tuning log (TVM's graph tuner, simply). AlterOpLayout applies the plan
(alter_op_layout.Planned) and asks nothing again; without one (no chooser entered, or
no record of any convolution of the model) each convolution's layout rule decides, in
one question, among its forms in its untuned blocks, the target's lanes, for the block
its data arrives in (op/conv2d.py conv2d_forms).

Each block of a convolution is a workload of its own (conv2d_nchwc's ic_block and
oc_block), which the log may time. The planner minimises the model's estimated time:
the logged times of the blocks it chooses plus the layout transforms where two layers
meet in different blocks. The graph is cut into layout classes: values that must share
a layout because an op computes in its operands' layout (follow, the pools' window,
concatenate, bias_add: op/layout.py keeps_layout) are one class, so the two inputs of
a residual add, the add and the relu after it are one class and agree on a layout.
Every class has one layout (NCHW or a block dividing all its channels); a convolution
reads one class and writes another, and pays a transform where its block is not its
class's. The classes' layouts are chosen by min-sum variable elimination (min_sum.py):
a ResNet's classes form a chain (a stage's block outputs) with branches that meet again
(each block's inner value), which eliminates exactly and at once.

What the chooser decides per convolution (compiler/graph/strategy/chooser.py, asked once,
with applies=False, over the candidates of the call and of all its forms): whether it
stays NCHW (its NCHW implementation's record is the nearest and fastest, as without a
plan); else which of its forms' records count (those of the tier the chooser took, with
their times). A convolution the log has no record of takes the form its rule would,
in its untuned blocks, its input block that of the class it reads where that divides
its channels (no transform, as without a plan), at no cost of its own.

A transform's cost is estimated from the bytes it reads and writes at
TRANSFORM_BYTES_PER_SECOND; values read or made in NCHW (the model's inputs and
outputs, ops that compute in NCHW only) cost a transform where their class is packed.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ...ir.dtype import numpy_dtype
from .alter_op_layout import ALTER_ATTR, Planned
from ..strategy import chooser
from ..strategy.chooser import choose_implementation, entered, implementations
from ..ir.expr import Call, Constant, Expr, Function, Tuple, TupleGetItem
from ..ir.functor import post_order
from .min_sum import choose
from ..ir.op import Op, get_op_attr
from ..ir.op.layout import block_of, forms_of, channel_blocks, is_packed, packed
from ..ir.ty import TensorType

TRANSFORM_BYTES_PER_SECOND = 4e9
"""The rate at which a layout_transform reads and writes a value, for its estimated
cost: our transforms of ResNet-18's activations of 0.1 to 0.8 MB ran at 2 to 8 GB/s
(read and written) on the 2-core AVX-512 host, those that stay in L2 faster; the
estimate errs on the side of fewer transforms."""


SPLIT_TAIL = 1
"""What a transform right after a convolution costs besides its bytes, in picoseconds,
only to break ties: it takes the convolution's elementwise tail (a relu) out of its
kernel, so of two plans that move the same bytes the one that transforms where its
class is read, the tail fused, is taken."""


def _picoseconds(seconds: float) -> float:
    """`seconds` in whole picoseconds: the planner's costs add up exactly (in float64, up
    to hours), so that equal plans tie exactly and the preferred one is taken."""
    return float(round(seconds * 1e12))


def transform_seconds(nbytes: int) -> float:
    """The estimated time of one layout transform of a value of `nbytes` bytes."""
    return 2 * nbytes / TRANSFORM_BYTES_PER_SECOND


def _nbytes(ty) -> int:
    return int(np.prod(ty.shape, dtype=np.int64)) * numpy_dtype(ty.dtype).itemsize


def _packable(expr: Expr) -> bool:
    return not isinstance(expr, Constant) and isinstance(expr.ty, TensorType) and \
        expr.ty.ndim == 4


@dataclass
class _Layer:
    """A call with forms in blocks: the classes of its data and result, and its states:
    (form, or None for NCHW; picoseconds) in the chooser's order of preference."""
    call: Call
    data: int = -1
    out: int = -1
    states: list = field(default_factory=list)


def _logged_states(call: Call) -> list | None:
    """The states of `call` the log gives: [(None, 0)] when the chooser keeps it NCHW,
    else the forms whose records are of the tier of the chooser's choice, with their
    times; None when nothing of it is logged (its layout rule then decides its form).
    Each implementation's own record is looked up (a question about one candidate); the
    decision among them is one question, asked only when one of them is logged."""
    found = implementations(call, _forms(call, None))
    reports = [chooser.choose([c], applies=False).report if c.workload is not None else None
               for c in found]
    if not any(reports):
        return None
    chosen = chooser.choose(found, applies=False)
    if chosen.candidate.form is None:
        return [(None, 0.0)]
    return [(c.form, _picoseconds(r.seconds)) for c, r in zip(found, reports)
            if c.form is not None and r is not None and r.tier == chosen.report.tier]


def _forms(call: Call, data_block: int | None) -> list:
    """The call's forms in blocks (FORMS_ATTR), for data arriving in `data_block`."""
    return [f for f in forms_of(call, data_block) if f.blocks is not None]


class _Classes:
    """Union-find over the nodes of a graph, with what each class holds: the channels
    of its values and the bytes of those made or read in NCHW."""

    def __init__(self):
        self.parent: dict[int, int] = {}
        self.channels: dict[int, list] = {}
        self.nchw_bytes: dict[int, int] = {}  # node made or read in NCHW -> its bytes

    def add(self, expr: Expr) -> None:
        self.parent.setdefault(id(expr), id(expr))
        if isinstance(expr.ty, TensorType) and expr.ty.ndim == 4:
            self.channels.setdefault(id(expr), [expr.ty.shape[1]])

    def find(self, node: int) -> int:
        while self.parent[node] != node:
            self.parent[node] = self.parent[self.parent[node]]
            node = self.parent[node]
        return node

    def union(self, a: int, b: int) -> None:
        self.parent[self.find(a)] = self.find(b)

    def in_nchw(self, expr: Expr) -> None:
        """`expr` is made or read in NCHW: one transform where its class is packed (one
        however many read it, as AlterOpLayout converts a value once per layout)."""
        self.nchw_bytes[id(expr)] = _nbytes(expr.ty)


def _values(expr: Expr) -> list[Expr]:
    """The 4-D values `expr` is (a tuple literal's fields, through nested tuples)."""
    if isinstance(expr, Tuple):
        return [v for f in expr.fields for v in _values(f)]
    return [expr] if _packable(expr) else []


def _walk(func: Function, layers: dict[int, _Layer]) -> _Classes:
    """The layout classes of `func`'s values (see the module docstring)."""
    classes = _Classes()
    for expr in post_order(func.body):
        if isinstance(expr, Tuple):
            classes.add(expr)
            for v in _values(expr):
                classes.union(id(v), id(expr))
        elif isinstance(expr, TupleGetItem) and isinstance(expr.tuple_value, Tuple):
            classes.add(expr)
            classes.union(id(expr), id(expr.tuple_value))
        elif isinstance(expr, Call) and id(expr) in layers:
            classes.add(expr)
        elif isinstance(expr, Call) and _keeps(expr) and _packable(expr):
            classes.add(expr)
            for v in (v for a in expr.args for v in _values(a)):
                classes.union(id(v), id(expr))
        elif isinstance(expr, Call) or _packable(expr):  # an NCHW op's, or an input
            for v in (v for a in getattr(expr, "args", ()) for v in _values(a)):
                classes.in_nchw(v)
            if _packable(expr):
                classes.add(expr)
                classes.in_nchw(expr)
    for v in _values(func.body):  # the model's results leave in NCHW
        classes.in_nchw(v)
    return classes


def _keeps(call: Call) -> bool:
    return isinstance(call.op, Op) and get_op_attr(call.op.name, ALTER_ATTR) is None and \
        getattr(call.op.layout, "keeps_layout", False)


def _domains(classes: _Classes, layers: list[_Layer]) -> dict[int, list[str]]:
    """Each class's layouts, the preferred first: the target's blocks that divide all its
    channels, the input blocks of the layers that read it where they do (an image's
    one block), NCHW last."""
    channels: dict[int, set] = {}
    for node, found in classes.channels.items():
        channels.setdefault(classes.find(node), set()).update(found)
    domains = {}
    for root, cs in channels.items():
        blocks = [b for c in sorted(cs) for b in channel_blocks(c)]
        blocks += [s[0].blocks[0] for layer in layers if layer.data == root
                   for s in layer.states if s[0] is not None]
        fit = [b for b in dict.fromkeys(blocks) if all(c % b == 0 for c in cs)]
        domains[root] = [packed(b) for b in fit] + ["NCHW"]
    return domains


def _moves(src: str, dst: str, nbytes: int) -> float:
    """The picoseconds of a value of `nbytes` moved from layout `src` to `dst`."""
    return 0.0 if src == dst else _picoseconds(transform_seconds(nbytes))


def _layer_costs(layer: _Layer, into: list[str], out: list[str]) -> tuple:
    """(cost, best state) of `layer` for each layout of the class it reads and of the
    class it writes: the state's time and its transforms in and out."""
    data, result = _nbytes(layer.call.args[0].ty), _nbytes(layer.call.ty)
    cost = np.empty((len(into), len(out)))
    best = np.empty((len(into), len(out)), dtype=int)
    for i, a in enumerate(into):
        for j, b in enumerate(out):
            totals = []
            for form, picoseconds in layer.states:
                reads, writes = (packed(form.blocks[0]), packed(form.blocks[1])) if form \
                    else ("NCHW", "NCHW")
                totals.append(picoseconds + _moves(a, reads, data) +
                              _moves(writes, b, result) + (SPLIT_TAIL if writes != b else 0))
            best[i, j] = int(np.argmin(totals))
            cost[i, j] = totals[best[i, j]]
    return cost, best


def _untuned_states(layer: _Layer, into: list[str]) -> list:
    """The form `layer`'s rule would take for data in each layout of `into`, at no cost:
    the one the chooser takes among its forms in the untuned blocks for that data (as
    op/conv2d.py's rule asks without a plan)."""
    chosen: dict[tuple, object] = {}  # the untuned forms -> the one taken (asked once)
    for a in into:
        forms = _forms(layer.call, block_of(a) if is_packed(a) else None)
        untuned = tuple(f for f in forms if f.blocks == forms[0].blocks)
        if untuned not in chosen:
            chosen[untuned] = choose_implementation(layer.call, untuned,
                                                    applies=False).candidate.form
    return [(form, 0.0) for form in dict.fromkeys(chosen.values())]


def plan_layouts(func: Function) -> dict[int, Planned]:
    """{id(call): Planned} for every call of the typed `func` that has blocks (see the
    module docstring); {} when no chooser is entered or none of them is logged."""
    if not entered():
        return {}
    layers = {}
    for expr in post_order(func.body):
        if isinstance(expr, Call) and isinstance(expr.op, Op) and \
                get_op_attr(expr.op.name, ALTER_ATTR) is None and \
                _packable(expr.args[0]) and _forms(expr, None):
            layers[id(expr)] = _Layer(expr)
    logged = {key: _logged_states(layer.call) for key, layer in layers.items()}
    if not any(logged.values()):
        return {}
    classes = _walk(func, layers)
    for key, layer in layers.items():
        layer.data, layer.out = classes.find(id(layer.call.args[0])), classes.find(key)
        layer.states = logged[key] or []
    domains = _domains(classes, list(layers.values()))
    for layer in layers.values():
        if not layer.states:
            layer.states = _untuned_states(layer, domains[layer.data])
    return _solve(classes, domains, list(layers.values()))


def _solve(classes: _Classes, domains: dict, layers: list[_Layer]) -> dict[int, Planned]:
    """The plan of least estimated time (min_sum.choose over the classes' layouts)."""
    roots = list(domains)
    index = {r: i for i, r in enumerate(roots)}
    factors = []
    for node, nbytes in classes.nchw_bytes.items():
        root = classes.find(node)
        factors.append(((index[root],), np.array(
            [_moves(layout, "NCHW", nbytes) for layout in domains[root]])))
    bests = []
    for layer in layers:
        cost, best = _layer_costs(layer, domains[layer.data], domains[layer.out])
        if layer.data == layer.out:  # it reads and writes one class: the diagonal
            factors.append(((index[layer.data],), np.diagonal(cost).copy()))
        else:
            factors.append(((index[layer.data], index[layer.out]), cost))
        bests.append(best)
    chosen = choose([len(domains[r]) for r in roots], factors)
    if chosen is None:  # too entangled a graph to plan: the untuned rules, locally
        return {}
    plan = {}
    for layer, best in zip(layers, bests):
        i, j = chosen[index[layer.data]], chosen[index[layer.out]]
        form = layer.states[best[i, j]][0]
        plan[id(layer.call)] = Planned(form, domains[layer.out][j])
    return plan
