"""Several readings of one rule, grounded in a workspace's vocabulary, checked and named."""

from __future__ import annotations

import re

from studio.logic import formula as fm
from studio.logic.formula import (WX, And, Atom, Compare, F, FBounded, Formula, G, Implies, Not, Or,
                                  S, X, Y)
from studio.logic.review import ReviewLimitError, distinguishing_trace
from studio.logic.wording import explain

from .base import Formalisation, Reading
from .grounding import ground, said_by_agent
from .reader import _Reader
from .tokens import NotUnderstood

# ---------------------------------------------------------------------------------------------
# Several readings, grounding and a name

MAX_READINGS = 4
# An invented atom this long (in words) is a clause the grammar did not take apart.
MAX_INVENTED_WORDS = 5
MAX_READS = 12           # sentences read again with other choices, at most
COMPARE_LENGTH = 8       # traces searched to tell two readings apart


def _other_readings(nodes, first: _Reader) -> list[tuple[Formula, _Reader]]:
    """The sentence read again with every other choice of the open questions its first
    reading met (one question changed at a time, then combinations, breadth first)."""
    out = []
    seen = {()}
    pending = []

    def push(options: dict, reader: _Reader) -> None:
        for key, choices in reader.consulted.items():
            if key in options:
                continue
            for value, _ in choices[1:]:
                new = {**options, key: value}
                frozen = tuple(sorted(new.items()))
                if frozen not in seen:
                    seen.add(frozen)
                    pending.append(new)

    push({}, first)
    reads = 0
    while pending and reads < MAX_READS:
        options = pending.pop(0)
        reads += 1
        reader = _Reader(options)
        try:
            f = And(*reader.read(nodes))
        except NotUnderstood:
            continue
        out.append((f, reader))
        push(options, reader)
    return out


_WORDS_LEFT = {"keep": "the words the logs do not show restrict the event (an invented atom "
                       "beside it)",
               "invent": "the phrase names something the logs do not show (an invented atom)",
               "one": "the phrase names only the first of the entries it matches equally well",
               "keep_arguments": "a word after the call names one of its arguments"}


def _answer(read: list, vocabulary, engine: str, english: str = "") -> Formalisation:

    invented: list[str] = []
    quoted: dict[str, str] = {}
    for _, reader in read:
        invented.extend(a for a in reader.atoms if a not in invented)
        quoted.update(reader.quoted)
    candidates: list[tuple[Formula, str]] = []
    mapping: list = []
    guesses: set = set()
    for k, (f, reader) in enumerate(read):
        if vocabulary is None:
            candidates.append((f, reader.meaning()))
            continue
        grounded, this_mapping, partial = ground(f, invented, vocabulary, quoted=quoted)
        if k == 0:
            mapping, guesses = this_mapping, partial
        candidates.append((grounded, reader.meaning()))
    if guesses:
        # A phrase matched a vocabulary entry only in part: the words left over may restrict
        # the event, or the phrase may name something the logs do not show; the author picks.
        f, reader = read[0]
        wanted = ["keep"] if "restricting" in guesses else []
        wanted += ["invent"] if "loose" in guesses else []
        wanted += ["one"] if "tie" in guesses else []
        wanted += ["keep_arguments"] if "argument" in guesses else []
        room = max(1, MAX_READINGS - len(candidates))
        for words_left in wanted[:room]:
            other, _, _ = ground(f, invented, vocabulary, words_left, quoted)
            meaning = "; ".join(x for x in (reader.meaning(), _WORDS_LEFT[words_left]) if x)
            candidates.insert(min(len(candidates), MAX_READINGS - 1), (other, meaning))
        candidates[0] = (candidates[0][0], "; ".join(
            x for x in (candidates[0][1], "the phrase is the vocabulary entry it matched")
            if x))
    spoken = (said_by_agent(candidates[0][0], mapping, english, vocabulary.atoms)
              if vocabulary is not None and getattr(vocabulary, "atoms", None) else None)
    if spoken is not None:
        # "never ask the customer for their PIN": the label on the assistant's messages, or on
        # any message (a user's too); named outright ("in assistant messages"), the first
        f_spoken, explicit = spoken
        why = "; ".join(x for x in (candidates[0][1], "only the assistant's messages count")
                        if x)
        candidates[0] = (candidates[0][0], "; ".join(
            x for x in (candidates[0][1], "a message from anyone counts") if x))
        candidates.insert(0 if explicit else 1, (f_spoken, why))
    lasting = (state_between_events(candidates[0][0], vocabulary.atoms)
               if vocabulary is not None and getattr(vocabulary, "atoms", None) else None)
    if lasting is not None:
        # "while the enclosure door is open": from the opening until the closing, or (the
        # author picks) only at the step of the opening
        f_lasting, described = lasting
        during = _LASTING_WORDS.search(english.lower()) is not None
        candidates[0] = (candidates[0][0], "; ".join(
            x for x in (candidates[0][1], "each event counts only at its own step") if x))
        candidates.insert(0 if during else 1, (f_lasting, "; ".join(
            x for x in (candidates[0][1].removesuffix("each event counts only at its own step")
                        .rstrip("; "), described) if x)))
    first_limit = limits_on_an_event(candidates[0][0])
    if first_limit is not candidates[0][0]:
        # "the battery's charge must stay between 10% and 90%": each event the words name,
        # or (the author picks) wherever the logs show the value
        anywhere = _limits_anywhere(first_limit)
        if anywhere is not None:
            candidates[0] = (candidates[0][0], "; ".join(
                x for x in (candidates[0][1], "the limit holds at each event the words name")
                if x))
            candidates.insert(1, (anywhere, "the limit holds at every step that shows the value, "
                                            "whatever the event"))
    plain, plain_why = candidates[0]
    candidates = [(limits_on_an_event(since_before_own_event(release_after_trigger(
        calls_at_separate_steps(one_call_a_step(as_limits(g)))))), why)
        for g, why in candidates]
    if as_limits(plain) is not plain:
        # "payments above 10000 must never be made": a payment whose amount the logs lack
        # breaks the limit, or (the author picks) only a payment shown above it does
        candidates[0] = (candidates[0][0], "; ".join(
            x for x in (candidates[0][1], "an event whose amount is missing breaks the rule")
            if x))
        candidates.insert(1, (release_after_trigger(one_call_a_step(plain)), "; ".join(
            x for x in (plain_why, "an event whose amount is missing does not break the rule")
            if x)))
    first, first_why = candidates[0]
    if limits_everywhere(first) is not first:
        candidates[:1] = [
            (first, "; ".join(x for x in (first_why, "a step where the amount is missing "
                                          "does not break the rule") if x)),
            (limits_everywhere(first), "; ".join(x for x in (first_why, "the amount must be "
                                                "present and within the limit at every step")
                                                if x))]
    kept: list[tuple[Formula, str]] = []
    impossible = 0
    for grounded, why in candidates:
        if any(g is grounded for g, _ in kept) or _trivial(grounded):
            continue
        if _no_log_can_mean(grounded):
            # "KYC before any deposit is accepted, and the account opened twice" read as a
            # deposit and an account opening at one step: no log has that, so the words were
            # taken apart wrongly
            impossible += 1
            continue
        distinct = True
        for g, _ in kept:
            try:
                if distinguishing_trace(g, grounded, max_length=COMPARE_LENGTH) is None:
                    distinct = False
                    break
            except ReviewLimitError:
                pass
        if distinct:
            kept.append((grounded, why))
        if len(kept) >= MAX_READINGS:
            break
    if candidates and _no_log_can_mean(candidates[0][0]):
        # the first reading's words were taken apart wrongly, and the others share its shape
        kept = []
    if not kept and impossible:
        return Formalisation(None, "", (), (), "Every reading of this rule needs two tool calls "
                             "(or two speakers) at one step, which no log has, or forbids or "
                             "calls for the very event that triggers it: the words were not "
                             "taken apart, or matched to the logs, the way they were meant; "
                             "split the sentence into one rule each, or name the events in "
                             "quotes", engine=engine)
    if not kept:
        return Formalisation(None, "", (), (), "Every reading of this rule holds on every "
                             "session, or on none: the words were not taken apart the way they "
                             "were meant (a scope bound that is the rule's own event?)",
                             engine=engine)
    readings = []
    for k, (f, why) in enumerate(kept):
        trace, against = (), None
        if len(kept) > 1:
            against = 1 if k == 0 else 0
            try:
                trace = tuple(distinguishing_trace(f, kept[against][0],
                                                   max_length=COMPARE_LENGTH) or ())
            except ReviewLimitError:
                trace = ()
        readings.append(Reading(f, f.text, explain(f), why if len(kept) > 1 else "",
                                trace, against))
    f = kept[0][0]
    atoms = tuple(dict.fromkeys(g.name for g in f.subformulas() if g.op == "atom"))
    ordered = [m.atom for m in mapping if m.atom in atoms]
    atoms = tuple(dict.fromkeys(ordered + [a for a in _ordered_atoms(read[0][1], f)
                                           if a in atoms] + list(atoms)))
    return Formalisation(f, f.text, atoms, engine=engine, readings=tuple(readings),
                         mapping=tuple(mapping), name=propose_name(f, read[0][1].kinds))


def _no_log_can_mean(f: Formula) -> bool:
    """Whether ``f`` joins two different tool calls, or two roles, with "and" at one step: one
    step is one event, so such a part never holds (or its negation always does); or bans the
    very event that triggers it from that step on (``G (a -> !a W x)``), or answers it with
    itself (``G (a -> F a)``): the trigger and the other event were grounded onto one entry."""
    for g in f.subformulas():
        if g.op == "implies" and g.args[0].op == "atom":
            banned = g.args[1]
            if banned.op in ("W", "U"):
                banned = banned.args[0]
            if banned.op == "not" and banned.args[0] == g.args[0]:
                return True
            # "whenever a payment is declined, tell the customer within two steps" read as
            # the decline calling for another decline: the response grounded onto the trigger
            due = g.args[1]
            while due.op in ("X", "F", "F[]"):
                due = due.args[0]
            if due is not g.args[1] and due == g.args[0]:
                return True
        if g.op == "and":
            calls = {a.name for a in g.args if a.op == "atom" and a.name.startswith("tool_call:")}
            roles = {a.name for a in g.args if a.op == "atom" and a.name.startswith("role:")}
            if len(calls) >= 2 or len(roles) >= 2:
                return True
    return False


def _trivial(f: Formula) -> bool:
    """Whether ``f`` holds on every session or on none: no rule anyone means."""
    if f is fm.TRUE or f is fm.FALSE:
        return True
    if any(g.op in ("U", "W") and g.args[1] is fm.FALSE for g in f.subformulas()):
        # "!p W (p & !p)": the grounding named both sides of a precedence with one entry
        return True
    try:
        return (distinguishing_trace(f, fm.TRUE, max_length=COMPARE_LENGTH) is None
                or distinguishing_trace(f, fm.FALSE, max_length=COMPARE_LENGTH) is None)
    except ReviewLimitError:
        return False


_COMPLEMENT = {">": "<=", "<": ">=", ">=": "<", "<=": ">"}


def as_limits(f: Formula) -> Formula:
    """A forbidden amount read as the limit it sets: "never refund more than 200" is ``G
    (refund -> amount <= 200)`` and "the balance must never go below zero" ``G (balance >=
    0)`` (an event whose amount is missing does not meet the limit), not ``G !(refund &
    amount > 200)``, which a refund with no amount would satisfy."""
    if not f.args:
        return f
    if f.op == "not" and f.args[0].op == "and" and len(f.args[0].args) == 2:
        limit, event = sorted(f.args[0].args, key=lambda a: a.op != "cmp")
        if limit.op == "cmp" and limit.payload.op in _COMPLEMENT and event.op == "atom":
            c = limit.payload
            return Implies(event, Compare(c.left, _COMPLEMENT[c.op], c.right))
    return fm.rebuild(f, tuple(as_limits(a) for a in f.args))


def _calls(f: Formula) -> set[str]:
    """The tool calls a conjunction (or a single atom) asserts at its step."""
    items = f.args if f.op == "and" else (f,)
    return {a.name for a in items if a.op == "atom" and a.name.startswith("tool_call:")}


def one_call_a_step(f: Formula) -> Formula:
    """``a & X F b`` as ``a & F b`` when a and b are different tool calls: one event a step, so
    "b strictly later" and "b at that step or later" are the same on every log, and the second
    is the plainer formula (how people write "run the tests, then commit")."""
    if not f.args:
        return f
    args = tuple(one_call_a_step(a) for a in f.args)
    if f.op == "and":
        here = set().union(*(_calls(a) for a in args if a.op != "X"))
        fixed = []
        for a in args:
            if (here and a.op == "X" and a.args[0].op == "F"
                    and _calls(a.args[0].args[0]) and not _calls(a.args[0].args[0]) & here):
                a = a.args[0]
            fixed.append(a)
        args = tuple(fixed)
    return fm.rebuild(f, args)


# Opposite events that bound a state: the door is open from "door_opened" until "door_closed".
_OPPOSITES = (("open", "close"), ("opened", "closed"), ("on", "off"), ("start", "stop"),
              ("started", "stopped"), ("start", "end"), ("started", "ended"),
              ("start", "finish"), ("started", "finished"), ("enable", "disable"),
              ("enabled", "disabled"), ("lock", "unlock"), ("locked", "unlocked"),
              ("alert", "cleared"), ("raised", "cleared"), ("detected", "cleared"),
              ("flagged", "cleared"), ("alert", "resolved"), ("opened", "resolved"),
              ("begin", "end"), ("pause", "resume"), ("paused", "resumed"),
              ("announced", "lifted"), ("declared", "lifted"), ("activated", "deactivated"),
              ("activate", "deactivate"), ("suspend", "reinstate"), ("suspended", "reinstated"),
              ("checkout", "checkin"), ("checked_out", "checked_in"), ("hold", "release"))
_LASTING_WORDS = re.compile(r"\b(while|whilst|as long as|during|is active|are active|is open|"
                            r"is on|is running|in progress|is ongoing|until)\b")


def _opposite(name: str, atoms) -> tuple[str, str] | None:
    """The atom that ends the state ``name`` begins (``door_opened`` -> ``door_closed``), with
    the words of the state; None when the logs have no such pair."""
    bare = re.sub(r"^(tool_call:)", "", name)
    parts = bare.split("_")
    for start, end in _OPPOSITES:
        if start not in parts:
            continue
        k = parts.index(start)
        for other in (parts[:k] + [end] + parts[k + 1:], parts[:k] + parts[k + 1:] + [end],
                      [end] + parts[:k] + parts[k + 1:]):
            for prefix in ("tool_call:", ""):
                candidate = prefix + "_".join(p for p in other if p)
                if candidate != name and candidate in atoms:
                    subject = " ".join(p for p in parts if p != start) or bare
                    return candidate, subject.replace("_", " ")
    return None


def state_between_events(f: Formula, atoms) -> tuple[Formula, str] | None:
    """``f`` with each atom that begins a state the logs also end read as the state (``!door_
    closed S door_opened`` for ``door_opened``) outside past operators, and the state's words;
    None when no atom of ``f`` has an opposite in the logs."""
    found: dict[str, Formula] = {}
    described = []
    present = {g.name for g in f.subformulas() if g.op == "atom"}
    for g in f.subformulas():
        if g.op == "atom" and g.name not in found:
            pair = _opposite(g.name, atoms)
            # a rule that names the ending event already says how long the state lasts
            if pair is not None and pair[0] not in present:
                found[g.name] = S(Not(Atom(pair[0])), g)
                described.append(f"“{_words(g.name)}” lasts until “{_words(pair[0])}”")
    if not found:
        return None

    def visit(g: Formula) -> Formula:
        if g.op == "atom":
            return found.get(g.name, g)
        if g.op in ("Y", "O", "H", "S", "Z") or not g.args:
            return g
        return fm.rebuild(g, tuple(visit(a) for a in g.args))

    return visit(f), "; ".join(described)


def _words(name: str) -> str:
    return name.removeprefix("tool_call:").replace("_", " ")


def limits_on_an_event(f: Formula) -> Formula:
    """``G (set_thermostat & target >= 16 & target <= 28)`` as ``G (set_thermostat -> target
    >= 16 & target <= 28)``: "thermostat setpoints must stay between 16 and 28" limits each
    setting; it does not ask every step to be one."""
    if f.op == "and":
        return fm.rebuild(f, tuple(limits_on_an_event(a) for a in f.args))
    if f.op != "G" or f.args[0].op != "and":
        return f
    parts = f.args[0].args
    calls = [p for p in parts if p.op == "atom" and p.name.startswith("tool_call:")]
    limits = [p for p in parts if p.op == "cmp"]
    if len({c.name for c in calls}) != 1 or len(calls) + len(limits) != len(parts) or not limits:
        return f
    return G(Implies(calls[0], And(*limits)))


_NEGATED_OP = {">": "<=", "<": ">=", ">=": "<", "<=": ">", "==": "!=", "!=": "=="}


def _limits_anywhere(f: Formula) -> Formula | None:
    """``G (call -> x >= 10 & x <= 90)`` as ``G !(x < 10 | x > 90)``: no step shows a value
    outside the limits (a step without the value passes); None for any other shape."""
    if f.op != "G" or f.args[0].op != "implies":
        return None
    limits = f.args[0].args[1]
    parts = limits.args if limits.op == "and" else (limits,)
    if not all(p.op == "cmp" for p in parts):
        return None
    broken = [Compare(p.payload.left, _NEGATED_OP[p.payload.op], p.payload.right) for p in parts]
    return G(Not(Or(*broken)))


def calls_at_separate_steps(f: Formula) -> Formula:
    """``F (lock_doors & lights_off)`` as ``F lock_doors & F lights_off`` when every part is a
    different tool call: one event a step, so "lock the doors and turn off the lights within
    five steps" asks for each call within the five steps, never both at one step."""
    if not f.args:
        return f
    args = tuple(calls_at_separate_steps(a) for a in f.args)
    if f.op in ("F", "F[]") and args[0].op == "and":
        parts = args[0].args
        names = {p.name for p in parts if p.op == "atom" and p.name.startswith("tool_call:")}
        if len(names) == len(parts) > 1:
            if f.op == "F":
                return And(*[F(p) for p in parts])
            low, high = f.payload
            return And(*[FBounded(low, high, p) for p in parts])
    return fm.rebuild(f, args)


def _conjuncts(f: Formula) -> list[Formula]:
    return list(f.args) if f.op == "and" else [f]


def release_after_trigger(f: Formula) -> Formula:
    """"If a test run fails, do not commit until the tests are re-run": once the words are
    grounded, the release (a test run) may be the trigger's own event, which would end the ban
    at the very step it starts; the release is then a later occurrence, so the ban starts at the
    next step (``WX`` for a weak until, ``X`` for a strong one)."""
    if not f.args:
        return f
    args = tuple(release_after_trigger(a) for a in f.args)
    if f.op == "implies" and args[1].op in ("U", "W"):
        here = {a for a in _conjuncts(args[0]) if a.op == "atom"}
        release = {a for a in _conjuncts(args[1].args[1]) if a.op == "atom"}
        if here & release:
            args = (args[0], WX(args[1]) if args[1].op == "W" else X(args[1]))
    if f.op == "and":
        # "never refund an order that was already refunded": the earlier refund is another
        # one, strictly before (at the same step it would be this one)
        here = {a for a in args if a.op == "atom"}
        args = tuple(Y(a) if a.op == "O" and here & {
            b for b in a.args[0].subformulas() if b.op == "atom"} else a for a in args)
    if f.op == "and":
        # "once a refund is issued (the first one), no further refunds": the ban beside its
        # own event starts at the next step
        here = {a for a in args if a.op == "atom"}
        args = tuple(WX(a) if a.op == "G" and a.args[0].op == "not" and here & {
            b for b in a.args[0].subformulas() if b.op == "atom"} else a for a in args)
    if f.op == "implies" and args[1].op == "G" and args[1].args[0].op == "not":
        # "once a refund has gone through, no other refund": a ban on the trigger's own event
        # starts at the next step (from the trigger's step on, the trigger would break it)
        here = {a for a in _conjuncts(args[0]) if a.op == "atom"}
        banned = {a for a in args[1].args[0].subformulas() if a.op == "atom"}
        if here & banned:
            args = (args[0], WX(args[1]))
    return fm.rebuild(f, args)


def since_before_own_event(f: Formula) -> Formula:
    """"Don't migrate unless a backup has been taken since the last migration": at a
    migration the last migration is an earlier one, so the "since" is read from the step
    before (``G (migrate -> Y (!migrate S backup))``), else no migration could ever pass."""
    def visit(g: Formula) -> Formula:
        if g.op == "implies":
            outside = {a.name for a in g.args[0].subformulas() if a.op == "atom"}
            if outside:
                return fm.rebuild(g, (g.args[0], wrap(g.args[1], outside)))
            return g
        if not g.args:
            return g
        return fm.rebuild(g, tuple(visit(a) for a in g.args))

    def wrap(g: Formula, events: set) -> Formula:
        if (g.op == "S" and g.args[0].op == "not" and g.args[0].args[0].op == "atom"
                and g.args[0].args[0].name in events):
            return Y(g)
        if g.op in ("Y", "O", "H", "S") or not g.args:
            return g
        return fm.rebuild(g, tuple(wrap(a, events) for a in g.args))

    if not any(g.op == "S" for g in f.subformulas()):
        return f
    # "unless P, never E" reads G (!P -> !E): the same as G (E -> P)
    f = _unless_as_condition(f)
    return visit(f)


def _unless_as_condition(f: Formula) -> Formula:
    if f.op == "G" and f.args[0].op == "implies" and f.args[0].args[0].op == "not" and \
            f.args[0].args[1].op == "not" and f.args[0].args[0].args[0].op == "S":
        return G(Implies(f.args[0].args[1].args[0], f.args[0].args[0].args[0]))
    if f.op == "and":
        return fm.rebuild(f, tuple(_unless_as_condition(a) for a in f.args))
    return f


def limits_everywhere(f: Formula) -> Formula:
    """Every forbidden amount read as a limit that holds at every step: "the balance must never
    go below zero" as ``G (balance >= 0)``, which a step without a balance breaks, where ``G
    !(balance < 0)`` lets it pass (the author says which is meant)."""
    if not f.args:
        return f
    if f.op == "not" and f.args[0].op == "cmp" and f.args[0].payload.op in _COMPLEMENT:
        c = f.args[0].payload
        return Compare(c.left, _COMPLEMENT[c.op], c.right)
    return fm.rebuild(f, tuple(limits_everywhere(a) for a in f.args))


def _ordered_atoms(reader: _Reader, f: Formula) -> list[str]:
    return list(reader.atoms)


def propose_name(f: Formula, kinds: list[str]) -> str:
    """A short snake_case name for a rule: its pattern and the atoms it is about."""
    names = []
    for g in f.subformulas():
        if g.op == "atom":
            names.append(g.name)
        elif g.op == "cmp":
            names.append(g.payload.left[1].rsplit(".", 1)[-1])
    words: list[str] = []
    for name in names:
        name = re.sub(r"^(tool_call|role|stop_reason):", "", name)
        for w in re.split(r"[^a-z0-9]+", name.lower()):
            if w and w not in words and w not in ("agent", "user", "the"):
                words.append(w)
    kind = kinds[0] if len(kinds) == 1 else "other"
    prefix = {"absence": "never", "universality": "always", "existence": "must"}.get(kind, "")
    core = "_".join(words[:4]) or "rule"
    if kind == "precedence" and len(words) >= 2:
        core = "_".join(words[:4])
    name = f"{prefix}_{core}" if prefix else core
    return name[:48].strip("_")
