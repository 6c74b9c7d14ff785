"""CSourceModule: C source from an external codegen (ccompiler), compiled by the system
C compiler into a shared library and loaded (TVM's CSourceModule, compiled and linked
as export_library does it).

The C is compiled once, when the module is made; its SaveToBinary keeps the source and
the compiled library, so a saved model loads where no C compiler is installed, and
`get_source("c")` shows the C either way.
"""
from __future__ import annotations

import ctypes
import os
import subprocess
import tempfile

import llvmlite.binding as llvm

from ..errors import BuildError
from ..runtime.export_library import c_compiler
from ..runtime.external import ExternalModule
from ..target import Target

CFLAGS = ["-O3", "-fPIC", "-shared", "-fno-math-errno"]


def march_options() -> list[list[str]]:
    """The C compiler's -march for the current target (Target.current(), the graph
    build's), best first: its CPU by LLVM's name, which GCC and Clang mostly share for x86
    (znver4, sapphirerapids, ...), then the x86-64 level its features imply, for a
    compiler that does not know the name; -march=native for the host's CPU and features
    or outside a target; nothing for a CPU of another architecture."""
    target = Target.current()
    if target is None or (target.mcpu == llvm.get_host_cpu_name()
                          and target.features == Target("llvm").features):
        return [["-march=native"]]
    if not target.mtriple.startswith("x86_64"):
        return [[]]
    feats = set(target.features.split(","))
    level = next((lvl for feat, lvl in (("+avx512f", "x86-64-v4"), ("+avx2", "x86-64-v3"),
                                        ("+sse4.2", "x86-64-v2")) if feat in feats),
                 "x86-64")
    name = _GCC_NAMES.get(target.mcpu, target.mcpu)
    return [[f"-march={name}"], [f"-march={level}"]] if name != level else \
        [[f"-march={level}"]]


_GCC_NAMES = {"generic": "x86-64"}  # LLVM's CPU names that GCC calls otherwise


class CSourceModule(ExternalModule):
    """A function's C source and the shared library compiled from it, loaded (see the
    module docstring)."""
    type_key = "c"

    def __init__(self, symbol: str, source: str, library: bytes):
        super().__init__(symbol)
        self.source, self.library = source, library
        with tempfile.TemporaryDirectory(prefix="autosched-c-") as tmp:
            path = os.path.join(tmp, f"{symbol}.so")
            with open(path, "wb") as f:
                f.write(library)
            try:
                self._lib = ctypes.CDLL(path)  # the mapping outlives the file
            except OSError as err:
                raise ValueError(f"{symbol}: cannot load its compiled C: {err}") from None

    @classmethod
    def create(cls, symbol: str, source: str) -> CSourceModule:
        """Compile `source` (which defines `symbol` and `symbol_packed`) and load it; no
        C compiler, or one that fails, is a BuildError naming the function."""
        cc = c_compiler()
        if cc is None:
            raise BuildError(f"{symbol}: the ccompiler codegen needs a C compiler (cc, "
                             "gcc or clang on the PATH, or $CC) and none was found")
        with tempfile.TemporaryDirectory(prefix="autosched-c-") as tmp:
            src, lib = os.path.join(tmp, f"{symbol}.c"), os.path.join(tmp, f"{symbol}.so")
            with open(src, "w") as f:
                f.write(source)
            for march in march_options():  # the next one when the compiler refuses one
                flags = [*CFLAGS, *march]
                done = subprocess.run([cc, *flags, "-o", lib, src, "-lm"],
                                      capture_output=True, text=True)
                if done.returncode == 0:
                    break
            if done.returncode != 0:
                raise BuildError(f"{symbol}: {cc} {' '.join(flags)} failed on its C "
                                 f"source:\n{done.stderr[-2000:]}")
            with open(lib, "rb") as f:
                library = f.read()
        return cls(symbol, source, library)

    def link_object(self) -> bytes:
        """Its C compiled to position-independent object code for the current target (it
        needs libc and libm alone)."""
        cc = c_compiler()
        if cc is None:
            raise BuildError(f"{self.symbol}: compiling its C needs a C compiler (cc, gcc "
                             "or clang on the PATH, or $CC) and none was found")
        with tempfile.TemporaryDirectory(prefix="autosched-c-") as tmp:
            src, obj = os.path.join(tmp, f"{self.symbol}.c"), os.path.join(tmp, "out.o")
            with open(src, "w") as f:
                f.write(self.source)
            for march in march_options():
                flags = [*(f for f in CFLAGS if f != "-shared"), "-c", *march]
                done = subprocess.run([cc, *flags, "-o", obj, src], capture_output=True,
                                      text=True)
                if done.returncode == 0:
                    with open(obj, "rb") as f:
                        return f.read()
        raise BuildError(f"{self.symbol}: {cc} {' '.join(flags)} failed on its C source:\n"
                         f"{done.stderr[-2000:]}")

    def _address(self, name: str) -> int:
        try:
            return ctypes.cast(getattr(self._lib, name), ctypes.c_void_p).value
        except AttributeError:
            raise ValueError(f"{self.symbol}: its C library has no function {name}") from None

    def function_address(self) -> int:
        return self._address(self.symbol)

    def packed_address(self) -> int:
        return self._address(self.symbol + "_packed")

    def get_source(self, fmt: str = "c") -> str:
        if fmt not in ("c", ""):
            raise ValueError(f"{self.symbol}: a C module shows its source as 'c', not {fmt!r}")
        return self.source

    def save(self) -> bytes:
        source = self.source.encode()
        return len(source).to_bytes(8, "little") + source + self.library

    @classmethod
    def load(cls, symbol: str, data: bytes) -> CSourceModule:
        n = int.from_bytes(data[:8], "little")
        return cls(symbol, data[8:8 + n].decode(), data[8 + n:])
