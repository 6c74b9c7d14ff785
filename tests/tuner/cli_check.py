"""Running the `autosched` command line from the tests, two ways.

`autosched(...)` runs the console script in a subprocess, as a user does: for what only a
process shows (its exit status, signals, a fresh process loading a file, a command that
must start or join a Ray of its own). `invoke(...)` runs the same `main` in this process,
with the same arguments, working directory, stdout, stderr and exit code: for what a
command does. It saves the seconds a new process spends importing the project and, for
the commands that measure, starting Ray (they join the session's local Ray instead).

Both leave the caller's AUTOSCHED_DB out of the command's environment unless `env` sets
it, so that a developer's own log is never read or written.
"""
from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from pathlib import Path

from click.testing import CliRunner

from tuner.cli import main

AUTOSCHED = Path(sys.executable).parent / "autosched"


def autosched(*args, cwd, env=None, timeout=240) -> subprocess.CompletedProcess:
    """`autosched ARGS` in a subprocess in `cwd`, with `env` added to the environment."""
    environ = {k: v for k, v in os.environ.items() if k != "AUTOSCHED_DB"}
    return subprocess.run([str(AUTOSCHED), *map(str, args)], cwd=cwd,
                          env={**environ, **(env or {})},
                          capture_output=True, text=True, timeout=timeout)


def invoke(*args, cwd, env=None) -> subprocess.CompletedProcess:
    """`autosched ARGS` run by `tuner.cli.main` in this process, in `cwd`, with `env`
    added to the environment for the call; what the subprocess would have returned."""
    argv = [str(a) for a in args]
    with contextlib.chdir(cwd), \
            CliRunner().isolation(env={"AUTOSCHED_DB": None, **(env or {})}) as (out, err, _):
        try:
            main(argv)
        except SystemExit as done:  # main() always ends with sys.exit(code)
            code = done.code
        sys.stdout.flush()
        sys.stderr.flush()
    return subprocess.CompletedProcess(["autosched", *argv], code,
                                       out.getvalue().decode(), err.getvalue().decode())
