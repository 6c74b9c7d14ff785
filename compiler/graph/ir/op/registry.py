"""The operator registry of the graph level (Relay's Op and its attributes): one entry per
op, holding everything the compiler needs of it, so that the passes are walkers that
ask the op and never branch on its name.

Each op declares, in its family's file (nn.py, conv2d.py, pool.py, tensor.py,
reduce.py, transform.py, layout.py, annotation.py):
- type_rel: the argument types and attrs -> the result type (shape and dtype inference);
  a mismatch raises a GraphTypeError naming the op and the shapes;
- pattern: its pattern kind (compiler.ops.OpPattern), which FuseOps reads;
- defaults: its attributes and their defaults: a call's attrs are completed from them,
  and the printer shows only the ones that differ;
- compute: `compute(inputs, attrs, out_type) -> te.Tensor`, its te compute for the build
  (a tuple argument arrives as a tuple of tensors); or, for an op that a pass always
  rewrites before lowering, a string saying which (nn.batch_norm: SimplifyInference);
- reference: `reference(arrays, attrs) -> ndarray` (or a tuple of them), what it means in
  numpy: FoldConstant evaluates with it and tests hold built models against it;
- layout: its layout rule, `rule(ctx, call) -> Expr | None`: what it does when an
  operand comes packed (NCHW[x]c) in AlterOpLayout (layout_rules.py: `follow` its
  input's layout, `needs_nchw`, or a rule of its own; ctx is the pass's view of the
  layouts, alter_op_layout.LayoutContext);
- schedule: `schedule(out, anchor, call) -> Schedule`, the default schedule of a kernel
  whose anchor it is (the lowest-priority strategy: a registered strategy that covers
  the call comes first); `default_schedule` (compiler.ops') unless it has its own;
- samples: `samples() -> [(argument types, attrs), ...]`, the calls the registry's
  conformance test builds and checks against the reference, every rank the type
  relation accepts; ops of one or two same-shaped tensors get `tensor_samples`.

Other attributes hang on an op by key (TVM's `register_op_attr`): `target.NAME` is the
check function that says whether the external codegen NAME takes a call of the op
(AnnotateTarget reads it); `alter_op_layout` is a user's alteration
(alter_op_layout.register_alter_op_layout).
"""
from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass, field

from .... import ops
from ....ops.pattern import OpPattern
from ..expr import Call
from ..ty import TensorType


class GraphTypeError(TypeError):
    """A graph whose types do not check: names the op (or node) and the shapes."""


def needs_nchw(ctx, call):
    """The layout rule of an op that computes in NCHW only: AlterOpLayout converts its
    packed operands back (the rule proposes nothing)."""
    return None


def default_schedule(out, anchor, call):
    """compiler.ops' default schedule of a kernel (see Op.schedule)."""
    return ops.default_schedule(out)


ODD = (7, 13, 37)
"""The odd extents the samples are made of."""
IMAGE = (1, 16, 7, 13)
"""An NCHW sample whose channels pack in blocks of 8 and 16."""


def tensor_samples(n: int, dtype: str = "float32") -> Callable[[], list]:
    """Samples of `n` tensors of one shape, of every rank from 1 to 5 (odd extents), and,
    for two, the second broadcast along the first axes; and an image of 16 channels
    (1, 16, 7, 13), which a packed layout can hold, with a per-channel operand for two."""
    def samples():
        found = []
        for rank in range(1, 6):
            shape = tuple(itertools.islice(itertools.cycle(ODD), rank))
            found.append(([TensorType(shape, dtype)] * n, {}))
            if n == 2 and rank > 1:
                found.append(([TensorType(shape, dtype), TensorType(shape[1:], dtype)], {}))
        image = TensorType(IMAGE, dtype)
        found.append(([image] * n, {}))
        if n == 2:
            found.append(([image, TensorType((IMAGE[1], 1, 1), dtype)], {}))
        return found
    return samples


@dataclass(frozen=True, eq=False)
class Op:
    """A registered operator; see the module docstring."""
    name: str
    type_rel: Callable
    pattern: OpPattern
    defaults: dict = field(default_factory=dict)
    num_inputs: int | None = None
    compute: Callable | str | None = None
    reference: Callable | None = None
    layout: Callable | None = None
    schedule: Callable | None = default_schedule
    samples: Callable | None = None

    def __repr__(self):
        return f"Op({self.name})"


PARTS = ("type_rel", "compute", "reference", "layout", "schedule", "samples")
"""The parts every op must have (missing_parts checks them)."""

_OPS: dict[str, Op] = {}


def register_op(name: str, type_rel: Callable, pattern: OpPattern, defaults=None,
                num_inputs: int | None = None, *, compute=None, reference=None, layout=None,
                schedule=default_schedule, samples=None) -> Op:
    """Register (or replace) the op `name` with its parts (see the module docstring);
    returns it. `samples` defaults to tensor_samples(num_inputs) for ops of one or two
    tensors."""
    if samples is None and num_inputs in (1, 2):
        samples = tensor_samples(num_inputs)
    _OPS[name] = Op(name, type_rel, pattern, dict(defaults or {}), num_inputs, compute,
                    reference, layout, schedule, samples)
    return _OPS[name]


def missing_parts(op: Op) -> list[str]:
    """The parts of PARTS that `op` lacks (a compute given as a string counts: it says
    which pass removes the op before lowering)."""
    return [p for p in PARTS if getattr(op, p) is None or p == "compute" and
            isinstance(op.compute, str) and not op.compute.strip()]


def get_op(name: str) -> Op:
    """The registered op `name` (a KeyError naming the known ops otherwise)."""
    if name not in _OPS:
        raise KeyError(f"no graph op {name!r}; the registered ones are "
                       f"{', '.join(sorted(_OPS))}")
    return _OPS[name]


def registered_ops() -> list[str]:
    return sorted(_OPS)


def call(name: str, args, **attrs) -> Call:
    """A call of the registered op `name`, its attrs completed from the op's defaults; an
    attribute the op does not have is a TypeError naming both."""
    op = get_op(name)
    unknown = set(attrs) - set(op.defaults)
    if unknown:
        raise TypeError(f"{name}: unknown attribute(s) {', '.join(sorted(unknown))}; it has "
                        f"{', '.join(op.defaults) or 'none'}")
    return Call(op, tuple(args), {**op.defaults, **attrs})


_ATTRS: dict[tuple[str, str], object] = {}


def register_op_attr(op_name: str, key: str, value=None):
    """Hang `value` on the op `op_name` under `key` (e.g. "target.cblas": a function of
    the call that says whether the cblas codegen takes it). Without a value it is a
    decorator: `@register_op_attr("nn.dense", "target.cblas")`."""
    get_op(op_name)  # a KeyError naming the known ops for a misspelt one

    def register(v):
        _ATTRS[(op_name, key)] = v
        return v
    return register if value is None else register(value)


def get_op_attr(op_name: str, key: str, default=None):
    """The value registered on `op_name` under `key`, or `default`."""
    return _ATTRS.get((op_name, key), default)


def reset_op_attr(op_name: str, key: str) -> None:
    """Take back what register_op_attr hung on `op_name` under `key` (TVM's
    Op.reset_attr), if anything."""
    _ATTRS.pop((op_name, key), None)
