"""The tensor-expression language: say *what* to compute, then schedule *how*.

Names follow TVM's `tvm.te`: placeholder, compute, reduce_axis, var, const, sum / max /
min, comm_reducer, if_then_else, create_schedule. This is the language's public
namespace only, a floor above compiler/schedule: the language itself is compiler/lang
(below the schedules, which build on its tensors), the expression nodes (Expr, Var,
Range, Reduce, ...) live in compiler/ir, and all are handed on here, where TVM users
find them.
"""
from .ir.expr import Expr, ProducerLoad, Var, const
from .ir.range import Range
from .ir.reduce import CommReducer, Reduce
from .lang.intrin import (abs, all, any, cast, ceil, cos, dot_u8s8, erf, exp, floor, floordiv,
                          floormod, if_then_else, log, max, min, power, round, select, sigmoid,
                          sin, sqrt, sum, tanh, truncdiv, truncmod)
from .lang.reduce import comm_reducer, max_value, min_value
from .lang.tensor import (ComputeOp, IterVar, PlaceholderOp, Tensor, compute, placeholder,
                          reduce_axis, var)
from .schedule.schedule import Schedule, create_schedule

__all__ = [
    "Expr", "Var", "const", "abs", "all", "any", "cast", "ceil", "cos", "dot_u8s8", "erf", "exp",
    "floor",
    "floordiv", "floormod", "if_then_else", "log", "max", "min", "power", "round", "select",
    "sigmoid",
    "sin", "sqrt", "sum", "tanh", "truncdiv", "truncmod", "CommReducer", "Reduce",
    "comm_reducer", "min_value", "max_value", "ComputeOp", "IterVar", "PlaceholderOp",
    "ProducerLoad", "Range", "Tensor", "compute", "placeholder", "reduce_axis", "var",
    "Schedule", "create_schedule",
]
