"""AnnotateTarget: every op call goes to the first external codegen of a list that
takes it (TVM's AnnotateTarget).

An external codegen NAME says which calls it takes through a check function hung on
each op it supports, `register_op_attr(op, "target.NAME", fn)`: fn(call) -> bool sees
the typed call (its attrs, its arguments' shapes and dtypes). A call that no codegen
of the list takes is annotated for DEFAULT, the build's own kernels. Every op call is
its own region afterwards (annotation.py); MergeCompilerRegions joins them.
"""
from __future__ import annotations

from .annotation import DEFAULT, annotate, has_annotations
from ..ir.expr import Call, Function
from ..ir.op import GraphTypeError, get_op_attr


def target_of_call(call: Call, targets) -> str:
    """The first of `targets` whose check function takes `call`, else DEFAULT."""
    for target in targets:
        check = get_op_attr(call.op.name, f"target.{target}")
        if check is None:
            continue
        try:
            takes = check(call)
        except Exception as err:
            raise GraphTypeError(f"{call.op.name}: the check of target.{target} failed: "
                                 f"{err}") from err
        if takes:
            return target
    return DEFAULT


def annotate_target(func: Function, targets) -> Function:
    """`func` with every op call annotated for its target (see the module docstring)."""
    targets = [targets] if isinstance(targets, str) else list(targets)
    if has_annotations(func.body):
        raise GraphTypeError("AnnotateTarget: the function is annotated already")
    chosen: dict[int, str] = {}

    def target_of(call):
        if id(call) not in chosen:
            chosen[id(call)] = target_of_call(call, targets)
        return chosen[id(call)]
    body = annotate(func.body, region_of=id, target_of=target_of)
    return Function(func.params, body, func.ret_type, func.attrs)
