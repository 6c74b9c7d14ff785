"""The IR, the ground floor of the compiler: expression nodes (expr.py, reduce.py,
range.py), loop-IR statements (stmt.py), their traversal (functor.py), text form
(printer.py), IRModule and a reference interpreter. Nothing here imports a floor
above it (arith, lang, schedule, ...; tests/compiler/test_floors.py checks).

The printer is imported here so that it is registered (node.py) before any node prints.
"""
from . import printer

__all__ = ["printer"]
