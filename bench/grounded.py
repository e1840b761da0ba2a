"""How often English rules written by others are read right over their own logs.

Run from the repository root::

    .venv/bin/python -m bench.grounded                 # every set under bench/grounded/
    .venv/bin/python -m bench.grounded --show          # also every rule not read right
    .venv/bin/python -m bench.grounded --before        # the reader alone, no evidence weighed
    .venv/bin/python -m bench.grounded --engine llm    # the LLM reader (LLM_* variables)

Each set (``bench/grounded/NAME/``) was written by someone who never saw the reader or the
grounding (brief: ``bench/grounded_writers_brief.md``): ``log.jsonl``, a deployment's log, and
``rules.jsonl``, rules in English with the sessions each must flag (``flags``).  The vocabulary
is the log's own, with its evidence, as an upload of it would record it.

A reading is **right** when it flags exactly the sessions its rule must flag (run with the
audit's monitors over the whole log).  Per rule:

* FIRST RIGHT - the first reading, as offered, is right;
* OFFERED - some reading is right as offered, or becomes right when the author picks one other
  candidate for one phrase (what the page's pickers do);
* CONFIDENTLY WRONG - one reading, every phrase sure (no choice shown), and it is wrong;
* REFUSED - no reading.
With ``--before`` the reader's own answer is scored (no candidates; a single reading is
confident).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from bench.grounded_flags import read_sessions
from studio.grounding.candidates import ground_by_evidence
from studio.grounding.flags import reading_flags
from studio.grounding.sketch import sketched, with_sketch
from studio.logic import vocabulary as vocab
from studio.english import formalise
from studio.labeling import Labeling

HERE = Path(__file__).with_name("grounded")


def log_vocabulary(sessions) -> vocab.Vocabulary:
    """The vocabulary an upload of the log records, evidence included (the same collector)."""
    counts = vocab.event_counts(e for _, events in sessions for e in events)
    return vocab.Vocabulary.from_entries(
        (kind, name, type_, carrier, n, examples)
        for (kind, name, type_, carrier), (n, examples) in counts.items())


@dataclass
class Score:
    total: int = 0
    first_right: int = 0
    offered: int = 0
    confidently_wrong: int = 0
    refused: int = 0
    misses: list = field(default_factory=list)

    def add(self, other: Score) -> None:
        for name in ("total", "first_right", "offered", "confidently_wrong", "refused"):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.misses += other.misses

    def line(self, name: str) -> str:
        def pct(n):
            return f"{n}/{self.total} ({100 * n / max(self.total, 1):.0f}%)"
        return (f"{name:12} first right {pct(self.first_right):16} offered "
                f"{pct(self.offered):16} confidently wrong {pct(self.confidently_wrong):14} "
                f"refused {self.refused}")


def _flag_sets(formulas, sessions) -> list[set[str]]:
    if not formulas:
        return []
    found = reading_flags(formulas, sessions, Labeling([]).label, examples=None)
    return [set(f.flagged_sessions) for f in found]


class _Offline:
    def __init__(self, vocabulary):
        self.vocabulary = vocabulary

    def formalise(self, english: str):
        return formalise(english, vocabulary=self.vocabulary)


def _reader(engine: str, vocabulary):
    """The offline grammar, or the LLM formaliser on the endpoint the ``LLM_*`` variables name
    (shown the log's vocabulary with its evidence; its answers merged over samples)."""
    if engine == "llm":
        from studio.english.llm import LLMFormaliser

        return LLMFormaliser(atoms=vocabulary.atoms, vocabulary=vocabulary)
    return _Offline(vocabulary)


def score_set(folder: Path, before: bool = False, engine: str = "offline") -> Score:
    sessions = read_sessions(folder / "log.jsonl")
    vocabulary = log_vocabulary(sessions)
    plain = vocab.Vocabulary(vocabulary.declared, vocabulary.builtin, vocabulary.labelled,
                             vocabulary.paths)
    rules = [json.loads(line) for line in (folder / "rules.jsonl").read_text().splitlines()
             if line.strip()]
    score = Score()
    for rule in rules:
        score.total += 1
        expected = set(rule.get("flags") or ())
        result = _reader(engine, plain if before else vocabulary).formalise(rule["english"])
        if not before:
            result = with_sketch(result, rule["english"], vocabulary)
        readings = [r.formula for r in result.readings] or (
            [result.formula] if result.formula is not None else [])
        if not readings:
            score.refused += 1
            score.misses.append((rule["id"], rule["english"], "refused", result.message))
            continue
        if before:
            offered = readings
            sure = len(readings) == 1
            alternatives: list = []
        else:
            grounded = ground_by_evidence(readings, result.mapping, vocabulary)
            offered = list(grounded.readings)
            sure = len(offered) == 1 and grounded.sure and not sketched(result)
            alternatives = []
            for phrase in grounded.phrases:
                for candidate in phrase.candidates[1:]:
                    again = ground_by_evidence(readings, result.mapping, vocabulary,
                                               {phrase.phrase: candidate.atom})
                    alternatives += [f for f in again.readings if f not in offered]
        flags = _flag_sets(offered + alternatives, sessions)
        first = flags[0] == expected
        anywhere = any(f == expected for f in flags)
        score.first_right += first
        score.offered += anywhere
        if not first and sure:
            score.confidently_wrong += 1
        if not first:
            score.misses.append((rule["id"], rule["english"],
                                 "offered" if anywhere else "wrong",
                                 f"expected {rule['expected']} flags {sorted(expected)[:6]}; "
                                 f"first {offered[0].text} flags {sorted(flags[0])[:6]}"
                                 + ("" if sure else " (choices shown)")))
    return score


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--set", action="append", help="a set folder (default: all)")
    parser.add_argument("--show", action="store_true")
    parser.add_argument("--before", action="store_true")
    parser.add_argument("--engine", default="offline", choices=("offline", "llm"))
    args = parser.parse_args(argv)
    folders = [Path(s) for s in args.set] if args.set else sorted(
        p for p in HERE.iterdir() if (p / "rules.jsonl").exists())
    total = Score()
    started = time.perf_counter()
    for folder in folders:
        score = score_set(folder, args.before, args.engine)
        print(score.line(folder.name))
        total.add(score)
        if args.show:
            for miss in score.misses:
                print("   ", " | ".join(str(x) for x in miss))
    print(total.line("all"))
    print(f"({time.perf_counter() - started:.1f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
