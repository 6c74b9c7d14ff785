"""contiguous: an array in C order, a large strided one copied on several cores.

A build rearranges every weight of a model once: a dense layer's into the panels its
kernel reads (nn.pack_dense_weight), a convolution's into channel blocks (the executor
makes its folded layout_transform contiguous). numpy copies a strided array on one
thread, at 1-2 GB/s (its inner runs are one block of floats), and for BERT-base that is
340 MB, most of a build that finds every kernel in the compile cache. numpy lets go of
the GIL while it copies, so threads that each copy a slice of the outer axis share the
work; small arrays, where starting a thread costs more than it saves, are copied as they
always were. Threads are started for each copy (no pool): a pool's idle threads do not
survive the fork of the build's kernel workers (graph/backend/kernel_pool.py).

The copy is allocated without numpy's transparent-huge-page hint (madvise
MADV_HUGEPAGE, which numpy gives every array of 4 MB or more), unless the user asked
for it (NUMPY_MADVISE_HUGEPAGE): where the kernel compacts memory when a hinted page
is first touched and finds no huge page (the default `defrag` setting, on a fragmented
or virtual host), each fault stalls. On this project's 2-core Zen 4 VM (no huge page
to be had) a 340 MB array took 1.10 s to fill the first time with the hint and 0.15 s
without, and BERT-base's build from the compile cache 0.64-0.73 s against 0.41-0.47 s.
A copy is written once and read in streams, where small pages cost next to nothing.
"""
from __future__ import annotations

import os
import threading

import numpy as np

from .target import usable_cores

PARALLEL_BYTES = 1 << 20
"""The smallest copy split among threads."""

MAX_THREADS = 4
"""The most threads one copy uses: beyond a few, memory bandwidth is the limit."""


def contiguous(array) -> np.ndarray:
    """`array` as a C-contiguous ndarray: itself when it is one (0-d included), else a
    copy, made by up to MAX_THREADS threads (at most the cores this process may use)
    when it is at least PARALLEL_BYTES."""
    array = np.asarray(array)
    if array.flags.c_contiguous:
        return array
    threads = min(MAX_THREADS, usable_cores(), array.shape[0])
    if array.nbytes < PARALLEL_BYTES or threads < 2:
        return np.ascontiguousarray(array)
    out = _empty_unhinted(array.shape, array.dtype)
    step = -(-array.shape[0] // threads)
    workers = [threading.Thread(target=np.copyto, args=(out[i:i + step], array[i:i + step]))
               for i in range(0, array.shape[0], step)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    return out


def _empty_unhinted(shape: tuple, dtype) -> np.ndarray:
    """np.empty(shape, dtype) allocated without the huge-page hint (module docstring)."""
    core = getattr(np, "_core", None) or np.core  # numpy 2, numpy 1
    hint = getattr(getattr(core, "multiarray", None), "_set_madvise_hugepage", None)
    if hint is None or "NUMPY_MADVISE_HUGEPAGE" in os.environ:
        return np.empty(shape, dtype)
    was = hint(False)
    try:
        return np.empty(shape, dtype)
    finally:
        hint(was)


__all__ = ["contiguous"]
