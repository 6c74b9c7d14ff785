"""Runner: loads a candidate's object code, checks its outputs against numpy, times it.

One Runner lives in one Ray actor per timing host (see measurer.py) and times one built
candidate at a time (`time_candidate`: object code in, costs or an error code out; the
Measurer's `measure` turns whole batches of configs into MeasureResults around it).
`time_rounds` re-times
several built candidates against each other in alternating rounds (confirmation), warm or
with the caches flushed before every call.
`acquire` takes this host's timing lock (a file lock, so runners of other processes and
other Ray instances on the host wait too) and `time_candidate` releases it. Per task it
keeps seeded random inputs and the expected outputs (tuner.verify), computed once: from
the template's numpy reference when it names one, else from the same compute built with
no schedule transformations.
"""
from __future__ import annotations

import fcntl
import os
import socket
import statistics
import tempfile
import time

import compiler
from compiler.runtime import ProfileResult
from compiler.runtime.native import flush_lines
from compiler.target import usable_cores
from records import MeasureErrorNo

from .builder import error_message
from .task import Task
from .verify import expected_outputs, mismatch, random_inputs, unwritten

# A first call shorter than this is never cut off: a tiny kernel's first call is many
# times slower than the rest (cold caches and code, page faults) and timing it is cheap.
CUTOFF_FLOOR_S = 0.01
# The fewest calls of a cold timing (time_rounds): each follows a flush of the caches, so
# each varies more than a warm call does; their median is the timing.
COLD_CALLS = 5
TIMING_LOCK = os.path.join(tempfile.gettempdir(), "autosched-timing.lock")


class Runner:
    """Times built candidates of any task on this host; see `time_candidate`."""

    def __init__(self):
        self._data: dict = {}    # task key -> (inputs, output tensors, expected or None)
        self._flush_tasks = usable_cores()
        self._lock = None
        node = ""
        import ray
        if ray.is_initialized():  # in an actor: name the node too (a cluster's may share hosts)
            node = "/" + ray.get_runtime_context().get_node_id()[:8]
        self.host = socket.gethostname() + node

    def acquire(self) -> None:
        """Wait until no other runner on this host is timing, then hold the host's timing
        lock until `time_candidate` ends (or this process dies, which releases it too)."""
        if self._lock is None:
            self._lock = open(TIMING_LOCK, "a")
        fcntl.flock(self._lock, fcntl.LOCK_EX)

    def _release(self) -> None:
        if self._lock is not None:
            fcntl.flock(self._lock, fcntl.LOCK_UN)

    def ready(self) -> str:
        """Load the native runtime (its thread pool) before the first timing; the host."""
        compiler.runtime.native.ensure_loaded()
        return self.host

    def _task_data(self, task: Task, check: bool):
        key = (task.workload_key, str(task.target), check)
        if key not in self._data:
            ins, outs = task.tensors()
            inputs = random_inputs(ins)
            self._data[key] = (inputs, outs, expected_outputs(task, inputs) if check else None)
        return self._data[key]

    def _flush(self, arrays: list) -> None:
        """Evict `arrays` (a kernel's arguments) from every level of the caches: each of
        their lines by clflushopt (clflush on a CPU without it), in parallel on the kernel
        pool (compiler.runtime.native.flush_lines), so that a call after it reads them
        from memory, as a layer of a model finds its weights. Why not write a buffer the
        size of the last-level cache over them (as before): that costs the size of the
        cache, not of the kernel (520 MB written per call on a 260 MB L3, 70 s of the
        tuner tests' 170 s there), and the timed call then paid the write-back of the
        buffer's dirty lines and its TLB misses. Why on the
        pool: its workers sleep after 100 us idle, and a timed call that has to wake
        them ran the whole kernel on the calling thread half the time (cold timings of
        one config were bimodal, 500 or 1100 us); flushed by the pool, they are left
        spinning, as they are between the layers of a model."""
        for a in arrays:
            if a.nbytes:
                flush_lines(a.ctypes.data, a.nbytes, self._flush_tasks)

    def _time(self, f, arrays: list, options: dict) -> list[float]:
        """Seconds per call, one per repeat, as time_evaluator measures them. The first
        call is the warm-up (and the run whose outputs are checked). When it took longer
        than options["cutoff_s"] (and CUTOFF_FLOOR_S), the candidate cannot be among the
        best: its cost is that one call. With flush_cache a repeat is the median of
        COLD_CALLS calls, each right after a flush of the caches (`_cold`)."""
        start = time.perf_counter()
        f(*arrays)
        first = time.perf_counter() - start
        cutoff = options.get("cutoff_s")
        if cutoff is not None and first > max(cutoff, CUTOFF_FLOOR_S):
            return [first]
        if options.get("flush_cache"):
            timer = self._cold(f, COLD_CALLS)
            return [timer(*arrays).results[0] for _ in range(options["repeat"])]
        # min_repeat_ms raises `number` until a measurement lasts that long; starting from
        # what the first call suggests saves the measurements that would be too short.
        number = max(options["number"], int(options["min_repeat_ms"] / 1e3 / max(first, 1e-9)))
        timer = f.time_evaluator(number=min(number, 1 << 30), repeat=options["repeat"],
                                 min_repeat_ms=options["min_repeat_ms"],
                                 cooldown_ms=options.get("cooldown_ms", 0), warmup=False)
        return list(timer(*arrays).results)

    def _cold(self, f, calls: int):
        """A function timing `calls` calls of `f`, each right after a flush of the caches;
        it returns a ProfileResult of their median seconds."""
        one = f.time_evaluator(number=1, repeat=1, warmup=False)

        def timer(*arrays) -> ProfileResult:
            costs = []
            for _ in range(calls):
                self._flush(arrays)
                costs += one(*arrays).results
            return ProfileResult((statistics.median(costs),))
        return timer

    def time_candidate(self, spec: dict, obj: bytes, options: dict) -> dict:
        """Load `obj` (object code of a candidate of task `spec`), time it with options
        number, repeat, min_repeat_ms, cooldown_ms, flush_cache and cutoff_s, and check the
        outputs of those calls when options["check_correctness"] (the check adds no call
        of its own); then release the host's timing lock (see acquire). Returns
        {"error_no", "error_msg", "costs", "run_time", "verify_time", "host"}."""
        try:
            return self._time_candidate(spec, obj, options)
        finally:
            self._release()

    def _time_candidate(self, spec: dict, obj: bytes, options: dict) -> dict:
        start = time.perf_counter()
        out = {"error_no": int(MeasureErrorNo.NO_ERROR), "error_msg": "", "costs": [],
               "verify_time": 0.0, "host": self.host}

        def done(code=MeasureErrorNo.NO_ERROR, msg=""):
            out.update(error_no=int(code), error_msg=msg, run_time=time.perf_counter() - start)
            return out

        task = Task.from_spec(spec)
        check = options.get("check_correctness", True)
        inputs, out_tensors, expected = self._task_data(task, check)
        outputs = [unwritten(t) for t in out_tensors]
        try:
            f = compiler.runtime.load_object(obj, task.target)
        except Exception as err:  # noqa: BLE001
            return done(MeasureErrorNo.RUNTIME_ERROR, error_message(err))
        try:
            out["costs"] = self._time(f, [*inputs, *outputs], options)
        except Exception as err:  # noqa: BLE001
            return done(MeasureErrorNo.RUNTIME_ERROR, error_message(err))
        if check:  # every call writes the same outputs; a correct kernel is idempotent
            verify_start = time.perf_counter()
            for tensor, got, want in zip(out_tensors, outputs, expected):
                problem = mismatch(got, want)
                if problem:
                    out["costs"] = []
                    return done(MeasureErrorNo.WRONG_ANSWER, f"output {tensor.name}: {problem}")
            out["verify_time"] = time.perf_counter() - verify_start
        return done()

    def time_rounds(self, spec: dict, objects: list, repeat_ms: int, rounds: int,
                    cold: bool = False) -> dict:
        """Load `objects` (object code of candidates of task `spec`, None for one that
        did not build) and time them in `rounds` alternating rounds: each round times
        every candidate once, for about `repeat_ms` milliseconds, in order, and in
        reverse order every other round, so that a drift of the host's speed falls on
        all of them alike (tuner/confirm.py). `cold`: a timing is the median of calls
        each made right after the caches were flushed (at least COLD_CALLS of them), as
        a layer runs in a model, its weights coming from memory. Outputs are not
        checked: each candidate was checked when it was measured. Then release the
        host's timing lock (see acquire). Returns {"costs": [seconds per call in each
        round, one list per candidate, empty for one that failed], "errors": [message
        or "" per candidate], "host"}."""
        try:
            return self._time_rounds(Task.from_spec(spec), objects, repeat_ms, rounds, cold)
        finally:
            self._release()

    def _time_rounds(self, task: Task, objects: list, repeat_ms: int, rounds: int,
                     cold: bool) -> dict:
        inputs, out_tensors, _ = self._task_data(task, False)
        arrays = [*inputs, *(unwritten(t) for t in out_tensors)]
        timers, errors = [], []
        for obj in objects:
            timer, error = None, "it did not build"
            if obj is not None:
                try:
                    f = compiler.runtime.load_object(obj, task.target)
                    f(*arrays)  # the warm-up call: first touches, cold caches
                    start = time.perf_counter()
                    f(*arrays)  # how many calls make repeat_ms, at the warm speed
                    first = time.perf_counter() - start
                    timer, error = self._round_timer(f, arrays, first, repeat_ms, cold), ""
                except Exception as err:  # noqa: BLE001
                    error = error_message(err)
            timers.append(timer)
            errors.append(error)
        costs: list[list[float]] = [[] for _ in objects]
        for r in range(rounds):
            order = range(len(objects)) if r % 2 == 0 else reversed(range(len(objects)))
            for i in order:
                if timers[i] is None:
                    continue
                try:
                    costs[i] += timers[i](*arrays).results
                except Exception as err:  # noqa: BLE001
                    timers[i], costs[i], errors[i] = None, [], error_message(err)
        return {"costs": costs, "errors": errors, "host": self.host}

    def _round_timer(self, f, arrays: list, first: float, repeat_ms: int, cold: bool):
        """A function timing `f` on `arrays` for one round (see time_rounds); `first` is
        the seconds of one warm call. It returns a ProfileResult of seconds per call."""
        if not cold:
            number = max(1, min(int(repeat_ms / 1e3 / max(first, 1e-9)), 1 << 30))
            return f.time_evaluator(number=number, repeat=1, warmup=False)
        start = time.perf_counter()
        self._flush(arrays)
        flush = time.perf_counter() - start
        return self._cold(f, max(COLD_CALLS, int(repeat_ms / 1e3 / (flush + first))))
