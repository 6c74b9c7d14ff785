"""A model's kernels made by forked workers (compiler/graph/backend/kernel_pool.py): the
same model as one made in the build's own process; a kernel that fails in a worker is
made again in the build's process, where its error, if any, is raised; a worker's
warnings reach the caller; where forking is not safe, nothing forks."""
from __future__ import annotations

import importlib
import os
import warnings

import numpy as np
import pytest

from compiler import graph
from compiler.frontend import from_onnx
from compiler.transform.pass_infra import PassContext, PassInstrument
from onnx_models import input_and_expected, residual

pool = importlib.import_module("compiler.graph.backend.kernel_pool")
build_module = importlib.import_module("compiler.graph.backend.build")


@pytest.fixture
def forks(monkeypatch):
    """Count the builds that fork workers, and fork from 2 kernels on."""
    counted = []
    real = pool.fork_map

    def fork_map(work, items, workers):
        counted.append(workers)
        return real(work, items, workers)
    monkeypatch.setattr(build_module, "fork_map", fork_map)
    monkeypatch.setattr(pool, "MIN_KERNELS", 2)
    monkeypatch.setenv("AUTOSCHED_NO_CACHE", "1")
    return counted


MODEL = residual()
X, WANT = input_and_expected(MODEL)


def built(cores: int):
    mod, params = from_onnx(MODEL)
    lib = graph.build(mod, target=f"llvm -num-cores={cores}", params=params)
    return lib, lib.run(x=X)[0].copy()


def test_workers_make_the_same_kernels_as_the_build_s_own_process(forks):
    here, out_here = built(cores=1)
    assert forks == []
    forked, out_forked = built(cores=2)
    assert forks == [2]
    assert forked.plan == here.plan
    assert forked.lib.get_source("ir") == here.lib.get_source("ir")
    np.testing.assert_array_equal(out_forked, out_here)
    np.testing.assert_allclose(out_forked, WANT, rtol=1e-5, atol=1e-5)


def test_a_kernel_that_fails_in_a_worker_is_made_again_in_the_build_s_process(
        forks, monkeypatch):
    parent = os.getpid()
    real = build_module.lower_function

    def only_here(*args, **kwargs):
        if os.getpid() != parent:
            raise RuntimeError("not in a worker")
        return real(*args, **kwargs)
    monkeypatch.setattr(build_module, "lower_function", only_here)
    _, out = built(cores=2)
    assert forks == [2]
    np.testing.assert_allclose(out, WANT, rtol=1e-5, atol=1e-5)


def say(item):
    if item == "bad":
        warnings.warn("from a failed item", UserWarning, stacklevel=1)
        raise ValueError(item)
    warnings.warn(f"from {item}", UserWarning, stacklevel=1)
    return item.upper()


def test_fork_map_keeps_order_marks_failures_and_raises_the_workers_warnings_here():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = pool.fork_map(say, ["a", "bad", "c"], workers=2)
    assert out == ["A", None, "C"]
    assert sorted(str(w.message) for w in caught) == ["from a", "from c"]


class Watch(PassInstrument):
    def run_before_pass(self, mod, info):
        pass


def test_nothing_forks_with_one_core_few_kernels_or_pass_instruments(forks):
    assert pool.workers_for(kernels=8, cores=1) == 0
    assert pool.workers_for(kernels=1, cores=2) == 0
    with PassContext(opt_level=3, instruments=[Watch()]):
        assert pool.workers_for(kernels=8, cores=2) == 0
    assert pool.workers_for(kernels=8, cores=2) == min(2, len(os.sched_getaffinity(0)))
