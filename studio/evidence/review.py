"""The evidence a rule's review reads (``studio.rules.evidence.ReviewEvidence``), supplied to
rules by this app's ``ready()``."""

from __future__ import annotations

from . import impact, services


class CasesAndImpact:
    record_check = staticmethod(services.record_check)
    refuse_failing = staticmethod(services.refuse_failing)
    cases = staticmethod(services.check_version)
    summary = staticmethod(services.summary)
    impact_for_approval = staticmethod(impact.counts_for_approval)
    install_library_cases = staticmethod(services.install_library_cases)
