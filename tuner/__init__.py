"""The tuner: tasks, measurement on Ray (parallel builds, one timing at a time per host,
every candidate checked against numpy), and, in later issues, the search and the command
line (DESIGN.md: tuner -> records -> search_spaces -> compiler).

    from tuner import Task, MeasureInput, Measurer
    task = Task("matmul", (512, 512, 512))
    with Measurer() as m:                       # starts a local Ray on demand
        results = m.measure([MeasureInput(task, c) for c in task.config_space.sample(8, seed=0)])
"""
from .measure import MeasureErrorNo, MeasureInput, MeasureResult
from .measurer import Measurer
from .task import Task

__all__ = ["Task", "MeasureInput", "MeasureResult", "MeasureErrorNo", "Measurer"]
