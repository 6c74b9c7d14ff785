"""ExprMutator: a post-order rewrite of a graph function that visits each node once;
and post_order, the nodes of a graph in that order, each once, for passes that only read.

A subclass overrides `rewrite_call` (and the others as it needs); the base rebuilds a
node only when one of its children changed, so an untouched part of the graph stays
the same objects, sharing included. A rebuilt node keeps its `ty`: the rewrites here
keep types, and a pass that may not reruns InferType.

Neither recurses with the depth of the graph (Relay's mixed-mode mutator): `visit` of a
node first visits, from a work list, every operand below it not visited yet, in
post-order, so that when a node's own `_visit` visits its operands they are done, and a
chain of thousands of ops costs no stack; post_order walks with an explicit stack.
"""
from __future__ import annotations

import dataclasses

from .expr import Call, Constant, Expr, Function, Tuple, TupleGetItem, Var


class ExprMutator:
    def __init__(self):
        self.memo: dict[int, Expr] = {}

    def function(self, func: Function) -> Function:
        body = self.visit(func.body)
        return func if body is func.body else dataclasses.replace(func, body=body)

    def visit(self, expr: Expr) -> Expr:
        key = id(expr)
        if key not in self.memo:
            # the work list, unless every operand is visited already: then it would be
            # empty, and that is every node's case after the first of a walk
            if not self.stops(expr) and not all(self._known(o) for o in operands(expr)):
                for node in depth_first(expr, self._known)[:-1]:
                    self.visit(node)  # (a subclass's visit too: each node as it would be)
            self.memo[key] = self._visit(expr)
        return self.memo[key]

    def stops(self, expr: Expr) -> bool:
        """Whether the subclass's `visit` replaces `expr` without visiting below it (a
        substitution's mapped nodes): the work list does not walk below it either, or
        each visit would walk the whole graph above a substituted operand."""
        return False

    def _known(self, expr: Expr) -> bool:
        return id(expr) in self.memo or self.stops(expr)

    def _visit(self, expr: Expr) -> Expr:
        if isinstance(expr, (Var, Constant)):
            return self.rewrite_leaf(expr)
        if isinstance(expr, Call):
            args = tuple(self.visit(a) for a in expr.args)
            op = self.visit(expr.op) if isinstance(expr.op, Function) else expr.op
            same = op is expr.op and all(a is b for a, b in zip(args, expr.args))
            return self.rewrite_call(expr if same else Call(op, args, expr.attrs, expr.ty))
        if isinstance(expr, Tuple):
            fields = tuple(self.visit(f) for f in expr.fields)
            same = all(a is b for a, b in zip(fields, expr.fields))
            return expr if same else Tuple(fields, expr.ty)
        if isinstance(expr, TupleGetItem):
            value = self.visit(expr.tuple_value)
            return expr if value is expr.tuple_value else \
                TupleGetItem(value, expr.index, expr.ty)
        if isinstance(expr, Function):
            return self.function(expr)
        raise TypeError(f"cannot rewrite a {type(expr).__name__}")

    def rewrite_leaf(self, expr: Expr) -> Expr:
        return expr

    def rewrite_call(self, call: Call) -> Expr:
        """A call whose arguments are rewritten already."""
        return call


def operands(expr: Expr) -> tuple:
    """The expressions `expr` reads (a call's arguments, a tuple's fields, the tuple of a
    TupleGetItem); a call's function is not one (post_order stays in its scope)."""
    if isinstance(expr, Call):
        return expr.args
    if isinstance(expr, Tuple):
        return expr.fields
    if isinstance(expr, TupleGetItem):
        return (expr.tuple_value,)
    return ()


def post_order(body: Expr) -> list[Expr]:
    """Every node `body` reads, itself included, each once, operands before readers."""
    return [*_below(body, {}), body]


def _below(expr: Expr, done) -> list[Expr]:
    """The nodes `expr` reads, directly or not, that are not in `done` (ids), each once,
    operands before readers, in the order a recursive walk would finish them; `expr`
    itself not included, nor what lies below a node in `done`."""
    return depth_first(expr, lambda o: id(o) in done)[:-1]


def depth_first(root: Expr, skip=lambda e: False, children=operands) -> list[Expr]:
    """`root` and the nodes it reads, directly or not, each once, in the order a
    recursive walk finishes them (operands in order, before their readers; `root`
    last), on a stack of its own: not a node that `skip(node)` says, nor what lies below
    it; `children(node)`: what a node reads (default its operands; a walk that stops at
    some nodes gives them none)."""
    order, seen = [], {id(root)}
    stack = [(root, iter(children(root)))]
    while stack:
        node, rest = stack[-1]
        for o in rest:
            if id(o) not in seen and not skip(o):
                seen.add(id(o))
                stack.append((o, iter(children(o))))
                break
        else:
            stack.pop()
            order.append(node)
    return order
