"""`autosched templates` and `autosched space`: what can be tuned, and the knobs of one
task. Neither loads Ray or XGBoost."""
from __future__ import annotations

import json

import click

import search_spaces

from .common import json_option, make_task, print_json, print_table, task_label


@click.command()
@json_option
def templates(as_json: bool):
    """The registered templates and their arguments."""
    found = search_spaces.templates()
    if as_json:
        return print_json(found)
    from rich.table import Table
    table = Table("template", "arguments", "numpy reference", box=None)
    for name in found:
        template = search_spaces.get_template(name)
        table.add_row(name, " ".join(_parameter(p) for p in template.signature.parameters.values()),
                      "yes" if template.reference is not None else "no")
    print_table(table)


def _parameter(param) -> str:
    """`M:int` or `[dtype:str='float32']`, as `templates` lists a template's arguments."""
    kind = param.annotation
    if kind is param.empty:
        text = param.name
    else:
        text = f"{param.name}:{kind if isinstance(kind, str) else getattr(kind, '__name__', kind)}"
    return text if param.default is param.empty else f"[{text}={param.default!r}]"


@click.command()
@click.argument("template")
@click.argument("args", nargs=-1)
@click.option("--target", default="llvm", show_default=True, help="The target to build for.")
@json_option
def space(template: str, args: tuple, target: str, as_json: bool):
    """The knobs of TEMPLATE for ARGS and the size of its space.

    Example: autosched space matmul 256 256 256
    """
    task = make_task(template, args, target)
    space_ = task.config_space
    fallback = space_.fallback()
    knobs = []
    for (name, knob), position in zip(space_.space_map.items(), fallback.knob_indices):
        knobs.append({"name": name, "kind": knob.kind, "choices": len(knob),
                      "values": [e.to_json() for e in knob.entities],
                      "fallback": knob[position].to_json()})
    if as_json:
        return print_json({"template": task.name, "args": list(task.args),
                           "target": str(task.target), "size": len(space_), "knobs": knobs})
    from rich.table import Table
    table = Table("knob", "kind", "choices", "values", "fallback", box=None)
    for k in knobs:
        shown = k["values"] if k["choices"] <= 8 else k["values"][:4] + ["..."]
        table.add_row(k["name"], k["kind"], str(k["choices"]),
                      ", ".join(v if v == "..." else json.dumps(v) for v in shown),
                      json.dumps(k["fallback"]))
    print_table(table, f"{task_label(task.name, task.args)}: {len(space_):,} configs")
