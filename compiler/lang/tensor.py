"""Tensors and the operations that produce them: placeholder, compute, reduce_axis.

An Operation owns its root IterVars (`axis` and `reduce_axis`); a Tensor is one output
of an Operation. Indexing a Tensor (`A[i, j]`) makes a ProducerLoad expression (an IR
node, compiler/ir/expr.py).
"""
from __future__ import annotations

import inspect
import weakref

from ..ir.expr import Expr, IntImm, ProducerLoad, Var, check_dtype, const, convert, is_int
from ..ir.functor import collect
from ..ir.range import Range
from ..ir.reduce import Reduce


DATA_PAR, REDUCE = "data_par", "reduce"
# Vars of reduce axes, so that compute() can reject one used outside its reduction.
REDUCE_VARS: weakref.WeakSet[Var] = weakref.WeakSet()

_ARITH = ("add", "radd", "sub", "rsub", "mul", "rmul", "floordiv", "rfloordiv",
          "mod", "rmod", "truediv", "rtruediv", "lt", "le", "gt", "ge", "neg")


class IterVar:
    """An iteration variable: a loop of a stage with its domain `dom` and its kind.

    Axes made by compute and reduce_axis have a meaningful `dom`; those made by split
    and fuse do not (bound inference gives their ranges). Arithmetic on an IterVar
    works on its `var`, so `y + ry` reads as in TVM.
    """

    __slots__ = ("dom", "var", "iter_type")

    def __init__(self, dom: Range | None, var: Var, iter_type: str = DATA_PAR):
        self.dom, self.var, self.iter_type = dom, var, iter_type

    @property
    def name(self) -> str:
        return self.var.name

    def __repr__(self):
        dom = f", {self.dom.min}, {self.dom.extent}" if self.dom else ""
        return f"IterVar({self.var.name}{dom}, {self.iter_type})"


for _op in _ARITH:
    setattr(IterVar, f"__{_op}__",
            (lambda name: lambda self, *o: getattr(self.var, f"__{name}__")(*o))(_op))


class Operation:
    """Base of PlaceholderOp and ComputeOp."""

    name: str

    def output(self, index: int = 0) -> Tensor:
        return self.outputs[index]

    def input_tensors(self) -> list[Tensor]:
        return []

    def __repr__(self):
        return f"{type(self).__name__}({self.name})"


class PlaceholderOp(Operation):
    def __init__(self, name: str, shape: tuple, dtype: str):
        self.name, self.shape, self.dtype = name, shape, dtype
        self.axis, self.reduce_axis = [], []
        self.outputs = [Tensor(self, 0, shape, dtype)]


class ComputeOp(Operation):
    """`out[axis] = body`, where the body may be one top-level reduction."""

    def __init__(self, name, tag, attrs, axis, body: Expr):
        self.name, self.tag, self.attrs = name, tag, dict(attrs or {})
        self.axis = list(axis)
        self.body = body
        self.reduce_axis = list(body.axis) if isinstance(body, Reduce) else []
        shape = tuple(iv.dom.extent for iv in self.axis)
        self.outputs = [Tensor(self, 0, shape, body.dtype)]

    @property
    def root_iter_vars(self) -> list[IterVar]:
        return self.axis + self.reduce_axis

    def input_tensors(self) -> list[Tensor]:
        seen = {}
        for load in collect(self.body, lambda e: isinstance(e, ProducerLoad)):
            seen.setdefault(load.producer, None)
        return list(seen)


class Tensor:
    """One output of an operation. `A[i, j]` reads it inside another compute."""

    __slots__ = ("op", "value_index", "shape", "dtype")

    def __init__(self, op: Operation, value_index: int, shape: tuple, dtype: str):
        self.op, self.value_index, self.shape, self.dtype = op, value_index, shape, dtype

    @property
    def name(self) -> str:
        return self.op.name

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def __getitem__(self, indices) -> ProducerLoad:
        if not isinstance(indices, tuple):
            indices = (indices,)
        if len(indices) != len(self.shape):
            raise IndexError(
                f"tensor {self.name} has {len(self.shape)} dimensions but was indexed "
                f"with {len(indices)} indices")
        idx = []
        for pos, i in enumerate(indices):
            e = convert(i)
            if not is_int(e.dtype):
                raise TypeError(f"index {pos} of tensor {self.name} is {e} of dtype "
                                f"{e.dtype}; indices must be integers")
            idx.append(e)
        return ProducerLoad(self, tuple(idx))

    def __repr__(self):
        return f"Tensor({self.name}, shape={list(map(str, self.shape))}, {self.dtype})"


def var(name: str = "n", dtype: str = "int32") -> Var:
    """A symbolic scalar, typically a size: `n = te.var("n"); te.placeholder((n,))`."""
    return Var(name, check_dtype(dtype))


def _shape(shape, what: str) -> tuple:
    if not isinstance(shape, (tuple, list)):
        shape = (shape,)
    out = []
    for d in shape:
        e = convert(d)
        if isinstance(e, IntImm) and e.value <= 0:
            raise ValueError(f"{what}: every dimension must be positive, got {list(shape)}")
        out.append(e)
    return tuple(out)


def placeholder(shape, name: str = "placeholder", dtype: str = "float32") -> Tensor:
    """An input tensor of the given shape (ints or te.var sizes) and dtype."""
    return PlaceholderOp(name, _shape(shape, f"placeholder {name}"), check_dtype(dtype)).output(0)


def reduce_axis(dom, name: str = "rv") -> IterVar:
    """A reduction axis over [lo, hi): `k = te.reduce_axis((0, K), name="k")`."""
    if not (isinstance(dom, (tuple, list)) and len(dom) == 2):
        raise ValueError(f"reduce_axis {name}: dom must be (lo, hi), got {dom!r}")
    iv = IterVar(Range.make(dom[0], dom[1]), Var(name), REDUCE)
    REDUCE_VARS.add(iv.var)
    return iv


def compute(shape, fcompute, name: str = "compute", tag: str = "", attrs=None) -> Tensor:
    """A tensor whose element at each index is `fcompute(*index)`.

    `fcompute` takes one argument per dimension (named like its parameters) and
    returns an expression; a reduction (te.sum, ...) may appear only at the top.
    """
    shape = _shape(shape, f"compute {name}")
    params = list(inspect.signature(fcompute).parameters.values())
    if params and params[0].kind is inspect.Parameter.VAR_POSITIONAL:
        names = [f"i{d}" for d in range(len(shape))]
    else:
        names = [p.name for p in params]
        if len(names) != len(shape):
            raise ValueError(f"compute {name}: fcompute takes {len(names)} arguments but "
                             f"the shape has {len(shape)} dimensions")
    axis = [IterVar(Range(const(0), d), Var(n)) for n, d in zip(names, shape)]
    body = convert(fcompute(*[iv.var for iv in axis]))
    if isinstance(body, (tuple, list)):
        raise ValueError(f"compute {name}: multiple outputs are not supported")
    check_reduce_usage(body, name)
    if isinstance(body, Reduce) and body.dtype == "bool":
        raise TypeError(f"compute {name}: cannot reduce booleans")
    return ComputeOp(name, tag, attrs, axis, body).output(0)


def check_reduce_usage(body: Expr, stage: str) -> None:
    """Reject a reduction that is not the whole body, and a reduce_axis used outside one."""
    top = body if isinstance(body, Reduce) else None
    inner = [e for e in collect(body, lambda e: isinstance(e, Reduce)) if e is not top]
    if inner:
        raise ValueError(f"compute {stage}: a reduction must be the whole body of the "
                         f"compute, not part of an expression ({inner[0]})")
    bound = {iv.var for iv in top.axis} if top is not None else set()
    parts = [body] if top is None else [top.source] + [c for c in [top.condition] if c is not None]
    for part in parts:
        for v in collect(part, lambda e: isinstance(e, Var) and e in REDUCE_VARS):
            if v not in bound:
                raise ValueError(f"compute {stage}: reduce_axis {v.name} is used outside a "
                                 f"reduction over it; wrap the expression in te.sum(..., "
                                 f"axis={v.name}) or another reducer")
