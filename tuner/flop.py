"""The floating-point operation count of a compute, as autotvm's `compute_flop`: the
work a measured time is divided by to report GFLOPS, so it must not depend on the
schedule, only on what the tensor expressions say.

Each operation of the graph counts once. A placeholder costs nothing. A compute costs
the float operations of its body once per output element; a reduction inside it costs
its source's operations plus its combine (one add for a sum) once per point of its
reduce axes. Integer arithmetic is not counted: it is addressing (indices, the bounds
tests of a padding stage), not the work the operator is asked to do; except te.dot_u8s8,
an int8 kernel's work: four multiply-adds, 8 operations, so that an int8 convolution or
dense counts 2 * multiply-adds as a float one does (reported as GOPS of it; a depthwise
int8 convolution's are float32 multiply-adds of widened bytes, counted as such).
"""
from __future__ import annotations

from compiler.ir.expr import (Add, And, Call, CmpOp, Div, Expr, IntImm, Max, Min, Mul, Or,
                              ProducerLoad, Select, Sub, is_float)
from compiler.ir.functor import children, exists
from compiler.ir.reduce import Reduce
from compiler.lang.tensor import ComputeOp, Tensor

_ARITHMETIC = (Add, Sub, Mul, Div, Min, Max, Call)


def compute_flop(outputs: list[Tensor]) -> int:
    """The number of floating-point operations that compute `outputs` (te Tensors) from
    their placeholders; a matmul of M x K by K x N gives 2 * M * N * K.

    Placeholders among `outputs` count 0, so a template's whole tensor list may be
    passed. Raises ValueError naming the tensor when a shape or a reduce axis is not a
    constant.
    """
    total, seen = 0, set()
    stack = [t.op for t in outputs]
    while stack:
        op = stack.pop()
        if op in seen:
            continue
        seen.add(op)
        if isinstance(op, ComputeOp):
            elements = _constant_product([iv.dom.extent for iv in op.axis],
                                         f"tensor {op.name} has the symbolic shape")
            total += elements * _float_ops(op.body, op.name)
            stack.extend(t.op for t in op.input_tensors())
    return total


def work_unit(outputs: list[Tensor]) -> str:
    """"GOPS" when the compute of `outputs` sums products of 8-bit integers (a reduction
    reading int8 or uint8 values: te.dot_u8s8's words, or a depthwise int8 convolution's
    bytes widened to float32: its work is integer multiply-adds), else "GFLOPS": the
    unit a task's rate is printed in."""
    seen, stack = set(), [t.op for t in outputs]
    while stack:
        op = stack.pop()
        if op in seen or not isinstance(op, ComputeOp):
            continue
        seen.add(op)
        if exists(op.body, lambda e: isinstance(e, Reduce) and exists(
                e.source, lambda v: isinstance(v, ProducerLoad) and v.dtype in _EIGHT_BIT)):
            return "GOPS"
        stack.extend(t.op for t in op.input_tensors())
    return "GFLOPS"


_EIGHT_BIT = ("int8", "uint8")


def _float_ops(e: Expr, tensor: str) -> int:
    """Float operations to evaluate `e` once (a reduction: all of its points)."""
    match e:
        case ProducerLoad():
            return 0  # its indices are integers
        case Reduce(combiner=combiner, source=source, axis=axes, condition=condition):
            points = _constant_product([iv.dom.extent for iv in axes],
                                       f"a reduction of tensor {tensor} has the symbolic extents")
            per_point = _float_ops(source, tensor) + _float_ops(combiner.result, tensor)
            if condition is not None:
                per_point += _float_ops(condition, tensor)
            return points * per_point
        case Select(condition=condition, true_value=t, false_value=f):
            # only the chosen branch runs; autotvm counts the costlier one
            return _float_ops(condition, tensor) + max(_float_ops(t, tensor),
                                                       _float_ops(f, tensor))
        case _:
            return _own_op(e) + sum(_float_ops(c, tensor) for c in children(e))


INT8_DOT_OPS = 8
"""The operations of one te.dot_u8s8: four multiplies and four adds."""


def _own_op(e: Expr) -> int:
    """1 when `e` itself is a float operation (its operands not included), INT8_DOT_OPS
    for an int8 dot product, else 0."""
    if isinstance(e, Call) and e.name == "dot_u8s8":
        return INT8_DOT_OPS
    if isinstance(e, CmpOp):
        return int(not isinstance(e, (And, Or)) and is_float(e.a.dtype))
    return int(isinstance(e, _ARITHMETIC) and is_float(e.dtype))


def _constant_product(extents: list[Expr], what: str) -> int:
    """The product of `extents`; a ValueError saying `what` when one is not a constant."""
    if not all(isinstance(x, IntImm) for x in extents):
        raise ValueError(f"compute_flop: {what} ({', '.join(map(str, extents))}); "
                         f"counting operations needs constant sizes")
    product = 1
    for x in extents:
        product *= x.value
    return product
