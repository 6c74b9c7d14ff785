"""The native runtime's timing loop (autosched_time through runtime.native.time_native),
on native_kernels.py's kernels: warm-up, number and repeat, min_repeat_ms, cooldown,
errors, parallel kernels."""
import ctypes

import pytest

from compiler.runtime.native import time_native
from native_kernels import Kernels, deadlock_guard  # noqa: F401 (a fixture)


@pytest.fixture(scope="module")
def kernels():
    return Kernels()


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
