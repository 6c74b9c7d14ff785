"""Whole models (issue 17): ResNet-18, MobileNetV2 and ResNet-50 with random weights,
built in PyTorch, exported to ONNX, imported with compiler.frontend.from_onnx and built
with compiler.graph.build (untuned: the templates' fallback configs). Prints
per model, in one run: compile time, kernels, our latency, ONNX Runtime's and
PyTorch's (2 threads, medians of alternating rounds), the ratios, and whether our
output matches ONNX Runtime's.

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python benchmarks/models.py [--models resnet18]
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

from compiler import graph  # noqa: E402
from compiler.frontend import from_onnx  # noqa: E402
from compiler.transform.pass_infra import PassContext  # noqa: E402


def seconds(fn, least: float = 0.2) -> float:
    """Median seconds per call of fn over calls lasting `least` seconds in all."""
    fn()
    times, start = [], time.perf_counter()
    while time.perf_counter() - start < least or len(times) < 3:
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def one(name: str, rounds: int, opt_level: int) -> None:
    import onnxruntime as ort
    import torch
    torch.set_num_threads(2)
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, f"{name}.onnx")
        model = export_onnx(name, path)
        start = time.perf_counter()
        mod, params = from_onnx(path)
        with PassContext(opt_level=opt_level):
            lib = graph.build(mod, params=params)
        compile_s = time.perf_counter() - start
        options = ort.SessionOptions()
        options.intra_op_num_threads = 2
        session = ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])
    x = np.random.default_rng(0).standard_normal((1, 3, 224, 224)).astype("float32")
    want, = session.run(None, {"input": x})
    got, = lib.run(input=x)
    error = float(np.max(np.abs(got - want)) / max(1e-6, float(np.max(np.abs(want)))))
    tx = torch.from_numpy(x)
    runs = {"ours": lambda: lib.run(input=x), "onnxruntime": lambda: session.run(None,
                                                                                 {"input": x}),
            "pytorch": lambda: model(tx)}
    times = {k: [] for k in runs}
    with torch.no_grad():
        for r in range(rounds):
            for k in (list(runs) if r % 2 == 0 else list(reversed(runs))):
                time.sleep(0.2)
                times[k].append(seconds(runs[k]))
    med = {k: statistics.median(v) for k, v in times.items()}
    print(f"{name} (opt_level {opt_level}): compile {compile_s:.1f} s, "
          f"{len(lib.kernels)} distinct kernels, "
          f"{len(lib.plan['steps'])} calls, {lib.peak_bytes / 2 ** 20:.1f} MiB of "
          f"intermediate values; max relative error vs ONNX Runtime {error:.1e} "
          f"({'match' if error < 1e-4 else 'MISMATCH'})")
    for k, v in med.items():
        print(f"  {k:12s} {v * 1e3:8.2f} ms   speed vs ours: ours is "
              f"{v / med['ours']:.2f}x its speed" if k != "ours" else
              f"  {k:12s} {v * 1e3:8.2f} ms")
    top = sorted(lib.profile(repeat=3), key=lambda r: -r["seconds"])[:5]
    for r in top:
        print(f"    {r['kernel']:10s} {r['seconds'] * 1e3:7.2f} ms {r['share']:5.1%}  "
              f"{'+'.join(r['ops'])}")


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--models", default="resnet18,mobilenet_v2,resnet50")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--opt-level", type=int, default=3,
                   help="the graph passes' opt level (3, as `autosched compile`: FoldScaleAxis "
                        "and AlterOpLayout run)")
    opt = p.parse_args()
    for name in opt.models.split(","):
        if name not in MODELS:
            raise SystemExit(f"unknown model {name!r}; the models are {', '.join(MODELS)}")
        one(name, opt.rounds, opt.opt_level)


if __name__ == "__main__":
    main()
