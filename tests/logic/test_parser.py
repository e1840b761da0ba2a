"""The rule language: printing and parsing, interning, precedence, error positions, robustness."""

from __future__ import annotations

import pickle
import sys

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from studio.logic import formula as fm
from studio.logic.formula import (
    FALSE,
    TRUE,
    WX,
    And,
    Atom,
    Compare,
    F,
    FBounded,
    Formula,
    G,
    GBounded,
    H,
    Iff,
    Implies,
    Not,
    O,
    Or,
    R,
    S,
    U,
    W,
    X,
    Y,
    Z,
)
from studio.logic.invisible import is_invisible
from studio.logic.parser import MAX_FORMULA_LENGTH, FormulaSyntaxError, parse, to_text
from tests.logic.strategies import formulas

p, q, r = Atom("p"), Atom("q"), Atom("r")


def cmp(path: str, op: str, value) -> Formula:
    return Compare(("path", path), op, ("const", value))


# ---------------------------------------------------------------------------------------------
# Strategies for the lexical corners: odd atom names and comparison operands

KEYWORDS = ("true", "false", "prev", "null")
paths = st.from_regex(r"[a-z_][a-z0-9_]{0,4}(\.[a-z0-9_]{1,4}){0,2}", fullmatch=True).filter(
    lambda s: s not in KEYWORDS)
# NUL is refused in quoted text (no database column holds it): see test_nul_in_quoted_text_...
# and so are invisible characters (format characters, controls that print raw such as U+007F,
# fillers: studio.logic.invisible; tests/web/test_boundary_text.py).  Controls below U+0020
# print back as escapes and stay.  Lone surrogates: the codec leaves them out.
no_nul = st.characters(codec="utf-8", exclude_characters="\x00").filter(
    lambda char: char < " " or not is_invisible(char))
odd_names = st.one_of(
    st.text(no_nul, min_size=1, max_size=12),
    st.sampled_from(["a b", 'say "hi"', "back\\slash", "tab\there", "new\nline", "Upper",
                     "ÜBER", "é", "日本", "🙂", "true", "false", "prev", "null", "X", "G p",
                     "p->q", "-", "1abc", "a-", "_", "a:b.c-d", "\u2028", "\x01", "'"]),
)
constants = st.one_of(
    st.integers(-10**6, 10**6),
    st.integers(),
    st.floats(allow_nan=False, allow_infinity=False),
    st.booleans(),
    st.none(),
    st.text(no_nul, max_size=10),
)
operands = st.one_of(
    constants.map(lambda v: ("const", v)),
    paths.map(lambda v: ("path", v)),
    paths.map(lambda v: ("prev", v)),
)
comparisons = st.builds(
    Compare,
    st.one_of(paths.map(lambda v: ("path", v)), paths.map(lambda v: ("prev", v))),
    st.sampled_from(fm.COMPARISONS),
    operands,
)
lexical_leaves = st.one_of(odd_names.map(Atom), comparisons)


@st.composite
def mixed_formulas(draw):
    """A random formula whose atoms are renamed into odd names and comparisons."""
    f = draw(formulas(4))
    replacement = {name: draw(lexical_leaves) for name in ("p", "q", "r")}
    return _substitute(f, replacement)


def _substitute(f: Formula, replacement: dict) -> Formula:
    if f.op == "atom":
        return replacement.get(f.name, f)
    if not f.args:
        return f
    return fm.rebuild(f, tuple(_substitute(a, replacement) for a in f.args))


# ---------------------------------------------------------------------------------------------
# Round trips

@settings(max_examples=200, deadline=None)
@given(f=formulas())
def test_printing_then_parsing_gives_the_same_formula(f):
    assert parse(f.text) is f
    assert to_text(f) == f.text


@settings(max_examples=200, deadline=None)
@given(f=mixed_formulas())
@example(f=Atom('say "hi"'))
@example(f=Not(cmp("data.x", ">", -1.5)))
@example(f=cmp("a-", "<", -3))
@example(f=And(Atom("a-"), Implies(Atom("b"), Atom("c"))))
def test_round_trip_with_quoted_atoms_and_comparisons(f):
    assert parse(f.text) is f


@settings(max_examples=150, deadline=None)
@given(f=st.one_of(formulas(), mixed_formulas()))
def test_unicode_printing_parses_back_to_the_same_formula(f):
    assert parse(to_text(f, unicode=True)) is f


@pytest.mark.parametrize("name", ["a b", 'q"uote', "back\\slash", "Upper", "日本", "true",
                                  "null", "prev", "U", "x == 1", "\n", "🙂"])
def test_names_that_are_not_bare_atoms_are_quoted(name):
    f = Atom(name)
    assert f.text.startswith('"') and f.text.endswith('"')
    assert parse(f.text) is f


@pytest.mark.parametrize("value,text", [
    (-3, "-3"), (2.5, "2.5"), (-0.25, "-0.25"), (1e16, "1e+16"), (True, "true"),
    (False, "false"), (None, "null"), ("a \"b\"", '"a \\"b\\""'), ("é", '"é"'),
])
def test_comparison_constants_print_and_parse_back(value, text):
    f = cmp("data.v", "==", value)
    assert f.text == "data.v == " + text
    assert parse(f.text) is f


def test_constants_of_different_kinds_stay_apart():
    # 1 == 1.0 == True in Python; as rule constants they are three different data atoms.
    one, one_float, true = cmp("x", "==", 1), cmp("x", "==", 1.0), cmp("x", "==", True)
    assert len({one, one_float, true}) == 3
    assert [parse(t) for t in ("x == 1", "x == 1.0", "x == true")] == [one, one_float, true]


@settings(max_examples=50, deadline=None)
@given(f=st.one_of(formulas(), mixed_formulas()))
def test_pickling_goes_back_through_the_interning_table(f):
    assert pickle.loads(pickle.dumps(f)) is f


# ---------------------------------------------------------------------------------------------
# Interning and simplification

def _rebuild_from_scratch(f: Formula) -> Formula:
    """The same structure built again, leaves included, through the constructors."""
    if f.op == "atom":
        return Atom(str(f.name))
    if f.op == "cmp":
        c = f.payload
        return Compare(tuple(c.left), c.op, tuple(c.right))
    if f.op in ("true", "false"):
        return TRUE if f.op == "true" else FALSE
    return fm.rebuild(f, tuple(_rebuild_from_scratch(a) for a in f.args))


@settings(max_examples=150, deadline=None)
@given(f=st.one_of(formulas(), mixed_formulas()))
def test_building_the_same_structure_twice_gives_the_same_object(f):
    # Also: simplification is stable - rebuilding a simplified formula changes nothing.
    assert _rebuild_from_scratch(f) is f


def test_interning_and_simplification_rules():
    assert Atom("p") is p
    assert And(p, q) is And(q, p)
    assert Or(p, q, r) is Or(r, Or(q, p))
    assert And(p, And(q, r)) is And(And(p, q), r)
    assert Or(p, p) is p
    assert And(p, TRUE) is p
    assert Or(p, FALSE) is p
    assert And(p, FALSE) is FALSE
    assert Or(p, TRUE) is TRUE
    assert And() is TRUE and Or() is FALSE
    assert And(p, Not(p)) is FALSE
    assert Not(Not(p)) is p
    assert Not(TRUE) is FALSE
    assert F(F(p)) is F(p) and G(G(p)) is G(p)
    assert O(O(p)) is O(p) and H(H(p)) is H(p)
    assert U(TRUE, p) is F(p) and R(FALSE, p) is G(p) and S(TRUE, p) is O(p)
    assert FBounded(0, 0, p) is p and GBounded(0, 0, p) is p
    assert Implies(p, p) is TRUE and Iff(p, TRUE) is p and Iff(p, FALSE) is Not(p)
    assert X(p) is not WX(p) and Y(p) is not Z(p)
    assert FBounded(1, 2, p) is not FBounded(1, 3, p)
    # Different structures never share an object (nor a text).
    distinct = [p, q, Not(p), X(p), WX(p), F(p), G(p), Y(p), Z(p), O(p), H(p), U(p, q), U(q, p),
                W(p, q), R(p, q), S(p, q), FBounded(1, 2, p), GBounded(1, 2, p), Implies(p, q),
                Implies(q, p), Iff(p, q), And(p, q), Or(p, q)]
    assert len({id(f) for f in distinct}) == len({f.text for f in distinct}) == len(distinct)


def test_formulas_are_immutable():
    with pytest.raises(AttributeError):
        p.op = "atom"  # type: ignore[misc]


def test_constructors_reject_bad_arguments():
    with pytest.raises(ValueError):
        Atom("")
    with pytest.raises(ValueError):
        Compare(("path", "x"), "=~", ("const", 1))
    with pytest.raises(ValueError):
        FBounded(2, 1, p)
    with pytest.raises(ValueError):
        GBounded(-1, 1, p)


# ---------------------------------------------------------------------------------------------
# Precedence and associativity

@pytest.mark.parametrize("text,expected", [
    ("a U b U c", lambda a, b, c: U(a, U(b, c))),
    ("a W b R c", lambda a, b, c: W(a, R(b, c))),
    ("a S b U c", lambda a, b, c: S(a, U(b, c))),
    ("a -> b -> c", lambda a, b, c: Implies(a, Implies(b, c))),
    ("(a -> b) -> c", lambda a, b, c: Implies(Implies(a, b), c)),
    ("a <-> b <-> c", lambda a, b, c: Iff(a, Iff(b, c))),
    ("!a & b", lambda a, b, c: And(Not(a), b)),
    ("!(a & b)", lambda a, b, c: Not(And(a, b))),
    ("F G a", lambda a, b, c: F(G(a))),
    ("G F a", lambda a, b, c: G(F(a))),
    ("a & b | c", lambda a, b, c: Or(And(a, b), c)),
    ("a | b & c", lambda a, b, c: Or(a, And(b, c))),
    ("a | b -> c", lambda a, b, c: Implies(Or(a, b), c)),
    ("a -> b <-> c", lambda a, b, c: Iff(Implies(a, b), c)),
    ("a U b & c", lambda a, b, c: And(U(a, b), c)),
    ("X a U b", lambda a, b, c: U(X(a), b)),
    ("!a U b", lambda a, b, c: U(Not(a), b)),
    ("F[1,2] a U b", lambda a, b, c: U(FBounded(1, 2, a), b)),
    ("a W X b", lambda a, b, c: W(a, X(b))),
    ("WX a", lambda a, b, c: WX(a)),
    ("Y Z O H a", lambda a, b, c: Y(Z(O(H(a))))),
    ("a->b", lambda a, b, c: Implies(a, b)),
    ("aUb", lambda a, b, c: U(a, b)),
    ("¬a ∧ b ∨ c", lambda a, b, c: Or(And(Not(a), b), c)),
    ("a → b ↔ c", lambda a, b, c: Iff(Implies(a, b), c)),
    ("○ a ∧ ◇ b ∧ □ c", lambda a, b, c: And(X(a), F(b), G(c))),
    ("◇[1,2] a ∨ □[0,3] b", lambda a, b, c: Or(FBounded(1, 2, a), GBounded(0, 3, b))),
    ("a # a comment\n & b", lambda a, b, c: And(a, b)),
    ("  (\n a\t)  ", lambda a, b, c: a),
])
def test_precedence_and_associativity(text, expected):
    assert parse(text) is expected(Atom("a"), Atom("b"), Atom("c"))


@pytest.mark.parametrize("text,expected", [
    ("data.x > 2 & p", lambda: And(cmp("data.x", ">", 2), p)),
    ("!data.x > 2", lambda: Not(cmp("data.x", ">", 2))),
    ("!(data.x > 2)", lambda: Not(cmp("data.x", ">", 2))),
    ("data.x>-1", lambda: cmp("data.x", ">", -1)),
    ("data.x == prev(data.x)",
     lambda: Compare(("path", "data.x"), "==", ("prev", "data.x"))),
    ("prev(a.b) <= c", lambda: Compare(("prev", "a.b"), "<=", ("path", "c"))),
    ('data.s != "x y"', lambda: cmp("data.s", "!=", "x y")),
    ("data.v == null", lambda: cmp("data.v", "==", None)),
    ("data.v >= 1.5e3", lambda: cmp("data.v", ">=", 1500.0)),
    ("tool_call:send_money", lambda: Atom("tool_call:send_money")),
    ('"stop_reason:end_turn"', lambda: Atom("stop_reason:end_turn")),
    ("p-q", lambda: Atom("p-q")),
    ("a- -> b", lambda: Implies(Atom("a-"), Atom("b"))),
    ("trueish & nullable", lambda: And(Atom("trueish"), Atom("nullable"))),
    ('"true"', lambda: Atom("true")),
    ("true", lambda: TRUE),
])
def test_atoms_and_data_atoms(text, expected):
    assert parse(text) is expected()


# ---------------------------------------------------------------------------------------------
# Errors: where and what

ERROR_CASES = [
    # text, line, column, a fragment of the message
    ("G(p -> ", 1, 7, "ends too early"),
    ("p & & q", 1, 5, "unexpected &"),
    ("P U q", 1, 1, "operators are single capitals"),
    ("p & Q", 1, 5, "operators are single capitals"),
    ("F[3,1] p", 1, 3, "lower bound exceeds"),
    ("F[1,20000] p", 1, 5, "too large"),
    ("G(p ->\n  & q)", 2, 3, "unexpected &"),
    ("p\n\n  ) q", 3, 3, "unexpected )"),
    ("", 1, 1, "empty"),
    ("   \n ", 1, 1, "empty"),
    ("p q", 1, 3, "unexpected q"),
    ("(p", 1, 3, "ends too early"),
    ("p)", 1, 2, "unexpected )"),
    ("data.x > ", 1, 9, "ends too early"),
    ("x == y == z", 1, 8, "unexpected =="),
    ('""', 1, 1, "empty string"),
    ('p & "a\\qb"', 1, 5, "bad escape"),
    ("x > 1e999", 1, 5, "out of range"),
    ("p $ q", 1, 3, "'$'"),
    ("F[1, 2 p", 1, 8, "expected ']'"),
    ("G(p -> # a comment\n", 1, 19, "ends too early"),
]


@pytest.mark.parametrize("text,line,column,fragment", ERROR_CASES,
                         ids=[repr(c[0]) for c in ERROR_CASES])
def test_syntax_errors_name_line_column_and_what_was_expected(text, line, column, fragment):
    with pytest.raises(FormulaSyntaxError) as info:
        parse(text)
    error = info.value
    assert (error.line, error.column) == (line, column), error.message
    assert fragment in error.message
    assert str(error).startswith(f"line {line}, column {column}: ")


def test_errors_list_the_expected_tokens():
    with pytest.raises(FormulaSyntaxError) as info:
        parse("(p")
    assert info.value.expected == ("')'",)
    with pytest.raises(FormulaSyntaxError) as info:
        parse("G(p -> ")
    assert {"an atom", "'('", "'!'", "'X'"} <= set(info.value.expected)
    assert "an atom" in info.value.message


def test_error_context_puts_a_caret_under_the_column():
    with pytest.raises(FormulaSyntaxError) as info:
        parse("G(p ->\n  & q)")
    assert info.value.context() == "  & q)\n  ^"


@pytest.mark.parametrize("text", ["p\r& & q", "p\x0c& & q", '"a\u2028b" & & q'])
def test_error_context_shows_the_line_the_position_counts_in(text):
    with pytest.raises(FormulaSyntaxError) as info:
        parse(text)
    error = info.value
    assert error.context().rsplit("\n", 1)[0] == text.split("\n")[error.line - 1]


def test_non_text_is_a_syntax_error():
    with pytest.raises(FormulaSyntaxError):
        parse(None)  # type: ignore[arg-type]
    with pytest.raises(FormulaSyntaxError):
        parse(b"p")  # type: ignore[arg-type]


# ---------------------------------------------------------------------------------------------
# Robustness: nothing but FormulaSyntaxError ever escapes

def _parse_or_error(text: str) -> Formula | FormulaSyntaxError:
    try:
        result = parse(text)
    except FormulaSyntaxError as error:
        lines = text.split("\n")
        assert 1 <= error.line <= len(lines), (error.line, error.message)
        assert 1 <= error.column <= len(lines[error.line - 1]) + 1, (error.column, error.message)
        assert error.message
        return error
    assert isinstance(result, Formula)
    # Whatever parses prints to text that parses back to it.
    assert parse(result.text) is result
    return result


@settings(max_examples=500, deadline=None)
@given(text=st.text(max_size=60))
@example(text="\x00")
@example(text='"\\ud800"')
@example(text="x > 0x10")
@example(text="F[01,2] p")
def test_fuzz_random_text(text):
    _parse_or_error(text)


ALPHABET = "pqrxXWFGUROHSYZ!&|-><()[],.\"\\ 0123456789=#\n¬∧∨→↔○◇□_:prevnulltruefalse"


@st.composite
def mutated_formula_texts(draw):
    text = draw(st.one_of(formulas(), mixed_formulas())).text
    for _ in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(("insert", "delete", "replace")))
        at = draw(st.integers(0, len(text)))
        char = draw(st.one_of(st.sampled_from(ALPHABET), st.characters()))
        if kind == "insert":
            text = text[:at] + char + text[at:]
        elif kind == "delete":
            text = text[:at] + text[at + 1:]
        else:
            text = text[:at] + char + text[at + 1:]
    return text


@settings(max_examples=300, deadline=None)
@given(text=mutated_formula_texts())
def test_fuzz_mutated_formulas(text):
    _parse_or_error(text)


@pytest.mark.parametrize("text", [
    "!" * 5000 + "p",
    "!" * 5001 + "p",
    "(" * 5000 + "p" + ")" * 5000,
    "p & " * 4000 + "p",
    "F " * 5000 + "p",
])
def test_deep_nesting_that_simplifies_away_parses(text):
    # Double negations cancel, parentheses and flattened conjunctions add no depth, F F = F.
    f = parse(text)
    assert f.depth <= 2


@pytest.mark.parametrize("text", [
    "X" * 5000 + "p",
    "X(" * 3000 + "p" + ")" * 3000,
    "p -> " * 3000 + "q",
    "(p U " * 2000 + "q" + ")" * 2000,
    "F[0,1] " * 2000 + "p",
    "Y !" * 2000 + "p",
])
def test_deep_nesting_is_a_syntax_error_not_a_recursion_error(text):
    limit = sys.getrecursionlimit()
    with pytest.raises(FormulaSyntaxError) as info:
        parse(text)
    assert "deeper" in info.value.message
    assert sys.getrecursionlimit() == limit


def test_over_long_input_is_a_syntax_error():
    with pytest.raises(FormulaSyntaxError) as info:
        parse("p | " * (MAX_FORMULA_LENGTH // 4) + "p")
    assert "limit" in info.value.message
    assert parse("p" * MAX_FORMULA_LENGTH) is Atom("p" * MAX_FORMULA_LENGTH)


BIG = "9" * 4400  # more digits than int() converts by default (sys.get_int_max_str_digits())


@pytest.mark.parametrize("text", ["data.x > " + BIG, "F[" + BIG + ",1] p", "G[1," + BIG + "] p"])
def test_huge_number_literals_are_syntax_errors(text):
    with pytest.raises(FormulaSyntaxError):
        parse(text)


def test_long_but_convertible_numbers_parse():
    digits = "9" * 4000
    assert parse("data.x > " + digits) is cmp("data.x", ">", int(digits))
    with pytest.raises(FormulaSyntaxError):
        parse("F[1," + digits + "] p")   # too large a bound, reported as such


@pytest.mark.parametrize("text", ['G !"a\\u0000"', 'data.note == "x\\u0000"'])
def test_nul_in_quoted_text_is_refused_naming_its_column(text):
    # Written as an escape it parsed, and then no database column could hold the rule's
    # warnings or vocabulary (a 500 at submit).
    with pytest.raises(FormulaSyntaxError) as info:
        parse(text)
    assert "NUL" in info.value.message
    assert info.value.column == text.index('"') + 1
