"""The graph level (Relay's ideas, our code): a whole model as a dataflow graph of op
calls, its types, its text form, and the passes that optimize it.

    from compiler import graph
    x = graph.var("x", shape=(1, 64, 56, 56))
    w = graph.var("weight", shape=(64, 64, 3, 3))
    fn = graph.Function([x, w], graph.nn.relu(graph.nn.conv2d(x, w)))
    mod = graph.passes.InferType()(graph.IRModule.from_expr(fn))
    print(mod)

Folders, each standing on the ones before it:
    ir/        the graph's IR: ty.py (TensorType, TupleType), expr.py (the nodes),
               functor.py (the walks), op/ (the op registry and every op, one file per
               family), infer_type.py, printer.py, bind.py, reference.py (numpy
               evaluation)
    strategy/  how a call may be implemented (op strategies: Candidate) and which way
               it is (chooser.py)
    passes/    the passes (Relay's relay.transform): the pass constructors in
               __init__.py, each pass in a module of its own (FuseOps, AlterOpLayout and
               the layout planner, FoldScaleAxis, the BYOC partitioning, ...)
    backend/   a fused graph to native code: lower.py (a fused function to one
               kernel), build.py (the whole build and the executor), external.py (the
               external codegens' registry)
"""
from . import passes
from ..ir.module import IRModule
from .backend.build import (GraphModule, build, build_context, build_scope, optimize,
                            optimize_module, prepare)
from .backend.lower import choice_of
from .ir import op, printer  # op: the op namespace (Relay's relay.op); printer: the text form
from .ir.bind import bind_params
from .ir.expr import Call, Constant, Expr, Function, Tuple, TupleGetItem, Var, const, var
from .ir.op import GraphTypeError, Op, get_op, nn, register_op, registered_ops
from .ir.op.layout import layout_transform
from .ir.op.nn import matmul
from .ir.op.reduce import mean, sum
from .ir.op.tensor import (add, clip, divide, exp, maximum, minimum, multiply, negative,
                           sigmoid, sqrt, subtract, tanh)
from .ir.op.transform import concatenate, reshape, transpose
from .ir.ty import TensorType, TupleType

__all__ = ["nn", "op", "printer", "passes", "IRModule", "bind_params",
           "GraphModule", "build", "build_context", "build_scope",
           "optimize", "optimize_module", "prepare",
           "choice_of", "Call", "Constant", "Expr", "Function", "Tuple",
           "TupleGetItem", "Var", "GraphTypeError", "Op", "get_op", "register_op",
           "registered_ops", "add", "clip", "concatenate", "const", "divide", "exp",
           "layout_transform", "matmul", "maximum", "mean", "minimum", "multiply", "negative",
           "reshape", "sigmoid", "sqrt", "subtract", "sum", "tanh", "transpose", "var",
           "TensorType", "TupleType"]
