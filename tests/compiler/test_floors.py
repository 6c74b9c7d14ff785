"""The compiler's floors (docs/architecture.md, "Where each concept lives"): every folder
(and top-level module) of compiler/ stands on one floor and imports only from floors
below its own, so that a reader learns each floor knowing only the ones under it.

The imports are read with ast, as /work/shared/tools/import_cycles.py reads them:
every import statement counts, those inside functions too (an import deferred to dodge
a floor is still a dependence of the design).
"""
import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

FLOORS = (
    ("ir", "errors", "target", "disk_cache", "collector"),  # the ground: nodes, our
    #   exception types, Target, the on-disk compile cache, the garbage collector held
    #   back while a build runs
    ("arith", "contiguous"),      # simplification; arrays made contiguous on the cores
    #   Target says this process may use
    ("lang",),                    # the tensor-expression language: tensors, reducers
    ("schedule",),
    ("te",),                      # the public namespace of lang and schedule (tvm.te's)
    ("transform", "ops"),
    ("llvm_target",),
    ("runtime",),
    ("codegen",),
    ("build",),
    ("graph",),
    ("frontend", "contrib"),
    ("compiler",),                # compiler/__init__.py, the top
)
"""The floors from the ground up; names on one floor do not import each other."""

FLOOR = {name: n for n, names in enumerate(FLOORS) for name in names}


def compiler_modules(root: Path = ROOT) -> dict[str, Path]:
    """Every module under root/compiler/, by its dotted name (a package by its own name)."""
    found = {}
    for path in sorted((root / "compiler").rglob("*.py")):
        parts = path.relative_to(root).with_suffix("").parts
        found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def unit_of(module: str) -> str:
    """The folder (or top-level module) of compiler/ that `module` belongs to."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "compiler"


def _known(name: str, known) -> str | None:
    """The longest known module that the dotted `name` denotes."""
    parts = name.split(".")
    for k in range(len(parts), 0, -1):
        if ".".join(parts[:k]) in known:
            return ".".join(parts[:k])
    return None


def imports_of(module: str, path: Path, known) -> list[tuple[str, int]]:
    """The compiler modules `module` imports, with the line of each import: `from P
    import n` imports the module P.n when there is one, else P."""
    base = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            parent = base[:len(base) - node.level + 1] if node.level else []
            prefix = ".".join(parent + ([node.module] if node.module else []))
            names = [f"{prefix}.{a.name}" if f"{prefix}.{a.name}" in known else prefix
                     for a in node.names]
        else:
            continue
        for name in names:
            target = _known(name, known)
            if target not in (None, module) and (target, node.lineno) not in out:
                out.append((target, node.lineno))
    return out


def violations(root: Path = ROOT) -> list[str]:
    """Each import of a folder on the importer's floor or above, naming the importing
    module, the imported one and both floors."""
    known = compiler_modules(root)
    found = []
    for module, path in known.items():
        mine = unit_of(module)
        for target, line in imports_of(module, path, known):
            theirs = unit_of(target)
            if theirs != mine and FLOOR.get(theirs, -1) >= FLOOR.get(mine, -1):
                found.append(
                    f"{path.relative_to(root)}:{line}: {module} (floor {FLOOR.get(mine)}: "
                    f"{mine}) imports {target} (floor {FLOOR.get(theirs)}: {theirs})")
    return found


def test_every_folder_of_the_compiler_stands_on_one_floor():
    units = {unit_of(m) for m in compiler_modules()}
    assert units - set(FLOOR) == set(), "folders of compiler/ on no floor: add them to " \
        "FLOORS and to docs/architecture.md"
    assert set(FLOOR) - units == set(), "floors naming no folder of compiler/"


def test_no_folder_imports_a_folder_on_its_floor_or_above():
    found = violations()
    assert not found, "imports against the floors:\n" + "\n".join(found)


def test_an_upward_import_is_seen_even_inside_a_function(tmp_path):
    for name, text in [("ir/node.py", "def f():\n    from ..schedule import stage\n"),
                       ("schedule/stage.py", "from ..ir.node import Node\n"),
                       ("ir/__init__.py", ""), ("schedule/__init__.py", "")]:
        (tmp_path / "compiler" / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "compiler" / name).write_text(text)
    assert violations(tmp_path) == [
        "compiler/ir/node.py:2: compiler.ir.node (floor 0: ir) imports "
        "compiler.schedule.stage (floor 3: schedule)"]


GRAPH_FLOORS = ("ir", "strategy", "passes", "backend")
"""compiler/graph's own floors, from the ground up (docs/architecture.md): its IR, the
op strategies and the chooser, the passes, and the backend that lowers and builds."""


def test_the_graph_folders_stand_on_their_floors():
    """compiler/graph/__init__.py, the public namespace, is above them all."""
    known = compiler_modules()
    found = []
    for module, path in known.items():
        parts = module.split(".")
        if parts[:2] != ["compiler", "graph"] or len(parts) < 3:
            continue
        assert parts[2] in GRAPH_FLOORS, f"{module}: compiler/graph/{parts[2]} is on no floor"
        mine = GRAPH_FLOORS.index(parts[2])
        for target, line in imports_of(module, path, known):
            tparts = target.split(".")
            if tparts[:2] == ["compiler", "graph"] and len(tparts) > 2 and \
                    tparts[2] != parts[2] and GRAPH_FLOORS.index(tparts[2]) >= mine:
                found.append(f"{path.relative_to(ROOT)}:{line}: {module} imports {target}")
    assert not found, "imports against compiler/graph's floors:\n" + "\n".join(found)
