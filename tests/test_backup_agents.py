"""Agents travel in an archive without their secrets: the reproduction of issue 28 restores."""

import json

import pytest
from django.core.management import CommandError, call_command
from django.db import connection

from curator.models import ConversationTurn, Fact, MemoryEvent, Owner, PendingItem, Session
from lifecycle.backup import export as archive
from lifecycle.backup import restore as imp
from memsite.core.tokens import find_token
from memsite.models import ApiToken
from retrieval.models import RecallLog
from tests.archive_helpers import manifest, rewrite, rows, wipe
from tests.queue_helpers import run_scheduled

pytestmark = pytest.mark.django_db

AGENT_LINKED = (Session, ConversationTurn, Fact, PendingItem, MemoryEvent, RecallLog)


@pytest.fixture(autouse=True)
def data_dirs(settings, tmp_path):
    settings.MEMORY_DIR = tmp_path / "memory"
    settings.MEDIA_ROOT = tmp_path / "attachments"


def used_by_one_agent(api, capture) -> None:
    """Issue 28's reproduction: one token, a turn, a memory, a search, a context, the end."""
    with capture(execute=True):
        turn = {"session_id": "s1", "turn_index": 0, "role": "user"}
        assert (
            api.post("/turns", {**turn, "content": "我住在杭州，我的上司叫王芳。"}).status_code
            == 201
        )
        assert (
            api.post("/memories", {"content": "喜欢乌龙茶", "confidence": 0.95}).status_code == 201
        )
        assert api.post("/search", {"query": "杭州"}).status_code == 200
        assert api.post("/context", {"query": "上司是谁"}).status_code == 200
        assert api.post("/sessions/s1/end").status_code == 202
    run_scheduled()


def agents_of() -> dict[str, list]:
    """Which agent (by name) each row of the agent-linked tables names, in id order."""
    names = dict(ApiToken.objects.values_list("pk", "name"))
    return {
        m.__name__: [
            names.get(a) for a in m.objects.order_by("pk").values_list("agent_id", flat=True)
        ]
        for m in AGENT_LINKED
    }


def new_data_dir(settings, tmp_path, name="fresh") -> None:
    wipe()
    settings.MEMORY_DIR = tmp_path / name / "memory"
    settings.MEDIA_ROOT = tmp_path / name / "attachments"


def test_an_archive_of_an_install_an_agent_wrote_to_restores_with_every_agent_link(
    api, django_capture_on_commit_callbacks, settings, tmp_path
):
    used_by_one_agent(api, django_capture_on_commit_callbacks)
    before = agents_of()
    assert "test agent" in before["ConversationTurn"] and "test agent" in before["Fact"]
    assert set(before["RecallLog"]) == {"test agent"}
    path = tmp_path / "a.zip"
    archive.export(path)
    new_data_dir(settings, tmp_path)
    call_command("import", str(path), "--dry-run")
    call_command("import", str(path))
    assert agents_of() == before
    with connection.cursor() as cursor:
        assert cursor.execute("PRAGMA foreign_key_check").fetchall() == []


def test_an_archive_carries_agents_without_their_token_hash(api, tmp_path):
    api.post("/memories", {"content": "喜欢乌龙茶", "confidence": 0.95})
    path = tmp_path / "a.zip"
    archive.export(path)
    (agent,) = rows(path, "agents")
    assert agent["name"] == "test agent" and agent["scope"] == "read-write"
    assert "digest" not in agent and "prefix" not in agent
    assert ApiToken.objects.get().digest not in path.read_bytes().decode("latin-1")


def test_a_restored_agent_needs_a_new_token_and_its_old_one_is_refused(api, settings, tmp_path):
    api.post("/memories", {"content": "喜欢乌龙茶", "confidence": 0.95})
    ApiToken.objects.update(writes_paused=True, read_scopes=["personal"], description="笔记本")
    path = tmp_path / "a.zip"
    archive.export(path)
    new_data_dir(settings, tmp_path)
    imp.import_archive(path, reindex=False)
    agent = ApiToken.objects.get()
    assert agent.state() == "needs_token"
    assert (agent.writes_paused, agent.read_scopes, agent.description) == (
        True,
        ["personal"],
        "笔记本",
    )
    assert find_token(api.raw) is None
    assert api.post("/search", {"query": "乌龙茶"}).status_code == 401


def test_a_merge_maps_agents_onto_the_ones_of_the_same_name(api, settings, tmp_path):
    from memsite.core.tokens import create_token

    api.post("/memories", {"content": "喜欢乌龙茶", "confidence": 0.95})
    path = tmp_path / "a.zip"
    archive.export(path)
    new_data_dir(settings, tmp_path)
    create_token("other agent")
    here, _raw = create_token("test agent")
    Fact.objects.create(
        owner=Owner.default(), content="本地的事实"
    )  # the install holds memory: a merge
    report = imp.import_archive(path, reindex=False)
    assert report.mode == imp.MERGE
    assert ApiToken.objects.count() == 2
    assert Fact.objects.get(content="喜欢乌龙茶").agent_id == here.pk


def test_an_archive_from_before_agents_travelled_links_to_one_unknown_agent(
    api, django_capture_on_commit_callbacks, settings, tmp_path
):
    used_by_one_agent(api, django_capture_on_commit_callbacks)
    path = tmp_path / "a.zip"
    archive.export(path)
    old_manifest = manifest(path)
    del old_manifest["counts"]["agents"]
    old = rewrite(
        path,
        tmp_path / "old.zip",
        {"data/agents.jsonl": None, "manifest.json": json.dumps(old_manifest).encode()},
    )
    new_data_dir(settings, tmp_path)
    imp.import_archive(old, reindex=False)
    (unknown,) = ApiToken.objects.all()
    assert unknown.state() == "needs_token"
    linked = {a for names in agents_of().values() for a in names} - {None}
    assert linked == {unknown.name}


def test_a_restore_cut_short_runs_again(
    api, django_capture_on_commit_callbacks, settings, tmp_path, monkeypatch
):
    used_by_one_agent(api, django_capture_on_commit_callbacks)
    before = agents_of()
    path = tmp_path / "a.zip"
    archive.export(path)
    new_data_dir(settings, tmp_path)

    def killed(self, zf):
        raise KeyboardInterrupt  # as a Ctrl+C half-way: the rows are written, not committed

    with monkeypatch.context() as patch:
        patch.setattr(imp._Apply, "files", killed)
        with pytest.raises(KeyboardInterrupt):
            imp.import_archive(path, reindex=False)
    assert not Session.objects.exists()
    imp.import_archive(path, reindex=False)
    assert agents_of() == before


def test_the_dry_run_fails_exactly_when_the_import_would(api, settings, tmp_path, monkeypatch):
    api.post("/memories", {"content": "喜欢乌龙茶", "confidence": 0.95})
    path = tmp_path / "a.zip"
    archive.export(path)
    new_data_dir(settings, tmp_path)
    # An import that leaves a dangling link (what a missing agent did before this release)
    monkeypatch.setattr(imp._Apply, "_unknown_agent", lambda self: 999_999)
    monkeypatch.setattr(imp._Apply, "_agent_id", lambda self, pk: 999_999)
    with pytest.raises(CommandError, match="refer"):
        call_command("import", str(path), "--dry-run")
    assert not Fact.objects.exists() and not ApiToken.objects.exists()
    with pytest.raises(CommandError, match="refer"):
        call_command("import", str(path))
    assert not Fact.objects.exists()
    monkeypatch.undo()
    call_command("import", str(path), "--dry-run")
    assert not Fact.objects.exists()
    call_command("import", str(path))
    assert Fact.objects.get().agent.name == "test agent"


def test_one_click_on_the_agents_page_issues_a_restored_agent_a_token(
    api, client_in, settings, tmp_path
):
    from django.urls import reverse

    api.post("/memories", {"content": "喜欢乌龙茶", "confidence": 0.95})
    path = tmp_path / "a.zip"
    archive.export(path)
    new_data_dir(settings, tmp_path)
    imp.import_archive(path, reindex=False)
    agent = ApiToken.objects.get()
    page = client_in.get(reverse("agents")).content.decode()
    assert 'data-state="needs_token"' in page and "needs a new token" in page
    response = client_in.post(reverse("agent_new_token", args=[agent.pk]))
    secret = response.context["new_secret"]
    assert find_token(secret).pk == agent.pk
    assert secret in response.content.decode()
    api.raw = secret
    assert api.post("/search", {"query": "乌龙茶"}).status_code == 200
    assert client_in.post(reverse("agent_new_token", args=[agent.pk])).status_code == 302
    assert find_token(secret).pk == agent.pk  # a second click never replaces a working token
