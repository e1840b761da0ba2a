"""How often the offline formaliser reads fresh English rules right: the held-out measure.

Run from the repository root::

    .venv/bin/python -m bench.english            # totals only
    .venv/bin/python -m bench.english --show     # also every rule not read right
    .venv/bin/python -m bench.english --set FILE # another JSON Lines set of the same shape
    .venv/bin/python -m bench.english --engine llm   # the LLM formaliser (LLM_* variables)

The set (``bench/english_heldout.jsonl``) was written by people who never saw the grammar: one
rule a line, ``{"id", "english", "vocabulary": {"atoms": [...], "paths": {path: type}},
"expected": formula, "also_plausible": [formulas], "notes"}``.  It is never used for tuning.

Scoring a rule: it is formalised with its own vocabulary.  A reading is *equivalent* to the
expected formula when ``studio.logic.review.distinguishing_trace`` finds no trace telling them
apart, after renaming: vocabulary atoms and data comparisons must match as they are; atoms outside
the vocabulary (invented ones) may be renamed by any one-to-one map onto the expected formula's
atoms outside the vocabulary (every such map is tried; there are few).

* RIGHT: one reading, equivalent to the expected formula; or several readings, one of which is
  (the author picks it; counted apart as "ambiguous, contains the expected one").
* CONFIDENTLY WRONG: one reading, not equivalent (how many of those match an ``also_plausible``
  formula is reported apart: a defensible reading, still not what the author meant).
* AMBIGUOUS, WITHOUT IT: several readings, none equivalent.
* REFUSED: no reading.

A second, looser figure ("shape right") also renames vocabulary atoms: it tells how much of the
gap is grammar and how much is grounding words in the vocabulary.  A third counts single
readings that agree with the expected formula on every log that can occur (one step is one
event: at most one ``tool_call:`` atom and one ``role:`` atom a step), where "Y at the step of X
or later" and "strictly later" cannot differ when X and Y are two tool calls.  Only the first
figure is the goal's.
"""

from __future__ import annotations

import argparse
import inspect
import itertools
import json
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from studio.logic import formula as fm
from studio.english import formalise
from studio.logic.parser import parse
from studio.logic.review import ReviewLimitError, distinguishing_trace

DEFAULT_SET = Path(__file__).with_name("english_heldout.jsonl")
MAX_LENGTH = 10
MAX_RENAMINGS = 720       # 6 invented atoms: every permutation


@dataclass(frozen=True)
class Vocabulary:
    """The duck type ``formalise(..., vocabulary=)`` accepts: atom names and typed data paths."""

    atoms: frozenset
    paths: dict = field(default_factory=dict)

    @classmethod
    def from_json(cls, data: dict | None) -> Vocabulary:
        data = data or {}
        paths = {}
        for path, kind in (data.get("paths") or {}).items():
            paths[path] = {kind} if isinstance(kind, str) else set(kind)
        return cls(frozenset(data.get("atoms") or ()), paths)


def rename(f: fm.Formula, mapping: dict[str, str]) -> fm.Formula:
    """``f`` with its atoms renamed by ``mapping`` (data comparisons untouched)."""
    if f.op == "atom":
        return fm.Atom(mapping.get(f.name, f.name))
    if not f.args:
        return f
    return fm.rebuild(f, tuple(rename(a, mapping) for a in f.args))


def _atoms(f: fm.Formula) -> set[str]:
    return {g.name for g in f.subformulas() if g.op == "atom"}


def _renamings(mine: list[str], theirs: list[str]):
    """Every one-to-one map of ``mine`` onto ``theirs`` (padded with fresh names when mine has
    more), at most ``MAX_RENAMINGS`` of them."""
    targets = list(theirs) + [f"__unmatched_{k}" for k in range(max(0, len(mine) - len(theirs)))]
    for count, image in enumerate(itertools.permutations(targets, len(mine))):
        if count >= MAX_RENAMINGS:
            return
        yield dict(zip(mine, image))


def one_event_a_step(*formulas: fm.Formula) -> fm.Formula:
    """At every step at most one tool call and at most one role: the logs' model (one step is
    one event), over the built-in atoms the formulas read."""
    names = sorted(set().union(*(_atoms(f) for f in formulas)))
    parts = []
    for prefix in ("tool_call:", "role:"):
        group = [n for n in names if n.startswith(prefix)]
        parts += [fm.Not(fm.And(fm.Atom(a), fm.Atom(b)))
                  for a, b in itertools.combinations(group, 2)]
    return fm.G(fm.And(*parts)) if parts else fm.TRUE


def equivalent_up_to_invented(reading: fm.Formula, expected: fm.Formula,
                              fixed: frozenset, on_logs: bool = False) -> bool | None:
    """Whether some renaming of ``reading``'s atoms outside ``fixed`` makes it equivalent to
    ``expected``; None when the comparison is beyond the review search's limits."""
    mine = sorted(_atoms(reading) - fixed)
    theirs = sorted(_atoms(expected) - fixed)
    beyond = False
    for mapping in _renamings(mine, theirs):
        mine_renamed = rename(reading, mapping)
        a, b = mine_renamed, expected
        if on_logs:
            model = one_event_a_step(mine_renamed, expected)
            a, b = fm.Implies(model, a), fm.Implies(model, b)
        try:
            if distinguishing_trace(a, b, max_length=MAX_LENGTH) is None:
                return True
        except ReviewLimitError:
            beyond = True
    return None if beyond else False


def _readings(answer) -> list[fm.Formula]:
    readings = getattr(answer, "readings", None)
    if readings:
        return [r.formula if hasattr(r, "formula") else r for r in readings]
    return [answer.formula] if answer.formula is not None else []


def _accepts_vocabulary() -> bool:
    return "vocabulary" in inspect.signature(formalise).parameters


def score_row(row: dict, engine=None) -> dict:
    """One rule scored.  ``engine``: None for the offline formaliser, or any object with
    ``formalise(english)`` (the LLM formaliser: ``--engine llm``)."""
    vocabulary = Vocabulary.from_json(row.get("vocabulary"))
    if engine is not None:
        answer = engine(vocabulary).formalise(row["english"])
    elif _accepts_vocabulary():
        answer = formalise(row["english"], vocabulary=vocabulary)
    else:
        answer = formalise(row["english"])
    readings = _readings(answer)
    expected = parse(row["expected"])
    plausible = [parse(p) for p in row.get("also_plausible") or []]
    fixed = frozenset(vocabulary.atoms)
    matches = [equivalent_up_to_invented(r, expected, fixed) for r in readings]
    shape = [equivalent_up_to_invented(r, expected, frozenset()) for r in readings]
    on_logs = [equivalent_up_to_invented(r, expected, fixed, on_logs=True) for r in readings]
    if not readings:
        verdict = "refused"
    elif len(readings) == 1:
        verdict = "right" if matches[0] else "confidently_wrong"
    else:
        verdict = "ambiguous_right" if any(matches) else "ambiguous_wrong"
    defensible = (verdict == "confidently_wrong"
                  and any(equivalent_up_to_invented(readings[0], p, fixed) for p in plausible))
    return {"id": row.get("id"), "english": row["english"], "verdict": verdict,
            "shape_right": any(shape), "defensible": defensible,
            "on_logs_right": bool(on_logs) and len(readings) == 1 and bool(on_logs[0]),
            "beyond_limits": any(m is None for m in matches),
            "readings": [r.text for r in readings], "expected": row["expected"],
            "message": getattr(answer, "message", "")}


def load(path: Path) -> list[dict]:
    rows = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if line.strip():
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError as exc:
                raise SystemExit(f"{path}:{number}: not JSON ({exc.msg}, column {exc.colno})")
    return rows


def _pct(n: int, total: int) -> str:
    return f"{n:3d}  ({n / total:6.1%})" if total else f"{n:3d}"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--set", type=Path, default=DEFAULT_SET)
    parser.add_argument("--show", action="store_true", help="print every rule not read right")
    parser.add_argument("--engine", choices=("offline", "llm"), default="offline",
                        help="llm: the LLM formaliser, on the endpoint the LLM_* environment "
                             "variables name (LLM_BASE_URL, LLM_API_KEY, LLM_MODEL)")
    args = parser.parse_args(argv)
    rows = load(args.set)
    engine = None
    if args.engine == "llm":
        from studio.english.llm import LLMFormaliser

        def engine(vocabulary):
            # the workspace's atoms are named in the prompt, as the rules page does
            return LLMFormaliser(atoms=sorted(vocabulary.atoms))
    started = time.perf_counter()
    results = [score_row(row, engine) for row in rows]
    elapsed = time.perf_counter() - started
    total = len(results)
    count = {k: sum(r["verdict"] == k for r in results)
             for k in ("right", "ambiguous_right", "confidently_wrong", "ambiguous_wrong",
                       "refused")}
    right = count["right"] + count["ambiguous_right"]
    several = [r for r in results if len(r["readings"]) > 1]
    print(f"English set: {args.set}, {args.engine} engine ({total} rules, {elapsed:.1f}s)")
    print(f"  right                          {_pct(right, total)}")
    print(f"    one reading                  {_pct(count['right'], total)}")
    print(f"    several, containing it       {_pct(count['ambiguous_right'], total)}")
    print(f"  confidently wrong              {_pct(count['confidently_wrong'], total)}")
    defensible = sum(r["defensible"] for r in results)
    print(f"    of which an also_plausible   {_pct(defensible, total)}")
    print(f"  several readings, none right   {_pct(count['ambiguous_wrong'], total)}")
    print(f"  refused                        {_pct(count['refused'], total)}")
    shape = sum(r["shape_right"] for r in results)
    print(f"  shape right (any atom renamed) {_pct(shape, total)}")
    on_logs = sum(r["on_logs_right"] for r in results)
    print(f"  one reading, right on possible logs (at most one tool call and one role a step)"
          f" {_pct(on_logs, total)}")
    if several:
        mean = sum(len(r["readings"]) for r in several) / len(several)
        print(f"  rules with several readings: {len(several)}, {mean:.1f} readings on average")
    beyond = sum(r["beyond_limits"] for r in results)
    if beyond:
        print(f"  comparisons beyond the review search's limits (not counted right): {beyond}")
    if args.show:
        for r in results:
            if r["verdict"] in ("right", "ambiguous_right"):
                continue
            print(f"\n[{r['verdict']}] {r['id']}: {r['english']}")
            print(f"  expected {r['expected']}")
            for text in r["readings"]:
                print(f"  got      {text}")
            if not r["readings"]:
                print(f"  refused: {r['message']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
