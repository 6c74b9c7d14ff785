"""The library as a tuning candidate (search_spaces/library.py, tuner/extract.py,
compiler.graph.strategy.library_wins): a model's tasks with the cblas codegen hold the
library's templates beside the tuned ones; the real builder and runner measure a
library's kernel (checked against numpy) once; the build gives a dense to the library
only when the log says it beats the tuned kernel (times from a fake measurer, the log a
real SQLite file); `autosched log best` says which one the build picks; the whole loop
through the command line on an MLP, against ONNX Runtime (in this process on the
session's Ray, but for the compiled file, which a fresh process runs)."""
from __future__ import annotations

import json
import math
import warnings

import numpy as np
import pytest

from compiler import graph
from compiler.graph.ir.reference import evaluate
from compiler.transform.pass_infra import PassContext
from records import ApplyHistoryBest
from tuner import Measurer, Task, extract_tasks, tune

from cli_check import autosched, invoke
from fake_measurer import FakeMeasurer
from onnx_models import input_and_expected, mlp

rng = np.random.default_rng(23)
WEIGHT = rng.standard_normal((40, 37)).astype("float32")


def dense_model():
    """relu(x @ W.T) with W (40, 37): the build packs W in panels of 40 (dense_pack)."""
    x = graph.var("x", shape=(13, 37))
    w = graph.const(WEIGHT)
    return graph.IRModule.from_expr(graph.Function([x], graph.nn.relu(graph.nn.dense(x, w))))


def test_a_model_with_the_cblas_codegen_has_the_library_tasks_beside_the_tuned_ones():
    with PassContext(opt_level=3):
        tasks, weights = extract_tasks(dense_model(), external=["cblas"])
        alone, _ = extract_tasks(dense_model())
        with_c, _ = extract_tasks(dense_model(), external=["cblas", "ccompiler"])
    assert [(t.name, t.args) for t in tasks] == [("dense_pack", (13, 40, 37, 40)),
                                                 ("dense_cblas", (13, 40, 37))]
    assert weights == [1, 1]
    assert [t.name for t in alone] == ["dense_pack"]
    # C takes what cblas declines: no kernel of ours is left to tune
    assert [t.name for t in with_c] == ["dense_cblas"]


@pytest.mark.slow
@pytest.mark.parametrize("name, args", [("dense_cblas", (13, 37, 7)),
                                        ("matmul_cblas", (7, 1000, 13)),
                                        ("batch_matmul_cblas", (3, 7, 13, 37)),
                                        ("conv2d_1x1_cblas", (2, 13, 7, 7, 37))])
def test_the_real_measurer_times_a_library_kernel_once_and_checks_it(local_ray, tmp_path,
                                                                     name, args):
    task = Task(name, args)
    assert len(task.config_space) == 1
    with Measurer(n_parallel=1, repeat=1, min_repeat_ms=0) as measurer:
        result = tune(task, 8, tuner="xgb", db=tmp_path / "lib.db", measurer=measurer)
    assert math.isfinite(result.best_cost) and result.best_gflops > 0


def tune_both(db, library_seconds, tuned_seconds):
    """Log the model's two tasks with the given times (a fake measurer: timing is not
    the point here)."""
    def cost(config):
        return library_seconds if config.space.template_name == "dense_cblas" else \
            tuned_seconds
    with PassContext(opt_level=3):
        tasks, _ = extract_tasks(dense_model(), external=["cblas"])
    for task in tasks:
        tune(task, 4, tuner="grid", db=db, measurer=FakeMeasurer(cost=cost))


def built_with(db):
    x = rng.standard_normal((13, 37)).astype("float32")
    with warnings.catch_warnings(), PassContext(opt_level=3):
        warnings.simplefilter("ignore")
        if db is None:
            lib = graph.build(dense_model(), external=["cblas"])
        else:
            with ApplyHistoryBest(db):
                lib = graph.build(dense_model(), external=["cblas"])
    got, = lib.run(x=x)
    want = evaluate(graph.passes.InferType()(dense_model())["main"], x)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
    return [s.get("external") or s["info"].get("template") for s in lib.plan["steps"]]


def test_the_build_gives_a_dense_to_the_library_only_when_its_logged_time_beats_the_tuned(
        tmp_path):
    assert built_with(None) == ["cblas", None]  # no log: the library, as asked
    tune_both(tmp_path / "faster.db", library_seconds=1e-3, tuned_seconds=2e-3)
    assert built_with(tmp_path / "faster.db") == ["cblas", None]
    tune_both(tmp_path / "slower.db", library_seconds=3e-3, tuned_seconds=2e-3)
    assert built_with(tmp_path / "slower.db") == ["dense_pack"]
    with PassContext(opt_level=3):
        tuned_only, = [t for t in extract_tasks(dense_model())[0]]
    tune(tuned_only, 4, tuner="grid", db=tmp_path / "tuned.db",
         measurer=FakeMeasurer(cost=lambda c: 2e-3))
    assert built_with(tmp_path / "tuned.db") == ["dense_pack"]  # never measured: not used


def test_log_best_says_which_one_the_build_picks(tmp_path):
    tune_both(tmp_path / "t.db", library_seconds=1e-3, tuned_seconds=2e-3)
    shown = invoke("log", "best", "dense_pack", 13, 40, 37, 40, "--db", "t.db", cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    assert "with --external cblas the build gives dense(13, 40, 37) to cblas: 1.000 ms " \
           "against the tuned dense_pack(13, 40, 37, 40)'s 2.000 ms" in shown.stdout
    lib = invoke("log", "best", "dense_cblas", 13, 40, 37, "--db", "t.db", "--json",
                 cwd=tmp_path)
    assert json.loads(lib.stdout)["build_picks"] == "cblas"


@pytest.mark.slow
def test_tune_then_compile_an_mlp_with_external_cblas_and_run_it(local_ray, tmp_path):
    import onnx
    m = mlp()
    onnx.save(m, tmp_path / "mlp.onnx")
    tuned = invoke("tune", "mlp.onnx", "--external", "cblas", "--trials", 12, "--batch-size", 4,
                   "--db", "t.db", "--seed", 0, cwd=tmp_path)
    assert tuned.returncode == 0, tuned.stderr
    # the Gemm and the MatMul by a constant weight are both denses
    assert "dense_cblas(5, 37, 13)" in tuned.stdout and "dense_cblas(5, 7, 37)" in tuned.stdout
    compiled = invoke("compile", "mlp.onnx", "-o", "mlp.zip", "--db", "t.db", "--external",
                      "cblas", "--json", cwd=tmp_path)
    assert compiled.returncode == 0, compiled.stderr
    calls = json.loads(compiled.stdout)["calls"]
    denses = [c for c in calls if "nn.dense" in c["ops"]]
    for call, args in zip(denses, [(5, 37, 13), (5, 7, 37)]):
        picks = json.loads(invoke("log", "best", "dense_cblas", *args, "--db", "t.db",
                                  "--json", cwd=tmp_path).stdout)["build_picks"]
        assert (call["info"].get("external") == "cblas") == (picks == "cblas"), (picks, call)
    x, want = input_and_expected(m)
    np.savez(tmp_path / "x.npz", x=x)
    ran = autosched("run", "mlp.zip", "--inputs", "x.npz", "--outputs", "y.npz", cwd=tmp_path)
    assert ran.returncode == 0, ran.stderr
    got = np.load(tmp_path / "y.npz")
    np.testing.assert_allclose(got[got.files[0]], want, rtol=1e-4, atol=1e-4)
    bad = invoke("compile", "mlp.onnx", "-o", "x.zip", "--external", "cblas,dnnl", cwd=tmp_path)
    assert bad.returncode == 2 and "no external codegen 'dnnl'" in bad.stderr
