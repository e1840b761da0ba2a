"""Hypothesis strategies for formulas and traces, shared by the tests of the formal core.

Formulas are built with the simplifying constructors of ``studio.logic.formula`` (never by
parsing), over a small alphabet so that random traces make atoms both true and false often.

Traces come in two shapes:

* *events*, what ``SessionMonitor.feed`` takes: ``{"labels": [...], "data": {"x": int}}``;
* the oracle's shape, ``[(labels, event), ...]`` (``to_trace``).
"""

from __future__ import annotations

from hypothesis import strategies as st

from studio.logic import formula as fm
from studio.logic.formula import (
    FALSE,
    TRUE,
    And,
    Atom,
    Compare,
    FBounded,
    Formula,
    GBounded,
    Not,
    Or,
)

ATOM_NAMES = ("p", "q", "r")
ATOMS = tuple(Atom(name) for name in ATOM_NAMES)

# Data atoms read ``data.x`` of the event (and of the previous one, through prev()).
DATA_ATOMS = (
    Compare(("path", "data.x"), ">", ("const", 2)),
    Compare(("path", "data.x"), "==", ("prev", "data.x")),
    Compare(("prev", "data.x"), "<", ("path", "data.x")),
    Compare(("path", "data.x"), "!=", ("const", 1)),
)

bounds = st.integers(0, 3).flatmap(lambda a: st.tuples(st.just(a), st.integers(a, a + 3)))


def formulas(max_depth: int = 5, *, future: bool = True, past: bool = True, data: bool = True,
             monitorable: bool = False, bounded: bool = True) -> st.SearchStrategy[Formula]:
    """Formulas of at most ``max_depth`` nested operators (before simplification; a leaf may be
    a negated atom) over p q r and the data atoms, using every operator:
    ! & | -> <-> X WX F G U W R F[a,b] G[a,b] Y Z O H S.

    ``future``/``past``/``data``/``bounded`` switch operator families off; ``monitorable``
    keeps future operators out of past ones (what the monitor accepts).

    Swarm testing: each example first picks which operators and leaves it may use (each with
    probability 1/2), so that the interplay of a few operators on a few atoms - `X p | X !p` -
    comes up often instead of once in millions of uniformly drawn formulas.
    """
    leaves = [*ATOMS, *(Not(a) for a in ATOMS), TRUE, FALSE]
    if data:
        leaves += DATA_ATOMS
    unary = ["not"]
    binary = ["and", "or", "implies", "iff"]
    if future:
        unary += ["X", "WX", "F", "G"] + (["F[]", "G[]"] if bounded else [])
        binary += ["U", "W", "R"]
    if past:
        unary += ["Y", "Z", "O", "H"]
        binary += ["S"]
    leaves, unary, binary = tuple(leaves), tuple(unary), tuple(binary)
    return st.one_of(_swarm(max_depth, leaves, unary, binary, monitorable),
                     _dense(min(max_depth, 3), unary, binary, monitorable, data))


@st.composite
def _dense(draw, depth, unary, binary, monitorable, data):
    """A boolean combination of two or three short temporal chains over one or two atoms:
    residuals of different operators meet on the same literals (`X p | X !p`, `G[0,1] q & F !q`)
    far more often than in uniformly drawn formulas."""
    atoms = ATOMS[:draw(st.integers(1, 2))]
    literals = [*atoms, *(Not(a) for a in atoms)]
    if data and draw(st.booleans()):
        literals.append(draw(st.sampled_from(DATA_ATOMS)))
    temporal_unary = tuple(op for op in unary if op != "not")
    temporal_binary = tuple(op for op in binary if op in ("U", "W", "R", "S"))
    chain_ops = temporal_unary + temporal_binary

    def chain(d, future_ok):
        ops = [op for op in chain_ops if future_ok or op not in fm.FUTURE_OPS]
        if d == 0 or not ops or draw(st.integers(0, 3)) == 0:
            return draw(st.sampled_from(literals))
        op = draw(st.sampled_from(ops))
        inner_ok = future_ok and not (monitorable and op in fm.PAST_OPS)
        if op in ("F[]", "G[]"):
            low, high = draw(st.integers(0, 2).flatmap(
                lambda a: st.tuples(st.just(a), st.integers(a, a + 2))))
            return (FBounded if op == "F[]" else GBounded)(low, high, chain(d - 1, inner_ok))
        if op in temporal_unary:
            return fm.UNARY[op](chain(d - 1, inner_ok))
        return fm.BINARY[op](chain(d - 1, inner_ok), chain(d - 1, inner_ok))

    parts = [chain(depth - 1, True) for _ in range(draw(st.integers(2, 3)))]
    shape = draw(st.sampled_from(("or", "and", "mixed", "implies")))
    if shape == "or":
        body = Or(*parts)
    elif shape == "and":
        body = And(*parts)
    elif shape == "mixed":
        body = Or(And(*parts[:2]), *parts[2:]) if len(parts) == 3 else Or(parts[0], Not(parts[1]))
    else:
        body = fm.Implies(parts[0], Or(*parts[1:]))
    wrapper = draw(st.sampled_from(("none", "none", "G", "F", "X", "WX")))
    if wrapper == "none" or wrapper not in unary:
        return body
    return fm.UNARY[wrapper](body)


@st.composite
def _swarm(draw, max_depth, leaves, unary, binary, monitorable):
    # Shrinks towards p alone (the first leaf) and no operator at all.
    chosen_leaves = tuple(leaf for i, leaf in enumerate(leaves) if i == 0 or draw(st.booleans()))
    chosen_unary = tuple(op for op in unary if draw(st.booleans()))
    chosen_binary = tuple(op for op in binary if draw(st.booleans()))
    return draw(_tree(max_depth, True, chosen_leaves, chosen_unary, chosen_binary, monitorable))


@st.composite
def _tree(draw, depth, future_ok, leaves, unary, binary, monitorable):
    ops = [op for op in unary + binary if future_ok or op not in fm.FUTURE_OPS]
    # A leaf a quarter of the time (always at the depth limit); the choice of a leaf is the
    # smallest draw, so failing examples shrink towards small formulas.
    if depth == 0 or not ops or draw(st.integers(0, 3)) == 0:
        return draw(st.sampled_from(leaves))
    op = draw(st.sampled_from(ops))
    child_future_ok = future_ok and not (monitorable and op in fm.PAST_OPS)

    def child():
        return draw(_tree(depth - 1, child_future_ok, leaves, unary, binary, monitorable))

    if op in ("F[]", "G[]"):
        low, high = draw(bounds)
        return (FBounded if op == "F[]" else GBounded)(low, high, child())
    if op in ("and", "or"):
        parts = [child() for _ in range(draw(st.integers(2, 3)))]
        return (And if op == "and" else Or)(*parts)
    if op in unary:
        return fm.UNARY[op](child())
    return fm.BINARY[op](child(), child())


def monitorable_formulas(max_depth: int = 5, **kwargs) -> st.SearchStrategy[Formula]:
    return formulas(max_depth, monitorable=True, **kwargs)


def is_monitorable(f: Formula) -> bool:
    return not any(g.is_past and any(a.has_future for a in g.args) for g in f.subformulas())


# ---------------------------------------------------------------------------------------------
# Traces

def _event(labels, x):
    return {"labels": sorted(labels), "data": {} if x is None else {"x": x}}


def events(min_size: int = 1, max_size: int = 12, missing_data: bool = True):
    """Lists of events; ``data.x`` is a small int, and (with ``missing_data``) now and then
    absent, which data atoms read as false."""
    x = st.integers(0, 4)
    if missing_data:
        x = st.one_of(x, x, x, x, st.none())
    event = st.builds(_event, st.frozensets(st.sampled_from(ATOM_NAMES)), x)
    return st.lists(event, min_size=min_size, max_size=max_size)


def label_traces(min_size: int = 1, max_size: int = 12):
    """Lists of label sets (frozensets of atom names) for purely propositional formulas."""
    return st.lists(st.frozensets(st.sampled_from(ATOM_NAMES)), min_size=min_size,
                    max_size=max_size)


def to_trace(evts) -> list[tuple[frozenset, dict]]:
    """Events in the oracle's shape ``[(labels, event)]``."""
    return [(frozenset(e["labels"]), e) for e in evts]


def labels_only(label_sets) -> list[tuple[frozenset, dict]]:
    return [(frozenset(labels), {}) for labels in label_sets]


__all__ = ["ATOMS", "ATOM_NAMES", "DATA_ATOMS", "bounds", "events",
           "formulas", "is_monitorable", "label_traces", "labels_only", "monitorable_formulas",
           "to_trace"]
