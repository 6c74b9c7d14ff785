"""Target: which CPU code is generated for, parsed from TVM-style strings.

`Target("llvm")` is the host: LLVM's triple, CPU name and feature list as the process
sees them, and all the cores this process may run on. Options override each part:
`Target("llvm -mcpu=znver5 -num-cores=2")`. Two targets are equal when their canonical
strings are, so a target can key tuning records. `with target:` makes it the current
one (`Target.current()`, as TVM's), which code generated outside LLVM follows: the graph
build enters its target while the external codegens run.
"""
from __future__ import annotations

import contextvars
import functools
import os
from dataclasses import dataclass

import llvmlite.binding as llvm

_OPTIONS = ("mcpu", "mtriple", "mattr", "num-cores")
_CURRENT: contextvars.ContextVar = contextvars.ContextVar("autosched_targets", default=())


@functools.cache
def _host_features() -> str:
    """LLVM's feature string of the host CPU, asked once per process."""
    return llvm.get_host_cpu_features().flatten()


@dataclass(frozen=True)
class Target:
    """A code generation target. `features` is LLVM's `+avx512f,...` string."""
    kind: str
    mcpu: str
    mtriple: str
    features: str
    num_cores: int

    def __init__(self, spec: str | Target = "llvm"):
        if isinstance(spec, Target):
            for name in ("kind", "mcpu", "mtriple", "features", "num_cores"):
                object.__setattr__(self, name, getattr(spec, name))
            return
        if not isinstance(spec, str) or not spec.split():
            raise ValueError(f"target must be a string like 'llvm -mcpu=znver5', got {spec!r}")
        kind, *opts = spec.split()
        if kind != "llvm":
            raise ValueError(f"unknown target kind {kind!r} in {spec!r}; only 'llvm' is supported")
        given = {}
        for opt in opts:
            key, eq, value = opt.lstrip("-").partition("=")
            if not opt.startswith("-") or not eq or key not in _OPTIONS:
                raise ValueError(f"bad target option {opt!r} in {spec!r}; "
                                 f"options are {', '.join('-' + o + '=...' for o in _OPTIONS)}")
            given[key] = value
        cores = given.get("num-cores", str(len(os.sched_getaffinity(0))))
        if not cores.isdigit() or int(cores) < 1:
            raise ValueError(f"-num-cores must be a positive integer, got {cores!r} in {spec!r}")
        host_cpu = "mcpu" not in given
        mcpu = given.get("mcpu") or llvm.get_host_cpu_name()
        mattr = given.get("mattr", _host_features() if host_cpu else "")
        object.__setattr__(self, "kind", kind)
        object.__setattr__(self, "mcpu", mcpu)
        object.__setattr__(self, "mtriple", given.get("mtriple") or llvm.get_process_triple())
        object.__setattr__(self, "features", mattr)
        object.__setattr__(self, "num_cores", int(cores))

    @property
    def vector_bits(self) -> int:
        """Widest SIMD register the target has (512 with AVX-512, 256 with AVX2, ...)."""
        feats = set(self.features.split(","))
        if "+avx512f" in feats:
            return 512
        if "+avx2" in feats or "+avx" in feats:
            return 256
        return 128

    def __str__(self):
        return f"{self.kind} -mcpu={self.mcpu} -num-cores={self.num_cores}"

    def __enter__(self) -> Target:
        _CURRENT.set(_CURRENT.get() + (self,))  # a stack per thread (a context variable)
        return self

    def __exit__(self, *exc):
        _CURRENT.set(_CURRENT.get()[:-1])

    @staticmethod
    def resolve(target=None) -> Target:
        """`target` as a Target, else the innermost entered one, else the host's: the
        target a decision is made for when its caller names none."""
        if target is not None:
            return Target(target)
        return Target.current() or Target("llvm")

    @staticmethod
    def current() -> Target | None:
        """The target of the innermost `with target:` block, None outside any."""
        stack = _CURRENT.get()
        return stack[-1] if stack else None


def host_target() -> Target:
    """The target that `Target("llvm")` means on this machine."""
    return Target("llvm")
