"""Hypothesis strategies for MSCs and CPL guards.

Random MSCs are generated as an execution: at each step some lifeline takes a local action, a
choice, sends a message to some lifeline, or receives one of the messages in transit to it (any
of them, so delivery is not FIFO).  The generated order is therefore causally consistent; messages
still in transit at the end stay unmatched.  ``linearisations`` shuffles such an MSC into another
order consistent with causality.
"""

from __future__ import annotations

from functools import lru_cache

from hypothesis import strategies as st

from studio.causal import formula as cf

LIFELINE_POOL = ("A", "B", "C", "D")
GUARD_NAMES = ("g0", "g1", "g2")

# Values a variable may hold: small ints (so comparisons go both ways), a float, strings, bools,
# null; 1 and True are both here on purpose (equal in Python, not in CPL).
VALUES = st.sampled_from([0, 1, 2, 2.5, "p", "q", True, False, None])


@st.composite
def executions(draw, max_events: int = 16, timestamps: bool = False):
    """(lifelines, events): canonical event dicts of one session in a causal order."""
    count = draw(st.sampled_from([1, 2, 2, 3, 3, 4]))
    lifelines = LIFELINE_POOL[:count]
    length = draw(st.one_of(st.integers(0, 4), st.integers(5, max_events),
                            st.integers(5, max_events)))
    in_transit: list[tuple[str, str, str]] = []   # (id, sender, receiver)
    events: list[dict] = []
    clock = {name: 0.0 for name in lifelines}
    sent = 0
    for step in range(length):
        lifeline = draw(st.sampled_from(lifelines))
        waiting = [m for m in in_transit if m[2] == lifeline]
        actions = ["local", "send", "send", "choice"] + (["receive"] * 3 if waiting else [])
        action = draw(st.sampled_from(actions))
        data = {}
        if action != "choice" or draw(st.booleans()):
            for name in ("x", "y"):
                if draw(st.integers(0, 2)) == 0:
                    data[name] = draw(VALUES)
        event = {"session": "s", "step": step, "lifeline": lifeline, "data": data}
        if action == "send":
            receiver = draw(st.sampled_from(lifelines))
            mid = f"m{sent}"
            sent += 1
            in_transit.append((mid, lifeline, receiver))
            event["message"] = {"id": mid, "peer": receiver, "kind": "send"}
        elif action == "receive":
            mid, sender, _ = draw(st.sampled_from(waiting))
            in_transit.remove((mid, sender, lifeline))
            event["message"] = {"id": mid, "peer": sender, "kind": "receive"}
        elif action == "choice":
            data["choice"] = list(GUARD_NAMES)
        if timestamps:
            # Per-lifeline clocks that never go backwards but drift apart, so the timestamp
            # order of the log need not be causal.
            clock[lifeline] += draw(st.sampled_from([0.0, 1.0, 2.5, 7.0]))
            event["timestamp"] = 1_700_000_000 + clock[lifeline]
        events.append(event)
    return lifelines, events


@st.composite
def linearisations(draw, msc):
    """A random linear extension of the MSC's causal order (Kahn's algorithm, random choices)."""
    preds = {e.index: set() for e in msc.events}
    last = {}
    for e in msc.events:
        if e.lifeline in last:
            preds[e.index].add(last[e.lifeline])
        last[e.lifeline] = e.index
        if e.kind == "receive":
            preds[e.index].add(e.partner)
    done: list[int] = []
    remaining = set(preds)
    while remaining:
        ready = sorted(i for i in remaining if preds[i] <= set(done))
        pick = draw(st.sampled_from(ready))
        done.append(pick)
        remaining.remove(pick)
    return done


def terms(lifelines):
    local = st.sampled_from([cf.Var("x"), cf.Var("y")])
    remote = st.builds(cf.Var, st.sampled_from(["x", "y"]), st.sampled_from(lifelines))
    return st.one_of(local, remote)


def atoms(lifelines):
    constant = VALUES.map(cf.Const)
    ops = st.sampled_from(["==", "!=", "<", "<=", ">", ">="])
    return st.one_of(
        st.builds(cf.Compare, terms(lifelines), ops, constant),
        st.builds(cf.Compare, constant, ops, terms(lifelines)),
        st.builds(cf.Compare, terms(lifelines), ops, terms(lifelines)),
        terms(lifelines).map(cf.Truth),
        st.sampled_from([cf.TRUE, cf.FALSE]),
    )


@lru_cache(maxsize=None)  # building a recursive strategy is slow; there are few lifeline sets
def formulas(lifelines: tuple[str, ...], max_leaves: int = 8):
    names = st.sampled_from(lifelines)

    def extend(children):
        return st.one_of(
            children.map(cf.Not),
            children.map(cf.Y),
            st.builds(cf.At, names, children),
            st.builds(cf.Past, children, st.one_of(st.none(), names)),
            st.builds(cf.S, children, children),
            st.builds(lambda a, b: cf.And(a, b), children, children),
            st.builds(lambda a, b: cf.Or(a, b), children, children),
            st.builds(cf.Implies, children, children),
            st.builds(cf.Iff, children, children),
        )

    return st.recursive(atoms(lifelines), extend, max_leaves=max_leaves)


@lru_cache(maxsize=None)
def remote_formulas(lifelines: tuple[str, ...], max_leaves: int = 6):
    """Guards that mostly read other lifelines, nested under Y and S: where the causal and the
    sequential readings part, and where their previous-local copies must not be mixed up."""
    names = st.sampled_from(lifelines)
    remote = st.builds(cf.Compare, st.builds(cf.Var, st.sampled_from(["x", "y"]), names),
                       st.sampled_from(["==", "!=", "<"]), VALUES.map(cf.Const))
    local = st.builds(cf.Compare, st.sampled_from([cf.Var("x"), cf.Var("y")]),
                      st.sampled_from(["==", "!="]), VALUES.map(cf.Const))

    def extend(children):
        return st.one_of(
            st.builds(cf.At, names, children),
            st.builds(cf.S, children, children),
            children.map(cf.Y),
            children.map(cf.Not),
            st.builds(lambda a, b: cf.And(a, b), children, children),
        )

    return st.recursive(st.one_of(remote, remote, local), extend, max_leaves=max_leaves)
