"""Knob spaces: the tunable decisions of a template, after AutoTVM's transform spaces.

A knob space (SplitSpace, ReorderSpace, AnnotateSpace, OtherOptionSpace) is the ordered
tuple of entities (search_spaces.entities) one knob may take. It finds an entity from its
JSON form (`index_of`), names its fallback and its neighbours for local search.
"""
from __future__ import annotations

import itertools
import json
import math
from abc import ABC, abstractmethod
from dataclasses import dataclass
from functools import cached_property
from typing import Any, ClassVar
from collections.abc import Callable

from compiler.arith.simplify import simplify
from compiler.ir.expr import IntImm
from compiler.ops import divisors
from compiler.te import Expr, IterVar

from .entities import AnnotateEntity, OtherOptionEntity, ReorderEntity, SplitEntity
from .errors import SpaceError
from .fallback import (fallback_annotate, fallback_reorder, fallback_split, nearest_split,
                       vector_lanes)

_SHOWN_VALUES = 12  # an error lists at most this many allowed values


class KnobSpace(ABC):
    """What the four knob spaces share: a `name`, the ordered `entities`, and an optional
    `fallback` value given by the template. Subclasses are frozen dataclasses, compared
    by identity (a space compares its knobs through its fingerprint)."""

    kind: ClassVar[str]
    name: str
    entities: tuple
    fallback: Any

    def __post_init__(self):
        if self.fallback is not None:
            self.index_of(self.fallback)  # a bad fallback= fails where the template gives it

    def __len__(self) -> int:
        return len(self.entities)

    def __getitem__(self, i: int):
        return self.entities[i]

    @staticmethod
    def _key(value):
        """A hashable key of a JSON value; lists become tuples."""
        return tuple(value)

    @cached_property
    def _positions(self) -> dict:
        return {self._key(e.to_json()): i for i, e in enumerate(self.entities)}

    def index_of(self, value) -> int:
        """Position of the entity whose JSON form is `value`; a SpaceError naming this
        knob and its allowed values when there is none."""
        try:
            return self._positions[self._key(value)]
        except (KeyError, TypeError):
            raise SpaceError(f"knob {self.name!r}: {value!r} is not one of its values; "
                             f"allowed: {self.allowed()}") from None

    def allowed(self) -> str:
        """The allowed values as JSON, the first few when there are many."""
        shown = ", ".join(json.dumps(e.to_json()) for e in self.entities[:_SHOWN_VALUES])
        return shown + (f", ... ({len(self)} values)" if len(self) > _SHOWN_VALUES else "")

    @cached_property
    def fallback_index(self) -> int:
        """Position of the value used when nothing was tuned: the template's `fallback=`
        if it gave one, else the heuristic of search_spaces.fallback."""
        if self.fallback is not None:
            return self.index_of(self.fallback)
        return self._heuristic_index()

    @abstractmethod
    def _heuristic_index(self) -> int:
        """Position of the fallback value when the template gave none."""

    @abstractmethod
    def neighbours(self, i: int) -> list[int]:
        """Positions one step away from entity `i` (for local search)."""

    def describe(self) -> list:
        """Everything that identifies this knob, as JSON (for the space fingerprint)."""
        return [self.kind, self.name, [e.to_json() for e in self.entities]]

    def __repr__(self):
        return f"{type(self).__name__}({self.name!r}, {len(self)} values)"


def _error(name: str, message: str) -> SpaceError:
    return SpaceError(f"knob {name!r}: {message}")


def _const_extent(name: str, extent) -> int:
    """The constant length of `extent`: an int, an IterVar with a domain, or an Expr."""
    what = extent
    if isinstance(extent, IterVar):
        if extent.dom is None:
            raise _error(name, f"axis {extent.name} has no domain of its own (it was made by "
                               f"split or fuse); pass its length as an int")
        extent = extent.dom.extent
    if isinstance(extent, Expr):
        extent = simplify(extent)
        extent = extent.value if isinstance(extent, IntImm) else extent
    if isinstance(extent, bool) or not isinstance(extent, int):
        raise _error(name, f"the extent to split must be a constant int, got {what!r}")
    if extent < 1:
        raise _error(name, f"the extent to split must be positive, got {extent}")
    return extent


@dataclass(frozen=True, repr=False, eq=False)
class SplitSpace(KnobSpace):
    """The ways to split an axis of length `extent` into `num_outputs` loops.

    Policies: "factors" (AutoTVM's default) takes each part from the divisors of extent,
    the product of the parts dividing extent, so no loop has a tail; "power2" takes
    powers of two, tails allowed; "candidate" takes the template's own list of sizes,
    tails allowed. Entities are in lexicographic order of their parts, so index 0 of
    "factors" / "power2" is no tiling, [-1, 1, ..., 1]. `lanes`: the vector lanes of the
    target the knob was defined for, which the heuristic fallback's innermost part aims
    at (kept here, since the fallback may be asked for outside that target).
    """
    kind: ClassVar[str] = "split"
    POLICIES: ClassVar[tuple[str, ...]] = ("factors", "power2", "candidate")
    name: str
    extent: int
    num_outputs: int
    policy: str
    entities: tuple[SplitEntity, ...]
    fallback: Any = None
    lanes: int | None = None

    @classmethod
    def create(cls, name: str, extent, num_outputs: int = 2, policy: str = "factors",
               max_factor: int | None = None, candidate=None,
               filter: Callable[[SplitEntity], bool] | None = None,
               fallback=None) -> SplitSpace:
        """The space of define_split; see ConfigSpace.define_split for the parameters."""
        extent = _const_extent(name, extent)
        if isinstance(num_outputs, bool) or not isinstance(num_outputs, int) or num_outputs < 2:
            raise _error(name, f"num_outputs must be an int >= 2, got {num_outputs!r}")
        if policy not in cls.POLICIES:
            raise _error(name, f"unknown split policy {policy!r}; policies: "
                               f"{', '.join(cls.POLICIES)}")
        if (policy == "candidate") != (candidate is not None):
            raise _error(name, "candidate= goes with policy='candidate', and only with it")
        if max_factor is not None and (isinstance(max_factor, bool)
                                       or not isinstance(max_factor, int) or max_factor < 1):
            raise _error(name, f"max_factor must be a positive int, got {max_factor!r}")
        if policy == "candidate":
            sizes = [_candidate_size(name, c, extent, num_outputs) for c in candidate]
        else:
            factors = divisors(extent) if policy == "factors" else \
                [1 << e for e in range(extent.bit_length())]
            sizes = [(-1, *parts) for parts in itertools.product(factors, repeat=num_outputs - 1)
                     if math.prod(parts) <= extent
                     and (policy != "factors" or extent % math.prod(parts) == 0)]
        entities = [SplitEntity(size) for size in dict.fromkeys(sizes)
                    if max_factor is None or max(size[1:]) <= max_factor]
        entities = tuple(e for e in entities if filter is None or filter(e))
        if not entities:
            raise _error(name, f"no split of {extent} into {num_outputs} loops is left "
                               f"(policy {policy!r}, max_factor, filter)")
        return cls(name, extent, num_outputs, policy, entities, fallback, vector_lanes())

    def _heuristic_index(self) -> int:
        return nearest_split([e.size for e in self.entities],
                             fallback_split(self.extent, self.num_outputs, inner=self.lanes))

    @cached_property
    def _values_beside(self) -> list[dict]:
        """Per part p: the other parts of a size -> the sorted values part p takes beside them."""
        tables = [{} for _ in range(self.num_outputs)]
        for e in self.entities:
            for p in range(1, self.num_outputs):
                tables[p].setdefault(e.size[:p] + e.size[p + 1:], []).append(e.size[p])
        for table in tables:
            for values in table.values():
                values.sort()
        return tables

    def neighbours(self, i: int) -> list[int]:
        """Splits that change one part to the next smaller or larger value it may take."""
        size, out = self.entities[i].size, set()
        for p in range(1, self.num_outputs):
            values = self._values_beside[p][size[:p] + size[p + 1:]]
            k = values.index(size[p])
            for v in values[max(k - 1, 0):k] + values[k + 1:k + 2]:
                out.add(self._positions[size[:p] + (v,) + size[p + 1:]])
        return sorted(out)


def _candidate_size(name: str, size, extent: int, num_outputs: int) -> tuple[int, ...]:
    """A candidate split as a size tuple with -1 first; its first entry may be -1 or the
    outer extent (AutoTVM writes either), the parts must be positive ints."""
    ok = isinstance(size, (list, tuple)) and len(size) == num_outputs and all(
        isinstance(v, int) and not isinstance(v, bool) and (v > 0 or (j == 0 and v == -1))
        for j, v in enumerate(size))
    if not ok:
        raise _error(name, f"a split candidate must be {num_outputs} positive ints "
                           f"(the first may be -1), got {size!r}")
    if math.prod(size[1:]) > extent:
        raise _error(name, f"split candidate {list(size)} has inner loops longer than the "
                           f"extent {extent}")
    return (-1, *size[1:])


@dataclass(frozen=True, repr=False, eq=False)
class ReorderSpace(KnobSpace):
    """The orders of `num_axes` loops: all permutations ("all"), or the template's
    list ("candidate", each a list of the axes or of their positions)."""
    kind: ClassVar[str] = "reorder"
    POLICIES: ClassVar[tuple[str, ...]] = ("all", "candidate")
    name: str
    num_axes: int
    policy: str
    entities: tuple[ReorderEntity, ...]
    fallback: Any = None

    @classmethod
    def create(cls, name: str, axes, policy: str = "all", candidate=None,
               fallback=None) -> ReorderSpace:
        """The space of define_reorder; see ConfigSpace.define_reorder for the parameters."""
        if not isinstance(axes, (list, tuple)) or not axes:
            raise _error(name, f"reorder needs a non-empty list of axes, got {axes!r}")
        if policy not in cls.POLICIES:
            raise _error(name, f"unknown reorder policy {policy!r}; policies: "
                               f"{', '.join(cls.POLICIES)}")
        if (policy == "candidate") != (candidate is not None):
            raise _error(name, "candidate= goes with policy='candidate', and only with it")
        if policy == "all":
            perms = list(itertools.permutations(range(len(axes))))
        else:
            perms = [_candidate_perm(name, c, axes) for c in candidate]
            if not perms:
                raise _error(name, "the candidate list is empty")
        entities = tuple(ReorderEntity(p) for p in dict.fromkeys(perms))
        return cls(name, len(axes), policy, entities, fallback)

    def _heuristic_index(self) -> int:
        return self._positions.get(fallback_reorder(self.num_axes), 0)

    def neighbours(self, i: int) -> list[int]:
        """Orders that swap two adjacent loops."""
        perm, out = self.entities[i].perm, set()
        for p in range(self.num_axes - 1):
            swapped = perm[:p] + (perm[p + 1], perm[p]) + perm[p + 2:]
            if swapped in self._positions:
                out.add(self._positions[swapped])
        return sorted(out)


def _candidate_perm(name: str, order, axes) -> tuple[int, ...]:
    def position(x):
        if isinstance(x, int) and not isinstance(x, bool):
            return x
        hits = [i for i, a in enumerate(axes) if a is x]
        if not hits:
            raise _error(name, f"reorder candidate names {x!r}, which is not one of its axes")
        return hits[0]
    perm = tuple(position(x) for x in order) if isinstance(order, (list, tuple)) else None
    if perm is None or sorted(perm) != list(range(len(axes))):
        raise _error(name, f"a reorder candidate must order all {len(axes)} axes once each, "
                           f"got {order!r}")
    return perm


@dataclass(frozen=True, repr=False, eq=False)
class AnnotateSpace(KnobSpace):
    """Per-axis annotations. "try_unroll": each axis "none" or "unroll"; "try_vec": the
    innermost axis "none" or "vec"; "try_unroll_vec": both. Only the innermost (last)
    axis may be vectorized: vector code wants the contiguous loop."""
    kind: ClassVar[str] = "annotate"
    POLICIES: ClassVar[dict[str, tuple[str, ...]]] = {
        "try_unroll": ("none", "unroll"), "try_vec": ("none", "vec"),
        "try_unroll_vec": ("none", "unroll", "vec")}
    name: str
    policy: str
    options: tuple[tuple[str, ...], ...]
    entities: tuple[AnnotateEntity, ...]
    fallback: Any = None

    @classmethod
    def create(cls, name: str, axes, policy: str = "try_unroll",
               fallback=None) -> AnnotateSpace:
        """The space of define_annotate; see ConfigSpace.define_annotate."""
        if not isinstance(axes, (list, tuple)) or not axes:
            raise _error(name, f"annotate needs a non-empty list of axes, got {axes!r}")
        if policy not in cls.POLICIES:
            raise _error(name, f"unknown annotate policy {policy!r}; policies: "
                               f"{', '.join(cls.POLICIES)}")
        anns = cls.POLICIES[policy]
        inner_free = tuple(a for a in anns if a != "vec")
        options = (inner_free,) * (len(axes) - 1) + (anns,)
        entities = tuple(AnnotateEntity(a) for a in itertools.product(*options))
        return cls(name, policy, options, entities, fallback)

    def _heuristic_index(self) -> int:
        return self._positions[fallback_annotate(self.options)]

    def neighbours(self, i: int) -> list[int]:
        """Annotations that change one axis to another of its options."""
        anns = self.entities[i].anns
        return sorted(self._positions[anns[:p] + (o,) + anns[p + 1:]]
                      for p, opts in enumerate(self.options) for o in opts if o != anns[p])


_PLAIN = (str, int, float, bool, type(None))


@dataclass(frozen=True, repr=False, eq=False)
class OtherOptionSpace(KnobSpace):
    """A plain knob: one of the template's `values` (numbers, strings, booleans, None),
    read as `cfg[name].val`."""
    kind: ClassVar[str] = "knob"
    name: str
    entities: tuple[OtherOptionEntity, ...]
    fallback: Any = None

    @staticmethod
    def _key(value):
        # 1 == True in Python; JSON keeps them apart, and so must the knob.
        return (type(value) is bool, value)

    @classmethod
    def create(cls, name: str, values, fallback=None) -> OtherOptionSpace:
        """The space of define_knob; see ConfigSpace.define_knob."""
        if not isinstance(values, (list, tuple)) or not values:
            raise _error(name, f"define_knob needs a non-empty list of values, got {values!r}")
        for v in values:
            if not isinstance(v, _PLAIN):
                raise _error(name, f"knob values must be numbers, strings, booleans or None "
                                   f"(they are stored as JSON), got {v!r}")
        if len({cls._key(v) for v in values}) != len(values):
            raise _error(name, f"knob values must be distinct, got {list(values)!r}")
        return cls(name, tuple(OtherOptionEntity(v) for v in values), fallback)

    def _heuristic_index(self) -> int:
        return 0

    def neighbours(self, i: int) -> list[int]:
        """The values just before and after in the template's list."""
        return [j for j in (i - 1, i + 1) if 0 <= j < len(self)]
