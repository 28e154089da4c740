"""Export: one zip with a manifest, every kind as JSON lines, cards and attachment files."""

import io
import json

import pytest
from django.conf import settings
from django.core.management import call_command

from lifecycle.backup import export as archive
from lifecycle.backup import restore as archive_import
from memsite.models import ApiToken
from tests.archive_helpers import FILE_BYTES, manifest, members, populate, rows, wipe

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def data_dirs(settings, tmp_path):
    settings.MEMORY_DIR = tmp_path / "memory"
    settings.MEDIA_ROOT = tmp_path / "attachments"
    return tmp_path


def test_manifest_counts_every_kind_and_file(tmp_path):
    populate()
    path = tmp_path / "a.zip"
    archive.export(path)
    meta = manifest(path)
    assert meta["format"] == archive.FORMAT and meta["format_version"] == 1
    assert meta["app_version"] and meta["created_at"]
    for kind in archive.KINDS:
        assert meta["counts"][kind.name] == len(rows(path, kind.name)) == kind.model.objects.count()
    assert meta["counts"]["facts"] > 5 and meta["counts"]["turns"] > 5
    # User.md and MEMORY.md (the demo's facts reach the cards)
    assert meta["counts"]["memory_files"] == 2 and meta["counts"]["attachment_files"] == 1


def test_it_keeps_supersede_chains_links_and_files(tmp_path):
    att = populate()
    path = tmp_path / "a.zip"
    archive.export(path)
    facts = {r["id"]: r for r in rows(path, "facts")}
    chained = [r for r in facts.values() if r["supersedes_id"]]
    assert chained and all(r["supersedes_id"] in facts for r in chained)
    episode = rows(path, "episodes")[0]
    assert episode["linked_facts"] and set(episode["linked_facts"]) <= set(facts)
    files = members(path)
    assert files[f"files/attachments/{att.file.name}"] == FILE_BYTES
    assert b"Likes orchards" in files["files/memory/shared/User.md"]


def test_secrets_stay_out(tmp_path, owner_user):
    populate()
    ApiToken.objects.create(name="agent", prefix="abc", digest="d" * 64)
    path = tmp_path / "a.zip"
    archive.export(path)
    blob = b"".join(members(path).values())
    assert b"d" * 64 not in blob and owner_user.password.encode() not in blob
    assert not any(
        "token" in name or "user" in name.split("/")[-1]
        for name in members(path)
        if name.startswith("data/")
    )


def test_round_trip_into_a_fresh_install_gives_the_same_content(tmp_path, settings):
    populate()
    first = tmp_path / "first.zip"
    archive.export(first)
    wipe()
    settings.MEMORY_DIR = tmp_path / "fresh" / "memory"
    settings.MEDIA_ROOT = tmp_path / "fresh" / "attachments"
    report = archive_import.import_archive(first, reindex=False)
    assert report.mode == archive_import.RESTORE
    second = tmp_path / "second.zip"
    archive.export(second)
    a, b = members(first), members(second)
    assert a.keys() == b.keys()
    # only the manifest's creation time differs: rows keep their ids in a restore, except
    # guardrails (nothing links to them; a restore keeps the rules the install made itself)
    for name in a:
        if name == "data/guard_rules.jsonl":
            assert without_ids(a[name]) == without_ids(b[name])
        elif name != "manifest.json":
            assert a[name] == b[name], name
    meta_a, meta_b = manifest(first), manifest(second)
    meta_a.pop("created_at"), meta_b.pop("created_at")
    assert meta_a == meta_b


def without_ids(jsonl: bytes) -> list[dict]:
    rows = [json.loads(line) for line in jsonl.decode().splitlines() if line]
    return sorted(({k: v for k, v in r.items() if k != "id"} for r in rows), key=str)


def test_export_command_writes_the_archive(tmp_path):
    populate()
    out = io.StringIO()
    call_command("export", str(tmp_path / "c.zip"), stdout=out)
    assert "Exported to" in out.getvalue() and "facts:" in out.getvalue()
    assert manifest(tmp_path / "c.zip")["counts"]["sessions"] >= 1
    assert settings.MEMORY_DIR  # the cards came from the overridden folder
