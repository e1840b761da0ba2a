"""The pure packages form layers (issue 25): the formal core ``studio.logic`` at the bottom,
``labeling`` and ``monitor`` above it, ``risk`` and ``grounding`` above the monitor, ``causal``
beside them over ``logic``; and no module among them imports, directly or through others, a
module that imports it back.  Every import counts, function-local ones included."""

from __future__ import annotations

import ast
from pathlib import Path

STUDIO = Path(__file__).resolve().parents[2] / "studio"
PURE = ("logic", "labeling", "monitor", "causal", "risk", "grounding")
# What each pure package may import among the others (the English reader, its own package,
# is left to its own test).
MAY_IMPORT = {
    "logic": set(),
    "labeling": {"logic"},
    "monitor": {"logic", "labeling"},
    "causal": {"logic"},
    "risk": {"logic", "labeling", "monitor"},
    "grounding": {"logic", "labeling", "monitor", "english"},
}


def _package(module: str) -> str | None:
    parts = module.split(".")
    if len(parts) < 2 or parts[0] != "studio":
        return None
    if parts[1] == "english" or parts[1:3] == ["logic", "english"]:
        return "english"
    return parts[1] if parts[1] in PURE else None


def _modules() -> dict[str, Path]:
    found = {}
    for package in PURE:
        for path in (STUDIO / package).rglob("*.py"):
            parts = path.relative_to(STUDIO.parent).with_suffix("").parts
            name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
            if _package(name) != "english":
                found[name] = path
    return found


def _imports(name: str, path: Path, modules=frozenset()) -> set[str]:
    """What ``name`` imports: ``from a import b`` is module ``a.b`` when there is one, else
    ``a`` (a package's ``__init__`` only when a name is taken from it)."""
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                head = package.split(".")[:len(package.split(".")) - node.level + 1]
                base = ".".join(head + ([node.module] if node.module else []))
            for a in node.names:
                out.add(f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base)
    return out


def _graph() -> dict[str, set[str]]:
    modules = _modules()
    return {name: {m for m in _imports(name, path, modules) if m in modules and m != name}
            for name, path in modules.items()}


def test_each_pure_package_imports_only_the_layers_below_it():
    wrong = []
    modules = _modules()
    for name, path in modules.items():
        own = _package(name)
        for target in _imports(name, path, modules):
            other = _package(target)
            if other is not None and other != own and other not in MAY_IMPORT[own]:
                wrong.append(f"{name} imports {target}")
    assert wrong == []


def test_no_module_of_the_pure_packages_imports_itself_through_others():
    graph = _graph()
    # Tarjan-free check: a module is on a circle when it reaches itself.
    circles = []
    for start in graph:
        seen, stack = set(), list(graph[start])
        while stack:
            m = stack.pop()
            if m == start:
                circles.append(start)
                break
            if m not in seen:
                seen.add(m)
                stack.extend(graph.get(m, ()))
    assert circles == [], {m: sorted(graph[m]) for m in circles}
