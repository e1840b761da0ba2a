"""CPL text: what parses to what, printing, and errors with positions."""

from __future__ import annotations

import pickle

import pytest

from studio.causal import formula as cf
from studio.causal.parser import CplSyntaxError, parse_cpl

A_X = cf.Var("x", "A")


@pytest.mark.parametrize(("text", "expected"), [
    ("x", cf.Truth(cf.Var("x"))),
    ("x == true", cf.Truth(cf.Var("x"))),
    ("A.x > 3", cf.Compare(A_X, ">", cf.Const(3))),
    ("3 < A.x", cf.Compare(cf.Const(3), "<", A_X)),
    ('status = "passed"', cf.Compare(cf.Var("status"), "==", cf.Const("passed"))),
    ("x ≠ null", cf.Compare(cf.Var("x"), "!=", cf.Const(None))),
    ("x <= -1.5e2", cf.Compare(cf.Var("x"), "<=", cf.Const(-150.0))),
    ("A.x == x", cf.Compare(A_X, "==", cf.Var("x"))),
    ("Y x", cf.Y(cf.Truth(cf.Var("x")))),
    ("a S b S c", cf.S(cf.Truth(cf.Var("a")), cf.S(cf.Truth(cf.Var("b")),
                                                  cf.Truth(cf.Var("c"))))),
    ("@A Y x", cf.At("A", cf.Y(cf.Truth(cf.Var("x"))))),
    ("@A x & y", cf.And(cf.At("A", cf.Truth(cf.Var("x"))), cf.Truth(cf.Var("y")))),
    ("@A (x S y)", cf.At("A", cf.S(cf.Truth(cf.Var("x")), cf.Truth(cf.Var("y"))))),
    ("P x", cf.Past(cf.Truth(cf.Var("x")))),
    ("P[A] x", cf.Past(cf.Truth(cf.Var("x")), "A")),
    ("O x", cf.S(cf.TRUE, cf.Truth(cf.Var("x")))),
    ("H x", cf.Not(cf.S(cf.TRUE, cf.Not(cf.Truth(cf.Var("x")))))),
    ("a | b & c", cf.Or(cf.Truth(cf.Var("a")), cf.And(cf.Truth(cf.Var("b")),
                                                      cf.Truth(cf.Var("c"))))),
    ("a -> b -> c", cf.Implies(cf.Truth(cf.Var("a")), cf.Implies(cf.Truth(cf.Var("b")),
                                                                 cf.Truth(cf.Var("c"))))),
    ("¬a ∧ b ∨ c → d ↔ e", cf.Iff(cf.Implies(cf.Or(cf.And(cf.Not(cf.Truth(cf.Var("a"))),
                                                         cf.Truth(cf.Var("b"))),
                                                  cf.Truth(cf.Var("c"))),
                                            cf.Truth(cf.Var("d"))),
                                  cf.Truth(cf.Var("e")))),
    ('@"agent-1" "agent 2"."my var" == 1', cf.At("agent-1", cf.Compare(
        cf.Var("my var", "agent 2"), "==", cf.Const(1)))),
    ("@Y x", cf.At("Y", cf.Truth(cf.Var("x")))),   # after '@' only a lifeline can come
    ("x # a comment\n & y", cf.And(cf.Truth(cf.Var("x")), cf.Truth(cf.Var("y")))),
])
def test_parses_to(text, expected):
    f = parse_cpl(text)
    assert f is expected
    assert parse_cpl(f.text) is f


def test_printing_is_canonical():
    f = parse_cpl('TestRunner.cand == cand & @TestRunner (status != "failed" S '
                  'status == "passed")')
    assert f.text == ('TestRunner.cand == cand & @TestRunner (status != "failed" S '
                      'status == "passed")')
    assert parse_cpl("(a S b) S c").text == "(a S b) S c"
    assert parse_cpl('@"Y" x').text == '@"Y" x'
    assert parse_cpl('"agent-1".x').text == "agent-1.x"
    assert parse_cpl("x == 1").payload[2] == ("const", 1)
    assert parse_cpl("x == 1") is not parse_cpl("x == 1.0") is not parse_cpl("x == true")


def test_lifelines_named():
    assert parse_cpl("@A B.x == C.y | P[D] z | P w").lifelines() == {"A", "B", "C", "D"}


def error(text) -> CplSyntaxError:
    with pytest.raises(CplSyntaxError) as info:
        parse_cpl(text)
    return info.value


@pytest.mark.parametrize(("text", "line", "column", "expects"), [
    ("a &", 1, 4, "'('"),
    ("a & & b", 1, 5, "a name"),
    ("x ==", 1, 5, "a number"),
    ("a b", 1, 3, "'&'"),
    ("(a S b", 1, 7, "')'"),
    ("a\n  & (b | )", 2, 10, "'@'"),
    ("x ~ 3", 1, 3, "a comparison (== != < <= > >=)"),
    ("P[] a", 1, 3, "a name"),
    ("@ x", 1, 4, "'('"),
    ("Y.x", 1, 2, None),
    ("", 1, 1, "a formula"),
])
def test_errors_have_positions_and_expectations(text, line, column, expects):
    err = error(text)
    assert (err.line, err.column) == (line, column), err
    if expects is not None:
        assert expects in err.expected, err.expected
    assert str(err).startswith(f"line {line}, column {column}: ")
    assert err.context().endswith("^")


def test_semantic_errors_point_at_their_token():
    err = error("a &\n 3 == 4")
    assert (err.line, err.column) == (2, 4) and "variable" in err.message
    err = error('x == "bad \\q escape"')
    assert (err.line, err.column) == (1, 6) and "escape" in err.message
    err = error('@"" x')
    assert (err.line, err.column) == (1, 2) and "empty" in err.message
    err = error("x == 1e999")
    assert "out of range" in err.message


def test_operator_letters_are_names_where_no_operator_can_stand():
    # lark's contextual lexer: after '@' or at the start of a term an operator letter is a name.
    assert parse_cpl("S.x") is cf.Truth(cf.Var("x", "S"))
    assert parse_cpl("S.x").text == '"S".x'
    assert (error("Y.x").line, error("Y.x").column) == (1, 2)


def test_nothing_but_cpl_syntax_errors_escape():
    for text in ["!" * 300 + "x", "Y " * 300 + "x", None, 42, "x" * 30_000]:
        with pytest.raises(CplSyntaxError):
            parse_cpl(text)


def test_constructors_refuse_unwritable_names():
    with pytest.raises(ValueError):
        cf.Var("Y")
    with pytest.raises(ValueError):
        cf.Var("my var")
    assert cf.Var("my var", "A") == ("var", "A", "my var")
    with pytest.raises(ValueError):
        cf.Const([1])


def test_pickling_goes_back_through_the_interning_table():
    for text in ('@Bank (x > 1 & Y P flag)', 'ok S (B.n == "a")', "!P[B] (y <= 2.5) <-> true"):
        f = parse_cpl(text)
        assert pickle.loads(pickle.dumps(f)) is f
