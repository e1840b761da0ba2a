"""The words the offline formaliser knows: keyword phrases, filler words and number words.

Every phrase maps to the canonical tokens the grammar (``grammar.lark``) reads.  Phrases are
matched longest first over lower-cased words, so "at most once" wins over "at most" and
"it is never the case that" over "never".  Words that are neither keywords nor fillers are
content words: they name atoms.
"""

from __future__ import annotations

# Phrase -> canonical tokens ("NAME" or "NAME=value", space-separated).  DROP phrases carry no
# meaning; a RATIONALE phrase starts a purpose clause, dropped up to the next comma or full stop.
_PHRASES: dict[str, str] = {}


def _add(kind: str, *phrases: str) -> None:
    for phrase in phrases:
        _PHRASES[phrase] = kind


_add("NEVER", "it is forbidden to", "it is not allowed to", "it is prohibited to",
     "it is not permitted to", "never", "never ever", "not ever", "at no time", "at no point",
     "at no step",
     "at no time step", "in no step", "under no circumstances", "in no case",
     "it is never the case that", "it must never be the case that",
     "it should never be the case that", "at no point in time", "has never", "have never")
_add("ALWAYS", "always", "at all times", "at every step", "at every time step", "at each step",
     "at each time step", "in every step", "in every state", "at every point",
     "it is always the case that", "it must always be the case that",
     "it should always be the case that", "invariably", "forever", "continuously",
     "all the time")
_add("GLOBALLY", "globally")
_add("EVENTUALLY", "eventually", "at some point", "at some time", "at some step",
     "at some time step", "at some point in time", "at some point in the future",
     "sooner or later", "finally", "in the future",
     "at the same time step or at a later time step", "at that time step or at a later time step",
     "at the same step or later", "at the same step or at a later step", "now or later",
     "at some moment")
_add("LATER", "later", "afterwards", "afterward", "at a later step", "at a later time step",
     "at some later point", "at some later step", "at some later time step",
     "at some future step", "at some future time step", "at some future point",
     "at some point after it does", "at some strictly later time step",
     "at a strictly later step", "strictly later", "some time later", "subsequently")
_add("NEXT_STEP", "in the next step", "at the next step", "in the next state",
     "at the next time step", "in the next time step", "in the following step",
     "at the following step", "on the next step", "at step t+1", "at time t+1",
     "at time step t+1", "immediately after", "immediately afterwards", "right after",
     "right afterwards", "immediately", "next", "in the very next step", "at the very next step",
     "straight away", "right away", "at once", "without delay", "on the very next step",
     "on the very next turn", "on the next turn", "in the next turn", "at the next turn",
     "the very next step", "the very next thing", "the next thing", "the step after")
_add("IN_A_ROW", "twice in a row", "two times in a row", "in a row", "consecutively",
     "twice consecutively", "in two consecutive steps", "on two consecutive steps",
     "at two consecutive steps", "back to back")
_add("WITHIN", "within", "in at most", "no later than", "in no more than")
_add("WITHIN_NEXT", "within the next", "in the next", "within the following",
     "during the next")
_add("STEPS", "steps", "step", "time steps", "time step", "actions", "action", "turns", "turn",
     "moves", "move", "events", "states")
_add("AT_MOST", "at most", "no more than", "not more than")
_add("AT_LEAST", "at least", "no fewer than", "not less than")
_add("EXACTLY", "exactly", "precisely")
_add("TIMES", "times", "occasions")
_add("NUM=1 TIMES", "one time")
_add("AT_MOST NUM=1 TIMES", "at most once", "only once", "no more than once",
     "not more than once", "never more than once")
_add("AT_LEAST NUM=1 TIMES", "at least once")
_add("EXACTLY NUM=1 TIMES", "exactly once", "precisely once")
_add("AT_MOST NUM=2 TIMES", "at most twice", "no more than twice")
_add("AT_MOST NUM=1 TIMES", "only one", "no more than one", "at most one", "not more than one")
# "only one ticket may be open at a time" bounds how many are open together, which no count
# of events says: better refused than read as "at most one ticket ever".
_add("UNPLACEABLE", "at a time", "at any one time", "concurrently", "in parallel")
# "never P and Q at the same time": both at one step, which "and" says already
_add("DROP", "at the same time", "simultaneously", "at the same step", "in the same step")
_add("AT_LEAST NUM=2 TIMES", "at least twice")
_add("EXACTLY NUM=2 TIMES", "exactly twice")
_add("TRIGGER", "whenever", "every time", "each time", "any time", "anytime", "every time that",
     "each time that", "for every occurrence of", "for each occurrence of", "for every",
     "for each", "after every", "after each", "after any", "if", "when", "in case",
     "as soon as", "in any step where", "at any step where")
_add("THEN", "then")
_add("AND_THEN", "and then", "and after that", "after that", "and later", "and afterwards",
     "and subsequently", "and at some point after it does", "and at a later step")
_add("FOLLOWED_BY", "followed by", "succeeded by")
_add("FOLLOWED_BY_NEXT", "immediately followed by", "directly followed by",
     "followed immediately by", "followed directly by", "followed in the next step by")
_add("BEFORE", "before", "prior to", "earlier than", "ahead of")
_add("PREVIOUSLY", "previously", "earlier", "beforehand", "already", "at some earlier step",
     "in the past", "at some earlier point", "at an earlier point", "at some earlier time",
     "at an earlier step", "at some prior point", "earlier on")
_add("AFTER", "after")
# "the stock check has to happen right before an order is placed": at the step before it.
_add("IMMEDIATELY_BEFORE", "immediately before", "right before", "just before",
     "directly before", "immediately prior to", "right prior to", "just prior to",
     "in the step before", "at the step before", "one step before")
_add("ONLY_AFTER", "only after", "not until", "only once after")
_add("UNTIL", "until", "till", "up to the point where", "from that point until")
_add("UNTIL_AFTER", "until after")
_add("BETWEEN", "between")
_add("ONLY", "only", "solely", "exclusively")
_add("ONLY_IF", "only if", "only when", "only in case", "only whenever", "only provided that",
     "only while", "only during", "only as long as", "only so long as", "only provided",
     "only on condition that", "as long as", "so long as", "provided that", "providing that",
     "on condition that")
_add("PRECEDES", "precedes", "must precede", "should precede", "precede", "comes before",
     "must come before", "should come before")
_add("PRECEDED_BY", "preceded by", "be preceded by")
_add("NOT", "not", "no", "do not", "does not", "did not", "don't", "doesn't", "didn't",
     "must not", "mustn't", "should not", "shouldn't", "shall not", "may not", "cannot",
     "can't", "can not", "will not", "won't", "is not", "are not", "isn't", "aren't",
     "is not allowed to", "are not allowed to", "is forbidden to", "are forbidden to",
     "is prohibited from", "are prohibited from", "refrain from", "must avoid", "avoid",
     "is not permitted to", "are not permitted to", "never to", "must never", "should never")
_PHRASES["must never"] = "MODAL NEVER"
_PHRASES["should never"] = "MODAL NEVER"
_add("NEVER", "it's not ok to", "it is not ok to", "it's not okay to", "it is not okay to",
     "it is not acceptable to", "it's not acceptable to", "it is unacceptable to",
     "it's never ok to", "it is never ok to")
_add("MODAL", "make sure", "make sure that", "ensure", "ensure that", "make certain",
     "make certain that", "be sure to", "take care to")
_add("FORBIDDEN", "is forbidden", "are forbidden", "is not allowed", "are not allowed",
     "is prohibited", "are prohibited", "is not permitted", "are not permitted",
     "is a violation", "are a violation", "counts as a violation", "is disallowed",
     "is off-limits", "are off-limits", "is off limits", "are off limits", "is off the table",
     "are off the table", "is out of bounds", "are out of bounds", "is banned", "are banned",
     "is not okay", "is not ok", "is unacceptable", "are unacceptable", "is not acceptable",
     "are not acceptable")
# The copula: dropped from atom names, but it tells a state ("must be free") from an action
# ("must greet the customer") and where a shared subject ends ("the door is closed or locked").
COPULAS = frozenset({"is", "are", "was", "were", "be", "been", "get", "gets", "got", "gotten",
                     "becomes", "become", "became"})
CONTRACTED_COPULAS = frozenset({"they're", "you're", "we're", "it's", "he's", "she's",
                                "that's", "i'm"})
STATE_VERBS = frozenset({"stay", "stays", "remain", "remains"})
_add("MODAL", "must", "should", "shall", "has to", "have to", "needs to", "need to",
     "is required to", "are required to", "ought to", "is expected to", "are expected to",
     "is obliged to", "are obliged to", "may", "can", "will", "is allowed to",
     "are allowed to", "is permitted to", "are permitted to", "is to", "are to", "would",
     "is allowed", "are allowed", "is permitted", "are permitted", "is responsible for",
     "are responsible for", "is in charge of", "are in charge of", "is supposed to",
     "are supposed to", "is obligated to", "are obligated to", "has got to", "have got to",
     "is possible", "are possible", "is possible only", "are possible only",
     "got to", "gotta")
_add("HAPPEN", "happen", "happens", "happened", "occur", "occurs", "occurred", "appear",
     "appears", "appeared", "take place", "takes place", "took place", "follow", "follows",
     "is done", "be done", "is performed", "be performed", "be observed", "is observed",
     "be seen", "is seen", "occurs at least once")
_PHRASES["occurs at least once"] = "HAPPEN AT_LEAST NUM=1 TIMES"
# "Taking the key is mandatory": it must happen.
for _p in ("is mandatory", "are mandatory", "is compulsory", "are compulsory", "is obligatory",
           "are obligatory", "is required", "are required", "is a must"):
    _PHRASES[_p] = "MODAL HAPPEN"
_add("HOLD", "hold", "holds", "hold true", "holds true", "be true", "is true", "remain true",
     "remains true", "be the case", "is the case", "be satisfied", "is satisfied")
_add("AND", "and", "as well as", "whose", "where", "while", "with the same step having")
_add("OR", "or")
_add("EITHER", "either")
_add("NEITHER", "neither")
_add("NOR", "nor")
_add("BOTH", "both")
_add("BUT_NOT", "but not", "and not", "except")
_add("WITHOUT", "without", "without first", "without prior")
# Fixed phrases that carry no meaning of their own in a rule ("at step t" names the trigger
# step; "use it to chop" is "chop"; "from that point" restates the trigger).
_add("DROP", "at step t", "at time t", "at time step t", "at that step", "at any time step",
     "at any step", "from that point", "from that point on", "from then on", "in the trace",
     "in the session", "of the trace", "during the session", "during the run", "use it to",
     "use them to", "one of", "to do so", "in between", "at a time step", "too", "also",
     "ever", "any", "other", "things", "thing", "something",
     "anything", "everything", "please", "directly", "there", "yourself", "itself",
     "being", "am", "do", "does", "did", "has", "have", "had", "you", "we", "they", "he",
     "she", "i", "more", "longer", "you've", "they've", "we've", "i've", "you'd", "they'd",
     "anybody", "anyone", "very", "actually", "really", "explicitly", "properly",
     "successfully", "full stop", "no exceptions", "without exception", "no matter what",
     "in all cases", "in any case", "at any time", "at any point", "at any moment",
     "not before", "and not before", "not earlier", "any number of times", "as often as needed",
     "as often as they like", "as many times as needed")
# "Every request must be answered": the subject is a trigger, the predicate what it requires.
_add("EVERY", "every", "each", "all")
_add("MORE_THAN", "more than")
_add("FEWER_THAN", "fewer than", "less than")
_add("MORE_THAN NUM=1 TIMES", "more than once")
_add("MORE_THAN NUM=2 TIMES", "more than twice")
_add("FEWER_THAN NUM=2 TIMES", "fewer than twice", "less than twice")
_add("NOT", "hasn't", "haven't", "hadn't", "has not", "have not", "had not")
_add("NOT", "no more", "no longer", "is not to", "are not to", "is not to be", "are not to be",
     "is never to", "are never to", "is never to be", "are never to be")
# Purpose clauses say why, not what: "look around to see the result".
_add("RATIONALE", "to see", "to familiarize", "to familiarise", "to make sure",
     "in order to", "so as to", "so that", "to avoid", "to check", "because", "as it",
     "it wastes", "this means")

# States that must last: "the data must stay encrypted", "the door must remain locked".
_add("HOLD", "stay", "stays", "remain", "remains", "be kept", "is kept", "are kept",
     "keep being", "stay being")
# The end of the session: "at the end of the session, the cart must be empty" reads the last
# step; "before the session ends" only asks for the event to happen at all.
_SESSION = ("session", "conversation", "game", "episode", "run", "interaction", "chat", "trace",
            "dialogue", "task", "log", "experiment", "process", "workflow", "procedure", "call",
            "simulation", "exchange", "transaction", "day", "shift")
for _noun in _SESSION:
    _add("AT_END", f"at the end of the {_noun}", f"when the {_noun} ends",
         f"at the end of each {_noun}", f"at the end of every {_noun}",
         f"at the close of the {_noun}", f"once the {_noun} ends", f"when the {_noun} is over",
         f"when the {_noun} finishes")
    _add("EVENTUALLY", f"before the {_noun} ends", f"before the end of the {_noun}",
         f"by the end of the {_noun}", f"before the {_noun} is over",
         f"before the {_noun} closes", f"before the {_noun} finishes",
         f"before ending the {_noun}", f"at some point during the {_noun}",
         f"at some point in the {_noun}", f"during the {_noun} at least once",
         f"by the time the {_noun} ends")
    _add("ALWAYS", f"throughout the {_noun}", f"throughout the whole {_noun}",
         f"throughout the entire {_noun}", f"for the whole {_noun}",
         f"for the entire {_noun}", f"for the rest of the {_noun}",
         f"during the whole {_noun}", f"during the entire {_noun}")
# "in a single session", "later in the conversation": every rule reads the whole session.
for _noun in ("session", "conversation", "game", "episode", "run", "interaction", "chat",
              "trace", "dialogue", "experiment", "simulation", "exchange"):
    for _det in ("the", "a", "a single", "one", "any", "this", "the same", "the whole",
                 "the entire", "each", "every", "a given"):
        for _prep in ("in", "during", "within", "throughout", "of", "across"):
            if _prep in ("throughout",) and _det not in ("the", "a", "this"):
                continue
            _PHRASES.setdefault(f"{_prep} {_det} {_noun}", "DROP")
    _PHRASES.setdefault(f"per {_noun}", "DROP")
_add("DROP", "in a single transaction", "in one transaction", "per transaction",
     "in any single transaction", "in a single call", "in one call", "per call")
for _noun in _SESSION:
    _add("AT_START", f"at the start of the {_noun}", f"at the beginning of the {_noun}",
         f"when the {_noun} starts", f"when the {_noun} begins", f"to start the {_noun}",
         f"to open the {_noun}", f"before anything else in the {_noun}")
    _add("MODAL AT_END", f"the {_noun} must end with", f"the {_noun} should end with",
         f"every {_noun} must end with", f"each {_noun} must end with",
         f"the {_noun} must close with", f"the {_noun} must finish with")
_add("AT_START", "the first action", "the first step", "the first thing", "the first event",
     "the first tool call", "the first call", "the very first action", "the very first step",
     "the very first thing", "the first move", "the first turn")
_add("AT_START", "at the start", "at the beginning", "in the first step", "at the first step",
     "first of all", "as the first step", "as the very first step", "as its first action",
     "as the first action", "at step 0", "at step zero")
_add("REQUIRES", "require", "requires", "required", "need", "needs", "must have",
     "is conditional on", "are conditional on", "depends on", "depend on", "must be preceded by")
_PHRASES["must be preceded by"] = "PRECEDED_BY"
# "the key must have been picked up": before the step the sentence is about (with a participle
# after it; "refunds must have approval" is a requirement).
PERFECT_MODALS = frozenset({"must have", "should have", "has to have", "have to have",
                            "needs to have", "need to have", "is required to have",
                            "are required to have", "must already have", "should already have",
                            "must first have", "must have already", "must have first",
                            "ought to have", "shall have", "will have", "must previously have"})
for _p in PERFECT_MODALS:
    _PHRASES.setdefault(_p, "REQUIRES")
_add("EVENTUALLY", "before wrapping up", "before finishing", "before signing off",
     "before ending", "before closing out", "before it finishes", "before it ends",
     "before handing off", "before finishing up", "before the end of it")
_add("DURING", "during")
# "if the customer shows frustration a second time": at the second one
for _n, _word in ((2, "second"), (3, "third"), (4, "fourth"), (5, "fifth")):
    _add(f"NTH NUM={_n}", f"a {_word} time", f"for a {_word} time", f"for the {_word} time",
         f"the {_word} time")
# "From the moment a freeze is announced until it is lifted, ...": after it, until
_add("AFTER", "from the moment", "from the moment that", "from the time", "from the time that",
     "from the point", "from the point that", "from the point at which", "starting when",
     "from when", "beginning when")
# "the balance increases from one step to the next": a change is always from the step before
_add("DROP", "from one step to the next", "from the previous step", "from the step before",
     "compared with the previous step", "compared to the previous step",
     "compared with the previous reading", "compared to the previous reading",
     "from the previous reading", "since the previous step", "since the previous reading",
     "between consecutive steps", "from one reading to the next")
# How test writers say a ban: "Test fails if the HP ever goes negative."
_add("NEVER", "test fails if", "the test fails if", "test fails when", "the test fails when",
     "fail the test if", "it is a failure if", "it's a failure if", "flag a violation if",
     "flag it if", "it is a violation if", "it's a violation if")
_add("PREVIOUSLY", "at some point earlier", "at some point before", "at some point beforehand",
     "some time earlier", "some time before", "at any earlier point", "at any point earlier")
# Emphasis that adds nothing to a rule ("..., whatever the reason", "..., nobody else")
_add("DROP", "whatever the reason", "for whatever reason", "for any reason",
     "no matter the reason", "regardless of the reason", "whatever else happens",
     "nobody else", "no one else", "and nobody else", "and no one else", "no exceptions",
     "even if asked", "even if the user asks", "even if the customer asks", "even when asked")
# "once per session, not more": the count says it already
_add("DROP", "not more", "no more than that", "and no more", "not more than that")
for _p in ("is only possible", "are only possible", "is only allowed", "are only allowed",
           "is only permitted", "are only permitted"):
    _PHRASES[_p] = "MODAL ONLY"
# "the balance must never go negative": below zero
_add("BELOW_ZERO", "go negative", "goes negative", "went negative", "become negative",
     "becomes negative", "turn negative", "turns negative", "is negative", "be negative",
     "are negative", "drop below zero", "drops below zero", "fall below zero",
     "falls below zero", "go below zero", "goes below zero", "dip below zero",
     "dips below zero", "be below zero", "is below zero", "go into the negative",
     "goes into the negative", "run negative", "runs negative")
# "every user message gets a reply": it is answered (by whoever the logs say answers)
for _verb in ("gets", "get", "receives", "receive", "is given", "are given"):
    for _reply in ("a reply", "an answer", "a response", "a reply from the assistant",
                   "a response from the assistant", "an answer from the assistant"):
        _PHRASES[f"{_verb} {_reply}"] = "MODAL WORD=answered"
_add("LATER", "at some point afterwards", "at some point afterward", "at some point after that",
     "at some point later", "some time afterwards", "at a later point")
_add("NEVER", "nobody may", "no one may", "nobody is allowed to", "no one is allowed to",
     "nobody should", "no one should", "nobody can", "no one can", "nobody must",
     "no one must", "nobody shall", "no one shall", "nothing may", "nothing can",
     "nothing should", "nothing must", "nothing shall", "nothing is to be", "nothing gets",
     "nothing is allowed to", "nothing is ever")
_add("AT_END", "at the end", "in the final step", "in the last step", "at the last step",
     "at the final step", "in the final state", "in the last state", "at the very end")
_add("EVENTUALLY", "by the end", "before the end")
_add("AT_LEAST NUM=2 TIMES", "twice", "two times")
_add("AT_LEAST NUM=3 TIMES", "thrice", "three times")
_add("PRECEDED_BY_PREV", "immediately preceded by", "directly preceded by",
     "be immediately preceded by", "be directly preceded by", "right preceded by",
     "preceded immediately by", "preceded directly by", "be preceded immediately by")
# "As soon as P, Q" and "immediately after P, Q": Q at the step after P's.
_add("TRIGGER_NEXT", "as soon as", "immediately once", "immediately when", "right when",
     "the moment", "as soon as ever")
_add("UNLESS", "unless", "except if", "except when", "unless and until")
_add("ONLY_AFTER", "only after having", "only after first", "only ever after")

# Comparison phrases count only when a number or a quoted value follows them ("exceeds 10000",
# not "exceeds the limit").  "verb" comparisons take their field from the phrase before them
# ("the amount exceeds 10000" -> data.amount > 10000); "prep" ones qualify a noun ("a transfer
# above $10,000") and read the field ``data.amount``.
_VERB_CMP = {
    ">": ("exceeds", "exceed", "is greater than", "is more than", "is above", "is over",
          "is higher than", "is larger than", "is bigger than", "goes above", "goes over",
          "rises above", "are greater than", "are more than", "are above", "be greater than",
          "be more than", "be above", "exceeded", "go above", "go over", "rise above",
          "stay above", "stays above",
          "remain above", "remains above", ">"),
    "<": ("is less than", "is lower than", "is below", "is under", "is smaller than",
          "falls below", "drops below", "goes below", "are less than", "are below",
          "be less than", "be below", "drop below", "fall below", "go below", "stay below",
          "stays below", "remain below", "remains below", "stay under", "stays under",
          "keep below", "dip below", "dips below", "dipped below", "sink below",
          "sinks below", "go under", "goes under", "dropped below", "fell below", "<"),
    ">=": ("is at least", "reaches", "is no less than", "is greater than or equal to",
           "be at least", "are at least", ">="),
    "<=": ("is at most", "is no more than", "is less than or equal to", "be at most",
           "are at most", "does not exceed", "doesn't exceed", "<="),
    "==": ("is", "equals", "is equal to", "be", "are", "equal", "==", "="),
    "!=": ("is not", "does not equal", "doesn't equal", "is different from", "isn't",
           "differs from", "!="),
}
_PREP_CMP = {
    ">": ("above", "over", "more than", "greater than", "higher than", "larger than",
          "exceeding", "of more than", "of over", "worth more than", "bigger than",
          "longer than", "for longer than", "for more than", "costing more than",
          "priced above", "priced over", "costing over", "older than", "over the age of"),
    "<": ("below", "under", "less than", "lower than", "smaller than", "of less than",
          "of under", "younger than", "under the age of", "cheaper than", "shorter than"),
    ">=": ("of at least",),
    "<=": ("of at most", "up to"),
}
COMPARISON_PHRASES: dict[str, tuple[str, str]] = {}
for _op, _phrases in _VERB_CMP.items():
    for _p in _phrases:
        COMPARISON_PHRASES[_p] = (_op, "verb")
for _op, _phrases in _PREP_CMP.items():
    for _p in _phrases:
        COMPARISON_PHRASES[_p] = (_op, "prep")

PHRASES = dict(_PHRASES)
LONGEST_PHRASE = max(len(p.split()) for p in list(PHRASES) + list(COMPARISON_PHRASES))

# Articles and possessives: dropped, but the word after one starts a noun phrase (the object a
# later "it" refers to, and where a shared prefix ends in "go to the bedroom or kitchen").
DETERMINERS = frozenset({"the", "a", "an", "this", "that", "these", "those", "its", "their",
                         "your", "my", "our", "his", "her", "some", "such"})
PRONOUNS = frozenset({"it", "them"})
# Nouns for people: "it" does not stand for them.
PERSONS = frozenset({"user", "users", "customer", "customers", "client", "agent", "assistant",
                     "manager", "person", "patient", "player", "admin", "human", "traveller",
                     "traveler", "candidate", "employee", "doctor", "caller", "someone",
                     "pharmacist", "physician", "operator", "reviewer", "owner", "member"})
PREPOSITIONS = frozenset({"to", "into", "in", "at", "from", "on", "onto", "through", "with",
                          "of", "out", "inside", "toward", "towards", "via", "by", "for"})

# Words that change the meaning of a rule in ways this grammar does not model: better to say
# so than to fold them into an atom name.
UNPLACEABLE = frozenset({"although", "though", "since", "sometimes", "usually",
                         "often", "rarely", "seldom", "maybe", "perhaps", "possibly", "probably",
                         "might", "could", "hence", "therefore", "however", "why", "how",
                         "what", "which", "who", "mostly", "frequently", "occasionally",
                         "likely", "unlikely", "otherwise", "else", "instead", "once"})
# Keywords that only make sense right after a number ("4 steps", "3 times"): elsewhere
# "step" or "action" is a content word.
AFTER_NUMBER_ONLY = frozenset({"STEPS", "TIMES"})
# Keywords that only make sense right before a number ("within 4 steps").
BEFORE_NUMBER_ONLY = frozenset({"WITHIN", "WITHIN_NEXT", "MORE_THAN", "FEWER_THAN"})

# Past participles that do not end in -ed: "the report must be sent" names an action.
IRREGULAR_PARTICIPLES = frozenset({
    "done", "taken", "given", "sent", "made", "seen", "written", "shown", "paid", "held", "kept",
    "left", "built", "bought", "sold", "told", "found", "chosen", "drawn", "broken", "spoken",
    "begun", "run", "put", "set", "read", "cut", "hit", "shut", "won", "lost", "brought",
    "thrown", "known", "eaten", "driven", "ridden", "forgotten", "gotten", "got", "met", "sung",
    "struck", "torn", "worn", "sworn", "sent", "spent", "lent", "withdrawn", "undone",
})

# Units after a compared value ("exceed 200 dollars", "above 100 mg", "reaches 100 degrees").
UNITS = frozenset({"dollars", "dollar", "usd", "euros", "euro", "eur", "pounds", "gbp", "mg",
                   "milligrams", "g", "grams", "kg", "ml", "degrees", "degree", "percent", "%",
                   "units", "items", "seconds", "minutes", "hours", "ms", "km", "miles", "ppm",
                   "°c", "°f", "celsius", "fahrenheit", "hz", "khz", "mw", "mwh", "kw", "kwh",
                   "gw", "gwh", "mph", "kph", "gb", "mb", "tb", "kb", "ppb", "bpm", "mmhg",
                   "nights", "replicas", "users", "seats", "tickets"})

# Comparison phrases that also count ("more than 3 login attempts").
COUNT_PHRASES = frozenset({"more than", "fewer than", "less than", "at least", "at most",
                           "no more than", "not more than", "no fewer than", "up to"})

NUMBER_WORDS = {
    "zero": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
    "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13,
    "fourteen": 14, "fifteen": 15, "sixteen": 16, "seventeen": 17, "eighteen": 18,
    "nineteen": 19, "twenty": 20, "thirty": 30, "fifty": 50, "hundred": 100,
}
