"""Helpers of the reader: the shape of a clause (state or action, plural, permission), leaves
rewritten, counts and Dwyer et al.'s scoped patterns."""

from __future__ import annotations

from dataclasses import dataclass, replace

from studio.logic import formula as fm
from studio.logic.formula import And, F, Formula, G, Implies, MAX_BOUND, Not, O, Or, U, W, WX, X, Y
from studio.logic.patterns import at_most_once, precedence

from . import lexicon
from .syntax import _numbered, Clause, Connective, Leaf, MAX_COUNT, Mod, Simple
from .tokens import _is_participle, NotUnderstood, Token


@dataclass
class _Rule:
    """A rule's formula and, for Dwyer's patterns, what scopes need to rewrite it."""

    formula: Formula
    kind: str = "other"      # universality, absence, existence, precedence, response
    p: Formula | None = None
    s: Formula | None = None


def _first_token(node) -> Token | None:
    if isinstance(node, Token):
        return node
    if isinstance(node, Leaf):
        return (node.words[0] if node.words else node.quoted or node.compare)
    if isinstance(node, Connective):
        return _first_token(node.items[0])
    if isinstance(node, Mod):
        return node.token
    if isinstance(node, Clause):
        return _first_token(node.segments[0]) if node.segments else None
    return None


def _share_subject(rules: list) -> list:
    """"The robot must reach the goal and never hit an obstacle": a rule with no subject of its
    own takes the subject of the rule before it."""
    out = list(rules)
    for k in range(1, len(out)):
        before, this = out[k - 1], out[k]
        if not (isinstance(before, Simple) and isinstance(this, Simple)):
            continue
        segments = before.clause.segments
        first_mod = next((j for j, x in enumerate(segments) if isinstance(x, Mod)), 0)
        subject = [x for x in segments[:first_mod]]
        if subject and isinstance(this.clause.segments[0], Mod):
            out[k] = Simple(Clause(subject + this.clause.segments))
    return out


def _merge(props: list):
    """Subject and predicate as one proposition: "the color" + "red" -> color_red; a shared
    subject or predicate goes to every item of a list ("package1 or package2 is delivered")."""
    if not props:
        return None
    merged = props[0]
    for nxt in props[1:]:
        if isinstance(merged, Leaf) and merged.plain:
            merged = _map_leaves(nxt, lambda leaf, w=merged.words: replace(
                leaf, words=w + leaf.words), subject=True)
        elif isinstance(nxt, Leaf) and nxt.plain:
            merged = _map_leaves(merged, lambda leaf, w=nxt.words: _extend(leaf, w))
        elif isinstance(merged, Leaf) and merged.quoted is not None:
            continue  # a quoted atom is named already; words after it only describe it
        else:
            raise NotUnderstood("cannot tell how these two phrases combine",
                                [_first_token(merged), _first_token(nxt)])
    return merged


def _extend(leaf: Leaf, words: tuple) -> Leaf:
    if leaf.compare is not None and leaf.compare.value[1] == "prep":
        # "payments above 10000 must never be made": the words name the event compared
        return replace(leaf, words=leaf.words + words)
    if leaf.compare is not None:
        raise NotUnderstood("words after a comparison", words)
    if leaf.quoted is not None:
        return leaf
    return replace(leaf, words=leaf.words + words)


def _map_leaves(node, fn, subject: bool = False):
    """``fn`` applied to every phrase; a subject does not reach the object of "without"
    ("a refund must never be issued without manager approval")."""
    if isinstance(node, Leaf):
        return fn(node)
    # nor the event of "since" ("the tests have passed since code was edited": the code)
    items = tuple(x if (node.op in ("without", "since", "not_since") and k == 1
                        and (subject or node.op != "without"))
                  else _map_leaves(x, fn, subject) for k, x in enumerate(node.items))
    return Connective(node.op, items, node.token)


def _alternatives(node) -> list[Leaf] | None:
    if isinstance(node, Leaf):
        return [node] if node.plain else None
    if node.op in ("and", "or"):
        out = []
        for item in node.items:
            sub = _alternatives(item)
            if sub is None:
                return None
            out.extend(sub)
        return out
    return None


def _field_path(words: tuple[Token, ...]) -> str:
    if len(words) == 1 and "." in str(words[0].value):
        return str(words[0].value)
    return "data." + "_".join(str(w.value) for w in words)


# Participles of what comes before the thing checked: "refunds must be approved".
_CHECKED_FIRST = ("approv", "authori", "verifi", "review", "signed", "checked", "confirm",
                  "clear", "vetted", "screened", "validat", "cleared", "permitted", "allowed")


def _plural_subject(clause: Clause) -> bool:
    """"Refunds must be approved", "abnormal lab results must be flagged": a plural noun
    subject (each one) before a modal and a participle naming something else done to it."""
    seg = clause.segments
    if (len(seg) < 3 or not isinstance(seg[0], Leaf) or seg[0].quoted is not None
            or not seg[0].words
            or not isinstance(seg[1], Mod) or seg[1].name != "MODAL"
            or any(isinstance(x, Mod) and x.name not in ("MODAL", "EVENTUALLY", "within",
                                                        "within_next", "NEXT_STEP", "LATER",
                                                        "PREVIOUSLY")
                   for x in seg[1:])):
        return False
    last = str(seg[0].words[-1].value).lower()
    predicate = next((x for x in seg[2:] if isinstance(x, Leaf) and x.words), None)
    return (last.endswith("s") and not last.endswith(("ss", "us", "is")) and len(last) > 3
            and predicate is not None and predicate.words[0].after_copula
            and _is_participle(predicate.words[0]))


def _names_action_first(clause: Clause) -> bool:
    """Whether a predicate names an action ("greet the customer", "be answered") rather than a
    state ("be free", "be at the location"): a verb with no copula before it, or a past
    participle after one."""
    leaf = next((x for x in clause.segments if not isinstance(x, Mod)), None)
    while isinstance(leaf, Connective):
        leaf = leaf.items[0]
    if not isinstance(leaf, Leaf) or not leaf.plain or not leaf.words:
        return False
    word = leaf.words[0]
    if not word.after_copula:
        return not word.after_determiner and not _numbered(word)
    value = str(word.value)
    return (len(value) > 4 and value.endswith("ed")) or value in lexicon.IRREGULAR_PARTICIPLES


def _describes_state(clause: Clause) -> bool:
    """A condition that describes a state ("the light is red", "the amount exceeds 10000"),
    not an event ("a file is deleted", "the user asks for a refund")."""
    for leaf in clause.segments:
        while isinstance(leaf, Connective):
            leaf = leaf.items[0]
        if not isinstance(leaf, Leaf):
            continue
        if leaf.compare is not None:
            return True
        copula = next((w for w in leaf.words if w.after_copula), None)
        if copula is not None:
            return not _is_participle(copula)
        return False
    return False


_PERMISSIONS = frozenset({"may", "can", "could", "is allowed to", "are allowed to",
                          "is permitted to", "are permitted to", "is allowed", "are allowed",
                          "is permitted", "are permitted"})


def _permits(clause: Clause) -> bool:
    """Whether the clause's modal only permits ("may", "can", "is allowed to")."""
    modals = [m for m in clause.mods if m.name == "MODAL"]
    return bool(modals) and all(m.token.text.lower() in _PERMISSIONS for m in modals)


def _names_an_action(clause: Clause) -> bool:
    """The predicate of "S must P" (what follows the first modifier) names an action."""
    segments = clause.segments
    first_mod = next((k for k, x in enumerate(segments) if isinstance(x, Mod)), None)
    if first_mod is None:
        return False
    return _names_action_first(Clause(segments[first_mod:]))


def _count(f: Formula, mod: Mod, negative: bool) -> Formula:
    """"at most k times", "at least k", "exactly k", "more than k", "fewer than k", or their
    negation ("never more than once" is at most once)."""
    k = mod.number
    if not isinstance(k, int) or not 0 <= k <= MAX_COUNT:
        raise NotUnderstood(f"a count from 0 to {MAX_COUNT} times", [mod.token])
    low, high = {"at_most": (0, k), "at_least": (k, None), "exactly": (k, k),
                 "more_than": (k + 1, None), "fewer_than": (0, k - 1)}[mod.name]
    if negative:
        if low > 0 and high is not None:
            raise NotUnderstood(f"a negated exact count (“{mod.token.text}”)", [mod.token])
        low, high = (high + 1, None) if high is not None else (0, low - 1)
    if high is not None and high < 0:
        raise NotUnderstood("a count below zero", [mod.token])
    parts = []
    if low > 0:
        parts.append(_at_least(f, low))
    if high is not None:
        parts.append(_at_most(f, high))
    return And(*parts)


def _bound(mod: Mod, low: int) -> int:
    k = mod.number
    if not isinstance(k, int) or k < low or k > MAX_BOUND:
        raise NotUnderstood(f"a number of steps from {low} to {MAX_BOUND}", [mod.token])
    return k


def _past_at_least(f: Formula, k: int) -> Formula:
    """``f`` at ``k`` different steps up to now: ``O (f & Y O f)`` for two."""
    g = O(f)
    for _ in range(k - 1):
        g = O(And(f, Y(g)))
    return g


def _at_most(f: Formula, k: int) -> Formula:
    """At most ``k`` steps where ``f`` holds: none until the first, then at most k-1 after it."""
    if k == 1:
        return at_most_once(f)
    if k == 0:
        return G(Not(f))
    return W(Not(f), And(f, WX(_at_most(f, k - 1))))


def _at_least(f: Formula, k: int) -> Formula:
    if k <= 0:
        return fm.TRUE
    if k == 1:
        return F(f)
    return F(And(f, X(_at_least(f, k - 1))))


def _precedence_chain(causes: list[Formula], effect: Formula) -> Formula:
    """``effect`` only once ``causes`` have happened in this order, each strictly after the
    previous; the last may share the step of ``effect``, as in single precedence."""
    if len(causes) == 1:
        return precedence(causes[0], effect)
    first, rest = causes[0], causes[1:]
    return W(Not(effect), And(first, Not(effect), X(_precedence_chain(rest, effect))))


def _scoped(rule: _Rule, kind: str, args: list[Formula]) -> Formula:
    """Dwyer et al.'s pattern formulas for the scopes before R, between Q and R and after Q
    until R, written for LTLf (G vacuous and F, U strong at the end of the session).  ``P`` is
    the pattern's proposition, ``S`` the cause (precedence) or the answer (response)."""
    p, s = rule.p, rule.s
    if kind == "before_until":
        # "Before R, ...": up to R, whether or not R ever comes ("not until then").
        (r,) = args
        if rule.kind == "absence":
            return W(Not(p), r)
        if rule.kind == "universality":
            return W(p, r)
        if rule.kind == "existence":
            return W(Not(r), p)
        if rule.kind == "precedence":
            return W(Not(p), Or(s, r))
        if rule.kind == "response":
            return W(Implies(p, U(Not(r), And(s, Not(r)))), r)
    if kind == "before":
        (r,) = args
        if rule.kind == "absence":
            return Implies(F(r), U(Not(p), r))
        if rule.kind == "universality":
            return Implies(F(r), U(p, r))
        if rule.kind == "existence":
            return W(Not(r), And(p, Not(r)))
        if rule.kind == "precedence":
            return Implies(F(r), U(Not(p), Or(s, r)))
        if rule.kind == "response":
            return Implies(F(r), U(Implies(p, U(Not(r), And(s, Not(r)))), r))
    opened = And(args[0], Not(args[1])) if kind in ("between", "after_until") else None
    if kind == "between":
        q, r = args
        closed = And(opened, F(r))
        if rule.kind == "absence":
            return G(Implies(closed, U(Not(p), r)))
        if rule.kind == "universality":
            return G(Implies(closed, U(p, r)))
        if rule.kind == "existence":
            return G(Implies(opened, W(Not(r), And(p, Not(r)))))
        if rule.kind == "precedence":
            return G(Implies(closed, U(Not(p), Or(s, r))))
        if rule.kind == "response":
            return G(Implies(closed, U(Implies(p, U(Not(r), And(s, Not(r)))), r)))
    if kind == "after_until":
        q, r = args
        if rule.kind == "absence":
            return G(Implies(opened, W(Not(p), r)))
        if rule.kind == "universality":
            return G(Implies(opened, W(p, r)))
        if rule.kind == "existence":
            return G(Implies(opened, U(Not(r), And(p, Not(r)))))
        if rule.kind == "precedence":
            return G(Implies(opened, W(Not(p), Or(s, r))))
        if rule.kind == "response":
            return G(Implies(opened, W(Implies(p, U(Not(r), And(s, Not(r)))), r)))
    raise AssertionError((kind, rule.kind))  # pragma: no cover
