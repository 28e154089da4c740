"""GET /traces (level-2 search over raw turns), /episodes and /attachments."""

from datetime import timedelta

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import override_settings
from django.utils import timezone

from curator.models import Attachment, Episode, Fact, Owner
from tests.api_helpers import assert_error

CALLS = [{"id": "c1", "function": {"name": "run_shell", "arguments": {"cmd": "free -m"}}}]
RESULTS = [{"tool_call_id": "c1", "output": "orchard-2 内存不足 OOM killed celery"}]


def record(api, index, content, role="user", session="s1", **extra):
    body = {"session_id": session, "turn_index": index, "role": role, "content": content, **extra}
    assert api.post("/turns", body).status_code == 201


def test_traces_find_words_in_content_and_tool_output(api):
    record(api, 0, "服务又挂了")
    record(api, 1, "我查一下", role="assistant", tool_calls=CALLS, tool_results=RESULTS)
    found = api.get("/traces", {"q": "内存不足"}).json()["items"]
    assert [t["turn_index"] for t in found] == [1]
    assert found[0]["tool_calls"] == CALLS and found[0]["tool_results"] == RESULTS
    assert [t["turn_index"] for t in api.get("/traces", {"q": "free -m"}).json()["items"]] == [1]
    assert api.get("/traces", {"q": "挂了"}).json()["items"][0]["content"] == "服务又挂了"


def test_traces_filter_by_session_role_and_time(api):
    now = timezone.now()
    record(api, 0, "alpha one", timestamp=(now - timedelta(days=3)).isoformat())
    record(api, 1, "alpha two", role="assistant")
    record(api, 0, "alpha three", session="s2")
    assert len(api.get("/traces", {"q": "alpha"}).json()["items"]) == 3
    assert len(api.get("/traces", {"q": "alpha", "session_id": "s1"}).json()["items"]) == 2
    assert len(api.get("/traces", {"q": "alpha", "role": "assistant"}).json()["items"]) == 1
    since = (now - timedelta(days=1)).isoformat()
    assert len(api.get("/traces", {"q": "alpha", "time_from": since}).json()["items"]) == 2
    assert len(api.get("/traces", {"q": "alpha", "time_to": since}).json()["items"]) == 1
    assert len(api.get("/traces", {"q": "alpha", "limit": 1}).json()["items"]) == 1


def test_traces_validate_their_parameters(api):
    assert_error(api.get("/traces", {"limit": 0}), 422)
    assert_error(api.get("/traces", {"role": "robot"}), 422)
    assert_error(api.get("/traces", {"time_from": "soon"}), 422)


def _episode(summary="排查 orchard OOM", session=None, **extra):
    return Episode.objects.create(owner=Owner.default(), summary=summary, session=session, **extra)


def test_episodes_list_filter_and_read(api):
    record(api, 0, "hi", session="s9")
    from curator.models import Session

    ep = _episode(session=Session.objects.get(external_id="s9"), goal="修复内存泄漏")
    ep.linked_facts.add(Fact.objects.create(owner=Owner.default(), content="x"))
    _episode(
        summary="写周报",
        started_at=timezone.now() - timedelta(days=10),
        ended_at=timezone.now() - timedelta(days=10),
    )
    assert api.get("/episodes").json()["count"] == 2
    found = api.get("/episodes", {"q": "内存泄漏"}).json()
    assert found["count"] == 1 and found["items"][0]["session_id"] == "s9"
    assert api.get("/episodes", {"session_id": "s9"}).json()["count"] == 1
    since = (timezone.now() - timedelta(days=1)).isoformat()
    assert api.get("/episodes", {"time_from": since}).json()["count"] == 1
    body = api.get(f"/episodes/{ep.pk}").json()
    assert body["summary"] == "排查 orchard OOM" and len(body["linked_fact_ids"]) == 1
    assert_error(api.get("/episodes/9999"), 404, "not_found")
    assert_error(api.get("/episodes", {"limit": 500}), 422)


def _upload(api, name="notes.txt", data=b"orchard memory leak notes", **fields):
    return api.upload(
        "/attachments", {"file": SimpleUploadedFile(name, data, "text/plain"), **fields}
    )


def test_it_records_an_attachment_and_serves_the_file(api):
    response = _upload(api, direction="outbound", description="排查笔记", session_id="s1")
    assert response.status_code == 201
    body = response.json()
    assert body["name"] == "notes.txt" and body["size"] == 25 and body["direction"] == "outbound"
    assert body["session_id"] == "s1" and body["mime_type"] == "text/plain"
    stored = Attachment.objects.get(pk=body["id"])
    assert stored.extracted_text == "orchard memory leak notes"  # text files become searchable
    download = api.client.get(body["file_url"], headers=api._headers())
    assert download.status_code == 200
    assert b"".join(download.streaming_content) == b"orchard memory leak notes"
    assert "notes.txt" in download["Content-Disposition"]
    assert api.get(f"/attachments/{body['id']}").json() == body


def test_attachments_are_found_by_name_description_or_text(api):
    _upload(api, name="a.txt", description="面试 准备")
    _upload(api, name="b.txt", data=b"leak")
    assert api.get("/attachments").json()["count"] == 2
    assert api.get("/attachments", {"q": "面试"}).json()["items"][0]["name"] == "a.txt"
    assert api.get("/attachments", {"q": "leak"}).json()["items"][0]["name"] == "b.txt"
    assert api.get("/attachments", {"q": "nothing"}).json()["count"] == 0


def test_attachment_search_uses_the_keyword_index(api, django_capture_on_commit_callbacks):
    png = SimpleUploadedFile("IMG_0042.png", b"\x89PNG\r\n\x1a\n", "image/png")
    with django_capture_on_commit_callbacks(execute=True):  # the index is written after commit
        api.upload("/attachments", {"file": png, "description": "一只橘猫在沙发上"})
    found = api.get("/attachments", {"q": "那张猫的照片"}).json()
    assert [item["name"] for item in found["items"]] == ["IMG_0042.png"]


def test_an_attachment_needs_a_file_and_a_valid_direction(api):
    assert_error(api.upload("/attachments", {"direction": "inbound"}), 422)
    assert_error(_upload(api, direction="sideways"), 422)


@override_settings(API_ATTACHMENT_MAX_BYTES=10)
def test_an_attachment_over_the_limit_is_a_413(api):
    assert_error(_upload(api, data=b"x" * 11), 413, "too_large")
    assert not Attachment.objects.exists()


def test_an_attachment_of_a_disallowed_type_is_a_415(api):
    page = SimpleUploadedFile("x.html", b"<script>alert(1)</script>", "text/html")
    body = assert_error(api.upload("/attachments", {"file": page}), 415, "unsupported_type")
    assert "text/html" in body["detail"]
    assert not Attachment.objects.exists()


def test_an_empty_attachment_is_a_422(api):
    assert_error(_upload(api, data=b""), 422, "empty_file")
    assert not Attachment.objects.exists()


def test_an_attachment_name_is_data_never_a_path(api):
    body = _upload(api, name="../../etc/passwd", data=b"root:x:0:0").json()
    assert body["name"] == "passwd"
    stored = Attachment.objects.get(pk=body["id"])
    assert ".." not in stored.file.name and stored.file.name.endswith(".txt")


@pytest.mark.parametrize(
    ("name", "mime", "suffix"),
    [("x.php", "image/png", ".png"), ("shell.jsp", "application/pdf", ".pdf")],
)
def test_an_upload_is_stored_under_its_types_extension_not_its_names(api, name, mime, suffix):
    upload = SimpleUploadedFile(name, b"\x89PNG fake", mime)
    body = api.upload("/attachments", {"file": upload}).json()
    stored = Attachment.objects.get(pk=body["id"])
    assert stored.file.name.endswith(suffix) and body["name"] == name
    assert stored.mime_type == mime


def test_an_upload_whose_name_fits_its_type_keeps_its_extension(api):
    upload = SimpleUploadedFile("notes.md", b"# hi", "text/markdown")
    stored = Attachment.objects.get(pk=api.upload("/attachments", {"file": upload}).json()["id"])
    assert stored.file.name.endswith(".md")


def test_an_attachment_takes_a_transcription_and_tags(api):
    body = _upload(api, transcription="喵", tags="猫, 宠物").json()
    assert body["transcription"] == "喵" and body["tags"] == ["猫", "宠物"]
    too_many = ",".join(f"t{i}" for i in range(30))
    assert_error(_upload(api, tags=too_many), 422, "invalid_tags")


def test_unknown_attachments_are_404(api):
    assert_error(api.get("/attachments/999"), 404)
    assert_error(api.get("/attachments/999/file"), 404)
    url_only = Attachment.objects.create(owner=Owner.default(), original_name="x", url="http://x")
    assert_error(api.get(f"/attachments/{url_only.pk}/file"), 404, "no_file")


def test_a_read_only_token_cannot_upload(read_api):
    assert_error(_upload(read_api), 403, "read_only_token")
