"""CSV cells a spreadsheet cannot run: whatever whitespace, invisible character or full-width
sign a cell starts with, the written cell never starts (after its blanks) with a formula sign,
and reading it back gives the text (behind one leading quote when it was neutralised)."""

from __future__ import annotations

import csv
import io
import unicodedata

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from studio.exports import csv_lines, spreadsheet_safe

# Written out here, not imported: the test states OWASP's list and the full-width forms itself.
SIGNS = set("=+-@") | {"\uff1d", "\uff0b", "\uff0d", "\uff20"}
BLANKS = [" ", "\t", "\r", "\n", "\u00a0", "\u2003", "\u3000", "\u200b", "\ufeff", "\u2028",
          "\x0b", "\x0c", "\u202e"]


def first_visible(cell: str) -> str:
    """What a spreadsheet looks at: the first character past blanks and invisible ones."""
    return next((c for c in cell if not (c.isspace() or unicodedata.category(c) == "Cf")), "")


def written(text) -> str:
    """The cell as a spreadsheet reads it back from the exported CSV."""
    document = "".join(csv_lines(["cell"], [[text]]))
    rows = list(csv.reader(io.StringIO(document, newline="")))
    assert len(rows) == 2 and len(rows[1]) == 1
    return rows[1][0]


tricky = st.text(alphabet=st.one_of(st.sampled_from(BLANKS + sorted(SIGNS) + ["'", "1", "A"]),
                                    st.characters(exclude_categories=["Cs"])), max_size=12)


@settings(max_examples=600)
@given(st.one_of(tricky, st.text()))
@example(" =1+1")
@example("\n=cmd")
@example("\uff1d1")
def test_no_written_cell_starts_like_a_formula(text):
    cell = written(text)
    assert first_visible(cell) not in SIGNS
    assert not cell.startswith(("\t", "\r"))
    # Nothing but the one quote is added: the text itself reaches the spreadsheet.
    assert cell in (text, "'" + text)


@pytest.mark.parametrize("text", [
    " =1+1", "\n=cmd", "\uff1d1", "=SUM(A1:A2)", "+1", "-2+3", "@SUM(A1)", "\t1", "\r1",
    "\u3000=1", "\u200b=1", "\ufeff+1", "\u00a0\uff0b1", "\uff0d1", "\uff20x", "  \t\r\n@x",
])
def test_cells_that_a_spreadsheet_would_run_get_one_leading_quote(text):
    assert spreadsheet_safe(text) == "'" + text
    assert written(text) == "'" + text


@pytest.mark.parametrize("value, cell", [
    ("plain text", "plain text"), ("a=b", "a=b"), ("1-2", "1-2"), ("", ""), (None, ""),
    ("'=already quoted", "'=already quoted"), (12, 12), (-5, -5), (2.5, 2.5), (True, True),
])
def test_other_cells_are_unchanged(value, cell):
    assert spreadsheet_safe(value) == cell


def test_values_that_are_not_text_are_checked_as_their_text():
    class Odd:
        def __str__(self):
            return " =cmd"

    assert spreadsheet_safe(Odd()) == "' =cmd"


def test_the_header_is_neutralised_too():
    document = "".join(csv_lines(["=header", "ok"], []))
    assert next(csv.reader(io.StringIO(document))) == ["'=header", "ok"]
