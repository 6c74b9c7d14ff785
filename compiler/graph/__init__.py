"""The graph level (Relay's ideas, our code): a whole model as a dataflow graph of op
calls, its types, its text form, and the passes that optimize it.

    from compiler import graph
    x = graph.var("x", shape=(1, 64, 56, 56))
    w = graph.var("weight", shape=(64, 64, 3, 3))
    fn = graph.Function([x, w], graph.nn.relu(graph.nn.conv2d(x, w)))
    mod = graph.transform.InferType()(graph.IRModule.from_expr(fn))
    print(mod)

Layout: ty.py (TensorType, TupleType), expr.py (the nodes), op/ (the op registry and
every op, one file per family), infer_type.py, printer.py, transform.py (the passes).
"""
from . import printer, transform  # printer: registers the text form
from ..ir.module import IRModule
from .bind import bind_params
from .build import (GraphModule, build, build_context, build_scope, optimize, optimize_module,
                    prepare)
from .expr import Call, Constant, Expr, Function, Tuple, TupleGetItem, Var, const, var
from .lower import choice_of
from .op import GraphTypeError, Op, get_op, nn, register_op, registered_ops
from .op.layout import layout_transform
from .op.nn import matmul
from .op.reduce import mean, sum
from .op.tensor import (add, clip, divide, exp, maximum, minimum, multiply, negative, sigmoid,
                        sqrt, subtract, tanh)
from .op.transform import concatenate, reshape, transpose
from .ty import TensorType, TupleType

__all__ = ["nn", "printer", "transform", "IRModule", "bind_params",
           "GraphModule", "build", "build_context", "build_scope",
           "optimize", "optimize_module", "prepare",
           "choice_of", "Call", "Constant", "Expr", "Function", "Tuple",
           "TupleGetItem", "Var", "GraphTypeError", "Op", "get_op", "register_op",
           "registered_ops", "add", "clip", "concatenate", "const", "divide", "exp",
           "layout_transform", "matmul", "maximum", "mean", "minimum", "multiply", "negative",
           "reshape", "sigmoid", "sqrt", "subtract", "sum", "tanh", "transpose", "var",
           "TensorType", "TupleType"]
