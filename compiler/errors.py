"""Errors a user can cause. Messages name the user's objects (stage, axis, argument)."""


class ScheduleError(ValueError):
    """A schedule primitive was misused; the message names the stage and the axis."""


class LowerError(ValueError):
    """The arguments given to lower() / build() do not fit the schedule."""


class BuildError(RuntimeError):
    """Code generation or LLVM failed for a function; the message names the function."""


class ModuleFormatError(ValueError):
    """A module to load (an exported file, object code) carries metadata that this
    version does not write; the message names the argument and the dimension."""


class FrontendError(ValueError):
    """A model the frontend cannot import: names the file, the node and its op type, the
    input, or the opset, and what to do."""
