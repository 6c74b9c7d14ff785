"""One embedded local Ray for the tuner tests that need it (starting Ray takes seconds):
the `local_ray` fixture starts it once for the session, and the commands run in this
process (cli_check.invoke) join it. A test that must leave it for a cluster of its own
is marked `own_ray` and runs after every other test, so that the local Ray is never
started twice."""
from __future__ import annotations

import pytest


def pytest_configure(config):
    """Register the `own_ray` marker (see the module docstring)."""
    config.addinivalue_line("markers", "own_ray: shuts the session's local Ray down to join "
                                       "a Ray of its own; runs last")


def pytest_collection_modifyitems(items):
    """The `own_ray` tests last (a stable sort: every other test keeps its place)."""
    items.sort(key=lambda item: item.get_closest_marker("own_ray") is not None)


@pytest.fixture(scope="session")
def local_ray():
    """A connected local Ray (started by tuner's own on-demand path)."""
    from tuner.ray_session import connect
    connect()
    yield
