"""The FMA peak of this CPU: a JIT-compiled loop of independent fused multiply-adds on
the widest vectors LLVM knows for the host (llvmlite), timed on one thread and on every
core at once (threads: the native call releases the GIL). Prints the CPU, its LLVM name
and GFLOPS; compare kernels with it as a fraction of peak.

    .venv/bin/python benchmarks/peak.py
"""
from __future__ import annotations

import ctypes
import os
import platform
import threading
import time

import llvmlite.binding as llvm

CHAINS = 16   # independent accumulators: enough to cover the FMA latency on two ports
ITERS = 20_000_000


def _cpu_name() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def _kernel(lanes: int):
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    vec = f"<{lanes} x float>"
    body = "\n".join(f"  %a{i} = phi {vec} [ %init, %entry ], [ %n{i}, %loop ]"
                     for i in range(CHAINS))
    fmas = "\n".join(f"  %n{i} = call {vec} @llvm.fma.v{lanes}f32({vec} %a{i}, {vec} %m, "
                     f"{vec} %c)" for i in range(CHAINS))
    adds = "\n".join(f"  %s{i} = fadd {vec} %s{i - 1}, %n{i}" for i in range(1, CHAINS))
    ir = f"""
declare {vec} @llvm.fma.v{lanes}f32({vec}, {vec}, {vec})
define float @peak(i64 %iters) {{
entry:
  %init = insertelement {vec} zeroinitializer, float 1.0, i32 0
  %m = insertelement {vec} zeroinitializer, float 0.5, i32 0
  %c = insertelement {vec} zeroinitializer, float 0.25, i32 0
  br label %loop
loop:
  %k = phi i64 [ 0, %entry ], [ %k1, %loop ]
{body}
{fmas}
  %k1 = add i64 %k, 1
  %done = icmp eq i64 %k1, %iters
  br i1 %done, label %exit, label %loop
exit:
  %s0 = fadd {vec} %n0, zeroinitializer
{adds}
  %r = extractelement {vec} %s{CHAINS - 1}, i32 0
  ret float %r
}}
"""
    target = llvm.Target.from_default_triple()
    tm = target.create_target_machine(cpu=llvm.get_host_cpu_name(),
                                      features=llvm.get_host_cpu_features().flatten(),
                                      opt=3)
    mod = llvm.parse_assembly(ir)
    engine = llvm.create_mcjit_compiler(mod, tm)
    engine.finalize_object()
    fn = ctypes.CFUNCTYPE(ctypes.c_float, ctypes.c_int64)(engine.get_function_address("peak"))
    return fn, engine


def main():
    llvm.initialize_native_target()
    feats = llvm.get_host_cpu_features()
    lanes = 16 if feats.get("avx512f") else 8
    fn, _engine = _kernel(lanes)
    flop = ITERS * CHAINS * lanes * 2
    fn(1000)
    start = time.perf_counter()
    fn(ITERS)
    one = flop / (time.perf_counter() - start) / 1e9
    cores = os.cpu_count() or 1
    threads = [threading.Thread(target=fn, args=(ITERS,)) for _ in range(cores)]
    start = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    every = cores * flop / (time.perf_counter() - start) / 1e9
    print(f"CPU: {_cpu_name()} (LLVM: {llvm.get_host_cpu_name()}), {cores} cores, "
          f"{lanes * 32}-bit vectors")
    print(f"FMA peak, fp32: {one:.1f} GFLOPS on one core, {every:.1f} GFLOPS on {cores}")


if __name__ == "__main__":
    main()
