"""The formal core has no Django in it: importing it in a fresh interpreter loads no Django."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]

PURE_MODULES = [
    "studio.logic.formula",
    "studio.logic.parser",
    "studio.logic.progression",
    "studio.logic.finite",
    "studio.logic.events",
    "studio.logic.review",
    "studio.logic.wording",
    "studio.logic.anticipation",
    "studio.logic.smt",
    "studio.logic.data_review",
    "studio.logic.library",
    "studio.logic.vocabulary",
    "studio.logic.vocabulary_warnings",
    "studio.logic.reads",
    "studio.english",
    "studio.english.grounding",
    "studio.english.llm",
    "studio.labeling",
    "studio.labeling.llm",
    "studio.labeling.llm_labeler",
    "studio.labeling.declarations",
    "studio.monitor",
    "studio.monitor.audit",
    "studio.monitor.explain",
    "studio.monitor.cases",
    "studio.monitor.anticipation",
    "studio.causal",
    "studio.grounding.builder_form",
]

SCRIPT = """
import importlib, json, sys
for name in sys.argv[1:]:
    importlib.import_module(name)
loaded = sorted(m for m in sys.modules if m == "django" or m.startswith("django."))
print(json.dumps({"imported": [n for n in sys.argv[1:] if n in sys.modules], "django": loaded}))
"""


def _import_in_fresh_interpreter(*modules: str) -> dict:
    env = dict(os.environ)
    # Even with Django configured in the environment, nothing may import it.
    env["DJANGO_SETTINGS_MODULE"] = "studio.settings"
    result = subprocess.run([sys.executable, "-c", SCRIPT, *modules], cwd=REPO_ROOT, env=env,
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_the_pure_core_imports_without_django():
    report = _import_in_fresh_interpreter(*PURE_MODULES)
    assert report["imported"] == PURE_MODULES
    assert report["django"] == []


@pytest.mark.parametrize("module", PURE_MODULES)
def test_each_pure_module_alone_imports_without_django(module):
    report = _import_in_fresh_interpreter(module)
    assert report["imported"] == [module]
    assert report["django"] == []


def test_the_check_can_see_django():
    # The same probe does report Django when something imports it: the tests above can fail.
    report = _import_in_fresh_interpreter("django.conf")
    assert "django" in report["django"]
