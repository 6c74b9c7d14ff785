"""Which config a template gets (AutoTVM's task/dispatcher.py), and instantiate.

A workload is `(template name, arguments tuple)`. `instantiate(name, *args)` without a
config asks the dispatch contexts entered on this thread, innermost first; the first
answer that is not None wins, and when none answers the default FallbackContext gives
the space's FallbackConfig. A dispatch context is also a chooser of the graph build
(compiler.graph.strategy.chooser), on the same stack. The records layer adds ApplyHistoryBest,
a context that answers from the tuning log.
"""
from __future__ import annotations

from compiler import Target
from compiler.graph.strategy.chooser import Choice, Chooser, entered

from .errors import SpaceError
from .registry import get_template
from .config_space import ConfigEntity


class DispatchContext(Chooser):
    """Base of the contexts that choose configs; `with ctx:` makes `ctx` the innermost
    one on this thread until the block ends (it is a compiler.graph.strategy.chooser.Chooser: a
    graph build asks it which candidate implements a call). Subclasses implement
    `query`."""

    def query(self, workload: tuple) -> ConfigEntity | None:
        """The config for `workload` (template name, arguments tuple), or None to leave
        the choice to the outer contexts and finally to the fallback."""
        raise NotImplementedError

    def describe(self, workload: tuple):
        """The Report (compiler.graph.strategy.chooser.Report) of the record this context applied
        to `workload`, or None (ApplyHistoryBest has one)."""
        return None

    def choose(self, candidates, target, applies: bool = True) -> Choice | None:
        """The first candidate of the highest priority that is a template, with the
        config `query` gives its workload; None when it gives none."""
        templates = [c for c in candidates if c.workload is not None]
        if not templates:
            return None
        best = max(templates, key=lambda c: c.priority)
        config = self.query(best.workload)
        return None if config is None else Choice(best, config, self.describe(best.workload))

    def __exit__(self, *exc_info):
        try:
            super().__exit__(*exc_info)
        except RuntimeError:
            raise SpaceError("dispatch contexts must be left in the reverse order of "
                             "entering") from None

    @staticmethod
    def current() -> DispatchContext:
        """The innermost context entered on this thread, else the default FallbackContext."""
        stack = _stack()
        return stack[-1] if stack else _DEFAULT


def _stack() -> list[DispatchContext]:
    """The dispatch contexts entered on this thread, outermost first (the choosers that
    are dispatch contexts)."""
    return [c for c in entered() if isinstance(c, DispatchContext)]


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
    """The config that the contexts of this thread choose for `workload`: the innermost
    one's that answers, else the FallbackConfig."""
    for ctx in reversed(_stack()):
        config = ctx.query(workload)
        if config is not None:
            return config
    return _DEFAULT.query(workload)


def instantiate(name: str, *args, config: ConfigEntity | None = None, target=None):
    """Run template `name` on `args` and return its `(schedule, tensors)`.

    config: the config to schedule with; None (default) lets the dispatch contexts
        choose (the FallbackConfig when none is entered). A config from another space
        (other template, arguments or template version, or a target whose vector unit
        gives another space) is a SpaceError.
    target: the target the template sizes its tiles for (default: the entered one,
        else the host).
    """
    tmpl = get_template(name)
    args = tmpl.bind(args)
    target = Target.resolve(target)
    with target:
        if config is None:
            config = dispatch((name, args))
        tmpl.space(args, target).check(config)
        return tmpl.run(config, args, target)
