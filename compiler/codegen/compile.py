"""From an IRModule of lowered functions to a loaded runtime.Module.

CodeGenLLVM writes the LLVM IR; LLVM verifies it, optimizes it at O3 for the target's
CPU and features (the new pass manager, with loop and SLP vectorization on), and MCJIT
compiles it to machine code (a model's kernels: each its own module, compiled on the
target's cores at once, compile_graph). Any LLVM complaint becomes a BuildError naming the function.
"""
from __future__ import annotations

import json
import os
from concurrent.futures import Future, ThreadPoolExecutor

import llvmlite.binding as llvm
from llvmlite import ir

from .. import disk_cache
from ..errors import BuildError
from ..ir.functor import collect_stmts
from ..ir.module import IRModule
from ..ir.stmt import PrimFunc, Store
from ..llvm_target import optimize, target_machine
from ..runtime.module import Module
from ..runtime.shape_expr import encode_dim
from ..target import Target
from .graph_entry import ENTRY, add_graph_entry
from .llvm import CodeGenLLVM
from .llvm_ops import I32, PTR


def module_meta(mod, target: Target, entry: str) -> dict:
    """What the runtime checks arguments against: names, dtypes, the buffers written,
    and shapes, each dimension an int, the key of a symbolic size, or {"expr": tree}
    for an expression of sizes (runtime/shape_expr.py; checked once the sizes are bound);
    the sizes' keys in call order (unique even when two te.var share a name)."""
    func = mod[entry]
    written = {s.buffer for s in collect_stmts(func.body, lambda n: isinstance(n, Store))}
    keys = {}
    for v in func.size_vars:
        keys[v] = v.name if v.name not in keys.values() else f"{v.name}_{len(keys)}"
    bound = {d for b in func.params for d in b.shape if d in keys}
    for v in func.size_vars:
        if v not in bound:
            raise BuildError(f"{entry}: symbolic size {v.name} appears only inside shape "
                             "expressions; give some argument a dimension of exactly "
                             f"{v.name} so that calls can bind it")

    return {
        "entry": entry,
        "target": str(target),
        "params": [{"name": b.name, "dtype": b.dtype, "written": b in written,
                    "shape": [encode_dim(d, keys, f"dimension {k} of argument {b.name} of "
                                                  f"{entry}") for k, d in enumerate(b.shape)]}
                   for b in func.params],
        "size_vars": [keys[v] for v in func.size_vars],
    }


def generate_llvm(mod, target: Target, entry: str) -> str:
    """The unoptimized LLVM IR text of every function of `mod`, plus the metadata."""
    cg = CodeGenLLVM(target, name=entry)
    for func in mod.functions.values():
        cg.add_function(func)
    cg.add_metadata(module_meta(mod, target, entry))
    return str(cg.module)


def _optimized(mod, target: Target, entry: str):
    """The verified, O3-optimized LLVM module of `mod`, and the target machine used."""
    return optimized_text(generate_llvm(mod, target, entry), target, entry)


def optimized_text(text: str, target: Target, entry: str, context=None):
    """The verified, O3-optimized LLVM module of the IR `text`, and the target machine;
    `context`: the LLVM context to parse it in (default the global one)."""
    try:
        ref = llvm.parse_assembly(text, context=context)
        ref.verify()
    except RuntimeError as err:
        raise BuildError(f"LLVM rejected the code generated for {entry}: {err}") from None
    tm = target_machine(target)
    optimize(ref, tm)
    return ref, tm


def compile_module(mod, target: Target, entry: str = "main"):
    """Generate, verify, optimize and JIT-compile `mod`; returns a runtime.Module."""
    ref, tm = _optimized(mod, target, entry)
    return Module.from_llvm(ref, target, loop_ir=str(mod), tm=tm)


def compile_object(mod, target: Target, entry: str = "main") -> bytes:
    """Generate, verify and optimize `mod` and return the target's object code: what a
    tuner's build workers send to the host that times it (runtime.load_object)."""
    ref, tm = _optimized(mod, target, entry)
    return tm.emit_object(ref)


def compile_graph(kernels: dict, steps: list[dict], num_slots: int, target: Target,
                  keys: dict | None = None, context_key=None):
    """One runtime.Module for a whole model: its kernels and the native entry function
    that runs `steps` in order (graph_entry.py). `kernels`: name -> a lowered PrimFunc
    with static shapes, or a kernel compiled before (disk_cache.load or compile_kernel:
    its header and object code); `keys`: name -> the key under which to keep a kernel compiled here
    in the disk cache; `context_key`: the part of the disk cache's keys common to the
    build's kernels (compiler.build.build_key), under which with its IR text the entry
    function's object code is kept too (None: it is not), so that a model built again
    costs no LLVM at all. Calling the module on the int64 slot table runs the model; its
    metadata keeps each kernel's own (meta["kernels"]), so a profiler can call one
    kernel through `<name>_packed`.

    Each kernel is an LLVM module of its own, and so is the entry function (which
    declares the kernels): LLVM verifies, optimizes and emits each on a thread of
    `target.num_cores` (llvmlite's calls release the GIL, and each module lives in an
    LLVM context of its own, as LLVM requires of concurrent work), while this thread
    writes the next kernel's IR; the JIT links the objects. The kernels are `noinline`
    in their modules as in the entry's, so each one's code is what one module made."""
    keys = keys or {}
    target_machine(target)  # LLVM's targets initialized once, before the threads
    headers, jobs = {}, {}
    with ThreadPoolExecutor(max(1, target.num_cores or os.cpu_count() or 1)) as pool:
        for name, kernel in kernels.items():
            if isinstance(kernel, PrimFunc):
                headers[name], text = _kernel_ir(kernel, target)
                jobs[name] = pool.submit(_object_of, text, target, name)
            else:
                headers[name], jobs[name] = kernel[0], _done(kernel[1], kernel[0]["ir"])
        meta = {"entry": ENTRY, "target": str(target), "size_vars": [],
                "params": [{"name": "slots", "dtype": "int64", "shape": [num_slots],
                            "written": False}],
                "kernels": {n: h["meta"] for n, h in headers.items()}}
        entry_key = disk_cache.cache_key(context_key, ENTRY, _entry_inputs(
            headers, steps, meta, target)) if context_key else None
        cached = disk_cache.load(entry_key) if entry_key else None
        cached = cached if cached and "ir" in cached[0] else None
        jobs[ENTRY] = _done(cached[1], cached[0]["ir"]) if cached else \
            pool.submit(_object_of, _entry_ir(headers, steps, meta, target), target, ENTRY)
        parts = {name: job.result() for name, job in jobs.items()}
    for name, key in keys.items():
        if isinstance(kernels.get(name), PrimFunc):
            disk_cache.store(key, {**headers[name], "ir": parts[name][1]}, parts[name][0])
    if entry_key and not cached:
        disk_cache.store(entry_key, {"graph_entry": True, "ir": parts[ENTRY][1]},
                         parts[ENTRY][0])
    return Module.from_objects([obj for obj, _ in parts.values()], target,
                               llvm_ir=[text for _, text in parts.values()],
                               loop_ir="\n\n".join(h["loop_ir"] for h in headers.values()))


def _entry_ir(headers: dict, steps: list[dict], meta: dict, target: Target) -> str:
    """The LLVM IR text of the entry module: a declaration of each kernel (of
    `headers`, in their order), graph_run over `steps`, and the module's metadata."""
    entry = CodeGenLLVM(target, name=ENTRY)
    for name, header in headers.items():
        ir.Function(entry.module, ir.FunctionType(I32, [PTR] * len(header["meta"]["params"])),
                    name=name)
    add_graph_entry(entry.module, steps)
    entry.add_metadata(meta)
    return str(entry.module)


def _entry_inputs(headers: dict, steps: list[dict], meta: dict, target: Target) -> str:
    """What _entry_ir's text follows from, as the disk cache keys the entry's object
    code (with the compiler's source, in the build's context key): a model built again
    finds it without writing the IR (0.04-0.06 s of llvmlite on DenseNet-121's 136
    steps)."""
    return json.dumps([ENTRY, target.mtriple, list(headers), steps, meta], sort_keys=True,
                      default=repr)


def compile_kernel(func: PrimFunc, target: Target) -> tuple[dict, bytes]:
    """A model's kernel compiled as compile_graph compiles it, in the form the disk
    cache keeps it and compile_graph takes it back: its header (metadata, loop IR and
    optimized LLVM IR, "ir") and its object code."""
    header, text = _kernel_ir(func, target)
    obj, optimized = _object_of(text, target, func.name)
    return {**header, "ir": optimized}, obj


def _kernel_ir(func: PrimFunc, target: Target) -> tuple[dict, str]:
    """A model's kernel as an LLVM module of its own (`noinline`, as the entry calls it):
    its header (metadata, loop IR) and its unoptimized IR text."""
    if func.size_vars:
        raise BuildError(f"{func.name}: a kernel of a model has symbolic sizes")
    cg = CodeGenLLVM(target, name=func.name)
    cg.add_function(func)
    cg.module.get_global(func.name).attributes.add("noinline")
    one = IRModule.from_func(func)
    return {"meta": module_meta(one, target, func.name), "loop_ir": str(one)}, str(cg.module)


def _done(obj: bytes, text: str) -> Future:
    """A future already holding a cached kernel's object code and optimized IR."""
    done = Future()
    done.set_result((obj, text))
    return done


def _object_of(text: str, target: Target, entry: str) -> tuple[bytes, str]:
    """The object code and the optimized IR text of the LLVM IR `text`, in an LLVM
    context of its own (compile_graph runs several at once)."""
    ref, tm = optimized_text(text, target, entry, llvm.create_context())
    return tm.emit_object(ref), str(ref)


__all__ = ["compile_graph", "compile_kernel", "compile_module", "compile_object",
           "generate_llvm"]
