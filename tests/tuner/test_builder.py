"""build_candidate's compile cache (tuner/builder.py): a candidate built before is a
look-up, the same object code; another config, or the cache off, is built anew."""
from __future__ import annotations

import compiler
from records import MeasureErrorNo
from tuner import Task
from tuner.builder import build_candidate


def test_a_candidate_built_before_is_taken_from_the_compile_cache(tmp_path, monkeypatch):
    monkeypatch.delenv("AUTOSCHED_NO_CACHE", raising=False)
    monkeypatch.setenv("AUTOSCHED_CACHE_DIR", str(tmp_path))
    task = Task("matmul", (16, 13, 7), target="llvm -mcpu=haswell -num-cores=1")
    first, second = (c.to_json() for c in task.config_space.sample(2, seed=3))
    built = build_candidate(task.spec(), first)
    assert built["error_no"] == MeasureErrorNo.NO_ERROR and built["object"]

    def fail(*args, **kwargs):
        raise RuntimeError("compiled anew")
    monkeypatch.setattr(compiler, "build_object", fail)
    again = build_candidate(task.spec(), first)
    assert again["error_no"] == MeasureErrorNo.NO_ERROR and again["object"] == built["object"]
    other = build_candidate(task.spec(), second)
    assert other["error_no"] == MeasureErrorNo.COMPILE_ERROR and "compiled anew" in \
        other["error_msg"]
    off = build_candidate(task.spec(), first, cache=False)
    assert off["error_no"] == MeasureErrorNo.COMPILE_ERROR
