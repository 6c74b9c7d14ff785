"""The external codegens that come with autosched (Bring Your Own Codegen), above the graph
level whose functions they compile: ccompiler.py (the reference's CodegenC: C source)
with c_source_module.py (that C compiled by the system compiler), and cblas.py (dense /
matmul / batch_matmul / 1x1 convolutions as gemms) with cblas_module.py (OpenBLAS's
cblas_sgemm called from JIT-compiled code).

They are known to the rest of the compiler only through registries on the floors below:
graph.external (the codegen of a name), graph.op (each op's `target.NAME` check) and
runtime.external (the loader of a module kind, the library its code calls).
`register()` fills them, and compiler/__init__.py calls it once, so that any build, and
any load of a saved model, finds them.
"""
from ..graph.backend.external import register_external
from ..graph.ir.op import register_op_attr
from ..runtime.external import register_library, register_loader
from . import cblas, ccompiler
from .c_source_module import CSourceModule
from .cblas_module import CblasModule, openblas_library


def register() -> None:
    """Register the codegens of this folder: for ccompiler and cblas, the `target.NAME`
    check of each op it takes (AnnotateTarget asks it), the codegen under its name (the
    graph build's `external`), and the loader of its runtime modules (a saved model's
    external modules of kind "c" or "cblas"); and OpenBLAS, for object code that calls
    it (a library's candidate a tuning worker built)."""
    for codegen in (ccompiler, cblas):
        for op_name in codegen.SUPPORTED:
            register_op_attr(op_name, f"target.{codegen.TARGET}", codegen.takes)
    register_external(ccompiler.TARGET, ccompiler.ccompiler)
    register_external(cblas.TARGET, cblas.cblas)
    register_loader(CSourceModule.type_key, CSourceModule.load)
    register_loader(CblasModule.type_key, CblasModule.load)
    register_library(b"scipy_cblas_", lambda: openblas_library("a module calling cblas"))


__all__ = ["cblas", "ccompiler", "CSourceModule", "CblasModule", "register"]
