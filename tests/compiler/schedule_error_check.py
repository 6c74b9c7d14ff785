"""Helpers for the bad-input tests of schedules: small computations and a strict
`pytest.raises` that checks the message names the user's objects."""
from __future__ import annotations

import re

import pytest

from compiler import te

def chain():
    """A -> B -> C, all 2-D elementwise."""
    A = te.placeholder((6, 4), name="A")
    B = te.compute((6, 4), lambda i, j: A[i, j] * 2, name="B")
    C = te.compute((6, 4), lambda i, j: B[i, j] + 1, name="C")
    return A, B, C


def names(stage):
    return [iv.name for iv in stage.leaf_iter_vars]


def raises_named(exc_type, *words):
    """pytest.raises(exc_type) whose message contains every word as a whole token."""
    pattern = "".join(rf"(?=.*(?<![\w.]){re.escape(w)}(?![\w]))" for w in words)
    return pytest.raises(exc_type, match=re.compile(pattern, re.S))
