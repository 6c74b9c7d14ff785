"""Connecting to Ray: an embedded local instance started on demand, or a cluster.

Timing hosts are found by a custom Ray resource named after the target CPU
(`timing_resource`): a node that may time candidates for `-mcpu=rocketlake` advertises
`autosched-timing-rocketlake` (`ray start --resources '{"autosched-timing-rocketlake": 1}'`),
so on a cluster every candidate is timed on matching hardware while builds go anywhere.
The embedded instance advertises the resource of this machine's CPU.
"""
from __future__ import annotations

import atexit
import logging
import os
import threading

_lock = threading.Lock()


class RayConnectionError(ConnectionError):
    """The Ray cluster at the given address could not be joined."""


def timing_resource(target) -> str:
    """The custom resource a node advertises to time candidates for `target`."""
    return f"autosched-timing-{target.mcpu}"


def connect(address: str | None = None) -> bool:
    """Make sure this process is connected to Ray; returns True if it started Ray.

    address None: reuse a connection this process already has, else start a local
    instance (this machine's cores, no dashboard, quiet), shut down at exit.
    "auto" or "host:port": join that cluster.
    """
    import ray
    from compiler import Target

    with _lock:
        if ray.is_initialized():
            return False
        quiet = {"include_dashboard": False, "logging_level": logging.ERROR,
                 "log_to_driver": False}
        if address is None:
            # Ray starts workers at niceness 15 so that its own daemons come first; a
            # runner timing at that priority loses the core to any of them.
            os.environ.setdefault("RAY_worker_niceness", "0")
            ray.init(num_cpus=len(os.sched_getaffinity(0)),
                     resources={timing_resource(Target("llvm")): 1}, **quiet)
        else:
            try:
                ray.init(address=address, **quiet)
            except Exception as err:  # noqa: BLE001 - Ray raises several kinds here
                raise RayConnectionError(
                    f"cannot join the Ray cluster at {address!r}: {err}") from None
        atexit.register(ray.shutdown)
        return True
