"""runtime.Module: a compiled function that Python calls on numpy arrays.

The module keeps the metadata the code was built with (argument names, dtypes, shapes,
which buffers it writes), so every call checks count, dtype, shape, contiguity and
writability first and names the bad argument: a wrong array is an error, never a crash.
The arguments travel to `<entry>_packed` as one int64 array (data pointers, then the
symbolic sizes), through ctypes, which releases the GIL for the call.
"""
from __future__ import annotations

import ctypes
import json
import os
import shutil
import subprocess
import tempfile

import llvmlite.binding as llvm
import numpy as np

from ..ir.dtype import numpy_dtype
from ..llvm_target import optimize, target_machine
from ..target import Target
from . import native
from .export_library import c_compiler
from .external import load_libraries_for
from .shape_expr import check_dim, dim_value
from .graph_executor import is_graph_file, load_graph
from .model_library import ModelLibrary, is_model_library
from .profile_result import ProfileResult

_PACKED = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_void_p)
_META = ctypes.CFUNCTYPE(ctypes.c_char_p)


class Module:
    """A loaded function: `f(*arrays)`, `f.time_evaluator(...)`, `f.get_source()`,
    `f.export(path)`. Made by compiler.build() or runtime.load()."""

    def __init__(self, meta: dict, address: int, keepalive=(), llvm_ir=None,
                 target=None, loop_ir: str | None = None):
        for p in meta["params"]:
            for k, dim in enumerate(p["shape"]):
                check_dim(dim, meta["size_vars"],
                          f"dimension {k} of argument {p['name']} of {meta['entry']}")
        self.meta = meta
        self.entry_name = meta["entry"]
        self._address = address
        self._fn = _PACKED(address)
        self._keepalive = keepalive  # the engine or library that owns the machine code
        # the optimized LLVM IR: its text, or the texts of the modules it was built from
        # (a model's kernels), linked into one on first use (get_source, export)
        self._ir_parts = llvm_ir
        self._target = target
        self._loop_ir = loop_ir

    @classmethod
    def from_llvm(cls, ref: llvm.ModuleRef, target, loop_ir: str | None = None,
                  tm: llvm.TargetMachine | None = None) -> Module:
        """JIT-compile an optimized LLVM module (from codegen) and load it; `loop_ir` is
        the text of the loop IR it was generated from, for get_source("ir"); `tm` the
        target machine it was optimized with (the engine takes it over)."""
        native.ensure_loaded()
        engine = llvm.create_mcjit_compiler(ref, tm or target_machine(target))
        engine.finalize_object()
        meta = json.loads(_META(engine.get_function_address("autosched_module_meta"))())
        address = engine.get_function_address(meta["entry"] + "_packed")
        return cls(meta, address, (engine, ref), str(ref), target, loop_ir)

    @property
    def _llvm_ir(self) -> str | None:
        if isinstance(self._ir_parts, list):
            linked = llvm.parse_assembly(self._ir_parts[0])
            for text in self._ir_parts[1:]:
                linked.link_in(llvm.parse_assembly(text))
            self._ir_parts = str(linked)
        return self._ir_parts

    @classmethod
    def from_objects(cls, objects: list[bytes], target, llvm_ir: list[str],
                     loop_ir: str | None = None) -> Module:
        """Load the object code of several modules made together (a model's kernels and
        its entry, codegen/compile.py), the last one holding the metadata and the entry;
        `llvm_ir`: their optimized IR texts, which get_source and export link into one."""
        native.ensure_loaded()
        engine = llvm.create_mcjit_compiler(llvm.parse_assembly(""), target_machine(target))
        for data in objects:
            engine.add_object_file(llvm.ObjectFileRef.from_data(data))
        engine.finalize_object()
        meta = json.loads(_META(engine.get_function_address("autosched_module_meta"))())
        address = engine.get_function_address(meta["entry"] + "_packed")
        return cls(meta, address, (engine,), list(llvm_ir), target, loop_ir)

    @classmethod
    def from_object(cls, data: bytes, target) -> Module:
        """Load object code made by compiler.build_object (possibly in another process):
        MCJIT links it against the native runtime of this process."""
        problem = _elf_problem(bytes(data))
        if problem:  # LLVM crashes on object files it cannot parse, rather than failing
            raise ValueError(f"cannot load the object code: {problem}")
        native.ensure_loaded()
        load_libraries_for(bytes(data))  # a library's candidate calls it (runtime/external.py)
        engine = llvm.create_mcjit_compiler(llvm.parse_assembly(""), target_machine(target))
        try:
            engine.add_object_file(llvm.ObjectFileRef.from_data(bytes(data)))
            engine.finalize_object()
        except RuntimeError as err:
            raise ValueError(f"cannot load the object code: {err}") from None
        meta_fn = engine.get_function_address("autosched_module_meta")
        if not meta_fn:
            raise ValueError("the object code was not made by compiler.build_object "
                             "(it has no autosched_module_meta)")
        meta = json.loads(_META(meta_fn)())
        address = engine.get_function_address(meta["entry"] + "_packed")
        return cls(meta, address, (engine,), target=target)

    def function_address(self, symbol: str) -> int:
        """The address of another function of this module's machine code (a model's
        kernel, `<name>_packed`), from the JIT engine or the shared library that owns it."""
        owner = self._keepalive
        if isinstance(owner, ctypes.CDLL):
            address = ctypes.cast(getattr(owner, symbol, None), ctypes.c_void_p).value
        else:
            address = owner[0].get_function_address(symbol)
        if not address:
            raise KeyError(f"{self.entry_name}: no function {symbol} in this module")
        return address

    # ------------------------------------------------------------------ calling

    def _pack(self, arrays) -> np.ndarray:
        params = self.meta["params"]
        name = self.entry_name
        if len(arrays) != len(params):
            expected = ", ".join(p["name"] for p in params)
            raise TypeError(f"{name} takes {len(params)} arrays ({expected}), got {len(arrays)}")
        sizes: dict[str, int] = {}
        packed = np.empty(len(params) + len(self.meta["size_vars"]), dtype=np.int64)
        for pos, (arr, p) in enumerate(zip(arrays, params)):
            what = f"argument {pos} ({p['name']}) of {name}"
            if not isinstance(arr, np.ndarray):
                raise TypeError(f"{what} must be a numpy array, got {type(arr).__name__}")
            if arr.dtype != numpy_dtype(p["dtype"]):
                raise TypeError(f"{what} has dtype {arr.dtype}, expected {p['dtype']}")
            if arr.ndim != len(p["shape"]):
                raise ValueError(f"{what} has shape {arr.shape}, expected {len(p['shape'])} "
                                 f"dimensions {tuple(p['shape'])}")
            for got, want in zip(arr.shape, p["shape"]):
                if isinstance(want, str):
                    sizes.setdefault(want, got)
            if not arr.flags.c_contiguous:
                raise ValueError(f"{what} is not C-contiguous; pass np.ascontiguousarray(...)")
            if p["written"] and not arr.flags.writeable:
                raise ValueError(f"{what} is written by {name} but the array is read-only")
            packed[pos] = arr.ctypes.data
        for pos, (arr, p) in enumerate(zip(arrays, params)):
            want = tuple(dim_value(d, sizes) for d in p["shape"])
            if arr.shape != want:
                raise ValueError(f"argument {pos} ({p['name']}) of {name} has shape "
                                 f"{arr.shape}, expected {want}")
        for pos, var in enumerate(self.meta["size_vars"], start=len(params)):
            if sizes.get(var, 0) < 1:
                raise ValueError(f"symbolic size {var} of {name} must be at least 1")
            packed[pos] = sizes[var]
        return packed

    def __call__(self, *arrays) -> None:
        """Run on numpy arrays; outputs are written in place."""
        packed = self._pack(arrays)
        rc = self._fn(packed.ctypes.data)
        if rc != 0:
            raise RuntimeError(f"{self.entry_name} failed with code {rc}"
                               + (" (out of memory)" if rc == -1 else ""))

    def time_evaluator(self, number: int = 10, repeat: int = 1, min_repeat_ms: int = 0,
                       cooldown_ms: int = 0, warmup: bool = True):
        """A function that times this module on given arrays, in native code.

        Each of `repeat` measurements runs the function `number` times (raised until one
        measurement takes at least `min_repeat_ms`) after one warm-up call (none with
        warmup=False), and records seconds per call; `cooldown_ms` sleeps between
        measurements. Returns a ProfileResult with .mean, .median and .results.
        """
        for knob, value, least in (("number", number, 1), ("repeat", repeat, 1),
                                   ("min_repeat_ms", min_repeat_ms, 0),
                                   ("cooldown_ms", cooldown_ms, 0)):
            if not isinstance(value, int) or value < least:
                raise ValueError(f"time_evaluator: {knob} must be an integer >= {least}, "
                                 f"got {value!r}")

        def evaluate(*arrays) -> ProfileResult:
            packed = self._pack(arrays)
            results = native.time_native(self._address, packed.ctypes.data, number, repeat,
                                         min_repeat_ms, cooldown_ms, warmup)
            return ProfileResult(tuple(results))
        return evaluate

    # ------------------------------------------------------------------ source and export

    def get_source(self, fmt: str = "ll") -> str:
        """The optimized LLVM IR (`"ll"`), the target's assembly (`"asm"`), or the loop IR
        after every pass, as code generation saw it (`"ir"`)."""
        if fmt == "ir" and self._loop_ir is not None:
            return self._loop_ir
        if self._llvm_ir is None:
            raise ValueError(f"{self.entry_name} was loaded from a shared library; "
                             "its LLVM source is not kept")
        if fmt == "ll":
            return self._llvm_ir
        if fmt == "asm":
            return target_machine(self._target).emit_assembly(llvm.parse_assembly(self._llvm_ir))
        raise ValueError(f"unknown source format {fmt!r}; use 'll', 'asm' or 'ir'")

    def _linked(self) -> llvm.ModuleRef:
        """This module with the parallel runtime linked in: a self-contained unit."""
        ref = llvm.parse_assembly(self._llvm_ir)
        ref.link_in(llvm.parse_assembly(native.runtime_ir()))
        return ref

    def object_code(self, rename: dict[str, str] | None = None) -> bytes:
        """This module with the parallel runtime linked in, as position-independent object
        code for the target: what a shared library is linked from. `rename` gives the
        functions it calls (declares) other names: {old: new}."""
        if self._llvm_ir is None:
            raise ValueError(f"{self.entry_name} was loaded from a shared library; its "
                             "object code is not kept")
        ref = self._linked()
        for old, new in (rename or {}).items():
            fn = next((f for f in ref.functions if f.name == old and f.is_declaration), None)
            if fn is not None:
                fn.name = new
        tm = target_machine(self._target, pic=True)
        optimize(ref, tm)
        return tm.emit_object(ref)

    def export(self, path) -> str:
        """Write a self-contained artifact that runtime.load() opens without the schedule:
        a shared library when a C compiler is there to link it, else LLVM bitcode.
        Returns "so" or "bc"."""
        if self._llvm_ir is None:
            shutil.copyfile(self._keepalive._name, path)
            return "so"
        cc = c_compiler()
        if cc is None:
            with open(path, "wb") as f:
                f.write(self._linked().as_bitcode())
            return "bc"
        with tempfile.TemporaryDirectory() as tmp:
            obj = os.path.join(tmp, "module.o")
            with open(obj, "wb") as f:
                f.write(self.object_code())
            done = subprocess.run([cc, "-shared", "-o", os.fspath(path), obj, "-lm", "-lpthread"],
                                  capture_output=True, text=True)
            if done.returncode != 0:
                raise RuntimeError(f"linking {path} with {cc} failed:\n{done.stderr}")
        return "so"


def _elf_problem(data: bytes) -> str | None:
    """Why `data` is not a whole 64-bit little-endian relocatable ELF file (what
    build_object makes on x86-64 Linux), or None."""
    if len(data) < 64 or data[:4] != b"\x7fELF":
        return "not an ELF object file"
    if data[4] != 2 or data[5] != 1 or int.from_bytes(data[16:18], "little") != 1:
        return "not a 64-bit little-endian relocatable ELF object"
    shoff = int.from_bytes(data[40:48], "little")
    shentsize, shnum = (int.from_bytes(data[i:i + 2], "little") for i in (58, 60))
    if shentsize != 64 or shoff + shentsize * shnum > len(data):
        return "a truncated or damaged ELF object (its section table lies outside the file)"
    return None


def load_object(data: bytes, target="llvm") -> Module:
    """Load object code from compiler.build_object() for `target` (a Target or string)."""
    return Module.from_object(data, Target(target))


def load(path):
    """Load a module written by Module.export() (a shared library or LLVM bitcode), a
    model written by GraphExecutor.export() (a GraphExecutor), or a model library written
    by GraphExecutor.export_library() (a ModelLibrary, through its C API). Metadata this
    version does not write (e.g. a shape that is not a JSON shape expression,
    runtime/shape_expr.py) raises ModuleFormatError."""
    path = os.path.abspath(os.fspath(path))
    if is_graph_file(path):
        return load_graph(path, load)
    with open(path, "rb") as f:
        data = f.read(4)  # a model library's weights need not be read to know what it is
        if data == b"BC\xc0\xde":
            data += f.read()
    if data[:4] == b"\x7fELF":
        lib = ctypes.CDLL(path)
        if is_model_library(lib):
            return ModelLibrary(path)
        meta = json.loads(_META(ctypes.cast(lib.autosched_module_meta, ctypes.c_void_p).value)())
        address = ctypes.cast(getattr(lib, meta["entry"] + "_packed"), ctypes.c_void_p).value
        return Module(meta, address, lib)
    if data[:4] == b"BC\xc0\xde":
        ref = llvm.parse_bitcode(data)
        return Module.from_llvm(ref, Target("llvm"))
    raise ValueError(f"{path} is neither a shared library nor LLVM bitcode written by export()")


__all__ = ["Module", "ProfileResult", "load", "load_object"]
