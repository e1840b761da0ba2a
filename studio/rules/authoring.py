"""Writing and reviewing rules: English to LTL with either engine, and the review aids of a
formula (plain English read back, example traces, warnings, equivalence with another version).

Thin over the pure core (``studio.english``, ``studio.logic.review``,
``studio.logic.wording``); what the pages and the API show is the dictionary these functions
return.
"""

from __future__ import annotations

import re
from dataclasses import replace

from studio.english import Formalisation, formalise as offline_formalise
from studio.english.base import Reading
from studio.english.llm import LLMFormaliser, same_reading
from studio.errors import ServiceError
from studio.grounding.candidates import ground_by_evidence
from studio.grounding.flags import reading_flags
from studio.grounding.sketch import sketched, with_sketch
from studio.logic import data_review, review, wording
from studio.logic.finite import holds
from studio.logic.formula import Formula
from studio.logic.parser import FormulaSyntaxError, parse
from studio.logic.progression import is_invariant
from studio.monitor.verdicts import (COUNTING_LABELS, COUNTING_SENTENCES, CountingError,
                                     check_counting)

from .sampling import event_words

ENGINES = ("offline", "llm")
ENGLISH_LIMIT = 4000
# Shorter than the core's default: the page waits for these searches.
REVIEW_LENGTH = 10
# Data searches step through z3 frames: a smaller state budget keeps a review answer quick.
DATA_STATE_CAP = 20_000


def formalise(english: str, engine: str = "offline", atoms: tuple[str, ...] = (),
              vocabulary=None, choices: dict | None = None, sample=None, *,
              client=None) -> dict:
    """The engine's reading of ``english``, grounded in the workspace's logs by evidence.

    ``atoms`` (the workspace's known atoms) guide the LLM's naming; ``vocabulary`` (with its
    evidence: ``studio.rules.vocabulary.vocabulary_for``) grounds every phrase, each with its
    ranked candidates (``studio.grounding.candidates``); ``choices`` maps a phrase to the
    candidate the author picked, which rewrites every reading; ``sample``
    (``studio.rules.sampling.stored_sample``) is what each reading is tried on, to say what it
    would flag.

    Engine "llm" asks the model (``client``: a chat client, or a function giving one - the
    workspace's endpoint, ``studio.workspaces.llm.client_for``; None: the environment's) and
    reads the rule with the offline grammar too: the model's readings come first, then the
    grammar's that mean something else, each saying which engine proposed it; when the two
    engines' first readings differ the answer says so (``disagreement``).  An endpoint that
    cannot be asked leaves the grammar's readings and a message saying why."""
    if engine not in ENGINES:
        raise ServiceError(f"unknown engine {engine!r}; engines are {', '.join(ENGINES)}",
                           field="engine", status=422)
    english = (english or "").strip()
    if not english:
        raise ServiceError("write the rule in English first", field="english", status=422)
    if len(english) > ENGLISH_LIMIT:
        raise ServiceError(f"the rule is {len(english)} characters long; at most "
                           f"{ENGLISH_LIMIT}", field="english", status=422)
    if engine == "offline":
        # what the grammar cannot read is sketched from the events it names, never sure
        result = with_sketch(offline_formalise(english, vocabulary=vocabulary), english,
                             vocabulary)
        return _formalisation(result, vocabulary, choices, sample)

    model = LLMFormaliser(client, atoms=atoms, vocabulary=vocabulary).formalise(english)
    offline = with_sketch(offline_formalise(english, vocabulary=vocabulary), english, vocabulary)
    result, disagreement = _both_engines(model, offline)
    answer = _formalisation(result, vocabulary, choices, sample)
    if disagreement:
        answer["disagreement"] = disagreement
    return answer


def _readings_of(result: Formalisation) -> list[Reading]:
    if result.readings:
        return list(result.readings)
    if result.ok:
        return [Reading(result.formula, result.text, wording.explain(result.formula))]
    return []


def _model_why(why: str) -> str:
    """"2 of 3 model answers" as "model: 2 of 3 answers"."""
    counted = re.fullmatch(r"(\d+) of (\d+) model answers?", why)
    if counted:
        total = int(counted.group(2))
        return f"model: {counted.group(1)} of {total} answer{'s' if total != 1 else ''}"
    return f"model: {why}" if why else "model"


def _offline_why(why: str) -> str:
    return f"offline grammar: {why}" if why else "offline grammar"


def _both_engines(model: Formalisation, offline: Formalisation) -> tuple[Formalisation, str]:
    """The model's readings, then the offline grammar's that none of them means (each
    ``why`` naming its engine), as one ``Formalisation``; and a sentence when the engines'
    first readings differ."""
    mine = _readings_of(model)
    theirs = _readings_of(offline)
    if not mine:
        reason = model.message or "no answer"
        if theirs:
            message = (f"The model gave no reading ({reason}); these are the offline "
                       "grammar's readings.")
        else:
            message = (f"The model gave no reading ({reason}), and the offline grammar could "
                       f"not read the rule either: {offline.message}")
        readings = tuple(replace(r, why=_offline_why(r.why)) for r in theirs)
        return replace(offline, message=message, engine="llm", readings=readings), ""
    readings = [replace(r, why=_model_why(r.why)) for r in mine]
    where: dict[int, int] = {}          # offline reading -> its place in the answer
    kept: list[tuple[int, Reading]] = []
    for j, r in enumerate(theirs):
        same = next((i for i, m in enumerate(mine) if same_reading(m.formula, r.formula)[0]),
                    None)
        if same is not None:
            where[j] = same
            if "offline grammar agrees" not in readings[same].why:
                readings[same] = replace(readings[same],
                                         why=readings[same].why + "; the offline grammar agrees")
        else:
            where[j] = len(mine) + len(kept)
            kept.append((j, r))
    for j, r in kept:
        readings.append(replace(r, why=_offline_why(r.why),
                                against=where.get(r.against) if r.against is not None else None))
    for k, r in enumerate(readings):
        # every reading of several says what tells it from another
        if len(readings) > 1 and (r.against is None or r.against == k):
            against = 1 if k == 0 else 0
            readings[k] = replace(r, against=against,
                                  trace=same_reading(r.formula, readings[against].formula)[1])
    used = {g.name for r in readings for g in r.formula.subformulas() if g.op == "atom"}
    mapped = {m.atom for m in model.mapping}
    mapping = list(model.mapping) + [m for m in offline.mapping
                                     if m.atom in used and m.atom not in mapped]
    disagreement = ""
    if theirs and not same_reading(mine[0].formula, theirs[0].formula)[0]:
        disagreement = (f"The model and the offline grammar read this rule differently: the "
                        f"model as “{_clause(mine[0])}” ({mine[0].text}), the grammar as "
                        f"“{_clause(theirs[0])}” ({theirs[0].text}); both readings are listed.")
    first = readings[0]
    return Formalisation(first.formula, first.text, model.atoms, message=model.message,
                         engine="llm", readings=tuple(readings), mapping=tuple(mapping),
                         name=offline.name), disagreement


def _clause(reading: Reading) -> str:
    english = reading.english or wording.explain(reading.formula)
    return english[:-1] if english.endswith(".") else english


def _formalisation(result: Formalisation, vocabulary=None, choices: dict | None = None,
                   sample=None) -> dict:
    """``readings``: every plausible reading (the first is ``formula``), each with its English,
    what it takes the rule to mean (``why``), a shortest trace telling it from reading
    ``against`` and, with a ``sample``, what it would flag (``flags``); ``mapping``: each phrase
    with the atom it became, whether the studio is ``sure`` of it, and its ranked
    ``candidates`` (``atom``, ``examples``, ``events``, ``why``, ``warning``); ``name``: a
    proposed rule name."""
    raw = list(getattr(result, "readings", ()))
    if result.ok and not raw:
        raw = [Reading(result.formula, result.text, wording.explain(result.formula))]
    grounded = ground_by_evidence([r.formula for r in raw], getattr(result, "mapping", ()),
                                  vocabulary, choices)
    readings = []
    for formula, origin in zip(grounded.readings, grounded.origins):
        source = raw[origin]
        same = formula is source.formula
        readings.append({
            "formula": formula.text,
            "english": source.english if same else wording.explain(formula),
            "why": source.why,
            "trace": [sorted(grounded.relabel(a) for a in step) for step in source.trace],
            "against": (grounded.origins.index(source.against)
                        if source.against in grounded.origins else None)})
    if sample is not None and readings:
        found = reading_flags(grounded.readings, sample.sessions, sample.label,
                              describe=event_words)
        for item, flags in zip(readings, found):
            item["flags"] = flags.as_dict()
    first = grounded.readings[0] if grounded.readings else None
    return {"ok": result.ok, "engine": result.engine,
            "formula": first.text if first is not None else result.text,
            "atoms": sorted({g.name for f in grounded.readings for g in f.subformulas()
                             if g.op == "atom"}) or list(result.atoms),
            "message": result.message,
            "unplaced": [{"word": word, "at": at} for word, at in result.unplaced],
            "readings": readings,
            "mapping": [p.as_dict() for p in grounded.phrases],
            "sure": grounded.sure and len(readings) == 1 and not sketched(result),
            "sketched": sketched(result),
            "rejected_choices": list(grounded.rejected),
            "sample": sample.as_dict() if sample is not None else None,
            "name": getattr(result, "name", "")}


def _trace(found: review.SearchResult) -> dict:
    steps = None if found.trace is None else [sorted(letter) for letter in found.trace]
    out = {"steps": steps, "exact": found.exhaustive, "message": found.message}
    if getattr(found, "events", None) is not None:
        out["events"] = found.events  # data atoms read as data: the steps as real events
    return out


def _reads_data(*formulas: Formula) -> bool:
    return any(g.op == "cmp" for f in formulas for g in f.subformulas())


def _find(formula: Formula, satisfying: bool):
    """A shortest satisfying/violating trace; with data atoms, of real events (issue 17)."""
    if _reads_data(formula):
        return data_review.find_data_trace(formula, satisfying, REVIEW_LENGTH,
                                           state_cap=DATA_STATE_CAP)
    return review.find_trace(formula, satisfying, REVIEW_LENGTH)


def counting_aids(formula: Formula, counting: str | None) -> dict:
    """How the version counts violations: ``mode``, ``label`` and the English ``sentence``
    (``counting`` None: the default for the formula's form)."""
    try:
        mode = check_counting(counting, is_invariant(formula))
    except CountingError as exc:
        raise ServiceError(str(exc), field="counting", status=422) from None
    return {"mode": mode, "label": COUNTING_LABELS[mode], "sentence": COUNTING_SENTENCES[mode]}


def review_aids(text: str, compare_to: str | None = None, counting: str | None = None,
                compare_counting: str | None = None) -> dict:
    """What a reviewer reads beside a formula: ``english`` (precise English generated from it),
    ``counting`` (how violations are counted, in one sentence; ``counting`` None: the formula's
    default), ``counting_before`` when ``compare_counting`` differs from it,
    ``satisfying`` and ``violating`` (a shortest trace of each, or none, saying whether the
    search was exhaustive), ``warnings`` (unsatisfiable, valid, vacuous) and, with
    ``compare_to``, ``equivalence`` (equivalent, or a shortest trace on which the two differ).
    ``limit`` says why the searches were not run when the formula reads too many atoms."""
    formula = _parsed(text, "formula")
    aids: dict = {"formula": formula.text, "english": wording.explain(formula),
                  "counting": counting_aids(formula, counting)}
    if compare_counting and compare_counting != aids["counting"]["mode"]:
        aids["counting_before"] = COUNTING_LABELS.get(compare_counting, compare_counting)
    try:
        aids["satisfying"] = _trace(_find(formula, True))
        aids["violating"] = _trace(_find(formula, False))
        aids["warnings"] = [{"kind": w.kind, "message": w.message, "exact": w.exact,
                             "trigger": w.trigger}
                            for w in review.warnings(formula, REVIEW_LENGTH)]
        if _reads_data(formula):
            aids["warnings"] = _data_warnings(aids)
        if compare_to is not None:
            aids["equivalence"] = _compare(_parsed(compare_to, "compare_to"), formula)
    except review.ReviewLimitError as exc:
        aids["limit"] = str(exc)
    return aids


def _data_warnings(aids: dict) -> list[dict]:
    """The warnings with data read as data: the searches above also decide unsatisfiable and
    valid where the propositional reading cannot (``balance < 0 & balance > 10``)."""
    found = aids["warnings"]
    kinds = {w["kind"] for w in found}
    sat, violation = aids["satisfying"], aids["violating"]
    if sat["steps"] is None and sat["exact"] and "unsatisfiable" not in kinds:
        # As review.warnings: an unsatisfiable rule gets no vacuity warnings.
        return [{"kind": "unsatisfiable", "exact": True, "trigger": None,
                 "message": "No sequence of events satisfies this rule: it is violated on every "
                            "session (its data conditions cannot all hold)."}]
    if violation["steps"] is None and violation["exact"] and "valid" not in kinds:
        found = [{"kind": "valid", "exact": True, "trigger": None,
                  "message": "No sequence of events violates this rule: it holds on every "
                             "session, so it checks nothing."}, *found]
    return found


def _compare(before: Formula, after: Formula) -> dict:
    if _reads_data(before, after):
        found = data_review.find_data_distinguishing_trace(before, after, REVIEW_LENGTH,
                                                           state_cap=DATA_STATE_CAP)
    else:
        found = review.find_distinguishing_trace(before, after, REVIEW_LENGTH)
    out = {"equivalent": found.trace is None, "exact": found.exhaustive,
           "message": found.message, "other": before.text, "steps": None}
    if getattr(found, "events", None) is not None:
        # Real events: both formulas read on them as the monitor reads them.
        out["steps"] = [sorted(letter) for letter in found.trace]
        out["events"] = found.events
        steps = [(frozenset(e["labels"]), e) for e in found.events]
        out["other_holds"], out["this_holds"] = holds(before, steps), holds(after, steps)
    elif found.trace is not None:
        out["steps"] = [sorted(letter) for letter in found.trace]
        # Which of the two holds on it (data atoms read as independent propositions).
        out["other_holds"] = _holds_on(before, found.trace)
        out["this_holds"] = _holds_on(after, found.trace)
    return out


def _holds_on(f: Formula, trace: list[frozenset[str]]) -> bool:
    """The finite-trace oracle's verdict, data atoms read as the propositions the search used."""
    return holds(review.propositional_abstraction(f), [(letter, {}) for letter in trace])


def _parsed(text: str, field: str) -> Formula:
    try:
        return parse(text)
    except FormulaSyntaxError as exc:
        raise ServiceError(f"line {exc.line}, column {exc.column}: {exc.message}", field=field,
                           status=422) from None
