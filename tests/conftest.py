"""The suite runs with the on-disk compile cache (compiler/disk_cache.py) on, as a user's
builds do, in a folder of its own made for the run (never the user's cache) and shared by
every process of the run (the xdist workers, Ray's workers, the `autosched` subprocesses:
they inherit it from the environment), and removed at its end. Kernels recur across the
suite (about a third of the graph builds' kernels are made by an earlier test: the node
tests' elementwise kernels above all), and each recurrence costs a look-up instead of its
lowering and LLVM. The cache is keyed by everything a kernel's code follows from, so a
hit is the kernel the test would have made. A test that patches the lowering or the
builder, and must see it run, turns the cache off for itself (monkeypatch.setenv
AUTOSCHED_NO_CACHE=1: test_kernel_pool.py, test_extract.py) or points it at a folder of
its own (test_disk_cache.py, test_builder.py).

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
import shutil
import sys
import tempfile
from pathlib import Path

import pytest

_SUITE_CACHE = "AUTOSCHED_SUITE_CACHE"  # set by the process that made the run's folder
if _SUITE_CACHE not in os.environ:  # pytest's own process (xdist's controller): make it
    _MADE_CACHE = tempfile.mkdtemp(prefix="autosched-suite-cache-")
    os.environ[_SUITE_CACHE] = _MADE_CACHE
else:
    _MADE_CACHE = None
os.environ["AUTOSCHED_CACHE_DIR"] = os.environ[_SUITE_CACHE]
os.environ.pop("AUTOSCHED_NO_CACHE", None)

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


FIRST = ["tuner", "search_spaces"]
"""The folders whose tests run first, in this order; the rest keep pytest's order."""


@pytest.hookimpl(tryfirst=True)  # before tests/tuner's, which puts the own_ray tests last
def pytest_collection_modifyitems(items):
    """The tuner's tests first, then the templates', then the rest (a stable sort: each
    module's tests stay together and in order, so a module's fixtures are made once).
    The longest tests are the tuner's (a real Ray, subprocesses, signals: 223 tests of
    4356, 319 s of the 1098 s the tests sum to on a 2-core Zen 3) and the templates'
    (Winograd kernels of sampled configs, up to 20 s each). In pytest's order they come
    last and were the run's tail, one xdist worker finishing them while the other had
    nothing left (580 and 597 s, against half the sum, 549 s). Started first, they run
    while the other worker takes the many short ones: 561 s, against 545 s."""
    def rank(item) -> int:
        inside = item.path.is_relative_to(TESTS)  # a test named from elsewhere: the rest's
        folder = item.path.relative_to(TESTS).parts[0] if inside else None
        return FIRST.index(folder) if folder in FIRST else len(FIRST)
    items.sort(key=rank)


def pytest_unconfigure(config):
    """The run's cache folder removed by the process that made it, once all is done."""
    if _MADE_CACHE is not None:
        shutil.rmtree(_MADE_CACHE, ignore_errors=True)
