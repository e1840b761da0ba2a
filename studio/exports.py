"""Downloads shared by the pages and the API: CSV streamed row by row, safe to open in a
spreadsheet, served as attachments."""

from __future__ import annotations

import csv
from collections.abc import Iterable, Iterator
from decimal import Decimal

from django.http import StreamingHttpResponse

from studio.logic.invisible import is_invisible

# A spreadsheet runs a cell that starts like a formula; text from agent logs may do just that.
# Excel and LibreOffice skip leading blanks and read the full-width (and small) signs as their
# ASCII forms, so the check looks past any whitespace or invisible character (the one rule of
# studio.logic.invisible: format and control characters, fillers).
FORMULA_SIGNS = frozenset("=+-@" "\uff1d\uff0b\uff0d\uff20" "\ufe66\ufe62\ufe63\ufe6b" "\u2212")
# A cell starting with one of these is neutralised whatever follows (OWASP: tab and CR).
FORMULA_STARTS = ("\t", "\r", "\n")


def _first_visible(text: str) -> str:
    """The first character of ``text`` that is neither whitespace nor invisible (zero-width
    space, byte-order mark, direction marks, controls, fillers); "" when there is none."""
    for char in text:
        if not (char.isspace() or is_invisible(char)):
            return char
    return ""


def formula_like(text: str) -> bool:
    """Whether a spreadsheet could read ``text`` as a formula (or run it when edited)."""
    return text.startswith(FORMULA_STARTS) or _first_visible(text) in FORMULA_SIGNS


def spreadsheet_safe(value):
    """The cell as written: text a spreadsheet could read as a formula gets a leading quote
    (OWASP's advice), None is an empty cell, numbers stay numbers, anything else is its text."""
    if value is None:
        return ""
    if isinstance(value, (int, float, Decimal)):  # bool included: True and False are text-safe
        return value
    text = value if isinstance(value, str) else str(value)
    return "'" + text if formula_like(text) else text


class _LineBuffer:
    """csv.writer writes into this and gets the line back, so rows stream one at a time."""

    def write(self, text: str) -> str:
        return text


def csv_lines(header: list[str], rows: Iterable[Iterable]) -> Iterator[str]:
    writer = csv.writer(_LineBuffer())
    yield writer.writerow([spreadsheet_safe(h) for h in header])
    for row in rows:
        yield writer.writerow([spreadsheet_safe(cell) for cell in row])


def attachment(chunks: Iterator[str], content_type: str, filename: str) -> StreamingHttpResponse:
    response = StreamingHttpResponse(chunks, content_type=content_type)
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response


def upload_errors_csv(upload) -> StreamingHttpResponse:
    """Every line error of an upload (line, reason, pointer), streamed from the database."""
    rows = (upload.errors.order_by("line", "id").values_list("line", "reason", "pointer")
            .iterator(chunk_size=2000))
    return attachment(csv_lines(["line", "reason", "pointer"], rows),
                      "text/csv; charset=utf-8", f"upload-{upload.pk}-errors.csv")
