"""The client's two exceptions: the server refused (or could not be reached), and the guard
stopped the agent."""

from __future__ import annotations

from typing import Any


class StudioError(Exception):
    """A request the studio refused or that never got an answer.

    ``status`` is the HTTP status (None when the server could not be reached or its answer was
    not JSON); ``detail`` and ``field`` come from the problem document (``field`` names the
    input at fault, when the server said); ``body`` is the whole answer when it was JSON;
    ``retry_after`` is in seconds when the server asked to retry later (429 and 503, once the
    client's own retries were spent).
    """

    def __init__(self, status: int | None, detail: str, field: str | None = None,
                 body: Any = None, retry_after: float | None = None):
        self.status = status
        self.detail = detail
        self.field = field
        self.body = body
        self.retry_after = retry_after
        where = f" (field {field})" if field else ""
        prefix = f"HTTP {status}: " if status is not None else ""
        super().__init__(f"{prefix}{detail}{where}")


class GuardStopped(Exception):
    """The guard did not let the agent take this step: its decision was ``stop`` (a human
    denied it, or a timed-out question defaulted to stop), the guard kept asking for another
    proposal past the client's limit, or nobody answered a question in time.

    ``reason`` says why; ``answer`` is the guard's last answer (its ``rules_at_risk`` name the
    rules); ``answers`` every answer of the step, in order.
    """

    def __init__(self, reason: str, answer: dict | None = None,
                 answers: list[dict] | None = None):
        self.reason = reason
        self.answer = answer or {}
        self.answers = answers if answers is not None else ([answer] if answer else [])
        super().__init__(reason)


class DecisionPending(GuardStopped):
    """A question to a human (``ask_human``) was still unanswered when the client stopped
    waiting.  A GuardStopped: an agent that catches GuardStopped does not take the step."""
