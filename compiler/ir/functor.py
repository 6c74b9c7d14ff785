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

from .expr import Expr, Var
from .node import Node


@cache
def _child_fields(cls) -> tuple[str, ...]:
    return tuple(f.name for f in dataclasses.fields(cls) if f.name != "dtype")


@cache
def _rebuild_plan(cls) -> tuple[tuple[str, ...], Callable | None] | None:
    """The fields `_rebuilt` copies and the `__post_init__` it runs, for a node class
    all of whose fields are init fields (None otherwise: dataclasses.replace serves)."""
    fields = dataclasses.fields(cls)
    if not all(f.init for f in fields):
        return None
    return tuple(f.name for f in fields), getattr(cls, "__post_init__", None)


def _rebuilt(node: Node, changes: dict) -> Node:
    """dataclasses.replace(node, **changes), at half its cost: the fields set straight
    into a new instance and its __post_init__ run, as the generated __init__ would (the
    dtype a CmpOp, Ramp or Broadcast derives from its operands is derived again). Only
    the fields are copied, never another attribute a pass has set on `node` (the
    simplifier's fixed-point mark is about `node`, not about the rebuilt one). Every pass
    rebuilds through map_children: a Winograd kernel's unroll rebuilds 27,000 nodes."""
    plan = _rebuild_plan(type(node))
    if plan is None:
        return dataclasses.replace(node, **changes)
    names, post = plan
    new = object.__new__(type(node))
    old, slots = node.__dict__, new.__dict__
    for name in names:
        slots[name] = old[name]
    slots.update(changes)
    if post is not None:
        post(new)
    return new


def children(node: Node) -> list[Node]:
    """The Expr / Stmt / Range children of a node, in field order."""
    out = []
    for name in _child_fields(type(node)):
        v = getattr(node, name)
        if isinstance(v, Node):
            out.append(v)
        elif isinstance(v, tuple):
            out.extend(x for x in v if isinstance(x, Node))
    return out


def map_children(node: Node, f: Callable[[Node], Node]) -> Node:
    """Rebuild `node` with `f` applied to each child; the same object if nothing changed.
    (The walkers' innermost loop, run for every node of every pass: written out, with
    isinstance inline.)"""
    changes = None
    for name in _child_fields(type(node)):
        v = getattr(node, name)
        if isinstance(v, Node):
            nv = f(v)
            if nv is not v:
                if changes is None:
                    changes = {}
                changes[name] = nv
        elif isinstance(v, tuple) and v:
            nv = tuple(f(x) if isinstance(x, Node) else x for x in v)
            if any(a is not b for a, b in zip(nv, v)):
                if changes is None:
                    changes = {}
                changes[name] = nv
    return node if changes is None else _rebuilt(node, changes)


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


def _preorder(node: Node, into_exprs: bool = True):
    """The nodes of the tree, parents before children (children in field order);
    `into_exprs`=False: the walk does not enter expressions (statements, ranges and
    buffers' nodes only), for a question about statements in a kernel body, most of
    whose nodes are expressions."""
    stack = [node]
    while stack:
        n = stack.pop()
        yield n
        kids = children(n)
        stack.extend(reversed(kids if into_exprs else
                              [c for c in kids if not isinstance(c, Expr)]))


def collect(node: Node, pred: Callable[[Node], bool]) -> list[Node]:
    """Every node of the tree (parents before children) for which `pred` holds."""
    return [n for n in _preorder(node) if pred(n)]


def collect_stmts(node: Node, pred: Callable[[Node], bool]) -> list[Node]:
    """collect(node, pred) for a `pred` that no expression satisfies (a Store, an
    Allocate), without entering expressions."""
    return [n for n in _preorder(node, into_exprs=False) if pred(n)]


def exists(node: Node, pred: Callable[[Node], bool]) -> bool:
    """Whether some node of the tree satisfies `pred`, stopping at the first (a question
    asked of whole kernel bodies: does it read this buffer)."""
    return any(pred(n) for n in _preorder(node))


def free_vars(node: Node) -> set[Var]:
    """The Vars a node reads (loop variables it binds itself included)."""
    return set(collect(node, lambda e: isinstance(e, Var)))


def substitute(node: Node, vmap: dict) -> Node:
    """Replace Vars (keys) by expressions (values)."""
    if not vmap:
        return node
    return transform(node, lambda n: vmap.get(n) if isinstance(n, Var) else None)
