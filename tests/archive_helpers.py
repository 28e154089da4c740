"""Shared by the archive tests: a populated install, a wipe, and reading archives back."""

import json
import zipfile
from pathlib import Path

from django.core.files.base import ContentFile

from curator import cards
from curator.models import Attachment, CardAuthor, GuardHit, Owner, Session
from lifecycle import demo
from lifecycle.backup.export import KINDS
from memsite.models import ApiToken
from retrieval.models import RecallLog, RegressionCheck, SearchDoc

FILE_BYTES = "订单导出 order export\n第二行\n".encode()


def populate(now=None) -> Attachment:
    """The demo, a card, a regression check and an attachment with a real file."""
    demo.load_demo(index=False, now=now)
    owner = Owner.default()
    cards.save("user", "# User\n\n- Likes orchards\n", CardAuthor.PERSON)
    RegressionCheck.objects.create(owner=owner, query="orchard", must_include=[1], name="o")
    att = Attachment(
        owner=owner,
        session=Session.objects.first(),
        original_name="export.txt",
        mime_type="text/plain",
        size=len(FILE_BYTES),
        description="the order export",
    )
    att.file.save("export.txt", ContentFile(FILE_BYTES), save=False)
    att.save()
    return att


def wipe() -> None:
    """Every exported row gone (children first), and what a fresh data dir lacks besides:
    the agents' tokens, the recall and Blocked logs, the search index."""
    for kind in reversed(KINDS):
        kind.model.objects.all().delete()
    for model in (SearchDoc, RecallLog, GuardHit, ApiToken):
        model.objects.all().delete()


def members(path: Path) -> dict[str, bytes]:
    with zipfile.ZipFile(path) as zf:
        return {name: zf.read(name) for name in zf.namelist()}


def rows(path: Path, kind: str) -> list[dict]:
    data = members(path)[f"data/{kind}.jsonl"].decode()
    return [json.loads(line) for line in data.splitlines() if line]


def manifest(path: Path) -> dict:
    return json.loads(members(path)["manifest.json"])


def rewrite(src: Path, dst: Path, changes: dict[str, bytes | None]) -> Path:
    """A copy of an archive with some members replaced (None = left out)."""
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, "w") as zout:
        for name in zin.namelist():
            if name in changes:
                if changes[name] is not None:
                    zout.writestr(name, changes[name])
            else:
                zout.writestr(name, zin.read(name))
    return dst
