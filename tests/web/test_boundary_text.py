"""Invisible characters: one rule (``studio.logic.invisible``) for formulas and live session ids.

Format characters (category Cf: U+2062, the soft hyphen, tag characters, direction controls),
controls (Cc) where the text does not allow them, lone surrogates and the fillers that draw
nothing are refused with their position.  The oracle here is Unicode's own table, read
independently of the rule's implementation.
"""

from __future__ import annotations

import sys
import unicodedata
from urllib.parse import quote

import pytest
from django.test import Client
from hypothesis import given, settings
from hypothesis import strategies as st

from studio.logic.invisible import find_invisible
from studio.logic.parser import FormulaSyntaxError, parse
from studio.traces.models import TraceSession

EVERY_FORMAT_CHARACTER = [chr(code) for code in range(sys.maxunicode + 1)
                          if unicodedata.category(chr(code)) == "Cf"]
# Drawn nothing, yet letters or marks: the rule names them one by one.
FILLERS = ["\u115f", "\u1160", "\u3164", "\uffa0", "\u034f", "\u17b4", "\u17b5", "\u2800",
           "\ufe0f", "\U000e0100"]
ATOM = "tool_call:send"


def test_unicode_lists_the_format_characters_the_probe_named():
    assert {"\u2062", "\u00ad", "\U000e0001", "\U000e007f", "\u202e"} <= set(
        EVERY_FORMAT_CHARACTER)
    assert len(EVERY_FORMAT_CHARACTER) > 150


# ---------------------------------------------------------------------------------------------
# Formulas, through the editor's check route (real HTTP)

@pytest.fixture
def author(world):
    client = Client()
    client.force_login(world.ann)
    return client


def test_every_format_character_in_a_formula_is_refused_with_its_column(world, author):
    for index, char in enumerate(EVERY_FORMAT_CHARACTER):
        at = index % (len(ATOM) + 1)
        text = f"G {ATOM[:at]}{char}{ATOM[at:]}"
        response = author.post("/api/w/acme/formulas/check", {"text": text},
                               content_type="application/json")
        assert response.status_code == 200, response.content
        body = response.json()
        assert body["ok"] is False, (f"U+{ord(char):04X}", body)
        error = body["error"]
        assert (error["line"], error["column"]) == (1, 3 + at), (f"U+{ord(char):04X}", error)
        assert f"U+{ord(char):04X}" in error["message"], error


@pytest.mark.parametrize("escape, named", [
    ("\\u2062", "invisible times (U+2062)"),
    ("\\u00ad", "soft hyphen (U+00AD)"),
    ("\\udb40\\udc41", "tag latin capital letter a (U+E0041)"),
    ("\\u007f", "control character (U+007F, delete)"),
    ("\\u3164", "hangul filler (U+3164)"),
])
def test_an_escape_of_an_invisible_character_in_quoted_text_is_refused(escape, named):
    with pytest.raises(FormulaSyntaxError) as caught:
        parse(f'G (data.name == "pay{escape}ee")')
    assert named in caught.value.message and "written as an escape" in caught.value.message


def test_escaped_line_breaks_and_tabs_in_quoted_text_print_back_and_stay():
    formula = parse('G (output.text != "a\\nb\\tc")')
    assert parse(formula.text) is formula


def test_a_formula_may_still_break_lines_and_indent():
    assert parse("G (p ->\r\n\tF q)") is parse("G (p -> F q)")


def _draws_nothing(char: str) -> bool:
    """Letters and marks that draw nothing, by their Unicode names (a gap filler is visible
    punctuation), and the unassigned default-ignorable code points."""
    name = unicodedata.name(char, "")
    code = ord(char)
    return (("FILLER" in name and unicodedata.category(char) != "Po")
            or "VARIATION SELECTOR" in name or name.startswith("KHMER VOWEL INHERENT")
            or name in ("COMBINING GRAPHEME JOINER", "BRAILLE PATTERN BLANK")
            or (unicodedata.category(char) == "Cn"
                and (0xFFF0 <= code <= 0xFFF8 or 0xE0000 <= code <= 0xE0FFF)))


def test_the_fillers_named_above_draw_nothing():
    assert all(_draws_nothing(char) for char in FILLERS)


def _refused_by_unicode(char: str) -> bool:
    """The oracle: what the rule promises, from Unicode's table."""
    category = unicodedata.category(char)
    layout = char in "\t\n\r\f"
    return category in ("Cf", "Cs") or (category == "Cc" and not layout) or _draws_nothing(char)


def test_the_rule_refuses_exactly_what_unicode_says_is_invisible_over_every_code_point():
    wrong = [f"U+{code:04X}" for code in range(sys.maxunicode + 1)
             if (find_invisible(chr(code), allowed="\t\n\r\f") is not None)
             != _refused_by_unicode(chr(code))]
    assert wrong == []


@settings(max_examples=400, deadline=None)
@given(char=st.characters(codec=None, exclude_characters="\"\\ "),
       at=st.integers(min_value=0, max_value=len(ATOM)))
def test_a_character_in_a_quoted_atom_is_refused_exactly_when_it_is_invisible(char, at):
    text = f'G "{ATOM[:at]}{char}{ATOM[at:]}"'
    try:
        formula = parse(text)
    except FormulaSyntaxError as exc:
        refused_where = (exc.line, exc.column)
        message = exc.message
    else:
        refused_where, message = None, ""
        assert formula.args[0].name == ATOM[:at] + char + ATOM[at:]
    if _refused_by_unicode(char):
        assert refused_where == (1, 4 + at), (f"U+{ord(char):04X}", message)
        assert f"U+{ord(char):04X}" in message
    elif char not in "\t\n\r\f":  # raw layout inside quotes is the grammar's to refuse
        assert refused_where is None, (f"U+{ord(char):04X}", message)


# ---------------------------------------------------------------------------------------------
# Live session ids

SHIP = {"event_id": "e1", "output": {"tool": "ship", "args": {}}}


@pytest.mark.parametrize("hidden, position, named", [
    ("\u202e", 4, "right-to-left override (U+202E)"),
    ("\r", 4, "control character (U+000D, carriage return)"),
    ("\n", 4, "control character (U+000A, line feed)"),
    ("\t", 4, "control character (U+0009, tab)"),
    ("\u00ad", 4, "soft hyphen (U+00AD)"),
    ("\U000e0041", 4, "tag latin capital letter a (U+E0041)"),
    ("\u3164", 4, "hangul filler (U+3164)"),
])
@pytest.mark.parametrize("route", ["events", "check", "end", "guard"])
def test_a_live_session_id_with_an_invisible_character_is_refused_with_its_position(
        world, hidden, position, named, route):
    token = world.token(world.acme)
    session = quote(f"abc{hidden}def", safe="")
    body = {"check": {"candidates": [SHIP]}, "guard": {"event": SHIP}}.get(
        route, {"events": [SHIP]})
    response = Client().post(f"/api/w/acme/live/sessions/{session}/{route}",
                             body, content_type="application/json",
                             headers={"Authorization": f"Bearer {token}"})
    assert response.status_code == 422, response.content
    body = response.json()
    assert body["field"] == "session_id"
    assert named in body["detail"] and f"at position {position}" in body["detail"], body
    assert not TraceSession.objects.exists()


def test_a_visible_session_id_is_still_accepted(world):
    token = world.token(world.acme)
    response = Client().post(f"/api/w/acme/live/sessions/{quote('Zürich-42 ünd 日本')}/events",
                             {"events": [SHIP]}, content_type="application/json",
                             headers={"Authorization": f"Bearer {token}"})
    assert response.status_code == 200, response.content
    assert TraceSession.objects.get().external_id == "Zürich-42 ünd 日本"


from tests.api.world import world  # noqa: E402,F401
