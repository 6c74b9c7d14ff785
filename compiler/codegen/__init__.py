"""Code generation: loop IR -> LLVM IR (llvm.py) -> optimized native code (compile.py);
and the external codegens that partitioned functions go to (external.py: the registry;
ccompiler.py: C source; cblas.py: OpenBLAS calls; the build imports these two, and
they register themselves)."""
from .external import external_codegens, get_external, register_external

__all__ = ["external_codegens", "get_external", "register_external"]
