"""kill -9 in the middle of a card save or an import: the next start leaves no orphan file,
and a card's file matches its newest revision (real processes, see crash_helpers)."""

import pytest

from lifecycle.backup import export as archive
from tests.archive_helpers import populate
from tests.crash_helpers import (
    copy_data_dir,
    manage,
    migrate,
    next_start,
    run,
    run_killed,
)

FIRST = "# User\n\n- first version\n"
SECOND = "# User\n\n- second version\n"
SAVE = """
from curator import cards
from curator.models import CardAuthor
cards.save("user", sys.argv[1], CardAuthor.PERSON)
"""
IMPORT = """
from django.core.management import call_command
call_command("import", sys.argv[1])
"""


@pytest.fixture(scope="module")
def saved_once(tmp_path_factory):
    """A migrated install whose User.md was saved once (a file and one revision)."""
    data = tmp_path_factory.mktemp("saved-once") / "data"
    migrate(data)
    result = run(data, SAVE, FIRST)
    assert result.returncode == 0, result.stderr
    return data


@pytest.fixture(scope="module")
def empty_install(tmp_path_factory):
    data = tmp_path_factory.mktemp("empty") / "data"
    migrate(data)
    return data


@pytest.mark.parametrize("moment", ["before-rename", "after-rename", "before-commit"])
def test_a_card_save_killed_before_its_commit_leaves_the_old_file_and_history(
    saved_once, tmp_path, moment
):
    data = copy_data_dir(saved_once, tmp_path / "data")
    card = data / "memory" / "shared" / "User.md"
    run_killed(data, moment, SAVE, card, SECOND)
    state = next_start(data)
    assert (state["card"], state["latest"], state["revisions"]) == (FIRST, FIRST, 1)
    assert state["files"] == ["memory/shared/User.md"]  # no temp file, no journal left


def test_a_card_save_killed_after_its_commit_leaves_the_new_file_and_revision(saved_once, tmp_path):
    data = copy_data_dir(saved_once, tmp_path / "data")
    run_killed(data, "after-commit", SAVE, None, SECOND)
    state = next_start(data)
    assert (state["card"], state["latest"], state["revisions"]) == (SECOND, SECOND, 2)
    assert state["files"] == ["memory/shared/User.md"]


def test_the_repair_never_undoes_an_edit_made_after_the_killed_save(saved_once, tmp_path):
    data = copy_data_dir(saved_once, tmp_path / "data")
    card = data / "memory" / "shared" / "User.md"
    run_killed(data, "after-rename", SAVE, card, SECOND)
    card.write_text("# User\n\n- typed in an editor meanwhile\n")
    state = next_start(data)
    assert state["card"] == "# User\n\n- typed in an editor meanwhile\n"
    assert state["files"] == ["memory/shared/User.md"]


LONG_PROJECT = r"""
from curator import cards
from curator.models import CardAuthor
weeks = [f"## Week {n}\n" + "".join(f"- note {n}.{i}\n" for i in range(10)) for n in range(12)]
cards.save("project", "# Orchard\n\n" + "\n".join(weeks), CardAuthor.PERSON)
"""
METABOLISM = """
from curator import metabolism
metabolism.apply(None)
"""


@pytest.fixture(scope="module")
def long_project(tmp_path_factory):
    """An install whose Project.md is over its 100 lines: metabolism archives a part."""
    data = tmp_path_factory.mktemp("long-project") / "data"
    migrate(data)
    result = run(data, LONG_PROJECT)
    assert result.returncode == 0, result.stderr
    return data


def project_state(data) -> tuple[str, list[str]]:
    """Project.md and the archive files, as the next start leaves them."""
    next_start(data)  # the start-up repair
    shared = data / "memory" / "shared"
    archives = sorted(p.name for p in (shared / "archive").glob("*")) if shared.exists() else []
    return (shared / "Project.md").read_text(), archives


def test_metabolism_killed_before_its_commit_leaves_no_archive_file(long_project, tmp_path):
    data = copy_data_dir(long_project, tmp_path / "data")
    before = (data / "memory" / "shared" / "Project.md").read_text()
    run_killed(data, "before-commit", METABOLISM)
    project, archives = project_state(data)
    assert project == before and archives == []
    assert not list((data / "journal").rglob("*.json"))


def test_metabolism_killed_after_its_commit_keeps_its_archive_file(long_project, tmp_path):
    data = copy_data_dir(long_project, tmp_path / "data")
    run_killed(data, "after-commit", METABOLISM)
    project, archives = project_state(data)
    assert len(archives) == 1 and f"archive/{archives[0]}" in project
    assert "## Week 0" not in project
    assert not list((data / "journal").rglob("*.json"))


def stored_files(state: dict) -> list:
    """The attachment rows that name a file (the demo's others have none), and whether it is
    on disk."""
    return [row for row in state["attachments"] if row[0]]


def assert_complete(state: dict) -> None:
    """The archive's one attachment file and its two card files (the demo's facts reach
    User.md and MEMORY.md) are in place, and nothing else (no staging folder, no stray copy)."""
    [[name, on_disk]] = stored_files(state)
    assert on_disk and name.endswith("export.txt")
    assert state["files"] == [
        f"attachments/{name}",
        "memory/shared/MEMORY.md",
        "memory/shared/User.md",
    ]


@pytest.fixture
def archive_zip(db, settings, tmp_path):
    """An archive with a card file and an attachment file."""
    settings.MEMORY_DIR = tmp_path / "src" / "memory"
    settings.MEDIA_ROOT = tmp_path / "src" / "attachments"
    populate()
    path = tmp_path / "a.zip"
    archive.export(path)
    return path


def test_an_import_killed_before_its_commit_leaves_no_file_and_can_be_run_again(
    empty_install, tmp_path, archive_zip
):
    data = copy_data_dir(empty_install, tmp_path / "data")
    run_killed(data, "before-commit", IMPORT, None, str(archive_zip))
    state = next_start(data)
    assert state["files"] == [] and state["attachments"] == []
    again = manage(data, "import", str(archive_zip))
    assert again.returncode == 0 and "Imported (restore)" in again.stdout, again.stderr
    state = next_start(data)
    assert_complete(state)


@pytest.mark.parametrize("moment", ["after-commit", "after-first-move"])
def test_an_import_killed_after_its_commit_gets_its_files_at_the_next_start(
    empty_install, tmp_path, archive_zip, moment
):
    data = copy_data_dir(empty_install, tmp_path / "data")
    run_killed(data, moment, IMPORT, None, str(archive_zip))
    state = next_start(data)
    assert_complete(state)
    assert state["card"] == state["latest"]
