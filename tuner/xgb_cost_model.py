"""XGBCostModel: an XGBoost model that scores configs of one task by their features
(AutoTVM's tuner/xgboost_cost_model.py).

The model learns from every measured result of the task, retrained from scratch each
time (`fit`), and predicts a score where higher means faster (`predict`). Two losses:

- "rank": objective rank:pairwise over one query group; only the order of the scores
  means anything, which is all a search needs.
- "reg": objective reg:squarederror on the normalized throughput min_cost / cost.

Either way the label of a config is its normalized throughput, in (0, 1], and a failed
config (cost inf) gets 0, the worst label.

Feature rows are cached per config index, so scoring the same configs again (as
simulated annealing does) costs only the booster's prediction.

Transfer learning (`transfer`): measured results of other tasks of the same template
train a base booster, one query group (and one normalization) per task, and every later
`fit` continues from it (xgboost's `xgb_model=`): the trees learnt on this task add to
the base trees instead of replacing them, so what the other tasks taught stays until
this task's data outweighs it. Features of another task are only comparable when they
have the same length; a task whose feature rows differ is left out with a warning.
"""
from __future__ import annotations

import math
import warnings
from collections.abc import Sequence

import numpy as np
import xgboost as xgb

from .features import KINDS, features
from .measure import MeasureInput, MeasureResult
from .task import Task

LOSSES = ("rank", "reg")
NUM_ROUNDS = 60  # boosting rounds of one fit (small data: more rounds only memorize it)


def normalized_throughput(costs: Sequence[float]) -> np.ndarray:
    """min_cost / cost for each of `costs` (seconds): 1 for the fastest, 0 for a failure
    (inf); all 0 when nothing succeeded."""
    costs = np.asarray(costs, dtype=np.float64)
    finite = np.isfinite(costs) & (costs > 0)
    y = np.zeros(len(costs), dtype=np.float32)
    if finite.any():
        y[finite] = costs[finite].min() / costs[finite]
    return y


class XGBCostModel:
    """`XGBCostModel(task, feature="knob", loss="rank", seed=None, num_threads=None)`.

    feature: the kind of tuner.features rows, "itervar" (the loop nest the config
        schedules) or "knob" (the knob values).
    loss: "rank" (rank:pairwise) or "reg" (reg:squarederror on normalized throughput).
    seed: xgboost's seed (None: 0), which draws the pairs of rank:pairwise.
    num_threads: xgboost threads (None: 1: a few thousand rows train faster on one
        thread than they pay in thread start-up; a fixed count keeps runs repeatable).
    """

    def __init__(self, task: Task, feature: str = "knob", loss: str = "rank",
                 seed: int | None = None, num_threads: int | None = None):
        if feature not in KINDS:
            raise ValueError(f"XGBCostModel: feature must be one of {KINDS}, got {feature!r}")
        if loss not in LOSSES:
            raise ValueError(f"XGBCostModel: loss must be one of {LOSSES}, got {loss!r}")
        self.task = task
        self.space = task.config_space
        self.feature = feature
        self.loss = loss
        self.params = {
            "max_depth": 3, "eta": 0.3, "gamma": 1e-4, "min_child_weight": 1,
            "subsample": 1.0, "lambda": 1.0, "alpha": 0.0,
            "tree_method": "hist", "seed": 0 if seed is None else seed,
            "nthread": num_threads or 1, "verbosity": 0,
        }
        if loss == "rank":
            # pairs drawn across the whole group: the default (top-k) pairs only involve
            # the best few configs, which says nothing about the rest of the space
            self.params.update(objective="rank:pairwise", lambdarank_pair_method="mean",
                               lambdarank_num_pair_per_sample=8)
        else:
            self.params.update(objective="reg:squarederror")
        self.booster: xgb.Booster | None = None
        self.base_booster: xgb.Booster | None = None
        self._rows: dict[int, np.ndarray] = {}  # config index -> feature row

    @property
    def trained(self) -> bool:
        """Whether `fit` has run, so that predictions mean something."""
        return self.booster is not None

    def feature_rows(self, indices: Sequence[int]) -> np.ndarray:
        """The [len(indices), d] feature rows of the configs at `indices` (at least one;
        each computed once)."""
        missing = list(dict.fromkeys(i for i in indices if i not in self._rows))
        if missing:
            rows = features(self.task, [self.space.get(int(i)) for i in missing], kind=self.feature)
            self._rows.update(zip(missing, rows))
        return np.stack([self._rows[i] for i in indices])

    def fit(self, configs: Sequence, costs: Sequence[float]) -> None:
        """Train from scratch (from the transfer base, if any) on `configs` of this task
        and their mean costs in seconds (inf for a failure)."""
        x = self.feature_rows([c.index for c in configs])
        dtrain = self._dmatrix([x], [normalized_throughput(costs)])
        self.booster = xgb.train(self.params, dtrain, num_boost_round=NUM_ROUNDS,
                                 xgb_model=self.base_booster)

    def predict(self, configs: Sequence) -> np.ndarray:
        """Scores of `configs` (higher is better; zeros before the first fit)."""
        return self.predict_indices([c.index for c in configs])

    def predict_indices(self, indices: Sequence[int]) -> np.ndarray:
        """Scores of the configs at `indices` of this task's space (see predict)."""
        if self.booster is None or not len(indices):
            return np.zeros(len(indices), dtype=np.float32)
        return self.booster.inplace_predict(self.feature_rows(indices))

    def transfer(self, inputs: Sequence[MeasureInput], results: Sequence[MeasureResult]) -> None:
        """Train the base booster that every later fit starts from on measured results of
        other tasks (same template: their feature rows must have this task's length;
        those that do not are skipped with a warning). Inputs of this task are ignored:
        fit sees them."""
        by_task: dict[Task, tuple[list, list]] = {}
        for inp, res in zip(inputs, results):
            if inp.task != self.task:
                configs, costs = by_task.setdefault(inp.task, ([], []))
                configs.append(inp.config)
                costs.append(res.cost)  # on its task's scale, as fit's labels
        d = self.feature_rows([self.space.fallback().index]).shape[1]
        xs, ys = [], []
        for task, (configs, costs) in by_task.items():
            x = features(task, configs, kind=self.feature)
            if x.shape[1] != d:
                warnings.warn(f"XGBCostModel of {self.task!r}: not transferring from "
                              f"{task!r}, whose {self.feature} features have length "
                              f"{x.shape[1]}, not {d}", stacklevel=2)
                continue
            xs.append(x)
            ys.append(normalized_throughput(costs))
        if not xs:
            return
        self.base_booster = xgb.train(self.params, self._dmatrix(xs, ys),
                                      num_boost_round=NUM_ROUNDS)

    def _dmatrix(self, xs: list[np.ndarray], ys: list[np.ndarray]) -> xgb.DMatrix:
        """One DMatrix of the row blocks `xs` labelled `ys`, one query group per block."""
        dmatrix = xgb.DMatrix(np.concatenate(xs), label=np.concatenate(ys), missing=math.nan)
        if self.loss == "rank":
            dmatrix.set_group([len(x) for x in xs])
        return dmatrix
