"""BatchEncoder: a measured batch as the rows of `records` that the log stores.

Encoding is done before a write transaction is taken (the lock is held for the INSERT
only), and it is where the log's numbers come from: the mean cost and GFLOPS of
records.metrics, the uid of records.schema.
"""
from __future__ import annotations

import json
import math

from . import schema
from .metrics import gflops, mean_cost


class BatchEncoder:
    """Turns measured batches into `records` rows; keeps the JSON text of each knob
    value per space (by fingerprint): a space has far fewer knob values than configs,
    and encoding every config anew was most of the time that Database.add took."""

    def __init__(self):
        self._knob_texts: dict[str, dict] = {}

    def rows(self, task, inputs, results, tuner: str | None, run_id: int | None,
             roles=None) -> list[dict]:
        """The `records` rows (schema.RECORD_COLUMNS) of one measured batch of `task`
        (MeasureInputs and their MeasureResults, whose `ratio` and `scaled_cost` are
        stored when they have them; a result without a scaled cost is its own scale);
        roles: one of schema.ROLES per input (default: every one a "trial"). Each row's
        task_id is left None for the caller to fill in once it holds the write lock."""
        key, target, flop = task.workload_key, str(task.target), task.flop  # once per batch
        roles = ["trial"] * len(inputs) if roles is None else list(roles)
        if len(roles) != len(inputs) or not set(roles) <= set(schema.ROLES):
            raise ValueError(f"add: roles must be one of {', '.join(schema.ROLES)} per input, "
                             f"got {roles!r}")
        rows = []
        for inp, res, role in zip(inputs, results, roles):
            config = inp.config
            config_text = self._config_text(config)
            costs = schema.costs_text(res.costs)
            error_no = int(res.error_no)
            mean = mean_cost(res.costs, error_no)
            ok = math.isfinite(mean)
            scaled = getattr(res, "scaled_cost", None)
            ratio = getattr(res, "ratio", None)
            uid = schema.record_uid(key, target, config_text, res.timestamp, res.host, costs,
                                    error_no)
            rows.append({
                "task_id": None, "config": config_text, "config_index": config.index,
                "template_version": config.template_version, "costs": costs,
                # NULL, never inf, for a measurement without a time: best() skips it
                "mean_cost": mean if ok else None,
                "gflops": gflops(flop, mean), "error_no": error_no,
                "error_msg": res.error_msg, "build_time": res.build_time,
                "run_time": getattr(res, "run_time", None),
                "verify_time": getattr(res, "verify_time", None),
                "timestamp": res.timestamp, "host": res.host, "tuner": tuner,
                "run_id": run_id, "uid": uid, "role": role,
                "ratio": ratio if ok else None,
                "scaled_cost": (mean if scaled is None else scaled) if ok else None})
        return rows

    def _config_text(self, config) -> str:
        """`json.dumps(config.to_json()["knobs"])`, put together from the JSON text of
        each knob's value."""
        space = config.space
        texts = self._knob_texts.setdefault(space.fingerprint, {})
        parts = []
        for (name, knob), i in zip(space.space_map.items(), config.knob_indices):
            text = texts.get((name, i))
            if text is None:
                text = texts[name, i] = f"{json.dumps(name)}: {json.dumps(knob[i].to_json())}"
            parts.append(text)
        return "{" + ", ".join(parts) + "}"
