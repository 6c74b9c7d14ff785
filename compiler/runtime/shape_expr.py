"""Argument shapes in a module's metadata: JSON that code generation writes and the
runtime reads back, in this process or in another one that loads an exported file.

A dimension is an int, the key of a symbolic size (`"n"`), or `{"expr": tree}` for an
expression of sizes (`n + 2`), where a tree is an int, a size key, or
`{"op": name, "args": [tree, tree]}` with `name` one of OPS. The runtime evaluates a tree
with the operations of OPS and nothing else, and checks every dimension when a module
is loaded: metadata is data read from a file, and is never executed.
"""
from __future__ import annotations

import operator
from collections.abc import Collection

from ..errors import BuildError, ModuleFormatError
from ..ir import expr as E

OPS = {"add": operator.add, "sub": operator.sub, "mul": operator.mul,
       "floordiv": operator.floordiv, "floormod": operator.mod, "min": min, "max": max}
_NODE_OPS = {E.Add: "add", E.Sub: "sub", E.Mul: "mul", E.FloorDiv: "floordiv",
             E.FloorMod: "floormod", E.Min: "min", E.Max: "max"}


def encode_dim(d: E.Expr, keys: dict, where: str):
    """The metadata of dimension `d`; `keys` maps each symbolic size (a Var) to its key.
    Raises BuildError naming `where` for an expression the runtime cannot evaluate."""
    if isinstance(d, E.IntImm):
        return d.value
    if d in keys:
        return keys[d]
    return {"expr": _encode(d, keys, d, where)}


def _encode(e: E.Expr, keys: dict, whole: E.Expr, where: str):
    match e:
        case E.IntImm(value=v):
            return v
        case E.Var() if e in keys:
            return keys[e]
        case E.BinaryOp(a=a, b=b) if type(e) in _NODE_OPS:
            return {"op": _NODE_OPS[type(e)],
                    "args": [_encode(a, keys, whole, where), _encode(b, keys, whole, where)]}
    raise BuildError(f"{where} has the shape expression {whole}, whose part {e} a module "
                     f"cannot check at run time (it can: constants, symbolic sizes, "
                     f"{', '.join(OPS)})")


def check_dim(dim, sizes: Collection[str], where: str) -> None:
    """Raise ModuleFormatError naming `where` unless `dim` is a dimension as encode_dim
    writes it over the size keys `sizes`."""
    if isinstance(dim, dict) and set(dim) == {"expr"}:
        _check(dim["expr"], sizes, dim["expr"], where)
    elif not _is_leaf(dim, sizes):
        raise ModuleFormatError(f"{where} is {dim!r}: not an int, a symbolic size "
                                f"({', '.join(sizes) or 'the module has none'}) or "
                                f"{{'expr': ...}}")


def _is_leaf(tree, sizes: Collection[str]) -> bool:
    if isinstance(tree, bool):
        return False
    return isinstance(tree, int) or (isinstance(tree, str) and tree in sizes)


def _check(tree, sizes: Collection[str], whole, where: str) -> None:
    if _is_leaf(tree, sizes):
        return
    if (isinstance(tree, dict) and set(tree) == {"op", "args"} and tree["op"] in OPS
            and isinstance(tree["args"], list) and len(tree["args"]) == 2):
        for arg in tree["args"]:
            _check(arg, sizes, whole, where)
        return
    raise ModuleFormatError(
        f"{where} has the shape expression {whole!r}, whose part {tree!r} is not an int, a "
        f"symbolic size ({', '.join(sizes) or 'the module has none'}) or "
        f"{{'op': one of {', '.join(OPS)}, 'args': [two of these]}}; the module was not "
        f"written by this version's build / export, and is not loaded")


def dim_value(dim, sizes: dict) -> int:
    """The length a dimension that check_dim accepted has, given the bound `sizes`."""
    return _value(dim["expr"] if isinstance(dim, dict) else dim, sizes)


def _value(tree, sizes: dict) -> int:
    if isinstance(tree, int):
        return tree
    if isinstance(tree, str):
        return sizes[tree]
    a, b = (_value(arg, sizes) for arg in tree["args"])
    return OPS[tree["op"]](a, b)
