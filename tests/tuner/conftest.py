"""One embedded local Ray for the tuner tests that need it (starting Ray takes seconds)."""
from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def local_ray():
    """A connected local Ray (started by tuner's own on-demand path)."""
    from tuner.ray_session import connect
    connect()
    yield
