"""studio.copyformat: COPY text fields read back as what was written, whatever the text."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from studio.copyformat import NULL, json_field, json_text, needs_escaping, text_field, text_value

texts = st.text(st.sampled_from(["a", "é", "\\", "\t", "\n", "\r", "N", "t", " ", "😀"]),
                max_size=12) | st.text(max_size=12)


@given(st.none() | texts)
def test_a_text_field_reads_back_as_its_value_and_holds_no_separator(value):
    field = text_field(value)
    assert "\t" not in field and "\n" not in field and "\r" not in field
    assert text_value(field) == value
    assert (field == NULL) == (value is None)  # a literal \N is escaped, not taken for NULL


@given(st.none() | st.recursive(st.none() | st.booleans() | texts | st.integers(),
                                lambda inner: st.lists(inner, max_size=3)
                                | st.dictionaries(texts, inner, max_size=3), max_leaves=8))
def test_a_json_field_reads_back_as_its_json_text(value):
    text = None if value is None else json.dumps(value, ensure_ascii=False)
    field = json_field(text)
    assert "\t" not in field and "\n" not in field and "\r" not in field
    assert json_text(field) == text


@given(texts)
def test_needs_escaping_says_whether_text_field_changes_the_text(value):
    assert needs_escaping(value) == (text_field(value) != value)
