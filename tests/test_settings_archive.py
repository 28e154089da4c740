"""Settings → export download, upload, preview, confirm, cancel and readable refusals."""

import io
import zipfile

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from curator.models import EventType, Fact, MemoryEvent, Session
from lifecycle.backup import export as archive
from memsite.web.archive import uploads_dir
from tests.archive_helpers import populate, wipe

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def data_dirs(settings, tmp_path):
    settings.MEMORY_DIR = tmp_path / "memory"
    settings.MEDIA_ROOT = tmp_path / "attachments"
    settings.DATA_DIR = tmp_path


def archive_bytes(tmp_path) -> bytes:
    path = tmp_path / "a.zip"
    archive.export(path)
    return path.read_bytes()


def upload(client, data: bytes, name="memory.zip"):
    return client.post(
        reverse("archive_import"), {"archive": SimpleUploadedFile(name, data, "application/zip")}
    )


def test_settings_shows_the_export_button_and_the_upload_form(client_in):
    html = client_in.get(reverse("settings")).content.decode()
    assert reverse("archive_export") in html
    assert 'enctype="multipart/form-data"' in html and 'name="archive"' in html


def test_export_downloads_a_zip_archive(client_in):
    populate()
    response = client_in.get(reverse("archive_export"))
    assert response.status_code == 200 and response["Content-Type"] == "application/zip"
    assert "attachment;" in response["Content-Disposition"]
    body = b"".join(response.streaming_content)
    with zipfile.ZipFile(io.BytesIO(body)) as zf:
        assert "manifest.json" in zf.namelist() and "data/facts.jsonl" in zf.namelist()


def test_upload_previews_then_confirm_merges(client_in, tmp_path):
    populate()
    data = archive_bytes(tmp_path)
    Session.objects.order_by("pk").last().delete()
    Fact.objects.filter(pk=Fact.objects.order_by("pk").first().pk).update(confidence=0.11)
    sessions = Session.objects.count()
    response = upload(client_in, data)
    assert response.status_code == 302
    preview = client_in.get(response["Location"])
    html = preview.content.decode()
    assert preview.status_code == 200 and "archive-preview" in html and "Merge this archive" in html
    assert Session.objects.count() == sessions  # the preview changes nothing
    done = client_in.post(response["Location"])
    assert done.status_code == 302 and done["Location"] == reverse("settings")
    assert Session.objects.count() == sessions + 1
    assert MemoryEvent.objects.filter(event_type=EventType.MERGE).count() == 1
    assert list(uploads_dir().glob("*.zip")) == []


def test_confirm_restores_into_an_empty_install(client_in, tmp_path, settings):
    populate()
    data = archive_bytes(tmp_path)
    facts = Fact.objects.count()
    wipe()
    settings.MEMORY_DIR = tmp_path / "fresh"
    response = upload(client_in, data)
    assert "Restore this archive" in client_in.get(response["Location"]).content.decode()
    client_in.post(response["Location"])
    assert Fact.objects.count() == facts


def test_a_broken_upload_is_refused_in_place(client_in, tmp_path):
    response = upload(client_in, b"PK\x03\x04 truncated")
    assert response.status_code == 400
    html = response.content.decode()
    assert "nothing was imported" in html and "zip archive" in html and 'name="archive"' in html
    assert list(uploads_dir().glob("*.zip")) == []


def test_an_upload_without_a_file_says_so(client_in):
    response = client_in.post(reverse("archive_import"))
    assert response.status_code == 400 and "Choose an archive" in response.content.decode()


def test_cancel_removes_the_upload_and_changes_nothing(client_in, tmp_path):
    populate()
    response = upload(client_in, archive_bytes(tmp_path))
    cancel = response["Location"] + "cancel/"
    assert client_in.post(cancel).status_code == 302
    assert list(uploads_dir().glob("*.zip")) == []
    assert client_in.get(response["Location"]).status_code == 404


def test_unknown_or_malformed_tokens_are_404_and_upload_rejects_get(client_in):
    assert client_in.get(reverse("archive_preview", args=["not-a-token"])).status_code == 404
    assert client_in.get(reverse("archive_preview", args=["a" * 32])).status_code == 404
    assert client_in.post(reverse("archive_cancel", args=["a" * 32])).status_code == 404
    assert client_in.get(reverse("archive_import")).status_code == 405


def test_a_failing_import_is_rolled_back_and_explained(client_in, tmp_path, monkeypatch):
    from lifecycle.backup import restore as archive_import

    populate()
    response = upload(client_in, archive_bytes(tmp_path))
    Session.objects.order_by("pk").last().delete()
    before = Session.objects.count()

    def fail(self):
        raise OSError("disk full")

    monkeypatch.setattr(archive_import._Apply, "rows", fail)
    failed = client_in.post(response["Location"])
    assert failed.status_code == 400 and "disk full" in failed.content.decode()
    assert Session.objects.count() == before
