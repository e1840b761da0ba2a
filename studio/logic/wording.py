"""Formulas in plain English: the one printer every surface uses (rule pages, exports, review
aids, residuals, the sentences that explain a violation).  Pure Python.

Deterministic: the same formula always reads the same sentence.  An invariant (``G phi`` in
negation normal form, ``studio.logic.progression.is_invariant``) is read from its normal form,
so formulas equal in normal form read the same.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from functools import lru_cache

from . import formula as fm
from .atom_words import STEP, Noun, Words, merged_call, order_of, words_for
from .formula import FALSE, TRUE, Formula
from .parser import parse
from .progression import is_invariant, nnf

# One renderer for every reading the studio shows: rules, residuals, warnings, and the atoms of
# the violation sentences (``studio.monitor.explain``).  It speaks of the workspace's own events
# ("the agent calls issue_refund", "a step labelled contains_card_number", "amount
# (output.args.amount) is over 500") and never of formulas ("tool_call:X holds"): a negation is
# pushed inward until it sits on an event ("the agent does not call X"), or said as "not both",
# "neither ... nor", "no ... before", "never".  Every rewrite it makes is an LTLf equivalence, so
# the English says exactly what the formula does (strict "before" vs "at this step or an earlier
# one"; a next step that must exist vs one that may not).

# A phrase is a clause with its shape: a "literal" clause ("the agent calls X") may take a time
# frame as a suffix; a "closed" one can sit inside any construction as it is; an "open" one (a
# connective, or a frame followed by a colon, which extends to the end) is parenthesised
# wherever something follows it or it sits inside a connective.  So every rendering reads one way
# only.  A clause about "the step" (labels, roles) keeps a template, so that a frame can name the
# step instead ("the next step is labelled examine").
LITERAL, CLOSED, OPEN = "literal", "closed", "open"


def _as_formula(f: Formula | str) -> Formula:
    return f if isinstance(f, Formula) else parse(f)


@dataclass(frozen=True)
class _Phrase:
    text: str
    shape: str
    template: str | None = None   # the clause with STEP for the step it is about
    negative: bool = False        # the template denies ("is not labelled")


def _one_step(f: Formula, step: str) -> str | None:
    """A conjunction of events and denials at one step, joined by "and" (calls first): "the
    agent calls send_email and the step is labelled contains_card_number".  ``step`` names the
    step in the first clause about it ("a step"); later ones say "it".  None for anything else."""
    if f.op != "and" or not all(_simple(a) for a in f.args):
        return None
    merged = merged_call(f.args)
    if merged is not None:
        head, rest = merged
        parts = [(0, head, False)]
    else:
        rest = list(f.args)
        parts = []
    for a in rest:
        negative = a.op == "not"
        parts.append((order_of(a), words_for(a.args[0] if negative else a), negative))
    parts.sort(key=lambda part: part[0])
    said = []
    if parts[0][1].subject is False and step == "a step":
        step = "the step"  # "the agent calls X and the step is labelled L": the same step
    for _, words, negative in parts:
        text = words.negative if negative else words.clause
        if words.subject:
            text = text.replace(STEP, step)
            step = "it"
        said.append(text)
    return said[0] if len(said) == 1 else ", ".join(said[:-1]) + " and " + said[-1]


def _is_state(f: Formula) -> bool:
    return not f.has_future and not f.has_past


def _noun(f: Formula) -> Noun | None:
    """A step-only formula as a noun ("a call to X", "a step labelled L", "a step where ..."),
    None for a formula that reads other steps."""
    if not _is_state(f) or f.op in ("true", "false"):
        return None
    words = words_for(f)
    if words is not None:
        return Noun((words.noun,))
    if f.op == "or":
        alts = [_noun(a) for a in f.args]
        if all(n is not None and len(n.alts) == 1 and n.alts[0][1].startswith(
                ("call to", "stop", "step labelled", "user", "assistant", "tool", "system"))
               for n in alts):
            return Noun(tuple(n.alts[0] for n in alts))
    return Noun((("a", "step where " + (_one_step(f, "it") or _english(f, _IT).text)),))


def _about(p: _Phrase, step: str) -> str:
    """The phrase, with a clause about "the step" naming ``step`` instead."""
    return p.template.replace(STEP, step) if p.template else p.text


def _inner(p: _Phrase) -> str:
    """The phrase inside a larger construction, parenthesised when it is open."""
    return "(" + p.text + ")" if p.shape == OPEN else p.text


@dataclass(frozen=True)
class _When:
    """A time frame: "at the next step" (``at``); the steps it names, as the subject of a clause
    about the step ("the next step"), with how many of them (``one``, ``some``, ``every``: a
    clause that denies takes the subject only for one or some); and a note on the end of the
    session ("(the session must not end before it)")."""

    at: str
    subject: str | None = None
    note: str = ""
    quantity: str = "one"


def _framed(p: _Phrase, when: _When, last: bool) -> tuple[str, bool]:
    """``p`` at the time ``when`` describes, and whether a colon opened it to the end."""
    note = f" {when.note}" if when.note else ""
    if p.template and when.subject and (not p.negative or when.quantity != "every"):
        return p.template.replace(STEP, when.subject) + note, False
    if p.shape == LITERAL:
        return f"{p.text} {when.at}{note}", False
    # A colon's scope runs to the end of the sentence; when more follows, brackets end it.
    return f"{when.at}{note}: {p.text if last else '(' + p.text + ')'}", True


def _frame(p: _Phrase, when: _When) -> _Phrase:
    text, colon = _framed(p, when, True)
    # "the agent calls X at the next step" sits anywhere; "... at this step or a later one" does
    # not: inside "both ... and ..." its "or" would read as a connective.
    words = text.split()
    closed = not colon and "or" not in words and "and" not in words and "nor" not in words
    return _Phrase(text, CLOSED if closed else OPEN)


def _steps(n: int) -> str:
    return f"{n} step{'s' if n != 1 else ''}"


# The constants, where one survives inside a sentence (``p U WX true``; a negation that
# simplifies away): a sentence that is nothing else reads as ``explain`` reads true and false.
NOTHING_REQUIRED = "nothing is required"
IMPOSSIBLE = "something impossible happens"

MUST_GO_ON = "(the session must not end before it)"
IF_REACHED = "(if the session reaches it)"


@dataclass(frozen=True)
class _Origin:
    """The words for the step a whole formula is read from (no temporal operator above it)."""

    now: str          # that step
    next: str         # the one after it
    some: _When       # that step or a later one
    every: _When      # that step and every later one
    from_now: str     # "from ... on, " before "never:" and "whenever"
    frame_literals: bool = False  # say when a bare call or comparison is read
    subject: str = ""  # the step a clause about the step names ("the first step")

    @property
    def step(self) -> str:
        return self.subject or self.now


_HERE = "this step"
# A rule is read from the first step of a session; a residual from the step after the one
# it was computed at ("what the rest of the session owes"); a part of a formula from the step
# the operator above it names ("this step").
_FIRST = _Origin("the first step", "the second step",
                 _When("at some step", "some step", quantity="some"),
                 _When("at every step", "every step", quantity="every"), "")
_REST = _Origin("the next step", "the step after the next one",
                _When("at the next step or a later one", "the next step or a later one",
                      quantity="some"),
                _When("at the next step and every later one", "the next step and every later one",
                      quantity="every"),
                "from the next step on, ", frame_literals=True)
_NESTED = _Origin(_HERE, "the next step",
                  _When("at this step or a later one", "this step or a later one",
                        quantity="some"),
                  _When("at this step and every later one", "this step and every later one",
                        quantity="every"),
                  "from this step on, ", subject="the step")
# Inside a noun: "a step where it is labelled p".
_IT = replace(_NESTED, subject="it")


def _literal(words: Words, negative: bool, step: str) -> _Phrase:
    text = words.negative if negative else words.clause
    if words.subject:
        return _Phrase(text.replace(STEP, step), CLOSED, text, negative)
    if negative:
        # Closed, not literal: "at every step: the agent does not call X", never the ambiguous
        # "the agent does not call X at every step".
        return _Phrase(text, OPEN if words.open_negative else CLOSED)
    return _Phrase(text, LITERAL)


def _english(f: Formula, start: _Origin | None) -> _Phrase:
    """``start``: ``f`` is read at the step ``start`` names (no temporal operator above it);
    None: at whichever step the context names ("this step")."""
    op = f.op
    origin = start or _NESTED
    if op == "true":
        return _Phrase(NOTHING_REQUIRED, CLOSED)
    if op == "false":
        return _Phrase(IMPOSSIBLE, CLOSED)
    if op == "not":
        return _negated(f.args[0], start)
    words = words_for(f)
    if words is not None:
        phrase = _literal(words, False, origin.step)
        if start is not None and start.frame_literals and not words.subject:
            return _frame(phrase, _When(f"at {start.now}"))
        return phrase
    if op in ("and", "or") and all(a.op == "not" and words_for(a.args[0]) is not None
                                   for a in f.args):
        # !p & !q: "neither p nor q"; !p | !q: "not both p and q"
        return _negated(fm.Or(*[a.args[0] for a in f.args]) if op == "and"
                        else fm.And(*[a.args[0] for a in f.args]), start)
    if op == "and":
        merged = merged_call(f.args)
        if merged is not None:
            head, rest = merged
            parts = [_inner(_literal(head, False, origin.step))]
            parts += [_inner(_english(a, start)) for a in rest]
        else:
            parts = [_inner(_english(a, start)) for a in f.args]
        return _connect(parts, "and")
    if op == "or":
        return _connect([_inner(_english(a, start)) for a in f.args], "or")
    if op == "implies":
        condition, consequence = (_english(a, start) for a in f.args)
        return _Phrase(f"if {_inner(condition)}, then {consequence.text}", OPEN)
    if op == "iff":
        left, right = (_english(a, start) for a in f.args)
        return _Phrase(f"{_inner(left)} if and only if {_inner(right)}", OPEN)
    if op == "G":
        found = _always(f.args[0], origin)
        if found is not None:
            return found
    if op in ("W", "U"):
        found = _precedence(f, origin)
        if found is not None:
            return found
    if op in fm.FUTURE_OPS:
        return _future(f, origin)
    return _past(f, origin)


def _connect(parts: list[str], op: str) -> _Phrase:
    if len(parts) == 1:
        return _Phrase(parts[0], OPEN)
    if len(parts) == 2:
        word = "both {} and {}" if op == "and" else "either {} or {}"
        return _Phrase(word.format(*parts), OPEN)
    head = "all of these" if op == "and" else "at least one of these"
    return _Phrase(f"{head}: {'; '.join(parts[:-1])}; {op} {parts[-1]}", OPEN)


def _simple(f: Formula) -> bool:
    """An event or its denial: said as it is inside "not both" and "neither ... nor"."""
    return words_for(f) is not None or (f.op == "not" and words_for(f.args[0]) is not None)


def _negated(g: Formula, start: _Origin | None) -> _Phrase:
    """``!g`` with the negation pushed inward (LTLf equivalences; De Morgan)."""
    op = g.op
    origin = start or _NESTED
    words = words_for(g)
    if words is not None:
        phrase = _literal(words, True, origin.step)
        if start is not None and start.frame_literals and not words.subject:
            return _frame(phrase, _When(f"at {start.now}"))
        return phrase
    if op in ("and", "or") and all(_simple(a) for a in g.args):
        parts = [_inner(_english(a, start)) for a in g.args]
        if len(parts) == 2:
            word = "not both {} and {}" if op == "and" else "neither {} nor {}"
            return _Phrase(word.format(*parts), OPEN)
        head = "not all of these" if op == "and" else "none of these"
        return _Phrase(f"{head}: {'; '.join(parts[:-1])}; {op} {parts[-1]}", OPEN)
    if op == "iff":
        left, right = (_english(x, start) for x in g.args)
        return _Phrase(f"either {_inner(left)} or {_inner(right)}, but not both", OPEN)
    return _english(push_negation(g), start)


def push_negation(g: Formula) -> Formula:
    """A formula equivalent to ``!g`` (on every finite trace, the empty rest of a session
    included) with the negation one level further in; for ``g`` not an atom, a data atom, a
    negation or an ``<->``.  Used by the English, which never says "it is not the case that"."""
    op = g.op
    a = g.args[0] if g.args else None
    b = g.args[1] if len(g.args) > 1 else None
    if op == "and":
        return fm.Or(*[fm.Not(x) for x in g.args])
    if op == "or":
        return fm.And(*[fm.Not(x) for x in g.args])
    if op == "implies":
        return fm.And(a, fm.Not(b))
    unary = {"X": fm.WX, "WX": fm.X, "F": fm.G, "G": fm.F, "Y": fm.Z, "Z": fm.Y,
             "O": fm.H, "H": fm.O}
    if op in unary:
        return unary[op](fm.Not(a))
    if op == "F[]":
        return fm.GBounded(*g.payload, fm.Not(a))
    if op == "G[]":
        return fm.FBounded(*g.payload, fm.Not(a))
    if op == "U":  # no b ever, or a fails at a step before the first b
        return fm.W(fm.Not(b), fm.And(fm.Not(a), fm.Not(b)))
    if op == "W":  # a fails at a step before the first b (which then need not come)
        return fm.U(fm.Not(b), fm.And(fm.Not(a), fm.Not(b)))
    if op == "R":  # b fails at a step with no a before it (nor at it)
        return fm.U(fm.Not(a), fm.Not(b))
    if op == "S":  # no b so far, or a failed at a step after the last b
        return fm.Or(fm.S(fm.Not(b), fm.And(fm.Not(a), fm.Not(b))), fm.H(fm.Not(b)))
    raise ValueError(f"no negation to push into `{g.text}`")


def _always(body: Formula, origin: _Origin) -> _Phrase | None:
    """The two shapes most rules have: "Never: ..." (``G !phi``) and "Whenever A, B"
    (``G (A -> B)``)."""
    lead = origin.from_now
    if body.op == "not" and body.args[0].op not in ("implies", "iff"):
        return _Phrase(f"{lead}never: {_never(body.args[0])}", OPEN)
    if body.op == "implies":
        condition, consequence = body.args
        said = _english(condition, None)
        cond = _one_step(condition, "a step") or (
            _about(said, "a step") if said.template else _inner(said))
        return _Phrase(f"{lead}whenever {cond}, {_must(consequence).text}", OPEN)
    return None


def _never(f: Formula) -> str:
    """What may never happen at a step: "the agent calls X when no ... has happened"."""
    if f.op == "and":
        now = [a for a in f.args if _is_state(a)]
        before = [a for a in f.args if not a.has_future and a.has_past]
        if now and before and len(now) + len(before) == len(f.args):
            present = now[0] if len(now) == 1 else fm.And(*now)
            head = _english(present, None)
            head_text = _one_step(present, "a step") or (
                _about(head, "a step") if head.template else _inner(head))
            past = [_english(a, None) for a in before]
            then = " and ".join(_inner(p) for p in past) if len(past) > 1 else past[0].text
            return f"{head_text} when {then}"
    found = _one_step(f, "a step")
    if found is not None:
        return found
    said = _english(f, None)
    return _about(said, "a step") if said.template else said.text


_FUTURE_MODAL = ("F", "X", "WX", "F[]")
_PAST_MODAL = ("O", "Y")


def _must(f: Formula) -> _Phrase:
    """What a "whenever" requires, said as an obligation where its shape allows."""
    op = f.op
    words = words_for(f)
    if words is not None:
        return _Phrase(words.must.replace(STEP, "the step"), CLOSED)
    if op == "not" and words_for(f.args[0]) is not None:
        return _Phrase(words_for(f.args[0]).must_not.replace(STEP, "the step"), CLOSED)
    operand = f.args[0] if f.args else None
    noun = _noun(operand) if operand is not None and op not in ("not", "and", "or") else None
    later = _later(f, _NESTED)
    if later is not None and later[0].quantity == "some" and _noun(later[1]) is not None:
        return _frame(_Phrase(f"{_noun(later[1]).some()} must happen", LITERAL), later[0])
    if op in _FUTURE_MODAL and noun is not None:
        when = _future_when(f, _NESTED)
        words = words_for(operand)
        if words is not None and not words.subject:
            return _frame(_Phrase(words.must, LITERAL), when)
        if words is not None and when.subject and when.quantity != "every":
            note = f" {when.note}" if when.note else ""
            return _Phrase(words.must.replace(STEP, when.subject) + note,
                           OPEN if " or " in when.subject else CLOSED)
        return _frame(_Phrase(f"{noun.some()} must happen", LITERAL), when)
    strictly = _strictly_before(f, _NESTED, modal=True)
    if strictly is not None:
        return strictly
    if op in ("Y", "Z") and noun is not None and words_for(operand) is not None \
            and words_for(operand).subject:
        when = _past_when(f, _NESTED)
        return _Phrase(f"{words_for(operand).must.replace(STEP, when.subject)} {when.note}", CLOSED)
    if op in _PAST_MODAL and noun is not None:
        return _frame(_Phrase(f"{noun.some()} must have happened", LITERAL),
                      _past_when(f, _NESTED))
    # "no call to X may happen at this step or any later one"
    negated = operand.args[0] if operand is not None and operand.op == "not" else None
    denied = _noun(negated) if negated is not None else None
    if denied is not None:
        if op == "G":
            return _Phrase(f"{denied.none()} may happen at this step or any later one", OPEN)
        if op == "H":
            return _Phrase(f"{denied.none()} may have happened at this step or any earlier one",
                           OPEN)
        if op == "G[]":
            low, high = f.payload
            when = (f"exactly {_steps(low)} after this step" if low == high
                    else f"{low} to {high} steps after this step")
            return _Phrase(f"{denied.none()} may happen {when}", OPEN)
    if op == "WX" and operand.op == "G" and operand.args[0].op == "not":
        denied = _noun(operand.args[0].args[0])
        if denied is not None:
            return _Phrase(f"{denied.none()} may happen at any later step", CLOSED)
    return _english(f, None)


def _precedence(f: Formula, origin: _Origin) -> _Phrase | None:
    """``!p W q`` "no p before the first q (and none at all if no q ever happens)"; ``!p U q``
    the same, and a q must happen."""
    banned, awaited = f.args
    if banned.op != "not":
        return None
    p, q = _noun(banned.args[0]), _noun(awaited)
    if p is None or q is None:
        return None
    lead = origin.from_now
    if f.op == "W":
        return _Phrase(f"{lead}{p.none()} before {q.first()} (and none at all if that never "
                       "happens)", OPEN)
    return _Phrase(f"{lead}{p.none()} before {q.first()}, and {q.some()} must happen "
                   f"{origin.some.at}", OPEN)


def _later(f: Formula, origin: _Origin) -> tuple[_When, Formula] | None:
    """``X F q``, ``WX F q``, ``X G q``, ``WX G q``: a strictly later step, or every one."""
    if f.op not in ("X", "WX") or f.args[0].op not in ("F", "G"):
        return None
    inner = f.args[0]
    after = "after this one" if origin.now == _HERE else f"after {origin.now}"
    if inner.op == "F":
        note = "" if f.op == "X" else f"(if the session goes on {after})"
        return _When(f"at a step {after}", f"a step {after}", note, "some"), inner.args[0]
    note = f"(the session must go on {after})" if f.op == "X" else ""
    return _When(f"at every step {after}", f"every step {after}", note, "every"), inner.args[0]


def _future_when(f: Formula, origin: _Origin) -> _When:
    op, now, nxt = f.op, origin.now, origin.next
    if op == "X":
        return _When(f"at {nxt}", nxt, MUST_GO_ON)
    if op == "WX":
        return _When(f"at {nxt}", nxt, IF_REACHED)
    if op == "F":
        return origin.some
    if op == "G":
        return origin.every
    low, high = f.payload
    if op == "F[]":
        if low == high:
            return _When(f"exactly {_steps(low)} after {now}", f"the step {_steps(low)} after "
                         f"{now}", MUST_GO_ON)
        return _When(f"within {low} to {high} steps after {now}",
                     f"one of the steps {low} to {high} steps after {now}",
                     "(at a step the session reaches)", "some")
    if low == high:
        return _When(f"exactly {_steps(low)} after {now}", f"the step {_steps(low)} after {now}",
                     IF_REACHED)
    return _When(f"at every step {low} to {high} steps after {now}",
                 f"every step {low} to {high} steps after {now}", "(those the session reaches)",
                 "every")


def _future(f: Formula, origin: _Origin) -> _Phrase:
    op = f.op
    now, nxt = origin.now, origin.next
    if op == "X" and f.args[0] is TRUE:
        return _Phrase(f"{nxt} exists (the session goes on to it)", CLOSED)
    if op == "WX" and f.args[0] is FALSE:
        return _Phrase(f"{nxt} does not exist (the session ends at {now})", CLOSED)
    if op == "F" and f.args[0] is TRUE:  # the residual's "the session goes on"
        return _Phrase(f"{now} exists (the session has not ended)", CLOSED)
    if op == "G" and f.args[0] is FALSE:  # the residual's "the session has ended"
        return _Phrase(f"{now} does not exist (the session has ended)", CLOSED)
    if op == "F[]" and f.args[0] is TRUE:
        low = f.payload[0]
        return _Phrase(f"the session reaches the step {_steps(low)} after {now}", CLOSED)
    if op == "G[]" and f.args[0] is FALSE:
        low = f.payload[0]
        return _Phrase(f"the session ends before the step {_steps(low)} after {now}", CLOSED)
    later = _later(f, origin)
    if later is not None:
        return _frame(_english(later[1], None), later[0])
    if op in fm.FUTURE_UNARY or op in fm.BOUNDED:
        return _frame(_english(f.args[0], None), _future_when(f, origin))
    left, right = (_english(a, None) for a in f.args)
    if op == "U":
        first, _ = _framed(right, origin.some, False)
        rest, _ = _framed(left, _When("at every step before that", "every step before that",
                                      quantity="every"), True)
        return _Phrase(f"{first}, and {rest}", OPEN)
    lead = origin.from_now[:-2] + ", " if origin.from_now else ""  # "from this step on, "
    if op == "W":
        noun = _noun(f.args[1])
        until = noun.first() if noun is not None else f"step at which {_inner(right)}"
        if noun is None:
            until = "the first " + until
        when = _When(f"{lead}at every step before {until} (at every step if there is none)")
        return _Phrase(_framed(left, when, True)[0], OPEN)
    # R: the right side holds up to and including the first step of the left (or forever)
    noun = _noun(f.args[0])
    until = noun.first() if noun is not None else f"the first step at which {_inner(left)}"
    when = _When(f"{lead}at every step up to and including {until} "
                 "(at every step if there is none)")
    return _Phrase(_framed(right, when, True)[0], OPEN)


def _past_when(f: Formula, origin: _Origin) -> _When:
    op, now = f.op, origin.now
    here = now == _HERE
    before = "the previous step" if here else f"the step before {now}"
    if op == "Y":
        return _When(f"at {before}", before, "(there must be one)")
    if op == "Z":
        return _When(f"at {before}", before, "(if there is one)")
    if op == "O":
        return _When(f"at {now} or an earlier one" if here else f"at {now} or an earlier step",
                     f"{now} or an earlier one" if here else f"{now} or an earlier step",
                     quantity="some")
    return _When(f"at {now} and every earlier one" if here else f"at {now} and every earlier step",
                 f"{now} and every earlier one" if here else f"{now} and every earlier step",
                 quantity="every")


def _strictly_before(f: Formula, origin: _Origin, modal: bool = False) -> _Phrase | None:
    """``Y O q``: "a q has happened before this step" (strictly: false at the first step);
    ``Z H !q``: "no q has happened before this step"."""
    inner = f.args[0] if f.op in ("Y", "Z") else None
    if inner is not None and f.op == "Z" and inner.op == "not" and inner.args[0].op == "O":
        inner = fm.H(fm.Not(inner.args[0].args[0]))  # !O q is H !q
    if inner is None or inner.op != ("O" if f.op == "Y" else "H"):
        return None
    if f.op == "Y":
        noun = _noun(inner.args[0])
        if noun is None:
            return None
        verb = "must have happened" if modal else "has happened"
        return _Phrase(f"{noun.some()} {verb} before {origin.now}", OPEN if len(noun.alts) > 1
                       else CLOSED)
    denied = _noun(inner.args[0].args[0]) if inner.args[0].op == "not" else None
    if denied is None:
        return None
    verb = "may have happened" if modal else "has happened"
    return _Phrase(f"{denied.none()} {verb} before {origin.now}", OPEN)


def _past(f: Formula, origin: _Origin) -> _Phrase:
    op, now = f.op, origin.now
    if op == "S":
        left, right = (_english(a, None) for a in f.args)
        first, _ = _framed(right, _past_when(fm.O(f.args[1]), origin) if f.args[1].op != "O"
                           else _past_when(f.args[1], origin), False)
        rest, _ = _framed(left, _When(f"at every step after that up to and including {now}",
                                      f"every step after that up to and including {now}",
                                      quantity="every"), True)
        return _Phrase(f"{first}, and {rest}", OPEN)
    operand = f.args[0]
    if op == "Y" and operand is TRUE:
        before = _past_when(f, origin).subject
        why = f" ({now} is not the first step)" if now == _HERE else ""
        return _Phrase(f"{before} exists{why}", CLOSED)
    if op == "Z" and operand is FALSE:
        before = _past_when(f, origin).subject
        why = f" ({now} is the first step)" if now == _HERE else ""
        return _Phrase(f"{before} does not exist{why}", CLOSED)
    strictly = _strictly_before(f, origin)
    if strictly is not None:
        return strictly
    when = _past_when(f, origin)
    noun = _noun(operand)
    if op == "O" and noun is not None and words_for(operand) is None:
        return _frame(_Phrase(f"{noun.some()} has happened", LITERAL), when)
    if op == "H" and operand.op == "not":
        denied = _noun(operand.args[0])
        if denied is not None:
            scope = when.at.replace(" and every earlier", " or any earlier")
            return _Phrase(f"{denied.none()} has happened {scope}", OPEN)
    return _frame(_english(operand, None), when)


@lru_cache(maxsize=4096)
def _tidy(f: Formula) -> Formula:
    """``f`` without the constants the English cannot say, by equivalences that hold at every
    step of every finite trace: ``X false`` and ``Y false`` are false, ``WX true`` and ``Z true``
    are true, ``a W false`` is ``G a``, a negation that pushes to a constant is that constant.
    A node is kept as it is where the rewrite (with the constructors' simplifications of its
    parent) would change its value on the empty rest of a session (``p U WX true`` is false
    there, ``p U true`` is true), so residuals keep their meaning at the end of a session too."""
    if not f.args:
        return f
    args = tuple(_tidy(a) for a in f.args)
    if f.op in ("X", "Y") and args[0] is FALSE:
        tidy = FALSE
    elif f.op in ("WX", "Z") and args[0] is TRUE:
        tidy = TRUE
    elif f.op == "W" and args[1] is FALSE:
        tidy = fm.G(args[0])
    elif f.op == "not" and args[0].op not in ("atom", "cmp", "iff", "true", "false", "not") \
            and push_negation(args[0]) in (TRUE, FALSE):
        tidy = push_negation(args[0])  # !(a W !a): false
    else:
        tidy = f if args == f.args else fm.rebuild(f, args)
    if tidy is not f and nnf(tidy).empty_value != nnf(f).empty_value:
        return f
    return tidy


def explain(f: Formula | str) -> str:
    """The formula in plain English, one sentence, deterministic.

    Read at the first step of a session: ``G(tool_call:take -> X tool_call:examine)`` reads
    "Whenever the agent calls take, the agent must call examine at the next step (the session
    must not end before it)."  Open constructions are parenthesised wherever they sit inside
    another, so the sentence has one reading.

    Whether a rule is an invariant ``G phi`` is decided on its negation normal form
    (``is_invariant``), and an invariant is read from that form (``_as_written``): ``G !p`` and
    ``!F p``, ``G(p -> q)`` and ``!F(p & !q)`` read the same.
    """
    f = _as_formula(f)
    if is_invariant(f):
        f = fm.G(_as_written(nnf(f).args[0]))
    f = _tidy(f)
    if f is TRUE:
        return "Always satisfied (the formula is true)."
    if f is FALSE:
        return "Never satisfied (the formula is false)."
    text = _english(f, _FIRST).text
    if text in (NOTHING_REQUIRED, IMPOSSIBLE):
        return explain(TRUE if text == NOTHING_REQUIRED else FALSE)
    return _sentence(f, text)


@lru_cache(maxsize=4096)
def _as_written(f: Formula) -> Formula:
    """A formula in negation normal form as an author writes it: denials joined by "and" are one
    denial (``!p & !q`` is ``!(p | q)``); a disjunction with denials in it is an implication
    (``!p | !q | r`` is ``p & q -> r``, ``(!p & !q) | X r`` is ``p | q -> X r``) or, when it
    is all denials, a denial (``!p | !q`` is ``!(p & q)``).
    Equivalent on every finite trace, and a function of the normal form only."""
    if f.is_leaf or not f.args:
        return f
    args = tuple(_as_written(a) for a in f.args)
    if f.op == "and" and all(a.op == "not" for a in args):
        return fm.Not(fm.Or(*[a.args[0] for a in args]))
    if f.op != "or":
        return f if args == f.args else fm.rebuild(f, args)
    denials = [d for d in args if _is_denial(d)]
    if not denials:
        return f if args == f.args else fm.rebuild(f, args)
    condition = fm.And(*[_denied(d) for d in denials])
    rest = [d for d in args if not _is_denial(d)]
    return fm.Implies(condition, fm.Or(*rest)) if rest else fm.Not(condition)


def _is_denial(f: Formula) -> bool:
    return f.op == "not" or (f.op == "and" and all(a.op == "not" for a in f.args))


def _denied(f: Formula) -> Formula:
    """What a denial denies: ``p`` for ``!p``, ``p | q`` for ``!p & !q``."""
    return f.args[0] if f.op == "not" else fm.Or(*[a.args[0] for a in f.args])


def explain_rest(f: Formula | str, capitalise: bool = True) -> str:
    """A residual in plain English: what the rest of a session still owes, read from the step
    after the one it was computed at.  ``F[0,3] use_knife`` reads "One of the steps 0 to 3
    steps after the next step is labelled use_knife (at a step the session reaches)."; the
    constants read as for ``explain``.  ``capitalise=False`` for a sentence that goes on after
    a colon."""
    f = _tidy(_as_formula(f))
    if f is TRUE or f is FALSE:
        return explain(f)
    text = _english(f, _REST).text
    if text in (NOTHING_REQUIRED, IMPOSSIBLE):
        return explain(TRUE if text == NOTHING_REQUIRED else FALSE)
    return _sentence(f, text) if capitalise else text + "."


def clause(f: Formula | str) -> str:
    """A part of a formula in English, read at "this step", with no full stop:
    ``amount > 10000`` reads "amount is over 10000"."""
    return _english(_tidy(_as_formula(f)), None).text


def happened(f: Formula | str) -> str:
    """An atom or data atom that held at a step, as a report says it: "the agent called X",
    "the step was labelled L", "amount (data.amount) was over 500"."""
    f = _as_formula(f)
    words = words_for(f) if f.op in ("atom", "cmp") else None
    return words.past if words is not None else clause(f)


def noun(f: Formula | str) -> str:
    """An atom or data atom as a noun, for "no ... happened": "a call to get_balance"."""
    found = _noun(_as_formula(f))
    return found.some() if found is not None else f"a step where {clause(f)}"


def none_of(fs: Sequence[Formula]) -> str:
    """Atoms and data atoms as "none of these happened": "no call to X or Y" (the same words as
    the rules' "no ... before ...")."""
    alts: list[tuple[str, str]] = []
    for f in fs:
        found = _noun(f)
        alts += found.alts if found is not None else [("a", f"step where {clause(f)}")]
    return Noun(tuple(alts)).none()


def _sentence(f: Formula, text: str) -> str:
    # Capitalise the sentence, unless it starts with a name (a data path).
    names = {g.payload.left[1] for g in f.subformulas()
             if g.op == "cmp" and g.payload.left[0] == "path"}
    if not any(text.startswith(name + " ") for name in names):
        text = text[0].upper() + text[1:]
    return text + "."
