"""Op strategies (TVM's OpStrategy): how the build finds a tuned schedule for a fused
function's anchor op without the compiler knowing about templates.

The compiler may not import the template package (search_spaces sits above it), yet a
graph kernel should be scheduled by the template whose config the tuner found. So the
seam points the other way: a package above registers, per graph op, strategy functions

    fn(call) -> Implementation | None

that look at the typed anchor `Call` (its attrs, `call.args[i].ty`, `call.ty`) and return
an Implementation (the anchor's te compute, the schedule of the whole kernel, and what was
chosen) or None when they do not cover those attrs or shapes. `select_implementation(call)`
asks the strategies of the call's op, highest `plevel` first, and returns the first
answer; with none, lower.py schedules the kernel with compiler.ops' schedules.

Who registers: every entry point of the group "autosched.strategies" (a callable that
calls register_strategy), loaded once per process on the first select_implementation.
An entry point is how a build finds the template package without the user importing
it and without an import from the compiler upwards; the template package's own entry
point is `search_spaces.strategies:register`. When the group has no entry point at all
(the package was not installed with its metadata), the first build warns once
(NoStrategiesWarning) instead of quietly scheduling every kernel with compiler.ops.

Probing: a pass that must choose between implementations of one op before the build
(AlterOpLayout: keep a convolution in NCHW or pack it; AnnotateTarget: give a dense to
a library or keep it, library_wins) asks the strategies inside `with probing():`. A
strategy then reports in `info` what the dispatch contexts know of the workload
(ApplyHistoryBest: its best record, without applying it, warning or remembering the
question) and applies no config: the probed workload is no kernel of the build unless
it wins.
"""
from __future__ import annotations

import threading
import warnings
from collections.abc import Callable
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from importlib.metadata import entry_points

from ..errors import BuildError
from ..lang.tensor import Tensor
from ..schedule.schedule import Schedule
from .expr import Call

ENTRY_POINT_GROUP = "autosched.strategies"

NO_TEMPLATE = {"template": None, "workload": None, "config": None, "fallback": None}
"""The `info` of a kernel that no strategy scheduled (compiler.ops' schedules)."""


class StrategyError(BuildError):
    """An entry point of "autosched.strategies" failed to load or to register; the
    message names it."""


class NoStrategiesWarning(UserWarning):
    """No entry point of "autosched.strategies" is installed: no template schedules a
    kernel, which a user expecting tuned kernels must hear about."""


@dataclass(frozen=True, eq=False)
class Implementation:
    """One way to compute and schedule an anchor op: what a strategy returns.

    name: the template's name.
    compute: `compute(inputs)`: the anchor's te tensor from the te tensors of its
        arguments (in the call's order); it may add stages of its own (a padded input,
        a packed weight).
    schedule: `schedule(out)`: the Schedule of the whole kernel whose final output is
        `out`, the anchor being the tensor `compute` returned: the elementwise and
        broadcast tail between them inlined, `out` tiled as the template's output.
    info: what was chosen, as plain JSON (it goes into the executor's plan and its
        profile): {"template": name, "workload": the workload as text, "config": the
        config in short, "fallback": True when the config is the template's fallback},
        and what the choosing dispatch context says of its config (ApplyHistoryBest:
        "record", "record_seconds", "record_gflops", "confirmed", "tier").
    workload: (template name, bound arguments): the workload the dispatch context was
        asked about, which is what whole-model tuning makes a task of.
    library: the external codegen that computes the op when this implementation is a
        library's ("cblas"): a candidate that tuning measures and the log compares with
        the tuned kernels (library_wins), never a te kernel of the build (its compute
        and schedule are not called).
    """
    name: str
    compute: Callable[[list[Tensor]], Tensor]
    schedule: Callable[[Tensor], Schedule]
    info: dict = field(default_factory=dict)
    workload: tuple | None = None
    library: str | None = None


@dataclass(frozen=True)
class _Strategy:
    fn: Callable[[Call], Implementation | None]
    plevel: int


_STRATEGIES: dict[str, list[_Strategy]] = {}
_loaded: set[str] = set()   # entry points loaded without error
_all_loaded = False          # every entry point is in _loaded: no need to look again
_lock = threading.RLock()


def register_strategy(op_name: str, fn: Callable[[Call], Implementation | None],
                      plevel: int = 10) -> None:
    """Register `fn(call) -> Implementation | None` as a strategy of graph op `op_name`.

    plevel: its priority (default 10): select_implementation asks the highest first;
        on equal plevels, the one registered first.
    Registering the same function again for the same op replaces it (a module loaded
    twice does not ask twice).
    """
    if not callable(fn):
        raise TypeError(f"register_strategy({op_name!r}): fn must be callable, got {fn!r}")
    with _lock:
        entries = [s for s in _STRATEGIES.get(op_name, []) if s.fn is not fn]
        entries.append(_Strategy(fn, int(plevel)))
        entries.sort(key=lambda s: -s.plevel)  # stable: first registered first on ties
        _STRATEGIES[op_name] = entries


def load_strategies() -> None:
    """Call every entry point of ENTRY_POINT_GROUP not loaded yet (once per process; the
    first select_implementation does it). A StrategyError names an entry point that
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


_PROBING: ContextVar[bool] = ContextVar("autosched_strategy_probing", default=False)


@contextmanager
def probing():
    """`with probing():` select_implementation answers what the strategies know of an
    implementation (see the module docstring) instead of configuring a kernel."""
    token = _PROBING.set(True)
    try:
        yield
    finally:
        _PROBING.reset(token)


def is_probing() -> bool:
    """Whether the strategies are asked inside `probing()` (they read it)."""
    return _PROBING.get()


def select_implementation(call: Call) -> Implementation | None:
    """The implementation of the highest-plevel strategy of `call`'s op that covers the
    typed `call` with a te kernel (a library's is no kernel of the build), or None when
    none does (or none is registered)."""
    load_strategies()
    for strategy in _STRATEGIES.get(call.op.name, []):
        impl = strategy.fn(call)
        if impl is not None and impl.library is None:
            return impl
    return None


def probe(call: Call) -> list[Implementation]:
    """Every implementation the strategies of `call`'s op offer for it, libraries' too,
    asked inside probing(): what the log knows of each is in its info
    ("record_seconds" when it has a record)."""
    load_strategies()
    with probing():
        found = [strategy.fn(call) for strategy in _STRATEGIES.get(call.op.name, [])]
    return [impl for impl in found if impl is not None]


TIERS = ("target", "cpu", "vector width")
"""ApplyHistoryBest's tiers of a record (describe()'s "tier"), nearest first."""


def library_wins(calls: list[Call], library: str) -> bool:
    """Whether `library` should compute the op of `calls` (one call, and the forms the
    build may turn it into: a dense on packed weights) by what the log says: when the
    log has a record of a tuned kernel of them, only if it has one of the library's
    that is better: nearer (of this target, else its CPU, else its vector width: times
    are compared within a tier, as AlterOpLayout compares its implementations), then
    faster; when it has none of a tuned kernel, yes (the build was asked to use the
    library, and nothing measured says otherwise)."""
    impls = [impl for call in calls for impl in probe(call)]

    def best(group):
        keys = [(TIERS.index(i.info["tier"]) if i.info.get("tier") in TIERS else len(TIERS),
                 i.info["record_seconds"])
                for i in group if i.info.get("record_seconds") is not None]
        return min(keys) if keys else None
    tuned = best([i for i in impls if i.library is None])
    if tuned is None:
        return True
    mine = best([i for i in impls if i.library == library])
    return mine is not None and mine < tuned
