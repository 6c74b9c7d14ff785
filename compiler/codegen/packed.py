"""What every compiled module shows the runtime, whoever generated its code: each
function `@f` has its packed form `i32 f_packed(ptr args)`, which takes the arguments as
one int64 array in order (data pointers, then sizes) and returns f's code, the one
signature the runtime calls, times and exports; and the module names its entry, target
and parameters in `ptr @autosched_module_meta()` (JSON), which an exported module is
checked by in a process that never saw how it was made.

A kernel (llvm.py), a model's graph_run (graph_entry.py) and a library's gemm
(contrib/cblas_module.py) all get them here.
"""
from __future__ import annotations

import json

from llvmlite import ir

from .llvm_ops import I8, I32, I64, PTR


def add_packed(module: ir.Module, fn: ir.Function) -> ir.Function:
    """`fn`'s packed form `<fn>_packed(ptr args)`: args[i] is fn's i-th argument, an
    address for a pointer, truncated for an integer narrower than 64 bits."""
    packed = ir.Function(module, ir.FunctionType(I32, [PTR]), name=f"{fn.name}_packed")
    b = ir.IRBuilder(packed.append_basic_block("entry"))
    args = []
    for pos, ty in enumerate(fn.function_type.args):
        slot = b.load(b.gep(packed.args[0], [I64(pos)], inbounds=True, source_etype=I64),
                      typ=I64)
        args.append(b.inttoptr(slot, PTR) if ty == PTR
                    else b.trunc(slot, ty) if ty != I64 else slot)
    b.ret(b.call(fn, args))
    return packed


def add_module_meta(module: ir.Module, meta: dict) -> None:
    """`ptr @autosched_module_meta()`, returning `meta` as JSON."""
    data = bytearray(json.dumps(meta).encode()) + b"\0"
    arr = ir.ArrayType(I8, len(data))
    g = ir.GlobalVariable(module, arr, name="autosched_module_meta_data")
    g.global_constant = True
    g.initializer = ir.Constant(arr, data)
    g.type = PTR
    fn = ir.Function(module, ir.FunctionType(PTR, []), name="autosched_module_meta")
    ir.IRBuilder(fn.append_basic_block("entry")).ret(g)


__all__ = ["add_module_meta", "add_packed"]
