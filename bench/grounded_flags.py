"""Which sessions of a log a formula flags: the measure of the held-out sets with logs.

A reading is right when it flags exactly the sessions its rule must flag.  A session is flagged
when the rule's verdict in it is *violated* (``studio.monitor.verdicts.session_verdict``: at least
one violation counted), read with the audit's own monitors (``studio.monitor.audit.Audit``) on
the log as uploaded, each rule with its default counting.

Writers of the sets check their answers with it::

    .venv/bin/python -m bench.grounded_flags LOG.jsonl 'G !(tool_call:x & output.args.n > 5)'
    .venv/bin/python -m bench.grounded_flags LOG.jsonl --set RULES.jsonl   # every rule's flags
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from studio.monitor.audit import Audit


def flagged(formulas: dict[str, str], log: str | Path) -> dict[str, dict[str, int]]:
    """Per rule name: the flagged sessions, each with the step its first violation was found."""
    audit = Audit([(name, text) for name, text in formulas.items()])
    audit.add_file(log)
    if audit.errors:
        raise ValueError("; ".join(str(e) for e in audit.errors[:5]))
    out: dict[str, dict[str, int]] = {name: {} for name in formulas}
    for session in audit.report()["sessions"]:
        for rule in session["rules"]:
            if rule["session_verdict"] == "violated":
                first = min((v["detected"] for v in rule["violations"]), default=-1)
                out[rule["rule"]][session["session"]] = first
    return out


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
