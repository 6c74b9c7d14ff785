"""The pass infrastructure: passes as IRModule -> IRModule, run under a PassContext.

As in TVM's pass infra: a pass carries a PassInfo (name, opt_level); the innermost
`with PassContext(...)` decides which passes run (opt_level, required_pass,
disabled_pass), carries their configuration, and lets PassInstruments watch or veto
every run. `Sequential` chains passes, `module_pass` / `prim_func_pass` turn a function
or a small class into a pass, `PrintIR` dumps the module between two passes.
"""
from __future__ import annotations

import difflib
import functools
import sys
import contextvars
import time
from dataclasses import dataclass, field
from collections.abc import Callable

from ..ir.module import IRModule
from ..ir.stmt import PrimFunc


@dataclass(frozen=True)
class PassInfo:
    """A pass's name (what disabled_pass / required_pass match), the least context
    opt_level it runs at, and the names of passes it needs run before it (`required`:
    each one registered with `register_pass` runs first, every time; another name is
    recorded for readers and instruments only).
    """
    name: str
    opt_level: int
    required: tuple = ()


_CONFIG_KEYS: dict[str, tuple[type, object]] = {}
_PASSES: dict[str, Callable] = {}


def register_pass(name: str, factory: Callable) -> None:
    """Make `factory()` (a Pass) what a pass that requires `name` runs first."""
    _PASSES[name] = factory


def register_pass_config(key: str, value_type: type, default) -> None:
    """Declare config `key` (e.g. "tir.UnrollLoop.auto_max_step") with its type and default.

    Passes call this at import; registering the same key again with the same type and
    default is a no-op so that re-imports are harmless.
    """
    if not isinstance(default, value_type):
        raise TypeError(f"default {default!r} of pass config {key!r} is not a "
                        f"{value_type.__name__}")
    if _CONFIG_KEYS.get(key, (value_type, default)) != (value_type, default):
        raise ValueError(f"pass config {key!r} is already registered as {_CONFIG_KEYS[key]}")
    _CONFIG_KEYS[key] = (value_type, default)


def _config_type(key: str) -> type:
    if key not in _CONFIG_KEYS:
        close = difflib.get_close_matches(key, _CONFIG_KEYS, n=1)
        hint = f"; did you mean {close[0]!r}?" if close else "; no registered key is close"
        raise ValueError(f"unknown pass config {key!r}{hint}")
    return _CONFIG_KEYS[key][0]


class PassInstrument:
    """Hooks around every pass run in a PassContext; subclasses override what they need."""

    def enter_pass_ctx(self) -> None:
        """Called when the context holding this instrument is entered."""

    def exit_pass_ctx(self) -> None:
        """Called when the context holding this instrument is exited."""

    def should_run(self, mod: IRModule, info: PassInfo) -> bool:
        """Return False to skip the pass; every instrument is asked."""
        return True

    def run_before_pass(self, mod: IRModule, info: PassInfo) -> None:
        """Called with the input module right before the pass runs."""

    def run_after_pass(self, mod: IRModule, info: PassInfo) -> None:
        """Called with the output module right after the pass has run."""


# The entered contexts, innermost last: a context variable (as Target's and the
# choosers' stacks), so each thread starts from the default context, and compiling in a
# worker thread never sees (or disturbs) a `with PassContext` of another thread.
_STACK: contextvars.ContextVar = contextvars.ContextVar("autosched_pass_contexts",
                                                        default=())


@dataclass(frozen=True, eq=False)
class PassContext:
    """Which passes run and with what settings; enter it with `with`.

    opt_level: passes with a higher opt_level are skipped (default 2).
    required_pass: names that run whatever their opt_level.
    disabled_pass: names that never run (names no pass has are allowed, as in TVM).
    config: registered config keys -> values (see register_pass_config).
    instruments: PassInstruments called around every pass run in this context.
    """
    opt_level: int = 2
    required_pass: tuple = ()
    disabled_pass: tuple = ()
    config: dict = field(default_factory=dict)
    instruments: tuple = ()

    def __post_init__(self):
        config = dict(self.config or {})
        for key, value in config.items():
            value_type = _config_type(key)
            if not isinstance(value, value_type):
                raise TypeError(f"pass config {key!r} wants a {value_type.__name__}, "
                                f"got {type(value).__name__} {value!r}")
        object.__setattr__(self, "config", config)
        for name in ("required_pass", "disabled_pass", "instruments"):
            object.__setattr__(self, name, tuple(getattr(self, name)))

    @staticmethod
    def current() -> PassContext:
        """The innermost entered context of this thread, or a default one (opt_level 2)."""
        stack = _STACK.get()
        return stack[-1] if stack else _DEFAULT

    @staticmethod
    def entered() -> PassContext | None:
        """The innermost entered context of this thread, None outside any: for a caller
        whose own default differs (the graph build's is opt_level 3)."""
        stack = _STACK.get()
        return stack[-1] if stack else None

    def get_config(self, key: str):
        """The configured value of `key`, or its registered default."""
        _config_type(key)
        return self.config.get(key, _CONFIG_KEYS[key][1])

    def pass_enabled(self, info: PassInfo) -> bool:
        """Whether a pass may run here by name and opt_level (instruments aside)."""
        if info.name in self.disabled_pass:
            return False
        return info.name in self.required_pass or info.opt_level <= self.opt_level

    def __enter__(self) -> PassContext:
        _STACK.set(_STACK.get() + (self,))
        for inst in self.instruments:
            inst.enter_pass_ctx()
        return self

    def __exit__(self, *exc) -> None:
        try:
            for inst in self.instruments:
                inst.exit_pass_ctx()
        finally:
            _STACK.set(_STACK.get()[:-1])


_DEFAULT = PassContext()


class Pass:
    """IRModule -> IRModule under PassContext.current(); subclasses implement `_transform`."""

    info: PassInfo

    def __call__(self, mod: IRModule) -> IRModule:
        if not isinstance(mod, IRModule):
            raise TypeError(f"pass {self.info.name} takes an IRModule, got {type(mod).__name__}"
                            " (wrap a PrimFunc with IRModule.from_func)")
        ctx = PassContext.current()
        if not ctx.pass_enabled(self.info):
            return mod
        # Ask every instrument, as TVM does, so none misses a should_run call.
        if not all([inst.should_run(mod, self.info) for inst in ctx.instruments]):
            return mod
        for name in self.info.required:
            if name in _PASSES:
                mod = _PASSES[name]()(mod)
        for inst in ctx.instruments:
            inst.run_before_pass(mod, self.info)
        out = self._transform(mod, ctx)
        if not isinstance(out, IRModule):
            raise TypeError(f"pass {self.info.name} returned a {type(out).__name__}, "
                            "not an IRModule")
        for inst in ctx.instruments:
            inst.run_after_pass(out, self.info)
        return out

    def _transform(self, mod: IRModule, ctx: PassContext) -> IRModule:
        raise NotImplementedError


@dataclass(frozen=True)
class ModulePass(Pass):
    """A pass over the whole module: `pass_func(mod, ctx) -> IRModule`."""
    info: PassInfo
    pass_func: Callable

    def _transform(self, mod, ctx):
        return self.pass_func(mod, ctx)


@dataclass(frozen=True)
class PrimFuncPass(Pass):
    """A pass applied to each PrimFunc on its own: `pass_func(func, mod, ctx) -> PrimFunc`.

    Every call sees the input module; the returned functions make the new module, keyed
    by their (possibly new) names, with the input module's attrs.
    """
    info: PassInfo
    pass_func: Callable

    def _transform(self, mod, ctx):
        funcs = {}
        for name, func in mod.functions.items():
            if not isinstance(func, PrimFunc):  # a graph function: not this pass's kind
                funcs[name] = func
                continue
            new = self.pass_func(func, mod, ctx)
            if not isinstance(new, PrimFunc):
                raise TypeError(f"pass {self.info.name} returned a {type(new).__name__} "
                                f"for function {name!r}, not a PrimFunc")
            if new.name in funcs:
                raise ValueError(f"pass {self.info.name} gave two functions the name {new.name!r}")
            funcs[new.name] = new
        return IRModule(funcs, mod.attrs)


class Sequential(Pass):
    """Passes run in order, each checked against the context on its own (like TVM's).

    passes: the Pass objects, in order.
    opt_level, name, required: this Sequential's own PassInfo (defaults 0, "Sequential", ()).
    """

    def __init__(self, passes, opt_level: int = 0, name: str = "Sequential", required=()):
        self.passes = tuple(passes)
        for pos, p in enumerate(self.passes):
            if not isinstance(p, Pass):
                raise TypeError(f"item {pos} of Sequential {name} is a {type(p).__name__}, "
                                "not a Pass")
        self.info = PassInfo(name, opt_level, tuple(required))

    def _transform(self, mod, ctx):
        for p in self.passes:
            mod = p(mod)
        return mod


def _pass_decorator(pass_type, method: str, pass_func, opt_level, name, required):
    def create(obj):
        info = PassInfo(name or obj.__name__, opt_level, tuple(required))
        if isinstance(obj, type):
            if not callable(getattr(obj, method, None)):
                raise TypeError(f"class {obj.__name__} needs a {method} method to be a pass")

            @functools.wraps(obj, updated=())
            def construct(*args, **kwargs):
                return pass_type(info, getattr(obj(*args, **kwargs), method))
            return construct
        if not callable(obj):
            raise TypeError(f"{obj!r} is neither a function nor a class; cannot make a pass")
        return pass_type(info, obj)
    return create if pass_func is None else create(pass_func)


def module_pass(pass_func=None, opt_level: int = 0, name: str | None = None, required=()):
    """Make a ModulePass from `fn(mod, ctx)`, or from a class with `transform_module`.

    Use bare (`@module_pass`), with arguments (`@module_pass(opt_level=1, name="X")`) or
    as a call (`module_pass(fn)`). On a class, the result constructs the pass from the
    class's __init__ arguments. name defaults to the function's or class's name.
    """
    return _pass_decorator(ModulePass, "transform_module", pass_func, opt_level, name, required)


def prim_func_pass(pass_func=None, opt_level: int = 0, name: str | None = None, required=()):
    """Make a PrimFuncPass from `fn(func, mod, ctx)`, or a class with `transform_function`.

    Same forms and defaults as module_pass.
    """
    return _pass_decorator(PrimFuncPass, "transform_function", pass_func, opt_level, name,
                           required)


def PrintIR(header: str = "", file=None) -> ModulePass:
    """A pass (opt_level 0, named as in TVM) printing `header` then the module to `file`.

    file defaults to sys.stdout, looked up at each run so that redirection applies.
    """
    def print_ir(mod, ctx):
        print(f"{header}\n{mod}" if header else mod, file=file or sys.stdout)
        return mod
    return ModulePass(PassInfo("PrintIR", 0), print_ir)


class PassTimingInstrument(PassInstrument):
    """Wall time of every pass run, in the order the runs started.

    A Sequential is timed too, around its inner passes: `entries` lists it before them,
    `render()` indents the inner ones under it and totals only the outermost runs, so no
    time counts twice. A pass that raises keeps 0.0 seconds.
    """

    def __init__(self):
        self.entries: list[tuple[str, float]] = []
        self._depths: list[int] = []
        self._open: list[tuple[int, float]] = []

    def exit_pass_ctx(self) -> None:
        self._open.clear()

    def run_before_pass(self, mod, info):
        self._depths.append(len(self._open))
        self._open.append((len(self.entries), time.perf_counter()))
        self.entries.append((info.name, 0.0))

    def run_after_pass(self, mod, info):
        index, start = self._open.pop()
        self.entries[index] = (info.name, time.perf_counter() - start)

    def render(self) -> str:
        """A table: one row per pass run (nested runs indented), then the total."""
        rows = [("  " * depth + name, seconds)
                for (name, seconds), depth in zip(self.entries, self._depths)]
        total = sum(s for (_, s), depth in zip(self.entries, self._depths) if depth == 0)
        width = max([len("pass"), len("total")] + [len(name) for name, _ in rows])
        lines = [f"{'pass':<{width}}  {'ms':>10}"]
        lines += [f"{name:<{width}}  {seconds * 1e3:>10.3f}" for name, seconds in rows]
        lines.append(f"{'total':<{width}}  {total * 1e3:>10.3f}")
        return "\n".join(lines)
