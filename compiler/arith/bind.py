"""bind_simplified: constants bound into an expression that is simplified already, as
an unrolled loop's copies bind their loop variables (transform/unroll.py), rebuilding
and simplifying only the nodes above a bound variable."""
from __future__ import annotations

from ..ir import expr as E
from ..ir.functor import collect, map_children
from .simplify import simplify_node


def bind_simplified(e: E.Expr, env: dict, memo: dict | None = None) -> E.Expr:
    """simplify(substitute(e, env)) for an `e` that is simplified already (no bounds):
    only the nodes above a substituted variable are rebuilt and simplified, bottom-up,
    and a Select whose condition folds keeps only its branch. What an unrolled loop's
    copies need (transform/unroll.py): each binds the loop variables to constants.

    `memo`: a dict the caller keeps for one pass, in which a scalar Select's result is
    remembered by the node and the constants its own variables are bound to. A Winograd
    transform's matrix entry is a chain of 20-36 Selects on two loop indices (see
    ops/conv2d_winograd.py), met thousands of times in an unrolled kernel with one of
    only 36 pairs of values: without the memo each meeting walks the chain again."""
    if isinstance(e, E.Var):
        return env.get(e, e)
    cond = None
    if isinstance(e, E.Select) and E.lanes(e.condition.dtype) == 1:
        key = None
        if memo is not None:
            key = _select_key(e, env, memo)
            hit = memo.get(key)
            if hit is not None:
                return hit[1]
        cond = bind_simplified(e.condition, env, memo)
        if isinstance(cond, E.IntImm):
            out = bind_simplified(e.true_value if cond.value else e.false_value, env, memo)
            if key is not None:
                memo[key] = (e, out)
            return out
    out = map_children(e, lambda c: cond if cond is not None and c is e.condition else
                       bind_simplified(c, env, memo) if isinstance(c, E.Expr) else c)
    return e if out is e else simplify_node(out)


def _select_key(e: E.Select, env: dict, memo: dict):
    """The memo's key of the Select `e` under `env`: the node, and the value of each of
    its free variables (an int where bound to a constant, None where unbound); None
    when one is bound to something other than a constant (then nothing is remembered)."""
    values = []
    for v in _free_vars(e, memo):
        bound = env.get(v)
        if bound is None:
            values.append(None)
        elif isinstance(bound, E.IntImm):
            values.append(bound.value)
        else:
            return None
    return (id(e), *values)


def _free_vars(e: E.Expr, memo: dict) -> tuple:
    """The distinct variables of `e` in the order collect meets them, remembered in
    `memo` by the node; a Select's from its operands' (a chain of n Selects is walked
    once, not once per link: n^2 / 2 nodes for a Winograd matrix entry)."""
    hit = memo.get(id(e))
    if hit is not None:
        return hit[1]
    if isinstance(e, E.Select):
        names = tuple(dict.fromkeys(v for c in (e.condition, e.true_value, e.false_value)
                                    for v in _free_vars(c, memo)))
    else:
        names = tuple(dict.fromkeys(collect(e, lambda n: isinstance(n, E.Var))))
    memo[id(e)] = (e, names)
    return names


__all__ = ["bind_simplified"]
