"""The graph level (Relay's ideas, our code): a whole model as a dataflow graph of op
calls, its types, its text form, and the passes that optimize it.

    from compiler import graph
    x = graph.var("x", shape=(1, 64, 56, 56))
    w = graph.var("weight", shape=(64, 64, 3, 3))
    fn = graph.Function([x, w], graph.nn.relu(graph.nn.conv2d(x, w)))
    mod = graph.transform.InferType()(graph.IRModule.from_expr(fn))
    print(mod)

Layout: ty.py (TensorType, TupleType), expr.py (the nodes), op.py (the op registry),
relations.py (shared type relations), tensor_ops.py and nn.py (the ops and their
constructors), infer_type.py, printer.py, transform.py (the passes).
"""
from . import nn, printer, tensor_ops, transform  # printer: registers the text form
from ..ir.module import IRModule
from .bind import bind_params
from .build import GraphModule, build, optimize, optimize_module, prepare
from .expr import Call, Constant, Expr, Function, Tuple, TupleGetItem, Var
from .lower import implementation_of
from .op import GraphTypeError, Op, get_op, register_op, registered_ops
from .tensor_ops import (add, clip, concatenate, const, divide, exp, layout_transform, matmul,
                         mean, multiply, reshape, sigmoid, subtract, sum, tanh, transpose, var)
from .ty import TensorType, TupleType

__all__ = ["nn", "printer", "tensor_ops", "transform", "IRModule", "bind_params",
           "GraphModule", "build", "optimize", "optimize_module", "prepare",
           "implementation_of", "Call", "Constant", "Expr", "Function", "Tuple",
           "TupleGetItem", "Var", "GraphTypeError", "Op", "get_op", "register_op",
           "registered_ops", "add", "clip", "concatenate", "const", "divide", "exp",
           "layout_transform", "matmul", "mean", "multiply", "reshape", "sigmoid",
           "subtract", "sum", "tanh", "transpose", "var", "TensorType", "TupleType"]
