"""Graph passes, on the compiler's pass infrastructure (compiler.transform: Pass,
Sequential, PassContext, PrintIR, instruments). Each is a module pass that rewrites
every graph function of the module and leaves its PrimFuncs alone.

    mod = IRModule.from_expr(fn)
    mod = graph.transform.InferType()(mod)
"""
from __future__ import annotations

from ..ir.module import IRModule
from ..transform.pass_infra import module_pass
from .expr import Function
from .infer_type import infer_type


def _each_function(mod: IRModule, rewrite) -> IRModule:
    """`mod` with `rewrite(fn)` in place of each graph function."""
    return IRModule({name: rewrite(f) if isinstance(f, Function) else f
                     for name, f in mod.functions.items()}, mod.attrs)


def InferType():
    """Every node of every graph function gets its checked type (infer_type.py)."""
    return module_pass(lambda mod, ctx: _each_function(mod, infer_type), opt_level=0,
                       name="InferType")
