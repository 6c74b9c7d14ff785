"""The template registry: `@template(name)` registers `fn(cfg, *args) -> (schedule,
tensors)`; `space(name, *args)` is its ConfigSpace for those arguments.

`@template(name, reference=ref)` also names a numpy reference `ref(inputs, *args)` for
what the template computes, so that a tuner can check a measured config's output
against it without knowing the operator (`Template.reference_outputs`).

A template's `version` is carried by every config made from it, so that records written
for an older template are recognised as stale. It follows the code the template
generates: a template registered with `probes=` (workloads to try it on; every template
of this package has them) has as version the fingerprint of the loop IR it lowers to at
those workloads for fixed configs on fixed targets (search_spaces/fingerprint.py), as
`versions.json` beside this file records it and a test recomputes it. So a refactor that
moves a schedule between files or packages keeps the records valid, and a change of the
generated code makes them stale. A template without probes (a user's own) has a short
hash of its source and of the helpers of its package that it calls.
"""
from __future__ import annotations

import functools
import hashlib
import inspect
import json
import marshal
import os
import pickle
import typing
from dataclasses import dataclass, field
from collections.abc import Callable

import numpy as np

from compiler import Target, disk_cache
from compiler.build import build_key

from .binding import Binding
from .errors import SpaceError, did_you_mean
from .config_space import ConfigSpace

_TEMPLATES: dict[str, Template] = {}
_PLAIN = (bool, int, float, str, type(None))
VERSIONS_FILE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "versions.json")


def recorded_versions() -> dict[str, str]:
    """{template: the fingerprint of its generated code}, as versions.json records it
    (search_spaces/fingerprint.py writes it)."""
    try:
        with open(VERSIONS_FILE) as f:
            return json.load(f)
    except FileNotFoundError:
        return {}


_RECORDED = recorded_versions()


def _source_version(fn: Callable) -> str:
    """sha256 of the function's source and of the helpers it calls, 12 hex digits.

    A template's schedule usually lives in helper functions of its package (matmul's
    `_schedule`, the row kernels' `schedule_rows`): a change there changes the
    configs' meaning as much as a change of the body, so the hash takes in, transitively,
    every function of the template's own top-level package that its code names, and the
    plain constants it names (tile limits). Code of other packages (compiler.ops) is not
    included. A function whose source cannot be read (made by exec) counts by its code
    object."""
    return hashlib.sha256(_source_closure(fn, set())).hexdigest()[:12]


def _source_closure(fn: Callable, seen: set) -> bytes:
    seen.add(fn)
    try:
        data = inspect.getsource(fn).encode()
    except (OSError, TypeError):
        data = marshal.dumps(fn.__code__)
    package = _package(fn)
    for name in sorted(_names(fn.__code__)):
        value = fn.__globals__.get(name)
        if inspect.isfunction(value):
            if value not in seen and _package(value) == package and value.__module__ != __name__:
                data += _source_closure(value, seen)
        elif isinstance(value, _PLAIN):
            data += f"\n{name} = {value!r}".encode()
    return data


def _package(fn: Callable) -> str:
    return (fn.__module__ or "").partition(".")[0]


def _names(code) -> set[str]:
    """The global (and attribute) names a code object and the code nested in it use."""
    names = set(code.co_names)
    for const in code.co_consts:
        if inspect.iscode(const):
            names |= _names(const)
    return names


def _plain(value):
    """`value` as a workload argument: numbers, strings, None, and tuples of them (lists
    become tuples), so that a workload is hashable and can be stored as JSON."""
    if isinstance(value, _PLAIN):
        return value
    if isinstance(value, (list, tuple)):
        return tuple(_plain(v) for v in value)
    raise TypeError


@functools.cache
def _type_hints(fn: Callable) -> dict:
    """The evaluated annotations of a template's function, {} where they do not
    evaluate (not ours to check). Once per function: evaluating them (the annotations
    are strings) took most of a bind, which the chooser asks for every candidate it
    weighs."""
    try:
        return typing.get_type_hints(fn)
    except (NameError, TypeError, AttributeError):
        return {}


def _fits(value, hint) -> bool:
    """Whether `value` fits the parameter annotation `hint` (only plain types are checked)."""
    kind = typing.get_origin(hint) or hint
    if not isinstance(kind, type):
        return True
    if kind is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if kind is int:
        return isinstance(value, int) and not isinstance(value, bool)
    return isinstance(value, kind)


@dataclass(frozen=True)
class Template:
    """A registered template: `fn(cfg, *args)` returns `(schedule, tensors)`.

    signature: the parameters after `cfg`, as users pass them to instantiate / space.
    version: the fingerprint of its generated code recorded in versions.json, for a
        template with probes; else the short source hash (see the module docstring).
    reference: `reference(inputs, *args)`, the expected output(s) in numpy, or None.
    library: for a library's template (search_spaces/library.py), `library(args,
        tensors, target)` -> the object code of the library's kernel on the template's
        tensors, which tuning measures instead of building the schedule; None for the
        others.
    binding: how it serves a graph op (binding.py), or None for a template no graph op
        uses (an operator's template, the blur).
    """
    name: str
    fn: Callable
    signature: inspect.Signature
    version: str
    reference: Callable | None = field(default=None, compare=False)
    library: Callable | None = field(default=None, compare=False)
    probes: tuple = field(default=(), compare=False)
    binding: Binding | None = field(default=None, compare=False)
    _spaces: dict = field(default_factory=dict, compare=False, repr=False)

    def bind(self, args: tuple) -> tuple:
        """`args` checked against the signature and the plain-type annotations, defaults
        filled in, lists made tuples: the arguments part of a workload."""
        try:
            bound = self.signature.bind(*args)
        except TypeError as e:
            raise SpaceError(f"{self._where()}: {e}") from None
        bound.apply_defaults()
        hints = _type_hints(self.fn)
        out = []
        for pname, value in bound.arguments.items():
            try:
                value = _plain(value)
            except TypeError:
                raise SpaceError(f"{self._where()}: argument {pname} must be a number, a string, "
                                 f"None or a tuple of them (workloads are stored as JSON), "
                                 f"got {value!r}") from None
            if pname in hints and not _fits(value, hints[pname]):
                raise SpaceError(f"{self._where()}: argument {pname} must be "
                                 f"{getattr(hints[pname], '__name__', hints[pname])}, "
                                 f"got {value!r} ({type(value).__name__})")
            out.append(value)
        return tuple(out)

    def _where(self) -> str:
        """The template as an error names it: its name and signature (made only for an
        error: formatting a signature costs more than binding it, and the chooser binds
        hundreds of candidates a model)."""
        return f"template {self.name!r}{self.signature}"

    def run(self, cfg, args: tuple, target=None):
        """Run the template with `cfg` (a ConfigSpace or a ConfigEntity) on bound `args`
        for `target` (compiler.Target.resolve: default the entered one, else the host):
        the template asks `Target.current()` for the vector unit it sizes tiles by."""
        with Target.resolve(target):
            result = self.fn(cfg, *args)
        if not (isinstance(result, tuple) and len(result) == 2):
            raise SpaceError(f"template {self.name!r} must return (schedule, tensors), "
                             f"got {result!r}")
        return result

    def space(self, args: tuple, target=None) -> ConfigSpace:
        """The ConfigSpace for bound `args` on `target` (default: the entered one, else
        the host), built once per vector unit by running the template with it: a space
        may depend on the target's vector unit (its tiles fit the registers), on nothing
        else of it."""
        target = Target.resolve(target)
        key = (args, target.vector_unit)
        if key not in self._spaces:
            stored = self._stored_key(args, target)
            cs = _load_space(stored, self.name)
            if cs is None:
                cs = ConfigSpace(self.name, args, self.version)
                self.run(cs, args, target)
                cs = cs.complete()
                if stored:
                    disk_cache.store(stored, {"config_space": self.name}, pickle.dumps(cs))
            self._spaces[key] = cs
        return self._spaces[key]

    def _stored_key(self, args: tuple, target) -> str | None:
        """The disk cache's key of this template's space for `args` on `target`'s vector
        unit: a build whose kernels come from the cache need not run the templates its
        chooser weighs to define their knobs. It holds what the space follows from: the
        template, its version, the arguments, the vector unit, and what a kernel's key
        holds besides its own description (compiler.build.build_key: the target, the
        source of the compiler and of this package, ...). None with the cache off."""
        context = build_key(target, [os.path.dirname(os.path.abspath(__file__))])
        if context is None:
            return None
        return disk_cache.cache_key("config space", self.name, self.version, repr(args),
                                    repr(target.vector_unit), context)

    def reference_outputs(self, args: tuple, inputs: list) -> list[np.ndarray]:
        """The expected outputs for bound `args` and the numpy `inputs` (in the order the
        template returns its input tensors), always as a list, one array per output."""
        if self.reference is None:
            raise SpaceError(f"template {self.name!r} has no numpy reference; register it "
                             f"with @template({self.name!r}, reference=...)")
        result = self.reference(list(inputs), *args)
        outputs = result if isinstance(result, (list, tuple)) else [result]
        return [np.asarray(out) for out in outputs]


def template(name: str, reference: Callable | None = None, library: Callable | None = None,
             probes: tuple = (), binding: Binding | None = None):
    """Decorator: register `fn(cfg, *args) -> (schedule, tensors)` as template `name`;
    returns the Template (see the module docstring for its `.version`).

    reference: optional `reference(inputs, *args)`: from the numpy inputs (in the order
    of the template's input tensors) and the bound arguments (defaults filled in), the
    expected output array, or a list of them for several outputs. Default None.

    library: optional `library(args, tensors, target) -> bytes`: the template is a
    library's (Template.library); its schedule is never built. Its `source(args,
    tensors, target)`, when it has one, is the code its version fingerprints.

    probes: argument tuples (small, odd workloads that take the template's branches)
    at which its generated code is fingerprinted for its version.

    binding: how the template serves a graph op (binding.Binding): the strategies, `log
    best`'s workload calls and task extraction read it.

    The parameters after `cfg` must be positional; instantiate passes them in order.
    Registering the same function again (a module reload) replaces it; another
    function under a taken name is an error.
    """
    if not isinstance(name, str) or not name:
        raise SpaceError(f"a template name must be a non-empty string, got {name!r}")
    if reference is not None and not callable(reference):
        raise SpaceError(f"template {name!r}: reference must be a function "
                         f"reference(inputs, *args), got {reference!r}")

    def register(fn: Callable) -> Template:
        params = list(inspect.signature(fn).parameters.values())
        if not params or any(p.kind not in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
                             for p in params):
            raise SpaceError(f"template {name!r}: {fn.__qualname__} must take cfg and then "
                             f"positional parameters only, got {inspect.signature(fn)}")
        old = _TEMPLATES.get(name)
        if old is not None and (old.fn.__module__, old.fn.__qualname__) != \
                (fn.__module__, fn.__qualname__):
            raise SpaceError(f"template {name!r} is already registered by "
                             f"{old.fn.__module__}.{old.fn.__qualname__}")
        version = _RECORDED.get(name) if probes else None
        tmpl = Template(name, fn, inspect.Signature(params[1:]),
                        version or _source_version(fn), reference, library, tuple(probes),
                        binding)
        _TEMPLATES[name] = tmpl
        return tmpl

    return register


def get_template(name: str) -> Template:
    """The template registered as `name`; a SpaceError with the nearest name otherwise."""
    if name not in _TEMPLATES:
        raise SpaceError(f"unknown template {name!r}{did_you_mean(str(name), _TEMPLATES)}")
    return _TEMPLATES[name]


def space(name: str, *args, target=None) -> ConfigSpace:
    """The ConfigSpace of template `name` for `args` on `target` (default: the entered
    one, else the host; the template runs in space-building mode, its schedule is
    dropped)."""
    tmpl = get_template(name)
    return tmpl.space(tmpl.bind(args), target)


def templates() -> dict[str, str]:
    """Registered template names -> their argument signatures, e.g.
    {"matmul": "(M: int, N: int, K: int, dtype: str = 'float32')"}."""
    return {name: str(_TEMPLATES[name].signature) for name in sorted(_TEMPLATES)}


def bound_templates(op_name: str | None = None) -> list[Template]:
    """The templates with a binding (binding.py), of graph op `op_name` (None: of any op),
    in the order they were registered."""
    return [t for t in _TEMPLATES.values()
            if t.binding is not None and (op_name is None or op_name in t.binding.ops)]


def _load_space(key: str | None, name: str) -> ConfigSpace | None:
    """The space stored under `key` (Template._stored_key), or None: none stored, or
    an entry that does not read back as this template's ConfigSpace (a miss)."""
    found = disk_cache.load(key) if key else None
    if found is None or found[0].get("config_space") != name:
        return None
    try:
        cs = pickle.loads(found[1])
    except Exception:  # noqa: BLE001 - a damaged entry is a miss
        return None
    return cs if isinstance(cs, ConfigSpace) and cs.template_name == name else None
