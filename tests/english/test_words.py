"""The English reader's word lists (``studio/english/words/*.toml``): each entry says why."""

import tomllib
from pathlib import Path

import pytest

import studio.english

WORDS = sorted((Path(studio.english.__file__).parent / "words").glob("*.toml"))


def test_there_are_word_files():
    assert {p.name for p in WORDS} >= {"stems.toml", "headings.toml"}


@pytest.mark.parametrize("path", WORDS, ids=lambda p: p.name)
def test_every_entry_line_says_why_it_is_there(path):
    tomllib.loads(path.read_text("utf-8"))     # and the file is valid TOML
    bare = [line for line in path.read_text("utf-8").splitlines()
            if line.strip() and not line.lstrip().startswith(("#", "[")) and line.strip() != "]"
            and not line.rstrip().endswith("= [") and "#" not in line]
    assert bare == []
