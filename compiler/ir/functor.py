"""Generic traversal of expressions and statements: collect, transform, substitute.

Nodes are frozen dataclasses, so one generic walker over their fields serves every
node type; a pass supplies only the cases it cares about. A node is anything built on
node.Node (expressions, statements, ranges), so this module needs no node module but
expr.py, for Var.
"""
from __future__ import annotations

import dataclasses
from functools import cache
from collections.abc import Callable

from .expr import Var
from .node import Node


@cache
def _child_fields(cls) -> tuple[str, ...]:
    return tuple(f.name for f in dataclasses.fields(cls) if f.name != "dtype")


def _is_node(x) -> bool:
    return isinstance(x, Node)


def children(node: Node) -> list[Node]:
    """The Expr / Stmt / Range children of a node, in field order."""
    out = []
    for name in _child_fields(type(node)):
        v = getattr(node, name)
        if _is_node(v):
            out.append(v)
        elif isinstance(v, tuple):
            out.extend(x for x in v if _is_node(x))
    return out


def map_children(node: Node, f: Callable[[Node], Node]) -> Node:
    """Rebuild `node` with `f` applied to each child; the same object if nothing changed."""
    changes = {}
    for name in _child_fields(type(node)):
        v = getattr(node, name)
        if _is_node(v):
            nv = f(v)
            if nv is not v:
                changes[name] = nv
        elif isinstance(v, tuple) and any(_is_node(x) for x in v):
            nv = tuple(f(x) if _is_node(x) else x for x in v)
            if any(a is not b for a, b in zip(nv, v)):
                changes[name] = nv
    return dataclasses.replace(node, **changes) if changes else node


def transform(node: Node, post: Callable[[Node], Node | None],
              pre: Callable[[Node], Node | None] | None = None) -> Node:
    """Rewrite bottom-up: `post(n)` sees each node after its children were rewritten and
    returns a replacement or None to keep it. `pre(n)`, when it returns a node, replaces
    the subtree without descending into it."""

    def visit(n: Node) -> Node:
        if pre is not None:
            r = pre(n)
            if r is not None:
                return r
        n = map_children(n, visit)
        r = post(n)
        return n if r is None else r

    return visit(node)


def collect(node: Node, pred: Callable[[Node], bool]) -> list[Node]:
    """Every node of the tree (parents before children) for which `pred` holds."""
    out, stack = [], [node]
    while stack:
        n = stack.pop()
        if pred(n):
            out.append(n)
        stack.extend(reversed(children(n)))
    return out


def free_vars(node: Node) -> set[Var]:
    """The Vars a node reads (loop variables it binds itself included)."""
    return set(collect(node, lambda e: isinstance(e, Var)))


def substitute(node: Node, vmap: dict) -> Node:
    """Replace Vars (keys) by expressions (values)."""
    if not vmap:
        return node
    return transform(node, lambda n: vmap.get(n) if isinstance(n, Var) else None)
