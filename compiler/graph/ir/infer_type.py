"""Type inference: every node of a graph function gets its checked type (`ty`).

Post-order over the DAG, each node once (a node used twice is rewritten once and stays
shared): a Var and a Constant carry their type; a Call's type is its op's type relation
applied to its arguments' types (a call of a Function: the function's inferred return
type, its parameters checked against the arguments; of a GlobalVar: the same from the
FuncType it carries); a Tuple's is the tuple of its
fields' types. The result is a new Function whose nodes all carry `ty`, and whose
ret_type is its body's type. A relation that fails is a GraphTypeError naming the op.

A node that an earlier inference returned is returned as it is, and the walk does not
go below it: a build infers a model's types after each of its fourteen passes, most of
which change a few nodes of hundreds (a DenseNet-121 build from the compile cache spent
0.12-0.15 s of its 0.52-0.67 s here). Nodes are immutable and a pass builds anew what
it changes, and the nodes above: so everything below a node an inference returned was
inferred with it and has not changed, and still has the types its operands' types and
its attributes give (the relations read nothing else). The mark is an attribute
outside the node's fields, which a rebuilt node starts without.
"""
from __future__ import annotations

import dataclasses

from .expr import Call, Constant, Expr, Function, GlobalVar, Tuple, TupleGetItem, Var
from .functor import ExprMutator
from .op import GraphTypeError, Op
from .ty import TupleType


def infer_type(func: Function) -> Function:
    """`func` with every node's type inferred (see the module docstring)."""
    return _Infer().function(func)


_INFERRED = "_type_inferred"  # the mark of a node infer_type returned


def _inferred(expr: Expr) -> bool:
    """Whether `expr` came from an inference (so did every node below it)."""
    return getattr(expr, _INFERRED, False)


def _marked(expr: Expr) -> Expr:
    object.__setattr__(expr, _INFERRED, True)
    return expr


class _Infer(ExprMutator):
    """ExprMutator's memoized visit, with every node rebuilt to carry its type, but
    those an inference returned before (module docstring)."""

    def function(self, func: Function) -> Function:
        if _inferred(func):
            return func
        body = self.visit(func.body)
        return _marked(dataclasses.replace(func, body=body, ret_type=body.ty))

    def stops(self, expr: Expr) -> bool:
        return _inferred(expr)  # the work list does not walk below it either

    def _visit(self, expr: Expr) -> Expr:
        if isinstance(expr, (Var, Constant)) or _inferred(expr):
            return expr
        return _marked(self._typed(expr))

    def _typed(self, expr: Expr) -> Expr:
        if isinstance(expr, Tuple):
            fields = tuple(self.visit(f) for f in expr.fields)
            return Tuple(fields, TupleType(tuple(f.ty for f in fields)))
        if isinstance(expr, TupleGetItem):
            value = self.visit(expr.tuple_value)
            if not isinstance(value.ty, TupleType) or not \
                    0 <= expr.index < len(value.ty.fields):
                raise GraphTypeError(f"TupleGetItem: no field {expr.index} in {value.ty}")
            return TupleGetItem(value, expr.index, value.ty.fields[expr.index])
        if isinstance(expr, Call):
            args = tuple(self.visit(a) for a in expr.args)
            fn = _Infer().function(expr.op) if isinstance(expr.op, Function) else expr.op
            types = [a.ty for a in args]
            if isinstance(expr.op, Op):
                ty = expr.op.type_rel(types, expr.attrs)
                return Call(expr.op, args, expr.attrs, ty)
            if isinstance(expr.op, Function):
                want = [p.ty for p in fn.params]
                if want != types:
                    raise GraphTypeError(f"a call of a function with parameters "
                                         f"{', '.join(map(str, want))} on arguments "
                                         f"{', '.join(map(str, types))}")
                return Call(fn, args, expr.attrs, fn.ret_type)
            if isinstance(expr.op, GlobalVar):
                want = list(expr.op.ty.arg_types)
                if want != types:
                    raise GraphTypeError(f"a call of @{expr.op.name}, which takes "
                                         f"{', '.join(map(str, want))}, on arguments "
                                         f"{', '.join(map(str, types))}")
                return Call(expr.op, args, expr.attrs, expr.op.ty.ret_type)
            raise GraphTypeError(f"a call of {expr.op!r}, neither an op nor a function")
        if isinstance(expr, Function):
            return _Infer().function(expr)
        raise GraphTypeError(f"no type for a {type(expr).__name__}")
