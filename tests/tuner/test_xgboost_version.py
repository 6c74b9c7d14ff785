"""The installed xgboost does what XGBCostModel asks of it: both objectives train on
DMatrix rows (one query group for rank), predict in place, continue from a base booster
without changing it; and the version is in the range pyproject.toml pins."""
from __future__ import annotations

import math

import numpy as np
import pytest
import xgboost

from tuner import MeasureErrorNo, MeasureInput, MeasureResult, Task
from tuner.xgb_cost_model import XGBCostModel, normalized_throughput


def test_the_installed_xgboost_is_in_the_tested_range():
    major = int(xgboost.__version__.split(".")[0])
    assert 2 <= major < 4, xgboost.__version__


def tile_cost(config) -> float:
    """Seconds: fastest with the largest register tile, inf when it has one row."""
    rows, cols = config["tile_x"].size[-1], config["tile_y"].size[-1]
    return math.inf if rows == 1 else 1e-3 * 64 / (rows * cols)


@pytest.mark.parametrize("loss", ["rank", "reg"])
def test_both_objectives_score_a_clearly_better_config_higher(loss):
    task = Task("matmul", (64, 64, 64))
    configs = task.config_space.sample(200, seed=1)
    model = XGBCostModel(task, feature="knob", loss=loss, seed=0)
    assert not model.trained and not model.predict(configs[:3]).any()
    model.fit(configs, [tile_cost(c) for c in configs])
    assert model.trained
    fresh = [c for c in task.config_space.sample(400, seed=2) if c not in configs]
    best = min(fresh, key=tile_cost)
    worst = max(fresh, key=lambda c: (tile_cost(c), c.index))
    scores = model.predict([best, worst])
    assert scores.dtype == np.float32 and scores[0] > scores[1]
    # the whole fresh sample: the better half scores higher on average
    costs = np.array([tile_cost(c) for c in fresh])
    predicted = model.predict(fresh)
    assert predicted[costs <= np.median(costs)].mean() > predicted[costs > np.median(costs)].mean()


def test_failures_get_the_worst_label():
    assert normalized_throughput([2.0, math.inf, 1.0]).tolist() == [0.5, 0.0, 1.0]
    assert normalized_throughput([math.inf, math.inf]).tolist() == [0.0, 0.0]


def test_fit_continues_from_the_transfer_base_without_changing_it():
    other = Task("matmul", (32, 32, 32))
    this = Task("matmul", (64, 64, 64))
    others = other.config_space.sample(100, seed=0)
    inputs = [MeasureInput(other, c) for c in others]
    results = [MeasureResult((tile_cost(c),), MeasureErrorNo.NO_ERROR) for c in others]
    model = XGBCostModel(this, feature="knob", seed=0)
    model.transfer(inputs, results)
    probe = this.config_space.sample(20, seed=3)
    rows = model.feature_rows([c.index for c in probe])
    base_before = model.base_booster.inplace_predict(rows)
    configs = this.config_space.sample(30, seed=4)
    model.fit(configs, [tile_cost(c) for c in configs])
    assert model.booster.num_boosted_rounds() == 2 * model.base_booster.num_boosted_rounds()
    assert np.array_equal(model.base_booster.inplace_predict(rows), base_before)


def test_transfer_skips_a_task_whose_features_differ():
    other = Task("conv2d_nchw", (1, 8, 8, 8, 8, 3, 3))
    configs = other.config_space.sample(10, seed=0)
    inputs = [MeasureInput(other, c) for c in configs]
    results = [MeasureResult((1e-3,), MeasureErrorNo.NO_ERROR)] * len(configs)
    model = XGBCostModel(Task("matmul", (64, 64, 64)), feature="knob")
    with pytest.warns(UserWarning, match="not transferring from Task\\('conv2d_nchw'"):
        model.transfer(inputs, results)
    assert model.base_booster is None
