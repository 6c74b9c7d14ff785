"""The control of a batch, and the task-wide scale its ratios are chained to.

Why: the timing host's speed drifts by tens of percent over seconds (turbo, a shared
host's neighbours), so raw seconds taken minutes apart do not compare: the least of
hundreds of timings is the luckiest, not the fastest config.

What: every measured batch of a task also times a control config, the task's best so
far (the untuned fallback until there is one), in the middle of the batch, among the
candidates. Each result then has its `ratio`, its time over the control's time in the
same batch: within a batch the host's speed is nearly the same for all, so the ratio
cancels it. The ratios are chained to one scale for the whole task:

    factor(batch)  = scaled(control) / time of the control in this batch
    scaled(config) = time of the config in its batch * factor(batch)
                   = ratio(config) * scaled(control)

The first control with no scaled cost yet (the fallback's baseline, or a run without a
log) anchors the scale: its own time is its scaled cost. A config's scaled cost is fixed
once, when it is measured; when it later becomes the control, later batches hang off it.

Why it is sound: write a measured time as t = f(when) * c(config) * noise, with f the
host's speed at the time. In one batch f is about the same for the control and every
candidate, so ratio = c(config) / c(control) * noise. By induction along the chain of
controls back to the anchor, scaled(config) = c(config) * f(anchor) * (product of the
noise of the links): every config of the task is in the same unit, the anchor's speed,
whenever it was measured, and the ranking by scaled cost is the ranking by true cost up
to noise. The noise does not grow with time, only with the number of links, and a link
is added only when the best improves (a handful per task). What noise is left is taken
out at the end by confirmation (tuner/confirm.py), which re-times the top configs
against each other in alternating rounds.
"""
from __future__ import annotations

import dataclasses

from .measure import MeasureResult


def place(inputs: list, control) -> tuple[list, int]:
    """`inputs` with `control` (a MeasureInput) in the middle, where the host's speed is
    closest to the batch's average, and its index there."""
    at = len(inputs) // 2
    return [*inputs[:at], control, *inputs[at:]], at


def chain(results: list[MeasureResult], at: int, control_scaled: float | None,
          factor: float) -> tuple[list[MeasureResult], float]:
    """The results of a batch whose control is `results[at]`, each with its ratio to the
    control and its scaled cost, and the batch's factor. control_scaled: the control's
    cost on the task's scale (None: the control anchors the scale). factor: the last
    batch's, used when the control failed (then no result has a ratio)."""
    control = results[at]
    if control.ok:
        base = control.mean_cost
        factor = (base if control_scaled is None else control_scaled) / base
    out = []
    for res in results:
        if not res.ok:
            out.append(res)
            continue
        ratio = res.mean_cost / control.mean_cost if control.ok else None
        out.append(dataclasses.replace(res, ratio=ratio, scaled_cost=res.mean_cost * factor))
    return out, factor
