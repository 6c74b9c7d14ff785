"""BYOC's region marks as ops (TVM's `annotation.compiler_begin` / `compiler_end`): the
value of the argument, unchanged; PartitionGraph removes them before the build lowers
anything (compiler/graph/passes/annotation.py reads and writes regions through them)."""
from __future__ import annotations

from ....ops.pattern import OpPattern
from ..expr import Call, Expr
from .registry import GraphTypeError, get_op, needs_nchw, register_op

BEGIN, END = "annotation.compiler_begin", "annotation.compiler_end"


def _same_type(types, attrs):
    """An annotation's value is its argument's, tensor or tuple."""
    if len(types) != 1:
        raise GraphTypeError(f"an annotation takes one argument, got {len(types)}")
    return types[0]


for _name in (BEGIN, END):
    register_op(_name, _same_type, OpPattern.OPAQUE, {"compiler": ""}, 1,
                compute="PartitionGraph removes BYOC's region marks before lowering",
                reference=lambda a, at: a[0], layout=needs_nchw)


def compiler_begin(value: Expr, compiler: str) -> Call:
    return Call(get_op(BEGIN), (value,), {"compiler": compiler}, value.ty)


def compiler_end(value: Expr, compiler: str) -> Call:
    return Call(get_op(END), (value,), {"compiler": compiler}, value.ty)
