"""The base of every IR node, and the hook through which nodes print themselves.

Expressions, statements and ranges share one base class so that generic code (the
walkers of functor.py) recognises a node without importing every node module. Nodes
print through the printer, which imports every node module; so that no node module
imports the printer back, the printer registers itself here (as TVM's ReprPrinter
fills its dispatch table), and `compiler/ir/__init__.py` imports it, so it is always
registered before any node exists.
"""
from __future__ import annotations

from dataclasses import dataclass
from collections.abc import Callable

_printer: Callable[[object], str] | None = None


def register_printer(printer: Callable[[object], str]) -> None:
    """Make `printer(node) -> str` the text form of every node (str() and repr())."""
    global _printer
    _printer = printer


def text(obj) -> str:
    """The registered printer's text of `obj` (a node or a PrimFunc)."""
    if _printer is None:
        raise RuntimeError("no IR printer is registered; import compiler.ir first")
    return _printer(obj)


class Node:
    """Base of expressions, statements and ranges: immutable, hashed by identity."""

    __slots__ = ()

    def __str__(self):
        return text(self)

    __repr__ = __str__


def node(cls):
    """Make `cls` an IR node: a frozen dataclass hashed by identity, printed by the printer."""
    return dataclass(frozen=True, eq=False, repr=False)(cls)
