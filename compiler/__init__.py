"""autosched's compiler: tensor expressions, schedules, bound inference, loop IR, passes,
native code through LLVM, and the runtime module.

    import compiler
    from compiler import te
    s = te.create_schedule(C.op)
    print(compiler.lower(s, [A, B, C]))
    f = compiler.build(s, [A, B, C])          # host CPU, all cores
    f(a, b, c)
"""
from . import runtime, te, transform
from .build import build, build_object, lower
from .errors import BuildError, LowerError, ModuleFormatError, ScheduleError
from .schedule.bound import infer_bound
from .target import Target

__all__ = ["te", "transform", "runtime", "lower", "build", "build_object", "infer_bound", "Target",
           "ScheduleError", "LowerError", "BuildError", "ModuleFormatError"]
