"""The tuners by name: what `tune(tuner="xgb")`, the TaskScheduler and `autosched tune
--tuner` choose from, and the name a run is logged under."""
from __future__ import annotations

from .ga_tuner import GATuner
from .grid_search_tuner import GridSearchTuner
from .random_tuner import RandomTuner
from .task import Task
from .tuner_base import Tuner


def _xgb_tuner(task: Task, seed: int | None = None) -> Tuner:
    # imported on use: xgboost takes a while to import and the other tuners never need it
    from .xgb_tuner import XGBTuner
    return XGBTuner(task, seed=seed)


# tuner name -> make(task, seed=...) -> Tuner
TUNERS = {"random": RandomTuner, "grid": GridSearchTuner, "ga": GATuner, "xgb": _xgb_tuner}


def _for(task: Task, name: str) -> str:
    """The tuner of kind `name` for `task`, but the grid for a space of one config (a
    library's template: nothing to search, its one config is measured once)."""
    return "grid" if len(task.config_space) == 1 else name


def make_tuners(tuner, tasks: list[Task], seed: int | None = None) -> list[Tuner]:
    """One Tuner for each of `tasks`, in order.

    tuner: a name in TUNERS (one tuner of that kind per task, made with `seed`; a task
      whose space has one config gets the grid), or a list of Tuners, one made for each
      task. A ValueError says what does not fit.
    """
    if isinstance(tuner, str):
        if tuner not in TUNERS:
            raise ValueError(f"unknown tuner {tuner!r}; choose one of "
                             f"{', '.join(map(repr, TUNERS))} or pass a Tuner")
        return [TUNERS[_for(task, tuner)](task, seed=seed) for task in tasks]
    tuners = list(tuner)
    if len(tuners) != len(tasks) or not all(isinstance(t, Tuner) for t in tuners):
        raise ValueError(f"expected a tuner name or one Tuner per task ({len(tasks)}), "
                         f"got {tuner!r}")
    for made, task in zip(tuners, tasks):
        if made.task != task:
            raise ValueError(f"the tuner was made for {made.task}, not for {task}")
    return tuners


def tuner_name(tuner: Tuner) -> str:
    """What a run of `tuner` is logged under: its name in TUNERS (`Tuner.name`), or the
    class's name for a tuner of another kind."""
    return tuner.name or type(tuner).__name__
