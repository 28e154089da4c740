"""Bookkeeping for the search indexes.

A SearchDoc is one searchable item (a fact, an episode, a turn, an attachment). Its id is
the rowid in the FTS5 table `search_fts` and the key in the vec0 table `search_vec`, both
created by migration 0002 with RunSQL, so the two indexes always agree on what they hold.
"""

from django.db import models
from django.utils.translation import gettext_lazy as _


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
    embedded_hash = models.CharField(_("embedded text hash"), max_length=64, blank=True)
    embedded_at = models.DateTimeField(_("embedded"), null=True, blank=True)

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
