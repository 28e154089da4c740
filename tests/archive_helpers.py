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


# Rows that may get another id, and why: compared by their natural key instead. Every other
# row keeps its id in a restore, and every field of every row must be equal.
# - guard_rules: a fresh install makes its built-in rules on first use; a restore fills those
#   rows (their ids) rather than adding the archive's. Nothing links to a rule by id.
# - thresholds: the same for thresholds set before a restore; nothing links to them by id.
BY_KEY = {"guard_rules": lambda r: r["detector"] or r["name"], "thresholds": lambda r: r["source"]}


def canonical(path: Path) -> dict[str, dict]:
    """Every row by kind and id (field by field), every file by path, the manifest's counts."""
    out: dict[str, dict] = {}
    with zipfile.ZipFile(path) as zf:
        for name in zf.namelist():
            if name.startswith("data/"):
                kind = name.removeprefix("data/").removesuffix(".jsonl")
                rows = [json.loads(line) for line in zf.read(name).splitlines() if line]
                if kind in BY_KEY:
                    out[kind] = {BY_KEY[kind](r): {**r, "id": None} for r in rows}
                else:
                    out[kind] = {r["id"]: r for r in rows}
            elif name.startswith("files/"):
                out.setdefault("files", {})[name] = zf.read(name)
        out["counts"] = json.loads(zf.read("manifest.json"))["counts"]
    return out


def assert_same_records(first: Path, second: Path, *, later_release: bool = False) -> None:
    """Both archives hold the same rows, field by field. `later_release`: `second` was made
    by a release newer than `first`'s, which may add kinds (empty here: the first had none
    of them) and fields (a default the first release did not know): only what the first
    archive holds is compared."""
    a, b = canonical(first), canonical(second)
    if later_release:
        assert a.keys() <= b.keys() and not any(b[k] for k in b.keys() - a.keys() - {"counts"})
    else:
        assert a.keys() == b.keys()
    for kind in a.keys() - {"counts"} if later_release else a:
        assert a[kind].keys() == b[kind].keys(), kind
        for key in a[kind]:
            theirs = b[kind][key]
            if later_release and isinstance(theirs, dict):
                theirs = {f: v for f, v in theirs.items() if f in a[kind][key]}
            assert a[kind][key] == theirs, (kind, key)
