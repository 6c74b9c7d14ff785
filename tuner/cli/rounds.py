"""Timing side by side in alternating rounds, as `autosched bench` does for kernels and
for whole models."""
from __future__ import annotations

import statistics
import time


def time_in_rounds(rows: list[dict], repeat: int, refs: dict, pause: float = 0.0) -> None:
    """Time every row that has a timer once per round, for `repeat` rounds, in reverse
    order every other round, so that a change of the host's speed falls on all alike
    (with `pause` seconds between two timings: runtimes whose thread pools spin on after
    a call do not steal the next one's cores); each row gets its median seconds and, per
    key of `refs` ({"vs_fallback": a row, ...}), the median of its per-round ratios to
    that row (None where either has no time)."""
    timed = [r for r in rows if r["timer"] is not None]
    samples = {id(r): [] for r in timed}
    for n in range(repeat):
        for r in timed if n % 2 == 0 else reversed(timed):
            time.sleep(pause)
            samples[id(r)].append(r["timer"]())
    for r in rows:
        mine = samples.get(id(r))
        r["seconds"] = statistics.median(mine) if mine else None
        for key, ref in refs.items():
            theirs = samples.get(id(ref)) if ref is not None else None
            r[key] = statistics.median(t / m for t, m in zip(theirs, mine)) \
                if mine and theirs else None
    for r in rows:
        r.pop("timer", None)
