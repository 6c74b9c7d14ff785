"""Quantized models (issue 45): each model quantized by ONNX Runtime's own tool
(quantize_static, per-channel int8 weights, int8 or uint8 activations, calibrated on
seeded random inputs: no download; in QDQ format, or with --formats qop in QOperator
format; "bert" by quantize_dynamic, MatMulInteger and DynamicQuantizeLinear), then per
model, format and activation type, in one run: whether our build matches ONNX Runtime's
int8 run of the same file (the largest difference in steps of the output's scale and
how many elements differ; for the dynamic BERT, whose outputs are float, the largest
difference relative to the output's largest value), and the latency of ours and ONNX
Runtime's on the quantized file and on the float32 one, with OpenVINO's on the
quantized file when it is installed and reads it (2 threads each; medians of rounds
that alternate them, a block of calls each with a pause before it, as models.py).

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE .venv/bin/python benchmarks/int8.py \\
        [--models resnet50,mobilenet_v2,bert] [--activations s8,u8] [--formats qdq,qop]
        [--rounds 5] [--db LOG] [--layers]

With --db, "ours int8 tuned" and "ours fp32 tuned" join the rounds: the same files built
under ApplyHistoryBest of that log (tune them first: autosched tune FILE --db LOG, the
quantized file and the float32 one with the same budget). With --layers, each int8
convolution of our int8 build (the tuned one with --db) is listed after the rounds with
its GOPS, timed kernel by kernel (GraphExecutor.profile), and its share of the int8 peak
benchmarks/peak.py measures on this host (a depthwise one's: of the float32 FMA peak,
the multiply-adds its widened bytes run on); the work counted is that of the packed
channels (an image's 3 count as 4).

Our build fuses each QDQ Conv group into a QLinearConv (compiler/frontend/qdq_fusion.py),
which runs on int8 kernels (qnn.conv2d: vpdpbusd where the CPU has VNNI; a depthwise
one sums its bytes in float32, exactly); the other quantized operators (Add, global
pools, Gemm, grouped convolutions) still run in float32 between their DequantizeLinear
and QuantizeLinear, or on int32 kernels; the import names them (QuantizedInFloatWarning). The
models are compile_time.py's exports (~/.cache/autosched/benchmark-models); the
quantized files are kept beside them.
"""
from __future__ import annotations

import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from models import alternating_medians, openvino_runner, ort_session  # noqa: E402

from compiler import graph  # noqa: E402
from compiler.frontend import from_onnx  # noqa: E402

FOLDER = os.path.expanduser("~/.cache/autosched/benchmark-models")


def quantized(path: str, activations: str, fmt: str = "qdq") -> str:
    """The quantized file of the model at `path` in format `fmt` ("qdq", "qop"; made
    once, kept beside it)."""
    from onnxruntime.quantization import (CalibrationDataReader, QuantFormat, QuantType,
                                          quantize_static)
    out = path.replace(".onnx", f".{fmt}_{activations}.onnx")
    if os.path.exists(out):
        return out
    name, shape = input_of(path)
    rng = np.random.default_rng(45)

    class Calibration(CalibrationDataReader):
        left = 8

        def get_next(self):
            self.left -= 1
            return {name: rng.standard_normal(shape).astype(np.float32)} \
                if self.left >= 0 else None
    quantize_static(path, out, Calibration(), per_channel=True,
                    quant_format=QuantFormat.QDQ if fmt == "qdq" else QuantFormat.QOperator,
                    activation_type=QuantType.QInt8 if activations == "s8" else
                    QuantType.QUInt8, weight_type=QuantType.QInt8)
    return out


def dynamic(path: str) -> str:
    """The file of the model at `path` quantized by quantize_dynamic (int8 weights;
    made once, kept beside it)."""
    from onnxruntime.quantization import QuantType, quantize_dynamic
    out = path.replace(".onnx", ".dyn.onnx")
    if not os.path.exists(out):
        quantize_dynamic(path, out, weight_type=QuantType.QInt8)
    return out


def feeds_of(path: str) -> dict:
    """Seeded inputs of every input of the model: token ids and a full mask for int64
    ones (BERT's), normal floats else."""
    import onnx
    rng = np.random.default_rng(0)
    feeds = {}
    for value in onnx.load(path, load_external_data=False).graph.input:
        dims = [d.dim_value or 1 for d in value.type.tensor_type.shape.dim]
        if value.type.tensor_type.elem_type == onnx.TensorProto.INT64:
            feeds[value.name] = np.ones(dims, np.int64) if "mask" in value.name else \
                rng.integers(0, 30000, dims).astype(np.int64)
        else:
            feeds[value.name] = rng.standard_normal(dims).astype(np.float32)
    return feeds


def input_of(path: str) -> tuple[str, list]:
    import onnx
    value = onnx.load(path, load_external_data=False).graph.input[0]
    dims = [d.dim_value or 1 for d in value.type.tensor_type.shape.dim]
    return value.name, dims


def output_scale(path: str) -> float:
    """The scale of the DequantizeLinear that makes the model's first output."""
    import onnx
    from onnx import numpy_helper
    model = onnx.load(path)
    out = model.graph.output[0].name
    node = next(n for n in model.graph.node if out in n.output)
    if node.op_type != "DequantizeLinear":
        raise SystemExit(f"{path}: its output is not dequantized ({node.op_type})")
    init = {i.name: i for i in model.graph.initializer}
    return float(numpy_helper.to_array(init[node.input[1]]))


TARGET = "llvm -num-cores=2"


def built(path: str, db: str | None = None):
    """Our build of the file, under ApplyHistoryBest(db) when a log is given."""
    import contextlib

    from records import ApplyHistoryBest
    mod, params = from_onnx(path)
    with ApplyHistoryBest(db) if db else contextlib.nullcontext():
        return graph.build(mod, target=TARGET, params=params)


def ours(path: str, feeds: dict, db: str | None = None):
    lib = built(path, db)
    run = lambda: lib.run(**feeds)  # noqa: E731 - the rounds call it; layers reads .lib
    run.lib = lib
    return run


def layers(lib, feeds: dict) -> None:
    """Each int8 convolution's GOPS against the int8 peak, and each depthwise one's
    against the float32 FMA peak, whose multiply-adds of widened bytes it runs on (the
    --layers listing)."""
    import re

    from peak import fma_peak, int8_peak

    from compiler import Target
    target = Target(TARGET)
    peaks = {"conv2d_nchwc_int8": int8_peak(target)[1],
             "depthwise_conv2d_nchwc_int8": fma_peak(target)[1]}
    for k, v in feeds.items():
        lib.set_input(k, v)
    lib.run()
    rows = []
    for step, row in zip(lib.plan["steps"], lib.profile(repeat=3)):
        work = (step.get("info") or {}).get("workload") or ""
        m = re.match(r"(\w+)\(" + ", ".join([r"(\d+)"] * 9), work)
        if not m or m.group(1) not in peaks:
            continue
        if m.group(1) == "conv2d_nchwc_int8":
            n, c, h, w, k, r, s_, stride, pad = map(int, m.groups()[1:])
        else:  # depthwise: (N, C, H, W, R, S, stride, padding, block)
            n, c, h, w, r, s_, stride, pad, _ = map(int, m.groups()[1:])
            k = 1
        oh, ow = (h + 2 * pad - r) // stride + 1, (w + 2 * pad - s_) // stride + 1
        gops = 2 * n * c * k * r * s_ * oh * ow / row["seconds"] / 1e9
        rows.append((row["seconds"], gops, gops / peaks[m.group(1)], work,
                     (step.get("info") or {}).get("config")))
    print(f"  int8 peak {peaks['conv2d_nchwc_int8']:.1f} GOPS, float32 FMA peak "
          f"{peaks['depthwise_conv2d_nchwc_int8']:.1f} GFLOPS (the depthwise layers'); "
          "the int8 convolutions, heaviest first:")
    for seconds, gops, share, work, config in sorted(rows, reverse=True):
        print(f"    {seconds * 1e3:6.3f} ms {gops:7.1f} GOPS {share:5.0%}  {work} {config}")


def theirs(path: str, feeds: dict):
    session = ort_session(path)
    return lambda: session.run(None, feeds)


def one(name: str, activations: str, fmt: str, rounds: int, db: str | None = None,
        with_layers: bool = False) -> None:
    path = os.path.join(FOLDER, f"{name}.onnx")
    if not os.path.exists(path):
        raise SystemExit(f"{path}: export it first (benchmarks/compile_time.py --models {name})")
    file = dynamic(path) if fmt == "dynamic" else quantized(path, activations, fmt)
    feeds = feeds_of(path)
    runs = {"ours int8": ours(file, feeds), "ORT int8": theirs(file, feeds),
            "ours fp32": ours(path, feeds), "ORT fp32": theirs(path, feeds)}
    if db:
        runs["ours int8 tuned"] = ours(file, feeds, db)
        runs["ours fp32 tuned"] = ours(path, feeds, db)
    try:
        ov = openvino_runner(file, feeds)
    except Exception as err:  # noqa: BLE001 - a file OpenVINO does not read: left out
        print(f"  (OpenVINO does not run it: {str(err).splitlines()[0][:100]})")
        ov = None
    if ov is not None:
        runs["OpenVINO int8"] = ov
    got, want = runs["ours int8"]()[0], runs["ORT int8"]()[0]
    label = f"{name} ({fmt}" + ("" if fmt == "dynamic" else f", {activations} activations") + ")"
    if fmt == "dynamic":
        rel = np.abs(got - want).max() / np.abs(want).max()
        print(f"{label}: against ONNX Runtime int8, largest difference {rel:.3g} of the "
              f"output's largest value", flush=True)
    else:
        scale = output_scale(file)
        steps = np.rint(np.abs(got.astype(np.float64) - want) / scale)
        print(f"{label}: against ONNX Runtime int8, at most {int(steps.max())} steps of "
              f"{scale:.4g} apart, {int((steps > 0).sum())} of {steps.size} elements differ",
              flush=True)
    times = alternating_medians(runs, rounds)
    for k, t in times.items():
        print(f"  {k:14s} {t * 1e3:8.2f} ms")
    faster = min(t for k, t in times.items() if k in ("ORT int8", "OpenVINO int8"))
    print(f"  ours int8 is {times['ORT int8'] / times['ours int8']:.2f}x ONNX Runtime int8's "
          f"speed, {faster / times['ours int8']:.2f}x the faster peer's and "
          f"{times['ours fp32'] / times['ours int8']:.2f}x our float32's; ONNX "
          f"Runtime int8 is {times['ORT fp32'] / times['ORT int8']:.2f}x its float32's",
          flush=True)
    if db:
        tuned = times["ours int8 tuned"]
        print(f"  ours int8 tuned is {times['ORT int8'] / tuned:.2f}x ONNX Runtime int8's "
              f"speed, {faster / tuned:.2f}x the faster peer's and "
              f"{times['ours fp32 tuned'] / tuned:.2f}x our float32 tuned's", flush=True)
    if with_layers and fmt != "dynamic":
        layers(runs["ours int8 tuned" if db else "ours int8"].lib, feeds)  # built once


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--models", default="resnet50,mobilenet_v2,bert")
    p.add_argument("--activations", default="s8,u8")
    p.add_argument("--formats", default="qdq", help="qdq, qop (BERT: always dynamic)")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--db", help="a tuning log: our tuned builds join the rounds")
    p.add_argument("--layers", action="store_true",
                   help="each int8 convolution's GOPS against the int8 peak")
    opt = p.parse_args()
    import onnxruntime
    onnxruntime.set_default_logger_severity(3)  # not a warning per unused initializer
    for name in opt.models.split(","):
        if name == "bert":
            one(name, "u8", "dynamic", opt.rounds, opt.db)
            continue
        for fmt in opt.formats.split(","):
            for activations in opt.activations.split(","):
                one(name, activations, fmt, opt.rounds, opt.db, opt.layers)


if __name__ == "__main__":
    main()
