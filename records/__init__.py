"""The tuning log: measured configs in one SQLite file, best-config lookup at build time,
JSON lines import / export (docs/architecture.md: tuner -> records -> search_spaces ->
compiler; this layer never imports Ray or a tuner).

    db = records.Database("tune.db")
    db.add(task, inputs, results)            # one transaction per measured batch
    db.best(task)                            # Record: .config, .mean_cost, .gflops
    records.export_jsonl(db, "log.jsonl")    # and import_jsonl, merge
    with records.ApplyHistoryBest("tune.db"):
        s, args = search_spaces.instantiate("matmul", 1024, 1024, 1024)

The facts the log shares with the tuner live here, once: the error codes
(MeasureErrorNo), the workload key, and the mean cost and GFLOPS of a measurement.
"""
from .apply_history_best import ApplyHistoryBest, FallbackWarning
from .database import Database
from .error_codes import MeasureErrorNo, error_name
from .errors import RecordsError
from .jsonl import ImportReport, export_jsonl, import_jsonl, merge
from .metrics import gflops, mean_cost
from .record import Record, TaskSummary
from .schema import SCHEMA_VERSION
from .workload import workload_key

__all__ = ["Database", "Record", "RecordsError", "TaskSummary", "SCHEMA_VERSION",
           "ApplyHistoryBest", "FallbackWarning", "ImportReport", "export_jsonl",
           "import_jsonl", "merge", "MeasureErrorNo", "error_name", "gflops", "mean_cost",
           "workload_key"]
