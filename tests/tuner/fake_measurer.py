"""A measurer without Ray or a compiler, for testing tuners: a config's cost is a fixed
function of its knob positions, so the search is what is tested, never a timing."""
from __future__ import annotations

import time

from tuner import MeasureErrorNo, MeasureResult


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
    """`.measure(inputs)` as Measurer's, costs from `cost(config)` (None: a failure).
    `measured` lists every config index measured, in order; `batches` the batch sizes."""

    def __init__(self, cost=bowl_cost):
        self.cost = cost
        self.measured: list[int] = []
        self.batches: list[int] = []

    def measure(self, inputs) -> list[MeasureResult]:
        self.batches.append(len(inputs))
        out = []
        for inp in inputs:
            self.measured.append(inp.config.index)
            cost = self.cost(inp.config)
            if cost is None:
                out.append(MeasureResult((), MeasureErrorNo.INSTANTIATION_ERROR,
                                         "the fake template rejects this config",
                                         timestamp=time.time(), host="fake"))
            else:
                out.append(MeasureResult((cost,), MeasureErrorNo.NO_ERROR,
                                         build_time=0.01, timestamp=time.time(), host="fake",
                                         run_time=0.02, verify_time=0.005))
        return out
