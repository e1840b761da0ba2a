"""Which sessions of a log a formula flags: the measure of the held-out sets with logs.

A reading is right when it flags exactly the sessions its rule must flag.  A session is flagged
when the rule's verdict in it is *violated* (``studio.monitor.verdicts.session_verdict``: at least
one violation counted), read with the audit's own monitors on the log's events labelled as an
upload's are (built-in atoms ``tool_call:NAME`` and ``role:R``, and the labels the events carry),
each rule with its default counting (``studio.grounding.flags.reading_flags``).

Writers of the sets check their answers with it::

    .venv/bin/python -m bench.grounded_flags LOG.jsonl 'G !(tool_call:x & output.args.n > 5)'
    .venv/bin/python -m bench.grounded_flags LOG.jsonl --set RULES.jsonl   # every rule's flags
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from studio.grounding.flags import reading_flags
from studio.labeling import Labeling
from studio.logic.events import monitor_event
from studio.logic.parser import parse
from studio.traces.formats.base import event_from_object


def read_sessions(log: str | Path) -> list[tuple[str, list[dict]]]:
    """The log's sessions in order of first appearance, each with its events by step, as an
    upload stores them (free top-level fields under ``data``) and the monitors read them."""
    sessions: dict[str, list[dict]] = {}
    for number, line in enumerate(Path(log).read_text().splitlines(), start=1):
        if not line.strip():
            continue
        try:
            event = event_from_object(json.loads(line), number)
        except ValueError as exc:
            raise ValueError(f"{log}:{number}: not JSON ({exc})") from None
        if isinstance(event, str):
            raise ValueError(f"{log}:{number}: {event}")
        sessions.setdefault(event["session"], []).append(event)
    out = []
    for name, events in sessions.items():
        events.sort(key=lambda e: e["step"] if e.get("step") is not None else e["line"])
        out.append((name, [monitor_event(name, k, e.get("lifeline") or "", e.get("input"),
                                         e.get("output"), e.get("data"), e.get("labels"))
                           for k, e in enumerate(events)]))
    return out


def flagged(formulas: dict[str, str], log: str | Path,
            sessions: list | None = None) -> dict[str, dict[str, int]]:
    """Per rule name: the flagged sessions, each with the step its first violation was found."""
    sessions = read_sessions(log) if sessions is None else sessions
    names = list(formulas)
    found = reading_flags([parse(formulas[n]) for n in names], sessions, Labeling([]).label,
                          examples=None)
    return {name: dict(flags.examples_all) for name, flags in zip(names, found)}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("log")
    parser.add_argument("formula", nargs="?")
    parser.add_argument("--set", help="a rules file: JSON Lines with id, expected, flags")
    args = parser.parse_args(argv)
    if args.set:
        rules = [json.loads(line) for line in Path(args.set).read_text().splitlines()
                 if line.strip()]
        found = flagged({r["id"]: r["expected"] for r in rules}, args.log)
        bad = 0
        for r in rules:
            got = sorted(found[r["id"]])
            if got != sorted(r.get("flags", [])):
                bad += 1
                print(f"{r['id']}: expected flags {sorted(r.get('flags', []))}, "
                      f"the formula flags {got}")
        print(f"{len(rules) - bad} of {len(rules)} rules: flags as written")
        return 1 if bad else 0
    found = flagged({"rule": args.formula}, args.log)["rule"]
    print(json.dumps(found, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
