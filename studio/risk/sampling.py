"""The sampling predictor (paper 000, TRAC_P+I, Algorithm 3): the agent samples n candidate next
steps, each optionally extended by a sampled continuation; the risk of a rule is the share of
those samples whose extension violates it within the horizon.

Each sample is run on its own copy of the session's monitors (restored from their saved state),
so samples never see one another.  Pure Python: events arrive already labelled, or with a
``label`` function that turns a raw event (and the one before it) into a monitor event.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from studio.monitor import VIOLATED, RuleSet, SessionMonitor

Label = Callable[[Mapping, Mapping | None], Mapping]


@dataclass
class SampledRisk:
    """Per rule, the share of samples that violate it within the horizon, and per sample the
    first step (0: the candidate itself) at which each violated rule was violated."""

    risk: dict[str, float]
    samples: int
    first_violation: list[dict[str, int]]

    def to_json(self) -> dict:
        return {"risk": self.risk, "samples": self.samples,
                "first_violation": self.first_violation}


def violated_rules(changes: Sequence[Mapping]) -> set[str]:
    """The rules a monitor step reported violated: TRAC's verdict turning violated, or a
    violation (instance) found."""
    return {c["rule"] for c in changes if c.get("verdict") == VIOLATED or "violation" in c}


def sample_risk(ruleset: RuleSet, state: dict | None, samples: Sequence[Sequence[Mapping]],
                horizon: int, *, previous: Mapping | None = None, label: Label | None = None,
                monitor_class: type[SessionMonitor] = SessionMonitor,
                monitor: SessionMonitor | None = None) -> SampledRisk:
    """``state``: the session's monitors as ``SessionMonitor.to_json`` saved them (None: the
    session has no step yet); ``samples``: each a candidate followed by its continuation;
    ``horizon``: how many steps of each sample count (the candidate is the first);
    ``previous``: the session's last event (for labelers that compare with it); ``monitor``:
    the session's monitors already restored (then ``state`` is not read): each sample runs on
    a fork of them, which is not advanced."""
    if horizon < 1:
        raise ValueError("horizon: at least one step")
    names = [rule.name for rule in ruleset.rules]
    hits = dict.fromkeys(names, 0)
    firsts: list[dict[str, int]] = []
    if monitor is None:
        monitor = (monitor_class.from_json(ruleset, state, witnesses=False)
                   if state is not None else monitor_class(ruleset, witnesses=False))
    base = monitor
    for sample in samples:
        monitor = base.fork()
        first: dict[str, int] = {}
        before = previous
        for offset, raw in enumerate(list(sample)[:horizon]):
            event = label(raw, before) if label is not None else raw
            before = raw
            for rule in violated_rules(monitor.feed(event)):
                first.setdefault(rule, offset)
            if len(first) == len(names):
                break
        for rule in first:
            hits[rule] += 1
        firsts.append(first)
    count = len(samples)
    risk = {name: (hits[name] / count if count else 0.0) for name in names}
    return SampledRisk(risk, count, firsts)
