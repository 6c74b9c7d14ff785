"""The suite runs without the on-disk compile cache (compiler/disk_cache.py): a test that
patches the lowering must see it run, not a kernel an earlier test left on disk;
tests/compiler/test_disk_cache.py turns it on in a folder of its own.

With PYTHONDONTWRITEBYTECODE set, every process the suite starts (the xdist workers,
each Ray worker, each `autosched` or `python -c` subprocess) would compile the project's
modules from source again, and pytest would rewrite every test module's asserts again:
about half a second a process, 35 s of the tuner tests' 175 s on two cores. Their
bytecode goes to one folder of pytest's cache instead (sys.pycache_prefix, and
PYTHONPYCACHEPREFIX for the processes started from here), never beside the sources."""
import os
import sys
from pathlib import Path

os.environ["AUTOSCHED_NO_CACHE"] = "1"

if sys.dont_write_bytecode:
    _PYCACHE = str(Path(__file__).resolve().parents[1] / ".pytest_cache" / "pycache")
    sys.dont_write_bytecode = False
    sys.pycache_prefix = _PYCACHE
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    os.environ["PYTHONPYCACHEPREFIX"] = _PYCACHE
