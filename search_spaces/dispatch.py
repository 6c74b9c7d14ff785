"""Which config a template gets (AutoTVM's task/dispatcher.py), and instantiate.

A workload is `(template name, arguments tuple)`. `instantiate(name, *args)` without a
config asks the dispatch contexts entered on this thread, innermost first; the first
answer that is not None wins, and when none answers the default FallbackContext gives
the space's FallbackConfig. The records layer adds ApplyHistoryBest, a context that
answers from the tuning log (it holds its target itself).
"""
from __future__ import annotations

import threading

from .errors import SpaceError
from .registry import get_template
from .config_space import ConfigEntity

_local = threading.local()


def _stack() -> list[DispatchContext]:
    """This thread's entered contexts, outermost first: one thread's `with` does not
    change the configs another thread's templates get."""
    if not hasattr(_local, "stack"):
        _local.stack = []
    return _local.stack


class DispatchContext:
    """Base of the contexts that choose configs; `with ctx:` makes `ctx` the innermost
    one on this thread until the block ends. Subclasses implement `query`."""

    def query(self, workload: tuple) -> ConfigEntity | None:
        """The config for `workload` (template name, arguments tuple), or None to leave
        the choice to the outer contexts and finally to the fallback."""
        raise NotImplementedError

    def describe(self, workload: tuple) -> dict | None:
        """What this context knows of the config it gives `workload`, as plain JSON for
        a build's report (ApplyHistoryBest: the record, its time and GFLOPS), or None."""
        return None

    def logged(self, workload: tuple) -> dict | None:
        """What this context would tell of `workload` in `describe` if asked to apply
        it, without applying, warning or remembering anything: how a build chooses
        between two implementations of one op (compiler.graph.strategy.probing). None
        (the default) when it knows nothing of the workload."""
        return None

    def __enter__(self) -> DispatchContext:
        _stack().append(self)
        return self

    def __exit__(self, *exc_info):
        stack = _stack()
        if not stack or stack[-1] is not self:
            raise SpaceError("dispatch contexts must be left in the reverse order of entering")
        stack.pop()

    @staticmethod
    def current() -> DispatchContext:
        """The innermost context entered on this thread, else the default FallbackContext."""
        stack = _stack()
        return stack[-1] if stack else _DEFAULT


class ApplyConfig(DispatchContext):
    """`with ApplyConfig(config):` templates get `config`. As in AutoTVM it answers for
    every workload; instantiating another template (or other arguments) inside is a
    SpaceError, since the config is not a point of that space."""

    def __init__(self, config: ConfigEntity):
        if not isinstance(config, ConfigEntity):
            raise SpaceError(f"ApplyConfig needs a ConfigEntity, got {config!r}")
        self.config = config

    def query(self, workload: tuple) -> ConfigEntity:
        """The config given to this context, whatever the workload."""
        return self.config


class FallbackContext(DispatchContext):
    """The context below all others: the FallbackConfig of the workload's space."""

    def query(self, workload: tuple) -> ConfigEntity:
        """The FallbackConfig of `workload` (template name, bound arguments)."""
        name, args = workload
        return get_template(name).space(args).fallback()


_DEFAULT = FallbackContext()


def dispatch(workload: tuple) -> ConfigEntity:
    """The config that the contexts of this thread choose for `workload` (as
    dispatch_from, whose context it drops; a loop of its own, so that a context's warning
    points as far up the stack from either)."""
    for ctx in reversed(_stack()):
        config = ctx.query(workload)
        if config is not None:
            return config
    return _DEFAULT.query(workload)


def dispatch_from(workload: tuple) -> tuple[ConfigEntity, DispatchContext]:
    """`(config, context)`: the config the contexts of this thread choose for `workload`
    and the context that chose it (its `describe` says more of it)."""
    for ctx in reversed(_stack()):
        config = ctx.query(workload)
        if config is not None:
            return config, ctx
    return _DEFAULT.query(workload), _DEFAULT


def logged(workload: tuple) -> dict | None:
    """What the innermost context that knows anything of `workload` logged of it
    (DispatchContext.logged), or None when none does."""
    for ctx in reversed(_stack()):
        found = ctx.logged(workload)
        if found is not None:
            return found
    return None


def instantiate(name: str, *args, config: ConfigEntity | None = None):
    """Run template `name` on `args` and return its `(schedule, tensors)`.

    config: the config to schedule with; None (default) lets the dispatch contexts
        choose (the FallbackConfig when none is entered). A config from another space
        (other template, arguments or template version) is a SpaceError.
    """
    tmpl = get_template(name)
    args = tmpl.bind(args)
    if config is None:
        config = dispatch((name, args))
    tmpl.space(args).check(config)
    return tmpl.run(config, args)
