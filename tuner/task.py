"""Task: one operator to tune, as AutoTVM's `Task` — a template, its arguments and the
target the code is for.

A task is what travels to Ray workers, so it reduces to a plain `spec()` dict (template
name, the module that registers it, arguments, the fully spelled-out target) that
`Task.from_spec` turns back into a Task in another process, importing the template's
module there first: built-in templates and a user's (or a test's) own alike.
"""
from __future__ import annotations

import functools
import importlib
import os
import sys

import records
import search_spaces
from compiler import Target
from compiler.lang.tensor import PlaceholderOp

from .flop import compute_flop, work_unit


def _spelled_out(target: Target) -> str:
    """`target` as a string that means the same CPU on any machine (Target's own str
    leaves the features implicit, which a build worker elsewhere would take from its
    own CPU)."""
    return (f"{target.kind} -mcpu={target.mcpu} -mtriple={target.mtriple} "
            f"-mattr={target.features} -num-cores={target.num_cores}")


class Task:
    """`Task(template, args, target="llvm")`: the template name (registered with
    `search_spaces.template`), its arguments, and the target."""

    def __init__(self, template: str, args=(), target="llvm"):
        self.template = search_spaces.get_template(template)
        self.name = template
        self.args = self.template.bind(tuple(args))
        self.target = Target(target)

    @property
    def workload(self) -> tuple:
        """(template name, bound arguments): what dispatch contexts are asked about."""
        return (self.name, self.args)

    @property
    def workload_key(self) -> str:
        """The workload as the log names it (records.workload_key), e.g.
        '["matmul", [1024, 1024, 1024, "float32"]]'."""
        return records.workload_key(self.name, self.args)

    @property
    def config_space(self) -> search_spaces.ConfigSpace:
        """The template's space of configs for these arguments (built once)."""
        return self.template.space(self.args, self.target)

    def instantiate(self, config=None):
        """(schedule, tensors) for `config` (None: the dispatch context decides)."""
        return search_spaces.instantiate(self.name, *self.args, config=config,
                                         target=self.target)

    def tensors(self) -> tuple[list, list]:
        """(inputs, outputs): the template's placeholders and the tensors it computes,
        in the order the built function takes them."""
        _, tensors = self.instantiate(self.config_space.fallback())
        inputs = [t for t in tensors if isinstance(t.op, PlaceholderOp)]
        return inputs, [t for t in tensors if not isinstance(t.op, PlaceholderOp)]

    @functools.cached_property
    def flop(self) -> int:
        """Floating-point operations of one call, to turn seconds into GFLOPS."""
        return compute_flop(self.tensors()[1])

    @functools.cached_property
    def unit(self) -> str:
        """What its rate is printed in: "GOPS" for an int8 kernel's integer multiply-adds
        (tuner/flop.py), "GFLOPS" else."""
        return work_unit(self.tensors()[1])

    def gflops(self, seconds: float | None) -> float | None:
        """GFLOPS of a call that takes `seconds` (records.gflops); None when there is no
        such time (None, zero, or inf, the cost of a failed measurement)."""
        return records.gflops(self.flop, seconds)

    def spec(self) -> dict:
        """Plain data that Task.from_spec rebuilds this task from, in any process."""
        module = self.template.fn.__module__
        path = getattr(sys.modules.get(module), "__file__", None)
        return {"template": self.name, "module": module, "path": path,
                "args": list(self.args), "target": _spelled_out(self.target)}

    @classmethod
    def from_spec(cls, spec: dict) -> Task:
        """The Task that `spec()` describes; imports the template's module first."""
        _import_template_module(spec["module"], spec.get("path"))
        return cls(spec["template"], tuple(spec["args"]), spec["target"])

    def __eq__(self, other):
        return (isinstance(other, Task) and self.workload == other.workload
                and self.target == other.target)

    def __hash__(self):
        return hash((self.workload, str(self.target)))

    def __repr__(self):
        return f"Task({self.name!r}, {self.args!r}, target={str(self.target)!r})"


@functools.cache
def _import_template_module(module: str, path: str | None) -> None:
    """Import `module` (which registers the template); when it is not importable here
    (a test's module), put the directory that holds its package root on sys.path."""
    try:
        importlib.import_module(module)
        return
    except ImportError:
        if not path:
            raise
    root = os.path.dirname(os.path.abspath(path))
    for _ in range(module.count(".")):
        root = os.path.dirname(root)
    sys.path.insert(0, root)
    importlib.import_module(module)
