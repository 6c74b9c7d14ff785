"""The tuner: tasks, measurement on Ray (parallel builds, one timing at a time per host,
every candidate checked against numpy), the tuners and their XGBoost cost model
(docs/architecture.md: tuner -> records -> search_spaces -> compiler).

    from tuner import Task, tune
    task = Task("matmul", (512, 512, 512))
    result = tune(task, trials=64, tuner="xgb", db="tune.db")   # resumes from the log
    print(result.best_gflops, result.best_config)
"""
from records import MeasureErrorNo

from .extract import extract_tasks
from .ga_tuner import GATuner
from .grid_search_tuner import GridSearchTuner
from .measure import MeasureInput, MeasureResult
from .measurer import Measurer
from .options import TuningOptions
from .random_tuner import RandomTuner
from .task import Task
from .task_scheduler import StopTuning, TaskScheduler
from .tune import TuneResult, tune
from .tuner_base import Tuner

__all__ = ["Task", "TuningOptions", "extract_tasks", "MeasureInput", "MeasureResult",
           "MeasureErrorNo", "Measurer", "tune", "TuneResult", "TaskScheduler", "StopTuning",
           "Tuner", "RandomTuner", "GridSearchTuner", "GATuner", "XGBTuner"]


def __getattr__(name):
    """XGBTuner on first use: importing xgboost takes most of a second."""
    if name == "XGBTuner":
        from .xgb_tuner import XGBTuner
        return XGBTuner
    raise AttributeError(f"module 'tuner' has no attribute {name!r}")
