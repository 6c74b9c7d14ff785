"""The graph call a template's workload implements (its binding's `call`, the inverse of
its `workload`): what `autosched log best` puts to the chooser, so that it names the
implementation the build applies to that call, among every candidate of the call and of
the forms the build may turn it into, exactly as the build decides.

    call_of("conv2d_nchwc", (1, 64, 56, 56, 64, 3, 3, 1, 1, 16, 16))
    # nn.conv2d of a (1, 64, 56, 56) NCHW value and (64, 64, 3, 3) OIHW weights

A packed convolution's workload gives the NCHW call it was made of, and forms_of its
forms in the workload's own data block (the block its producer packed it in, its
binding's `data_layout`) first, then in its other blocks (the workload's own among
them); a dense's and a convolution's weight is a constant (of zeros), as a model's is,
so that AlterOpLayout's packed (and Winograd) forms are among its forms.
"""
from __future__ import annotations

from compiler import graph
from compiler.graph.ir.op.layout import block_of, forms_of as layout_forms, is_packed
from compiler.graph.ir.expr import Call

from .registry import get_template


def call_of(name: str, args: tuple) -> Call | None:
    """The typed graph call that template `name`'s workload `args` implements, or None
    for a template no graph op uses (a plain operator template, the blur)."""
    binding = get_template(name).binding
    if binding is None or binding.call is None:
        return None
    params, body = binding.call(*args)
    return graph.passes.InferType()(graph.IRModule.from_expr(
        graph.Function(params, body)))["main"].body


def forms_of(name: str, args: tuple) -> tuple[Call, list] | None:
    """The typed call of template `name`'s workload `args` and its forms (op/layout.py
    forms_of: the ways the build may alter it, a packed convolution's data arriving in
    the workload's own input block, whose pairs come first), or None for a template no
    graph op uses."""
    call = call_of(name, args)
    if call is None:
        return None
    layout = get_template(name).binding.data_layout(args)
    return call, layout_forms(call, block_of(layout) if is_packed(layout) else None)
