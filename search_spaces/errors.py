"""Errors a user can cause in search_spaces. Messages name the template, the knob and the
values that would have been accepted."""
from __future__ import annotations

import difflib


class SpaceError(ValueError):
    """A template, a knob or a config was used wrongly; the message names it."""


class InstantiationError(SpaceError):
    """A config that is valid in its space but that the template refuses when it runs
    (an unroll longer than max_unroll, a vector length the target lacks). The tuner
    records such a config as failed rather than stopping (AutoTVM's InstantiationError)."""


def did_you_mean(name: str, known) -> str:
    """' (did you mean 'x'?)' for the nearest of `known`, else the list of `known`."""
    known = list(known)
    close = difflib.get_close_matches(name, known, n=1)
    if close:
        return f" (did you mean {close[0]!r}?)"
    return f" (known: {', '.join(repr(k) for k in known) or 'none'})"
