"""What a database column can hold: Postgres refuses NUL characters in text and JSON, and a
lone surrogate has no UTF-8 form.  Shared by the API's request boundary and by services that
read JSON out of form text, so it lives below both."""

from __future__ import annotations

import math
import re
from typing import Any

from studio.errors import ServiceError

_LONE_SURROGATE = re.compile("[\ud800-\udfff]")  # json.loads joins real pairs into one character


def text_problem(text: str) -> str | None:
    """Why ``text`` cannot be stored (NUL: Postgres refuses it; a lone surrogate has no UTF-8
    form), or None."""
    if "\x00" in text:
        return "must not contain NUL characters (\\u0000)"
    if not text.isascii() and _LONE_SURROGATE.search(text):
        return ("must not contain a lone surrogate (such as \\ud800: half of a UTF-16 pair, "
                "which no UTF-8 text can hold)")
    return None


def check_json(value: Any, where: str) -> None:
    """Refuse JSON a database column cannot hold: NUL characters, lone surrogates, non-finite
    numbers.  Raises ServiceError (422) naming the place, e.g. ``config.path``.  (Request
    bodies are checked at the boundary, studio.api.boundary; this is for JSON a service reads
    out of form text.)"""
    if isinstance(value, str):
        problem = text_problem(value)
        if problem is not None:
            raise ServiceError(problem, field=where, status=422)
    elif isinstance(value, float):
        if not math.isfinite(value):
            raise ServiceError("must be a finite number", field=where, status=422)
    elif isinstance(value, dict):
        for key, item in value.items():
            check_json(key, where)
            check_json(item, f"{where}.{key}")
    elif isinstance(value, (list, tuple)):
        for index, item in enumerate(value):
            check_json(item, f"{where}[{index}]")
