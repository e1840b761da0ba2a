"""Uploaded logs, sessions and their events (the canonical event of DESIGN.md)."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from studio.logic.events import monitor_event  # noqa: F401 - re-exported: the event rules read
from studio.workspaces.models import Workspace


class UploadFormat(models.TextChoices):
    JSONL = "jsonl"
    CSV = "csv"
    OPENAI = "openai"     # chat transcripts: messages with tool_calls
    OTLP = "otlp"         # OTLP/HTTP JSON traces
    INSPECT = "inspect"   # Inspect AI logs (.eval zip or .json)


class UploadStatus(models.TextChoices):
    RECEIVED = "received"
    PARSING = "parsing"
    PARSED = "parsed"
    FAILED = "failed"


class Upload(models.Model):
    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="uploads")
    uploaded_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True,
                                    on_delete=models.SET_NULL, related_name="+")
    filename = models.CharField(max_length=255)
    format = models.CharField(max_length=20, choices=UploadFormat.choices)
    options = models.JSONField(default=dict, blank=True)  # e.g. the CSV column mapping
    sha256 = models.CharField(max_length=64)
    size = models.BigIntegerField(default=0)
    stored_path = models.CharField(max_length=500, blank=True)
    status = models.CharField(max_length=20, choices=UploadStatus.choices,
                              default=UploadStatus.RECEIVED)
    lines_total = models.BigIntegerField(default=0)
    lines_ok = models.BigIntegerField(default=0)
    lines_bad = models.BigIntegerField(default=0)
    events_stored = models.BigIntegerField(default=0)
    # Where parsing has got to: the parser's items already loaded (a rerun skips them) and the
    # bytes of the file read so far (the progress bar).  Both move in the batch's transaction.
    items_done = models.BigIntegerField(default=0)
    bytes_read = models.BigIntegerField(default=0)
    attempts = models.PositiveSmallIntegerField(default=0)  # parse runs started (capped)
    error = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    # When its parse task was last enqueued again by the stall sweeper.
    requeued_at = models.DateTimeField(null=True, blank=True)
    # Audit on arrival: the uploader asked for the upload's sessions to be audited (with the
    # rule set's, or the workspace's, approved rules) as it loads; the run once it is created.
    audit_requested = models.BooleanField(default=False)
    audit_rule_set = models.ForeignKey("rules.RuleSet", null=True, blank=True,
                                       on_delete=models.SET_NULL, related_name="+")
    audit_run = models.ForeignKey("audits.AuditRun", null=True, blank=True,
                                  on_delete=models.SET_NULL, related_name="+")
    # Its events' part of the workspace's vocabulary is kept apart (``VocabularyShare``), so an
    # erasure takes it off without reading the events: every upload created from migration
    # traces 0009 on, and those a vocabulary rebuild counted; not the older ones.
    vocabulary_shared = models.BooleanField(default=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["workspace", "sha256"],
                                               name="same_file_uploaded_once")]
        ordering = ["-created_at"]

    @property
    def percent(self) -> float:
        """How far parsing has got, for the progress bar (100 only once it is done)."""
        if self.status in (UploadStatus.PARSED, UploadStatus.FAILED):
            return 100.0
        if not self.size:
            return 0.0
        # A resumed upload waits (received) at the bytes it had read: its bar does not go back.
        return round(min(99.0, 100.0 * self.bytes_read / self.size), 1)


class UploadError(models.Model):
    """A record of the file that was not imported, and why.  ``line`` is the file's line (for an
    Inspect .eval archive the sample's position; 0 for the file as a whole); ``pointer`` is the
    JSON pointer of the faulty part of a document (``/samples/2/messages/4``)."""

    upload = models.ForeignKey(Upload, on_delete=models.CASCADE, related_name="errors")
    line = models.BigIntegerField()
    reason = models.TextField()
    pointer = models.CharField(max_length=500, blank=True)

    class Meta:
        ordering = ["line", "id"]
        # The error table and the CSV read an upload's errors in line order: with a million
        # errors that must not be a sort.
        indexes = [models.Index(fields=["upload", "line", "id"], name="upload_error_line_idx")]


class Attention(models.IntegerChoices):
    """A live session's place on the live page, most urgent first (``studio.live.attention``
    decides it; ``TraceSession.attention`` stores it)."""

    VIOLATED = 0
    AT_RISK = 1
    OPEN = 2
    COMPLIED = 3


class TraceSession(models.Model):
    """One agent session.  ``monitor_state`` holds the live monitors (JSON) between webhook
    deliveries; the row is locked while a delivery (or an upload batch) adds events to it.
    ``steps`` is the number of events stored for it."""

    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="sessions")
    external_id = models.CharField(max_length=300)
    source = models.CharField(max_length=20, default="upload")  # upload | live
    steps = models.PositiveIntegerField(default=0)
    monitor_state = models.JSONField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    last_event_at = models.DateTimeField(null=True, blank=True)
    # A live session is open until it is ended (by its agent, or after the workspace's
    # inactivity timeout); an uploaded log is a finished session.
    ended_at = models.DateTimeField(null=True, blank=True)
    # A live session's place on the live page as its monitors stood after its last delivery
    # (or its end): written with them, so the page orders every session by it in the database.
    attention = models.PositiveSmallIntegerField(choices=Attention.choices,
                                                 default=Attention.OPEN)
    # What the page orders by: a session without saved monitors (none read yet, or dropped by
    # an erasure to be rebuilt) shows nothing decided, so it is open whatever was stored.
    live_order = models.GeneratedField(
        expression=models.Case(models.When(monitor_state__isnull=True,
                                           then=models.Value(Attention.OPEN.value)),
                               default=models.F("attention"),
                               output_field=models.PositiveSmallIntegerField()),
        output_field=models.PositiveSmallIntegerField(), db_persist=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["workspace", "external_id"],
                                               name="session_id_unique_in_workspace")]
        ordering = ["id"]
        # The live page's query (``studio.web.live_pages``: one page of a workspace's live
        # sessions, most urgent first, most recently active first within each) reads the index
        # live_session_order, which migration traces 0010 makes on Postgres only (SQLite cannot
        # put NULLS LAST in an index).

    @property
    def is_open(self) -> bool:
        """Whether more events may still arrive: a live session not yet ended."""
        return session_is_open(self.source, self.ended_at)


def session_is_open(source: str, ended_at) -> bool:
    """``TraceSession.is_open`` from the two columns (for code that reads rows, not models)."""
    return source == "live" and ended_at is None


class Event(models.Model):
    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="+")
    # No index of its own: the unique (session, step) index serves every lookup by session, and
    # one index fewer to maintain makes bulk loads faster.
    session = models.ForeignKey(TraceSession, on_delete=models.CASCADE, related_name="events",
                                db_index=False)
    upload = models.ForeignKey(Upload, null=True, blank=True, on_delete=models.SET_NULL,
                               related_name="events")
    step = models.PositiveIntegerField()
    # Idempotency: a delivery's event id is unique per workspace and source.
    source = models.CharField(max_length=40, default="upload")
    event_id = models.CharField(max_length=200, null=True, blank=True)
    lifeline = models.CharField(max_length=200, blank=True)
    timestamp = models.DateTimeField(null=True, blank=True)
    input = models.JSONField(null=True, blank=True)
    output = models.JSONField(null=True, blank=True)
    data = models.JSONField(default=dict, blank=True)
    labels = models.JSONField(null=True, blank=True)  # labels the event arrived with
    message_id = models.CharField(max_length=200, blank=True)
    message_peer = models.CharField(max_length=200, blank=True)
    message_kind = models.CharField(max_length=10, blank=True)  # send | receive

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["session", "step"], name="one_event_per_step"),
            models.UniqueConstraint(fields=["workspace", "source", "event_id"],
                                    condition=models.Q(event_id__isnull=False),
                                    name="event_id_unique_per_source"),
        ]
        ordering = ["session_id", "step"]

    def as_monitor_event(self) -> dict:
        """The event as the monitors and labelers read it."""
        return monitor_event(self.session_id, self.step, self.lifeline, self.input, self.output,
                             self.data, self.labels)


class VocabularyKind(models.TextChoices):
    BUILTIN = "builtin"   # a built-in atom seen in an event: tool_call:NAME, stop_reason:R, role:R
    LABEL = "label"       # an atom an event arrived labelled with
    PATH = "path"         # a data path seen in an event (json_type: what it held there)


class VocabularyEntry(models.Model):
    """What a workspace's events were seen to produce (``studio.logic.vocabulary``), on one kind
    of event: ``carrier`` is that kind (``tool_call:NAME``, else ``role:R``, else ""),
    ``events`` how many stored events showed it there, ``examples`` up to five distinct values
    they held (paths only).  Added to as uploads are parsed and live events arrive, one upsert
    per batch that adds its counts (``studio.traces.vocabulary.record``); recounted from the
    stored events by ``manage.py rebuild_vocabulary``.  Each upload's part of it is kept apart
    (``VocabularyShare``), which an erasure of the upload subtracts (``studio.traces.erasure``).
    A path seen holding several JSON types has one row per type."""

    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE,
                                  related_name="vocabulary")
    kind = models.CharField(max_length=10, choices=VocabularyKind.choices)
    name = models.CharField(max_length=500)
    json_type = models.CharField(max_length=10, blank=True)  # paths only
    carrier = models.CharField(max_length=500, blank=True)
    events = models.BigIntegerField(default=0)
    examples = models.JSONField(default=list, blank=True)
    first_seen = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(
            fields=["workspace", "kind", "name", "json_type", "carrier"],
            name="vocabulary_entry_once")]


class TraceSessionLink(models.Model):
    """Which session the spans of one OpenTelemetry trace go to (``studio.live.otlp_sessions``):
    the first session any of its spans named (``session.id``, ``gen_ai.conversation.id``), or
    its trace id while none has (``named`` false).  Spans of the trace that were stored under
    the trace id before a span named a session were moved into it then.  ``conflicts`` lists the
    other sessions spans of the trace named later (first seen first, at most
    ``CONFLICTS_KEPT``): their spans were kept in ``session`` too, and the session's page and
    API say so.  The row is locked while a batch of the trace's spans is stored, so two batches
    of one trace decide one after the other."""

    CONFLICTS_KEPT = 10

    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="+")
    trace_id = models.CharField(max_length=32)
    session = models.CharField(max_length=300)  # TraceSession.external_id
    named = models.BooleanField(default=False)
    conflicts = models.JSONField(default=list, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["workspace", "trace_id"],
                                               name="one_session_per_trace")]
        indexes = [models.Index(fields=["workspace", "session"], name="trace_link_session_idx")]


class VocabularyShare(models.Model):
    """One upload's part of a vocabulary entry: how many of its events showed the entry, and up
    to five distinct values they held, those of its first events (``VocabularyEntry.examples``
    of the upload alone).  Written with the entry, in the same transaction, for every upload
    batch (``studio.traces.vocabulary.record``).  An entry's ``events`` is the sum of its shares
    and of the events no upload brought (live deliveries), which have no share.  Erasing an
    upload subtracts its shares from their entries and gives those entries their examples again
    from the other uploads' shares, without reading an event (``studio.traces.erasure``)."""

    entry = models.ForeignKey(VocabularyEntry, on_delete=models.CASCADE, related_name="shares")
    # (no index of its own: the unique (upload, entry) index serves the lookups by upload)
    upload = models.ForeignKey(Upload, on_delete=models.CASCADE, related_name="+",
                               db_index=False)
    events = models.BigIntegerField(default=0)
    examples = models.JSONField(default=list, blank=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["upload", "entry"],
                                               name="vocabulary_share_once")]
