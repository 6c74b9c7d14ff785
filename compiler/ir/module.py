"""IRModule: the unit of compilation that every pass maps to a new one.

A module holds PrimFuncs keyed by their own name, graph functions (compiler.graph, a
BaseFunc) keyed by their global name ("main" for `from_expr`), plus free-form
attributes. It is a value: passes never change a module in place but return a new one
(`with_function`), so a caller can keep the module from before a pass to compare or
print it.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from types import MappingProxyType
from collections.abc import Mapping

from .stmt import PrimFunc


class BaseFunc:
    """A function a module holds besides PrimFuncs: the graph level's Function subclasses
    it (this layer does not import that one). `script(name)` is its text form."""

    def script(self, name: str) -> str:
        raise NotImplementedError


@dataclass(frozen=True, eq=False)
class IRModule:
    """PrimFuncs by name and module attributes; both read-only.

    functions: maps each function's `name` to the PrimFunc; the key must equal
        `func.name`, so renaming a function (dataclasses.replace) also moves its key.
    attrs: anything the flow wants to carry along with the functions (default empty).
    """
    functions: Mapping[str, PrimFunc] = field(default_factory=dict)
    attrs: Mapping = field(default_factory=dict)

    def __post_init__(self):
        functions = dict(self.functions or {})
        for key, func in functions.items():
            if isinstance(func, BaseFunc):
                continue
            if not isinstance(func, PrimFunc):
                raise TypeError(f"module function {key!r} is a {type(func).__name__}, "
                                "not a PrimFunc or a graph function")
            if key != func.name:
                raise ValueError(f"module key {key!r} holds PrimFunc {func.name!r}; "
                                 "a function is keyed by its own name")
        # Read-only views keep a module a value even though its fields are mappings.
        object.__setattr__(self, "functions", MappingProxyType(functions))
        object.__setattr__(self, "attrs", MappingProxyType(dict(self.attrs or {})))

    @classmethod
    def from_func(cls, func: PrimFunc) -> IRModule:
        """A module holding `func` alone."""
        return cls({func.name: func})

    @classmethod
    def from_expr(cls, func: BaseFunc, name: str = "main") -> IRModule:
        """A module holding the graph function `func` as `name` (Relay's from_expr)."""
        return cls({name: func})

    def with_function(self, func, name: str | None = None) -> IRModule:
        """A new module with `func` added, or replacing the function of the same name (a
        graph function's name: `name`, default "main")."""
        key = func.name if isinstance(func, PrimFunc) else (name or "main")
        return IRModule({**self.functions, key: func}, self.attrs)

    def __getitem__(self, name: str) -> PrimFunc:
        if name not in self.functions:
            raise KeyError(f"no function {name!r} in the module "
                           f"(it holds {', '.join(self.functions) or 'none'})")
        return self.functions[name]

    def __contains__(self, name: str) -> bool:
        return name in self.functions

    def __str__(self):
        return "\n\n".join(func.script(name) if isinstance(func, BaseFunc) else str(func)
                           for name, func in self.functions.items())

    __repr__ = __str__
