"""Random monitorable formulas and traces for the monitor tests."""

from hypothesis import strategies as st

from studio.logic import formula as fm

ATOMS = ("p", "q", "r")
DATA_ATOMS = (
    fm.Compare(("path", "data.x"), ">", ("const", 2)),
    fm.Compare(("path", "data.x"), "==", ("prev", "data.x")),
)


def _leaves():
    return st.one_of(st.sampled_from([fm.Atom(a) for a in ATOMS]),
                     st.sampled_from(DATA_ATOMS), st.sampled_from([fm.TRUE, fm.FALSE]))


def past_formulas(depth: int = 3):
    """Formulas with only boolean and past operators (what a past operator may contain)."""
    if depth == 0:
        return _leaves()
    sub = past_formulas(depth - 1)
    return st.one_of(
        _leaves(),
        st.builds(fm.Not, sub),
        st.builds(fm.And, sub, sub),
        st.builds(fm.Or, sub, sub),
        st.builds(fm.Implies, sub, sub),
        st.builds(fm.Y, sub), st.builds(fm.Z, sub), st.builds(fm.O, sub), st.builds(fm.H, sub),
        st.builds(fm.S, sub, sub),
    )


def formulas(depth: int = 5):
    """Every operator, past operators holding only past formulas."""
    if depth == 0:
        return _leaves()
    sub = formulas(depth - 1)
    bounds = st.tuples(st.integers(0, 2), st.integers(0, 3)).map(lambda ab: (ab[0], ab[0] + ab[1]))
    return st.one_of(
        _leaves(),
        past_formulas(min(depth - 1, 2)).flatmap(
            lambda p: st.sampled_from([fm.Y(p), fm.Z(p), fm.O(p), fm.H(p), fm.S(p, fm.Atom("q"))])),
        st.builds(fm.Not, sub),
        st.builds(fm.And, sub, sub), st.builds(fm.Or, sub, sub),
        st.builds(fm.Implies, sub, sub), st.builds(fm.Iff, sub, sub),
        st.builds(fm.X, sub), st.builds(fm.WX, sub), st.builds(fm.F, sub), st.builds(fm.G, sub),
        st.builds(fm.U, sub, sub), st.builds(fm.W, sub, sub), st.builds(fm.R, sub, sub),
        st.builds(lambda ab, f: fm.FBounded(*ab, f), bounds, sub),
        st.builds(lambda ab, f: fm.GBounded(*ab, f), bounds, sub),
    )


events = st.builds(
    lambda labels, x: {"labels": sorted(labels), "data": {"x": x}},
    st.sets(st.sampled_from(ATOMS)), st.integers(0, 4))

traces = st.lists(events, min_size=1, max_size=12)


def oracle_trace(trace):
    return [(set(e["labels"]), e) for e in trace]
