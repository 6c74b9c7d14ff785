"""Record: one measured config of one task, as the log holds it, and TaskSummary, one
task of the log summed up (plain data).

A record of a confirmed task carries its place in the confirmed ranking: `confirmed_rank`,
`confirmed_cost` (the median of its re-timings in alternating rounds) and
`confirmed_ratio` (to the fallback's, in the same rounds); `cost` is the figure to show:
the confirmed time when there is one, else the logged mean.

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
    inf for none; gflops; error_no, error_msg; build, run and verify seconds), when,
    where, by which tuner and in which run it was made, its role in its batch ("trial",
    "fallback", "control"), its ratio to the batch's control and its cost on the task's
    scale (scaled_cost, inf for none; what configs are ranked by), and its confirmation
    (see the module docstring; None for none)."""
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
    role: str = "trial"
    ratio: float | None = None
    scaled_cost: float = math.inf
    confirmed_rank: int | None = None
    confirmed_cost: float | None = None
    confirmed_ratio: float | None = None

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
            tuner=row["tuner"], run_id=row["run_id"], role=row.get("role") or "trial",
            ratio=row.get("ratio"),
            scaled_cost=math.inf if row.get("scaled_cost") is None else row["scaled_cost"])

    @property
    def confirmed(self) -> bool:
        """Whether this config was re-timed in the task's latest confirmation."""
        return self.confirmed_cost is not None

    @property
    def cost(self) -> float:
        """Seconds per call to show: the confirmed time, else the logged mean cost."""
        return self.confirmed_cost if self.confirmed_cost is not None else self.mean_cost

    @property
    def best_gflops(self) -> float | None:
        """GFLOPS at `cost` (the confirmed time when there is one), None for none."""
        if self.gflops is None or not math.isfinite(self.mean_cost) or not self.cost:
            return None
        return self.gflops * self.mean_cost / self.cost

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
        """The config in the template's space, as it is now, for the record's target
        (SpaceError if it no longer fits: another version, a knob renamed, a value
        gone)."""
        return self.config_for(self.target)

    def config_for(self, target) -> search_spaces.ConfigEntity:
        """The config in the template's space for `target` (a space may differ with the
        vector unit); SpaceError where its knob values are not points of that space."""
        space = search_spaces.space(self.template, *self.args, target=target)
        return search_spaces.ConfigEntity.from_json(
            space, {"template_version": self.template_version, "knobs": self.knobs})

    def __repr__(self):
        what = f"{self.gflops:.1f} GFLOPS" if self.ok and self.gflops else self.error_name
        return f"Record({self.template}{self.args}, {what}, {self.knobs})"


@dataclass(frozen=True)
class TaskSummary:
    """A task of the log with its record counts and best valid result (current
    template version): the confirmed best and its confirmed time when `confirmed`."""
    id: int
    template: str
    args: tuple
    target: str
    records: int
    errors: int
    stale: int
    best_gflops: float | None
    best_cost: float | None
    confirmed: bool = False


def decode_args(text: str) -> tuple:
    """A task's stored `args` (JSON text of a list) back to the tuple of a workload."""
    return _tuple(json.loads(text))


def _tuple(value):
    """JSON lists back to the tuples that workloads are made of."""
    return tuple(_tuple(v) for v in value) if isinstance(value, list) else value
