"""The offline English-to-LTL formaliser: structured English in, an LTLf formula out, no model.

Three stages:

1. **Lexing** (``lexing.lex``, its rules in ``lex_rules``): the text is cut into words,
   numbers, quoted atoms and punctuation; the keyword phrases of ``lexicon.py`` become one
   token each ("at some point" -> EVENTUALLY), filler words are dropped ("the", "you", "is"),
   and every other word is a content word; ``sentences`` rewrites whole sentences.
2. **Parsing** (``grammar.lark``, Earley; ``syntax``): keywords give the sentence its shape, runs
   of content words fill the gaps as phrases.  The tree becomes a small syntax tree of clauses.
3. **Reading** (``reader._Reader`` over ``clauses`` and ``shapes``): each construction becomes a
   formula, mostly through the pattern builders of ``studio.logic.patterns`` and Dwyer et al.'s
   scoped patterns (adapted to LTLf).  ``readings`` offers the other readings and grounds them
   (``grounding``); ``search`` names the words that keep a sentence from being read.

A phrase names an atom: its content words joined by ``_`` ("take the knife" -> ``take_knife``);
a quoted "atom" is used verbatim; "the amount exceeds 10000" is the data atom
``data.amount > 10000``.  Text the grammar cannot read never raises: the answer says which words
could not be placed, at which character, and why.

The readings where English leaves room (rule authors see the formula and its explanation, so a
reading they did not mean shows up in review):

* "never P" and "do not P" are ``G !P``, "always P" and "P must hold" ``G P``, "eventually P"
  and "P must happen" ``F P``;
* with a modal and no time word, a state is an invariant and an action must happen once: "the
  truck must be at a location" is ``G``, "the agent must greet the customer" and "the report
  must be sent" are ``F`` (a verb, or a past participle after "be"); "hold" and "happen" say it
  explicitly.  "Every request must be answered" is a response from the subject to the predicate;
* "eventually" and "followed by" include the current step (``F``); "later", "then" and the
  links after the first of a chain are strictly later (``X F``), as in paper 000's tree formulas;
* "in the next step" is the strong ``X`` (a trigger at the last step is a violation); "must not
  ... in the next step" is the weak ``WX``;
* "within k steps" counts the trigger step (``F[0,k]``); "within the next k steps" does not
  (``F[1,k]``);
* "Q only after P", "P before Q", "no Q before P" and a top-level "do not Q until P" are
  precedence (``!Q W P``: a session without P must not do Q); "do not Q until after P" also
  forbids Q at the step of P; in a triggered obligation "until" is strong, as in the paper's
  constrained response ("whenever P, Q must not happen until R" is ``G (P -> (!Q U R))``);
* a leading "before R," "after Q," "between Q and R," or "after Q until R," is one of Dwyer et
  al.'s scopes; a trailing "after Q" and "between Q and R" too, but a trailing "before R" is
  precedence;
* "P without Q" is ``P & !O Q`` (Q has not happened up to now);
* "before" with no object ("the package must be unloaded before") is ``Y O`` (strictly earlier);
* a pronoun takes a noun phrase of the clause before ("take an item ... examine it");
  coordinated phrases share the words English leaves out ("go to the bedroom or kitchen");
* "P only in L1 or L2" and "only go to L1 or L2" restrict an action: ``G (P -> P_in_L1 | ...)``.

Where rules written by people who never saw this grammar leave the meaning open, every reading
is offered (at most ``MAX_READINGS``) rather than one silent guess: "within k steps" of a trigger
counting the trigger's step or not, a ban after an event from that step or the next, a top-level
"P until Q" strong or weak, "never P when Q" at that step or from then on, an earlier event
strict or not, a forbidden amount as a limit or a plain ban, a phrase that fits several
vocabulary entries (any of them, or one), words left over after grounding (they restrict the
event, or the phrase names something the logs lack).  A reading that holds on every session or
on none is never offered; when none is left the rule is refused.  A bare permission ("the agent
may read files") forbids nothing and is refused; "Only X may P" is "P only if X"; "at a time"
(how many are open together) is refused.
"""

from __future__ import annotations

import re
from dataclasses import replace

from lark.exceptions import UnexpectedEOF, UnexpectedInput, VisitError

from studio.logic.formula import And

from .base import Formalisation
from .lexing import lex
from .reader import _Reader
from .readings import _answer, _other_readings, MAX_INVENTED_WORDS
from .search import _quote_words, _removable, _stop_token
from .sentences import _after_colon, _after_permission, _as_imperative, _colon_requires
from .syntax import _canonical, _parser, _Tree
from .tokens import NotUnderstood, Token


MAX_TEXT_LENGTH = 4000
# Searching for the words to leave out costs one parse per word: only for short sentences.
MAX_TOKENS_FOR_SEARCH = 60


# ---------------------------------------------------------------------------------------------
# The engine

class OfflineFormaliser:
    """The grammar-based engine: deterministic, instant, no model."""

    name = "offline"

    def formalise(self, english: str, vocabulary=None) -> Formalisation:
        if not isinstance(english, str):
            raise TypeError("formalise() takes the English text of a rule")
        if not english.strip():
            return self._fail("there is no rule to read: the text is empty")
        if len(english) > MAX_TEXT_LENGTH:
            return self._fail(f"the text is {len(english)} characters long; the offline "
                              f"formaliser reads rules of up to {MAX_TEXT_LENGTH}")
        tokens = lex(english)
        strays = [t for t in tokens if t.kind == "UNPLACEABLE"]
        if strays:
            return self._fail("could not place " + _quote_words(strays) + ": the offline grammar "
                              "has no reading for " + ("it" if len(strays) == 1 else "them"),
                              strays)
        if not any(t.kind not in ("DROP", "SEP", "COMMA") for t in tokens):
            return self._fail("there is no rule to read: only filler words", [])
        canonical, at = _canonical(tokens)
        summary = False
        try:
            tree = _parser().parse(canonical)
        except UnexpectedInput as exc:
            # "Take the key and unlock the door.": an instruction is an obligation; "Users
            # shouldn't be left waiting: a reply is expected within 4 steps of each message":
            # the words before the colon sum up the rule the rest states
            for variant, is_summary in ((_as_imperative(tokens), False),
                                        (_colon_requires(tokens), False),
                                        (_after_colon(tokens), True),
                                        (_after_permission(tokens), True)):
                if variant is None:
                    continue
                try:
                    canonical_variant, at_variant = _canonical(variant)
                    tree = _parser().parse(canonical_variant)
                except UnexpectedInput:
                    continue
                tokens, canonical, at, summary = (variant, canonical_variant, at_variant,
                                                  is_summary)
                break
            else:
                return self._syntax_failure(tokens, canonical, at, exc)
        try:
            nodes = _Tree(at, tokens).transform(tree)
            reader = _Reader()
            formulas = reader.read(nodes)
        except VisitError as exc:
            if isinstance(exc.orig_exc, NotUnderstood):
                return self._fail(exc.orig_exc.message, exc.orig_exc.tokens)
            raise
        except NotUnderstood as exc:
            return self._fail(exc.message, exc.tokens)
        read = [(And(*formulas), reader)] + _other_readings(nodes, reader)
        answer = _answer(read, vocabulary, self.name, english)
        lost = _numbers_no_reading_uses(tokens, answer)
        if lost:
            # "no bid priced above the market cap of 1,000": a reading without the 1,000 has
            # lost the limit the rule is about
            return self._fail("could not place " + _quote_words(lost) + ": no reading of the "
                              "rule uses " + ("it" if len(lost) == 1 else "them") + "; put the "
                              "number right after the comparison (above 1,000)", lost)
        if summary and answer.ok:
            said = ("the words before the colon are read as a summary of the rule after it"
                    if any(t.text == ":" for t in tokens) else
                    "the permission before “but” is read as forbidding nothing")
            answer = replace(answer, readings=tuple(
                replace(r, why="; ".join(x for x in (said, r.why) if x))
                for r in answer.readings))
        unsure = [m.phrase for m in answer.mapping if not m.grounded
                  and len(m.phrase.split()) >= MAX_INVENTED_WORDS]
        if vocabulary is not None and (getattr(vocabulary, "atoms", None) or
                                       getattr(vocabulary, "paths", None)) and unsure:
            # A long phrase that nothing in the logs matches is most often a clause the grammar
            # did not take apart ("reveal anyone's salary in a message to the user"): a guess
            # the author would have to catch, so the engine says where it is stuck instead.
            words = [t for t in tokens if t.kind == "WORD" and str(t.value) in
                     unsure[0].split()]
            return self._fail(f"could not tell what “{unsure[0]}” names: nothing in this "
                              "workspace's logs matches it, and it is too long to be one "
                              "event or state; split it, or name the atom in quotes", words)
        return answer

    def _fail(self, message: str, tokens=()) -> Formalisation:
        unplaced = tuple((t.text, t.start) for t in tokens if t is not None)
        return Formalisation(None, "", (), unplaced, message[:1].upper() + message[1:],
                             engine=self.name)

    def _syntax_failure(self, tokens, canonical, at, exc) -> Formalisation:
        """Which words keep the sentence from being read: the fewest whose removal lets it
        parse (one word, else two), next to where the parser stopped."""
        visible = [i for i, t in enumerate(tokens) if t.kind != "DROP"]
        content = ("WORD", "NUM", "QUOTED", "COMPARE", "VALUE", "SEP", "COMMA")
        if all(tokens[i].kind in content for i in visible):
            words = [tokens[i] for i in visible if tokens[i].kind not in ("SEP", "COMMA")]
            return self._fail("no rule here: the text names things but never says when they must "
                              "or must not hold (always, never, eventually, whenever ..., must, "
                              "before, at most once, ...)", words)
        stop = _stop_token(exc, at, tokens)
        culprits: list[int] = []
        if len(visible) <= MAX_TOKENS_FOR_SEARCH:
            culprits = _removable(tokens, visible, stop)
        if culprits:
            words = [tokens[i] for i in culprits]
            return self._fail("could not place " + _quote_words(words) + " in a rule pattern; "
                              "without " + ("it" if len(words) == 1 else "them") +
                              " the rest of the sentence can be read", words)
        if isinstance(exc, UnexpectedEOF) or stop is None:
            last = [tokens[visible[-1]]] if visible else []
            return self._fail("the rule ends too early: after " + _quote_words(last) +
                              " the grammar expects more", last)
        return self._fail("could not place " + _quote_words([stop]) + " here", [stop])


def _numbers_no_reading_uses(tokens: list[Token], answer: Formalisation) -> list[Token]:
    """The numbers of the English (limits, thresholds: above 5, or with a fraction; a count
    is written as the shape of the formula) that appear in no reading."""
    if not answer.ok:
        return []
    printed = {float(x) for r in answer.readings
               for x in re.findall(r"(?<![\w.])-?\d+(?:\.\d+)?", r.text)}
    lost = []
    for t in tokens:
        if t.kind not in ("NUM", "VALUE") or not isinstance(t.value, (int, float)) \
                or isinstance(t.value, bool):
            continue
        n = float(t.value)
        if (n > 5 or n != int(n)) and n not in printed and n - 1 not in printed:
            lost.append(t)
    return lost


_ENGINE = OfflineFormaliser()


def formalise(text: str, engine: str = "offline", vocabulary=None) -> Formalisation:
    """Read one English rule (several sentences are read as the conjunction of their rules).

    ``vocabulary``: what the workspace's logs produce (``.atoms``, ``.paths``); the atoms the
    English names are mapped onto it where they fit (``grounding``)."""
    if engine != "offline":
        raise ValueError(f"unknown engine {engine!r}; this module provides 'offline'")
    return _ENGINE.formalise(text, vocabulary=vocabulary)
