"""Code generation: loop IR -> LLVM IR (llvm.py) -> optimized native code (compile.py)."""
