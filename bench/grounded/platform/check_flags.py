"""Check every rule of rules.jsonl, and each of its also_plausible formulas, against log.jsonl
with bench.grounded_flags (run from /work/main):

    .venv/bin/python bench/grounded/platform/check_flags.py
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))

from bench.grounded_flags import flagged, read_sessions  # noqa: E402

HERE = Path(__file__).resolve().parent


def main() -> int:
    log = HERE / "log.jsonl"
    sessions = read_sessions(log)
    rules = [json.loads(x) for x in (HERE / "rules.jsonl").read_text().splitlines() if x.strip()]
    formulas = {r["id"]: r["expected"] for r in rules}
    for r in rules:
        for k, alt in enumerate(r.get("also_plausible", [])):
            formulas[f"{r['id']}/alt{k}"] = alt
    found = flagged(formulas, log, sessions)
    bad = 0
    for name, got in found.items():
        want = next(r for r in rules if r["id"] == name.split("/")[0])["flags"]
        if sorted(got) != sorted(want):
            bad += 1
            print(f"{name}: expected {sorted(want)}, formula flags {sorted(got)}")
    print(f"{len(formulas) - bad} of {len(formulas)} formulas (rules and alternatives) "
          "flag as written")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
