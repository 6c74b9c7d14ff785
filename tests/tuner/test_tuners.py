"""The tuners (random, grid, GA) against a fake measurer: none proposes a config twice,
measured or in flight, a seed makes them deterministic, the GA climbs, and the shared
loop (tune()) stops early and calls back once per batch."""
from __future__ import annotations

import functools
import random

import pytest

from fake_measurer import FakeMeasurer, bowl_cost, trials_of
from tuner import MeasureInput, StopTuning, Task, tune
from tuner.ga_tuner import GATuner
from tuner.grid_search_tuner import GridSearchTuner
from tuner.random_tuner import RandomTuner, random_unvisited
from tuner.registry import TUNERS as REGISTERED

TUNERS = {"random": RandomTuner, "grid": GridSearchTuner,
          "ga": functools.partial(GATuner, pop_size=20)}  # a pop_size that batches of 16 cut


@pytest.fixture(scope="module")
def task():
    return Task("matmul", (4, 4, 4))  # 864 configs


@pytest.mark.parametrize("name", TUNERS)
def test_a_tuner_exhausts_the_space_never_proposing_a_config_twice(task, name):
    space = task.config_space
    tuner = TUNERS[name](task, seed=3)
    before = space.sample(100, seed=0)
    tuner.warm_start([MeasureInput(task, c) for c in before],
                     FakeMeasurer().measure([MeasureInput(task, c) for c in before]))
    measurer = FakeMeasurer()
    result = tune(task, len(space) + 50, tuner=tuner, measurer=measurer, batch_size=16)
    trials = trials_of(measurer)
    assert len(trials) == len(set(trials)) == len(space) - 100
    assert set(trials) | {c.index for c in before} == set(range(len(space)))
    assert result.trials == len(space) - 100
    assert not tuner.has_next()
    assert tuner.next_batch(8) == []


@pytest.mark.parametrize("name", TUNERS)
def test_a_tuner_never_proposes_a_config_in_flight(task, name):
    tuner = TUNERS[name](task, seed=0)
    in_flight = tuner.next_batch(30)
    tuner.visited.update(c.index for c in in_flight)  # as the loop does before measuring
    after = tuner.next_batch(30)
    assert len(in_flight) == len(after) == 30
    assert not {c.index for c in in_flight} & {c.index for c in after}
    assert len({c.index for c in after}) == 30


@pytest.mark.parametrize("name", TUNERS)
def test_the_same_seed_gives_the_same_proposals(task, name):
    runs = []
    for seed in (7, 7, 8):
        measurer = FakeMeasurer()
        tune(task, 100, tuner=TUNERS[name](task, seed=seed), measurer=measurer, batch_size=16)
        runs.append(trials_of(measurer))
    assert runs[0] == runs[1]
    if name != "grid":  # the grid's order does not depend on the seed
        assert runs[0] != runs[2]


def test_random_unvisited_draws_distinct_new_indices_even_when_few_are_left():
    rng = random.Random(0)
    assert sorted(random_unvisited(rng, 10, {0, 1, 2, 3, 4, 5, 6, 7}, 5)) == [8, 9]
    drawn = random_unvisited(rng, 1000, {1, 2, 3}, 500)
    assert len(set(drawn)) == 500 and not set(drawn) & {1, 2, 3}
    assert random_unvisited(rng, 3, {0, 1, 2}, 4) == []


def fitness(config) -> float:
    """Calls per second of `config` under the fake cost; 0 for a failure."""
    cost = bowl_cost(config)
    return 0.0 if cost is None else 1 / cost


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_the_ga_breeds_fitter_generations_than_its_random_first_one(seed):
    task = Task("matmul", (16, 16, 16))  # 6000 configs
    measurer = FakeMeasurer()
    result = tune(task, 160, tuner=GATuner(task, seed=seed, pop_size=16, elite_num=2),
                  measurer=measurer, batch_size=16)
    scores = [fitness(task.config_space.get(i)) for i in trials_of(measurer)]
    first, last = scores[:16], scores[-48:]  # the random generation, the last three
    assert max(scores) > max(first)
    assert sum(last) / len(last) > sum(first) / len(first)
    assert result.best_gflops == pytest.approx(task.flop * max(scores) / 1e9)


def test_tuning_stops_after_early_stopping_trials_without_improvement(task):
    # grid order: the cost falls until config 19, then only rises
    measurer = FakeMeasurer(cost=lambda c: 1.0 + abs(c.index - 19))
    result = tune(task, 500, tuner=GridSearchTuner(task), measurer=measurer, early_stopping=8,
                  batch_size=4)
    assert result.trials == 28  # improved in the batch ending at 20; 8 more without
    assert trials_of(measurer) == list(range(28))
    assert result.best_config.index == 19 and result.best_cost == 1.0
    assert [n for n, _ in result.history] == list(range(4, 29, 4))


def test_callbacks_are_called_once_per_batch_with_its_inputs_and_results(task):
    calls = []
    measurer = FakeMeasurer()
    tuner = RandomTuner(task, seed=0)
    result = tune(task, 40, tuner=tuner, measurer=measurer,
                  callbacks=[lambda *args: calls.append(args)], batch_size=16)
    assert [len(inputs) for _, inputs, _ in calls] == [16, 16, 8]
    assert measurer.batches == [16 + 2, 16 + 2, 8 + 2]  # and the control, twice
    assert all(t is tuner and len(inputs) == len(results) for t, inputs, results in calls)
    assert [i.config.index for _, inputs, _ in calls for i in inputs] == trials_of(measurer)
    assert result.trials == 40


def test_a_callback_raising_stop_tuning_ends_the_run_after_its_batch(task):
    logged = []

    def stop_in_second_batch(tuner, inputs, results):
        if len(tuner.measured) > 16:
            raise StopTuning

    def log(tuner, inputs, results):
        logged.extend(i.config.index for i in inputs)

    measurer = FakeMeasurer()
    result = tune(task, 100, tuner=RandomTuner(task, seed=0), measurer=measurer,
                  callbacks=[stop_in_second_batch, log], batch_size=16)
    assert measurer.batches == [16 + 2, 16 + 2]
    assert logged == trials_of(measurer)  # the callback after the one that stopped still ran
    assert result.trials == 32 and [n for n, _ in result.history] == [16, 32]
    assert result.best_config is not None


def test_ga_rejects_bad_parameters(task):
    with pytest.raises(ValueError, match="pop_size"):
        GATuner(task, pop_size=0)
    with pytest.raises(ValueError, match="mutation_prob"):
        GATuner(task, mutation_prob=1.5)


@pytest.mark.parametrize("name", REGISTERED)
def test_a_tuner_made_by_name_is_logged_under_that_name(task, name):
    assert REGISTERED[name](task, seed=0).name == name
