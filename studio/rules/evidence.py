"""What a rule's review reads from its evidence - the rule's test cases and the impact check -
which the evidence app (``studio.evidence``, above rules: it stores cases of rules and audits
drafts) supplies when it loads.  Rules asks through this protocol instead of importing the app
above it, so the two form layers.
"""

from __future__ import annotations

from typing import Protocol

from django.core.exceptions import ImproperlyConfigured


class ReviewEvidence(Protocol):
    def record_check(self, version, actor) -> dict:
        """Check a version just saved against its rule's cases; log the outcome."""

    def refuse_failing(self, version) -> None:
        """ServiceError naming each case the version fails: it is not submitted for review."""

    def cases(self, version) -> list[dict]:
        """Every case of the version's rule with its outcome."""

    def summary(self, results: list[dict]) -> dict:
        """How many cases, how many passed, the failing ones."""

    def impact_for_approval(self, version) -> dict | None:
        """The latest impact check's counts (None: none was run)."""

    def install_library_cases(self, rule, actor, library_name: str) -> int:
        """The library's cases of ``library_name`` added to ``rule``; how many."""


_supplied: list[ReviewEvidence] = []


def supply(evidence: ReviewEvidence) -> None:
    """Called once by the evidence app's ``ready()``."""
    _supplied[:] = [evidence]


def evidence() -> ReviewEvidence:
    if not _supplied:
        raise ImproperlyConfigured("studio.evidence is not installed: rule reviews need its "
                                   "test cases and impact checks")
    return _supplied[0]
