"""Phrases grounded by evidence: the tied event's own field first, generic matches never first,
the author's choice rewriting every reading.  No database."""

import subprocess
import sys

from studio.grounding.candidates import NEW_ATOM_WARNING, ground_by_evidence
from studio.english import formalise
from studio.logic.parser import parse
from studio.logic.vocabulary import Vocabulary

# A support workspace that also holds another log with an `amount` of its own.
SUPPORT = Vocabulary.from_entries([
    ("builtin", "tool_call:issue_refund", "", "tool_call:issue_refund", 12, []),
    ("builtin", "tool_call:escalate_to_human", "", "tool_call:escalate_to_human", 4, []),
    ("builtin", "tool_call:share_file", "", "tool_call:share_file", 3, []),
    ("builtin", "tool_call:lookup_order", "", "tool_call:lookup_order", 20, []),
    ("builtin", "role:assistant", "", "role:assistant", 40, []),
    ("label", "contains_card_number", "", "role:assistant", 2, []),
    ("path", "output.args.amount", "number", "tool_call:issue_refund", 12, [120, 800, 45]),
    ("path", "data.env.placeholder_args.amount", "number", "tool_call:lookup_order", 5, [3, 4]),
    ("path", "output.args.file", "string", "tool_call:share_file", 3, ["x.pdf"]),
])


def _phrase(grounded, kind, tied=""):
    return next(p for p in grounded.phrases if p.kind == kind and p.tied_to == tied)


def test_a_comparison_tied_to_an_event_reads_that_events_own_field_first():
    reading = parse("G !(tool_call:issue_refund & data.env.placeholder_args.amount > 500)")
    mapping = [{"phrase": "amount", "atom": "data.env.placeholder_args.amount",
                "grounded": True}]
    grounded = ground_by_evidence([reading], mapping, SUPPORT)
    assert grounded.readings[0] == parse("G !(tool_call:issue_refund & output.args.amount > 500)")
    field = _phrase(grounded, "field", "tool_call:issue_refund")
    assert field.sure
    assert [c.atom for c in field.candidates] == ["output.args.amount",
                                                   "data.env.placeholder_args.amount"]
    assert field.candidates[0].examples == (120, 800, 45)
    assert field.candidates[0].events == 12
    other = field.candidates[1]
    assert "never seen on issue_refund" in other.warning and "lookup_order" in other.warning


def test_a_comparison_tied_to_nothing_is_a_choice_when_several_events_carry_the_field():
    grounded = ground_by_evidence([parse("G !(data.amount > 500)")], [], SUPPORT)
    field = _phrase(grounded, "field")
    assert not field.sure
    assert {c.atom for c in field.candidates} >= {"output.args.amount",
                                                  "data.env.placeholder_args.amount"}


def test_a_match_on_one_generic_word_is_never_first():
    reading = parse("G !tool_call:share_file")
    mapping = [{"phrase": "share the report", "atom": "tool_call:share_file", "grounded": True}]
    grounded = ground_by_evidence([reading], mapping, SUPPORT)
    event = _phrase(grounded, "event")
    assert not event.sure
    assert event.candidates[0].new and event.candidates[0].warning == NEW_ATOM_WARNING
    generic = next(c for c in event.candidates if c.atom == "tool_call:share_file")
    assert "generic" in generic.warning
    assert grounded.readings[0] == parse("G !share_the_report")


def test_a_better_match_on_meaningful_words_comes_before_a_generic_one():
    reading = parse("G !tool_call:share_file")
    mapping = [{"phrase": "share full card number", "atom": "tool_call:share_file",
                "grounded": True}]
    grounded = ground_by_evidence([reading], mapping, SUPPORT)
    event = _phrase(grounded, "event")
    assert event.atom == "contains_card_number"
    assert not event.sure
    assert event.candidates[0].examples == ("on assistant messages (2)",)


def test_the_authors_choice_rewrites_every_reading():
    readings = [parse("G !(tool_call:issue_refund & output.args.amount > 500)"),
                parse("G (tool_call:issue_refund & output.args.amount > 500 -> "
                      "O tool_call:escalate_to_human)")]
    mapping = [{"phrase": "amount", "atom": "output.args.amount", "grounded": True}]
    choice = {"amount": "data.env.placeholder_args.amount"}
    grounded = ground_by_evidence(readings, mapping, SUPPORT, choice)
    assert all("data.env.placeholder_args.amount" in f.text for f in grounded.readings)
    field = _phrase(grounded, "field", "tool_call:issue_refund")
    assert field.chosen_by_author and field.sure
    bad = ground_by_evidence(readings, mapping, SUPPORT, {"amount": "not a path!"})
    assert bad.rejected and bad.readings[0] == readings[0]


def test_the_refund_sentence_of_issue_23_reads_the_refunds_own_amount():
    result = formalise("Never promise a refund over 500 dollars without a manager's approval",
                       vocabulary=SUPPORT)
    grounded = ground_by_evidence([r.formula for r in result.readings], result.mapping, SUPPORT)
    assert all("placeholder" not in f.text for f in grounded.readings)
    assert "output.args.amount > 500" in grounded.readings[0].text
    approval = next(p for p in grounded.phrases if "approv" in p.phrase)
    assert not approval.grounded and approval.warning == NEW_ATOM_WARNING


def test_without_evidence_the_old_workspaces_still_get_candidates():
    plain = Vocabulary(builtin=SUPPORT.builtin, labelled=SUPPORT.labelled, paths=SUPPORT.paths)
    reading = parse("G !(tool_call:issue_refund & data.env.placeholder_args.amount > 500)")
    grounded = ground_by_evidence([reading], [], plain)
    field = _phrase(grounded, "field", "tool_call:issue_refund")
    assert not field.sure and len(field.candidates) == 2


def test_the_grounding_package_does_not_import_django():
    code = ("import sys, studio.grounding.candidates, studio.grounding.flags; "
            "print('django' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=60)
    assert done.stdout.strip() == "False", done.stderr


def test_a_phrase_saying_how_a_call_turned_out_offers_the_answer_that_says_so():
    answers = Vocabulary.from_entries([
        ("builtin", "tool_call:verify_identity", "", "tool_call:verify_identity", 5, []),
        ("builtin", "tool_call:unfreeze_card", "", "tool_call:unfreeze_card", 2, []),
        ("path", "output.result.verified", "boolean", "role:tool", 5, [True, False]),
        ("path", "output.result.status", "string", "role:tool", 9, ["captured", "declined"]),
    ])
    reading = parse("G (tool_call:unfreeze_card -> O tool_call:verify_identity)")
    mapping = [{"phrase": "identity successfully verified", "atom": "tool_call:verify_identity",
                "grounded": True}]
    grounded = ground_by_evidence([reading], mapping, answers)
    assert grounded.readings[0] == parse(
        "G (tool_call:unfreeze_card -> O output.result.verified == true)")
    event = _phrase(grounded, "event")
    assert not event.sure and "tool_call:verify_identity" in [c.atom for c in event.candidates]
    declined = ground_by_evidence([parse("G (tool_call:verify_identity -> F x)")],
                                  [{"phrase": "the card is declined",
                                    "atom": "tool_call:verify_identity", "grounded": True}],
                                  answers)
    assert 'output.result.status == "declined"' in declined.readings[0].text
