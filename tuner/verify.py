"""Checking a candidate's outputs: seeded random inputs, the expected outputs, output
arrays that are wrong until written, and what differs between two outputs.

The runner checks every candidate it times with these (so that a wrong kernel never
counts as fast), and `autosched bench` checks the kernels it compares the same way.
"""
from __future__ import annotations

import numpy as np

import compiler
from compiler import te
from compiler.ops import get_const_tuple

from .task import Task

SEED = 0
RTOL = 1e-3  # float32 sums in another order than numpy's differ by far less


def random_inputs(tensors, seed: int = SEED) -> list[np.ndarray]:
    """Seeded arrays for `tensors`: floats in [-1, 1), small integers, random booleans."""
    rng = np.random.default_rng(seed)
    arrays = []
    for t in tensors:
        shape, dtype = get_const_tuple(t.shape), np.dtype(t.dtype)
        if dtype.kind == "f":
            arrays.append(rng.uniform(-1, 1, shape).astype(dtype))
        elif dtype.kind == "b":
            arrays.append(rng.random(shape) < 0.5)
        else:
            arrays.append(rng.integers(-8, 8, shape).astype(dtype))
    return arrays


def model_inputs(specs, seed: int = SEED) -> dict[str, np.ndarray]:
    """Seeded inputs of a built model by name (its plan's "inputs": name, shape,
    dtype): normal floats; integers 0 or 1, valid as token ids, attention masks and
    indices alike; random booleans."""
    rng = np.random.default_rng(seed)
    feeds = {}
    for spec in specs:
        shape, dtype = spec["shape"], np.dtype(spec["dtype"])
        if dtype.kind == "f":
            feeds[spec["name"]] = rng.standard_normal(shape).astype(dtype)
        elif dtype.kind == "b":
            feeds[spec["name"]] = rng.random(shape) < 0.5
        else:
            feeds[spec["name"]] = rng.integers(0, 2, shape).astype(dtype)
    return feeds


def unwritten(tensor) -> np.ndarray:
    """An output array whose every element is wrong until the kernel writes it."""
    shape, dtype = get_const_tuple(tensor.shape), np.dtype(tensor.dtype)
    if dtype.kind == "f":
        return np.full(shape, np.nan, dtype)
    return np.full(shape, 1 if dtype.kind == "b" else np.iinfo(dtype).min, dtype)


def expected_outputs(task: Task, inputs: list[np.ndarray]) -> list[np.ndarray]:
    """The template's numpy reference on `inputs`; without one, the compute built with a
    default schedule (every stage at the root, loops in axis order)."""
    if task.template.reference is not None:
        return [np.asarray(o) for o in task.template.reference_outputs(task.args, inputs)]
    ins, outs = task.tensors()
    plain = compiler.build(te.create_schedule([t.op for t in outs]), [*ins, *outs],
                           target=task.target)
    arrays = [unwritten(t) for t in outs]
    plain(*inputs, *arrays)
    return arrays


def mismatch(got: np.ndarray, want: np.ndarray) -> str | None:
    """None when `got` matches `want` (within RTOL, relative to the largest expected
    magnitude, for floats; exactly otherwise); else what differs, for the error message."""
    if got.dtype.kind == "f":
        atol = RTOL * max(1.0, float(np.nanmax(np.abs(want), initial=0.0)))
        bad = ~np.isclose(got, want, rtol=RTOL, atol=atol, equal_nan=True)
    else:
        bad = got != want
    if not bad.any():
        return None
    where = tuple(int(i) for i in np.argwhere(bad)[0])
    return (f"{int(bad.sum())} of {bad.size} elements differ; first at {where}: "
            f"got {got[where]}, expected {want[where]}")
