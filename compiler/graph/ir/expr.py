"""The graph level's expressions (Relay's dataflow IR): Var, Constant, Call, Tuple,
TupleGetItem, Function and GlobalVar (a call of a function the module holds by name:
PartitionGraph's external functions).

Nodes are immutable and compared by identity: a graph is a DAG in which one node may be
the argument of several calls (the same `%1` used twice), and two equal-looking nodes
are still two computations until EliminateCommonSubexpr merges them. `ty` is a node's
checked type: None until InferType, which returns new nodes that carry it. Printing
goes through printer.py (registered in TEXT).
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

import numpy as np

from ...ir.dtype import numpy_dtype
from ...ir.module import BaseFunc
from .ty import FuncType, TensorType, TupleType


# The text form, filled in by printer.py when the package is imported (the printer
# reads these nodes, so they cannot import it).
TEXT: dict = {}


class Expr:
    """Base of the graph expressions."""
    ty = None

    def __str__(self):
        return TEXT["expr"](self)


@dataclass(frozen=True, eq=False)
class Var(Expr):
    """A function parameter: its name (printed `%name`) and its type."""
    name: str
    type_annotation: TensorType | TupleType

    @property
    def ty(self):
        return self.type_annotation


@dataclass(frozen=True, eq=False)
class Constant(Expr):
    """A numpy array held in the graph (a weight, a folded value)."""
    data: np.ndarray

    def __post_init__(self):
        data = self.data
        if not (isinstance(data, np.ndarray) and unwritable(data)):
            data = np.array(data)  # else a copy: the graph owns its constants
            data.setflags(write=False)
        object.__setattr__(self, "data", data)
        # made once: every pass types the graph again, and naming a numpy dtype is slow
        object.__setattr__(self, "_type", TensorType(data.shape, str(data.dtype)))

    @property
    def ty(self) -> TensorType:
        return self._type


def unwritable(data: np.ndarray) -> bool:
    """Whether no one can write `data`'s elements, so that a constant takes it as it is
    (no copy: a model's weights are hundreds of megabytes, copied at each fold): it is
    read-only, and so is every array it views, down to an owner that is a read-only
    array or a bytes object (an ONNX initializer's raw data, viewed by np.frombuffer).
    A transpose or reshape folded from a constant is such a view."""
    while True:
        if data.flags.writeable:
            return False
        base = data.base
        if base is None:
            return data.flags.owndata
        if isinstance(base, bytes):
            return True
        if not isinstance(base, np.ndarray):
            return False  # a memoryview, an mmap, a foreign buffer: maybe writable
        data = base


def _frozen(attrs) -> Mapping:
    return MappingProxyType(dict(attrs or {}))


@dataclass(frozen=True, eq=False)
class GlobalVar(Expr):
    """A module's function by its name (printed `@name`), with its type: a call of it
    is typed without the module at hand."""
    name: str
    ty: FuncType

    def __post_init__(self):
        if not isinstance(self.ty, FuncType):
            raise TypeError(f"GlobalVar @{self.name}: its type must be a FuncType, "
                            f"not {self.ty!r}")


@dataclass(frozen=True, eq=False)
class Call(Expr):
    """`op(*args, **attrs)`: op is an Op of the registry, a Function (a fused group's
    call) or a GlobalVar (a call of a module's function). ty: the result's type once
    inferred."""
    op: object
    args: tuple
    attrs: Mapping = field(default_factory=dict)
    ty: object = None

    def __post_init__(self):
        object.__setattr__(self, "args", tuple(self.args))
        object.__setattr__(self, "attrs", _frozen(self.attrs))
        for i, arg in enumerate(self.args):
            if not isinstance(arg, Expr):
                raise TypeError(f"{_op_name(self.op)}: argument {i} is a "
                                f"{type(arg).__name__}, not a graph expression")


@dataclass(frozen=True, eq=False)
class Tuple(Expr):
    """A tuple of expressions (several outputs, concatenate's inputs)."""
    fields: tuple
    ty: object = None

    def __post_init__(self):
        object.__setattr__(self, "fields", tuple(self.fields))


@dataclass(frozen=True, eq=False)
class TupleGetItem(Expr):
    """Field `index` of a tuple-valued expression (batch_norm's first output)."""
    tuple_value: Expr
    index: int
    ty: object = None


@dataclass(frozen=True, eq=False)
class Function(Expr, BaseFunc):
    """`fn (params) { body }`. attrs: e.g. Primitive=1 on a fused group. ret_type: the
    body's type once inferred (None before)."""
    params: tuple
    body: Expr
    ret_type: object = None
    attrs: Mapping = field(default_factory=dict)

    def __post_init__(self):
        object.__setattr__(self, "params", tuple(self.params))
        object.__setattr__(self, "attrs", _frozen(self.attrs))
        for p in self.params:
            if not isinstance(p, Var):
                raise TypeError(f"Function: parameter {p!r} is not a Var")

    def script(self, name: str) -> str:
        return TEXT["function"](self, name)


def _op_name(op) -> str:
    return getattr(op, "name", type(op).__name__)


def var(name: str, type_annotation=None, shape=None, dtype: str = "float32") -> Var:
    """A parameter: `var("x", shape=(1, 3, 224, 224))` or `var("x", TensorType(...))`."""
    if type_annotation is None:
        if shape is None:
            raise TypeError(f"var {name!r}: give a shape or a type")
        type_annotation = TensorType(shape, dtype)
    return Var(name, type_annotation)


def const(value, dtype: str | None = None) -> Constant:
    """A constant from a numpy array or a Python scalar (float32 for a float, int32 for
    an int, unless `dtype` says)."""
    if dtype is None and not isinstance(value, np.ndarray):
        dtype = "float32" if isinstance(value, float) else \
            "int32" if isinstance(value, int) else None
    return Constant(np.asarray(value, dtype=numpy_dtype(dtype) if dtype else None))
