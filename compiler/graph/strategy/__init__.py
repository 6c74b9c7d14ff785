"""Op strategies (TVM's OpStrategy): the ways to implement a call of a graph op, without
the compiler knowing about templates.

The compiler may not import the template package (search_spaces sits above it), yet a
graph kernel should be scheduled by the template whose config the tuner found. So the
seam points the other way: a package above registers, per graph op, strategy functions

    fn(call, target, form) -> [Candidate, ...]

that look at the typed `Call` (its attrs, `call.args[i].ty`, `call.ty`) and the Target it
is built for, and return its candidates: a template (or a library's template) with its
workload, its compute and schedule as functions of a config, the config it runs
untuned, and a priority; none when they do not cover those attrs or shapes. With a
`form` (one of the call's forms, op/layout.py FORMS_ATTR: a convolution in a pair of
channel blocks, by Winograd or not), the candidates the call would have once
AlterOpLayout altered it into that form, each carrying the form: so that one question
decides how a call runs, whether it is altered included, without building the altered
call. The op's own compute with its default schedule (Op.compute, Op.schedule) is always
a candidate too, the lowest (priority 0). Which candidate, with which config, is one
question, answered by the chooser (chooser.py); strategies hold no config and never
look at the log.

Who registers: every entry point of the group "autosched.strategies" (a callable that
calls register_strategy), loaded once per process when candidates are first asked for.
An entry point is how a build finds the template package without the user importing
it and without an import from the compiler upwards; the template package's own entry
point is `search_spaces.strategies:register`. When the group has no entry point at all
(the package was not installed with its metadata), the first build warns once
(NoStrategiesWarning) instead of quietly scheduling every kernel with compiler.ops.
"""
from __future__ import annotations

import os
import sys
import threading
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from importlib.metadata import entry_points

from ...errors import BuildError
from ...lang.tensor import Tensor
from ...schedule.schedule import Schedule
from ...target import Target
from ..ir.expr import Call

ENTRY_POINT_GROUP = "autosched.strategies"

NO_TEMPLATE = {"template": None, "workload": None, "config": None, "fallback": None}
"""The `info` of a kernel that no template scheduled (the op's default schedule)."""


class StrategyError(BuildError):
    """An entry point of "autosched.strategies" failed to load or to register; the
    message names it."""


class NoStrategiesWarning(UserWarning):
    """No entry point of "autosched.strategies" is installed: no template schedules a
    kernel, which a user expecting tuned kernels must hear about."""


@dataclass(frozen=True, eq=False)
class Candidate:
    """One way to implement a call: what a strategy returns.

    name: the template's name (the op's name for its own default).
    workload: (template name, bound arguments): how the log names it, and what
        whole-model tuning makes a task of; None for the op's own default.
    compute: `compute(config, inputs)`: the anchor's te tensor from the te tensors of
        the call's arguments (in its order); it may add stages of its own.
    schedule: `schedule(config, out, anchor)`: the Schedule of the whole kernel whose
        final output is `out`, `anchor` being what compute returned (the elementwise and
        broadcast tail between them inlined).
    fallback: `fallback()`: the config it runs with untuned (None for the op's default).
    info: `info(config)`: what the build's plan and profile show of it, as plain JSON
        ({"template", "workload", "config", "fallback"}).
    priority: the chooser's default takes the highest (the first on a tie).
    library: the external codegen that computes it when it is a library's template
        ("cblas"): a candidate tuning measures and the chooser compares, never a te
        kernel of the build (its compute and schedule are not called).
    form: the form of the call it implements (FORMS_ATTR), None for the call as it
        stands: a candidate the chooser compares, whose kernel the build makes only
        once AlterOpLayout has altered the call into its form (and the altered call's
        candidates schedule it).
    """
    name: str
    workload: tuple | None
    compute: Callable[[object, list[Tensor]], Tensor]
    schedule: Callable[[object, Tensor, Tensor], Schedule]
    fallback: Callable[[], object]
    info: Callable[[object], dict]
    priority: int = 10
    library: str | None = None
    form: object | None = None


def op_default(call: Call, form=None) -> Candidate | None:
    """The op's own compute with its default schedule, as the lowest candidate: of the
    call, or of its `form` (a candidate the chooser compares, never lowered: see
    Candidate.form), None for a form the default does not run (its `default`)."""
    op = call.op
    if form is not None:
        if not form.default:
            return None
        return Candidate(op.name, None, _altered_first, _altered_first, lambda: None,
                         lambda config: dict(NO_TEMPLATE), priority=0, form=form)
    return Candidate(op.name, None,
                     lambda config, ins: op.compute(ins, call.attrs, call.ty),
                     lambda config, out, anchor: op.schedule(out, anchor, call),
                     lambda: None, lambda config: dict(NO_TEMPLATE), priority=0)


def _altered_first(*_):
    raise TypeError("a candidate of a form of a call: the build lowers the call "
                    "AlterOpLayout made of it, whose candidates schedule it")


_STRATEGIES: dict[str, list[Callable]] = {}
_loaded: set[str] = set()   # entry points loaded without error
_all_loaded = False          # every entry point is in _loaded: no need to look again
_lock = threading.RLock()


def register_strategy(op_name: str,
                      fn: Callable[[Call, Target, object], list[Candidate]]) -> None:
    """Register `fn(call, target, form) -> [Candidate, ...]` as a strategy of graph op
    `op_name` (`form`: None, or one of the call's forms, see the module docstring).
    Registering the same function again for the same op replaces it (a module loaded
    twice does not answer twice)."""
    if not callable(fn):
        raise TypeError(f"register_strategy({op_name!r}): fn must be callable, got {fn!r}")
    with _lock:
        entries = [f for f in _STRATEGIES.get(op_name, []) if f is not fn]
        _STRATEGIES[op_name] = [*entries, fn]


def load_strategies() -> None:
    """Call every entry point of ENTRY_POINT_GROUP not loaded yet (once per process; the
    first `candidates` call does it). A StrategyError names an entry point that
    fails, and it is tried again on the next call; a group without any entry point is a
    NoStrategiesWarning, once."""
    global _all_loaded
    if _all_loaded:
        return
    with _lock:
        found = entry_points(group=ENTRY_POINT_GROUP)
        if not found:
            warnings.warn(f"no entry point of the group {ENTRY_POINT_GROUP!r} is installed: "
                          "no template (nor a tuned config of one) schedules a kernel, "
                          "every kernel gets compiler.ops' default schedules (install the "
                          "autosched package, e.g. pip install -e ., to register its "
                          "templates)", NoStrategiesWarning, stacklevel=3)
        for ep in found:
            key = f"{ep.name} = {ep.value}"
            if key in _loaded:
                continue
            try:
                ep.load()()
            except Exception as e:
                raise StrategyError(f"the {ENTRY_POINT_GROUP} entry point {key} failed: "
                                    f"{type(e).__name__}: {e}") from e
            _loaded.add(key)
        _all_loaded = True


def strategy_folders() -> list[str]:
    """The folders of the top-level packages whose functions are registered strategies
    (search_spaces for ours): code that a kernel's code follows from, beside the
    compiler's own (the disk cache keys by it, graph/backend/build.py)."""
    load_strategies()
    with _lock:
        names = {fn.__module__.partition(".")[0] for fns in _STRATEGIES.values() for fn in fns}
    folders = set()
    for name in names:
        module = sys.modules.get(name)
        if module is not None and getattr(module, "__file__", None):
            folders.add(os.path.dirname(os.path.abspath(module.__file__)))
    return sorted(folders)


def candidates(call: Call, target: Target | None = None, libraries=(),
               form=None) -> list[Candidate]:
    """Every candidate of the typed `call` for `target` (default: Target.current(), else
    the host), or of the call altered into its `form`: the registered strategies' in
    their order, a library's only when `libraries` names it, and the op's own default
    last (where it runs the form)."""
    load_strategies()
    target = Target.resolve(target)
    with target:  # a template's space, which a strategy builds, fits the target's vector unit
        found = [c for fn in _STRATEGIES.get(call.op.name, []) for c in fn(call, target, form)]
    default = op_default(call, form)
    return [c for c in found if c.library is None or c.library in libraries] + \
        ([default] if default is not None else [])
