"""The operator registry of the graph level (Relay's Op and its attributes).

Each op declares:
- its type relation: the argument types and attrs -> the result type (shape and dtype
  inference); a mismatch raises a GraphTypeError naming the op and the shapes;
- its pattern kind (compiler.ops.OpPattern), which FuseOps reads;
- its attributes and their defaults: a call's attrs are completed from them, and the
  printer shows only the ones that differ (as Relay prints `padding=[0, 0, 0, 0]`);
- its compute (a function of te tensors and attrs), for the build; None until an
  implementation is registered.

Other attributes hang on an op by key (TVM's `register_op_attr`): `target.NAME` is the
check function that says whether the external codegen NAME takes a call of the op
(AnnotateTarget reads it).
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from ..ops.pattern import OpPattern


class GraphTypeError(TypeError):
    """A graph whose types do not check: names the op (or node) and the shapes."""


@dataclass(frozen=True, eq=False)
class Op:
    """A registered operator; see the module docstring."""
    name: str
    type_rel: Callable
    pattern: OpPattern
    defaults: dict = field(default_factory=dict)
    num_inputs: int | None = None
    compute: Callable | None = None

    def __repr__(self):
        return f"Op({self.name})"


_OPS: dict[str, Op] = {}


def register_op(name: str, type_rel: Callable, pattern: OpPattern, defaults=None,
                num_inputs: int | None = None) -> Op:
    """Register (or replace) the op `name`; returns it."""
    _OPS[name] = Op(name, type_rel, pattern, dict(defaults or {}), num_inputs)
    return _OPS[name]


def get_op(name: str) -> Op:
    """The registered op `name` (a KeyError naming the known ops otherwise)."""
    if name not in _OPS:
        raise KeyError(f"no graph op {name!r}; the registered ones are "
                       f"{', '.join(sorted(_OPS))}")
    return _OPS[name]


def registered_ops() -> list[str]:
    return sorted(_OPS)


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
