"""The x86 CPU features a target's code may use, and where cpuid reports each: what a
model library checks when an instance is created (runtime/model_api.c), so a library
built for a CPU the host is not gives an error naming the missing features instead of
an illegal instruction.

The features are those of the target's LLVM feature string (`+avx512f,...`: the host's
own, or `-mattr`); a target named by its CPU alone (`-mcpu=haswell`) has the features
LLVM gives that CPU, which llvmlite does not expose, so they come from the table of
CPU_FEATURES below (x86-64 psABI levels and what each CPU family adds), and for a CPU
not in it from the vector unit LLVM generates for it (Target.vector_unit). Only the
features LLVM may use in float and integer code are checked (the vector ISA, FMA, the
bit-manipulation ones); AMX and the like, which it never uses on its own, are not.
"""
from __future__ import annotations

from ..target import Target

EAX, EBX, ECX, EDX = range(4)
AVX_STATE = 0x6      # XCR0: SSE and AVX registers saved by the OS
AVX512_STATE = 0xE6  # and the opmask and upper ZMM registers

# LLVM feature name -> (cpuid leaf, subleaf, register, bit, XCR0 bits the OS must set)
CPUID = {
    "sse3": (1, 0, ECX, 0, 0), "pclmul": (1, 0, ECX, 1, 0), "ssse3": (1, 0, ECX, 9, 0),
    "fma": (1, 0, ECX, 12, AVX_STATE), "sse4.1": (1, 0, ECX, 19, 0),
    "sse4.2": (1, 0, ECX, 20, 0), "movbe": (1, 0, ECX, 22, 0), "popcnt": (1, 0, ECX, 23, 0),
    "aes": (1, 0, ECX, 25, 0), "avx": (1, 0, ECX, 28, AVX_STATE),
    "f16c": (1, 0, ECX, 29, AVX_STATE),
    "bmi": (7, 0, EBX, 3, 0), "avx2": (7, 0, EBX, 5, AVX_STATE), "bmi2": (7, 0, EBX, 8, 0),
    "avx512f": (7, 0, EBX, 16, AVX512_STATE), "avx512dq": (7, 0, EBX, 17, AVX512_STATE),
    "adx": (7, 0, EBX, 19, 0), "avx512ifma": (7, 0, EBX, 21, AVX512_STATE),
    "avx512cd": (7, 0, EBX, 28, AVX512_STATE), "sha": (7, 0, EBX, 29, 0),
    "avx512bw": (7, 0, EBX, 30, AVX512_STATE), "avx512vl": (7, 0, EBX, 31, AVX512_STATE),
    "avx512vbmi": (7, 0, ECX, 1, AVX512_STATE), "avx512vbmi2": (7, 0, ECX, 6, AVX512_STATE),
    "gfni": (7, 0, ECX, 8, 0), "vaes": (7, 0, ECX, 9, AVX_STATE),
    "vpclmulqdq": (7, 0, ECX, 10, AVX_STATE), "avx512vnni": (7, 0, ECX, 11, AVX512_STATE),
    "avx512bitalg": (7, 0, ECX, 12, AVX512_STATE),
    "avx512vpopcntdq": (7, 0, ECX, 14, AVX512_STATE),
    "avx512vp2intersect": (7, 0, EDX, 8, AVX512_STATE),
    "avx512fp16": (7, 0, EDX, 23, AVX512_STATE),
    "avxvnni": (7, 1, EAX, 4, AVX_STATE), "avx512bf16": (7, 1, EAX, 5, AVX512_STATE),
    "lzcnt": (0x80000001, 0, ECX, 5, 0),
}

_V2 = ("sse3", "ssse3", "sse4.1", "sse4.2", "popcnt")
_V3 = (*_V2, "avx", "avx2", "bmi", "bmi2", "f16c", "fma", "lzcnt", "movbe")
_V4 = (*_V3, "avx512f", "avx512bw", "avx512cd", "avx512dq", "avx512vl")
_ICELAKE = (*_V4, "avx512ifma", "avx512vbmi", "avx512vbmi2", "avx512vnni", "avx512bitalg",
            "avx512vpopcntdq", "gfni", "vaes", "vpclmulqdq")
_ZNVER4 = (*_ICELAKE, "avx512bf16")

# LLVM's CPU names -> the checked features LLVM gives them
CPU_FEATURES = {
    "x86-64": (), "generic": (), "x86-64-v2": _V2, "nehalem": _V2, "x86-64-v3": _V3,
    "x86-64-v4": _V4, "haswell": _V3, "broadwell": (*_V3, "adx"),
    "skylake": (*_V3, "adx"), "alderlake": (*_V3, "adx", "avxvnni"),
    "skylake-avx512": _V4, "cascadelake": (*_V4, "avx512vnni"),
    "cooperlake": (*_V4, "avx512vnni", "avx512bf16"),
    "icelake-client": _ICELAKE, "icelake-server": _ICELAKE, "rocketlake": _ICELAKE,
    "tigerlake": (*_ICELAKE, "avx512vp2intersect"),
    "sapphirerapids": (*_ICELAKE, "avx512bf16", "avx512fp16", "avxvnni"),
    "emeraldrapids": (*_ICELAKE, "avx512bf16", "avx512fp16", "avxvnni"),
    "znver1": _V3, "znver2": _V3, "znver3": _V3, "znver4": _ZNVER4,
    "znver5": (*_ZNVER4, "avx512vp2intersect", "avxvnni"),
}


def required_features(target: Target) -> list[str]:
    """The checked features (CPUID's keys) that code built for `target` may use, sorted;
    none for a CPU that is not x86."""
    if not target.mtriple.startswith(("x86_64", "i386", "i686")):
        return []
    given = [f.strip() for f in target.features.split(",") if f.strip()]
    named = CPU_FEATURES.get(target.mcpu)
    if named is None and not any(f.startswith("+") for f in given):
        unit = target.vector_unit
        named = _V4 if unit.bits == 512 else _V3 if unit.fma else \
            ("avx",) if unit.bits == 256 else ()
    features = set(named or ())
    for entry in given:
        name = entry.lstrip("+-")
        if entry.startswith("-"):
            features.discard(name)
        elif name in CPUID:
            features.add(name)
    while True:  # LLVM turns off what needs a feature turned off (-mattr=-avx512f)
        kept = {f for f in features if all(p in features for p in _needs(f))}
        if kept == features:
            return sorted(features)
        features = kept


# a feature -> the ones it builds on, which LLVM turns it off with (every avx512* but
# avx512f builds on avx512f)
_BUILDS_ON = {"avx512f": ("avx2", "fma", "f16c"), "avx2": ("avx",), "fma": ("avx",),
              "f16c": ("avx",), "vaes": ("avx",), "vpclmulqdq": ("avx",),
              "avxvnni": ("avx2",)}


def _needs(feature: str) -> tuple[str, ...]:
    """The features LLVM turns off `feature` with."""
    if feature.startswith("avx512") and feature != "avx512f":
        return ("avx512f",)
    return _BUILDS_ON.get(feature, ())
