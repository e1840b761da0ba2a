"""Traces is the log store at the bottom of the apps: none of its modules imports an app above it,
function-local imports included.  What audits and evidence add to an upload or an erasure is
handed down (``intake.UploadAuditing``, ``loading.BatchObserver``, erasure participants)."""

import ast
from pathlib import Path

import studio.traces

ABOVE = ("studio.rules", "studio.audits", "studio.evidence", "studio.live", "studio.guard",
         "studio.web", "worker")
# Pages that read several apps; they move to studio/web (issue 25).
PAGES = {"views.py", "session_views.py", "msc_views.py", "session_urls.py", "page_urls.py"}


def _imported(path: Path) -> list[str]:
    names = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.append(node.module)
    return names


def test_no_module_of_traces_imports_an_app_above_it():
    root = Path(studio.traces.__file__).parent
    upward = [f"{path.relative_to(root)}: {name}"
              for path in sorted(root.rglob("*.py")) if path.name not in PAGES
              for name in _imported(path)
              if any(name == above or name.startswith(above + ".") for above in ABOVE)]
    assert upward == []


def test_audits_and_evidence_take_part_in_uploads_and_erasures_once_ready():
    from studio.audits.erasure import AuditErasure
    from studio.audits.intake import UploadAuditing
    from studio.evidence.erasure import EvidenceErasure
    from studio.traces import erasure, intake

    assert isinstance(intake.auditing(), UploadAuditing)
    # In this order: the evidence's part reads the results the audits' survey counted.
    assert [type(p) for p in erasure._participants] == [AuditErasure, EvidenceErasure]
