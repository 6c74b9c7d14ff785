"""XGBTuner against a fake measurer whose cost is a fixed function of the knobs: it never
proposes a config twice, repeats itself under a seed, finds a near-optimal config in a
small share of the space, spreads a batch over knob values, and resumes from a log."""
from __future__ import annotations

import math
import statistics
import zlib

import numpy as np

from fake_measurer import FakeMeasurer, trials_of
from tuner import MeasureInput, Task, tune
from tuner.random_tuner import RandomTuner
from tuner.xgb_tuner import XGBTuner, diverse_pick


def gemm_cost(config) -> float | None:
    """Seconds of a made-up GEMM: best with a register tile of 128 elements, 4 unrolled
    reduction steps, 8 middle rows, packing and two fused loops; a tile that needs
    more than 28 vector registers is a failure (None)."""
    rows, middle = config["tile_x"].size[-1], config["tile_x"].size[-2]
    cols, k = config["tile_y"].size[-1], config["tile_k"].size[-1]
    if rows * cols / 16 > 28:
        return None
    cost = 1 + 0.5 * abs(math.log2(rows * cols / 128))
    cost *= (1 + 0.3 * abs(math.log2(k) - 2)) * (1 + 0.2 * abs(math.log2(middle) - 3))
    cost *= 1.0 if config["pack_b"].val else 1.4
    cost *= 1.0 if config["fuse_parallel"].val == 2 else 1.2
    cost *= 1 + 0.03 * (zlib.crc32(str(config.index).encode()) % 100) / 100
    return 1e-3 * cost


def test_it_never_proposes_a_config_twice_and_exhausts_the_space():
    task = Task("matmul", (2, 2, 2))
    size = len(task.config_space)
    assert size == 288
    measurer = FakeMeasurer(gemm_cost)
    t = XGBTuner(task, seed=0, plan_size=16)
    result = tune(task, size + 50, tuner=t, measurer=measurer, batch_size=16)
    assert result.trials == size and not t.has_next()
    assert sorted(trials_of(measurer)) == list(range(size))
    assert t.next_batch(4) == []


def test_it_repeats_itself_under_a_seed():
    task = Task("matmul", (8, 8, 8))
    runs = []
    for _ in range(2):
        measurer = FakeMeasurer(gemm_cost)
        tune(task, 48, tuner=XGBTuner(task, seed=7), measurer=measurer, batch_size=16)
        runs.append(trials_of(measurer))
    assert runs[0] == runs[1] and len(set(runs[0])) == 48


def test_it_finds_a_near_optimal_config_in_a_small_share_of_the_space():
    task = Task("matmul", (8, 8, 8))
    space = task.config_space
    assert len(space) == 3840
    optimum = min(c for c in map(gemm_cost, space) if c is not None)
    trials = 96
    xgb = [tune(task, trials, tuner=XGBTuner(task, seed=s), measurer=FakeMeasurer(gemm_cost))
           .best_cost for s in range(3)]
    rnd = [tune(task, trials, tuner=RandomTuner(task, seed=s), measurer=FakeMeasurer(gemm_cost))
           .best_cost for s in range(3)]
    assert all(cost <= 1.1 * optimum for cost in xgb), (xgb, optimum)
    assert max(xgb) < statistics.median(rnd), (xgb, rnd)


def test_the_diversity_filter_spreads_a_batch_over_knob_values():
    # the best candidates differ only in knob 0; the filter mixes in others
    values = np.array([[p, 10, 20] for p in range(6)] + [[0, 11, 21], [1, 12, 20]])
    picked = diverse_pick(list(range(8)), values, 4, knob_weight=1.0)
    assert picked[0] == 0 and {6, 7} <= set(picked)
    assert diverse_pick(list(range(8)), values, 4, knob_weight=0.0) == [0, 1, 2, 3]

    task = Task("matmul", (512, 512, 512))
    t = XGBTuner(task, seed=0)
    tune(task, 32, tuner=t, measurer=FakeMeasurer(gemm_cost))
    batch = [c.knob_indices for c in t.next_batch(16)]
    varied = [k for k in range(len(batch[0])) if len({b[k] for b in batch}) > 1]
    assert len(varied) >= 3, batch


def test_warm_start_trains_the_model_and_never_reproposes_the_log():
    task = Task("matmul", (8, 8, 8))
    first = XGBTuner(task, seed=1)
    measurer = FakeMeasurer(gemm_cost)
    tune(task, 32, tuner=first, measurer=measurer)
    inputs = [inp for inp, _ in first.measured]
    results = [res for _, res in first.measured]

    resumed = XGBTuner(task, seed=2)
    resumed.warm_start(inputs, results)
    assert resumed.model.trained and resumed.plan
    assert resumed.best_cost == first.best_cost
    logged = {inp.config.index for inp in inputs}
    again = FakeMeasurer(gemm_cost)
    tune(task, 64, tuner=resumed, measurer=again)
    assert not logged & set(trials_of(again)) and len(set(trials_of(again))) == 64


def test_transfer_gives_the_model_a_base_from_other_tasks():
    other = Task("matmul", (16, 16, 16))
    configs = other.config_space.sample(64, seed=0)
    inputs = [MeasureInput(other, c) for c in configs]
    results = FakeMeasurer(gemm_cost).measure(inputs)
    t = XGBTuner(Task("matmul", (8, 8, 8)), seed=0)
    t.transfer(inputs, results)
    assert t.model.base_booster is not None
    assert tune(t.task, 96, tuner=t, measurer=FakeMeasurer(gemm_cost)).trials == 96


def test_a_model_guided_batch_on_matmul_512_is_new_and_distinct():
    # (its time is measured in benchmarks/, not asserted here)
    task = Task("matmul", (512, 512, 512))
    t = XGBTuner(task, seed=0)
    tune(task, 64, tuner=t, measurer=FakeMeasurer(gemm_cost))
    batch = t.next_batch(16)
    assert t.model.booster is not None
    assert len({c.index for c in batch}) == 16 and not {c.index for c in batch} & t.visited
