"""`autosched bench MODEL.onnx --db LOG`: the model built untuned (the templates'
fallback configs) and tuned (the log's best records, as `autosched compile --db` builds
it), next to ONNX Runtime when it is installed, timed in one process in alternating
rounds, with every output checked against ONNX Runtime's (else the untuned build's);
with --library, that build also as a model library, run through its C API (ctypes)."""
from __future__ import annotations

import os
import shutil
import tempfile
import time
import warnings

import numpy as np

from compiler import graph
from compiler.errors import BuildError, FrontendError
from compiler.frontend import from_onnx
from compiler.transform.pass_infra import PassContext
from records import ApplyHistoryBest, FallbackWarning, RecordsError

from .common import BadInput, format_ratio, format_seconds, print_json, print_table
from ..verify import model_inputs
from .rounds import time_in_rounds

BLOCK_SECONDS = 0.2   # one timing: calls lasting this long, their median counts
PAUSE_SECONDS = 0.1   # between two timings (thread pools that spin on after a call)
THREADS = os.cpu_count() or 1


def bench_model(path: str, db_path: str, shapes: dict, opt_level: int, target: str,
                repeat: int, as_json: bool, library: bool = False) -> None:
    """See the module docstring."""
    try:
        mod, params = from_onnx(path, shape=shapes)
        with PassContext(opt_level=opt_level):
            untuned = graph.build(mod, target=target, params=params)
            tuned = None
            if os.path.exists(db_path):
                with warnings.catch_warnings(), ApplyHistoryBest(db_path, target=target):
                    warnings.simplefilter("ignore", FallbackWarning)
                    tuned = graph.build(mod, target=target, params=params)
    except (FrontendError, BuildError, RecordsError) as err:
        raise BadInput(str(err)) from None
    inputs = model_inputs(untuned.plan["inputs"])
    session = _onnxruntime_session(path)
    expected = session.run(None, inputs) if session is not None else untuned.run(**inputs)
    rows = [_row("autosched untuned", lambda: untuned.run(**inputs), expected)]
    if tuned is not None:
        applied = sum(1 for s in tuned.plan["steps"] if (s.get("info") or {}).get("record"))
        rows.append(_row(f"autosched tuned ({applied} of {len(tuned.plan['steps'])} "
                         f"kernels from the log)", lambda: tuned.run(**inputs), expected))
    if library:
        built = tuned if tuned is not None else untuned
        model = _model_library(built, tmp := tempfile.mkdtemp(prefix="autosched-bench-"))
        shutil.rmtree(tmp)  # the library stays mapped
        rows.append(_row(f"autosched {'tuned' if tuned is not None else 'untuned'}, as a "
                         "model library (C API)", lambda: model.run(**inputs), expected))
    if session is not None:
        rows.append(_row(f"ONNX Runtime ({THREADS} threads)",
                         lambda: session.run(None, inputs), expected))
    reference = rows[-1] if session is not None else None
    time_in_rounds(rows, repeat, {"vs_untuned": rows[0], "vs_onnxruntime": reference},
                   pause=PAUSE_SECONDS)
    if as_json:
        return print_json({"model": path, "log": db_path if tuned is not None else None,
                           "rows": rows})
    from rich.table import Table
    table = Table("runtime", "median", "vs untuned", "vs ONNX Runtime", "output")
    for r in rows:
        table.add_row(r["name"], format_seconds(r["seconds"]), format_ratio(r["vs_untuned"]),
                      format_ratio(r["vs_onnxruntime"]), "ok" if r["correct"] else r["note"])
    console = print_table(table, f"{path}: medians of {repeat} alternating rounds (each "
                                 f"runtime once a round, {BLOCK_SECONDS:.1f} s of calls; "
                                 f"ratios taken within a round: above 1 is faster than it)")
    if tuned is None:
        console.print(f"no tuning log at {db_path}: only the untuned build was timed")
    if session is None:
        console.print("ONNX Runtime is not installed: outputs checked against the untuned "
                      "build (pip install onnxruntime to compare with it)")


def _model_library(built, tmp: str):
    """`built` written as a model library in `tmp` and opened through its C API."""
    from compiler import runtime
    path = os.path.join(tmp, "model.so")
    try:
        built.export_library(path)
    except BuildError as err:
        raise BadInput(f"--library: {err}") from None
    return runtime.load(path)


def _onnxruntime_session(path: str):
    """An ONNX Runtime session of the model on this machine's cores, or None."""
    try:
        import onnxruntime as ort
    except ImportError:
        return None
    options = ort.SessionOptions()
    options.intra_op_num_threads = THREADS
    return ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])


def _row(name: str, fn, expected) -> dict:
    """A row for a runtime's call `fn`: its outputs checked against `expected` (1e-4
    relative to the largest magnitude), and a timer: the median of calls lasting
    BLOCK_SECONDS."""
    got = fn()
    note = ""
    for i, (g, want) in enumerate(zip(got, expected)):
        scale = max(1e-6, float(np.max(np.abs(want))))
        error = float(np.max(np.abs(np.asarray(g) - want))) / scale
        if not error < 1e-4:
            note = f"output {i} differs: max relative error {error:.1e}"
            break

    def timer() -> float:
        times, start = [], time.perf_counter()
        while time.perf_counter() - start < BLOCK_SECONDS or len(times) < 3:
            t = time.perf_counter()
            fn()
            times.append(time.perf_counter() - t)
        return float(np.median(times))
    return {"name": name, "seconds": None, "correct": not note, "note": note, "timer": timer}
