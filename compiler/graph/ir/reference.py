"""The evaluator of graph functions in numpy: each op by its registered reference
(Op.reference: the argument arrays and the call's attrs -> an array, a tuple for
batch_norm), results cast to the dtype(s) the op's type relation gives. FoldConstant
evaluates constant subgraphs with it, and tests hold built models against it (and
against ONNX Runtime).
"""
from __future__ import annotations

import numpy as np

from ...ir.dtype import numpy_dtype
from .expr import Call, Constant, Expr, Function, GlobalVar, Tuple, TupleGetItem, Var
from .functor import post_order
from .op import Op
from .ty import TensorType, TupleType


def apply_op(op: Op, args: list, attrs) -> object:
    """`op` on numpy `args`, in the dtype its type relation gives (a comparison's bool,
    a cast's target)."""
    if op.reference is None:
        raise NotImplementedError(f"{op.name}: no numpy reference")
    out = op.reference(args, attrs)
    ty = op.type_rel([_type(a) for a in args], attrs)
    if isinstance(out, tuple):
        return tuple(np.asarray(o, dtype=numpy_dtype(t.dtype)) for o, t in zip(out, ty.fields))
    return np.asarray(out, dtype=numpy_dtype(ty.dtype))


def _type(value):
    if isinstance(value, (list, tuple)):
        return TupleType(tuple(_type(v) for v in value))
    value = np.asarray(value)
    return TensorType(value.shape, str(value.dtype))


def evaluate(func: Function, *inputs, module=None) -> object:
    """`func` applied to numpy `inputs` (one per parameter), op by op in numpy; a call
    of a module's function by name (a GlobalVar) evaluates that function of `module`."""
    if len(inputs) != len(func.params):
        raise TypeError(f"evaluate: {len(func.params)} parameter(s), {len(inputs)} input(s)")
    values = {id(p): v if isinstance(v, tuple) else np.asarray(v)
              for p, v in zip(func.params, inputs)}
    for expr in post_order(func.body):
        if id(expr) not in values:
            values[id(expr)] = _value(expr, values, module)
    return values[id(func.body)]


def _value(expr: Expr, values: dict, module):
    """The value of `expr`, its operands' values in `values`."""
    if isinstance(expr, Constant):
        return expr.data
    if isinstance(expr, Var):
        raise KeyError(f"evaluate: free variable %{expr.name} has no value")
    if isinstance(expr, Tuple):
        return tuple(values[id(f)] for f in expr.fields)
    if isinstance(expr, TupleGetItem):
        return values[id(expr.tuple_value)][expr.index]
    if isinstance(expr, Call):
        args = [values[id(a)] for a in expr.args]
        if isinstance(expr.op, Function):
            return evaluate(expr.op, *args, module=module)
        if isinstance(expr.op, GlobalVar):
            if module is None or expr.op.name not in module:
                raise KeyError(f"evaluate: a call of @{expr.op.name} and no module "
                               "holding it")
            return evaluate(module[expr.op.name], *args, module=module)
        return apply_op(expr.op, args, expr.attrs)
    raise TypeError(f"evaluate: cannot evaluate a {type(expr).__name__}")
