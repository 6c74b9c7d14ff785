"""Dispatch contexts (search_spaces/dispatch.py): which config a template gets when
instantiate is given none."""
import threading

import pytest

import search_spaces
from search_spaces import (ApplyConfig, DispatchContext, FallbackConfig, FallbackContext,
                           SpaceError, instantiate, template)

_used = []


@template("dispatch_test_knob")
def knob_only(cfg, n: int):
    cfg.define_knob("k", list(range(n)))
    _used.append(cfg)
    return None, []


def used_after(*args):
    instantiate("dispatch_test_knob", *args)
    return _used[-1]


def space(n=5):
    return search_spaces.space("dispatch_test_knob", n)


class Only(DispatchContext):
    """Answers for one workload, passes on the rest."""

    def __init__(self, workload, config):
        self.workload, self.config = workload, config

    def query(self, workload):
        return self.config if workload == self.workload else None


def test_the_default_context_gives_the_fallback():
    assert isinstance(DispatchContext.current(), FallbackContext)
    assert isinstance(used_after(5), FallbackConfig)


def test_contexts_nest_and_restore():
    a, b = space().get(1), space().get(2)
    with ApplyConfig(a) as outer:
        assert DispatchContext.current() is outer
        assert used_after(5) == a
        with ApplyConfig(b):
            assert used_after(5) == b
        assert used_after(5) == a
    assert isinstance(used_after(5), FallbackConfig)
    assert isinstance(DispatchContext.current(), FallbackContext)


def test_a_context_that_does_not_answer_defers_to_the_outer_ones():
    a, other = space().get(1), search_spaces.space("dispatch_test_knob", 3).get(2)
    with ApplyConfig(a):
        with Only(("dispatch_test_knob", (3,)), other):
            assert used_after(5) == a
            assert used_after(3) == other
    with Only(("dispatch_test_knob", (3,)), other):
        assert isinstance(used_after(5), FallbackConfig)


def test_contexts_are_per_thread():
    seen = []
    with ApplyConfig(space().get(3)):
        worker = threading.Thread(target=lambda: seen.append(used_after(5)))
        worker.start()
        worker.join()
    assert isinstance(seen[0], FallbackConfig)


def test_an_explicit_config_wins_over_the_contexts():
    with ApplyConfig(space().get(1)):
        instantiate("dispatch_test_knob", 5, config=space().get(4))
        assert _used[-1] == space().get(4)


def test_apply_config_of_another_space_is_refused_at_instantiate():
    with ApplyConfig(space().get(1)):
        with pytest.raises(SpaceError, match=r"not of template 'dispatch_test_knob'\(6,\)"):
            instantiate("dispatch_test_knob", 6)


def test_apply_config_needs_a_config():
    with pytest.raises(SpaceError, match="ApplyConfig needs a ConfigEntity, got 1"):
        ApplyConfig(1)


def test_contexts_must_be_left_in_order():
    a, b = ApplyConfig(space().get(1)), ApplyConfig(space().get(2))
    a.__enter__()
    b.__enter__()
    with pytest.raises(SpaceError, match="reverse order"):
        a.__exit__(None, None, None)
    b.__exit__(None, None, None)
    a.__exit__(None, None, None)
    assert isinstance(DispatchContext.current(), FallbackContext)
