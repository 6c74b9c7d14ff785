"""External runtime modules: the compiled form of a function an external codegen took
(TVM's runtime modules of other kinds than the DSO one, with SaveToBinary and
LoadFromBinary).

Each kind has a type key ("c" for C compiled by the system compiler, "cblas" for calls
of OpenBLAS) and registers its loader here, so a model file holding modules of several
kinds loads in a fresh process: `load_external(type_key, symbol, data)` is the
LoadFromBinary of that kind, `module.save()` its SaveToBinary.

Every external module exports one function under its global symbol, with the calling
convention of the build's kernels: `int32 symbol(void *arg0, ..., void *out)` on the
data pointers, 0 on success; and its packed form `int32 symbol_packed(int64 *args)`
that the timing loop and the profiler call.

A kind that calls a shared library also registers it by a symbol (register_library), so
object code that calls it (a library's candidate that a tuning worker built) loads
where the library was not loaded yet.
"""
from __future__ import annotations

from collections.abc import Callable

_LOADERS: dict[str, Callable] = {}
_LIBRARIES: dict[bytes, Callable] = {}


class ExternalModule:
    """The base of the external kinds: see the module docstring."""
    type_key = ""

    def __init__(self, symbol: str):
        self.symbol = symbol

    def function_address(self) -> int:
        """The address of `int32 symbol(void *...)`."""
        raise NotImplementedError

    def packed_address(self) -> int:
        """The address of `int32 symbol_packed(int64 *args)`."""
        raise NotImplementedError

    def save(self) -> bytes:
        """What `load_external(self.type_key, symbol, data)` rebuilds this module from."""
        raise NotImplementedError

    def link_object(self) -> bytes:
        """Position-independent object code that defines the function with nothing beyond
        the C runtime, for a model library (runtime/export_library.py), built for the
        current target; a kind that cannot give one raises ValueError saying why."""
        raise ValueError(f"external function {self.symbol} ({self.type_key}) cannot be "
                         "linked into a model library")

    def get_source(self, fmt: str = "") -> str:
        raise ValueError(f"{self.symbol}: a {self.type_key} module has no source")


def register_loader(type_key: str, load: Callable) -> None:
    """Register the LoadFromBinary of a kind: load(symbol, data) -> ExternalModule."""
    _LOADERS[type_key] = load


def load_external(type_key: str, symbol: str, data: bytes) -> ExternalModule:
    if type_key not in _LOADERS:
        raise ValueError(f"{symbol}: no loader for external modules of kind {type_key!r} "
                         f"(known: {', '.join(sorted(_LOADERS)) or 'none'})")
    return _LOADERS[type_key](symbol, data)


def register_library(symbol: bytes, load: Callable) -> None:
    """`load()` makes the library defining `symbol` known to LLVM's linker: object code
    that names the symbol (a library's candidate in tuning) is loaded after it."""
    _LIBRARIES[symbol] = load


def load_libraries_for(data: bytes) -> None:
    """Load the registered libraries whose symbols the object code `data` names."""
    for symbol, load in _LIBRARIES.items():
        if symbol in data:
            load()
