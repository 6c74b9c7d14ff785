"""The chooser: which candidate implements a call, with which config (TVM's dispatch
context and select_implementation in one question). Every decision of that kind asks it:
lowering (which schedules a kernel), AlterOpLayout and the layout planner (keep a call as
it stands or alter it into one of its forms: the candidates of each), the cblas codegen
(give a call to the library or keep a tuned kernel) and `autosched log best` (what the
build applies), so the build and the command line cannot disagree.

A chooser answers `choose(candidates, target) -> Choice | None`; None leaves the choice
to the chooser entered before it, and the default below them all takes the candidate of
the highest priority (the first on a tie) with its fallback config. Choosers are entered
with `with`: one stack per thread (a context variable), so that one thread's `with` does
not change what another's build gets. The compiler knows no log: records.ApplyHistoryBest
is the chooser that answers from one, and the only owner of how records compare (its
tiers); a Choice carries its typed Report.
"""
from __future__ import annotations

import contextvars
import dataclasses
from dataclasses import dataclass

from ...target import Target
from ..ir.expr import Call
from . import Candidate, candidates

_STACK: contextvars.ContextVar = contextvars.ContextVar("autosched_choosers", default=())


@dataclass(frozen=True)
class Report:
    """What the log says of the record a choice applies: its id, its time in seconds
    (the confirmed one when confirmed), its GFLOPS at that time, whether a confirmation
    ranked it, and its tier (how near the target it was tuned for is to the build's)."""
    record: int
    seconds: float
    gflops: float | None
    confirmed: bool
    tier: str

    def as_json(self) -> dict:
        """The keys a build's plan and profile show."""
        return {"record": self.record, "record_seconds": self.seconds,
                "record_gflops": self.gflops, "confirmed": self.confirmed, "tier": self.tier}


@dataclass(frozen=True, eq=False)
class Choice:
    """A candidate, the config it is built with, and the report of the record that gave
    the config (None: no record, the candidate's fallback)."""
    candidate: Candidate
    config: object
    report: Report | None = None

    def info(self) -> dict:
        """What the build's plan and profile show of the choice, as plain JSON."""
        return {**self.candidate.info(self.config),
                **(self.report.as_json() if self.report else {})}


class Chooser:
    """Base of the choosers; `with chooser:` makes it the innermost on this thread until
    the block ends. Subclasses implement `choose`."""

    def choose(self, candidates: list[Candidate], target: Target,
               applies: bool = True) -> Choice | None:
        """The choice among `candidates` for `target`, or None to leave it to the
        choosers entered before this one. `applies`: whether a kernel is built with it
        (False: a decision between forms of a call, which lowering asks about again):
        only an applied choice may warn of a missing record or be remembered."""
        return None

    def __enter__(self):
        _STACK.set(_STACK.get() + (self,))
        return self

    def __exit__(self, *exc_info):
        stack = _STACK.get()
        if not stack or stack[-1] is not self:
            raise RuntimeError("choosers must be left in the reverse order of entering")
        _STACK.set(stack[:-1])


def entered() -> tuple:
    """The choosers entered on this thread, outermost first."""
    return _STACK.get()


def default_choice(found: list[Candidate]) -> Choice:
    """The candidate of the highest priority (the first on a tie) with its fallback."""
    best = max(found, key=lambda c: c.priority)  # max keeps the first of equals
    return Choice(best, best.fallback())


def choose(found: list[Candidate], target: Target | None = None,
           applies: bool = True) -> Choice:
    """The innermost entered chooser's answer for `found`, else the default's
    (`applies`: see Chooser.choose)."""
    target = Target.resolve(target)
    for chooser in reversed(_STACK.get()):
        choice = chooser.choose(found, target, applies)
        if choice is not None:
            return choice
    return default_choice(found)


def implementations(call: Call, forms=(), target: Target | None = None,
                    libraries=()) -> list[Candidate]:
    """The candidates of each of `forms` (of the typed `call`, op/layout.py FORMS_ATTR:
    the ways AlterOpLayout may alter it), in that order, then of `call` as it stands:
    what every decision about a call puts to the chooser, in its order of preference on
    a tie. `libraries`: the external codegens the build was asked to use; their
    candidates join, preferred while nothing is logged (the highest priority) and last
    on a tie of records."""
    found = [c for form in (*forms, None) for c in candidates(call, target, libraries, form)]
    top = max(c.priority for c in found) + 1
    found = [dataclasses.replace(c, priority=top) if c.library else c for c in found]
    return sorted(found, key=lambda c: c.library is not None)


def choose_implementation(call: Call, forms=(), target: Target | None = None,
                          libraries=(), applies: bool = True) -> Choice:
    """The one question every decision asks: how the typed `call` runs, among its
    implementations (its candidates and those of its `forms`); the chosen candidate's
    `form` says whether AlterOpLayout alters it, and into what. Asked by AlterOpLayout
    and the layout planner (with the forms), lowering (the call as the passes left it),
    the cblas codegen and `autosched log best`, so that they cannot disagree.
    `applies`: see Chooser.choose."""
    return choose(implementations(call, forms, target, libraries), target, applies)
