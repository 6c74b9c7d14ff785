"""A measurer without Ray or a compiler, for testing tuners: a config's cost is a fixed
function of its knob positions, so the search is what is tested, never a timing."""
from __future__ import annotations

import time

from tuner import MeasureErrorNo, MeasureResult
from tuner.confirm import COLD_LEAST_MS, OVERHEAD_MS


def bowl_cost(config) -> float | None:
    """Seconds for `config`: a smooth bowl over the knob positions (each scaled to
    [0, 1]) with its lowest point at 0.7 on every knob; None (an INSTANTIATION_ERROR)
    for every 13th config."""
    if config.index % 13 == 5:
        return None
    dims = [len(knob) for knob in config.space.space_map.values()]
    spread = sum((p / max(d - 1, 1) - 0.7) ** 2 for p, d in zip(config.knob_indices, dims))
    return 1e-3 * (0.1 + spread)


class FakeMeasurer:
    """`.measure(inputs)` and `.time_rounds(inputs, rounds, repeat_ms)` as Measurer's,
    costs from `cost(config)` (None: a failure) times `speed(n)`, the host's slowness at
    the n-th call of `measure` (from 0; default 1: no drift; time_rounds sees no drift).
    `measured` lists every config index measured, in order; `batches` the batch sizes;
    `confirmed` the config indices of each time_rounds call.

    It keeps a fake clock (`clock()`, for TaskScheduler(clock=...)): a measured config
    takes `seconds(config)` of it (default 0.1 s each: a build and a timing), and a
    time_rounds call what its plan says (confirm.planned_seconds)."""

    def __init__(self, cost=bowl_cost, speed=lambda n: 1.0, seconds=lambda config: 0.1):
        self.cost, self.speed, self.seconds = cost, speed, seconds
        self.now = 0.0
        self.measured: list[int] = []
        self.batches: list[int] = []
        self.batch_indices: list[list[int]] = []
        self.confirmed: list[list[int]] = []
        self.calls = 0

    def clock(self) -> float:
        """Fake seconds: what the measurements so far took."""
        return self.now

    def close(self) -> None:
        """As Measurer's: nothing to stop."""

    def time_rounds(self, inputs, rounds: int, repeat_ms: int,
                    cold: bool = False) -> list[list[float]]:
        self.confirmed.append([inp.config.index for inp in inputs])
        ms = max(repeat_ms, COLD_LEAST_MS) if cold else repeat_ms
        self.now += rounds * len(inputs) * (ms + OVERHEAD_MS) / 1e3
        out = [[] for _ in inputs]
        for _ in range(rounds):
            for i, inp in enumerate(inputs):
                cost = self.cost(inp.config)
                if cost is not None:
                    out[i].append(cost)
        return out

    def measure(self, inputs) -> list[MeasureResult]:
        self.batches.append(len(inputs))
        self.batch_indices.append([inp.config.index for inp in inputs])
        slow = self.speed(self.calls)
        self.calls += 1
        out = []
        for inp in inputs:
            self.measured.append(inp.config.index)
            self.now += self.seconds(inp.config)
            cost = self.cost(inp.config)
            cost = None if cost is None else cost * slow
            if cost is None:
                out.append(MeasureResult((), MeasureErrorNo.INSTANTIATION_ERROR,
                                         "the fake template rejects this config",
                                         timestamp=time.time(), host="fake"))
            else:
                out.append(MeasureResult((cost,), MeasureErrorNo.NO_ERROR,
                                         build_time=0.01, timestamp=time.time(), host="fake",
                                         run_time=0.02, verify_time=0.005))
        return out


def trials_of(measurer: FakeMeasurer, fallback_batch: bool = False) -> list[int]:
    """The config indices `measurer` measured as trials: each batch without its control
    (the TaskScheduler times it first and last), and without the first batch when it was
    the fallback baseline's."""
    batches = measurer.batch_indices[1:] if fallback_batch else measurer.batch_indices
    return [i for b in batches for i in b[1:-1]]
