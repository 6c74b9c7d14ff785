"""Python's cyclic garbage collector held back while a build runs.

Lowering and code generation allocate millions of short-lived IR nodes and llvmlite
values, nearly all freed by reference counting. At CPython's default threshold (a
collection each 700 net allocations) the collector runs thousands of times in one
build, and every older-generation pass walks all the process holds: the model's graph,
its constants, the loop IR of the kernels made so far. Measured on ResNet-18's first
build, kernels made one after another (Zen 5): 5.64 s of lowering, code generation and
LLVM with the default, 5.0 s with a threshold of 100,000 and the objects alive before
the build frozen (gc.freeze: never scanned again while it runs, and, in the workers
forked for the kernels, never written to, so their pages stay shared).
"""
from __future__ import annotations

import contextlib
import gc
import threading

YOUNG_THRESHOLD = 100_000
"""Net allocations between two collections of the young generation during a build."""

_lock = threading.Lock()
_depth = 0


@contextlib.contextmanager
def fewer_collections():
    """While the block runs (the outermost of nested ones decides): the young
    generation collected each YOUNG_THRESHOLD allocations, and what was alive before
    frozen. The collector's settings are restored after, and the frozen objects
    collectable again."""
    global _depth
    with _lock:
        _depth += 1
        outermost = _depth == 1
        if outermost:
            saved = gc.get_threshold()
            gc.freeze()
            gc.set_threshold(YOUNG_THRESHOLD, *saved[1:])
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            if outermost:
                gc.set_threshold(*saved)
                gc.unfreeze()


__all__ = ["YOUNG_THRESHOLD", "fewer_collections"]
