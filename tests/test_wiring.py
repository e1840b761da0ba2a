"""Where a lower app needs a higher one to take part (docs/architecture.md), the higher one
supplies its part when it loads: every part is in place, once, in its order."""


def test_audits_and_evidence_take_part_in_uploads_and_erasures_once_ready():
    from studio.audits.erasure import AuditErasure
    from studio.audits.intake import UploadAuditing
    from studio.evidence.erasure import EvidenceErasure
    from studio.traces import erasure, intake

    assert isinstance(intake.auditing(), UploadAuditing)
    # In this order: the evidence's part reads the results the audits' survey counted.
    assert [type(p) for p in erasure._participants] == [AuditErasure, EvidenceErasure]


def test_the_evidence_app_supplies_what_a_rules_review_reads():
    from studio.evidence import impact, services
    from studio.rules.evidence import evidence

    supplied = evidence()
    assert supplied.cases is services.check_version
    assert supplied.refuse_failing is services.refuse_failing
    assert supplied.impact_for_approval is impact.counts_for_approval
