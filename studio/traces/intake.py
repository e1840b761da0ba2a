"""Upload intake: a log file received, stored once, and its parse enqueued.

``create_upload`` streams the file to ``UPLOAD_ROOT`` while hashing it; the same file uploaded
again to the same workspace is the same upload (a failed one is resumed from its checkpoint,
``resume_upload``).  The parse itself runs in a worker (``studio.traces.loading``); beat's sweeper
enqueues again the parse of an upload whose task was lost (``requeue_stalled_uploads``).

An upload may ask to be audited as it loads.  Audits sit above traces, so what auditing offers an
upload (is it auditable, which rule set a client named, auditing a file sent again) is handed in:
``studio.audits`` registers its ``UploadAuditing`` when the apps are ready.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import tempfile
from datetime import timedelta
from pathlib import Path
from typing import Protocol

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone

from studio import tasks
from studio.errors import Conflict, ServiceError
from studio.workspaces.acting import acting_user
from studio.workspaces.actions import LogAction
from studio.workspaces.models import Workspace
from studio.workspaces.services import record

from . import formats
from .formats import OptionsError
from .models import Upload, UploadStatus

logger = logging.getLogger(__name__)

CHUNK_BYTES = 1024 * 1024


class UploadAuditing(Protocol):
    """What auditing offers an upload that asks to be audited (``studio.audits.intake``)."""

    def rule_set(self, workspace: Workspace, raw: str | None):
        """The rule set a client named by its id as sent (blank: None); a ServiceError naming
        ``rule_set`` when it is not one of the workspace's."""

    def refuse_unless_auditable(self, workspace: Workspace, rule_set) -> None:
        """A ServiceError when the workspace's approved rules (of ``rule_set``, if any) could
        not audit an upload."""

    def audit_again(self, upload: Upload, rule_set, by) -> None:
        """The same file uploaded again with an audit asked for: audit it now, or once parsed."""


_auditing: UploadAuditing | None = None


def register_auditing(auditing: UploadAuditing) -> None:
    """Called once the apps are ready (``studio.audits.apps``)."""
    global _auditing
    _auditing = auditing


def auditing() -> UploadAuditing:
    if _auditing is None:
        raise RuntimeError("no upload auditing registered: is studio.audits installed?")
    return _auditing


def audit_rule_set(workspace: Workspace, raw: str | None):
    """The rule set an upload asks to be audited with, from its id as sent (blank: none); a
    ServiceError naming ``rule_set`` when it is not an id of this workspace's rule sets."""
    return auditing().rule_set(workspace, raw)


def upload_root() -> Path:
    return Path(settings.UPLOAD_ROOT)


def stored_file(upload: Upload) -> Path:
    return upload_root() / upload.stored_path


def _chunks(file):
    if hasattr(file, "chunks"):  # a Django UploadedFile: from memory or its temporary file
        yield from file.chunks(CHUNK_BYTES)
        return
    while chunk := file.read(CHUNK_BYTES):
        yield chunk


def create_upload(workspace: Workspace, file, format: str, options: dict | None = None,
                  by=None, filename: str | None = None, audit: bool = False,
                  rule_set=None) -> tuple[Upload, bool]:
    """Store ``file`` and enqueue its parsing after commit.  Returns ``(upload, created)``: the
    same file uploaded to the workspace before gives that upload back and adds nothing, except
    that an upload which had failed is resumed (its ``resumed`` is then True).

    ``audit``: audit the upload's sessions with the approved rules of ``rule_set`` (or of the
    workspace) as it loads (``studio.audits.intake``); for a file uploaded before, audit it now
    (or once parsed)."""
    options = options if options is not None else {}
    try:
        formats.check_options(format, options)
    except OptionsError as exc:
        raise ServiceError(exc.message, field=exc.field) from None
    if audit:
        auditing().refuse_unless_auditable(workspace, rule_set)
    filename = (filename or getattr(file, "name", None) or "upload")
    filename = os.path.basename(str(filename))[:255] or "upload"
    incoming = upload_root() / "incoming"
    incoming.mkdir(parents=True, exist_ok=True)
    digest, size = hashlib.sha256(), 0
    temporary: Path | None = None
    try:
        with tempfile.NamedTemporaryFile(dir=incoming, delete=False) as handle:
            temporary = Path(handle.name)
            for chunk in _chunks(file):
                digest.update(chunk)
                handle.write(chunk)
                size += len(chunk)
        sha256 = digest.hexdigest()
        if size == 0:
            raise ServiceError(f"{filename} is empty: there is nothing to import", field="file",
                               status=422)
        if format == "csv":  # a mapping naming a missing column is refused now, not later
            with open(temporary, "rb") as stored:
                try:
                    formats.check_csv_header(stored, options)
                except OptionsError as exc:
                    raise ServiceError(exc.message, field=exc.field) from None
        existing = Upload.objects.filter(workspace=workspace, sha256=sha256).first()
        if existing is not None:
            return _again(existing, format, options, audit, rule_set, by), False
        relative = Path(str(workspace.pk)) / sha256
        (upload_root() / relative).parent.mkdir(parents=True, exist_ok=True)
        os.replace(temporary, upload_root() / relative)
        try:
            with transaction.atomic():
                upload = Upload.objects.create(
                    workspace=workspace, uploaded_by=acting_user(by), filename=filename,
                    format=format, options=options, sha256=sha256, size=size,
                    stored_path=str(relative), audit_requested=audit,
                    audit_rule_set=rule_set if audit else None)
                record(workspace, by, LogAction.UPLOAD_CREATED, upload, filename=filename,
                       format=format,
                       sha256=sha256, size=size, audit=audit,
                       rule_set=rule_set.name if audit and rule_set is not None else None)
                enqueue_parse(upload.pk)
        except IntegrityError:
            # The same file, uploaded at the same moment: the first one stored is the upload.
            existing = Upload.objects.filter(workspace=workspace, sha256=sha256).first()
            if existing is None:
                raise
            return _again(existing, format, options, audit, rule_set, by), False
        return upload, True
    finally:
        if temporary is not None:
            temporary.unlink(missing_ok=True)


def _again(existing: Upload, format: str, options: dict, audit: bool = False, rule_set=None,
           by=None) -> Upload:
    if existing.format != format or (existing.options or {}) != options:
        raise Conflict(f"this file was already uploaded to this workspace as upload "
                       f"#{existing.pk} (format {existing.format}, options "
                       f"{json.dumps(existing.options or {})}); a file is imported once",
                       field="file")
    if existing.status == UploadStatus.RECEIVED:
        # Its parse task may never have reached a broker; enqueueing again is harmless.
        enqueue_parse(existing.pk)
    resumed = False
    if existing.status == UploadStatus.FAILED:
        # Sending the file again is how a person retries: it parses on from where it stopped.
        try:
            existing = resume_upload(existing, by)
            resumed = True
        except Conflict:
            existing.refresh_from_db()  # resumed by someone else meanwhile
    if audit:
        auditing().audit_again(existing, rule_set, by)
    existing.resumed = resumed
    return existing


def resume_upload(upload: Upload, by=None) -> Upload:
    """Parse a failed upload again from its checkpoint, with fresh attempts: the batches it
    loaded stay and are skipped, so every event ends up stored once.  A ``Conflict`` when the
    upload has not failed (nothing to resume)."""
    with transaction.atomic():
        locked = (Upload.objects.select_for_update().select_related("workspace")
                  .get(pk=upload.pk))
        if locked.status != UploadStatus.FAILED:
            raise Conflict(f"upload #{locked.pk} is {locked.status}, not failed; there is "
                           "nothing to resume")
        failure = locked.error
        locked.status, locked.attempts, locked.error = UploadStatus.RECEIVED, 0, ""
        # Not started again yet: beat's sweeper enqueues it again if the broker loses the task.
        locked.started_at, locked.finished_at, locked.requeued_at = None, None, timezone.now()
        locked.save(update_fields=["status", "attempts", "error", "started_at", "finished_at",
                                   "requeued_at"])
        record(locked.workspace, by, LogAction.UPLOAD_RESUMED, locked, items_done=locked.items_done,
               events=locked.events_stored, failure=failure[:500])
        enqueue_parse(locked.pk)
    return locked


def enqueue_parse(upload_id: int, after_commit: bool = True) -> None:
    """Parse the upload in a worker, once the current transaction commits (or at once)."""

    def unavailable(exc) -> None:
        # The upload is stored and stays "received"; beat's sweeper enqueues it again within a
        # minute or two (as does uploading the same file again).
        logger.warning("upload %s: the broker is unavailable; parsing not enqueued", upload_id)

    tasks.enqueue(tasks.PARSE_UPLOAD, upload_id, after_commit=after_commit,
                  unavailable=unavailable)


# An upload no worker has claimed this long after it was accepted is enqueued again.
NEVER_STARTED_SECONDS = 60


def requeue_stalled_uploads(stall_seconds: float | None = None) -> list[int]:
    """Enqueue again the parse of every upload still received or parsing whose last sign of
    life (created, claimed, requeued) is older than ``stall_seconds`` (default
    ``settings.AUDIT_STALL_SECONDS``, longer than a task may run): its task was lost.  A parse
    that is in fact still running makes the duplicate stand down (``_Superseded``).  An upload
    never started is enqueued again sooner, after ``NEVER_STARTED_SECONDS``."""
    stall = settings.AUDIT_STALL_SECONDS if stall_seconds is None else stall_seconds
    now = timezone.now()
    cutoff = now - timedelta(seconds=stall)
    requeued = []
    waiting = (Upload.objects.filter(status__in=[UploadStatus.RECEIVED, UploadStatus.PARSING],
                                     created_at__lt=cutoff)
               .exclude(started_at__gte=cutoff).exclude(requeued_at__gte=cutoff))
    # Never started a minute after it was received (or last enqueued): its task most likely
    # never reached the broker (down when the upload was accepted).  Enqueued again once a
    # minute until a worker claims it; a duplicate finds it claimed and does nothing.
    recent = now - timedelta(seconds=NEVER_STARTED_SECONDS)
    never_started = (Upload.objects.filter(status=UploadStatus.RECEIVED, started_at__isnull=True,
                                           created_at__lt=recent)
                     .exclude(requeued_at__gte=recent))
    for upload in (waiting | never_started).only("id", "requeued_at"):
        if Upload.objects.filter(pk=upload.pk, requeued_at=upload.requeued_at).update(
                requeued_at=now):
            logger.warning("upload %s not started, or no progress for %.0f s: parse enqueued "
                           "again", upload.pk, stall)
            enqueue_parse(upload.pk, after_commit=False)  # the claim above is committed
            requeued.append(upload.pk)
    return requeued

