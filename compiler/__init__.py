"""autosched's compiler: tensor expressions, schedules, bound inference, loop IR.

    import compiler
    from compiler import te
    s = te.create_schedule(C.op)
    print(compiler.lower(s, [A, B, C]))
"""
from . import te
from .build import lower
from .errors import LowerError, ScheduleError
from .schedule.bound import infer_bound

__all__ = ["te", "lower", "infer_bound", "ScheduleError", "LowerError"]
