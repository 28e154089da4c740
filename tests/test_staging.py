"""The import's staging folder: a repair never touches a running import, only dead ones."""

import io

import pytest

from curator import staging

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def data_dir(settings, tmp_path):
    settings.DATA_DIR = tmp_path
    settings.MEMORY_DIR = tmp_path / "memory"
    settings.MEDIA_ROOT = tmp_path / "attachments"


def test_a_repair_leaves_a_running_import_alone():
    running = staging.Staging()
    running.stage(io.BytesIO(b"card"), staging.MEMORY, "shared/User.md")
    assert staging.recover() == []
    assert (running.folder / "memory/shared/User.md").read_bytes() == b"card"
    running.close()
    assert not staging.root().exists()


def test_a_repair_removes_what_a_dead_import_left_before_its_commit(tmp_path):
    dead = tmp_path / "import-staging" / "0123456789ab" / "attachments"
    dead.mkdir(parents=True)
    (dead / "a.png").write_bytes(b"png")  # its lock died with its process
    assert staging.recover() == ["0123456789ab"]
    assert not staging.pending() and not (tmp_path / "attachments").exists()
