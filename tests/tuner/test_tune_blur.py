"""The blur template (Tiramisu's commands as knobs) tuned like the others: a short real
XGBoost run on a local Ray, logged to SQLite, finds a config that matches numpy."""
from __future__ import annotations

import math

import numpy as np
import pytest

import compiler
import records
import search_spaces
from search_spaces.blur import blur_reference
from tuner import Measurer, Task
from tuner.tune import tune


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore::compiler.transform.VectorizeWarning")
def test_tuning_the_blur_finds_a_config_that_matches_numpy(local_ray, tmp_path):
    task = Task("blur", (37, 100))
    # one short timing per candidate: what is checked is the search and its result,
    # not how well the timings rank the configs
    with Measurer(n_parallel=2, repeat=1, min_repeat_ms=0) as measurer:
        # two batches: random configs, then the model's (trained once 8 measured well)
        result = tune(task, 16, tuner="xgb", measurer=measurer, seed=0, batch_size=8,
                      db=tmp_path / "blur.db")
    assert result.trials == 16 and math.isfinite(result.best_cost)
    with records.Database(tmp_path / "blur.db") as db:
        assert db.count() >= 16
    s, args = search_spaces.instantiate("blur", 37, 100, config=result.best_config)
    a = np.random.default_rng(0).standard_normal((39, 102)).astype("float32")
    out = np.full((37, 100), np.nan, "float32")
    compiler.build(s, args)(a, out)
    np.testing.assert_allclose(out, blur_reference([a], 37, 100), rtol=1e-5, atol=1e-5)
