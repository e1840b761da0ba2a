"""The guard's policy and decision (paper 000's TRAC_P+I interventions, paper 004's thresholds).

A guard request carries the event an agent proposes to take next.  Predictors estimate, per rule,
the risk that taking it leads to a violation within the policy's horizon: the exact one-step
check (the candidate itself violates: risk 1, else 0), sampling (the share of sampled candidates
whose extension violates), and the learned DTMC (the probability of reaching a violation).
``decide`` turns those risks and the policy into one decision - ``allow`` or an intervention - with
a one-sentence reason.  Pure Python: the service reads the session and the model, this decides.

Which risk decides: the exact check is certain, so a candidate that violates now is never
allowed; otherwise the larger of the sampled and the learned risk (the cautious reading when both
exist) - but a learned risk acts only when its PAC bound backs it (or the policy opts in with
``act_on_unbacked``).  An unbacked estimate is still reported (its risk, ``backed`` false, and the
reason says it was not acted on), so with the default policy a step the exact check accepts is
allowed unless the samples or a backed estimate reach the threshold: the guard is never stricter
than the exact check on a guess.  A risk nobody could estimate (the model never saw the state and
no samples came) is not treated as safe or unsafe: the answer says so and the decision rests on
the predictors that did answer.

After ``max_resamples`` the default fallback (``best_accepted``) takes the least risky candidate
the exact check accepts, the proposed one or one of the request's others.  When none is accepted,
the rules every candidate breaks are looked at once more: a rule that ending the session here
would break as well (an obligation whose time has run out, ``violated_if_ended``) is broken
whatever the guard does, so stopping would keep nothing of it; such a rule does not hold the step
back, and the least risky candidate that breaks no other rule goes ahead with its violation
recorded and said.  Otherwise the step is refused with ``stop``.  So under the default policy a
``stop`` only ever answers a step that violates now, and only when stopping keeps the rule.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from studio.monitor import VIOLATED

ALLOW = "allow"
RESAMPLE = "resample"
BEST_OF_N = "best_of_n"
INJECT = "inject"
SWITCH = "switch"
ASK_HUMAN = "ask_human"
STOP = "stop"
# Fallback only: the least risky candidate the exact check accepts (allow or best_of_n).
BEST_ACCEPTED = "best_accepted"

# Mildest first: when rules at risk ask for different interventions, the strictest one wins.
INTERVENTIONS = (RESAMPLE, BEST_OF_N, INJECT, SWITCH, ASK_HUMAN, STOP)
DECISIONS = (ALLOW, *INTERVENTIONS)
# What may follow max_resamples, mildest first (``combine`` keeps the strictest).
FALLBACKS = (ALLOW, BEST_ACCEPTED, SWITCH, ASK_HUMAN, STOP)
# What a pending human decision becomes when nobody answers in time.
HUMAN_DEFAULTS = (ALLOW, STOP)

EXACT = "exact"
SAMPLING = "sampling"
DTMC = "dtmc"
PREDICTORS = (EXACT, SAMPLING, DTMC)

MAX_HORIZON = 100
MAX_RESAMPLES = 20
MAX_HUMAN_WAIT_SECONDS = 24 * 3600


class PolicyError(ValueError):
    """A policy that does not fit; ``field`` names the offending field (dotted)."""

    def __init__(self, message: str, field: str):
        super().__init__(message)
        self.message = message
        self.field = field


@dataclass(frozen=True)
class Policy:
    """How a rule set is guarded.  ``interventions`` maps a rule name to what to do when that
    rule is at risk (``default_intervention`` for the others); after ``max_resamples`` resamples
    or injections of one step, ``fallback`` is used instead.

    Stored policies are read with ``from_json``: a field missing from the stored JSON takes
    today's default (so a policy saved before ``act_on_unbacked`` existed does not act on
    unbacked estimates, and one saved before ``guarded_risk`` existed reads the guarded risk);
    a field the JSON states keeps its value (an explicit ``"guarded_risk": false`` stays
    false)."""

    threshold: float = 0.5
    horizon: int = 5
    interventions: Mapping[str, str] = field(default_factory=dict)
    default_intervention: str = RESAMPLE
    max_resamples: int = 3
    fallback: str = BEST_ACCEPTED
    safer_model: str = ""
    human_timeout_seconds: int = 300
    human_default: str = STOP
    # The learned risk of the agent behind this guard, whose violating steps are refused
    # (``RiskModel.guarded_chain``; the guard API always runs the exact check in front of the
    # model), or (False: paper 004's reading) of the agent as it was learned.
    guarded_risk: bool = True
    # Act on a learned risk whose PAC bound does not back it (False: report it, do not act).
    act_on_unbacked: bool = False

    def intervention_for(self, rule: str) -> str:
        return self.interventions.get(rule, self.default_intervention)

    def to_json(self) -> dict:
        return {"threshold": self.threshold, "horizon": self.horizon,
                "interventions": dict(self.interventions),
                "default_intervention": self.default_intervention,
                "max_resamples": self.max_resamples, "fallback": self.fallback,
                "safer_model": self.safer_model,
                "human_timeout_seconds": self.human_timeout_seconds,
                "human_default": self.human_default, "guarded_risk": self.guarded_risk,
                "act_on_unbacked": self.act_on_unbacked}

    @classmethod
    def from_json(cls, data: Any, rules: Iterable[str] | None = None) -> Policy:
        """A policy from its JSON form, every field checked; ``rules``: the rule names the
        interventions may name (None: any).  Missing fields take the defaults."""
        if data is None:
            data = {}
        if not isinstance(data, Mapping):
            raise PolicyError("a guard policy is a JSON object", "policy")
        known = set(cls().to_json())
        extra = sorted(set(data) - known)
        if extra:
            raise PolicyError(f"unknown field {extra[0]!r} (a policy has: "
                              f"{', '.join(sorted(known))})", extra[0])
        default = cls()
        threshold = _number(data.get("threshold", default.threshold), "threshold")
        if not 0.0 <= threshold <= 1.0:
            raise PolicyError(f"threshold must lie between 0 and 1, not {threshold}",
                              "threshold")
        horizon = _whole(data.get("horizon", default.horizon), "horizon", 1, MAX_HORIZON)
        default_intervention = _choice(data.get("default_intervention",
                                                default.default_intervention),
                                       "default_intervention", INTERVENTIONS)
        raw = data.get("interventions", {})
        if not isinstance(raw, Mapping):
            raise PolicyError("interventions maps rule names to interventions",
                              "interventions")
        allowed = None if rules is None else set(rules)
        interventions = {}
        for rule, choice in raw.items():
            where = f"interventions.{rule}"
            if allowed is not None and rule not in allowed:
                raise PolicyError(f"unknown rule {rule!r} (the rule set has: "
                                  f"{', '.join(sorted(allowed)) or 'no rules'})", where)
            interventions[rule] = _choice(choice, where, INTERVENTIONS)
        max_resamples = _whole(data.get("max_resamples", default.max_resamples),
                               "max_resamples", 0, MAX_RESAMPLES)
        fallback = _choice(data.get("fallback", default.fallback), "fallback", FALLBACKS)
        safer_model = data.get("safer_model", default.safer_model)
        if not isinstance(safer_model, str) or len(safer_model) > 200:
            raise PolicyError("safer_model is the name of a model, at most 200 characters",
                              "safer_model")
        uses_switch = SWITCH in {default_intervention, fallback, *interventions.values()}
        if uses_switch and not safer_model.strip():
            raise PolicyError("the policy switches models: name the safer model",
                              "safer_model")
        timeout = _whole(data.get("human_timeout_seconds", default.human_timeout_seconds),
                         "human_timeout_seconds", 1, MAX_HUMAN_WAIT_SECONDS)
        human_default = _choice(data.get("human_default", default.human_default),
                                "human_default", HUMAN_DEFAULTS)
        guarded_risk = _flag(data.get("guarded_risk", default.guarded_risk), "guarded_risk")
        act_on_unbacked = _flag(data.get("act_on_unbacked", default.act_on_unbacked),
                                "act_on_unbacked")
        return cls(threshold, horizon, interventions, default_intervention, max_resamples,
                   fallback, safer_model.strip(), timeout, human_default, guarded_risk,
                   act_on_unbacked)


def _flag(value: Any, name: str) -> bool:
    if not isinstance(value, bool):
        raise PolicyError(f"{name} must be true or false", name)
    return value


def _number(value: Any, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != value:
        raise PolicyError(f"{name} must be a number", name)
    return float(value)


def _whole(value: Any, name: str, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise PolicyError(f"{name} must be a whole number", name)
    if not low <= value <= high:
        raise PolicyError(f"{name} must lie between {low} and {high}, not {value}", name)
    return value


def _choice(value: Any, name: str, choices: Sequence[str]) -> str:
    if value not in choices:
        raise PolicyError(f"{name} must be one of {', '.join(choices)}, not {value!r}", name)
    return value


# ---------------------------------------------------------------------------------------------
# Risks and decisions

@dataclass
class Assessment:
    """What the predictors say about one candidate: per rule, the exact check (violates now),
    the sampled share and the learned probability (None where that predictor did not answer),
    and whether the learned numbers are PAC-backed."""

    violates_now: dict[str, bool]
    sampled: dict[str, float] | None = None
    learned: dict[str, float | None] | None = None
    learned_backed: bool = False
    samples: int = 0

    @property
    def accepted(self) -> bool:
        """The exact check accepts it: it violates no rule now."""
        return not any(self.violates_now.values())

    def risk(self, rule: str, act_on_unbacked: bool = True) -> tuple[float | None, str]:
        """The risk that decides for ``rule`` and the predictor it came from.  With
        ``act_on_unbacked`` False a learned risk counts only when it is backed (the reading a
        decision acts on; the default reads every estimate, as the answer reports them)."""
        if self.violates_now.get(rule):
            return 1.0, EXACT
        learned = self.learned if act_on_unbacked or self.learned_backed else None
        best: tuple[float | None, str] = (None, EXACT)
        for found, predictor in ((self.sampled, SAMPLING), (learned, DTMC)):
            value = found.get(rule) if found is not None else None
            if value is not None and (best[0] is None or value > best[0]):
                best = (float(value), predictor)
        if best[0] is None and self.sampled is None and learned is None:
            return 0.0, EXACT   # only the exact check ran (or acts), and it found nothing
        return best

    def risks(self, act_on_unbacked: bool = True) -> dict[str, float | None]:
        return {rule: self.risk(rule, act_on_unbacked)[0] for rule in self.violates_now}

    def worst(self, act_on_unbacked: bool = True) -> float:
        values = [v for v in self.risks(act_on_unbacked).values() if v is not None]
        return max(values, default=0.0)


@dataclass
class Decision:
    decision: str
    reason: str
    risk: dict[str, float | None]
    risk_any: float | None
    predictor: str
    backed: bool
    at_risk: list[dict]              # [{rule, risk, intervention, requires}]
    horizon: int
    threshold: float
    candidate: int | None = None     # best_of_n: index into the request's other candidates
    inject: str | None = None
    model: str | None = None
    # Learned risks at or over the threshold that were not acted on (not backed): [{rule, risk}]
    unbacked: list[dict] = field(default_factory=list)

    def to_json(self) -> dict:
        return {"decision": self.decision, "reason": self.reason, "risk": self.risk,
                "risk_any": self.risk_any, "predictor": self.predictor, "backed": self.backed,
                "rules_at_risk": self.at_risk, "horizon": self.horizon,
                "threshold": self.threshold, "candidate": self.candidate,
                "inject": self.inject, "model": self.model, "unbacked": self.unbacked}


def _percent(value: float | None) -> str:
    return "unknown" if value is None else f"{value:.0%}"


def inject_text(at_risk: Sequence[Mapping]) -> str:
    """What to add to the agent's prompt: each rule at risk and what it still requires."""
    lines = ["Before your next step, keep these rules:"]
    for entry in at_risk:
        requires = entry.get("requires") or ""
        lines.append(f"- {entry['rule']}: {requires}" if requires else f"- {entry['rule']}")
    return "\n".join(lines)


def _reaches(value: float | None, threshold: float) -> bool:
    return value is not None and value >= threshold and not (threshold == 0.0 and value == 0.0)


def violated_if_ended(monitor) -> frozenset[str]:
    """The rules that ending the session now would violate (their LTLf verdict at the end):
    obligations still open, read from a session monitor (``SessionMonitor`` or its fast form)
    before the proposed step."""
    return frozenset(t.machines.rule.name for t in monitor.trac if t.final() == VIOLATED)


def decide(policy: Policy, proposed: Assessment, others: Sequence[Assessment] = (),
           attempt: int = 0,
           requires: Mapping[str, str] | Callable[[str], str] | None = None,
           ended_violates: Iterable[str] = ()) -> Decision:
    """The decision for the proposed candidate.  ``others``: the request's other candidates
    (for best_of_n and the best_accepted fallback), ``attempt``: how many times this step was
    already resampled or re-prompted, ``requires``: what a rule still requires in English (for
    inject and the reasons), a mapping or a function asked only for the rules at risk;
    ``ended_violates``: the rules that ending the session before this step would violate
    (``violated_if_ended``), for the best_accepted fallback."""
    if requires is None:
        requires = {}
    if isinstance(requires, Mapping):
        mapping = requires
        requires = lambda rule: mapping.get(rule, "")  # noqa: E731
    threshold = policy.threshold
    act = policy.act_on_unbacked
    rules = list(proposed.violates_now)
    risks = proposed.risks()              # reported: every estimate, backed or not
    acting = proposed.risks(act)          # acted on
    decided_by = {rule: proposed.risk(rule, act)[1] for rule in rules}
    at_risk = [{"rule": rule, "risk": acting[rule], "intervention": policy.intervention_for(rule),
                "requires": requires(rule)}
               for rule in rules if _reaches(acting[rule], threshold)]
    unbacked = [{"rule": rule, "risk": risks[rule]} for rule in rules
                if _reaches(risks[rule], threshold) and not _reaches(acting[rule], threshold)]
    known = [v for v in risks.values() if v is not None]
    risk_any = max(known) if known else None
    if at_risk:
        top = max(at_risk, key=lambda e: e["risk"])
        predictor = decided_by[top["rule"]]
    else:
        # What set the reported numbers: the learned model when it answered (backed or not).
        predictor = max((proposed.risk(r)[1] for r in rules if risks[r] is not None),
                        key=PREDICTORS.index, default=EXACT)
    # A learned number is backed when the model says so; exact and sampled numbers need no PAC
    # bound (the first is certain, the second is the agent's own samples).
    backed = proposed.learned_backed if predictor == DTMC else True

    def make(kind: str, reason: str, **extra) -> Decision:
        return Decision(kind, reason, risks, risk_any, predictor, backed, at_risk,
                        policy.horizon, threshold, unbacked=unbacked, **extra)

    guessed = ", ".join(f"{e['rule']} {_percent(e['risk'])}" for e in unbacked)
    if not at_risk:
        unknown = [r for r in rules if risks[r] is None]
        acted_any = max((v for v in acting.values() if v is not None), default=None)
        reason = (f"no rule's risk reaches the threshold of {threshold:.0%} within "
                  f"{policy.horizon} steps (highest: {_percent(acted_any)})")
        if unbacked:
            reason = (f"this step breaks no rule now; the learned model estimated {guessed} "
                      "but has not seen enough of this situation to act on it, so the step "
                      "goes ahead (no risk it can act on reaches the threshold of "
                      f"{threshold:.0%})")
        if unknown:
            reason += f"; not estimated for {', '.join(unknown)}"
        return make(ALLOW, reason)

    names = ", ".join(f"{e['rule']} ({_percent(e['risk'])})" for e in at_risk)
    now = [e["rule"] for e in at_risk if proposed.violates_now.get(e["rule"])]
    if now:
        why = f"this step would violate {', '.join(now)}"
    else:
        why = f"the risk of a violation within {policy.horizon} steps reaches the threshold " \
              f"of {threshold:.0%} for {names}"
    if unbacked:
        why += (f" (the learned model also estimated {guessed} but has not seen enough of this "
                "situation to act on it)")
    choice = max((e["intervention"] for e in at_risk), key=INTERVENTIONS.index)
    return _apply(choice, policy, proposed, others, attempt, at_risk, why, make,
                  frozenset(ended_violates))


def _ranking(candidate: Assessment, act: bool, leave_out: frozenset[str] = frozenset()
             ) -> tuple[float, int]:
    """How risky a candidate the exact check accepts is, for the fallback: its worst acted-on
    risk, then how many rules nobody could estimate for it (``leave_out``: rules not counted)."""
    acting = {rule: value for rule, value in candidate.risks(act).items()
              if rule not in leave_out}
    return (max((v for v in acting.values() if v is not None), default=0.0),
            sum(v is None for v in acting.values()))


def _broken(candidate: Assessment) -> set[str]:
    return {rule for rule, now in candidate.violates_now.items() if now}


def _words(rules: Iterable[str]) -> str:
    names = sorted(rules)
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def _best_accepted(policy, proposed, others, why, make,
                   ended_violates: frozenset[str] = frozenset()) -> Decision:
    """The least risky candidate the exact check accepts (the proposed one first on a tie).
    When there is none: the least risky candidate whose only violations are of rules that
    every candidate breaks and that stopping would break too (``ended_violates``), since
    stopping keeps none of them; ``stop`` when there is none of those either."""
    act = policy.act_on_unbacked
    pool = [(None, proposed), *enumerate(others)]
    accepted = [(_ranking(a, act), order, index)
                for order, (index, a) in enumerate(pool) if a.accepted]
    count = len(pool)
    if not accepted:
        lost = set(ended_violates)
        for _, candidate in pool:
            lost &= _broken(candidate)
        lost_set = frozenset(lost)
        going = [(_ranking(a, act, lost_set), order, index)
                 for order, (index, a) in enumerate(pool) if lost and _broken(a) <= lost_set]
        if not going:
            return make(STOP, why + f"; none of the {count} candidate(s) keeps every rule now: "
                                    "the session stops here")
        (worst, _), _, index = min(going)
        which = "this step" if index is None else f"candidate {index}"
        rules = _words(lost)
        told = (f"every candidate breaks {rules} now, and ending the session here would break "
                f"{'it' if len(lost) == 1 else 'them'} too (what "
                f"{'it requires' if len(lost) == 1 else 'they require'} can no longer be done "
                f"in time): stopping would keep nothing, so {which}, which breaks no other "
                f"rule (its highest risk for the others: {_percent(worst)}), goes ahead and "
                "the violation is recorded")
        if index is None:
            return make(ALLOW, why + f"; {told}")
        return make(BEST_OF_N, why + f"; {told}", candidate=index)
    (worst, _), _, index = min(accepted)
    which = "this step" if index is None else f"candidate {index}"
    if len(accepted) == 1:
        told = f"{which} breaks no rule now and is the only candidate that does (risk " \
               f"{_percent(worst)})"
    else:
        told = (f"{which} breaks no rule now and has the lowest risk of the {len(accepted)} "
                f"candidates that do ({_percent(worst)})")
    if index is None:
        return make(ALLOW, why + f"; {told}, so it goes ahead")
    return make(BEST_OF_N, why + f"; {told}, so it is taken instead", candidate=index)


def _apply(choice, policy, proposed, others, attempt, at_risk, why, make,
           ended_violates: frozenset[str] = frozenset()) -> Decision:
    threshold = policy.threshold
    act = policy.act_on_unbacked
    if choice in (RESAMPLE, BEST_OF_N, INJECT) and attempt >= policy.max_resamples:
        fallback = policy.fallback
        why += f"; {attempt} resample(s) already tried, the policy's limit"
        if fallback == ALLOW:
            return make(ALLOW, why + ", so the policy lets it through")
        if fallback == BEST_ACCEPTED:
            return _best_accepted(policy, proposed, others, why, make, ended_violates)
        choice = fallback
    if choice == BEST_OF_N:
        safe = [(other.worst(act), i) for i, other in enumerate(others)
                if other.accepted and not _reaches(other.worst(act), threshold)]
        if safe:
            _, index = min(safe)
            return make(BEST_OF_N, why + f"; candidate {index} stays below the threshold",
                        candidate=index)
        why += "; no other candidate stays below the threshold"
        choice = RESAMPLE
    if choice == RESAMPLE:
        return make(RESAMPLE, why + ": sample another step")
    if choice == INJECT:
        return make(INJECT, why + ": retry with the rules added to the prompt",
                    inject=inject_text(at_risk))
    if choice == SWITCH:
        return make(SWITCH, why + f": retry with {policy.safer_model}",
                    model=policy.safer_model)
    if choice == ASK_HUMAN:
        return make(ASK_HUMAN, why + ": a person decides")
    return make(STOP, why + ": the session stops here")


def combine(parts: Sequence[tuple[Policy, Iterable[str]]]) -> Policy:
    """One policy for several live rule sets (each policy with its rules' names): the lowest
    threshold, the longest horizon, per rule the strictest intervention any of its sets asks
    for, the fewest resamples, the strictest fallback (``FALLBACKS``, mildest first) and human
    default, the shortest wait, and acting on unbacked estimates when any set does."""
    if not parts:
        return Policy()
    if len(parts) == 1:
        return parts[0][0]
    interventions: dict[str, str] = {}
    for policy, rules in parts:
        for rule in rules:
            mine = policy.intervention_for(rule)
            theirs = interventions.get(rule)
            if theirs is None or INTERVENTIONS.index(mine) > INTERVENTIONS.index(theirs):
                interventions[rule] = mine
    policies = [p for p, _ in parts]
    return Policy(
        threshold=min(p.threshold for p in policies),
        horizon=max(p.horizon for p in policies),
        interventions=interventions,
        default_intervention=max((p.default_intervention for p in policies),
                                 key=INTERVENTIONS.index),
        max_resamples=min(p.max_resamples for p in policies),
        fallback=max((p.fallback for p in policies), key=FALLBACKS.index),
        safer_model=next((p.safer_model for p in policies if p.safer_model), ""),
        human_timeout_seconds=min(p.human_timeout_seconds for p in policies),
        human_default=STOP if any(p.human_default == STOP for p in policies) else ALLOW,
        # The agent's own risk is the cautious reading: guarded only when every set says so.
        guarded_risk=all(p.guarded_risk for p in policies),
        act_on_unbacked=any(p.act_on_unbacked for p in policies))
