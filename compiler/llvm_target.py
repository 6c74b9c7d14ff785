"""LLVM's side of a Target: the TargetMachine that code is generated for, and the O3
pipeline that every module runs through.

Code generation (codegen/compile.py) optimizes and emits kernels with them, and the
runtime (runtime/native.py, runtime/module.py) JIT-compiles the native runtime, loads
object code and exports shared libraries with them; so they live below both, and
neither imports the other for them.
"""
from __future__ import annotations

import functools

import llvmlite.binding as llvm

from .errors import BuildError
from .target import Target


@functools.cache
def _initialize() -> None:
    """LLVM's native target, assembly printer and assembly parser (runtime.ll has a line
    of inline assembly), registered once per process (before any thread of
    codegen/compile.py's asks for a target machine: registering is not thread-safe)."""
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    llvm.initialize_native_asmparser()


def target_machine(target: Target, pic: bool = False) -> llvm.TargetMachine:
    """An LLVM TargetMachine for `target`; `pic` for code that goes into a shared library."""
    _initialize()
    try:
        tgt = llvm.Target.from_triple(target.mtriple)
    except RuntimeError as err:
        raise BuildError(f"LLVM does not know the target triple {target.mtriple!r}: "
                         f"{err}") from None
    return tgt.create_target_machine(cpu=target.mcpu, features=target.features, opt=3,
                                     reloc="pic" if pic else "default",
                                     codemodel="default" if pic else "jitdefault")


def optimize(mod: llvm.ModuleRef, tm: llvm.TargetMachine) -> None:
    """Run LLVM's O3 pipeline on `mod` in place."""
    mod.triple = tm.triple
    mod.data_layout = str(tm.target_data)
    pto = llvm.create_pipeline_tuning_options(speed_level=3)
    pto.loop_vectorization = True
    pto.slp_vectorization = True
    pb = llvm.create_pass_builder(tm, pto)
    pb.getModulePassManager().run(mod, pb)


__all__ = ["optimize", "target_machine"]
