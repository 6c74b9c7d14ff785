"""Code generation: loop IR -> LLVM IR (llvm.py) -> optimized native code (compile.py);
graph_entry.py: the native entry function of a built model. The external codegens of
the graph level (ccompiler, cblas) live above it, in compiler/contrib."""
