"""Cost-model features: fixed length per task, finite, deterministic, telling configs
apart, and loop extents that agree with the lowered loop IR."""
import math

import numpy as np
import pytest

import compiler
from compiler.ir.stmt import For, Store
from tuner import Task
from tuner.features import (MAX_STATEMENTS, features, itervar_features, itervar_length,
                            knob_features)

TASKS = [("matmul", (1024, 1024, 1024)), ("matmul", (13, 7, 1000)),
         ("conv2d_nchw", (1, 64, 56, 56, 64, 3, 3, 1, 1)), ("dense_bias_relu", (64, 96, 128))]


@pytest.fixture(scope="module", params=TASKS, ids=lambda t: f"{t[0]}{t[1]}")
def sampled(request):
    task = Task(*request.param)
    configs = task.config_space.sample(60, seed=0)
    return task, configs, itervar_features(task, configs), knob_features(configs)


def test_fixed_length_and_finite(sampled):
    task, configs, itervar, knob = sampled
    assert itervar.shape == (len(configs), itervar_length(task))
    assert itervar.dtype == knob.dtype == np.float32
    assert knob.shape[0] == len(configs) and knob.shape[1] > 0
    assert np.isfinite(itervar).all() and np.isfinite(knob).all()
    assert itervar.shape[1] == itervar_features(task, configs[:1]).shape[1]


def test_deterministic(sampled):
    task, configs, itervar, knob = sampled
    again = Task(task.name, task.args)
    assert np.array_equal(itervar_features(again, configs), itervar)
    assert np.array_equal(knob_features(configs), knob)


def test_configs_that_differ_get_different_features(sampled):
    task, configs, itervar, knob = sampled
    assert len({row.tobytes() for row in knob}) == len(configs)
    # Different configs may make the same loop nest (a split whose loops have extent 1),
    # but a sample must not collapse to a few rows.
    assert len({row.tobytes() for row in itervar}) > len(configs) // 2


def test_tile_size_changes_itervar_features():
    task = Task("matmul", (1024, 1024, 1024))
    space = task.config_space
    base = space.get(0)
    other = space.get(space.knob2point((7, *base.knob_indices[1:])))  # another tile_x
    rows = itervar_features(task, [base, other])
    assert not np.array_equal(rows[0], rows[1])


def _store_iterations(stmt, outer=1):
    """The largest product of loop extents around any Store of the lowered IR."""
    match stmt:
        case For(extent=extent, body=body):
            return _store_iterations(body, outer * extent.value)
        case Store():
            return outer
    best = 0
    for name in ("body", "then_case", "else_case", "seq"):
        child = getattr(stmt, name, None)
        for c in child if isinstance(child, tuple) else [child]:
            if c is not None:
                best = max(best, _store_iterations(c, outer))
    return best


@pytest.mark.parametrize("template,args", TASKS[1:3])
def test_iterations_agree_with_lowered_ir(template, args):
    task = Task(template, args)
    for config in task.config_space.sample(3, seed=2):
        s, tensors = task.instantiate(config)
        lowered = _store_iterations(compiler.lower(s, tensors).body)
        heaviest = itervar_features(task, [config])[0, 0]  # log2(iterations + 1)
        assert heaviest == pytest.approx(math.log2(lowered + 1), abs=1e-4)


def test_split_knob_encodes_log2_of_every_loop():
    task = Task("matmul", (1024, 1024, 1024))
    config = task.config_space.sample(1, seed=5)[0]
    row = knob_features([config])[0]
    size = config["tile_x"].size
    outer = 1024 // math.prod(size[1:])
    assert row[:3].tolist() == pytest.approx([math.log2(v) for v in (outer, *size[1:])])


def test_features_dispatches_on_kind():
    task = Task("matmul", (13, 7, 1000))
    configs = task.config_space.sample(5, seed=0)
    assert np.array_equal(features(task, configs, kind="knob"), knob_features(configs))
    assert np.array_equal(features(task, configs), itervar_features(task, configs))
    assert features(task, [], kind="itervar").shape == (0, itervar_length(task))
    with pytest.raises(ValueError, match="unknown feature kind 'loops'"):
        features(task, configs, kind="loops")


def test_padding_slots_are_zero_for_missing_statements():
    task = Task("matmul", (13, 7, 1000))
    config = next(c for c in task.config_space if c["pack_b"].val == 0)
    row = itervar_features(task, [config])[0]
    slot = itervar_length(task) // MAX_STATEMENTS
    # Without packing there are two statements (update and copy-out); the third is padding.
    assert row[slot * 2:].sum() == 0 and row[slot] > 0
