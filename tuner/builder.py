"""Builder: a config of a task to object code, in whatever process Ray runs it in.

A library's template (search_spaces/library.py) builds the library's kernel on the
template's tensors instead of its schedule.

`build_candidate` never raises for a bad candidate: the template rejecting the config is
INSTANTIATION_ERROR, anything failing in schedule, lowering or LLVM is COMPILE_ERROR, each
with the message a user needs. A candidate that crashes or hangs the compiler is the
Measurer's business (it kills the Ray worker).
"""
from __future__ import annotations

import time
import warnings

import compiler
from records import MeasureErrorNo
from search_spaces import ConfigEntity

from .task import Task

MAX_MESSAGE = 2000  # characters of an error message kept in a result


def error_message(err: BaseException) -> str:
    """`Type: message`, cut to MAX_MESSAGE characters."""
    text = f"{type(err).__name__}: {err}"
    return text if len(text) <= MAX_MESSAGE else text[:MAX_MESSAGE] + " ..."


def build_candidate(spec: dict, config: dict) -> dict:
    """Instantiate the config (`ConfigEntity.to_json()`) of the task `spec` (`Task.spec()`)
    and compile it. Returns {"error_no", "error_msg", "object" (bytes or None),
    "build_time"}."""
    start = time.perf_counter()

    def failed(code: MeasureErrorNo, err: BaseException) -> dict:
        return {"error_no": int(code), "error_msg": error_message(err), "object": None,
                "build_time": time.perf_counter() - start}

    task = Task.from_spec(spec)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a refused vectorize is the template's business
        try:
            cfg = ConfigEntity.from_json(task.config_space, config)
            sch, tensors = task.instantiate(cfg)
        except Exception as err:  # noqa: BLE001 - whatever the template raises is its verdict
            return failed(MeasureErrorNo.INSTANTIATION_ERROR, err)
        try:
            if task.template.library is not None:  # a library's kernel, not the schedule
                obj = task.template.library(task.args, tensors, task.target)
            else:
                obj = compiler.build_object(sch, tensors, target=task.target)
        except Exception as err:  # noqa: BLE001
            return failed(MeasureErrorNo.COMPILE_ERROR, err)
    return {"error_no": int(MeasureErrorNo.NO_ERROR), "error_msg": "", "object": obj,
            "build_time": time.perf_counter() - start}
