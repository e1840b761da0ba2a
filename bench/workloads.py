"""Seeded workloads for the benchmarks: label traces, rule sets, events and JSONL logs.

Everything here is built before any timer starts.  Label sets are interned: equal label sets are
one frozenset object, as ``RuleSet.label_set`` makes them in production.
"""

from __future__ import annotations

import json
import os
import random
from pathlib import Path

# ---------------------------------------------------------------------------------------------
# Item 1 and 5: G(p -> F q) over the four subsets of {p, q}

P_EMPTY, P_P, P_Q, P_PQ = (frozenset(), frozenset({"p"}), frozenset({"q"}),
                           frozenset({"p", "q"}))


def pq_trace(n: int, seed: int = 1, p: float = 0.3, q: float = 0.3) -> list[frozenset]:
    """``n`` steps drawn independently: p with probability ``p``, q with probability ``q``."""
    rng = random.Random(seed)
    subsets = [P_EMPTY, P_P, P_Q, P_PQ]
    weights = [(1 - p) * (1 - q), p * (1 - q), (1 - p) * q, p * q]
    return rng.choices(subsets, weights=weights, k=n)


# ---------------------------------------------------------------------------------------------
# Item 2: G(grant -> O request), and reelay's spelling of it

G_EMPTY, G_GRANT, G_REQUEST, G_BOTH = (frozenset(), frozenset({"grant"}),
                                       frozenset({"request"}), frozenset({"grant", "request"}))

# reelay's Rye syntax: atoms are {name}; `historically{ ... -> ... }` is a syntax error
# (reelay prints "syntax error" and returns a monitor rather than raising), parentheses work.
REELAY_HISTORICALLY = "historically({grant} -> once {request})"   # = our TRAC verdict per step
REELAY_INSTANT = "{grant} -> once {request}"                       # = no obligation fails now


def grant_trace(n: int, seed: int = 2, p: float = 0.3, q: float = 0.3,
                violations: bool = False) -> list[frozenset]:
    """Steps over {grant, request}.  Unless ``violations``, no grant comes before the first
    request, so ``G(grant -> O request)`` is never decided and every step is monitored."""
    rng = random.Random(seed)
    subsets = [G_EMPTY, G_GRANT, G_REQUEST, G_BOTH]
    weights = [(1 - p) * (1 - q), p * (1 - q), (1 - p) * q, p * q]
    steps = rng.choices(subsets, weights=weights, k=n)
    if not violations:
        for i, s in enumerate(steps):
            if "request" in s:
                break
            steps[i] = G_EMPTY
    return steps


def reelay_inputs(steps: list[frozenset]) -> list[dict]:
    return [{"grant": "grant" in s, "request": "request" in s} for s in steps]


# ---------------------------------------------------------------------------------------------
# Items 3, 5, 6: a realistic mix of 20 rules over agent events

RULES_20 = [
    ("no_delete", "G !delete"),
    ("request_granted", "G(request -> F grant)"),
    ("error_retry", "G(error -> X retry)"),
    ("consent_first", "!tool_call W consent"),
    ("logs_out", "F logout"),
    ("escalation_acked", "G(escalate -> F[0,3] ack)"),
    ("grant_requested", "G(grant -> O request)"),
    ("big_amount_approved", "G(data.amount > 1000 -> F approved)"),
    ("refund_approved_before", "G(refund -> O approved)"),
    ("pii_consent", "G(pii_access -> O consent)"),
    ("status_error_retry", 'G(data.status == "error" -> X retry)'),
    ("login_logout", "G(login -> F logout)"),
    ("delete_backup", "G(delete -> O backup)"),
    ("high_risk_escalated", "G(data.risk >= 0.9 -> F[0,5] escalate)"),
    ("refund_notified", "G(refund -> F notify)"),
    ("eu_pii_consent", 'G(pii_access & data.region == "eu" -> O consent)'),
    ("no_refund_before_approval", "!refund W approved"),
    ("amount_increase_approved", "G(data.amount > prev(data.amount) -> F approved)"),
    ("heartbeat", "G F heartbeat"),
    ("error_handled", "G(error -> F[0,3] (retry | escalate))"),
]

# Rules that read labels only (no data atoms): the ones SessionMonitor.feed_labels can run.
RULES_LABELS_ONLY = [(n, t) for n, t in RULES_20 if "data." not in t]

# Per-step probability of each label (independent); about 1.1 labels per event.
EVENT_LABELS = {
    "tool_call": .30, "request": .10, "grant": .08, "approved": .05, "consent": .02,
    "error": .03, "retry": .10, "escalate": .02, "ack": .10, "refund": .01, "notify": .05,
    "login": .01, "logout": .01, "delete": .001, "backup": .01, "pii_access": .02,
    "heartbeat": .20,
}


def agent_events(n: int, seed: int = 3, label_probs: dict[str, float] | None = None) -> list[dict]:
    """Events ``{"labels": [...], "data": {"amount", "status", "risk", "region"}}``:
    amounts are log-normal (about 12% above 1000), 3% of statuses are "error"."""
    rng = random.Random(seed)
    items = list((label_probs or EVENT_LABELS).items())
    out = []
    rand = rng.random
    for _ in range(n):
        out.append({
            "labels": [a for a, p in items if rand() < p],
            "data": {"amount": int(rng.lognormvariate(5.5, 1.2)),
                     "status": "error" if rand() < .03 else "ok",
                     "risk": round(rand(), 3),
                     "region": "eu" if rand() < .5 else "us"},
        })
    return out


# ---------------------------------------------------------------------------------------------
# Item 4: a JSONL log and a rules file for `manage.py audit`

AUDIT_RULES = [
    ("request_granted", "G(request -> F grant)"),
    ("grant_requested", "G(grant -> O request)"),
    ("big_amount_approved", "G(data.amount > 1000 -> F approved)"),
    ("error_retry", "G(error -> X retry)"),
    ("escalation_acked", "G(escalate -> F[0,3] ack)"),
]

# About 2.2 labels a line.
LOG_LABELS = {
    "tool_call": .50, "heartbeat": .40, "retry": .30, "ack": .30, "request": .15,
    "grant": .15, "approved": .15, "notify": .10, "error": .03, "escalate": .05,
    "consent": .02, "logout": .01,
}


def write_audit_inputs(directory: str | os.PathLike, sessions: int, steps: int,
                       seed: int = 4) -> tuple[Path, Path]:
    """A log of ``sessions * steps`` lines, sessions interleaved step by step (every line
    belongs to a different session than the one before), and a rules file.  Files are reused
    when they already exist with the same parameters."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    rules = directory / "bench_rules.txt"
    rules.write_text("".join(f"{name}: {text}\n" for name, text in AUDIT_RULES), encoding="utf-8")
    log = directory / f"bench_log_{sessions}x{steps}_s{seed}.jsonl"
    if log.exists() and log.stat().st_size > 0:
        return log, rules
    rng = random.Random(seed)
    rand = rng.random
    items = list(LOG_LABELS.items())
    names = [f"s{i:05d}" for i in range(sessions)]
    dumps = json.dumps
    partial = log.with_suffix(".partial")
    with open(partial, "w", encoding="utf-8") as out:
        for step in range(steps):
            lines = []
            for name in names:
                lines.append(dumps({
                    "session": name, "step": step,
                    "labels": [a for a, p in items if rand() < p],
                    "data": {"amount": int(rng.lognormvariate(5.5, 1.2)),
                             "status": "error" if rand() < .03 else "ok"},
                }))
            out.write("\n".join(lines))
            out.write("\n")
    partial.rename(log)
    return log, rules
