"""Compiler annotations: the ops `annotation.compiler_begin` and
`annotation.compiler_end` that mark where a region for an external codegen starts and
ends (TVM's BYOC annotations), and the reading and writing of regions through them.

A region is a set of op calls that one codegen (its target: "cblas", "ccompiler", or
"default" for the build's own kernels) takes together. In the annotated graph an op's
argument from another region (or a parameter, a constant, a tuple) enters through
`compiler_begin(value, compiler=T)`, and a value leaving its region passes
`compiler_end(value, compiler=T)` first; two ops of one region are linked directly.
So the regions can be read back from the annotations alone (`read_regions`), which is
what lets AnnotateTarget, MergeCompilerRegions and PartitionGraph be separate passes
that print in between:

    %0 = annotation.compiler_begin(%x, compiler="ccompiler");
    %1 = nn.relu(%0);
    %2 = annotation.compiler_end(%1, compiler="ccompiler");

Tuples and their fields belong to no region: they stay in the build's graph.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ..ir.expr import Call, Constant, Expr, Function, GlobalVar, Tuple, TupleGetItem, Var
from ..ir.functor import post_order
from ..ir.op import GraphTypeError, Op
from ..ir.op.annotation import BEGIN, END, compiler_begin, compiler_end

DEFAULT = "default"  # the target of ops that no external codegen takes


def _is(expr, name: str) -> bool:
    return isinstance(expr, Call) and isinstance(expr.op, Op) and expr.op.name == name


def is_annotation(expr) -> bool:
    return _is(expr, BEGIN) or _is(expr, END)


def is_region_op(expr) -> bool:
    """Whether `expr` is an op call that a region can hold (not an annotation)."""
    return isinstance(expr, Call) and isinstance(expr.op, Op) and not is_annotation(expr)


@dataclass(eq=False)
class Region:
    """A region: its target and its op calls in post-order."""
    target: str
    nodes: list = field(default_factory=list)


def read_regions(body: Expr) -> tuple[list[Region], dict[int, Region]]:
    """The regions of an annotated graph, in post-order of their first op, and the
    region of each op call (by id). Ops linked directly share a region; its target is
    the one its annotations name (DEFAULT for a graph without annotations). Two targets
    on one region is a GraphTypeError naming the op."""
    order = [e for e in post_order(body) if is_region_op(e)]
    parent = {id(e): id(e) for e in order}

    def find(k):
        while parent[k] != k:
            parent[k] = parent[parent[k]]
            k = parent[k]
        return k

    target_of: dict[int, str] = {}
    for e in order:
        for a in e.args:
            if is_region_op(a):
                parent[find(id(a))] = find(id(e))
    for e in post_order(body):  # the targets the annotations name, on their ops
        if _is(e, END) and is_region_op(e.args[0]):
            _name_target(target_of, id(e.args[0]), e)
        if is_region_op(e):
            for a in e.args:
                if _is(a, BEGIN):
                    _name_target(target_of, id(e), a)
    regions: dict[int, Region] = {}
    region_of: dict[int, Region] = {}
    for e in order:
        root = find(id(e))
        if root not in regions:
            regions[root] = Region(DEFAULT)
        region_of[id(e)] = regions[root]
        regions[root].nodes.append(e)
    for e in order:
        named = target_of.get(id(e))
        region = region_of[id(e)]
        if named is None:
            continue
        if region.target not in (DEFAULT, named) or \
                any(target_of.get(id(n), named) != named for n in region.nodes):
            raise GraphTypeError(f"{e.op.name}: its region is annotated for both "
                                 f"{region.target} and {named}")
        region.target = named
    return list(regions.values()), region_of


def _name_target(target_of: dict, key: int, annotation: Call) -> None:
    named = annotation.attrs["compiler"]
    if target_of.setdefault(key, named) != named:
        raise GraphTypeError(f"an op annotated for both {target_of[key]} and {named}")


def strip(body: Expr) -> tuple[Expr, dict[int, int]]:
    """`body` without its annotations, and the map from each op call of the result to
    the op call it was (by id), for carrying regions over."""
    memo: dict[int, Expr] = {}
    was: dict[int, int] = {}

    def visit(e: Expr) -> Expr:
        if id(e) in memo:
            return memo[id(e)]
        if is_annotation(e):
            out = visit(e.args[0])
        elif isinstance(e, Call):
            op = visit(e.op) if isinstance(e.op, Function) else e.op
            out = Call(op, [visit(a) for a in e.args], e.attrs, e.ty)
            was[id(out)] = id(e)
        elif isinstance(e, Tuple):
            out = Tuple([visit(f) for f in e.fields], e.ty)
        elif isinstance(e, TupleGetItem):
            out = TupleGetItem(visit(e.tuple_value), e.index, e.ty)
        elif isinstance(e, (Var, Constant, GlobalVar, Function)):
            out = e
        else:
            raise TypeError(f"cannot strip a {type(e).__name__}")
        memo[id(e)] = out
        return out
    for e in post_order(body):  # operands first: no recursion deeper than a node's own
        visit(e)
    return visit(body), was


def annotate(body: Expr, region_of, target_of) -> Expr:
    """`body` (without annotations) annotated: `region_of(call)` is a key shared by the
    op calls of one region, `target_of(call)` its target; every value crossing into a
    region gets a compiler_begin, every value leaving one a compiler_end (one per op
    call, shared by its users)."""
    memo: dict[int, Expr] = {}
    ends: dict[int, Expr] = {}

    def leaving(e: Expr) -> Expr:
        """`e` as seen from outside its region."""
        new = visit(e)
        if not is_region_op(e):
            return new
        if id(e) not in ends:
            ends[id(e)] = compiler_end(new, target_of(e))
        return ends[id(e)]

    def visit(e: Expr) -> Expr:
        if id(e) in memo:
            return memo[id(e)]
        if is_region_op(e):
            args = []
            for a in e.args:
                if is_region_op(a) and region_of(a) == region_of(e):
                    args.append(visit(a))
                else:
                    args.append(compiler_begin(leaving(a), target_of(e)))
            out = Call(e.op, args, e.attrs, e.ty)
        elif isinstance(e, Call):  # a call of a function: outside every region
            out = Call(e.op, [leaving(a) for a in e.args], e.attrs, e.ty)
        elif isinstance(e, Tuple):
            out = Tuple([leaving(f) for f in e.fields], e.ty)
        elif isinstance(e, TupleGetItem):
            out = TupleGetItem(leaving(e.tuple_value), e.index, e.ty)
        else:
            out = e
        memo[id(e)] = out
        return out
    for e in post_order(body)[:-1]:  # operands first: no recursion deeper than a node's own
        visit(e)
    return leaving(body)


def has_annotations(body: Expr) -> bool:
    return any(is_annotation(e) for e in post_order(body))
