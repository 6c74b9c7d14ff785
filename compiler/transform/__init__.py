"""compiler.transform: the pass infrastructure and the passes between schedule_ops and
codegen (see passes.py for the pipelines lower() and build() run)."""
from .pass_infra import (ModulePass, Pass, PassContext, PassInfo, PassInstrument,
                         PassTimingInstrument, PrimFuncPass, PrintIR, Sequential, module_pass,
                         prim_func_pass, register_pass_config)
from .passes import (LoopPartition, RemoveNoOp, Simplify, StorageFlatten, UnrollLoop,
                     VectorizeLoop, build_pipeline, lower_pipeline)
from .vectorize import VectorizeWarning

__all__ = ["ModulePass", "Pass", "PassContext", "PassInfo", "PassInstrument",
           "PassTimingInstrument", "PrimFuncPass", "PrintIR", "Sequential", "module_pass",
           "prim_func_pass", "register_pass_config", "LoopPartition", "RemoveNoOp", "Simplify",
           "StorageFlatten", "UnrollLoop", "VectorizeLoop", "build_pipeline", "lower_pipeline",
           "VectorizeWarning"]
