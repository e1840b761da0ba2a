"""Reading phrases and clauses as formulas: atoms, leaves, a clause's subject, state and
obligation."""

from __future__ import annotations

import re
from dataclasses import replace

from studio.logic.formula import (And, Atom, Compare, F, FBounded, Formula, G, GBounded, Implies,
    Not, O, Or, S, W, WX, X, Y)
from studio.logic.patterns import absence, existence, universality

from . import lexicon
from .shapes import (_alternatives, _bound, _CHECKED_FIRST, _count, _field_path, _first_token,
    _merge, _names_action_first, _names_an_action, _past_at_least, _permits, _plural_subject,
    _Rule)
from .syntax import (_negated_adjective, _timings, Clause, Connective, COUNTS, LAST_STEP, Leaf,
    Mod, NEGATIONS, TEMPORAL)
from .tokens import NotUnderstood, Token


class _ClauseReader:
    """Reads phrases and clauses as formulas (the part of ``_Reader`` below whole sentences).
    Where English leaves two meanings open, ``choose`` takes the one ``options`` names (the
    first by default) and records the choice, so the engine can read the sentence again with
    each other meaning."""

    def __init__(self, options: dict | None = None):
        self.atoms: list[str] = []
        self.options = options or {}
        self.consulted: dict[str, list[tuple[str, str]]] = {}
        self.kinds: list[str] = []
        self.state_trigger = False
        self.quoted: dict[str, str] = {}     # quoted atom -> the words around it
        self.trigger_atoms: set[str] = set()
        self.in_condition = False           # reading the condition of "P only if Q"

    def choose(self, key: str, choices: list[tuple[str, str]]) -> str:
        """One of ``choices`` ((value, what it means), the usual meaning first) for the open
        question ``key``."""
        self.consulted.setdefault(key, choices)
        value = self.options.get(key, choices[0][0])
        return value if any(v == value for v, _ in choices) else choices[0][0]

    def meaning(self) -> str:
        """What the choices made in this reading mean, in words."""
        parts = []
        for key, choices in self.consulted.items():
            value = self.options.get(key, choices[0][0])
            parts.extend(why for v, why in choices if v == value)
        return "; ".join(parts)

    # -- propositions
    def atom(self, words: tuple[Token, ...]) -> Formula:
        negated = [k for k, w in enumerate(words) if _negated_adjective(str(w.value),
                                                                      w.after_copula)]
        if (len(negated) == 1 and len(words) > 1
                and (words[negated[0]].after_copula
                     or (negated[0] == 0 and not any(w.after_copula for w in words)))):
            # "the lantern is unlit" is "the lantern is lit", negated (one atom for both); but
            # "wire funds to an unverified account" is a transfer, and the account not verified
            # (the grounding reads the un- word of a longer phrase)
            k = negated[0]
            positive = replace(words[k], value=str(words[k].value)[2:])
            return Not(self.atom(words[:k] + (positive,) + words[k + 1:]))
        name = "_".join(str(w.value) for w in words)
        name = re.sub(r"_+", "_", name).strip("_")
        if not name:
            raise NotUnderstood("a phrase with no words left to name an atom", words)
        if name not in self.atoms:
            self.atoms.append(name)
        return Atom(name)

    def leaf(self, leaf: Leaf) -> Formula:
        if leaf.quoted is not None:
            name = str(leaf.quoted.value)
            if not name.strip():
                raise NotUnderstood("an empty quoted atom", [leaf.quoted])
            if name not in self.atoms:
                self.atoms.append(name)
            if leaf.words:
                self.quoted.setdefault(name, "_".join(str(w.value) for w in leaf.words))
            return Atom(name)
        if leaf.compare is not None and leaf.compare.value[0] == "between":
            low, high = leaf.value.value
            path = ("path", _field_path(leaf.words) if leaf.compare.value[1] == "verb"
                    and leaf.words else "data.amount")
            within = And(Compare(path, ">=", ("const", low)),
                         Compare(path, "<=", ("const", high)))
            if leaf.compare.value[1] == "verb" or not leaf.words:
                return within
            return And(self.atom(leaf.words), within)
        if leaf.compare is not None:
            op, style = leaf.compare.value
            constant = ("const", leaf.value.value)
            if style == "verb":
                if not leaf.words:
                    raise NotUnderstood(f"“{leaf.compare.text}” needs what it compares before "
                                        "it (the amount exceeds 10000)", [leaf.compare])
                return Compare(("path", _field_path(leaf.words)), op, constant)
            amount = Compare(("path", "data.amount"), op, constant)
            return And(self.atom(leaf.words), amount) if leaf.words else amount
        return self.atom(leaf.words)

    def prop(self, node) -> Formula:
        if isinstance(node, Leaf):
            return self.leaf(node)
        items = [self.prop(x) for x in node.items]
        if node.op == "and":
            return And(*items)
        if node.op == "or":
            return Or(*items)
        if node.op == "not":
            return Not(items[0])
        if node.op == "but_not":
            return And(items[0], Not(items[1]))
        if node.op == "without":
            return And(items[0], Not(O(items[1])))
        if node.op == "since":
            # "P since the last Q": P came after the latest Q (or at all, when no Q came)
            return S(Not(items[1]), items[0])
        if node.op == "not_since":
            # "P and not Q since": Q has not come since P
            return S(Not(items[1]), items[0])
        if node.op == "already":
            # "cancel an order that has already shipped": the shipping came at or before it
            return And(items[0], O(items[1]))
        raise AssertionError(node.op)  # pragma: no cover

    # -- clauses
    def split(self, clause: Clause):
        """Props before and after ``only``, merged subject to predicate, and the modifiers."""
        before, after, only = [], [], False
        for s in clause.segments:
            if isinstance(s, Mod):
                if s.name == "ONLY":
                    only = True
            else:
                (after if only else before).append(s)
        return _merge(before), _merge(after), only, clause.mods

    def negative(self, mods: list[Mod]) -> bool:
        return sum(m.name in NEGATIONS for m in mods) % 2 == 1

    def subject(self, clause: Clause, extra: Formula | None = None) -> Formula:
        before, after, only, mods = self.split(clause)
        if after is not None:
            before = _merge([p for p in (before, after) if p is not None])
        if before is None:
            raise NotUnderstood("a rule part that names nothing", [_first_token(clause)])
        f = self.prop(before)
        return And(f, extra) if extra is not None else f

    def state(self, clause: Clause) -> Formula:
        """A clause as a condition on the current step (triggers, precedence arguments)."""
        f = self.subject(clause)
        mods = [m for m in clause.mods if m.name not in ("MODAL", "HOLD", "HAPPEN", "ONLY")]
        timing = [m for m in _timings(mods) if m.name != "ALWAYS"]
        if len(timing) > 1:
            raise NotUnderstood("two timings for one condition", [m.token for m in timing])
        if timing:
            t = timing[0]
            if t.name == "EVENTUALLY":
                f = F(f)
            elif t.name == "LATER":
                f = X(F(f))
            elif t.name == "PREVIOUSLY":
                how = self.choose("strict", [
                    ("strict", "the earlier event must be at a strictly earlier step"),
                    ("same", "the earlier event may be at the same step as the later one")])
                f = Y(O(f)) if how == "strict" else O(f)
            elif t.name == "NEXT_STEP":
                f = X(f)
            elif t.name == "nth" and 2 <= _bound(t, 2) <= 5:
                # "after three failed logins", "a second time": the Nth one, at this step
                f = And(f, Y(_past_at_least(f, _bound(t, 2) - 1)))
            elif t.name == "at_least" and _bound(t, 1) <= 5:
                # "only after at least two interviews have been logged": so many up to now
                f = _past_at_least(f, _bound(t, 1))
            else:
                raise NotUnderstood(f"“{t.token.text}” cannot qualify a condition", [t.token])
        return Not(f) if self.negative(mods) else f

    def consequent(self, clause: Clause, default: str, extra: Formula | None = None) -> Formula:
        """What a triggered obligation requires, from the trigger step.  ``default`` is the
        timing with no word for it: "now" for "whenever P, Q", "eventually" after "followed by",
        "later" for the later links of a chain."""
        message = self.in_message(clause, extra)
        if message is not None:
            return message
        before, after, only, mods = self.split(clause)
        f = self.subject(clause, extra)
        neg = self.negative(mods)
        timing = _timings(mods)
        if len(timing) > 1:
            raise NotUnderstood("two timings for one obligation", [m.token for m in timing])
        never = any(m.name == "NEVER" for m in mods)
        happen = any(m.name == "HAPPEN" for m in mods)
        if not timing and default == "next":
            if neg and never:
                # "as soon as P, stop Q" / "never Q": from that step on, or the next
                start = self.choose("after_step", [
                    ("same", "the ban starts at the step of the event"),
                    ("next", "the ban starts at the step after the event")])
                return G(Not(f)) if start == "same" else WX(G(Not(f)))
            return WX(Not(f)) if neg else X(f)
        if (not timing and default == "now" and not neg and any(m.name == "MODAL" for m in mods)
                and not any(m.name == "HOLD" for m in mods) and _names_an_action(clause)):
            # "whenever P, the agent must Q": an action the trigger calls for.
            choices = [("eventually", "the required action at that step or any later one"),
                       ("now", "the required action at that very step")]
            # while a state lasts ("whenever the light is red, the car must stop") the action
            # is due at once; an event calls for a later one (one event a step)
            when = self.choose("response", choices[::-1] if self.state_trigger else choices)
            return F(f) if when == "eventually" else f
        if (not timing and default == "now" and not neg and not mods and extra is None
                and not self.in_condition
                and _names_action_first(clause) and len(f.args) == 0 and "_" in str(f)):
            # "if a file is deleted, email the user": an instruction, due at once or later
            when = self.choose("response", [
                ("now", "the required action at that very step"),
                ("eventually", "the required action at that step or any later one")])
            return F(f) if when == "eventually" else f
        if not timing:
            if neg and never and default == "now":
                # "never push to prod when the build is red": not at such a step, or never
                # again from then on
                choices = [("ever", "never again from that step on"),
                           ("now", "not at that very step")]
                how = self.choose("never_when", choices[::-1] if self.state_trigger
                                  else choices)
                return G(Not(f)) if how == "ever" else Not(f)
            if neg:
                return G(Not(f)) if (never or happen or default != "now") else Not(f)
            if default == "eventually" or (default == "now" and happen):
                return F(f)
            if default == "later":
                return X(F(f))
            return f
        t = timing[0]
        name = t.name
        if name == "ALWAYS":
            return G(Not(f)) if neg else G(f)
        if name == "EVENTUALLY":
            return G(Not(f)) if neg else F(f)
        if name == "LATER":
            return WX(G(Not(f))) if neg else X(F(f))
        if name == "NEXT_STEP":
            return WX(Not(f)) if neg else X(f)
        if name in ("within", "within_next"):
            low = 1 if name == "within_next" else 0
            if low == 0 and default in ("now", "next", "eventually"):
                # "whenever P, Q within 3 steps": counted from P's step, or from the step after
                how = self.choose("within", [
                    ("counting", "the step of the trigger counts among the steps"),
                    ("after", "the steps are counted after the trigger's step")])
                low = 1 if how == "after" else 0
            high = _bound(t, max(low, 1) if low else 0)
            return GBounded(low, high, Not(f)) if neg else FBounded(low, high, f)
        if name == "PREVIOUSLY":
            how = self.choose("strict", [
                ("strict", "the earlier event must be at a strictly earlier step"),
                ("same", "the earlier event may be at the same step as the later one")])
            earlier = Y(O(f)) if how == "strict" else O(f)
            return Not(earlier) if neg else earlier
        if name == "AT_END":
            return F(And(Not(f) if neg else f, LAST_STEP))
        if name == "at_least" and self.in_condition and _bound(t, 1) <= 5:
            # "end a chat only if the customer has been abusive at least twice": so many up
            # to then
            earlier = _past_at_least(f, _bound(t, 1))
            return Not(earlier) if neg else earlier
        raise NotUnderstood(f"“{t.token.text}” cannot qualify what a trigger requires", [t.token])

    def in_message(self, clause: Clause, extra: Formula | None = None) -> Formula | None:
        """"the next message must include an apology": no assistant message until one that
        carries it (``!role:assistant W (role:assistant & apology)``); None for a clause that
        is not about the next or first message."""
        if not clause.has("NEXT_MESSAGE", "FIRST_MESSAGE"):
            return None
        mods = [m for m in clause.mods if m.name not in ("NEXT_MESSAGE", "FIRST_MESSAGE")]
        if _timings(mods):
            raise NotUnderstood("a timing for the next message", [m.token for m in mods])
        content = Clause([x for x in clause.segments
                          if not (isinstance(x, Mod) and x.name in ("NEXT_MESSAGE",
                                                                    "FIRST_MESSAGE"))])
        f = self.subject(content, extra)
        speaking = Atom("role:assistant")
        said = And(speaking, Not(f) if self.negative(mods) else f)
        return W(Not(speaking), said)

    def top(self, clause: Clause, extra: Formula | None = None) -> _Rule:
        """A clause that is a whole rule: "never P", "P must always hold", "P at most once"."""
        message = self.in_message(clause, extra)
        if message is not None:
            return _Rule(message)
        before, after, only, mods = self.split(clause)
        if only:
            if extra is not None:
                raise NotUnderstood("“only” inside a sequence", [m.token for m in mods
                                                               if m.name == "ONLY"])
            return self.restriction(clause, before, after)
        if (extra is None and not self.negative(mods) and _plural_subject(clause)
                and self.choose("plural", [
                    ("each", "each one needs it"),
                    ("once", "once in the session is enough")]) == "each"):
            # "abnormal lab results must be flagged to the care team": each result, flagged;
            # "refunds must be approved by a manager": each refund, approved first
            seg = clause.segments
            participle = next(x for x in seg[2:] if isinstance(x, Leaf) and x.words).words[0]
            if (str(participle.value).lower().startswith(_CHECKED_FIRST)
                    and not any(isinstance(x, Mod) and x.name != "MODAL" for x in seg)
                    and self.choose("plural_checked", [
                        ("before", "each one needs it before it (an approval, a check)"),
                        ("after", "each one needs it at that step or later")]) == "before"):
                trigger = self.prop(seg[0])
                checked = self.prop(_merge([x for x in seg[2:] if not isinstance(x, Mod)]))
                return _Rule(G(Implies(trigger, O(checked))))
            response = self.every(clause)
            if response is not None:
                return response
        if extra is None and (clause.has("EVERY") or (
                clause.has("PREVIOUSLY") and not self.negative(mods))):
            # "refunds of more than 100 must be approved first": each one, approved before
            response = self.every(clause)
            if response is not None:
                return response
        f = self.subject(clause, extra)
        neg = self.negative(mods)
        timing = _timings(mods)
        names = [m.name for m in timing]
        # "always" only stresses a count or "twice in a row".
        if len(timing) == 2 and "ALWAYS" in names and not {"EVENTUALLY", "LATER"} & set(names):
            timing = [m for m in timing if m.name != "ALWAYS"]
            names = [m.name for m in timing]
        # "before the session ends, the linter must have run at least once": "have run" only
        # says the run comes first
        if len(timing) >= 2 and "PREVIOUSLY" in names and (
                {"EVENTUALLY", "AT_END"} | COUNTS) & set(names):
            timing = [m for m in timing if m.name != "PREVIOUSLY"]
            names = [m.name for m in timing]
        # "at some point ... at least twice": the count covers the whole session
        if len(timing) == 2 and "EVENTUALLY" in names and COUNTS & set(names):
            timing = [m for m in timing if m.name != "EVENTUALLY"]
            names = [m.name for m in timing]
        if not timing:
            if neg:
                return _Rule(absence(f), "absence", p=f)
            if _permits(clause) and not clause.has("HOLD", "ALWAYS"):
                # "the agent may read files": a permission alone forbids nothing
                raise NotUnderstood("a permission (may, can) that forbids nothing: say what is "
                                    "not allowed, or when (only after ..., only if ...)",
                                    [m.token for m in clause.mods if m.name == "MODAL"])
            if clause.has("HAPPEN") or (not clause.has("HOLD") and _names_an_action(clause)):
                steps = self.actions(before, after, extra)
                if steps is not None:
                    return _Rule(steps)
                return _Rule(existence(f), "existence", p=f)
            return _Rule(universality(f), "universality", p=f)
        if len(timing) == 2 and not neg:
            if names == ["ALWAYS", "EVENTUALLY"] or names == ["ALWAYS", "LATER"]:
                return _Rule(G(F(f)))
            if names == ["EVENTUALLY", "ALWAYS"]:
                return _Rule(F(G(f)))
        if len(timing) > 1:
            raise NotUnderstood("these timings do not combine", [m.token for m in timing])
        t = timing[0]
        name = t.name
        if name == "ALWAYS":
            return (_Rule(absence(f), "absence", p=f) if neg
                    else _Rule(universality(f), "universality", p=f))
        if name == "EVENTUALLY":
            return (_Rule(absence(f), "absence", p=f) if neg
                    else _Rule(existence(f), "existence", p=f))
        if name == "LATER":
            return _Rule(absence(f), "absence", p=f) if neg else _Rule(X(F(f)))
        if name == "NEXT_STEP":
            return _Rule(WX(Not(f)) if neg else X(f))
        if name == "IN_A_ROW":
            twice = And(f, X(f))
            return _Rule(G(Not(twice)) if neg else F(twice))
        if name in ("within", "within_next"):
            low = 1 if name == "within_next" else 0
            high = _bound(t, low)
            return _Rule(GBounded(low, high, Not(f)) if neg else FBounded(low, high, f))
        if name in COUNTS:
            return _Rule(_count(f, t, neg))
        if name == "AT_END":
            return _Rule(F(And(Not(f) if neg else f, LAST_STEP)))
        if name == "AT_START":
            return _Rule(Not(f) if neg else f)
        raise NotUnderstood(f"“{t.token.text}” needs something to refer to (a trigger or an "
                            "event)", [t.token])

    def actions(self, before, after, extra) -> Formula | None:
        """"Take the key and unlock the door": two actions are two steps (one event a step),
        in the order written, or in any order; None when the clause is not such a list."""
        node = after if before is None else before
        if (extra is not None or after is not None or not isinstance(node, Connective)
                or node.op != "and" or len(node.items) > 4
                or not all(isinstance(x, Leaf) and x.plain and x.words
                           and not x.words[0].after_copula for x in node.items)):
            return None
        items = [self.leaf(x) for x in node.items]
        how = self.choose("and", [("sequence", "the actions one after the other, in this order"),
                                  ("any", "each action at some step, in any order")])
        if how == "any":
            return And(*[F(x) for x in items])
        f = items[-1]
        for x in reversed(items[:-1]):
            f = And(x, X(F(f)))
        return F(f)

    def every(self, clause: Clause) -> _Rule | None:
        """"Every request must eventually be answered": a response from the subject to the
        predicate (None when the clause has no subject and predicate to tell apart)."""
        segments = clause.segments
        every = next((k for k, x in enumerate(segments)
                      if isinstance(x, Mod) and x.name == "EVERY"), 0)
        if every and (any(isinstance(x, Mod) and x.name != "EVERY" for x in segments[:every])
                and every + 1 < len(segments)
                and all(not isinstance(x, Mod) for x in segments[every + 1:])):
            # "the agent must respond to every user message": each message calls for a reply
            trigger = self.prop(_merge(list(segments[every + 1:])))
            when = self.choose("every_object", [
                ("after", "the action answers each of them, at that step or later"),
                ("before", "the action comes before each of them (a review, an approval)")])
            if when == "before":
                return _Rule(G(Implies(trigger, O(self.subject(Clause(list(
                    segments[:every])))))))
            required = self.consequent(Clause(list(segments[:every])), "now")
            f = G(Implies(trigger, required))
            if required.op == "F":
                return _Rule(f, "response", p=trigger, s=required.args[0])
            return _Rule(f)
        split = next((k for k, x in enumerate(segments)
                      if isinstance(x, Mod) and x.name != "EVERY"), None)
        if split is None:
            return None
        subject = [x for x in segments[:split] if not isinstance(x, Mod)]
        rest = segments[split:]
        if not subject or not any(not isinstance(x, Mod) for x in rest):
            return None
        predicate = Clause(list(rest))
        trigger = self.prop(_merge(subject))
        default = "eventually" if _names_action_first(predicate) else "now"
        required = self.consequent(predicate, default)
        f = G(Implies(trigger, required))
        if required.op == "F":
            return _Rule(f, "response", p=trigger, s=required.args[0])
        return _Rule(f)

    def restriction(self, clause: Clause, action_node, places_node) -> _Rule:
        """"P only in L1 or L2", "you may only go to the kitchen or hallway": every P is one of
        the allowed ones.  A list joined by "and" is read as the allowed alternatives."""
        only = next(m.token for m in clause.mods if m.name == "ONLY")
        if places_node is None:
            raise NotUnderstood("“only” with nothing after it", [only])
        places = _alternatives(places_node)
        if places is None:
            raise NotUnderstood("after “only”, a list of places or objects", [only])
        if action_node is None:
            words = places[0].words
            k = next((k for k, w in enumerate(words) if k and w.value in lexicon.PREPOSITIONS),
                     None)
            if k is None:
                raise NotUnderstood("“only” needs what it restricts (only go to the kitchen)",
                                    [only])
            action = self.atom(words[:k])
            allowed = [self.leaf(p) for p in places]
        else:
            if not (isinstance(action_node, Leaf) and action_node.plain):
                raise NotUnderstood("“only” restricts one action", [only])
            action = self.atom(action_node.words)
            allowed = [self.leaf(Leaf(action_node.words + p.words)) for p in places]
        neg = self.negative(clause.mods)
        if neg or any(m.name in TEMPORAL - {"ALWAYS"} for m in clause.mods):
            raise NotUnderstood("“only” with another timing or a negation", [only])
        return _Rule(G(Implies(action, Or(*allowed))))
