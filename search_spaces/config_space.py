"""ConfigSpace (the knobs of a template for one set of arguments) and ConfigEntity (one
point of it), after AutoTVM's task/space.py.

The registry runs a template with a fresh ConfigSpace as `cfg` ("space building"): each
define_* adds a knob, and `cfg[name]` answers with that knob's fallback value so that the
template can finish its schedule. Afterwards the template runs with a ConfigEntity as
`cfg`: define_* only check the knob's name, `cfg[name]` is the chosen value.
"""
from __future__ import annotations

import hashlib
import json
import math
import random
from dataclasses import dataclass
from functools import cached_property
from typing import ClassVar

from .errors import SpaceError, did_you_mean
from .knobs import AnnotateSpace, KnobSpace, OtherOptionSpace, ReorderSpace, SplitSpace


class ConfigSpace:
    """The knobs of template `template_name` for `args`, filled in while it runs.

    Points are numbered mixed-radix over the knobs in definition order, the first knob
    varying fastest (AutoTVM's numbering). The first question about the whole space
    (len, get, iter, sample, neighbours, fallback, fingerprint) completes it: a knob
    defined after that is an error, since it would renumber configs already handed out.
    """

    is_fallback = False

    def __init__(self, template_name: str = "", args: tuple = (), template_version: str = ""):
        self.template_name = template_name
        self.args = tuple(args)
        self.template_version = template_version
        self.space_map: dict[str, KnobSpace] = {}
        self._complete = False

    @property
    def title(self) -> str:
        """The template, its arguments and its version, for messages."""
        if not self.template_name:
            return "config space"
        return f"template {self.template_name!r}{self.args!r} version {self.template_version}"

    # ------------------------------------------------------------------ defining knobs

    def _add(self, name: str, make):
        if self._complete:
            raise SpaceError(f"{self.title}: knob {name!r} is defined after the space was "
                             f"complete; define knobs only while the template builds its space")
        if not isinstance(name, str) or not name:
            raise SpaceError(f"{self.title}: a knob name must be a non-empty string, "
                             f"got {name!r}")
        if name in self.space_map:
            raise SpaceError(f"{self.title}: knob {name!r} is defined twice")
        self.space_map[name] = make()

    def define_split(self, name: str, extent, num_outputs: int = 2, policy: str = "factors",
                     max_factor: int | None = None, candidate=None, filter=None, fallback=None):
        """A knob that splits an axis into `num_outputs` loops (apply it with
        `cfg[name].apply(s, stage, axis)`).

        extent: the axis length: an int, an IterVar with a domain, or a constant Expr.
        policy: "factors" (default; parts divide the extent), "power2" (powers of two,
            tails allowed) or "candidate" (the `candidate` list of sizes, tails allowed).
        max_factor: the largest part allowed (None: no limit).
        candidate: with policy "candidate", sizes such as [[-1, 4, 16], [-1, 8, 8]].
        filter: a predicate on SplitEntity; entities it rejects are left out.
        fallback: the sizes to use untuned (None: search_spaces.fallback.fallback_split).
        """
        self._add(name, lambda: SplitSpace.create(name, extent, num_outputs, policy,
                                                  max_factor, candidate, filter, fallback))

    def define_reorder(self, name: str, axes, policy: str = "all", candidate=None,
                       fallback=None):
        """A knob that orders `axes` (apply it with `cfg[name].apply(s, stage, axes)`).

        policy: "all" (default; every permutation) or "candidate".
        candidate: with policy "candidate", orders given as lists of the axes or of their
            positions in `axes`.
        fallback: the permutation to use untuned (None: the identity, or the first
            candidate when the identity is not one).
        """
        self._add(name, lambda: ReorderSpace.create(name, axes, policy, candidate, fallback))

    def define_annotate(self, name: str, axes, policy: str = "try_unroll", fallback=None):
        """A knob that unrolls / vectorizes `axes` (apply it with
        `cfg[name].apply(s, stage, axes)`).

        policy: "try_unroll" (default), "try_vec" or "try_unroll_vec"; only the last axis
            may be vectorized.
        fallback: the annotations to use untuned, e.g. ["none", "vec"] (None: "vec" on
            the last axis when offered, "none" elsewhere).
        """
        self._add(name, lambda: AnnotateSpace.create(name, axes, policy, fallback))

    def define_knob(self, name: str, values, fallback=None):
        """A plain knob taking one of `values` (read it as `cfg[name].val`).

        fallback: the value to use untuned (None: the first of `values`).
        """
        self._add(name, lambda: OtherOptionSpace.create(name, values, fallback))

    def knob(self, name: str) -> KnobSpace:
        """The knob space called `name`; a SpaceError naming the nearest name otherwise."""
        if name not in self.space_map:
            raise SpaceError(f"{self.title} has no knob {name!r}"
                             f"{did_you_mean(str(name), self.space_map)}")
        return self.space_map[name]

    def __getitem__(self, name: str):
        """The fallback value of knob `name`: what `cfg[name]` gives the template while
        the space is built, so that it can go on scheduling."""
        knob = self.knob(name)
        return knob[knob.fallback_index]

    # ------------------------------------------------------------------ the whole space

    def complete(self) -> ConfigSpace:
        """End the definitions (the registry calls it after the template ran); returns self."""
        self._complete = True
        return self

    @cached_property
    def fingerprint(self) -> str:
        """Short hash of the template, its arguments, its version and every knob's
        values: two spaces with equal fingerprints number the same configs the same way."""
        self.complete()
        text = json.dumps([self.template_name, self.args, self.template_version,
                           [knob.describe() for knob in self.space_map.values()]],
                          default=repr)
        return hashlib.sha256(text.encode()).hexdigest()[:16]

    def _size(self) -> int:
        return math.prod(len(knob) for knob in self.space_map.values())

    def __len__(self) -> int:
        return self.complete()._size()

    def point2knob(self, index: int) -> tuple[int, ...]:
        """The knob positions of config `index`, in definition order."""
        positions = []
        for knob in self.space_map.values():
            index, digit = divmod(index, len(knob))
            positions.append(digit)
        return tuple(positions)

    def knob2point(self, positions) -> int:
        """The index of the config whose knobs are at `positions` (definition order)."""
        index, scale = 0, 1
        for knob, digit in zip(self.space_map.values(), positions):
            index += digit * scale
            scale *= len(knob)
        return index

    def get(self, index: int) -> ConfigEntity:
        """The config at `index` (0 <= index < len(self))."""
        return ConfigEntity(self, index)

    def __iter__(self):
        """Every config in index order, made one at a time."""
        return (ConfigEntity(self, i) for i in range(len(self)))

    def sample(self, n: int, seed: int | None = None) -> list[ConfigEntity]:
        """`n` distinct configs drawn at random (all of them, shuffled, when n >= len);
        the same `seed` gives the same list. The product of the knobs is never built."""
        if isinstance(n, bool) or not isinstance(n, int) or n < 0:
            raise SpaceError(f"{self.title}: sample needs a count n >= 0, got {n!r}")
        picks = random.Random(seed).sample(range(len(self)), min(n, len(self)))
        return [ConfigEntity(self, i) for i in picks]

    def neighbours(self, config: ConfigEntity) -> list[ConfigEntity]:
        """The configs that differ from `config` in one knob by one step of that knob
        (see each knob space's `neighbours`), for local search."""
        self.check(config)
        positions, out = config.knob_indices, []
        for k, knob in enumerate(self.space_map.values()):
            for j in knob.neighbours(positions[k]):
                out.append(ConfigEntity(self, self.knob2point(
                    positions[:k] + (j,) + positions[k + 1:])))
        return out

    def fallback(self) -> FallbackConfig:
        """The config used when nothing was tuned: each knob at its fallback value."""
        return FallbackConfig(self, self.knob2point(
            knob.fallback_index for knob in self.space_map.values()))

    def check(self, config) -> None:
        """A SpaceError unless `config` is a point of this space (same fingerprint)."""
        if not isinstance(config, ConfigEntity):
            raise SpaceError(f"{self.title}: a config must be a ConfigEntity, got {config!r}")
        if config.space.fingerprint != self.fingerprint:
            raise SpaceError(f"config #{config.index} is from the space of {config.space.title} "
                             f"(fingerprint {config.space.fingerprint}), not of {self.title} "
                             f"(fingerprint {self.fingerprint})")

    def __repr__(self):
        knobs = "".join(f"\n  {name}: {knob!r}" for name, knob in self.space_map.items())
        return f"ConfigSpace({self.title}, {self._size()} configs){knobs}"


@dataclass(frozen=True, eq=False)
class ConfigEntity:
    """One config: the point `index` of `space`. `cfg[name]` is the value of knob `name`
    (a SplitEntity, ..., OtherOptionEntity). Equal configs have the same space fingerprint
    and index."""

    space: ConfigSpace
    index: int
    is_fallback: ClassVar[bool] = False

    def __post_init__(self):
        size = len(self.space)
        if isinstance(self.index, bool) or not isinstance(self.index, int):
            raise SpaceError(f"{self.space.title}: a config index must be an int, "
                             f"got {self.index!r}")
        if not 0 <= self.index < size:
            raise SpaceError(f"{self.space.title}: config index {self.index} is out of range; "
                             f"the space has {size} configs (0..{size - 1})")

    @cached_property
    def knob_indices(self) -> tuple[int, ...]:
        """The position of each knob's value in its knob space, in definition order."""
        return self.space.point2knob(self.index)

    @property
    def entity_map(self) -> dict:
        """Knob name -> the chosen entity, in definition order."""
        return {name: knob[i] for (name, knob), i in
                zip(self.space.space_map.items(), self.knob_indices)}

    @property
    def template_version(self) -> str:
        """The source hash of the template this config was made for."""
        return self.space.template_version

    def __getitem__(self, name: str):
        """The chosen value (entity) of knob `name`."""
        knob = self.space.knob(name)
        return knob[self.knob_indices[list(self.space.space_map).index(name)]]

    # While a template runs with a chosen config its knobs are already in the space;
    # the define_* calls only check that the name is one of them.
    def define_split(self, name, *args, **kwargs):
        """Check that knob `name` is in the space (see ConfigSpace.define_split)."""
        self.space.knob(name)

    def define_reorder(self, name, *args, **kwargs):
        """Check that knob `name` is in the space (see ConfigSpace.define_reorder)."""
        self.space.knob(name)

    def define_annotate(self, name, *args, **kwargs):
        """Check that knob `name` is in the space (see ConfigSpace.define_annotate)."""
        self.space.knob(name)

    def define_knob(self, name, *args, **kwargs):
        """Check that knob `name` is in the space (see ConfigSpace.define_knob)."""
        self.space.knob(name)

    def neighbours(self) -> list[ConfigEntity]:
        """See ConfigSpace.neighbours."""
        return self.space.neighbours(self)

    def to_json(self) -> dict:
        """Plain JSON: the template version, the index and every knob's value by name."""
        return {"template_version": self.template_version, "index": self.index,
                "knobs": {name: e.to_json() for name, e in self.entity_map.items()}}

    @classmethod
    def from_json(cls, space: ConfigSpace, data) -> ConfigEntity:
        """The config of `space` that `data` (from to_json) describes. A SpaceError
        names a version mismatch, a missing or unknown knob, a value outside its knob."""
        if not isinstance(data, dict) or not isinstance(data.get("knobs"), dict):
            raise SpaceError(f"{space.title}: a JSON config is a dict with 'knobs', "
                             f"got {data!r}")
        if data.get("template_version") != space.template_version:
            raise SpaceError(f"JSON config was made for version "
                             f"{data.get('template_version')} of template "
                             f"{space.template_name!r}, which is now {space.title}")
        knobs = data["knobs"]
        for name in knobs:
            if name not in space.space_map:
                raise SpaceError(f"JSON config names knob {name!r}, which {space.title} "
                                 f"does not have{did_you_mean(name, space.space_map)}")
        missing = [name for name in space.space_map if name not in knobs]
        if missing:
            raise SpaceError(f"JSON config lacks knob {missing[0]!r} of {space.title}")
        index = space.knob2point(knob.index_of(knobs[name])
                                 for name, knob in space.space_map.items())
        if data.get("index", index) != index:
            raise SpaceError(f"JSON config says index {data['index']}, but its knob values "
                             f"are config {index} of {space.title}")
        return cls(space, index)

    def __eq__(self, other):
        return (isinstance(other, ConfigEntity) and self.index == other.index
                and self.space.fingerprint == other.space.fingerprint)

    def __hash__(self):
        return hash((self.space.fingerprint, self.index))

    def __repr__(self):
        knobs = ", ".join(f"{n}={e.to_json()!r}" for n, e in self.entity_map.items())
        return f"{type(self).__name__}(#{self.index}: {knobs})"


class FallbackConfig(ConfigEntity):
    """The config used when nothing was tuned (AutoTVM's FallbackConfigEntity): each knob
    at its fallback value, a point of the space like any other."""

    is_fallback: ClassVar[bool] = True
