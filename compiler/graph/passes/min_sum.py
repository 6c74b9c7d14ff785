"""Least-cost assignment of variables with small discrete domains, for a cost that is a
sum of factors each over a few of the variables: dynamic programming by variable
elimination (min-sum). The layout planner (layout_plan.py) uses it to choose every
value's layout in a model at once; TVM's graph tuner solves the same problem with its
DPTuner (a DP over the nodes in order, keeping joint states where branches meet).

    choose([3, 2], [((0,), a), ((0, 1), b)])   # a: shape (3,), b: shape (3, 2)

Eliminating a variable sums the factors that hold it and keeps, for each value of the
others in them, the cost of its best value (and which value that was); the next
variable eliminated is the one whose new factor is smallest. On a chain or a tree each
new factor has at most two variables, so a CNN's graph, whose branches meet again soon
(residual adds, concatenations), stays small. Ties keep the first value of a domain,
so the order of a domain says which value is preferred.
"""
from __future__ import annotations

import numpy as np

MAX_ENTRIES = 1 << 20
"""The most entries an intermediate factor may have (a graph whose branches stay apart
for long could need more); choose gives up beyond it."""


def _aligned(variables: tuple, array: np.ndarray, union: list, domains: list) -> np.ndarray:
    """`array` (over `variables`) with its axes in the order of `union`, size 1 along the
    variables of `union` it does not hold: ready to broadcast."""
    present = [v for v in union if v in variables]
    moved = np.transpose(array, [variables.index(v) for v in present])
    return moved.reshape([domains[v] if v in variables else 1 for v in union])


def _size(var: int, factors: list, domains: list[int]) -> int:
    """The entries of the factor that eliminating `var` from `factors` would sum."""
    union = {u for vs, _ in factors if var in vs for u in vs}
    return int(np.prod([domains[u] for u in union]))


def choose(domains: list[int], factors: list[tuple[tuple, np.ndarray]]) -> list[int] | None:
    """The index into its domain of each variable (0 .. len(domains) - 1, variable v
    having domains[v] values) that minimises the sum of `factors` (each (variables,
    array of their costs), one axis per variable in that order); None when eliminating
    would need a factor of more than MAX_ENTRIES entries."""
    factors = [(tuple(v), np.asarray(a, dtype=float)) for v, a in factors]
    remaining = {v for vs, _ in factors for v in vs}
    steps = []  # (variable, the others of its factor, argmin over it for each of theirs)
    while remaining:
        var = min(sorted(remaining), key=lambda v: _size(v, factors, domains))
        if _size(var, factors, domains) > MAX_ENTRIES:
            return None
        touching = [f for f in factors if var in f[0]]
        factors = [f for f in factors if var not in f[0]]
        union = sorted({u for vs, _ in touching for u in vs})
        total = sum(_aligned(vs, a, union, domains) for vs, a in touching)
        axis = union.index(var)
        others = tuple(u for u in union if u != var)
        steps.append((var, others, np.argmin(total, axis=axis)))
        factors.append((others, np.min(total, axis=axis)))
        remaining.discard(var)
    chosen = [0] * len(domains)
    for var, others, best in reversed(steps):
        chosen[var] = int(best[tuple(chosen[u] for u in others)])
    return chosen
