"""ApplyHistoryBest: the dispatch context that gives each template the best config of the
tuning log (AutoTVM's `ApplyHistoryBest`).

    with records.ApplyHistoryBest("tune.db"):
        s, args = search_spaces.instantiate("matmul", 1024, 1024, 1024)

It is also the chooser of a graph build (compiler.graph.strategy.chooser): among a call's
candidates it takes the one whose record is nearest the build's target (TIERS), then
fastest; this is the one place where records are compared, for lowering, AlterOpLayout,
the cblas codegen and `autosched log best` alike.

Which record: the valid one (no error, a time) with the lowest mean cost among the
records of the workload made with the template's current version, looked for in tiers:
the same target, else the same CPU, else the same vector width (the ISA compatibility
class), as `Database.best_for_target` finds it. Records of older template versions are
never applied; a record whose knobs no longer fit the space is skipped with a warning.
One indexed query per tier, and every answer (a miss too) is kept for the life of the
context, since builds ask again and again.
"""
from __future__ import annotations

import os
import warnings

import search_spaces
from compiler import Target
from compiler.graph.strategy.chooser import Choice, Report, default_choice

from .database import Database
from .errors import RecordsError

TIERS = ("target", "cpu", "vector width")
"""How near a record's target is to the build's, nearest first: the same target, the
same CPU, the same vector width. Times are compared only within one tier."""


class FallbackWarning(UserWarning):
    """A workload has no usable record in the log, so it is not tuned."""


def _config(record, target: Target):
    """`record`'s config in the template's space for `target`; None where its knob values
    are not points of that space (a record of another vector unit whose tile does not
    fit this one's registers)."""
    try:
        return record.config_for(target)
    except search_spaces.SpaceError:
        return None


class ApplyHistoryBest(search_spaces.DispatchContext):
    """`with ApplyHistoryBest(log):` templates get the best config of the tuning log for
    the target they are built for (see the module docstring for which record that is),
    and a graph build's chooser picks among a call's candidates by their records.

    log: a path (opened as a records.Database, closed when the context is left) or an
        open records.Database (left open). A path that does not exist, is not SQLite or
        is not an autosched log is a RecordsError here, not at the first build.
    target: the target the records are applied for (a compiler.Target or a string);
        default None: the build's (the target a graph build chooses for, else
        compiler.Target.current(), else "llvm", this host).

    A workload without a usable record is answered None (outer contexts, and finally
    the FallbackConfig, decide), with one FallbackWarning per workload.
    """

    def __init__(self, log, target=None):
        if isinstance(log, Database):
            self.database, self._owns = log, False
        else:
            path = os.fspath(log)
            if not os.path.exists(path):
                raise RecordsError(f"{path}: no tuning log there (ApplyHistoryBest reads a "
                                   f"log and never creates one)")
            self.database, self._owns = Database(path), True
        self.path = self.database.path
        self.target = None if target is None else Target(target)
        self._best: dict[tuple, object] = {}  # (workload, target, built for) -> see _record
        self._applied: dict[tuple, Report] = {}   # workload -> the report of the one applied
        self._warned: set[tuple] = set()
        self._depth = 0

    def _target(self, target=None) -> Target:
        return Target.resolve(target if target is not None else self.target)

    def _record(self, workload: tuple, target: Target, build: Target | None = None):
        """(the best usable record of `workload` for `target` (tiered), its config in the
        space of `build`, the target the template is built for, default `target`: None
        where it does not fit), or None without a record; each answer kept for the life
        of the context."""
        build = target if build is None else build
        key = (workload, str(target), build.vector_unit)
        if key not in self._best:
            record = self.database.best_for_target(workload, target)
            self._best[key] = None if record is None else (record, _config(record, build))
        return self._best[key]

    def report(self, workload, target=None) -> Report | None:
        """What the log says of the best record of `workload` (template name, bound
        arguments) for `target`, without applying or warning: a Report, or None."""
        target = self._target(target)
        found = self._record(getattr(workload, "workload", workload), target)
        return None if found is None else self._said(found[0], target)

    def query(self, workload) -> search_spaces.ConfigEntity | None:
        """The best logged config of `workload` (template name, bound arguments) or of a
        task (anything with a `.workload`, as tuner.Task) for this context's target, or
        None when the log has no usable record of it."""
        workload = getattr(workload, "workload", workload)
        target = self._target()
        # the space of the target the template is built for (instantiate enters it)
        found = self._record(workload, target, Target.current() or target)
        if found is None or found[1] is None:
            self._warn(workload, target)
            return None
        self._applied[workload] = self._said(found[0], target)
        return found[1]

    def choose(self, candidates, target, applies: bool = True) -> Choice | None:
        """Among `candidates`, the one whose best record is nearest the target (this
        context's, else the build's `target`; by TIERS)
        and, in that tier, fastest, with that record's config; None when none has a
        record (the default then takes its fallback, and, when the choice `applies`, a
        FallbackWarning names its workload if it is a kernel of the build)."""
        build, target = target, self.target or target
        logged = []
        for i, c in enumerate(candidates):
            found = None if c.workload is None else self._record(c.workload, target, build)
            if found is not None and found[1] is not None:
                report = self._said(found[0], target)
                logged.append(((TIERS.index(report.tier), report.seconds, i), c, found[1],
                               report))
        if not logged:
            fallback = default_choice(candidates).candidate
            if applies and fallback.workload is not None and fallback.library is None:
                self._warn(fallback.workload, target)
            return None
        _, best, config, report = min(logged, key=lambda found: found[0])
        if applies:
            self._applied[best.workload] = report
        return Choice(best, config, report)

    def describe(self, workload) -> Report | None:
        """The Report of the record this context applied to `workload` (by query or
        choose), None when it applied none."""
        return self._applied.get(getattr(workload, "workload", workload))

    def _warn(self, workload: tuple, target: Target) -> None:
        if (workload, str(target)) in self._warned:
            return
        self._warned.add((workload, str(target)))
        name, args = workload
        warnings.warn(FallbackWarning(
            f"{name}{args}: {self.path} has no valid record of this workload made "
            f"with the current template version for target '{target}' (nor for "
            f"its CPU or vector width); the untuned fallback config is used, unless "
            f"an outer dispatch context gives one"), stacklevel=5)

    def _said(self, record, target: Target) -> Report:
        """The Report of `record`; its tier: how near its task's target is to `target`:
        "target" (the same), "cpu" (the same CPU) or "vector width"."""
        tier = "target" if record.target == str(target) else \
            "cpu" if Target(record.target).mcpu == target.mcpu else "vector width"
        return Report(record.id, record.cost, record.best_gflops, record.confirmed, tier)

    def __enter__(self) -> ApplyHistoryBest:
        if self._owns and self.database is None:  # entered again after being left
            self.database = Database(self.path)
        self._depth += 1
        return super().__enter__()

    def __exit__(self, *exc_info):
        super().__exit__(*exc_info)
        self._depth -= 1
        if self._owns and self._depth == 0:
            self.database.close()
            self.database = None
