"""Downloads shared by the pages and the API: CSV streamed row by row, safe to open in a
spreadsheet, served as attachments."""

from __future__ import annotations

import csv
from collections.abc import Iterable, Iterator

from django.http import StreamingHttpResponse

# A spreadsheet runs a cell that starts like a formula; text from agent logs may do just that.
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def spreadsheet_safe(value):
    """The cell with a leading quote when a spreadsheet would read it as a formula; None as
    an empty cell; numbers unchanged."""
    if value is None:
        return ""
    if isinstance(value, str) and value.startswith(FORMULA_STARTS):
        return "'" + value
    return value


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
