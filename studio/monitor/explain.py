"""Verdicts in words a compliance officer reads without knowing temporal logic.

Pure (no Django): the session page, the Live page and the API call these with what they store.

* ``residual_reading``: a residual formula as a sentence - ``false`` "can no longer be met (since
  step 4)", ``true`` "met, nothing more is required", otherwise "still owed: " and the residual's
  English (``studio.logic.wording.explain_rest``, the one renderer of formulas).  After the last
  step of a finished session nothing is owed any more: "complied, nothing owed" when the end
  meets the residual (without "complied" when a violation was counted earlier), else "left
  unmet when the session ended: ...".
* ``explain_violation``: one violation as a sentence built from its witness and the rule:
  "Step 3: the agent called send_money; no call to get_balance happened before it."  Its
  events read as the rule's English reads them (``wording.happened``, ``wording.none_of``).

Witness entries are ``{"step", "labels", "residual"}`` (stored step numbers; the labels that held
at that step, atoms by name and data atoms by their text; the residual after the step).  They are
recorded only where the residual changed, so a step may have none: the sentence then says only
what the rule and the steps it has tell.
"""

from __future__ import annotations

import functools

from collections.abc import Iterable, Mapping

from studio.logic import wording
from studio.logic.formula import FALSE, TRUE, Formula, Not
from studio.logic.parser import FormulaSyntaxError, parse
from studio.logic.progression import invariant_body

from .verdicts import PER_INSTANCE

MET = "met, nothing more is required"
NO_LONGER = "can no longer be met"
# After the last step of a finished session: no later step can break or meet it any more.
ENDED_MET = "complied, nothing owed"
ENDED_OWES_NOTHING = "nothing more owed: the session has ended"  # beside a counted violation
ENDED_UNMET = "left unmet when the session ended: "


def residual_reading(residual: str | Formula, since: int | None = None,
                     ended: bool = False, complied: bool = True) -> str:
    """What a residual means for the rest of the session, in one phrase; ``ended``: it is the
    residual after the last step of a session that has ended (nothing is owed any more);
    ``complied``: the rule's one verdict there is complied (not violated earlier)."""
    if isinstance(residual, str):
        return _reading_of_text(residual, since, ended, complied)
    return _reading(residual, since, ended, complied)


@functools.lru_cache(maxsize=4096)
def _reading_of_text(residual: str, since: int | None, ended: bool, complied: bool) -> str:
    # Pages and live answers read the same few residuals over and over.
    return _reading(residual, since, ended, complied)


def _reading(residual: str | Formula, since: int | None, ended: bool = False,
             complied: bool = True) -> str:
    try:
        f = residual if isinstance(residual, Formula) else parse(residual)
    except FormulaSyntaxError:
        return "still owed: " + str(residual)
    if f is FALSE:
        return NO_LONGER + (f" (since step {since})" if since is not None else "")
    if ended:
        if f.empty_value:
            return ENDED_MET if complied else ENDED_OWES_NOTHING
        return ENDED_UNMET + wording.explain_rest(f, capitalise=False)
    if f is TRUE:
        return MET
    return "still owed: " + wording.explain_rest(f, capitalise=False)


# ---------------------------------------------------------------------------------------------
# What happened at a step, in words

def _leaves(f: Formula) -> list[Formula]:
    """The atoms and data atoms ``f`` reads, in the order they are written."""
    out: list[Formula] = []
    for g in f.subformulas():
        if g.op in ("atom", "cmp") and g not in out:
            out.append(g)
    return out


def _disjuncts(f: Formula) -> list[Formula] | None:
    """``a | b | c`` of leaves as [a, b, c]; a single leaf as [it]; otherwise None."""
    parts = list(f.args) if f.op == "or" else [f]
    return parts if all(p.op in ("atom", "cmp") for p in parts) else None


class _Steps:
    """The witness: which of the rule's leaves held at each step it recorded."""

    def __init__(self, witness: Iterable[Mapping], leaves: list[Formula]):
        self.labels: dict[int, set[str]] = {}
        self.residuals: list[tuple[int, str]] = []
        for entry in witness:
            step = entry.get("step")
            if not isinstance(step, int):
                continue
            self.labels[step] = {str(x) for x in entry.get("labels") or ()}
            self.residuals.append((step, str(entry.get("residual", ""))))
        self.leaves = leaves

    def held(self, step: int, among: list[Formula] | None = None) -> list[Formula] | None:
        """The leaves (of ``among``, else of the rule) that held at ``step``; None: unknown."""
        labels = self.labels.get(step)
        if labels is None:
            return None
        return [g for g in (among if among is not None else self.leaves)
                if (g.name if g.op == "atom" else g.text) in labels]

    def said(self, step: int, among: list[Formula] | None = None) -> str | None:
        held = self.held(step, among)
        if not held:
            return None
        return " and ".join(wording.happened(g) for g in held)

    def residual_before(self, step: int) -> tuple[int, str] | None:
        found = [(s, r) for s, r in self.residuals if s < step]
        return found[-1] if found else None

    def last_residual(self) -> tuple[int, str] | None:
        return self.residuals[-1] if self.residuals else None


def _cause(steps: _Steps, trigger: int, condition: Formula) -> str:
    """What opened the obligation at ``trigger``: the events of the condition that happened
    there, with the condition's exceptions ("with no call to approve at or before it"), so a
    sentence never reads as if the rule applied to every such event."""
    parts = list(condition.args) if condition.op == "and" else [condition]
    plain = [p for p in parts if p.op in ("atom", "cmp", "or")]
    said = steps.said(trigger, [g for p in plain for g in _leaves(p)]) if plain else None
    if said is None:
        return wording.clause(condition)
    return "".join([said, *(_exception(p) for p in parts if p not in plain)])


def _exception(part: Formula) -> str:
    """A qualifier of a rule's condition, after the event it qualifies."""
    if part.op == "not" and part.args[0].op in ("O", "Y"):
        past = part.args[0]
        wanted = _disjuncts(past.args[0])
        if wanted is not None:
            when = "at or before it" if past.op == "O" else "at the step before it"
            return f" with {wording.none_of(wanted)} {when}"
    return f", and {wording.clause(part)}"


def _obligation(rule: Formula, counting: str | None) -> Formula:
    """What one violation failed: for an invariant ``G phi`` counted per instance, ``phi`` (each
    step's own obligation, as the monitor has it: ``!F p`` is ``G !p``); otherwise the whole
    rule, monitored afresh from the violation's trigger."""
    body = invariant_body(rule)
    if body is not None and counting in (None, "", PER_INSTANCE):
        return body
    return rule


def explain_violation(formula: str | Formula, trigger: int, detected: int, at_end: bool,
                      witness: Iterable[Mapping] = (), counting: str | None = None) -> str:
    """One violation as a sentence a compliance officer can act on."""
    try:
        rule = formula if isinstance(formula, Formula) else parse(formula)
    except FormulaSyntaxError:
        return (f"Step {detected}: the rule was violated (its formula can no longer be read, "
                "so there is no explanation).")
    ob = _obligation(rule, counting)
    steps = _Steps(witness, _leaves(rule))

    # Precedence, "no p until q": the step where p happened before any q.
    if ob.op in ("W", "U") and ob.args[0].op == "not" and not at_end:
        wanted = _disjuncts(ob.args[1])
        forbidden = ob.args[0].args[0]
        if wanted is not None:
            what = steps.said(detected, _leaves(forbidden)) or (
                f"{wording.clause(forbidden)}")
            since = f" (the rule was checked afresh from step {trigger})" if trigger else ""
            return (f"Step {detected}: {what}; {wording.none_of(wanted)} "
                    f"happened before it{since}.")
    if ob.op == "U" and at_end:
        wanted = _disjuncts(ob.args[1])
        if wanted is not None:
            return (f"The session ended at step {detected} and "
                    f"{wording.none_of(wanted)} had happened"
                    f"{f' since step {trigger}' if trigger else ''}, which the rule requires.")
    # Absence, "never p" (each step's obligation is "not p").
    if ob is not rule and ob.op == "not" and not at_end:
        what = steps.said(detected, _leaves(ob)) or wording.clause(ob.args[0])
        return f"Step {detected}: {what}, which the rule never allows."
    # Otherwise: the step that opened the obligation, what was owed, the step that broke it.
    sentences: list[str] = []
    opened_by = None
    if ob is not rule and ob.op == "implies":
        condition, consequence = ob.args
        cause = _cause(steps, trigger, condition)
        if trigger == detected and not at_end:
            wanted = _disjuncts(consequence.args[0]) if consequence.op in ("O", "Y") else None
            if wanted is not None:
                when = "at or before it" if consequence.op == "O" else "at the step before it"
                return (f"Step {detected}: {cause}; {wording.none_of(wanted)} "
                        f"happened {when}.")
            return (f"Step {detected}: {cause}, so the rule required that "
                    f"{wording.clause(consequence)}; it did not.")
        # "... unless approved before": a disjunct owing nothing later was false at the trigger.
        unless = ([d for d in consequence.args if not d.has_future]
                  if consequence.op == "or" else [])
        sentences.append(f"Step {trigger}: {cause}"
                         + "".join(_exception(Not(d)) for d in unless))
        opened_by = trigger
    elif 0 < trigger < detected:
        sentences.append(f"The rule was checked afresh from step {trigger}")

    owed = steps.last_residual() if at_end else steps.residual_before(detected)
    if owed is not None and owed[1] in ("true", "false"):
        owed = None
    if owed is not None:
        reading = wording.explain_rest(owed[1], capitalise=False).rstrip(".")
        if opened_by == owed[0]:
            sentences[-1] += f", so the rule then required: {reading}"
        else:
            sentences.append(f"After step {owed[0]} the rule still required: {reading}")
    if at_end:
        if owed is None:
            sentences.append(f"From step {trigger} on, the rule required: "
                             f"{wording.explain(ob).rstrip('.')}")
        sentences.append(f"The session ended at step {detected} without that")
    else:
        owed_leaves = _leaves(parse(owed[1])) if owed is not None else _leaves(ob)
        held = steps.held(detected, owed_leaves)
        if held is None:  # the witness did not record the step
            sentences.append(f"Step {detected}: the rule could no longer be met there")
        else:
            missing = [g for g in owed_leaves if g not in held]
            what = [wording.happened(g) for g in held]
            if missing:
                what.append(f"{wording.none_of(missing)} happened")
            sentences.append(f"Step {detected}: {' and '.join(what)}, so that can no longer "
                             "be met")
    return ". ".join(sentences) + "."
