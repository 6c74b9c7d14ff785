"""Connecting to Ray: the embedded instance runs no dashboard, and a real cluster started
with `ray start --head` (token authentication on) is joined by its explicit address, with
one clear line when the token is missing or wrong."""
from __future__ import annotations

import os
import secrets
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from compiler import Target
from tuner import MeasureErrorNo, MeasureInput, Measurer, Task
from tuner.ray_session import timing_resource, token_source

BIN = Path(sys.executable).parent
IDLE_DAEMONS = ("dashboard/dashboard.py", "autoscaler/_private/monitor.py",
                "_private/log_monitor.py")


def _descendants(pid: int) -> dict[int, str]:
    """pid -> command line of every process below `pid` (read from /proc)."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            ppid = int(stat.rsplit(")", 1)[1].split()[1])
            children.setdefault(ppid, []).append(int(entry.name))
    found, todo = {}, list(children.get(pid, []))
    while todo:
        p = todo.pop()
        try:
            found[p] = (Path("/proc") / str(p) / "cmdline").read_bytes().replace(b"\0", b" ") \
                .decode(errors="replace")
        except OSError:
            continue
        todo.extend(children.get(p, []))
    return found


def test_the_embedded_ray_runs_no_dashboard_monitor_or_log_monitor():
    task = Task("matmul", (16, 32, 8))
    with Measurer(repeat=1, min_repeat_ms=0) as m:
        results = m.measure([MeasureInput(task, task.config_space.fallback())])
        procs = _descendants(os.getpid()).values()
    assert [r.error_no for r in results] == [MeasureErrorNo.NO_ERROR]
    assert any("raylet" in cmd for cmd in procs) and any("gcs_server" in cmd for cmd in procs)
    running = [d for d in IDLE_DAEMONS if any(d in cmd for cmd in procs)]
    assert running == []


# ------------------------------------------------------------------ a real cluster


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _cluster(tmp_path, auth_mode: str):
    """A one-node cluster from `ray start --head --block` with RAY_AUTH_MODE=`auth_mode`,
    the timing resource of this CPU, and a token in HOME/.ray/auth_token of a temporary
    HOME; yields (address, the environment of a client on that HOME, without
    RAY_AUTH_MODE: each test changes a copy). Stopped at the end by signalling its own
    process group (`ray stop` would stop every Ray on the machine)."""
    home = tmp_path / "home"
    (home / ".ray").mkdir(parents=True)
    (home / ".ray" / "auth_token").write_text(secrets.token_hex(32))
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAY_")}
    env.update(HOME=str(home), RAY_AUTH_MODE=auth_mode)
    port = _free_port()
    resources = f'{{"{timing_resource(Target("llvm"))}": 1}}'
    # its own temp dir (short: socket paths are limited to 107 bytes), so that the
    # machine's /tmp/ray/ray_current_cluster, which a plain ray.init() joins, is untouched
    temp_dir = tempfile.mkdtemp(prefix="ray-", dir="/tmp")
    log = tmp_path / "head.log"
    with log.open("w") as out:
        head = subprocess.Popen(
            [str(BIN / "ray"), "start", "--head", "--block", "--port", str(port),
             "--num-cpus", "2", "--resources", resources, "--include-dashboard", "false",
             "--disable-usage-stats", "--temp-dir", temp_dir],
            env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert head.poll() is None, log.read_text()
                assert time.monotonic() < deadline, "the head node did not start in 60 s"
                time.sleep(0.5)
        client_env = {k: v for k, v in env.items() if k != "RAY_AUTH_MODE"}
        yield f"127.0.0.1:{port}", client_env
    finally:
        head.send_signal(signal.SIGTERM)  # `ray start --block` stops its node's processes
        try:
            head.wait(timeout=15)
        except subprocess.TimeoutExpired:
            pass
        try:
            os.killpg(head.pid, signal.SIGKILL)  # whatever the head left behind
        except ProcessLookupError:
            pass
        head.wait()
        shutil.rmtree(temp_dir, ignore_errors=True)


@pytest.fixture(scope="module")
def token_cluster(tmp_path_factory):
    """A cluster with token authentication (Ray's default), shared by the tests that join
    it (starting and stopping one takes seconds)."""
    yield from _cluster(tmp_path_factory.mktemp("token_cluster"), "token")


@pytest.fixture
def open_cluster(tmp_path):
    """A cluster without authentication, while the client has a token at hand."""
    yield from _cluster(tmp_path, "disabled")


def _tune(address: str, env: dict, db: Path, trials: int = 4) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(BIN / "autosched"), "tune", "matmul", "32", "32", "32", "--trials", str(trials),
         "--min-repeat-ms", "5", "--db", str(db), "--ray-address", address],
        env=env, capture_output=True, text=True, timeout=300)


@pytest.mark.slow
# the token cluster last: the next test joins it too, and one cluster runs at a time
@pytest.mark.parametrize("cluster", ["open_cluster", "token_cluster"])
def test_tuning_through_the_explicit_address_of_a_cluster(cluster, tmp_path, request):
    """The token is sent to the cluster that asks for it, and only to that one (the
    workers of a cluster without authentication cannot call a driver expecting tokens)."""
    address, env = request.getfixturevalue(cluster)
    assert "RAY_AUTH_MODE" not in env and "RAY_AUTH_TOKEN" not in env
    db = tmp_path / "tune.db"
    result = _tune(address, env, db)
    assert result.returncode == 0, result.stderr
    rows = sqlite3.connect(db).execute("SELECT error_no FROM records").fetchall()
    assert len(rows) == 7  # 4 trials, the fallback baseline, the batch's control twice
    assert [code for code, in rows].count(0) == 7


@pytest.mark.slow
@pytest.mark.parametrize("token", ["wrong", "missing"])
def test_a_wrong_or_missing_token_is_one_line_and_exit_code_2(token_cluster, tmp_path, token):
    address, env = token_cluster[0], dict(token_cluster[1])
    if token == "wrong":
        env["RAY_AUTH_TOKEN"] = secrets.token_hex(32)
    else:
        env["HOME"] = str(tmp_path)  # no .ray/auth_token there
    db = tmp_path / "tune.db"
    result = _tune(address, env, db)
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith(f"autosched: error: cannot join the Ray cluster at '{address}'")
    expected = ("refused the authentication token from RAY_AUTH_TOKEN" if token == "wrong"
                else "no token was found")
    assert expected in lines[0] and "RAY_AUTH_TOKEN" in lines[0]
    assert not db.exists()


def test_token_source_follows_rays_order(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    for name in ("RAY_AUTH_TOKEN", "RAY_AUTH_TOKEN_PATH"):
        monkeypatch.delenv(name, raising=False)
    assert token_source() is None
    (tmp_path / ".ray").mkdir()
    (tmp_path / ".ray" / "auth_token").write_text("abc\n")
    assert token_source() == "~/.ray/auth_token"
    monkeypatch.setenv("RAY_AUTH_TOKEN_PATH", str(tmp_path / "elsewhere"))
    assert token_source() is None  # Ray reads the named file, not the default one
    (tmp_path / "elsewhere").write_text("def")
    assert token_source() == f"RAY_AUTH_TOKEN_PATH={tmp_path / 'elsewhere'}"
    monkeypatch.setenv("RAY_AUTH_TOKEN", "ghi")
    assert token_source() == "RAY_AUTH_TOKEN"
