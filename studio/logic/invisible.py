"""The one rule for characters that cannot be seen, used wherever text names something a person
reads and acts on: formulas (an atom that reads as one name and is another, Trojan Source),
live session ids (a session listed as one id that is another), spreadsheet cells.

Refused: format characters (Unicode category Cf: direction controls, zero-width characters,
the soft hyphen, invisible operators such as U+2062, tag characters U+E0000-E007F), control
characters (Cc) except those the caller's text allows (a formula's line breaks and tabs),
lone surrogates (Cs: not characters at all), and the other code points that draw nothing
(Hangul fillers, the combining grapheme joiner, variation selectors, Khmer inherent vowels,
the blank braille pattern: ``OTHER_INVISIBLE``).  No Django here: studio.logic stays pure.
"""

from __future__ import annotations

import re
import unicodedata

_REFUSED_CATEGORIES = frozenset({"Cf", "Cc", "Cs"})

# Names a reader knows them by; unicodedata has none for controls and lower-case is kinder.
_NAMES = {
    "\u202a": "left-to-right embedding", "\u202b": "right-to-left embedding",
    "\u202c": "pop directional formatting", "\u202d": "left-to-right override",
    "\u202e": "right-to-left override", "\u2066": "left-to-right isolate",
    "\u2067": "right-to-left isolate", "\u2068": "first strong isolate",
    "\u2069": "pop directional isolate", "\u200e": "left-to-right mark",
    "\u200f": "right-to-left mark", "\u061c": "Arabic letter mark",
    "\u200b": "zero-width space", "\u200c": "zero-width non-joiner",
    "\u200d": "zero-width joiner", "\u2060": "word joiner",
    "\ufeff": "zero-width no-break space", "\u00ad": "soft hyphen",
    "\t": "tab", "\n": "line feed", "\r": "carriage return", "\x0b": "vertical tab",
    "\x0c": "form feed", "\x1b": "escape", "\x7f": "delete",
}

# Not format characters, yet they draw nothing: Unicode's default-ignorable code points outside
# Cf (Hangul fillers, the combining grapheme joiner, variation selectors, Mongolian free
# variation selectors, Khmer inherent vowels, and the unassigned U+FFF0-FFF8 and
# U+E0080-E0FFF), with the blank braille pattern and the Khitan filler.
OTHER_INVISIBLE = frozenset(
    ["\u034f", "\u115f", "\u1160", "\u17b4", "\u17b5", "\u180b", "\u180c", "\u180d", "\u180f",
     "\u2800", "\u3164", "\uffa0", "\U00016fe4"]
    + [chr(code) for code in range(0xFE00, 0xFE10)]          # variation selectors
    + [chr(code) for code in range(0xFFF0, 0xFFF9)]
    + [chr(code) for code in range(0xE0000, 0xE1000)         # tags (Cf) and their plane
       if unicodedata.category(chr(code)) != "Cf"])


def _character_class(chars: frozenset[str]) -> str:
    """``[a-bc-d]`` with runs as ranges: a class of thousands of single characters makes
    every search walk all of them."""
    codes = sorted(map(ord, chars))
    runs, start = [], codes[0]
    for previous, code in zip(codes, codes[1:] + [-1]):
        if code == previous + 1:
            continue
        last = f"-{re.escape(chr(previous))}" if previous != start else ""
        runs.append(re.escape(chr(start)) + last)
        start = code
    return "[" + "".join(runs) + "]"


_OTHER_INVISIBLE = re.compile(_character_class(OTHER_INVISIBLE))


def is_invisible(char: str) -> bool:
    """Whether the rule refuses ``char`` (one character)."""
    return unicodedata.category(char) in _REFUSED_CATEGORIES or char in OTHER_INVISIBLE


def find_invisible(text: str, allowed: str = "") -> int | None:
    """The index of the first character of ``text`` the rule refuses, other than those in
    ``allowed`` (such as ``"\\t"``); None when there is none."""
    probe = text.translate(_without(allowed)) if allowed else text
    # str.isprintable is False for every Cc, Cf and Cs character (and for some that are
    # visible, such as U+00A0, which the loop lets through): most text skips the loop.
    if probe.isprintable():
        found = _OTHER_INVISIBLE.search(text)
        return found.start() if found else None
    for index, char in enumerate(text):
        if char not in allowed and is_invisible(char):
            return index
    return None


_DELETIONS: dict[str, dict[int, None]] = {}


def _without(allowed: str) -> dict[int, None]:
    table = _DELETIONS.get(allowed)
    if table is None:
        table = _DELETIONS[allowed] = {ord(char): None for char in allowed}
    return table


def describe(char: str) -> str:
    """``an invisible right-to-left override (U+202E)``, ``a control character (U+000D,
    carriage return)``: what a refusal calls the character."""
    code = f"U+{ord(char):04X}"
    category = unicodedata.category(char)
    if category == "Cs":
        return f"an unpaired UTF-16 surrogate ({code}, not a character)"
    name = _NAMES.get(char) or unicodedata.name(char, "").lower()
    if category == "Cc":
        return f"a control character ({code}{', ' + name if name else ''})"
    if name.startswith("invisible "):  # "invisible times", "invisible separator"
        return f"an {name} ({code})"
    return f"an invisible {name or 'character'} ({code})"
