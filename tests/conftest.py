"""The suite runs without the on-disk compile cache (compiler/disk_cache.py): a test that
patches the lowering must see it run, not a kernel an earlier test left on disk;
tests/compiler/test_disk_cache.py turns it on in a folder of its own.

The test files sit in folders that mirror the packages' (the tests of
compiler/graph/passes/ in tests/compiler/graph/passes/), and import the suite's helpers
by bare name (`from onnx_models import residual`, `from build_check import check_build`).
The helpers are the modules not named test_*.py in HELPERS: tests/compiler's
(onnx_models.py, build_check.py, lower_check.py, ...) and tests/tuner's (cli_check.py,
fake_measurer.py, misbehaving_templates.py). Those folders go on sys.path here, once,
for every test below, wherever it sits; pytest's own "prepend" import mode still puts
each test file's folder there, which is how a test imports from a test module beside
it (test_ops_conv2d_winograd.py's conv_ref). A test never imports a test module of
another folder: what two folders share is a helper. (A process a test starts is not
under this file: it puts the helpers' folder on its own path, as test_disk_cache.py's
do.)

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

TESTS = Path(__file__).resolve().parent
HELPERS = [TESTS / "compiler", TESTS / "tuner"]
for folder in reversed(HELPERS):
    if str(folder) not in sys.path:
        sys.path.insert(0, str(folder))

if sys.dont_write_bytecode:
    _PYCACHE = str(Path(__file__).resolve().parents[1] / ".pytest_cache" / "pycache")
    sys.dont_write_bytecode = False
    sys.pycache_prefix = _PYCACHE
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    os.environ["PYTHONPYCACHEPREFIX"] = _PYCACHE
