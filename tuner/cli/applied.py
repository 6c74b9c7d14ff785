"""What the build applies to a logged workload, for `autosched log best`: the graph call the
workload implements (search_spaces.workload_calls) put to the build's own chooser
(compiler.graph.strategy.chooser.choose_implementation under records.ApplyHistoryBest), with and
without the cblas library, so that the command line says what the build does. For a
packed convolution it also lists the layer's logged channel blocks ("NCHW16c ->
NCHW32c"): on its own the build takes the fastest, in a model the layout planner weighs
them with the transforms between layers (compiler/graph/passes/layout_plan.py)."""
from __future__ import annotations

import warnings

from compiler.contrib.cblas import picks_library
from compiler import Target
from compiler.graph.strategy.chooser import Choice, choose_implementation, implementations
from compiler.graph.ir.op.layout import packed
from compiler.graph.strategy import candidates
from records import ApplyHistoryBest, FallbackWarning
from search_spaces.library import LIBRARY
from search_spaces.workload_calls import forms_of

from .common import format_seconds, task_label


def _label(choice: Choice, layouts: dict | None = None) -> str:
    workload = choice.candidate.workload
    if not workload:
        return f"{choice.candidate.name}'s default schedule"
    layout = (layouts or {}).get(workload)
    return task_label(*workload) + (f" ({layout})" if layout else "")


def _blocks(ctx, found: list) -> tuple[dict, dict]:
    """({workload: its layout change} of the candidates `found` of forms in blocks,
    {layout change: seconds of its best record} of those the log times)."""
    layouts = {c.workload: f"{packed(blocks[0])} -> {packed(blocks[1])}" for c in found
               if c.workload is not None and (blocks := getattr(c.form, "blocks", None))}
    times = {change: r.seconds for workload, change in layouts.items()
             if (r := ctx.report(workload)) is not None}
    return layouts, times


def _time(choice: Choice) -> str:
    return format_seconds(choice.report.seconds) if choice.report else "no record"


def build_applies(db, task) -> dict:
    """{"build_applies": the implementation a build applies to the task's call,
    "said": a line saying it (and, where the library competes, a second line), and then
    "build_picks": what a build with `--external cblas` gives it to, "times": {workload:
    seconds of its best record}}; {} for a workload of no graph call."""
    found = forms_of(task.name, task.args)
    if found is None:
        return {}
    call, forms = found
    with Target(task.target), ApplyHistoryBest(db, target=task.target) as ctx, \
            warnings.catch_warnings():
        warnings.simplefilter("ignore", FallbackWarning)
        plain = choose_implementation(call, forms, applies=False)
        library = choose_implementation(call, forms, libraries=(LIBRARY,), applies=False)
        rivals = [c for c in implementations(call, forms, task.target, (LIBRARY,))
                  if c.workload is not None]
        times = {task_label(*c.workload): r.seconds for c in rivals
                 if (r := ctx.report(c.workload)) is not None}
        layouts, blocks = _blocks(ctx, rivals)
    why = f"{_time(plain)}, tier {plain.report.tier}" if plain.report else "untuned, no record"
    said = [f"the build applies {_label(plain, layouts)} ({why})"]
    found = {"build_applies": _label(plain, layouts), "times": times}
    if task.workload in layouts:
        found |= {"layout": layouts[task.workload], "blocks": blocks}
        said.append("blocks of this layer in the log: " + ", ".join(
            f"{change} {format_seconds(t)}" for change, t in blocks.items()) +
            "; in a model the build picks every layer's blocks for the whole graph (these "
            "times, plus a layout transform where two layers' blocks differ)")
    if any(c.library == LIBRARY for c in rivals):
        own = [c for c in candidates(call, task.target, (LIBRARY,)) if c.workload]
        first = next((c for c in own if c.library is None), own[0])  # the call as it is
        if picks_library(library):
            picks = LIBRARY
            why = f"{_time(library)} against the tuned {_label(plain)}'s {_time(plain)}" \
                if plain.report else f"{_time(library)}, and the log has no tuned kernel of it"
        else:
            picks = _label(library)
            lib = next(c for c in rivals if c.library == LIBRARY)
            lib_time = times.get(task_label(*lib.workload))
            why = f"{_time(library)} against {LIBRARY}'s " + \
                (format_seconds(lib_time) if lib_time is not None else "no record")
        said.append(f"with --external {LIBRARY} the build gives {task_label(*first.workload)} "
                    f"to {picks}: {why}")
        found["build_picks"] = picks
    return {**found, "said": "\n".join(said)}
