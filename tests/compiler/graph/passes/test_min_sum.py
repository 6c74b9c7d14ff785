"""min_sum.choose (compiler/graph/passes/min_sum.py): the least-cost assignment of a sum of
factors, checked against trying every assignment, on chains, trees and graphs with
cycles (the shapes a model's layout classes take)."""
from __future__ import annotations

import itertools

import numpy as np
import pytest

from compiler.graph.passes import min_sum


def _total(domains, factors, chosen):
    return sum(a[tuple(chosen[v] for v in vs)] for vs, a in factors)


@pytest.mark.parametrize("seed", range(6))
def test_choose_finds_the_least_total_that_trying_every_assignment_finds(seed):
    rng = np.random.default_rng(seed)
    n = 6
    domains = [int(d) for d in rng.integers(1, 4, n)]
    edges = [(i, i + 1) for i in range(n - 1)] + [(0, 3), (2, 5), (1, 1)]  # cycles too
    factors = [((i,), rng.random(domains[i])) for i in range(n)]
    factors += [((i, j), rng.random((domains[i], domains[j]))) for i, j in edges if i != j]
    chosen = min_sum.choose(domains, factors)
    best = min(_total(domains, factors, c)
               for c in itertools.product(*(range(d) for d in domains)))
    assert _total(domains, factors, chosen) == pytest.approx(best)


def test_ties_keep_the_first_value_of_a_domain():
    assert min_sum.choose([3, 2], [((0, 1), np.zeros((3, 2)))]) == [0, 0]


def test_a_graph_too_entangled_is_given_up(monkeypatch):
    monkeypatch.setattr(min_sum, "MAX_ENTRIES", 8)
    factors = [((i, j), np.zeros((3, 3))) for i in range(4) for j in range(i + 1, 4)]
    assert min_sum.choose([3] * 4, factors) is None
