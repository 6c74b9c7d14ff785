"""Target: which CPU code is generated for, parsed from TVM-style strings.

`Target("llvm")` is the host: LLVM's triple, CPU name and feature list as the process
sees them, and all the cores this process may run on (the host's CPU named without
`-mattr` has the host's features too). Options override each part:
`Target("llvm -mcpu=znver5 -num-cores=2")`; `-mattr=+avx2,-avx512f` adds or removes
features from those the CPU has. Two targets are equal when their canonical strings are,
so a target can key tuning records: the string names the CPU, the triple where it is not
this process's, the features where they are not the CPU's own (so a record made with
`-mattr=-avx512f` never shares a target with a native one), and the cores.

A target answers its vector unit (`vector_bits`, `vector_lanes`, `vector_registers`,
`has_fma`), which kernels size their vectors and register tiles by, and its int8 dot
product (`int8_dot`: VNNI's vpdpbusd, else AVX2's or AVX-512BW's vpmaddubsw, else none),
which codegen emits `te.dot_u8s8` with. LLVM knows what
every CPU has but llvmlite does not expose its tables, so the unit is found by asking
LLVM to compile a 16-float addition and an FMA for the target and reading which
registers and instructions the assembly uses: `llvm -mcpu=haswell` is AVX2 on any
host, and so is `-mcpu=skylake-avx512 -mattr=-avx512f`. `with target:` makes it the current
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


@functools.cache
def _host_cpu() -> str:
    """LLVM's name of the host CPU, asked once per process."""
    return llvm.get_host_cpu_name()


def _canonical(features: str) -> str:
    """`features` with one entry per feature (the last one given wins, as in LLVM),
    sorted: two spellings of the same features compare equal."""
    last = {}
    for entry in filter(None, (f.strip() for f in features.split(","))):
        last[entry.lstrip("+-")] = entry if entry[0] in "+-" else "+" + entry
    return ",".join(last[name] for name in sorted(last))


@functools.cache
def _text(kind: str, mcpu: str, mtriple: str, features: str, num_cores: int) -> str:
    """A target's canonical string: `-mtriple` only where it is not this process's,
    `-mattr` only where the features are not those the CPU implies (none given: LLVM's
    for the name; or the host's own on the host's CPU)."""
    mattr = _canonical(features)
    implied = mattr == "" or (mcpu == _host_cpu() and mattr == _canonical(_host_features()))
    triple = "" if mtriple == llvm.get_process_triple() else f" -mtriple={mtriple}"
    shown = "" if implied else f" -mattr={mattr}"
    return f"{kind} -mcpu={mcpu}{triple}{shown} -num-cores={num_cores}"


@dataclass(frozen=True)
class VectorUnit:
    """What a target's SIMD unit offers float32 kernels: the widest vector register in
    bits, how many vector registers there are, and whether it fuses multiply-adds."""
    bits: int
    registers: int
    fma: bool


_PROBE = """
define void @probe(ptr %p, ptr %q) {
  %a = load <16 x float>, ptr %p
  %b = fadd <16 x float> %a, %a
  store <16 x float> %b, ptr %p
  %x = load float, ptr %q
  %y = call float @llvm.fma.f32(float %x, float %x, float %x)
  store float %y, ptr %q
  ret void
}
declare float @llvm.fma.f32(float, float, float)
"""


@functools.cache
def _vector_unit(mtriple: str, mcpu: str, features: str) -> VectorUnit:
    """The VectorUnit of an LLVM CPU with `features` (see the module docstring): x86 by
    the registers LLVM picks for a 16-float addition (zmm: 512 bits, 32 registers; ymm:
    256 bits; else 128, 16 registers; 32-bit x86 has 8 of any width), AArch64 as NEON
    (128 bits, 32 registers)."""
    arch = mtriple.split("-")[0]
    if arch in ("aarch64", "arm64"):
        return VectorUnit(128, 32, True)
    if arch not in ("x86_64", "i386", "i686"):
        return VectorUnit(128, 16, False)
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    tm = llvm.Target.from_triple(mtriple).create_target_machine(cpu=mcpu, features=features)
    mod = llvm.parse_assembly(_PROBE)
    mod.triple = tm.triple
    asm = tm.emit_assembly(mod)
    bits = 512 if "zmm" in asm else 256 if "ymm" in asm else 128
    registers = 8 if arch != "x86_64" else 32 if bits == 512 else 16
    return VectorUnit(bits, registers, "vfmadd" in asm)


_INT8_PROBE = """
define void @probe(ptr %p, ptr %q, ptr %r) {
  %a = load <8 x i16>, ptr %p
  %pb = getelementptr <8 x i16>, ptr %p, i64 1
  %b = load <8 x i16>, ptr %pb
  %m = call <4 x i32> @llvm.x86.sse2.pmadd.wd(<8 x i16> %a, <8 x i16> %b)
  %acc = load <4 x i32>, ptr %q
  %s = add <4 x i32> %acc, %m
  store <4 x i32> %s, ptr %q
  %w = load <32 x i16>, ptr %r
  %w2 = add <32 x i16> %w, %w
  store <32 x i16> %w2, ptr %r
  %d = load <8 x i32>, ptr %r
  %d2 = add <8 x i32> %d, %d
  store <8 x i32> %d2, ptr %r
  ret void
}
declare <4 x i32> @llvm.x86.sse2.pmadd.wd(<8 x i16>, <8 x i16>)
"""


@functools.cache
def _int8_dot(mtriple: str, mcpu: str, features: str) -> str:
    """The int8 dot-product instructions of an x86 CPU with `features`: "avx512vnni"
    (vpdpbusd on zmm, and on ymm / xmm through AVX512VL), "avxvnni" (vpdpbusd on ymm,
    VEX-encoded: Alder Lake, Zen 5 without AVX-512), "avx512bw" (vpmaddubsw and vpmaddwd
    on zmm), "avx2" (the same on ymm), or "" (none: codegen widens and multiplies).
    Read, as the vector unit is, from the assembly LLVM writes for the target: a
    multiply-add of 16-bit pairs added to an accumulator becomes vpdpwssd where VNNI is
    (with a {vex} prefix for AVX-VNNI, asked with AVX512-VNNI turned off, and the other
    way round), 32 16-bit additions take one zmm register with AVX-512BW, 8 32-bit ones
    one ymm register with AVX2. Emitting an intrinsic the CPU lacks aborts LLVM, so
    this is asked before any is emitted."""
    if mtriple.split("-")[0] not in ("x86_64", "i386", "i686"):
        return ""
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()

    def assembly(extra: str) -> str:
        feats = ",".join(filter(None, (features, extra)))
        tm = llvm.Target.from_triple(mtriple).create_target_machine(cpu=mcpu, features=feats)
        mod = llvm.parse_assembly(_INT8_PROBE)
        mod.triple = tm.triple
        return tm.emit_assembly(mod)

    evex = assembly("-avxvnni")
    if "vpdpwssd" in evex and "{vex}" not in evex:
        return "avx512vnni"
    if "{vex}" in assembly("-avx512vnni"):
        return "avxvnni"
    if "%zmm" in evex:
        return "avx512bw"
    return "avx2" if "%ymm" in evex else ""


def usable_cores() -> int:
    """The cores this process may run on (its affinity: taskset, a container's cpuset),
    which can be fewer than the machine has: a target's default -num-cores, and the
    most workers or threads a build starts."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


@dataclass(frozen=True, eq=False)
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
        cores = given.get("num-cores", str(usable_cores()))
        if not cores.isdigit() or int(cores) < 1:
            raise ValueError(f"-num-cores must be a positive integer, got {cores!r} in {spec!r}")
        mcpu = given.get("mcpu") or _host_cpu()
        mtriple = given.get("mtriple") or llvm.get_process_triple()
        # the text form leaves out the host's own features on the host's CPU (_text), so
        # that CPU without -mattr has them: str(target) read back is the same target
        own = "mcpu" not in given or (mcpu == _host_cpu() and
                                      mtriple == llvm.get_process_triple())
        mattr = given.get("mattr", _host_features() if own else "")
        object.__setattr__(self, "kind", kind)
        object.__setattr__(self, "mcpu", mcpu)
        object.__setattr__(self, "mtriple", mtriple)
        object.__setattr__(self, "features", mattr)
        object.__setattr__(self, "num_cores", int(cores))

    @property
    def vector_unit(self) -> VectorUnit:
        """The SIMD unit of this CPU with these features (see the module docstring)."""
        return _vector_unit(self.mtriple, self.mcpu, self.features)

    @property
    def vector_bits(self) -> int:
        """Widest SIMD register the target has (512 with AVX-512, 256 with AVX2, ...)."""
        return self.vector_unit.bits

    @property
    def vector_lanes(self) -> int:
        """float32 lanes of the widest vector register: 16 with AVX-512, 8 with AVX2 or
        AVX, 4 with SSE or NEON."""
        return self.vector_unit.bits // 32

    @property
    def vector_registers(self) -> int:
        """How many vector registers a kernel may keep values in: 32 with AVX-512 or
        NEON, 16 otherwise (8 on 32-bit x86)."""
        return self.vector_unit.registers

    @property
    def has_fma(self) -> bool:
        """Whether the target fuses multiply-adds in one instruction."""
        return self.vector_unit.fma

    @property
    def int8_dot(self) -> str:
        """The int8 dot-product instructions of this CPU: "avx512vnni", "avxvnni",
        "avx512bw", "avx2" or "" (see _int8_dot)."""
        return _int8_dot(self.mtriple, self.mcpu, self.features)

    def __str__(self):
        return _text(self.kind, self.mcpu, self.mtriple, self.features, self.num_cores)

    def __eq__(self, other):
        return isinstance(other, Target) and str(self) == str(other)

    def __hash__(self):
        return hash(str(self))

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
