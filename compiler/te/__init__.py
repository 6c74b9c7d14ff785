"""The tensor-expression language: say *what* to compute, then schedule *how*.

Names follow TVM's `tvm.te`: placeholder, compute, reduce_axis, var, sum / max / min,
comm_reducer, if_then_else, create_schedule.
"""
from .expr import Expr, Var, const
from .intrin import (abs, all, any, cast, ceil, exp, floor, floordiv, floormod, if_then_else,
                     log, max, min, power, select, sigmoid, sqrt, sum, tanh, truncdiv, truncmod)
from .reduce import CommReducer, Reduce, comm_reducer
from .tensor import (ComputeOp, IterVar, PlaceholderOp, ProducerLoad, Range, Tensor, compute,
                     placeholder, reduce_axis, var)
from ..schedule.schedule import Schedule, create_schedule

__all__ = [
    "Expr", "Var", "const", "abs", "all", "any", "cast", "ceil", "exp", "floor", "floordiv",
    "floormod", "if_then_else", "log", "max", "min", "power", "select", "sigmoid", "sqrt",
    "sum", "tanh", "truncdiv", "truncmod", "CommReducer", "Reduce", "comm_reducer",
    "ComputeOp", "IterVar", "PlaceholderOp", "ProducerLoad", "Range", "Tensor", "compute",
    "placeholder", "reduce_axis", "var", "Schedule", "create_schedule",
]
