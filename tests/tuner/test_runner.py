"""Task, builder and runner in this process (no Ray): what the Ray workers run."""
from __future__ import annotations

import pytest

import misbehaving_templates  # noqa: F401  (registers test_misbehave, test_plain_reference)
from search_spaces import SpaceError
from tuner import MeasureErrorNo, Task
from tuner.builder import build_candidate
from tuner import runner as runner_module
from tuner.runner import Runner

E = MeasureErrorNo
OPTIONS = {"number": 1, "repeat": 3, "min_repeat_ms": 0, "check_correctness": True}


def config_json(task: Task, behaviour: str) -> dict:
    space = task.config_space
    return next(c for c in (space.get(i) for i in range(len(space)))
                if c["behaviour"].val == behaviour).to_json()


def built(task: Task, behaviour: str) -> dict:
    out = build_candidate(task.spec(), config_json(task, behaviour))
    assert out["error_no"] == E.NO_ERROR, out
    return out


def test_task_spec_rebuilds_the_same_task():
    task = Task("matmul", [64, 32, 16])
    again = Task.from_spec(task.spec())
    assert again == task and hash(again) == hash(task)
    assert task.workload == ("matmul", (64, 32, 16, "float32"))
    assert task.workload_key == '["matmul", [64, 32, 16, "float32"]]'
    assert task.flop == 2 * 64 * 32 * 16
    assert "-mattr=" in task.spec()["target"]


def test_task_of_an_unknown_template_or_bad_arguments_is_a_clear_error():
    with pytest.raises(SpaceError, match="matmul"):
        Task("matmull", (8, 8, 8))
    with pytest.raises(SpaceError, match="argument M must be int"):
        Task("matmul", ("8", 8, 8))


def test_builder_classifies_a_rejected_config_and_a_stale_one():
    task = Task("test_misbehave", (16,))
    out = build_candidate(task.spec(), config_json(task, "invalid"))
    assert out["error_no"] == E.INSTANTIATION_ERROR and out["object"] is None
    assert out["error_msg"].startswith("InstantiationError: behaviour=invalid")
    stale = dict(config_json(task, "ok"), template_version="000000000000")
    out = build_candidate(task.spec(), stale)
    assert out["error_no"] == E.INSTANTIATION_ERROR and "version" in out["error_msg"]


def test_runner_times_checks_and_reports():
    task = Task("test_misbehave", (1000,))
    runner = Runner()
    ok = runner.time_candidate(task.spec(), built(task, "ok")["object"], OPTIONS)
    assert ok["error_no"] == E.NO_ERROR and len(ok["costs"]) == 3 and ok["verify_time"] > 0
    wrong = runner.time_candidate(task.spec(), built(task, "wrong")["object"], OPTIONS)
    assert wrong["error_no"] == E.WRONG_ANSWER and wrong["costs"] == []
    unchecked = runner.time_candidate(task.spec(), built(task, "wrong")["object"],
                           dict(OPTIONS, check_correctness=False))
    assert unchecked["error_no"] == E.NO_ERROR
    garbage = runner.time_candidate(task.spec(), b"\x7fELF garbage", OPTIONS)
    assert garbage["error_no"] == E.RUNTIME_ERROR and "object code" in garbage["error_msg"]


def test_runner_flushes_caches_before_each_call(monkeypatch):
    task = Task("test_misbehave", (1000,))
    runner, flushes = Runner(), []
    flush = runner._flush
    monkeypatch.setattr(runner, "_flush", lambda a: (flushes.append(len(a)), flush(a)))
    out = runner.time_candidate(task.spec(), built(task, "ok")["object"],
                                dict(OPTIONS, flush_cache=True))
    assert out["error_no"] == E.NO_ERROR and len(out["costs"]) == 3
    assert flushes == [2] * (3 * runner_module.COLD_CALLS)  # the input and the output


def test_cold_rounds_flush_the_caches_before_every_call(monkeypatch):
    task = Task("test_misbehave", (1000,))
    obj = built(task, "ok")["object"]
    runner, flushes = Runner(), []
    flush = runner._flush
    monkeypatch.setattr(runner, "_flush", lambda a: (flushes.append(len(a)), flush(a)))
    warm = runner.time_rounds(task.spec(), [obj, None, obj], 1, 3)
    assert [len(c) for c in warm["costs"]] == [3, 0, 3] and not flushes
    # repeat_ms=0: a round makes exactly COLD_CALLS calls, however fast the host (with 1 ms
    # a host that flushes and calls in under 1/6 ms makes more)
    cold = runner.time_rounds(task.spec(), [obj, None, obj], 0, 3, cold=True)
    assert [len(c) for c in cold["costs"]] == [3, 0, 3]
    assert cold["errors"][1] == "it did not build"
    # per candidate one to time a flush, then one before each of its calls, each of the
    # kernel's input and output
    assert flushes == [2] * (2 * (1 + 3 * runner_module.COLD_CALLS))


def test_a_candidate_slower_than_the_cutoff_is_not_timed_further(monkeypatch):
    task = Task("test_misbehave", (1000,))
    obj = built(task, "ok")["object"]
    out = Runner().time_candidate(task.spec(), obj, dict(OPTIONS, cutoff_s=1e-9))
    assert len(out["costs"]) == 3  # its first call is shorter than the floor
    monkeypatch.setattr(runner_module, "CUTOFF_FLOOR_S", 0.0)
    out = Runner().time_candidate(task.spec(), obj, dict(OPTIONS, cutoff_s=1e-9))
    assert out["error_no"] == E.NO_ERROR and len(out["costs"]) == 1


def test_runner_checks_a_template_without_reference_against_its_plain_compute():
    task = Task("test_plain_reference", (1000,))
    for config in task.config_space.sample(3, seed=0):
        out = build_candidate(task.spec(), config.to_json())
        result = Runner().time_candidate(task.spec(), out["object"], OPTIONS)
        assert result["error_no"] == E.NO_ERROR, result


def test_one_timing_at_a_time_per_host():
    import threading
    first, second = Runner(), Runner()
    first.acquire()
    entered = threading.Event()
    waiter = threading.Thread(target=lambda: (second.acquire(), entered.set()))
    waiter.start()
    assert not entered.wait(0.3)  # the second runner waits while the first one times
    task = Task("test_misbehave", (1000,))
    out = first.time_candidate(task.spec(), built(task, "ok")["object"], OPTIONS)
    assert out["error_no"] == E.NO_ERROR
    assert entered.wait(5)  # time_candidate() released the lock
    waiter.join()
    second.time_candidate(task.spec(), built(task, "ok")["object"], OPTIONS)
