"""The package's layers only point down: core ← probes ← zoo ← book/CLI (CONTRIBUTING.md).

Every module under ``src/stereoprobe`` is parsed with :mod:`ast`; every ``import``/``from`` statement counts,
also those inside functions (run later, they still tie the modules together), relative ones resolved. A
module may import its own layer or a lower one, never a higher one, and no modules may import each other
in a ring (strongly connected components, Tarjan's algorithm). A module's own packages do not count as its
imports: Python imports them before it in any case (their ``__init__`` may re-export the module's names).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "stereoprobe"
LAYERS = ("core", "probes", "zoo", "book")  # bottom to top
PROBES = ("unqover", "sodapop", "nli")


def layer(module: str) -> str:
    """``stereoprobe.nli.static`` → probes: a module's layer is its folder. ``book/`` (the chapters' front ends,
    parameters, execution, staging, publishing) and ``cli`` are the book layer, ``zoo/`` the zoo, a probe's folder
    the probes, and the top-level helper modules (paths, models, assets, …) the core."""
    parts = module.split(".")[1:]
    if parts[:1] in (["book"], ["cli"], ["__main__"]):
        return "book"
    if parts[:1] == ["zoo"]:
        return "zoo"
    return "probes" if parts[:1] and parts[0] in PROBES else "core"


def modules(root: Path = SRC) -> dict[str, Path]:
    """Dotted name → file of every module of the package under ``root``."""
    found = {}
    for path in sorted(root.rglob("*.py")):
        parts = (root.name, *path.relative_to(root).with_suffix("").parts)
        found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def _script_block(statement: ast.stmt) -> bool:
    """``if __name__ == "__main__":`` — code that runs only in the module ``__main__`` (``python -m``), a module
    object of its own that nothing imports, so it cannot close a cycle; it is checked as ``<module>.__main__``."""
    return isinstance(statement, ast.If) and ast.unparse(statement.test) == "__name__ == '__main__'"


def imports(root: Path = SRC) -> dict[str, set[str]]:
    """Module → the package's modules it imports anywhere in its file (with the packages whose ``__init__`` runs)."""
    mods = modules(root)
    graph: dict[str, set[str]] = {m: set() for m in mods}
    for mod, path in mods.items():
        package = mod if path.name == "__init__.py" else mod.rpartition(".")[0]
        for statement in ast.parse(path.read_text(encoding="utf-8")).body:
            owner = f"{mod}.__main__" if _script_block(statement) else mod
            graph.setdefault(owner, set())
            _collect(statement, package, mods, graph[owner])
    for mod in graph:
        graph[mod].discard(mod)
        # a module's own packages: Python has begun to import them before the module (their ``__init__`` is what
        # loads it, or runs before it), so an edge to them records no dependency (a package that re-exports its
        # submodules' entry points, as ``stereoprobe.nli`` does ``report``, is no ring)
        ancestor = mod.rpartition(".")[0]
        while ancestor:
            graph[mod].discard(ancestor)
            ancestor = ancestor.rpartition(".")[0]
    return graph


def _collect(statement: ast.stmt, package: str, mods: dict[str, Path], out: set[str]) -> None:
    """Add to ``out`` the modules every import statement inside ``statement`` loads."""
    for node in ast.walk(statement):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = package.rsplit(".", node.level - 1)[0] if node.level else ""  # `..x` in a.b.c: a.x
            base = ".".join(filter(None, (base, node.module)))
            targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in mods else base for a in node.names]
        else:
            continue
        for target in targets:
            while target and target not in mods:  # `import stereoprobe.x.f` style names: the module part
                target = target.rpartition(".")[0]
            while target:  # the module and the packages above it
                out.add(target)
                target = target.rpartition(".")[0]


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, 1972)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while not component or component[-1] != v:
                component.append(stack.pop())
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def upward(graph: dict[str, set[str]]) -> list[str]:
    """``a (layer) -> b (layer)`` for every import of a higher layer."""
    rank = {name: i for i, name in enumerate(LAYERS)}
    return [f"{a} ({layer(a)}) -> {b} ({layer(b)})" for a in sorted(graph) for b in sorted(graph[a])
            if rank[layer(b)] > rank[layer(a)]]


def test_every_layer_imports_only_its_own_or_lower_layers():
    assert upward(imports()) == []


def test_no_import_cycles_module_level_or_inside_functions():
    assert cycles(imports()) == []


def test_no_imports_placed_late_to_dodge_a_cycle():
    marker = "noqa: " + "E402"  # split, so this file does not hold it either
    assert [str(p) for p in modules().values() if marker in p.read_text(encoding="utf-8")] == []


def test_the_checker_sees_function_level_relative_and_upward_imports(tmp_path):
    pkg = tmp_path / "stereoprobe"
    (pkg / "zoo").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "zoo" / "__init__.py").write_text("")
    (pkg / "zoo" / "lab.py").write_text("from ..models import load\n")
    (pkg / "models.py").write_text("def f():\n    from .zoo import lab\n")
    (pkg / "book.py").write_text("if __name__ == '__main__':\n    import stereoprobe.cli\n")
    (pkg / "cli.py").write_text("from . import book\n")
    graph = imports(pkg)
    assert graph["stereoprobe.book.__main__"] == {"stereoprobe.cli"}  # `python -m`: no cycle
    assert graph["stereoprobe.models"] == {"stereoprobe.zoo", "stereoprobe.zoo.lab"}  # not its own package
    assert upward(graph) == ["stereoprobe.models (core) -> stereoprobe.zoo (zoo)",
                             "stereoprobe.models (core) -> stereoprobe.zoo.lab (zoo)"]
    assert cycles(graph) == [["stereoprobe.models", "stereoprobe.zoo.lab"]]
    # a package that re-exports its submodule's names is no ring; a submodule importing a sibling is seen
    (pkg / "nli").mkdir()
    (pkg / "nli" / "__init__.py").write_text("from .api import report\n")
    (pkg / "nli" / "api.py").write_text("from . import tables\n\ndef report():\n    pass\n")
    (pkg / "nli" / "tables.py").write_text("def f():\n    from .api import report\n")
    graph = imports(pkg)
    assert graph["stereoprobe.nli.tables"] == {"stereoprobe.nli.api"}
    assert ["stereoprobe.nli.api", "stereoprobe.nli.tables"] in cycles(graph)
    assert not any("stereoprobe.nli" in c for c in cycles(graph))


# -- what lies below the book layer, and what is private -----------------------------------------------------------
#: A project model name as a string constant in code (``zoo:minilm-qa``, ``lab:qa-biased``): a zoo fact.
PROJECT_NAME = re.compile(r"^(zoo|lab|asset):[a-z0-9]")


def _docstrings(tree: ast.AST) -> set[int]:
    """The ids of the docstring constants of a module, its classes and functions (examples there may name models)."""
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
                out.add(id(first.value))
    return out


def project_names_below_the_book(root: Path = SRC) -> list[str]:
    """``module:line: 'zoo:…'`` for every project model name in the code of the core and the probes (docstrings
    apart): what the zoo and the lab are belongs to the zoo, the book layer or the models' cards."""
    found = []
    for mod, path in modules(root).items():
        if layer(mod) in ("zoo", "book"):
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        docs = _docstrings(tree)
        for node in ast.walk(tree):
            if (isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs
                    and PROJECT_NAME.match(node.value)):
                found.append(f"{mod}:{node.lineno}: {node.value!r}")
    return found


def private_imports(root: Path = SRC) -> list[str]:
    """``module: _name from other`` for every import of another module's private name (``_x``)."""
    found = []
    for mod, path in modules(root).items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module != "__future__":
                for alias in node.names:
                    if alias.name.startswith("_") and not alias.name.startswith("__"):
                        found.append(f"{mod}: {alias.name} from {'.' * node.level}{node.module or ''}")
    return found


def test_no_zoo_or_lab_names_below_the_book_layer():
    assert project_names_below_the_book() == []


def test_no_private_names_imported_across_modules():
    assert private_imports() == []


def test_the_checkers_see_names_and_private_imports(tmp_path):
    pkg = tmp_path / "stereoprobe"
    (pkg / "nli").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "nli" / "__init__.py").write_text("")
    (pkg / "nli" / "api.py").write_text('"""report("zoo:minilm-nli") in a docstring is fine."""\n'
                                        'from .scoring import _helper\nDEFAULT = "zoo:minilm-nli"\n')
    (pkg / "nli" / "scoring.py").write_text("def _helper():\n    pass\n")
    assert project_names_below_the_book(pkg) == ["stereoprobe.nli.api:3: 'zoo:minilm-nli'"]
    assert private_imports(pkg) == ["stereoprobe.nli.api: _helper from .scoring"]
