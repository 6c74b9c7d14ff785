"""MeasureErrorNo: why a measured candidate has no time, the code the log stores for it.

The codes are part of the log's format (a record keeps the integer, a JSON line its name
too), so they live here, in the lowest layer that needs them; the tuner measures with
them and imports them from here.
"""
from __future__ import annotations

import enum


class MeasureErrorNo(enum.IntEnum):
    """Why a candidate has no time; stored as its integer value."""
    NO_ERROR = 0
    INSTANTIATION_ERROR = 1  # the template rejects the config
    COMPILE_ERROR = 2        # schedule, lowering or LLVM failed
    COMPILE_TIMEOUT = 3
    RUNTIME_ERROR = 4        # the kernel returned an error or could not be loaded
    RUN_TIMEOUT = 5
    WRONG_ANSWER = 6         # outputs differ from the numpy reference
    WORKER_CRASH = 7         # the process building or running it died (a segfault)
    UNKNOWN = 8


def error_name(error_no: int) -> str:
    """The MeasureErrorNo name of a stored error code; `ERROR_<n>` for a code this
    autosched does not know (a log written by a newer one), so that it can still be shown."""
    try:
        return MeasureErrorNo(error_no).name
    except ValueError:
        return f"ERROR_{error_no}"
