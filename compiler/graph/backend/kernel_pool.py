"""A model's kernels lowered and compiled on every core: forked worker processes.

Lowering is Python, and the GIL lets one thread run it at a time; LLVM's threads
(codegen/compile.py) overlap only its own part. So a build with many kernels to make
forks one worker per core, which inherit the fused functions, their choices and the
entered Target and PassContext as they stand (nothing is pickled on the way in). Each
takes the next kernel, lowers it, generates, optimizes and emits it, and sends back
what the disk cache holds for a kernel: its header (metadata, loop IR, optimized LLVM
IR) and its object code, which compile_graph links as it links a cached one.

The build stays in its own process where forking could not help or might not be safe:
fewer than MIN_KERNELS kernels to make (the fork costs more than it saves: a node
test's model has one to three), one core, a platform without fork, a daemonic process
(it may not have children), a PassContext with instruments (they watch passes run
here) or a running Ray (its threads and sockets do not survive a fork). A kernel that
fails in a worker, for any reason, is simply made again here, so the error a user sees
is the one the build raises in its own process; a worker's warnings are raised again
here.
"""
from __future__ import annotations

import multiprocessing
import sys
import warnings
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool

from ...target import usable_cores
from ...transform.pass_infra import PassContext

MIN_KERNELS = 4
"""The fewest kernels to make for which a build forks workers."""

_WORK = None  # the function a forked worker applies to an item (set before forking)


def workers_for(kernels: int, cores: int) -> int:
    """How many worker processes make `kernels` kernels on a target of `cores` cores:
    0 to make them here (see the module docstring)."""
    cores = min(cores, usable_cores())
    if kernels < MIN_KERNELS or cores < 2:
        return 0
    if "fork" not in multiprocessing.get_all_start_methods():
        return 0
    if multiprocessing.current_process().daemon or PassContext.current().instruments:
        return 0
    ray = sys.modules.get("ray")
    if ray is not None and getattr(ray, "is_initialized", lambda: False)():
        return 0
    return min(cores, kernels)


def fork_map(work, items: list, workers: int) -> list:
    """[work(item) for item in items], computed by `workers` forked processes, in
    order; an item whose work raised, or whose worker died, is None (the caller makes
    it again). `work`'s result must pickle; warnings it raised are raised again here."""
    global _WORK
    _WORK = work
    results: list = [None] * len(items)
    try:
        with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("fork")) \
                as pool:
            futures = [pool.submit(_run, item) for item in items]
            for k, future in enumerate(futures):
                try:
                    result, caught = future.result()
                except BrokenProcessPool:
                    break
                if result is not None:  # else made again here, warning again
                    for category, message in caught:
                        warnings.warn(message, category, stacklevel=2)
                results[k] = result
    finally:
        _WORK = None
    return results


def _run(item):
    """In a worker: `_WORK(item)` and the warnings it raised; None for a failure."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            result = _WORK(item)
        except Exception:  # made again in the parent, which raises it there
            result = None
    return result, [(w.category, str(w.message)) for w in caught]


__all__ = ["MIN_KERNELS", "fork_map", "workers_for"]
