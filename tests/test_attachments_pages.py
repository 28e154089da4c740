"""The attachments pages: upload (refusals, safe storage, text extraction), search (Chinese and
English), filters, the detail page with its edits, and how the file itself is served."""

from pathlib import Path

import pytest
from django.conf import settings
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import override_settings

from curator.models import Attachment, EventType, Fact, MemoryEvent, Owner
from retrieval import search as search_service

# A 1x1 transparent PNG.
PNG = bytes.fromhex(
    "89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c489"
    "0000000d49444154789c6360000002000001e221bc330000000049454e44ae426082"
)


@pytest.fixture
def owner(db):
    return Owner.default()


def upload(client, name="cat.png", data=PNG, mime="image/png", capture=None, **fields):
    form = {"file": SimpleUploadedFile(name, data, mime), "direction": "inbound", **fields}
    if capture is None:
        return client.post("/attachments/upload/", form)
    with capture(execute=True):  # run the queued indexing, as the Huey consumer would
        return client.post("/attachments/upload/", form)


def stored(response) -> Attachment:
    assert response.status_code == 302, response.content.decode()[:2000]
    return Attachment.objects.get(pk=int(response["Location"].strip("/").split("/")[-1]))


# --- upload ----------------------------------------------------------------------------------


def test_an_upload_keeps_the_file_under_a_generated_name(client_in, owner):
    att = stored(upload(client_in, description="一只橘猫", tags="猫, 宠物", session="chat-1"))
    assert att.original_name == "cat.png" and att.mime_type == "image/png"
    assert att.size == len(PNG) and att.tags == ["猫", "宠物"]
    assert att.session.external_id == "chat-1"
    assert att.file.name.endswith(".png") and "cat" not in att.file.name
    path = Path(att.file.path)
    assert path.read_bytes() == PNG
    assert path.is_relative_to(Path(settings.MEDIA_ROOT))


def test_a_path_in_the_file_name_is_kept_only_as_data(client_in, owner):
    att = stored(upload(client_in, name="../../etc/passwd", data=b"root:x:0:0", mime="text/plain"))
    assert att.original_name == "passwd"
    parts = Path(att.file.name).parts
    assert len(parts) == 3 and parts[2].endswith(".txt") and ".." not in parts
    assert Path(att.file.path).is_relative_to(Path(settings.MEDIA_ROOT))
    assert not (Path(settings.MEDIA_ROOT).parent / "etc").exists()


@override_settings(API_ATTACHMENT_MAX_BYTES=10)
def test_a_file_over_the_limit_is_refused_with_a_message(client_in, owner):
    response = upload(client_in, name="big.txt", data=b"x" * 11, mime="text/plain")
    assert response.status_code == 413
    assert "Attachments may be at most" in response.content.decode()
    assert 'id="upload-form"' in response.content.decode()
    assert not Attachment.objects.exists()


def test_a_disallowed_type_is_refused_with_a_message(client_in, owner):
    response = upload(client_in, name="page.html", data=b"<script>1</script>", mime="text/html")
    assert response.status_code == 415
    assert "text/html cannot be kept" in response.content.decode()
    response = upload(client_in, name="logo.svg", data=b"<svg/>", mime="image/svg+xml")
    assert response.status_code == 415
    assert not Attachment.objects.exists()


def test_an_empty_file_is_refused(client_in, owner):
    response = upload(client_in, name="empty.txt", data=b"", mime="text/plain")
    assert response.status_code in (413, 415, 422)
    html = response.content.decode()
    assert "empty" in html and 'class="error"' in html
    assert not Attachment.objects.exists()


def test_a_missing_file_is_shown_in_the_form(client_in, owner):
    response = client_in.post("/attachments/upload/", {"direction": "inbound"})
    assert response.status_code == 422 and 'class="error"' in response.content.decode()


@pytest.mark.parametrize(
    "name, mime",
    [("clip.mp4", "video/mp4"), ("memo.m4a", "audio/mp4"), ("plan.docx", "application/zip")],
)
def test_video_audio_and_office_files_are_accepted(client_in, owner, name, mime):
    att = stored(upload(client_in, name=name, data=b"\x00\x01", mime=mime))
    assert att.mime_type != "application/zip" and not att.extracted_text  # typed by the name


def test_text_is_extracted_from_markdown(client_in, owner):
    text = "# 周报\n\n- orchard 内存泄漏已修复\n"
    att = stored(upload(client_in, name="weekly.md", data=text.encode(), mime="text/markdown"))
    assert att.mime_type == "text/markdown" and att.extracted_text == text


def test_text_in_gbk_is_extracted_too(client_in, owner):
    att = stored(upload(client_in, name="note.txt", data="橘猫".encode("gbk"), mime="text/plain"))
    assert att.extracted_text == "橘猫"


def test_the_upload_form_works_without_javascript(client_in, owner):
    html = client_in.get("/attachments/").content.decode()
    assert 'enctype="multipart/form-data"' in html and 'type="file"' in html
    assert 'action="/attachments/upload/"' in html and "js/upload.js" in html


# --- search and filters ----------------------------------------------------------------------


def test_that_cat_photo_finds_the_orange_cat(client_in, owner, django_capture_on_commit_callbacks):
    cat = stored(
        upload(client_in, description="一只橘猫", capture=django_capture_on_commit_callbacks)
    )
    stored(
        upload(
            client_in,
            name="receipt.png",
            description="牙医的收据",
            capture=django_capture_on_commit_callbacks,
        )
    )
    # The words differ (那张 / 猫 / 照片 against 一只 / 橘猫): the CJK grams column matches 猫.
    result = search_service.search("那张猫的照片", kinds=["attachment"], record=False)
    assert result.items[0].id == cat.pk and result.items[0].found_by in ("keyword", "both")
    assert listed(client_in, q="那张猫的照片") == {cat.pk}
    assert listed(client_in, q="给我那张猫图") == {cat.pk}  # seed 003's own example


def listed(client, **params) -> set[int]:
    html = client.get("/attachments/", params).content.decode()
    return {a.pk for a in Attachment.objects.all() if f'id="attachment-{a.pk}"' in html}


def test_english_descriptions_and_file_names_are_searched(
    client_in, owner, django_capture_on_commit_callbacks
):
    capture = django_capture_on_commit_callbacks
    scan = stored(
        upload(
            client_in,
            name="scan.pdf",
            data=b"%PDF-1.4",
            mime="application/pdf",
            description="Receipt from the dentist",
            capture=capture,
        )
    )
    beach = stored(
        upload(client_in, name="holiday.png", description="Beach at sunset", capture=capture)
    )
    assert listed(client_in, q="dentist receipts") == {scan.pk}
    assert listed(client_in, q="holiday") == {beach.pk}


def test_words_that_match_nothing_list_nothing(
    client_in, owner, django_capture_on_commit_callbacks
):
    stored(upload(client_in, description="一只橘猫", capture=django_capture_on_commit_callbacks))
    html = client_in.get("/attachments/", {"q": "quarterly budget"}).content.decode()
    assert "attachments-table" not in html and "No attachment matches" in html


def test_it_filters_by_direction_and_type(client_in, owner):
    cat = stored(upload(client_in, name="cat.png"))
    notes = stored(
        upload(client_in, name="notes.txt", data=b"hi", mime="text/plain", direction="outbound")
    )
    assert listed(client_in, direction="outbound") == {notes.pk}
    assert listed(client_in, type="image") == {cat.pk}
    assert listed(client_in) == {cat.pk, notes.pk}


# --- detail, edit, file ----------------------------------------------------------------------


def test_the_detail_previews_an_image_and_links_the_download(client_in, owner):
    att = stored(upload(client_in, description="一只橘猫"))
    html = client_in.get(f"/attachments/{att.pk}/").content.decode()
    assert f'<img class="attachment-preview" src="/attachments/{att.pk}/file/"' in html
    assert f'href="/attachments/{att.pk}/file/?download=1"' in html


def test_the_detail_previews_extracted_text(client_in, owner):
    att = stored(upload(client_in, name="a.md", data=b"# hello <b>", mime="text/markdown"))
    html = client_in.get(f"/attachments/{att.pk}/").content.decode()
    assert "# hello &lt;b&gt;" in html and "<img" not in html


def test_an_image_is_served_inline_and_never_sniffed(client_in, owner):
    att = stored(upload(client_in))
    response = client_in.get(f"/attachments/{att.pk}/file/")
    assert response.status_code == 200 and response["Content-Type"] == "image/png"
    assert response["Content-Disposition"].startswith("inline")
    assert response["X-Content-Type-Options"] == "nosniff"
    assert b"".join(response.streaming_content) == PNG
    download = client_in.get(f"/attachments/{att.pk}/file/?download=1")
    assert download["Content-Disposition"].startswith("attachment")


def test_other_files_are_served_as_downloads(client_in, owner):
    att = stored(upload(client_in, name="notes.txt", data=b"hi", mime="text/plain"))
    response = client_in.get(f"/attachments/{att.pk}/file/")
    assert response["Content-Disposition"].startswith("attachment")
    assert 'filename="notes.txt"' in response["Content-Disposition"]
    assert response["X-Content-Type-Options"] == "nosniff"


def test_the_file_needs_a_login(client, owner):
    att = Attachment.objects.create(owner=owner, original_name="x.png", mime_type="image/png")
    response = client.get(f"/attachments/{att.pk}/file/")
    assert response.status_code == 302 and "/accounts/login/" in response["Location"]


def test_unknown_attachments_and_missing_files_are_404(client_in, owner):
    assert client_in.get("/attachments/999/").status_code == 404
    assert client_in.get("/attachments/999/file/").status_code == 404
    url_only = Attachment.objects.create(owner=owner, original_name="x", url="http://x")
    assert client_in.get(f"/attachments/{url_only.pk}/file/").status_code == 404
    gone = stored(upload(client_in))
    Path(gone.file.path).unlink()
    assert client_in.get(f"/attachments/{gone.pk}/file/").status_code == 404


def test_an_edit_changes_the_text_tags_and_links_with_an_event(
    client_in, owner, django_capture_on_commit_callbacks
):
    att = stored(upload(client_in, description="猫"))
    fact = Fact.objects.create(owner=owner, content="李雷养了一只橘猫")
    form = {
        "description": "一只橘猫在沙发上",
        "transcription": "喵",
        "tags": "猫，沙发",
        "linked_facts": [fact.pk],
    }
    with django_capture_on_commit_callbacks(execute=True):
        response = client_in.post(f"/attachments/{att.pk}/edit/", form)
    assert response.status_code == 302
    att.refresh_from_db()
    assert (att.description, att.transcription, att.tags) == (
        "一只橘猫在沙发上",
        "喵",
        ["猫", "沙发"],
    )
    assert list(att.linked_facts.all()) == [fact]
    event = MemoryEvent.objects.get(event_type=EventType.ATTACHMENT_EDIT)
    assert event.payload["after"]["linked_facts"] == [fact.pk]
    result = search_service.search("沙发", kinds=["attachment"], mode="keyword", record=False)
    assert [i.id for i in result.items] == [att.pk]


def test_an_invalid_edit_is_shown_in_place(client_in, owner):
    att = stored(upload(client_in, description="猫"))
    too_many = ",".join(f"t{i}" for i in range(30))
    response = client_in.post(
        f"/attachments/{att.pk}/edit/", {"description": "x", "tags": too_many}
    )
    assert response.status_code == 422 and "At most 20 tags" in response.content.decode()
    att.refresh_from_db()
    assert att.description == "猫" and not MemoryEvent.objects.exists()
