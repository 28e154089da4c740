"""The memory domain: who it is about, what is remembered, and the audit trail of every change.

Field names and choices follow the seed documents (000 memory_facts / memory_pending /
memory_events, 001 types and priorities, 003 SemanticMemory / Episode / Attachment /
conversation_turns / scratchpad, 004 verified vs inferred).
"""

from datetime import timedelta

from django.conf import settings
from django.db import models
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from curator import generated
from curator.normalize import content_key


def agent_field() -> models.ForeignKey:
    """The agent (API token) a row came from, if any. A string reference, so the domain never
    imports the web layer's models; a deleted token leaves the row, with no agent."""
    return models.ForeignKey(
        "memsite.ApiToken",
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="+",
        verbose_name=_("agent"),
    )


class Owner(models.Model):
    """The person the memory is about (seed 000 `users`, one row 'global' today)."""

    key = models.CharField(_("key"), max_length=64, unique=True, default="global")
    display_name = models.CharField(_("display name"), max_length=200, blank=True)
    identity_confirmed = models.BooleanField(_("identity confirmed"), default=False)
    onboarding_draft = models.JSONField(_("onboarding draft"), default=dict, blank=True)
    # The language the person reads the pages in (set when they pick one), and the one the
    # context given to agents is written in (blank: the person's).
    language = models.CharField(_("language"), max_length=16, blank=True)
    context_language = models.CharField(
        _("language of the agent's context"), max_length=16, blank=True
    )
    # Getting started: the first debugger search ticks its step; the guide can be reopened.
    first_search_at = models.DateTimeField(_("first search in the debugger"), null=True, blank=True)
    show_guide = models.BooleanField(_("show the getting-started guide"), default=False)
    created_at = models.DateTimeField(_("created"), auto_now_add=True)
    updated_at = models.DateTimeField(_("updated"), auto_now=True)

    class Meta:
        verbose_name = _("owner")
        verbose_name_plural = _("owners")

    def __str__(self) -> str:
        return self.display_name or self.key

    def agent_language(self) -> str:
        """The language of what is written for the agent: cards, context headings, notes."""
        return self.context_language or self.language or settings.LANGUAGE_CODE

    @classmethod
    def default(cls) -> "Owner":
        # Every API request asks: raw SQL skips compiling get_or_create's query (0.4 ms).
        found = next(iter(cls.objects.raw(_OWNER_BY_KEY, ["global"])), None)
        return found or cls.objects.get_or_create(key="global")[0]


_OWNER_BY_KEY = f"SELECT * FROM {Owner._meta.db_table} WHERE key = %s"


class Scope(models.TextChoices):
    SYSTEM = "system", _("system")
    USER = "user", _("user")
    PROJECT = "project", _("project")
    INSIGHT = "insight", _("insight")


class FactType(models.TextChoices):
    FACT = "fact", _("fact")
    PREFERENCE = "preference", _("preference")
    RULE = "rule", _("rule")
    SKILL = "skill", _("skill")
    ERROR = "error", _("lesson")
    IDENTITY = "identity", _("identity")
    CONSTRAINT = "constraint", _("constraint")
    EXPERIENCE = "experience", _("experience")


class Priority(models.TextChoices):
    """Retention (seed 001): how long a memory lives before it expires."""

    TRANSIENT = "transient", _("transient (1 day)")
    SHORT_TERM = "short_term", _("short term (3 days)")
    LONG_TERM = "long_term", _("long term (30 days)")
    PERMANENT = "permanent", _("permanent")


RETENTION = {
    Priority.TRANSIENT: timedelta(days=1),
    Priority.SHORT_TERM: timedelta(days=3),
    Priority.LONG_TERM: timedelta(days=30),
    Priority.PERMANENT: None,
}


def expiry_for(priority: str, start=None):
    """The expires_at a priority implies (None = never expires)."""
    span = RETENTION[Priority(priority)]
    return None if span is None else (start or timezone.now()) + span


class FactStatus(models.TextChoices):
    ACTIVE = "active", _("active")
    SUPERSEDED = "superseded", _("superseded")
    REJECTED = "rejected", _("rejected")
    ARCHIVED = "archived", _("archived")
    EXPIRED = "expired", _("expired")


class Source(models.TextChoices):
    RULES = "rules", _("rules extractor")
    LLM = "llm", _("LLM extractor")
    LEARNED = "learned", _("learned extractor")
    MANUAL = "manual", _("entered by hand")
    ONBOARDING = "onboarding", _("onboarding")
    API = "api", _("API")
    CONSOLIDATION = "consolidation", _("consolidation")
    DEMO = "demo", _("demo data")


class FactQuerySet(models.QuerySet):
    def active(self):
        return self.filter(status=FactStatus.ACTIVE)

    def live(self, now=None):
        """Active and not past its expiry: what retrieval may return."""
        now = now or timezone.now()
        return self.active().filter(
            models.Q(expires_at__isnull=True) | models.Q(expires_at__gt=now)
        )

    # The list filters the Facts page and GET /api/v1/memories share: equality on these
    # fields, a tag, and time ranges (dates or datetimes as given).
    EQUAL = ("status", "type", "scope", "source", "priority", "verified")
    RANGES = {
        "created_from": "created_at__date__gte",
        "created_to": "created_at__date__lte",
        "updated_from": "updated_at__date__gte",
        "updated_to": "updated_at__date__lte",
        "updated_after": "updated_at__gt",
    }

    def filtered(self, **filters):
        """Facts under the given list filters; empty values (None, "") filter nothing."""
        found = self
        for name, value in filters.items():
            if value is None or value == "":
                continue
            if name == "tag":  # tags is a JSON list; SQLite's JSONField has no `contains`
                found = found.filter(pk__in=models.expressions.RawSQL(_TAGGED, [value.strip()]))
            elif name in self.RANGES:
                found = found.filter(**{self.RANGES[name]: value})
            elif name in self.EQUAL:
                found = found.filter(**{name: value})
            else:
                raise TypeError(f"unknown fact filter {name!r}")
        return found


_TAGGED = "SELECT f.id FROM curator_fact f, json_each(f.tags) t WHERE t.value = %s"


class Fact(models.Model):
    owner = models.ForeignKey(Owner, on_delete=models.CASCADE, related_name="facts")
    scope = models.CharField(_("scope"), max_length=16, choices=Scope, default=Scope.USER)
    type = models.CharField(_("type"), max_length=16, choices=FactType, default=FactType.FACT)
    subject = models.CharField(_("subject"), max_length=200, blank=True)
    predicate = models.CharField(_("predicate"), max_length=200, blank=True)
    content = models.TextField(_("content"))
    # The comparison form of `content` (curator.normalize.content_key), kept by save().
    content_key = models.TextField(_("content key"), blank=True, default="", db_index=True)
    confidence = models.FloatField(_("confidence"), default=0.5)
    importance = models.FloatField(_("importance"), default=0.5)
    decay_rate = models.FloatField(_("decay rate"), default=0.1)
    priority = models.CharField(
        _("retention"), max_length=16, choices=Priority, default=Priority.LONG_TERM
    )
    expires_at = models.DateTimeField(_("expires"), null=True, blank=True)
    status = models.CharField(
        _("status"), max_length=16, choices=FactStatus, default=FactStatus.ACTIVE, db_index=True
    )
    supersedes = models.OneToOneField(
        "self",
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="superseded_by",
        verbose_name=_("supersedes"),
    )
    verified = models.BooleanField(_("verified by a person"), default=False)
    source = models.CharField(_("source"), max_length=16, choices=Source, default=Source.MANUAL)
    source_turn = models.ForeignKey(
        "ConversationTurn", on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    source_episode = models.ForeignKey(
        "Episode", on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    # The agent whose request or conversation produced it.
    agent = agent_field()
    tags = models.JSONField(_("tags"), default=list, blank=True)
    access_count = models.PositiveIntegerField(_("times recalled"), default=0)
    last_accessed_at = models.DateTimeField(_("last recalled"), null=True, blank=True)
    hit_count = models.PositiveIntegerField(_("times repeated"), default=1)
    created_at = models.DateTimeField(_("created"), default=timezone.now, db_index=True)
    updated_at = models.DateTimeField(_("updated"), auto_now=True)

    objects = FactQuerySet.as_manager()

    class Meta:
        verbose_name = _("fact")
        verbose_name_plural = _("facts")
        indexes = [
            models.Index(fields=["owner", "subject", "predicate", "status"]),
            # Lists (the API's /memories, the Facts page) show the newest change first: read
            # in index order, 50 facts of 10k take 8 ms instead of 40 (no sort of them all).
            models.Index(fields=["owner", "status", "updated_at", "id"], name="fact_newest_first"),
            # The write path's "the same words" (duplicate, rejected before): without it SQLite
            # read every active fact of the owner through fact_newest_first (docs/performance.md).
            models.Index(
                fields=["owner", "content_key", "subject", "status"], name="fact_same_words"
            ),
        ]
        constraints = [
            models.CheckConstraint(
                condition=models.Q(confidence__gte=0, confidence__lte=1), name="fact_confidence_0_1"
            ),
        ]

    def __str__(self) -> str:
        return self.content[:80]

    def save(self, *args, **kwargs):
        # Duplicate and "rejected before" checks look facts up by key, so it never lags.
        self.content_key = content_key(self.content)
        fields = kwargs.get("update_fields")
        if fields is not None and "content" in fields and "content_key" not in fields:
            kwargs["update_fields"] = [*fields, "content_key"]
        super().save(*args, **kwargs)

    def chain(self) -> list["Fact"]:
        """The whole history this fact belongs to, oldest first."""
        first = self
        while first.supersedes_id:
            first = first.supersedes
        chain = [first]
        while (nxt := Fact.objects.filter(supersedes=chain[-1]).first()) is not None:
            chain.append(nxt)
        return chain


class PendingStatus(models.TextChoices):
    PENDING = "pending", _("pending")
    CONFIRMED = "confirmed", _("confirmed")
    REJECTED = "rejected", _("ignored")
    SNOOZED = "snoozed", _("later")


class PendingReason(models.TextChoices):
    LOW_CONFIDENCE = "low_confidence", _("confidence below the write threshold")
    CONFLICT = "conflict", _("would replace an existing fact")
    DELETION = "deletion", _("the agent suggests removing a fact")
    PROMOTION = "promotion", _("could become core memory, which never decays")
    PERSONAL = "personal_data", _("holds personal data")


# A candidate's content key as the write path's raw lookup spells it (the index matches
# only this very expression).
CANDIDATE_KEY_SQL = "json_extract(candidate, '$.content_key')"
CANDIDATE_KEY = models.Func(
    models.F("candidate"), models.Value("$.content_key"), function="json_extract"
)


class PendingItem(models.Model):
    """A candidate memory waiting for the person (seed 000 memory_pending)."""

    owner = models.ForeignKey(Owner, on_delete=models.CASCADE, related_name="pending_items")
    candidate = models.JSONField(_("candidate"))
    confidence = models.FloatField(_("confidence"))
    reason = models.CharField(_("why pending"), max_length=20, choices=PendingReason)
    conflicts_with = models.ForeignKey(
        Fact, on_delete=models.SET_NULL, null=True, blank=True, related_name="pending_conflicts"
    )
    status = models.CharField(
        _("status"), max_length=16, choices=PendingStatus, default=PendingStatus.PENDING
    )
    cooldown_until = models.DateTimeField(_("snoozed until"), null=True, blank=True)
    source_turn = models.ForeignKey(
        "ConversationTurn", on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    resulting_fact = models.ForeignKey(
        Fact, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    # The agent whose request or conversation produced it.
    agent = agent_field()
    created_at = models.DateTimeField(_("created"), default=timezone.now)
    updated_at = models.DateTimeField(_("updated"), auto_now=True)

    class Meta:
        verbose_name = _("pending item")
        verbose_name_plural = _("pending items")
        ordering = ["-created_at"]
        indexes = [
            # The write path asks whether the same words wait or were ignored before: without
            # it, every item of the owner had its candidate parsed (curator/writepath/propose.py).
            models.Index(CANDIDATE_KEY, name="pending_content_key"),
        ]

    def __str__(self) -> str:
        return str(self.candidate.get("content", ""))[:80]


class Session(models.Model):
    owner = models.ForeignKey(Owner, on_delete=models.CASCADE, related_name="sessions")
    external_id = models.CharField(_("session id"), max_length=200, unique=True)
    title = models.CharField(_("title"), max_length=200, blank=True)
    started_at = models.DateTimeField(_("started"), default=timezone.now)
    ended_at = models.DateTimeField(_("ended"), null=True, blank=True)
    llm_calls = models.PositiveIntegerField(_("LLM extraction calls"), default=0)
    # The agent that recorded its first turn.
    agent = agent_field()

    class Meta:
        verbose_name = _("session")
        verbose_name_plural = _("sessions")
        ordering = ["-started_at"]

    def __str__(self) -> str:
        return self.title or self.external_id


class Role(models.TextChoices):
    USER = "user", _("user")
    ASSISTANT = "assistant", _("assistant")
    SYSTEM = "system", _("system")
    TOOL = "tool", _("tool")


class ConversationTurn(models.Model):
    """One raw turn (L0, seed 003 conversation_turns): append-only for business code."""

    session = models.ForeignKey(Session, on_delete=models.CASCADE, related_name="turns")
    turn_index = models.PositiveIntegerField(_("turn"))
    role = models.CharField(_("role"), max_length=16, choices=Role)
    content = models.TextField(_("content"), blank=True)
    tool_calls = models.JSONField(_("tool calls"), null=True, blank=True)
    tool_results = models.JSONField(_("tool results"), null=True, blank=True)
    timestamp = models.DateTimeField(_("time"), default=timezone.now, db_index=True)
    token_estimate = models.PositiveIntegerField(_("estimated tokens"), default=0)
    episode = models.ForeignKey(
        "Episode", on_delete=models.SET_NULL, null=True, blank=True, related_name="turns"
    )
    extracted = models.BooleanField(_("extracted"), default=False, db_index=True)
    # The agent that recorded it.
    agent = agent_field()
    # An answer the client stopped reading before it ended (the chat proxy records what it got).
    partial = models.BooleanField(_("cut off"), default=False)

    class Meta:
        verbose_name = _("conversation turn")
        verbose_name_plural = _("conversation turns")
        ordering = ["session", "turn_index"]
        constraints = [
            models.UniqueConstraint(fields=["session", "turn_index"], name="unique_session_turn")
        ]

    def __str__(self) -> str:
        return f"{self.session_id}#{self.turn_index} {self.role}"

    @property
    def number(self) -> int:
        """The turn as pages count it, from 1 (turn_index, the API's, starts at 0)."""
        return self.turn_index + 1

    @property
    def has_tool_calls(self) -> bool:
        return bool(self.tool_calls)


class Outcome(models.TextChoices):
    SUCCESS = "success", _("success")
    PARTIAL = "partial", _("partial")
    FAILED = "failed", _("failed")
    # Work left to do: the session ended (it is not running), so never "ongoing" in words.
    ONGOING = "ongoing", _("unfinished")


class Episode(models.Model):
    """What happened in a session (seed 003 Episode), with its action nodes as JSON."""

    owner = models.ForeignKey(Owner, on_delete=models.CASCADE, related_name="episodes")
    session = models.ForeignKey(
        Session, on_delete=models.SET_NULL, null=True, blank=True, related_name="episodes"
    )
    summary = models.TextField(_("summary"))
    # A rules summary as codes and values (curator.generated), shown in the reader's language;
    # empty for an LLM's or a person's summary, which `summary` holds as written.
    summary_parts = models.JSONField(_("summary parts"), default=list, blank=True)
    goal = models.TextField(_("goal"), blank=True)
    outcome = models.CharField(
        _("outcome"), max_length=16, choices=Outcome, default=Outcome.SUCCESS
    )
    started_at = models.DateTimeField(_("started"), default=timezone.now)
    ended_at = models.DateTimeField(_("ended"), default=timezone.now)
    action_nodes = models.JSONField(_("actions"), default=list, blank=True)
    entities = models.JSONField(_("entities"), default=list, blank=True)
    tools_used = models.JSONField(_("tools used"), default=list, blank=True)
    linked_facts = models.ManyToManyField(Fact, blank=True, related_name="episodes")
    tags = models.JSONField(_("tags"), default=list, blank=True)
    importance = models.FloatField(_("importance"), default=0.5)
    access_count = models.PositiveIntegerField(_("times recalled"), default=0)
    source = models.CharField(_("source"), max_length=32, default="session_end")

    class Meta:
        verbose_name = _("episode")
        verbose_name_plural = _("episodes")
        ordering = ["-started_at"]

    def __str__(self) -> str:
        return self.display_summary[:80]

    @property
    def display_summary(self) -> str:
        """The summary in the reader's language when the rules wrote it, else as stored."""
        if self.summary_parts:
            return generated.episode_summary(self.summary_parts)
        return self.summary


class Direction(models.TextChoices):
    INBOUND = "inbound", _("from the person")
    OUTBOUND = "outbound", _("from the assistant")


class Attachment(models.Model):
    """A file exchanged in a conversation (seed 003), searchable by its text fields."""

    owner = models.ForeignKey(Owner, on_delete=models.CASCADE, related_name="attachments")
    session = models.ForeignKey(
        Session, on_delete=models.SET_NULL, null=True, blank=True, related_name="attachments"
    )
    episode = models.ForeignKey(
        Episode, on_delete=models.SET_NULL, null=True, blank=True, related_name="attachments"
    )
    file = models.FileField(_("file"), upload_to="%Y/%m/", blank=True)
    original_name = models.CharField(_("file name"), max_length=255)
    mime_type = models.CharField(_("type"), max_length=100, blank=True)
    size = models.PositiveBigIntegerField(_("size"), default=0)
    url = models.URLField(_("url"), blank=True)
    direction = models.CharField(
        _("direction"), max_length=16, choices=Direction, default=Direction.INBOUND
    )
    description = models.TextField(_("description"), blank=True)
    transcription = models.TextField(_("transcription"), blank=True)
    extracted_text = models.TextField(_("extracted text"), blank=True)
    tags = models.JSONField(_("tags"), default=list, blank=True)
    linked_facts = models.ManyToManyField(Fact, blank=True, related_name="attachments")
    created_at = models.DateTimeField(_("created"), default=timezone.now)

    class Meta:
        verbose_name = _("attachment")
        verbose_name_plural = _("attachments")
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return self.original_name


class Scratchpad(models.Model):
    """Working memory (seed 003): one per owner, Markdown plus structured focus."""

    owner = models.OneToOneField(Owner, on_delete=models.CASCADE, related_name="scratchpad")
    content = models.TextField(_("content"), blank=True)
    current_focus = models.TextField(_("current focus"), blank=True)
    active_projects = models.JSONField(_("active projects"), default=list, blank=True)
    open_questions = models.JSONField(_("open questions"), default=list, blank=True)
    next_steps = models.JSONField(_("next steps"), default=list, blank=True)
    updated_at = models.DateTimeField(_("updated"), auto_now=True)

    class Meta:
        verbose_name = _("scratchpad")
        verbose_name_plural = _("scratchpads")

    def __str__(self) -> str:
        return f"{self.owner} scratchpad"


class Actor(models.TextChoices):
    PERSON = "person", _("person")
    AGENT = "agent", _("agent")
    JOB = "job", _("job")


class EventType(models.TextChoices):
    WRITE = "write", _("written")
    UPDATE = "update", _("edited")
    SUPERSEDE = "supersede", _("superseded")
    BOOST = "boost", _("repeated")
    PENDING = "pending", _("queued for review")
    DROP = "drop", _("dropped")
    CONFIRM = "confirm", _("confirmed")
    REJECT = "reject", _("ignored")
    SNOOZE = "snooze", _("snoozed")
    ARCHIVE = "archive", _("archived")
    DELETE = "delete", _("deleted")
    EXPIRE = "expire", _("expired")
    DECAY = "decay", _("decayed")
    MERGE = "merge", _("merged")
    RETRIEVAL_FAIL = "retrieval_fail", _("retrieval failed")
    RETRY = "retry", _("retried")
    DEAD_LETTER = "dead_letter", _("dead letter")
    UNDO = "undo", _("undone")
    PURGE = "purge", _("purged")
    EPISODE_EDIT = "episode_edit", _("episode edited")
    ATTACHMENT_EDIT = "attachment_edit", _("attachment edited")
    BLOCK = "block", _("blocked by a guardrail")
    REDACT = "redact", _("redacted")
    RESOLVE = "resolve", _("contradiction resolved")
    THRESHOLD = "threshold", _("confidence threshold changed")


class MemoryEvent(models.Model):
    """The audit log and the source of undo (seed 000 memory_events)."""

    owner = models.ForeignKey(Owner, on_delete=models.CASCADE, related_name="events")
    event_type = models.CharField(_("event"), max_length=20, choices=EventType, db_index=True)
    operation_id = models.CharField(
        _("operation id"), max_length=200, unique=True, null=True, blank=True
    )
    actor = models.CharField(_("actor"), max_length=16, choices=Actor)
    fact = models.ForeignKey(
        Fact, on_delete=models.SET_NULL, null=True, blank=True, related_name="events"
    )
    pending = models.ForeignKey(
        PendingItem, on_delete=models.SET_NULL, null=True, blank=True, related_name="events"
    )
    job_run = models.CharField(_("job run"), max_length=64, blank=True, db_index=True)
    # One bulk action shares a batch id, so it can be undone as a whole (like a job run).
    batch = models.CharField(_("batch"), max_length=64, blank=True, db_index=True)
    # An undo event points at the event it reversed; `reverted_by` says an event was undone.
    reverts = models.ForeignKey(
        "self",
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="reverted_by",
        verbose_name=_("undoes"),
    )
    # The agent whose request made the change (None: the person or a job).
    agent = agent_field()
    payload = models.JSONField(_("details"), default=dict, blank=True)
    created_at = models.DateTimeField(_("time"), default=timezone.now, db_index=True)

    class Meta:
        verbose_name = _("memory event")
        verbose_name_plural = _("memory events")
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"{self.event_type} by {self.actor}"


class ContradictionStatus(models.TextChoices):
    OPEN = "open", _("open")
    RESOLVED = "resolved", _("resolved")
    COMPATIBLE = "compatible", _("both true")
    DISMISSED = "dismissed", _("judged compatible by the LLM")


class Resolution(models.TextChoices):
    KEEP_LEFT = "keep_left", _("kept the left one")
    KEEP_RIGHT = "keep_right", _("kept the right one")
    BOTH = "both", _("both are true")
    MERGE = "merge", _("merged into one fact")


class Contradiction(models.Model):
    """Two active facts that cannot both be true, found by the contradiction job.

    `left` is the older fact (lower id). `rule` says what found it (same_slot: the same
    subject and predicate with another value; negation, slot, exclusive: the offline rules;
    llm), `detail` what it saw, as codes and values the pages put into words. A pair is
    found once: "both are true" keeps it from ever being asked again.
    """

    owner = models.ForeignKey(Owner, on_delete=models.CASCADE, related_name="contradictions")
    left = models.ForeignKey(Fact, on_delete=models.CASCADE, related_name="+")
    right = models.ForeignKey(Fact, on_delete=models.CASCADE, related_name="+")
    rule = models.CharField(_("found by"), max_length=16)
    detail = models.JSONField(_("details"), default=dict, blank=True)
    status = models.CharField(
        _("status"),
        max_length=16,
        choices=ContradictionStatus,
        default=ContradictionStatus.OPEN,
        db_index=True,
    )
    resolution = models.CharField(_("resolution"), max_length=16, choices=Resolution, blank=True)
    found_at = models.DateTimeField(_("found"), default=timezone.now)
    resolved_at = models.DateTimeField(_("resolved"), null=True, blank=True)

    class Meta:
        verbose_name = _("contradiction")
        verbose_name_plural = _("contradictions")
        ordering = ["-found_at", "-id"]
        constraints = [
            models.UniqueConstraint(fields=["left", "right"], name="unique_contradiction_pair"),
            models.CheckConstraint(
                condition=models.Q(left__lt=models.F("right")), name="contradiction_left_first"
            ),
        ]

    def __str__(self) -> str:
        return f"#{self.left_id} / #{self.right_id} ({self.rule})"


class SourceThreshold(models.Model):
    """Confidence thresholds for one source of candidate memories, set on the Calibration page.

    `source` is a calibration key: "token:<id>" for an API token (an agent), else a Source
    value (rules, llm, onboarding, consolidation ...). Empty values follow the environment's
    MEMSITE_CONFIDENCE_WRITE / _PENDING.
    """

    source = models.CharField(_("source"), max_length=64, unique=True)
    write = models.FloatField(_("write at"), null=True, blank=True)
    pending = models.FloatField(_("review at"), null=True, blank=True)
    updated_at = models.DateTimeField(_("updated"), auto_now=True)

    class Meta:
        verbose_name = _("confidence threshold")
        verbose_name_plural = _("confidence thresholds")
        ordering = ["source"]

    def __str__(self) -> str:
        return self.source


class CardAuthor(models.TextChoices):
    PERSON = "person", _("person")
    AGENT = "agent", _("agent")
    JOB = "job", _("job")
    ONBOARDING = "onboarding", _("onboarding")


class CardRevision(models.Model):
    """Every save of an L1 Markdown card, so it can be diffed and restored."""

    card = models.CharField(_("card"), max_length=64, db_index=True)
    content = models.TextField(_("content"))
    author = models.CharField(_("author"), max_length=16, choices=CardAuthor)
    # A code of curator.generated.CARD_NOTES (and its values), put into words when shown.
    note = models.CharField(_("note"), max_length=200, blank=True)
    note_params = models.JSONField(_("note values"), default=dict, blank=True)
    created_at = models.DateTimeField(_("saved"), default=timezone.now)

    class Meta:
        verbose_name = _("card revision")
        verbose_name_plural = _("card revisions")
        ordering = ["card", "-created_at", "-id"]

    def __str__(self) -> str:
        return f"{self.card} @ {self.created_at:%Y-%m-%d %H:%M}"

    @property
    def note_text(self) -> str:
        return generated.card_note(self.note, self.note_params)


class GuardRuleAction(models.TextChoices):
    BLOCK = "block", _("block")
    REVIEW = "review", _("send to review")


class GuardRule(models.Model):
    """A do-not-store rule: a built-in detector (`detector` set) or the person's own words,
    regular expression, fact types and scopes. A candidate memory that matches an enabled
    rule is never written or queued (`action` block), or waits for the person on the review
    desk (`action` review: personal data by default); with `redact_turns`, the matched spans
    of incoming turns are masked before the turn is stored (curator/guard/)."""

    owner = models.ForeignKey(Owner, on_delete=models.CASCADE, related_name="guard_rules")
    name = models.CharField(_("name"), max_length=100)
    detector = models.CharField(_("built-in detector"), max_length=32, blank=True)
    words = models.JSONField(_("words and phrases"), default=list, blank=True)
    pattern = models.TextField(_("regular expression"), blank=True)
    fact_types = models.JSONField(_("fact types"), default=list, blank=True)
    scopes = models.JSONField(_("scopes"), default=list, blank=True)
    # API token ids (memsite.ApiToken) the rule is limited to; empty: every source.
    agents = models.JSONField(_("agents"), default=list, blank=True)
    enabled = models.BooleanField(_("on"), default=True)
    redact_turns = models.BooleanField(_("redact in transcripts"), default=False)
    # What a match does to a candidate memory: never stored, or held for the person.
    action = models.CharField(
        _("action"), max_length=10, choices=GuardRuleAction, default=GuardRuleAction.BLOCK
    )
    created_at = models.DateTimeField(_("created"), default=timezone.now)
    updated_at = models.DateTimeField(_("updated"), auto_now=True)

    class Meta:
        verbose_name = _("guardrail")
        verbose_name_plural = _("guardrails")
        ordering = ["pk"]
        constraints = [
            models.UniqueConstraint(fields=["owner", "name"], name="unique_guard_rule_name"),
            models.UniqueConstraint(
                fields=["owner", "detector"],
                condition=~models.Q(detector=""),
                name="one_guard_rule_per_detector",
            ),
        ]

    def __str__(self) -> str:
        return self.name


class GuardAction(models.TextChoices):
    BLOCKED = "blocked", _("memory blocked")
    REDACTED = "redacted", _("turn redacted")


class GuardHit(models.Model):
    """One entry of the Blocked log: what a rule stopped, as a masked excerpt only."""

    owner = models.ForeignKey(Owner, on_delete=models.CASCADE, related_name="+")
    rule = models.ForeignKey(
        GuardRule, on_delete=models.SET_NULL, null=True, blank=True, related_name="hits"
    )
    rule_name = models.CharField(_("rule"), max_length=100)
    action = models.CharField(_("action"), max_length=16, choices=GuardAction)
    source = models.CharField(_("source"), max_length=32, blank=True)
    actor = models.CharField(_("actor"), max_length=16, blank=True)
    agent = agent_field()
    excerpt = models.TextField(_("excerpt (masked)"), blank=True)
    event = models.ForeignKey(
        MemoryEvent, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    turn = models.ForeignKey(
        ConversationTurn, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    created_at = models.DateTimeField(_("time"), default=timezone.now, db_index=True)

    class Meta:
        verbose_name = _("blocked or redacted write")
        verbose_name_plural = _("blocked log")
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"{self.action} by {self.rule_name}"
