"""Erasing values from audit-log entries: the one change the log allows (migration 0007).

``redact`` replaces values of entries' details by ``ERASED``; the database refuses anything
else (a changed key, a value not replaced but altered, another column).  The model's own guards
refuse every change, so this goes through SQL.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from typing import Any

from django.db import connection

from .models import AuditLogEntry

ERASED = "[erased]"


def erased_except(keep: Iterable[str]) -> Callable[[dict], dict]:
    """A redaction keeping the top-level ``keep`` keys and erasing every other value."""
    kept = frozenset(keep)

    def redaction(details: dict) -> dict:
        return {k: v if k in kept else ERASED for k, v in details.items()}

    return redaction


def redact(entries: Iterable[AuditLogEntry], redaction: Callable[[dict], Any]) -> int:
    """Store ``redaction(details)`` for each entry whose details it changes; how many changed.
    ``redaction`` may only replace values with ``ERASED``."""
    changed = []
    for entry in entries:
        details = entry.details if isinstance(entry.details, dict) else {}
        new = redaction(details)
        if new != details:
            changed.append((entry.pk, new))
    if not changed:
        return 0
    table = AuditLogEntry._meta.db_table
    cast = "::jsonb" if connection.vendor == "postgresql" else ""
    with connection.cursor() as cursor:
        cursor.executemany(f"UPDATE {table} SET details = %s{cast} WHERE id = %s",
                           [(json.dumps(new), pk) for pk, new in changed])
    return len(changed)
