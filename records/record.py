"""Record: one measured config of one task, as the log holds it, and TaskSummary, one
task of the log summed up (plain data).

`.config` turns the stored knob values back into a ConfigEntity of the template's space
as it is now; a record whose knobs no longer fit that space raises SpaceError there, and
`.stale` says whether the record was made with an older version of the template.
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass

import search_spaces

from .error_codes import error_name


@dataclass(frozen=True)
class Record:
    """One record of the log: the task (template, args, target), the config as stored
    (knobs, config_index, template_version), what the measurement gave (costs, mean_cost,
    inf for none; gflops; error_no, error_msg; build, run and verify seconds), and when,
    where, by which tuner and in which run it was made."""
    id: int
    template: str
    args: tuple
    target: str
    knobs: dict
    config_index: int | None
    template_version: str
    costs: tuple
    mean_cost: float
    gflops: float | None
    error_no: int
    error_msg: str
    build_time: float | None
    run_time: float | None
    verify_time: float | None
    timestamp: float
    host: str
    tuner: str | None
    run_id: int | None

    @classmethod
    def from_row(cls, row: dict) -> Record:
        """A Record from a row of `records` joined with its task's template, args, target."""
        return cls(
            id=row["id"], template=row["template"], args=decode_args(row["args"]),
            target=row["target"], knobs=json.loads(row["config"]),
            config_index=row["config_index"], template_version=row["template_version"],
            costs=tuple(json.loads(row["costs"])),
            mean_cost=math.inf if row["mean_cost"] is None else row["mean_cost"],
            gflops=row["gflops"], error_no=row["error_no"], error_msg=row["error_msg"] or "",
            build_time=row["build_time"], run_time=row["run_time"],
            verify_time=row["verify_time"], timestamp=row["timestamp"], host=row["host"] or "",
            tuner=row["tuner"], run_id=row["run_id"])

    @property
    def ok(self) -> bool:
        """Whether the measurement succeeded (error_no 0)."""
        return self.error_no == 0

    @property
    def error_name(self) -> str:
        """The MeasureErrorNo name of error_no, e.g. "COMPILE_ERROR"."""
        return error_name(self.error_no)

    @property
    def stale(self) -> bool:
        """Made with another version of the template than the one registered now."""
        return self.template_version != search_spaces.get_template(self.template).version

    @property
    def config(self) -> search_spaces.ConfigEntity:
        """The config in the template's space as it is now (SpaceError if it no longer
        fits: another version, a knob renamed, a value gone)."""
        space = search_spaces.space(self.template, *self.args)
        return search_spaces.ConfigEntity.from_json(
            space, {"template_version": self.template_version, "knobs": self.knobs})

    def __repr__(self):
        what = f"{self.gflops:.1f} GFLOPS" if self.ok and self.gflops else self.error_name
        return f"Record({self.template}{self.args}, {what}, {self.knobs})"


@dataclass(frozen=True)
class TaskSummary:
    """A task of the log with its record counts and best valid result (current
    template version)."""
    id: int
    template: str
    args: tuple
    target: str
    records: int
    errors: int
    stale: int
    best_gflops: float | None
    best_cost: float | None


def decode_args(text: str) -> tuple:
    """A task's stored `args` (JSON text of a list) back to the tuple of a workload."""
    return _tuple(json.loads(text))


def _tuple(value):
    """JSON lists back to the tuples that workloads are made of."""
    return tuple(_tuple(v) for v in value) if isinstance(value, list) else value
