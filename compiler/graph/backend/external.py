"""The registry of external codegens (TVM's `relay.ext.NAME`): `register_external(name,
fn)`, where fn(function, symbol) turns a function that PartitionGraph gave to `name`
into a runtime module (runtime/external.py) exporting `symbol`. The graph build looks a
codegen up here by the name it was asked for (build.py's `external`).

The function a codegen sees is typed; its parameters are the values entering the
region, then the region's non-scalar constants (the build lifts them out, so the
weights travel as the model's constants and not through the codegen's code); scalar
constants stay in the body. A codegen that meets a call it cannot compile raises a
BuildError naming the function and the op. The codegens that come with autosched
(ccompiler, cblas) live above the graph level, in compiler/contrib, and are registered
by compiler/__init__.py's call of compiler.contrib.register().
"""
from __future__ import annotations

from collections.abc import Callable

_CODEGENS: dict[str, Callable] = {}


def register_external(name: str, codegen: Callable) -> None:
    """Register (or replace) the external codegen `name`."""
    _CODEGENS[name] = codegen


def get_external(name: str) -> Callable:
    """The codegen registered as `name`; a KeyError naming the registered ones else."""
    if name not in _CODEGENS:
        raise KeyError(f"no external codegen {name!r}; the registered ones are "
                       f"{', '.join(sorted(_CODEGENS)) or 'none'}")
    return _CODEGENS[name]


def external_codegens() -> list[str]:
    """The names of the registered codegens, sorted (what `--external` accepts)."""
    return sorted(_CODEGENS)
