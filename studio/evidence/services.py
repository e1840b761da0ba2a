"""Rule test cases: writes (each one transaction, appended to the audit log) and the check of a
rule version against its rule's cases.

Callers resolve the workspace and check roles.  A case names only atoms and data paths some
version of its rule reads (``studio.logic.cases.check_steps``); a refusal names the step and the
field (``steps[2].atoms``).  Every version is checked against all of its rule's cases when it is
saved (``record_check``, called by ``studio.rules.services``), and a version failing a case is
not submitted for review (``refuse_failing``) until the case is changed, which is recorded.
"""

from __future__ import annotations

from typing import Any

from django.db import transaction
from django.utils import timezone

from studio.errors import ServiceError
from studio.logic import cases as pure, data_review, review
from studio.logic.library_cases import cases_for
from studio.logic.parser import FormulaSyntaxError, parse
from studio.monitor import RuleError, RuleSet
from studio.monitor.cases import run_case
from studio.monitor.verdicts import with_old_names
from studio.rules.models import Rule, RuleVersion
from studio.rules.monitoring import labeling_for
from studio.traces.models import Event, TraceSession
from studio.workspaces.acting import acting_user
from studio.workspaces.actions import LogAction
from studio.workspaces.services import record

from .models import Expectation, RuleCase

NAME_MAX = 200
# As the review aids search (studio.rules.authoring).
REVIEW_LENGTH = 10
DATA_STATE_CAP = 20_000


def reads_of(rule: Rule) -> pure.Reads:
    """The atoms and paths some version of ``rule`` reads: what its cases may name."""
    formulas = []
    for text in rule.versions.values_list("formula", flat=True):
        try:
            formulas.append(parse(text))
        except FormulaSyntaxError:
            continue
    return pure.Reads.of(formulas)


def _clean(rule: Rule, name: str, expect: str, steps: Any, at_step: int | None) -> dict:
    name = (name or "").strip()
    if not name:
        raise ServiceError("a case needs a name", field="name", status=422)
    if len(name) > NAME_MAX:
        raise ServiceError(f"a case name has at most {NAME_MAX} characters", field="name",
                           status=422)
    if expect not in Expectation.values:
        raise ServiceError(f"expect must be one of {', '.join(Expectation.values)}",
                           field="expect", status=422)
    try:
        steps = pure.check_steps(steps, reads_of(rule))
    except pure.CaseError as exc:
        raise ServiceError(exc.message, field=exc.field, status=422) from None
    if at_step is not None:
        if expect != Expectation.VIOLATE:
            raise ServiceError("only a case that must violate names the step of its "
                               "violation", field="at_step", status=422)
        if not 0 <= at_step < len(steps):
            raise ServiceError(f"at_step must be a step of the case, 0 to {len(steps) - 1}",
                               field="at_step", status=422)
    return {"name": name, "expect": expect, "steps": steps, "at_step": at_step}


@transaction.atomic
def add_case(rule: Rule, actor, name: str, expect: str, steps: Any,
             at_step: int | None = None, source: dict | None = None) -> RuleCase:
    fields = _clean(rule, name, expect, steps, at_step)
    case = RuleCase.objects.create(rule=rule, source=source or {"kind": "hand"},
                                   created_by=acting_user(actor), **fields)
    record(rule.workspace, actor, LogAction.RULE_CASE_CREATED, case, rule=rule.name,
           rule_id=rule.id,
           name=case.name, expect=case.expect, at_step=case.at_step, source=case.source,
           steps=len(case.steps))
    return case


@transaction.atomic
def change_case(case: RuleCase, actor, name: str | None = None, expect: str | None = None,
                steps: Any = None, at_step: int | None | str = "keep",
                reason: str = "") -> RuleCase:
    """Change a case; ``at_step`` "keep" leaves it, None clears it.  The change is kept on the
    case and in the audit log, with ``reason``."""
    case = RuleCase.objects.select_for_update().select_related("rule").get(pk=case.pk)
    before = {"name": case.name, "expect": case.expect, "at_step": case.at_step,
              "steps": case.steps}
    new_expect = expect if expect is not None else case.expect
    new_at = case.at_step if at_step == "keep" else at_step
    if new_expect == Expectation.COMPLY and at_step == "keep":
        new_at = None
    fields = _clean(case.rule, name if name is not None else case.name, new_expect,
                    steps if steps is not None else case.steps, new_at)
    after = dict(fields)
    changed = {k: [before[k], after[k]] for k in before if before[k] != after[k]}
    if not changed:
        return case
    for key, value in fields.items():
        setattr(case, key, value)
    case.changes = [*case.changes, {"at": timezone.now().isoformat(),
                                    "by": getattr(acting_user(actor), "username", None),
                                    "changed": changed, "reason": reason}]
    case.save()
    record(case.rule.workspace, actor, LogAction.RULE_CASE_CHANGED, case, rule=case.rule.name,
           rule_id=case.rule_id, name=case.name, changed=changed, reason=reason)
    return case


@transaction.atomic
def delete_case(case: RuleCase, actor) -> None:
    record(case.rule.workspace, actor, LogAction.RULE_CASE_DELETED, case, rule=case.rule.name,
           rule_id=case.rule_id, name=case.name, expect=case.expect, steps=case.steps)
    case.delete()


def session_named(workspace, name: str) -> TraceSession:
    """The workspace's session called ``name``: the id its log gave it, as the sessions list
    shows it."""
    name = (name or "").strip()
    if not name:
        raise ServiceError("give the session's name, as the sessions list shows it",
                           field="session", status=422)
    session = TraceSession.objects.filter(workspace=workspace, external_id=name).first()
    if session is None:
        raise ServiceError(f"no session named {name!r} in this workspace", field="session",
                           status=404)
    return session


def newest_sessions(workspace, limit: int = 50) -> list[str]:
    """Names of the workspace's newest sessions, for a picker."""
    return list(TraceSession.objects.filter(workspace=workspace)
                .order_by("-created_at", "-id").values_list("external_id", flat=True)[:limit])


def case_from_session(rule: Rule, actor, session_id: int, from_step: int | None,
                      to_step: int | None, expect: str, name: str = "",
                      at_step: int | None = None) -> RuleCase:
    """A case made of a stored session's steps ``from_step`` to ``to_step`` (both included),
    labelled by the workspace's labelers as an audit labels them; ``at_step`` counts from the
    first step taken."""
    session = TraceSession.objects.filter(workspace=rule.workspace, pk=session_id).first()
    if session is None:
        raise ServiceError(f"no session {session_id} in this workspace", field="session_id",
                           status=404)
    events = Event.objects.filter(session=session).order_by("step")
    if from_step is not None:
        events = events.filter(step__gte=from_step)
    if to_step is not None:
        events = events.filter(step__lte=to_step)
    rows = list(events[:pure.MAX_STEPS + 1])
    if not rows:
        raise ServiceError(f"session {session.external_id} has no events in steps "
                           f"{from_step}..{to_step}", field="from_step", status=422)
    if len(rows) > pure.MAX_STEPS:
        raise ServiceError(f"a case has at most {pure.MAX_STEPS} steps: take a shorter range",
                           field="to_step", status=422)
    steps = pure.steps_from_events((e.as_monitor_event() for e in rows),
                                   labeling_for(rule.workspace).label, reads_of(rule))
    source = {"kind": "session", "session_id": session.id, "session": session.external_id,
              "from_step": rows[0].step, "to_step": rows[-1].step}
    name = name or f"session {session.external_id}, steps {rows[0].step}-{rows[-1].step}"
    return add_case(rule, actor, name, expect, steps, at_step, source)


def case_from_trace(version: RuleVersion, actor, which: str) -> RuleCase:
    """A case from the version's review aid: its shortest ``satisfying`` trace (must comply) or
    ``violating`` one (must violate)."""
    if which not in ("satisfying", "violating"):
        raise ServiceError("which must be satisfying or violating", field="which", status=422)
    formula = parse(version.formula)
    satisfying = which == "satisfying"
    try:
        # The search the review aids show: with data atoms, of real events with values.
        if any(g.op == "cmp" for g in formula.subformulas()):
            found = data_review.find_data_trace(formula, satisfying, REVIEW_LENGTH,
                                                state_cap=DATA_STATE_CAP)
        else:
            found = review.find_trace(formula, satisfying, REVIEW_LENGTH)
    except review.ReviewLimitError as exc:
        raise ServiceError(str(exc), field="which", status=422) from None
    if found.trace is None:
        raise ServiceError(f"version {version.number} has no {which} trace to promote "
                           f"({found.message})", field="which", status=422)
    try:
        if getattr(found, "events", None) is not None:
            steps = pure.steps_from_events(found.events, lambda event, previous: event,
                                           pure.Reads.of([formula]))
        else:
            steps = pure.steps_from_trace(found.trace, formula)
    except pure.CaseError as exc:
        raise ServiceError(exc.message, field=exc.field, status=422) from None
    expect = Expectation.COMPLY if which == "satisfying" else Expectation.VIOLATE
    name = f"shortest {which} trace of version {version.number}"
    return add_case(version.rule, actor, name, expect, steps, None,
                    {"kind": "trace", "version": version.number, "which": which})


def install_library_cases(rule: Rule, actor, rule_name: str) -> int:
    """The library's cases of the library rule ``rule_name`` added to ``rule``; how many."""
    try:
        found = cases_for(rule_name)
    except KeyError:
        return 0
    for case in found:
        add_case(rule, actor, case.name, case.expect, case.as_steps(), case.at_step,
                 {"kind": "library"})
    return len(found)


# ---------------------------------------------------------------------------------------------
# Checking a version

def check_version(version: RuleVersion) -> list[dict]:
    """Every case of the version's rule, each with its outcome
    (``studio.monitor.cases.Outcome.as_dict``)."""
    cases = list(RuleCase.objects.filter(rule_id=version.rule_id))
    if not cases:
        return []
    try:
        ruleset = RuleSet([(version.rule.name, version.formula, version.counting or None)])
    except (RuleError, FormulaSyntaxError, ValueError) as exc:
        return [{**_case_out(c), "passed": False, "verdict": "", "verdict_was": "",
                 "detected": [],
                 "differs_at": None, "message": f"the formula does not compile: {exc}"}
                for c in cases]
    return [with_old_names({**_case_out(c),
                            **run_case(ruleset, c.steps, c.expect, c.at_step).as_dict()},
                           ("verdict",))
            for c in cases]


def _case_out(case: RuleCase) -> dict:
    return {"case_id": case.id, "name": case.name, "expect": case.expect,
            "at_step": case.at_step, "source": case.source.get("kind", "hand"),
            "changed": len(case.changes)}


def summary(results: list[dict]) -> dict:
    failing = [r for r in results if not r["passed"]]
    return {"cases": len(results), "passed": len(results) - len(failing),
            "failing": [{"case_id": r["case_id"], "name": r["name"],
                         "differs_at": r["differs_at"], "message": r["message"]}
                        for r in failing]}


def record_check(version: RuleVersion, actor) -> dict:
    """Check a version just saved against its rule's cases and log the outcome."""
    results = check_version(version)
    found = summary(results)
    if results:
        record(version.rule.workspace, actor, LogAction.RULE_VERSION_CASES_CHECKED, version,
               rule=version.rule.name, number=version.number, **found)
    return found


def refuse_failing(version: RuleVersion) -> None:
    """ServiceError (400, field ``cases``) naming each failing case and the step where the
    verdict differs; a version submitted for review passes all of its rule's cases."""
    found = summary(check_version(version))
    if found["failing"]:
        named = "; ".join(f"{f['name']!r}: {f['message']}" for f in found["failing"])
        raise ServiceError(
            f"version {version.number} of rule {version.rule.name!r} fails "
            f"{len(found['failing'])} of its {found['cases']} test case"
            f"{'' if found['cases'] == 1 else 's'} ({named}); change the formula, or change "
            "the case if it no longer says what the rule must do (the change is recorded)",
            field="cases", status=400, details=found)
