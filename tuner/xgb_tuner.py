"""XGBTuner: search guided by an XGBoost cost model (AutoTVM's tuner/xgboost_tuner.py
and model_based_tuner.py).

Until `min_train` configs have measured well, the tuner proposes random configs. From
then on, each batch after new results it

1. retrains the cost model (tuner.xgb_cost_model) on every result of the task,
2. asks simulated annealing (tuner.sa_optimizer) for the `plan_size * diversity`
   unvisited configs the model scores highest,
3. keeps a plan of `plan_size` of them, picked greedily to cover many knob values
   (AutoTVM's submodular pick: each candidate gains `knob_weight` per knob whose value
   no config picked so far has, plus its rank among the candidates, in [0, 1]), so a
   batch does not cluster on one knob setting,

and proposes the plan in order, each pick replaced with probability `epsilon` by a
random unvisited config, so a model blind to some region still gets data from it.

The default features are "knob", not AutoTVM's "itervar": simulated annealing meets
some 5,000-10,000 configs per plan, and an itervar row instantiates the template
(about 2.6 ms for matmul 512^3, against 4 us for a knob row), so one step of a matmul
512^3 search takes 20 s on itervar rows the first time and about 6 s later, against
0.2-0.6 s on knob rows. The default loss is "rank": on fake cost functions over matmul
spaces of 2,560 and 22,400 configs it came within 10% of the optimum in fewer trials
than "reg" on three of four and as fast on the fourth, and its plans take half the time
(its scores spread wider, so annealing wanders less). On 400 real matmul 512^3
measurements the two predict held-out configs equally well (benchmarks/cost_model.py:
Spearman 0.954 rank, 0.958 reg; both put all of the true top-10 in their top-32).
"""
from __future__ import annotations

import numpy as np

from .measure import MeasureInput, MeasureResult
from .random_tuner import random_unvisited
from .sa_optimizer import SimulatedAnnealingOptimizer
from .task import Task
from .tuner_base import Tuner
from .xgb_cost_model import XGBCostModel


class XGBTuner(Tuner):
    """`XGBTuner(task, seed=None, plan_size=64, feature_type="knob", loss_type="rank",
    num_threads=None, epsilon=0.05, diversity=2.0, knob_weight=1.0, min_train=8)`.

    plan_size: configs planned from one trained model (proposed until the next results).
    feature_type: "knob" or "itervar" (see tuner.features; itervar rows are costly).
    loss_type: "rank" or "reg" (see XGBCostModel).
    num_threads: xgboost threads (None: 1).
    epsilon: the chance of each proposal to be a random unvisited config instead.
    diversity: simulated annealing finds plan_size * diversity candidates, of which the
        diversity filter keeps plan_size (1: no filter).
    knob_weight: what the filter adds to a candidate per knob value it newly covers.
    min_train: results that measured well before the model is trained.
    """

    name = "xgb"
    transfers = True

    def __init__(self, task: Task, seed: int | None = None, plan_size: int = 64,
                 feature_type: str = "knob", loss_type: str = "rank",
                 num_threads: int | None = None, epsilon: float = 0.05,
                 diversity: float = 2.0, knob_weight: float = 1.0, min_train: int = 8):
        super().__init__(task, seed)
        if not isinstance(plan_size, int) or plan_size < 1:
            raise ValueError(f"XGBTuner: plan_size must be a positive integer, got {plan_size!r}")
        if not 0 <= epsilon <= 1:
            raise ValueError(f"XGBTuner: epsilon must be in [0, 1], got {epsilon!r}")
        if diversity < 1:
            raise ValueError(f"XGBTuner: diversity must be >= 1, got {diversity!r}")
        self.plan_size = plan_size
        self.epsilon = epsilon
        self.diversity = diversity
        self.knob_weight = knob_weight
        self.min_train = min_train
        self.model = XGBCostModel(task, feature_type, loss_type, seed, num_threads)
        self.optimizer = SimulatedAnnealingOptimizer(self.space)
        self.np_rng = np.random.default_rng(seed)
        self.plan: list[int] = []  # config indices, best first
        self._stale = False  # results arrived since the model was trained

    def next_batch(self, n: int) -> list:
        """Up to `n` configs neither measured nor in flight: the plan of the model
        trained on every result so far (random configs before there are enough)."""
        if self._stale:
            self._replan()
        out: list[int] = []
        taken = set(self.visited)
        while len(out) < n and len(taken) < len(self.space):
            index = None
            if self.rng.random() >= self.epsilon:
                while self.plan and index is None:
                    candidate = self.plan.pop(0)
                    if candidate not in taken:
                        index = candidate
            if index is None:
                index = random_unvisited(self.rng, len(self.space), taken, 1)[0]
            taken.add(index)
            out.append(index)
        return [self.space.get(i) for i in out]

    def update(self, inputs: list[MeasureInput], results: list[MeasureResult]) -> None:
        """Record the results; the model is retrained before the next batch."""
        super().update(inputs, results)
        self._stale = True

    def warm_start(self, inputs: list[MeasureInput], results: list[MeasureResult]) -> None:
        """Take results from a log as measured now and train the model on them, so the
        first batch already follows it."""
        super().warm_start(inputs, results)
        if self._stale:
            self._replan()

    def transfer(self, inputs: list[MeasureInput], results: list[MeasureResult]) -> None:
        """Start the model from results of other workloads of the same template (see
        XGBCostModel.transfer); call it before warm_start, whose training it underlies."""
        self.model.transfer(inputs, results)

    def _replan(self) -> None:
        """Retrain on every result and plan the next proposals, when enough measured well."""
        self._stale = False
        if sum(res.ok for _, res in self.measured) < self.min_train:
            return
        self.model.fit([inp.config for inp, _ in self.measured],
                       [res.cost for _, res in self.measured])
        candidates = self.optimizer.find_maximums(
            self.model, round(self.plan_size * self.diversity), self.visited, self.np_rng)
        values = self.optimizer.values(np.array(candidates, dtype=np.int64))
        self.plan = diverse_pick(candidates, values, self.plan_size, self.knob_weight)


def diverse_pick(candidates: list[int], values: np.ndarray, num: int,
                 knob_weight: float) -> list[int]:
    """`num` of `candidates` (best first), picked greedily by rank (1 for the best
    candidate down to 0) plus `knob_weight` for each knob whose value none of the
    configs picked before has. values: [len(candidates), knobs] ids of each candidate's
    knob values, distinct across knobs (SimulatedAnnealingOptimizer.values)."""
    m = len(candidates)
    if m <= num:
        return list(candidates)
    rank = 1 - np.arange(m) / (m - 1)
    covered = np.zeros(values.max() + 1, dtype=bool)
    left = np.ones(m, dtype=bool)
    picked = []
    for _ in range(num):
        gain = np.where(left, rank + knob_weight * (~covered[values]).sum(axis=1), -np.inf)
        best = int(np.argmax(gain))
        picked.append(candidates[best])
        left[best] = False
        covered[values[best]] = True
    return picked
