"""Archives made by earlier releases (tests/data/archives/README.md) still restore."""

from pathlib import Path

import pytest
from django.core.management import call_command

from curator.models import ConversationTurn, Fact
from lifecycle.backup import export as archive
from lifecycle.backup import restore as imp
from memsite.models import ApiToken
from tests.archive_helpers import assert_same_records, manifest, wipe

pytestmark = pytest.mark.django_db

ARCHIVES = Path(__file__).parent / "data" / "archives"


@pytest.fixture(autouse=True)
def empty_install(settings, tmp_path):
    wipe()
    settings.MEMORY_DIR = tmp_path / "memory"
    settings.MEDIA_ROOT = tmp_path / "attachments"


def restored(name: str) -> dict[str, int]:
    path = ARCHIVES / name
    call_command("import", str(path), "--dry-run")
    assert not Fact.objects.exists()  # the dry run wrote nothing
    report = imp.import_archive(path, reindex=False)
    assert report.mode == imp.RESTORE
    counts = manifest(path)["counts"]
    for kind in archive.KINDS:
        if kind.name != "agents":  # an old archive's links may add the unknown agent
            assert kind.model.objects.count() == counts.get(kind.name, 0), kind.name
    return counts


def test_an_archive_of_the_first_release_with_an_export_restores(settings):
    counts = restored("first-release-437c780.zip")
    assert counts["facts"] > 20 and counts["attachment_files"] == 1
    assert "Likes orchards" in (settings.MEMORY_DIR / "shared" / "User.md").read_text()
    assert not ApiToken.objects.exists()  # its rows name no agent


def test_an_archive_whose_rows_name_tokens_it_lacks_restores_with_one_unknown_agent():
    restored("before-agents-c134630.zip")
    (unknown,) = ApiToken.objects.all()
    assert unknown.needs_token and unknown.name == "unknown agent (restored)"
    turn = ConversationTurn.objects.get(content="我住在杭州，我的上司叫王芳。")
    assert turn.agent == unknown and Fact.objects.get(content="喜欢乌龙茶").agent == unknown


def test_an_archive_of_this_release_restores_to_the_same_records(tmp_path):
    restored("this-release.zip")
    (agent,) = ApiToken.objects.all()
    assert agent.name == "chat assistant" and agent.needs_token
    assert Fact.objects.get(content="喜欢乌龙茶").agent == agent
    again = tmp_path / "again.zip"
    archive.export(again)
    # A release after the one that made the fixture may add fields and kinds: the fixture's
    # own records must come back unchanged.
    assert_same_records(ARCHIVES / "this-release.zip", again, later_release=True)
