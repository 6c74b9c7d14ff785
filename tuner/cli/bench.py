"""`autosched bench`: time the untuned fallback config and the best config of a task
(the confirmed best, when the log has one) next to numpy and PyTorch, and check every
output; for MODEL.onnx, the model untuned and tuned next to ONNX Runtime (bench_model.py)."""
from __future__ import annotations

import time

import click
import numpy as np

import compiler

from ..verify import expected_outputs, mismatch, random_inputs, unwritten
from .bench_model import bench_model
from .common import (BadInput, db_option, describe_error, format_gflops, format_ratio,
                     format_seconds, json_option, make_task, open_log, opt_level_option,
                     print_json, print_table, record_json, shape_option, task_label)
from .rounds import time_in_rounds

BENCH_MIN_SECONDS = 0.05   # each timing of numpy or PyTorch lasts at least this long


@click.command()
@click.argument("template")
@click.argument("args", nargs=-1)
@db_option
@click.option("--target", default="llvm", show_default=True, help="The target to build for.")
@click.option("--repeat", type=click.IntRange(min=1), default=5, show_default=True,
              help="Timings of each kernel (or model); the median counts.")
@shape_option
@opt_level_option
@click.option("--library", is_flag=True,
              help="For MODEL.onnx: also time the tuned build (else the untuned one) as a "
                   "model library, through its C API (as `compile --format shared` writes "
                   "it; needs a C compiler).")
@json_option
def bench(template, args, db_path, target, repeat, shapes, opt_level, library, as_json):
    """Time the untuned fallback config and the best logged config of TEMPLATE ARGS next
    to numpy and PyTorch (when installed); check every output. numpy computes in the
    inputs' dtype where it has an equivalent of the template; otherwise the template's
    numpy reference, which accumulates in float64, is timed.

    For MODEL.onnx: the model built untuned and with the log's best records next to ONNX
    Runtime (when installed), outputs checked against ONNX Runtime's. (PyTorch does not
    run ONNX files; benchmarks/models.py compares with it.)

    Examples: autosched bench matmul 256 256 256 --db tune.db;
    autosched bench resnet18.onnx --db tune.db
    """
    if template.lower().endswith(".onnx"):
        if args:
            raise BadInput(f"bench {template}: a model takes no arguments, got "
                           f"{' '.join(args)}")
        return bench_model(template, db_path, shapes, opt_level, target, repeat, as_json,
                           library)
    if library:
        raise BadInput("--library is for a model (bench MODEL.onnx --library)")
    if shapes:
        raise BadInput("--shape is for a model (bench MODEL.onnx --shape NAME:DIMS)")
    task = make_task(template, args, target)
    with open_log(db_path) as db:
        best = db.best(task)
    inputs_t, outputs_t = task.tensors()
    inputs = random_inputs(inputs_t)
    expected = expected_outputs(task, inputs)
    rows = [_bench_kernel(task, "fallback config", task.config_space.fallback(), inputs,
                          expected)]
    if best is not None:
        what = "confirmed best" if best.confirmed else "best logged, not confirmed,"
        rows.append(_bench_kernel(task, f"{what} (#{best.config_index})", best.config,
                                  inputs, expected))
    numpy_row = None
    numpy_fn = _numpy_equivalent(task, inputs)
    if numpy_fn is not None:
        numpy_row = _bench_function("numpy", numpy_fn, expected)
    elif task.template.reference is not None:
        numpy_row = _bench_function("numpy reference (float64)",
                                    lambda: task.template.reference(list(inputs), *task.args),
                                    expected)
    if numpy_row is not None:
        rows.append(numpy_row)
    torch_fn = _torch_equivalent(task, inputs)
    if torch_fn is not None:
        rows.append(_bench_function("PyTorch", torch_fn, expected))
    time_in_rounds(rows, repeat, {"vs_fallback": rows[0], "vs_numpy": numpy_row})
    for row in rows:
        row["gflops"] = task.gflops(row["seconds"])
    fallback_s = rows[0]["seconds"]
    numpy_s = numpy_row["seconds"] if numpy_row is not None else None
    if as_json:
        return print_json({"task": {"template": task.name, "args": list(task.args),
                                    "target": str(task.target), "flop": task.flop},
                           "best_logged": None if best is None else record_json(best),
                           "kernels": rows})
    from rich.table import Table
    table = Table("kernel", "median", "GFLOPS", "vs fallback", "vs numpy", "output")
    for r in rows:
        s = r["seconds"]
        table.add_row(r["name"], format_seconds(s), format_gflops(r["gflops"]),
                      format_ratio(r["vs_fallback"] if s and fallback_s else None),
                      format_ratio(r["vs_numpy"] if s and numpy_s else None),
                      "ok" if r["correct"] else r["note"][:120])
    console = print_table(table, f"{task_label(task.name, task.args)}: {task.flop:,} flop, "
                                 f"medians of {repeat} alternating rounds (each kernel once "
                                 f"a round; ratios taken within a round)")
    if best is None:
        console.print(f"no valid record of {task_label(task.name, task.args)} in {db_path}: "
                      f"only the fallback config was built")
    if torch_fn is None:
        console.print("PyTorch: not installed, or no equivalent of this template")


def _bench_kernel(task, name: str, config, inputs, expected) -> dict:
    """A row for `config`: built, its outputs checked against `expected`, and a timer of
    one measurement in native code (None when it did not build)."""
    row = {"name": name, "seconds": None, "correct": False, "note": "", "timer": None}
    try:
        s, tensors = task.instantiate(config)
        f = compiler.build(s, tensors, target=task.target)
    except Exception as err:  # noqa: BLE001 - a config that no longer builds is a row
        row["note"] = f"build failed: {describe_error(err)}"
        return row
    outputs = [unwritten(t) for t in task.tensors()[1]]
    f(*inputs, *outputs)
    problems = [p for got, want in zip(outputs, expected) if (p := mismatch(got, want))]
    timer = f.time_evaluator(number=1, repeat=1, min_repeat_ms=int(BENCH_MIN_SECONDS * 1e3))
    row.update(correct=not problems, note=problems[0] if problems else "",
               timer=lambda: timer(*inputs, *outputs).median)
    return row


def _bench_function(name: str, fn, expected) -> dict:
    """A row for a Python function (numpy, PyTorch): its output checked against
    `expected`, and a timer of one measurement with perf_counter, as time_evaluator
    times: enough calls to last BENCH_MIN_SECONDS, after the warm-up call."""
    start = time.perf_counter()
    got = fn()
    first = time.perf_counter() - start
    got = got if isinstance(got, (list, tuple)) else [got]
    problems = [p for g, want in zip(got, expected)
                if (p := mismatch(np.asarray(g, dtype=want.dtype), want))]
    number = max(1, int(BENCH_MIN_SECONDS / max(first, 1e-9)))

    def timer() -> float:
        start = time.perf_counter()
        for _ in range(number):
            fn()
        return (time.perf_counter() - start) / number
    return {"name": name, "seconds": None, "correct": not problems,
            "note": problems[0] if problems else "", "timer": timer}


def _numpy_equivalent(task, inputs):
    """A function computing `task` with numpy in the inputs' dtype (what a user would
    call), or None where numpy has no plain equivalent of the template (the convolutions:
    then the template's float64 reference is timed instead)."""
    match task.name:
        case "matmul" | "batch_matmul":
            a, b = inputs
            return lambda: np.matmul(a, b)
        case "dense_bias_relu":
            x, w, bias = inputs
            return lambda: np.maximum(x @ w.T + bias, 0)
    return None


def _torch_equivalent(task, inputs):
    """A function computing `task` with PyTorch on `inputs`, or None (no torch, or no
    obvious equivalent of the template)."""
    try:
        import torch
    except ImportError:
        return None
    t = [torch.from_numpy(a) for a in inputs]
    F = torch.nn.functional
    a = dict(zip(task.template.signature.parameters, task.args))
    match task.name:
        case "matmul":
            return lambda: torch.matmul(t[0], t[1]).numpy()
        case "batch_matmul":
            return lambda: torch.bmm(t[0], t[1]).numpy()
        case "dense_bias_relu":
            return lambda: torch.relu(F.linear(t[0], t[1], t[2])).numpy()
        case "conv2d_nchw" | "conv2d_nchw_packed":
            return lambda: F.conv2d(t[0], t[1], stride=a["stride"], padding=a["padding"]).numpy()
        case "depthwise_conv2d_nchw":
            return lambda: F.conv2d(t[0], t[1], stride=a["stride"], padding=a["padding"],
                                    groups=a["C"]).numpy()
    return None
