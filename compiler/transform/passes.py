"""The low-level passes as registered passes, and the pipelines lower() and build() run.

Each pass is a function returning a Pass, as in TVM (`transform.Simplify()`); the
transformation itself lives in its own file as a plain IR-to-IR function.

lower() runs `lower_pipeline()`: StorageFlatten, Simplify — the loop IR a reader
compares with the reference documents. build() then runs `build_pipeline()`:
LoopPartition, Simplify, VectorizeLoop, UnrollLoop, Simplify, RemoveNoOp,
InlineInvariants. Both run under the current PassContext, so `disabled_pass`,
`opt_level` and `config` change the code.
"""
from __future__ import annotations

import dataclasses

from .hoist_invariants import inline_invariants
from .loop_partition import loop_partition
from .pass_infra import PassContext, Sequential, prim_func_pass, register_pass_config
from .remove_no_op import remove_no_op
from .simplify import simplify_func_body
from .storage_flatten import storage_flatten
from .unroll import unroll_loop
from .vectorize import vectorize_loop
from ..ir.stmt import SERIAL, VECTORIZED, For
from ..ir.functor import transform

register_pass_config("tir.UnrollLoop.auto_max_step", int, 0)
register_pass_config("tir.UnrollLoop.explicit_unroll", bool, True)
register_pass_config("tir.disable_vectorize", bool, False)


def _with_body(func, body):
    return dataclasses.replace(func, body=body)


def StorageFlatten():
    """Realize / ProducerStore -> Allocate / Store on flat buffers (needs the function's
    `arg_buffers` and `size_bounds` attrs, which lower() sets)."""
    @prim_func_pass(opt_level=0, name="StorageFlatten")
    def storage_flatten_pass(func, mod, ctx):
        arg_buffers = func.attrs["arg_buffers"]
        body = storage_flatten(func.body, arg_buffers, func.attrs.get("size_bounds"))
        return _with_body(func, body)
    return storage_flatten_pass


def Simplify(plain: bool = False):
    """Arithmetic simplification and removal of loops of extent 1. `plain`: after
    UnrollLoop, whose copies are simplified but for what the loops' bounds decide
    (transform/simplify.py, simplify_stmt)."""
    @prim_func_pass(opt_level=0, name="Simplify")
    def simplify_pass(func, mod, ctx):
        return _with_body(func, simplify_func_body(func.body, func.attrs.get("size_bounds"),
                                                   plain))
    return simplify_pass


def LoopPartition():
    """Split loops at the guards of non-divisible splits so the main body has none."""
    @prim_func_pass(opt_level=1, name="LoopPartition")
    def loop_partition_pass(func, mod, ctx):
        return _with_body(func, loop_partition(func.body, func.attrs.get("size_bounds")))
    return loop_partition_pass


def VectorizeLoop():
    """Vectorized loops -> vector operations (or serial loops, with a VectorizeWarning
    saying why). With config `tir.disable_vectorize` they all stay serial loops."""
    @prim_func_pass(opt_level=0, name="VectorizeLoop")
    def vectorize_pass(func, mod, ctx):
        if ctx.get_config("tir.disable_vectorize"):
            def serial(s):
                if isinstance(s, For) and s.kind == VECTORIZED:
                    return dataclasses.replace(s, kind=SERIAL)
                return None
            return _with_body(func, transform(func.body, serial))
        return _with_body(func, vectorize_loop(func.body))
    return vectorize_pass


def UnrollLoop():
    """Unrolled loops of constant extent are expanded; with config
    `tir.UnrollLoop.auto_max_step` = N, serial loops of at most N steps are too."""
    @prim_func_pass(opt_level=0, name="UnrollLoop")
    def unroll_pass(func, mod, ctx):
        body = unroll_loop(func.body, auto_max_step=ctx.get_config("tir.UnrollLoop.auto_max_step"),
                           explicit_unroll=ctx.get_config("tir.UnrollLoop.explicit_unroll"))
        return _with_body(func, body)
    return unroll_pass


def RemoveNoOp():
    """Drop statements with no effect: empty loops, constant conditions, dead buffers."""
    @prim_func_pass(opt_level=0, name="RemoveNoOp")
    def remove_no_op_pass(func, mod, ctx):
        return _with_body(func, remove_no_op(func.body))
    return remove_no_op_pass


def InlineInvariants():
    """The index arithmetic UnrollLoop bound ahead of its unrolled regions, put back where
    it is used (transform/hoist_invariants.py: the lets serve the passes after the unroll;
    code generation sees the loop IR it saw without them)."""
    @prim_func_pass(opt_level=0, name="InlineInvariants")
    def inline_invariants_pass(func, mod, ctx):
        return _with_body(func, inline_invariants(func.body))
    return inline_invariants_pass


def lower_pipeline() -> Sequential:
    """The passes lower() runs after schedule_ops."""
    return Sequential([StorageFlatten(), Simplify()], name="lower")


def build_pipeline() -> Sequential:
    """The passes build() runs between lower() and code generation."""
    return Sequential([LoopPartition(), Simplify(), VectorizeLoop(), UnrollLoop(), Simplify(True),
                       RemoveNoOp(), InlineInvariants()], name="build")


__all__ = ["StorageFlatten", "Simplify", "LoopPartition", "VectorizeLoop", "UnrollLoop",
           "RemoveNoOp", "InlineInvariants", "lower_pipeline", "build_pipeline", "PassContext"]
