"""The workload key: how the log names a workload (a template and its bound arguments).

Tasks are stored, exported and looked up at build time by this text, so it is spelled in
one place: the tuner's Task, ApplyHistoryBest and the JSON lines check all call this.
"""
from __future__ import annotations

import json


def workload_key(template: str, args) -> str:
    """The workload as JSON text, e.g. '["matmul", [1024, 1024, 1024, "float32"]]'."""
    return json.dumps([template, list(args)])
