"""Knob entities: one value of a knob, which applies itself to a schedule where that
makes sense (AutoTVM's SplitEntity, ReorderEntity, AnnotateEntity, OtherOptionEntity).

Every entity has a plain JSON form (`to_json`): what records store and what a knob space
reads back with `index_of`.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from compiler.te import IterVar

from .errors import InstantiationError, SpaceError


@dataclass(frozen=True)
class SplitEntity:
    """One split of an axis: `size[i]` is the extent of loop i, outermost first; `size[0]`
    is -1, "whatever remains" (AutoTVM's convention), so one entity fits any extent."""
    size: tuple[int, ...]

    def apply(self, s, op, axis) -> list[IterVar]:
        """Split `axis` of stage `s[op]` (`op` a tensor or a stage) into len(size) loops;
        returns them outermost first."""
        stage, loops = s[op], []
        for i in range(1, len(self.size)):
            outer, axis = stage.split(axis, factor=math.prod(self.size[i:]))
            loops.append(outer)
        return loops + [axis]

    def to_json(self) -> list[int]:
        """The sizes as a list, e.g. [-1, 4, 16]."""
        return list(self.size)


@dataclass(frozen=True)
class ReorderEntity:
    """One loop order: position i of the new order holds `axes[perm[i]]`."""
    perm: tuple[int, ...]

    def apply(self, s, op, axes) -> list[IterVar]:
        """Reorder `axes` of stage `s[op]` by `perm`; returns the new order."""
        if len(axes) != len(self.perm):
            raise SpaceError(f"reorder {list(self.perm)} is for {len(self.perm)} axes, "
                             f"got {len(axes)}")
        order = [axes[i] for i in self.perm]
        s[op].reorder(*order)
        return order

    def to_json(self) -> list[int]:
        """The permutation as a list, e.g. [0, 2, 1]."""
        return list(self.perm)


@dataclass(frozen=True)
class AnnotateEntity:
    """One annotation per axis: "none", "unroll" or "vec"."""
    anns: tuple[str, ...]

    def apply(self, s, op, axes, axis_lens=None, max_unroll=None, vec_size=None) -> list:
        """Unroll / vectorize `axes` of stage `s[op]`; returns `axes`.

        axis_lens: the loop lengths, needed with max_unroll or vec_size.
        max_unroll: an "unroll" of a loop longer than this raises InstantiationError.
        vec_size: a "vec" of a loop whose length is not in this list raises
            InstantiationError (AutoTVM records these as invalid configs).
        """
        if len(axes) != len(self.anns):
            raise SpaceError(f"annotation {list(self.anns)} is for {len(self.anns)} axes, "
                             f"got {len(axes)}")
        if (max_unroll is not None or vec_size is not None) and axis_lens is None:
            raise SpaceError("annotation: max_unroll and vec_size need axis_lens")
        for i, (ax, ann) in enumerate(zip(axes, self.anns)):
            if ann == "unroll":
                if max_unroll is not None and axis_lens[i] > max_unroll:
                    raise InstantiationError(f"unroll of a loop of {axis_lens[i]} iterations "
                                             f"exceeds max_unroll={max_unroll}")
                s[op].unroll(ax)
            elif ann == "vec":
                if vec_size is not None and axis_lens[i] not in vec_size:
                    raise InstantiationError(f"vectorize of a loop of {axis_lens[i]} "
                                             f"iterations; allowed lengths {list(vec_size)}")
                s[op].vectorize(ax)
        return list(axes)

    def to_json(self) -> list[str]:
        """The annotations as a list, e.g. ["none", "vec"]."""
        return list(self.anns)


@dataclass(frozen=True)
class OtherOptionEntity:
    """One value of a plain knob (define_knob); `val` is the value."""
    val: Any

    def to_json(self):
        """The value itself."""
        return self.val
