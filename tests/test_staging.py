"""The import's staging folder: a repair never touches a running import, only dead ones."""

import io

import pytest
from django.core.files.storage import default_storage

from curator.models import Attachment
from lifecycle.backup import export as archive
from lifecycle.backup import restore as imp
from lifecycle.backup import staging
from tests.archive_helpers import FILE_BYTES, populate, wipe

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


def test_files_a_failed_move_left_behind_are_moved_in_by_the_next_repair(
    tmp_path, settings, monkeypatch
):
    populate()
    path = tmp_path / "a.zip"
    archive.export(path)
    wipe()
    settings.MEMORY_DIR = tmp_path / "fresh" / "memory"
    settings.MEDIA_ROOT = tmp_path / "fresh" / "attachments"
    link = staging._link
    monkeypatch.setattr(staging, "_link", lambda *a: (_ for _ in ()).throw(OSError("disk full")))
    with pytest.raises(OSError, match="disk full"):
        imp.import_archive(path, reindex=False)
    att = Attachment.objects.exclude(file="").get()  # the rows committed
    assert not default_storage.exists(att.file.name)
    monkeypatch.setattr(staging, "_link", link)
    staging.recover()
    assert default_storage.open(att.file.name).read() == FILE_BYTES
    assert (settings.MEMORY_DIR / "shared" / "User.md").exists() and not staging.pending()
