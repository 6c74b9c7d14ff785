"""Builder: a config of a task to object code, in whatever process Ray runs it in.

A library's template (search_spaces/library.py) builds the library's kernel on the
template's tensors instead of its schedule.

`build_candidate` never raises for a bad candidate: the template rejecting the config is
INSTANTIATION_ERROR, anything failing in schedule, lowering or LLVM is COMPILE_ERROR, each
with the message a user needs. A candidate that crashes or hangs the compiler is the
Measurer's business (it kills the Ray worker).

A candidate built before anywhere on the machine, by tuning or not, is a look-up in the
compile cache (compiler/disk_cache.py): its key is the template, the workload, the
config and compiler.build.build_key (the target, the pass context, the source of the
compiler and of the template's package, LLVM's version).
"""
from __future__ import annotations

import json
import os
import sys
import time
import warnings

import compiler
from compiler import disk_cache
from compiler.build import build_key
from records import MeasureErrorNo
from search_spaces import ConfigEntity

from .task import Task

MAX_MESSAGE = 2000  # characters of an error message kept in a result


def error_message(err: BaseException) -> str:
    """`Type: message`, cut to MAX_MESSAGE characters."""
    text = f"{type(err).__name__}: {err}"
    return text if len(text) <= MAX_MESSAGE else text[:MAX_MESSAGE] + " ..."


def build_candidate(spec: dict, config: dict, cache: bool = True) -> dict:
    """Instantiate the config (`ConfigEntity.to_json()`) of the task `spec` (`Task.spec()`)
    and compile it, or take it from the compile cache (`cache`). Returns {"error_no",
    "error_msg", "object" (bytes or None), "build_time"}."""
    start = time.perf_counter()

    def failed(code: MeasureErrorNo, err: BaseException) -> dict:
        return {"error_no": int(code), "error_msg": error_message(err), "object": None,
                "build_time": time.perf_counter() - start}

    task = Task.from_spec(spec)
    key = candidate_key(task, config) if cache else None
    found = disk_cache.load(key) if key else None
    if found is not None:
        return {"error_no": int(MeasureErrorNo.NO_ERROR), "error_msg": "", "object": found[1],
                "build_time": time.perf_counter() - start}
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
    if key:
        disk_cache.store(key, {"template": task.template.name}, obj)
    return {"error_no": int(MeasureErrorNo.NO_ERROR), "error_msg": "", "object": obj,
            "build_time": time.perf_counter() - start}


def candidate_key(task: Task, config: dict) -> str | None:
    """The compile cache's key of a config of `task` (see the module docstring), or None
    when the cache is off."""
    top = sys.modules.get(task.template.fn.__module__.partition(".")[0])
    source = getattr(top, "__file__", None)
    if source is None:  # a template made where no file holds its code
        return None
    if hasattr(top, "__path__"):  # a package: all of its folder
        source = os.path.dirname(source)
    context = build_key(task.target, [os.path.abspath(source)])
    if context is None:
        return None
    return disk_cache.cache_key(context, "candidate", task.template.name,
                                json.dumps([task.args, config], sort_keys=True, default=repr))

