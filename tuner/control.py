"""The control of a batch, and the task-wide scale its ratios are put on.

Why: the timing host's speed drifts by tens of percent over seconds (turbo, a shared
host's neighbours), so raw seconds taken minutes apart do not compare: the least of
hundreds of timings is the luckiest, not the fastest config.

What: every measured batch of a task also times a control config, the task's untuned
fallback, twice: first and last, so that the batch's candidates are bracketed by it.
Each result then has its `ratio`: its time over the faster of the control's two times in
the same batch. The ratios are put on one scale for the whole task:

    factor(batch)  = scaled(control) / the faster time of the control in this batch
    scaled(config) = time of the config in its batch * factor(batch)
                   = ratio(config) * scaled(control)

The control's first timing (the fallback's baseline, or the first batch of a run
without a log) anchors the scale: its own time is its scaled cost. The control is the
best so far only where the fallback has no cost (it failed to build or run), and then
it stays so until the fallback has one (tuner/task_scheduler.py).

Why it is sound: write a measured time as t = f(when) * c(config) * noise, with f the
host's slowness at the time. When f does not change during a batch, the control's two
times agree and ratio = c(config) / c(control) * noise: the host's speed cancels, and
scaled(config) = c(config) * f(anchor) * noise: every config of the task is in one
unit, the anchor's speed, whenever it was measured, and the ranking by scaled cost is
the ranking by true cost up to the noise of one ratio.

Why the fallback and not the best so far: a control that changes adds a link, and the
links are not noise that averages out. A new best is crowned because its ratio was the
lowest of many, so its scaled cost is on average lower than its true cost (the
winner's curse), and every config measured against it afterwards inherits that error;
each improvement of the best adds one more, all in the same direction. Measured on
matmul 512^3, where hundreds of configs lie within 2% of each other: a random search of
256 trials crowned a config at 1.12x the fallback on the chained scale, which the
confirmation's alternating rounds put at 0.999x; with the fallback as the only control,
the same seed's best was 1.003x on the scale and 1.022x confirmed. Inflated chains also
mislead the cost model (its labels) and the allocation (a task seems to improve while
it does not).

This host does change speed within a batch: measured, a kernel runs at 104 us for 16 s
of steady load and then at 160-190 us, and a batch's timings last seconds. When the
speed changes once during a batch, the control's two times differ, and dividing by the
faster one can only overstate a candidate timed in the slow phase, never understate
one: a config can look worse than it is, never better. It can look better only when
the host ran fast just while it was timed and slow at both ends of the batch (seen on
this host: the speed flips within a second). So the candidates that would be crowned
(the two best of those that beat the control and the best so far) are timed again at
once, beside the control, in two alternating rounds (`recheck`), and keep the worse of
their two ratios: a config is crowned only if it beat the best twice, the second time
in rounds beside the control. What noise is left is taken out at the end by
confirmation (tuner/confirm.py), which re-times the top configs against each other in
alternating rounds.
"""
from __future__ import annotations

import dataclasses
import math
import statistics

from .measure import MeasureResult

RECHECK = 2           # the best candidates of a batch that beat its control, timed again
RECHECK_ROUNDS = 2
RECHECK_MS = 50       # milliseconds per timing of the re-check


def place(inputs: list, control) -> tuple[list, tuple[int, int]]:
    """`inputs` bracketed by `control` (a MeasureInput), timed first and last, and the
    indices of the control's two timings."""
    return [control, *inputs, control], (0, len(inputs) + 1)


def chain(results: list[MeasureResult], at: tuple, control_scaled: float | None,
          factor: float) -> tuple[list[MeasureResult], float]:
    """The results of a batch whose control was timed at the indices `at`, each with its
    ratio to the control's faster time and its scaled cost, and the batch's factor.
    control_scaled: the control's cost on the task's scale (None: the control anchors
    the scale). factor: the last batch's, used when every timing of the control failed
    (then no result has a ratio)."""
    times = [results[i].mean_cost for i in at if results[i].ok]
    base = min(times) if times else None
    if base is not None:
        factor = (base if control_scaled is None else control_scaled) / base
    out = []
    for res in results:
        if not res.ok:
            out.append(res)
            continue
        ratio = None if base is None else res.mean_cost / base
        out.append(dataclasses.replace(res, ratio=ratio, scaled_cost=res.mean_cost * factor))
    return out, factor


def recheck(inputs: list, results: list[MeasureResult], measurer,
            best: float = math.inf) -> list[MeasureResult]:
    """The chained `results` of a batch whose control was timed first and last (`inputs`
    as `place` made them), with the RECHECK best candidates that beat both the control
    and `best` (the task's best cost so far on the scale: the candidates that would be
    crowned) timed again beside the control in RECHECK_ROUNDS alternating rounds on
    `measurer` (its `time_rounds`: the built code is reused); each keeps the worse of its
    ratios, and its scaled cost with it. A config that cannot be re-timed keeps what it
    has."""
    winners = sorted((i for i in range(1, len(results) - 1) if results[i].ok
                      and results[i].ratio is not None and results[i].ratio < 1
                      and results[i].scaled_cost < best),
                     key=lambda i: results[i].ratio)[:RECHECK]
    if not winners:
        return results
    times = measurer.time_rounds([inputs[0], *(inputs[i] for i in winners)], RECHECK_ROUNDS,
                                 RECHECK_MS)
    control = times[0]
    out = list(results)
    for i, again in zip(winners, times[1:]):
        if len(control) != RECHECK_ROUNDS or len(again) != RECHECK_ROUNDS:
            continue
        ratio = statistics.median(t / c for t, c in zip(again, control))
        res = results[i]
        if ratio > res.ratio:
            out[i] = dataclasses.replace(res, ratio=ratio,
                                         scaled_cost=res.scaled_cost * ratio / res.ratio)
    return out
