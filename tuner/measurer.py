"""Measurer: builds candidates in parallel on Ray and times them on a runner actor.

A batch is measured in two phases. First every candidate is compiled to object code by
Ray tasks, at most `n_parallel` at a time, each killed at `build_timeout`. Then the
runner actor of the target's timing host loads, verifies and times the built candidates
one at a time, so no build of this Measurer competes with a timing for the cores.

Nothing a candidate does stops the batch: a config the template rejects, a compile
error, a hang (the task or actor is killed at its timeout), a segfault (it kills only
its worker process, which Ray or we replace) or a wrong answer each becomes a
MeasureResult with its error code, in input order.

`time_rounds` re-times candidates against each other in alternating rounds (the
confirmation of tuner/confirm.py); it takes their object code from the latest builds,
kept in memory (OBJECT_CACHE_BYTES at most), and builds only what is not there.
"""
from __future__ import annotations

import time

from records import MeasureErrorNo

from .builder import build_candidate
from .measure import MeasureInput, MeasureResult
from .ray_session import connect, timing_resource
from .runner import Runner

STARTUP_TIMEOUT = 300.0  # seconds for a new runner process to import and get ready
OBJECT_CACHE_BYTES = 64 << 20  # object code of the latest builds kept for time_rounds


class Measurer:
    """`with Measurer(...) as m: results = m.measure(inputs)`.

    address: None for an embedded local Ray (started on demand), "auto" or "host:port"
        to join a cluster.
    n_parallel: builds at a time (default: the cluster's CPUs).
    number, repeat, min_repeat_ms, cooldown_ms: as TVM's time_evaluator (the defaults
        are MetaSchedule's: one measurement of at least 100 ms); flush_cache: every call
        timed right after a flush of the caches, as a layer of a model runs (its
        weights come from memory); a repeat is then the median of such calls, and
        number and min_repeat_ms do not apply (Runner).
    build_timeout, run_timeout: seconds before a build task or a run is killed.
    check_correctness: compare every candidate's outputs with the numpy reference
        (the outputs of the calls that are timed: no call of its own).
    early_cutoff: a candidate whose first run takes more than `early_cutoff` times the
        best mean cost measured for its task so far is not timed further; its cost is
        that one run (it cannot be among the best). None times every candidate fully.
    compile_cache: a candidate built before on this machine is taken from the compile
        cache (tuner/builder.py); False builds every one anew.
    """

    def __init__(self, address: str | None = None, n_parallel: int | None = None,
                 number: int = 1, repeat: int = 1, min_repeat_ms: int = 100,
                 cooldown_ms: int = 0, flush_cache: bool = False,
                 build_timeout: float = 30.0, run_timeout: float = 30.0,
                 check_correctness: bool = True, early_cutoff: float | None = 10.0,
                 compile_cache: bool = True):
        for name, value, least in (("number", number, 1), ("repeat", repeat, 1),
                                   ("min_repeat_ms", min_repeat_ms, 0),
                                   ("cooldown_ms", cooldown_ms, 0)):
            if not isinstance(value, int) or isinstance(value, bool) or value < least:
                raise ValueError(f"Measurer: {name} must be an integer >= {least}, got {value!r}")
        for name, value in (("build_timeout", build_timeout), ("run_timeout", run_timeout)):
            if not isinstance(value, (int, float)) or value <= 0:
                raise ValueError(f"Measurer: {name} must be a positive number of seconds, "
                                 f"got {value!r}")
        if early_cutoff is not None and (not isinstance(early_cutoff, (int, float))
                                         or early_cutoff < 1):
            raise ValueError(f"Measurer: early_cutoff must be None or a number >= 1, "
                             f"got {early_cutoff!r}")
        if n_parallel is not None and (not isinstance(n_parallel, int) or n_parallel < 1):
            raise ValueError(f"Measurer: n_parallel must be a positive integer, got {n_parallel!r}")
        self.address = address
        self.n_parallel = n_parallel
        self.options = {"number": number, "repeat": repeat, "min_repeat_ms": min_repeat_ms,
                        "cooldown_ms": cooldown_ms, "flush_cache": bool(flush_cache),
                        "check_correctness": bool(check_correctness)}
        self.build_timeout = float(build_timeout)
        self.run_timeout = float(run_timeout)
        self.early_cutoff = early_cutoff
        self.compile_cache = bool(compile_cache)
        self._best: dict = {}  # task -> best mean cost measured by this Measurer
        self._runners: dict = {}  # timing resource -> runner actor
        self._build_task = None
        self._objects: dict = {}  # (task, config index) -> object code, oldest first
        self._object_bytes = 0
        # wall seconds spent in each phase, and candidates measured, since construction
        self.stats = {"build_s": 0.0, "run_s": 0.0, "candidates": 0}

    # ------------------------------------------------------------------ lifetime

    def __enter__(self) -> Measurer:
        self.start()
        return self

    def __exit__(self, *exc_info):
        self.close()

    def start(self) -> None:
        """Connect to Ray (starting a local instance when no address is given)."""
        import ray
        connect(self.address)
        if self._build_task is None:
            self._build_task = ray.remote(num_cpus=1, max_retries=0)(build_candidate)
        if self.n_parallel is None:
            self.n_parallel = max(1, int(ray.cluster_resources().get("CPU", 1)))

    def close(self) -> None:
        """Stop this Measurer's runner actors (Ray itself stops at exit)."""
        import ray
        for actor in self._runners.values():
            ray.kill(actor)
        self._runners.clear()

    # ------------------------------------------------------------------ measuring

    def measure(self, inputs: list[MeasureInput]) -> list[MeasureResult]:
        """Build and time `inputs`; one MeasureResult per input, in input order."""
        if self._build_task is None:
            self.start()
        for target in {str(inp.task.target): inp.task.target for inp in inputs}.values():
            self._runner(target)  # a cluster that cannot time them fails before any build
        start = time.perf_counter()
        built = self._build_all(inputs)
        built_at = time.perf_counter()
        self._keep(inputs, built)
        results = [self._run(inp, b) if b["error_no"] == MeasureErrorNo.NO_ERROR else _failed(b)
                   for inp, b in zip(inputs, built)]
        self.stats["build_s"] += built_at - start
        self.stats["run_s"] += time.perf_counter() - built_at
        self.stats["candidates"] += len(inputs)
        return results

    def time_rounds(self, inputs: list[MeasureInput], rounds: int,
                    repeat_ms: int, cold: bool | None = None) -> list[list[float]]:
        """Time `inputs` (configs of one task, built before or now) in `rounds` alternating
        rounds of about `repeat_ms` milliseconds per timing on the task's runner, `cold`
        (default: flush_cache): each call after a flush of the caches (see
        Runner.time_rounds); per input its seconds per call in each round, empty for one
        that did not build or run (all empty when the runner hung or died)."""
        import ray
        from ray.exceptions import GetTimeoutError, RayActorError, RayTaskError
        if self._build_task is None:
            self.start()
        missing = [inp for inp in inputs if (inp.task, inp.config.index) not in self._objects]
        if missing:
            self._keep(missing, self._build_all(missing))
        objects = [self._objects.get((inp.task, inp.config.index)) for inp in inputs]
        task = inputs[0].task
        runner = self._runner(task.target)
        timeout = self.run_timeout + rounds * len(inputs) * 2 * max(repeat_ms / 1e3, 0.1)
        try:
            ray.get(runner.acquire.remote())
            cold = self.options["flush_cache"] if cold is None else bool(cold)
            ref = runner.time_rounds.remote(task.spec(), objects, repeat_ms, rounds, cold)
            out = ray.get(ref, timeout=timeout)
        except GetTimeoutError:
            self._replace(task.target, kill=True)
            return [[] for _ in inputs]
        except (RayActorError, RayTaskError):
            self._replace(task.target)
            return [[] for _ in inputs]
        return out["costs"]

    def _keep(self, inputs: list[MeasureInput], built: list[dict]) -> None:
        """Keep the object code of the candidates that built, the oldest dropped first
        beyond OBJECT_CACHE_BYTES."""
        for inp, b in zip(inputs, built):
            if b["error_no"] != MeasureErrorNo.NO_ERROR or not b.get("object"):
                continue
            key = (inp.task, inp.config.index)
            old = self._objects.pop(key, None)
            self._object_bytes += len(b["object"]) - (len(old) if old else 0)
            self._objects[key] = b["object"]
        while self._object_bytes > OBJECT_CACHE_BYTES and self._objects:
            self._object_bytes -= len(self._objects.pop(next(iter(self._objects))))

    def _build_all(self, inputs: list[MeasureInput]) -> list[dict]:
        """Build results in input order: n_parallel Ray tasks at a time, each cancelled
        (its worker killed) once it has run for build_timeout seconds."""
        import ray
        out: list = [None] * len(inputs)
        pending: dict = {}  # object ref -> (input index, start time)
        following = 0
        while following < len(inputs) or pending:
            while following < len(inputs) and len(pending) < self.n_parallel:
                inp = inputs[following]
                ref = self._build_task.remote(inp.task.spec(), inp.config.to_json(),
                                              self.compile_cache)
                pending[ref] = (following, time.monotonic())
                following += 1
            oldest = min(start for _, start in pending.values())
            wait = max(0.0, oldest + self.build_timeout - time.monotonic())
            ready, _ = ray.wait(list(pending), num_returns=1, timeout=wait)
            for ref in ready:
                index, start = pending.pop(ref)
                out[index] = _collect_build(ref, time.monotonic() - start)
            now = time.monotonic()
            for ref, (index, start) in list(pending.items()):
                if now - start >= self.build_timeout:
                    ray.cancel(ref, force=True)
                    del pending[ref]
                    out[index] = _build_error(
                        MeasureErrorNo.COMPILE_TIMEOUT,
                        f"the build did not finish within build_timeout={self.build_timeout:g} s",
                        now - start)
        return out

    def _runner(self, target):
        """The runner actor of `target`'s timing host, started (and ready) on demand."""
        import ray
        resource = timing_resource(target)
        if resource not in self._runners:
            if ray.cluster_resources().get(resource, 0) < 1:
                raise RuntimeError(
                    f"no node of the Ray cluster can time candidates for {target}: none "
                    f"advertises the resource {resource!r} (start one with "
                    f"ray start --resources '{{\"{resource}\": 1}}')")
            actor = ray.remote(Runner).options(resources={resource: 1}, num_cpus=0,
                                                max_restarts=0).remote()
            ray.get(actor.ready.remote(), timeout=STARTUP_TIMEOUT)
            self._runners[resource] = actor
        return self._runners[resource]

    def _run(self, inp: MeasureInput, built: dict) -> MeasureResult:
        """Time one built candidate; a hang or a crash loses only the runner process."""
        import ray
        from ray.exceptions import GetTimeoutError, RayActorError, RayTaskError
        runner = self._runner(inp.task.target)
        start = time.monotonic()
        options = dict(self.options)
        if self.early_cutoff is not None and inp.task in self._best:
            options["cutoff_s"] = self.early_cutoff * self._best[inp.task]
        code, msg, out = MeasureErrorNo.NO_ERROR, "", {}
        try:
            # waiting for another process's timing on this host is not this candidate's time
            ray.get(runner.acquire.remote())
            ref = runner.time_candidate.remote(inp.task.spec(), built["object"], options)
            out = ray.get(ref, timeout=self.run_timeout)
            code, msg = MeasureErrorNo(out["error_no"]), out["error_msg"]
        except GetTimeoutError:
            self._replace(inp.task.target, kill=True)
            code = MeasureErrorNo.RUN_TIMEOUT
            msg = f"the run did not finish within run_timeout={self.run_timeout:g} s; killed"
        except RayActorError as err:
            self._replace(inp.task.target)
            code = MeasureErrorNo.WORKER_CRASH
            msg = f"the runner process died running this candidate (a crash): {_first_line(err)}"
        except RayTaskError as err:
            code, msg = MeasureErrorNo.UNKNOWN, _first_line(err)
        result = MeasureResult(tuple(out.get("costs", ())), code, msg, built["build_time"],
                               time.time(), out.get("host", ""),
                               out.get("run_time", time.monotonic() - start),
                               out.get("verify_time", 0.0))
        if result.ok:
            self._best[inp.task] = min(result.mean_cost, self._best.get(inp.task, result.mean_cost))
        return result

    def _replace(self, target, kill: bool = False) -> None:
        """Forget (and kill) the runner of `target`; the next run starts a new one."""
        import ray
        actor = self._runners.pop(timing_resource(target), None)
        if actor is not None and kill:
            ray.kill(actor, no_restart=True)


def _collect_build(ref, seconds: float) -> dict:
    """The builder's answer, or the error that ended its task."""
    import ray
    from ray.exceptions import RayTaskError, TaskCancelledError, WorkerCrashedError
    try:
        return ray.get(ref)
    except WorkerCrashedError as err:
        return _build_error(MeasureErrorNo.WORKER_CRASH,
                            f"the build worker died (a crash in the compiler): {_first_line(err)}",
                            seconds)
    except TaskCancelledError:
        return _build_error(MeasureErrorNo.COMPILE_TIMEOUT, "the build was cancelled", seconds)
    except RayTaskError as err:
        return _build_error(MeasureErrorNo.UNKNOWN, _first_line(err), seconds)


def _build_error(code: MeasureErrorNo, msg: str, seconds: float) -> dict:
    return {"error_no": int(code), "error_msg": msg, "object": None, "build_time": seconds}


def _failed(built: dict) -> MeasureResult:
    return MeasureResult((), MeasureErrorNo(built["error_no"]), built["error_msg"],
                         built["build_time"], time.time(), "")


def _first_line(err: BaseException) -> str:
    """One line saying what went wrong (for a RayTaskError: the exception it wraps)."""
    err = getattr(err, "cause", None) or err
    text = f"{type(err).__name__}: {err}".strip()
    return text.splitlines()[0] if text else type(err).__name__
