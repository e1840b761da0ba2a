"""The domain's refusals, shared by every app's services and by every surface.

Services raise these; the HTTP layer (``studio.api.urls``) answers them as
``{"detail", "field", "details"}`` with their status, and pages show their message.  Nothing here
knows about HTTP requests, so any module may import it.
"""

from __future__ import annotations


class ServiceError(Exception):
    """A request the domain refuses: a clear message, a status, optionally the field at fault
    and structured ``details`` (answered as ``{"detail", "field", "details"}``)."""

    status = 400

    def __init__(self, message: str, *, field: str | None = None, status: int | None = None,
                 details: dict | None = None):
        super().__init__(message)
        self.message = message
        self.field = field
        self.details = details
        if status is not None:
            self.status = status


class PermissionDenied(ServiceError):
    status = 403


class Conflict(ServiceError):
    status = 409
