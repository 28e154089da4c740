"""Settings → Import history without JavaScript: upload, preview, start, progress, cancel,
resume. (Huey runs inline in tests, so a started import is finished on the next page.)"""

from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from curator.models import ConversationTurn, Session
from lifecycle import chat_import
from lifecycle.models import ChatImport, ImportStatus

pytestmark = pytest.mark.django_db
CHATGPT = Path(__file__).parent / "data" / "chats" / "chatgpt_conversations.json"


def text(response) -> str:
    return response.content.decode()


def upload(client, content: bytes, fmt="chatgpt", name="conversations.json"):
    return client.post(
        "/settings/import-history/",
        {"file": SimpleUploadedFile(name, content, "application/json"), "fmt": fmt},
    )


def test_settings_lead_to_the_import_page(client_in):
    assert 'href="/settings/import-history/"' in text(client_in.get("/settings/"))
    assert "Upload and preview" in text(client_in.get("/settings/import-history/"))


def test_an_upload_shows_its_preview_before_anything_is_stored(client_in):
    response = upload(client_in, CHATGPT.read_bytes())
    job = ChatImport.objects.get()
    assert response["Location"] == f"/settings/import-history/{job.pk}/"
    page = text(client_in.get(response["Location"]))
    assert '<dd id="p-conversations">2</dd>' in page
    assert "2024-05-01 – 2024-06-01" in page
    assert "Chinese 1 · English 1" in page
    assert "我住在杭州，周末想去爬山，有什么推荐？" in page  # the sample
    assert "Import these conversations" in page
    assert not Session.objects.exists() and Path(job.path).exists()


def test_starting_it_stores_the_conversations_and_says_so(client_in):
    upload(client_in, CHATGPT.read_bytes())
    job = ChatImport.objects.get()
    response = client_in.post(f"/settings/import-history/{job.pk}/start/", follow=True)
    page = text(response)
    job.refresh_from_db()
    assert job.status == ImportStatus.DONE and job.turns_added == 8
    assert 'value="100"' in page and "See the sessions" in page
    assert "8 turns added, 0 already stored" in page
    assert Session.objects.count() == 2 and not Path(job.path).exists()


def test_the_same_file_uploaded_again_adds_nothing(client_in):
    upload(client_in, CHATGPT.read_bytes())
    first = ChatImport.objects.get()
    client_in.post(f"/settings/import-history/{first.pk}/start/")
    upload(client_in, CHATGPT.read_bytes())
    second = ChatImport.objects.exclude(pk=first.pk).get()
    assert "8 turns; 0 new" in text(client_in.get(f"/settings/import-history/{second.pk}/"))
    client_in.post(f"/settings/import-history/{second.pk}/start/")
    second.refresh_from_db()
    assert second.turns_added == 0 and ConversationTurn.objects.count() == 8


def test_a_bad_file_is_refused_on_the_page_with_the_reason(client_in):
    folder = chat_import.uploads_dir()
    before = set(folder.iterdir()) if folder.exists() else set()
    response = upload(client_in, b"{not json")
    assert response.status_code == 400
    assert "Refused, nothing imported: The file is not JSON" in text(response)
    assert not ChatImport.objects.exists()
    assert set(folder.iterdir()) == before  # the refused upload is gone


def test_a_claude_file_offered_as_chatgpt_says_which_it_is(client_in):
    claude = CHATGPT.with_name("claude_conversations.json").read_bytes()
    response = upload(client_in, claude, fmt="chatgpt")
    assert "It looks like a Claude export: choose that format." in text(response)


def test_progress_is_polled_while_it_runs_and_the_page_swaps_when_it_stops(client_in):
    upload(client_in, CHATGPT.read_bytes())
    job = ChatImport.objects.get()
    chat_import.queue(job)  # queued, no consumer yet
    part = client_in.get(f"/settings/import-history/{job.pk}/progress/", HTTP_HX_REQUEST="true")
    body = text(part)
    assert 'hx-trigger="every 1s"' in body and "<html" not in body
    assert "Reload to see the progress." in body  # the way without JavaScript
    ChatImport.objects.filter(pk=job.pk).update(status=ImportStatus.DONE)
    done = client_in.get(f"/settings/import-history/{job.pk}/progress/", HTTP_HX_REQUEST="true")
    assert done["HX-Retarget"] == "#main" and 'hx-trigger="every 1s"' not in text(done)


def test_cancelling_a_preview_removes_the_upload(client_in):
    upload(client_in, CHATGPT.read_bytes())
    job = ChatImport.objects.get()
    response = client_in.post(f"/settings/import-history/{job.pk}/cancel/", follow=True)
    assert "Cancelled; nothing was imported." in text(response)
    job.refresh_from_db()
    assert job.status == ImportStatus.CANCELLED and not Path(job.path).exists()


def test_an_interrupted_import_offers_to_resume(client_in):
    upload(client_in, CHATGPT.read_bytes())
    job = ChatImport.objects.get()
    ChatImport.objects.filter(pk=job.pk).update(status=ImportStatus.RUNNING, position=1)
    page = text(client_in.get(f"/settings/import-history/{job.pk}/"))
    assert "interrupted: resume it" in page and ">Resume<" in page
    client_in.post(f"/settings/import-history/{job.pk}/start/")
    job.refresh_from_db()
    assert job.status == ImportStatus.DONE and Session.objects.count() == 1  # went on from 1


def test_the_page_reads_in_chinese(client_in):
    client_in.post("/i18n/setlang/", {"language": "zh-hans", "next": "/"})
    upload(client_in, CHATGPT.read_bytes())
    job = ChatImport.objects.get()
    page = text(client_in.get(f"/settings/import-history/{job.pk}/"))
    assert "导入历史" in page and "中文 1 · 英文 1" in page


CONTACTS = (
    '{"session_id": "c", "role": "user", "content": "记住李雷的电话是13812345678",'
    ' "timestamp": "2024-01-01T00:00:00Z"}\n'
    '{"session_id": "c", "role": "user", "content": "mail me at li.lei@example.com",'
    ' "timestamp": "2024-01-01T00:01:00Z"}\n'
).encode()


@pytest.mark.parametrize(
    ("language", "phone", "says"),
    [
        ("en", "“Phone numbers” will send memories drawn from 1 turn", "until you confirm"),
        ("zh-hans", "“电话号码”", "送去审核"),
    ],
)
def test_the_preview_says_what_would_go_to_review(client_in, language, phone, says):
    client_in.cookies["django_language"] = language
    response = upload(client_in, CONTACTS, fmt="jsonl", name="contacts.jsonl")
    page = text(client_in.get(response["Location"], HTTP_ACCEPT_LANGUAGE=language))
    assert phone in page and says in page
    assert "No guardrail matches anything" not in page
