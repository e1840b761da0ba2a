"""The interface every English-to-LTL engine answers through (offline grammar, LLM, ...)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from studio.logic.formula import Formula


@dataclass(frozen=True)
class Reading:
    """One plausible meaning of an English rule: its formula, the formula read back in English,
    and a shortest trace on which it and another reading (``against``, an index into the
    readings) get different verdicts (empty when it is the only reading)."""

    formula: Formula
    text: str
    english: str
    why: str = ""                       # what this reading takes the English to mean
    trace: tuple = ()                   # label sets, one per step
    against: int | None = None

    def as_dict(self) -> dict:
        return {"formula": self.text, "english": self.english, "why": self.why,
                "trace": [sorted(step) for step in self.trace], "against": self.against}


@dataclass(frozen=True)
class Formalisation:
    """One engine's reading of an English rule.

    ``formula`` is None when the engine could not read the rule; then ``unplaced`` lists the words
    it could not place with their character offsets in the English text, and ``message`` says why.
    ``text`` is the formula's printed form (parseable by ``studio.logic.parser.parse``), or "".
    """

    formula: Formula | None
    text: str
    atoms: tuple[str, ...]
    unplaced: tuple[tuple[str, int], ...] = ()
    message: str = ""
    engine: str = "offline"
    # Every plausible reading, the first being ``formula`` (empty when there is none); the
    # mapping of phrases to vocabulary atoms (``grounding.Grounding``); a proposed rule name.
    readings: tuple[Reading, ...] = ()
    mapping: tuple = ()
    name: str = ""

    @property
    def ok(self) -> bool:
        return self.formula is not None


@runtime_checkable
class Formaliser(Protocol):
    """Anything that turns one English rule into a Formalisation; never raises for bad English."""

    name: str

    def formalise(self, english: str) -> Formalisation: ...
