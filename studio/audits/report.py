"""What an audit's report says, shared by the API and the pages: per rule totals, the rules x
sessions matrix, streamed CSV and JSON exports, agreement with ground truth, and the evidence a
regulator reads (who wrote and approved each rule version, the labelers, every violation with its
witness).  Reads only.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass

from django.core.paginator import Paginator
from django.core.serializers.json import DjangoJSONEncoder
from django.db import connection
from django.db.models import Count, Exists, OuterRef, Q, Sum
from django.http import StreamingHttpResponse

from studio import exports
from studio.monitor.explain import explain_violation, residual_reading
from studio.monitor.verdicts import (COMPLIED, COUNTING_LABELS, COUNTING_SENTENCES, OPEN, PENDING,
                                     SATISFIED, VIOLATED, session_verdict, verdict_glyph,
                                     verdict_words, with_old_names)
from studio.logic.events import BUILTIN_PREFIXES
from studio.logic.formula import Formula
from studio.logic.parser import FormulaSyntaxError, parse
from studio.logic.reads import condition_of, rule_reads
from studio.rules.models import RuleVersion
from studio.traces.models import Event, Upload, session_is_open
from studio.workspaces.models import AuditLogEntry

from . import quality
from .models import AuditRun, GroundTruth, LabelCorrection, SessionResult, ViolationRecord
from .verdicts import session_verdict_q

TOTAL_KEYS = ("sessions", COMPLIED, "violated", OPEN, "final_violated", "violations")
# The totals' old keys, kept beside the new ones for one release (docs/api-verdicts.md).
OLD_TOTAL_KEYS = {"satisfied": COMPLIED, "pending": OPEN}
# Violations listed in the printable evidence report; the exports count them all.
EVIDENCE_VIOLATIONS = 200
# Characters of an event's input or output shown in a witness (logs can hold pages of text).
WITNESS_TEXT = 600


def versions(run: AuditRun) -> list[RuleVersion]:
    """The run's rule versions in report order: by rule name (the columns of every report)."""
    return sorted(run.rule_versions.all(), key=lambda v: (v.rule.name, v.id))


def rule_totals(run: AuditRun) -> list[dict]:
    """Per rule version (its number ``rule_version``, its id ``rule_version_id``): sessions
    audited, how many the rule's one verdict (``session_verdict``) calls complied, violated
    and open, LTLf verdicts violated at the end, violation instances, and, for a rule that
    complied in every session, whether that is only because it never applied
    (``never_triggered``) or whether that could not be told (``trigger_unknown``; see
    ``applied``).  Every version of the run is listed, also before any result is stored."""
    counts = {row["rule_version_id"]: row for row in (
        SessionResult.objects.filter(run=run).values("rule_version_id").annotate(
            sessions=Count("id"),
            complied=Count("id", filter=session_verdict_q(SATISFIED)),
            violated=Count("id", filter=session_verdict_q(VIOLATED)),
            open=Count("id", filter=session_verdict_q(PENDING)),
            final_violated=Count("id", filter=Q(final="violated")),
            violations=Sum("violation_count")))}
    out = []
    for v in versions(run):
        row = counts.get(v.id, {})
        totals = {k: row.get(k) or 0 for k in TOTAL_KEYS}
        clean = totals["sessions"] > 0 and totals[COMPLIED] == totals["sessions"]
        found = applied(run, v) if clean else True
        out.append({"rule": v.rule.name, "rule_version": v.number, "rule_version_id": v.id,
                    "formula": v.formula, "counting": v.counting, **totals,
                    **{old: totals[new] for old, new in OLD_TOTAL_KEYS.items()},
                    "never_triggered": found is False, "trigger_unknown": found is None})
    return out


def applied(run: AuditRun, version: RuleVersion) -> bool | None:
    """Whether ``version``'s condition (``condition_of``: ``p`` in ``G (p -> ...)`` or
    ``G (!p | ...)``) held at some step of the run's sessions: False when it held at none, so
    its "complied" says only that it never applied; None when that cannot be told.  A rule
    with no condition (a ban ``G !p`` applies at every step; a rule of another form) applied.

    Each result records it (``SessionResult.triggered``), decided on the labels the audit
    computed for every step: the events' own, the labelers', the built-in atoms, the label
    corrections and the comparisons.  Results stored before they recorded it fall back on
    what is stored: an atom no event arrived with and no person corrected to hold never held;
    an atom a labeler or a built-in atom computes, or a comparison, cannot be told."""
    try:
        condition = condition_of(parse(version.formula))
    except FormulaSyntaxError:
        return True
    if condition is None:
        return True
    results = SessionResult.objects.filter(run=run, rule_version=version)
    if results.filter(triggered=True).exists():
        return True
    if not results.filter(triggered__isnull=True).exists():
        return False
    return _applied_by_stored_labels(run, condition, results.values("session_id"))


def _applied_by_stored_labels(run: AuditRun, condition: Formula, sessions) -> bool | None:
    computed = {d.get("atom") for d in run.labelers if isinstance(d, dict)}

    def labelled(atom: str) -> bool:
        events = Event.objects.filter(session_id__in=sessions)
        if connection.features.supports_json_field_contains:
            found = events.filter(labels__contains=[atom]).exists()
        else:  # SQLite (the embedded default) cannot look inside JSON: the labels are read
            found = any(atom in (labels or ()) for labels in
                        events.values_list("labels", flat=True).iterator())
        return found or LabelCorrection.objects.filter(event__session_id__in=sessions, atom=atom,
                                                       value=True).exists()

    def held(part: Formula) -> bool | None:
        if part.op == "atom":
            if labelled(part.name):
                return True
            if part.name in computed or part.name.startswith(BUILTIN_PREFIXES):
                return None  # computed at audit time, not stored
            return False
        if part.op == "and":  # one part that never held is enough; all held: together?
            found = [held(a) for a in part.args]
            return False if False in found else True if len(found) == 1 and found[0] else None
        if part.op == "or":
            found = [held(a) for a in part.args]
            return True if True in found else None if None in found else False
        return None  # a comparison reads data, computed at audit time

    return held(condition)


def session_rows(run: AuditRun, columns: dict[int, int]) -> Iterator[tuple]:
    """(session id, external id, steps, finals, violation counts, verdicts) per session,
    streamed; the lists hold one entry per column (``columns``: rule version id -> position);
    ``verdicts`` are the rule's one verdict in the session (``session_verdict``)."""
    rows = (SessionResult.objects.filter(run=run).order_by("session_id")
            .values_list("session_id", "session__external_id", "steps", "rule_version_id",
                         "final", "violation_count", "verdict", "session__source",
                         "session__ended_at", "rule_version__counting")
            .iterator(chunk_size=2000))
    current = None
    width = len(columns)
    for (session_id, external, steps, version_id, final, count, settled, source, ended_at,
         counting) in rows:
        if current is None or current[0] != session_id:
            if current is not None:
                yield current
            current = (session_id, external, steps, [None] * width, [None] * width,
                       [None] * width)
        column = columns[version_id]
        current[3][column] = final
        current[4][column] = count
        current[5][column] = session_verdict(count, final,
                                             open=session_is_open(source, ended_at),
                                             settled=settled, counting=counting)
    if current is not None:
        yield current


def _session_entry(sid, external, steps, finals, counts, verdicts) -> dict:
    return with_old_names({"session_id": sid, "session": external, "steps": steps,
                           "verdicts": verdicts, "final": finals, "violations": counts},
                          ("verdicts", "final"))


def report_document(run: AuditRun) -> dict:
    """The whole report as one document (the API's report.json)."""
    rules = rule_totals(run)
    columns = {r["rule_version_id"]: i for i, r in enumerate(rules)}
    sessions = [_session_entry(*row) for row in session_rows(run, columns)]
    return {"audit": run.id, "status": run.status, "created_at": run.created_at,
            "finished_at": run.finished_at, "sessions_total": run.sessions_total,
            "sessions_done": run.sessions_done, "rules": rules, "sessions": sessions}


# ---------------------------------------------------------------------------------------------
# Exports

def csv_lines(run: AuditRun) -> Iterator[str]:
    """One row per session: per rule its one verdict in the session, the LTLf verdict at the
    end and the number of violations."""
    columns_of = versions(run)
    columns = {v.id: i for i, v in enumerate(columns_of)}
    header = ["session_id", "session", "steps"]
    for v in columns_of:
        header += [f"{v.rule.name} verdict", f"{v.rule.name} final",
                   f"{v.rule.name} violations"]

    def rows():
        for sid, external, steps, finals, counts, verdicts in session_rows(run, columns):
            row = [sid, external, steps]
            for verdict, final, count in zip(verdicts, finals, counts, strict=True):
                row += [verdict_words(verdict), verdict_words(final), count]
            yield row

    return exports.csv_lines(header, rows())


def csv_response(run: AuditRun) -> StreamingHttpResponse:
    return exports.attachment(csv_lines(run), "text/csv; charset=utf-8", f"audit-{run.id}.csv")


VIOLATION_COLUMNS = ["session_id", "session", "rule", "rule_version", "rule_version_id",
                     "counting", "trigger_step", "detected_step", "at_end", "witness_steps",
                     "explanation"]


def violation_rows(run: AuditRun) -> Iterator[list]:
    """Every violation of the run (by session, rule, detection step), one row each: the
    session, the rule and its version number (the id beside it), how the version counts, the
    step that opened the failed obligation and the step that found it failed, whether the end
    of the session failed it, the witness's steps and the sentence explaining it
    (``explain_violation``, the session page's).  Streamed from the database: a run can hold
    hundreds of thousands of violations."""
    rules: dict[int, tuple] = {}
    for v in versions(run):
        try:
            formula = parse(v.formula)  # once per version, not once per violation
        except FormulaSyntaxError:
            formula = v.formula  # explain_violation says it cannot read it
        rules[v.id] = (v.rule.name, v.number, v.counting, formula)
    records = (ViolationRecord.objects.filter(result__run=run)
               .order_by("result__session_id", "result__rule_version__rule__name",
                         "result__rule_version_id", "detected", "trigger", "id")
               .values_list("result__session_id", "result__session__external_id",
                            "result__rule_version_id", "trigger", "detected", "at_end",
                            "witness")
               .iterator(chunk_size=2000))
    for session_id, external, version_id, trigger, detected, at_end, witness in records:
        name, number, counting, formula = rules[version_id]
        witness = witness or []
        yield [session_id, external, name, number, version_id, counting, trigger, detected,
               "true" if at_end else "false",
               " ".join(str(w.get("step")) for w in witness if isinstance(w, dict)),
               explain_violation(formula, trigger, detected, at_end, witness, counting)]


def violations_csv_response(run: AuditRun) -> StreamingHttpResponse:
    return exports.attachment(exports.csv_lines(VIOLATION_COLUMNS, violation_rows(run)),
                              "text/csv; charset=utf-8", f"audit-{run.id}-violations.csv")


def json_chunks(run: AuditRun, extra: dict | None = None) -> Iterator[str]:
    """``report_document`` as JSON text, streamed session by session (a run of a million
    sessions is never one document in memory), with ``extra`` keys before ``sessions``."""
    rules = rule_totals(run)
    head = {"audit": run.id, "status": run.status, "created_at": run.created_at,
            "finished_at": run.finished_at, "sessions_total": run.sessions_total,
            "sessions_done": run.sessions_done, "rules": rules, **(extra or {})}
    encoder = DjangoJSONEncoder(ensure_ascii=False)
    text = encoder.encode(head)
    yield text[:-1] + ', "sessions": ['
    columns = {r["rule_version_id"]: i for i, r in enumerate(rules)}
    separator = ""
    for row in session_rows(run, columns):
        yield separator + encoder.encode(_session_entry(*row))
        separator = ", "
    yield "]}\n"


def json_response(run: AuditRun) -> StreamingHttpResponse:
    rows = agreement(run)
    extra = {"ground_truth": [_quality_json(q) for q in rows],
             "ground_truth_overall": rows.overall.as_dict() if rows else None}
    if run.draft_label:  # a file read apart from its page still says it is no audit
        extra["impact_check"] = run.draft_label
    return exports.attachment(json_chunks(run, extra), "application/json",
                              f"audit-{run.id}.json")


def _quality_json(entry: RuleAgreement) -> dict:
    return {"rule": entry.rule, "rule_version": entry.rule_version,
            "rule_version_id": entry.rule_version_id, **entry.counts.as_dict(),
            "audited": entry.audited, "labels_outside_run": entry.outside}


# ---------------------------------------------------------------------------------------------
# Ground truth

@dataclass
class RuleAgreement:
    """How the audit's verdicts for one rule agree with the labels of the sessions it audited.
    A session counts as found violating when the rule's one verdict in it is violated
    (``session_verdict``: a violation was counted, or the session ended violating it)."""

    rule: str
    rule_version: int  # the version's number (the pages' "v1")
    rule_version_id: int
    counts: quality.Confusion
    audited: int  # sessions the run audited for this rule, labelled or not
    outside: int  # labels for this rule naming sessions this run did not audit

    @property
    def precision(self) -> str:
        return quality.ratio_text(self.counts.precision)

    @property
    def recall(self) -> str:
        return quality.ratio_text(self.counts.recall)

    @property
    def f1(self) -> str:
        return quality.ratio_text(self.counts.f1)


@dataclass
class OverallAgreement:
    """The rules of an audit together: micro-averaged counts and figures, macro-averaged
    figures (``quality.overall``), and the rows' audited and outside counts summed."""

    figures: quality.Overall
    audited: int
    outside: int

    @property
    def counts(self) -> quality.Confusion:
        return self.figures.micro

    @property
    def precision(self) -> str:
        return quality.ratio_text(self.figures.micro.precision)

    @property
    def recall(self) -> str:
        return quality.ratio_text(self.figures.micro.recall)

    @property
    def f1(self) -> str:
        return quality.ratio_text(self.figures.micro.f1)

    @property
    def macro_precision(self) -> str:
        return quality.ratio_text(self.figures.macro_precision.value)

    @property
    def macro_recall(self) -> str:
        return quality.ratio_text(self.figures.macro_recall.value)

    @property
    def macro_f1(self) -> str:
        return quality.ratio_text(self.figures.macro_f1.value)

    def as_dict(self) -> dict:
        return {**self.figures.as_dict(), "audited": self.audited,
                "labels_outside_run": self.outside}


class AgreementTable(list):
    """The per-rule rows (a list, as callers always had it) and their ``overall`` row."""

    @property
    def overall(self) -> OverallAgreement:
        return OverallAgreement(quality.overall(entry.counts for entry in self),
                                sum(entry.audited for entry in self),
                                sum(entry.outside for entry in self))


def agreement(run: AuditRun) -> AgreementTable:
    """Per rule of the run with at least one label: the confusion counts over the sessions that
    have a label for it, and how many of its labels name sessions outside the run."""
    columns = versions(run)
    names = [v.rule.name for v in columns]
    truth: dict[str, dict[str, bool]] = {}
    for session, rule, violated in GroundTruth.objects.filter(
            workspace_id=run.workspace_id, rule__in=names).values_list(
                "session", "rule", "violated").iterator(chunk_size=5000):
        truth.setdefault(rule, {})[session] = violated
    if not truth:
        return AgreementTable()
    pairs = []
    audited: dict[str, int] = {}
    for external, rule, final, count, settled, source, ended_at, counting in (
            SessionResult.objects.filter(run=run, rule_version__rule__name__in=list(truth))
            .values_list("session__external_id", "rule_version__rule__name", "final",
                         "violation_count", "verdict", "session__source", "session__ended_at",
                         "rule_version__counting")
            .iterator(chunk_size=5000)):
        audited[rule] = audited.get(rule, 0) + 1
        label = truth[rule].get(external)
        if label is not None:
            verdict = session_verdict(count, final, open=session_is_open(source, ended_at),
                                      settled=settled, counting=counting)
            pairs.append((rule, verdict == VIOLATED, label))
    counts = quality.by_rule(pairs)
    out = AgreementTable()
    for v in columns:
        labels = truth.get(v.rule.name)
        if not labels:
            continue
        found = counts.get(v.rule.name, quality.Confusion())
        out.append(RuleAgreement(v.rule.name, v.number, v.id, found,
                                 audited.get(v.rule.name, 0), len(labels) - found.labelled))
    return out


# ---------------------------------------------------------------------------------------------
# The matrix page

def matrix(run: AuditRun, page: int | str | None, per_page: int = 50,
           only_violated: bool = False) -> dict:
    """One page of the rules x sessions matrix: per session and rule its one verdict
    (``session_verdict``, in words), TRAC's verdict, the LTLf verdict, the violation count and
    the ground-truth label if there is one."""
    columns = versions(run)
    position = {v.id: i for i, v in enumerate(columns)}
    results = SessionResult.objects.filter(run=run)
    if only_violated:
        results = results.filter(Q(final="violated") | Q(violation_count__gt=0))
    session_ids = results.order_by("session_id").values_list("session_id",
                                                             flat=True).distinct()
    paged = Paginator(session_ids, per_page).get_page(page)
    ids = list(paged.object_list)
    rows: dict[int, dict] = {}
    for r in (SessionResult.objects.filter(run=run, session_id__in=ids)
              .values("session_id", "session__external_id", "steps", "rule_version_id",
                      "verdict", "final", "violation_count", "session__source",
                      "session__ended_at", "rule_version__counting")):
        row = rows.setdefault(r["session_id"], {"id": r["session_id"],
                                                "session": r["session__external_id"],
                                                "steps": r["steps"],
                                                "cells": [None] * len(columns)})
        one = session_verdict(
            r["violation_count"], r["final"],
            open=r["session__source"] == "live" and r["session__ended_at"] is None,
            settled=r["verdict"], counting=r["rule_version__counting"])
        row["cells"][position[r["rule_version_id"]]] = {
            "session_verdict": one, "words": verdict_words(one), "verdict": r["verdict"],
            "final": r["final"], "violations": r["violation_count"],
            "glyph": verdict_glyph(one)}
    labels = {(g.session, g.rule): g.violated for g in GroundTruth.objects.filter(
        workspace_id=run.workspace_id, session__in=[r["session"] for r in rows.values()],
        rule__in=[v.rule.name for v in columns])}
    for row in rows.values():
        for v, cell in zip(columns, row["cells"]):
            if cell is None:
                continue
            truth = labels.get((row["session"], v.rule.name))
            if truth is not None:
                cell["truth"] = verdict_words("violated" if truth else "satisfied")
                cell["agrees"] = truth == (cell["session_verdict"] == "violated")
    return {"columns": columns, "page": paged, "rows": [rows[i] for i in ids if i in rows]}


# ---------------------------------------------------------------------------------------------
# The evidence report

def _who(user, token) -> str:
    if user is not None:
        return user.get_username()
    if token is not None:
        return f"token {token.name!r}"
    return "unknown"


def corrections(run: AuditRun, limit: int = 500) -> tuple[list[dict], int]:
    """The labels people corrected on events of the sessions this run audited (who, when, what),
    at most ``limit`` of them, and how many there are."""
    found = (LabelCorrection.objects
             .filter(workspace_id=run.workspace_id,
                     event__session_id__in=SessionResult.objects.filter(run=run)
                     .values("session_id"))
             .select_related("event__session", "corrected_by")
             .order_by("corrected_at", "id"))
    rows = [{"session": c.event.session.external_id, "session_id": c.event.session_id,
             "step": c.event.step, "atom": c.atom, "value": c.value,
             "by": c.corrected_by.get_username() if c.corrected_by else "unknown",
             "at": c.corrected_at} for c in found[:limit]]
    return rows, found.count() if len(rows) == limit else len(rows)


def version_history(run: AuditRun) -> list[dict]:
    """Each rule version of the run with who wrote it and who approved it when, the approval
    taken from the append-only audit log (the version's own fields when the log has none)."""
    columns = versions(run)
    ids = [v.id for v in columns]
    log: dict[int, list] = {}
    for entry in (AuditLogEntry.objects.filter(workspace_id=run.workspace_id,
                                               target_type="ruleversion", target_id__in=ids)
                  .select_related("actor", "actor_token").order_by("at", "id")):
        log.setdefault(entry.target_id, []).append(entry)
    full = {v.id: v for v in RuleVersion.objects.filter(id__in=ids).select_related(
        "rule", "author", "author_token", "reviewer", "reviewer_token")}
    out = []
    for v in columns:
        v = full[v.id]
        entries = log.get(v.id, [])
        approval = next((e for e in reversed(entries) if e.action == "rule_version.approved"),
                        None)
        submitted = next((e for e in reversed(entries)
                          if e.action == "rule_version.submitted"), None)
        out.append({
            "version": v, "rule": v.rule.name, "number": v.number, "formula": v.formula,
            "reads": _reads(v.formula),
            "english": v.english or v.rule.description,
            "author": _who(v.author, v.author_token), "written_at": v.created_at,
            "submitted_at": submitted.at if submitted else v.submitted_at,
            "approver": (_who(approval.actor, approval.actor_token) if approval
                         else _who(v.reviewer, v.reviewer_token) if v.reviewed_at else None),
            "approved_at": approval.at if approval else v.reviewed_at,
            "comment": (approval.details.get("comment", "") if approval else v.review_comment),
            # What the approver had before them (studio.evidence), as the approval recorded it.
            "impact": approval.details.get("impact") if approval else None,
            "cases": approval.details.get("cases") if approval else None,
            "counting": v.counting, "counting_label": COUNTING_LABELS.get(v.counting, ""),
            "counting_sentence": COUNTING_SENTENCES.get(v.counting, ""),
            "from_log": approval is not None,
            "log": [{"action": e.action, "who": _who(e.actor, e.actor_token), "at": e.at}
                    for e in entries],
        })
    return out


def _reads(formula: str) -> dict:
    """What a rule version reads: its atoms (past operators included) and its comparisons."""
    try:
        reads = rule_reads(parse(formula))
    except FormulaSyntaxError:  # approved versions compiled when submitted; be safe anyway
        return {"atoms": [], "comparisons": []}
    return {"atoms": list(reads.atoms), "comparisons": list(reads.comparisons)}


def atoms_read(run: AuditRun) -> set[str]:
    """The atoms the run's rule versions read (``rule_reads``, past operators included)."""
    return {atom for v in versions(run) for atom in _reads(v.formula)["atoms"]}


def labelers(run: AuditRun) -> list[dict]:
    """The labelers of the run's snapshot whose atom an audited rule reads (the others were
    configured in the workspace but could not change a verdict), configuration as JSON text."""
    read = atoms_read(run)
    return [{"kind": d.get("kind", ""), "atom": d.get("atom", ""),
             "config": json.dumps(d.get("config", {}), ensure_ascii=False, sort_keys=True)}
            for d in run.labelers or [] if d.get("atom") in read]


def uploads_read(run: AuditRun) -> list[Upload]:
    """The uploaded logs whose events the run read, each with its SHA-256: the run's upload,
    or for a run over the whole workspace every upload with an event in an audited session."""
    if run.upload_id is not None:
        found = Upload.objects.filter(id=run.upload_id)
    else:
        audited = SessionResult.objects.filter(run=run).values("session_id")
        # EXISTS per upload stops at its first audited event (uploads are few, events many).
        found = Upload.objects.filter(Exists(Event.objects.filter(
            upload_id=OuterRef("id"), session_id__in=audited)), workspace_id=run.workspace_id)
    return list(found.select_related("uploaded_by").order_by("created_at", "id"))


def live_sessions_read(run: AuditRun) -> int:
    """Audited sessions that came from live deliveries (no file, so no SHA-256)."""
    return (SessionResult.objects.filter(run=run, session__source="live")
            .values("session_id").distinct().count())


def _shown(value) -> str:
    if value is None:
        return ""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    if len(text) > WITNESS_TEXT:
        return f"{text[:WITNESS_TEXT]}… ({len(text)} characters in all)"
    return text


def violations(run: AuditRun, limit: int | None = None) -> tuple[list[dict], int]:
    """The first ``limit`` violations (by session, rule, detection step; EVIDENCE_VIOLATIONS
    unless given), each with its witness chain and the input and output of every witness step;
    and how many there are in all."""
    limit = EVIDENCE_VIOLATIONS if limit is None else limit
    records = list(ViolationRecord.objects.filter(result__run=run)
                   .select_related("result__session", "result__rule_version__rule")
                   .order_by("result__session_id", "result__rule_version__rule__name",
                             "detected", "trigger", "id")[:limit])
    total = (SessionResult.objects.filter(run=run).aggregate(n=Sum("violation_count"))["n"]
             or 0)
    wanted: dict[int, set[int]] = {}
    for record in records:
        steps = wanted.setdefault(record.result.session_id, set())
        steps.update(w["step"] for w in record.witness)
        steps.update((record.trigger, record.detected))
    events: dict[tuple[int, int], Event] = {}
    query = Q()
    for session_id, steps in wanted.items():
        query |= Q(session_id=session_id, step__in=sorted(steps))
    if wanted:
        for e in Event.objects.filter(query).only("session_id", "step", "input", "output"):
            events[(e.session_id, e.step)] = e
    out = []
    for record in records:
        session = record.result.session
        chain = []
        for w in record.witness:
            event = events.get((session.id, w["step"]))
            # What the rule still required, in the session page's words (not its formula).
            chain.append({"step": w["step"], "labels": w.get("labels", []),
                          "reading": residual_reading(w.get("residual", ""), since=w["step"]),
                          "input": _shown(event.input) if event else "",
                          "output": _shown(event.output) if event else "",
                          "missing": event is None})
        version = record.result.rule_version
        out.append({"session": session, "rule": version.rule.name,
                    "rule_version": version.number,
                    "explanation": explain_violation(version.formula, record.trigger,
                                                     record.detected, record.at_end,
                                                     record.witness, version.counting),
                    "trigger": record.trigger, "detected": record.detected,
                    "at_end": record.at_end, "witness": chain})
    return out, total
