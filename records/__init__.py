"""The tuning log: measured configs in one SQLite file, best-config lookup at build time,
JSON lines import / export (DESIGN.md: tuner -> records -> search_spaces -> compiler; this
layer never imports Ray or a tuner).

    db = records.Database("tune.db")
    db.add(task, inputs, results)            # one transaction per measured batch
    db.best(task)                            # Record: .config, .mean_cost, .gflops
    with records.ApplyHistoryBest("tune.db"):
        s, args = search_spaces.instantiate("matmul", 1024, 1024, 1024)
"""
from .apply_history_best import ApplyHistoryBest, FallbackWarning
from .database import Database, TaskSummary
from .errors import RecordsError
from .jsonl import ImportReport, export_jsonl, import_jsonl, merge
from .record import Record
from .schema import SCHEMA_VERSION

__all__ = ["Database", "Record", "RecordsError", "TaskSummary", "SCHEMA_VERSION",
           "ApplyHistoryBest", "FallbackWarning", "ImportReport", "export_jsonl",
           "import_jsonl", "merge"]
