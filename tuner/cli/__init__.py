"""autosched: the command line (the console script `autosched`).

    autosched tune matmul 1024 1024 1024 --trials 200 --db tune.db
    autosched tune --tasks tasks.json --trials 512 --time-budget 8h
    autosched log tasks|best|top|history|failures|export|import|merge|stats|plot|confirm
    autosched space matmul 1024 1024 1024
    autosched templates
    autosched bench matmul 1024 1024 1024 --db tune.db
    autosched compile resnet18.onnx -o resnet18.so --shape input:1,3,224,224
    autosched run resnet18.so --inputs in.npz --outputs out.npz
    autosched compile resnet18.onnx -o resnet18.zip && autosched run resnet18.zip --profile

Every command that reads or writes a tuning log takes `--db PATH` (else the environment
variable AUTOSCHED_DB, else ./autosched.db); every query takes `--json` and then prints
JSON only on stdout. Exit codes: 0 done; 1 a failure while running; 2 bad input (one
line on stderr, and no log file created or changed); 130 / 143 `tune` stopped by
SIGINT / SIGTERM after logging the batch in flight.

Imports are made where they are needed, so that `autosched templates` or `autosched log`
never load Ray or XGBoost. Set AUTOSCHED_DEBUG=1 to get the traceback of a failure.
"""
from __future__ import annotations

import os
import signal
import sys

import click

from . import bench, log, model, space, tune
from .common import SIGNAL_EXIT, describe_error


def main(argv=None) -> None:
    """The console script: run the command line, turn every error into one line on stderr
    and an exit code (see the module docstring)."""
    try:
        code = cli.main(args=argv, prog_name="autosched", standalone_mode=False)
    except click.exceptions.NoArgsIsHelpError as err:
        err.show()
        code = err.exit_code
    except click.UsageError as err:
        hint = f" (see '{err.ctx.command_path} --help')" if err.ctx is not None else ""
        code = _fail(err.format_message() + hint, err.exit_code)
    except click.ClickException as err:
        code = _fail(err.format_message(), err.exit_code)
    except (click.Abort, KeyboardInterrupt):
        code = _fail("interrupted", SIGNAL_EXIT[signal.SIGINT])
    except Exception as err:  # noqa: BLE001 - a run-time failure is one line, not a traceback
        if os.environ.get("AUTOSCHED_DEBUG"):
            raise
        code = _fail(describe_error(err), 1)
    sys.exit(code or 0)


def _fail(message: str, code: int) -> int:
    click.echo(f"autosched: error: {' '.join(message.split())}", err=True)
    return code


@click.group(no_args_is_help=True,
             context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(package_name="autosched")
def cli():
    """autosched tunes tensor operators for the CPU it runs on, logs every measurement
    to a SQLite tuning log, and builds with the best configs found."""


cli.add_command(space.templates)
cli.add_command(space.space)
cli.add_command(tune.tune)
cli.add_command(log.log)
cli.add_command(bench.bench)
cli.add_command(model.compile_model)
cli.add_command(model.run_model)
