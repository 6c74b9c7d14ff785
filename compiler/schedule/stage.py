"""A Stage: how one operation's loops are arranged, and where it is computed.

The primitives (split, fuse, reorder, tile, compute_at, ...) only edit the stage's
IterVar graph and attachment; bound inference and schedule_ops read them later.
Tiramisu's commands (the reference tiramisu-internals) join them: shift, interchange,
and unroll / vectorize with a factor.
"""
from __future__ import annotations

from ..errors import ScheduleError
from ..ir.expr import IntImm, Var
from ..ir.stmt import PARALLEL, UNROLLED, VECTORIZED
from ..lang.tensor import REDUCE, ComputeOp, IterVar
from .relations import Fuse, Shift, Split
from .storage_map import storage_map

ROOT, INLINE, SCOPE = "root", "inline", "scope"


def _positive_int(value, what: str, stage: str, axis: str) -> int:
    if isinstance(value, IntImm):
        value = value.value
    if isinstance(value, bool) or not isinstance(value, int):
        raise ScheduleError(f"stage {stage}: split of axis {axis} needs an integer {what}, "
                            f"got {value!r}")
    if value <= 0:
        raise ScheduleError(f"stage {stage}: split of axis {axis} needs {what} > 0, got {value}")
    return value


class Stage:
    """The schedule of one ComputeOp: its IterVars, their relations, and its attachment."""

    def __init__(self, op: ComputeOp, schedule):
        self.op = op
        self.origin_op = op
        self.schedule = schedule
        self.is_output = False
        self.scope = "global"
        self.storage = None  # (shape, index expressions over op.axis): store_in
        self.reset_iter_vars()

    def reset_iter_vars(self):
        """Forget every split, fuse, reorder, annotation and attachment: the loops of
        `op`'s axes at the root (cache_write gives the stage a new op)."""
        self.all_iter_vars = list(self.op.root_iter_vars)
        self.leaf_iter_vars = list(self.op.root_iter_vars)
        self.relations = []
        self.attach_type, self.attach_ivar, self.attach_stage = ROOT, None, None
        self.loop_link = None  # (stage, its last shared axis, "after" | "before", call number)
        self.iter_var_attrs: dict[IterVar, str] = {}
        self.pragmas: dict[IterVar, list] = {}

    @property
    def name(self) -> str:
        return self.op.name

    @property
    def tensor(self):
        return self.op.output(0)

    def __repr__(self):
        return f"Stage({self.name})"

    # ------------------------------------------------------------------ checks

    def _leaf(self, axis, primitive: str) -> IterVar:
        """`axis` if it is a current loop of this stage, else a ScheduleError naming it."""
        if not isinstance(axis, IterVar):
            raise ScheduleError(f"stage {self.name}: {primitive} needs an axis (IterVar), "
                                f"got {axis!r}")
        if axis in self.leaf_iter_vars:
            return axis
        if axis in self.all_iter_vars:
            raise ScheduleError(
                f"stage {self.name}: axis {axis.name} was already split, fused or rebased; "
                f"{primitive} needs one of the current loops "
                f"({', '.join(iv.name for iv in self.leaf_iter_vars)})")
        owner = self.schedule.owner_of(axis)
        where = f"it belongs to stage {owner.name}" if owner else "it belongs to no stage here"
        raise ScheduleError(f"stage {self.name}: axis {axis.name} given to {primitive} is not "
                            f"an axis of this stage; {where}")

    def _replace_leaf(self, old: list[IterVar], new: list[IterVar]):
        pos = self.leaf_iter_vars.index(old[0])
        for iv in old:
            self.leaf_iter_vars.remove(iv)
        self.leaf_iter_vars[pos:pos] = new
        self.all_iter_vars.extend(new)

    # ------------------------------------------------------------------ loop structure

    def split(self, parent, factor=None, nparts=None):
        """Split `parent` into (outer, inner) by the inner `factor` or the outer `nparts`."""
        parent = self._leaf(parent, "split")
        if (factor is None) == (nparts is None):
            raise ScheduleError(f"stage {self.name}: split of axis {parent.name} needs exactly "
                                f"one of factor= or nparts=")
        if factor is not None:
            factor = _positive_int(factor, "factor", self.name, parent.name)
        else:
            nparts = _positive_int(nparts, "nparts", self.name, parent.name)
        outer = IterVar(None, Var(f"{parent.name}.outer"), parent.iter_type)
        inner = IterVar(None, Var(f"{parent.name}.inner"), parent.iter_type)
        self.relations.append(Split(parent, outer, inner, factor, nparts))
        self._replace_leaf([parent], [outer, inner])
        # Once per value of parent is once per iteration of inner.
        self._move_attachments(parent, inner)
        return outer, inner

    def _move_attachments(self, old: IterVar, new: IterVar):
        for st in self.schedule.stages:
            if st.attach_ivar is old:
                st.attach_ivar = new

    def shift(self, axis, amount):
        """Tiramisu's shift: the loop `axis` runs from its start + `amount`, and the body
        sees the loop's value - `amount`. Returns the shifted loop. Alone it changes no
        result; in loops shared with `after` / `before` it moves this stage's iterations
        `amount` later (earlier, if negative) against the other stage's."""
        parent = self._leaf(axis, "shift")
        if parent.iter_type == REDUCE:
            raise ScheduleError(f"stage {self.name}: cannot shift the reduction axis "
                                f"{parent.name}; shift data-parallel loops only")
        if any(isinstance(rel, Fuse) and rel.fused is parent for rel in self.relations):
            raise ScheduleError(f"stage {self.name}: cannot shift the fused axis "
                                f"{parent.name}; shift one of the loops before fusing them")
        if isinstance(amount, IntImm):
            amount = amount.value
        if isinstance(amount, bool) or not isinstance(amount, int):
            raise ScheduleError(f"stage {self.name}: shift of axis {parent.name} needs an "
                                f"integer amount, got {amount!r}")
        shifted = IterVar(None, Var(f"{parent.name}.shifted"), parent.iter_type)
        self.relations.append(Shift(parent, shifted, amount))
        self._replace_leaf([parent], [shifted])
        self._move_attachments(parent, shifted)
        for table in (self.iter_var_attrs, self.pragmas):
            if parent in table:
                table[shifted] = table.pop(parent)
        return shifted

    def interchange(self, a, b):
        """Tiramisu's interchange: swap the loops `a` and `b` (a reorder of two)."""
        ia, ib = self._leaf(a, "interchange"), self._leaf(b, "interchange")
        if ia is ib:
            raise ScheduleError(f"stage {self.name}: interchange of axis {ia.name} with "
                                f"itself")
        pa, pb = self.leaf_iter_vars.index(ia), self.leaf_iter_vars.index(ib)
        self.leaf_iter_vars[pa], self.leaf_iter_vars[pb] = ib, ia

    def fuse(self, *axes):
        """Fuse adjacent loops (outermost first) into one loop; returns the fused axis."""
        if len(axes) == 1 and isinstance(axes[0], (list, tuple)):
            axes = tuple(axes[0])
        if not axes:
            raise ScheduleError(f"stage {self.name}: fuse needs at least one axis")
        ivs = [self._leaf(a, "fuse") for a in axes]
        pos = [self.leaf_iter_vars.index(iv) for iv in ivs]
        if pos != list(range(pos[0], pos[0] + len(pos))):
            raise ScheduleError(
                f"stage {self.name}: fuse needs adjacent loops in order, outermost first; "
                f"{', '.join(iv.name for iv in ivs)} are at loop positions {pos} of "
                f"({', '.join(iv.name for iv in self.leaf_iter_vars)})")
        kinds = {iv.iter_type for iv in ivs}
        if len(kinds) > 1:
            raise ScheduleError(f"stage {self.name}: cannot fuse reduction and data-parallel "
                                f"axes ({', '.join(iv.name for iv in ivs)})")
        fused = ivs[0]
        for inner in ivs[1:]:
            new = IterVar(None, Var(f"{fused.name}.{inner.name}.fused"), fused.iter_type)
            self.relations.append(Fuse(fused, inner, new))
            self._replace_leaf([fused, inner], [new])
            fused = new
        return fused

    def reorder(self, *axes):
        """Put the given loops in this order, in the positions they occupy together."""
        if len(axes) == 1 and isinstance(axes[0], (list, tuple)):
            axes = tuple(axes[0])
        ivs = [self._leaf(a, "reorder") for a in axes]
        seen = set()
        for iv in ivs:
            if iv in seen:
                raise ScheduleError(f"stage {self.name}: reorder lists axis {iv.name} twice")
            seen.add(iv)
        slots = sorted(self.leaf_iter_vars.index(iv) for iv in ivs)
        for slot, iv in zip(slots, ivs):
            self.leaf_iter_vars[slot] = iv

    def tile(self, x_parent, y_parent, x_factor, y_factor):
        """Split two loops and reorder to (x_outer, y_outer, x_inner, y_inner)."""
        xo, xi = self.split(x_parent, factor=x_factor)
        yo, yi = self.split(y_parent, factor=y_factor)
        self.reorder(xo, yo, xi, yi)
        return xo, yo, xi, yi

    # ------------------------------------------------------------------ attachment

    def compute_at(self, parent, axis):
        """Compute this stage inside the loop `axis` of stage `parent`, only the region
        that one iteration of that loop needs."""
        parent = self.schedule.stage_for(parent, f"compute_at of stage {self.name}")
        if parent is self:
            raise ScheduleError(f"stage {self.name}: compute_at onto itself")
        walk = parent
        while walk is not None:
            if walk is self:
                raise ScheduleError(f"stage {self.name}: compute_at onto stage {parent.name} "
                                    f"would make a cycle ({parent.name} is computed inside "
                                    f"{self.name})")
            walk = walk.attach_stage if walk.attach_type == SCOPE else None
        if not self.schedule.reads_from(parent, self):
            raise ScheduleError(f"stage {self.name}: compute_at onto stage {parent.name}, which "
                                f"does not consume {self.name}")
        if not isinstance(axis, IterVar) or axis not in parent.leaf_iter_vars:
            name = axis.name if isinstance(axis, IterVar) else repr(axis)
            raise ScheduleError(f"stage {self.name}: compute_at axis {name} is not a current "
                                f"loop of stage {parent.name} "
                                f"({', '.join(iv.name for iv in parent.leaf_iter_vars)})")
        self.attach_type, self.attach_stage, self.attach_ivar = SCOPE, parent, axis
        self.loop_link = None

    def compute_inline(self):
        """Substitute this stage's expression into its consumers; it gets no loops."""
        if self.op.reduce_axis:
            raise ScheduleError(f"stage {self.name}: compute_inline of a reduction is not "
                                f"possible; use compute_at instead")
        if self.is_output:
            raise ScheduleError(f"stage {self.name}: compute_inline of an output of the "
                                f"schedule is not possible")
        self.attach_type, self.attach_stage, self.attach_ivar = INLINE, None, None
        self.loop_link = None

    def compute_root(self):
        """Compute this stage at the top level, in full (the default)."""
        self.attach_type, self.attach_stage, self.attach_ivar = ROOT, None, None
        self.loop_link = None

    def store_in(self, shape, index_map):
        """Tiramisu's store_in: write this stage's values into a buffer of `shape`, the
        element at (i, j, ...) at `index_map(i, j, ...)` (e.g. `lambda i, j: (j, i)`
        stores it transposed); its consumers read through the same map."""
        self.storage = storage_map(self, shape, index_map)

    def after(self, other, axis):
        """Tiramisu's `C.after(B, i)`: this stage's loops share `other`'s loops down to
        and including `axis` (level by level: this stage's first loops are the shared
        ones), and inside them this stage's body runs after `other`'s. Both stages are
        computed in full at the top level; lowering checks that no value is read before
        it is written (compiler/schedule/loop_sharing.py)."""
        self._share_loops(other, axis, "after")

    def before(self, other, axis):
        """Like `after`, but this stage's body runs before `other`'s in the shared loops."""
        self._share_loops(other, axis, "before")

    def _share_loops(self, other, axis, order: str):
        other = self.schedule.stage_for(other, f"{order} of stage {self.name}")
        if other is self:
            raise ScheduleError(f"stage {self.name}: {order} of itself")
        if not isinstance(axis, IterVar) or axis not in other.leaf_iter_vars:
            name = axis.name if isinstance(axis, IterVar) else repr(axis)
            raise ScheduleError(f"stage {self.name}: {order} axis {name} is not a current "
                                f"loop of stage {other.name} "
                                f"({', '.join(iv.name for iv in other.leaf_iter_vars)})")
        walk = other
        while walk is not None:
            if walk is self:
                raise ScheduleError(f"stage {self.name}: {order} stage {other.name} would "
                                    f"make a cycle ({other.name} already shares loops with "
                                    f"{self.name})")
            walk = walk.loop_link[0] if walk.loop_link else None
        self.compute_root()
        self.loop_link = (other, axis, order, self.schedule.next_sequence())

    # ------------------------------------------------------------------ annotations

    def _annotate(self, axis, kind: str):
        iv = self._leaf(axis, kind)
        if kind in (VECTORIZED, PARALLEL) and iv.iter_type == REDUCE:
            word = "vectorize" if kind == VECTORIZED else "parallel"
            raise ScheduleError(f"stage {self.name}: cannot {word} the reduction axis {iv.name}")
        self.iter_var_attrs[iv] = kind

    def _annotate_by(self, axis, kind: str, factor, word: str):
        """Annotate `axis`; with a `factor`, split it by that factor first and annotate
        the inner loop (Tiramisu's unroll(i, v) / vectorize(i, v)): (outer, inner)."""
        if factor is None:
            self._annotate(axis, kind)
            return None
        iv = self._leaf(axis, kind)
        if kind == VECTORIZED and iv.iter_type == REDUCE:  # before splitting anything
            self._annotate(iv, kind)
        if isinstance(factor, IntImm):
            factor = factor.value
        if isinstance(factor, bool) or not isinstance(factor, int) or factor <= 0:
            raise ScheduleError(f"stage {self.name}: {word} of axis {iv.name} needs a "
                                f"positive integer {'width' if kind == VECTORIZED else 'factor'}"
                                f", got {factor!r}")
        outer, inner = self.split(iv, factor=factor)
        self._annotate(inner, kind)
        return outer, inner

    def vectorize(self, axis, width=None):
        """Run the loop `axis` as vector operations; with `width`, split it by `width`
        and vectorize the inner loop (returns (outer, inner))."""
        return self._annotate_by(axis, VECTORIZED, width, "vectorize")

    def unroll(self, axis, factor=None):
        """Unroll the loop `axis` completely; with `factor`, split it by `factor` and
        unroll the inner loop (returns (outer, inner))."""
        return self._annotate_by(axis, UNROLLED, factor, "unroll")

    def parallel(self, axis):
        """Run the iterations of `axis` on parallel threads."""
        self._annotate(axis, PARALLEL)

    def pragma(self, axis, name: str, value=None):
        """Attach a named hint to the loop `axis` (e.g. "auto_unroll_max_step", 16)."""
        iv = self._leaf(axis, "pragma")
        self.pragmas.setdefault(iv, []).append((name, value))
