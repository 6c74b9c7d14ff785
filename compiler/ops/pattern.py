"""Operator pattern kinds: what a graph-level fuser needs to know about an operator.

The kinds and their order are TVM's `OpPatternKind` (relay/op_attr_types.h): a smaller
kind fuses into a larger one, so a fuser compares them with `<=`, e.g. "everything up to
INJECTIVE can be inlined into a reduction", "an OUT_ELEMWISE_FUSABLE op (conv2d) takes
ELEMWISE / BROADCAST consumers into its output loops".

Every operator in `compiler.ops` declares its kind with `@register_pattern(kind)`. The
kind is then known three ways:
  - by name: `pattern_of("conv2d_nchw")`;
  - on the function: `ops.conv2d_nchw.pattern`;
  - on what it produced: `pattern_kind(out)` for the tensor an operator returned. The
    decorator writes the operator's name into the output ComputeOp's `tag` and its
    kind into `attrs["pattern"]`, which ComputeOp keeps through cache_read/cache_write.
An operator built from other operators (softmax from max, subtract, exp, sum, divide)
leaves its inner stages tagged with their own kinds; only its output carries its kind.
"""
from __future__ import annotations

import functools
from enum import IntEnum

from ..lang.tensor import ComputeOp, Tensor


class OpPattern(IntEnum):
    """How an operator's output indices map to its inputs; the values are TVM's."""
    ELEMWISE = 0              # out[i] = f(in[i]) on equal shapes
    BROADCAST = 1             # out[i, j] = f(in[j]): input axes map to output axes in order
    INJECTIVE = 2             # each output element reads one input element (pad, transpose)
    COMM_REDUCE = 3           # a commutative reduction (sum, max)
    OUT_ELEMWISE_FUSABLE = 4  # complex (conv2d, dense); elementwise consumers fuse into it
    OPAQUE = 8                # fuses with nothing (softmax: several reductions in sequence)


PATTERN_ATTR = "pattern"
_REGISTRY: dict[str, OpPattern] = {}


def register_pattern(kind: OpPattern):
    """Decorator declaring the pattern kind of an operator function.

    Registers `kind` under the function's name, sets `fn.pattern`, and tags the
    ComputeOp of every tensor the function returns (see the module docstring).
    """
    def wrap(fn):
        name = fn.__name__
        if name in _REGISTRY:
            raise ValueError(f"operator {name} is registered twice")
        _REGISTRY[name] = kind

        @functools.wraps(fn)
        def op(*args, **kwargs):
            out = fn(*args, **kwargs)
            out.op.tag = name
            out.op.attrs[PATTERN_ATTR] = kind
            return out

        op.pattern = kind
        return op
    return wrap


def pattern_of(op_name: str) -> OpPattern:
    """The pattern kind registered for the operator named `op_name` (e.g. "dense")."""
    if op_name not in _REGISTRY:
        raise KeyError(f"no operator named {op_name!r}; known: {', '.join(sorted(_REGISTRY))}")
    return _REGISTRY[op_name]


def pattern_kind(tensor: Tensor) -> OpPattern:
    """The pattern kind of the operation that produced `tensor`.

    A compute written directly with te.compute declares nothing and is OPAQUE, the kind
    a fuser can never get wrong. A placeholder is an input, not an operation: ValueError.
    """
    if not isinstance(tensor.op, ComputeOp):
        raise ValueError(f"pattern_kind: {tensor.name} is an input (placeholder); only "
                         f"computed tensors have a pattern kind")
    return OpPattern(tensor.op.attrs.get(PATTERN_ATTR, OpPattern.OPAQUE))
