"""TaskScheduler with a fake measurer: how it splits the trials between tasks, that it
stops where it says it does (trials, time budget, early stopping, stop()), that every
batch is logged with its control, and that a second run measures no config twice."""
from __future__ import annotations

from collections import Counter

import pytest

import records
from fake_measurer import FakeMeasurer, bowl_cost
from tuner import StopTuning, Task, TuningOptions, allocation, from_log
from tuner.confirm import BUDGET_SHARE, OVERHEAD_MS
from tuner.control import RECHECK_MS
from tuner.task_scheduler import TaskScheduler

IMPROVING = Task("matmul", (64, 64, 64))
FLAT = Task("matmul", (32, 32, 32))


def improving_but(flat, kth_cost):
    """Costs of configs: every config of task `flat` costs 1 ms; every other task's k-th
    new config costs kth_cost(k) (a config timed again, as the control is, costs what it
    cost the first time)."""
    count, costs = {}, {}

    def cost(config):
        if config.space.args == flat.args:
            return 1e-3
        key = (config.space.args, config.index)
        if key not in costs:
            count[config.space.args] = count.get(config.space.args, 0) + 1
            costs[key] = kth_cost(count[config.space.args])
        return costs[key]
    return cost


def flat_for(task):
    """Every config of `task` costs the same, so it never improves; every other task's
    next new config is faster than all before it, so those always improve."""
    return improving_but(task, lambda k: 1e-3 / k)


def run(tmp_path, tasks, trials, measurer=None, **options):
    """A random-tuner run of `tasks` on `measurer` (default a FakeMeasurer), on its fake
    clock unless `options` give another, logged to tmp_path / "tune.db"."""
    measurer = measurer or FakeMeasurer()
    own = {k: options.pop(k) for k in ("clock", "weights", "callbacks", "on_batch")
           if k in options}
    own.setdefault("clock", measurer.clock)
    with records.Database(tmp_path / "tune.db") as db:
        scheduler = TaskScheduler(tasks, measurer, TuningOptions(
            trials=trials, tuner="random", seed=0, batch_size=8, **options), db, **own)
        states = scheduler.run()
        logged = {t.template + str(t.args): t.records for t in db.tasks()}
    return scheduler, states, logged, measurer


def roles(tmp_path) -> Counter:
    """The log's records by role: trials, fallbacks and the batches' controls."""
    with records.Database(tmp_path / "tune.db") as db:
        return Counter(r["role"] for r in db.record_rows())


def test_a_task_that_stopped_improving_gets_fewer_trials(tmp_path):
    improving_too = Task("matmul", (48, 48, 48))
    measurer = FakeMeasurer(flat_for(FLAT))
    scheduler, states, _, _ = run(tmp_path, [FLAT, IMPROVING, improving_too], 160, measurer)
    done = {s.task: s.done for s in states}
    assert scheduler.done == 160 and scheduler.stop_reason == "trials spent"
    assert done[FLAT] < done[IMPROVING] and done[FLAT] < done[improving_too], done
    assert done[FLAT] >= 8 * 2  # its first batch and round-robin turns: it never starves
    assert done[IMPROVING] >= 2 * done[FLAT], done


def test_every_batch_and_the_fallbacks_are_logged(tmp_path):
    scheduler, states, logged, measurer = run(tmp_path, [FLAT, IMPROVING], 40)
    assert measurer.batches[0] == 2  # the two fallback configs, measured once together
    assert measurer.batches[1:] == [8 + 2] * 5  # each batch with its control, twice
    assert roles(tmp_path) == {"trial": 40, "fallback": 2, "control": 2 * 5}
    assert sum(logged.values()) == 40 + 2 + 2 * 5 == len(measurer.measured)
    assert all(s.fallback_cost is not None and s.speedup >= 1.0 for s in states)


def test_stop_ends_the_run_after_the_batch_in_flight(tmp_path):
    measurer = FakeMeasurer()
    holder = {}

    def on_batch(scheduler, state):
        holder["scheduler"] = scheduler
        if state.batches == 2:
            scheduler.stop("SIGINT")

    scheduler, states, logged, _ = run(tmp_path, [IMPROVING], 400, measurer,
                                       on_batch=on_batch)
    assert scheduler.stop_reason == "SIGINT"
    assert states[0].done == 16 and sum(logged.values()) == 16 + 1 + 2 * 2  # and controls


def test_a_callback_raising_stop_tuning_ends_the_run_after_its_logged_batch(tmp_path):
    seen = []

    def stop_at_third(tuner, inputs, results):
        seen.append((tuner.task, len(inputs)))
        if len(seen) == 3:
            raise StopTuning

    scheduler, states, logged, _ = run(tmp_path, [FLAT, IMPROVING], 400,
                                       callbacks=[stop_at_third, lambda *batch: None])
    assert scheduler.stop_reason == "stopped by a callback"
    assert [n for _, n in seen] == [8, 8, 8] and {t for t, _ in seen} == {FLAT, IMPROVING}
    assert scheduler.done == 24 and roles(tmp_path) == {"trial": 24, "fallback": 2,
                                                        "control": 2 * 3}


def test_the_time_budget_is_not_overrun_by_a_batch(tmp_path):
    import time

    def slow(config):
        time.sleep(0.01)
        return bowl_cost(config)

    scheduler, states, _, _ = run(tmp_path, [IMPROVING], 10_000, FakeMeasurer(slow),
                                  time_budget=0.5, clock=time.monotonic)
    assert scheduler.stop_reason == "time budget"
    assert 0 < scheduler.done < 10_000 and scheduler.elapsed() < 0.5 + 0.2


def test_early_stopping_takes_a_task_out_of_the_rotation(tmp_path):
    measurer = FakeMeasurer(flat_for(FLAT))
    scheduler, states, _, _ = run(tmp_path, [FLAT, IMPROVING], 200, measurer,
                                  early_stopping=16)
    flat = next(s for s in states if s.task == FLAT)
    assert flat.finished == "early stopping" and flat.done <= 24


def test_a_second_run_measures_no_config_twice(tmp_path):
    run(tmp_path, [FLAT, IMPROVING], 48)
    _, states, logged, second = run(tmp_path, [FLAT, IMPROVING], 48)
    assert sum(s.resumed for s in states) == 48 + 2  # the first run's trials and fallbacks
    assert roles(tmp_path) == {"trial": 2 * 48, "fallback": 2, "control": 2 * 2 * 6}
    assert second.batches[0] == 8 + 2  # no fallback batch: the log had them
    with records.Database(tmp_path / "tune.db") as db:
        for task in (FLAT, IMPROVING):
            indices = [r.config_index for r in db.records(task) if r.role != "control"]
            assert len(indices) == len(set(indices))


def test_round_robin_gives_the_batches_in_turn_whatever_improves(tmp_path):
    """The baseline the gradient is measured against: the same three tasks as above,
    one batch each in turn, the flat one as many as the improving ones."""
    improving_too = Task("matmul", (48, 48, 48))
    scheduler, states, _, _ = run(tmp_path, [FLAT, IMPROVING, improving_too], 96,
                                  FakeMeasurer(flat_for(FLAT)), allocation="round-robin",
                                  weights=[1, 10, 100])
    assert [s.done for s in states] == [32, 32, 32]
    assert scheduler.stop_reason == "trials spent"


def test_bad_arguments_are_value_errors(tmp_path):
    with records.Database(tmp_path / "t.db") as db:
        for kwargs, words in (({"tasks": []}, "no tasks"), ({"tasks": [FLAT, FLAT]}, "twice"),
                              ({"tuner": "sa"}, "unknown tuner"), ({"trials": -1}, "trials"),
                              ({"batch_size": 0}, "batch_size"),
                              ({"early_stopping": True}, "early_stopping"),
                              ({"allocation": "greedy"}, "allocation must be one of")):
            tasks = kwargs.pop("tasks", [FLAT])
            with pytest.raises(ValueError, match=words):
                TaskScheduler(tasks, FakeMeasurer(), TuningOptions(**{"trials": 8, **kwargs}),
                              db)
    with pytest.raises(TypeError, match="options must be a TuningOptions"):
        TaskScheduler([FLAT], FakeMeasurer(), {"trials": 8})


def test_weights_steer_the_batches_to_the_task_that_lowers_the_model_latency_most(tmp_path):
    """Two tasks improving alike: the one the model runs 10 times gets most batches; a
    heavier task that stopped improving gets only its round-robin turns."""
    light = Task("matmul", (48, 48, 48))
    measurer = FakeMeasurer(flat_for(FLAT))
    scheduler, states, _, _ = run(tmp_path, [FLAT, IMPROVING, light], 200, measurer,
                                  weights=[100, 10, 1])
    done = {s.task: s.done for s in states}
    assert done[IMPROVING] > 2 * done[light], done
    assert done[FLAT] < done[IMPROVING], done
    untuned = scheduler.estimated_latency(untuned=True)
    fallback = {s.task: s.fallback_cost for s in states}
    assert untuned == pytest.approx(100 * fallback[FLAT] + 10 * fallback[IMPROVING]
                                    + fallback[light])
    best = {s.task: s.best_cost for s in states}
    assert scheduler.estimated_latency() == pytest.approx(
        100 * best[FLAT] + 10 * best[IMPROVING] + best[light])
    assert scheduler.estimated_latency() < untuned


def test_tasks_that_stopped_improving_share_the_trials_by_their_part_of_the_latency(
        tmp_path):
    """No task improving: the batches spread in proportion to weight x cost (the
    heavier task does not take every batch but the round-robin turns)."""
    heavy, light = Task("matmul", (48, 48, 48)), Task("matmul", (40, 40, 40))
    scheduler, states, _, _ = run(tmp_path, [heavy, light], 256,
                                  FakeMeasurer(lambda config: 1e-3), weights=[3, 1])
    done = {s.task: s.done for s in states}
    assert 2 <= done[heavy] / done[light] <= 4, done


def test_weights_may_be_numpy_numbers():
    import numpy as np
    scheduler = TaskScheduler([FLAT, IMPROVING], FakeMeasurer(), TuningOptions(trials=8),
                              weights=np.array([4, 1], dtype=np.int64))
    assert scheduler.weights == [4.0, 1.0]


def test_bad_weights_are_value_errors():
    for weights in ([1], [1, 0], [1, -2.0], [1, "2"], [True, 1], [1, float("inf")],
                    [float("nan"), 1]):
        with pytest.raises(ValueError, match="weights must be 2 positive numbers"):
            TaskScheduler([FLAT, IMPROVING], FakeMeasurer(), TuningOptions(trials=8),
                          weights=weights)


def test_a_time_budget_is_spent_to_its_end_confirmation_included(tmp_path):
    """Two tasks whose configs take 0.2 s and 0.05 s of the fake clock, no trial limit: the
    run ends, confirmations included, after the budget less one trial's batch of the
    fast task, and before the budget plus one batch; last batches shrink to fit."""
    slow, fast = Task("matmul", (64, 64, 64)), Task("matmul", (40, 40, 40))
    seconds = {slow.args: 0.2, fast.args: 0.05}
    one_batch = (8 + 2) * 0.2 + 2 * 3 * (RECHECK_MS + OVERHEAD_MS) / 1e3  # and a recheck
    shrunk = []
    for n, budget in enumerate(30.0 + 0.13 * k for k in range(6)):
        measurer = FakeMeasurer(seconds=lambda config: seconds[config.space.args])
        (tmp_path / str(n)).mkdir()
        scheduler, states, _, _ = run(tmp_path / str(n), [slow, fast], None, measurer,
                                      time_budget=budget)
        assert scheduler.stop_reason == "time budget"
        assert all(s.confirmation is not None for s in states)
        end = scheduler.elapsed()
        # one trial and its control twice, at the fast task's seconds per config (0.05 s
        # and its rechecks), and its share of confirmation
        smallest_fast = 3 * min(s.seconds_per_input for s in states) * (1 + BUDGET_SHARE)
        assert budget - smallest_fast <= end <= budget + one_batch, (budget, end)
        assert scheduler.done > 2 * 64  # no DEFAULT_TRIALS_PER_TASK cut short
        shrunk += [b - 2 for b in measurer.batches[1:] if 2 < b < 8 + 2]
    assert shrunk, "no batch was made smaller to fit the budget"


def test_a_time_budget_alone_keeps_what_trials_alone_did(tmp_path):
    """trials and a time budget: whichever ends first; neither is refused."""
    scheduler, _, _, _ = run(tmp_path, [IMPROVING], 40, time_budget=3600.0)
    assert scheduler.stop_reason == "trials spent" and scheduler.done == 40
    with pytest.raises(ValueError, match="trials, a time_budget or both"):
        TuningOptions(trials=None)
    with pytest.raises(ValueError, match="time_budget must be a positive"):
        TuningOptions(time_budget=0)


def slowly_improving(flat):
    """Costs of a model's tasks: `flat`'s configs all cost 1 ms; every other task's next
    new config is a little faster than all before it (1 ms x (1 + 1/2k) for its k-th),
    so those improve all the time, slowly."""
    return improving_but(flat, lambda k: 1e-3 * (1 + 0.5 / k))


@pytest.mark.parametrize("floor", [allocation.FLOOR_SHARE, 0.0])
def test_a_task_with_a_quarter_of_the_latency_gets_its_floor(tmp_path, monkeypatch, floor):
    """Four tasks that keep improving a little and one that looks flat from its first
    batch with a quarter of the model's latency: the flat one gets at least FLOOR_SHARE
    of its share of the tuning time (within a batch) until FLOOR_BATCHES batches; with no
    floor, only its first batch and the round-robin turns."""
    monkeypatch.setattr(allocation, "FLOOR_SHARE", floor)
    flat = Task("matmul", (56, 56, 56))
    others = [Task("matmul", (n, n, n)) for n in (32, 40, 48, 64)]
    scheduler, states, _, _ = run(tmp_path, [*others, flat], 400,
                                  FakeMeasurer(slowly_improving(flat)),
                                  weights=[3, 3, 3, 3, 4])
    state = states[-1]
    share = scheduler.allocation.latency_shares()[id(state)]
    assert share == pytest.approx(0.25, abs=0.02)
    spent = sum(s.seconds for s in states)
    if floor:
        one_batch = state.seconds / state.batches
        assert state.batches >= allocation.FLOOR_BATCHES or \
            state.seconds + one_batch >= floor * share * spent, (state.batches, spent)
        assert state.seconds / spent > 0.1
    else:
        assert state.seconds / spent < 0.1 and state.batches <= 4


def test_a_transfer_learns_from_the_latest_trials_of_the_other_workloads(tmp_path,
                                                                      monkeypatch):
    run(tmp_path, [FLAT, IMPROVING], 48)
    monkeypatch.setattr(from_log, "TRANSFER_PER_WORKLOAD", 10)
    with records.Database(tmp_path / "tune.db") as db:
        inputs, results = from_log.transfer_records(FLAT, db)
        latest = [r.config_index for r in db.records(IMPROVING) if r.role != "control"][-10:]
    assert {inp.task for inp in inputs} == {IMPROVING}
    assert [inp.config.index for inp in inputs] == latest and len(results) == 10
