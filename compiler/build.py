"""lower() and build(): the compile flow from a schedule to loop IR and to native code
(docs/architecture.md, "The flows")."""
from __future__ import annotations

import os

import llvmlite
import llvmlite.binding as llvm
import numpy as np

from . import disk_cache
from .codegen.compile import compile_module, compile_object
from .collector import fewer_collections
from .errors import LowerError
from .ir.expr import Var
from .ir.functor import collect
from .ir.module import IRModule
from .ir.stmt import Buffer, PrimFunc
from .lang.tensor import PlaceholderOp, Tensor
from .schedule.bound import infer_bound_context
from .schedule.schedule import Schedule
from .schedule.schedule_ops import schedule_ops
from .target import Target
from .transform.pass_infra import PassContext
from .transform.passes import build_pipeline, lower_pipeline

CACHE_FORMAT = 1
"""The version of what a cached kernel holds and how its key is made (disk_cache)."""


def _arg_buffers(sch: Schedule, args) -> dict:
    """Buffers for the argument tensors, keyed by the tensor the loop IR uses."""
    out = {}
    for pos, t in enumerate(args):
        if not isinstance(t, Tensor):
            raise LowerError(f"argument {pos} of lower() is {t!r}, not a tensor")
        key = t if isinstance(t.op, PlaceholderOp) else sch[t].tensor
        if key in out:
            raise LowerError(f"tensor {t.name} appears twice in the arguments")
        out[key] = Buffer(t.name, t.dtype, tuple(t.shape))
    for op in sch.outputs:
        if sch[op].tensor not in out:
            raise LowerError(f"output {op.name} of the schedule is missing from the arguments")
    return out


def lower(sch: Schedule, args, name: str = "main") -> PrimFunc:
    """Lower a schedule to a PrimFunc over `args` (inputs and outputs, in call order).

    Runs normalize, infer_bound and schedule_ops, then `transform.lower_pipeline()`
    (storage flattening, simplification) under the current PassContext; `str()` of the
    result prints the loop nest. build() runs the remaining passes on top of this.
    """
    sch.normalize()
    buffers = _arg_buffers(sch, args)
    ctx = infer_bound_context(sch)
    params = {st for st in ctx.graph.stages if st.tensor in buffers}
    body = schedule_ops(ctx, params)
    size_vars = []
    for buf in buffers.values():
        for d in buf.shape:
            for v in collect(d, lambda n: isinstance(n, Var)):
                if v not in size_vars:
                    size_vars.append(v)
    attrs = {"arg_buffers": buffers, "size_bounds": {v: ctx.bounds[v] for v in ctx.size_vars}}
    func = PrimFunc(name, tuple(buffers.values()), body, tuple(size_vars), attrs)
    return lower_pipeline()(IRModule.from_func(func))[name]


def build(sch: Schedule, args, target="llvm", name: str = "main"):
    """Compile a schedule to native code for `target` and load it.

    `target` is a Target or a TVM-style string ("llvm" is the host CPU with all its
    cores; "llvm -mcpu=znver5 -num-cores=2"). The passes of `transform.build_pipeline()`
    run under the current PassContext, then LLVM optimizes at O3 and JIT-compiles.
    Returns a runtime.Module: call it on numpy arrays, time it, export it.
    """
    target = Target(target)
    with fewer_collections():
        return compile_module(built_ir(sch, args, name), target, entry=name)


def built_ir(sch: Schedule, args, name: str) -> IRModule:
    """The IRModule after lowering and the build pipeline (what code generation sees)."""
    return build_pipeline()(IRModule.from_func(lower(sch, args, name)))


def build_object(sch: Schedule, args, target="llvm", name: str = "main") -> bytes:
    """Compile like build(), but return the target's object code instead of loading it:
    bytes that another process (a tuner's timing host) loads with
    compiler.runtime.load_object(data, target) to get the same runtime.Module."""
    with fewer_collections():
        return compile_object(built_ir(sch, args, name), Target(target), entry=name)


def build_key(target: Target, folders=()) -> list | None:
    """What every kernel compiled here follows from besides its own description, as the
    disk cache keys it: the target with its features, the entered pass context, the
    source of the compiler and of `folders` (the packages whose code schedules it: the
    templates'), the versions of LLVM, llvmlite and numpy, and CACHE_FORMAT. None when
    the cache is off, or pass instruments are entered (they watch the passes, which a
    cached kernel does not run)."""
    ctx = PassContext.current()
    if disk_cache.cache_dir() is None or ctx.instruments:
        return None
    code = sorted({os.path.dirname(os.path.abspath(__file__)), *folders})
    return [CACHE_FORMAT, [target.kind, target.mcpu, target.mtriple, target.features,
                           target.num_cores],
            [ctx.opt_level, sorted(ctx.required_pass), sorted(ctx.disabled_pass),
             sorted((k, repr(v)) for k, v in ctx.config.items())],
            [disk_cache.source_version(d) for d in code],
            [llvmlite.__version__, list(llvm.llvm_version_info), np.__version__]]

