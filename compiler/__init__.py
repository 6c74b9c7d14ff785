"""autosched's compiler: tensor expressions, schedules, bound inference, loop IR, passes,
native code through LLVM, and the runtime module.

    import compiler
    from compiler import te
    s = te.create_schedule(C.op)
    print(compiler.lower(s, [A, B, C]))
    f = compiler.build(s, [A, B, C])          # host CPU, all cores
    f(a, b, c)

This is the top floor (docs/architecture.md): it is the one place that registers the
external codegens of compiler/contrib, so that every graph build, and every load of a
saved model holding their modules, finds them.
"""
from . import contrib, runtime, te, transform
from .build import build, build_object, lower
from .errors import BuildError, LowerError, ModuleFormatError, ScheduleError
from .schedule.bound import infer_bound
from .target import Target

contrib.register()

__all__ = ["te", "transform", "runtime", "lower", "build", "build_object", "infer_bound", "Target",
           "ScheduleError", "LowerError", "BuildError", "ModuleFormatError"]
