"""Loop IR: the statements that schedule_ops produces and codegen consumes.

Before storage flattening, tensors are written with ProducerStore inside Realize
regions (multi-dimensional, as in the reference's `realize C([dj, 1], [dk, 1])`).
After flattening they are Buffers with Load / Store on one flat index, and every
intermediate has an Allocate whose size bound inference decided.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .expr import Expr, IntImm, Var, const, convert
from .node import Node, node, text

SERIAL, PARALLEL, VECTORIZED, UNROLLED = "serial", "parallel", "vectorized", "unrolled"


class Stmt(Node):
    """Base of every statement; subclasses are frozen dataclasses."""

    __slots__ = ()


@dataclass(frozen=True, eq=False)
class Buffer:
    """A flat memory region: `shape` gives the strides (row-major), `scope` where it lives."""
    name: str
    dtype: str
    shape: tuple
    scope: str = "global"

    @property
    def elements(self) -> Expr:
        """The number of elements: the product of the shape, its constant dimensions
        folded (an Allocate's size; the dimensions come simplified from the pass that
        made the buffer, as the simplifier, compiler/arith, stands on this floor)."""
        count, symbolic = 1, None
        for d in map(convert, self.shape):
            if isinstance(d, IntImm):
                count *= d.value
            else:
                symbolic = d if symbolic is None else symbolic * d
        if symbolic is None or count == 0:
            return const(count)
        return symbolic if count == 1 else symbolic * count

    def __repr__(self):
        return f"Buffer({self.name}, {self.dtype}, {list(map(str, self.shape))})"


@node
class Store(Stmt):
    buffer: Buffer
    index: Expr
    value: Expr


@node
class ProducerStore(Stmt):
    """A write of a tensor element (`producer`, a te.Tensor), before buffers exist."""
    producer: Any
    indices: tuple
    value: Expr


@node
class Realize(Stmt):
    """The region `bounds` (Ranges) of `producer` must exist while `body` runs."""
    producer: Any
    bounds: tuple
    body: Stmt
    scope: str = "global"


@node
class For(Stmt):
    """`for loop_var in [min, min + extent)`, run as `kind` (serial, parallel, ...)."""
    loop_var: Var
    min: Expr
    extent: Expr
    kind: str
    body: Stmt
    pragmas: tuple = ()


@node
class Allocate(Stmt):
    buffer: Buffer
    body: Stmt


@node
class IfThenElse(Stmt):
    condition: Expr
    then_case: Stmt
    else_case: Stmt | None = None


@node
class LetStmt(Stmt):
    var: Var
    value: Expr
    body: Stmt


@node
class SeqStmt(Stmt):
    seq: tuple


@node
class Evaluate(Stmt):
    value: Expr


def seq(*stmts) -> Stmt:
    """A SeqStmt of the non-empty statements, flattened; a single one stands alone."""
    flat = []
    for s in stmts:
        if s is None:
            continue
        flat.extend(s.seq if isinstance(s, SeqStmt) else [s])
    return flat[0] if len(flat) == 1 else SeqStmt(tuple(flat))


@dataclass(frozen=True, eq=False)
class PrimFunc:
    """A lowered function: buffers in argument order, the body, and its symbolic sizes.

    `attrs` carries what a pass needs beyond the IR, e.g. before StorageFlatten the
    Buffer of each argument tensor (`arg_buffers`) and the bounds of the sizes.
    """
    name: str
    params: tuple
    body: Stmt
    size_vars: tuple = ()
    attrs: dict = field(default_factory=dict)

    def __str__(self):
        return text(self)

    __repr__ = __str__


__all__ = ["Stmt", "Buffer", "Store", "ProducerStore", "Realize", "For", "Allocate", "IfThenElse",
           "LetStmt", "SeqStmt", "Evaluate", "PrimFunc", "seq",
           "SERIAL", "PARALLEL", "VECTORIZED", "UNROLLED"]
