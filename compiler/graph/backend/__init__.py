"""A fused graph to native code: lowering each fused function to a kernel, the build and
its executor, the external codegens' registry (see compiler/graph/__init__.py)."""
