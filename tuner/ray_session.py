"""Connecting to Ray: an embedded local instance started on demand, or a cluster.

Timing hosts are found by a custom Ray resource named after the target CPU
(`timing_resource`): a node that may time candidates for `-mcpu=rocketlake` advertises
`autosched-timing-rocketlake` (`ray start --resources '{"autosched-timing-rocketlake": 1}'`),
so on a cluster every candidate is timed on matching hardware while builds go anywhere.
The embedded instance advertises the resource of this machine's CPU.

The embedded instance keeps only what runs tasks and actors. Ray 2.60's `ray.init`
always starts an API server (the dashboard process, even with include_dashboard=False),
the autoscaler's monitor and a log monitor, and has no switch for them; on one machine
with a fixed set of CPUs and `log_to_driver=False` none of them has work, so they are
stopped as soon as the node is up (Ray treats the dashboard as optional: a node runs on
without it). The raylet's dashboard agent and runtime-env agent stay: the raylet exits
when either of them does.

Token authentication (Ray 2.59+; `ray start` and `ray.init` turn it on by default): a
driver must send the cluster's token exactly when the cluster asks for one, since the
workers of a cluster without authentication cannot call back a driver that expects
tokens. Ray decides this itself for `address="auto"`, but for an explicit "host:port" it
sends a token only when RAY_AUTH_MODE=token is set. Here an explicit address is asked
first (one GCS call without a token); when it refuses, the token that is available
(RAY_AUTH_TOKEN, RAY_AUTH_TOKEN_PATH or ~/.ray/auth_token, in Ray's order) is sent, and a
missing or refused token is one RayConnectionError that says what to set.

What this needs of Ray beyond ray.init is internal (the node handle, a GCS client, the
token-mode switch of ray.init itself); each use is marked, and a Ray without token
authentication simply skips that part.
"""
from __future__ import annotations

import atexit
import logging
import os
import socket
import tempfile
import threading
from contextlib import contextmanager
from pathlib import Path

from compiler import Target

_lock = threading.Lock()

TOKEN_HELP = ("set RAY_AUTH_TOKEN to the cluster's token (`ray get-auth-token` on its head "
              "node prints it), or RAY_AUTH_TOKEN_PATH to a file that holds it, or put it in "
              "~/.ray/auth_token")


class RayConnectionError(ConnectionError):
    """The Ray cluster at the given address could not be joined."""


def timing_resource(target) -> str:
    """The custom resource a node advertises to time candidates for `target`."""
    return f"autosched-timing-{target.mcpu}"


def token_source() -> str | None:
    """Where Ray reads an authentication token from (the first of RAY_AUTH_TOKEN,
    RAY_AUTH_TOKEN_PATH, ~/.ray/auth_token that is set), or None when it finds none."""
    if os.environ.get("RAY_AUTH_TOKEN", "").strip():
        return "RAY_AUTH_TOKEN"
    path = os.environ.get("RAY_AUTH_TOKEN_PATH")
    if path:  # Ray reads this file and no other, even when it is empty
        return f"RAY_AUTH_TOKEN_PATH={path}" if _holds_token(Path(path)) else None
    return "~/.ray/auth_token" if _holds_token(Path.home() / ".ray" / "auth_token") else None


def _holds_token(path: Path) -> bool:
    """Whether the first line of `path` holds a token (Ray reads that line only)."""
    try:
        return bool(path.read_text().partition("\n")[0].strip())
    except OSError:
        return False


def connect(address: str | None = None) -> bool:
    """Make sure this process is connected to Ray; returns True if it started Ray.

    address None: reuse a connection this process already has, else start a local
    instance (this machine's cores, no dashboard, quiet), shut down at exit.
    "auto" or "host:port": join that cluster, with its token when it asks for one.
    Raises RayConnectionError (one line, naming the address) when it cannot be joined.
    """
    import ray  # on use: importing Ray takes a second, and most commands never need it

    with _lock:
        if ray.is_initialized():
            return False
        quiet = {"include_dashboard": False, "logging_level": logging.ERROR,
                 "log_to_driver": False}
        if address is None:
            # Ray starts workers at niceness 15 so that its own daemons come first; a
            # runner timing at that priority loses the core to any of them.
            os.environ.setdefault("RAY_worker_niceness", "0")
            # "local": a new instance even when `ray start` runs a cluster on this
            # machine (ray.init() would join that one, or fail on num_cpus).
            ray.init(address="local", num_cpus=len(os.sched_getaffinity(0)),
                     resources={timing_resource(Target("llvm")): 1}, **quiet)
            _stop_idle_daemons(ray)
        else:
            _join(ray, address, quiet)
        atexit.register(ray.shutdown)
        return True


def check_reachable(address: str) -> None:
    """RayConnectionError unless something listens at `address` ("host:port" or
    "ray://host:port"); Ray itself waits tens of seconds for an unreachable one."""
    host, _, port = address.removeprefix("ray://").rpartition(":")
    if not host or not port.isdigit():
        raise RayConnectionError(f"Ray address {address!r}: expected host:port (or auto)")
    try:
        socket.create_connection((host, int(port)), timeout=5).close()
    except OSError as err:
        raise RayConnectionError(f"cannot reach the Ray cluster at {address!r}: "
                                 f"{err.strerror or err}") from None


def _stop_idle_daemons(ray) -> None:
    """Stop the processes the embedded node does not need (the module docstring says
    which and why), through the handle of the node this process started (Ray internal)."""
    node = ray._private.worker.global_worker.node
    node.kill_dashboard(check_alive=False)
    node.kill_monitor(check_alive=False)
    node.kill_log_monitor(check_alive=False)


def _join(ray, address: str, options: dict) -> None:
    """Join the cluster at `address`, sending its token when it asks for one. Ray's core
    logs to file descriptor 2 (a warning a second while it retries); that goes to a file,
    written out again after a join and read for the reason after a failure."""
    source = token_source()
    explicit = address != "auto" and not address.startswith("ray://")
    if explicit:
        check_reachable(address)
    with tempfile.TemporaryFile() as log:
        with _stderr_to(log):
            refused = _refuses_token(address) if explicit else None
            if refused and "RAY_AUTH_MODE" not in os.environ and source is not None:
                _token_mode_on()
                refused = _refuses_token(address)
        if refused:
            raise _token_error(address, source)
        try:
            with _stderr_to(log):
                ray.init(address=address, **options)
        except Exception as err:  # noqa: BLE001 - Ray raises several kinds here
            log.seek(0)
            raise _join_error(address, err, source, log.read().decode(errors="replace")) \
                from err
        log.seek(0)
        os.write(2, log.read())


def _refuses_token(address: str) -> bool | None:
    """Whether the GCS at `address` refuses this process's credentials (none, unless token
    mode is on): one GCS call, milliseconds when something listens there. None: a Ray
    without token authentication, or another failure that ray.init will report."""
    try:  # Ray internals, present since token authentication exists
        from ray._raylet import GcsClient
        from ray.exceptions import AuthenticationError
    except ImportError:
        return None
    try:
        GcsClient(address=address)
    except AuthenticationError:
        return True
    except Exception:  # noqa: BLE001 - not ours to explain: ray.init will
        return None
    return False


def _token_mode_on() -> None:
    """Ray's own step for a cluster that ray.init finds by itself: RAY_AUTH_MODE=token for
    this process and the config it read at import refreshed (Ray internal). Its notice
    that token mode is on would only repeat what the caller asked for."""
    from ray._private.authentication import authentication_token_setup as auth
    auth_logger = logging.getLogger(auth.__name__)
    level = auth_logger.level
    auth_logger.setLevel(logging.ERROR)
    try:
        auth.maybe_enable_token_auth_if_token_available(warn_if_disabled=False)
    finally:
        auth_logger.setLevel(level)


def _token_error(address: str, source: str | None) -> RayConnectionError:
    """The cluster at `address` asks for a token that is missing, kept back or wrong."""
    mode = os.environ.get("RAY_AUTH_MODE", "token")
    if source is None:
        why = f"it uses token authentication and no token was found; {TOKEN_HELP}"
    elif mode.lower() != "token":
        why = (f"it uses token authentication, and RAY_AUTH_MODE={mode} keeps the token "
               f"from {source} from being sent; unset RAY_AUTH_MODE")
    else:
        why = f"it refused the authentication token from {source}; {TOKEN_HELP}"
    return RayConnectionError(f"cannot join the Ray cluster at {address!r}: {why}")


def _join_error(address: str, err: Exception, source: str | None,
                stderr: str) -> RayConnectionError:
    """One line that says why ray.init could not join the cluster at `address`."""
    chain, cause = [], err
    while cause is not None:
        chain.append(f"{type(cause).__name__}: {cause}")
        cause = cause.__cause__ or cause.__context__
    if any(mark in "\n".join(chain) + stderr
           for mark in ("InvalidAuthToken", "no authentication token was found")):
        return _token_error(address, source)
    first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
    return RayConnectionError(f"cannot join the Ray cluster at {address!r}: {first}")


@contextmanager
def _stderr_to(file):
    """File descriptor 2, where Ray's C++ core logs, sent to `file` for the block."""
    saved = os.dup(2)
    os.dup2(file.fileno(), 2)
    try:
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)
