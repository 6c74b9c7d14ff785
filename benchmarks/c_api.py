"""The model library (runtime/export_library.py) against the Python executor it is built
from: ResNet-18's library (its size, the bytes of its weights and of its code, what it
needs), its latency through the C API next to `lib.run` (one process, alternating
blocks of calls with a pause between them, medians and the per-round ratio), both
through Python (ctypes for the library: set_input, run, get_output) and in the native
timing loop (graph_run on the slot table vs autosched_run on an instance); and how long
ResNet-50's library takes to build.

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python benchmarks/c_api.py
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time

import numpy as np

from compiler import graph, runtime
from compiler.frontend import from_onnx
from compiler.runtime.elf_info import read_elf
from compiler.transform.pass_infra import PassContext

sys.path.insert(0, os.path.dirname(__file__))
from model_defs import export_onnx  # noqa: E402

BLOCK_SECONDS = 0.3
PAUSE_SECONDS = 0.1


def block_median(fn) -> float:
    """Median seconds of `fn()` over calls lasting BLOCK_SECONDS."""
    times, end = [], time.perf_counter() + BLOCK_SECONDS
    while time.perf_counter() < end:
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def native_block(executor):
    """A block of runs in the native timing loop on the inputs set: their median."""
    once = executor.time_evaluator(number=1, repeat=3)().median
    timer = executor.time_evaluator(number=1, repeat=max(5, int(BLOCK_SECONDS / once)))
    return lambda: timer().median


def alternate(rows: dict, rounds: int) -> dict:
    """{label: [median seconds per round]}: each row (a function that times one block and
    returns its median) in turn in every round, with a pause after each."""
    out = {label: [] for label in rows}
    for _ in range(rounds):
        for label, block in rows.items():
            out[label].append(block())
            time.sleep(PAUSE_SECONDS)
    return out


def build(name: str, tmp: str):
    """(executor, its inputs, seconds to build it, library path, seconds to export it)"""
    path = os.path.join(tmp, f"{name}.onnx")
    export_onnx(name, path)
    start = time.perf_counter()
    mod, params = from_onnx(path)
    with PassContext(opt_level=3):
        lib = graph.build(mod, params=params)
    built = time.perf_counter() - start
    so = os.path.join(tmp, f"{name}.so")
    start = time.perf_counter()
    lib.export_library(so)
    exported = time.perf_counter() - start
    x = np.random.default_rng(0).standard_normal(lib.plan["inputs"][0]["shape"]).astype(
        "float32")
    return lib, {lib.input_names[0]: x}, built, so, exported


def describe(name: str, lib, so: str, built: float, exported: float) -> None:
    elf = read_elf(so)
    weights = sum(v.nbytes for v in lib.constants.values())
    mib = 2 ** 20
    print(f"{name}: built in {built:.1f} s, library written in {exported:.1f} s: "
          f"{os.path.getsize(so) / mib:.1f} MiB ({os.path.getsize(so):,} bytes); weights "
          f"{weights / mib:.1f} MiB ({weights:,} bytes); code (.text) "
          f"{elf.sections.get('.text', 0) / mib:.2f} MiB ({elf.sections.get('.text', 0):,} "
          f"bytes); needs {', '.join(elf.needed)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--skip-resnet50", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        lib, inputs, built, so, exported = build("resnet18", tmp)
        describe("resnet18", lib, so, built, exported)
        model = runtime.load(so)
        assert isinstance(model, runtime.ModelLibrary)
        ours, theirs = model.run(**inputs)[0], lib.run(**inputs)[0]
        print(f"outputs: max |library - executor| = {np.abs(ours - theirs).max():.2e}")
        lib.set_input(*next(iter(inputs.items())))
        model.set_input(*next(iter(inputs.items())))
        rows = {"lib.run (Python executor)": lambda: block_median(lambda: lib.run(**inputs)),
                "C API via ctypes (ModelLibrary.run)":
                    lambda: block_median(lambda: model.run(**inputs)),
                "graph_run, native loop": native_block(lib),
                "autosched_run, native loop": native_block(model)}
        times = alternate(rows, args.rounds)
        labels = list(rows)
        for label in labels:
            print(f"  {label:40s} median {statistics.median(times[label]) * 1e3:.3f} ms")
        for ours_label, base_label in ((labels[1], labels[0]), (labels[3], labels[2])):
            ratios = [o / b for o, b in zip(times[ours_label], times[base_label])]
            print(f"  {ours_label} / {base_label}: median ratio "
                  f"{statistics.median(ratios):.4f} (rounds: "
                  f"{', '.join(f'{r:.3f}' for r in ratios)})")
        if not args.skip_resnet50:
            lib50, _, built50, so50, exported50 = build("resnet50", tmp)
            describe("resnet50", lib50, so50, built50, exported50)


if __name__ == "__main__":
    main()
