"""The L1 Markdown cards: where they live, how big they may grow, and how they change safely.

The agent reads these files every turn, so a save must never leave a half-written card
(temp file + rename), never silently overwrite a change made elsewhere (the editor says which
version it started from), and always leave a revision a person can diff and restore.
The scratchpad lives in the database but is edited, versioned and shown like the files.

Generated sections (the nightly refresh) sit between markers, so hand edits around them
survive a refresh:

    <!-- generated:facts updated=2026-11-22T03:00 -->
    - Prefers pytest over unittest <!-- facts:12,15 -->
    <!-- /generated:facts -->
"""

from __future__ import annotations

import difflib
import hashlib
import re
from collections.abc import Iterable, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from django.conf import settings
from django.db import transaction
from django.urls import NoReverseMatch, reverse
from django.utils import timezone
from django.utils.functional import Promise
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString, mark_safe
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from markdown_it import MarkdownIt

from curator import card_journal
from curator.files import (  # noqa: F401  (callers use cards.atomic_write and friends)
    atomic_write,
    restore_snapshot,
    snapshot,
    write_files,
)
from curator.models import CardAuthor, CardRevision, Owner, Scratchpad
from curator.normalize import content_key
from memsite.core.links import is_safe_markdown_link

# --------------------------------------------------------------------------------------
# Which cards exist
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class CardSpec:
    key: str
    title: str | Promise
    path: str | None  # relative to settings.MEMORY_DIR; None = kept in the database
    unit: str  # what the limit counts: bytes, lines, items, chars ("" = no limit)
    limit: int | None
    about: str | Promise


CARDS: dict[str, CardSpec] = {
    spec.key: spec
    for spec in (
        CardSpec(
            "persona",
            "ShiYi.md",
            "system/ShiYi.md",
            "",
            None,
            gettext_lazy("Who the assistant is: name, positioning, tone, boundaries, taboos."),
        ),
        CardSpec(
            "user",
            "User.md",
            "shared/User.md",
            "bytes",
            2048,
            gettext_lazy("Who you are: a short profile injected into every turn."),
        ),
        CardSpec(
            "project",
            "Project.md",
            "shared/Project.md",
            "lines",
            100,
            gettext_lazy("Project progress and a rolling summary; old parts are archived."),
        ),
        CardSpec(
            "insights",
            "Insights.md",
            "shared/Insights.md",
            "items",
            10,
            gettext_lazy("Hot lessons only; the rest sink into the fact store."),
        ),
        CardSpec(
            "memory",
            "MEMORY.md",
            "shared/MEMORY.md",
            "chars",
            1500,
            gettext_lazy("Core memory: the top facts, refreshed every night."),
        ),
        CardSpec(
            "scratchpad",
            gettext_lazy("Scratchpad"),
            None,
            "chars",
            2000,
            gettext_lazy("Working memory: current focus, projects, open questions, next steps."),
        ),
    )
}

UNIT_LABELS = {
    "bytes": gettext_lazy("bytes"),
    "lines": gettext_lazy("lines"),
    "items": gettext_lazy("items"),
    "chars": gettext_lazy("characters"),
}


def spec(key: str) -> CardSpec:
    """The card's spec; KeyError for an unknown key (views turn it into a 404)."""
    return CARDS[key]


def card_path(key: str) -> Path | None:
    rel = spec(key).path
    return None if rel is None else Path(settings.MEMORY_DIR) / rel


# --------------------------------------------------------------------------------------
# Reading, fingerprints, limits
# --------------------------------------------------------------------------------------


def normalise(text: str) -> str:
    """One newline convention, one trailing newline: browsers send CRLF, editors vary."""
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    return text.rstrip("\n") + "\n" if text.strip() else ""


def fingerprint(text: str) -> str:
    return hashlib.sha256(normalise(text).encode()).hexdigest()[:16]


def read(key: str, owner: Owner | None = None) -> str:
    """The card as it is now ('' when it does not exist yet)."""
    path = card_path(key)
    if path is None:
        pad = Scratchpad.objects.filter(owner=owner or Owner.default()).first()
        return pad.content if pad else ""
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return ""


_ITEM = re.compile(r"^ {0,1}(?:[-*+]|\d{1,3}[.)])\s+\S")


def count_items(text: str) -> int:
    """Top-level list items (nested bullets belong to their parent item)."""
    return sum(1 for line in text.splitlines() if _ITEM.match(line))


@dataclass
class Usage:
    amount: int
    limit: int | None
    unit: str

    @property
    def over(self) -> bool:
        return self.limit is not None and self.amount > self.limit

    @property
    def percent(self) -> int:
        """For the meter: capped at 100 so an over-full card does not break the layout."""
        return min(100, round(100 * self.amount / self.limit)) if self.limit else 0

    @property
    def unit_label(self):
        return UNIT_LABELS.get(self.unit, "")


def measure(key: str, text: str) -> Usage:
    card = spec(key)
    text = normalise(text)
    amount = {
        "bytes": lambda: len(text.encode()),
        "lines": lambda: len(text.splitlines()),
        "items": lambda: count_items(text),
        "chars": lambda: len(text.rstrip("\n")),
    }.get(card.unit, lambda: len(text.encode()))()
    return Usage(amount, card.limit, card.unit or "bytes")


# --------------------------------------------------------------------------------------
# Saving with revisions and conflict detection
# --------------------------------------------------------------------------------------


class CardConflict(Exception):
    """The card changed since the editor loaded it: show both versions, never overwrite.
    `writers`: who wrote it meanwhile, newest first (see writers_since)."""

    def __init__(self, key: str, mine: str, theirs: str, base: str, writers=()):
        super().__init__(f"{key} changed since it was opened")
        self.key, self.mine, self.theirs, self.base = key, mine, theirs, base
        self.writers: list[Writer] = list(writers)


# Who wrote a card, as a revision records it (its note code, else its author) and as the
# conflict page names it. "outside": the file changed with no revision (a text editor,
# another program); "history": the text the editor started from is in no revision any more
# (a backup restored or an archive imported in between).
WRITERS = {
    "live_refresh": gettext_lazy("the live refresh (after facts changed)"),
    "nightly_refresh": gettext_lazy("the nightly card compile"),
    "metabolism": gettext_lazy("the cards' metabolism"),
    "session_end": gettext_lazy("the end of a session"),
    "onboarding": gettext_lazy("onboarding"),
    "undo_run": gettext_lazy("an undo of a job run"),
    "restored": gettext_lazy("a restore of an older revision"),
    "outside": gettext_lazy("a file edited on disk (a text editor or another program)"),
    "history": gettext_lazy("a restore of a backup or an import"),
    CardAuthor.PERSON: gettext_lazy("you, in another tab or window"),
    CardAuthor.AGENT: gettext_lazy("an agent"),
    CardAuthor.JOB: gettext_lazy("a background job"),
}
# The writers whose change a person's save may be merged with, when the two do not overlap:
# the live refresh only rewrites its generated section, seconds after a fact changed.
MERGEABLE = frozenset({"live_refresh"})
MERGED_NOTE = "merged_live_refresh"


@dataclass
class Writer:
    code: str  # a key of WRITERS
    when: datetime | None
    revision_id: int | None = None

    @property
    def label(self) -> str:
        return str(WRITERS.get(self.code, self.code))

    @classmethod
    def of(cls, revision: CardRevision) -> Writer:
        code = "outside" if revision.note == "outside_change" else revision.note
        if code not in WRITERS:  # a person's or an agent's save, or an old free-text note
            code = revision.author if revision.author in WRITERS else CardAuthor.JOB
        return cls(code, revision.created_at, revision.pk)


def writers_since(key: str, base: str, current: str | None = None) -> list[Writer]:
    """Who wrote the card after the editor read `base`, newest first: the revisions saved
    since the newest one holding `base`, and an edit on disk that no revision records."""
    base = normalise(base)
    current = normalise(read(key) if current is None else current)
    if base == current:
        return []
    revisions = list(
        CardRevision.objects.filter(card=key).only("note", "author", "created_at", "content")
    )
    writers = []
    if not revisions or normalise(revisions[0].content) != current:
        writers.append(Writer("outside", _changed_at(key)))
    for revision in revisions:
        if normalise(revision.content) == base:
            return writers
        writers.append(Writer.of(revision))
    if base:  # the editor's text is in no revision: the history was replaced meanwhile
        writers.append(Writer("history", None))
    return writers


def _merged_with_refresh(base: str, mine: str, theirs: str, writers) -> str | None:
    """The person's text merged with a live refresh that wrote meanwhile, when that refresh
    was the only writer and the two changed different lines; else None (a conflict)."""
    if not writers or any(w.code not in MERGEABLE for w in writers):
        return None
    merged, conflicts = merge(base, mine, theirs)
    return None if conflicts else merged


def latest_revision(key: str) -> CardRevision | None:
    return CardRevision.objects.filter(card=key).first()


def text_at(key: str, moment: datetime) -> str:
    """The card as it read at `moment`: its last revision by then ('' when it had none yet;
    the current text when the card never had a revision at all, so nothing can be older)."""
    revisions = CardRevision.objects.filter(card=key)
    then = revisions.filter(created_at__lte=moment).order_by("-created_at", "-id").first()
    if then is not None:
        return then.content
    return "" if revisions.exists() else read(key)


def _record_drift(key: str, current: str) -> None:
    """A change made outside the app (a text editor, another process) becomes a revision first,
    so the history has no holes and the outside version can be restored later."""
    latest = latest_revision(key)
    known = normalise(latest.content) if latest else ""
    if normalise(current) != known and (current.strip() or latest):
        CardRevision.objects.create(
            card=key,
            content=normalise(current),
            author=CardAuthor.PERSON,
            note="outside_change",
        )


def _store(key: str, text: str, owner: Owner, revision: CardRevision) -> list:
    """Put the card's new text in place (inside the save's transaction); its journal entries."""
    if card_path(key) is None:
        Scratchpad.objects.update_or_create(owner=owner, defaults={"content": text})
        return []
    return _write_cards({key: (text, revision)})


def _write_cards(contents: dict[str, tuple[str, CardRevision]]) -> list:
    """Rename new card files into place, each journaled first (curator/card_journal.py).

    Runs inside the transaction that writes the revisions, so writers queued behind it read
    these files; the journal entries go once that transaction has committed. A kill -9 before
    the commit leaves entries that the next start uses to put the old files back.
    """
    entries = []
    try:
        for key, (text, revision) in contents.items():
            path = card_path(key)
            before = snapshot([path])[path]
            entries.append(card_journal.begin(key, path, revision.pk, before, text))
        write_files(
            {e.target: contents[e.card][0] for e in entries}, {e.target: e.staged for e in entries}
        )
    except BaseException:
        _forget(entries)  # nothing was renamed (write_files put back what it had)
        raise
    transaction.on_commit(lambda: _forget(entries), robust=True)
    return entries


def _forget(entries: list) -> None:
    for entry in entries:
        entry.forget()


@contextmanager
def rollback_files(keys: Iterable[str]):
    """Put these cards' files back as they were if the block fails, commit included.

    Use it outside `transaction.atomic()` so a failed commit also restores the files:
        with cards.rollback_files(["persona", "user"]), transaction.atomic(): ...
    """
    before = snapshot(path for key in keys if (path := card_path(key)) is not None)
    try:
        yield
    except BaseException:
        restore_snapshot(before)
        raise


def save(
    key: str,
    content: str,
    author: str,
    *,
    base: str | None = None,
    note: str = "",
    note_params: dict | None = None,
    owner: Owner | None = None,
    merge_refresh: bool = False,
) -> CardRevision | None:
    """Write a card and keep a revision; None when the content did not change.

    `base` is the text the editor started from: if the card changed since then (and the
    new content is not already what is there) this raises CardConflict, naming who wrote it
    meanwhile, and writes nothing. With `merge_refresh` (a person's save in the editor), a
    live refresh that was the only writer meanwhile and changed other lines is merged in
    instead: the revision's note says so, and `revision.merged_with` lists the refreshes.
    The file is renamed into place inside the transaction, put back if the commit fails,
    and journaled so a kill -9 before the commit is undone at the next start: the card and
    its revision never disagree.
    """
    owner = owner or Owner.default()
    content = normalise(content)
    entries = []
    try:
        with rollback_files([key]), transaction.atomic():
            current = normalise(read(key, owner))
            if content == current:
                return None
            merged_with: list[Writer] = []
            if base is not None and normalise(base) != current:
                writers = writers_since(key, base, current)
                merged = _merged_with_refresh(base, content, current, writers)
                if not merge_refresh or merged is None:
                    raise CardConflict(key, content, current, normalise(base), writers)
                if merged == current:  # the person's changes were already there
                    return None
                content, note, merged_with = merged, MERGED_NOTE, writers
            _record_drift(key, current)
            revision = CardRevision.objects.create(
                card=key,
                content=content,
                author=author,
                note=note[:200],
                note_params=note_params or {},
            )
            entries = _store(key, content, owner, revision)
    except BaseException:
        _forget(entries)  # rolled back and the file put back: nothing left to undo
        raise
    revision.merged_with = merged_with
    return revision


def save_many(
    contents: dict[str, str], author: str, *, note: str = "", owner: Owner | None = None
) -> list[CardRevision]:
    """Replace several cards in one step (onboarding writes ShiYi.md and User.md together).

    Call it inside the caller's transaction and `rollback_files`: the files are renamed
    into place last, together, so an earlier failure leaves every card as it was.
    """
    owner = owner or Owner.default()
    revisions, files = [], {}
    with transaction.atomic():
        for key, content in contents.items():
            content = normalise(content)
            _record_drift(key, read(key, owner))
            revision = CardRevision.objects.create(
                card=key, content=content, author=author, note=note[:200]
            )
            revisions.append(revision)
            if card_path(key) is None:
                _store(key, content, owner, revision)
            else:
                files[key] = (content, revision)
        _write_cards(files)
    return revisions


def restore(key: str, revision: CardRevision, author: str = CardAuthor.PERSON, owner=None):
    """Bring an old version back as a new revision (history only ever grows)."""
    params = {"id": revision.pk}
    return save(key, revision.content, author, note="restored", note_params=params, owner=owner)


def _changed_at(key: str) -> datetime | None:
    """When the card itself last changed: the file's mtime, the scratchpad row's update."""
    path = card_path(key)
    if path is None:
        pad = Scratchpad.objects.filter(owner=Owner.default()).first()
        return pad.updated_at if pad else None
    if not path.exists():
        return None
    return datetime.fromtimestamp(path.stat().st_mtime, tz=timezone.get_current_timezone())


@dataclass
class LastChange:
    author: str
    author_label: str
    when: datetime | None
    note: str
    outside: bool = False


def last_change(key: str, text: str | None = None) -> LastChange | None:
    """Who changed the card last; a file edited outside the app says so, with its time."""
    latest = latest_revision(key)
    text = read(key) if text is None else text
    outside = (latest is None and bool(text.strip())) or (
        latest is not None and normalise(latest.content) != normalise(text)
    )
    if outside:
        return LastChange("outside", _("changed elsewhere"), _changed_at(key), "", outside=True)
    if latest is None:
        return None
    return LastChange(
        latest.author, latest.get_author_display(), latest.created_at, latest.note_text, False
    )


# --------------------------------------------------------------------------------------
# Diffs and merges
# --------------------------------------------------------------------------------------


@dataclass
class DiffRow:
    kind: str  # "same" | "del" | "add" | "gap"
    text: str
    old_no: int | None = None
    new_no: int | None = None


@dataclass
class Diff:
    rows: list[DiffRow] = field(default_factory=list)
    added: int = 0
    removed: int = 0

    @property
    def empty(self) -> bool:
        return not (self.added or self.removed)


def diff(old: str, new: str, context: int = 3) -> Diff:
    """A line diff as rows a template can render (escaped like any other text)."""
    a, b = normalise(old).splitlines(), normalise(new).splitlines()
    result = Diff()
    groups = difflib.SequenceMatcher(None, a, b, autojunk=False).get_grouped_opcodes(context)
    for index, group in enumerate(groups):
        if index:
            result.rows.append(DiffRow("gap", "…"))
        for tag, i1, i2, j1, j2 in group:
            if tag == "equal":
                result.rows += [
                    DiffRow("same", a[i], i + 1, j1 + i - i1 + 1) for i in range(i1, i2)
                ]
                continue
            result.rows += [DiffRow("del", a[i], old_no=i + 1) for i in range(i1, i2)]
            result.rows += [DiffRow("add", b[j], new_no=j + 1) for j in range(j1, j2)]
            result.removed += i2 - i1
            result.added += j2 - j1
    return result


def _changes(base: list[str], other: list[str]) -> list[tuple[int, int, list[str]]]:
    """(start, end, replacement) ranges over base where `other` differs from it."""
    matcher = difflib.SequenceMatcher(None, base, other, autojunk=False)
    return [
        (i1, i2, other[j1:j2]) for tag, i1, i2, j1, j2 in matcher.get_opcodes() if tag != "equal"
    ]


def merge(base: str, mine: str, theirs: str) -> tuple[str, int]:
    """A three-way line merge; overlapping edits become git-style conflict blocks.

    Returns the merged text and the number of conflicts, so the page can say whether the
    person still has to choose between the two versions somewhere.
    """
    b = normalise(base).splitlines()
    ours, others = (
        _changes(b, normalise(mine).splitlines()),
        _changes(b, normalise(theirs).splitlines()),
    )
    out: list[str] = []
    pos = conflicts = 0
    while ours or others:
        # Take the next change by position; collect every change overlapping its range.
        first = min(ours[:1] + others[:1], key=lambda c: (c[0], c[1]))
        start, end = first[0], first[1]
        mine_part, theirs_part = [], []
        grew = True
        while grew:  # an overlapping change can widen the range and pull in more
            grew = False
            for source, bucket in ((ours, mine_part), (others, theirs_part)):
                while source and (source[0][0] < end or source[0][0] == start):
                    s, e, repl = source.pop(0)
                    bucket.append((s, e, repl))
                    if e > end:
                        end, grew = e, True
        out += b[pos:start]
        mine_text = _apply(b, start, end, mine_part)
        theirs_text = _apply(b, start, end, theirs_part)
        if not theirs_part or mine_text == theirs_text:
            out += mine_text
        elif not mine_part:
            out += theirs_text
        else:
            conflicts += 1
            out += [f"<<<<<<< {_('your version')}", *mine_text, "======="]
            out += [*theirs_text, f">>>>>>> {_('version on disk')}"]
        pos = end
    out += b[pos:]
    return normalise("\n".join(out)), conflicts


def _apply(base: list[str], start: int, end: int, changes) -> list[str]:
    """The lines base[start:end] become after applying these (sorted, disjoint) changes."""
    result, pos = [], start
    for s, e, repl in changes:
        result += base[pos:s] + repl
        pos = e
    return result + base[pos:end]


# --------------------------------------------------------------------------------------
# Generated sections (written by the nightly refresh, shown as such)
# --------------------------------------------------------------------------------------

GENERATED = re.compile(
    r"^<!-- generated:(?P<name>[\w.-]+)(?P<attrs>[^\n>]*?)\s*-->\n(?P<body>.*?)"
    r"^<!-- /generated:(?P=name) -->[ \t]*$\n?",
    re.M | re.S,
)
FACT_REFS = re.compile(r"\s*<!-- facts:(?P<ids>\d+(?:\s*,\s*\d+)*) -->\s*$")


@dataclass
class Segment:
    kind: str  # "hand" | "generated"
    text: str
    name: str = ""
    attrs: str = ""


def segments(text: str) -> list[Segment]:
    """Split a card into hand-written stretches and generated sections, in order."""
    out, pos = [], 0
    for match in GENERATED.finditer(text):
        if match.start() > pos:
            out.append(Segment("hand", text[pos : match.start()]))
        out.append(Segment("generated", match["body"], match["name"], match["attrs"].strip()))
        pos = match.end()
    if pos < len(text):
        out.append(Segment("hand", text[pos:]))
    return out


def replace_generated(
    text: str,
    name: str,
    lines: Iterable[tuple[str, Sequence[int]]],
    *,
    updated: datetime | None = None,
) -> str:
    """Swap one generated section for new lines (each with the fact ids it came from).

    Everything outside the markers is left exactly as it was; a missing section is
    appended at the end. Newlines inside a line are flattened: one line, one item.
    """
    stamp = (updated or timezone.now()).strftime("%Y-%m-%dT%H:%M")
    body = []
    for line, ids in lines:
        line = " ".join(line.split())
        refs = f" <!-- facts:{','.join(str(int(i)) for i in ids)} -->" if ids else ""
        body.append(f"{line}{refs}")
    block = "\n".join(
        [f"<!-- generated:{name} updated={stamp} -->", *body, f"<!-- /generated:{name} -->"]
    )
    for match in GENERATED.finditer(text):
        if match["name"] == name:
            return text[: match.start()] + block + "\n" + text[match.end() :]
    prefix = normalise(text)
    return (prefix + "\n" if prefix else "") + block + "\n"


def write_generated(
    key: str,
    name: str,
    lines: Iterable[tuple[str, Sequence[int]]],
    *,
    author: str = CardAuthor.JOB,
    note: str = "",
    note_params: dict | None = None,
    owner: Owner | None = None,
) -> CardRevision | None:
    """What the nightly refresh calls: replace its section, keep the person's edits."""
    current = read(key, owner)
    new = replace_generated(current, name, lines)
    return save(
        key,
        new,
        author,
        base=current,
        note=note or "nightly_refresh",
        note_params=note_params,
        owner=owner,
    )


# --------------------------------------------------------------------------------------
# Lines a card already holds (so a generated section never says a thing twice)
# --------------------------------------------------------------------------------------

_LEAD = re.compile(r"^\s*(?:#{1,6}\s+|>\s*|[-*+]\s+(?:\[[ xX]\]\s+)?|\d{1,3}[.)]\s+)")
_EMPHASIS = re.compile(r"\*\*|__|`|~~")
_QUOTES = "\"'“”‘’「」『』"
# A label nobody needs twice: "The user", "用户", with or without a possessive.
_SUBJECT = re.compile(r"^(?:the user(?:'s|’s)?|user(?:'s|’s)?|用户的?)\s*", re.I)


def line_key(text: str, name: str = "") -> str:
    """The comparison form of one card line: no bullet, heading mark, emphasis, fact ids,
    leading "The user" / "用户" (or the person's name), and content_key's folding of width,
    case, spacing and final punctuation; so "- **Address as**: Li" and the fact
    "Address as: Li" compare equal, as do "称呼：小李" and "- **称呼**: 小李"."""
    text = FACT_REFS.sub("", text)
    text = _LEAD.sub("", text.strip())
    text = _EMPHASIS.sub("", text).strip().strip(_QUOTES)
    text = _SUBJECT.sub("", text)
    if name and text.lower().startswith(name.lower()):
        text = text[len(name) :].lstrip("'’s ").lstrip("的")
    return content_key(text).strip(_QUOTES)


def held_lines(text: str, *, skip_section: str = "", name: str = "") -> set[str]:
    """The keys of every line the card holds, except those of the generated section being
    rebuilt (its old lines are about to be replaced)."""
    held = set()
    for seg in segments(normalise(text)):
        if seg.kind == "generated" and seg.name == skip_section:
            continue
        for line in seg.text.splitlines():
            if line.strip().startswith("<!--"):
                continue
            if key := line_key(line, name):
                held.add(key)
    return held


_PARTS = re.compile(r"[;；]")


def repeats(text: str, held: set[str], name: str = "") -> bool:
    """Does the card already say this? The same line, a line that contains it, or, for a
    "label: a; b" fact (an onboarding answer of several lines), every part as its own line."""
    key = line_key(text, name)
    if not key:
        return True
    if key in held or (len(key) >= 6 and any(key in line for line in held)):
        return True
    label, colon, value = key.partition(":")
    parts = [p for p in _PARTS.split(value) if p] if colon else []
    return bool(parts) and all(p in held or f"{label}:{p}" in held for p in parts)


def generated_fact_ids(text: str) -> list[int]:
    ids: list[int] = []
    for seg in segments(text):
        if seg.kind == "generated":
            for line in seg.text.splitlines():
                if m := FACT_REFS.search(line):
                    ids += [int(i) for i in m["ids"].split(",")]
    return ids


# --------------------------------------------------------------------------------------
# Rendering (raw HTML off: whatever a card says is shown as text, never run)
# --------------------------------------------------------------------------------------

_md = MarkdownIt("commonmark", {"html": False, "linkify": False, "typographer": False}).enable(
    ["table", "strikethrough"]
)
# A card's links follow the rule for every stored URL (http, https, mailto, or within the
# site); any other link is left as its Markdown text.
_md.validateLink = is_safe_markdown_link
# Private-use characters survive markdown-it untouched and cannot be typed by accident.
_REF_OPEN, _REF_CLOSE = "\ue000", "\ue001"
_REF_TOKEN = re.compile(f"{_REF_OPEN}([0-9,]+){_REF_CLOSE}")


def fact_url(fact_id: int) -> str:
    """The fact's history page (built by the write-path issue); a filtered list until then."""
    for name in ("fact_detail", "fact"):
        try:
            return reverse(name, args=[fact_id])
        except NoReverseMatch:
            continue
    return f"/facts/{fact_id}/"


def _strip_markers(text: str) -> str:
    """Nobody types these, but a pasted one must not turn into a link."""
    return text.replace(_REF_OPEN, "").replace(_REF_CLOSE, "")


def _fact_links(match: re.Match) -> str:
    ids = [int(i) for i in match[1].split(",") if i]
    return str(
        format_html(
            '<span class="fact-refs">{}</span>',
            format_html_join(" ", '<a href="{}">#{}</a>', ((fact_url(i), i) for i in ids)),
        )
    )


def _render_generated(seg: Segment) -> str:
    lines = []
    for line in seg.text.splitlines():
        line = _strip_markers(line)
        if m := FACT_REFS.search(line):
            line = line[: m.start()] + f" {_REF_OPEN}{m['ids'].replace(' ', '')}{_REF_CLOSE}"
        lines.append(line)
    html = _REF_TOKEN.sub(_fact_links, _md.render("\n".join(lines)))
    label = _("Generated automatically")
    if when := re.search(r"updated=(\S+)", seg.attrs):
        label = _("Generated automatically (%(when)s)") % {"when": when[1].replace("T", " ")}
    return str(
        format_html(
            '<section class="generated" data-generated="{}"><p class="generated-label">{} · {}'
            "</p>{}</section>",
            seg.name,
            label,
            _("edits inside this section are replaced at the next refresh"),
            mark_safe(html),  # noqa: S308 - markdown-it output with raw HTML disabled
        )
    )


def render(text: str) -> SafeString:
    """Card Markdown as safe HTML: tables, lists, generated sections with links to facts."""
    parts = []
    for seg in segments(normalise(text)):
        if seg.kind == "generated":
            parts.append(_render_generated(seg))
        else:
            parts.append(_md.render(_strip_markers(seg.text)))
    return mark_safe("".join(parts))  # noqa: S308 - markdown-it escapes all raw HTML
