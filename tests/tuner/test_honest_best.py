"""The honest best (tuner/control.py, tuner/confirm.py), with a fake runner whose host
drifts: a control in every batch chains costs to one scale, so a config measured while
the host ran fast is not crowned; confirmation re-times the top configs and the fallback
side by side and picks the truly fastest, the fallback when nothing beats it; a run cut
before confirmation is confirmed later; a confirmed log is resumed without measuring
anything twice."""
from __future__ import annotations

import random
import warnings

import pytest

import records
from fake_measurer import FakeMeasurer, trials_of
from tuner import Task, TuningOptions
from tuner.confirm import BUDGET_SHARE, Confirmed, candidates, confirm, plan
from tuner.control import RECHECK_ROUNDS, chain, place, recheck
from tuner.grid_search_tuner import GridSearchTuner
from tuner.measure import MeasureErrorNo, MeasureInput, MeasureResult
from tuner.task_scheduler import TaskScheduler
from tuner.tune import tune

TASK = Task("matmul", (4, 4, 4))  # grid order: configs 0, 1, 2, ...
FALLBACK = TASK.config_space.fallback().index
BEST = 19


def v_cost(config) -> float:
    """A V in grid order with its bottom at config BEST; the fallback is slow."""
    return 2.0 if config.index == FALLBACK else 1.0 + 0.01 * abs(config.index - BEST)


def fast_call(n_fast):
    """The host's slowness by call: twice as fast at call `n_fast`, else 1."""
    return lambda n: 0.5 if n == n_fast else 1.0


def scheduler(db, measurer, trials, **options):
    own = {k: options.pop(k) for k in ("clock", "weights", "callbacks", "on_batch")
           if k in options}
    return TaskScheduler([TASK], measurer, TuningOptions(trials=trials, batch_size=8,
                                                         **options),
                         db, tuners=[GridSearchTuner(TASK)], **own)


def result(cost: float) -> MeasureResult:
    return MeasureResult((cost,), MeasureErrorNo.NO_ERROR)


# ---------------------------------------------------------------------- the chain

def test_the_control_brackets_its_batch():
    assert place([1, 2, 3], "c") == (["c", 1, 2, 3, "c"], (0, 4))
    assert place([], "c") == (["c", "c"], (0, 1))


def test_a_batch_is_put_on_the_scale_of_its_control():
    # the control's cost on the scale is 2.0; in this batch the host ran twice as fast
    out, factor = chain([result(1.0), result(0.5), result(0.75), result(1.0)], (0, 3), 2.0,
                        factor=1.0)
    assert factor == 2.0
    assert [r.ratio for r in out] == [1.0, 0.5, 0.75, 1.0]
    assert [r.scaled_cost for r in out] == [2.0, 1.0, 1.5, 2.0]
    assert [r.cost for r in out] == [2.0, 1.0, 1.5, 2.0]


def test_when_the_host_changes_speed_in_a_batch_no_config_looks_better_than_it_is():
    # fast (x1) for the first control and candidate a, slow (x2) from then on: both
    # candidates truly cost 1.0, the control 2.0 on the scale and in truth
    out, factor = chain([result(2.0), result(1.0), result(2.0), result(4.0)], (0, 3), 2.0,
                        factor=1.0)
    assert factor == 1.0 and [r.scaled_cost for r in out[1:3]] == [1.0, 2.0]  # b: overstated


def test_the_first_control_anchors_the_scale_and_a_failed_one_keeps_the_last_factor():
    out, factor = chain([result(3.0), result(1.5), result(3.3)], (0, 2), None, factor=7.0)
    assert factor == 1.0 and [r.scaled_cost for r in out] == [3.0, 1.5, 3.3]
    failed = MeasureResult((), MeasureErrorNo.RUN_TIMEOUT)
    out, factor = chain([failed, result(3.0), failed], (0, 2), 2.0, factor=0.5)
    assert factor == 0.5 and out[1].scaled_cost == 1.5 and out[1].ratio is None
    assert out[0] is failed and out[0].cost == float("inf")
    out, factor = chain([failed, result(3.0), result(1.5)], (0, 2), 3.0, factor=0.5)
    assert factor == 2.0 and out[1].ratio == 2.0  # the one timing of the control counts


def test_equal_configs_timed_with_noise_never_drift_below_one_ratio_of_the_fallback(tmp_path):
    # every config truly costs 1.0; each timing is off by up to 5% either way. The best
    # of 160 noisy ratios is a lucky one, but one ratio away from the fallback at most:
    # a control that followed the best would add a lucky ratio with every new best
    rng = random.Random(0)
    measurer = FakeMeasurer(lambda config: rng.uniform(0.95, 1.05))
    with records.Database(tmp_path / "tune.db") as db:
        state, = scheduler(db, measurer, 160).run()
    controls = {b[0] for b in measurer.batch_indices[1:]} | \
        {b[-1] for b in measurer.batch_indices[1:]}
    assert controls == {FALLBACK}
    assert state.best_cost >= state.fallback_cost * 0.95 / 1.05


# ---------------------------------------------------------------------- drift

def test_a_config_measured_while_the_host_ran_fast_is_not_crowned(tmp_path):
    # calls: 0 the fallback, 1-5 the batches of configs 0-7, ..., 32-39 (call 5 fast)
    measurer = FakeMeasurer(v_cost, speed=fast_call(5))
    with records.Database(tmp_path / "tune.db") as db:
        state, = scheduler(db, measurer, 40).run()
        raw = min((r for r in db.records(TASK) if r.ok and r.role == "trial"),
                  key=lambda r: r.mean_cost)
        ranked = db.ranked(TASK, 3)
        best = db.best(TASK)
    # by raw seconds, a config of the fast batch would be the best (about 0.57 s) ...
    assert 32 <= raw.config_index < 40 and raw.mean_cost < 0.6
    # ... on the chained scale it is where it belongs: 1.13 and up, the V's bottom first
    assert [r.config_index for r in ranked] == [19, 18, 20]
    assert ranked[0].scaled_cost == pytest.approx(1.0)
    assert raw.scaled_cost == pytest.approx(v_cost(TASK.config_space.get(raw.config_index)))
    assert state.tuner.best_config.index == BEST
    assert best.config_index == BEST and best.confirmed


def test_the_curve_and_the_progress_figures_are_on_the_scale(tmp_path):
    measurer = FakeMeasurer(v_cost, speed=fast_call(5))
    with records.Database(tmp_path / "tune.db") as db:
        state, = scheduler(db, measurer, 40).run()
        history = db.history(TASK)
    assert [cost for _, cost in state.curve] == pytest.approx([2.0, 1.12, 1.04, 1.0, 1.0, 1.0])
    assert len(history) == 1 + 40  # the fallback and the trials: no control
    assert max(g for *_, g in history) == pytest.approx(TASK.flop / 1.0 / 1e9)


def test_a_candidate_that_beat_the_control_in_a_fast_moment_loses_it_on_its_recheck():
    space = TASK.config_space
    inputs = [MeasureInput(TASK, space.get(i)) for i in (BEST, 30, 31, 32, BEST)]
    # candidate 30 (truly 1.11) was timed while the host ran twice as fast; 31 and 32
    # beat the control (1.0) by no luck of theirs: they do not, re-timed
    timed = [result(1.0), result(0.555), result(0.9), result(1.13), result(1.0)]
    chained, _ = chain(timed, (0, 4), 1.0, factor=1.0)
    measurer = FakeMeasurer(v_cost)
    out = recheck(inputs, chained, measurer)
    assert measurer.confirmed == [[BEST, 30, 31]]  # the two that beat the control
    assert [r.ratio for r in out] == pytest.approx([1.0, 1.11, 1.12, 1.13, 1.0])
    assert out[1].scaled_cost == pytest.approx(1.11) and out[3] is chained[3]


# ---------------------------------------------------------------------- confirmation

class LuckyMeasurer(FakeMeasurer):
    """Each config in `lucky` measures at `luck` times its cost while tuning, its
    re-check too (noise that no control takes out); confirmed, it takes its true cost."""

    def __init__(self, cost, lucky, luck=0.8):
        super().__init__(cost)
        self.lucky, self.luck = set(lucky), luck

    def measure(self, inputs):
        out = super().measure(inputs)
        return [MeasureResult(tuple(c * self.luck for c in r.costs), r.error_no)
                if inp.config.index in self.lucky and r.ok else r
                for inp, r in zip(inputs, out)]

    def time_rounds(self, inputs, rounds, repeat_ms, cold=False):
        out = super().time_rounds(inputs, rounds, repeat_ms, cold)
        if rounds != RECHECK_ROUNDS:  # a confirmation
            return out
        return [[c * self.luck for c in t] if inp.config.index in self.lucky else t
                for inp, t in zip(inputs, out)]


def test_confirmation_picks_the_truly_fastest_of_the_top_configs(tmp_path):
    measurer = LuckyMeasurer(v_cost, lucky=[30])  # 1.11 measured as 0.888
    with records.Database(tmp_path / "tune.db") as db:
        state, = scheduler(db, measurer, 40).run()
        ranked, top = db.ranked(TASK, 6), db.top(TASK, 6)
        confirmation = db.confirmation(TASK)
    assert ranked[0].config_index == 30  # the tuner's pick: the lucky timing
    # the re-checks of batches' winners, then the top 5 and the fallback confirmed
    assert measurer.confirmed[-1] == [30, 19, 18, 20, 17, FALLBACK]
    assert [r.config_index for r in top] == [19, 18, 20, 17, 30, FALLBACK]
    assert [r.confirmed_rank for r in top] == [1, 2, 3, 4, 5, 6]
    assert top[0].confirmed_cost == pytest.approx(1.0) and top[0].confirmed_ratio == 0.5
    assert top[-1].confirmed_ratio == 1.0  # the fallback, by definition
    assert state.best_gflops == pytest.approx(TASK.flop / 1.0 / 1e9)
    assert state.speedup == pytest.approx(2.0)
    assert confirmation["rounds"] >= 3 and confirmation["run_id"] == state.run_id


def test_the_fallback_is_the_confirmed_best_when_nothing_beats_it(tmp_path):
    def cost(config):
        return 1.0 if config.index == FALLBACK else 1.2 + 0.01 * abs(config.index - BEST)
    measurer = LuckyMeasurer(cost, lucky=range(0, 40), luck=0.5)  # every trial looks 2x
    with records.Database(tmp_path / "tune.db") as db:
        scheduler(db, measurer, 40).run()
        assert db.ranked(TASK, 1)[0].config_index != FALLBACK
        best = db.best(TASK)
        with records.ApplyHistoryBest(db, target=TASK.target) as context:
            applied = context.query(TASK)
    assert best.config_index == FALLBACK and best.confirmed_rank == 1
    assert best.confirmed_ratio == 1.0 and applied.index == FALLBACK


def test_a_tie_with_the_fallback_goes_to_the_fallback():
    fallback = TASK.config_space.fallback()
    other = TASK.config_space.get(BEST)
    measurer = FakeMeasurer(lambda config: 1.0)
    c = confirm(TASK, [other, fallback], measurer, 3, 10)
    assert c.best.fallback and c.best.ratio == 1.0 and c.speedup == 1.0
    assert [e.config.index for e in c.ranking] == [FALLBACK, BEST]


def test_the_candidates_are_the_top_five_distinct_configs_then_the_fallback():
    space = TASK.config_space
    ranked = [space.get(i) for i in (3, FALLBACK, 3, 4, 5, 6, 7, 8, 9)]
    assert [c.index for c in candidates(TASK, ranked)] == [3, 4, 5, 6, 7, FALLBACK]


def test_the_rounds_fit_in_the_budget():
    assert plan(6, None) == (7, 50)
    for budget in (0.2, 0.5, 2.0, 30.0, 600.0):
        rounds, ms = plan(6, budget)
        assert rounds >= 3 and 2 <= ms <= 100
        assert rounds * 6 * (ms + 2) / 1e3 <= max(budget, rounds * 6 * 4 / 1e3)
    assert plan(6, 600.0) == (7, 100) and plan(6, 0.5) == (5, 14)
    assert plan(6, 0.01) == (3, 2)  # the least worth timing


def test_a_config_must_beat_the_fallback_in_every_round():
    space = TASK.config_space
    fallback, lucky, steady = space.fallback(), space.get(3), space.get(4)
    noise = {0: 1.1, 1: 0.8, 2: 0.8}  # lucky: faster in two rounds of three, by far

    class Rounds(FakeMeasurer):
        def time_rounds(self, inputs, rounds, repeat_ms, cold=False):
            return [[(noise[r] if inp.config.index == 3 else
                      0.99 if inp.config.index == 4 else 1.0) for r in range(rounds)]
                    for inp in inputs]
    c = confirm(TASK, [lucky, steady, fallback], Rounds(), 3, 10)
    # lucky's median ratio (0.8) is the least, but it lost a round: below the fallback
    assert [e.config.index for e in c.ranking] == [4, FALLBACK, 3]
    assert c.ranking[2].ratio == pytest.approx(0.8)


def test_confirmation_costs_at_most_its_share_of_the_tuning_time(tmp_path):
    import time

    class Slow(FakeMeasurer):
        """A timing lasts as long as on a runner: 10 ms a trial, repeat_ms a re-timing."""

        def measure(self, inputs):
            time.sleep(0.01 * len(inputs))
            return super().measure(inputs)

        def time_rounds(self, inputs, rounds, repeat_ms, cold=False):
            time.sleep(rounds * len(inputs) * repeat_ms / 1e3)
            return super().time_rounds(inputs, rounds, repeat_ms, cold)

    with records.Database(tmp_path / "tune.db") as db:
        state, = scheduler(db, Slow(v_cost), 160).run()
    assert state.confirmation.seconds <= BUDGET_SHARE * state.seconds * 1.2


def test_a_config_that_fails_in_the_rounds_is_left_out():
    space = TASK.config_space
    c = confirm(TASK, [space.get(5), space.fallback()],
                FakeMeasurer(lambda config: None if config.index == 5 else 1.0), 3, 10)
    assert [e.config.index for e in c.ranking] == [FALLBACK]
    assert confirm(TASK, [space.get(5)], FakeMeasurer(lambda config: None), 3, 10) is None
    assert isinstance(c.best, Confirmed)


# ---------------------------------------------------------------------- cut and resumed

def test_a_run_cut_before_confirmation_is_confirmed_by_the_next(tmp_path):
    def cut(tuner, inputs, results):
        raise KeyboardInterrupt  # a second Ctrl-C: the batch is logged, nothing more

    path = tmp_path / "tune.db"
    with records.Database(path) as db:
        with pytest.raises(KeyboardInterrupt):
            scheduler(db, FakeMeasurer(v_cost), 16, callbacks=[cut]).run()
        assert db.confirmation(TASK) is None and not db.best(TASK).confirmed
        assert not db.tasks()[0].confirmed
        # `autosched log confirm`: a run without trials, that only confirms
        measurer = FakeMeasurer(v_cost)
        state, = scheduler(db, measurer, 0).run()
        assert measurer.batches == [] and len(measurer.confirmed) == 1
        assert state.done == 0 and db.best(TASK).confirmed and db.tasks()[0].confirmed


def test_resuming_a_confirmed_run_measures_nothing_twice(tmp_path):
    path = tmp_path / "tune.db"
    with records.Database(path) as db:
        first = FakeMeasurer(v_cost)
        scheduler(db, first, 16).run()
        assert db.best(TASK).confirmed
        # nothing to do: no trial, and the confirmation is current
        idle = FakeMeasurer(v_cost)
        scheduler(db, idle, 0).run()
        assert idle.batches == [] and idle.confirmed == []
        second = FakeMeasurer(v_cost)
        scheduler(db, second, 16).run()
        trials = trials_of(first, fallback_batch=True) + trials_of(second)
        assert len(trials) == len(set(trials)) == 32
        assert second.batches == [8 + 2, 8 + 2]  # no fallback again; each with its control
        # a re-check of the winners of its first batch, then one confirmation
        assert [len(c) for c in second.confirmed] == [3, 6]
        logged = [r.config_index for r in db.records(TASK) if r.role != "control"]
        assert len(logged) == len(set(logged)) == 1 + 32
        assert db.best(TASK).config_index == BEST


def test_tune_returns_the_confirmed_best():
    measurer = LuckyMeasurer(v_cost, lucky=[30])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        found = tune(TASK, 40, tuner=GridSearchTuner(TASK), measurer=measurer, batch_size=8)
    assert found.best_config.index == BEST and found.best_cost == pytest.approx(1.0)
    assert found.confirmation.best.config.index == BEST
