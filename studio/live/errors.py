"""The refusals of live monitoring that the routes answer with a status of their own."""

from __future__ import annotations

from contextlib import contextmanager

from studio.errors import ServiceError
from studio.labeling.llm import LLMError

class LabelerUnavailable(ServiceError):
    """A labeler that asks a model (an LLM labeler) could not answer: nothing was stored; the
    sender retries later."""

    status = 503
    retry_after = 30


@contextmanager
def labelers_answer():
    try:
        yield
    except LLMError as exc:
        raise LabelerUnavailable(f"a labeler could not label the events ({exc.message}); "
                                 "nothing was stored, retry later") from None


class SessionEnded(ServiceError):
    """New events for a live session that was ended (by its agent or after the workspace's
    inactivity timeout): its verdicts are final, so nothing more is taken."""

    status = 409

    def __init__(self, external_id: str):
        super().__init__(f"live session {external_id!r} has ended: its verdicts are final and "
                         "it takes no more events; send them under a new session id",
                         field="session_id")


