"""The native runtime (compiler/runtime/runtime.ll): its thread pool, and a library
exported with it. The kernels are native_kernels.py's; the timing loop is tested in
test_native_timer.py."""
import ctypes
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
from compiler.runtime.native import runtime_ir
from compiler.target import host_target
from native_kernels import KERNELS_IR, Kernels, deadlock_guard  # noqa: F401 (a fixture)


@pytest.fixture(scope="module")
def kernels():
    return Kernels()


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


@pytest.mark.parametrize("opt", [0, 1])
def test_flushing_lines_leaves_every_byte_as_it_was(opt):
    # autosched_flush_lines (the tuner's cold timings) evicts lines, never changes them:
    # unaligned starts and ends, fewer bytes than a line, more lines than tasks and fewer,
    # nothing at all; with clflush (0) and clflushopt (1, where the host has it)
    import numpy as np

    from compiler.runtime import native
    if opt and "+clflushopt" not in host_target().features:
        pytest.skip("the host has no clflushopt")
    flush = native._flush_fn()
    data = np.random.default_rng(0).integers(0, 256, 1 << 16, dtype=np.uint8)
    want = data.copy()
    for start, nbytes, tasks in [(0, 1 << 16, 2), (3, 1000, 2), (37, 13, 7), (63, 2, 1),
                                 (1, 0, 2), (5, 65000, 3), (0, 64, 5)]:
        assert flush(data.ctypes.data + start, nbytes, tasks, opt) == 0
        np.testing.assert_array_equal(data, want)
