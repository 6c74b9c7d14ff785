"""The control of a batch, and the task-wide scale its ratios are chained to.

Why: the timing host's speed drifts by tens of percent over seconds (turbo, a shared
host's neighbours), so raw seconds taken minutes apart do not compare: the least of
hundreds of timings is the luckiest, not the fastest config.

What: every measured batch of a task also times a control config, the task's best so
far (the untuned fallback until there is one), twice: first and last, so that the
batch's candidates are bracketed by it. Each result then has its `ratio`: its time over
the faster of the control's two times in the same batch. The ratios are chained to one
scale for the whole task:

    factor(batch)  = scaled(control) / the faster time of the control in this batch
    scaled(config) = time of the config in its batch * factor(batch)
                   = ratio(config) * scaled(control)

The first control with no scaled cost yet (the fallback's baseline, or a run without a
log) anchors the scale: its own time is its scaled cost. A config's scaled cost is fixed
once, when it is measured; when it later becomes the control, later batches hang off it.

Why it is sound: write a measured time as t = f(when) * c(config) * noise, with f the
host's slowness at the time. When f does not change during a batch, the control's two
times agree and ratio = c(config) / c(control) * noise: the host's speed cancels. By
induction along the chain of controls back to the anchor, scaled(config) = c(config) *
f(anchor) * (the noise of the links): every config of the task is in one unit, the
anchor's speed, whenever it was measured, and the ranking by scaled cost is the ranking
by true cost up to noise. The noise does not grow with time, only with the number of
links, and a link is added only when the best improves (a handful per task).

This host does change speed within a batch: measured, a kernel runs at 104 us for 16 s
of steady load and then at 160-190 us, and a batch's timings last seconds. When the
speed changes once during a batch, the control's two times differ, and dividing by the
faster one can only overstate a candidate timed in the slow phase, never understate
one: a config can look worse than it is, never better. It can look better only when
the host ran fast just while it was timed and slow at both ends of the batch (seen on
this host: the speed flips within a second). So the candidates that beat the control
(the two best of them) are timed again at once, beside the control, in two alternating
rounds (`recheck`), and keep the worse of their two ratios: a config is crowned only
if it beat the control twice, the second time next to it. What noise is left is taken
out at the end by confirmation (tuner/confirm.py), which re-times the top configs
against each other in alternating rounds.
"""
from __future__ import annotations

import dataclasses
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


def recheck(inputs: list, results: list[MeasureResult], measurer) -> list[MeasureResult]:
    """The chained `results` of a batch whose control was timed first and last (`inputs`
    as `place` made them), with the RECHECK best candidates that beat the control timed
    again beside it in RECHECK_ROUNDS alternating rounds on `measurer` (its
    `time_rounds`: the built code is reused); each keeps the worse of its ratios, and its
    scaled cost with it. A config that cannot be re-timed keeps what it has."""
    winners = sorted((i for i in range(1, len(results) - 1) if results[i].ok
                      and results[i].ratio is not None and results[i].ratio < 1),
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
