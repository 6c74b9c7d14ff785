"""A template's version as a fingerprint of the code it generates (issue 44).

A record is valid exactly as long as the code its config generates is the code that
was measured. Hashing the template's source (as before) both over- and under-shoots:
moving a schedule to another file or package changes nothing that runs yet changed the
hash (and code moved into compiler/ops fell out of it, so its changes went unseen).
The fingerprint instead lowers the template, for each of its probes (workloads it
registered with `probes=`) on each of TARGETS, with its fallback config and SAMPLES
configs drawn with a fixed seed, through the whole build pipeline (compiler.build
.built_ir: the loop IR code generation sees), and hashes those texts together with
each space's knobs (so a config's index keeps its meaning). A library's template
(search_spaces/library.py) hashes the LLVM IR of its library call instead.

The fingerprints are recorded in versions.json, which the registry reads when a
template registers (no lowering at import), and tests/search_spaces/test_fingerprint.py
recomputes them: a change that alters a template's code fails it until the file is
rewritten, which is the moment its records go stale:

    python -m search_spaces.fingerprint            # print what differs
    python -m search_spaces.fingerprint --update   # rewrite versions.json
"""
from __future__ import annotations

import argparse
import hashlib
import json
import sys

from compiler import Target
from compiler.build import built_ir

from .registry import VERSIONS_FILE, Template, get_template, recorded_versions, templates

TARGETS = ("llvm -mcpu=haswell", "llvm -mcpu=skylake-avx512")
"""AVX2's 8 lanes and AVX-512's 16: a template sizes its tiles by the target's vectors.
Fixed CPUs, so the fingerprint is the same on every x86 host."""
SAMPLES = 2
SEED = 44


def generated_code(tmpl: Template, args: tuple, config, target: str) -> str:
    """The text of the code `tmpl` generates for bound `args` with `config` on `target`."""
    with Target(target):
        sch, tensors = tmpl.run(config, args, target)
        source = getattr(tmpl.library, "source", None)
        if source is not None:
            return source(args, tensors, Target(target))
        return str(built_ir(sch, tensors, "probe"))


def fingerprint(tmpl: Template) -> str:
    """12 hex digits of sha256 over the code `tmpl` generates at its probes (see the
    module docstring)."""
    if not tmpl.probes:
        raise ValueError(f"template {tmpl.name!r} has no probes to fingerprint")
    digest = hashlib.sha256()
    for target in TARGETS:
        for probe in tmpl.probes:
            args = tmpl.bind(probe)
            space = tmpl.space(args, target)
            knobs = [knob.describe() for knob in space.space_map.values()]
            digest.update(json.dumps([args, knobs], default=repr).encode())
            for config in [space.fallback(), *space.sample(SAMPLES, seed=SEED)]:
                digest.update(generated_code(tmpl, args, config, target).encode())
    return digest.hexdigest()[:12]


def probed() -> dict[str, Template]:
    """The registered templates that have probes, by name (importing this module ran
    the package's __init__, which registers its templates)."""
    return {name: get_template(name) for name in templates() if get_template(name).probes}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description="Fingerprint the templates' generated code.")
    p.add_argument("--update", action="store_true", help=f"rewrite {VERSIONS_FILE}")
    opt = p.parse_args(argv)
    recorded = recorded_versions()
    now = {name: fingerprint(t) for name, t in probed().items()}
    for name, value in now.items():
        if recorded.get(name) != value:
            print(f"{name}: {recorded.get(name, 'not recorded')} -> {value}")
    if opt.update:
        with open(VERSIONS_FILE, "w") as f:
            json.dump(now, f, indent=1, sort_keys=True)
            f.write("\n")
        print(f"wrote {VERSIONS_FILE}")
    return 0 if opt.update or now == recorded else 1


if __name__ == "__main__":
    sys.exit(main())
