"""The client is for agent projects to copy: the standard library only, never Django."""

import ast
import subprocess
import sys
from pathlib import Path

import studio.client

ROOT = Path(__file__).resolve().parents[2]


def test_importing_the_client_imports_no_django():
    code = ("import sys, studio.client; "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('django', 'ninja')))")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                         text=True, check=True).stdout
    assert out.strip() == "[]"


def _imports(path: Path):
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            yield from (alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            yield node.module.split(".")[0]


# Adapters to an agent framework: each imports that framework and nothing else outside the
# standard library, and only when it is imported itself (``studio.client`` never imports them).
ADAPTERS = {"openai_agents.py": {"agents"}}


def test_the_client_imports_the_standard_library_and_itself_only():
    folder = Path(studio.client.__file__).parent
    for path in folder.glob("*.py"):
        outside = {name for name in _imports(path)
                   if name not in sys.stdlib_module_names and name != "__future__"}
        assert outside == ADAPTERS.get(path.name, set()), path.name


def test_importing_the_client_imports_no_agent_framework():
    code = ("import sys, studio.client; "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('agents', 'openai')))")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                         text=True, check=True).stdout
    assert out.strip() == "[]"
    init = (Path(studio.client.__file__).parent / "__init__.py").read_text()
    assert all(f"import {name.removesuffix('.py')}" not in init
               and f".{name.removesuffix('.py')} import" not in init for name in ADAPTERS)


def test_the_example_needs_only_the_client_and_openai_when_there_is_a_key():
    outside = {name for name in _imports(ROOT / "examples" / "openai_tool_loop.py")
               if name not in sys.stdlib_module_names and name != "__future__"}
    assert outside == {"studio", "openai"}


def test_the_agents_example_needs_only_the_client_and_the_sdk():
    outside = {name for name in _imports(ROOT / "examples" / "openai_agents_loop.py")
               if name not in sys.stdlib_module_names and name != "__future__"}
    assert outside == {"studio", "agents", "openai"}
