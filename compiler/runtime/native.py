"""The native runtime: the thread pool and timing loop of runtime.ll, JIT-compiled once.

Kernels run their parallel loops through `autosched_parallel_for` and the tuner times
them through `autosched_time`; both are LLVM IR (runtime.ll) so that no Python and no
GIL run inside a parallel loop or a timed region, and no C compiler is needed.
`ensure_loaded()` compiles that IR into one MCJIT engine for the whole process and
registers its symbols with LLVM, so kernel modules JIT-compiled later only *declare*
the runtime functions and all share one worker pool. One launch owns the pool at a
time: a launch from another thread (two threads running models at once) or from inside
a task finds it taken and runs its tasks serially on its own thread, without waiting.
"""
from __future__ import annotations

import ctypes
import functools
import threading
from pathlib import Path

import llvmlite.binding as llvm

from .. import disk_cache
from ..llvm_target import optimize, target_machine
from ..target import host_target

_IR_PATH = Path(__file__).with_name("runtime.ll")

_TIME_PROTO = ctypes.CFUNCTYPE(
    ctypes.c_int32, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int32, ctypes.c_int32,
    ctypes.c_int32, ctypes.c_int32, ctypes.POINTER(ctypes.c_double), ctypes.c_int32)

_FLUSH_PROTO = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_void_p, ctypes.c_int64, ctypes.c_int32,
                                ctypes.c_int32)

_load_lock = threading.Lock()
_symbols: dict[str, int] | None = None
# The engine owns the machine code the registered addresses point into; it must live
# as long as the process, since worker threads keep running that code.
_engine = None


@functools.cache
def runtime_ir() -> str:
    """The text of runtime.ll, for JIT compilation here or linking into a shared library."""
    return _IR_PATH.read_text()


def _exported_names(mod) -> list[str]:
    """Functions and globals that runtime.ll defines with external linkage."""
    values = [*mod.functions, *mod.global_variables]
    return [v.name for v in values
            if not v.is_declaration and v.linkage == llvm.Linkage.external]


def _load() -> dict[str, int]:
    """JIT-compile runtime.ll at O3 for the host and register its exported symbols; its
    object code and exported names come from the disk cache when it holds them (a tenth
    of a second of LLVM that every process would spend again), keyed by the IR, the
    host target and the LLVM version."""
    global _engine
    host = host_target()
    tm = target_machine(host)
    key = disk_cache.cache_key("native runtime", runtime_ir(), str(host),
                               list(llvm.llvm_version_info)) \
        if disk_cache.cache_dir() is not None else None
    cached = disk_cache.load(key) if key else None
    engine = llvm.create_mcjit_compiler(llvm.parse_assembly(""), tm)
    if cached is not None:
        names = cached[0]["names"]
        engine.add_object_file(llvm.ObjectFileRef.from_data(cached[1]))
    else:
        mod = llvm.parse_assembly(runtime_ir())
        mod.verify()
        optimize(mod, tm)
        names = _exported_names(mod)
        obj = tm.emit_object(mod)
        engine.add_object_file(llvm.ObjectFileRef.from_data(obj))
        if key:
            disk_cache.store(key, {"names": names}, obj)
    engine.finalize_object()
    symbols = {}
    for name in names:
        address = engine.get_global_value_address(name)
        llvm.add_symbol(name, address)
        symbols[name] = address
    _engine = engine
    return symbols


def ensure_loaded() -> dict[str, int]:
    """Compile and register the runtime once per process; returns {symbol: address}.

    Thread-safe.  After it returns, any module JIT-compiled by llvmlite in this process
    that declares `autosched_parallel_for`, `autosched_time` or `autosched_num_workers`
    links against this single copy (and its single worker pool).
    """
    global _symbols
    with _load_lock:
        if _symbols is None:
            _symbols = _load()
        return dict(_symbols)


def time_native(fn_address: int, args_address: int, number: int, repeat: int,
                min_repeat_ms: int, cooldown_ms: int = 0, warmup: bool = True) -> list[float]:
    """Time the kernel at `fn_address` (an `i32 (ptr args)`) with `autosched_time`.

    Follows TVM's time_evaluator: one warm-up call (skipped when not `warmup`), then
    `repeat` measurements of `number` calls each; a measurement shorter than
    `min_repeat_ms` is redone with a larger number, kept for later repeats.
    `cooldown_ms` (default 0) is slept between repeats. `args_address` points at the
    kernel's packed i64 arguments. Returns seconds per call, one entry per repeat. The GIL
    is released for the whole loop.
    Raises RuntimeError with the code if the kernel returns nonzero.
    """
    if number < 1 or repeat < 1:
        raise ValueError(f"number and repeat must be at least 1, got {number} and {repeat}")
    if min_repeat_ms < 0 or cooldown_ms < 0:
        raise ValueError(f"min_repeat_ms and cooldown_ms must not be negative, "
                         f"got {min_repeat_ms} and {cooldown_ms}")
    time_fn = _TIME_PROTO(ensure_loaded()["autosched_time"])
    results = (ctypes.c_double * repeat)()
    code = time_fn(fn_address, args_address, number, repeat, min_repeat_ms, cooldown_ms,
                   results, int(warmup))
    if code != 0:
        raise RuntimeError(f"kernel at {fn_address:#x} returned error code {code} "
                           "while being timed")
    return list(results)


def flush_lines(address: int, nbytes: int, tasks: int) -> None:
    """Evict the cache lines of the `nbytes` bytes at `address` from every level of the
    caches, in `tasks` parallel tasks on the worker pool (runtime.ll's
    autosched_flush_lines: clflushopt where the host has it, else clflush; then a
    fence). The GIL is released."""
    _flush_fn()(address, nbytes, tasks, int("+clflushopt" in host_target().features))


@functools.cache
def _flush_fn():
    return _FLUSH_PROTO(ensure_loaded()["autosched_flush_lines"])
