"""The native runtime (compiler/runtime/runtime.ll): thread pool, timing loop, export.

Kernels here are hand-written LLVM IR that only *declare* the runtime functions, the way
generated kernels do, JIT-compiled in their own engine after `ensure_loaded()`.
"""
import ctypes
import faulthandler
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time

import llvmlite.binding as llvm
import pytest

from compiler.llvm_target import optimize, target_machine
from compiler.runtime.native import ensure_loaded, runtime_ir, time_native
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


@pytest.fixture(scope="module")
def kernels():
    return Kernels()


@pytest.fixture(autouse=True)
def deadlock_guard():
    """A deadlocked pool blocks the test inside native code, where no Python timeout
    can reach it: dump every thread's stack and exit the run after 30 s instead."""
    faulthandler.dump_traceback_later(30, exit=True)
    yield
    faulthandler.cancel_dump_traceback_later()


def _record(kernels, n, launcher="run_record"):
    """Run record_task n ways; returns (code, run counts, thread ids)."""
    buf = (ctypes.c_int64 * (2 * n))()
    code = kernels.launcher(launcher)(ctypes.addressof(buf), n)
    return code, list(buf[:n]), list(buf[n:])


@pytest.mark.parametrize("n", [0, 1, 2, 3, 7])
def test_every_task_runs_once(kernels, n):
    code, counts, _ = _record(kernels, n)
    assert code == 0
    assert counts == [1] * n


def test_two_tasks_run_on_two_threads_caller_first(kernels):
    for _ in range(20):
        _, _, tids = _record(kernels, 2)
        assert tids[0] == threading.get_native_id()
        assert tids[1] != tids[0]


def test_pool_grows_to_tasks_minus_one(kernels):
    _, _, tids = _record(kernels, 7)
    assert kernels.num_workers() >= 6
    assert len(set(tids)) == 7


def test_more_tasks_than_the_pool_cap_share_threads(kernels):
    code, counts, tids = _record(kernels, 300)
    assert code == 0
    assert counts == [1] * 300
    assert kernels.num_workers() == 255
    assert tids[256] == tids[0] == threading.get_native_id()  # thread 0 strides by 256
    assert len(set(tids)) == 256


@pytest.mark.parametrize("n", [0, 1, 2, 3, 7, 300])
def test_dynamic_launch_runs_every_task_once_on_at_most_max_threads(kernels, n):
    _record(kernels, 7)  # the pool holds more workers than the launch may use
    code, counts, tids = _record(kernels, n, "run_record_dynamic")
    assert code == 0
    assert counts == [1] * n
    assert len(set(tids)) <= 2


def test_dynamic_launch_gives_a_slow_thread_fewer_tasks(kernels):
    """Task 0 sleeps 50 ms more than the others' 2 ms: the other thread claims every
    other task meanwhile (a static share would leave half of them waiting for it)."""
    n = 16
    code, counts, tids = _record(kernels, n, "run_slow_first_dynamic")
    assert code == 0
    assert counts == [1] * n
    assert tids.count(tids[0]) == 1
    assert len(set(tids)) == 2


def test_dynamic_launch_gives_each_thread_its_own_range_first(kernels):
    """Equal tasks: the caller runs the first half, the worker the second, in every
    kernel alike, so a layer finds its part of the input in its own core's cache. A
    worker may take over a descheduled caller's tasks on a loaded machine (the test
    suite's other process), so the order must show in one of five launches."""
    n, me = 16, threading.get_native_id()
    orders = []
    for _ in range(5):
        code, counts, tids = _record(kernels, n, "run_nap_dynamic")
        assert code == 0 and counts == [1] * n
        orders.append(tids)
        if tids[: n // 2] == [me] * (n // 2) and tids[-1] != me:
            return
    raise AssertionError(f"the caller never ran the first half, the worker the last: "
                         f"{orders}")


@pytest.mark.parametrize("failing", [0, 5, 15])
def test_dynamic_launch_returns_a_task_error_code(kernels, failing):
    k = ctypes.c_int32(failing)
    assert kernels.launcher("run_fail_dynamic")(ctypes.addressof(k), 16) == 100 + failing


def test_nested_calls_run_serially_inside_the_task(kernels):
    outer, inner = 4, 3
    buf = (ctypes.c_int64 * (1 + outer * 2 * inner))()
    buf[0] = inner
    assert kernels.launcher("run_nested")(ctypes.addressof(buf), outer) == 0
    for t in range(outer):
        block = buf[1 + t * 2 * inner: 1 + (t + 1) * 2 * inner]
        assert block[:inner] == [1] * inner
        assert len(set(block[inner:])) == 1  # one thread ran the whole inner loop
    assert buf[1 + inner] == threading.get_native_id()


@pytest.mark.parametrize("n,failing", [(4, 0), (4, 2), (4, 3), (1, 0), (300, 299)])
def test_task_error_code_is_returned(kernels, n, failing):
    which = ctypes.c_int32(failing)
    assert kernels.launcher("run_fail")(ctypes.addressof(which), n) == 100 + failing


def test_error_code_of_a_nested_call_propagates(kernels):
    which = ctypes.c_int32(1)
    assert kernels.launcher("run_nested_fail")(ctypes.addressof(which), 3) == 101


def test_parallel_for_called_directly_through_ctypes(kernels):
    launch = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_void_p, ctypes.c_void_p,
                              ctypes.c_int32)(kernels.symbols["autosched_parallel_for"])
    which = ctypes.c_int32(2)
    assert launch(kernels.address("fail_task"), ctypes.addressof(which), 3) == 102


def test_concurrent_callers_from_two_python_threads(kernels):
    failures = []

    def hammer(n):
        for _ in range(300):
            code, counts, _ = _record(kernels, n)
            if code != 0 or counts != [1] * n:
                failures.append((n, code, counts))

    threads = [threading.Thread(target=hammer, args=(n,)) for n in (2, 3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert failures == []


@pytest.mark.parametrize("launcher", ["run_record", "run_record_dynamic"])
def test_a_launch_while_another_thread_holds_the_pool_runs_serially_in_its_caller(
        kernels, launcher):
    """Two Python threads in parallel kernels at once (two threads sharing a model): the
    one that finds the pool taken runs every task itself, one after another, at once:
    it neither waits for the pool nor touches the other launch's job."""
    hold = (ctypes.c_int64 * 2)()
    holder = threading.Thread(target=kernels.launcher("run_hold"),
                              args=(ctypes.addressof(hold), 2))
    holder.start()
    try:
        while hold[1] == 0:  # the holder's task 0 runs: its launch owns the pool
            time.sleep(0.001)
        # The holder lets the pool go only after this returns: a launch that waited
        # for the pool would hang here (deadlock_guard ends the run).
        code, counts, tids = _record(kernels, 4, launcher)
    finally:
        hold[0] = 1
        holder.join()
    assert (code, counts) == (0, [1] * 4)
    assert tids == [threading.get_native_id()] * 4


def test_launches_after_the_pool_fell_asleep(kernels):
    for _ in range(5):
        time.sleep(0.005)  # far longer than the spin phase: workers are in FUTEX_WAIT
        code, counts, _ = _record(kernels, 3)
        assert (code, counts) == (0, [1] * 3)


def test_launches_when_workers_sleep_at_once(kernels):
    # Spin count 0: every launch goes through the futex sleep / wake handshake.
    spin = ctypes.c_int32.from_address(kernels.symbols["autosched_spin_count"])
    saved, spin.value = spin.value, 0
    try:
        for i in range(500):
            n = 2 + i % 3
            code, counts, _ = _record(kernels, n)
            assert (code, counts) == (0, [1] * n)
    finally:
        spin.value = saved


def test_idle_pool_uses_no_cpu(kernels):
    _record(kernels, 7)
    time.sleep(0.05)
    before = time.process_time()
    time.sleep(0.3)
    assert time.process_time() - before < 0.03


def test_child_of_fork_gets_a_working_pool(kernels):
    _record(kernels, 3)
    pid = os.fork()
    if pid == 0:
        ok = False
        try:
            code, counts, tids = _record(kernels, 3)
            ok = code == 0 and counts == [1] * 3 and len(set(tids)) == 3
        finally:
            os._exit(0 if ok else 1)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            assert os.waitstatus_to_exitcode(status) == 0
            return
        time.sleep(0.01)
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    pytest.fail("the forked child deadlocked in parallel_for")


def _timing_args(sleep_ns=0, fail_at=0, code=0):
    return (ctypes.c_int64 * 4)(sleep_ns, 0, fail_at, code)


def test_time_runs_warmup_then_number_times_repeat(kernels):
    args = _timing_args()
    results = time_native(kernels.address("kernel"), ctypes.addressof(args), 50, 3, 0)
    assert len(results) == 3 and all(r > 0 for r in results)
    assert args[1] == 1 + 50 * 3


def test_time_without_warmup_makes_only_the_measured_calls(kernels):
    args = _timing_args()
    time_native(kernels.address("kernel"), ctypes.addressof(args), 50, 3, 0, warmup=False)
    assert args[1] == 50 * 3


def test_time_of_a_sleeping_kernel_is_plausible(kernels):
    args = _timing_args(sleep_ns=2_000_000)
    results = time_native(kernels.address("kernel"), ctypes.addressof(args), 2, 2, 0,
                          cooldown_ms=1)
    assert all(0.002 <= r < 0.05 for r in results)


def test_time_raises_number_to_reach_min_repeat_ms(kernels):
    args = _timing_args(sleep_ns=100_000)
    results = time_native(kernels.address("kernel"), ctypes.addressof(args), 1, 3, 20)
    # Each kept repeat made at least 20 ms worth of calls.
    assert args[1] - 1 >= sum(0.020 / r for r in results) * 0.99
    assert all(r >= 100e-6 for r in results)


def test_time_stops_at_the_first_error(kernels):
    args = _timing_args(fail_at=5, code=7)
    with pytest.raises(RuntimeError, match="error code 7"):
        time_native(kernels.address("kernel"), ctypes.addressof(args), 3, 5, 0)
    assert args[1] == 5


def test_time_of_a_parallel_kernel(kernels):
    buf = (ctypes.c_int64 * 4)()
    results = time_native(kernels.address("timed_parallel"), ctypes.addressof(buf),
                          100, 3, 0)
    assert all(r > 0 for r in results)
    assert buf[0] == buf[1] == 1 + 100 * 3


_SUBPROCESS = r"""
import ctypes, json, sys, threading
lib = ctypes.CDLL(sys.argv[1])
lib.run_record.argtypes = [ctypes.c_void_p, ctypes.c_int32]
out = []
for n in (2, 5):
    buf = (ctypes.c_int64 * (2 * n))()
    code = lib.run_record(ctypes.addressof(buf), n)
    out.append([code, list(buf[:n]), len(set(buf[n:]))])
print(json.dumps({"runs": out, "workers": lib.autosched_num_workers()}))
"""


def test_exported_shared_library_runs_in_a_fresh_process(tmp_path):
    cc = shutil.which("cc")
    if cc is None:
        pytest.skip("no `cc` on PATH to link the shared library")
    tm = target_machine(host_target(), pic=True)
    mod = llvm.parse_assembly(runtime_ir())
    mod.link_in(llvm.parse_assembly(KERNELS_IR))
    mod.verify()
    optimize(mod, tm)
    obj = tmp_path / "kernels.o"
    lib = tmp_path / "libkernels.so"
    obj.write_bytes(tm.emit_object(mod))
    subprocess.run([cc, "-shared", "-pthread", "-o", str(lib), str(obj)], check=True)
    done = subprocess.run([sys.executable, "-c", _SUBPROCESS, str(lib)],
                          capture_output=True, text=True, timeout=30, check=True)
    report = json.loads(done.stdout)
    assert report["runs"] == [[0, [1, 1], 2], [0, [1] * 5, 5]]
    assert report["workers"] == 4
