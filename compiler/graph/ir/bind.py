"""bind_params: a function's weight parameters turned into constants (Relay's
bind_params_by_name), so that FoldConstant and the build see the weights."""
from __future__ import annotations

from .expr import Constant, Function, Var
from .functor import ExprMutator


class _Bind(ExprMutator):
    def __init__(self, params: dict):
        super().__init__()
        self.params = params

    def rewrite_leaf(self, expr):
        if isinstance(expr, Var) and expr.name in self.params:
            return Constant(self.params[expr.name])
        return expr


def bind_params(func: Function, params: dict) -> Function:
    """`func` with the parameters named in `params` replaced by constants of their
    arrays; the other parameters stay, in order."""
    unknown = set(params) - {p.name for p in func.params}
    if unknown:
        raise KeyError(f"bind_params: no parameter named {', '.join(sorted(unknown))}")
    body = _Bind(params).visit(func.body)
    kept = [p for p in func.params if p.name not in params]
    return Function(kept, body, func.ret_type, func.attrs)
