"""One built model shared by several Python threads (a model server's way, as with ONNX
Runtime's InferenceSession): runs per second of `--threads` threads calling `run` on
one GraphExecutor, each on inputs of its own, against one thread doing the same.

The model is ResNet-18 with random weights (tests/compiler/resnet_onnx.py, no PyTorch
needed) at each of `--sizes`, built at opt_level 3 (its kernels' parallel loops use
every core). Each thread gets its own workspace (runtime/graph_executor.py); the table
shows its bytes, which is what every thread beyond the first costs. The two ways are
timed in alternating blocks of `--block` seconds after a short pause (the native pool's
workers spin for a while after a launch); medians of runs per second over `--rounds`
rounds, and the ratio of those medians.

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE .venv/bin/python benchmarks/threads.py \\
        [--sizes 64,224] [--threads 2] [--rounds 7] [--block 1.0]
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import threading
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "tests", "compiler"))

from resnet_onnx import resnet18  # noqa: E402

from compiler import graph  # noqa: E402
from compiler.frontend import from_onnx  # noqa: E402
from compiler.transform.pass_infra import PassContext  # noqa: E402


def built(size: int):
    """ResNet-18 for (1, 3, size, size) images, built at opt_level 3."""
    mod, params = from_onnx(resnet18(size=size))
    with PassContext(opt_level=3):
        return graph.build(mod, params=params)


def runs_per_second(lib, images: list[np.ndarray], seconds: float) -> float:
    """Runs per second of len(images) threads sharing `lib`, each running on its own
    image for `seconds` (after one run each, which also makes its workspace)."""
    counts = [0] * len(images)
    start = threading.Barrier(len(images) + 1)
    stop = threading.Event()

    def work(k: int) -> None:
        lib.run(input=images[k])
        start.wait()
        while not stop.is_set():
            lib.run(input=images[k])
            counts[k] += 1

    threads = [threading.Thread(target=work, args=(k,)) for k in range(len(images))]
    for t in threads:
        t.start()
    start.wait()
    began = time.perf_counter()
    time.sleep(seconds)
    stop.set()
    for t in threads:
        t.join()
    return sum(counts) / (time.perf_counter() - began)


def alternate(lib, ways: dict, rounds: int, block: float) -> dict:
    """{label: median runs per second} over `rounds` rounds that alternate the order;
    `ways` maps a label to the images of its threads."""
    rates = {k: [] for k in ways}
    for r in range(rounds):
        for k in (list(ways) if r % 2 == 0 else list(reversed(ways))):
            time.sleep(0.05)
            rates[k].append(runs_per_second(lib, ways[k], block))
    return {k: statistics.median(v) for k, v in rates.items()}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="64,224", help="image sizes, comma-separated")
    ap.add_argument("--threads", type=int, default=2, help="threads sharing the model")
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--block", type=float, default=1.0, help="seconds per timed block")
    opt = ap.parse_args()
    print(f"{len(os.sched_getaffinity(0))} CPUs; {opt.rounds} rounds of {opt.block} s "
          "blocks, alternating; medians")
    rng = np.random.default_rng(0)
    head = f"{'resnet18':>12} | {'1 thread':>10} | {f'{opt.threads} threads':>10} | " \
           f"{'ratio':>6} | {'per thread':>10}"
    print(head, "\n" + "-" * len(head), sep="")
    for size in (int(s) for s in opt.sizes.split(",")):
        lib = built(size)
        images = [rng.standard_normal((1, 3, size, size)).astype("float32")
                  for _ in range(opt.threads)]
        rates = alternate(lib, {"one": images[:1], "many": images}, opt.rounds, opt.block)
        print(f"{f'{size}x{size}':>12} | {rates['one']:>8.1f}/s | {rates['many']:>8.1f}/s | "
              f"{rates['many'] / rates['one']:>5.2f}x | "
              f"{lib.workspace_bytes / 2 ** 20:>6.2f} MiB", flush=True)


if __name__ == "__main__":
    main()
