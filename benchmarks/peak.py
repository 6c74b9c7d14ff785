"""The FMA peak of a target's vector unit, and how near it our kernels and numpy's BLAS
run, in one process.

The peak: a JIT-compiled loop of independent fused multiply-adds on the target's widest
float32 vectors, as many accumulator chains as its vector registers hold beside the two
operands (30 on AVX-512 or NEON, 14 on AVX2): enough to cover the FMA latency on every
FMA port (4 cycles x 2 ports needs 8), and no spill. It is timed on one thread and on
every core at once (threads: the native call releases the GIL). Then the sustained
kernels: the packed convolution's untuned fallback on ResNet-18's four 3x3 layers (batch
1, the target's channel blocks), and numpy's float32 matmul 1024^3 (compared only when
the target's vector unit is the host's); each as GFLOPS and a fraction of the all-core
peak, which must be at least the best of them (otherwise the peak loop is what is
wrong). Each peak is the best of 5 runs.

The int8 dot-product peak beside it: the same loop of independent chains, each an
int32 accumulator plus te.dot_u8s8 of a data vector that changes every step (shared by
the chains, as one broadcast input feeds a convolution's blocks) and its own weights,
emitted as our kernels emit it for the target (compiler/codegen/int8_dot.py: one
vpdpbusd with VNNI, the split vpmaddubsw sequence with AVX2 / AVX-512BW), counted as 8
integer ops per word (four multiplies, four adds); then the int8 packed convolution
(conv2d_nchwc_int8, untuned) on ResNet-50's layers, as GOPS and a fraction of it.

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE .venv/bin/python benchmarks/peak.py \
        [--target "llvm -mcpu=haswell"]

A target other than the host's must be one this CPU runs (an AVX2 target runs on an
AVX-512 CPU); the numpy figure is the host's whatever the target.
"""
from __future__ import annotations

import argparse
import ctypes
import os
import platform
import statistics
import sys
import threading
import time

import llvmlite.binding as llvm
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import compiler  # noqa: E402
import search_spaces  # noqa: E402
from llvmlite import ir  # noqa: E402

from compiler import Target, te  # noqa: E402
from compiler.codegen.int8_dot import dot_u8s8  # noqa: E402
from compiler.llvm_target import target_machine  # noqa: E402
from compiler.ops.conv2d_nchwc_int8 import (conv2d_nchwc_int8,  # noqa: E402
                                            schedule_conv2d_nchwc_int8)

ITERS = 20_000_000
RESNET18_3X3 = [(1, 64, 56, 56, 64), (1, 128, 28, 28, 128), (1, 256, 14, 14, 256),
                (1, 512, 7, 7, 512)]
RESNET50_INT8 = [(64, 56, 64, 3, 1), (128, 28, 128, 3, 1), (256, 14, 256, 3, 1),
                 (512, 7, 512, 3, 1), (256, 56, 64, 1, 1), (1024, 14, 256, 1, 1),
                 (512, 7, 2048, 1, 1)]
"""ResNet-50's convolutions as (channels, size, out channels, window, stride)."""


def _cpu_name() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def _peak_ir(lanes: int, chains: int) -> str:
    vec = f"<{lanes} x float>"
    phis = "\n".join(f"  %a{i} = phi {vec} [ %init, %entry ], [ %n{i}, %loop ]"
                     for i in range(chains))
    fmas = "\n".join(f"  %n{i} = call {vec} @llvm.fma.v{lanes}f32({vec} %a{i}, {vec} %m, "
                     f"{vec} %c)" for i in range(chains))
    adds = "\n".join(f"  %s{i} = fadd {vec} %s{i - 1}, %n{i}" for i in range(1, chains))
    return f"""
declare {vec} @llvm.fma.v{lanes}f32({vec}, {vec}, {vec})
define float @peak(i64 %iters) {{
entry:
  %init = insertelement {vec} zeroinitializer, float 1.0, i32 0
  %m = insertelement {vec} zeroinitializer, float 0.5, i32 0
  %c = insertelement {vec} zeroinitializer, float 0.25, i32 0
  br label %loop
loop:
  %k = phi i64 [ 0, %entry ], [ %k1, %loop ]
{phis}
{fmas}
  %k1 = add i64 %k, 1
  %done = icmp eq i64 %k1, %iters
  br i1 %done, label %exit, label %loop
exit:
  %s0 = fadd {vec} %n0, zeroinitializer
{adds}
  %r = extractelement {vec} %s{chains - 1}, i32 0
  ret float %r
}}
"""


def fma_peak(target: Target, repeat: int = 5) -> tuple[float, float, int]:
    """(GFLOPS on one core, GFLOPS on all of the target's cores, chains) of the FMA loop
    compiled for `target`: the best of `repeat` runs each (a peak is what the cores can
    do, so a run that another process or a late thread start slowed does not count)."""
    chains = target.vector_registers - 2
    lanes = target.vector_lanes
    mod = llvm.parse_assembly(_peak_ir(lanes, chains))
    engine = llvm.create_mcjit_compiler(mod, target_machine(target))
    engine.finalize_object()
    fn = ctypes.CFUNCTYPE(ctypes.c_float, ctypes.c_int64)(engine.get_function_address("peak"))
    flop = ITERS * chains * lanes * 2
    one, every = _best(fn, flop, target, repeat)
    return one, every, chains


def _int8_peak_ir(target: Target, lanes: int, chains: int) -> str:
    """The int8 peak loop: `chains` accumulators of `lanes` int32 words, each plus
    dot_u8s8 of the step's data vector and its own weights per iteration."""
    words = ir.VectorType(ir.IntType(32), lanes)
    mod = ir.Module("int8_peak")
    mod.triple = target.mtriple
    fn = ir.Function(mod, ir.FunctionType(ir.IntType(32), [ir.IntType(64)]), "peak")
    entry, loop, done = (fn.append_basic_block(n) for n in ("entry", "loop", "exit"))
    b = ir.IRBuilder(entry)
    b.branch(loop)
    b.position_at_end(loop)
    k = b.phi(ir.IntType(64))
    k.add_incoming(ir.Constant(ir.IntType(64), 0), entry)
    accs = []
    for i in range(chains):
        acc = b.phi(words)
        acc.add_incoming(ir.Constant(words, [ir.Constant(ir.IntType(32), i)] * lanes), entry)
        accs.append(acc)
    # one data vector a step, as a convolution broadcasts one input word to every block
    # of its register tile, times weights of each chain's own: nothing of the dot is
    # loop-invariant, and AVX2's split of the data is shared as in the kernel
    x = b.trunc(k, ir.IntType(32))
    x = b.insert_element(ir.Constant(words, None), x, ir.Constant(ir.IntType(32), 0))
    x = b.shuffle_vector(x, ir.Constant(words, None),
                         ir.Constant(ir.VectorType(ir.IntType(32), lanes), [0] * lanes))
    nexts = []
    for i, acc in enumerate(accs):
        w = ir.Constant(words, [ir.Constant(ir.IntType(32), 0x05060708 + 0x01010101 * i)]
                        * lanes)
        nexts.append(dot_u8s8(b, target.int8_dot, acc, x, w))
    for acc, n in zip(accs, nexts):
        acc.add_incoming(n, loop)
    k1 = b.add(k, ir.Constant(ir.IntType(64), 1))
    k.add_incoming(k1, loop)
    b.cbranch(b.icmp_unsigned("==", k1, fn.args[0]), done, loop)
    b.position_at_end(done)
    total = nexts[0]
    for n in nexts[1:]:
        total = b.add(total, n)
    b.ret(b.extract_element(total, ir.Constant(ir.IntType(32), 0)))
    return str(mod)


def int8_peak(target: Target, repeat: int = 5) -> tuple[float, float]:
    """(GOPS on one core, GOPS on all of the target's cores) of the int8 peak loop, the
    best of `repeat` runs each."""
    chains = target.vector_registers - 2
    lanes = target.vector_lanes
    engine = llvm.create_mcjit_compiler(llvm.parse_assembly(
        _int8_peak_ir(target, lanes, chains)), target_machine(target))
    engine.finalize_object()
    fn = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_int64)(engine.get_function_address("peak"))
    ops = ITERS * chains * lanes * 8
    return _best(fn, ops, target, repeat)


def _best(fn, ops: int, target: Target, repeat: int) -> tuple[float, float]:
    fn(1000)
    one = every = 0.0
    for _ in range(repeat):
        start = time.perf_counter()
        fn(ITERS)
        one = max(one, ops / (time.perf_counter() - start) / 1e9)
        threads = [threading.Thread(target=fn, args=(ITERS,))
                   for _ in range(target.num_cores)]
        start = time.perf_counter()
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        every = max(every, target.num_cores * ops / (time.perf_counter() - start) / 1e9)
    return one, every


def int8_conv_gops(target: Target, layer: tuple) -> float:
    """GOPS of the untuned int8 packed convolution on a layer (c, h, k, window, stride)
    of batch 1, padded to keep its size, in the target's channel blocks."""
    c, h, k, window, stride = layer
    block = target.vector_lanes
    pad = window // 2
    data = te.placeholder((1, c // block, h, h, block), name="data", dtype="uint8")
    kernel = te.placeholder((k // block, c // block, window, window, block // 4, block),
                            name="kernel", dtype="int32")
    out = conv2d_nchwc_int8(data, kernel, stride, pad, 1, 3)
    f = compiler.build(schedule_conv2d_nchwc_int8(out, out, target), [data, kernel, out],
                       target=target)
    rng = np.random.default_rng(0)
    arrays = [rng.integers(0, 256, [int(d) for d in data.shape]).astype(np.uint8),
              rng.integers(-2**31, 2**31, [int(d) for d in kernel.shape],
                           dtype=np.int64).astype(np.int32),
              np.zeros([int(d) for d in out.shape], np.int32)]
    seconds = f.time_evaluator(number=10, repeat=7, min_repeat_ms=50)(*arrays).median
    oh = int(out.shape[2])
    return 2 * k * c * window * window * oh * oh / seconds / 1e9


def packed_conv_gflops(target: Target, layer: tuple) -> tuple[float, str]:
    """GFLOPS of the packed convolution's fallback config on a 3x3 layer (stride 1, pad
    1) with the target's lanes as channel blocks, and its register tile."""
    n, c, h, w, k = layer
    block = target.vector_lanes
    args = (n, c, h, w, k, 3, 3, 1, 1, block, block)
    space = search_spaces.space("conv2d_nchwc", *args, target=target)
    s, tensors = search_spaces.instantiate("conv2d_nchwc", *args, config=space.fallback(),
                                           target=target)
    f = compiler.build(s, tensors, target=target)
    rng = np.random.default_rng(0)
    arrays = [rng.standard_normal([int(d) for d in t.shape]).astype("float32")
              for t in tensors]
    seconds = f.time_evaluator(number=10, repeat=7, min_repeat_ms=50)(*arrays).median
    return 2 * n * k * h * w * c * 9 / seconds / 1e9, space.fallback()["register_tile"].val


def numpy_gflops(size: int = 1024) -> float:
    """GFLOPS of numpy's float32 matmul (its BLAS, all its threads), median of 7."""
    a = np.random.default_rng(0).standard_normal((size, size)).astype("float32")
    a @ a
    times = []
    for _ in range(7):
        start = time.perf_counter()
        for _ in range(5):
            a @ a
        times.append((time.perf_counter() - start) / 5)
    return 2 * size ** 3 / statistics.median(times) / 1e9


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--target", default="llvm", help="target whose ISA is measured")
    target = Target(parser.parse_args().target)
    unit = target.vector_unit
    one, every, chains = fma_peak(target)
    print(f"CPU: {_cpu_name()} (LLVM: {llvm.get_host_cpu_name()}); target '{target}': "
          f"{unit.bits}-bit vectors ({target.vector_lanes} float32 lanes), "
          f"{unit.registers} vector registers, FMA {'yes' if unit.fma else 'no'}")
    print(f"FMA peak, fp32 ({chains} accumulator chains): {one:.1f} GFLOPS on one core, "
          f"{every:.1f} GFLOPS on {target.num_cores}")
    best = 0.0
    for layer in RESNET18_3X3:
        gflops, tile = packed_conv_gflops(target, layer)
        best = max(best, gflops)
        print(f"packed conv fallback {layer} 3x3, register tile {tile}: {gflops:.1f} GFLOPS "
              f"({gflops / every:.0%} of peak)")
    gflops = numpy_gflops()
    host = target.vector_unit == Target("llvm").vector_unit
    best = max(best, gflops) if host else best
    print(f"numpy float32 matmul 1024^3: {gflops:.1f} GFLOPS ({gflops / every:.0%} of peak"
          + ("" if host else "; the host's ISA, not the target's: not compared") + ")")
    print(f"peak {'>=' if every >= best else '<'} best sustained kernel: {every:.1f} vs "
          f"{best:.1f} GFLOPS")
    one8, every8 = int8_peak(target)
    print(f"int8 dot-product peak ({target.int8_dot or 'widened multiplies'}): {one8:.1f} GOPS "
          f"on one core, {every8:.1f} GOPS on {target.num_cores} ({every8 / every:.2f}x the "
          f"fp32 FMA peak)")
    best8 = 0.0
    for layer in RESNET50_INT8:
        gops = int8_conv_gops(target, layer)
        best8 = max(best8, gops)
        c, h, k, window, stride = layer
        print(f"int8 packed conv {c}->{k} {h}x{h} {window}x{window} stride {stride}: "
              f"{gops:.1f} GOPS ({gops / every8:.0%} of the int8 peak)")
    print(f"int8 peak {'>=' if every8 >= best8 else '<'} best sustained int8 kernel: "
          f"{every8:.1f} vs {best8:.1f} GOPS")


if __name__ == "__main__":
    main()
