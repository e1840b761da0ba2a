"""Parsing: the lark grammar over the tokens, and the small syntax tree of clauses its callbacks
build."""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from functools import lru_cache
from pathlib import Path

from lark import Lark, Token as LarkToken, Transformer

from studio.logic import formula as fm
from studio.logic.formula import Formula, WX

from . import lexicon
from .tokens import NotUnderstood, Token


# Counts nest one operator per occurrence; the parser reads formulas up to 200 levels deep.
MAX_COUNT = 20


# ---------------------------------------------------------------------------------------------
# Parsing

@lru_cache(maxsize=1)
def _parser() -> Lark:
    grammar = Path(__file__).with_name("grammar.lark").read_text(encoding="utf-8")
    return Lark(grammar, parser="earley", lexer="basic", ambiguity="resolve",
                propagate_positions=False)


def _canonical(tokens: list[Token]) -> tuple[str, dict[int, Token]]:
    """The token stream as the grammar reads it, and which token sits at each offset."""
    parts: list[str] = []
    at: dict[int, Token] = {}
    offset = 0
    for index, token in enumerate(tokens):
        if token.kind == "DROP":
            continue
        if token.kind in ("WORD", "NUM", "QUOTED", "COMPARE", "VALUE"):
            name = {"WORD": "w", "NUM": "n", "QUOTED": "q", "COMPARE": "c", "VALUE": "v"}[
                token.kind] + str(index)
        else:
            name = token.kind
        at[offset] = token
        parts.append(name)
        offset += len(name) + 1
    return " ".join(parts), at


# ---------------------------------------------------------------------------------------------
# The syntax tree the grammar's callbacks build

@dataclass(frozen=True)
class Leaf:
    words: tuple[Token, ...] = ()
    quoted: Token | None = None
    compare: Token | None = None
    value: Token | None = None

    @property
    def plain(self) -> bool:
        return self.quoted is None and self.compare is None


@dataclass(frozen=True)
class Connective:
    op: str                  # and, or, not, but_not, without
    items: tuple
    token: Token | None = None   # the keyword of a negation


@dataclass(frozen=True)
class Mod:
    name: str
    token: Token
    number: int | None = None


@dataclass
class Clause:
    segments: list           # props (Leaf / Connective) and Mods, in order

    @property
    def mods(self) -> list[Mod]:
        return [s for s in self.segments if isinstance(s, Mod)]

    def has(self, *names: str) -> bool:
        return any(m.name in names for m in self.mods)


@dataclass
class Sequence:
    """What a trigger requires: clauses joined by links ("eventually q and then r")."""

    parts: list
    links: list              # "followed", "followed_next" or "then", one per later part


@dataclass
class Until:
    left: Clause
    right: Clause
    after: bool


@dataclass
class Conditional:
    style: str               # first ("whenever P, Q"), last ("Q whenever P"), only_if
    trigger: list
    consequent: object
    timing: str = "now"      # "next" for "as soon as P, Q" and "immediately after P, Q"


@dataclass
class Guarded:
    """"While P, Q" (kind while: Q at every step where P holds) and "Unless P, Q" / "Q unless
    P" (kind unless: Q at every step where P does not hold, or has not happened)."""

    kind: str
    condition: list
    rules: object


@dataclass
class UntilFirst:
    """"Until P, Q": a ban lasts, or a state holds, until P."""

    condition: object
    rules: object


@dataclass
class Chain:
    parts: list
    links: list


@dataclass
class Precedence:
    """"first before second" (``kind`` before: first is a list of steps), "first only after
    second" (only_after: second is a list of steps), "first precedes second", "first is preceded
    by second" (preceded_by: second is a list of steps)."""

    kind: str
    first: object
    second: object


@dataclass
class Scope:
    kind: str
    args: tuple
    token: Token | None = None


@dataclass
class Scoped:
    scope: Scope
    rule: object


@dataclass
class Rules:
    rules: list


@dataclass
class Simple:
    clause: Clause


@dataclass
class AlwaysRule:
    rule: object


COUNTS = frozenset({"at_most", "at_least", "exactly", "more_than", "fewer_than"})
TEMPORAL = frozenset({"ALWAYS", "EVENTUALLY", "LATER", "NEXT_STEP", "IN_A_ROW", "PREVIOUSLY",
                      "within", "within_next", "AT_END", "AT_START", "nth"}) | COUNTS
# The last step of a session: no step follows it.
LAST_STEP = WX(fm.FALSE)
NEGATIONS = frozenset({"NOT", "NEVER", "FORBIDDEN"})


class _Tree(Transformer):
    """Grammar callbacks: canonical tokens in, syntax tree out.

    Leaves are made left to right, so a pronoun can take a noun phrase of an earlier clause.  A
    pronoun that starts its phrase is a subject and takes the earlier subject ("whenever the
    agent calls a tool, it must report": the agent); any other takes the earlier object ("if
    you take an item, examine it": the item); each falls back on the other."""

    def __init__(self, tokens_at: dict[int, Token], tokens: list[Token]):
        super().__init__()
        self.at = tokens_at
        self.tokens = tokens
        self.antecedents: list[tuple[bool, tuple[Token, ...]]] = []
        self.clause_phrases: list[tuple[bool, tuple[Token, ...]]] = []   # (is an object, words)

    def _referent(self, as_subject: bool, thing: bool = False) -> tuple[Token, ...]:
        """The noun phrase a pronoun stands for; "it" (``thing``) never stands for a person
        ("ask the user for the CVV ... repeat it": the CVV)."""
        def fit(phrases):
            if not thing:
                return phrases
            kept = [(o, w) for o, w in phrases
                    if not any(str(t.value).lower() in lexicon.PERSONS for t in w)]
            return kept or phrases
        return (_pick_referent(fit(self.antecedents), as_subject)
                or _pick_referent(fit(self.clause_phrases), as_subject))

    def _close_clause(self) -> None:
        if self.clause_phrases:
            self.antecedents = self.clause_phrases
        self.clause_phrases = []

    def _token(self, t: LarkToken) -> Token:
        if t.type in ("WORD", "NUM", "QUOTED", "COMPARE", "VALUE"):
            return self.tokens[int(str(t)[1:])]
        return self.at[t.start_pos]

    # -- phrases
    def words(self, c):
        resolved: list[Token] = []
        for n, t in enumerate(c):
            token = self._token(t)
            if token.pronoun and n > 0 and token.text.lower() == "them" and any(
                    str(w.value).lower() in lexicon.PERSONS
                    for w in self._referent(as_subject=False)):
                # "hand them off to a human": the person is who the action is for, which the
                # logs do not name apart
                continue
            if (token.pronoun and n == 0 and token.text.lower() in ("it", "they")
                    and self.antecedents and not self.antecedents[0][0]
                    and str(self.antecedents[0][1][0].value).lower() in _ACTORS):
                # "whenever the agent runs the tests, it has to report back": the agent, whom
                # the rule is about anyway (not the tests)
                resolved.append(replace(self.antecedents[0][1][0], after_determiner=False,
                                        after_copula=False))
                continue
            if token.pronoun:
                # The referent's words, without starting a noun phrase of their own here.
                # ("It must run the tests": a subject naming nobody before it is the agent.)
                thing = token.text.lower() == "it"
                resolved.extend(replace(w, after_determiner=False, after_copula=False)
                                for w in self._referent(as_subject=n == 0, thing=thing))
                if n == 0 and len(c) > 1 and not self._referent(as_subject=True):
                    continue
            else:
                resolved.append(token)
        for k, token in enumerate(resolved):
            if token.after_determiner:
                # The noun phrase runs to the next preposition or article; a subject's last
                # word before the object's article is its verb ("the agent calls a tool").
                end = next((j for j in range(k + 1, len(resolved))
                            if resolved[j].value in lexicon.PREPOSITIONS
                            or resolved[j].after_determiner or resolved[j].after_copula),
                           len(resolved))
                if (k == 0 and end < len(resolved) and end - k > 1
                        and not resolved[end].after_copula):
                    end -= 1
                elif (k == 0 and end == len(resolved) and end > 1
                      and re.search(r"(?<!s)s$|ed$", str(resolved[-1].value))
                      and not any(w.after_copula for w in resolved)):
                    end -= 1    # "an order ships": the order
                self.clause_phrases.append((k > 0, tuple(resolved[k:end])))
        if (len(resolved) >= 2 and not any(t.after_determiner or t.after_copula or t.pronoun
                                           for t in resolved)
                and not any(t.pronoun for t in (self._token(x) for x in c))):
            # "approve refunds before issuing them": a bare object after its verb
            self.clause_phrases.append((True, tuple(resolved[1:])))
        if not resolved:
            raise NotUnderstood("a pronoun that refers to nothing named before it",
                                [self._token(t) for t in c])
        return Leaf(tuple(resolved))

    def quoted(self, c):
        # the words around a quoted value say what it names ("the account named "admin"")
        words = tuple(self._token(t) for t in c if t.type == "WORD")
        return Leaf(words=words, quoted=next(self._token(t) for t in c if t.type == "QUOTED"))

    def comparison(self, c):
        tokens = [self._token(t) for t in c]
        at = next(k for k, t in enumerate(tokens) if t.kind == "COMPARE")
        compare, value = tokens[at], tokens[at + 1]
        trailing = tuple(t for t in tokens[at + 2:] if t.kind == "WORD")
        if trailing and compare.value[1] != "prep":
            raise NotUnderstood("words after a comparison", trailing)
        # "send more than 5000 in one transfer": the words after the amount name the event too
        return Leaf(words=tuple(t for t in tokens[:at] if t.kind in ("WORD", "NUM")) + trailing,
                    compare=compare, value=value)

    def negated(self, c):
        return Connective("not", (c[1],), self._token(c[0]))

    def negation(self, c):  # ( prop )
        return c[1]

    def _items(self, c):
        return tuple(x for x in c if not isinstance(x, LarkToken))

    def any_of(self, c):
        return Connective("or", _distribute(self._items(c)))

    def all_of(self, c):
        return Connective("and", _distribute(self._items(c)))

    def none_of(self, c):
        # "neither P nor Q" negates the clause, like "never": the reader lifts the negation.
        a, b = self._items(c)
        return Connective("not", (Connective("or", (a, b)),), self._token(c[0]))

    def but_not(self, c):
        a, b = self._items(c)
        return Connective("but_not", (a, b))

    def without(self, c):
        a, b = self._items(c)
        return Connective("without", (a, b))

    def already_done(self, c):
        a, b = self._items(c)
        return Connective("already", (a, b))

    def since(self, c):
        a, b = self._items(c)
        return Connective("since", (a, b))

    def and_not_since(self, c):
        a, b = self._items(c)
        return Connective("not_since", (a, b))

    # -- clauses
    def _mod(self, c, name):
        number_token = next((t for t in c if t.type == "NUM"), None)
        number = self._token(number_token).value if number_token is not None else None
        return Mod(name, self._token(c[0]), number)

    def modifier(self, c):
        return self._mod(c, c[0].type)

    def within(self, c):
        return self._mod(c, "within")

    def within_next(self, c):
        return self._mod(c, "within_next")

    def nth(self, c):
        return self._mod(c, "nth")

    def at_most(self, c):
        return self._mod(c, "at_most")

    def at_least(self, c):
        return self._mod(c, "at_least")

    def exactly(self, c):
        return self._mod(c, "exactly")

    def more_than(self, c):
        return self._mod(c, "more_than")

    def fewer_than(self, c):
        return self._mod(c, "fewer_than")

    def modifiers(self, c):
        return c

    def clause(self, c):
        segments: list = []
        for x in c:
            if isinstance(x, list):
                segments.extend(x)
            elif not isinstance(x, LarkToken):  # a comma after leading modifiers
                segments.extend(_lift_negation(x))
        self._close_clause()
        return Clause(segments)

    def bare(self, c):
        self._close_clause()
        return Clause(_lift_negation(c[0]))

    # -- rules
    def simple(self, c):
        return Simple(c[0])

    def always_rule(self, c):
        return AlwaysRule(c[-1])

    def trigger(self, c):
        return [x for x in c if isinstance(x, Clause)]

    def sequence(self, c):
        parts = [x for x in c if isinstance(x, Clause)]
        links = [x for x in c if isinstance(x, str) and not isinstance(x, LarkToken)]
        return Sequence(parts, links)

    def until(self, c):
        a, b = [x for x in c if isinstance(x, Clause)]
        return Until(a, b, after=False)

    def until_after(self, c):
        a, b = [x for x in c if isinstance(x, Clause)]
        return Until(a, b, after=True)

    def _trigger_timing(self, c) -> str:
        return "next" if any(isinstance(t, LarkToken) and t.type == "TRIGGER_NEXT"
                             for t in c) else "now"

    def trigger_first(self, c):
        trigger = next(x for x in c if isinstance(x, list))
        return Conditional("first", trigger, c[-1], self._trigger_timing(c))

    def trigger_last(self, c):
        trigger, consequent = c[-1], c[0]
        forbidden = [m for part in trigger for m in part.mods if m.name == "FORBIDDEN"]
        if forbidden and isinstance(consequent, Sequence) and len(consequent.parts) == 1:
            # "sending an email right after deleting a file is forbidden": the verdict ends
            # the sentence but is about what the trigger calls for
            trigger = [Clause([x for x in part.segments
                               if not (isinstance(x, Mod) and x.name == "FORBIDDEN")])
                       for part in trigger]
            head = consequent.parts[0]
            consequent = Sequence([Clause([Mod("NOT", forbidden[0].token)] + head.segments)],
                                  [])
        return Conditional("last", trigger, consequent, self._trigger_timing(c))

    def while_first(self, c):
        trigger = next(x for x in c if isinstance(x, list))
        return Guarded("while", trigger, c[-1])

    def while_last(self, c):
        trigger = next(x for x in c if isinstance(x, list))
        return Guarded("while", trigger, c[0])

    def requires(self, c):
        return Precedence("requires", c[0], c[2])

    def requires_before(self, c):
        # "claims over $10,000 need an adjuster's approval before payout"
        parts = [x for x in c if not isinstance(x, LarkToken)]
        return Precedence("requires_before", (parts[0], parts[2]), parts[1])

    def only_after_before(self, c):
        # "background checks may be run only after an offer and before a start date"
        parts = [x for x in c if not isinstance(x, LarkToken)]
        return Precedence("only_after_before", parts[0], (parts[1], parts[2]))

    def unless_first(self, c):
        return Guarded("unless", [c[1]], c[-1])

    def unless_last(self, c):
        return Guarded("unless", [c[-1]], c[0])

    def until_first(self, c):
        return UntilFirst(c[1], c[-1])

    def only_after_first(self, c):
        rule = c[-1]
        if not isinstance(rule, Simple):
            raise NotUnderstood("after “only after P,” a single action (only after P may Q)",
                                [self._token(c[0])])
        return Precedence("only_after", rule.clause, c[1])

    def immediately_before(self, c):
        return Precedence("preceded_by_prev", c[2], c[0])

    def preceded_by_prev(self, c):
        return Precedence("preceded_by_prev", c[0], c[2])

    def only_if(self, c):
        return Conditional("only_if", c[-1], c[0])

    def followed(self, c):
        return "followed"

    def followed_next(self, c):
        return "followed_next"

    def then(self, c):
        return "then"

    def chain(self, c):
        parts = [x for x in c if isinstance(x, Clause)]
        links = [x for x in c if isinstance(x, str) and not isinstance(x, LarkToken)]
        return Chain(parts, links)

    def steps(self, c):
        return [x for x in c if isinstance(x, Clause)]

    def before(self, c):
        return Precedence("before", c[0], c[2])

    def only_after(self, c):
        return Precedence("only_after", c[0], c[2])

    def precedes(self, c):
        return Precedence("precedes", c[0], c[2])

    def preceded_by(self, c):
        return Precedence("preceded_by", c[0], c[2])

    # -- scopes and sentences
    def _scope(self, kind, c):
        args = tuple(x for x in c if isinstance(x, Clause))
        keyword = next((self._token(t) for t in c if isinstance(t, LarkToken)), None)
        return Scope(kind, args, keyword)

    def scope_global(self, c):
        return self._scope("global", c)

    def scope_before(self, c):
        return self._scope("before", c)

    def scope_after(self, c):
        return self._scope("after", c)

    def scope_between(self, c):
        return self._scope("between", c)

    def scope_after_until(self, c):
        return self._scope("after_until", c)

    def front_scoped(self, c):
        return Scoped(c[0], c[-1])

    def back_scoped(self, c):
        return Scoped(c[-1], c[0])

    def both_rules(self, c):
        return Rules([x for x in c if not isinstance(x, LarkToken)])

    def start(self, c):
        return [x for x in c if not isinstance(x, LarkToken)]


# Who a rule is about: a pronoun for one of them names no event.
_ACTORS = frozenset({"agent", "assistant", "bot", "chatbot", "system", "model", "ai",
                     "controller", "tutor"})


def _pick_referent(phrases: list[tuple[bool, tuple[Token, ...]]],
                   as_subject: bool) -> tuple[Token, ...]:
    for is_object, words in phrases:
        if is_object != as_subject:
            return words
    return phrases[0][1] if phrases else ()


def _timings(mods: list[Mod]) -> list[Mod]:
    """The timing modifiers, a repeated one once ("eventually ... at some later time step")."""
    out: list[Mod] = []
    for m in mods:
        if m.name in TEMPORAL and not any(o.name == m.name and o.number == m.number for o in out):
            out.append(m)
    return out


def _lift_negation(prop) -> list:
    """A phrase-level "not P" in a clause is the clause's negation: "you must not look around
    twice in a row" forbids the repetition, it does not ask for two steps without looking."""
    if isinstance(prop, Connective) and prop.op == "not" and prop.token is not None:
        return [Mod("NOT", prop.token)] + _lift_negation(prop.items[0])
    return [prop]


def _distribute(items: tuple) -> tuple:
    """Share the words English leaves out of coordinated phrases.

    * "go to the bedroom, workshop or greenhouse": the words before the first item's noun phrase
      ("go to", ending in a preposition) go to later items that are bare nouns, and "take the
      knife or the fork" lends "take" to "the fork";
    * "in areas a1, a2 or a3": the words before a numbered name go to later numbered names
      ("area" made singular);
    * "pick up, pour or dunk the yellow paint": the last item's noun phrase goes to earlier
      items that are bare verbs;
    * "the door is closed or locked": the subject before the first item's copula goes to later
      bare items, and "package1 or package2 is delivered" shares the predicate after the last
      item's copula.
    """
    if len(items) < 2 or not all(isinstance(x, Leaf) and x.plain for x in items):
        return items
    first, last = items[0], items[-1]
    out = list(items)

    def bare(item: Leaf) -> bool:
        return len(item.words) <= 2 and not any(w.after_determiner or w.after_copula
                                                for w in item.words)

    # "the door is closed or locked": the subject before the copula is shared.
    cop = next((k for k, w in enumerate(first.words) if w.after_copula), None)
    if cop and all(bare(x) for x in items[1:]):
        return (first,) + tuple(Leaf(first.words[:cop] + x.words) for x in items[1:])
    # "package1 or package2 is delivered": the predicate after the copula is shared.
    cop = next((k for k, w in enumerate(last.words) if w.after_copula), None)
    if cop and all(bare(x) and len(x.words) == 1 for x in items[:-1]):
        return tuple(Leaf(x.words + last.words[cop:]) for x in items[:-1]) + (last,)
    det = next((k for k, w in enumerate(first.words) if w.after_determiner), None)
    if det:
        prefix = first.words[:det]
        ends_in_preposition = prefix[-1].value in lexicon.PREPOSITIONS
        for n, item in enumerate(items[1:], 1):
            starts_noun_phrase = item.words[0].after_determiner
            bare_noun = (not any(w.after_determiner for w in item.words) and len(item.words) <= 2
                         and ends_in_preposition)
            if starts_noun_phrase or bare_noun:
                out[n] = Leaf(prefix + item.words)
        return tuple(out)
    if (len(first.words) >= 2 and _numbered(first.words[-1])
            and all(len(x.words) == 1 and _numbered(x.words[0]) for x in items[1:])):
        prefix = tuple(_singular(w) for w in first.words[:-1])
        return tuple(Leaf(prefix + x.words[-1:]) for x in items)
    det = next((k for k, w in enumerate(last.words) if w.after_determiner), None)
    # ("look around or look at the object": a verb with its own preposition keeps its object)
    if (det and last.words[det - 1].value not in lexicon.PREPOSITIONS
            and all(not any(w.after_determiner for w in x.words) and len(x.words) <= 2
                    for x in items[:-1])):
        suffix = last.words[det:]
        return tuple(Leaf(x.words + suffix) for x in items[:-1]) + (last,)
    return items


def _atom_names(f: Formula) -> set[str]:
    return {g.name for g in f.subformulas() if g.op == "atom"}


_UN_ADJECTIVES = frozenset({"unlit", "unpaid", "unsafe", "unseen", "unread", "unsent",
                            "unknown", "unfit", "unsigned", "unsaved", "unverified",
                            "unconfirmed", "unapproved", "unauthorized", "unauthorised",
                            "unauthenticated", "unresolved", "unanswered", "unacknowledged",
                            "unassigned", "unencrypted", "unprocessed", "unreviewed",
                            "unchecked", "unvalidated", "untested", "unreported", "unavailable",
                            "unhealthy", "unstable", "unreachable", "unattended"})


def _negated_adjective(word: str, after_copula: bool) -> bool:
    """"an unverified account", "the lantern is unlit": a state's negation; but "the package
    must be unloaded" names an action (unload), not a state that is not one."""
    word = word.lower()
    return word in _UN_ADJECTIVES or (word.startswith("un") and len(word) > 6
                                      and word.endswith("ed") and not after_copula)


def _numbered(word: Token) -> bool:
    value = str(word.value)
    return any(ch.isdigit() for ch in value) and any(ch.isalpha() for ch in value)


def _singular(word: Token) -> Token:
    value = str(word.value)
    if len(value) > 3 and value.endswith("s") and not value.endswith("ss"):
        return replace(word, value=value[:-1])
    return word
