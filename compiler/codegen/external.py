"""The external codegens (TVM's `relay.ext.NAME`): `register_external(name, fn)`, where
fn(function, symbol) turns a function that PartitionGraph gave to `name` into a runtime
module (runtime/external.py) exporting `symbol`.

The function a codegen sees is typed; its parameters are the values entering the
region, then the region's non-scalar constants (the build lifts them out, so the
weights travel as the model's constants and not through the codegen's code); scalar
constants stay in the body. A codegen that meets a call it cannot compile raises a
BuildError naming the function and the op. The codegens that come with autosched
(ccompiler, cblas) register themselves when compiler.codegen is imported.
"""
from __future__ import annotations

from collections.abc import Callable

_CODEGENS: dict[str, Callable] = {}


def register_external(name: str, codegen: Callable) -> None:
    """Register (or replace) the external codegen `name`."""
    _CODEGENS[name] = codegen


def get_external(name: str) -> Callable:
    if name not in _CODEGENS:
        raise KeyError(f"no external codegen {name!r}; the registered ones are "
                       f"{', '.join(sorted(_CODEGENS)) or 'none'}")
    return _CODEGENS[name]


def external_codegens() -> list[str]:
    return sorted(_CODEGENS)
