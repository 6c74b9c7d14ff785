"""ApplyHistoryBest: the dispatch context that gives each template the best config of the
tuning log (AutoTVM's `ApplyHistoryBest`).

    with records.ApplyHistoryBest("tune.db"):
        s, args = search_spaces.instantiate("matmul", 1024, 1024, 1024)

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

from .database import Database
from .errors import RecordsError


class FallbackWarning(UserWarning):
    """A workload has no usable record in the log, so it is not tuned."""


class ApplyHistoryBest(search_spaces.DispatchContext):
    """`with ApplyHistoryBest(log, target="llvm"):` templates get the best config of the
    tuning log for `target` (see the module docstring for which record that is).

    log: a path (opened as a records.Database, closed when the context is left) or an
        open records.Database (left open). A path that does not exist, is not SQLite or
        is not an autosched log is a RecordsError here, not at the first build.
    target: the target the code is built for (a compiler.Target or a string); default
        "llvm", this host.

    A workload without a usable record is answered None (outer contexts, and finally
    the FallbackConfig, decide), with one FallbackWarning per workload.
    """

    def __init__(self, log, target="llvm"):
        if isinstance(log, Database):
            self.database, self._owns = log, False
        else:
            path = os.fspath(log)
            if not os.path.exists(path):
                raise RecordsError(f"{path}: no tuning log there (ApplyHistoryBest reads a "
                                   f"log and never creates one)")
            self.database, self._owns = Database(path), True
        self.path = self.database.path
        self.target = Target(target)
        self._best: dict[tuple, search_spaces.ConfigEntity | None] = {}
        self._records: dict[tuple, object] = {}   # workload -> the Record applied
        self._depth = 0

    def query(self, workload) -> search_spaces.ConfigEntity | None:
        """The best logged config of `workload` (template name, bound arguments) or of a
        task (anything with a `.workload`, as tuner.Task) for this context's target, or
        None when the log has no usable record of it."""
        workload = getattr(workload, "workload", workload)
        if workload not in self._best:
            record = self.database.best_for_target(workload, self.target)
            config = None if record is None else record.config
            if config is not None:
                self._records[workload] = record
            if config is None:
                name, args = workload
                warnings.warn(FallbackWarning(
                    f"{name}{args}: {self.path} has no valid record of this workload made "
                    f"with the current template version for target '{self.target}' (nor for "
                    f"its CPU or vector width); the untuned fallback config is used, unless "
                    f"an outer dispatch context gives one"), stacklevel=4)
            self._best[workload] = config
        return self._best[workload]

    def describe(self, workload) -> dict | None:
        """The record that `query` applies to `workload`: {"record": its id,
        "record_seconds": its time (the confirmed one when confirmed), "record_gflops":
        at that time, "confirmed": whether a confirmation ranked it, "tier": whose target
        it was tuned for (see _said)}; None when it applies none."""
        record = self._records.get(getattr(workload, "workload", workload))
        return None if record is None else self._said(record)

    def logged(self, workload) -> dict | None:
        """What `describe` would say of `workload` had `query` applied its record, read
        without applying, warning or remembering it (a build probing an implementation
        it may not use, compiler.graph.strategy.probing); None when the log has no
        usable record of it."""
        workload = getattr(workload, "workload", workload)
        record = self._records.get(workload)
        if record is None and workload not in self._best:
            record = self.database.best_for_target(workload, self.target)
        return None if record is None else self._said(record)

    def _said(self, record) -> dict:
        """describe's answer for `record`; "tier": how near its task's target is to this
        context's: "target" (the same), "cpu" (the same CPU) or "vector width"."""
        tier = "target" if record.target == str(self.target) else \
            "cpu" if Target(record.target).mcpu == self.target.mcpu else "vector width"
        return {"record": record.id, "record_seconds": record.cost,
                "record_gflops": record.best_gflops, "confirmed": record.confirmed,
                "tier": tier}

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
