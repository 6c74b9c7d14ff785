"""Bring Your Own Codegen (issue 19): the dense and matmul shapes of ResNet-18 and of an
MLP, each as a one-op model on constant weights: our tuned kernel, OpenBLAS through the
cblas codegen, and numpy, and which of ours and cblas the build picks from the log; then
the MLP compiled with `external=["cblas"]` against without, both with the same log.

Each workload is first tuned (tuner.extract_tasks with external=["cblas"]: the tuned
kernel's task, up to `--trials` trials with xgb, and the library's task, measured once)
into the log --db (a task the log already holds that many trials of is not tuned again).
The runners are then timed in alternating rounds, each round a block of calls lasting
--block seconds after a short pause (OpenBLAS's threads spin for a while after a call and
would steal the cores of whatever runs next); medians over the rounds, and ratios of
those medians. A built model is timed by its native loop (time_evaluator: graph_run on
the inputs set, no Python between calls), numpy by a Python loop of np.matmul(...,
out=...) (about a microsecond of call overhead, which matters only for the smallest).

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE .venv/bin/python benchmarks/byoc.py \\
        [--trials 96] [--rounds 9] [--db byoc.db]
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
import warnings

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import records  # noqa: E402
from compiler import graph  # noqa: E402
from compiler.transform.pass_infra import PassContext  # noqa: E402
from tuner import Measurer, extract_tasks, tune  # noqa: E402

# (label, kind, M, N, K): dense is x (M, K) times W (N, K) transposed; matmul A (M, K) B (K, N)
WORKLOADS = [
    ("resnet18 fc, batch 1", "dense", 1, 1000, 512),
    ("resnet18 fc, batch 16", "dense", 16, 1000, 512),
    ("mlp fc1, batch 64", "dense", 64, 512, 784),
    ("mlp fc2, batch 64", "dense", 64, 256, 512),
    ("mlp fc3, batch 64", "dense", 64, 10, 256),
    ("matmul 128x768x768", "matmul", 128, 768, 768),
    ("matmul 512x512x512", "matmul", 512, 512, 512),
]
MLP = [(784, 512), (512, 256), (256, 10)]  # the MLP: in, out features per layer, relu between


def one_op(kind: str, M: int, N: int, K: int, rng):
    """The workload as a model on constant weights, its weight, and an input."""
    x = graph.var("x", shape=(M, K))
    if kind == "dense":
        w = rng.standard_normal((N, K)).astype("float32")
        body = graph.nn.dense(x, graph.const(w))
    else:
        w = rng.standard_normal((K, N)).astype("float32")
        body = graph.matmul(x, graph.const(w))
    mod = graph.IRModule.from_expr(graph.Function([x], body))
    return mod, w, rng.standard_normal((M, K)).astype("float32")


def mlp_model(batch: int, rng):
    x = graph.var("x", shape=(batch, MLP[0][0]))
    h = x
    for i, (k, n) in enumerate(MLP):
        h = graph.nn.dense(h, graph.const(rng.standard_normal((n, k)).astype("float32")
                                          * np.float32(1 / np.sqrt(k))))
        h = graph.nn.bias_add(h, graph.const(rng.standard_normal(n).astype("float32")))
        if i + 1 < len(MLP):
            h = graph.nn.relu(h)
    return graph.IRModule.from_expr(graph.Function([x], graph.nn.softmax(h))), \
        rng.standard_normal((batch, MLP[0][0])).astype("float32")


def built(mod, db=None, external=()):
    """The model built at opt_level 3, under the log `db` when given."""
    with warnings.catch_warnings(), PassContext(opt_level=3):
        warnings.simplefilter("ignore")
        if db is None:
            return graph.build(mod, external=list(external))
        with records.ApplyHistoryBest(db):
            return graph.build(mod, external=list(external))


def native(lib, x, least: float):
    """A function timing `lib` (inputs set to x) natively for `least` seconds: seconds
    per call."""
    lib.set_input("x", x)
    timer = lib.time_evaluator(number=1, repeat=1, min_repeat_ms=int(least * 1e3))
    return lambda: timer().mean


def block_seconds(fn, least: float) -> float:
    """Median seconds per call over calls lasting `least` seconds (after one call)."""
    fn()
    times, start = [], time.perf_counter()
    while time.perf_counter() - start < least or len(times) < 3:
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def alternate(runs: dict, rounds: int, least: float) -> dict:
    """{label: median seconds} over `rounds` rounds that alternate the order."""
    times = {k: [] for k in runs}
    for r in range(rounds):
        for k in (list(runs) if r % 2 == 0 else list(reversed(runs))):
            time.sleep(0.05)
            kind, fn = runs[k]
            times[k].append(fn() if kind == "native" else block_seconds(fn, least))
    return {k: statistics.median(v) for k, v in times.items()}


def _runs(ours, library, x, wt, out, least) -> dict:
    return {"ours": ("native", native(ours, x, least)),
            "cblas": ("native", native(library, x, least)),
            "numpy": ("python", lambda: np.matmul(x, wt, out=out))}


def tune_rest(task, trials: int, db: str, measurer) -> None:
    """Tune `task` up to `trials` trials in the log `db` in all (none if it has them)."""
    with records.Database(db) as log:
        done = sum(r.role == "trial" for r in log.records(task))
    if done < min(trials, len(task.config_space)):
        tune(task, trials - done, tuner="xgb", db=db, measurer=measurer, seed=0)


def picked(lib) -> str:
    step = lib.plan["steps"][0]
    return "cblas" if step.get("external") == "cblas" else step["info"].get("template") or "?"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--trials", type=int, default=96)
    ap.add_argument("--rounds", type=int, default=9)
    ap.add_argument("--block", type=float, default=0.1, help="seconds per timed block")
    ap.add_argument("--db", default="byoc.db")
    opt = ap.parse_args()
    import threadpoolctl
    for var in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE"):
        print(f"{var}={os.environ.get(var, '(unset)')}")
    rng = np.random.default_rng(0)
    cases = [(label, kind, *one_op(kind, M, N, K, rng), (M, N, K))
             for label, kind, M, N, K in WORKLOADS]
    built(cases[0][2], external=["cblas"])  # loads OpenBLAS, so that threadpoolctl sees it
    for info in threadpoolctl.threadpool_info():
        print(f"{info['filepath'].split('/')[-1]}: OpenBLAS {info['version']}, kernel "
              f"{info['architecture']}, {info['num_threads']} threads")

    start = time.perf_counter()
    with Measurer(n_parallel=2) as measurer:
        for _, _, mod, *_ in cases:
            with PassContext(opt_level=3):
                tasks, _ = extract_tasks(mod, external=["cblas"])
            for task in tasks:
                tune_rest(task, opt.trials, opt.db, measurer)
    print(f"tuned {len(cases)} workloads ({opt.trials} trials each, and the library once) "
          f"in {time.perf_counter() - start:.0f} s; log {opt.db}")

    print(f"\n{'workload':24s} {'tuned task':28s} {'ours':>9s} {'cblas':>9s} {'numpy':>9s} "
          f"{'cblas/ours':>10s} {'numpy/ours':>10s}  build picks")
    for label, kind, mod, w, x, (M, N, _) in cases:
        ours, library = built(mod, db=opt.db), built(mod, external=["cblas"])
        chosen = built(mod, db=opt.db, external=["cblas"])
        for lib in (ours, library):
            got, = lib.run(x=x)
            want = x @ (w.T if kind == "dense" else w)
            assert np.allclose(got, want, rtol=1e-3, atol=1e-3), label
        wt = w.T if kind == "dense" else w
        out = np.empty((M, N), np.float32)
        med = alternate(_runs(ours, library, x, wt, out, opt.block), opt.rounds, opt.block)
        step = ours.plan["steps"][0]["info"]
        task = step.get("workload") or "?"
        print(f"{label:24s} {task:28s} {med['ours'] * 1e6:7.1f}us {med['cblas'] * 1e6:7.1f}us "
              f"{med['numpy'] * 1e6:7.1f}us {med['cblas'] / med['ours']:10.2f} "
              f"{med['numpy'] / med['ours']:10.2f}  {picked(chosen)}")

    mod, x = mlp_model(64, rng)
    with PassContext(opt_level=3):
        extra, _ = extract_tasks(mod, external=["cblas"])
    with Measurer(n_parallel=2) as measurer:  # the MLP's tasks are the fc1..fc3 ones above
        for task in extra:
            tune_rest(task, opt.trials, opt.db, measurer)
    without, with_cblas = built(mod, db=opt.db), built(mod, db=opt.db, external=["cblas"])
    forced = built(mod, external=["cblas"])
    a, = without.run(x=x)
    for lib in (with_cblas, forced):
        b, = lib.run(x=x)
        assert np.allclose(a, b, rtol=1e-4, atol=1e-5)
    med = alternate({"without": ("native", native(without, x, opt.block)),
                     "--external cblas": ("native", native(with_cblas, x, opt.block)),
                     "cblas, no log": ("native", native(forced, x, opt.block))},
                    opt.rounds, opt.block)
    steps = [s.get("external") or s["info"].get("template") for s in with_cblas.plan["steps"]]
    print(f"\nMLP 784-512-256-10, batch 64, with the log: "
          f"without {med['without'] * 1e6:.1f} us; --external cblas "
          f"{med['--external cblas'] * 1e6:.1f} us ({med['without'] / med['--external cblas']:.2f}x"
          f"; its kernels: {', '.join(str(s) for s in steps)}); every dense to cblas (no log) "
          f"{med['cblas, no log'] * 1e6:.1f} us ({med['without'] / med['cblas, no log']:.2f}x)")


if __name__ == "__main__":
    main()
