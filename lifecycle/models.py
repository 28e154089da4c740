"""State of the background jobs: runs, locks, retry queues, dead letters, metrics, errors.

The memory itself lives in curator's tables and changes only through its write path; these
tables record what the jobs did and what still waits, so the Jobs page can show it and a
person can retry, discard or undo.
"""

from django.db import models
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from curator.models import ConversationTurn, Owner


class JobKind(models.TextChoices):
    CONSOLIDATE = "consolidate", _("nightly consolidation")
    EXTRACT = "extract", _("extraction")
    END_SESSION = "end_session", _("session end")
    METRICS = "metrics", _("metrics snapshot")


class RunStatus(models.TextChoices):
    QUEUED = "queued", _("queued")
    RUNNING = "running", _("running")
    SUCCEEDED = "succeeded", _("succeeded")
    PARTIAL = "partial", _("finished with errors")
    FAILED = "failed", _("failed")
    SKIPPED = "skipped", _("skipped: another run was in progress")
    UNDONE = "undone", _("undone")


class Trigger(models.TextChoices):
    SCHEDULE = "schedule", _("schedule")
    CATCH_UP = "catch_up", _("catch-up after a missed night")
    MANUAL = "manual", _("run now")
    COMMAND = "command", _("command line")


class JobRun(models.Model):
    """One run of a job; `run_id` is what its MemoryEvents carry in `job_run`."""

    run_id = models.CharField(_("run"), max_length=64, unique=True)
    kind = models.CharField(_("job"), max_length=16, choices=JobKind)
    trigger = models.CharField(_("trigger"), max_length=16, choices=Trigger)
    status = models.CharField(
        _("status"), max_length=16, choices=RunStatus, default=RunStatus.QUEUED, db_index=True
    )
    created_at = models.DateTimeField(_("queued"), default=timezone.now, db_index=True)
    started_at = models.DateTimeField(_("started"), null=True, blank=True)
    finished_at = models.DateTimeField(_("finished"), null=True, blank=True)
    # [{"name", "counts": {...}, "error", "started_at", "finished_at"}], in run order.
    steps = models.JSONField(_("steps"), default=list, blank=True)
    progress = models.JSONField(_("progress"), default=dict, blank=True)
    error = models.TextField(_("error"), blank=True)
    undone_at = models.DateTimeField(_("undone"), null=True, blank=True)

    class Meta:
        verbose_name = _("job run")
        verbose_name_plural = _("job runs")
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return self.run_id

    @property
    def duration(self):
        if self.started_at and self.finished_at:
            return self.finished_at - self.started_at
        return None

    @property
    def finished(self) -> bool:
        return self.status not in (RunStatus.QUEUED, RunStatus.RUNNING)

    @property
    def error_text(self) -> str:
        """The error as shown: a skip's code in words; an exception's own text as it is."""
        if self.error.startswith(LOCKED):
            holder = self.error[len(LOCKED) :]
            return _("another consolidation is running (%(run)s)") % {"run": holder}
        return self.error


# A run skipped because another holds the lock: its error is this prefix + the holder's id.
LOCKED = "locked:"


class JobLock(models.Model):
    """A named lock in the database, so runs in the web process, the consumer and a
    management command never overlap; `expires_at` frees the lock of a crashed run."""

    name = models.CharField(max_length=64, primary_key=True)
    holder = models.CharField(max_length=64)
    acquired_at = models.DateTimeField(default=timezone.now)
    expires_at = models.DateTimeField()

    class Meta:
        verbose_name = _("job lock")
        verbose_name_plural = _("job locks")

    def __str__(self) -> str:
        return f"{self.name} ({self.holder})"


class DeadTask(models.TextChoices):
    EMBED = "embed", _("embedding")
    EXTRACT = "extract", _("extraction")


class DeadStatus(models.TextChoices):
    OPEN = "open", _("open")
    RETRIED = "retried", _("retried")
    DISCARDED = "discarded", _("discarded")


class DeadLetter(models.Model):
    """Work that failed after its last retry (seed 000 section 8): kept for a person."""

    task = models.CharField(_("task"), max_length=16, choices=DeadTask)
    item_kind = models.CharField(_("item kind"), max_length=16)
    object_id = models.PositiveBigIntegerField(_("item id"))
    error = models.TextField(_("error"))
    attempts = models.PositiveIntegerField(_("attempts"))
    status = models.CharField(
        _("status"), max_length=16, choices=DeadStatus, default=DeadStatus.OPEN, db_index=True
    )
    created_at = models.DateTimeField(_("failed"), default=timezone.now)
    resolved_at = models.DateTimeField(_("resolved"), null=True, blank=True)

    class Meta:
        verbose_name = _("dead letter")
        verbose_name_plural = _("dead letters")
        ordering = ["-created_at", "-id"]
        constraints = [
            models.UniqueConstraint(
                fields=["task", "item_kind", "object_id"],
                condition=models.Q(status="open"),
                name="one_open_dead_letter_per_item",
            )
        ]

    def __str__(self) -> str:
        return f"{self.task} {self.item_kind} {self.object_id}"


class QueueStatus(models.TextChoices):
    WAITING = "waiting", _("waiting for a retry")
    DONE = "done", _("done")
    DEAD = "dead", _("gave up (dead letter)")
    DISCARDED = "discarded", _("discarded")


class ExtractionItem(models.Model):
    """A turn whose LLM extraction failed (seed 001 extraction_queue, one row per turn)."""

    turn = models.OneToOneField(
        ConversationTurn, on_delete=models.CASCADE, related_name="extraction_item"
    )
    status = models.CharField(
        _("status"), max_length=16, choices=QueueStatus, default=QueueStatus.WAITING
    )
    attempts = models.PositiveIntegerField(_("attempts"), default=0)
    last_error = models.TextField(_("last error"), blank=True)
    next_attempt_at = models.DateTimeField(_("next attempt"), null=True, blank=True)
    updated_at = models.DateTimeField(_("updated"), auto_now=True)

    class Meta:
        verbose_name = _("extraction retry")
        verbose_name_plural = _("extraction retries")
        indexes = [models.Index(fields=["status", "next_attempt_at"])]

    def __str__(self) -> str:
        return f"turn {self.turn_id}: {self.status}"


class MetricsSnapshot(models.Model):
    """One day's figures for the home page charts (seed 000 section 9 metrics)."""

    owner = models.ForeignKey(Owner, on_delete=models.CASCADE, related_name="+")
    date = models.DateField(_("date"))
    values = models.JSONField(_("values"), default=dict)
    taken_at = models.DateTimeField(_("taken"), default=timezone.now)

    class Meta:
        verbose_name = _("metrics snapshot")
        verbose_name_plural = _("metrics snapshots")
        ordering = ["-date"]
        constraints = [
            models.UniqueConstraint(fields=["owner", "date"], name="one_snapshot_per_day")
        ]

    def __str__(self) -> str:
        return f"{self.date}"


class Service(models.TextChoices):
    LLM = "llm", _("LLM endpoint")
    EMBEDDING = "embedding", _("embeddings")
    JOB = "job", _("job")


class Incident(models.Model):
    """An error worth showing on the Jobs page (the last LLM and embedding errors)."""

    service = models.CharField(_("service"), max_length=16, choices=Service, db_index=True)
    message = models.TextField(_("message"))
    context = models.CharField(_("while"), max_length=200, blank=True)
    created_at = models.DateTimeField(_("time"), default=timezone.now, db_index=True)

    class Meta:
        verbose_name = _("incident")
        verbose_name_plural = _("incidents")
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"{self.service}: {self.message[:60]}"


class Heartbeat(models.Model):
    """The consumer says it is alive (on start and every minute), so pages can tell."""

    name = models.CharField(max_length=32, primary_key=True)
    pid = models.PositiveIntegerField(default=0)
    host = models.CharField(max_length=200, blank=True)
    started_at = models.DateTimeField(default=timezone.now)
    beat_at = models.DateTimeField(default=timezone.now)

    class Meta:
        verbose_name = _("consumer heartbeat")
        verbose_name_plural = _("consumer heartbeats")

    def __str__(self) -> str:
        return f"{self.name} pid {self.pid}"


class ImportStatus(models.TextChoices):
    READY = "ready", _("ready: look at the preview")
    QUEUED = "queued", _("queued")
    RUNNING = "running", _("importing")
    CANCELLING = "cancelling", _("stopping")
    CANCELLED = "cancelled", _("cancelled")
    INTERRUPTED = "interrupted", _("interrupted: resume it")
    FAILED = "failed", _("failed: resume it")
    DONE = "done", _("done")


class ChatImport(models.Model):
    """One import of a chat history export (ChatGPT, Claude, JSONL): its preview, where it
    stands, and what it added. `position` conversations are stored: a resumed run goes on
    from there, and a file imported again adds nothing (turns are keyed)."""

    fmt = models.CharField(_("format"), max_length=16)
    file_name = models.CharField(_("file"), max_length=255)
    path = models.TextField(_("stored at"))
    uploaded = models.BooleanField(default=False)  # our copy: removed once done or cancelled
    digest = models.CharField(_("SHA-256"), max_length=64, db_index=True)
    status = models.CharField(
        _("status"), max_length=16, choices=ImportStatus, default=ImportStatus.READY
    )
    preview = models.JSONField(_("preview"), default=dict, blank=True)
    conversations = models.PositiveIntegerField(_("conversations"), default=0)
    turns = models.PositiveIntegerField(_("turns"), default=0)
    position = models.PositiveIntegerField(_("conversations done"), default=0)
    turns_done = models.PositiveIntegerField(_("turns done"), default=0)
    turns_added = models.PositiveIntegerField(_("turns added"), default=0)
    turns_differing = models.PositiveIntegerField(_("turns that differ"), default=0)
    session_ids = models.JSONField(_("sessions with new turns"), default=list, blank=True)
    error = models.TextField(_("error"), blank=True)
    created_at = models.DateTimeField(_("uploaded"), default=timezone.now)
    started_at = models.DateTimeField(_("started"), null=True, blank=True)
    finished_at = models.DateTimeField(_("finished"), null=True, blank=True)
    updated_at = models.DateTimeField(_("updated"), auto_now=True)

    class Meta:
        verbose_name = _("chat import")
        verbose_name_plural = _("chat imports")
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"{self.fmt}: {self.file_name}"
