"""Bookkeeping for the search indexes, the recall log and the debugger's saved checks.

A SearchDoc is one searchable item (a fact, an episode, a turn, an attachment). Its id is
the rowid in the FTS5 table `search_fts`, the key in the vec0 table `search_vec` and in the
plain float table `search_vecf` (created with RunSQL by migrations 0002 and 0003), so the
indexes always agree on what they hold. The filter columns (status, expiry, time, session)
are copied from the item so the candidate SQL can filter before its LIMIT; the search
service re-checks every candidate against the item itself, so a stale copy can hide an item
for a moment but never show one that should be hidden.
"""

from django.db import models
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from curator.models import Owner


class Kind(models.TextChoices):
    FACT = "fact", _("fact")
    EPISODE = "episode", _("episode")
    TURN = "turn", _("conversation turn")
    ATTACHMENT = "attachment", _("attachment")


class SearchDoc(models.Model):
    kind = models.CharField(_("kind"), max_length=16, choices=Kind)
    object_id = models.PositiveBigIntegerField(_("item id"))
    owner_id = models.PositiveBigIntegerField(_("owner id"), db_index=True)
    content_hash = models.CharField(_("text hash"), max_length=64)
    fts_at = models.DateTimeField(_("keyword-indexed"), null=True, blank=True)
    # Which segmentation (user dictionary + stopwords) made the FTS row: a reindex after a
    # dictionary change re-segments only what is out of date.
    fts_version = models.CharField(_("segmentation version"), max_length=16, blank=True)
    embedded_hash = models.CharField(_("embedded text hash"), max_length=64, blank=True)
    embedded_at = models.DateTimeField(_("embedded"), null=True, blank=True)
    # Filter columns copied from the item (see the module docstring).
    status = models.CharField(_("status"), max_length=16, default="active")
    expires_at = models.DateTimeField(_("expires"), null=True, blank=True)
    ts = models.DateTimeField(_("item time"), default=timezone.now)
    session_id = models.PositiveBigIntegerField(_("session id"), null=True, blank=True)

    class Meta:
        verbose_name = _("search document")
        verbose_name_plural = _("search documents")
        constraints = [
            models.UniqueConstraint(fields=["kind", "object_id"], name="unique_search_doc")
        ]

    def __str__(self) -> str:
        return f"{self.kind} {self.object_id}"

    @property
    def vector_stale(self) -> bool:
        return self.embedded_hash != self.content_hash


class EmbeddingSpace(models.Model):
    """The embedding model whose vectors fill search_vec (one row): never mix two models."""

    model_name = models.CharField(_("model"), max_length=200)
    dimension = models.PositiveIntegerField(_("dimension"))
    # The mean vector, subtracted before taking sign bits for the approximate KNN: e5-style
    # embeddings share a large common direction, and raw sign bits would mostly encode it.
    center = models.BinaryField(_("center"), null=True, blank=True)
    created_at = models.DateTimeField(_("since"), auto_now_add=True)

    class Meta:
        verbose_name = _("embedding model in use")
        verbose_name_plural = _("embedding model in use")

    def __str__(self) -> str:
        return f"{self.model_name} ({self.dimension}-d)"


class EmbeddingCache(models.Model):
    """Vectors from a remote endpoint, keyed by text hash and model, so nothing is paid twice."""

    content_hash = models.CharField(max_length=64)
    model_name = models.CharField(max_length=200)
    dimension = models.PositiveIntegerField()
    vector = models.BinaryField()
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        verbose_name = _("cached embedding")
        verbose_name_plural = _("cached embeddings")
        constraints = [
            models.UniqueConstraint(fields=["content_hash", "model_name"], name="unique_cached_vec")
        ]

    def __str__(self) -> str:
        return f"{self.model_name}:{self.content_hash[:12]}"


class RecallLog(models.Model):
    """One search as a caller saw it: what was asked, what came back, how, and how fast."""

    owner = models.ForeignKey(Owner, on_delete=models.CASCADE, related_name="+")
    query = models.TextField(_("query"))
    caller = models.CharField(_("caller"), max_length=32, default="api")
    preset = models.CharField(_("preset"), max_length=32, blank=True)
    weights = models.JSONField(_("weights"), default=dict, blank=True)
    mode = models.CharField(_("mode"), max_length=16, default="hybrid")
    degraded = models.BooleanField(_("degraded"), default=False)
    degraded_reason = models.TextField(_("why degraded"), blank=True)
    results = models.JSONField(_("results"), default=list, blank=True)
    # The rest of the request (kinds, limit, filters; "via" for a context's search), so a
    # replay asks the same question. Who asked is `agent`.
    params = models.JSONField(_("request"), default=dict, blank=True)
    took_ms = models.FloatField(_("took (ms)"), default=0)
    # The agent (API token) that received these results (None: a page or a job); a string
    # reference, so this app never imports the web layer's models.
    agent = models.ForeignKey(
        "memsite.ApiToken",
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="+",
        verbose_name=_("agent"),
    )
    created_at = models.DateTimeField(_("time"), default=timezone.now, db_index=True)

    class Meta:
        verbose_name = _("recall")
        verbose_name_plural = _("recall log")
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"{self.caller}: {self.query[:60]}"


class RecallHit(models.Model):
    """One returned item of a RecallLog, so "when was this fact recalled?" is one query."""

    log = models.ForeignKey(RecallLog, on_delete=models.CASCADE, related_name="hits")
    kind = models.CharField(_("kind"), max_length=16, choices=Kind)
    object_id = models.PositiveBigIntegerField(_("item id"))
    rank = models.PositiveIntegerField(_("rank"))
    score = models.FloatField(_("score"))

    class Meta:
        verbose_name = _("recalled item")
        verbose_name_plural = _("recalled items")
        ordering = ["-log__created_at", "rank"]
        indexes = [models.Index(fields=["kind", "object_id"])]

    def __str__(self) -> str:
        return f"{self.kind} {self.object_id} #{self.rank}"


class RegressionCheck(models.Model):
    """A saved query with the facts it must (or must not) return within the top `within`."""

    owner = models.ForeignKey(Owner, on_delete=models.CASCADE, related_name="+")
    name = models.CharField(_("name"), max_length=200, blank=True)
    query = models.TextField(_("query"))
    params = models.JSONField(_("search settings"), default=dict, blank=True)
    must_include = models.JSONField(_("must return (fact ids)"), default=list, blank=True)
    must_exclude = models.JSONField(_("must not return (fact ids)"), default=list, blank=True)
    within = models.PositiveIntegerField(_("within the top"), default=5)
    last_run_at = models.DateTimeField(_("last run"), null=True, blank=True)
    last_passed = models.BooleanField(_("passed"), null=True, blank=True)
    last_result = models.JSONField(_("last result"), default=dict, blank=True)
    created_at = models.DateTimeField(_("created"), default=timezone.now)

    class Meta:
        verbose_name = _("regression check")
        verbose_name_plural = _("regression checks")
        ordering = ["created_at", "id"]

    def __str__(self) -> str:
        return self.name or self.query[:60]


class ReindexRun(models.Model):
    """A reindex in progress or done, so a page can show its progress and a rerun resumes."""

    class State(models.TextChoices):
        QUEUED = "queued", _("queued")
        RUNNING = "running", _("running")
        DONE = "done", _("done")
        FAILED = "failed", _("failed")
        INTERRUPTED = "interrupted", _("interrupted")

    kind = models.CharField(_("kind"), max_length=16, blank=True)
    model_name = models.CharField(_("model"), max_length=200, blank=True)
    state = models.CharField(_("state"), max_length=16, choices=State, default=State.QUEUED)
    total = models.PositiveIntegerField(_("items"), default=0)
    done = models.PositiveIntegerField(_("done"), default=0)
    error = models.TextField(_("error"), blank=True)
    started_at = models.DateTimeField(_("started"), default=timezone.now)
    finished_at = models.DateTimeField(_("finished"), null=True, blank=True)

    class Meta:
        verbose_name = _("reindex run")
        verbose_name_plural = _("reindex runs")
        ordering = ["-started_at", "-id"]

    def __str__(self) -> str:
        return f"reindex {self.kind or 'all'} {self.state}"
