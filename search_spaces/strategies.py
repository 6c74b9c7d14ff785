"""The templates as op strategies of the graph build (compiler/graph/strategy/): a call
of a graph op has as candidates the templates bound to that op (binding.py) whose
binding gives it a workload, which the chooser (compiler/graph/strategy/chooser.py: the dispatch
contexts, ApplyHistoryBest) picks with a config for that workload.

`register` is the package's entry point (pyproject.toml, group "autosched.strategies"):
the build loads it on its first kernel, so a user who never imports search_spaces still
gets the templates' schedules, and the tuned ones inside `records.ApplyHistoryBest`.

A library's template (library.py) is a candidate of the library, which the chooser
compares with the others when a build is asked to use that codegen (cblas). Calls no
binding takes (a window the templates' arguments cannot say, another dtype) are left to
compiler.ops' schedules. The workload is built exactly as the template's signature
binds it, so that records tuned on the template answer for the graph's layer.
"""
from __future__ import annotations

import dataclasses

from compiler import Target, ops, te
from compiler.graph.ir.expr import Call
from compiler.graph.strategy import Candidate, register_strategy

from .library import LIBRARY
from .registry import Template, bound_templates


def _candidate(tmpl: Template, args: tuple, target) -> Candidate:
    """The candidate of template `tmpl` on its workload `args` for `target`: its
    binding's compute makes the anchor (tagged with the template's name), its schedule
    schedules the kernel; a config is checked to be a point of the template's space
    first, as instantiate does. The space is built when a config is asked for (most
    candidates a decision considers are never built)."""
    args = tmpl.bind(args)
    target = Target.resolve(target)
    binding = tmpl.binding

    def space():  # built when a config is asked for, not for every candidate considered
        return tmpl.space(args, target)

    def compute(cfg, inputs):
        space().check(cfg)
        return binding.compute(args, cfg, inputs)

    def schedule(cfg, out: te.Tensor, anchor: te.Tensor):
        s = te.create_schedule(out.op)
        binding.schedule(args, cfg, s, ops.find_anchor(out, tmpl.name), out)
        return s
    return Candidate(tmpl.name, (tmpl.name, args), compute, schedule,
                     lambda: space().fallback(), lambda cfg: _info(tmpl.name, args, cfg))


def _library(tmpl: Template, args: tuple, target) -> Candidate:
    """The library's candidate of template `tmpl` on `args`: the chooser compares it
    (chooser.choose_implementation with the library named), the build never lowers it."""
    args = tmpl.bind(args)
    target = Target.resolve(target)

    def not_a_kernel(*_):
        raise TypeError(f"{tmpl.name} is a library's template: the external codegen "
                        f"{LIBRARY} computes it, not a te kernel")
    return Candidate(tmpl.name, (tmpl.name, args), not_a_kernel, not_a_kernel,
                     lambda: tmpl.space(args, target).fallback(),
                     lambda cfg: _info(tmpl.name, args, cfg),
                     priority=5, library=LIBRARY)


def _info(name: str, args: tuple, cfg) -> dict:
    """What the build's plan and profile show of template `name` on `args` with `cfg`."""
    return {"template": name, "workload": f"{name}{args!r}", "config": f"#{cfg.index}",
            "fallback": bool(cfg.is_fallback)}


def template_strategy(call: Call, target, form=None) -> list[Candidate]:
    """The candidates of `call`: every template bound to its op whose binding gives the
    call a workload, in the order the templates were registered; with a `form` of the
    call, every template whose binding gives the call altered into it a workload
    (Binding.altered), each candidate carrying the form."""
    if form is None:
        bound = [(t, t.binding.workload(call)) for t in bound_templates(call.op.name)]
    else:
        bound = [(t, t.binding.altered(call, form)) for t in bound_templates()
                 if t.binding.alters == call.op.name]
    found = [_library(t, args, target) if t.library else _candidate(t, args, target)
             for t, args in bound if args is not None]
    return found if form is None else [dataclasses.replace(c, form=form) for c in found]


def register() -> None:
    """Register template_strategy for every op a template is bound to or alters (the
    "autosched.strategies" entry point)."""
    ops = {op for t in bound_templates() for op in (*t.binding.ops, t.binding.alters) if op}
    for op_name in sorted(ops):
        register_strategy(op_name, template_strategy)
