"""Measurement on a real local Ray: one batch of candidates that build, are rejected,
segfault, hang, compute wrong answers or never finish building gets one right result
per input, in order, and measuring goes on normally afterwards."""
from __future__ import annotations

import math

import pytest

import misbehaving_templates  # noqa: F401  (registers test_misbehave)
from tuner import MeasureErrorNo, MeasureInput, Measurer, Task

E = MeasureErrorNo


def behaviour_input(task: Task, behaviour: str) -> MeasureInput:
    space = task.config_space
    config = next(c for c in (space.get(i) for i in range(len(space)))
                  if c["behaviour"].val == behaviour)
    return MeasureInput(task, config)


@pytest.fixture(scope="module")
def measurer(local_ray):
    # the timeouts are what the hanging candidates cost the batch: a few times what a
    # build (a second, with a new worker's start) and a run (milliseconds) take here
    with Measurer(n_parallel=2, number=1, repeat=2, min_repeat_ms=0,
                  build_timeout=8, run_timeout=2) as m:
        yield m


def test_a_batch_of_misbehaving_candidates_gets_one_result_each_in_order(measurer):
    task = Task("test_misbehave", (1000,))
    order = ["ok", "invalid", "crash", "wrong", "hang", "slow_build", "ok"]
    results = measurer.measure([behaviour_input(task, b) for b in order])
    assert [r.error_no for r in results] == [
        E.NO_ERROR, E.INSTANTIATION_ERROR, E.WORKER_CRASH, E.WRONG_ANSWER, E.RUN_TIMEOUT,
        E.COMPILE_TIMEOUT, E.NO_ERROR]
    for r in (results[0], results[-1]):
        assert len(r.costs) == 2 and all(0 < c < 1 for c in r.costs)
        assert r.host and r.build_time > 0 and r.run_time > 0 and r.timestamp > 0
    assert "rejects this config" in results[1].error_msg
    assert "died" in results[2].error_msg
    assert "output B" in results[3].error_msg and "differ" in results[3].error_msg
    assert "run_timeout=2" in results[4].error_msg
    assert "build_timeout=8" in results[5].error_msg
    assert all(math.isinf(r.mean_cost) for r in results[1:-1])
    # measuring goes on normally with the replaced runner
    again = measurer.measure([behaviour_input(task, "ok")] * 2)
    assert [r.error_no for r in again] == [E.NO_ERROR, E.NO_ERROR]


def test_sampled_matmul_configs_are_built_checked_and_timed(measurer):
    task = Task("matmul", (13, 24, 7))
    configs = task.config_space.sample(6, seed=3)
    results = measurer.measure([MeasureInput(task, c) for c in configs])
    assert [r.error_no for r in results] == [E.NO_ERROR] * 6, results
    assert all(r.verify_time > 0 for r in results)
    assert task.flop == 2 * 13 * 24 * 7


def test_a_template_without_a_reference_is_checked_against_its_plain_compute(measurer):
    task = Task("test_plain_reference", (1000,))
    assert task.template.reference is None
    results = measurer.measure([MeasureInput(task, c) for c in task.config_space.sample(3, seed=0)])
    assert [r.error_no for r in results] == [E.NO_ERROR] * 3
