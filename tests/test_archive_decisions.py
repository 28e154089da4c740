"""The person's decisions about the memory travel in the backup: guardrails, confidence
thresholds per source and answered contradictions come back with a restore."""

import json

import pytest

from curator.guard.rules import ensure_builtin
from curator.models import (
    Contradiction,
    ContradictionStatus,
    Fact,
    GuardHit,
    GuardRule,
    MemoryEvent,
    Owner,
    Resolution,
    SourceThreshold,
)
from lifecycle.backup import export as archive
from lifecycle.backup import restore as imp
from memsite.core.tokens import create_token
from memsite.models import ApiToken
from tests.archive_helpers import manifest, members, rewrite, wipe

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def data_dirs(settings, tmp_path):
    settings.MEMORY_DIR = tmp_path / "memory"
    settings.MEDIA_ROOT = tmp_path / "attachments"


@pytest.fixture
def decided(tmp_path):
    """An install where the person made one decision of each kind, exported."""
    owner = Owner.default()
    agent, _ = create_token("laptop agent")
    ensure_builtin(owner)
    GuardRule.objects.filter(detector="email").update(enabled=True, redact_turns=True)
    GuardRule.objects.create(owner=owner, name="no salary", words=["工资"], agents=[agent.pk])
    SourceThreshold.objects.create(source="rules", write=0.8, pending=0.5)
    SourceThreshold.objects.create(source=f"token:{agent.pk}", write=0.7)
    left = Fact.objects.create(owner=owner, content="drinks coffee every morning")
    right = Fact.objects.create(owner=owner, content="does not drink coffee any more")
    Contradiction.objects.create(
        owner=owner,
        left=left,
        right=right,
        rule="negation",
        status=ContradictionStatus.COMPATIBLE,
        resolution=Resolution.BOTH,
    )
    path = tmp_path / "decisions.zip"
    archive.export(path)
    return path


def fresh_install() -> Owner:
    """No memory and no tokens; the built-in guardrails made on the first page visit."""
    wipe()
    ApiToken.objects.all().delete()
    owner = Owner.default()
    ensure_builtin(owner)
    return owner


def test_a_restore_brings_back_guardrails_thresholds_and_answered_contradictions(decided):
    fresh_install()
    report = imp.import_archive(decided, reindex=False)
    assert report.mode == imp.RESTORE
    email = GuardRule.objects.get(detector="email")
    assert email.enabled and email.redact_turns
    assert GuardRule.objects.filter(detector="email").count() == 1
    assert SourceThreshold.objects.get(source="rules").write == 0.8
    pair = Contradiction.objects.get()
    assert pair.resolution == Resolution.BOTH
    assert {pair.left.content, pair.right.content} == {
        "drinks coffee every morning",
        "does not drink coffee any more",
    }


def test_a_rule_and_thresholds_of_an_agent_follow_the_restored_agent(decided):
    fresh_install()
    create_token("another agent")  # made before the restore: it takes the old agent's id
    imp.import_archive(decided, reindex=False)
    laptop = ApiToken.objects.get(name="laptop agent")
    assert GuardRule.objects.get(name="no salary").agents == [laptop.pk]
    assert SourceThreshold.objects.get(source__startswith="token:").source == f"token:{laptop.pk}"


def test_what_names_an_agent_an_old_archive_lacks_does_not_apply_to_another_agent(
    decided, tmp_path
):
    """Archives made before agents travelled name tokens by id only."""
    old_manifest = manifest(decided)
    del old_manifest["counts"]["agents"]
    old = rewrite(
        decided,
        tmp_path / "old.zip",
        {"data/agents.jsonl": None, "manifest.json": json.dumps(old_manifest).encode()},
    )
    fresh_install()
    create_token("another agent")
    imp.import_archive(old, reindex=False)
    salary = GuardRule.objects.get(name="no salary")
    assert salary.agents == []  # limited to an unknown agent: it now guards every source
    assert not SourceThreshold.objects.filter(source__startswith="token:").exists()


def test_importing_the_same_archive_again_leaves_the_decisions_as_they_are(decided):
    before = GuardRule.objects.count(), SourceThreshold.objects.count()
    report = imp.import_archive(decided, reindex=False)
    assert report.mode == imp.MERGE
    assert (GuardRule.objects.count(), SourceThreshold.objects.count()) == before
    assert Contradiction.objects.count() == 1


def test_an_archive_exported_before_decisions_travelled_still_restores(decided, tmp_path):
    counts = manifest(decided)["counts"]
    for name in ("guard_rules", "thresholds", "contradictions"):
        del counts[name]
    old = rewrite(
        decided,
        tmp_path / "old.zip",
        {
            "manifest.json": json.dumps({**manifest(decided), "counts": counts}).encode(),
            "data/guard_rules.jsonl": None,
            "data/thresholds.jsonl": None,
            "data/contradictions.jsonl": None,
        },
    )
    assert "data/guard_rules.jsonl" not in members(old)
    fresh_install()
    report = imp.import_archive(old, reindex=False)
    assert report.mode == imp.RESTORE
    assert Fact.objects.count() == 2 and not Contradiction.objects.exists()


def test_a_merge_keeps_out_what_this_installs_guardrails_stop(tmp_path):
    """An archive is one more source: a fact holding a secret, or a topic the person banned
    here, stays out with its events and contradictions, and the Blocked log says so."""
    owner = Owner.default()
    Fact.objects.create(owner=owner, content="my OpenAI key is sk-proj-" + "a1B2" * 12)
    kept = Fact.objects.create(owner=owner, content="likes hiking in the Alps")
    health = Fact.objects.create(owner=owner, content="在看心理医生，健康状况不好")
    Contradiction.objects.create(owner=owner, left=kept, right=health, rule="negation")
    path = tmp_path / "old.zip"
    archive.export(path)
    wipe()
    owner = Owner.default()
    Fact.objects.create(owner=owner, content="lives in Munich")  # a used install: a merge
    GuardRule.objects.create(owner=owner, name="health", words=["健康", "health"])
    report = imp.import_archive(path, reindex=False)
    assert report.mode == imp.MERGE and report.blocked == 2
    contents = set(Fact.objects.values_list("content", flat=True))
    assert contents == {"lives in Munich", "likes hiking in the Alps"}
    assert not Contradiction.objects.exists()
    assert not MemoryEvent.objects.filter(payload__icontains="sk-proj").exists()
    hits = GuardHit.objects.filter(source="import")
    assert sorted(h.rule_name for h in hits) == sorted(["health", secret_rule_name()])
    assert all("sk-proj-a1B2a1B2" not in h.excerpt for h in hits)


def secret_rule_name() -> str:
    return GuardRule.objects.get(detector="api_key").name
