"""Record: one measured config of one task, as the log holds it (plain data).

`.config` turns the stored knob values back into a ConfigEntity of the template's space
as it is now; a record whose knobs no longer fit that space raises SpaceError there, and
`.stale` says whether the record was made with an older version of the template.
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass

import search_spaces

ERROR_NAMES = ["NO_ERROR", "INSTANTIATION_ERROR", "COMPILE_ERROR", "COMPILE_TIMEOUT",
               "RUNTIME_ERROR", "RUN_TIMEOUT", "WRONG_ANSWER", "WORKER_CRASH", "UNKNOWN"]


def error_name(error_no: int) -> str:
    """The MeasureErrorNo name of a stored error code (the records layer does not import
    the tuner)."""
    return ERROR_NAMES[error_no] if 0 <= error_no < len(ERROR_NAMES) else f"ERROR_{error_no}"


@dataclass(frozen=True)
class Record:
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
    def from_row(cls, row: dict) -> "Record":
        """A Record from a row of `records` joined with its task's template, args, target."""
        return cls(
            id=row["id"], template=row["template"], args=_tuple(json.loads(row["args"])),
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
        return self.error_no == 0

    @property
    def error_name(self) -> str:
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


def _tuple(value):
    """JSON lists back to the tuples that workloads are made of."""
    return tuple(_tuple(v) for v in value) if isinstance(value, list) else value
