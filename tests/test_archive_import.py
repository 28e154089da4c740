"""Import: restore into an empty install, preview and merge into a used one, refuse bad archives."""

import io
import json
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from curator.guard.rules import all_rules
from curator.models import (
    ConversationTurn,
    EventType,
    Fact,
    FactStatus,
    MemoryEvent,
    Owner,
    Session,
)
from lifecycle.backup import export as archive
from lifecycle.backup import restore as imp
from retrieval.search import search
from tests.archive_helpers import manifest, members, populate, rewrite, wipe

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def data_dirs(settings, tmp_path):
    settings.MEMORY_DIR = tmp_path / "memory"
    settings.MEDIA_ROOT = tmp_path / "attachments"


@pytest.fixture
def exported(tmp_path):
    populate()
    path = tmp_path / "a.zip"
    archive.export(path)
    return path


def fresh(settings, tmp_path):
    wipe()
    settings.MEMORY_DIR = tmp_path / "fresh" / "memory"
    settings.MEDIA_ROOT = tmp_path / "fresh" / "attachments"


def counts() -> dict[str, int]:
    return {kind.name: kind.model.objects.count() for kind in archive.KINDS}


def files_under(*folders: Path) -> list[Path]:
    return [p for folder in folders if folder.exists() for p in folder.rglob("*") if p.is_file()]


def test_restore_into_an_empty_install_rebuilds_the_search_indexes(tmp_path, settings):
    owner = Owner.default()
    kept = Fact.objects.create(owner=owner, content="用户住在杭州，周末喜欢爬山")
    path = tmp_path / "one.zip"
    archive.export(path)
    fresh(settings, tmp_path)
    report = imp.import_archive(path)
    assert report.mode == imp.RESTORE and report.indexed and not report.index_error
    found = search("杭州", owner=Owner.objects.get(), record=False)
    assert [i.id for i in found.items if i.kind == "fact"] == [kept.pk]


def test_preview_counts_new_identical_and_conflicting(exported):
    changed = Fact.objects.order_by("pk").first()
    Fact.objects.filter(pk=changed.pk).update(confidence=0.11)
    gone = Session.objects.order_by("pk").last()
    turns = gone.turns.count()
    gone.delete()
    before = counts()
    plan = imp.plan(imp.read(exported))
    table = {row["kind"]: row for row in plan.counts()}
    assert plan.mode == imp.MERGE
    assert table["facts"][imp.CONFLICT] == 1
    assert table["facts"][imp.IDENTICAL] == Fact.objects.count() - 1
    assert (table["sessions"][imp.NEW], table["turns"][imp.NEW]) == (1, turns)
    assert table["memory_files"] == {
        "kind": "memory_files",
        "new": 0,
        "identical": 2,  # User.md and MEMORY.md
        "conflicting": 0,
    }
    assert counts() == before  # a preview writes nothing


def test_merge_keeps_the_existing_item_and_records_the_imported_one(exported, settings):
    changed = Fact.objects.order_by("pk").first()
    Fact.objects.filter(pk=changed.pk).update(confidence=0.11)
    (settings.MEMORY_DIR / "shared" / "User.md").write_text("# User\n\nmine\n")
    gone = Session.objects.order_by("pk").last()
    external, turns = gone.external_id, gone.turns.count()
    gone.delete()
    facts_before = Fact.objects.count()
    report = imp.apply(imp.read(exported), reindex=False)
    changed.refresh_from_db()
    assert changed.confidence == 0.11  # never overwritten
    events = MemoryEvent.objects.filter(
        event_type=EventType.MERGE, payload__import=report.import_id
    )
    by_kind = {e.payload["kind"]: e for e in events}
    assert by_kind["import:facts"].fact_id == changed.pk
    assert by_kind["import:facts"].payload["imported"]["confidence"] != 0.11
    assert "Likes orchards" in by_kind["import:file"].payload["imported"]
    assert (settings.MEMORY_DIR / "shared" / "User.md").read_text() == "# User\n\nmine\n"
    back = Session.objects.get(external_id=external)
    assert back.turns.count() == turns and Fact.objects.count() == facts_before
    assert report.events == events.count() == 2


def test_merge_remaps_chains_and_event_ids_to_new_rows(exported, settings, tmp_path):
    fresh(settings, tmp_path)
    Fact.objects.create(owner=Owner.default(), content="a local fact makes this a merge")
    offset = Fact.objects.get().pk
    imp.apply(imp.read(exported), reindex=False)
    chained = Fact.objects.filter(supersedes__isnull=False).select_related("supersedes")
    assert chained and all(f.supersedes.status == FactStatus.SUPERSEDED for f in chained)
    snapshots = [
        e.payload["after"]
        for e in MemoryEvent.objects.exclude(fact=None)
        if isinstance(e.payload.get("after"), dict) and "content" in e.payload["after"]
    ]
    assert snapshots  # undo data points at the imported rows, not at the local one
    for snap in snapshots:
        assert snap["id"] != offset and Fact.objects.get(pk=snap["id"]).content == snap["content"]
    turn_ids = set(ConversationTurn.objects.values_list("pk", flat=True))
    assert all(f.source_turn_id in turn_ids for f in Fact.objects.exclude(source_turn=None))


def test_importing_the_same_archive_twice_adds_nothing(exported):
    all_rules()  # the built-in guardrails, which any page or write creates on first use
    before = counts()
    report = imp.apply(imp.read(exported), reindex=False)
    assert report.mode == imp.MERGE and report.events == 0 and counts() == before


def broken_line(path: Path, tmp_path: Path) -> Path:
    lines = members(path)["data/facts.jsonl"].decode().splitlines()
    lines[len(lines) // 2] = lines[len(lines) // 2][:-10]
    return rewrite(path, tmp_path / "bad.zip", {"data/facts.jsonl": "\n".join(lines).encode()})


def bad_version(path: Path, tmp_path: Path) -> Path:
    meta = {**manifest(path), "format_version": 99}
    return rewrite(path, tmp_path / "bad.zip", {"manifest.json": json.dumps(meta).encode()})


def bad_count(path: Path, tmp_path: Path) -> Path:
    meta = manifest(path)
    meta["counts"]["turns"] += 1
    return rewrite(path, tmp_path / "bad.zip", {"manifest.json": json.dumps(meta).encode()})


def truncated(path: Path, tmp_path: Path) -> Path:
    bad = tmp_path / "bad.zip"
    bad.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    return bad


def no_file(path: Path, tmp_path: Path) -> Path:
    name = next(n for n in members(path) if n.startswith("files/attachments/"))
    meta = manifest(path)
    meta["counts"]["attachment_files"] -= 1
    changes = {name: None, "manifest.json": json.dumps(meta).encode()}
    return rewrite(path, tmp_path / "bad.zip", changes)


def no_manifest(path: Path, tmp_path: Path) -> Path:
    return rewrite(path, tmp_path / "bad.zip", {"manifest.json": None})


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        (truncated, "not a zip archive"),
        (bad_version, "format version 99"),
        (broken_line, "data/facts.jsonl line"),
        (bad_count, "the manifest says"),
        (no_file, "missing from the archive"),
        (no_manifest, "no manifest.json"),
    ],
)
def test_a_damaged_archive_is_refused_and_nothing_is_imported(
    exported, settings, tmp_path, damage, message
):
    bad = damage(exported, tmp_path)
    fresh(settings, tmp_path)
    with pytest.raises(imp.ArchiveError, match=message):
        imp.import_archive(bad)
    assert set(counts().values()) == {0}
    assert files_under(settings.MEMORY_DIR, settings.MEDIA_ROOT) == []


def test_a_failure_after_copying_files_removes_them(exported, settings, tmp_path, monkeypatch):
    fresh(settings, tmp_path)
    real = imp._Apply._attachment_file

    def copy_then_fail(self, *args):
        real(self, *args)
        raise OSError("disk full")

    monkeypatch.setattr(imp._Apply, "_attachment_file", copy_then_fail)
    with pytest.raises(OSError):
        imp.import_archive(exported)
    assert set(counts().values()) == {0}
    assert files_under(settings.MEMORY_DIR, settings.MEDIA_ROOT) == []


def run(*args) -> str:
    out = io.StringIO()
    call_command("import", *args, stdout=out)
    return out.getvalue()


def test_the_command_previews_a_merge_until_apply(exported):
    Session.objects.order_by("pk").last().delete()
    before = counts()
    out = run(str(exported))
    assert "Mode: merge" in out and "conflicting" in out and "Preview only" in out
    assert counts() == before
    out = run(str(exported), "--apply")
    assert "Imported (merge)" in out and counts()["sessions"] == before["sessions"] + 1


def test_the_command_restores_an_empty_install_and_refuses_garbage(exported, settings, tmp_path):
    fresh(settings, tmp_path)
    out = run(str(exported), "--dry-run")
    assert "Dry run: the import (restore) would succeed" in out and counts()["facts"] == 0
    out = run(str(exported))
    assert "Imported (restore)" in out and counts()["facts"] > 0
    garbage = tmp_path / "garbage.zip"
    garbage.write_text("not a zip")
    with pytest.raises(CommandError, match="Refused, nothing imported"):
        run(str(garbage))


def test_an_item_edited_since_the_export_is_a_conflict_not_a_duplicate(exported):
    fact = Fact.objects.filter(status=FactStatus.ACTIVE).order_by("pk").first()
    Fact.objects.filter(pk=fact.pk).update(content="edited after the export")
    facts = Fact.objects.count()
    table = {row["kind"]: row for row in imp.plan(imp.read(exported)).counts()}
    assert (table["facts"][imp.NEW], table["facts"][imp.CONFLICT]) == (0, 1)
    imp.apply(imp.read(exported), reindex=False)
    assert Fact.objects.count() == facts
    assert Fact.objects.get(pk=fact.pk).content == "edited after the export"
