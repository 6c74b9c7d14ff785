"""deep_stack: run a graph-level function on a thread with a deep stack.

Some graph passes are still recursive walks (a node's operands before the node), so a
chain of N ops recurses N levels: a 24-layer transformer is several thousand, past
Python's default limit of 1000 frames, and past what the main thread's 8 MiB C stack
holds once the limit is raised. The graph's walks (the mutators of functor.py,
post_order, FuseOps, the planner, the printer, the partitioning for external codegens)
work on work lists and need none of this. What still recurses: the ccompiler codegen
(as deep as its region: it numbers a node before its operands), and the lowering of one
kernel (as deep as its fused expression, up to relay.FuseOps.max_depth ops: at the
default 256 a 4000-op chain builds at Python's default limit of 1000, not at 700).
This goes once those do not.

A function wrapped with @deep_stack runs on a thread of its own with a 512 MiB stack
(address space, taken only as used) and a recursion limit of 50 000, in a copy of the
caller's context (the entered PassContext, target and choosers are contextvars), and
its result or exception comes back to the caller. A call from inside such a thread
runs directly.
"""
from __future__ import annotations

import contextvars
import functools
import sys
import threading

STACK_BYTES = 512 << 20
RECURSION_LIMIT = 50_000

_local = threading.local()
_lock = threading.Lock()
_active = [0, 0]  # deep threads running, the recursion limit before the first


def deep_stack(fn):
    """`fn`, run on a deep-stacked thread (the module docstring)."""
    @functools.wraps(fn)
    def run(*args, **kwargs):
        if getattr(_local, "inside", False):
            return fn(*args, **kwargs)
        context = contextvars.copy_context()
        outcome: dict = {}

        def target():
            _local.inside = True
            try:
                outcome["value"] = context.run(fn, *args, **kwargs)
            except BaseException as err:  # noqa: BLE001 - handed to the caller as it is
                outcome["error"] = err
        with _lock:
            if _active[0] == 0:
                _active[1] = sys.getrecursionlimit()
                sys.setrecursionlimit(max(_active[1], RECURSION_LIMIT))
            _active[0] += 1
            old_size = threading.stack_size(STACK_BYTES)
            try:
                # a daemon: an interrupted caller does not wait for it at exit
                thread = threading.Thread(target=target, name=f"deep:{fn.__name__}",
                                          daemon=True)
                thread.start()
            finally:
                threading.stack_size(old_size)
        try:
            thread.join()
        finally:
            with _lock:
                _active[0] -= 1
                if _active[0] == 0:
                    sys.setrecursionlimit(_active[1])
        if "error" in outcome:
            raise outcome["error"]
        return outcome["value"]
    return run
