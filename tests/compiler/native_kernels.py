"""Hand-written LLVM IR kernels that only *declare* the native runtime's functions, the
way generated kernels do, JIT-compiled in their own engine after `ensure_loaded()`: what
the tests of the runtime's thread pool (runtime/test_native_runtime.py) and of its
timing loop (runtime/test_native_timer.py) call."""
import ctypes
import faulthandler

import llvmlite.binding as llvm
import pytest

from compiler.llvm_target import optimize, target_machine
from compiler.runtime.native import ensure_loaded
from compiler.target import host_target

# record_task: counts its runs in closure[t] and stores its thread id in closure[n + t].
# nested_task: each outer task runs a whole parallel_for of record_task (M = closure[0]
# tasks) over its own block of 2*M words.  fail_task: task t returns 100 + t when t
# equals the i32 the closure points at; nested_fail_task runs all of fail_task inside
# each outer task.  run_*: the entry points Python calls, i32 (ptr closure, i32 n).
KERNELS_IR = r"""
declare i32 @autosched_parallel_for(ptr, ptr, i32)
declare i32 @autosched_parallel_for_dynamic(ptr, ptr, i32, i32)
declare i64 @syscall(i64, ...)
declare i32 @nanosleep(ptr, ptr)

; nap_ns: sleep for %ns nanoseconds (below one second)
define void @nap_ns(i64 %ns) {
  %ts = alloca { i64, i64 }
  store i64 0, ptr %ts
  %nsec.p = getelementptr { i64, i64 }, ptr %ts, i32 0, i32 1
  store i64 %ns, ptr %nsec.p
  %s = call i32 @nanosleep(ptr %ts, ptr null)
  ret void
}

define i32 @record_task(i32 %t, i32 %n, ptr %c) {
  %slot = getelementptr i64, ptr %c, i32 %t
  %old = atomicrmw add ptr %slot, i64 1 monotonic
  %tid = call i64 (i64, ...) @syscall(i64 186)
  %i = add i32 %n, %t
  %tslot = getelementptr i64, ptr %c, i32 %i
  store i64 %tid, ptr %tslot
  ret i32 0
}

define i32 @run_record(ptr %c, i32 %n) {
  %r = call i32 @autosched_parallel_for(ptr @record_task, ptr %c, i32 %n)
  ret i32 %r
}

define i32 @run_record_dynamic(ptr %c, i32 %n) {
  %r = call i32 @autosched_parallel_for_dynamic(ptr @record_task, ptr %c, i32 %n, i32 2)
  ret i32 %r
}

; slow_first_task: nap_task, after a 50 ms sleep in task 0
define i32 @slow_first_task(i32 %t, i32 %n, ptr %c) {
  %first = icmp eq i32 %t, 0
  br i1 %first, label %nap, label %go
nap:
  call void @nap_ns(i64 50000000)
  br label %go
go:
  %r = call i32 @nap_task(i32 %t, i32 %n, ptr %c)
  ret i32 %r
}

define i32 @run_slow_first_dynamic(ptr %c, i32 %n) {
  %r = call i32 @autosched_parallel_for_dynamic(ptr @slow_first_task, ptr %c, i32 %n, i32 2)
  ret i32 %r
}

define i32 @nap_task(i32 %t, i32 %n, ptr %c) {  ; record_task after a 2 ms sleep
  call void @nap_ns(i64 2000000)
  %r = call i32 @record_task(i32 %t, i32 %n, ptr %c)
  ret i32 %r
}
define i32 @run_nap_dynamic(ptr %c, i32 %n) {
  %r = call i32 @autosched_parallel_for_dynamic(ptr @nap_task, ptr %c, i32 %n, i32 2)
  ret i32 %r
}

define i32 @run_fail_dynamic(ptr %c, i32 %n) {
  %r = call i32 @autosched_parallel_for_dynamic(ptr @fail_task, ptr %c, i32 %n, i32 2)
  ret i32 %r
}

define i32 @nested_task(i32 %t, i32 %n, ptr %c) {
  %m = load i32, ptr %c
  %m2 = mul i32 %m, 2
  %off = mul i32 %t, %m2
  %off1 = add i32 %off, 1
  %block = getelementptr i64, ptr %c, i32 %off1
  %r = call i32 @autosched_parallel_for(ptr @record_task, ptr %block, i32 %m)
  ret i32 %r
}

define i32 @run_nested(ptr %c, i32 %n) {
  %r = call i32 @autosched_parallel_for(ptr @nested_task, ptr %c, i32 %n)
  ret i32 %r
}

define i32 @nested_fail_task(i32 %t, i32 %n, ptr %c) {
  %r = call i32 @autosched_parallel_for(ptr @fail_task, ptr %c, i32 %n)
  ret i32 %r
}

define i32 @run_nested_fail(ptr %c, i32 %n) {
  %r = call i32 @autosched_parallel_for(ptr @nested_fail_task, ptr %c, i32 %n)
  ret i32 %r
}

define i32 @fail_task(i32 %t, i32 %n, ptr %c) {
  %k = load i32, ptr %c
  %hit = icmp eq i32 %t, %k
  %code = add i32 %t, 100
  %r = select i1 %hit, i32 %code, i32 0
  ret i32 %r
}

define i32 @run_fail(ptr %c, i32 %n) {
  %r = call i32 @autosched_parallel_for(ptr @fail_task, ptr %c, i32 %n)
  ret i32 %r
}

; hold_task: task 0 sets closure[1] to 1, then waits (1 ms naps) until closure[0] is
; nonzero, so that its launch holds the pool until the test lets it go.
define i32 @hold_task(i32 %t, i32 %n, ptr %c) {
entry:
  %first = icmp eq i32 %t, 0
  br i1 %first, label %announce, label %done
announce:
  %held = getelementptr i64, ptr %c, i32 1
  store atomic i64 1, ptr %held seq_cst, align 8
  br label %wait
wait:
  %go = load atomic i64, ptr %c seq_cst, align 8
  %free = icmp ne i64 %go, 0
  br i1 %free, label %done, label %nap
nap:
  call void @nap_ns(i64 1000000)
  br label %wait
done:
  ret i32 0
}

define i32 @run_hold(ptr %c, i32 %n) {
  %r = call i32 @autosched_parallel_for(ptr @hold_task, ptr %c, i32 %n)
  ret i32 %r
}

; timed_parallel: record_task run two ways over args, as a timeable i32 (ptr) kernel.
define i32 @timed_parallel(ptr %a) {
  %r = call i32 @run_record(ptr %a, i32 2)
  ret i32 %r
}

; args: [0] nanoseconds to sleep per call (0: none), [1] call counter,
;       [2] call number that fails (0: never), [3] its return code.
define i32 @kernel(ptr %a) {
  %cnt.p = getelementptr i64, ptr %a, i32 1
  %old = atomicrmw add ptr %cnt.p, i64 1 monotonic
  %calls = add i64 %old, 1
  %fail.p = getelementptr i64, ptr %a, i32 2
  %fail.at = load i64, ptr %fail.p
  %hit = icmp eq i64 %calls, %fail.at
  br i1 %hit, label %fail, label %go
fail:
  %code.p = getelementptr i64, ptr %a, i32 3
  %code = load i64, ptr %code.p
  %code32 = trunc i64 %code to i32
  ret i32 %code32
go:
  %ns = load i64, ptr %a
  %sleep = icmp sgt i64 %ns, 0
  br i1 %sleep, label %nap, label %done
nap:
  call void @nap_ns(i64 %ns)
  br label %done
done:
  ret i32 0
}
"""

_LAUNCH = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_void_p, ctypes.c_int32)


class Kernels:
    """The test kernels JIT-compiled in their own engine, linked to the shared runtime."""

    def __init__(self):
        self.symbols = ensure_loaded()
        tm = target_machine(host_target())
        mod = llvm.parse_assembly(KERNELS_IR)
        mod.verify()
        optimize(mod, tm)
        self.engine = llvm.create_mcjit_compiler(mod, tm)
        self.engine.finalize_object()
        self.num_workers = ctypes.CFUNCTYPE(ctypes.c_int32)(
            self.symbols["autosched_num_workers"])

    def address(self, name):
        return self.engine.get_function_address(name)

    def launcher(self, name):
        return _LAUNCH(self.address(name))


@pytest.fixture(autouse=True)
def deadlock_guard():
    """A deadlocked pool blocks the test inside native code, where no Python timeout
    can reach it: dump every thread's stack and exit the run after 30 s instead."""
    faulthandler.dump_traceback_later(30, exit=True)
    yield
    faulthandler.cancel_dump_traceback_later()
