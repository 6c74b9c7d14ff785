"""Launch overhead of autosched_parallel_for with empty tasks.

Two figures per task count:
  hot  - back-to-back launches while the workers spin, timed by autosched_time itself
         (number large, repeat 7, median), so no Python runs inside the measurement;
  cold - one launch after the pool has gone to sleep (10 ms idle, far beyond the spin
         phase), timed from Python with perf_counter_ns: this is the futex wake path,
         and includes ~1 us of ctypes call overhead.
A last line times a 2-task launch while the pool holds more workers than the launch uses
(the workers left out must stay asleep and cost nothing).

Run: .venv/bin/python benchmarks/parallel_launch.py
"""
import ctypes
import os
import statistics
import sys
import time

import llvmlite.binding as llvm

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from compiler.llvm_target import optimize, target_machine  # noqa: E402
from compiler.runtime.native import ensure_loaded, time_native  # noqa: E402
from compiler.target import host_target  # noqa: E402

# empty_task does nothing; launch_N(ptr args) runs it N ways and has the kernel type
# autosched_time calls (args unused).
_LAUNCH_IR = """
declare i32 @autosched_parallel_for(ptr, ptr, i32)

define i32 @empty_task(i32 %t, i32 %n, ptr %c) {
  ret i32 0
}
"""
_launch = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_void_p)
_KERNEL_IR = """
define i32 @launch_{n}(ptr %args) {{
  %r = call i32 @autosched_parallel_for(ptr @empty_task, ptr null, i32 {n})
  ret i32 %r
}}
"""


def _compile(counts):
    tm = target_machine(host_target())
    mod = llvm.parse_assembly(_LAUNCH_IR + "".join(_KERNEL_IR.format(n=n) for n in counts))
    optimize(mod, tm)
    engine = llvm.create_mcjit_compiler(mod, tm)
    engine.finalize_object()
    return engine


def _hot_us(address):
    results = time_native(address, 0, 20000, 7, 50)
    return statistics.median(results) * 1e6


def _cold_us(address, samples=50):
    launch = _launch(address)
    times = []
    for _ in range(samples):
        time.sleep(0.010)
        start = time.perf_counter_ns()
        launch(None)
        times.append(time.perf_counter_ns() - start)
    return statistics.median(times) / 1e3


def main():
    cores = len(os.sched_getaffinity(0))
    counts = [n for n in (1, 2, 4, 8) if n <= max(cores, 2)]
    ensure_loaded()
    engine = _compile(sorted(set(counts) | {max(counts) * 2}))
    print(f"autosched_parallel_for launch overhead, empty tasks, {cores} cores")
    print(f"{'tasks':>5}  {'hot (us)':>9}  {'cold (us)':>9}")
    for n in counts:
        address = engine.get_function_address(f"launch_{n}")
        print(f"{n:>5}  {_hot_us(address):>9.3f}  {_cold_us(address):>9.1f}")
    big = max(counts) * 2
    _launch(engine.get_function_address(f"launch_{big}"))(None)
    two = engine.get_function_address("launch_2")
    print(f"2 tasks with a pool of {big - 1} workers: hot {_hot_us(two):.3f} us, "
          f"cold {_cold_us(two):.1f} us")


if __name__ == "__main__":
    main()
