"""Quantized models (issue 45): each model quantized by ONNX Runtime's own tool
(quantize_static, QDQ format, per-channel int8 weights, int8 or uint8 activations,
calibrated on seeded random inputs: no download), then per model and activation type,
in one run: whether our build matches ONNX Runtime's int8 run of the same file (the
largest difference in steps of the output's scale, and how many elements differ), and
the latency of ours and ONNX Runtime's on the quantized file and on the float32 one,
with OpenVINO's on the quantized file when it is installed (2 threads each; medians of
rounds that alternate them, a block of calls each with a pause before it, as models.py).

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE .venv/bin/python benchmarks/int8.py \\
        [--models resnet50,mobilenet_v2] [--activations s8,u8] [--rounds 5]

Our build fuses each QDQ Conv group into a QLinearConv (compiler/frontend/qdq_fusion.py),
which runs on int8 kernels (qnn.conv2d: vpdpbusd where the CPU has VNNI); the other
quantized operators (Add, pools, Gemm, depthwise and grouped convolutions) still run in
float32 between their DequantizeLinear and QuantizeLinear, or on int32 kernels. The
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


def quantized(path: str, activations: str) -> str:
    """The QDQ file of the model at `path` (made once, kept beside it)."""
    from onnxruntime.quantization import (CalibrationDataReader, QuantFormat, QuantType,
                                          quantize_static)
    out = path.replace(".onnx", f".qdq_{activations}.onnx")
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
    quantize_static(path, out, Calibration(), quant_format=QuantFormat.QDQ, per_channel=True,
                    activation_type=QuantType.QInt8 if activations == "s8" else
                    QuantType.QUInt8, weight_type=QuantType.QInt8)
    return out


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


def ours(path: str, feeds: dict):
    mod, params = from_onnx(path)
    lib = graph.build(mod, target="llvm -num-cores=2", params=params)
    return lambda: lib.run(**feeds)


def theirs(path: str, feeds: dict):
    session = ort_session(path)
    return lambda: session.run(None, feeds)


def one(name: str, activations: str, rounds: int) -> None:
    path = os.path.join(FOLDER, f"{name}.onnx")
    if not os.path.exists(path):
        raise SystemExit(f"{path}: export it first (benchmarks/compile_time.py --models {name})")
    qdq = quantized(path, activations)
    input_name, shape = input_of(path)
    feeds = {input_name: np.random.default_rng(0).standard_normal(shape).astype(np.float32)}
    runs = {"ours int8": ours(qdq, feeds), "ORT int8": theirs(qdq, feeds),
            "ours fp32": ours(path, feeds), "ORT fp32": theirs(path, feeds)}
    ov = openvino_runner(qdq, feeds)
    if ov is not None:
        runs["OpenVINO int8"] = ov
    got, want = runs["ours int8"]()[0], runs["ORT int8"]()[0]
    scale = output_scale(qdq)
    steps = np.rint(np.abs(got.astype(np.float64) - want) / scale)
    print(f"{name} ({activations} activations): against ONNX Runtime int8, at most "
          f"{int(steps.max())} steps of {scale:.4g} apart, {int((steps > 0).sum())} of "
          f"{steps.size} elements differ", flush=True)
    times = alternating_medians(runs, rounds)
    for k, t in times.items():
        print(f"  {k:14s} {t * 1e3:8.2f} ms")
    print(f"  ours int8 is {times['ORT int8'] / times['ours int8']:.2f}x ONNX Runtime int8's "
          f"speed and {times['ours fp32'] / times['ours int8']:.2f}x our float32's; ONNX "
          f"Runtime int8 is {times['ORT fp32'] / times['ORT int8']:.2f}x its float32's",
          flush=True)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--models", default="resnet50,mobilenet_v2")
    p.add_argument("--activations", default="s8,u8")
    p.add_argument("--rounds", type=int, default=5)
    opt = p.parse_args()
    import onnxruntime
    onnxruntime.set_default_logger_severity(3)  # not a warning per unused initializer
    for name in opt.models.split(","):
        for activations in opt.activations.split(","):
            one(name, activations, opt.rounds)


if __name__ == "__main__":
    main()
