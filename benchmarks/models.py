"""Whole models: ResNet-18, MobileNetV2 and ResNet-50, and the models people bring today
(modern_defs.py: BERT-base and ViT-B/16-sized encoders, EfficientNet-B0, a U-Net, a
YOLO-style neck), with random weights, built in PyTorch, exported to ONNX, imported with
compiler.frontend.from_onnx and built with compiler.graph.build. Prints per model, in one
run: compile time, kernels, our latency, ONNX Runtime's, OpenVINO's (when installed) and
PyTorch's (2 threads, medians of rounds that alternate the runtimes, each timed in a
block of calls with a pause before it: the runtimes' spinning thread pools steal each
other's cores when calls interleave one by one), the ratios, and whether our outputs
match ONNX Runtime's.

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python benchmarks/models.py [--models resnet18]

With --also TARGET (repeatable) each model is also built untuned for that target and timed
in the same rounds (`--also "llvm -mcpu=haswell"`: AVX2 code, which runs on AVX-512
CPUs too), and with --force-block N once more with N-channel blocks forced; the
channel blocks and untuned register tiles of every build are printed.

With --tune --time-budget DURATION (issue 18), each model is first tuned for that long
(tuner.extract_tasks, then TaskScheduler weighted by the kernels per task, the log
--db, resumed when it exists), and the table adds our tuned latency; it prints the
tuning wall time and trials, and per task its weight and its confirmed best's speedup
over the fallback (re-timed side by side in alternating rounds when the task's tuning
ended).

    python benchmarks/models.py --tune --time-budget 45m,15m,20m --db models.db  # per model
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from model_defs import MODELS, export_onnx  # noqa: E402
from modern_defs import MODERN  # noqa: E402

import records  # noqa: E402
import search_spaces  # noqa: E402
from compiler import Target, graph  # noqa: E402
from compiler.graph.ir.op.layout import CHANNEL_BLOCK  # noqa: E402
from compiler.frontend import from_onnx  # noqa: E402
from compiler.transform.pass_infra import PassContext  # noqa: E402
from tuner import Measurer, TaskScheduler, TuningOptions, extract_tasks  # noqa: E402
from tuner.cli.tune import estimated_latencies, parse_duration  # noqa: E402


def seconds(fn, least: float = 0.2) -> float:
    """Median seconds per call of fn over calls lasting `least` seconds in all."""
    fn()
    times, start = [], time.perf_counter()
    while time.perf_counter() - start < least or len(times) < 3:
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def alternating_medians(runs: dict, rounds: int) -> dict:
    """{name: median seconds per call} of each of `runs` ({name: fn}) over `rounds` rounds,
    a block of calls each, in an order reversed every other round, with a pause before
    each block (spinning thread pools steal each other's cores when calls interleave)."""
    times = {k: [] for k in runs}
    for r in range(rounds):
        for k in (list(runs) if r % 2 == 0 else list(reversed(runs))):
            time.sleep(0.2)
            times[k].append(seconds(runs[k]))
    return {k: statistics.median(v) for k, v in times.items() if v}


def relative_error(got: list, want: list) -> float:
    """max |got - want| / max |want| over the outputs (the largest)."""
    return max(float(np.max(np.abs(g - w))) / max(1e-6, float(np.max(np.abs(w))))
               for g, w in zip(got, want))


def ort_session(path: str, threads: int = 2):
    """An ONNX Runtime CPU session of the model at `path` on `threads` threads."""
    import onnxruntime as ort
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    return ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])


def tune_model(name: str, path: str, opt_level: int, budget: float, db: str) -> None:
    """Tune the model's tasks for `budget` seconds into the log `db` (resumed)."""
    mod, params = from_onnx(path)
    start = time.perf_counter()
    with PassContext(opt_level=opt_level):
        tasks, weights = extract_tasks(mod, params)
    extract_s = time.perf_counter() - start
    print(f"{name}: {len(tasks)} tasks for {sum(weights)} kernels, extracted in "
          f"{extract_s:.2f} s; tuning for {budget / 60:.0f} min into {db}", flush=True)
    start = time.perf_counter()
    with Measurer(flush_cache=True) as measurer, records.Database(db) as log:
        scheduler = TaskScheduler(tasks, measurer, TuningOptions(
            time_budget=budget, tuner="xgb"), db=log, weights=weights)
        states = scheduler.run()
    wall = time.perf_counter() - start
    estimates = estimated_latencies(scheduler)
    print(f"{name}: tuned {scheduler.done} trials in {wall / 60:.1f} min (ended: "
          f"{scheduler.stop_reason}); estimated kernel time " + (
              "unknown" if estimates is None else
              f"{estimates[1] * 1e3:.2f} ms untuned -> {estimates[0] * 1e3:.2f} ms tuned"))
    for state, weight in zip(states, weights):
        c, speedup = state.confirmation, f"{state.speedup or 1.0:.3f}x the fallback"
        if c is None:
            found = f"best in the log {speedup} (not confirmed in this run)"
        else:
            best = "the fallback" if c.best.fallback else f"#{c.best.config.index}"
            found = f"confirmed best {best} {speedup} ({c.rounds} rounds)"
        print(f"    {state.task.name}{state.task.args} x{weight}: {state.done} trials, {found}")


def openvino_runner(path: str, feeds: dict):
    """A function running the model in OpenVINO (2 threads, latency hint, float32), or
    None. Its CPU plugin computes in bfloat16 by default where the CPU has AVX512_BF16
    (Zen 4 and later, Sapphire Rapids): twice the FMA rate at a quarter of float32's
    precision, so the hint asks for float32, what the other runtimes compute in."""
    try:
        import openvino as ov
    except ImportError:
        return None
    core = ov.Core()
    compiled = core.compile_model(core.read_model(path), "CPU", {
        "INFERENCE_NUM_THREADS": 2, "PERFORMANCE_HINT": "LATENCY",
        "INFERENCE_PRECISION_HINT": "f32"})
    request = compiled.create_infer_request()

    def run():
        return list(request.infer(feeds).values())
    return run


def other_builds(mod, params, opt_level: int, targets: list, block: int | None) -> dict:
    """{label: (GraphExecutor, Target)} of the model built untuned for each of `targets`
    (their own channel blocks and register tiles), and with `block`-channel blocks forced
    where they divide (the pass config relay.AlterOpLayout.channel_block), when given.
    A label is the target's text without its kind and core count."""
    builds = {}
    for spec in targets:
        target = Target(spec)
        short = str(target).split(" ", 1)[1].rsplit(" -num-cores", 1)[0].replace("-mcpu=", "")
        with PassContext(opt_level=opt_level):
            builds[short] = graph.build(mod, target=target, params=params), target
        if block:
            with PassContext(opt_level=opt_level, config={CHANNEL_BLOCK: block}):
                builds[f"{short} {block}c"] = (graph.build(mod, target=target, params=params),
                                               target)
    return builds


def describe_packing(label: str, lib, target) -> str:
    """The channel blocks and the packed convolutions' register tiles a build chose."""
    blocks, tiles = set(), {}
    for step in lib.plan["steps"]:
        workload = (step.get("info") or {}).get("workload") or ""
        if not workload.startswith(("conv2d_nchwc(", "depthwise_conv2d_nchwc(")):
            continue
        blocks.add(step["shape"][-1])
        name, args = workload.split("(", 1)
        args = tuple(int(a) for a in args.rstrip(")").split(","))
        tile = search_spaces.space(name, *args, target=target).fallback()["register_tile"].val
        tiles[tile] = tiles.get(tile, 0) + 1
    return (f"  {label}: channel blocks {sorted(blocks)}, untuned register tiles (rows x "
            f"columns x blocks: kernels) " + ", ".join(f"{t}: {n}" for t, n in
                                                       sorted(tiles.items())))


def one(name: str, rounds: int, opt_level: int, budget: float | None, db: str,
        targets: list = (), block: int | None = None) -> None:
    import torch
    torch.set_num_threads(2)
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, f"{name}.onnx")
        model, example = export_onnx(name, path)
        feeds = {k: v.numpy() for k, v in example.items()}
        if budget:
            tune_model(name, path, opt_level, budget, db)
        start = time.perf_counter()
        mod, params = from_onnx(path)
        with PassContext(opt_level=opt_level):
            lib = graph.build(mod, params=params)
        compile_s = time.perf_counter() - start
        others = other_builds(mod, params, opt_level, targets, block)
        tuned = None
        if budget:
            with records.ApplyHistoryBest(db), PassContext(opt_level=opt_level):
                tuned = graph.build(mod, params=params)
        session = ort_session(path)
        openvino = openvino_runner(path, feeds)
    want = session.run(None, feeds)
    errors = {}
    outputs = {"ours": lambda: lib.run(**feeds)}
    for label, (other, _) in others.items():
        outputs[label] = lambda other=other: other.run(**feeds)
    if tuned is not None:
        outputs["ours tuned"] = lambda: tuned.run(**feeds)
    if openvino is not None:
        outputs["openvino"] = openvino
    for label, output in outputs.items():
        errors[label] = relative_error(output(), want)
    runs = {"ours": lambda: lib.run(**feeds)}
    for label, (other, _) in others.items():
        runs[label] = lambda other=other: other.run(**feeds)
    if tuned is not None:
        runs["ours tuned"] = lambda: tuned.run(**feeds)
    runs["onnxruntime"] = lambda: session.run(None, feeds)
    if openvino is not None:
        runs["openvino"] = openvino
    runs["pytorch"] = lambda: model(*example.values())
    with torch.no_grad():
        med = alternating_medians(runs, rounds)
    best = "ours tuned" if tuned is not None else "ours"
    print(f"{name} (opt_level {opt_level}): compile {compile_s:.1f} s, "
          f"{len(lib.kernels)} distinct kernels, "
          f"{len(lib.plan['steps'])} calls, {lib.peak_bytes / 2 ** 20:.1f} MiB of "
          f"intermediate values; max relative error vs ONNX Runtime "
          + ", ".join(f"{k} {e:.1e} ({'match' if e < 1e-4 else 'MISMATCH'})"
                      for k, e in errors.items()))
    for k, v in med.items():
        print(f"  {k:12s} {v * 1e3:8.2f} ms" + (
            f"   {best} is {v / med[best]:.2f}x its speed" if k != best else ""))
    print(describe_packing("ours", lib, Target("llvm")))
    for label, (other, target) in others.items():
        print(describe_packing(label, other, target))
    top = sorted((tuned or lib).profile(repeat=3), key=lambda r: -r["seconds"])[:6]
    for r in top:
        print(f"    {r['kernel']:10s} {r['seconds'] * 1e3:7.2f} ms {r['share']:5.1%}  "
              f"{'+'.join(r['ops'])}  {r['template'] or ''} "
              f"{'fallback' if r['fallback'] else gflops(r.get('record_gflops'))}")


def gflops(value) -> str:
    """A logged record's GFLOPS as the profile shows it ('' when unknown)."""
    return "" if value is None else f"record at {value:.1f} GFLOPS"


def _version(package: str) -> str:
    try:
        return __import__(package).__version__
    except ImportError:
        return "not installed"


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--models", default="resnet18,mobilenet_v2,resnet50",
                   help=f"comma-separated, of {', '.join([*MODELS, *MODERN])}")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--opt-level", type=int, default=3,
                   help="the graph passes' opt level (3, as `autosched compile`: FoldScaleAxis "
                        "and AlterOpLayout run)")
    p.add_argument("--tune", action="store_true", help="tune each model first")
    p.add_argument("--time-budget", default="20m", metavar="DURATION[,DURATION...]",
                   help="how long --tune tunes (1h, 20m, seconds; one for all models or "
                        "one per model, in --models' order; default 20m)")
    p.add_argument("--db", default="models.db", help="the tuning log (resumed)")
    p.add_argument("--also", action="append", default=[], metavar="TARGET",
                   help="also build untuned for TARGET (e.g. 'llvm -mcpu=haswell': AVX2 code "
                        "runs on AVX-512 CPUs too) and time it in the same rounds")
    p.add_argument("--force-block", type=int, metavar="N",
                   help="with --also: one more build per target with N-channel blocks "
                        "forced where they divide, beside the target's own choice")
    opt = p.parse_args()
    names = opt.models.split(",")
    budgets = [parse_duration(t) for t in opt.time_budget.split(",")] if opt.tune else [None]
    if len(budgets) == 1:
        budgets *= len(names)
    if len(budgets) != len(names):
        raise SystemExit(f"--time-budget: {len(budgets)} durations for {len(names)} models")
    import onnxruntime
    print(f"ONNX Runtime {onnxruntime.__version__}, "
          f"OpenVINO {_version('openvino')}, PyTorch {_version('torch')}")
    for name, budget in zip(names, budgets):
        if name not in MODELS and name not in MODERN:
            raise SystemExit(f"unknown model {name!r}; the models are "
                             f"{', '.join([*MODELS, *MODERN])}")
        one(name, opt.rounds, opt.opt_level, budget, opt.db, opt.also, opt.force_block)


if __name__ == "__main__":
    main()
