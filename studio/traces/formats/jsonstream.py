"""Reading one large JSON document a piece at a time.

``JsonStream`` walks the members of the top-level object; the caller takes each member's value
whole (``value()``) or, for a large array, element by element (``elements()``).  Only the piece
being decoded is held in memory, so an Inspect log with thousands of samples, or a transcript with
thousands of messages, is read with the memory of its largest element.  Positions are reported as
line numbers of the file.
"""

from __future__ import annotations

import codecs
import json
from collections.abc import Iterator
from typing import Any, BinaryIO

from .base import DECODER, MAX_LINE_BYTES

WHITESPACE = " \t\n\r"
NUMBER_CHARS = frozenset("0123456789.eE+-")


class DocumentError(ValueError):
    """The document cannot be read further; ``line`` is where reading stopped."""

    def __init__(self, line: int, reason: str):
        super().__init__(f"line {line}: {reason}")
        self.line = line
        self.reason = reason


class JsonStream:
    def __init__(self, file: BinaryIO, chunk_size: int = 1 << 16,
                 max_value_bytes: int = MAX_LINE_BYTES):
        self._file = file
        self._decoder = codecs.getincrementaldecoder("utf-8")()
        self._chunk_size = chunk_size
        self._max_value = max_value_bytes
        self._buf = ""
        self._pos = 0
        self._eof = False
        self._line = 1          # the line number at self._counted
        self._counted = 0       # position in self._buf up to which newlines are counted
        self._first = True

    # -- reading -----------------------------------------------------------------------------

    def _fill(self, at_least: int = 0) -> bool:
        """Read more text; False at the end of the file."""
        if self._eof:
            return False
        if self._pos > 0:  # drop what has been consumed, keeping the line count right
            self.line_at(self._pos)
            self._buf = self._buf[self._pos:]
            self._counted -= self._pos
            self._pos = 0
        size = max(self._chunk_size, at_least)
        raw = self._file.read(size)
        try:
            text = self._decoder.decode(raw, final=not raw)
        except UnicodeDecodeError:
            raise DocumentError(self.line_at(len(self._buf)), "not UTF-8 text") from None
        if self._first:
            self._first = False
            text = text.removeprefix("\ufeff")
        if not raw:
            self._eof = True
        self._buf += text
        return bool(raw)

    def line_at(self, pos: int) -> int:
        if pos > self._counted:
            self._line += self._buf.count("\n", self._counted, pos)
            self._counted = pos
        return self._line

    @property
    def line(self) -> int:
        return self.line_at(self._pos)

    def _skip_ws(self) -> str:
        """The next significant character ("" at the end of the file), not consumed."""
        while True:
            buf, pos = self._buf, self._pos
            while pos < len(buf) and buf[pos] in WHITESPACE:
                pos += 1
            self._pos = pos
            if pos < len(buf):
                return buf[pos]
            if not self._fill():
                return ""

    def _expect(self, chars: str, what: str) -> str:
        found = self._skip_ws()
        if not found or found not in chars:
            got = repr(found) if found else "the end of the file"
            raise DocumentError(self.line, f"not valid JSON (expected {what}, found {got})")
        self._pos += 1
        return found

    def value(self) -> Any:
        """Decode the next JSON value whole."""
        if not self._skip_ws():
            raise DocumentError(self.line, "not valid JSON (unexpected end of the file)")
        while True:
            try:
                value, end = DECODER.raw_decode(self._buf, self._pos)
            except json.JSONDecodeError as exc:
                truncated = exc.pos >= len(self._buf) - 8 or exc.msg.startswith("Unterminated")
                if truncated and self._grow():
                    continue
                raise DocumentError(self.line_at(exc.pos), f"not valid JSON ({exc.msg})") from None
            except ValueError as exc:  # NaN or Infinity
                raise DocumentError(self.line, f"not valid JSON ({exc})") from None
            except RecursionError:
                raise DocumentError(self.line, "not valid JSON (nested too deeply)") from None
            if type(value) in (int, float) and not self._eof:
                # A number that reaches the end of what is read may go on in the next chunk.
                tail, buf = end, self._buf
                while tail < len(buf) and buf[tail] in NUMBER_CHARS:
                    tail += 1
                if tail == len(buf) and self._grow():
                    continue
            self._pos = end
            return value

    def _grow(self) -> bool:
        pending = len(self._buf) - self._pos
        if pending > self._max_value:
            raise DocumentError(self.line, f"a value is longer than "
                                           f"{self._max_value // (1024 * 1024)} MiB; not read")
        return self._fill(at_least=pending)  # doubles what is pending: linear overall

    # -- structure ---------------------------------------------------------------------------

    def members(self) -> Iterator[str]:
        """The keys of the top-level object, in order.  After each key the caller reads the
        value (``value()`` or ``elements()``); a value it does not read is skipped."""
        self._expect("{", "an object")
        if self._skip_ws() == "}":
            self._pos += 1
            return self._end()
        while True:
            if self._skip_ws() != '"':
                self._expect('"', "a member name")
            key = self.value()
            self._expect(":", "':'")
            self._taken = False
            yield key
            if not self._taken:
                self.value()
            if self._expect(",}", "',' or '}'") == "}":
                return self._end()

    def elements(self) -> Iterator[tuple[int, Any]]:
        """``(line, element)`` for each element of the array that comes next."""
        self._taken = True
        self._expect("[", "an array")
        if self._skip_ws() == "]":
            self._pos += 1
            return
        while True:
            self._skip_ws()
            line = self.line
            yield line, self.value()
            if self._expect(",]", "',' or ']'") == "]":
                return

    def take(self) -> Any:
        """The current member's value, whole."""
        self._taken = True
        return self.value()

    def _end(self) -> None:
        if self._skip_ws():
            raise DocumentError(self.line, "not valid JSON (more data after the document)")
