"""The house stands in layers: every import of studio/ (function-local ones and relative ones
included) goes down the list ``LAYERS``, no two files import each other directly or through
others, and no module uses another package's private (``_underscore``) name.

The data flow it keeps one-way is upload -> parse -> label -> monitor -> store -> render: the
log store (traces) sits under the rules, the audits over both, the live monitors and the guard
above them, and the pages that read several apps at the top (web).  The composition roots -
settings, the URL confs, the ASGI/WSGI entry points, the one NinjaAPI and worker/ - join every
app and are imported by none.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
STUDIO = REPO / "studio"

# Bottom first.  A unit is a package of studio/ or one of its base modules; each may import
# only units before it.
LAYERS = [
    # base modules: no studio imports but each other
    "studio.errors", "studio.caching", "studio.connections", "studio.copyformat",
    "studio.bulkwork", "studio.childprocess", "studio.boundary",
    "studio.tasks",
    # the pure core (no Django): the formal logic, the English reader that targets it, labeling,
    # monitors, causal monitors, risk, grounding
    "studio.logic", "studio.labeling", "studio.english", "studio.monitor", "studio.causal",
    "studio.risk", "studio.grounding",
    # files for people to open (CSV): neutralises what a spreadsheet would run or hide
    "studio.exports",
    # adapters of agent stacks (the MCP gateway): real clients of the public API over HTTP
    # (studio.client), so they import nothing of the studio but the client (checked below)
    "studio.integrations",
    # the Django apps
    "studio.workspaces", "studio.traces", "studio.rules", "studio.audits", "studio.evidence",
    "studio.live", "studio.guard", "studio.web",
]
# Join everything, imported by nothing (studio.urls includes the API's URLs, and Django loads
# the rest by their dotted names in settings).
ROOTS = {"studio.settings", "studio.urls", "studio.asgi", "studio.wsgi", "studio.api.urls",
         "studio.api", "studio.views"}
APART = {"studio.client"}  # the HTTP client agents install: imports nothing of the studio
# Rides on the client, and on nothing else of the studio (its calls go over HTTP with a token).
CLIENT_RIDERS = {"studio.integrations"}


def module_name(path: Path) -> str:
    parts = list(path.relative_to(REPO).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imports_in(source: str, module: str, is_package: bool = False) -> list[tuple[int, str, str]]:
    """(line, imported module, name or "") of every import in ``source`` at any depth: ``import
    a.b``, ``from a.b import c`` (as module ``a.b`` and name ``c``), relative ones resolved
    against ``module``."""
    found = []
    package = module.split(".") if is_package else module.split(".")[:-1]
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name, "") for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package[:len(package) - (node.level - 1)]
                base = ".".join(anchor + ([base] if base else []))
            found += [(node.lineno, base, alias.name) for alias in node.names]
    return sorted(found, key=lambda entry: entry[0])


def unit_of(module: str) -> str | None:
    """The package of studio/ (or base module) a dotted name belongs to; None outside studio."""
    parts = module.split(".")
    if parts[0] == "worker":
        return "worker"
    if parts[0] != "studio" or len(parts) < 2:
        return None
    if module in ("studio.api.urls",):
        return module
    return ".".join(parts[:2])


def _known(module: str) -> bool:
    path = REPO.joinpath(*module.split("."))
    return path.with_suffix(".py").exists() or (path / "__init__.py").exists()


def _target(module: str, name: str) -> str:
    """``from a import b`` imports module ``a.b`` when it is one, else the name ``b`` of ``a``."""
    return f"{module}.{name}" if name and _known(f"{module}.{name}") else module


def _circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one node (Tarjan, iterative)."""
    index, low, on_stack, stack, found = {}, {}, set(), [], []
    counter = 0
    for start in list(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph.get(start, ()))))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, successors = work[-1]
            advanced = False
            for successor in successors:
                if successor not in index:
                    index[successor] = low[successor] = counter
                    counter += 1
                    stack.append(successor)
                    on_stack.add(successor)
                    work.append((successor, iter(sorted(graph.get(successor, ())))))
                    advanced = True
                    break
                if successor in on_stack:
                    low[node] = min(low[node], index[successor])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_the_import_finder_sees_imports_at_any_depth_and_resolves_relative_ones():
    source = ("import studio.rules.models\n"
              "from . import sibling\n"
              "from ..traces.models import Event\n"
              "def later():\n"
              "    from studio.audits import services\n")
    assert imports_in(source, "studio.live.ingest") == [
        (1, "studio.rules.models", ""), (2, "studio.live", "sibling"),
        (3, "studio.traces.models", "Event"), (5, "studio.audits", "services")]
    assert imports_in("from .models import Rule\n", "studio.rules", is_package=True) == [
        (1, "studio.rules.models", "Rule")]
    assert _circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_every_unit_of_studio_has_its_place():
    units = {unit_of(name) for _, name, _ in _sources()} - {None}
    assert units - set(LAYERS) - ROOTS - APART == set()


def upward_imports(modules) -> list[str]:
    place = {unit: level for level, unit in enumerate(LAYERS)}
    upward: list[str] = []
    for where, name, source in modules:
        unit = unit_of(name)
        if unit in ROOTS:
            continue
        for line, module, _ in imports_in(source, name, where.endswith("__init__.py")):
            target = unit_of(module)
            if target is None or target == unit:
                continue
            found = f"{where}:{line} imports {module}"
            if target in ROOTS or target == "worker":
                upward.append(f"{found} (a composition root)")
            elif unit in CLIENT_RIDERS and target not in APART:
                upward.append(f"{found} ({unit} talks to the studio over HTTP only, through "
                              "studio.client)")
            elif target in APART and unit in CLIENT_RIDERS:
                continue
            elif unit in APART or target in APART:
                upward.append(f"{found} (the client stands apart)")
            elif place[target] > place[unit]:
                upward.append(f"{found} ({target} is above {unit})")
    return list(dict.fromkeys(upward))  # one line per import statement


def private_names_used(modules) -> list[str]:
    leaks = []
    for where, name, source in modules:
        unit = unit_of(name)
        aliases = {}  # local name -> a module of another package bound to it
        for line, module, imported in imports_in(source, name, where.endswith("__init__.py")):
            if unit_of(module) in (None, unit):
                continue
            if imported.startswith("_") and not imported.startswith("__"):
                leaks.append(f"{where}:{line} imports {module}.{imported}")
            target = _target(module, imported)
            if imported and target != module:
                aliases[imported] = target
        tree = ast.parse(source)
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if unit_of(alias.name) not in (None, unit):
                        aliases[alias.asname or alias.name.split(".")[0]] = alias.name
            elif isinstance(node, ast.ImportFrom):
                for alias in node.names:
                    if alias.asname and alias.name in aliases:
                        aliases[alias.asname] = aliases[alias.name]
        for node in ast.walk(tree):
            if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                    and node.value.id in aliases and node.attr.startswith("_")
                    and not node.attr.startswith("__")):
                leaks.append(f"{where}:{node.lineno} uses {aliases[node.value.id]}.{node.attr}")
    return sorted(leaks, key=lambda leak: (leak.split(" ")[0].split(":")[0],
                                           int(leak.split(" ")[0].split(":")[1])))


def _sources():
    for path in sorted(STUDIO.rglob("*.py")):
        if "migrations" not in path.parts:
            yield str(path.relative_to(REPO)), module_name(path), path.read_text()


def test_every_import_goes_down_the_layers():
    assert upward_imports(_sources()) == []


def test_no_module_uses_another_packages_private_name():
    assert private_names_used(_sources()) == []


def test_no_files_import_each_other_directly_or_through_others():
    graph: dict[str, set[str]] = defaultdict(set)
    ties: dict[tuple[str, str], int] = {}
    for path, name, source in _sources():
        for line, module, imported in imports_in(source, name, path.endswith("__init__.py")):
            target = _target(module, imported)
            if target.startswith("studio") and target != name and _known(target):
                graph[name].add(target)
                ties.setdefault((name, target), line)
    described = [" / ".join(f"{a} -> {b} (line {ties[(a, b)]})" for a in circle
                            for b in circle if (a, b) in ties) for circle in _circles(graph)]
    assert described == []


def test_the_checks_fail_on_planted_violations():
    # A check that cannot fail proves nothing: a low module that imports the guard, uses its
    # private name and imports the live API's private name is refused by both checks.
    planted = [("studio/workspaces/planted.py", "studio.workspaces.planted",
                "from studio.guard import services\nservices._hidden\n"
                "def later():\n    from studio.live.api import _private\n"
                "import studio.live.ingest as ingest\ningest._lock\n")]
    assert upward_imports(planted) == [
        "studio/workspaces/planted.py:1 imports studio.guard (studio.guard is above "
        "studio.workspaces)",
        "studio/workspaces/planted.py:4 imports studio.live.api (studio.live is above "
        "studio.workspaces)",
        "studio/workspaces/planted.py:5 imports studio.live.ingest (studio.live is above "
        "studio.workspaces)"]
    # An adapter rides on the client alone: the client is allowed, a Django app is not.
    rider = [("studio/integrations/planted.py", "studio.integrations.planted",
              "from studio.client import StudioClient\nfrom studio.errors import ServiceError\n")]
    assert upward_imports(rider) == [
        "studio/integrations/planted.py:2 imports studio.errors (studio.integrations talks to "
        "the studio over HTTP only, through studio.client)"]
    assert private_names_used(planted) == [
        "studio/workspaces/planted.py:2 uses studio.guard.services._hidden",
        "studio/workspaces/planted.py:4 imports studio.live.api._private",
        "studio/workspaces/planted.py:6 uses studio.live.ingest._lock"]
